//! The compiled half of `fasthts.AlignmentFile` opened for writing:
//! `_AlignmentWriter` converts the arguments the Python half has read
//! (format, level, header, threads) and hands records to the library's
//! `AlignmentWriter`, which decides everything else.

use crate::alignment::AlignmentReader;
use crate::segment::AlignedSegment;
use crate::to_py;
use fasthts::bam::{Header, Reference};
use fasthts::record_output::{AlignmentWriter as LibWriter, WriteFormat};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AlignmentWriter>()?;
    m.add_function(wrap_pyfunction!(have_system_zlib, m)?)
}

/// Whether the system zlib (what pysam's wheels compress BAM with) was
/// found: BAM written at levels 1-9 has pysam's bytes only then.
#[pyfunction]
#[pyo3(name = "_have_system_zlib")]
fn have_system_zlib() -> bool {
    fasthts::bgzf::have_system_zlib()
}

/// An alignment file being written (the compiled half of
/// `fasthts.AlignmentFile` in a write mode).
#[pyclass(frozen, module = "fasthts._fasthts", name = "_AlignmentWriter")]
pub struct AlignmentWriter {
    /// None once closed.
    writer: Mutex<Option<LibWriter>>,
}

#[pymethods]
impl AlignmentWriter {
    /// `format`: "bam", "sam" or "cram" (against `reference_filename`); `level`: zlib's 0–9 for BAM; the header
    /// is `template`'s, else `text` (None: none at all) with `references`
    /// (`[(name, length)]`);
    /// `threads`: threads compressing BAM blocks.
    #[new]
    #[pyo3(signature = (path, format, level, template=None, text=None, references=None, threads=None, reference_filename=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: crate::FsPath,
        format: &str,
        level: u32,
        template: Option<PyRef<'_, AlignmentReader>>,
        text: Option<String>,
        references: Option<Vec<(String, u32)>>,
        threads: Option<i64>,
        reference_filename: Option<crate::FsPath>,
    ) -> PyResult<Self> {
        let format = match format {
            "bam" => WriteFormat::Bam { level },
            "sam" => WriteFormat::Sam { header_text: template.is_some() || text.is_some() },
            "cram" => WriteFormat::Cram { reference: reference_filename.map(|p| p.0) },
            other => return Err(PyValueError::new_err(format!("unknown output format {other:?}"))),
        };
        let header: Arc<Header> = match template {
            Some(t) => t.header().clone(),
            None => Arc::new(Header {
                text: text.unwrap_or_default().into_bytes(),
                references: references.unwrap_or_default().into_iter().map(|(name, len)| Reference { name, len }).collect(),
            }),
        };
        let threads = fasthts_io::pool::thread_count(crate::threads_arg(threads.or(Some(1)))?);
        let pool = fasthts_io::pool::pool_builder(threads).build().map_err(|e| PyValueError::new_err(e.to_string()))?;
        let writer = py.detach(|| LibWriter::create(&path.0, &header, format, Some(Arc::new(pool)))).map_err(|e| {
            // pysam raises ValueError for what it cannot open with (a
            // reference, a header); OSError stays for the file's own errors.
            let e = to_py(e);
            if e.is_instance_of::<crate::Error>(py) {
                PyValueError::new_err(e.value(py).to_string())
            } else {
                e
            }
        })?;
        Ok(AlignmentWriter { writer: Mutex::new(Some(writer)) })
    }

    /// Writes `segment` (its record as read); returns the bytes written
    /// (htslib's `sam_write1`).
    fn write(&self, segment: PyRef<'_, AlignedSegment>) -> PyResult<usize> {
        let mut guard = self.writer.lock().map_err(|_| PyValueError::new_err("writer poisoned by an earlier panic"))?;
        let Some(w) = guard.as_mut() else { return Err(PyValueError::new_err("I/O operation on closed file")) };
        match w.write(segment.data()) {
            Ok(n) => Ok(n),
            Err(e) => {
                // A failed write leaves no output: the temporary goes with the writer.
                *guard = None;
                Err(to_py(e))
            }
        }
    }

    /// Ends the file and renames it into place (nothing when closed).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.writer.lock().map_err(|_| PyValueError::new_err("writer poisoned by an earlier panic"))?.take();
        match taken {
            Some(w) => py.detach(|| w.finish()).map_err(to_py),
            None => Ok(()),
        }
    }

    /// Drops the file unfinished: nothing is left at its path.
    fn abort(&self) -> PyResult<()> {
        self.writer.lock().map_err(|_| PyValueError::new_err("writer poisoned by an earlier panic"))?.take();
        Ok(())
    }
}
