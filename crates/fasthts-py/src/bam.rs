//! `BamFile`, `Region`, `Record`: a memory-mapped BAM, its regions, its
//! records as objects, and a region's records as columns.

use crate::alignment::Source;
use crate::cram_file::{starts_in, CramFile};
use crate::sam_file::{is_sam_text, SamFile, SamGzRegions};
use crate::{err, run_detached, threads_arg, to_py, with_threads, FsPath};
use fasthts::bam::{AuxValue, BamFile as LibBam, RecordRef};
use fasthts::bgzf::VirtualOffset;
use fasthts::command::{self, IndexLocation, Report, REGION_BYTES};
use fasthts::index::Index;
use fasthts::region::sam::{SamGzFile, SamRegionReader};
use fasthts::region::{self, Indexed, Plan, Region as LibRegion, RegionReader};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use rayon::prelude::*;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BamFile>()?;
    m.add_class::<Region>()?;
    m.add_class::<Record>()?;
    m.add_class::<RecordIter>()?;
    m.add_class::<Column>()?;
    Ok(())
}

/// Records read per GIL release when iterating records as objects.
const BATCH: usize = 4096;

/// A BAM opened once and shared by iterators and worker threads.
pub(crate) struct Shared {
    pub(crate) bam: LibBam,
    index: IndexSlot,
    names: Arc<Vec<String>>,
}

impl Shared {
    pub(crate) fn open(path: &Path, index_path: Option<PathBuf>) -> Result<Shared, fasthts::Error> {
        Ok(Shared::with_index_path(LibBam::open(path)?, index_path))
    }

    /// A file opened already, without an index file.
    pub(crate) fn from_bam(bam: LibBam) -> Shared {
        Shared::with_index_path(bam, None)
    }

    fn with_index_path(bam: LibBam, index_path: Option<PathBuf>) -> Shared {
        let names = Arc::new(bam.header().references.iter().map(|r| r.name.clone()).collect());
        Shared { bam, index: IndexSlot::new(index_path), names }
    }

    /// The index: the file given, else the usable one beside the BAM (as
    /// the CLI finds it: a stale one is used with a warning, its chunks
    /// checked), else one built in memory. An index made for another file
    /// is an error.
    pub(crate) fn index(&self, report: &dyn Report) -> Result<Arc<Index>, fasthts::Error> {
        self.index.get(&self.bam, report, || command::build_index(&self.bam))
    }

    /// The index for a job that reads every placed record by position
    /// through it (a plan, pysam's `fetch()`): as `index`, once checked to
    /// describe the whole file; else (made for a prefix of the file)
    /// reported, and one built in memory instead, as without an index.
    pub(crate) fn whole_file_index(&self, report: &dyn Report) -> Result<Arc<Index>, fasthts::Error> {
        let build = || command::build_index(&self.bam);
        self.index.get_whole_file(&self.bam, report, build, |_| build())
    }

    /// Whether an index file (given, or beside the BAM) exists.
    pub(crate) fn has_index_file(&self) -> bool {
        self.index.has_file(self.bam.path())
    }
}

/// The index of a file read through a BAI or CSI (a BAM or a bgzipped
/// SAM): the file given, else the one beside it (`index_of`), loaded on
/// first use and kept.
pub(crate) struct IndexSlot {
    /// The index file given (`index=`; kept when pickled).
    pub(crate) given: Option<PathBuf>,
    loaded: Mutex<Option<Loaded>>,
}

/// An index in an `IndexSlot`.
struct Loaded {
    index: Arc<Index>,
    /// Known to describe the whole file: built from it, or checked
    /// (`IndexSlot::get_whole_file`).
    whole: bool,
}

impl IndexSlot {
    pub(crate) fn new(given: Option<PathBuf>) -> IndexSlot {
        IndexSlot { given, loaded: Mutex::new(None) }
    }

    /// The index of `file` (`index_of`), else what `otherwise` makes or
    /// says (a BAM's built in memory; a SAM's refusal).
    pub(crate) fn get<F: Indexed + ?Sized>(
        &self,
        file: &F,
        report: &dyn Report,
        otherwise: impl FnOnce() -> Result<Index, fasthts::Error>,
    ) -> Result<Arc<Index>, fasthts::Error> {
        let mut slot = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        Ok(self.load(&mut slot, file, report, otherwise)?.index.clone())
    }

    /// As `get`, for a job that reads every placed record of `file` by
    /// position through the index (a plan, pysam's `fetch()`), which no
    /// coverage check follows: the index is checked, once, to describe the
    /// whole file (`command::replace_if_not_covering`, the CLI's
    /// snp-pileup rule); one that does not (made for a prefix of the file)
    /// is reported and replaced, for every later use too, by the index
    /// `build` makes from the file (given the format of the one replaced).
    pub(crate) fn get_whole_file<F: Indexed + ?Sized>(
        &self,
        file: &F,
        report: &dyn Report,
        otherwise: impl FnOnce() -> Result<Index, fasthts::Error>,
        build: impl FnOnce(fasthts::index::IndexFormat) -> Result<Index, fasthts::Error>,
    ) -> Result<Arc<Index>, fasthts::Error> {
        let mut slot = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let loaded = self.load(&mut slot, file, report, otherwise)?;
        if !loaded.whole {
            if let Some(built) = command::replace_if_not_covering(file, &loaded.index, report, build)? {
                loaded.index = Arc::new(built);
            }
            loaded.whole = true;
        }
        Ok(loaded.index.clone())
    }

    /// The index in `slot`, loaded first if need be (see `get`).
    fn load<'s, F: Indexed + ?Sized>(
        &self,
        slot: &'s mut Option<Loaded>,
        file: &F,
        report: &dyn Report,
        otherwise: impl FnOnce() -> Result<Index, fasthts::Error>,
    ) -> Result<&'s mut Loaded, fasthts::Error> {
        if slot.is_none() {
            *slot = Some(match index_of(file, self.given.as_deref(), report)? {
                Some(ix) => Loaded { index: Arc::new(ix), whole: false },
                None => Loaded { index: Arc::new(otherwise()?), whole: true },
            });
        }
        Ok(slot.as_mut().expect("loaded above"))
    }

    /// Whether an index file (given, or beside `data`) exists.
    pub(crate) fn has_file(&self, data: &Path) -> bool {
        self.given.is_some() || matches!(command::locate_index(data), IndexLocation::Found(_) | IndexLocation::Stale(_))
    }
}

/// The index of `file` (a BAM or a bgzipped SAM): the file `given`, else the
/// usable one beside it (`command::find_index`: a stale one is reported,
/// one of another file refused); None when there is neither.
pub(crate) fn index_of<F: Indexed + ?Sized>(file: &F, given: Option<&Path>, report: &dyn Report) -> Result<Option<Index>, fasthts::Error> {
    match given {
        Some(p) => {
            // An index given by name may be any file's: each chunk is
            // checked to start at a block of this one (as a stale index
            // beside the file is), so a foreign index is named as such.
            let ix = command::load_index(file, p)?;
            command::verify_index(file, &ix, true).map_err(|e| e.with_path(p))?;
            Ok(Some(ix))
        }
        None => command::find_index(file, report),
    }
}

