//! `fasthts.FastaFile`: pysam's `FastaFile` over the library's index
//! (`fasthts::faidx`), so Python reads the `.fai`/`.gzi` the CLI writes
//! and gets the bases samtools faidx prints.

use crate::{to_py, FsPath};
use fasthts::faidx::{FastaFile as Fasta, OpenOptions};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Arc, RwLock};

/// A FASTA (or FASTQ) file, plain or bgzipped, read by name and position
/// through its `.fai` (built and written beside it when missing, as
/// pysam and samtools do).
#[pyclass(frozen, module = "fasthts._fasthts")]
pub struct FastaFile {
    /// None once closed.
    file: RwLock<Option<Arc<Fasta>>>,
    /// The path as given (pysam's `filename`, bytes).
    filename: Vec<u8>,
    references: Vec<String>,
    lengths: Vec<u64>,
}

impl FastaFile {
    pub(crate) fn open_file(&self, what: &str) -> PyResult<Arc<Fasta>> {
        self.file.read().unwrap_or_else(|p| p.into_inner()).clone().ok_or_else(|| PyValueError::new_err(what.to_string()))
    }
}

/// A start or end given to `fetch`, as pysam checks it.
fn position(value: Option<i64>, default: i64) -> i64 {
    value.unwrap_or(default)
}

/// pysam's reading of `region`: `name`, or `name:start-end` (1-based,
/// inclusive). Unlike pysam, the name is what precedes the last colon (so
/// names holding colons work) and `name:start` runs to the end (where
/// pysam fails with IndexError).
fn parse_region(region: &str) -> PyResult<(String, Option<i64>, Option<i64>)> {
    let Some((name, coords)) = region.rsplit_once(':') else {
        return Ok((region.to_string(), None, None));
    };
    let number =
        |s: &str| s.trim().parse::<i64>().map_err(|_| PyValueError::new_err(format!("invalid literal for int() with base 10: '{s}'")));
    let (start, end) = match coords.split_once('-') {
        Some((start, end)) => (number(start)? - 1, Some(number(end)?)),
        None => (number(coords)? - 1, None),
    };
    Ok((name.to_string(), Some(start), end))
}

#[pymethods]
impl FastaFile {
    /// Opens `filename` with its index (`filepath_index`, default
    /// `<filename>.fai`; `filepath_index_compressed`, default
    /// `<filename>.gzi`, for a bgzipped file), building those missing.
    #[new]
    #[pyo3(signature = (filename, filepath_index=None, filepath_index_compressed=None))]
    fn new(py: Python<'_>, filename: FsPath, filepath_index: Option<FsPath>, filepath_index_compressed: Option<FsPath>) -> PyResult<Self> {
        let options = OpenOptions { fai: filepath_index.map(|p| p.0), gzi: filepath_index_compressed.map(|p| p.0), format: None };
        let path = filename.0;
        let mut duplicates = Vec::new();
        let file = py.detach(|| Fasta::open(&path, &options, &mut |d| duplicates.push(format!("{d}")))).map_err(to_py)?;
        crate::warn_texts(py, &duplicates)?;
        let entries = file.index().entries();
        let references = entries.iter().map(|e| e.name_lossy().into_owned()).collect();
        let lengths = entries.iter().map(|e| e.length).collect();
        use std::os::unix::ffi::OsStrExt;
        Ok(FastaFile { filename: path.as_os_str().as_bytes().to_vec(), references, lengths, file: RwLock::new(Some(Arc::new(file))) })
    }

    /// The bases of `reference` from `start` to `end` (0-based, end
    /// excluded; clamped to the sequence), or of `region`
    /// (`name:start-end`, 1-based inclusive), as a str.
    #[pyo3(signature = (reference=None, start=None, end=None, region=None))]
    fn fetch(
        &self,
        py: Python<'_>,
        reference: Option<&Bound<'_, PyAny>>,
        start: Option<i64>,
        end: Option<i64>,
        region: Option<&str>,
    ) -> PyResult<String> {
        let file = self.open_file("I/O operation on closed file")?;
        let reference = match reference {
            None => None,
            Some(r) => match r.cast::<PyBytes>() {
                Ok(b) => Some(String::from_utf8_lossy(b.as_bytes()).into_owned()),
                Err(_) => Some(r.extract::<String>()?),
            },
        };
        let (name, start, end) = match (reference, region) {
            (Some(_), Some(_)) => return Err(PyValueError::new_err("contig/reference and region should not both be specified")),
            (None, None) => return Err(PyValueError::new_err("neither contig nor region are given")),
            (Some(name), None) => (name, start, end),
            (None, Some(region)) => parse_region(region)?,
        };
        let (start, end) = (position(start, 0), position(end, i64::MAX));
        if start > end {
            return Err(PyValueError::new_err(format!("invalid coordinates: start ({start}) > stop ({end})")));
        }
        if start < 0 {
            return Err(PyValueError::new_err(format!("start out of range ({start})")));
        }
        if start == end {
            return Ok(String::new());
        }
        if file.index().get(name.as_bytes()).is_none() {
            return Err(PyKeyError::new_err(format!("sequence '{name}' not present")));
        }
        let bases = py.detach(|| file.sequence(name.as_bytes(), start as u64, end as u64)).map_err(to_py)?;
        Ok(String::from_utf8(bases).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// The sequence `reference` whole.
    fn __getitem__(&self, py: Python<'_>, reference: &Bound<'_, PyAny>) -> PyResult<String> {
        self.fetch(py, Some(reference), None, None, None)
    }

    /// The length of `reference` (KeyError when it is not in the file).
    fn get_reference_length(&self, reference: &str) -> PyResult<u64> {
        match self.references.iter().position(|r| r == reference) {
            Some(i) => Ok(self.lengths[i]),
            None => Err(PyKeyError::new_err(reference.to_string())),
        }
    }

    /// The sequence names, in file order.
    #[getter]
    fn references(&self) -> Vec<String> {
        self.references.clone()
    }

    /// The sequence lengths, in file order.
    #[getter]
    fn lengths(&self) -> Vec<u64> {
        self.lengths.clone()
    }

    /// The number of sequences.
    #[getter]
    fn nreferences(&self) -> usize {
        self.references.len()
    }

    /// The path as given, as bytes (as pysam's).
    #[getter]
    fn filename<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.filename)
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.file.read().unwrap_or_else(|p| p.into_inner()).is_none()
    }

    /// False once closed.
    fn is_open(&self) -> bool {
        !self.closed()
    }

    /// Releases the file (its map); fetches fail from then on.
    fn close(&self) {
        *self.file.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn __len__(&self) -> PyResult<usize> {
        self.open_file("calling len() on closed file")?;
        Ok(self.references.len())
    }

    fn __contains__(&self, reference: &str) -> bool {
        self.references.iter().any(|r| r == reference)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        format!("<fasthts.FastaFile {:?}: {} sequences>", String::from_utf8_lossy(&self.filename), self.references.len())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FastaFile>()
}
