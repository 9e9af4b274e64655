//! Reading units (single reads or pairs) as khmer's
//! `khmer.utils.broken_paired_reader` and `check_is_pair` do: shared by
//! normalize-by-median and trim-low-abund.

use super::BoxError;
use crate::seqio::{OwnedRecord, Record};

/// khmer's `_split_left_right`: the name before its first space or tab,
/// and what follows that one character. A space or tab in the first
/// position does not split (khmer's loop only stops once the left part is
/// non-empty).
fn split_left_right(name: &[u8]) -> (&[u8], &[u8]) {
    match name.iter().skip(1).position(|&c| c == b' ' || c == b'\t') {
        Some(i) => (&name[..i + 1], &name[i + 2..]),
        None => (name, &name[name.len()..]),
    }
}

fn before_first_slash(s: &[u8]) -> &[u8] {
    match s.iter().position(|&c| c == b'/') {
        Some(i) => &s[..i],
        None => s,
    }
}

/// khmer's `check_is_pair`. Errors when exactly one record has a quality.
pub fn check_is_pair(a: &OwnedRecord, b: &OwnedRecord) -> Result<bool, String> {
    check_is_pair_records(&a.as_record(), &b.as_record())
}

/// [`check_is_pair`] on record views. A FASTQ record's quality counts only
/// when non-empty, as khmer's `Sequence.quality` is `None` for an empty one.
pub fn check_is_pair_records(a: &Record<'_>, b: &Record<'_>) -> Result<bool, String> {
    let has_quality = |r: &Record<'_>| r.qual.is_some_and(|q| !q.is_empty());
    if has_quality(a) != has_quality(b) {
        return Err("both records must be same type (FASTA or FASTQ)".into());
    }
    Ok(names_pair(a.name, b.name))
}

/// The name rules of khmer's `check_is_pair`: `x/1` + `x/2`, Casava 1.8
/// `x 1:...` + `x 2:...`, and fastq-dump's `acc x/1` + `acc x/2`.
fn names_pair(name1: &[u8], name2: &[u8]) -> bool {
    let (l1, r1) = split_left_right(name1);
    let (l2, r2) = split_left_right(name2);
    if l1.ends_with(b"/1") && l2.ends_with(b"/2") {
        let s1 = before_first_slash(l1);
        let s2 = before_first_slash(l2);
        !s1.is_empty() && s1 == s2
    } else if l1 == l2 && r1.starts_with(b"1:") && r2.starts_with(b"2:") {
        true
    } else if l1 == l2 && r1.ends_with(b"/1") && r2.ends_with(b"/2") {
        let s1 = before_first_slash(r1);
        let s2 = before_first_slash(r2);
        !s1.is_empty() && s1 == s2
    } else {
        false
    }
}

/// khmer's `check_is_left`: the name looks like the first read of a pair
/// (`x/1`, `x 1:...`, `acc x/1`).
pub fn check_is_left(name: &[u8]) -> bool {
    let (l, r) = split_left_right(name);
    l.ends_with(b"/1") || r.starts_with(b"1:") || r.ends_with(b"/1")
}

/// khmer's `check_is_right`: the second read of a pair.
pub fn check_is_right(name: &[u8]) -> bool {
    let (l, r) = split_left_right(name);
    l.ends_with(b"/2") || r.starts_with(b"2:") || r.ends_with(b"/2")
}

/// A unit from the paired reader.
#[derive(Debug)]
pub enum Unit {
    /// One read.
    Single(OwnedRecord),
    /// Two reads of a pair.
    Pair([OwnedRecord; 2]),
}

impl Unit {
    /// The reads of the unit.
    pub fn reads(&self) -> &[OwnedRecord] {
        match self {
            Unit::Single(a) => std::slice::from_ref(a),
            Unit::Pair(pair) => pair,
        }
    }

    /// Gives the unit's records back to `spare`, for reuse.
    fn recycle(self, spare: &mut Vec<OwnedRecord>) {
        match self {
            Unit::Single(a) => spare.push(a),
            Unit::Pair(pair) => spare.extend(pair),
        }
    }
}

/// khmer's `broken_paired_reader` as a push-style state machine.
/// Records whose sequence is empty are "falsy" in Python and never become
/// `prev` (they are dropped).
pub struct BrokenPairedReader {
    min_length: usize,
    force_single: bool,
    require_paired: bool,
    prev: Option<OwnedRecord>,
}

impl BrokenPairedReader {
    /// New reader state.
    pub fn new(min_length: usize, force_single: bool, require_paired: bool) -> Self {
        BrokenPairedReader { min_length, force_single, require_paired, prev: None }
    }

