//! `samtools merge` 1.16's rules: the merged header (`@HD` of the first
//! header, `@SQ` lines in order of first appearance, `@RG` and `@PG` lines
//! with colliding IDs renamed or combined, `@CO` lines), each input's
//! translation of reference ids and `RG`/`PG` tags, and the k-way heap
//! that picks the next record exactly as samtools' does (klib's
//! `ks_heapadjust` with samtools' `heap_lt`: ties go to the earlier input).

use crate::bam::{Header, RecordRef, Reference};
use crate::sort::{Comparator, SortOrder};
use std::collections::{HashMap, HashSet};

/// glibc's `lrand48` after `srand48(seed)`, which samtools merge draws the
/// suffixes of renamed `@RG`/`@PG` IDs from (`-s` sets the seed).
#[derive(Clone, Debug)]
pub struct Rand48 {
    x: u64,
}

impl Rand48 {
    /// `srand48(seed)`: glibc keeps the low 32 bits of the seed.
    pub fn new(seed: i64) -> Rand48 {
        let seed = (seed as u64) & 0xffff_ffff;
        Rand48 { x: (seed << 16) | 0x330e }
    }

    /// `lrand48()`: the next 31-bit number.
    ///
    /// ```
    /// let mut r = fasthts::merge::Rand48::new(1);
    /// assert_eq!(r.next_u31(), 89400484);
    /// ```
    pub fn next_u31(&mut self) -> u64 {
        self.x = (self.x.wrapping_mul(0x5_deec_e66d).wrapping_add(0xb)) & ((1 << 48) - 1);
        self.x >> 17
    }
}

/// How headers are merged: samtools merge's `-c`, `-p`, `-r`.
#[derive(Clone, Debug, Default)]
pub struct HeaderRules {
    /// `-c`: `@RG` lines with an ID already seen are combined with it,
    /// not renamed.
    pub combine_rg: bool,
    /// `-p`: the same for `@PG` lines.
    pub combine_pg: bool,
}

/// What one input's records need changed to fit the merged header.
#[derive(Clone, Debug, Default)]
pub struct Translation {
    /// Input reference id → merged reference id.
    pub tid: Vec<i32>,
    /// Input `RG` value → merged value (`None`: the tag is dropped, after
    /// the one warning for a value the header lacks).
    pub rg: HashMap<Vec<u8>, Option<Vec<u8>>>,
    /// The same for `PG`.
    pub pg: HashMap<Vec<u8>, Option<Vec<u8>>>,
    /// The merged ids of this input's references are not increasing: a
    /// coordinate-sorted input is no longer sorted in the merged header.
    pub lost_coord_sort: bool,
}

/// The merged header under construction.
#[derive(Default)]
pub struct HeaderMerger {
    hd: Option<Vec<u8>>,
    sq: Vec<Vec<u8>>,
    references: Vec<Reference>,
    sq_ids: HashMap<String, i32>,
    rg_lines: Vec<u8>,
    pg_lines: Vec<u8>,
    co_lines: Vec<u8>,
    rg_ids: HashSet<Vec<u8>>,
    pg_ids: HashSet<Vec<u8>>,
}

/// The lines of a header text of type `kind` (`b"@RG"`), without line ends.
fn lines_of<'t>(text: &'t [u8], kind: &'t [u8]) -> impl Iterator<Item = &'t [u8]> + 't {
    text.split(|&c| c == b'\n').filter(move |l| l.len() > 3 && l.starts_with(kind) && l[3] == b'\t')
}

/// The value of `key` (`b"ID"`) on a header line, as htslib finds a tag.
fn tag_of<'l>(line: &'l [u8], key: &[u8]) -> Option<&'l [u8]> {
    line.split(|&c| c == b'\t').skip(1).find(|f| f.len() >= 3 && &f[..2] == key && f[2] == b':').map(|f| &f[3..])
}

/// The line with `value` spliced in place of the value after `at` (the
/// first `\tID:` and so on), up to the next tab.
fn replace_after(line: &[u8], at: &[u8], value: &[u8]) -> Option<Vec<u8>> {
    let start = line.windows(at.len()).position(|w| w == at)? + at.len();
    let end = line[start..].iter().position(|&c| c < b'\n').map_or(line.len(), |i| start + i);
    let mut out = line[..start].to_vec();
    out.extend_from_slice(value);
    out.extend_from_slice(&line[end..]);
    Some(out)
}

