//! `fasthts kmer ...`: khmer's scripts with the same positional arguments,
//! options, defaults and output files.
//!
//! | subcommand       | khmer script              | module (here and in `fasthts_kmer::scripts`) |
//! |------------------|---------------------------|----------------------------------------------|
//! | `count`          | load-into-counting.py     | `count`                                      |
//! | `abundance-dist` | abundance-dist.py         | `abundance_dist`                             |
//! | `normalize`      | normalize-by-median.py    | `normalize`                                  |
//! | `filter-abund`   | filter-abund.py           | `filter_abund`                               |
//! | `trim-low-abund` | trim-low-abund.py         | `trim`                                       |
//! | `interleave-reads`, `split-paired-reads`, `extract-paired-reads`, `extract-long-sequences`, `fastq-to-fasta`, `readstats`, `sample-reads-randomly` | the scripts of the same names | `interleave`, `split_paired`, `extract_paired`, `extract_long`, `fastq_to_fasta`, `readstats`, `sample_reads` (their flags and words: `read_outputs`) |
//!
//! This module turns flags into the library's options and prints: it holds
//! what the scripts' command lines share (argument groups such as the
//! table options, [`GraphArgs`], and the value parsers) and khmer's
//! messages. What the scripts decide around their algorithms (the input
//! checks, where the outputs go and what they are called, the table
//! sizes, the summaries) is `fasthts_kmer::command`, which the Python
//! package calls too.
//!
//! Every script's command line is read first by [`argparse`], as khmer's
//! argparse reads it (its errors, status 2; `--info`, `--version`), from the
//! script's clap definition: a new script needs nothing more than its
//! `Args` with khmer's option order, value names (khmer's metavars),
//! positional ids (khmer's dests), each argument's `help` as khmer's (and
//! fasthts's own words in `long_help` where they differ), khmer's
//! description and epilog as `long_about` and `after_help`, and
//! `hide_short_help` on options khmer does not list. khmer's own error conditions exit
//! 1 with khmer's message (a [`crate::Failure`]; the library's
//! `command::Error` is one). Outputs are written under a temporary name
//! and renamed into place when complete. `-T/--threads` (`-@`)
//! defaults to all cores; the outputs are the same at any number.

pub(crate) mod argparse;
mod help;
mod abundance_dist;
mod count;
mod filter_abund;
mod normalize;
mod trim;
// the one-pass scripts
mod abundance_dist_single;
mod count_median;
mod filter_abund_single;
mod unique_kmers;
// the read-handling scripts of khmer's protocols
mod extract_long;
mod extract_paired;
mod fastq_to_fasta;
mod interleave;
mod read_outputs;
mod readstats;
mod sample_reads;
mod split_paired;

use crate::Failure;
use clap::{Args, Subcommand};
use fasthts_kmer::command::{self, ReadOutputs, TableNote, TableOptions, MAX_TABLE_BYTES};
use fasthts_kmer::Countgraph;
use read_outputs::OutputCompression;
use std::io;
use std::path::Path;

