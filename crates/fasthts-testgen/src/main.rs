//! fasthts-testgen: a seeded generator of realistic SAM test data (see the
//! library, [`fasthts_testgen`]).

use std::io;
use std::process::ExitCode;

use clap::Parser;
use fasthts_testgen::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = cli::check(&cli) {
        eprintln!("fasthts-testgen: {e}");
        return ExitCode::from(2);
    }
    match cli::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        // `fasthts-testgen | head` is not an error worth a message.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(141),
        Err(e) => {
            eprintln!("fasthts-testgen: {e}");
            ExitCode::FAILURE
        }
    }
}