/// As the CLI, a BAM without its BGZF end-of-file block is reported
/// (a Python `UserWarning` with the CLI's text) by every call that reads it.
fn warn_if_truncated(bam: &LibBam, report: &dyn Report) {
    if !bam.has_eof_marker() {
        report.warning(fasthts::command::Warning::MissingEofMarker { path: bam.path().to_path_buf() });
    }
}

/// The reference names of the BAM at `path`.
pub(crate) fn reference_names(py: Python<'_>, path: &Path) -> PyResult<Vec<String>> {
    run_detached(py, |_| Ok(LibBam::open(path)?.header().references.iter().map(|r| r.name.clone()).collect()))
}

/// A genomic region: records of reference `ref_id` whose **start** position
/// lies in `[start, end)` (0-based, half-open; `None` = unbounded), or the
/// unplaced records (`ref_id == -1`). A record belongs to the region where it
/// starts, so tiling regions see every record exactly once.
#[pyclass(frozen, module = "fasthts._fasthts")]
#[derive(Clone)]
pub struct Region {
    /// Reference id (-1: the unplaced records).
    #[pyo3(get)]
    pub ref_id: i32,
    /// First position (0-based, inclusive), or None from the very start.
    #[pyo3(get)]
    pub start: Option<i64>,
    /// End position (exclusive), or None to the end of the reference.
    #[pyo3(get)]
    pub end: Option<i64>,
    /// Reference name, or None for the unplaced records.
    #[pyo3(get)]
    pub contig: Option<String>,
}

impl Region {
    pub(crate) fn lib(&self) -> LibRegion {
        LibRegion { ref_id: self.ref_id, start: self.start.unwrap_or(i64::MIN), end: self.end.unwrap_or(i64::MAX) }
    }

    pub(crate) fn from_lib(r: LibRegion, names: &[String]) -> Region {
        Region {
            ref_id: r.ref_id,
            start: (r.start != i64::MIN).then_some(r.start),
            end: (r.end != i64::MAX).then_some(r.end),
            contig: usize::try_from(r.ref_id).ok().and_then(|i| names.get(i).cloned()),
        }
    }
}

#[pymethods]
impl Region {
    #[new]
    #[pyo3(signature = (ref_id, start=None, end=None, contig=None))]
    fn new(ref_id: i32, start: Option<i64>, end: Option<i64>, contig: Option<String>) -> Self {
        Region { ref_id, start, end, contig }
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let r = slf.get();
        let args = (r.ref_id, r.start, r.end, r.contig.clone());
        PyTuple::new(slf.py(), [slf.get_type().into_any(), args.into_pyobject(slf.py())?.into_any()])
    }

    fn __repr__(&self) -> String {
        format!("Region({})", self.__str__())
    }

    /// samtools notation (1-based, inclusive): `chr1:1001-2000`, `chr1`, `*`.
    fn __str__(&self) -> String {
        let name = match (&self.contig, self.ref_id) {
            (_, r) if r < 0 => return "*".into(),
            (Some(n), _) => n.clone(),
            (None, r) => format!("#{r}"),
        };
        match (self.start, self.end) {
            (None, None) => name,
            (s, e) => format!("{name}:{}-{}", s.map_or(String::new(), |s| (s + 1).to_string()), e.map_or(String::new(), |e| e.to_string())),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Region>().is_ok_and(|o| o.get().lib() == self.lib())
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.lib().hash(&mut h);
        h.finish()
    }
}

/// Parses a region argument: a `Region`, a string in samtools notation
/// (`chr1`, `chr1:1000-2000` (1-based, inclusive), `chr1:1000`, `*`; see
/// `fasthts::region::Region::parse`), or a tuple `(contig, start, end)`
/// with 0-based half-open bounds (None for open ends).
pub(crate) fn region_arg(names: &[String], obj: &Bound<'_, PyAny>) -> PyResult<LibRegion> {
    let region = if let Ok(r) = obj.cast::<Region>() {
        r.get().lib()
    } else if let Ok(s) = obj.extract::<String>() {
        LibRegion::parse(&s, names).map_err(to_py)?
    } else if let Some((contig, start, end)) = region_triple(obj)? {
        let Some(contig) = contig else { return Ok(LibRegion::unplaced()) };
        let ref_id = region::reference_id(names, &contig).map_err(to_py)?;
        if let Some(s) = start.filter(|&s| s < 0) {
            return Err(PyValueError::new_err(format!("region start {s} is negative (starts are 0-based: 0 or more)")));
        }
        LibRegion { ref_id, start: start.unwrap_or(i64::MIN), end: end.unwrap_or(i64::MAX) }
    } else {
        return Err(PyTypeError::new_err(format!(
            "a region is a Region, a string such as 'chr1:1001-2000', or a tuple or list (contig, start, end), not {}",
            obj.get_type().name()?
        )));
    };
    region.checked(names.len()).map_err(to_py)
}

/// `(contig, start, end)` from a tuple or list of three (None: not one).
fn region_triple(obj: &Bound<'_, PyAny>) -> PyResult<Option<(Option<String>, Option<i64>, Option<i64>)>> {
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = obj.cast::<PyTuple>() {
        t.iter().collect()
    } else if let Ok(l) = obj.cast::<PyList>() {
        l.iter().collect()
    } else {
        return Ok(None);
    };
    let [contig, start, end] = <[Bound<'_, PyAny>; 3]>::try_from(items)
        .map_err(|_| PyValueError::new_err("a region tuple or list has three items: (contig, start, end)"))?;
    let bound = |v: &Bound<'_, PyAny>, what: &str| -> PyResult<Option<i64>> {
        if v.is_none() {
            return Ok(None);
        }
        if v.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyTypeError::new_err(format!("region {what} must be an int or None, not bool")));
        }
        v.extract::<i64>().map(Some).map_err(|_| {
            PyTypeError::new_err(format!(
                "region {what} must be an int or None, not {}",
                v.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })
    };
    let contig = if contig.is_none() {
        None
    } else {
        Some(contig.extract::<String>().map_err(|_| PyTypeError::new_err("region contig must be a str or None"))?)
    };
    Ok(Some((contig, bound(&start, "start")?, bound(&end, "end")?)))
}

/// A BAM file, memory-mapped, with its index; or a CRAM file, decoded by
/// htslib (`crate::cram_file`), with the same API; or SAM text, read whole
/// from its start, a bgzipped one by region through its index
/// (`crate::sam_file`).
#[pyclass(frozen, subclass, module = "fasthts._fasthts")]
pub struct BamFile {
    opened: Opened,
}

/// What a `BamFile` reads.
enum Opened {
    Bam(Arc<Shared>),
    Cram(Arc<CramFile>),
    Sam(Arc<SamFile>),
}

impl BamFile {
    fn names(&self) -> &Arc<Vec<String>> {
        match &self.opened {
            Opened::Bam(sh) => &sh.names,
            Opened::Cram(c) => &c.names,
            Opened::Sam(s) => &s.names,
        }
    }