impl HeaderMerger {
    /// An empty merged header.
    pub fn new() -> HeaderMerger {
        HeaderMerger::default()
    }

    /// Adds a header (an input's, or `-h FILE`'s) as samtools'
    /// `trans_tbl_init` does and returns its translation; `rg_override`:
    /// `-r`'s read group for this input. Warnings samtools prints go to
    /// `warn`, worded as it words them.
    pub fn add(
        &mut self,
        header: &Header,
        rules: &HeaderRules,
        copy_co: bool,
        rg_override: Option<&[u8]>,
        rand: &mut Rand48,
        warn: &mut dyn FnMut(String),
    ) -> Translation {
        let text = crate::sort::add_missing_sq_lines(trim_nuls(&header.text), &header.references);
        let mut t = Translation::default();
        if self.hd.is_none() {
            self.hd = lines_of(&text, b"@HD").next().map(<[u8]>::to_vec);
        }
        // Each reference's @SQ line by name (a draft assembly has 10^5 of them).
        let mut sq_lines: HashMap<&[u8], &[u8]> = HashMap::new();
        for line in lines_of(&text, b"@SQ") {
            if let Some(name) = tag_of(line, b"SN") {
                sq_lines.entry(name).or_insert(line);
            }
        }
        let mut max_tid = -1;
        for r in &header.references {
            let merged = match self.sq_ids.get(&r.name) {
                Some(&id) => id,
                None => {
                    let id = self.references.len() as i32;
                    let line = sq_lines
                        .get(r.name.as_bytes())
                        .map(|l| l.to_vec())
                        .unwrap_or_else(|| format!("@SQ\tSN:{}\tLN:{}", r.name, r.len).into_bytes());
                    self.sq.push(line);
                    self.references.push(r.clone());
                    self.sq_ids.insert(r.name.clone(), id);
                    id
                }
            };
            t.tid.push(merged);
            if merged > max_tid {
                max_tid = merged;
            } else {
                t.lost_coord_sort = true;
            }
        }
        let rg = translate_ids(&text, b"@RG", rules.combine_rg, &mut self.rg_ids, &mut t.rg, rg_override, rand);
        let pg = translate_ids(&text, b"@PG", rules.combine_pg, &mut self.pg_ids, &mut t.pg, None, rand);
        finish_lines(rg, b"\tPG:", &t.pg, &mut self.rg_lines, warn);
        finish_lines(pg, b"\tPP:", &t.pg, &mut self.pg_lines, warn);
        if copy_co {
            for line in lines_of(&text, b"@CO") {
                self.co_lines.extend_from_slice(line);
                self.co_lines.push(b'\n');
            }
        }
        t
    }

    /// Whether an `@HD` line was found (samtools warns when none was).
    pub fn has_hd(&self) -> bool {
        self.hd.is_some()
    }

    /// The merged header: `@HD`, `@SQ`, `@RG`, `@PG`, `@CO` lines.
    pub fn finish(self) -> Header {
        let mut text = Vec::new();
        for line in self.hd.iter().chain(&self.sq) {
            text.extend_from_slice(line);
            text.push(b'\n');
        }
        text.extend_from_slice(&self.rg_lines);
        text.extend_from_slice(&self.pg_lines);
        text.extend_from_slice(&self.co_lines);
        Header { text, references: self.references }
    }
}

fn trim_nuls(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &text[..end]
}

/// samtools' `gen_unique_id`: `prefix` if unused (unless `always`), else
/// `prefix-HEX` with a random suffix not yet used.
fn unique_id(prefix: &[u8], known: &HashSet<Vec<u8>>, always: bool, rand: &mut Rand48) -> Vec<u8> {
    if !always && !known.contains(prefix) {
        return prefix.to_vec();
    }
    loop {
        let mut id = prefix.to_vec();
        id.extend_from_slice(format!("-{:X}", rand.next_u31()).as_bytes());
        if !known.contains(&id) {
            return id;
        }
    }
}

