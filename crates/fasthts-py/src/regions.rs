//! Regions as Python gives them, and the file they are read from.
//!
//! A region string is read as `fasthts view` (and samtools) reads a region
//! argument (`fasthts::region::Region::parse_query`): `.` is the whole
//! file, `*` the unplaced records. [`Regions`] is the one way the package
//! reads a file by region: a `fasthts::region::indexed::IndexedFile`
//! opened under the library's index policy, when first asked (an index
//! given or lying beside the file is loaded by the caller at open).

use crate::to_py;
use fasthts::command::{locate_index, IndexLocation, Report};
use fasthts::cram::Fields;
use fasthts::region::indexed::{IndexedFile, IndexedOptions};
use fasthts::region::{self, Region as LibRegion};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Region>()?;
    m.add_function(wrap_pyfunction!(parse_region, m)?)?;
    Ok(())
}

/// The regions a region string names, as `fasthts view` reads it
/// (`fasthts::region::Region::parse_query`), each `(tid, start, stop)`,
/// 0-based half-open, open ends as 0 and the largest position: one, or
/// for `.` every reference, then the unplaced records (tid -1).
#[pyfunction]
#[pyo3(name = "_parse_region")]
fn parse_region(text: &str, names: Vec<String>) -> PyResult<Vec<(i32, i64, i64)>> {
    let regions = LibRegion::parse_query(text, &names).map_err(to_py)?;
    Ok(regions.into_iter().map(|r| (r.ref_id, r.start.max(0), r.end)).collect())
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

/// The regions a region argument names: a `Region`, a string read as
/// `fasthts view` reads a region (`chr1`, `chr1:1000-2000` (1-based,
/// inclusive), `chr1:1000`, `{chr:1}:5-9`, `*`; `.` for the whole file:
/// every reference, then the unplaced records), or a tuple or list
/// `(contig, start, end)` with 0-based half-open bounds (None for open
/// ends).
pub(crate) fn region_args(names: &[String], obj: &Bound<'_, PyAny>) -> PyResult<Vec<LibRegion>> {
    if let Ok(s) = obj.extract::<String>() {
        return LibRegion::parse_query(&s, names).map_err(to_py);
    }
    let region = if let Ok(r) = obj.cast::<Region>() {
        r.get().lib()
    } else if let Some((contig, start, end)) = region_triple(obj)? {
        let Some(contig) = contig else { return Ok(vec![LibRegion::unplaced()]) };
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
    Ok(vec![region.checked(names.len()).map_err(to_py)?])
}

/// The one region a region argument names (`region_args`); `.`, the
/// whole file, is no one region.
pub(crate) fn region_arg(names: &[String], obj: &Bound<'_, PyAny>) -> PyResult<LibRegion> {
    match region_args(names, obj)?[..] {
        [one] => Ok(one),
        _ => Err(PyValueError::new_err(
            "region \".\" is the whole file (every reference, then the unplaced records), not one region: read it with no region",
        )),
    }
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

/// A file read by region: an `IndexedFile` opened under the library's
/// index policy (`IndexedOptions`: the index given, else the one beside
/// the file, else built in memory or refused) when first asked, and kept.
pub(crate) struct Regions {
    path: PathBuf,
    options: IndexedOptions,
    cram: bool,
    opened: Mutex<Opened>,
}

#[derive(Default)]
struct Opened {
    file: Option<Arc<IndexedFile>>,
    /// `file`'s index is known to describe the whole file.
    whole: bool,
    /// A CRAM file decoding only what columns need.
    columns: Option<Arc<IndexedFile>>,
}

impl Regions {
    /// The file at `path` (a CRAM file if `cram`), to be opened as
    /// `options` say.
    pub(crate) fn new(path: &Path, options: IndexedOptions, cram: bool) -> Regions {
        Regions { path: path.to_path_buf(), options, cram, opened: Mutex::default() }
    }

    /// The index file given (`index=`; kept when pickled).
    pub(crate) fn given(&self) -> Option<&Path> {
        self.options.index.as_deref()
    }

    /// Whether an index file was given or lies beside the file (one older
    /// than the file included: used with a warning).
    pub(crate) fn has_index_file(&self) -> bool {
        match self.given() {
            Some(_) => true,
            None if self.cram => fasthts::cram::region::has_index(&self.path, None),
            None => matches!(locate_index(&self.path), IndexLocation::Found(_) | IndexLocation::Stale(_)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Opened> {
        self.opened.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open(&self, opened: &mut Opened, report: &dyn Report) -> Result<Arc<IndexedFile>, fasthts::Error> {
        if let Some(file) = &opened.file {
            return Ok(file.clone());
        }
        let file = Arc::new(IndexedFile::open(&self.path, &self.options, report)?);
        opened.file = Some(file.clone());
        Ok(file)
    }

    /// The file with its index, opened now if not yet (its index loaded
    /// and checked, or made in memory): for region queries.
    pub(crate) fn file(&self, report: &dyn Report) -> Result<Arc<IndexedFile>, fasthts::Error> {
        self.open(&mut self.lock(), report)
    }

    /// The file for a job that reads every placed record through the
    /// index (a plan, pysam's `fetch()`): its index checked, once, to
    /// describe the whole file; one that does not (made for a prefix of
    /// the file) is reported and replaced, for every later use too, by one
    /// made in memory.
    pub(crate) fn whole_file(&self, report: &dyn Report) -> Result<Arc<IndexedFile>, fasthts::Error> {
        let mut opened = self.lock();
        let file = self.open(&mut opened, report)?;
        if opened.whole {
            return Ok(file);
        }
        let file = match file.for_whole_file(report)? {
            Some(whole) => Arc::new(whole),
            None => file,
        };
        (opened.file, opened.whole) = (Some(file.clone()), true);
        Ok(file)
    }

    /// The file for columns: a CRAM file's records decoded only as far as
    /// columns need; other files as `file`.
    pub(crate) fn columns_file(&self, report: &dyn Report) -> Result<Arc<IndexedFile>, fasthts::Error> {
        let mut opened = self.lock();
        let file = self.open(&mut opened, report)?;
        if let Some(columns) = &opened.columns {
            return Ok(columns.clone());
        }
        let Some(columns) = file.with_cram_fields(Fields::Columns) else { return Ok(file) };
        let columns = Arc::new(columns);
        opened.columns = Some(columns.clone());
        Ok(columns)
    }
}
