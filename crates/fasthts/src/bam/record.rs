//! A zero-copy view of one BAM record.

use std::fmt;

/// Byte ranges of the fixed fields of a record, counted from the start of
/// the record's data (just after its 4-byte `block_size`).
mod field {
    use std::ops::Range;
    pub const REF_ID: Range<usize> = 0..4;
    pub const POS: Range<usize> = 4..8;
    pub const L_READ_NAME: usize = 8;
    pub const MAPQ: usize = 9;
    pub const BIN: Range<usize> = 10..12;
    pub const N_CIGAR_OP: Range<usize> = 12..14;
    pub const FLAG: Range<usize> = 14..16;
    pub const L_SEQ: Range<usize> = 16..20;
    pub const NEXT_REF_ID: Range<usize> = 20..24;
    pub const NEXT_POS: Range<usize> = 24..28;
    pub const TLEN: Range<usize> = 28..32;
    /// Length of the fixed part; the read name follows.
    pub const FIXED_LEN: usize = 32;
}
pub use field::FIXED_LEN;

/// SAM flag bits.
pub mod flags {
    /// Template has several segments.
    pub const PAIRED: u16 = 0x1;
    /// Each segment properly aligned.
    pub const PROPER_PAIR: u16 = 0x2;
    /// Segment unmapped.
    pub const UNMAPPED: u16 = 0x4;
    /// Next segment unmapped.
    pub const MATE_UNMAPPED: u16 = 0x8;
    /// Sequence reverse complemented.
    pub const REVERSE: u16 = 0x10;
    /// Next segment reverse complemented.
    pub const MATE_REVERSE: u16 = 0x20;
    /// First segment.
    pub const READ1: u16 = 0x40;
    /// Last segment.
    pub const READ2: u16 = 0x80;
    /// Secondary alignment.
    pub const SECONDARY: u16 = 0x100;
    /// Not passing quality controls.
    pub const QC_FAIL: u16 = 0x200;
    /// PCR or optical duplicate.
    pub const DUPLICATE: u16 = 0x400;
    /// Supplementary alignment.
    pub const SUPPLEMENTARY: u16 = 0x800;
}

pub use crate::error::bam::RecordDefect;

/// A BAM record borrowed from a decompressed buffer. Fields are decoded on
/// access; nothing is allocated.
///
/// A `RecordRef` is only built by [`RecordRef::new`], which checks that the
/// variable-length fields lie within the record, so accessors never go out of
/// bounds.
#[derive(Clone, Copy)]
pub struct RecordRef<'a> {
    data: &'a [u8],
}

