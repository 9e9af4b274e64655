//! The Python package's `fasthts` command (`[project.scripts]` in
//! pyproject.toml, through `fasthts._cli.main`): the command line's own
//! [`fasthts_cli::main`], so `pip install .` gives the command that
//! `cargo install` gives; and the samtools-style functions
//! (`fasthts.samtools`, pysam's `pysam.view(...)` forms), which run the
//! same command line inside the Python process.

use pyo3::prelude::*;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::RawFd;
use std::process::ExitCode;
use std::sync::Mutex;

/// Runs the `fasthts` command line `argv` (program name first, as
/// `sys.argv`) in this process and returns its exit status. Installs the
/// command's signal handling: for a process that only runs the command.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    let code = py.detach(|| {
        let code = fasthts_cli::main(argv);
        // A binary's stdout is flushed when `main` returns; here the
        // process goes on into Python, which does not know Rust's buffer.
        let _ = std::io::stdout().flush();
        code
    });
    exit_status(code)
}

/// One command at a time has the process's standard output and error.
static STANDARD_STREAMS: Mutex<()> = Mutex::new(());

/// Runs the command line `argv` inside this process
/// ([`fasthts_cli::run_in_process`]: no signal handling) with its standard
/// output going to the open file descriptor `stdout_fd` and its standard
/// error to `stderr_fd` (descriptors 1 and 2 are pointed at them for the
/// call and restored after it, as pysam points samtools' at its temporary
/// files); returns the exit status. Other threads' writes to descriptors 1
/// and 2 during the call go there too.
#[pyfunction]
fn run_cli_redirected(py: Python<'_>, argv: Vec<OsString>, stdout_fd: RawFd, stderr_fd: RawFd) -> PyResult<u8> {
    py.detach(|| {
        let _streams = STANDARD_STREAMS.lock().unwrap_or_else(|e| e.into_inner());
        let saved = Redirection::start(stdout_fd, stderr_fd)?;
        let code = fasthts_cli::run_in_process(argv);
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        saved.end()?;
        Ok(exit_status(code))
    })
}

/// Descriptors 1 and 2 as they were before [`Redirection::start`].
struct Redirection {
    stdout: RawFd,
    stderr: RawFd,
}

impl Redirection {
    fn start(stdout_fd: RawFd, stderr_fd: RawFd) -> PyResult<Redirection> {
        // Bytes Rust buffered for the old stdout go there, not to the file.
        let _ = std::io::stdout().flush();
        // SAFETY: dup and dup2 take and return plain descriptor numbers;
        // the duplicates of 1 and 2 are owned by the returned value, which
        // puts them back and closes them; a failure is checked before use.
        unsafe {
            let saved = Redirection { stdout: libc::dup(1), stderr: libc::dup(2) };
            if saved.stdout < 0 || saved.stderr < 0 || libc::dup2(stdout_fd, 1) < 0 || libc::dup2(stderr_fd, 2) < 0 {
                let e = std::io::Error::last_os_error();
                saved.end()?;
                return Err(e.into());
            }
            Ok(saved)
        }
    }

    fn end(self) -> PyResult<()> {
        // SAFETY: as in `start`: descriptors this value owns, put back on
        // 1 and 2 and closed once (negative ones, failed dups, skipped).
        unsafe {
            let mut failed = None;
            for (saved, to) in [(self.stdout, 1), (self.stderr, 2)] {
                if saved >= 0 {
                    if libc::dup2(saved, to) < 0 {
                        failed = Some(std::io::Error::last_os_error());
                    }
                    libc::close(saved);
                }
            }
            failed.map_or(Ok(()), |e| Err(e.into()))
        }
    }
}

/// The number in an [`ExitCode`] (which offers no getter; it compares).
fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX).find(|&n| ExitCode::from(n) == code).unwrap_or(1)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli_redirected, m)?)
}