    /// Feed the next record; yields at most one unit.
    pub fn push(&mut self, rec: OwnedRecord) -> Result<Option<Unit>, String> {
        let mut out = None;
        let mut record = Some(rec);
        if let Some(prev) = self.prev.take().filter(|p| !p.seq.is_empty()) {
            let cur = record.as_ref().unwrap();
            let is_pair = if self.force_single { false } else { check_is_pair(&prev, cur)? };
            if is_pair {
                if prev.seq.len() < self.min_length || cur.seq.len() < self.min_length {
                    if self.require_paired {
                        record = None;
                    }
                } else {
                    out = Some(Unit::Pair([prev, record.take().unwrap()]));
                }
            } else {
                if self.require_paired {
                    return Err("Unpaired reads when require_paired is set!".into());
                }
                if prev.seq.len() >= self.min_length {
                    out = Some(Unit::Single(prev));
                }
            }
        } else if self.force_single {
            // (Python still evaluates check_is_pair first; with force_single
            // it can raise for mixed FASTA/FASTQ: handled above.)
        }
        self.prev = record;
        Ok(out)
    }

    /// End of input.
    pub fn finish(&mut self) -> Result<Option<Unit>, String> {
        match self.prev.take().filter(|p| !p.seq.is_empty()) {
            Some(prev) => {
                if self.require_paired {
                    return Err("Unpaired reads when require_paired is set!".into());
                }
                if prev.seq.len() >= self.min_length {
                    Ok(Some(Unit::Single(prev)))
                } else {
                    Ok(None)
                }
            }
            None => Ok(None),
        }
    }
}

/// Read all units of a file through the paired reader, calling `f` on each.
///
/// The records are copied out of the reader's batches into a few
/// [`OwnedRecord`]s that are reused from unit to unit: no allocation per
/// read once they have grown to the longest read.
pub fn for_each_unit(
    path: &str,
    min_length: usize,
    force_single: bool,
    require_paired: bool,
    screed_names: bool,
    allow_empty: bool,
    mut f: impl FnMut(&Unit) -> Result<(), BoxError>,
) -> Result<(), BoxError> {
    let rx = crate::seqio::spawn_reader(path, 4);
    let mut pr = BrokenPairedReader::new(min_length, force_single, require_paired);
    let mut spare: Vec<OwnedRecord> = Vec::new();
    for msg in rx {
        let b = msg?;
        for (i, r) in b.iter().enumerate() {
            if !allow_empty && r.seq.is_empty() {
                return Err(format!("{path}: record {}: Sequence is empty", b.first_record + i as u64 + 1).into());
            }
            let r = if screed_names { screed_record(r, path, b.first_record + i as u64 + 1)? } else { r };
            let mut rec = spare.pop().unwrap_or_default();
            rec.set_from(&r);
            if let Some(u) = pr.push(rec)? {
                f(&u)?;
                u.recycle(&mut spare);
            }
        }
    }
    if let Some(u) = pr.finish()? {
        f(&u)?;
    }
    Ok(())
}

/// A record as khmer's Python parser (screed) gives it: the header line
/// stripped of surrounding whitespace. A FASTQ record with an empty
/// sequence is an error: screed does not consume its (empty) quality line
/// and then fails on the next line. `record_number` counts from 1.
pub fn screed_record<'a>(r: Record<'a>, path: &str, record_number: u64) -> Result<Record<'a>, BoxError> {
    screed_check_after(&r, path, record_number)?;
    Ok(screed_view(r))
}

/// A record's name as screed gives it (the header line stripped of
/// surrounding whitespace).
pub fn screed_view(r: Record<'_>) -> Record<'_> {
    Record { name: r.name.trim_ascii(), ..r }
}

/// The error screed raises when it reads on after a FASTQ record without
/// bases: it yields that record, but leaves its empty quality line unread
/// and then fails on it (even at the end of the input). Scripts that stream
/// records call this after using each one.
pub fn screed_check_after(r: &Record<'_>, path: &str, record_number: u64) -> Result<(), BoxError> {
    if r.seq.is_empty() && r.qual.is_some() {
        return Err(format!("Bad FASTQ format: no '@' at beginning of line ({path}: record {record_number})").into());
    }
    Ok(())
}

/// A unit from [`for_each_read_unit`]: views into the reader's batches.
#[derive(Clone, Copy, Debug)]
pub enum ReadUnit<'a> {
    /// Two reads of a pair.
    Pair(Record<'a>, Record<'a>),
    /// A read without its mate (or any read, with `force_single`).
    Single(Record<'a>),
}

/// khmer's `UnpairedReadsError` (a read without its mate while pairs are
/// required): `first` is the name of the unpaired read.
#[derive(Debug)]
pub struct UnpairedReads {
    /// The unpaired read's name.
    pub first: String,
}

impl std::fmt::Display for UnpairedReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Unpaired reads found starting at {}", self.first)
    }
}
impl std::error::Error for UnpairedReads {}

