//! samtools 1.16's `fixmate` (`bam_mating_core`), record by record: the
//! mate fields, flags and tags of each pair of primary records that share a
//! name, as samtools sets them. [`MateRecord`] holds one record being
//! edited (its BAM bytes, its positions as 64-bit values); [`fix_pair`] and
//! [`fix_unpaired`] are the per-template logic, callable on records grouped
//! in memory; [`Fixmate`] is samtools' streaming loop over name-grouped
//! records, with its pass-through of secondary and supplementary records.
//!
//! Buffers are reused: a record's bytes are copied into a slot that keeps
//! its capacity, and tags are edited in place.

use crate::bam::record::{flags, CIGAR_LETTERS, FIXED_LEN};
use crate::bam::RecordRef;
use crate::sam::{wide_positions, wide_positions_len, WIDE_POSITIONS_LEN};
use crate::Error;
use std::io::Write;

/// samtools' `MD_MIN_QUALITY`: qualities below it count for nothing in
/// the mate score (`-m`).
const MATE_SCORE_MIN_QUALITY: u8 = 15;

/// What samtools fixmate is asked to do besides fixing mates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixmateOptions {
    /// `-r`: drop secondary and unmapped records.
    pub remove_reads: bool,
    /// Clear PROPER_PAIR from pairs that cannot be FR pairs (cleared by `-p`).
    pub proper_pair_check: bool,
    /// `-c`: the template CIGAR `ct` tag on the leftmost record of a pair.
    pub template_cigar: bool,
    /// `-m`: the mate score `ms` tag (and `MC`, which fixmate always adds).
    pub mate_score: bool,
}

impl Default for FixmateOptions {
    /// samtools' defaults: the proper-pair check on, nothing else.
    fn default() -> Self {
        FixmateOptions { remove_reads: false, proper_pair_check: true, template_cigar: false, mate_score: false }
    }
}

/// One record being fixed: its BAM data (no `block_size`) and POS, PNEXT
/// and TLEN as htslib holds them in memory (64-bit; the data's 32-bit
/// fields are rewritten from these when the record is written).
#[derive(Clone, Debug, Default)]
pub struct MateRecord {
    data: Vec<u8>,
    pos: i64,
    mate_pos: i64,
    template_len: i64,
}

impl MateRecord {
    /// Copies `record` (BAM data without `block_size`) into this slot.
    /// `wide`: the record may end with the 64-bit positions of a SAM input
    /// read with [`crate::sam::Positions::Wide`], which are taken from it.
    pub fn load(&mut self, record: &[u8], wide: bool) {
        let tail = if wide { wide_positions_len(record) } else { 0 };
        (self.pos, self.mate_pos, self.template_len) = if wide { wide_positions(record) } else { Self::narrow_positions(record) };
        self.data.clear();
        self.data.extend_from_slice(&record[..record.len() - tail]);
    }

    fn narrow_positions(record: &[u8]) -> (i64, i64, i64) {
        let at = |i: usize| i64::from(i32::from_le_bytes(record[i..i + 4].try_into().expect("4 bytes")));
        (at(4), at(24), at(28))
    }