/// khmer-compatible k-mer tools.
///
/// Each script's one-line `about` is given as an attribute, not a doc
/// comment: a doc comment would also clear the `long_about` (khmer's
/// description, printed by its `--help`) that the script's `Args` sets.
#[derive(Subcommand)]
pub enum KmerCommand {
    #[command(about = "Count k-mers into a countgraph (.ct) = load-into-counting.py", infer_long_args = true)]
    Count(count::CountArgs),
    #[command(about = "Histogram of k-mer abundances = abundance-dist.py", name = "abundance-dist", infer_long_args = true)]
    AbundanceDist(abundance_dist::AbundArgs),
    #[command(about = "Digital normalisation = normalize-by-median.py", infer_long_args = true)]
    Normalize(normalize::NormArgs),
    #[command(about = "Trim reads at low-abundance k-mers using a saved countgraph = filter-abund.py", name = "filter-abund", infer_long_args = true)]
    FilterAbund(filter_abund::FilterArgs),
    #[command(about = "Two-pass streaming abundance trimming = trim-low-abund.py", name = "trim-low-abund", infer_long_args = true)]
    TrimLowAbund(trim::TrimArgs),
    #[command(about = "Interleave R1/R2 files of mates into one = interleave-reads.py", name = "interleave-reads", infer_long_args = true)]
    InterleaveReads(interleave::InterleaveArgs),
    #[command(about = "Split interleaved reads into first and second mates = split-paired-reads.py", name = "split-paired-reads", infer_long_args = true)]
    SplitPairedReads(split_paired::SplitPairedArgs),
    #[command(about = "Separate pairs from orphans = extract-paired-reads.py", name = "extract-paired-reads", infer_long_args = true)]
    ExtractPairedReads(extract_paired::ExtractPairedArgs),
    #[command(about = "Reads at least -l bases long = extract-long-sequences.py", name = "extract-long-sequences", infer_long_args = true)]
    ExtractLongSequences(extract_long::ExtractLongArgs),
    #[command(about = "FASTQ to FASTA (reads with N dropped unless -n) = fastq-to-fasta.py", name = "fastq-to-fasta", infer_long_args = true)]
    FastqToFasta(fastq_to_fasta::FastqToFastaArgs),
    #[command(about = "Bases, sequences and average length per file = readstats.py", infer_long_args = true)]
    Readstats(readstats::ReadstatsArgs),
    #[command(about = "Reservoir-sample reads or pairs (same reads as khmer for the same -R) = sample-reads-randomly.py", name = "sample-reads-randomly", infer_long_args = true)]
    SampleReadsRandomly(sample_reads::SampleReadsArgs),
    #[command(about = "Estimate the number of distinct k-mers (HyperLogLog, khmer's estimate) = unique-kmers.py", name = "unique-kmers", infer_long_args = true)]
    UniqueKmers(unique_kmers::UniqueKmersArgs),
    #[command(about = "Count k-mers and write their abundance histogram in one run = abundance-dist-single.py", name = "abundance-dist-single", infer_long_args = true)]
    AbundanceDistSingle(abundance_dist_single::AbundSingleArgs),
    #[command(about = "Count k-mers and trim reads at low-abundance k-mers in one run = filter-abund-single.py", name = "filter-abund-single", infer_long_args = true)]
    FilterAbundSingle(filter_abund_single::FilterSingleArgs),
    #[command(about = "Median, average and stddev of each read's k-mer counts = count-median.py", name = "count-median", infer_long_args = true)]
    CountMedian(count_median::CountMedianArgs),
}

impl KmerCommand {
    /// Run the subcommand.
    pub fn run(self) -> crate::CmdResult {
        let result = match self {
            KmerCommand::Count(a) => count::run(a),
            KmerCommand::AbundanceDist(a) => abundance_dist::run(a),
            KmerCommand::Normalize(a) => normalize::run(a),
            KmerCommand::FilterAbund(a) => filter_abund::run(a),
            KmerCommand::TrimLowAbund(a) => trim::run(a),
            KmerCommand::InterleaveReads(a) => interleave::run(a),
            KmerCommand::SplitPairedReads(a) => split_paired::run(a),
            KmerCommand::ExtractPairedReads(a) => extract_paired::run(a),
            KmerCommand::ExtractLongSequences(a) => extract_long::run(a),
            KmerCommand::FastqToFasta(a) => fastq_to_fasta::run(a),
            KmerCommand::Readstats(a) => readstats::run(a),
            KmerCommand::SampleReadsRandomly(a) => sample_reads::run(a),
            KmerCommand::UniqueKmers(a) => unique_kmers::run(a),
            KmerCommand::AbundanceDistSingle(a) => abundance_dist_single::run(a),
            KmerCommand::FilterAbundSingle(a) => filter_abund_single::run(a),
            KmerCommand::CountMedian(a) => count_median::run(a),
        };
        // the library's refusals are khmer's texts, printed as they are
        result.map_err(|e| match e.downcast::<command::Error>() {
            Ok(e) => Failure::from(*e).into(),
            Err(e) => e,
        })
    }
}

