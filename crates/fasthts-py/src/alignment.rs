//! The compiled half of `fasthts.AlignmentFile`: pysam's reading API.
//!
//! `_AlignmentReader` opens a BAM, a CRAM or a SAM (a bgzipped one with
//! its index read by region too) and hands out `SegmentIter`s of
//! `AlignedSegment`s (`crate::segment`). Region queries here use htslib's overlap rule (a record
//! belongs to every region its alignment overlaps), unlike `BamFile`'s
//! start-based regions. What the file is, its index and why it cannot be
//! read by region are the library's decisions (`fasthts::alignment_file`). The Python half (`python/fasthts/_alignment.py`)
//! parses pysam's arguments and builds the header object.

use crate::read_ahead::ReadAhead;
pub(crate) use crate::segment::AlignedSegment;
use crate::source::{fill, may_continue, Batch, Source};
use crate::{run_detached, to_py};
use fasthts::alignment_file::{AlignmentFile, OpenOptions};
use fasthts::bam::{Header, RecordRef};
use fasthts::cram::CramOptions;
use fasthts::region::indexed::{Cursor, IndexedFile, Rule, WithoutIndex};
use fasthts::region::Region as LibRegion;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex, TryLockError};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AlignmentReader>()?;
    m.add_class::<SegmentIter>()?;
    m.add_class::<AlignedSegment>()?;
    Ok(())
}

/// An opened alignment file (the compiled half of `fasthts.AlignmentFile`).
#[pyclass(frozen, module = "fasthts._fasthts", name = "_AlignmentReader")]
pub struct AlignmentReader {
    file: AlignmentFile,
    header: Arc<Header>,
    /// Threads inflating ahead of an iterator (`AlignmentFile(threads=)`).
    threads: usize,
}

impl AlignmentReader {
    /// The file's header (what a writer given it as `template` writes).
    pub(crate) fn header(&self) -> &Arc<Header> {
        &self.header
    }

    /// The file read by region.
    fn for_regions(&self, py: Python<'_>, whole: bool) -> PyResult<Arc<IndexedFile>> {
        if !self.random_access() {
            return Err(PyValueError::new_err("fetching by region is not available for SAM files"));
        }
        run_detached(py, |w| if whole { self.file.for_whole_file(w) } else { self.file.for_regions(w) })
    }

    /// The file read by region for `queries`: a remote file's ranges for
    /// them fetched (`AlignmentFile::for_queries`).
    fn for_queries(&self, py: Python<'_>, queries: &[(LibRegion, Rule)], whole: bool) -> PyResult<Arc<IndexedFile>> {
        if !self.random_access() {
            return Err(PyValueError::new_err("fetching by region is not available for SAM files"));
        }
        run_detached(py, |w| self.file.for_queries(queries, whole, w))
    }

    fn iter(&self, source: Source) -> SegmentIter {
        let state = IterState { source: Some(source), batch: Batch::default(), warnings: Vec::new(), ahead: None };
        SegmentIter { state: Mutex::new(state), header: self.header.clone(), threads: self.threads }
    }

    /// The records of `queries`, read through the index (`whole`: of a job
    /// reading every placed record, `AlignmentFile::for_whole_file`).
    fn queries(&self, py: Python<'_>, queries: Vec<(LibRegion, Rule)>, whole: bool) -> PyResult<SegmentIter> {
        let file = self.for_queries(py, &queries, whole)?;
        Ok(self.iter(Source::Indexed(Cursor::new(file, queries))))
    }
}

#[pymethods]
impl AlignmentReader {
    #[new]
    /// `threads`: as everywhere (None or 0: all cores, capped by the
    /// thread rule), the threads that read ahead of an iterator.
    #[pyo3(signature = (path, index_filename=None, reference_filename=None, threads=None))]
    fn new(
        py: Python<'_>,
        path: crate::FsPath,
        index_filename: Option<crate::FsPath>,
        reference_filename: Option<crate::FsPath>,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let threads = fasthts_io::pool::thread_count(crate::threads_arg(threads)?);
        let options = OpenOptions {
            index: index_filename.map(|p| p.0),
            cram: CramOptions { reference: reference_filename.map(|p| p.0), ..Default::default() },
            // A BAM without an index file is indexed in memory for a region
            // query (pysam refuses it first); a CRAM file without one is not.
            bam_without_index: WithoutIndex::Build,
            cram_without_index: WithoutIndex::Refuse,
            // As pysam, an index is loaded at open: a foreign one fails here.
            load_found_index_at_open: true,
        };
        // A missing end-of-file marker is the Python half's to raise or warn about.
        let file = run_detached(py, |w| AlignmentFile::open(&path, &options, w))?;
        Ok(AlignmentReader { header: file.header().clone(), file, threads })
    }

