//! A cursor that owns its file: queries read batch by batch, each batch
//! on whatever thread asks (the Python package's iterators, which read
//! with the interpreter's lock released and ahead on other threads).

use super::{ends_past, overlapping, Data, IndexedFile, Rule};
use crate::bam::RecordRef;
use crate::bgzf::VirtualOffset;
use crate::cram::CramQuery;
use crate::region::sam::SamRegionReader;
use crate::region::{self, Region, RegionReader};
use crate::Error;
use std::collections::VecDeque;
use std::sync::Arc;

/// Queries of one [`IndexedFile`] run one after another, their records
/// read in batches ([`Cursor::fill`]). It holds the file (an `Arc`), not a
/// borrow of it: between batches it keeps only where to read on (for a
/// BAM or bgzipped SAM, a virtual offset; for CRAM, htslib's iterator on a
/// handle of the file's pool, given back when the cursor is dropped).
pub struct Cursor {
    file: Arc<IndexedFile>,
    queries: VecDeque<(Region, Rule)>,
    at: Option<Position>,
}

/// Where a query is being read.
enum Position {
    /// A BAM or bgzipped SAM: the records of `scope` (by start) from the
    /// record start `next` on.
    Offset {
        scope: Region,
        next: VirtualOffset,
        following: Option<VirtualOffset>,
        /// Records of the scope have been read (one sorting before it
        /// then means the file is not sorted).
        entered: bool,
        /// Only records ending past this position are kept (an overlap
        /// query).
        ending_past: Option<i64>,
    },
    /// A CRAM handle with htslib's iterator on the query.
    Cram { query: CramQuery, starting_in: Option<Region> },
}

impl Cursor {
    /// A cursor over `queries` of `file`, in order.
    pub fn new(file: Arc<IndexedFile>, queries: impl IntoIterator<Item = (Region, Rule)>) -> Cursor {
        Cursor { file, queries: queries.into_iter().collect(), at: None }
    }

    /// The file read.
    pub fn file(&self) -> &Arc<IndexedFile> {
        &self.file
    }

    /// Calls `f` on the next records, at least `max` of them unless the
    /// queries end first (and more while the next is already inflated, so
    /// that the next batch inflates no block again). Returns how many; 0
    /// once every query has been read.
    pub fn fill(&mut self, max: usize, f: &mut dyn FnMut(&RecordRef<'_>)) -> Result<usize, Error> {
        let mut n = 0;
        while n < max {
            if self.at.is_none() {
                let Some((region, rule)) = self.queries.pop_front() else { break };
                self.at = self.start(region, rule)?;
                continue;
            }
            let more = self.read(max - n, &mut n, f)?;
            if !more {
                self.finish_query();
            }
        }
        Ok(n)
    }

    /// Where `region` is read by `rule` (`None`: the index has no records there).
    fn start(&self, region: Region, rule: Rule) -> Result<Option<Position>, Error> {
        let tid = region.ref_id;
        let region = if tid < 0 { Region::unplaced() } else { region };
        let starts_in = rule == Rule::StartsIn || tid < 0;
        let offsets = |file: &dyn region::Indexed, index: &crate::index::Index| {
            let (scope, span, ending_past) = if starts_in {
                let start = region::region_start(file, index, region);
                (region, start.map(|s| (s, region::following_start(file, index, region))), None)
            } else {
                let beg = region.start.max(0);
                let scope = overlapping(tid, region.end);
                (scope, region::query_span(file, index, scope, beg), Some(beg))
            };
            span.map(|(next, following)| Position::Offset { scope, next, following, entered: false, ending_past })
        };
        Ok(match &self.file.data {
            Data::Bam { bam, index } => offsets(bam, index),
            Data::SamGz { sam, index } => offsets(sam, index),
            Data::Cram(pool) => {
                let mut query = pool.take_owned()?;
                let (beg, end) = if starts_in { (region.start, region.end) } else { (region.start.max(0), region.end) };
                if let Err(e) = query.query(tid, beg, end) {
                    pool.give_back(query);
                    return Err(e);
                }
                Some(Position::Cram { query, starting_in: starts_in.then_some(region) })
            }
        })
    }

    /// Reads up to `want` records of the current query (more while the
    /// next is inflated), counting them in `n`; false when the query ends.
    fn read(&mut self, want: usize, n: &mut usize, f: &mut dyn FnMut(&RecordRef<'_>)) -> Result<bool, Error> {
        let mut got = 0;
        let at = self.at.as_mut().expect("a query is being read");
        let more = match (&self.file.data, at) {
            (Data::Bam { bam, .. }, Position::Offset { scope, next, following, entered, ending_past }) => {
                let mut reader = RegionReader::resume(bam, *scope, *next, *following, *entered)?;
                let wrap = |e: crate::bam::BamError| Error::from(e).with_path(bam.path());
                let more = loop {
                    if got >= want && !reader.next_is_loaded() {
                        break true;
                    }
                    let Some(r) = reader.next_record().map_err(wrap)? else { break false };
                    if ending_past.is_none_or(|from| ends_past(&r, from, false)) {
                        f(&r);
                        got += 1;
                    }
                };
                (*next, *entered) = (reader.record_end(), reader.has_entered());
                more
            }
            (Data::SamGz { sam, .. }, Position::Offset { scope, next, following, entered, ending_past }) => {
                let mut reader = SamRegionReader::resume(sam, *scope, *next, *following, *entered)?;
                let more = loop {
                    if got >= want && !reader.next_is_loaded() {
                        break true;
                    }
                    let Some(r) = reader.next_record()? else { break false };
                    if ending_past.is_none_or(|from| ends_past(&r, from, sam.positions() == crate::sam::Positions::Wide)) {
                        f(&r);
                        got += 1;
                    }
                };
                (*next, *entered) = (reader.resume_offset(), reader.has_entered());
                more
            }
            (_, Position::Cram { query, starting_in }) => loop {
                if got >= want {
                    break true;
                }
                if !query.advance()? {
                    break false;
                }
                let r = query.current();
                let pos = i64::from(r.pos());
                if starting_in.is_none_or(|s| s.ref_id < 0 || (pos >= s.start && pos < s.end)) {
                    f(&r);
                    got += 1;
                }
            },
            _ => unreachable!("a position is made for its file's format"),
        };
        *n += got;
        Ok(more)
    }

    /// Ends the query being read (a CRAM handle goes back to the pool).
    fn finish_query(&mut self) {
        if let (Some(Position::Cram { query, .. }), Data::Cram(pool)) = (self.at.take(), &self.file.data) {
            pool.give_back(query);
        }
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        self.finish_query();
    }
}