#[inline]
fn u16_at(b: &[u8; FIXED_LEN], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

#[inline]
fn i32_at(b: &[u8; FIXED_LEN], at: usize) -> i32 {
    i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl<'a> RecordRef<'a> {
    /// Checks `data` (a record without its `block_size` prefix) against the
    /// reference count of its header, as htslib's `sam_read1` does.
    ///
    /// Every record read passes through here, so the fixed fields are read
    /// once from one 32-byte array rather than through the accessors, each
    /// of which would check the slice's bounds again.
    #[inline]
    pub fn new(data: &'a [u8], n_ref: usize) -> Result<Self, RecordDefect> {
        let Some(fixed) = data.first_chunk::<FIXED_LEN>() else {
            return Err(RecordDefect::BlockSizeTooSmall);
        };
        let word = |at: usize| i32_at(fixed, at);
        let name_len = usize::from(fixed[field::L_READ_NAME]);
        if name_len == 0 {
            return Err(RecordDefect::EmptyReadName);
        }
        let l_seq = word(field::L_SEQ.start);
        if l_seq < 0 {
            return Err(RecordDefect::NegativeSequenceLength);
        }
        let n_cigar = u64::from(u16_at(fixed, field::N_CIGAR_OP.start));
        let cigar_end = FIXED_LEN as u64 + name_len as u64 + 4 * n_cigar;
        if cigar_end + (l_seq as u64).div_ceil(2) + l_seq as u64 > data.len() as u64 {
            return Err(RecordDefect::FieldsOverrunRecord);
        }
        // -1 (unplaced) maps to 0, anything below it wraps far above n_ref.
        let in_range = |id: i32| (i64::from(id) + 1) as u64 <= n_ref as u64;
        let ref_id = word(field::REF_ID.start);
        if !in_range(ref_id) {
            return Err(RecordDefect::RefIdOutOfRange);
        }
        if !in_range(word(field::NEXT_REF_ID.start)) {
            return Err(RecordDefect::MateRefIdOutOfRange);
        }
        let flag = u16_at(fixed, field::FLAG.start);
        if l_seq > 0 && n_cigar > 0 && flag & flags::UNMAPPED == 0 {
            let stored = Cigar { raw: &data[FIXED_LEN + name_len..cigar_end as usize] };
            let first = stored.raw.first_chunk().map_or(0, |w| u32::from_le_bytes(*w));
            // Only a CIGAR opening with a soft clip of the whole sequence can
            // be the placeholder of a CIGAR kept in the CG tag.
            let query_len = if u64::from(first) == (l_seq as u64) << 4 | SOFT_CLIP_CODE {
                RecordRef { data }.cigar().query_len()
            } else {
                stored.query_len()
            };
            if query_len != i64::from(l_seq) {
                return Err(RecordDefect::CigarSequenceMismatch);
            }
        }
        Ok(RecordRef { data })
    }

    /// A view of bytes that [`RecordRef::new`] has already accepted (or a
    /// copy of them, or an edit of them by [`crate::bam::edit`]): its checks
    /// are not repeated. Bytes that would fail them make accessors panic,
    /// never read out of bounds.
    pub fn new_prevalidated(data: &'a [u8]) -> Self {
        debug_assert!(data.len() >= FIXED_LEN);
        RecordRef { data }
    }

    /// The fixed fields: one length check instead of one per byte read.
    #[inline]
    fn fixed(&self) -> &'a [u8; FIXED_LEN] {
        self.data.first_chunk().expect("RecordRef::new checked the fixed fields")
    }

    /// The record's bytes (without the `block_size` prefix).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// Reference id (-1 when unplaced).
    #[inline]
    pub fn ref_id(&self) -> i32 {
        i32_at(self.fixed(), field::REF_ID.start)
    }

    /// 0-based leftmost position (-1 when unplaced).
    #[inline]
    pub fn pos(&self) -> i32 {
        i32_at(self.fixed(), field::POS.start)
    }

    /// Mapping quality.
    #[inline]
    pub fn mapq(&self) -> u8 {
        self.fixed()[field::MAPQ]
    }

    /// The BAI bin stored in the record (not recomputed).
    #[inline]
    pub fn bin(&self) -> u16 {
        u16_at(self.fixed(), field::BIN.start)
    }

    /// SAM flag.
    #[inline]
    pub fn flag(&self) -> u16 {
        u16_at(self.fixed(), field::FLAG.start)
    }

    /// Mate's reference id.
    #[inline]
    pub fn mate_ref_id(&self) -> i32 {
        i32_at(self.fixed(), field::NEXT_REF_ID.start)
    }

    /// Mate's 0-based position.
    #[inline]
    pub fn mate_pos(&self) -> i32 {
        i32_at(self.fixed(), field::NEXT_POS.start)
    }

    /// Observed template length.
    #[inline]
    pub fn template_len(&self) -> i32 {
        i32_at(self.fixed(), field::TLEN.start)
    }

    #[inline]
    fn name_len(&self) -> usize {
        usize::from(self.fixed()[field::L_READ_NAME])
    }

    /// Number of CIGAR operations stored in the CIGAR field (see
    /// [`RecordRef::cigar`] for the CG-tag form).
    #[inline]
    pub fn n_cigar_op(&self) -> u16 {
        u16_at(self.fixed(), field::N_CIGAR_OP.start)
    }

    /// Sequence length.
    #[inline]
    pub fn seq_len(&self) -> usize {
        i32_at(self.fixed(), field::L_SEQ.start) as usize
    }

    /// Read name without its NUL terminator.
    pub fn name(&self) -> &'a [u8] {
        let raw = &self.data[FIXED_LEN..FIXED_LEN + self.name_len()];
        raw.strip_suffix(b"\0").unwrap_or(raw)
    }

    #[inline]
    fn cigar_start(&self) -> usize {
        FIXED_LEN + self.name_len()
    }

    #[inline]
    fn seq_start(&self) -> usize {
        self.cigar_start() + 4 * usize::from(self.n_cigar_op())
    }

    fn qual_start(&self) -> usize {
        self.seq_start() + self.seq_len().div_ceil(2)
    }

    pub(crate) fn aux_start(&self) -> usize {
        self.qual_start() + self.seq_len()
    }

    /// The CIGAR field as stored.
    #[inline]
    pub fn raw_cigar(&self) -> Cigar<'a> {
        Cigar { raw: &self.data[self.cigar_start()..self.seq_start()] }
    }

    /// The alignment's CIGAR. Records whose CIGAR has more than 65535
    /// operations store `<l_seq>S<ref_len>N` in the CIGAR field and the real
    /// CIGAR in a `CG:B,I` tag; this returns the real one, following htslib's
    /// rules for when the tag applies.
    #[inline]
    pub fn cigar(&self) -> Cigar<'a> {
        let stored = self.raw_cigar();
        if !self.cigar_may_be_placeholder(stored) {
            return stored;
        }
        self.cigar_in_tag(stored).map_or(stored, |(cigar, _)| cigar)
    }

    /// htslib's first test in `bam_tag2cigar`: a placed record whose stored
    /// CIGAR opens with a soft clip of the whole sequence.
    #[inline]
    fn cigar_may_be_placeholder(&self, stored: Cigar<'a>) -> bool {
        if stored.is_empty() || self.ref_id() < 0 || self.pos() < 0 {
            return false;
        }
        let (op, len) = stored.get(0).expect("non-empty CIGAR");
        op == CigarOp::SoftClip && len as usize == self.seq_len()
    }

    /// The real CIGAR held in the `CG` tag, when there is a valid one, and
    /// that field's byte range within [`RecordRef::aux_bytes`].
    #[cold]
    fn cigar_in_tag(&self, stored: Cigar<'a>) -> Option<(Cigar<'a>, std::ops::Range<usize>)> {
        let aux = self.aux_bytes();
        let mut at = 0;
        // bam_aux_get: the first CG field; none past malformed data.
        while at < aux.len() {
            let (tag, value, used) = parse_aux(&aux[at..])?;
            if tag == *b"CG" {
                return match value {
                    AuxValue::Array { subtype: b'I' | b'i', count, bytes } if count >= stored.len() && count < (1 << 29) => {
                        Some((Cigar { raw: bytes }, at..at + used))
                    }
                    _ => None,
                };
            }
            at += used;
        }
        None
    }

    /// When this record's CIGAR is held in its `CG` tag (see
    /// [`RecordRef::cigar`]), that field's byte range within
    /// [`RecordRef::aux_bytes`]: htslib moves it into the CIGAR as it
    /// reads the record, so it is part of the alignment, not a tag that
    /// `view -x` or `--keep-tag` selects.
    #[inline]
    pub fn cigar_tag_field(&self) -> Option<std::ops::Range<usize>> {
        let stored = self.raw_cigar();
        if !self.cigar_may_be_placeholder(stored) {
            return None;
        }
        self.cigar_in_tag(stored).map(|(_, field)| field)
    }

    /// The 4-bit encoded sequence (two bases per byte, `=ACMGRSVTWYHKDBN`).
    pub fn seq_raw(&self) -> &'a [u8] {
        &self.data[self.seq_start()..self.qual_start()]
    }

    /// The base at `i` as a 4-bit code.
    #[inline]
    pub fn base_code(&self, i: usize) -> u8 {
        let b = self.data[self.seq_start() + i / 2];
        if i % 2 == 0 { b >> 4 } else { b & 0xf }
    }

    /// The base at `i` as an ASCII letter.
    #[inline]
    pub fn base(&self, i: usize) -> u8 {
        b"=ACMGRSVTWYHKDBN"[usize::from(self.base_code(i))]
    }

    /// Base qualities (raw Phred values; 0xff throughout when absent).
    pub fn qual(&self) -> &'a [u8] {
        &self.data[self.qual_start()..self.aux_start()]
    }

    /// The auxiliary fields' bytes as stored, up to the end of the record
    /// (for writers that must reproduce them exactly, malformed or not).
    pub fn aux_bytes(&self) -> &'a [u8] {
        &self.data[self.aux_start()..]
    }

    /// The auxiliary fields.
    pub fn aux(&self) -> Aux<'a> {
        Aux { raw: &self.data[self.aux_start()..] }
    }

    /// End position as htslib's `bam_endpos`: `pos` plus the reference length
    /// of the CIGAR, or plus 1 when unmapped or the CIGAR consumes no
    /// reference.
    #[inline]
    pub fn end_pos(&self) -> i64 {
        let rlen = if self.flag() & flags::UNMAPPED != 0 { 0 } else { self.cigar().reference_len() };
        i64::from(self.pos()) + if rlen == 0 { 1 } else { rlen }
    }
}

