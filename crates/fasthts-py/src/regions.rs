//! Regions as Python gives them.
//!
//! A region string is read as `fasthts view` (and samtools) reads a region
//! argument (`fasthts::region::Region::parse_query`): `.` is the whole
//! file, `*` the unplaced records. Names are looked up in the file's one
//! map (`fasthts::sam::RefNames`: `@SQ SN:` names and `AN:` alternatives,
//! as htslib and pysam look them up). The file they are read from is the
//! library's `fasthts::alignment_file::AlignmentFile`.

use crate::to_py;
use fasthts::bam::{Header, Reference};
use fasthts::region::{self, Region as LibRegion};
use fasthts::sam::RefNames as LibRefNames;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Arc;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Region>()?;
    m.add_class::<RefNames>()?;
    Ok(())
}

/// A header's reference names → ids (`fasthts::sam::RefNames`, built
/// once): an `@SQ SN:` name or an `AN:` alternative of its text, as
/// htslib's `sam_hdr_name2tid` (pysam's `get_tid`) looks them up. An
/// `AlignmentFile`'s is its file's; a header made in Python builds one
/// from its text and names.
#[pyclass(frozen, module = "fasthts._fasthts", name = "_RefNames")]
pub struct RefNames {
    names: Arc<LibRefNames>,
}

impl RefNames {
    pub(crate) fn of(names: Arc<LibRefNames>) -> RefNames {
        RefNames { names }
    }
}

#[pymethods]
impl RefNames {
    /// The lookup of header `text` (its `@SQ` lines' `AN:` alternatives)
    /// with `names`, the references in id order.
    #[new]
    fn new(text: &str, names: Vec<String>) -> RefNames {
        let references = names.into_iter().map(|name| Reference { name, len: 0 }).collect();
        let header = Header { text: text.as_bytes().to_vec(), references };
        RefNames { names: Arc::new(LibRefNames::new(&header)) }
    }

    /// The id of reference `name`; -1 when the header has no such name.
    fn tid(&self, name: &str) -> i32 {
        self.names.id(name.as_bytes()).unwrap_or(-1)
    }

    /// The regions a region string names, as `fasthts view` reads it
    /// (`fasthts::region::Region::parse_query`), each `(tid, start, stop)`,
    /// 0-based half-open, open ends as 0 and the largest position: one, or
    /// for `.` every reference, then the unplaced records (tid -1).
    fn parse_region(&self, text: &str) -> PyResult<Vec<(i32, i64, i64)>> {
        let regions = LibRegion::parse_query(text, &self.names).map_err(to_py)?;
        Ok(regions.into_iter().map(|r| (r.ref_id, r.start.max(0), r.end)).collect())
    }
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
pub(crate) fn region_args(names: &LibRefNames, obj: &Bound<'_, PyAny>) -> PyResult<Vec<LibRegion>> {
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
pub(crate) fn region_arg(names: &LibRefNames, obj: &Bound<'_, PyAny>) -> PyResult<LibRegion> {
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