impl From<command::Error> for Failure {
    /// khmer's text, status 1.
    fn from(e: command::Error) -> Failure {
        khmer_error(e.to_string())
    }
}

/// `-x`: a finite number of entries up to [`MAX_TABLE_BYTES`].
fn tablesize(s: &str) -> Result<f64, String> {
    crate::numbers::real(0.0, MAX_TABLE_BYTES)(s)
}

/// khmer's `memory_setting`: a float, or a float with a decimal K/M/G/T
/// suffix (case-insensitive); finite, up to [`MAX_TABLE_BYTES`].
fn memory_setting(s: &str) -> Result<f64, String> {
    let accepted = || "expected a number of bytes from 0 to 1e15, optionally with K, M, G or T (decimal: 4G is 4e9)".to_string();
    command::parse_memory_setting(s).ok_or_else(accepted).and_then(|v| crate::numbers::in_range(v, 0.0, MAX_TABLE_BYTES).map_err(|_| accepted()))
}

fn cutoff_range(s: &str) -> Result<u16, BoxError> {
    // argparse names the type function khmer gives it (check_argument_range's _in_range)
    let v: i64 = s.trim().parse().map_err(|_| format!("invalid _in_range value: {}", argparse::py_repr(s)))?;
    if !(0..256).contains(&v) {
        // khmer's check_argument_range ends the parse: status 1, not 2
        return Err(khmer_error("\n** ERROR: khmer only supports 0 <= cutoff < 256.\n").into());
    }
    Ok(v as u16)
}

/// Table options shared by the graph-building commands (khmer_args).
#[derive(Args, Clone, Debug)]
pub struct GraphArgs {
    #[arg(help = "k-mer size to use", long_help = "k-mer size to use (up to 32, as khmer; up to 64 with --long-k)", allow_negative_numbers = true, short = 'k', long = "ksize", value_name = "KSIZE", default_value = "32", value_parser = crate::numbers::whole::<u32>(0, u32::MAX.into()))]
    ksize: u32,
    /// number of tables to use in k-mer countgraph (up to 20; more with --force)
    #[arg(hide_short_help = true, allow_negative_numbers = true, short = 'N', long = "n_tables", alias = "n-tables", value_name = "N", default_value = "4", value_parser = crate::numbers::whole::<usize>(0, i64::MAX))]
    n_tables: usize,
    #[arg(help = "approximate number of unique kmers in the input set", allow_negative_numbers = true, short = 'U', long = "unique-kmers", value_name = "UNIQUE_KMERS", default_value = "0", value_parser = crate::numbers::real(0.0, MAX_TABLE_BYTES))]
    unique_kmers: f64,
    #[arg(help = "Override the automatic FP rate setting for the current script", long_help = "Override the automatic FP rate setting for the current script (with -U)", allow_negative_numbers = true, long = "fp-rate", value_name = "FP_RATE", value_parser = crate::numbers::real(0.0, 1.0))]
    fp_rate: Option<f64>,
    /// upper bound on tablesize to use (entries per table, up to 1e15)
    #[arg(hide_short_help = true, allow_negative_numbers = true, short = 'x', long = "max-tablesize", value_name = "SIZE", default_value = "1e6", value_parser = tablesize, conflicts_with = "max_memory_usage")]
    max_tablesize: f64,
    #[arg(help = "maximum amount of memory to use for data structure", long_help = "maximum amount of memory to use for data structure, in bytes (K/M/G/T suffixes, decimal; up to 1e15); sets -x to this / N", allow_negative_numbers = true, short = 'M', long = "max-memory-usage", value_name = "MAX_MEMORY_USAGE", value_parser = memory_setting)]
    max_memory_usage: Option<f64>,
    #[arg(help = "Reduce memory usage by using a smaller counter for individual kmers.", long_help = "Reduce memory usage by using a smaller counter for individual kmers (khmer's SmallCountgraph: 4-bit counts, up to 15; -M gives 2 entries per byte)", long = "small-count")]
    small_count: bool,
    /// Allow 32 < k <= 64 (fasthts extension: 128-bit two-bit k-mers folded
    /// to a 64-bit hash; such tables are not readable by khmer)
    #[arg(long = "long-k", hide_short_help = true)]
    long_k: bool,
}