/// Appends `r` (its `block_size`, then its data) to `out` as htslib
/// writes a record it has read to BAM, when the two differ: a CIGAR held in
/// the `CG` tag is moved into the record as `bam_read1` moves it (the bin
/// recomputed from it, the `CG` field removed), and `bam_write1` writes a
/// CIGAR of more than 65,535 operations back as `<l_seq>S<ref_len>N` with
/// a `CG:B,I` tag at the end of the record. So a `CG` field in the middle
/// of the tags moves to the end, and one of no more than 65,535 operations
/// becomes the CIGAR, as in samtools' output. Returns `Ok(false)`, leaving
/// `out` as it is, for a record htslib writes as it is stored.
pub fn append_as_htslib_writes(r: &RecordRef<'_>, out: &mut Vec<u8>) -> Result<bool, LongCigarTooLong> {
    let Some(field) = r.cigar_tag_field() else { return Ok(false) };
    let cigar = r.cigar();
    let n_cigar = cigar.len() as u32;
    let data = r.as_bytes();
    let aux_start = r.aux_start();
    let rlen = if r.flag() & flags::UNMAPPED != 0 { 0 } else { cigar.reference_len() };
    let bin = super::binning::reg2bin(i64::from(r.pos()), i64::from(r.pos()) + rlen.max(1), 14, 5) as u16;
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    let fixed = out.len();
    out.extend_from_slice(&data[..r.cigar_start()]);
    out[fixed + field::BIN.start..fixed + field::BIN.end].copy_from_slice(&bin.to_le_bytes());
    let cigar_st = out.len();
    out.extend_from_slice(cigar.raw);
    out.extend_from_slice(&data[r.seq_start()..aux_start + field.start]);
    out.extend_from_slice(&data[aux_start + field.end..]);
    let n_field = if n_cigar > 0xffff {
        move_cigar_to_tag(out, cigar_st, n_cigar, r.seq_len())
            .map_err(|ref_len| LongCigarTooLong { name: String::from_utf8_lossy(r.name()).into_owned(), n_cigar, ref_len })?;
        2
    } else {
        n_cigar
    };
    out[fixed + field::N_CIGAR_OP.start..fixed + field::N_CIGAR_OP.end].copy_from_slice(&(n_field as u16).to_le_bytes());
    let block_size = (out.len() - fixed) as u32;
    out[start..fixed].copy_from_slice(&block_size.to_le_bytes());
    Ok(true)
}

