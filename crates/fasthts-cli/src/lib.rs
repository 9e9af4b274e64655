//! `fasthts`: command-line front end. One module per subcommand; no logic of
//! its own beyond turning flags into library options and errors into one line
//! on stderr with a non-zero exit (a [`Failure`]: its own text and status),
//! printed here, once.
//!
//! A library so that the binary (`src/main.rs`) and the Python package's
//! `fasthts` command run the same [`main`].
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use fasthts::command::Warning;
use std::error::Error as _;
use std::io::{self, Write};
use std::process::ExitCode;

// Every message of the CLI goes through these instead of std's macros,
// which panic (exit 101, a backtrace) when the stream is closed or full.
macro_rules! eprintln {
    () => { $crate::print_stderr(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::print_stderr(format_args!("{}\n", format_args!($($arg)*))) };
}
macro_rules! println {
    () => { $crate::print_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::print_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

mod cat;
mod collate;
mod coverage;
mod depth;
mod mosdepth;
pub mod exhaustion;
mod faidx;
mod fastq;
mod fixmate;
mod flagstat;
mod idxstats;
mod index;
mod kmer;
mod man;
mod markdup;
mod merge;
mod numbers;
mod progress;
mod quickcheck;
mod signals;
mod snp_pileup;
mod sormadup;
mod sort;
mod stats;
mod view;

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
    /// Merges sorted BAM, SAM or CRAM files, as samtools merge.
    Merge(merge::MergeArgs),
    /// Per-position read depth, as samtools depth.
    Depth(depth::DepthArgs),
    /// Statistics of an alignment file, as samtools stats.
    Stats(stats::StatsArgs),
    /// Coverage per reference or region (table or histograms), as samtools coverage.
    Coverage(coverage::CoverageArgs),
    /// Depth per base, window or BED region, thresholds and distributions, as mosdepth.
    Mosdepth(mosdepth::MosdepthArgs),
    /// Prints, filters and converts alignments, as samtools view.
    View(view::ViewArgs),
    /// Indexes a FASTA/FASTQ file or prints regions of it, as samtools faidx.
    Faidx(faidx::FaidxArgs),
    /// As faidx for FASTQ files (regions printed as FASTQ), as samtools fqidx.
    Fqidx(faidx::FaidxArgs),
    /// Concatenates BAM or CRAM files without decoding them, as samtools cat.
    Cat(cat::CatArgs),
    /// Converts alignments to FASTQ, as samtools fastq (alias: bam2fq).
    #[command(alias = "bam2fq")]
    Fastq(fastq::FastqArgs),
    /// Converts alignments to FASTA, as samtools fasta.
    Fasta(fastq::FastqArgs),
    /// Groups the records of each read name together, as samtools collate.
    Collate(collate::CollateArgs),
    /// Fills in mate coordinates, TLEN and mate flags, as samtools fixmate.
    Fixmate(fixmate::FixmateArgs),
    /// Marks duplicate alignments, as samtools markdup.
    Markdup(markdup::MarkdupArgs),
    /// Collates, fixes mates, sorts and marks duplicates in one process:
    /// samtools collate | fixmate -m | sort | markdup.
    Sormadup(sormadup::SormadupArgs),
    /// FACETS-compatible SNP pileup: allele counts per BAM at VCF sites.
    SnpPileup(snp_pileup::SnpPileupArgs),
    /// khmer-compatible k-mer counting, normalisation and trimming.
    #[command(subcommand)]
    Kmer(kmer::KmerCommand),
    /// Writes fasthts.1 and a page per subcommand (fasthts-sort.1,
    /// fasthts-kmer-count.1, ...) into DIR, made from these definitions.
    #[command(name = "generate-man-pages", hide = true)]
    GenerateManPages {
        /// Directory for the pages (created if missing).
        #[arg(value_name = "DIR")]
        dir: std::path::PathBuf,
    },
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Flagstat(_) => "flagstat",
            Command::Index(_) => "index",
            Command::Idxstats(_) => "idxstats",
            Command::Sort(_) => "sort",
            Command::Merge(_) => "merge",
            Command::Quickcheck(_) => "quickcheck",
            Command::SnpPileup(_) => "snp-pileup",
            Command::Depth(_) => "depth",
            Command::Stats(_) => "stats",
            Command::Coverage(_) => "coverage",
            Command::Mosdepth(_) => "mosdepth",
            Command::View(_) => "view",
            Command::Faidx(_) => "faidx",
            Command::Fqidx(_) => "fqidx",
            Command::Cat(_) => "cat",
            Command::Fastq(_) => "fastq",
            Command::Fasta(_) => "fasta",
            Command::Fixmate(_) => "fixmate",
            Command::Collate(_) => "collate",
            Command::Markdup(_) => "markdup",
            Command::Sormadup(_) => "sormadup",
            Command::Kmer(_) => "kmer",
            Command::GenerateManPages { .. } => "generate-man-pages",
        }
    }

    fn run(self) -> CmdResult {
        match self {
            Command::Flagstat(a) => flagstat::run(a),
            Command::Index(a) => index::run(a),
            Command::Idxstats(a) => idxstats::run(a),
            Command::Sort(a) => sort::run(a),
            Command::Merge(a) => merge::run(a),
            // samtools' exit bits, and nothing more to say.
            Command::Quickcheck(a) => match quickcheck::run(a) {
                0 => Ok(()),
                status => Err(Failure::new(status, "").into()),
            },
            Command::SnpPileup(a) => snp_pileup::run(a),
            Command::Depth(a) => depth::run(a),
            Command::Stats(a) => stats::run(a),
            Command::Coverage(a) => coverage::run(a),
            Command::Mosdepth(a) => mosdepth::run(a),
            Command::View(a) => view::run(a),
            Command::Faidx(a) => faidx::run(a, false),
            Command::Fqidx(a) => faidx::run(a, true),
            Command::Cat(a) => cat::run(a),
            Command::Fastq(a) => fastq::run(a, fasthts::command::FastxFormat::Fastq),
            Command::Fasta(a) => fastq::run(a, fasthts::command::FastxFormat::Fasta),
            Command::Fixmate(a) => fixmate::run(a),
            Command::Collate(a) => collate::run(a),
            Command::Markdup(a) => markdup::run(a),
            Command::Sormadup(a) => sormadup::run(a),
            Command::Kmer(c) => c.run(),
            Command::GenerateManPages { dir } => man::generate(&command(), &dir),
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
            Warning::Verbatim { .. } => eprintln!("{warning}"),
            _ => eprintln!("fasthts {}: warning: {warning}", self.command),
        }
    }

    fn message(&self, text: &str) {
        // A failing stdout shows in the command's last write.
        let _ = write_stdout(text.as_bytes());
    }
}

