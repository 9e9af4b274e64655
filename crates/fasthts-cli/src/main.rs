//! The `fasthts` binary: the command line of [`fasthts_cli::main`].
use std::process::ExitCode;

// Memory exhaustion ends the run with one line and temporaries removed,
// not an abort (see the module).
#[global_allocator]
static ALLOCATOR: fasthts_cli::exhaustion::ExitOnExhaustion = fasthts_cli::exhaustion::ExitOnExhaustion;

fn main() -> ExitCode {
    fasthts_cli::main(std::env::args_os())
}