/// A record whose CIGAR has more than 65,535 operations and covers 2^28
/// or more reference bases: BAM has no room for it (htslib's
/// `bam_write1` refuses it too; SAM and CRAM can hold it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("record {name} with {n_cigar} CIGAR operations and reference length {ref_len} cannot be written in BAM (write SAM or CRAM instead)")]
pub struct LongCigarTooLong {
    /// The read's name.
    pub name: String,
    /// Number of CIGAR operations.
    pub n_cigar: u32,
    /// Reference length covered.
    pub ref_len: i64,
}

/// `bam_write1` for more than 65,535 operations: the `n_cigar` operations
/// at `cigar_st` in `out` (a record being built, ending with its tags)
/// become `<l_seq>S<ref_len>N` and move to a `CG:B,I` tag at the end;
/// `Err(ref_len)` when they cover 2^28 or more reference bases.
pub(crate) fn move_cigar_to_tag(out: &mut Vec<u8>, cigar_st: usize, n_cigar: u32, l_seq: usize) -> Result<(), i64> {
    let cigar_en = cigar_st + 4 * n_cigar as usize;
    let rlen = Cigar { raw: &out[cigar_st..cigar_en] }.reference_len();
    if rlen >= 1 << 28 {
        return Err(rlen);
    }
    let tail = out.len();
    out.reserve(16 + 4 * n_cigar as usize);
    out.extend_from_slice(b"CGBI");
    out.extend_from_slice(&n_cigar.to_le_bytes());
    out.extend_from_within(cigar_st..cigar_en);
    // [cigar][seq qual aux][CG] → [placeholder 8][seq qual aux][CG]
    out.copy_within(cigar_en..tail, cigar_st + 8);
    let after = cigar_st + 8 + (tail - cigar_en);
    let cg_len = out.len() - tail;
    out.copy_within(tail..tail + cg_len, after);
    out.truncate(after + cg_len);
    let placeholder = [(l_seq as u32) << 4 | u32::from(CigarOp::SoftClip.code()), (rlen as u32) << 4 | u32::from(CigarOp::Skip.code())];
    out[cigar_st..cigar_st + 4].copy_from_slice(&placeholder[0].to_le_bytes());
    out[cigar_st + 4..cigar_st + 8].copy_from_slice(&placeholder[1].to_le_bytes());
    Ok(())
}

impl fmt::Debug for RecordRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordRef")
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("flag", &self.flag())
            .field("ref_id", &self.ref_id())
            .field("pos", &self.pos())
            .field("mapq", &self.mapq())
            .finish_non_exhaustive()
    }
}

/// A CIGAR operation kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CigarOp {
    /// `M`
    Match,
    /// `I`
    Insertion,
    /// `D`
    Deletion,
    /// `N`
    Skip,
    /// `S`
    SoftClip,
    /// `H`
    HardClip,
    /// `P`
    Pad,
    /// `=`
    SequenceMatch,
    /// `X`
    SequenceMismatch,
    /// Codes 9–15, invalid in SAM but representable in BAM.
    Unknown(u8),
}

impl CigarOp {
    /// Decodes the low 4 bits of a BAM CIGAR word.
    #[inline]
    pub fn from_code(code: u8) -> CigarOp {
        match code {
            0 => CigarOp::Match,
            1 => CigarOp::Insertion,
            2 => CigarOp::Deletion,
            3 => CigarOp::Skip,
            4 => CigarOp::SoftClip,
            5 => CigarOp::HardClip,
            6 => CigarOp::Pad,
            7 => CigarOp::SequenceMatch,
            8 => CigarOp::SequenceMismatch,
            c => CigarOp::Unknown(c),
        }
    }

    /// True for operations that advance along the reference (M D N = X).
    #[inline]
    pub fn consumes_reference(self) -> bool {
        matches!(self, CigarOp::Match | CigarOp::Deletion | CigarOp::Skip | CigarOp::SequenceMatch | CigarOp::SequenceMismatch)
    }