    /// Appends the record, `block_size` first, to `out`. `wide`: the
    /// output keeps positions past 32 bits (SAM), which then follow the
    /// record as [`crate::sam::Positions::Wide`] puts them; otherwise
    /// (BAM, CRAM) such a record is refused, as `bam_write1` refuses it.
    pub fn append_to(&self, out: &mut Vec<u8>, wide: bool) -> Result<(), Error> {
        let limit = |v: i64| v <= i64::from(i32::MIN) || v >= i64::from(i32::MAX);
        let past = self.pos >= i64::from(i32::MAX) || self.mate_pos >= i64::from(i32::MAX) || limit(self.template_len);
        if !wide && (self.pos > i64::from(i32::MAX) || self.mate_pos > i64::from(i32::MAX) || i32::try_from(self.template_len).is_err()) {
            return Err(Error::Message(format!(
                "positional data is too large for BAM format (read {})",
                String::from_utf8_lossy(self.name())
            )));
        }
        let tail = if wide && past { WIDE_POSITIONS_LEN } else { 0 };
        let start = out.len();
        out.extend_from_slice(&((self.data.len() + tail) as u32).to_le_bytes());
        out.extend_from_slice(&self.data);
        let clamp = |v: i64| v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
        let fixed = &mut out[start + 4..start + 4 + FIXED_LEN];
        fixed[4..8].copy_from_slice(&clamp(self.pos).to_le_bytes());
        fixed[24..28].copy_from_slice(&clamp(self.mate_pos).to_le_bytes());
        fixed[28..32].copy_from_slice(&clamp(self.template_len).to_le_bytes());
        if tail > 0 {
            out.extend_from_slice(b"\xff\xffBc");
            out.extend_from_slice(&24u32.to_le_bytes());
            for v in [self.pos, self.mate_pos, self.template_len] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        Ok(())
    }

    /// The record as read by the rest of the library (its 32-bit
    /// position fields are as loaded, not as edited).
    pub fn record(&self) -> RecordRef<'_> {
        RecordRef::new_prevalidated(&self.data)
    }

    /// The read name, without its NUL.
    pub fn name(&self) -> &[u8] {
        self.record().name()
    }

    /// FLAG.
    pub fn flag(&self) -> u16 {
        u16::from_le_bytes([self.data[14], self.data[15]])
    }

    fn set_flag(&mut self, flag: u16) {
        self.data[14..16].copy_from_slice(&flag.to_le_bytes());
    }

    fn add_flags(&mut self, bits: u16) {
        self.set_flag(self.flag() | bits);
    }

    fn clear_flags(&mut self, bits: u16) {
        self.set_flag(self.flag() & !bits);
    }

    /// Reference id.
    pub fn ref_id(&self) -> i32 {
        i32::from_le_bytes(self.data[0..4].try_into().expect("4 bytes"))
    }

    /// Sets POS, in the data's 32-bit field too (clamped) so that what
    /// reads the data sees the record placed or not.
    fn set_pos(&mut self, pos: i64) {
        self.pos = pos;
        let clamped = pos.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
        self.data[4..8].copy_from_slice(&clamped.to_le_bytes());
    }

    fn set_ref_id(&mut self, tid: i32) {
        self.data[0..4].copy_from_slice(&tid.to_le_bytes());
    }

    fn set_mate_ref_id(&mut self, tid: i32) {
        self.data[20..24].copy_from_slice(&tid.to_le_bytes());
    }

    /// 0-based position (64-bit).
    pub fn pos(&self) -> i64 {
        self.pos
    }

    /// The mate's 0-based position (64-bit).
    pub fn mate_pos(&self) -> i64 {
        self.mate_pos
    }

    /// TLEN (64-bit).
    pub fn template_len(&self) -> i64 {
        self.template_len
    }

    fn mapq(&self) -> u8 {
        self.data[9]
    }

    fn unmapped(&self) -> bool {
        self.flag() & flags::UNMAPPED != 0
    }

    /// htslib's `bam_endpos`: POS plus the reference length of the CIGAR
    /// (1 when unmapped or when it covers none).
    pub fn end_pos(&self) -> i64 {
        let rlen = if self.unmapped() { 0 } else { self.record().cigar().reference_len() };
        self.pos + if rlen == 0 { 1 } else { rlen }
    }

    /// Where the aux fields start.
    fn aux_start(&self) -> usize {
        let r = self.record();
        let l_seq = r.seq_len();
        FIXED_LEN + usize::from(self.data[8]) + 4 * usize::from(r.n_cigar_op()) + l_seq.div_ceil(2) + l_seq
    }

    /// htslib's `bam_aux_get` + `bam_aux_del`: removes the first field
    /// `tag` (nothing when absent, or past aux data htslib cannot walk).
    fn delete_tag(&mut self, tag: [u8; 2]) {
        let start = self.aux_start();
        let mut at = start;
        while at + 3 <= self.data.len() {
            let Some(len) = aux_field_len(&self.data[at..]) else { return };
            if self.data[at..at + 2] == tag {
                self.data.drain(at..at + len);
                return;
            }
            at += len;
        }
    }

