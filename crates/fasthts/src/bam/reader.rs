//! Iterating BAM records across block boundaries.

use super::record::{RecordDefect, RecordRef};
use super::BamError;
use crate::bgzf::{BlockReader, VirtualOffset};

/// Largest `block_size` accepted: a record's fields are bounded by BAM's
/// integer types to well under this, so anything larger is corruption.
const MAX_RECORD_SIZE: usize = 1 << 31;

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

    /// Virtual offset just past the record last returned, in htslib's
    /// canonical form (what `bgzf_tell` gives after reading it).
    pub fn record_end(&self) -> VirtualOffset {
        self.blocks.virtual_offset_at(self.pending)
    }

    /// Stops loading blocks that start at or after `offset`.
    pub fn set_limit(&mut self, offset: u64) {
        self.blocks.set_limit(offset);
    }

    /// Inflates on the calling thread only (see [`BlockReader::set_parallel`]).
    pub fn set_parallel(&mut self, parallel: bool) {
        self.blocks.set_parallel(parallel);
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
