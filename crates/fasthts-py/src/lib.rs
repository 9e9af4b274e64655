//! `fasthts._fasthts`: the compiled half of the `fasthts` Python package.
//!
//! Thin wrappers over the `fasthts` library: every call that reads or writes
//! data releases the GIL (`Python::detach`) and runs on a rayon pool; errors
//! become Python exceptions carrying the message the CLI prints after
//! `fasthts <command>: `. The Python half (`python/fasthts/`) adds numpy
//! arrays, `scatter`, and the dask layer.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError};
use pyo3::prelude::*;

mod bam;
mod kmer;
mod ops;

create_exception!(fasthts, Error, PyException, "Bad input or a failed operation; the message is the one the fasthts CLI prints.");

/// Turns a library error into a Python exception: operating-system errors
/// become `OSError` (so a missing file is `FileNotFoundError`), everything
/// else `fasthts.Error`; the message is the library's, as the CLI prints it.
pub(crate) fn to_py(e: fasthts::Error) -> PyErr {
    let msg = e.to_string();
    match io_kind(&e) {
        Some(errno) => PyOSError::new_err((errno, msg)),
        None => Error::new_err(msg),
    }
}

/// The errno of an operating-system error, looking through path wrappers.
fn io_kind(e: &fasthts::Error) -> Option<i32> {
    match e {
        fasthts::Error::Io(io) => Some(io.raw_os_error().unwrap_or(5)),
        // EISDIR: Python raises IsADirectoryError.
        fasthts::Error::IsADirectory => Some(21),
        fasthts::Error::WithPath { source, .. } => io_kind(source),
        _ => None,
    }
}

/// A `fasthts.Error` with this message.
pub(crate) fn err(msg: impl std::fmt::Display) -> PyErr {
    Error::new_err(msg.to_string())
}

/// The CLI's `-@` rule (all cores when `None` or 0).
pub(crate) use fasthts_io::pool::with_threads;

#[pymodule]
fn _fasthts(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    bam::register(m)?;
    ops::register(m)?;
    kmer::register(m)?;
    Ok(())
}
