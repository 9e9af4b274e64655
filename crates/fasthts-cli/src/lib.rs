//! `fasthts`: command-line front end. One module per subcommand; no logic of
//! its own beyond turning flags into library options and errors into one line
//! on stderr with a non-zero exit (a [`Failure`]: its own text and status),
//! printed here, once.
//!
//! A library so that the binary (`src/main.rs`) and the Python package's
//! `fasthts` command run the same [`main`].
use clap::{Parser, Subcommand};
use fasthts::command::Warning;
use std::error::Error as _;
use std::io::{self, Write};
use std::process::ExitCode;

mod depth;
pub mod exhaustion;
mod flagstat;
mod idxstats;
mod index;
mod kmer;
mod progress;
mod quickcheck;
mod signals;
mod snp_pileup;
mod sort;

/// What every subcommand's `run` returns: an error is printed as one line,
/// `fasthts <subcommand>: <error>`, and the process exits with status 1;
/// a [`Failure`] is printed as it is and sets the status.
pub type CmdResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// An error with its own exit status and exact text, printed without the
/// `fasthts <subcommand>:` prefix (nothing is printed for an empty text):
/// the k-mer commands' khmer messages, some of them several lines long.
/// Returned by a value parser, it ends argument parsing with its status
/// where clap's own usage errors exit 2.
#[derive(Debug)]
pub struct Failure {
    pub status: u8,
    pub message: String,
}

impl Failure {
    pub fn new(status: u8, message: impl Into<String>) -> Failure {
        Failure { status, message: message.into() }
    }

    /// Prints the text on stderr; the process's exit status.
    fn report(&self) -> ExitCode {
        if !self.message.is_empty() {
            eprintln!("{}", self.message);
        }
        ExitCode::from(self.status)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

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
    /// Indexes a coordinate-sorted BAM (BAI or CSI), as samtools index.
    Index(index::IndexArgs),
    /// Per-reference record counts from the index, as samtools idxstats.
    Idxstats(idxstats::IdxstatsArgs),
    /// Checks that files look like intact BAM/SAM, as samtools quickcheck.
    Quickcheck(quickcheck::QuickcheckArgs),
    /// Sorts a BAM or SAM by coordinate, name or tag, as samtools sort.
    Sort(sort::SortArgs),
    /// Per-position read depth, as samtools depth.
    Depth(depth::DepthArgs),
    /// FACETS-compatible SNP pileup: allele counts per BAM at VCF sites.
    SnpPileup(snp_pileup::SnpPileupArgs),
    /// khmer-compatible k-mer counting, normalisation and trimming.
    #[command(subcommand)]
    Kmer(kmer::KmerCommand),
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Flagstat(_) => "flagstat",
            Command::Index(_) => "index",
            Command::Idxstats(_) => "idxstats",
            Command::Sort(_) => "sort",
            Command::Quickcheck(_) => "quickcheck",
            Command::SnpPileup(_) => "snp-pileup",
            Command::Depth(_) => "depth",
            Command::Kmer(_) => "kmer",
        }
    }

    fn run(self) -> CmdResult {
        match self {
            Command::Flagstat(a) => flagstat::run(a),
            Command::Index(a) => index::run(a),
            Command::Idxstats(a) => idxstats::run(a),
            Command::Sort(a) => sort::run(a),
            // samtools' exit bits, and nothing more to say.
            Command::Quickcheck(a) => match quickcheck::run(a) {
                0 => Ok(()),
                status => Err(Failure::new(status, "").into()),
            },
            Command::SnpPileup(a) => snp_pileup::run(a),
            Command::Depth(a) => depth::run(a),
            Command::Kmer(c) => c.run(),
        }
    }
}

/// How the CLI shows what a library job reports: warnings on stderr, as
/// `fasthts: warning: ...` when they are about a file whatever the command
/// (as htslib words them), else `fasthts <command>: warning: ...`; a tool's
/// own progress text on stdout.
pub struct Terminal {
    /// The subcommand's name.
    pub command: &'static str,
}

impl fasthts::command::Report for Terminal {
    fn warning(&self, warning: Warning) {
        match warning {
            Warning::MissingEofMarker { .. } | Warning::StaleIndex { .. } => eprintln!("fasthts: warning: {warning}"),
            _ => eprintln!("fasthts {}: warning: {warning}", self.command),
        }
    }

    fn message(&self, text: &str) {
        // A failing stdout shows in the command's last write.
        let _ = write_stdout(text.as_bytes());
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

/// Runs the command line `args` (the program's name first, as
/// `std::env::args_os` gives it) and returns the exit status. Installs the
/// signal thread: call once per process, before any other thread starts.
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    signals::install();
    // An interrupted command leaves all its outputs or none: each stays
    // removable by the signal handler until the command has finished. The
    // k-mer library's saves go through the same registry (fasthts-io).
    fasthts::output::hold_committed_outputs();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => match e.source().and_then(|s| s.downcast_ref::<Failure>()) {
            Some(failure) => return failure.report(),
            None => e.exit(),
        },
    };
    let name = cli.command.name();
    exhaustion::set_command(name);
    match cli.command.run() {
        Ok(()) => {
            fasthts::output::release_outputs();
            ExitCode::SUCCESS
        }
        Err(e) => {
            if fasthts::output::interrupted() {
                // The signal thread removed the temporaries under us and is
                // ending the process with the signal's status: this error
                // (a vanished run file) is a consequence, not news.
                loop {
                    std::thread::park();
                }
            }
            match e.downcast_ref::<Failure>() {
                Some(failure) => failure.report(),
                None => {
                    eprintln!("fasthts {name}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
