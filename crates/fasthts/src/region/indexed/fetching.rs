//! An overlap query to the end of a reference, of a remote file, fetched
//! in windows as it is read: a job that reads "from here until it has seen
//! enough" (snp-pileup's regions look one covered column past their end)
//! fetches what it reads, not the rest of the reference.

use super::{Cursor, IndexedFile, Rule};
use crate::bam::RecordRef;
use crate::region::Region;
use crate::Error;
use std::sync::Arc;

/// The first window past the likely end (bases); each next one is twice
/// as long, so a reference is reached in a few dozen requests at most.
const FIRST_WINDOW: i64 = 64 << 10;

/// Records copied out of a [`Cursor`] per batch.
const BATCH: usize = 256;

/// The records of reference `tid` overlapping `[beg, ..)` of a remote
/// file, in file order, as [`IndexedFile::query`] of that region gives
/// them: first those overlapping `[beg, likely_end)` (fetched together),
/// then those starting in windows after it, each window fetched when the
/// reader reaches it. Each query holds its own handle on the file (a copy
/// holding the header; [`IndexedFile::fetched_copy`]), so queries run on
/// several threads at once.
pub struct FetchingQuery<'a> {
    shared: &'a IndexedFile,
    tid: i32,
    /// The handle ranges are fetched into, between windows (the cursor
    /// holds it while a window is read).
    handle: Option<Arc<IndexedFile>>,
    cursor: Option<Cursor>,
    /// The next window starts here; `None` once the last has begun.
    next: Option<i64>,
    width: i64,
    /// The first query, until it has begun.
    first: Option<Region>,
    /// Copied records (`block_size`-less data) and where each ends.
    batch: Vec<u8>,
    ends: Vec<usize>,
    at: usize,
}

impl<'a> FetchingQuery<'a> {
    /// The records of `tid` overlapping `[beg, ..)` of the remote `file`;
    /// reading will probably stop soon after `likely_end`.
    pub fn new(file: &'a IndexedFile, tid: i32, beg: i64, likely_end: i64) -> FetchingQuery<'a> {
        let likely_end = likely_end.max(beg + 1);
        FetchingQuery {
            shared: file,
            tid,
            handle: None,
            cursor: None,
            next: Some(likely_end),
            width: FIRST_WINDOW,
            first: Some(Region { ref_id: tid, start: beg, end: likely_end }),
            batch: Vec::new(),
            ends: Vec::new(),
            at: 0,
        }
    }

    /// The next query: the first, then the windows after it (the last one
    /// open-ended, from where the reference's length says it ends).
    fn next_query(&mut self) -> Option<(Region, Rule)> {
        if let Some(first) = self.first.take() {
            return Some((first, Rule::Overlap));
        }
        let start = self.next?;
        let len = self.shared.header().references.get(self.tid as usize).map_or(0, |r| i64::from(r.len));
        let end = start.saturating_add(self.width);
        self.width = self.width.saturating_mul(2);
        // Records placed past the reference's stated length are read too,
        // as a query to the end reads them.
        let end = if end >= len { i64::MAX } else { end };
        self.next = (end != i64::MAX).then_some(end);
        Some((Region { ref_id: self.tid, start, end }, Rule::StartsIn))
    }

    /// Moves to the next record; false at the end.
    pub fn advance(&mut self) -> Result<bool, Error> {
        if self.at + 1 < self.ends.len() {
            self.at += 1;
            return Ok(true);
        }
        self.batch.clear();
        self.ends.clear();
        self.at = 0;
        loop {
            if self.cursor.is_none() {
                let Some(query) = self.next_query() else { return Ok(false) };
                let handle = match self.handle.take() {
                    // Unique between windows: fetched into, not copied.
                    Some(handle) => IndexedFile::with_queries_fetched(handle, &[query])?,
                    None => match self.shared.fetched_copy(&[query]) {
                        Some(copy) => Arc::new(copy?),
                        None => return Err(Error::Message("a fetching query of a local file".into()).with_path(self.shared.path())),
                    },
                };
                self.cursor = Some(Cursor::new(handle, [query]));
            }
            let cursor = self.cursor.as_mut().expect("set above");
            let (batch, ends) = (&mut self.batch, &mut self.ends);
            let n = cursor.fill(BATCH, &mut |r: &RecordRef<'_>| {
                batch.extend_from_slice(r.as_bytes());
                ends.push(batch.len());
            })?;
            if n > 0 {
                return Ok(true);
            }
            // The window is read: its handle is ours again.
            let cursor = self.cursor.take().expect("set above");
            self.handle = Some(Arc::clone(cursor.file()));
        }
    }

    /// The record [`FetchingQuery::advance`] moved to.
    pub fn current(&self) -> RecordRef<'_> {
        let start = if self.at == 0 { 0 } else { self.ends[self.at - 1] };
        // The reader checked the record when it read it.
        RecordRef::new_prevalidated(&self.batch[start..self.ends[self.at]])
    }
}

/// [`IndexedFile::query_onwards`]: a local file's overlap query, or a
/// remote file's [`FetchingQuery`].
pub enum Onwards<'a> {
    /// A local file (or a CRAM), read in place.
    Local(super::Records<'a>),
    /// A remote BAM, fetched as it is read.
    Remote(FetchingQuery<'a>),
}

impl Onwards<'_> {
    /// Moves to the next record; false at the end.
    pub fn advance(&mut self) -> Result<bool, Error> {
        match self {
            Onwards::Local(records) => records.advance(),
            Onwards::Remote(query) => query.advance(),
        }
    }

    /// The record [`Onwards::advance`] moved to.
    pub fn current(&self) -> RecordRef<'_> {
        match self {
            Onwards::Local(records) => records.current(),
            Onwards::Remote(query) => query.current(),
        }
    }
}
