//! `fasthts._fasthts`: the compiled half of the `fasthts` Python package.
//!
//! Thin wrappers over the `fasthts` library, mostly its command layer
//! (`fasthts::command`), the functions the CLI calls: every call that reads
//! or writes data releases the GIL (`Python::detach`) and runs on a rayon
//! pool; errors become Python exceptions carrying the message the CLI
//! prints after `fasthts <command>: `, and warnings Python warnings with
//! the text the CLI prints after `warning: `. The Python half
//! (`python/fasthts/`) adds numpy arrays, `scatter`, and the dask layer.

use fasthts::command::{Report, Warning};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod alignment;
mod bam;
mod cli;
mod columns;
mod depth;
mod distributed;
mod distributed_sormadup;
mod fasta;
mod kmer;
mod markdup;
mod md;
mod ops;
mod pileup;
mod read_ahead;
mod regions;
mod segment;
mod sketches;
mod source;
mod stats;
mod writer;

create_exception!(fasthts, Error, PyException, "Bad input or a failed operation; the message is the one the fasthts CLI prints.");

/// Turns a library error into a Python exception: operating-system errors
/// become `OSError` (so a missing file is `FileNotFoundError`), invalid
/// arguments `ValueError`, everything else `fasthts.Error`; the message is
/// the library's, as the CLI prints it.
pub(crate) fn to_py(e: fasthts::Error) -> PyErr {
    let msg = e.to_string();
    match io_kind(&e) {
        Some(errno) => PyOSError::new_err((errno, msg)),
        None if matches!(e, fasthts::Error::InvalidArgument(_)) => PyValueError::new_err(msg),
        None => Error::new_err(msg),
    }
}

/// The errno of an operating-system error, looking through path wrappers.
fn io_kind(e: &fasthts::Error) -> Option<i32> {
    match e {
        fasthts::Error::Io(io) => Some(io.raw_os_error().unwrap_or_else(|| errno_of_kind(io.kind()))),
        // EISDIR: Python raises IsADirectoryError.
        fasthts::Error::IsADirectory => Some(21),
        fasthts::Error::Index(fasthts::index::IndexError::Io { source, .. }) => Some(source.raw_os_error().unwrap_or(5)),
        fasthts::Error::WithPath { source, .. } | fasthts::Error::Described { source, .. } => io_kind(source),
        _ => None,
    }
}

/// The errno Python's OSError subclasses are chosen by, for an error made
/// without one (a remote object's: HTTP 404 is FileNotFoundError, as pysam
/// raises for a missing URL).
fn errno_of_kind(kind: std::io::ErrorKind) -> i32 {
    match kind {
        std::io::ErrorKind::NotFound => 2,
        std::io::ErrorKind::PermissionDenied => 13,
        std::io::ErrorKind::ConnectionRefused => 111,
        std::io::ErrorKind::TimedOut => 110,
        _ => 5,
    }
}

/// A `fasthts.Error` with this message.
pub(crate) fn err(msg: impl std::fmt::Display) -> PyErr {
    Error::new_err(msg.to_string())
}

/// The CLI's `-@` rule (all cores when `None` or 0).
pub(crate) use fasthts_io::pool::with_threads;

/// A path argument: `str`, `bytes` (the OS's bytes, as `os.fsencode`
/// gives) or `os.PathLike`, as Python's own file functions take.
pub(crate) struct FsPath(pub(crate) PathBuf);

impl FromPyObject<'_, '_> for FsPath {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, '_, PyAny>) -> PyResult<Self> {
        // os.fspath: TypeError for what is not a path, naming its type.
        let path = ob.py().import("os")?.getattr("fspath")?.call1((ob,))?;
        if let Ok(b) = path.cast::<PyBytes>() {
            use std::os::unix::ffi::OsStrExt;
            return Ok(FsPath(PathBuf::from(std::ffi::OsStr::from_bytes(b.as_bytes()))));
        }
        Ok(FsPath(path.extract::<PathBuf>()?))
    }
}

impl std::ops::Deref for FsPath {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

/// Paths from a sequence of path arguments (`FsPath`).
pub(crate) fn paths(v: Vec<FsPath>) -> Vec<PathBuf> {
    v.into_iter().map(|p| p.0).collect()
}

/// A `threads` argument as the CLI reads `-@`: a whole number, 0 or more
/// (0 or None: all cores); what the job then gets is capped by
/// `fasthts_io::pool::thread_count` (a few per core).
pub(crate) fn threads_arg(threads: Option<i64>) -> PyResult<Option<usize>> {
    match threads {
        None => Ok(None),
        Some(n) if n < 0 => Err(PyValueError::new_err(format!("threads must be 0 or more (0 or None: all cores), not {n}"))),
        Some(n) => Ok(Some(fasthts_io::pool::thread_count(Some(usize::try_from(n).unwrap_or(usize::MAX))))),
    }
}

/// A job's warnings, kept while the GIL is released and issued as Python
/// warnings (`UserWarning`) once it is held again.
#[derive(Default)]
pub(crate) struct Warnings(Mutex<Vec<Warning>>);

impl Report for Warnings {
    fn warning(&self, warning: Warning) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(warning);
    }
}