    /// The file's reference names → ids (`@SQ SN:` names and `AN:`
    /// alternatives), mapped once per file.
    #[getter]
    fn ref_names(&self) -> crate::regions::RefNames {
        crate::regions::RefNames::of(self.file.ref_names().clone())
    }

    /// Whether the file is CRAM.
    #[getter]
    fn is_cram(&self) -> bool {
        self.file.is_cram()
    }

    /// Whether the file is SAM text (plain or compressed).
    #[getter]
    fn is_sam(&self) -> bool {
        self.file.is_sam()
    }

    /// Whether regions can be fetched (an indexed BAM, CRAM or bgzipped SAM).
    #[getter]
    fn random_access(&self) -> bool {
        self.file.can_read_by_region()
    }

    /// Why regions cannot be fetched, in one line naming the file (None
    /// when they can).
    #[getter]
    fn no_regions(&self) -> Option<String> {
        self.file.no_regions().map(|e| e.to_string())
    }

    /// Whether the file is a BGZF BAM read through its mapping (random access).
    #[getter]
    fn is_bam(&self) -> bool {
        self.file.is_mapped_bam()
    }

    /// Whether an index file was loaded at open.
    #[getter]
    fn indexed(&self) -> bool {
        self.file.index_loaded()
    }

    /// Whether the BGZF end-of-file marker block is present (True for
    /// uncompressed input).
    #[getter]
    fn eof_marker(&self) -> bool {
        !self.file.missing_eof_marker()
    }

    /// `[(name, length), ...]`.
    #[getter]
    fn references(&self) -> Vec<(String, u32)> {
        self.header.references.iter().map(|r| (r.name.clone(), r.len)).collect()
    }

    /// The header text as stored (trailing NULs removed).
    #[getter]
    fn raw_text(&self) -> String {
        let t = &self.header.text;
        let end = t.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
        String::from_utf8_lossy(&t[..end]).into_owned()
    }

    /// Every record from the first, in file order (pysam's `until_eof`).
    fn fetch_all(&self, py: Python<'_>) -> PyResult<SegmentIter> {
        let records = py.detach(|| self.file.records()).map_err(to_py)?;
        Ok(self.iter(Source::Whole(records)))
    }

    /// The records overlapping each `(tid, start, stop)` of `regions` in
    /// turn (htslib's rule; tid -1: the unplaced records).
    fn fetch_regions(&self, py: Python<'_>, regions: Vec<(i32, i64, i64)>) -> PyResult<SegmentIter> {
        let queries = regions.into_iter().map(|(tid, start, stop)| {
            let region = if tid < 0 { LibRegion::unplaced() } else { LibRegion { ref_id: tid, start, end: stop } };
            (region, Rule::Overlap)
        });
        self.queries(py, queries.collect(), false)
    }

    /// The records of every reference in turn, each read as a region
    /// query of the whole reference (pysam's `fetch()` of an indexed file:
    /// the unplaced records are not included).
    fn fetch_references(&self, py: Python<'_>) -> PyResult<SegmentIter> {
        let whole = |t| (LibRegion { ref_id: t, start: 0, end: i64::from(i32::MAX) }, Rule::Overlap);
        // Every reference's records: only through an index of the whole file.
        self.queries(py, (0..self.header.references.len() as i32).map(whole).collect(), true)
    }

    /// pysam's `mate()` lookup (`fasthts::region::indexed::pysam_mate`):
    /// the record found, or None.
    fn find_mate(&self, py: Python<'_>, name: &str, flag: u16, mate_tid: i32, mate_pos: i64) -> PyResult<Option<AlignedSegment>> {
        let file = self.for_regions(py, false)?;
        let found = run_detached(py, |_| fasthts::region::indexed::pysam_mate(file, name.as_bytes(), flag, mate_tid, mate_pos))?;
        Ok(found.map(|d| AlignedSegment { data: d.into_boxed_slice(), header: self.header.clone() }))
    }