    fn header(&self) -> &fasthts::bam::Header {
        match &self.opened {
            Opened::Bam(sh) => sh.bam.header(),
            Opened::Cram(c) => c.header(),
            Opened::Sam(s) => s.header(),
        }
    }

    fn file_path(&self) -> &Path {
        match &self.opened {
            Opened::Bam(sh) => sh.bam.path(),
            Opened::Cram(c) => c.path(),
            Opened::Sam(s) => s.path(),
        }
    }

    /// The truncation warning of every call that reads (see `warn_if_truncated`).
    fn eof_check(&self, py: Python<'_>) -> PyResult<()> {
        let w = crate::Warnings::default();
        match &self.opened {
            Opened::Bam(sh) => warn_if_truncated(&sh.bam, &w),
            Opened::Cram(c) => c.warn_if_truncated(&w),
            Opened::Sam(s) => s.warn_if_truncated(&w),
        }
        w.issue(py)
    }

    /// For SAM, the bgzipped file and its index a region query reads
    /// (other SAM, or one without an index, refused: `SamFile::regions`).
    fn sam_regions(&self, py: Python<'_>) -> PyResult<Option<(Arc<SamGzRegions>, Arc<Index>)>> {
        match &self.opened {
            Opened::Sam(s) => run_detached(py, |w| s.regions(w)).map(Some),
            _ => Ok(None),
        }
    }
}

/// The FASTA of a CRAM: `reference=`, or pysam's name for it,
/// `reference_filename=` (not both, unless the same).
fn reference_arg(reference: Option<FsPath>, reference_filename: Option<FsPath>) -> PyResult<Option<PathBuf>> {
    match (reference.map(|p| p.0), reference_filename.map(|p| p.0)) {
        (Some(a), Some(b)) if a != b => {
            Err(PyValueError::new_err("give the reference once: reference= and reference_filename= name different files"))
        }
        (a, b) => Ok(a.or(b)),
    }
}

#[pymethods]
impl BamFile {
    #[new]
    #[pyo3(signature = (path, index=None, reference=None, reference_filename=None))]
    fn new(
        py: Python<'_>,
        path: FsPath,
        index: Option<FsPath>,
        reference: Option<FsPath>,
        reference_filename: Option<FsPath>,
    ) -> PyResult<Self> {
        let index = index.map(|p| p.0);
        let reference = reference_arg(reference, reference_filename)?;
        let opened = run_detached(py, |w| {
            // Only a regular file is looked at: a pipe's data would be
            // consumed (`Shared::open` refuses it unread).
            if std::fs::metadata(&*path).is_ok_and(|m| m.is_file()) {
                let peeked = fasthts::input::peek(&path)?;
                if peeked.format() == fasthts::input::Format::Cram {
                    drop(peeked);
                    let c = CramFile::open(&path, index.clone(), reference.clone())?;
                    c.warn_if_truncated(w);
                    return Ok(Opened::Cram(Arc::new(c)));
                }
                if is_sam_text(peeked.format()) {
                    let s = SamFile::open(peeked, &path, index.clone(), w)?;
                    s.warn_if_truncated(w);
                    return Ok(Opened::Sam(Arc::new(s)));
                }
            }
            let shared = Shared::open(&path, index.clone())?;
            warn_if_truncated(&shared.bam, w);
            // An index given is loaded now: a missing or foreign one fails here.
            if index.is_some() {
                shared.index(w)?;
            }
            Ok(Opened::Bam(Arc::new(shared)))
        })?;
        Ok(BamFile { opened })
    }

    /// The path the file was opened with.
    #[getter]
    fn path(&self) -> String {
        self.file_path().display().to_string()
    }

    /// Whether the file is CRAM (read through htslib) rather than BAM.
    #[getter]
    fn is_cram(&self) -> bool {
        matches!(self.opened, Opened::Cram(_))
    }

    /// Whether the file is SAM text (plain, bgzipped or gzip-compressed):
    /// read whole from its start; regions only of a bgzipped one with an
    /// index (CSI or BAI).
    #[getter]
    fn is_sam(&self) -> bool {
        matches!(self.opened, Opened::Sam(_))
    }

    /// `[(name, length), ...]` in reference-id order.
    #[getter]
    fn references(&self) -> Vec<(String, u32)> {
        self.header().references.iter().map(|r| (r.name.clone(), r.len)).collect()
    }

