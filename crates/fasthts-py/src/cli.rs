//! The Python package's `fasthts` command (`[project.scripts]` in
//! pyproject.toml, through `fasthts._cli.main`): the command line's own
//! [`fasthts_cli::main`], so `pip install .` gives the command that
//! `cargo install` gives.

use pyo3::prelude::*;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

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

/// The number in an [`ExitCode`] (which offers no getter; it compares).
fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX).find(|&n| ExitCode::from(n) == code).unwrap_or(1)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_cli, m)?)
}