impl GraphArgs {
    /// The library's table options (`command::TableOptions`).
    fn options(&self) -> TableOptions {
        TableOptions {
            ksize: self.ksize,
            n_tables: self.n_tables,
            unique_kmers: self.unique_kmers,
            fp_rate: self.fp_rate,
            max_tablesize: self.max_tablesize,
            max_memory_usage: self.max_memory_usage,
            small_count: self.small_count,
            long_k: self.long_k,
        }
    }

    /// [`TableOptions::check`]; its notes printed.
    fn check(&self, force: bool, quiet: bool) -> Result<(), Failure> {
        Ok(self.options().check(force, &mut print_note(quiet))?)
    }

    /// khmer's `report_on_config` (with its `check_conflicting_args`): a
    /// loaded table's own k, size and number of tables are reported, after
    /// warnings that the options setting them are ignored.
    fn report(&self, quiet: bool, loadgraph: Option<&str>) -> Result<(), Failure> {
        self.report_as(quiet, loadgraph, false)
    }

    /// [`GraphArgs::report`] of the graph type a script names: with
    /// `small` (trim-low-abund and abundance-dist-single with
    /// --small-count), that of a SmallCountgraph, 2 entries per byte.
    fn report_as(&self, quiet: bool, loadgraph: Option<&str>, small: bool) -> Result<(), Failure> {
        let mut shown = self.options();
        if let Some(path) = loadgraph {
            // khmer's log_warn is not silenced by -q
            if self.ksize != 32 || self.n_tables != 4 || self.max_tablesize != 1e6 {
                eprintln!("\n*** WARNING: You are loading a saved k-mer countgraph from\n*** {path}, but have set k-mer table parameters.\n*** Your values for ksize, n_tables, and tablesize\n*** will be ignored.");
            }
            if self.unique_kmers != 0.0 || self.max_memory_usage.is_some_and(|m| m != 0.0) {
                eprintln!("\n*** WARNING: You have asked that the graph size be automatically calculated\n*** (by using -U or -M).\n*** But you are loading an existing graph!\n*** Size will NOT be set automatically.");
            }
            shown = shown.of_saved_table(path)?;
        }
        report_config(&shown, quiet, loadgraph.is_some(), small);
        Ok(())
    }

    /// [`TableOptions::create`]; its notes printed.
    fn create(&self, force: bool, quiet: bool) -> Result<Countgraph, Failure> {
        Ok(self.options().create(force, &mut print_note(quiet))?)
    }
}

/// Prints what sizing a table says (`command::TableNote`): khmer's
/// information, unless `quiet`, and its warnings.
fn print_note(quiet: bool) -> impl FnMut(TableNote) {
    move |note| {
        if !(quiet && note.is_info()) {
            eprintln!("{note}");
        }
    }
}

/// The PARAMETERS khmer reports of the table options `o` (its warning
/// about the default size is not silenced by -q).
fn report_config(o: &TableOptions, quiet: bool, loadgraph: bool, small: bool) {
    let (ts, per_byte) = if small { (o.graph_tablesize(), 2) } else { (o.tablesize(), 1) };
    // khmer's log_warn is not silenced by -q
    let warn = ts == 1e6 && !loadgraph;
    if quiet {
        if warn {
            eprintln!("\n** WARNING: tablesize is default!\n** You probably want to increase this with -M/--max-memory-usage!\n** Please read the docs!\n");
        }
        return;
    }
    let maxmem = o.n_tables as f64 * ts / per_byte as f64;
    eprintln!("\nPARAMETERS:");
    eprintln!(" - kmer size =     {} \t\t(-k)", o.ksize);
    eprintln!(" - n tables =      {} \t\t(-N)", o.n_tables);
    eprintln!(" - max tablesize = {} \t(-x)", py_g2(ts));
    eprintln!(
        "Estimated memory usage is {:.1} Gb ({} bytes = {} bytes x {} entries / {per_byte} entries per byte)",
        maxmem / 1e9,
        py_g2(maxmem),
        o.n_tables,
        py_g2(ts)
    );
    eprintln!("--------");
    if warn {
        eprintln!("\n** WARNING: tablesize is default!\n** You probably want to increase this with -M/--max-memory-usage!\n** Please read the docs!\n");
    }
}

