//! Iterating BAM records across block boundaries.

use super::record::{RecordDefect, RecordRef, MAX_RECORD_SIZE};
use super::BamError;
use crate::bgzf::{BlockReader, VirtualOffset};
use std::ops::ControlFlow;

/// Reads records from a [`BlockReader`] positioned at a record start.
///
/// ```no_run
/// # use fasthts::bam::BamFile;
/// let bam = BamFile::open("in.bam")?;
/// let mut records = bam.records()?;
/// while let Some(rec) = records.next_record()? {
///     println!("{}", String::from_utf8_lossy(rec.name()));
/// }
/// # Ok::<(), fasthts::Error>(())
/// ```
pub struct RecordReader<'a> {
    blocks: BlockReader<'a>,
    n_ref: usize,
    /// Size (with prefix) of the record last returned, consumed on the next call.
    pending: usize,
}

impl<'a> RecordReader<'a> {
    /// Records from `blocks`, checked against a header with `n_ref` references.
    pub fn new(blocks: BlockReader<'a>, n_ref: usize) -> Self {
        RecordReader { blocks, n_ref, pending: 0 }
    }

    /// The next record, or `None` at the end of the data.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, BamError> {
        Ok(if self.advance()? { Some(self.current()) } else { None })
    }

    /// Moves to the next record; false at the end of the data. The record is
    /// then available from [`RecordReader::current`].
    #[inline]
    pub fn advance(&mut self) -> Result<bool, BamError> {
        self.blocks.consume(self.pending);
        self.pending = 0;
        if self.blocks.available().len() < 4 && self.blocks.fill(4)? < 4 {
            if self.blocks.available().is_empty() {
                return Ok(false);
            }
            return Err(self.truncated());
        }
        let b = self.blocks.available();
        let size = u32::from_le_bytes(*b.first_chunk().expect("4 bytes are loaded")) as usize;
        if size > MAX_RECORD_SIZE {
            return Err(BamError::InvalidRecord { offset: self.blocks.virtual_offset(), defect: RecordDefect::BlockSizeTooLarge });
        }
        let total = 4 + size;
        if b.len() < total && self.blocks.fill(total)? < total {
            return Err(self.truncated());
        }
        if let Err(defect) = RecordRef::new(&self.blocks.available()[4..total], self.n_ref) {
            return Err(BamError::InvalidRecord { offset: self.blocks.virtual_offset(), defect });
        }
        self.pending = total;
        Ok(true)
    }

    /// Calls `visit` on each record from the cursor on until it breaks or
    /// the data ends, walking each loaded batch in place: per record only the
    /// checks [`RecordReader::advance`] makes, none of its refill and cursor
    /// bookkeeping. Records `visit` continued on are consumed; the one it
    /// breaks on is not (the cursor and [`RecordReader::record_start`] are
    /// at it).
    #[inline]
    pub fn walk<B>(&mut self, mut visit: impl FnMut(&RecordRef<'_>) -> ControlFlow<B>) -> Result<ControlFlow<B>, BamError> {
        loop {
            self.blocks.consume(self.pending);
            self.pending = 0;
            let loaded = self.blocks.available();
            let mut at = 0;
            let mut flow = ControlFlow::Continue(());
            // A record running past the loaded data, or a bad one, is left
            // to `advance`, which loads the rest or reports the defect.
            while let Some(Ok(record)) = loaded_record_at(loaded, at).map(|data| RecordRef::new(data, self.n_ref)) {
                flow = visit(&record);
                if flow.is_break() {
                    break;
                }
                at += 4 + record.as_bytes().len();
            }
            self.blocks.consume(at);
            if flow.is_break() {
                return Ok(flow);
            }
            if !self.advance()? {
                return Ok(ControlFlow::Continue(()));
            }
            let flow = visit(&self.current());
            if flow.is_break() {
                self.pending = 0;
                return Ok(flow);
            }
        }
    }

    /// Calls `visit` on each record from the cursor on that starts before
    /// `stop`, walking loaded data in place as [`RecordReader::walk`] does,
    /// and leaves the cursor at `stop`. True when the records end exactly
    /// at `stop`; false when the data ends before it or a record runs
    /// across it (`stop` is no record start: an index that does not
    /// describe the file).
    pub fn walk_until(&mut self, stop: VirtualOffset, mut visit: impl FnMut(&RecordRef<'_>)) -> Result<bool, BamError> {
        loop {
            self.blocks.consume(self.pending);
            self.pending = 0;
            let bound = self.blocks.available_before(stop);
            if bound == Some(0) {
                return Ok(true);
            }
            if bound.is_none() && self.blocks.virtual_offset() > stop {
                return Ok(false);
            }
            let loaded = self.blocks.available();
            let end = bound.unwrap_or(loaded.len());
            let mut at = 0;
            while at < end {
                let Some(Ok(record)) = loaded_record_at(loaded, at).map(|data| RecordRef::new(data, self.n_ref)) else { break };
                visit(&record);
                at += 4 + record.as_bytes().len();
            }
            self.blocks.consume(at);
            if bound.is_some() && at >= end {
                return Ok(at == end);
            }
            // A record running past the loaded data, or a bad one: loaded
            // or reported by `advance`.
            if !self.advance()? {
                return Ok(self.record_start() == stop);
            }
            if self.record_start() >= stop {
                self.pending = 0;
                return Ok(self.record_start() == stop);
            }
            visit(&self.current());
        }
    }

    /// The record [`RecordReader::advance`] moved to.
    ///
    /// # Panics
    ///
    /// If `advance` has not returned true since the reader was made.
    #[inline]
    pub fn current(&self) -> RecordRef<'_> {
        assert!(self.pending >= 4, "RecordReader::current called before a successful advance");
        RecordRef::new_prevalidated(&self.blocks.available()[4..self.pending])
    }

    /// Virtual offset of the start of the record last returned (or of the
    /// next record, before the first call).
    pub fn record_start(&self) -> VirtualOffset {
        self.blocks.virtual_offset()
    }

    /// Whether the record after the one last returned is already inflated
    /// whole: a reader that stops here would leave work that a reader made
    /// at [`RecordReader::record_end`] has to inflate again.
    pub fn next_is_loaded(&self) -> bool {
        loaded_record_at(self.blocks.available(), self.pending).is_some()
    }

    /// Virtual offset just past the record last returned, in htslib's
    /// canonical form (what `bgzf_tell` gives after reading it).
    pub fn record_end(&self) -> VirtualOffset {
        self.blocks.virtual_offset_at(self.pending)
    }

    /// Moves to the record starting at `v` when its block is loaded (see
    /// [`BlockReader::seek_loaded`]); false, and the reader unchanged,
    /// otherwise.
    pub fn seek_loaded(&mut self, v: VirtualOffset) -> bool {
        if !self.blocks.seek_loaded(v) {
            return false;
        }
        self.pending = 0;
        true
    }

    /// Stops loading blocks that start at or after `offset`.
    pub fn set_limit(&mut self, offset: u64) {
        self.blocks.set_limit(offset);
    }

    /// Inflates on the calling thread only (see [`BlockReader::set_parallel`]).
    pub fn set_parallel(&mut self, parallel: bool) {
        self.blocks.set_parallel(parallel);
    }

    /// Uncompressed bytes inflated per refill (see
    /// [`BlockReader::set_batch_bytes`]).
    pub fn set_batch_bytes(&mut self, bytes: usize) {
        self.blocks.set_batch_bytes(bytes);
    }

    /// Loads blocks from `offset` on one at a time (see
    /// [`BlockReader::set_soft_limit`]).
    pub fn set_soft_limit(&mut self, offset: u64) {
        self.blocks.set_soft_limit(offset);
    }

    fn truncated(&self) -> BamError {
        BamError::TruncatedRecord { offset: self.blocks.virtual_offset() }
    }
}