    /// pysam's pileup iterators (`fasthts::pileup::columns`): over
    /// `regions` as one pileup (`truncate`: keep the columns of
    /// `(tid, start, stop)`), else over each reference in turn through the
    /// index when `indexed`, else over the whole file in file order. With
    /// `fastafile` and the `samtools` stepper, reads are read against it
    /// (`compute_baq`, `redo_baq`, `adjust_capq_threshold` as pysam's).
    #[pyo3(signature = (regions, truncate, indexed, stepper, max_depth, ignore_overlaps, flag_filter, flag_require, ignore_orphans, min_mapping_quality, min_base_quality, fastafile=None, compute_baq=true, redo_baq=false, adjust_capq_threshold=0))]
    #[allow(clippy::too_many_arguments)]
    fn pileup(
        &self,
        py: Python<'_>,
        regions: Option<Vec<(i32, i64, i64)>>,
        truncate: Option<(i32, i64, i64)>,
        indexed: bool,
        stepper: &str,
        max_depth: i32,
        ignore_overlaps: bool,
        flag_filter: u32,
        flag_require: u32,
        ignore_orphans: bool,
        min_mapping_quality: i64,
        min_base_quality: i64,
        fastafile: Option<PyRef<'_, crate::fasta::FastaFile>>,
        compute_baq: bool,
        redo_baq: bool,
        adjust_capq_threshold: i32,
    ) -> PyResult<crate::pileup::PileupIter> {
        use fasthts::pileup::columns::{Columns, ReferenceOptions};
        let options = crate::pileup::column_options(
            stepper,
            max_depth,
            ignore_overlaps,
            flag_filter,
            flag_require,
            ignore_orphans,
            min_mapping_quality,
        )?;
        let region =
            |(tid, start, end): (i32, i64, i64)| if tid < 0 { LibRegion::unplaced() } else { LibRegion { ref_id: tid, start, end } };
        let columns = match regions {
            Some(regions) => {
                let regions: Vec<LibRegion> = regions.into_iter().map(region).collect();
                let queries: Vec<_> = regions.iter().map(|&r| (r, Rule::Overlap)).collect();
                let file = self.for_queries(py, &queries, false)?;
                Columns::indexed(file, vec![regions], options, truncate)
            }
            None if indexed => {
                let whole = |t: i32| LibRegion { ref_id: t, start: 0, end: i64::from(i32::MAX) };
                let regions: Vec<LibRegion> = (0..self.header.references.len() as i32).map(whole).collect();
                let queries: Vec<_> = regions.iter().map(|&r| (r, Rule::Overlap)).collect();
                let file = self.for_queries(py, &queries, true)?;
                Columns::indexed(file, regions.into_iter().map(|r| vec![r]).collect(), options, None)
            }
            None => {
                let records = py.detach(|| self.file.records()).map_err(to_py)?;
                Columns::whole_file(records, options)
            }
        };
        let mut columns = columns.reading_ahead(self.threads);
        if let Some(fasta) = fastafile {
            let fasta = fasta.open_file("I/O operation on closed file")?;
            let names = self.header.references.iter().map(|r| r.name.as_bytes().to_vec()).collect();
            columns = columns.with_reference(fasta, names, ReferenceOptions { compute_baq, redo_baq, adjust_capq_threshold });
        }
        Ok(crate::pileup::PileupIter::new(columns, self.header.clone(), min_base_quality))
    }

    /// Per reference `(mapped, unmapped)` as the index records them, and
    /// the records without a coordinate.
    fn index_statistics(&self, py: Python<'_>) -> PyResult<(Vec<(u64, u64)>, u64)> {
        let file = self.for_regions(py, false)?;
        // A .crai records no counts: htslib (and so pysam) gives zeros.
        let Some(ix) = file.index() else { return Ok((vec![(0, 0); self.header.references.len()], 0)) };
        let per = (0..self.header.references.len()).map(|t| ix.mapped_unmapped(t).unwrap_or((0, 0))).collect();
        Ok((per, ix.n_no_coor().unwrap_or(0)))
    }
}

struct IterState {
    /// What is read (None once it is read ahead, has ended or failed).
    source: Option<Source>,
    batch: Batch,
    /// SAM record warnings met while reading, issued by the next call.
    warnings: Vec<String>,
    /// Once a first batch showed that more follow, `source` (then None)
    /// is read ahead on the iterator's threads.
    ahead: Option<ReadAhead<Filled>>,
}

/// A batch filled ahead, with what reading it met.
struct Filled {
    batch: Batch,
    warnings: Vec<String>,
    result: Result<(), fasthts::Error>,
}

impl Default for Filled {
    fn default() -> Filled {
        Filled { batch: Batch::default(), warnings: Vec::new(), result: Ok(()) }
    }
}

/// Iterator over records as `AlignedSegment`s, read `BATCH` at a time with
/// the GIL released. Threads may share one: each record goes to one of them.
#[pyclass(frozen, module = "fasthts._fasthts")]
pub struct SegmentIter {
    state: Mutex<IterState>,
    header: Arc<Header>,
    /// Threads reading ahead (see `IterState::ahead`).
    threads: usize,
}