    /// The SAM header text as `samtools view -H` prints it: with `@SQ`
    /// lines made from the references when the text has none.
    #[getter]
    fn header_text(&self) -> PyResult<String> {
        let mut out = Vec::new();
        fasthts::sam::format_header(self.header(), &mut out).map_err(to_py)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Whether an index file is beside the file (or was given); without
    /// one, region queries build the index in memory first (a BAM or
    /// CRAM) or are refused (SAM).
    #[getter]
    fn has_index(&self) -> bool {
        match &self.opened {
            Opened::Bam(sh) => sh.has_index_file(),
            Opened::Cram(c) => c.has_index_file(),
            Opened::Sam(s) => s.regions.as_ref().is_some_and(|r| r.has_index_file()),
        }
    }

    /// Reference id of `name`.
    fn tid(&self, name: &str) -> PyResult<i32> {
        self.names().iter().position(|n| n == name).map(|i| i as i32).ok_or_else(|| PyKeyError::new_err(name.to_string()))
    }

    /// Regions tiling every reference with records, plus the unplaced
    /// records: about `region_bytes` compressed bytes each (from the index;
    /// a CRAM's from its containers), or `window` bases each when given.
    #[pyo3(signature = (region_bytes=REGION_BYTES, window=None))]
    fn plan(&self, py: Python<'_>, region_bytes: u64, window: Option<u64>) -> PyResult<Vec<Region>> {
        let plan = match window {
            Some(w) => Plan::Windows(w),
            None => Plan::BalancedBytes(region_bytes),
        };
        let regions = match &self.opened {
            // A plan tiles every reference the index has records on: only
            // an index of the whole file gives every record a region.
            Opened::Bam(sh) => run_detached(py, |w| Ok(region::plan(&sh.bam, &*sh.whole_file_index(w)?, plan)))?,
            Opened::Cram(c) => run_detached(py, |_| c.plan(plan))?,
            Opened::Sam(s) => run_detached(py, |w| {
                let (sam, _) = s.regions(w)?;
                Ok(region::plan(&sam.file, &*sam.whole_file_index(w)?, plan))
            })?,
        };
        Ok(regions.into_iter().map(|r| Region::from_lib(r, self.names())).collect())
    }

    /// Parses a region argument into a `Region`.
    fn region(&self, region: &Bound<'_, PyAny>) -> PyResult<Region> {
        Ok(Region::from_lib(region_arg(self.names(), region)?, self.names()))
    }

    /// Iterates the records starting in `region` (all records, in file
    /// order, when None) as `Record` objects; with `overlap=True`, the
    /// records overlapping `region` (pysam's and samtools' rule, the end
    /// from the CIGAR) instead.
    #[pyo3(signature = (region=None, overlap=false))]
    fn fetch(&self, py: Python<'_>, region: Option<&Bound<'_, PyAny>>, overlap: bool) -> PyResult<RecordIter> {
        self.eof_check(py)?;
        let sam_regions = if region.is_some() { self.sam_regions(py)? } else { None };
        let names = self.names().clone();
        let sh = match &self.opened {
            Opened::Bam(sh) => sh.clone(),
            Opened::Sam(_) if region.is_some() => {
                let (sam, ix) = sam_regions.expect("a SAM's regions, or refused above");
                let r = region_arg(&names, region.expect("checked"))?;
                let source = crate::alignment::sam_gz_source(sam, ix, r, overlap);
                return Ok(RecordIter::from_source(names, source, None));
            }
            Opened::Sam(s) => {
                let reader = run_detached(py, |_| s.records())?;
                let source = Source::Sam { reader, path: s.path().to_path_buf() };
                return Ok(RecordIter::from_source(names, source, None));
            }
            Opened::Cram(c) => {
                let c = c.clone();
                let (source, start_in) = match region {
                    None => (Source::Cram(Box::new(run_detached(py, |_| c.record_reader())?)), None),
                    Some(region) => {
                        let r = region_arg(&names, region)?;
                        let query = run_detached(py, |_| c.record_query())?;
                        let (beg, end) = if r.ref_id < 0 { (0, 0) } else { (r.start.max(0), r.end) };
                        let source =
                            Source::CramRegions { query: Box::new(query), queries: VecDeque::from([(r.ref_id, beg, end)]), started: false };
                        (source, (!overlap).then_some(r))
                    }
                };
                return Ok(RecordIter::from_source(names, source, start_in));
            }
        };
        let Some(region) = region else {
            let next = Some(sh.bam.first_record_offset());
            return Ok(RecordIter {
                shared: Some(sh),
                names,
                region: None,
                next,
                following: None,
                buf: VecDeque::new(),
                source: None,
                starting_in: None,
            });
        };
        let r = region_arg(&sh.names, region)?;
        if overlap {
            let index = run_detached(py, |w| sh.index(w))?;
            let source = crate::alignment::overlap_source(sh.clone(), index, r);
            return Ok(RecordIter::from_source(names, source, None));
        }
        let (start, following) = run_detached(py, |w| {
            let ix = sh.index(w)?;
            let span = region::query_span(&sh.bam, &ix, r, r.start);
            Ok((span.map(|(start, _)| start), span.and_then(|(_, following)| following)))
        })?;
        Ok(RecordIter {
            shared: Some(sh),
            names,
            region: Some(r),
            next: start,
            following,
            buf: VecDeque::new(),
            source: None,
            starting_in: None,
        })
    }

    /// The records starting in `region` (the whole file when None) as
    /// columns: `{name: Column}`; `fasthts.BamFile.columns` wraps them as
    /// numpy arrays (without a copy). The whole file is read region by region
    /// on `threads` threads; the GIL is released throughout.
    /// `piece_bytes`: compressed bytes per piece when a region is read on
    /// several threads (for tests; `PIECE_BYTES` when None; a CRAM's
    /// pieces are its containers).
    #[pyo3(signature = (region=None, threads=None, piece_bytes=None))]
    fn _columns<'py>(
        &self,
        py: Python<'py>,
        region: Option<&Bound<'py, PyAny>>,
        threads: Option<i64>,
        piece_bytes: Option<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let threads = threads_arg(threads)?;
        self.eof_check(py)?;
        let sam_regions = if region.is_some() { self.sam_regions(py)? } else { None };
        let region = region.map(|r| region_arg(self.names(), r)).transpose()?;
        let piece_bytes = piece_bytes.unwrap_or(PIECE_BYTES).max(1);
        let cols = match (&self.opened, region) {
            (Opened::Bam(sh), Some(r)) => run_detached(py, |w| {
                with_threads(threads, || {
                    let ix = sh.index(w)?;
                    region_columns(&sh.bam, &ix, r, piece_bytes)
                })
            })?,
            (Opened::Bam(sh), None) => run_detached(py, |w| with_threads(threads, || whole_file_columns(sh, w)))?,
            (Opened::Cram(c), Some(r)) => run_detached(py, |_| with_threads(threads, || c.region_columns(r)))?,
            (Opened::Cram(c), None) => run_detached(py, |_| with_threads(threads, || c.whole_file_columns()))?,
            (Opened::Sam(s), None) => {
                let mut warnings = Vec::new();
                let read = run_detached(py, |_| with_threads(threads, || s.whole_file_columns(&mut warnings)));
                crate::warn_texts(py, &warnings)?;
                read?
            }
            (Opened::Sam(_), Some(r)) => {
                let (sam, ix) = sam_regions.expect("a SAM's regions, or refused above");
                run_detached(py, |_| with_threads(threads, || region_columns(&sam.file, &ix, r, piece_bytes)))?
            }
        };
        cols.into_py(py)
    }

    /// As `_columns` for many regions, read in parallel: a list of dicts.
    #[pyo3(signature = (regions, threads=None))]
    fn _columns_many<'py>(&self, py: Python<'py>, regions: &Bound<'py, PyAny>, threads: Option<i64>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let threads = threads_arg(threads)?;
        self.eof_check(py)?;
        let sam_regions = self.sam_regions(py)?;
        let mut rs = Vec::new();
        for r in regions.try_iter()? {
            rs.push(region_arg(self.names(), &r?)?);
        }
        let all = match &self.opened {
            Opened::Bam(sh) => run_detached(py, |w| {
                with_threads(threads, || {
                    let ix = sh.index(w)?;
                    read_columns(&sh.bam, &ix, &rs)
                })
            })?,
            Opened::Cram(c) => run_detached(py, |_| with_threads(threads, || c.regions_columns(&rs)))?,
            Opened::Sam(_) => {
                let (sam, ix) = sam_regions.expect("a SAM's regions, or refused above");
                run_detached(py, |_| with_threads(threads, || read_columns(&sam.file, &ix, &rs)))?
            }
        };
        all.into_iter().map(|c| c.into_py(py)).collect()
    }