/// Writes a command's output to stdout. A closed pipe ends the process
/// as it ends samtools ([`die_of_broken_pipe`]); another failure (a full
/// disk) is an error naming the file stdout is.
pub fn write_stdout(bytes: &[u8]) -> CmdResult {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => die_of_broken_pipe(),
        Err(e) => Err(fasthts_io::PathError::new(fasthts_io::output::stdout_name(), e).into()),
    }
}

/// The command line's definition (for its help, man pages and tests).
#[doc(hidden)]
pub fn command() -> clap::Command {
    last_given_wins(Cli::command())
}

/// An option or flag given twice takes the last value, as samtools', FACETS'
/// (getopt, argp) and khmer's (argparse) command lines do: pipeline wrappers
/// append the user's options after their own defaults. Options that
/// collect every value (`-d`, `-x`) still collect.
fn last_given_wins(command: clap::Command) -> clap::Command {
    let names: Vec<String> = command.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    names.iter().fold(command.args_override_self(true), |command, name| command.mut_subcommand(name, last_given_wins))
}

/// The exit status of a usage error in `command` (the first argument), as
/// the tool it replaces gives it: samtools' 1 (also for no or an unknown
/// command), argparse's 2 for the k-mer commands (khmer's scripts), argp's
/// 64 (EX_USAGE) for snp-pileup (FACETS).
fn usage_status(command: Option<&str>) -> u8 {
    match command {
        Some("kmer") => 2,
        Some("snp-pileup") => 64,
        _ => 1,
    }
}