    /// `bam_aux_append(b, tag, 'i', 4, value)`.
    fn append_int(&mut self, tag: [u8; 2], value: u32) {
        self.data.extend_from_slice(&tag);
        self.data.push(b'i');
        self.data.extend_from_slice(&value.to_le_bytes());
    }

    /// Appends `tag:Z:` and the CIGAR of `source` as samtools formats it
    /// for MC (`*` when there is none).
    fn append_cigar_tag(&mut self, tag: [u8; 2], source: &MateRecord) {
        self.data.extend_from_slice(&tag);
        self.data.push(b'Z');
        let cigar = source.record().cigar();
        if cigar.is_empty() {
            self.data.push(b'*');
        } else {
            push_cigar(&mut self.data, &source.data, cigar_range(source));
        }
        self.data.push(0);
    }
}

/// The byte range of the CIGAR `source.record().cigar()` gives, within
/// `source.data` (the stored CIGAR, or the one in its CG tag).
fn cigar_range(source: &MateRecord) -> std::ops::Range<usize> {
    let r = source.record();
    match r.cigar_tag_field() {
        Some(field) => {
            // CG:B:I, count, then the words.
            let at = source.aux_start() + field.start + 8;
            at..at + 4 * r.cigar().len()
        }
        None => {
            let at = FIXED_LEN + usize::from(source.data[8]);
            at..at + 4 * usize::from(r.n_cigar_op())
        }
    }
}

/// Appends CIGAR words (`bytes[range]`) as SAM text, without allocating
/// (the record being appended to is not the one read).
fn push_cigar(out: &mut Vec<u8>, bytes: &[u8], range: std::ops::Range<usize>) {
    for word in bytes[range].chunks_exact(4) {
        let w = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        let _ = write!(out, "{}", w >> 4);
        out.push(CIGAR_LETTERS[(w & 0xf) as usize]);
    }
}

/// Bytes of the aux field at the start of `aux`, as htslib's `skip_aux`
/// walks it; `None` when malformed.
fn aux_field_len(aux: &[u8]) -> Option<usize> {
    let size = |t: u8| match t {
        b'A' | b'c' | b'C' => Some(1),
        b's' | b'S' => Some(2),
        b'i' | b'I' | b'f' => Some(4),
        b'd' => Some(8),
        _ => None,
    };
    let value = &aux[3..];
    let len = match aux[2] {
        b'Z' | b'H' => value.iter().position(|&c| c == 0)? + 1,
        b'B' => {
            let n = u32::from_le_bytes(value.get(1..5)?.try_into().ok()?) as usize;
            5 + n.checked_mul(size(*value.first()?)?)?
        }
        t => size(t)?,
    };
    (value.len() >= len).then_some(3 + len)
}

/// Reused buffers of [`fix_pair`] (the text of the `ct` tag).
#[derive(Default)]
pub struct PairScratch {
    template_cigar: Vec<u8>,
}

/// Marks `record` unmapped if it is not placed, or if it runs past the end
/// of its reference (`reference_len` gives a reference's length): what
/// samtools does to each primary record as it reads it. Returns its end
/// (htslib's `bam_endpos`) when it is mapped, which [`fix_pair`] takes.
pub fn check_placement(record: &mut MateRecord, reference_len: impl Fn(i32) -> i64) -> Option<i64> {
    if record.ref_id() < 0 || record.pos < 0 {
        record.add_flags(flags::UNMAPPED);
    }
    if record.unmapped() {
        return None;
    }
    let end = record.end_pos();
    if end > reference_len(record.ref_id()) {
        record.add_flags(flags::UNMAPPED);
    }
    Some(end)
}