    fn __repr__(&self) -> String {
        format!("BamFile({:?})", self.file_path().display().to_string())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        // Pickled by path: a worker opens (maps) the file itself.
        let args = match &slf.get().opened {
            Opened::Bam(sh) => (sh.bam.path().to_path_buf(), sh.index.given.clone(), None),
            Opened::Cram(c) => (c.path().to_path_buf(), c.index_path().map(Path::to_path_buf), c.reference().map(Path::to_path_buf)),
            Opened::Sam(s) => (s.path().to_path_buf(), s.regions.as_ref().and_then(|r| r.index.given.clone()), None),
        };
        PyTuple::new(slf.py(), [slf.get_type().into_any(), args.into_pyobject(slf.py())?.into_any()])
    }
}

/// Per-record columns of a region.
pub(crate) struct Columns {
    tid: ColVec<i32>,
    pos: ColVec<i32>,
    end: ColVec<i64>,
    flag: ColVec<u16>,
    mapq: ColVec<u8>,
    len: ColVec<i32>,
    mate_tid: ColVec<i32>,
    mate_pos: ColVec<i32>,
    tlen: ColVec<i32>,
}

impl Columns {
    /// Empty columns with room for `n` records.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Columns {
            tid: ColVec::with_capacity(n),
            pos: ColVec::with_capacity(n),
            end: ColVec::with_capacity(n),
            flag: ColVec::with_capacity(n),
            mapq: ColVec::with_capacity(n),
            len: ColVec::with_capacity(n),
            mate_tid: ColVec::with_capacity(n),
            mate_pos: ColVec::with_capacity(n),
            tlen: ColVec::with_capacity(n),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, r: &RecordRef<'_>) {
        self.tid.push(r.ref_id());
        self.pos.push(r.pos());
        self.end.push(r.end_pos());
        self.flag.push(r.flag());
        self.mapq.push(r.mapq());
        self.len.push(r.seq_len() as i32);
        self.mate_tid.push(r.mate_ref_id());
        self.mate_pos.push(r.mate_pos());
        self.tlen.push(r.template_len());
    }

    /// Empties the columns, keeping their memory.
    fn clear(&mut self) {
        for len in [
            &mut self.tid.len,
            &mut self.pos.len,
            &mut self.end.len,
            &mut self.flag.len,
            &mut self.mapq.len,
            &mut self.len.len,
            &mut self.mate_tid.len,
            &mut self.mate_pos.len,
            &mut self.tlen.len,
        ] {
            *len = 0;
        }
    }

    /// Appends the records of `other`.
    fn append(&mut self, other: &Columns) {
        self.tid.extend_from_slice(other.tid.as_slice());
        self.pos.extend_from_slice(other.pos.as_slice());
        self.end.extend_from_slice(other.end.as_slice());
        self.flag.extend_from_slice(other.flag.as_slice());
        self.mapq.extend_from_slice(other.mapq.as_slice());
        self.len.extend_from_slice(other.len.as_slice());
        self.mate_tid.extend_from_slice(other.mate_tid.as_slice());
        self.mate_pos.extend_from_slice(other.mate_pos.as_slice());
        self.tlen.extend_from_slice(other.tlen.as_slice());
    }

    /// The concatenation of `parts`, in order: a single part is taken as
    /// it is, several are copied once into columns of their total length.
    pub(crate) fn concat(mut parts: Vec<Columns>) -> Columns {
        if parts.len() == 1 {
            return parts.pop().expect("one part");
        }
        let n = parts.iter().map(|c| c.tid.len()).sum();
        let mut out = Columns::with_capacity(n);
        for c in &parts {
            out.append(c);
        }
        out
    }

    /// `{name: Column}`, handing each column's memory over to Python.
    fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        let put = |name: &str, data: ColumnData| d.set_item(name, Column { data });
        put("tid", ColumnData::I32(self.tid))?;
        put("pos", ColumnData::I32(self.pos))?;
        put("end", ColumnData::I64(self.end))?;
        put("flag", ColumnData::U16(self.flag))?;
        put("mapq", ColumnData::U8(self.mapq))?;
        put("len", ColumnData::I32(self.len))?;
        put("mate_tid", ColumnData::I32(self.mate_tid))?;
        put("mate_pos", ColumnData::I32(self.mate_pos))?;
        put("tlen", ColumnData::I32(self.tlen))?;
        Ok(d)
    }
}

/// One column of a region's records, handed to numpy without a copy: numpy
/// reads `__array_interface__` and keeps this object alive as the array's
/// base, so the memory the records were written into is the array's memory.
#[pyclass(frozen, module = "fasthts._fasthts")]
pub struct Column {
    data: ColumnData,
}

/// A column's values (the element type is the column's dtype).
enum ColumnData {
    U8(ColVec<u8>),
    U16(ColVec<u16>),
    I32(ColVec<i32>),
    I64(ColVec<i64>),
}

#[pymethods]
impl Column {
    /// numpy's array interface (version 3): a writable 1-d array of the
    /// column's values, little-endian or big-endian as the machine.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (addr, len, code, size) = match &self.data {
            ColumnData::U8(v) => (v.addr(), v.len(), 'u', 1),
            ColumnData::U16(v) => (v.addr(), v.len(), 'u', 2),
            ColumnData::I32(v) => (v.addr(), v.len(), 'i', 4),
            ColumnData::I64(v) => (v.addr(), v.len(), 'i', 8),
        };
        let order = if size == 1 {
            '|'
        } else if cfg!(target_endian = "little") {
            '<'
        } else {
            '>'
        };
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", (len,))?;
        d.set_item("typestr", format!("{order}{code}{size}"))?;
        // (address, read-only): numpy may write to the values.
        d.set_item("data", (addr, false))?;
        Ok(d)
    }

    fn __len__(&self) -> usize {
        match &self.data {
            ColumnData::U8(v) => v.len(),
            ColumnData::U16(v) => v.len(),
            ColumnData::I32(v) => v.len(),
            ColumnData::I64(v) => v.len(),
        }
    }
}

/// A growable column buffer: a `Vec` whose memory, once handed to numpy
/// (see `Column`), is written by Python through a raw address. It is kept
/// as raw parts so that Rust holds no reference to memory Python mutates.
struct ColVec<T> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
    cap: usize,
}

// SAFETY: a ColVec owns its allocation exclusively, like the Vec it came
// from; Rust reads it only through `&mut self` (before the hand-over) or
// not at all (after: only its address is given out).
unsafe impl<T: Send> Send for ColVec<T> {}
unsafe impl<T: Sync> Sync for ColVec<T> {}

/// Columns of at least this many bytes are backed by transparent huge
/// pages where the kernel offers them: a column is written once, front to
/// back, and 4 KiB page faults cost ~10 % of the time of a region read.
const HUGE_PAGE_BYTES: usize = 4 << 20;

impl<T: Copy> ColVec<T> {
    fn with_capacity(n: usize) -> Self {
        Self::from_vec(Vec::with_capacity(n))
    }