/// Prints a clap error as one line, `fasthts <command>: <what is wrong>;
/// see 'fasthts <command> --help'`, and gives the command's usage status;
/// help and version go out as clap prints them.
fn report_usage_error(e: &clap::Error, args: &[std::ffi::OsString]) -> ExitCode {
    use clap::error::ErrorKind;
    // The subcommands named on the line (`sort`, `kmer count`).
    let mut path: Vec<String> = Vec::new();
    let mut cmd = Cli::command();
    for word in args.iter().skip(1).map(|a| a.to_string_lossy()) {
        let Some(sub) = cmd.find_subcommand(word.as_ref()).cloned() else { break };
        path.push(word.into_owned());
        cmd = sub;
    }
    let command = path.first().map(String::as_str);
    let status = usage_status(command);
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // Nothing but the command's name: samtools prints the usage of
        // flagstat, index, idxstats, fixmate and merge on stdout and succeeds; elsewhere
        // the usage goes to stderr as an error.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            if matches!(command, Some("flagstat" | "index" | "idxstats" | "faidx" | "fqidx" | "fixmate" | "merge")) {
                let _ = write_stdout(e.render().to_string().as_bytes());
                return ExitCode::SUCCESS;
            }
            print_stderr(format_args!("{}", e.render()));
            return ExitCode::from(status);
        }
        _ => {}
    }
    let rendered = e.render().to_string();
    let mut parts = rendered
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information") && !l.starts_with("tip: to pass"));
    let mut line = parts.next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_string();
    for more in parts {
        line.push(' ');
        line.push_str(more);
    }
    let name = std::iter::once("fasthts").chain(path.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
    eprintln!("{name}: {line}; see '{name} --help'");
    ExitCode::from(status)
}

/// `println!` of this crate: a message line on stdout; a closed pipe ends
/// the process ([`die_of_broken_pipe`]), other failures are ignored (the
/// command's status says how it went).
#[doc(hidden)]
pub fn print_stdout(args: std::fmt::Arguments) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            die_of_broken_pipe();
        }
    }
}

/// `eprintln!` of this crate: as [`print_stdout`], for stderr.
#[doc(hidden)]
pub fn print_stderr(args: std::fmt::Arguments) {
    if let Err(e) = io::stderr().lock().write_fmt(args) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            die_of_broken_pipe();
        }
    }
}

/// Ends the process as a C program such as samtools ends when its reader
/// has gone (`| head`): killed by SIGPIPE (status 141 in a shell), after
/// removing the temporaries in progress. Rust ignores SIGPIPE so that
/// writes fail with EPIPE instead; this restores the default and raises it.
pub fn die_of_broken_pipe() -> ! {
    if IN_PROCESS.load(std::sync::atomic::Ordering::SeqCst) {
        // A host process is not ended for its command's closed stdout:
        // unwind to `run_in_process` (`resume_unwind` prints no panic
        // message), dropping the command's temporaries on the way.
        std::panic::resume_unwind(Box::new(BrokenPipe));
    }
    fasthts::output::remove_in_progress();
    // SAFETY: restores the default action of SIGPIPE and raises it in this
    // thread, where it is not blocked: the process ends here.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
        libc::_exit(128 + libc::SIGPIPE)
    }
}