/// samtools' `sync_mate` and what follows it in `bam_mating_core`: the two
/// primary records of one name (`first` read before `second`), with their
/// ends as [`check_placement`] gave them, become mates: placement of an
/// unmapped one, mate fields, MQ and MC, TLEN, `ct` (`-c`), PROPER_PAIR
/// (the FR check) and `ms` (`-m`). With `-r` it also clears the pair
/// flags of a record whose mate is unmapped; which records are then
/// written is [`kept_after_pairing`]'s.
pub fn fix_pair(first: &mut MateRecord, second: &mut MateRecord, ends: (i64, i64), options: &FixmateOptions, scratch: &mut PairScratch) {
    let (pre, cur) = (first, second);
    pre.add_flags(flags::PAIRED);
    cur.add_flags(flags::PAIRED);
    place_unmapped_at_mate(pre, cur);
    place_unmapped_at_mate(cur, pre);
    copy_mate_fields(pre, cur);
    copy_mate_fields(cur, pre);
    copy_mate_tags(pre, cur);
    copy_mate_tags(cur, pre);
    let unplaced = flags::UNMAPPED | flags::MATE_UNMAPPED;
    if pre.ref_id() == cur.ref_id() && cur.flag() & unplaced == 0 && pre.flag() & unplaced == 0 {
        let (pre_end, cur_end) = ends;
        let cur5 = if cur.flag() & flags::REVERSE != 0 { cur_end } else { cur.pos };
        let pre5 = if pre.flag() & flags::REVERSE != 0 { pre_end } else { pre.pos };
        cur.template_len = pre5 - cur5;
        pre.template_len = cur5 - pre5;
    } else {
        cur.template_len = 0;
        pre.template_len = 0;
    }
    if options.template_cigar {
        template_cigar(pre, cur, &mut scratch.template_cigar);
    }
    if options.proper_pair_check && !plausibly_properly_paired(pre, cur) {
        pre.clear_flags(flags::PROPER_PAIR);
        cur.clear_flags(flags::PROPER_PAIR);
    }
    if options.mate_score {
        let (pre_score, cur_score) = (mate_score(pre), mate_score(cur));
        cur.delete_tag(*b"ms");
        cur.append_int(*b"ms", pre_score);
        pre.delete_tag(*b"ms");
        pre.append_int(*b"ms", cur_score);
    }
    if options.remove_reads {
        // No orphan left with a pair's flags when its mate is dropped.
        let orphan = flags::PAIRED | flags::MATE_REVERSE | flags::PROPER_PAIR;
        if pre.unmapped() {
            cur.clear_flags(orphan);
        }
        if cur.unmapped() {
            pre.clear_flags(orphan);
        }
    }
}

/// Whether a record of a fixed pair is written: all are, but with `-r`
/// only the mapped ones.
pub fn kept_after_pairing(record: &MateRecord, options: &FixmateOptions) -> bool {
    !options.remove_reads || !record.unmapped()
}

/// samtools' treatment of a primary record without a mate: unplaced if
/// unmapped, its mate fields and pair flags cleared. Returns whether it
/// is written (with `-r`, only if mapped).
pub fn fix_unpaired(record: &mut MateRecord, options: &FixmateOptions) -> bool {
    if record.ref_id() < 0 || record.pos < 0 || record.unmapped() {
        record.add_flags(flags::UNMAPPED);
        record.set_ref_id(-1);
        record.set_pos(-1);
    }
    record.set_mate_ref_id(-1);
    record.mate_pos = -1;
    record.template_len = 0;
    record.clear_flags(flags::PAIRED | flags::MATE_REVERSE | flags::PROPER_PAIR);
    !options.remove_reads || !record.unmapped()
}

/// `sync_unmapped_pos_inner`: an unmapped `dest` with a mapped mate takes
/// the mate's RNAME and POS.
fn place_unmapped_at_mate(src: &MateRecord, dest: &mut MateRecord) {
    if dest.unmapped() && !src.unmapped() {
        dest.set_ref_id(src.ref_id());
        dest.set_pos(src.pos);
    }
}