    /// True for operations that advance along the read (M I S = X).
    #[inline]
    pub fn consumes_query(self) -> bool {
        matches!(self, CigarOp::Match | CigarOp::Insertion | CigarOp::SoftClip | CigarOp::SequenceMatch | CigarOp::SequenceMismatch)
    }

    /// BAM's code of the operation (the low 4 bits of a CIGAR word).
    #[inline]
    pub fn code(self) -> u8 {
        match self {
            CigarOp::Match => 0,
            CigarOp::Insertion => 1,
            CigarOp::Deletion => 2,
            CigarOp::Skip => 3,
            CigarOp::SoftClip => 4,
            CigarOp::HardClip => 5,
            CigarOp::Pad => 6,
            CigarOp::SequenceMatch => 7,
            CigarOp::SequenceMismatch => 8,
            CigarOp::Unknown(c) => c,
        }
    }

    /// The SAM letter, as htslib prints it (`B` for code 9, `?` past it).
    pub fn letter(self) -> u8 {
        CIGAR_LETTERS[usize::from(self.code() & 15)]
    }
}

/// Largest `block_size` accepted: a record's fields are bounded by BAM's
/// integer types to well under this, so anything larger is corruption.
pub(crate) const MAX_RECORD_SIZE: usize = 1 << 31;

/// htslib's `BAM_CIGAR_STR` padded to 16 (`bam_cigar_opchr`): the SAM letter
/// of each operation code.
pub const CIGAR_LETTERS: &[u8; 16] = b"MIDNSHP=XB??????";

/// Operation codes that consume the reference: M(0) D(2) N(3) =(7) X(8).
const REFERENCE_OPS: u16 = 1 | 1 << 2 | 1 << 3 | 1 << 7 | 1 << 8;
/// BAM's code of a soft clip (`S`).
const SOFT_CLIP_CODE: u64 = 4;
/// Operation codes that consume the query: M(0) I(1) S(4) =(7) X(8).
const QUERY_OPS: u16 = 1 | 1 << 1 | 1 << 4 | 1 << 7 | 1 << 8;

/// A borrowed CIGAR: little-endian u32 words, `len << 4 | op`.
#[derive(Clone, Copy)]
pub struct Cigar<'a> {
    raw: &'a [u8],
}

impl<'a> Cigar<'a> {
    /// Number of operations.
    pub fn len(&self) -> usize {
        self.raw.len() / 4
    }

    /// True when there are no operations.
    pub fn is_empty(&self) -> bool {
        self.raw.len() < 4
    }

    /// Operation `i` and its length.
    #[inline]
    pub fn get(&self, i: usize) -> Option<(CigarOp, u32)> {
        let w = self.raw.get(4 * i..4 * i + 4)?;
        let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        Some((CigarOp::from_code((w & 0xf) as u8), w >> 4))
    }

    /// The operations in order.
    pub fn iter(&self) -> impl Iterator<Item = (CigarOp, u32)> + 'a {
        self.raw.chunks_exact(4).map(|w| {
            let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            (CigarOp::from_code((w & 0xf) as u8), w >> 4)
        })
    }

    /// Reference bases covered (sum of M D N = X lengths).
    pub fn reference_len(&self) -> i64 {
        self.masked_len(REFERENCE_OPS)
    }

    /// Query bases consumed (sum of M I S = X lengths).
    pub fn query_len(&self) -> i64 {
        self.masked_len(QUERY_OPS)
    }

    /// Sum of the lengths of operations whose code has its bit set in
    /// `mask`: branch-free, since it runs for every record read.
    #[inline]
    fn masked_len(&self, mask: u16) -> i64 {
        self.raw
            .chunks_exact(4)
            .map(|w| {
                let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                i64::from(w >> 4) * i64::from((mask >> (w & 0xf)) & 1)
            })
            .sum()
    }
}

impl fmt::Display for Cigar<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("*");
        }
        for (op, n) in self.iter() {
            write!(f, "{n}{}", op.letter() as char)?;
        }
        Ok(())
    }
}

/// One auxiliary field's value, borrowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AuxValue<'a> {
    /// `A`: a printable character.
    Char(u8),
    /// Any integer type (`c C s S i I`), widened.
    Int(i64),
    /// `f`
    Float(f32),
    /// `d` (not in the SAM spec, accepted by htslib).
    Double(f64),
    /// `Z`: text without the NUL.
    String(&'a [u8]),
    /// `H`: hex text without the NUL.
    Hex(&'a [u8]),
    /// `B`: an array of `count` elements of `subtype` in little-endian `bytes`.
    Array {
        /// Element type: one of `cCsSiIf`.
        subtype: u8,
        /// Number of elements.
        count: usize,
        /// The elements' bytes.
        bytes: &'a [u8],
    },
}

/// The auxiliary fields of a record.
#[derive(Clone, Copy)]
pub struct Aux<'a> {
    raw: &'a [u8],
}