    fn from_vec(v: Vec<T>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        let s = ColVec { ptr: std::ptr::NonNull::new(v.as_mut_ptr()).expect("Vec pointers are not null"), len: v.len(), cap: v.capacity() };
        s.advise_huge_pages();
        s
    }

    fn into_vec(self) -> Vec<T> {
        let s = std::mem::ManuallyDrop::new(self);
        // SAFETY: the parts came from a Vec<T> and were kept consistent.
        unsafe { Vec::from_raw_parts(s.ptr.as_ptr(), s.len, s.cap) }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    #[inline]
    fn push(&mut self, x: T) {
        if self.len == self.cap {
            self.grow();
        }
        // SAFETY: len < cap after grow.
        unsafe { self.ptr.as_ptr().add(self.len).write(x) };
        self.len += 1;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut v = std::mem::replace(self, ColVec::from_vec(Vec::new())).into_vec();
        v.reserve(v.capacity().max(1024));
        *self = ColVec::from_vec(v);
    }

    /// The values written so far.
    fn as_slice(&self) -> &[T] {
        // SAFETY: the first len values are initialised; callers use this
        // only before the column is handed to Python.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Appends `values` (capacity permitting a single copy).
    fn extend_from_slice(&mut self, values: &[T]) {
        if self.cap - self.len < values.len() {
            let mut v = std::mem::replace(self, ColVec::from_vec(Vec::new())).into_vec();
            v.reserve(values.len());
            *self = ColVec::from_vec(v);
        }
        // SAFETY: capacity checked above; the regions do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), self.ptr.as_ptr().add(self.len), values.len()) };
        self.len += values.len();
    }

    fn advise_huge_pages(&self) {
        let bytes = self.cap * std::mem::size_of::<T>();
        if bytes >= HUGE_PAGE_BYTES {
            // SAFETY: the column's allocation, `cap` elements long.
            unsafe { fasthts_io::memory::advise_huge_pages(self.addr() as *const u8, bytes) };
        }
    }
}

impl<T> Drop for ColVec<T> {
    fn drop(&mut self) {
        // SAFETY: as `into_vec`; T is a plain integer (no destructor).
        drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap) });
    }
}

/// About how many records `r` holds, from the index: the reference's record
/// count (or the unplaced count), scaled by the share of the reference's
/// compressed bytes the region spans, with a margin. Only sizes buffers
/// (they grow when it is short), so it need not be exact.
fn estimate_records<F: Indexed + ?Sized>(bam: &F, ix: &Index, r: LibRegion) -> usize {
    if r.ref_id < 0 {
        return ix.n_no_coor().unwrap_or(0) as usize;
    }
    let tid = r.ref_id as usize;
    let (Some(span), Some((mapped, unmapped))) = (ix.reference_span(tid), ix.mapped_unmapped(tid)) else { return 0 };
    let n = mapped + unmapped;
    let (first, last) = (span.start.compressed(), span.end.compressed());
    let at = |pos: i64, default: u64| region::start_offset(bam, ix, r.ref_id, pos).map_or(default, |v| v.compressed()).clamp(first, last);
    let from = if r.start == i64::MIN { first } else { at(r.start, first) };
    let to = if r.end == i64::MAX { last } else { at(r.end, last) };
    if last <= first {
        return n as usize;
    }
    // Index offsets are block starts: a block (<= 64 KiB) of slack at each
    // end, and 10 % for uneven density.
    let share = (to.saturating_sub(from) + (128 << 10)) as f64 / (last - first) as f64;
    ((n as f64 * share * 1.1) as u64).min(n) as usize
}

/// A file whose regions are read through a BAI or CSI: a mapped BAM or a
/// bgzipped SAM (`fasthts::region::sam`). Columns are read from either
/// the same way.
pub(crate) trait RegionRead: Indexed + Sync {
    /// Calls `f` on each record of `region` (by start position) in file
    /// order, read from `start` (None: the index has no records there);
    /// `following`: where what follows the region begins
    /// (`region::following_start`). Errors name the file.
    fn for_each_in<P: FnMut(&RecordRef<'_>)>(
        &self,
        region: LibRegion,
        start: Option<VirtualOffset>,
        following: Option<VirtualOffset>,
        f: P,
    ) -> Result<(), fasthts::Error>;
}

impl RegionRead for LibBam {
    fn for_each_in<P: FnMut(&RecordRef<'_>)>(
        &self,
        region: LibRegion,
        start: Option<VirtualOffset>,
        following: Option<VirtualOffset>,
        f: P,
    ) -> Result<(), fasthts::Error> {
        let Some(start) = start else { return Ok(()) };
        RegionReader::new(self, region, start, following)?
            .for_each_record(f)
            .map_err(|e| fasthts::Error::from(e).with_path(self.path()))
    }
}

impl RegionRead for SamGzFile {
    fn for_each_in<P: FnMut(&RecordRef<'_>)>(
        &self,
        region: LibRegion,
        start: Option<VirtualOffset>,
        following: Option<VirtualOffset>,
        f: P,
    ) -> Result<(), fasthts::Error> {
        let Some(start) = start else { return Ok(()) };
        SamRegionReader::new(self, region, start, following)?.for_each_record(f)
    }
}

/// The columns of each of `regions`, read in parallel on the current pool,
/// in the order given; the error of the first failing region (in that
/// order), as `region::scatter`.
fn read_columns<F: RegionRead>(file: &F, ix: &Index, regions: &[LibRegion]) -> Result<Vec<Columns>, fasthts::Error> {
    let read: Vec<Result<Columns, fasthts::Error>> = regions
        .par_iter()
        .map(|r| {
            let mut c = Columns::with_capacity(estimate_records(file, ix, *r));
            file.for_each_in(*r, region::region_start(file, ix, *r), region::following_start(file, ix, *r), |rec| c.push(rec))?;
            Ok(c)
        })
        .collect();
    read.into_iter().collect()
}

/// Compressed bytes per piece when one region is read on several threads.
/// Small pieces balance the threads' work; each piece start costs an index
/// lookup and re-inflates the block the previous piece ends in (see
/// `fasthts::region::region_start`). chr1 of the bench BAM on 2 threads (callgrind): 1 MB
/// pieces 2.3 % more instructions than 4 MB ones, 16 MB 0.5 % fewer (but
/// only 10 pieces to share).
const PIECE_BYTES: u64 = 4 << 20;

