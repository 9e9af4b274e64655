//! Reading units (single reads or pairs) as khmer's
//! `khmer.utils.broken_paired_reader` and `check_is_pair` do: shared by
//! normalize-by-median and trim-low-abund.

use super::BoxError;
use crate::seqio::{OwnedRecord, Record};

fn split_left_right(name: &[u8]) -> (&[u8], &[u8]) {
    match name.iter().position(|&c| c == b' ' || c == b'\t') {
        Some(i) => (&name[..i], &name[i + 1..]),
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
    if a.qual.is_some() != b.qual.is_some() {
        return Err("both records must be same type (FASTA or FASTQ)".into());
    }
    let (l1, r1) = split_left_right(&a.name);
    let (l2, r2) = split_left_right(&b.name);
    if l1.ends_with(b"/1") && l2.ends_with(b"/2") {
        let s1 = before_first_slash(l1);
        let s2 = before_first_slash(l2);
        Ok(!s1.is_empty() && s1 == s2)
    } else if l1 == l2 && r1.starts_with(b"1:") && r2.starts_with(b"2:") {
        Ok(true)
    } else if l1 == l2 && r1.ends_with(b"/1") && r2.ends_with(b"/2") {
        let s1 = before_first_slash(r1);
        let s2 = before_first_slash(r2);
        Ok(!s1.is_empty() && s1 == s2)
    } else {
        Ok(false)
    }
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
            if screed_names && r.seq.is_empty() && r.qual.is_some() {
                // screed does not consume the (empty) quality line of such a
                // record and then fails on the next line
                return Err(
                    format!("Bad FASTQ format: no '@' at beginning of line ({path}: record {})", b.first_record + i as u64 + 1).into()
                );
            }
            let mut rec = spare.pop().unwrap_or_default();
            // screed strips the header line
            rec.set_from(&if screed_names { Record { name: r.name.trim_ascii(), ..r } } else { r });
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
        assert!(check_is_pair(&rec("a/1", "", true), &rec("a/2", "", false)).is_err());
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
