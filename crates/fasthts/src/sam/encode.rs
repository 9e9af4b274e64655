//! One SAM record line → BAM record bytes, as htslib 1.16's `sam_parse1` +
//! `bam_write1` (`samtools view -b`) write them. The optional fields are
//! parsed in `encode_aux`.

use std::fmt;

use super::bytes::{at, find2};
use super::encode_aux::parse_aux;
use super::parse_number::{str2int, str2uint};
use super::RefNames;
use crate::bam::record::aux_elem_size;
pub use crate::error::sam::{Field, RecordError};

/// Non-fatal conditions met while encoding one record, as a set of flags
/// (htslib logs each as a warning and carries on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Warnings(u8);

impl Warnings {
    /// QNAME is empty.
    pub const EMPTY_NAME: Warnings = Warnings(1);
    /// RNAME is not in the header: the read was made unmapped.
    pub const UNKNOWN_REFERENCE: Warnings = Warnings(2);
    /// POS is 0 on a read with a reference: the read was made unmapped.
    pub const ZERO_POSITION: Warnings = Warnings(4);
    /// A mapped read has CIGAR `*`: the read was made unmapped.
    pub const MISSING_CIGAR: Warnings = Warnings(8);
    /// RNEXT is not in the header: the mate reference is `*`.
    pub const UNKNOWN_MATE_REFERENCE: Warnings = Warnings(16);
    /// PNEXT is 0 with a mate reference: the mate reference is `*`.
    pub const ZERO_MATE_POSITION: Warnings = Warnings(32);
    /// The real CIGAR was taken from a `CG:B,I` tag (htslib logs this).
    pub const CIGAR_FROM_CG_TAG: Warnings = Warnings(64);

    /// No warning.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: Warnings) -> bool {
        self.0 & other.0 == other.0
    }

    fn insert(&mut self, other: Warnings) {
        self.0 |= other.0;
    }
}

impl fmt::Display for Warnings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const TEXT: [&str; 7] = [
            "empty query name",
            "unrecognized reference name; treated as unmapped",
            "mapped query cannot have zero coordinate; treated as unmapped",
            "mapped query must have a CIGAR; treated as unmapped",
            "unrecognized mate reference name; treated as unmapped",
            "mapped mate cannot have zero coordinate; treated as unmapped",
            "CIGAR taken from the CG tag",
        ];
        let mut first = true;
        for (i, t) in TEXT.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                if !first {
                    f.write_str("; ")?;
                }
                f.write_str(t)?;
                first = false;
            }
        }
        Ok(())
    }
}

/// htslib's 4-bit code of a base letter (`seq_nt16_table`).
pub(crate) fn nt16(c: u8) -> u8 {
    NT16[c as usize]
}

/// `seq_nt16_table` of htslib: IUPAC letter → 4-bit code.
static NT16: [u8; 256] = {
    let mut t = [15u8; 256];
    let codes: [(u8, u8); 17] = [
        (b'=', 0),
        (b'A', 1),
        (b'C', 2),
        (b'M', 3),
        (b'G', 4),
        (b'R', 5),
        (b'S', 6),
        (b'V', 7),
        (b'T', 8),
        (b'W', 9),
        (b'Y', 10),
        (b'H', 11),
        (b'K', 12),
        (b'D', 13),
        (b'B', 14),
        (b'N', 15),
        (b'U', 15),
    ];
    let mut k = 0;
    while k < codes.len() {
        let (c, v) = codes[k];
        t[c as usize] = v;
        if c.is_ascii_uppercase() {
            t[c.to_ascii_lowercase() as usize] = v;
        }
        k += 1;
    }
    // htslib also maps the digits 0-3 to 1, 2, 4, 8.
    t[b'0' as usize] = 1;
    t[b'1' as usize] = 2;
    t[b'2' as usize] = 4;
    t[b'3' as usize] = 8;
    t
};

/// `bam_cigar_table`: operator letter → code, or -1.
#[inline]
fn cigar_code(c: u8) -> Option<u32> {
    Some(match c {
        b'M' => 0,
        b'I' => 1,
        b'D' => 2,
        b'N' => 3,
        b'S' => 4,
        b'H' => 5,
        b'P' => 6,
        b'=' => 7,
        b'X' => 8,
        b'B' => 9,
        _ => return None,
    })
}