/// `sync_mate_inner`: `dest`'s mate fields from `src` (MATE_UNMAPPED is
/// set, never cleared).
fn copy_mate_fields(src: &MateRecord, dest: &mut MateRecord) {
    dest.set_mate_ref_id(src.ref_id());
    dest.mate_pos = src.pos;
    if src.flag() & flags::REVERSE != 0 {
        dest.add_flags(flags::MATE_REVERSE);
    } else {
        dest.clear_flags(flags::MATE_REVERSE);
    }
    if src.unmapped() {
        dest.add_flags(flags::MATE_UNMAPPED);
    }
}

/// `sync_mq_mc`: MQ from a mapped `src`; MC when either is mapped, each
/// replacing its old field (now at the end).
fn copy_mate_tags(src: &MateRecord, dest: &mut MateRecord) {
    if !src.unmapped() {
        dest.delete_tag(*b"MQ");
        dest.append_int(*b"MQ", u32::from(src.mapq()));
    }
    if !src.unmapped() || !dest.unmapped() {
        dest.delete_tag(*b"MC");
        dest.append_cigar_tag(*b"MC", src);
    }
}

/// `plausibly_properly_paired`: both mapped to one reference, the
/// leftmost 5' end forward and the other reverse.
fn plausibly_properly_paired(a: &MateRecord, b: &MateRecord) -> bool {
    if a.unmapped() || b.unmapped() || a.ref_id() != b.ref_id() {
        return false;
    }
    let five_prime = |r: &MateRecord| if r.flag() & flags::REVERSE != 0 { r.end_pos() } else { r.pos };
    let (first, second) = if five_prime(a) > five_prime(b) { (b, a) } else { (a, b) };
    first.flag() & flags::REVERSE == 0 && second.flag() & flags::REVERSE != 0
}

/// `calc_mate_score`: the sum of the base qualities of at least 15 (a
/// missing quality, 0xff, counts as 255, as in samtools).
fn mate_score(r: &MateRecord) -> u32 {
    r.record().qual().iter().filter(|&&q| q >= MATE_SCORE_MIN_QUALITY).fold(0u32, |s, &q| s.wrapping_add(u32::from(q)))
}

/// `bam_template_cigar`: on two mapped records of one reference, the `ct`
/// tag of the leftmost (the first on a tie): each record's segment,
/// strand and CIGAR, and the gap between them. Any old `ct` of either is
/// removed; records it does not apply to are left as they are.
fn template_cigar(a: &mut MateRecord, b: &mut MateRecord, text: &mut Vec<u8>) {
    if a.ref_id() != b.ref_id() || a.ref_id() < 0 || a.pos < 0 || b.pos < 0 || a.unmapped() || b.unmapped() {
        return;
    }
    let (left, right) = if a.pos > b.pos { (b, a) } else { (a, b) };
    text.clear();
    let describe = |r: &MateRecord, text: &mut Vec<u8>| {
        text.push(if r.flag() & flags::READ1 != 0 { b'1' } else { b'2' });
        text.push(if r.flag() & flags::REVERSE != 0 { b'R' } else { b'F' });
        push_cigar(text, &r.data, cigar_range(r));
    };
    describe(left, text);
    // kputw: an int.
    let _ = write!(text, "{}", (right.pos - left.end_pos()) as i32);
    text.push(b'T');
    describe(right, text);
    left.delete_tag(*b"ct");
    right.delete_tag(*b"ct");
    left.data.extend_from_slice(b"ctZ");
    left.data.extend_from_slice(text);
    left.data.push(0);
}

/// samtools' `bam_mating_core` loop over name-grouped records: a primary
/// record waits for the next; if that has the same name the two are a
/// pair ([`fix_pair`]), else the first is unpaired ([`fix_unpaired`]).
/// Secondary records (dropped by `-r`) and supplementary ones go out as
/// they come, ahead of a waiting record.
pub struct Fixmate {
    options: FixmateOptions,
    reference_lens: Vec<i64>,
    slots: [MateRecord; 2],
    /// The slot the next record is read into (samtools' `curr`).
    current: usize,
    /// The other slot holds a record waiting for its mate.
    waiting: bool,
    /// The ends of the records as read (samtools' `pre_end`, `cur_end`:
    /// a record that is not mapped leaves the last value).
    previous_end: i64,
    current_end: i64,
    scratch: PairScratch,
}