/// One region's columns, read on the current pool: the region is cut at
/// the boundaries of the plan of pieces of about `piece_bytes` (regions are
/// start-based, so the pieces partition its records), the pieces read in
/// parallel and their columns appended in order.
fn region_columns<F: RegionRead>(file: &F, ix: &Index, r: LibRegion, piece_bytes: u64) -> Result<Columns, fasthts::Error> {
    if r.ref_id < 0 || rayon::current_num_threads() == 1 {
        return Ok(Columns::concat(read_columns(file, ix, &[r])?));
    }
    let mut pieces = Vec::new();
    let mut start = r.start;
    for cut in region::plan(file, ix, Plan::BalancedBytes(piece_bytes)).iter().filter(|p| p.ref_id == r.ref_id).map(|p| p.end) {
        if cut > start && cut < r.end {
            pieces.push(LibRegion { ref_id: r.ref_id, start, end: cut });
            start = cut;
        }
    }
    pieces.push(LibRegion { ref_id: r.ref_id, start, end: r.end });
    // Each piece starts where the records before it provably end (not at
    // the linear index's offset, which lies before any read overlapping
    // the piece's first 16 kb window: with spliced reads spanning kilobases,
    // that re-read a third of a window per piece, 8 % more inflating on
    // chr1 of the bench BAM).
    let starts: Vec<Option<VirtualOffset>> = pieces.iter().map(|p| region::region_start(file, ix, *p)).collect();
    // What follows the region bounds its last piece's data.
    let after = region::following_start(file, ix, r);
    // A buffer that held an earlier piece is emptied first.
    let read_piece = |i: usize, c: &mut Columns| -> Result<(), fasthts::Error> {
        c.clear();
        // The next piece's start bounds this one's data.
        let following = starts.get(i + 1).copied().unwrap_or(after);
        file.for_each_in(pieces[i], starts[i], following, |rec| c.push(rec))
    };
    // Pieces are read in parallel into buffers that are appended in order
    // and reused: the output is the only large memory written.
    let mut out = Columns::with_capacity(estimate_records(file, ix, r));
    let new_buffer = |i: usize| Columns::with_capacity(estimate_records(file, ix, pieces[i]));
    fasthts::gather::fill_in_order(pieces.len(), new_buffer, read_piece, |c| {
        out.append(c);
        Ok(())
    })?;
    Ok(out)
}

/// Every record's columns, in file order, read as flagstat reads a file
/// (`fasthts::command::by_index_or_sequentially`): through the index file
/// in parallel, or sequentially when there is none or it turns out not to
/// describe the file.
fn whole_file_columns(sh: &Shared, report: &dyn Report) -> Result<Columns, fasthts::Error> {
    let index = if sh.has_index_file() { sh.index(report).ok() } else { None };
    let by_regions = |ix: &Index| {
        let parts = region::scatter_all(&sh.bam, ix, Plan::BalancedBytes(REGION_BYTES), |r, rd| {
            let mut c = Columns::with_capacity(estimate_records(&sh.bam, ix, *r));
            while let Some(r) = rd.next_record()? {
                c.push(&r);
            }
            Ok(c)
        })?;
        Ok(Columns::concat(parts))
    };
    let sequentially = || {
        let mut c = Columns::with_capacity(0);
        fasthts::bam::scan(&sh.bam, |r, _| {
            c.push(r);
            Ok(())
        })?;
        Ok(c)
    };
    command::by_index_or_sequentially(&sh.bam, index.as_deref(), by_regions, sequentially, report)
}

/// Iterator over a region's records (or the whole file's) as `Record`s,
/// read `BATCH` at a time with the GIL released.
#[pyclass(module = "fasthts._fasthts")]
pub struct RecordIter {
    /// The BAM read by offsets (None: `source` is read instead).
    shared: Option<Arc<Shared>>,
    names: Arc<Vec<String>>,
    /// None: the whole file in file order.
    region: Option<LibRegion>,
    /// Where the next batch starts; None when done.
    next: Option<VirtualOffset>,
    /// Where what follows the region starts (see `region::following_start`).
    following: Option<VirtualOffset>,
    buf: VecDeque<Vec<u8>>,
    /// A query read instead: an overlap query on a BAM
    /// (`fetch(region, overlap=True)`), or a CRAM's records.
    source: Option<Mutex<Source>>,
    /// Of `source`'s records, only those starting in this region are
    /// kept (htslib's CRAM iterator gives those overlapping it).
    starting_in: Option<LibRegion>,
}

impl RecordIter {
    fn from_source(names: Arc<Vec<String>>, source: Source, starting_in: Option<LibRegion>) -> RecordIter {
        RecordIter {
            shared: None,
            names,
            region: None,
            next: None,
            following: None,
            buf: VecDeque::new(),
            source: Some(Mutex::new(source)),
            starting_in,
        }
    }
}

fn read_batch(
    sh: &Shared,
    region: Option<LibRegion>,
    start: VirtualOffset,
    following: Option<VirtualOffset>,
) -> Result<(VecDeque<Vec<u8>>, Option<VirtualOffset>), fasthts::Error> {
    let mut out = VecDeque::with_capacity(BATCH);
    let wrap = |e: fasthts::bam::BamError| fasthts::Error::from(e).with_path(sh.bam.path());
    match region {
        Some(region) => {
            let mut rd = RegionReader::new(&sh.bam, region, start, following)?;
            // Past BATCH, the records already inflated too: the next batch's
            // reader would inflate them again.
            while out.len() < BATCH || rd.next_is_loaded() {
                match rd.next_record().map_err(wrap)? {
                    Some(r) => out.push_back(r.as_bytes().to_vec()),
                    None => return Ok((out, None)),
                }
            }
            Ok((out, Some(rd.record_end())))
        }
        None => {
            let mut rd = sh.bam.records_from(start)?;
            while out.len() < BATCH || rd.next_is_loaded() {
                match rd.next_record().map_err(wrap)? {
                    Some(r) => out.push_back(r.as_bytes().to_vec()),
                    None => return Ok((out, None)),
                }
            }
            Ok((out, Some(rd.record_end())))
        }
    }
}

#[pymethods]
impl RecordIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(mut slf: PyRefMut<'_, Self>, py: Python<'_>) -> PyResult<Option<Record>> {
        while slf.buf.is_empty() && slf.source.is_some() {
            let starting_in = slf.starting_in;
            let source = slf.source.as_mut().expect("checked").get_mut().unwrap_or_else(|p| p.into_inner());
            let mut warnings = Vec::new();
            let read = py.detach(|| {
                let mut batch = crate::alignment::next_records(source, &mut warnings)?;
                let ended = batch.is_empty();
                if let Some(region) = starting_in {
                    batch.retain(|r| starts_in(record_pos(r), region));
                }
                Ok::<_, fasthts::Error>((batch, ended))
            });
            crate::warn_texts(py, &warnings)?;
            match read {
                Ok((_, true)) => slf.source = None,
                // (A batch the filter emptied: the next one is read.)
                Ok((buf, false)) => slf.buf = buf,
                Err(e) => {
                    slf.source = None;
                    return Err(to_py(e));
                }
            }
        }
        if slf.buf.is_empty() && slf.source.is_none() {
            let Some(start) = slf.next else { return Ok(None) };
            let Some(sh) = slf.shared.clone() else { return Ok(None) };
            let (region, following) = (slf.region, slf.following);
            let (buf, next) = match py.detach(|| read_batch(&sh, region, start, following)) {
                Ok(v) => v,
                Err(e) => {
                    slf.next = None;
                    return Err(to_py(e));
                }
            };
            slf.buf = buf;
            slf.next = next;
        }
        let names = slf.names.clone();
        Ok(slf.buf.pop_front().map(|data| Record { data, names }))
    }
}