/// samtools' `trans_rg_pg`: the lines of `kind` this header adds to the
/// merged one (IDs translated), filling `map` with each ID's new value.
fn translate_ids(
    text: &[u8],
    kind: &[u8],
    combine: bool,
    known: &mut HashSet<Vec<u8>>,
    map: &mut HashMap<Vec<u8>, Option<Vec<u8>>>,
    rg_override: Option<&[u8]>,
    rand: &mut Rand48,
) -> Vec<Vec<u8>> {
    let mut added = Vec::new();
    let mut seen_here: HashSet<&[u8]> = HashSet::new();
    for line in lines_of(text, kind) {
        let Some(orig) = tag_of(line, b"ID") else { continue };
        // htslib keeps the first of lines with one ID.
        if !seen_here.insert(orig) {
            continue;
        }
        let (new_id, changed, adds) = match rg_override {
            Some(name) => (name.to_vec(), true, !known.contains(name)),
            None if !known.contains(orig) || combine => (orig.to_vec(), false, !known.contains(orig)),
            None => (unique_id(orig, known, true, rand), true, true),
        };
        if adds {
            let line = if changed { replace_after(line, b"\tID:", &new_id).unwrap_or_else(|| line.to_vec()) } else { line.to_vec() };
            added.push(line);
            known.insert(new_id.clone());
        }
        map.insert(orig.to_vec(), Some(new_id));
    }
    if let (Some(name), true) = (rg_override, added.is_empty()) {
        let id = unique_id(name, known, false, rand);
        let mut line = b"@RG\tID:".to_vec();
        line.extend_from_slice(&id);
        added.push(line);
        known.insert(id.clone());
        map.insert(Vec::new(), Some(id));
    }
    added
}

/// samtools' `finish_rg_pg`: the `PG:` (of `@RG`) or `PP:` (of `@PG`)
/// value of each line is set to its `@PG`'s new ID, and the lines are
/// appended to `out`.
fn finish_lines(
    lines: Vec<Vec<u8>>,
    search: &[u8],
    pg: &HashMap<Vec<u8>, Option<Vec<u8>>>,
    out: &mut Vec<u8>,
    warn: &mut dyn FnMut(String),
) {
    for line in lines {
        let mut line = line;
        if let Some(at) = line.windows(search.len()).position(|w| w == search) {
            let start = at + search.len();
            let end = line[start..].iter().position(|&c| c == b'\t').map_or(line.len(), |i| start + i);
            let value = line[start..end].to_vec();
            match pg.get(&value) {
                Some(Some(new)) => {
                    let mut spliced = line[..start].to_vec();
                    spliced.extend_from_slice(new);
                    spliced.extend_from_slice(&line[end..]);
                    line = spliced;
                }
                _ => warn(format!(
                    "[W::finish_rg_pg] Tag {}{} not found in @PG records",
                    String::from_utf8_lossy(&search[1..]),
                    String::from_utf8_lossy(&value)
                )),
            }
        }
        out.extend_from_slice(&line);
        out.push(b'\n');
    }
}

/// The byte range (in `aux`) of the first aux field tagged `tag`, and its
/// value when it is a `Z` string; `None` when absent (or past a malformed
/// field).
fn find_aux(aux: &[u8], tag: [u8; 2]) -> Option<(usize, usize, Option<&[u8]>)> {
    let mut p = 0;
    while p + 3 <= aux.len() {
        let t = aux[p + 2];
        let body = p + 3;
        let len = match t {
            b'Z' | b'H' => aux[body..].iter().position(|&c| c == 0)? + 1,
            b'B' => {
                let sub = *aux.get(body)?;
                let size = crate::bam::record::aux_elem_size(sub)?;
                let count = u32::from_le_bytes(aux.get(body + 1..body + 5)?.try_into().ok()?) as usize;
                5 + count.checked_mul(size)?
            }
            t => crate::bam::record::aux_elem_size(t)?,
        };
        let end = body + len;
        if end > aux.len() {
            return None;
        }
        if aux[p..p + 2] == tag {
            let value = (t == b'Z').then(|| &aux[body..end - 1]);
            return Some((p, end, value));
        }
        p = end;
    }
    None
}

/// Offset of the aux fields in a record's data (after `block_size`).
fn aux_start(data: &[u8]) -> usize {
    let r = RecordRef::new_prevalidated(data);
    data.len() - r.aux_bytes().len()
}

