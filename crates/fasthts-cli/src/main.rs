//! `fasthts`: command-line front end. One module per subcommand; no logic of
//! its own beyond turning flags into library options and errors into one line
//! on stderr with a non-zero exit.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// What every subcommand's `run` returns: an error is printed as one line,
/// `fasthts <subcommand>: <error>`, and the process exits with status 1.
pub type CmdResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

#[derive(Parser)]
#[command(name = "fasthts", version, about = "Fast, samtools/khmer-compatible tools for sequencing data")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

impl Command {
    fn name(&self) -> &'static str {
        match *self {}
    }

    fn run(self) -> CmdResult {
        match self {}
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let name = cli.command.name();
    match cli.command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fasthts {name}: {e}");
            ExitCode::FAILURE
        }
    }
}