/// `bam_cigar_type`: bit 0 consumes query, bit 1 consumes reference.
#[inline]
fn cigar_type(op: u32) -> u32 {
    (0x3C1A7 >> (op << 1)) & 3
}

/// Reference and query lengths of a little-endian CIGAR.
fn cigar_lens(cigar: &[u8]) -> (i64, i64) {
    let (mut r, mut q) = (0i64, 0i64);
    for c in cigar.chunks_exact(4) {
        let v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let t = cigar_type(v & 0xf);
        let l = i64::from(v >> 4);
        if t & 2 != 0 {
            r += l;
        }
        if t & 1 != 0 {
            q += l;
        }
    }
    (r, q)
}

/// htslib's `hts_reg2bin(beg, end, 14, 5)`, truncated to the 16-bit field.
#[inline]
fn reg2bin(beg: i64, end: i64) -> u16 {
    crate::bam::binning::reg2bin(beg, end, 14, 5) as u16
}

/// `HTS_POS_MAX`.
const HTS_POS_MAX: i64 = ((i32::MAX as i64) << 32) | i32::MAX as i64;
const FLAG_UNMAP: u16 = 0x4;
const BAM_CSOFT_CLIP: u32 = 4;

/// Finds the end of a tab-terminated token starting at `p` (htslib's
/// `_read_token`: `strchr(p, '\t')` on a NUL-terminated line).
#[inline]
fn token_end(line: &[u8], p: usize, field: Field) -> Result<usize, RecordError> {
    let rest = line.get(p..).unwrap_or(&[]);
    match find2(rest, b'\t', 0) {
        Some(k) if rest[k] == b'\t' => Ok(p + k),
        _ => Err(RecordError::MissingField(field)),
    }
}

#[inline]
fn expect_tab(line: &[u8], p: &mut usize, field: Field) -> Result<(), RecordError> {
    if at(line, *p) != b'\t' {
        return Err(RecordError::MalformedField(field));
    }
    *p += 1;
    Ok(())
}

/// htslib's `parse_sam_flag`.
fn parse_flag(s: &[u8], p: usize, overflow: &mut bool) -> (u16, usize) {
    let c = at(s, p);
    if (b'1'..=b'9').contains(&c) {
        let (v, e) = str2uint(s, p, 16, overflow);
        (v as u16, e)
    } else if c == b'0' {
        if at(s, p + 1) == b'\t' {
            return (0, p + 1);
        }
        // strtoul(v, &end, 0): "0x..." hex, "0..." octal.
        let (base, digits_at) =
            if matches!(at(s, p + 1), b'x' | b'X') && at(s, p + 2).is_ascii_hexdigit() { (16u64, p + 2) } else { (8u64, p) };
        let mut i = digits_at;
        let mut n: u64 = 0;
        let mut big = false;
        loop {
            let d = match at(s, i) {
                c @ b'0'..=b'9' => u64::from(c - b'0'),
                c @ b'a'..=b'f' => u64::from(c - b'a' + 10),
                c @ b'A'..=b'F' => u64::from(c - b'A' + 10),
                _ => break,
            };
            if d >= base {
                break;
            }
            match n.checked_mul(base).and_then(|v| v.checked_add(d)) {
                Some(v) => n = v,
                None => big = true,
            }
            i += 1;
        }
        if big || n > 65535 {
            *overflow = true;
            (65535, i)
        } else {
            (n as u16, i)
        }
    } else {
        (0, p)
    }
}

/// What is done with a POS, PNEXT or TLEN that BAM's 32-bit fields cannot
/// hold (SAM allows 64-bit positions, as htslib 1.16 keeps them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Positions {
    /// Refused, as `bam_write1` refuses them ([`RecordError::PositionTooLarge`]).
    #[default]
    Bam,
    /// Kept, with those fields set to -1 (POS, PNEXT) or 0 (TLEN) in the
    /// record: for a reader that never looks at positions (flagstat, and
    /// idxstats' count, count such records as samtools does).
    Unread,
    /// Kept whole, 64-bit: the fixed fields hold POS, PNEXT and TLEN
    /// clamped to 32 bits, and a record where one of them reaches a 32-bit
    /// limit (POS or PNEXT ≥ 2^31 - 1 0-based, TLEN at or past ±2^31 - 1,
    /// -2^31) ends with a [`WIDE_POSITIONS_LEN`]-byte field (tag
    /// `\xff\xff`, which no SAM tag can be, `B:c` of 24 bytes) holding the
    /// three as i64 LE; other records are plain BAM. For a sort to SAM and
    /// for depth, which keep positions as samtools 1.16 does ([`wide_positions`] and
    /// [`wide_positions_len`] read them).
    Wide,
}