/// Deletes the first `tag` field of `record` (`block_size` + data) and
/// appends `tag:Z:value` (when given) at the end of the aux fields, before
/// the last `keep_at_end` bytes (64-bit positions,
/// [`crate::sam::Positions::Wide`]).
fn replace_tag(record: &mut Vec<u8>, range: Option<(usize, usize)>, tag: [u8; 2], value: Option<&[u8]>, keep_at_end: usize) {
    if let Some((from, to)) = range {
        record.drain(4 + from..4 + to);
    }
    if let Some(value) = value {
        let at = record.len() - keep_at_end;
        let mut field = Vec::with_capacity(value.len() + 4);
        field.extend_from_slice(&tag);
        field.push(b'Z');
        field.extend_from_slice(value);
        field.push(0);
        record.splice(at..at, field);
    }
    let size = (record.len() - 4) as u32;
    record[..4].copy_from_slice(&size.to_le_bytes());
}

/// Translates one record as samtools' `bam_translate`: reference ids, and
/// `RG` then `PG` values (each moved to the end of the aux fields; a value
/// the input's header lacks is dropped, with one warning per value).
/// `wide`: the record may end with 64-bit positions.
pub fn translate(record: &mut Vec<u8>, t: &mut Translation, wide: bool, warn: &mut dyn FnMut(String)) {
    let map_tid = |record: &mut Vec<u8>, at: usize, t: &Translation| {
        let tid = i32::from_le_bytes(record[at..at + 4].try_into().expect("4 bytes"));
        if tid >= 0 {
            if let Some(&to) = t.tid.get(tid as usize) {
                record[at..at + 4].copy_from_slice(&to.to_le_bytes());
            }
        }
    };
    map_tid(record, 4, t);
    map_tid(record, 4 + 20, t);
    for (tag, is_rg) in [(*b"RG", true), (*b"PG", false)] {
        let data = &record[4..];
        let start = aux_start(data);
        let keep = if wide { crate::sam::wide_positions_len(data) } else { 0 };
        let aux = &data[start..data.len() - keep];
        let Some((from, to, Some(value))) = find_aux(aux, tag) else { continue };
        let map = if is_rg { &mut t.rg } else { &mut t.pg };
        let new = match map.get(value) {
            Some(new) => new.clone(),
            None => {
                let name = RecordRef::new_prevalidated(data).name();
                warn(format!(
                    "[bam_translate] {} tag \"{}\" on read \"{}\" encountered with no corresponding entry in header, tag lost. \
                     Unknown tags are only reported once per input file for each tag ID.",
                    if is_rg { "RG" } else { "PG" },
                    String::from_utf8_lossy(value),
                    String::from_utf8_lossy(name)
                ));
                map.insert(value.to_vec(), None);
                None
            }
        };
        replace_tag(record, Some((start + from, start + to)), tag, new.as_deref(), keep);
    }
}

/// `-r`: the record's `RG` replaced by `name`, at the end of its aux fields.
pub fn set_read_group(record: &mut Vec<u8>, name: &[u8], wide: bool) {
    let data = &record[4..];
    let start = aux_start(data);
    let keep = if wide { crate::sam::wide_positions_len(data) } else { 0 };
    let range = find_aux(&data[start..data.len() - keep], *b"RG").map(|(from, to, _)| (start + from, start + to));
    replace_tag(record, range, *b"RG", Some(name), keep);
}

/// `-r`'s read group of an input: its file name without the directory
/// and a `.bam`, `.sam` or `.cram` extension.
///
/// ```
/// assert_eq!(fasthts::merge::read_group_of_name("dir/x.y.bam"), b"x.y");
/// assert_eq!(fasthts::merge::read_group_of_name("a.cram"), b"a");
/// ```
pub fn read_group_of_name(name: &str) -> Vec<u8> {
    let s = name.as_bytes();
    let mut l = s.len();
    if l > 4 && (s.ends_with(b".bam") || s.ends_with(b".sam")) {
        l -= 4;
    }
    if l > 5 && s[..l].ends_with(b".cram") {
        l -= 5;
    }
    let start = s[..l].iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
    s[start..l].to_vec()
}