/// The bytes (without `block_size`) of the record whose `block_size` is at
/// `at` in `loaded`, if they are all loaded and their size is plausible.
#[inline]
fn loaded_record_at(loaded: &[u8], at: usize) -> Option<&[u8]> {
    let size = u32::from_le_bytes(*loaded.get(at..)?.first_chunk()?) as usize;
    if size > MAX_RECORD_SIZE {
        return None;
    }
    loaded.get(at + 4..at + 4 + size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::record::tests::encode;
    use crate::bam::scan::tests::{bam_of, open_bam, pull_reader_error, synthetic_bam};

    #[test]
    fn walk_visits_what_next_record_returns_and_stops_where_told() {
        // Records far larger than a block and than a batch, across batches.
        let (bam, dir) = open_bam(&synthetic_bam(600), "walk-agree");
        let mut expected = Vec::new();
        let mut rr = bam.records().unwrap();
        while let Some(r) = rr.next_record().unwrap() {
            expected.push((r.name().to_vec(), rr.record_start()));
        }
        let mut names = Vec::new();
        let flow = bam.records().unwrap().walk(|r| {
            names.push(r.name().to_vec());
            ControlFlow::<()>::Continue(())
        });
        assert_eq!(flow.unwrap(), ControlFlow::Continue(()));
        assert!(names.iter().eq(expected.iter().map(|(n, _)| n)));
        // Breaking leaves the cursor at the record broken on, whether it was
        // walked in place or loaded by `advance` (stop at every record of a
        // stretch to hit both).
        for stop in (0..expected.len()).step_by(7).chain(590..600) {
            let mut rr = bam.records().unwrap();
            let mut seen = 0;
            let flow = rr
                .walk(|_| {
                    seen += 1;
                    if seen > stop {
                        ControlFlow::Break(seen)
                    } else {
                        ControlFlow::Continue(())
                    }
                })
                .unwrap();
            assert_eq!(flow, ControlFlow::Break(stop + 1));
            assert_eq!(rr.record_start(), expected[stop].1, "record {stop}");
            assert_eq!(rr.next_record().unwrap().unwrap().name(), &expected[stop].0[..]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn walk_reports_the_defect_next_record_reports() {
        let records = |bad: u32| {
            bam_of((0..3000u32).map(move |i| {
                let mut rec = encode(&format!("r{i}"), 0, 0, i as i32 * 10, 60, &[(0, 4)], "ACGT", &[0u8; 300]);
                if i == bad {
                    rec[8] = 0; // l_read_name
                }
                rec
            }))
        };
        for bad in [0, 1, 1500, 2999] {
            let (bam, dir) = open_bam(&records(bad), "walk-defect");
            let pulled = pull_reader_error(&bam).to_string();
            let walked = bam.records().unwrap().walk(|_| ControlFlow::<()>::Continue(())).unwrap_err().to_string();
            assert_eq!(walked, pulled, "defect in record {bad}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