/// khmer's `broken_paired_reader` (no minimum length) over the records of
/// khmer's C++ `ReadParser`, as split-paired-reads, extract-paired-reads and
/// sample-reads-randomly read: consecutive records that [`check_is_pair`]
/// are a pair, any other read is a single (an [`UnpairedReads`] error with
/// `require_paired`). `f` gets each unit with khmer's running index (a pair
/// counts two). A record with an empty sequence is the parser's "Sequence is
/// empty" error; mixed FASTA and FASTQ records are an error even with
/// `force_single` (khmer tests the pair first).
///
/// As khmer's parser, a missing input and one without any record are
/// errors (Python's `OSError` with the parser's text).
///
/// Records are views into the batches; only a read left waiting for its
/// mate at a batch's end is copied (into one reused record).
pub fn for_each_read_unit(
    path: &str,
    force_single: bool,
    require_paired: bool,
    mut f: impl FnMut(u64, ReadUnit<'_>) -> Result<(), BoxError>,
) -> Result<(), BoxError> {
    if path != "-" && !std::fs::metadata(path).is_ok_and(|m| !m.is_dir()) {
        return Err(format!("OSError: File {path} contains badly formatted sequence or does not exist.").into());
    }
    let rx = crate::seqio::spawn_reader(path, 4);
    let mut index = 0u64;
    let mut any_record = false;
    // a read waiting for its mate, carried over from the previous batch
    let mut carry = OwnedRecord::default();
    let mut carried = false;
    let mut spare = OwnedRecord::default();
    let unpaired = |r: &Record<'_>| -> BoxError { Box::new(UnpairedReads { first: String::from_utf8_lossy(r.name).into_owned() }) };
    for msg in rx {
        let b = msg?;
        any_record |= !b.is_empty();
        let mut prev: Option<Record<'_>> = if carried { Some(carry.as_record()) } else { None };
        for (i, cur) in b.iter().enumerate() {
            if cur.seq.is_empty() {
                return Err(format!("{path}: record {}: Sequence is empty", b.first_record + i as u64 + 1).into());
            }
            let Some(p) = prev else {
                prev = Some(cur);
                continue;
            };
            if check_is_pair_records(&p, &cur)? && !force_single {
                f(index, ReadUnit::Pair(p, cur))?;
                index += 2;
                prev = None;
            } else {
                if require_paired {
                    return Err(unpaired(&p));
                }
                f(index, ReadUnit::Single(p))?;
                index += 1;
                prev = Some(cur);
            }
        }
        // (`prev` may be the carry itself: copy into the spare, then swap)
        carried = match prev {
            Some(p) => {
                spare.set_from(&p);
                true
            }
            None => false,
        };
        if carried {
            std::mem::swap(&mut carry, &mut spare);
        }
    }
    if !any_record {
        return Err(format!("OSError: File {path} does not contain any sequences!").into());
    }
    if carried {
        if require_paired {
            return Err(unpaired(&carry.as_record()));
        }
        f(index, ReadUnit::Single(carry.as_record()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, seq: &str, q: bool) -> OwnedRecord {
        OwnedRecord { name: name.into(), seq: seq.into(), qual: if q { Some(vec![b'I'; seq.len()]) } else { None } }
    }

    #[test]
    fn pairing_rules() {
        assert!(check_is_pair(&rec("a/1", "", true), &rec("a/2", "", true)).unwrap());
        assert!(!check_is_pair(&rec("a/1", "", true), &rec("b/2", "", true)).unwrap());
        assert!(!check_is_pair(&rec("/1", "", true), &rec("/2", "", true)).unwrap());
        assert!(check_is_pair(&rec("x 1:N:0", "", true), &rec("x 2:N:0", "", true)).unwrap());
        assert!(check_is_pair(&rec("SRR1 a/1", "", true), &rec("SRR1 a/2", "", true)).unwrap());
        assert!(check_is_pair(&rec("a/1", "A", true), &rec("a/2", "A", false)).is_err());
        // khmer splits at the first space or tab after the first character
        assert!(check_is_pair(&rec(" x 1:N", "", true), &rec(" x 2:N", "", true)).unwrap());
        assert!(check_is_left(b"x 1:N") && check_is_left(b"a/1") && check_is_left(b"acc x/1") && !check_is_left(b"x"));
        assert!(check_is_right(b"x\t2:N") && !check_is_right(b"x/1"));
    }

    #[test]
    fn broken_pairs() {
        let mut pr = BrokenPairedReader::new(3, false, false);
        let mut units = Vec::new();
        for r in [
            rec("a/1", "ACGT", false),
            rec("a/2", "ACGT", false),
            rec("b", "ACGT", false),
            rec("c/1", "AC", false),
            rec("c/2", "ACGT", false),
        ] {
            if let Some(u) = pr.push(r).unwrap() {
                units.push(u);
            }
        }
        if let Some(u) = pr.finish().unwrap() {
            units.push(u);
        }
        assert_eq!(units.len(), 3);
        assert!(matches!(&units[0], Unit::Pair(..)));
        assert!(matches!(&units[1], Unit::Single(r) if r.name == b"b"));
        assert!(matches!(&units[2], Unit::Single(r) if r.name == b"c/2"));
    }
}