/// Size of one element of a numeric aux type.
#[inline]
pub(crate) fn aux_elem_size(t: u8) -> Option<usize> {
    Some(match t {
        b'A' | b'c' | b'C' => 1,
        b's' | b'S' => 2,
        b'i' | b'I' | b'f' => 4,
        b'd' => 8,
        _ => return None,
    })
}

impl<'a> Aux<'a> {
    /// The value of the first field tagged `tag`, if present and well formed.
    pub fn find(&self, tag: [u8; 2]) -> Option<AuxValue<'a>> {
        // Fields before the one sought are stepped over, not decoded.
        let mut rest = self.raw;
        while !rest.is_empty() {
            if rest.starts_with(&tag) {
                return parse_aux(rest).map(|(_, value, _)| value);
            }
            rest = &rest[field_len(rest)?..];
        }
        None
    }

    /// [`Aux::find`]`(tag)`, and whether a field that [`Aux::tags`] gives
    /// has a tag `wanted` accepts: both from one walk over the fields
    /// (which stops once both are known), for jobs that asked each of
    /// every record.
    #[inline]
    pub fn find_and_any(&self, tag: [u8; 2], wanted: impl Fn([u8; 2]) -> bool) -> (Option<AuxValue<'a>>, bool) {
        let mut rest = self.raw;
        let (mut found, mut searching, mut any) = (None, true, false);
        while !rest.is_empty() {
            if searching && rest.starts_with(&tag) {
                found = parse_aux(rest).map(|(_, value, _)| value);
                searching = false;
            }
            // A malformed field ends both `find`'s walk and `tags`.
            let Some(len) = field_len(rest) else { break };
            any = any || wanted([rest[0], rest[1]]);
            if any && !searching {
                break;
            }
            rest = &rest[len..];
        }
        (found, any)
    }

    /// The fields' tags in order, their values stepped over undecoded;
    /// ends at the first malformed field (as `iter` ends with an error).
    pub fn tags(&self) -> AuxTags<'a> {
        AuxTags { rest: self.raw }
    }

    /// The fields in order; a malformed field ends iteration with an error.
    pub fn iter(&self) -> AuxIter<'a> {
        AuxIter { rest: self.raw }
    }
}

/// Iterator over auxiliary fields.
pub struct AuxIter<'a> {
    rest: &'a [u8],
}

/// An auxiliary field that runs past the end of its record or has an unknown type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedAux;

impl<'a> Iterator for AuxIter<'a> {
    type Item = Result<([u8; 2], AuxValue<'a>), MalformedAux>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let parsed = parse_aux(self.rest);
        match parsed {
            Some((tag, value, used)) => {
                self.rest = &self.rest[used..];
                Some(Ok((tag, value)))
            }
            None => {
                self.rest = &[];
                Some(Err(MalformedAux))
            }
        }
    }
}

/// Iterator over auxiliary fields' tags ([`Aux::tags`]).
pub struct AuxTags<'a> {
    rest: &'a [u8],
}

impl Iterator for AuxTags<'_> {
    type Item = [u8; 2];

    #[inline]
    fn next(&mut self) -> Option<[u8; 2]> {
        let len = field_len(self.rest);
        let tag = len.map(|_| [self.rest[0], self.rest[1]]);
        self.rest = len.map_or(&[], |len| &self.rest[len..]);
        tag
    }
}

/// The length of the field `b` starts with (tag, type and value), or
/// `None` when `parse_aux` would find it malformed (or `b` is empty).
#[inline]
fn field_len(b: &[u8]) -> Option<usize> {
    let t = *b.get(2)?;
    let body = &b[3..];
    let len = match t {
        b'Z' | b'H' => body.iter().position(|&c| c == 0)? + 1,
        b'B' => {
            let subtype = *body.first()?;
            let size = aux_elem_size(subtype).filter(|_| subtype != b'A' && subtype != b'd')?;
            let count = u32::from_le_bytes(body.get(1..5)?.try_into().ok()?) as usize;
            5 + count.checked_mul(size)?
        }
        _ => aux_elem_size(t)?,
    };
    (len <= body.len()).then_some(3 + len)
}

