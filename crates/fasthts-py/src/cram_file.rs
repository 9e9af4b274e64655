//! `BamFile` on a CRAM file: its regions, records and columns, decoded by
//! htslib (`fasthts::cram`). Regions keep `BamFile`'s rule (a record
//! belongs to the region where it starts): htslib's iterator gives the
//! records overlapping a region, and those starting before it are left
//! out. Work is cut at container boundaries, read from the containers'
//! headers, so it runs on all threads with or without a `.crai`.

use crate::bam::Columns;
use fasthts::bam::Header;
use fasthts::command::{Report, Warning};
use fasthts::cram::region::{has_index, MemoryIndex};
use fasthts::cram::{self, Container, CramOptions, CramQuery, CramReader, Fields, QueryPool};
use fasthts::region::{Plan, Region as LibRegion};
use fasthts::Error;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A CRAM file opened by `BamFile`.
pub(crate) struct CramFile {
    path: PathBuf,
    /// The FASTA given (`reference=`); None: as htslib finds it.
    reference: Option<PathBuf>,
    /// The index given (`index=`); None: the `.crai` beside the file.
    index_path: Option<PathBuf>,
    header: Header,
    pub(crate) names: Arc<Vec<String>>,
    missing_eof: bool,
    /// Handles for region queries, opened on the first one.
    queries: Mutex<Option<Arc<Queries>>>,
    /// The containers, listed on first use.
    containers: Mutex<Option<Arc<Vec<Container>>>>,
}

/// Handles on the file with its index, decoding what columns need.
struct Queries {
    columns: QueryPool,
    /// The `.crai` made in memory when the file has none.
    memory: Option<MemoryIndex>,
}