/// Bytes of the field [`Positions::Wide`] appends to a record whose
/// positions reach a 32-bit limit.
pub const WIDE_POSITIONS_LEN: usize = 32;

/// Whether the fixed fields of a record (without its `block_size`) hold
/// values at a 32-bit limit: under [`Positions::Wide`], exactly the
/// records that end with the 64-bit positions.
#[inline]
fn at_32_bit_limit(record: &[u8]) -> bool {
    let i32_at = |i: usize| i32::from_le_bytes(record[i..i + 4].try_into().expect("4 bytes"));
    let tlen = i32_at(28);
    i32_at(4) == i32::MAX || i32_at(24) == i32::MAX || tlen == i32::MAX || tlen == i32::MIN
}

/// Bytes at the end of a record encoded with [`Positions::Wide`] (without
/// its `block_size`) that hold its 64-bit positions: 0 or
/// [`WIDE_POSITIONS_LEN`].
#[inline]
pub fn wide_positions_len(record: &[u8]) -> usize {
    if at_32_bit_limit(record) {
        WIDE_POSITIONS_LEN
    } else {
        0
    }
}

/// POS, PNEXT and TLEN (0-based POS and PNEXT) of a record encoded with
/// [`Positions::Wide`] (`record` without its `block_size`).
#[inline]
pub fn wide_positions(record: &[u8]) -> (i64, i64, i64) {
    if at_32_bit_limit(record) {
        let at = record.len() - 24;
        let i64_at = |i: usize| i64::from_le_bytes(record[i..i + 8].try_into().expect("8 bytes"));
        (i64_at(at), i64_at(at + 8), i64_at(at + 16))
    } else {
        let i32_at = |i: usize| i64::from(i32::from_le_bytes(record[i..i + 4].try_into().expect("4 bytes")));
        (i32_at(4), i32_at(24), i32_at(28))
    }
}

/// The 0-based start and end on the reference of `r`, a record that may
/// end with 64-bit positions ([`Positions::Wide`]).
#[inline]
pub fn wide_span(r: &crate::bam::RecordRef<'_>) -> (i64, i64) {
    let pos = wide_positions(r.as_bytes()).0;
    (pos, pos + (r.end_pos() - i64::from(r.pos())))
}

/// Encodes one SAM record line (without its line end) as BAM and APPENDS
/// `block_size` (u32 LE) and the record to `out`, exactly as htslib 1.16's
/// `sam_parse1` + `bam_write1` (`samtools view -b`) would write it.
///
/// On error `out` is left as it was.
pub fn encode_record(line: &[u8], refs: &RefNames, out: &mut Vec<u8>) -> Result<Warnings, RecordError> {
    encode_record_with(line, refs, out, Positions::Bam)
}

/// [`encode_record`], with positions past BAM's range handled as `positions` says.
pub fn encode_record_with(line: &[u8], refs: &RefNames, out: &mut Vec<u8>, positions: Positions) -> Result<Warnings, RecordError> {
    let base = out.len();
    let r = encode_inner(line, refs, out, base, positions);
    if r.is_err() {
        out.truncate(base);
    }
    r
}

