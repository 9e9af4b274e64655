//! A BAM's records overlapping an interval, read chunk by chunk as
//! htslib's iterator reads them.

use crate::bam::{BamFile, RecordReader, RecordRef};
use crate::index::{Chunk, Index};
use crate::Error;

/// The records overlapping `[beg, end)` of one reference, read through the
/// index as htslib's `sam_itr_queryi` + `sam_itr_next` read them.
pub struct RegionRecords<'a> {
    bam: &'a BamFile,
    index: &'a Index,
    chunks: Vec<Chunk>,
    /// Index of the chunk being read (`usize::MAX` before the first).
    chunk: usize,
    reader: Option<RecordReader<'a>>,
    tid: i32,
    beg: i64,
    end: i64,
    done: bool,
    /// Compressed offset past which blocks are inflated one at a time.
    soft_end: u64,
}

impl<'a> RegionRecords<'a> {
    /// Reads overlapping zero-based `[beg, end)` of reference `tid`.
    pub fn new(bam: &'a BamFile, index: &'a Index, tid: usize, beg: i64, end: i64) -> Self {
        let chunks = index.query(tid, beg, end);
        RegionRecords {
            bam,
            index,
            done: chunks.is_empty(),
            chunks,
            chunk: usize::MAX,
            reader: None,
            tid: tid as i32,
            beg,
            end,
            soft_end: u64::MAX,
        }
    }

    /// Hints that reading will probably stop soon after position
    /// `likely_end` (say, a region's end while the query runs to the end of
    /// the reference): blocks past the data of `[beg, likely_end)` are then
    /// inflated one at a time, not in batches.
    pub fn expect_end(&mut self, likely_end: i64) {
        if likely_end >= self.end {
            return;
        }
        let tid = self.tid as usize;
        if let Some(c) = self.index.query(tid, self.beg, likely_end.max(self.beg + 1)).last() {
            self.soft_end = c.end.compressed();
        }
    }

    /// Moves to the next record; false at the end.
    pub fn advance(&mut self) -> Result<bool, Error> {
        loop {
            if self.done {
                return Ok(false);
            }
            // htslib moves on when the offset after the last record read
            // (`bgzf_tell`) reaches the chunk's end.
            let need_next = match (&self.reader, self.chunks.get(self.chunk)) {
                (Some(r), Some(c)) => r.record_end() >= c.end,
                _ => true,
            };
            if need_next {
                let next = self.chunk.wrapping_add(1);
                if next >= self.chunks.len() {
                    self.done = true;
                    return Ok(false);
                }
                let contiguous = self.chunk != usize::MAX && self.chunks[self.chunk].end == self.chunks[next].start;
                if !contiguous || self.reader.is_none() {
                    let mut r = self.bam.records_from(self.chunks[next].start).map_err(|e| e.with_path(self.bam.path()))?;
                    r.set_parallel(false);
                    self.reader = Some(r);
                }
                self.chunk = next;
                if let (Some(r), Some(c)) = (self.reader.as_mut(), self.chunks.get(next)) {
                    r.set_soft_limit(c.end.compressed().min(self.soft_end));
                }
            }
            let Some(reader) = self.reader.as_mut() else { return Ok(false) };
            let more = reader.advance().map_err(|e| Error::from(e).with_path(self.bam.path()))?;
            if !more {
                self.done = true;
                return Ok(false);
            }
            let r = reader.current();
            if r.ref_id() != self.tid || i64::from(r.pos()) >= self.end {
                self.done = true;
                return Ok(false);
            }
            // (The end is only worked out for reads starting before `beg`.)
            if i64::from(r.pos()) >= self.beg || r.end_pos() > self.beg {
                return Ok(true);
            }
        }
    }

    /// The record [`RegionRecords::advance`] moved to.
    pub fn current(&self) -> RecordRef<'_> {
        match &self.reader {
            Some(r) => r.current(),
            None => panic!("RegionRecords::current called before a successful advance"),
        }
    }
}