/// Python's `'{:5.2g}'` (roughly; used only in informational stderr text).
fn py_g2(x: f64) -> String {
    let s = format!("{:.1e}", x);
    let (m, e) = s.split_once('e').unwrap();
    let e: i32 = e.parse().unwrap();
    let v = if (-4..2).contains(&e) {
        let d = (1 - e).max(0) as usize;
        let t = format!("{:.*}", d, x);
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        }
    } else {
        let m = m.trim_end_matches('0').trim_end_matches('.');
        format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    };
    format!("{v:>5}")
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An output named by an option that cannot be created: khmer opens those
/// while parsing its arguments (argparse's `FileType`), so the error is
/// argparse's, status 2.
fn cannot_open(option: &str, path: &str, e: &io::Error) -> Failure {
    Failure::new(2, format!("fasthts kmer: argument {option}: can't open '{path}': {}", fasthts_io::os_message(e)))
}

/// One of khmer's own errors (its `sys.exit(1)` paths): the text as khmer
/// prints it, status 1.
fn khmer_error(message: impl Into<String>) -> Failure {
    Failure::new(1, message)
}

/// Refuses, before anything is written, an output that is one of the
/// inputs (see `fasthts_io::output::refuse_input_as_output`). `single` is
/// the `-o` of a command that otherwise writes `<input's name>.<suffix>`
/// for each input.
fn refuse_input_as_output(outputs: &[Option<&str>], single: Option<&str>, suffix: &str, inputs: &[&str]) -> Result<(), Failure> {
    let mut written: Vec<String> = outputs.iter().flatten().map(|s| s.to_string()).collect();
    if single.is_some() || !suffix.is_empty() {
        written.extend(command::reads_output_paths(single, suffix, inputs));
    }
    Ok(command::refuse_input_as_output(&written, inputs)?)
}

/// khmer's `check_input_files` (`command::check_input_files`): what
/// `force` lets through is printed, in khmer's words.
fn check_inputs<P: AsRef<str>>(paths: &[P], force: bool) -> Result<(), Failure> {
    for problem in command::check_input_files(paths, force)? {
        eprintln!("{problem}");
    }
    Ok(())
}

/// The outputs of reads of normalize, filter-abund and trim-low-abund
/// (`command::ReadOutputs`); argparse's error for a `-o` that cannot be
/// created.
fn read_outputs(single: Option<&str>, suffix: &'static str, compression: OutputCompression) -> Result<ReadOutputs, Failure> {
    ReadOutputs::new(single, suffix, compression.into()).map_err(|e| cannot_open("-o/--output", single.unwrap_or_default(), &e))
}

/// Loads a countgraph; the error names the file.
fn load_graph(path: &str) -> Result<Countgraph, String> {
    Countgraph::load(Path::new(path)).map_err(|e| format!("{path}: {e}"))
}

/// Loads a SmallCountgraph (`--small-count --loadgraph`); the error names
/// the file.
fn load_small_graph(path: &str) -> Result<Countgraph, String> {
    Countgraph::load_small(Path::new(path)).map_err(|e| format!("{path}: {e}"))
}

/// Saves `g` to `path` (atomically, see `Countgraph::save`; its temporary
/// file is known to the signal handler through the hooks `main` installs);
/// the error names the file.
fn save_graph(g: &mut Countgraph, path: &str) -> Result<(), String> {
    g.save(Path::new(path)).map_err(|e| format!("{path}: {e}"))
}

/// [`save_graph`] for the last use of `g`: its memory is freed as the file
/// is written (see `Countgraph::save_and_free`).
fn save_graph_and_free(g: Countgraph, path: &str) -> Result<(), String> {
    g.save_and_free(Path::new(path)).map_err(|e| format!("{path}: {e}"))
}

