//! interleave-reads: the reads of two files of mates (R1 and R2) written
//! alternately into one, names made `x/1`, `x/2` where they do not already
//! say which mate they are, each pair checked.

use super::pairing::{check_is_left, check_is_pair_records, check_is_right, screed_check_after, screed_view};
use super::BoxError;
use crate::seqio::{spawn_reader, write_record, Record, RecordBatch, SeqError};
use std::io::Write;
use std::sync::mpsc::Receiver;

/// One input read batch by batch, record by record (screed's view of it).
struct Cursor<'p> {
    path: &'p str,
    rx: Receiver<Result<RecordBatch, SeqError>>,
    batch: RecordBatch,
    next: usize,
}

impl<'p> Cursor<'p> {
    fn open(path: &'p str) -> Self {
        Cursor { path, rx: spawn_reader(path, 4), batch: RecordBatch::default(), next: 0 }
    }

    /// Whether a record is left; moves to the next batch when needed.
    fn has_next(&mut self) -> Result<bool, BoxError> {
        while self.next >= self.batch.len() {
            match self.rx.recv() {
                Ok(b) => {
                    self.batch = b?;
                    self.next = 0;
                }
                Err(_) => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The record [`Cursor::has_next`] found, as screed gives it.
    fn take(&mut self) -> Record<'_> {
        let i = self.next;
        self.next += 1;
        screed_view(self.batch.get(i))
    }

    /// screed's error after the record [`Cursor::take`] gave, if any.
    fn check_taken(&self) -> Result<(), BoxError> {
        let i = self.next - 1;
        screed_check_after(&self.batch.get(i), self.path, self.batch.first_record + i as u64 + 1)
    }
}

/// Interleaves `left` and `right` into `out`; returns the number of pairs.
/// With `reformat` (khmer's default) a name that does not end as a first
/// (second) mate's gets `/1` (`/2`) appended, and each pair must then pass
/// khmer's `check_is_pair`. `progress` is called with the pair count before
/// every 100,000th pair, as khmer prints `... N pairs`. The errors' texts
/// are khmer's.
pub fn interleave_reads(
    left: &str,
    right: &str,
    reformat: bool,
    out: &mut dyn Write,
    mut progress: impl FnMut(u64),
) -> Result<u64, BoxError> {
    let mut c1 = Cursor::open(left);
    let mut c2 = Cursor::open(right);
    let (mut name1, mut name2) = (Vec::new(), Vec::new());
    let mut pairs = 0u64;
    loop {
        let (more1, more2) = (c1.has_next()?, c2.has_next()?);
        if !more1 && !more2 {
            return Ok(pairs);
        }
        if more1 != more2 {
            return Err("ERROR: Input files contain different number of records.".into());
        }
        if pairs % 100_000 == 0 {
            progress(pairs);
        }
        pairs += 1;
        let mut r1 = c1.take();
        let mut r2 = c2.take();
        if reformat {
            name1.clear();
            name1.extend_from_slice(r1.name);
            if !check_is_left(&name1) {
                name1.extend_from_slice(b"/1");
            }
            name2.clear();
            name2.extend_from_slice(r2.name);
            if !check_is_right(&name2) {
                name2.extend_from_slice(b"/2");
            }
            r1.name = &name1;
            r2.name = &name2;
            if !check_is_pair_records(&r1, &r2).map_err(|e| format!("ValueError: {e}"))? {
                return Err(format!(
                    "ERROR: This doesn't look like paired data! {} {}",
                    String::from_utf8_lossy(&name1),
                    String::from_utf8_lossy(&name2)
                )
                .into());
            }
        }
        // khmer writes the pair in the first read's format
        match (r1.qual, r2.qual) {
            (Some(_), None) => return Err("AssertionError: a FASTQ read paired with a FASTA read".into()),
            (Some(_), Some(_)) => {
                r1.write(out)?;
                r2.write(out)?;
            }
            (None, _) => {
                r1.write(out)?;
                write_record(out, r2.name, r2.seq, None)?;
            }
        }
        c1.check_taken()?;
        c2.check_taken()?;
    }
}