impl Warnings {
    /// Issues the warnings kept so far (an error if warnings are errors).
    pub(crate) fn issue(&self, py: Python<'_>) -> PyResult<()> {
        let kept = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        warn_texts(py, &kept.iter().map(Warning::to_string).collect::<Vec<_>>())
    }
}

/// Issues each of `texts` as a Python `UserWarning` (an error if warnings
/// are errors).
pub(crate) fn warn_texts(py: Python<'_>, texts: &[String]) -> PyResult<()> {
    for t in texts {
        let text = CString::new(t.replace('\0', " ")).expect("no NUL left");
        PyErr::warn(py, py.get_type::<PyUserWarning>().as_any(), &text, 1)?;
    }
    Ok(())
}

/// How often a waiting call looks for Ctrl-C.
pub(crate) const SIGNAL_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs a library job with the GIL released (as [`run_interruptible`]),
/// then issues the warnings it reported and turns its error into a Python
/// exception.
pub(crate) fn run_detached<T: Send>(py: Python<'_>, job: impl FnOnce(&Warnings) -> Result<T, fasthts::Error> + Send) -> PyResult<T> {
    let warnings = Warnings::default();
    let result = run_interruptible(py, || job(&warnings))?;
    warnings.issue(py)?;
    result.map_err(to_py)
}

/// Runs `job` with the GIL released, on a thread of its own under a
/// cancellation token of this call (`fasthts_io::cancel::Token`), while
/// the calling thread waits, looking for signals every
/// `SIGNAL_CHECK_INTERVAL`. On Ctrl-C the token is cancelled (the job's
/// BGZF inflation and sequence reading fail, its temporary outputs are
/// dropped; calls in other Python threads go on), and once the job has
/// returned, the signal's exception (`KeyboardInterrupt`) is raised.
pub(crate) fn run_interruptible<T: Send>(py: Python<'_>, job: impl FnOnce() -> T + Send) -> PyResult<T> {
    let token = fasthts_io::cancel::Token::new();
    std::thread::scope(|s| {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        // (Waited on without the GIL, from a closure that must be Sync.)
        let done_rx = Mutex::new(done_rx);
        let theirs = token.clone();
        let worker = s.spawn(move || {
            let r = in_this_process(|| theirs.run(job));
            let _ = done_tx.send(());
            r
        });
        let mut interrupt = None;
        loop {
            let finished = py.detach(|| {
                let rx = done_rx.lock().unwrap_or_else(|p| p.into_inner());
                rx.recv_timeout(SIGNAL_CHECK_INTERVAL).is_ok() || worker.is_finished()
            });
            if finished {
                break;
            }
            if let Err(e) = py.check_signals() {
                token.cancel();
                interrupt = Some(e);
                break;
            }
        }
        let result = py.detach(|| worker.join()).unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match interrupt {
            Some(e) => Err(e),
            None => Ok(result),
        }
    })
}

/// The process that imported the module (see [`in_this_process`]).
static IMPORTED_IN: std::sync::LazyLock<u32> = std::sync::LazyLock::new(std::process::id);

/// Runs `f`, whose parallel work goes to rayon's global pool, in this
/// process: in a child forked after the import that pool is the parent's,
/// its threads are not here and a job handed to it would wait for ever, so
/// there `f` runs on a pool of its own.
pub(crate) fn in_this_process<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if std::process::id() == *IMPORTED_IN {
        f()
    } else {
        fasthts_io::pool::with_threads(None, f)
    }
}

#[pymodule]
fn _fasthts(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    std::sync::LazyLock::force(&IMPORTED_IN);
    bam::register(m)?;
    regions::register(m)?;
    alignment::register(m)?;
    writer::register(m)?;
    depth::register(m)?;
    ops::register(m)?;
    markdup::register(m)?;
    kmer::register(m)?;
    sketches::register(m)?;
    cli::register(m)?;
    distributed::register(m)?;
    distributed_sormadup::register(m)?;
    fasta::register(m)?;
    pileup::register(m)?;
    stats::register(m)?;
    Ok(())
}