fn parse_aux(b: &[u8]) -> Option<([u8; 2], AuxValue<'_>, usize)> {
    let tag = [*b.first()?, *b.get(1)?];
    let t = *b.get(2)?;
    let body = &b[3..];
    let int = |n: usize| -> Option<&[u8]> { body.get(..n) };
    let (value, len) = match t {
        b'A' => (AuxValue::Char(*body.first()?), 1),
        b'c' => (AuxValue::Int(i64::from(int(1)?[0] as i8)), 1),
        b'C' => (AuxValue::Int(i64::from(int(1)?[0])), 1),
        b's' => (AuxValue::Int(i64::from(i16::from_le_bytes(int(2)?.try_into().ok()?))), 2),
        b'S' => (AuxValue::Int(i64::from(u16::from_le_bytes(int(2)?.try_into().ok()?))), 2),
        b'i' => (AuxValue::Int(i64::from(i32::from_le_bytes(int(4)?.try_into().ok()?))), 4),
        b'I' => (AuxValue::Int(i64::from(u32::from_le_bytes(int(4)?.try_into().ok()?))), 4),
        b'f' => (AuxValue::Float(f32::from_le_bytes(int(4)?.try_into().ok()?)), 4),
        b'd' => (AuxValue::Double(f64::from_le_bytes(int(8)?.try_into().ok()?)), 8),
        b'Z' | b'H' => {
            let nul = body.iter().position(|&c| c == 0)?;
            let s = &body[..nul];
            (if t == b'Z' { AuxValue::String(s) } else { AuxValue::Hex(s) }, nul + 1)
        }
        b'B' => {
            let subtype = *body.first()?;
            let size = aux_elem_size(subtype).filter(|_| subtype != b'A' && subtype != b'd')?;
            let count = u32::from_le_bytes(body.get(1..5)?.try_into().ok()?) as usize;
            let n = count.checked_mul(size)?;
            let bytes = body.get(5..5 + n)?;
            (AuxValue::Array { subtype, count, bytes }, 5 + n)
        }
        _ => return None,
    };
    Some((tag, value, 3 + len))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Encodes a record the slow, obvious way (test oracle for the view).
    #[allow(clippy::too_many_arguments)]
    pub fn encode(
        name: &str,
        flag: u16,
        ref_id: i32,
        pos: i32,
        mapq: u8,
        cigar: &[(u8, u32)],
        seq: &str,
        aux: &[u8],
    ) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(&ref_id.to_le_bytes());
        d.extend_from_slice(&pos.to_le_bytes());
        d.push((name.len() + 1) as u8);
        d.push(mapq);
        d.extend_from_slice(&4680u16.to_le_bytes());
        d.extend_from_slice(&(cigar.len() as u16).to_le_bytes());
        d.extend_from_slice(&flag.to_le_bytes());
        d.extend_from_slice(&(seq.len() as i32).to_le_bytes());
        d.extend_from_slice(&(-1i32).to_le_bytes());
        d.extend_from_slice(&(-1i32).to_le_bytes());
        d.extend_from_slice(&0i32.to_le_bytes());
        d.extend_from_slice(name.as_bytes());
        d.push(0);
        for &(op, n) in cigar {
            d.extend_from_slice(&((n << 4) | u32::from(op)).to_le_bytes());
        }
        let code = |c: u8| b"=ACMGRSVTWYHKDBN".iter().position(|&x| x == c).unwrap() as u8;
        let s = seq.as_bytes();
        for pair in s.chunks(2) {
            d.push((code(pair[0]) << 4) | pair.get(1).map_or(0, |&c| code(c)));
        }
        d.extend(std::iter::repeat(30).take(s.len()));
        d.extend_from_slice(aux);
        d
    }

    #[test]
    fn fields_decode() {
        let aux = b"NMC\x02XZZhello\0";
        let d = encode("read1", 99, 0, 1234, 60, &[(4, 2), (0, 5), (2, 3), (0, 1)], "ACGTNAGC", aux);
        let r = RecordRef::new(&d, 1).unwrap();
        assert_eq!(r.name(), b"read1");
        assert_eq!((r.flag(), r.ref_id(), r.pos(), r.mapq()), (99, 0, 1234, 60));
        assert_eq!(r.cigar().to_string(), "2S5M3D1M");
        assert_eq!(r.cigar().reference_len(), 9);
        assert_eq!(r.cigar().query_len(), 8);
        assert_eq!(r.end_pos(), 1243);
        let bases: Vec<u8> = (0..r.seq_len()).map(|i| r.base(i)).collect();
        assert_eq!(bases, b"ACGTNAGC");
        assert_eq!(r.qual(), &[30; 8]);
        assert_eq!(r.aux().find(*b"NM"), Some(AuxValue::Int(2)));
        assert_eq!(r.aux().find(*b"XZ"), Some(AuxValue::String(b"hello")));
        assert_eq!(r.aux().find(*b"ZZ"), None);
    }

    #[test]
    fn cigar_codes_round_trip_and_print_as_htslib_does() {
        for code in 0..16u8 {
            assert_eq!(CigarOp::from_code(code).code(), code);
        }
        let letters: Vec<u8> = (0..16).map(|c| CigarOp::from_code(c).letter()).collect();
        // Code 9 (BAM_CBACK) is `B`; htslib prints `?` for 10 to 15.
        assert_eq!(letters, b"MIDNSHP=XB??????");
    }

    #[test]
    fn cigar_lengths_match_the_op_predicates() {
        // Every op code, including the invalid 9..15, against the slow oracle.
        let ops: Vec<(u8, u32)> = (0..16u8).map(|op| (op, u32::from(op) * 3 + 1)).collect();
        let mut raw = Vec::new();
        for &(op, n) in &ops {
            raw.extend_from_slice(&((n << 4) | u32::from(op)).to_le_bytes());
        }
        let c = Cigar { raw: &raw };
        let oracle = |f: fn(CigarOp) -> bool| ops.iter().filter(|(op, _)| f(CigarOp::from_code(*op))).map(|&(_, n)| i64::from(n)).sum::<i64>();
        assert_eq!(c.reference_len(), oracle(CigarOp::consumes_reference));
        assert_eq!(c.query_len(), oracle(CigarOp::consumes_query));
    }

    #[test]
    fn long_cigar_comes_from_cg_tag() {
        // Real CIGAR 3M1I4M in CG:B,I; stored CIGAR 8S7N.
        let mut aux = b"CGBI".to_vec();
        aux.extend_from_slice(&3u32.to_le_bytes());
        for w in [(3u32 << 4), (1 << 4) | 1, (4 << 4)] {
            aux.extend_from_slice(&w.to_le_bytes());
        }
        let d = encode("r", 0, 0, 10, 60, &[(4, 8), (3, 7)], "ACGTACGT", &aux);
        let r = RecordRef::new(&d, 1).unwrap();
        assert_eq!(r.raw_cigar().to_string(), "8S7N");
        assert_eq!(r.cigar().to_string(), "3M1I4M");
        assert_eq!(r.end_pos(), 17);
        // Unplaced records keep their stored CIGAR, as in htslib.
        let d = encode("r", 4, -1, -1, 0, &[(4, 8), (3, 7)], "ACGTACGT", &aux);
        assert_eq!(RecordRef::new(&d, 1).unwrap().cigar().to_string(), "8S7N");
    }

    #[test]
    fn defects_are_reported_not_panicked() {
        let d = encode("r", 0, 0, 10, 60, &[(0, 4)], "ACGT", b"");
        assert_eq!(RecordRef::new(&d[..20], 1).unwrap_err(), RecordDefect::BlockSizeTooSmall);
        assert_eq!(RecordRef::new(&d[..d.len() - 1], 1).unwrap_err(), RecordDefect::FieldsOverrunRecord);
        assert_eq!(RecordRef::new(&d, 0).unwrap_err(), RecordDefect::RefIdOutOfRange);
        let mut e = d.clone();
        e[8] = 0;
        assert_eq!(RecordRef::new(&e, 1).unwrap_err(), RecordDefect::EmptyReadName);
        let d = encode("r", 0, 0, 10, 60, &[(0, 5)], "ACGT", b"");
        assert_eq!(RecordRef::new(&d, 1).unwrap_err(), RecordDefect::CigarSequenceMismatch);
        // Truncated aux fields end iteration with an error.
        let d = encode("r", 0, 0, 10, 60, &[(0, 4)], "ACGT", b"XBBi\xff\xff\xff\x7f");
        let r = RecordRef::new(&d, 1).unwrap();
        assert_eq!(r.aux().iter().next(), Some(Err(MalformedAux)));
    }

    #[test]
    fn tags_and_find_step_over_fields_as_iter_decodes_them() {
        // Every field type, then each way a field can be malformed.
        let good: &[u8] = b"XAAcXCc\xffXSs\x01\x80XIi\x01\x00\x00\x80Xff\x00\x00\x80\x3fXdd\x00\x00\x00\x00\x00\x00\xf0\x3fXZZab\x00XHH0A\x00XBBs\x02\x00\x00\x00\x01\x00\x02\x00NMC\x05";
        let bad: [&[u8]; 7] = [
            b"",
            b"X",
            b"XZ",
            b"XZZab",
            b"XQQ",
            b"XBBd\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
            b"XBBi\x02\x00\x00\x00\x01\x00\x00\x00",
        ];
        for tail in bad {
            let raw = [good, tail].concat();
            let aux = Aux { raw: &raw };
            let decoded: Vec<[u8; 2]> = aux.iter().map_while(Result::ok).map(|(t, _)| t).collect();
            assert_eq!(aux.tags().collect::<Vec<_>>(), decoded, "{tail:?}");
            assert_eq!(decoded.len(), 10);
            for tag in [*b"XA", *b"XZ", *b"XB", *b"NM", *b"XQ", *b"YY"] {
                let want = aux.iter().map_while(Result::ok).find(|(t, _)| *t == tag).map(|(_, v)| v);
                assert_eq!(aux.find(tag), want, "{tail:?} {tag:?}");
                // One walk answers both questions as two would.
                for wanted in [*b"XA", *b"XB", *b"NM", *b"XQ", *b"YY"] {
                    let both = aux.find_and_any(tag, |t| t == wanted);
                    assert_eq!(both, (aux.find(tag), aux.tags().any(|t| t == wanted)), "{tail:?} {tag:?} {wanted:?}");
                }
            }
        }
        // A malformed field first: neither walk goes past it.
        let raw = [&b"XQQ"[..], good].concat();
        assert_eq!(Aux { raw: &raw }.find_and_any(*b"NM", |t| t == *b"XA"), (None, false));
        assert_eq!(Aux { raw: good }.find(*b"NM"), Some(AuxValue::Int(5)));
    }
}