fn encode_inner(s: &[u8], refs: &RefNames, out: &mut Vec<u8>, base: usize, positions: Positions) -> Result<Warnings, RecordError> {
    let mut warn = Warnings::default();
    let mut overflow = false; // htslib never checks the core fields' overflow
    out.reserve(36 + s.len() + s.len() / 2 + 16);
    out.resize(base + 36, 0);

    // QNAME
    let name_end = token_end(s, 0, Field::Qname)?;
    let l_name = name_end + 1; // with NUL
    if l_name <= 1 {
        warn.insert(Warnings::EMPTY_NAME);
    }
    if l_name > 255 {
        return Err(RecordError::NameTooLong(name_end));
    }
    out.extend_from_slice(&s[..name_end]);
    out.push(0);
    let mut p = name_end + 1;

    // FLAG
    let (mut flag, e) = parse_flag(s, p, &mut overflow);
    p = e;
    expect_tab(s, &mut p, Field::Flag)?;

    // RNAME
    let e = token_end(s, p, Field::Rname)?;
    let rname = &s[p..e];
    p = e + 1;
    let mut tid: i32 = -1;
    if rname != b"*" {
        if refs.is_empty() {
            return Err(RecordError::NoReferences);
        }
        match refs.get(rname)? {
            Some(id) => tid = id,
            None => warn.insert(Warnings::UNKNOWN_REFERENCE),
        }
    }

    // POS
    let (v, e) = str2uint(s, p, 63, &mut overflow);
    let pos = v as i64 - 1;
    p = e;
    expect_tab(s, &mut p, Field::Pos)?;
    if pos < 0 && tid >= 0 {
        warn.insert(Warnings::ZERO_POSITION);
        tid = -1;
    }
    if tid < 0 {
        flag |= FLAG_UNMAP;
    }

    // MAPQ
    let (v, e) = str2uint(s, p, 8, &mut overflow);
    let mapq = v as u8;
    p = e;
    expect_tab(s, &mut p, Field::Mapq)?;

    // CIGAR
    let cigar_st = out.len();
    let n_cigar: u32;
    let cigreflen: i64;
    if at(s, p) != b'*' {
        let mut n: u64 = 0;
        let mut k = p;
        while !matches!(at(s, k), 0 | b'\t') {
            if !at(s, k).is_ascii_digit() {
                n += 1;
            }
            k += 1;
        }
        if n == 0 {
            return Err(RecordError::InvalidCigar("no CIGAR operations"));
        }
        if n >= 2147483647 {
            return Err(RecordError::InvalidCigar("too many CIGAR operations"));
        }
        n_cigar = n as u32;
        out.reserve(n as usize * 4);
        let mut rlen: i64 = 0;
        for _ in 0..n_cigar {
            let mut of = false;
            let (len, q) = str2uint(s, p, 28, &mut of);
            if q == p {
                return Err(RecordError::InvalidCigar("CIGAR length invalid"));
            }
            if of {
                return Err(RecordError::InvalidCigar("CIGAR length too long"));
            }
            let op = cigar_code(at(s, q)).ok_or(RecordError::InvalidCigar("unrecognized CIGAR operator"))?;
            p = q + 1;
            if cigar_type(op) & 2 != 0 {
                rlen += len as i64;
            }
            out.extend_from_slice(&((len as u32) << 4 | op).to_le_bytes());
        }
        if at(s, p) != b'\t' {
            return Err(RecordError::MalformedField(Field::Cigar));
        }
        p += 1;
        let l = if flag & FLAG_UNMAP == 0 { rlen } else { 1 };
        cigreflen = if l == 0 { 1 } else { l };
    } else {
        if flag & FLAG_UNMAP == 0 {
            warn.insert(Warnings::MISSING_CIGAR);
        }
        flag |= FLAG_UNMAP;
        p = token_end(s, p, Field::Cigar)? + 1;
        n_cigar = 0;
        cigreflen = 1;
    }
    if HTS_POS_MAX - cigreflen <= pos {
        return Err(RecordError::EndTooLarge);
    }
    let mut bin = reg2bin(pos, pos + cigreflen);

    // RNEXT
    let e = token_end(s, p, Field::Rnext)?;
    let rnext = &s[p..e];
    p = e + 1;
    let mut mtid: i32 = if rnext == b"=" {
        tid
    } else if rnext == b"*" {
        -1
    } else {
        match refs.get(rnext)? {
            Some(id) => id,
            None => {
                warn.insert(Warnings::UNKNOWN_MATE_REFERENCE);
                -1
            }
        }
    };

    // PNEXT
    let (v, e) = str2uint(s, p, 63, &mut overflow);
    let mpos = v as i64 - 1;
    p = e;
    expect_tab(s, &mut p, Field::Pnext)?;
    if mpos < 0 && mtid >= 0 {
        warn.insert(Warnings::ZERO_MATE_POSITION);
        mtid = -1;
    }

    // TLEN
    let (isize, e) = str2int(s, p, 64, &mut overflow);
    p = e;
    expect_tab(s, &mut p, Field::Tlen)?;

    // SEQ, which a tab must end: a SEQ that ends the line lacks QUAL.
    let e = match token_end(s, p, Field::Seq) {
        Err(_) if !matches!(at(s, p), 0) => return Err(RecordError::MissingField(Field::Qual)),
        r => r?,
    };
    let seq = &s[p..e];
    p = e + 1;
    let l_seq: usize = if seq != b"*" {
        if seq.len() > i32::MAX as usize {
            return Err(RecordError::SeqTooLong);
        }
        if n_cigar > 0 {
            let (_, ql) = cigar_lens(&out[cigar_st..]);
            if ql != seq.len() as i64 {
                return Err(RecordError::CigarSeqMismatch { cigar: ql, seq: seq.len() });
            }
        }
        let at0 = out.len();
        out.resize(at0 + seq.len().div_ceil(2), 0);
        let dst = &mut out[at0..];
        let pairs = seq.chunks_exact(2);
        if let [c] = pairs.remainder() {
            dst[seq.len() / 2] = NT16[*c as usize] << 4;
        }
        for (d, b) in dst.iter_mut().zip(pairs) {
            *d = NT16[b[0] as usize] << 4 | NT16[b[1] as usize];
        }
        seq.len()
    } else {
        0
    };

    // QUAL
    if at(s, p) == b'*' && matches!(at(s, p + 1), b'\t' | 0) {
        out.resize(out.len() + l_seq, 0xff);
        p += 2;
    } else {
        let rest = s.len().saturating_sub(p);
        if rest < l_seq || !matches!(at(s, p + l_seq), b'\t' | 0) {
            return Err(RecordError::SeqQualMismatch);
        }
        let q = &s[p..p + l_seq];
        let at0 = out.len();
        out.resize(at0 + l_seq, 0);
        let mut bad = 0u8;
        for (d, &c) in out[at0..].iter_mut().zip(q) {
            let v = c.wrapping_sub(33);
            *d = v;
            bad |= v;
        }
        if bad & 0x80 != 0 {
            return Err(RecordError::InvalidQual);
        }
        p += l_seq + 1;
    }

    // Optional fields.
    let aux_st = out.len();
    parse_aux(s, p, out)?;

    let mut n_cigar = n_cigar;
    // A placeholder CIGAR whose real value is in a CG tag (bam_tag2cigar).
    if n_cigar > 0 && tid >= 0 && pos >= 0 {
        let first = u32::from_le_bytes([out[cigar_st], out[cigar_st + 1], out[cigar_st + 2], out[cigar_st + 3]]);
        if first & 0xf == BAM_CSOFT_CLIP && (first >> 4) as usize == l_seq {
            if let Some(n) = tag2cigar(out, cigar_st, n_cigar, aux_st) {
                n_cigar = n;
                let cig = &out[cigar_st..cigar_st + 4 * n as usize];
                let rlen = if flag & FLAG_UNMAP != 0 { 0 } else { cigar_lens(cig).0 };
                bin = reg2bin(pos, pos + if rlen == 0 { 1 } else { rlen });
                warn.insert(Warnings::CIGAR_FROM_CG_TAG);
            }
        }
    }

    // bam_write1's checks and the long-CIGAR form.
    let (mut pos, mut mpos, mut isize) = (pos, mpos, isize);
    let limit = |v: i64| v <= i64::from(i32::MIN) || v >= i64::from(i32::MAX);
    let wide = (positions == Positions::Wide && (pos >= i64::from(i32::MAX) || mpos >= i64::from(i32::MAX) || limit(isize)))
        .then_some([pos, mpos, isize]);
    if wide.is_some() {
        let clamp = |v: i64| v.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
        (pos, mpos, isize) = (clamp(pos), clamp(mpos), clamp(isize));
    }
    if positions == Positions::Unread {
        if pos > i32::MAX as i64 {
            pos = -1;
        }
        if mpos > i32::MAX as i64 {
            mpos = -1;
        }
        if isize < i32::MIN as i64 || isize > i32::MAX as i64 {
            isize = 0;
        }
    }
    if pos > i32::MAX as i64 {
        return Err(RecordError::PositionTooLarge("POS"));
    }
    if mpos > i32::MAX as i64 {
        return Err(RecordError::PositionTooLarge("PNEXT"));
    }
    if isize < i32::MIN as i64 || isize > i32::MAX as i64 {
        return Err(RecordError::PositionTooLarge("TLEN"));
    }
    let mut n_cigar_field = n_cigar;
    if n_cigar > 0xffff {
        crate::bam::record::move_cigar_to_tag(out, cigar_st, n_cigar, l_seq)
            .map_err(|ref_len| RecordError::LongCigarTooLong { n_cigar, ref_len })?;
        n_cigar_field = 2;
    }
    // Last, after a CG tag too.
    if let Some(values) = wide {
        out.extend_from_slice(b"\xff\xffBc");
        out.extend_from_slice(&24u32.to_le_bytes());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    let block_size = out.len() - base - 4;
    if block_size > i32::MAX as usize {
        return Err(RecordError::RecordTooLarge);
    }
    let h = &mut out[base..base + 36];
    h[0..4].copy_from_slice(&(block_size as u32).to_le_bytes());
    h[4..8].copy_from_slice(&tid.to_le_bytes());
    h[8..12].copy_from_slice(&(pos as i32).to_le_bytes());
    h[12..16].copy_from_slice(&(u32::from(bin) << 16 | u32::from(mapq) << 8 | l_name as u32).to_le_bytes());
    h[16..20].copy_from_slice(&(u32::from(flag) << 16 | n_cigar_field).to_le_bytes());
    h[20..24].copy_from_slice(&(l_seq as u32).to_le_bytes());
    h[24..28].copy_from_slice(&mtid.to_le_bytes());
    h[28..32].copy_from_slice(&(mpos as i32).to_le_bytes());
    h[32..36].copy_from_slice(&(isize as i32).to_le_bytes());
    Ok(warn)
}

/// Offset (from the start of `aux`) of the first tag `tag` in well-formed
/// aux data, and its end.
fn find_aux(aux: &[u8], tag: [u8; 2]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i + 3 <= aux.len() {
        let t = aux[i + 2];
        let vlen = match t {
            b'Z' | b'H' => aux[i + 3..].iter().position(|&c| c == 0)? + 1,
            b'B' => {
                let sub = *aux.get(i + 3)?;
                let n = u32::from_le_bytes(aux.get(i + 4..i + 8)?.try_into().ok()?) as usize;
                5 + n * aux_elem_size(sub).unwrap_or(0)
            }
            _ => aux_elem_size(t).unwrap_or(0),
        };
        let end = i + 3 + vlen;
        if aux[i..i + 2] == tag {
            return Some((i, end));
        }
        i = end;
    }
    None
}

/// htslib's `bam_tag2cigar` on a record being built in `out`: when the aux
/// data holds a `CG:B,I` (or `B,i`) tag with at least `n_cigar` and fewer
/// than 2^29 values, it replaces the CIGAR and the tag is removed. Returns
/// the new CIGAR length.
fn tag2cigar(out: &mut Vec<u8>, cigar_st: usize, n_cigar: u32, aux_st: usize) -> Option<u32> {
    let (cg, cg_end) = find_aux(&out[aux_st..], *b"CG")?;
    let (cg, cg_end) = (aux_st + cg, aux_st + cg_end);
    if out[cg + 2] != b'B' || !matches!(out[cg + 3], b'I' | b'i') {
        return None;
    }
    let cg_len = u32::from_le_bytes(out[cg + 4..cg + 8].try_into().ok()?);
    if cg_len < n_cigar || cg_len >= 1 << 29 {
        return None;
    }
    let cigar_en = cigar_st + 4 * n_cigar as usize;
    let mut rec = Vec::with_capacity(out.len() - cigar_st);
    rec.extend_from_slice(&out[cg + 8..cg_end]);
    rec.extend_from_slice(&out[cigar_en..cg]);
    rec.extend_from_slice(&out[cg_end..]);
    out.truncate(cigar_st);
    out.extend_from_slice(&rec);
    Some(cg_len)
}