impl Fixmate {
    /// `reference_lens`: each reference's length, as the header gives it
    /// (64-bit, from the @SQ text when it is longer than BAM's field).
    pub fn new(options: FixmateOptions, reference_lens: Vec<i64>) -> Fixmate {
        Fixmate {
            options,
            reference_lens,
            slots: Default::default(),
            current: 0,
            waiting: false,
            previous_end: 0,
            current_end: 0,
            scratch: PairScratch::default(),
        }
    }

    /// Takes the next record (BAM data, no `block_size`; `wide` as in
    /// [`MateRecord::load`]); calls `write` on each record that goes out,
    /// in samtools' order.
    pub fn push(&mut self, record: &[u8], wide: bool, write: &mut dyn FnMut(&MateRecord) -> Result<(), Error>) -> Result<(), Error> {
        let flag = u16::from_le_bytes([record[14], record[15]]);
        if flag & (flags::SECONDARY | flags::SUPPLEMENTARY) != 0 {
            if flag & flags::SUPPLEMENTARY == 0 && self.options.remove_reads {
                return Ok(());
            }
            // Written as it is: loaded only to go out through one path.
            let slot = &mut self.slots[self.current];
            slot.load(record, wide);
            return write(slot);
        }
        let lens = &self.reference_lens;
        let cur_index = self.current;
        self.slots[cur_index].load(record, wide);
        if let Some(end) =
            check_placement(&mut self.slots[cur_index], |tid| usize::try_from(tid).ok().and_then(|t| lens.get(t)).copied().unwrap_or(0))
        {
            self.current_end = end;
        }
        if self.waiting {
            let [a, b] = &mut self.slots;
            let (pre, cur) = if cur_index == 0 { (b, a) } else { (a, b) };
            if pre.name() == cur.name() {
                fix_pair(pre, cur, (self.previous_end, self.current_end), &self.options, &mut self.scratch);
                for r in [&*pre, &*cur] {
                    if kept_after_pairing(r, &self.options) {
                        write(r)?;
                    }
                }
                self.waiting = false;
            } else if fix_unpaired(pre, &self.options) {
                write(pre)?;
            }
        } else {
            self.waiting = true;
        }
        self.current = 1 - self.current;
        self.previous_end = self.current_end;
        Ok(())
    }

    /// The end of a run of whole name groups when more records follow
    /// elsewhere (the distributed sormadup's bucket groups): a record
    /// still waiting has no mate, and goes out as the next name's arrival
    /// would send it ([`Fixmate::finish`] is the end of the input, where
    /// samtools' `-r` drops even a mapped one).
    pub fn end_group(&mut self, write: &mut dyn FnMut(&MateRecord) -> Result<(), Error>) -> Result<(), Error> {
        if self.waiting {
            self.waiting = false;
            let pre = &mut self.slots[1 - self.current];
            if fix_unpaired(pre, &self.options) {
                write(pre)?;
            }
        }
        Ok(())
    }

