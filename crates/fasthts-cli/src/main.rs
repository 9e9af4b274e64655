//! `fasthts`: command-line front end. One module per subcommand; no logic of
//! its own beyond turning flags into library options and errors into one line
//! on stderr with a non-zero exit.
use clap::{Parser, Subcommand};
use std::io::{self, Write};
use std::process::ExitCode;

mod flagstat;

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
enum Command {
    /// Counts records by flag category, as samtools flagstat.
    Flagstat(flagstat::FlagstatArgs),
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Flagstat(_) => "flagstat",
        }
    }

    fn run(self) -> CmdResult {
        match self {
            Command::Flagstat(a) => flagstat::run(a),
        }
    }
}

/// Runs `f` on a rayon pool of `threads` threads (all cores when `None`).
pub fn with_threads<T: Send>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> T {
    let n = threads.filter(|&n| n > 0).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    match rayon::ThreadPoolBuilder::new().num_threads(n).build() {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

/// Warns, as htslib does, when a BAM lacks its EOF marker.
pub fn warn_if_truncated(bam: &fasthts::bam::BamFile) {
    if !bam.has_eof_marker() {
        eprintln!("fasthts: warning: {}: EOF marker is absent. The input is probably truncated", bam.path().display());
    }
}

/// Writes to stdout; a closed pipe is not an error.
pub fn write_stdout(bytes: &[u8]) -> CmdResult {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
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