/// True when `e` or an error it wraps is the system's ENOMEM (a mapping or
/// a thread refused under a memory limit): reported as the allocator's
/// exhaustion is, "out of memory".
fn is_out_of_memory(e: &(dyn std::error::Error + 'static)) -> bool {
    let enomem = |e: &io::Error| e.raw_os_error() == Some(libc::ENOMEM) || e.kind() == io::ErrorKind::OutOfMemory;
    let mut next = Some(e);
    while let Some(e) = next {
        if e.downcast_ref::<io::Error>().is_some_and(enomem) || e.downcast_ref::<fasthts_io::PathError>().is_some_and(|e| enomem(&e.source)) {
            return true;
        }
        next = e.source();
    }
    false
}

/// True when `e` or an error it wraps is a write to a closed pipe.
fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || e.downcast_ref::<fasthts_io::PathError>().is_some_and(|e| e.source.kind() == io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Runs the command line `args` (the program's name first, as
/// `std::env::args_os` gives it) and returns the exit status. Installs the
/// signal thread: call once per process, before any other thread starts.
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    exhaustion::fit_allocator_to_limit();
    signals::install();
    // An interrupted command leaves all its outputs or none: each stays
    // removable by the signal handler until the command has finished. The
    // k-mer library's saves go through the same registry (fasthts-io).
    fasthts::output::hold_committed_outputs();
    run_command_line(args.into_iter().collect())
}

/// Set once [`run_in_process`] has run: the process is a host (the Python
/// package), not the command line tool.
static IN_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What [`die_of_broken_pipe`] unwinds with in a host process.
struct BrokenPipe;

/// Runs the command line `args` as [`main`] does, inside a process that
/// goes on afterwards (the Python package's samtools-style functions, as
/// pysam runs samtools' `main` in its process): no signal handling and no
/// allocator limit are installed, and a closed stdout ends the command
/// with status 141 (a shell's status for SIGPIPE) instead of the process.
pub fn run_in_process(args: Vec<std::ffi::OsString>) -> ExitCode {
    IN_PROCESS.store(true, std::sync::atomic::Ordering::SeqCst);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_command_line(args))) {
        Ok(code) => code,
        Err(payload) if payload.is::<BrokenPipe>() => ExitCode::from(128 + libc::SIGPIPE as u8),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// The command line being run, program name first (lossy UTF-8), as
/// [`main`] or [`run_in_process`] was given it: not the process's own
/// arguments, which in a host process are the host's.
static COMMAND_LINE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The running command line's words joined by spaces, program name first:
/// the `CL` of the `@PG` line a command adds, as samtools writes it.
pub(crate) fn command_line() -> String {
    COMMAND_LINE.lock().unwrap_or_else(|e| e.into_inner()).join(" ")
}

/// [`command_line`] without the program's name (`samtools stats` prints
/// its command line so).
pub(crate) fn command_line_after_program() -> String {
    COMMAND_LINE.lock().unwrap_or_else(|e| e.into_inner()).iter().skip(1).cloned().collect::<Vec<_>>().join(" ")
}

/// [`main`] after its process set-up: parses `args` and runs the command.
fn run_command_line(args: Vec<std::ffi::OsString>) -> ExitCode {
    *COMMAND_LINE.lock().unwrap_or_else(|e| e.into_inner()) = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    // The k-mer scripts' command lines are read as khmer's argparse reads them.
    let args = match kmer::argparse::preparse(&Cli::command(), args) {
        Ok(args) => args,
        Err(failure) => return failure.report(),
    };
    let cli = match command().try_get_matches_from(&args).and_then(|mut m| Cli::from_arg_matches_mut(&mut m)) {
        Ok(cli) => cli,
        Err(e) => match e.source().and_then(|s| s.downcast_ref::<Failure>()) {
            Some(failure) => return failure.report(),
            None => return report_usage_error(&e, &args),
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
            if is_broken_pipe(&*e) {
                die_of_broken_pipe();
            }
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
                None if is_out_of_memory(&*e) => {
                    eprintln!("fasthts {name}: out of memory: {e}");
                    ExitCode::FAILURE
                }
                None => {
                    eprintln!("fasthts {name}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