impl SegmentIter {
    /// The state, waiting (with the GIL released) while another thread
    /// reads a batch.
    fn lock<'a>(&'a self, py: Python<'_>) -> std::sync::MutexGuard<'a, IterState> {
        loop {
            match self.state.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                // Waits without the GIL (the other thread needs it to finish).
                Err(TryLockError::WouldBlock) => py.detach(|| drop(self.state.lock())),
            }
        }
    }

    /// Refills the batch when it is used up; false at the end. The first
    /// batch is read here; when more follow, the rest is read ahead.
    fn refill(&self, py: Python<'_>, st: &mut IterState) -> PyResult<bool> {
        if st.batch.taken < st.batch.len() {
            return Ok(true);
        }
        let result = match &st.ahead {
            Some(ahead) => match ahead.next(py)? {
                Some(filled) => {
                    let used = std::mem::replace(&mut st.batch, filled.batch);
                    st.warnings.extend(filled.warnings);
                    ahead.recycle(Filled { batch: used, ..Filled::default() });
                    filled.result
                }
                None => {
                    st.batch.clear();
                    Ok(())
                }
            },
            None => {
                let IterState { source, batch, warnings, .. } = st;
                batch.clear();
                let result = match source.as_mut() {
                    Some(source) => py.detach(|| crate::in_this_process(|| fill(source, batch, warnings))),
                    None => Ok(()),
                };
                let source = source.take_if(|_| result.is_ok() && may_continue(batch.len()));
                if let Some(mut source) = source {
                    st.ahead = Some(ReadAhead::start(self.threads, move |f: &mut Filled| {
                        f.warnings.clear();
                        f.result = fill(&mut source, &mut f.batch, &mut f.warnings);
                        f.result.is_ok() && may_continue(f.batch.len())
                    }));
                }
                result
            }
        };
        crate::warn_texts(py, &std::mem::take(&mut st.warnings))?;
        if let Err(e) = result {
            st.source = None;
            st.ahead = None;
            st.batch.clear();
            return Err(to_py(e));
        }
        if st.batch.len() == 0 {
            st.source = None;
            st.ahead = None;
            return Ok(false);
        }
        Ok(true)
    }
}

#[pymethods]
impl SegmentIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<AlignedSegment>> {
        let mut st = self.lock(py);
        if !self.refill(py, &mut st)? {
            return Ok(None);
        }
        let data = st.batch.take().expect("refilled").to_vec().into_boxed_slice();
        Ok(Some(AlignedSegment { data, header: self.header.clone() }))
    }

    /// pysam's `count_coverage` over the remaining records
    /// (`fasthts::pileup::base_counts`): those whose flag has none of the
    /// bits of `exclude`, or, with `callback`, those it returns true for.
    #[pyo3(signature = (start, stop, threshold, exclude, callback=None))]
    fn _count_coverage<'py>(
        &self,
        py: Python<'py>,
        start: i64,
        stop: i64,
        threshold: i64,
        exclude: u16,
        callback: Option<Bound<'py, PyAny>>,
    ) -> PyResult<crate::pileup::CountArrays<'py>> {
        let mut counts = fasthts::pileup::base_counts::BaseCounts::new(start, stop, threshold);
        let mut st = self.lock(py);
        let n_ref = self.header.references.len();
        while self.refill(py, &mut st)? {
            let b = &mut st.batch;
            while let Some(data) = b.take() {
                let r = RecordRef::new(data, n_ref).expect("record validated when read");
                match &callback {
                    None if r.flag() & exclude != 0 => continue,
                    None => {}
                    Some(f) => {
                        let seg = AlignedSegment { data: data.into(), header: self.header.clone() };
                        if !f.call1((seg,))?.is_truthy()? {
                            continue;
                        }
                    }
                }
                counts.add(&r);
            }
            py.check_signals()?;
        }
        crate::pileup::count_arrays(py, &counts)
    }

    /// Counts the remaining records whose flag has none of the bits of
    /// `exclude`, without making objects; Ctrl-C is seen between batches.
    fn _count(&self, py: Python<'_>, exclude: u16) -> PyResult<u64> {
        let mut st = self.lock(py);
        let mut n = 0u64;
        while self.refill(py, &mut st)? {
            let b = &mut st.batch;
            while let Some(data) = b.take() {
                let r = RecordRef::new_prevalidated(data);
                n += u64::from(r.flag() & exclude == 0);
            }
            py.check_signals()?;
        }
        Ok(n)
    }
}