    /// The end of the input: a record still waiting has no mate. (samtools
    /// drops it with `-r` even when it is mapped.)
    pub fn finish(&mut self, write: &mut dyn FnMut(&MateRecord) -> Result<(), Error>) -> Result<(), Error> {
        if self.waiting && !self.options.remove_reads {
            self.waiting = false;
            let pre = &mut self.slots[1 - self.current];
            fix_unpaired(pre, &self.options);
            write(pre)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::{Header, Reference};

    fn header() -> Header {
        Header { text: b"@SQ\tSN:c\tLN:1000\n".to_vec(), references: vec![Reference { name: "c".into(), len: 1000 }] }
    }

    fn record(line: &str) -> MateRecord {
        let mut out = Vec::new();
        crate::sam::encode_record(line.as_bytes(), &crate::sam::RefNames::new(&header()), &mut out).unwrap();
        let mut r = MateRecord::default();
        r.load(&out[4..], false);
        r
    }

    fn sam(r: &MateRecord) -> String {
        let mut bytes = Vec::new();
        r.append_to(&mut bytes, false).unwrap();
        let mut text = Vec::new();
        crate::sam::format_record(&RecordRef::new_prevalidated(&bytes[4..]), &header().references, &mut text).unwrap();
        String::from_utf8(text).unwrap()
    }

    fn fields(r: &MateRecord) -> Vec<String> {
        sam(r).trim_end().split('\t').map(str::to_string).collect()
    }

    /// A pair held in memory, fixed by the rules of samtools'
    /// `bam_mating_core`: mate fields, TLEN between the 5' ends, MQ and MC
    /// replacing old ones at the end, ct on the leftmost, ms the sum of the
    /// mate's qualities of 15 or more; an unmapped mate placed at its
    /// mate's position; an unpaired record's mate fields cleared.
    #[test]
    fn a_pair_in_memory() {
        let mut a = record("p\t67\tc\t100\t30\t10M\t*\t0\t0\tAAAAAAAAAA\tIIIIIIIIII\tMC:Z:old");
        let mut b = record("p\t147\tc\t200\t20\t5M2D5M\t*\t0\t0\tCCCCCCCCCC\t##########");
        let options = FixmateOptions { template_cigar: true, mate_score: true, ..Default::default() };
        let ends = (check_placement(&mut a, |_| 1000).unwrap(), check_placement(&mut b, |_| 1000).unwrap());
        // 0-based: a covers 99..109 forward, b 199..211 reverse.
        assert_eq!(ends, (109, 211));
        fix_pair(&mut a, &mut b, ends, &options, &mut PairScratch::default());
        let (fa, fb) = (fields(&a), fields(&b));
        // PROPER_PAIR kept (an FR pair), MATE_REVERSE set on a.
        assert_eq!(fa[1], (67 | 0x2 | 0x20).to_string());
        assert_eq!((fa[6].as_str(), fa[7].as_str(), fa[8].as_str()), ("=", "200", "112"));
        assert_eq!((fb[6].as_str(), fb[7].as_str(), fb[8].as_str()), ("=", "100", "-112"));
        assert_eq!(fa[11..], ["MQ:i:20", "MC:Z:5M2D5M", "ct:Z:1F10M90T2R5M2D5M", "ms:i:0"]);
        assert_eq!(fb[11..], ["MQ:i:30", "MC:Z:10M", &format!("ms:i:{}", 10 * (b'I' - 33) as u32)]);

        let mut mapped = record("q\t73\tc\t50\t0\t2M\t*\t0\t0\tGG\tII");
        let mut unmapped = record("q\t133\t*\t0\t0\t*\t*\t0\t0\tTT\tII");
        let end = check_placement(&mut mapped, |_| 1000).unwrap();
        assert_eq!(check_placement(&mut unmapped, |_| 1000), None);
        fix_pair(&mut mapped, &mut unmapped, (end, end), &FixmateOptions::default(), &mut PairScratch::default());
        let (fm, fu) = (fields(&mapped), fields(&unmapped));
        assert_eq!(fu[1..9], ["133", "c", "50", "0", "*", "=", "50", "0"]);
        assert_eq!(fu[11..], ["MQ:i:0", "MC:Z:2M"]);
        assert_eq!(fm[6..9], ["=", "50", "0"]);
        assert_eq!(fm[11..], ["MC:Z:*"]);
        assert!(!kept_after_pairing(&unmapped, &FixmateOptions { remove_reads: true, ..Default::default() }));

        let mut lone = record("s\t99\tc\t5\t9\t2M\t=\t9\t7\tGG\tII");
        assert!(fix_unpaired(&mut lone, &FixmateOptions::default()));
        assert_eq!(fields(&lone)[1..9], ["64", "c", "5", "9", "2M", "*", "0", "0"]);
    }
}