/// The POS of BAM record bytes (validated when read).
fn record_pos(data: &[u8]) -> i64 {
    i64::from(i32::from_le_bytes([data[4], data[5], data[6], data[7]]))
}

/// One BAM record (a copy of its bytes), decoded on access.
#[pyclass(frozen, module = "fasthts._fasthts")]
pub struct Record {
    data: Vec<u8>,
    names: Arc<Vec<String>>,
}

impl Record {
    fn r(&self) -> RecordRef<'_> {
        // The bytes were validated when the record was read.
        RecordRef::new(&self.data, self.names.len()).expect("record validated when read")
    }
}

fn aux_value<'py>(py: Python<'py>, v: AuxValue<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        AuxValue::Char(c) => (c as char).to_string().into_pyobject(py)?.into_any(),
        AuxValue::Int(i) => i.into_pyobject(py)?.into_any(),
        AuxValue::Float(f) => f64::from(f).into_pyobject(py)?.into_any(),
        AuxValue::Double(f) => f.into_pyobject(py)?.into_any(),
        AuxValue::String(s) | AuxValue::Hex(s) => String::from_utf8_lossy(s).into_pyobject(py)?.into_any(),
        AuxValue::Array { subtype, count, bytes } => {
            let size = match subtype {
                b'c' | b'C' => 1,
                b's' | b'S' => 2,
                _ => 4,
            };
            let list = PyList::empty(py);
            for i in 0..count {
                let b = &bytes[i * size..(i + 1) * size];
                let item = match subtype {
                    b'c' => (b[0] as i8).into_pyobject(py)?.into_any(),
                    b'C' => b[0].into_pyobject(py)?.into_any(),
                    b's' => i16::from_le_bytes([b[0], b[1]]).into_pyobject(py)?.into_any(),
                    b'S' => u16::from_le_bytes([b[0], b[1]]).into_pyobject(py)?.into_any(),
                    b'i' => i32::from_le_bytes([b[0], b[1], b[2], b[3]]).into_pyobject(py)?.into_any(),
                    b'I' => u32::from_le_bytes([b[0], b[1], b[2], b[3]]).into_pyobject(py)?.into_any(),
                    _ => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])).into_pyobject(py)?.into_any(),
                };
                list.append(item)?;
            }
            list.into_any()
        }
    })
}

#[pymethods]
impl Record {
    /// Read name (QNAME).
    #[getter]
    fn name(&self) -> String {
        String::from_utf8_lossy(self.r().name()).into_owned()
    }
    /// FLAG.
    #[getter]
    fn flag(&self) -> u16 {
        self.r().flag()
    }
    /// Reference id (-1: none).
    #[getter]
    fn tid(&self) -> i32 {
        self.r().ref_id()
    }
    /// Reference name, or None.
    #[getter(r#ref)]
    fn reference(&self) -> Option<String> {
        usize::try_from(self.r().ref_id()).ok().and_then(|i| self.names.get(i).cloned())
    }
    /// 0-based leftmost position (-1: none).
    #[getter]
    fn pos(&self) -> i32 {
        self.r().pos()
    }
    /// End position, exclusive, as htslib's `bam_endpos` (pos + 1 when
    /// unmapped or the CIGAR consumes no reference).
    #[getter]
    fn end(&self) -> i64 {
        self.r().end_pos()
    }
    /// Mapping quality.
    #[getter]
    fn mapq(&self) -> u8 {
        self.r().mapq()
    }
    /// CIGAR as `[(op, length), ...]` with pysam's op codes (M=0 I=1 D=2
    /// N=3 S=4 H=5 P=6 '='=7 X=8 B=9); a CIGAR longer than 65535 ops is
    /// taken from the CG tag, as htslib does.
    #[getter]
    fn cigar(&self) -> Vec<(u8, u32)> {
        self.r().cigar().iter().map(|(op, len)| (op.code(), len)).collect()
    }
    /// CIGAR text ("" when there is none).
    #[getter]
    fn cigarstring(&self) -> String {
        self.r().cigar().iter().map(|(op, len)| format!("{len}{}", op.letter() as char)).collect()
    }
    /// Sequence ("" when absent).
    #[getter]
    fn seq(&self) -> String {
        let r = self.r();
        (0..r.seq_len()).map(|i| r.base(i) as char).collect()
    }
    /// Base qualities (phred values, not +33), or None when absent (0xff).
    #[getter]
    fn qual<'py>(&self, py: Python<'py>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        let q = self.r().qual();
        if q.is_empty() || q[0] == 0xff {
            return None;
        }
        Some(pyo3::types::PyBytes::new(py, q))
    }
    /// Mate's reference id.
    #[getter]
    fn mate_tid(&self) -> i32 {
        self.r().mate_ref_id()
    }
    /// Mate's position.
    #[getter]
    fn mate_pos(&self) -> i32 {
        self.r().mate_pos()
    }
    /// Template length (TLEN).
    #[getter]
    fn tlen(&self) -> i32 {
        self.r().template_len()
    }
    /// Auxiliary fields as `[(tag, value), ...]` in record order; arrays as
    /// lists, characters and hex strings as str.
    #[getter]
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let mut out = Vec::new();
        for t in self.r().aux().iter() {
            let (tag, v) = t.map_err(|_| err("malformed auxiliary field"))?;
            out.push((String::from_utf8_lossy(&tag).into_owned(), aux_value(py, v)?));
        }
        Ok(out)
    }
    /// The value of one tag; KeyError when absent.
    fn get_tag<'py>(&self, py: Python<'py>, tag: &str) -> PyResult<Bound<'py, PyAny>> {
        let b = tag.as_bytes();
        if b.len() != 2 {
            return Err(PyValueError::new_err(format!("invalid tag {tag:?}")));
        }
        match self.r().aux().find([b[0], b[1]]) {
            Some(v) => aux_value(py, v),
            None => Err(PyKeyError::new_err(tag.to_string())),
        }
    }
    /// The record's BAM bytes (without the 4-byte length).
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.data)
    }

    fn __repr__(&self) -> String {
        let r = self.r();
        format!(
            "Record(name={:?}, flag={}, ref={}, pos={}, mapq={}, cigar={:?})",
            String::from_utf8_lossy(r.name()),
            r.flag(),
            self.reference().map_or("None".to_string(), |n| format!("{n:?}")),
            r.pos(),
            r.mapq(),
            self.cigarstring()
        )
    }
}