/// One input's place in the heap: its current record (`block_size` +
/// data), whether it has one, and its read number (samtools' `idx`).
pub struct Slot {
    /// The input's index.
    pub input: usize,
    /// The current record; meaningless when `live` is false.
    pub record: Vec<u8>,
    /// The record compared in its place (samtools 1.16's merge by
    /// template-coordinate computes the first key of every input from the
    /// first input's first record).
    pub compared_as: Option<Vec<u8>>,
    /// Whether the input has a current record.
    pub live: bool,
    /// Order in which the current record was read, over all inputs.
    pub idx: u64,
}

/// samtools' `heap_lt`: true when `a` should be *below* `b` (klib's heap
/// keeps the greatest by this at the top, so the top is the next record).
pub fn heap_lt(a: &Slot, b: &Slot, cmp: &Comparator) -> bool {
    if !a.live {
        return true;
    }
    if !b.live {
        return false;
    }
    let ra = RecordRef::new_prevalidated(&a.compared_as.as_ref().unwrap_or(&a.record)[4..]);
    let rb = RecordRef::new_prevalidated(&b.compared_as.as_ref().unwrap_or(&b.record)[4..]);
    let by_record = cmp.key(&ra).cmp(&cmp.key(&rb)).then_with(|| cmp.compare(&ra, &rb));
    match by_record {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => a.input > b.input || (a.input == b.input && a.idx > b.idx),
    }
}

/// klib's `ks_heapadjust(i, n, heap)` with `lt`.
pub fn heap_adjust(heap: &mut [Slot], mut i: usize, lt: &impl Fn(&Slot, &Slot) -> bool) {
    let n = heap.len();
    let mut k;
    loop {
        k = (i << 1) + 1;
        if k >= n {
            break;
        }
        if k != n - 1 && lt(&heap[k], &heap[k + 1]) {
            k += 1;
        }
        if lt(&heap[k], &heap[i]) {
            break;
        }
        heap.swap(i, k);
        i = k;
    }
}

/// klib's `ks_heapmake`.
pub fn heap_make(heap: &mut [Slot], lt: &impl Fn(&Slot, &Slot) -> bool) {
    for i in (0..heap.len() / 2).rev() {
        heap_adjust(heap, i, lt);
    }
}

/// Whether samtools merge warns that an input in this order lost its
/// coordinate sort to the merged header's reference order.
pub fn order_needs_reference_order(order: SortOrder) -> bool {
    matches!(order, SortOrder::Coordinate | SortOrder::Minimiser { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Header {
        let refs = text
            .lines()
            .filter(|l| l.starts_with("@SQ"))
            .map(|l| Reference { name: tag_of(l.as_bytes(), b"SN").map(|n| String::from_utf8_lossy(n).into_owned()).unwrap(), len: 10 })
            .collect();
        Header { text: text.as_bytes().to_vec(), references: refs }
    }

    #[test]
    fn colliding_ids_are_renamed_or_combined() {
        let a = header("@HD\tVN:1.6\n@SQ\tSN:c1\tLN:10\n@RG\tID:x\tPG:p\n@PG\tID:p\n@CO\tone\n");
        let b = header("@SQ\tSN:c2\tLN:10\n@SQ\tSN:c1\tLN:10\n@RG\tID:x\tPG:p\n@PG\tID:p\n");
        let mut warnings = Vec::new();
        let mut m = HeaderMerger::new();
        let mut rand = Rand48::new(1);
        let rules = HeaderRules::default();
        m.add(&a, &rules, true, None, &mut rand, &mut |w| warnings.push(w));
        let t = m.add(&b, &rules, true, None, &mut rand, &mut |w| warnings.push(w));
        assert_eq!(t.tid, [1, 0]);
        assert!(t.lost_coord_sort);
        let text = String::from_utf8(m.finish().text).unwrap();
        assert_eq!(
            text,
            "@HD\tVN:1.6\n@SQ\tSN:c1\tLN:10\n@SQ\tSN:c2\tLN:10\n@RG\tID:x\tPG:p\n@RG\tID:x-55424A4\tPG:p-3A2CCEF5\n\
             @PG\tID:p\n@PG\tID:p-3A2CCEF5\n@CO\tone\n"
        );
        assert!(warnings.is_empty());
    }
}