impl CramFile {
    /// Opens the CRAM file at `path` and reads its header; an index given
    /// is loaded now, so that a missing or damaged one fails here.
    pub(crate) fn open(path: &Path, index_path: Option<PathBuf>, reference: Option<PathBuf>) -> Result<CramFile, Error> {
        let options = CramOptions { reference: reference.clone(), ..CramOptions::default() };
        let reader = CramReader::open(path, &options)?;
        let header = reader.header().clone();
        let names = Arc::new(header.references.iter().map(|r| r.name.clone()).collect());
        let file = CramFile {
            path: path.to_path_buf(),
            reference,
            index_path,
            header,
            names,
            missing_eof: reader.missing_eof_container(),
            queries: Mutex::new(None),
            containers: Mutex::new(None),
        };
        if let Some(ix) = &file.index_path {
            std::fs::metadata(ix).map_err(|e| Error::from(e).with_path(ix))?;
            file.queries()?;
        }
        Ok(file)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    pub(crate) fn reference(&self) -> Option<&Path> {
        self.reference.as_deref()
    }

    pub(crate) fn index_path(&self) -> Option<&Path> {
        self.index_path.as_deref()
    }

    /// Whether an index file was given or is beside the file.
    pub(crate) fn has_index_file(&self) -> bool {
        has_index(&self.path, self.index_path.as_deref())
    }

    /// As for a BAM: a file without CRAM's EOF container is warned about.
    pub(crate) fn warn_if_truncated(&self, report: &dyn Report) {
        if self.missing_eof {
            report.warning(Warning::MissingEofMarker { path: self.path.clone() });
        }
    }

    fn options(&self, fields: Fields) -> CramOptions {
        CramOptions { reference: self.reference.clone(), fields, threads: 0 }
    }

    /// The handles for region queries: through the index given, or the
    /// `.crai` beside the file, or else one made now in memory (as
    /// `BamFile` builds a BAM's missing index).
    fn queries(&self) -> Result<Arc<Queries>, Error> {
        let mut slot = self.queries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(q) = slot.as_ref() {
            return Ok(q.clone());
        }
        let (index, memory) = match &self.index_path {
            Some(ix) => (Some(ix.clone()), None),
            None if has_index(&self.path, None) => (None, None),
            None => {
                let m = MemoryIndex::build(&self.path, &self.path)?;
                (Some(m.path().to_path_buf()), Some(m))
            }
        };
        let pool = |fields: Fields| -> Result<QueryPool, Error> {
            let options = self.options(fields);
            // (The index is loaded, and so checked, here.)
            let q = CramQuery::open(&self.path, &options, index.as_deref())?
                .ok_or_else(|| Error::Message("the CRAM index has gone".into()).with_path(&self.path))?;
            Ok(QueryPool::new(q, &self.path, &options, index.as_deref()))
        };
        let q = Arc::new(Queries { columns: pool(Fields::Columns)?, memory });
        *slot = Some(q.clone());
        Ok(q)
    }

    /// A handle of its own for reading records (a `fetch`), positioned on
    /// no region yet.
    pub(crate) fn record_query(&self) -> Result<CramQuery, Error> {
        // Through the pool's index: a `.crai` made in memory stays usable
        // while the pool keeps it.
        let q = self.queries()?;
        let index = match (&self.index_path, &q.memory) {
            (Some(ix), _) => Some(ix.clone()),
            (None, Some(m)) => Some(m.path().to_path_buf()),
            (None, None) => None,
        };
        CramQuery::open(&self.path, &self.options(Fields::All), index.as_deref())?
            .ok_or_else(|| Error::Message("the CRAM index has gone".into()).with_path(&self.path))
    }

    /// A reader of the whole file, in file order, every field decoded.
    pub(crate) fn record_reader(&self) -> Result<CramReader, Error> {
        CramReader::open(&self.path, &self.options(Fields::All))
    }

    fn containers(&self) -> Result<Arc<Vec<Container>>, Error> {
        let mut slot = self.containers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let file = std::fs::File::open(&self.path).map_err(|e| Error::from(e).with_path(&self.path))?;
        let list = Arc::new(cram::containers(&file).map_err(|e| Error::from(e).with_path(&self.path))?);
        *slot = Some(list.clone());
        Ok(list)
    }

    /// Regions tiling every reference with records, then the unplaced
    /// records, as `BamFile.plan` on a BAM: cut where a container of about
    /// `Plan::BalancedBytes` bytes begins, or every `Plan::Windows` bases.
    /// Container headers do not say which references a multi-reference
    /// container holds: a file with one plans every reference, those
    /// without containers of their own as one region each.
    pub(crate) fn plan(&self, plan: Plan) -> Result<Vec<LibRegion>, Error> {
        let list = self.containers()?;
        let multi = list.iter().any(|c| c.ref_id == -2);
        let mut regions = Vec::new();
        for (tid, reference) in self.header.references.iter().enumerate() {
            let own: Vec<&Container> = list.iter().filter(|c| c.ref_id == tid as i32).collect();
            if own.is_empty() && !multi {
                continue;
            }
            let mut cuts: Vec<i64> = Vec::new();
            match plan {
                Plan::Windows(width) => {
                    let width = width.clamp(1, i64::MAX as u64) as i64;
                    cuts.extend((1..).map(|i| i * width).take_while(|&p| p < i64::from(reference.len)));
                }
                Plan::BalancedBytes(target) => {
                    let mut bytes = 0;
                    for c in &own {
                        // A container's start (1-based) is its first record's position.
                        let at = c.start - 1;
                        if bytes >= target && at > cuts.last().copied().unwrap_or(0) {
                            cuts.push(at);
                            bytes = 0;
                        }
                        bytes += c.size;
                    }
                }
            }
            let mut start = i64::MIN;
            for c in cuts {
                regions.push(LibRegion { ref_id: tid as i32, start, end: c });
                start = c;
            }
            regions.push(LibRegion { ref_id: tid as i32, start, end: i64::MAX });
        }
        regions.push(LibRegion::unplaced());
        Ok(regions)
    }

    /// The columns of the records starting in `r`, read on the current
    /// pool: the region is cut where its containers begin, and the pieces
    /// are read in parallel, each by a handle of its own.
    pub(crate) fn region_columns(&self, r: LibRegion) -> Result<Columns, Error> {
        let queries = self.queries()?;
        let mut pieces = Vec::new();
        if r.ref_id >= 0 && rayon::current_num_threads() > 1 {
            let list = self.containers()?;
            let mut start = r.start;
            for c in list.iter().filter(|c| c.ref_id == r.ref_id) {
                let at = c.start - 1;
                if at > start && at < r.end {
                    pieces.push(LibRegion { ref_id: r.ref_id, start, end: at });
                    start = at;
                }
            }
            pieces.push(LibRegion { ref_id: r.ref_id, start, end: r.end });
        } else {
            pieces.push(r);
        }
        let parts = pieces.par_iter().map(|p| starting_in(&queries.columns, *p)).collect::<Result<Vec<_>, Error>>()?;
        Ok(Columns::concat(parts))
    }

    /// The columns of each of `regions`, read in parallel.
    pub(crate) fn regions_columns(&self, regions: &[LibRegion]) -> Result<Vec<Columns>, Error> {
        let queries = self.queries()?;
        regions.par_iter().map(|r| starting_in(&queries.columns, *r)).collect()
    }

    /// Every record's columns, in file order, read in runs of containers
    /// on the current pool (no index needed).
    pub(crate) fn whole_file_columns(&self) -> Result<Columns, Error> {
        let parts = cram::scatter(&self.path, &self.options(Fields::Columns), fasthts::command::REGION_BYTES, |part| {
            let mut c = Columns::with_capacity(0);
            part.for_each_record(|r| c.push(r))?;
            Ok(c)
        })?;
        Ok(Columns::concat(parts))
    }
}

/// Whether a record at `pos` that htslib's iterator gave for `region`
/// starts in it (the iterator gives every record overlapping it).
pub(crate) fn starts_in(pos: i64, region: LibRegion) -> bool {
    region.ref_id < 0 || pos >= region.start
}

/// The columns of the records starting in `region`, by a handle of `pool`.
fn starting_in(pool: &QueryPool, region: LibRegion) -> Result<Columns, Error> {
    let mut q = pool.take()?;
    let (beg, end) = (region.start.max(0), region.end);
    q.query(region.ref_id, beg, end)?;
    let mut c = Columns::with_capacity(0);
    while let Some(r) = q.next_record()? {
        if starts_in(i64::from(r.pos()), region) {
            c.push(&r);
        }
    }
    Ok(c)
}
