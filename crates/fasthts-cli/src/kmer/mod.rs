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
//! | `interleave-reads`, `split-paired-reads`, `extract-paired-reads`, `extract-long-sequences`, `fastq-to-fasta`, `readstats`, `sample-reads-randomly` | the scripts of the same names | `interleave`, `split_paired`, `extract_paired`, `extract_long`, `fastq_to_fasta`, `readstats`, `sample_reads` (their outputs: `read_outputs`) |
//!
//! This module holds what the scripts share: argument groups such as the
//! table options ([`GraphArgs`]), the value parsers, the input checks and
//! the output files.
//!
//! Every script's command line is read first by [`argparse`], as khmer's
//! argparse reads it (its errors, status 2; `--info`, `--version`), from the
//! script's clap definition: a new script needs nothing more than its
//! `Args` with khmer's option order, value names (khmer's metavars),
//! positional ids (khmer's dests), each argument's `help` as khmer's (and
//! fasthts's own words in `long_help` where they differ), khmer's
//! description and epilog as `long_about` and `after_help`, and
//! `hide_short_help` on options khmer does not list. khmer's own error conditions exit
//! 1 with khmer's message (a [`crate::Failure`]). Outputs are written under a
//! temporary name and renamed into place when complete. `-T/--threads` (`-@`)
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
use read_outputs::{OutputCompression, ReadOutput};
use fasthts_kmer::primes::tablesize_from_float;
use fasthts_kmer::pyfmt::py_repr;
use fasthts_kmer::Countgraph;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
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
        match self {
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
        }
    }
}

/// The largest table size (`-x`, and `-M`'s total) taken: 1e15 bytes.
/// Larger has no use, and near 2^63 the table's allocation overflows and
/// the prime search (trial division, as khmer's) takes hours.
const MAX_TABLE_BYTES: f64 = 1e15;

/// `-x`: a finite number of entries up to [`MAX_TABLE_BYTES`].
fn tablesize(s: &str) -> Result<f64, String> {
    crate::numbers::real(0.0, MAX_TABLE_BYTES)(s)
}

/// khmer's `memory_setting`: a float, or a float with a decimal K/M/G/T
/// suffix (case-insensitive); finite, up to [`MAX_TABLE_BYTES`].
fn memory_setting(s: &str) -> Result<f64, String> {
    let accepted = || "expected a number of bytes from 0 to 1e15, optionally with K, M, G or T (decimal: 4G is 4e9)".to_string();
    parse_memory_setting(s).ok_or_else(accepted).and_then(|v| crate::numbers::in_range(v, 0.0, MAX_TABLE_BYTES).map_err(|_| accepted()))
}

fn parse_memory_setting(s: &str) -> Option<f64> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return Some(v);
    }
    let (prefix, suffix) = s.split_at(s.len().saturating_sub(1));
    let mult = match suffix.to_ascii_uppercase().as_str() {
        "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    };
    prefix.trim().parse::<f64>().ok().map(|v| v * mult)
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
    fn tablesize(&self) -> f64 {
        match self.max_memory_usage {
            Some(m) if m != 0.0 => m / self.n_tables as f64,
            _ => self.max_tablesize,
        }
    }

    /// Entries per table of the graph made: with -M, 2 per byte for
    /// --small-count (khmer's `calculate_graphsize` of a smallcountgraph).
    fn graph_tablesize(&self) -> f64 {
        match self.max_memory_usage {
            Some(m) if m != 0.0 && self.small_count => 2.0 * m / self.n_tables as f64,
            _ => self.tablesize(),
        }
    }

    fn check(&self, force: bool, quiet: bool) -> Result<(), Failure> {
        if self.n_tables > 20 {
            if !force {
                return Err(khmer_error("\n** ERROR: khmer only supports number of tables <= 20.\n"));
            } else if !quiet {
                eprintln!("\n*** Warning: Maximum recommended number of tables is 20, discarded by force nonetheless!\n");
            }
        }
        if self.ksize > 32 && !self.long_k {
            return Err(khmer_error(
                "\n** ERROR: khmer only supports k-mer sizes <= 32.\n** (fasthts takes 32 < k <= 64 with --long-k; khmer cannot read such tables)\n",
            ));
        }
        if self.ksize > 64 {
            return Err(khmer_error("\n** ERROR: fasthts --long-k supports k-mer sizes <= 64.\n"));
        }
        if self.ksize == 0 {
            return Err(khmer_error("\n** ERROR: k-mer size must be at least 1.\n"));
        }
        if self.n_tables == 0 || self.n_tables > 255 {
            return Err(khmer_error("** ERROR: the number of tables must be between 1 and 255"));
        }
        Ok(())
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
        let mut shown = self.clone();
        if let Some(path) = loadgraph {
            // khmer's log_warn is not silenced by -q
            if self.ksize != 32 || self.n_tables != 4 || self.max_tablesize != 1e6 {
                eprintln!("\n*** WARNING: You are loading a saved k-mer countgraph from\n*** {path}, but have set k-mer table parameters.\n*** Your values for ksize, n_tables, and tablesize\n*** will be ignored.");
            }
            if self.unique_kmers != 0.0 || self.max_memory_usage.is_some_and(|m| m != 0.0) {
                eprintln!("\n*** WARNING: You have asked that the graph size be automatically calculated\n*** (by using -U or -M).\n*** But you are loading an existing graph!\n*** Size will NOT be set automatically.");
            }
            // khmer reads the header here and fails on any table it cannot
            // (an empty or missing file too), before the parameters: its
            // words (in a traceback there), with the reason
            let (k, n, size) = Countgraph::peek_info(Path::new(path))
                .map_err(|e| khmer_error(format!("** ERROR: Count graph file '{path}' is corrupt ({e})")))?;
            (shown.ksize, shown.n_tables, shown.max_tablesize) = (k, n, size as f64);
        }
        shown.report_config(quiet, loadgraph.is_some(), small);
        Ok(())
    }

    fn report_config(&self, quiet: bool, loadgraph: bool, small: bool) {
        let (ts, per_byte) = if small { (self.graph_tablesize(), 2) } else { (self.tablesize(), 1) };
        // khmer's log_warn is not silenced by -q
        let warn = ts == 1e6 && !loadgraph;
        if quiet {
            if warn {
                eprintln!("\n** WARNING: tablesize is default!\n** You probably want to increase this with -M/--max-memory-usage!\n** Please read the docs!\n");
            }
            return;
        }
        let maxmem = self.n_tables as f64 * ts / per_byte as f64;
        eprintln!("\nPARAMETERS:");
        eprintln!(" - kmer size =     {} \t\t(-k)", self.ksize);
        eprintln!(" - n tables =      {} \t\t(-N)", self.n_tables);
        eprintln!(" - max tablesize = {} \t(-x)", py_g2(ts));
        eprintln!(
            "Estimated memory usage is {:.1} Gb ({} bytes = {} bytes x {} entries / {per_byte} entries per byte)",
            maxmem / 1e9,
            py_g2(maxmem),
            self.n_tables,
            py_g2(ts)
        );
        eprintln!("--------");
        if warn {
            eprintln!("\n** WARNING: tablesize is default!\n** You probably want to increase this with -M/--max-memory-usage!\n** Please read the docs!\n");
        }
    }

    /// khmer's `create_countgraph` (a SmallCountgraph with --small-count):
    /// the table, sized by -x, -M, or with `-U` by khmer's `_check_fp_rate`
    /// for the scripts' false-positive ceiling of 0.1 (or --fp-rate).
    fn create(&self, force: bool, quiet: bool) -> Result<Countgraph, Failure> {
        let sized = self.sized_for_unique_kmers(0.1, force, quiet)?;
        sized.create_sized(sized.graph_tablesize())
    }

    /// A Countgraph (a SmallCountgraph with --small-count) of `size`
    /// entries per table (made a whole number as khmer does).
    fn create_sized(&self, size: f64) -> Result<Countgraph, Failure> {
        let x = tablesize_from_float(size);
        let made = if self.small_count {
            Countgraph::new_small(self.ksize, x, self.n_tables)
        } else {
            Countgraph::new(self.ksize, x, self.n_tables)
        };
        made.map_err(|e| khmer_error(e.to_string()))
    }

    /// khmer's `_check_fp_rate`. With -U and -M: refuses (unless --force)
    /// a memory ceiling whose estimated false-positive rate is above
    /// `max_fp`; the sizes stay -M's. With -U alone: -M is set to the memory
    /// khmer's estimate needs for `max_fp` (at least 1e6), unless -x is
    /// smaller than the table that needs, which is only warned about. The
    /// number of tables stays -N's, as khmer's.
    fn sized_for_unique_kmers(&self, max_fp: f64, force: bool, quiet: bool) -> Result<GraphArgs, Failure> {
        let mut sized = self.clone();
        let unique = self.unique_kmers;
        if unique == 0.0 {
            return Ok(sized);
        }
        let mut max_fp = max_fp;
        if let Some(fp) = self.fp_rate.filter(|&f| f != 0.0) {
            if !quiet {
                eprintln!("*** INFO: Overriding default fp {} with new fp: {}", py_repr(max_fp), py_repr(fp));
            }
            max_fp = fp;
        }
        match self.max_memory_usage.filter(|&m| m != 0.0) {
            Some(m) => {
                // (A table of 0 entries: khmer divides by zero; refused here.)
                let fp_rate = fasthts_kmer::sizing::optimal_with_memory(unique as u64, m).map_or(1.0, |e| e.fp_rate);
                if fp_rate > max_fp {
                    eprintln!(
                        "\n*** ERROR: The given restrictions yield an estimate false positive rate of {},\n*** which is above the recommended false positive ceiling of {}!",
                        py_repr(fp_rate),
                        py_repr(max_fp)
                    );
                    if !force {
                        return Err(khmer_error("NOTE: This can be overridden using the --force argument\n*** Aborting...!"));
                    }
                }
            }
            None => {
                let estimate = fasthts_kmer::sizing::optimal_with_fp_rate(unique as u64, max_fp).map_err(|e| khmer_error(format!("ZeroDivisionError: {e}")))?;
                if self.max_tablesize != 0.0 && self.max_tablesize < estimate.table_size as f64 {
                    eprintln!("\n*** Warning: The given tablesize is too small!");
                    eprintln!("*** Recommended tablesize is: {:>5} bytes", py_g(estimate.table_size as f64));
                    eprintln!("*** Current is: {:>5} bytes", py_g(self.max_tablesize));
                    let current = fasthts_kmer::sizing::optimal_with_memory(unique as u64, self.max_tablesize).map_or(1.0, |e| e.fp_rate);
                    eprintln!("*** Estimated FP rate with current config is: {}\n", py_repr(current));
                } else {
                    let memory = estimate.mem_use as f64;
                    let ceiling = if memory < 1e6 { 1e6 } else { memory };
                    sized.max_memory_usage = Some(ceiling);
                    if !quiet {
                        eprintln!("*** INFO: set memory ceiling automatically.");
                        eprintln!("*** Ceiling is: {:>3} bytes\n", py_g(ceiling));
                    }
                }
            }
        }
        Ok(sized)
    }
}

/// Python's `format(x, 'g')` (6 significant digits).
fn py_g(x: f64) -> String {
    let s = fasthts_kmer::pyfmt::py_general(x, 6);
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
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

/// The scripts that read their input twice (count, then filter or
/// histogram: the `-single` ones) refuse a named FIFO, which can be read
/// once: khmer opens it again for the second pass and waits for ever for
/// a writer. (A pipe on standard input gives an empty second pass, as
/// khmer's does.)
fn refuse_fifo_read_twice(path: &str, script: &str) -> Result<(), Failure> {
    use std::os::unix::fs::FileTypeExt;
    if path != "-" && std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
        return Err(khmer_error(format!(
            "ERROR: {path} is a FIFO, and {script} reads its input twice (to count, then to use the counts): give it a file"
        )));
    }
    Ok(())
}

/// Refuses, before anything is written, an output that is one of the
/// inputs (see `fasthts_io::output::refuse_input_as_output`). `single` is
/// the `-o` of a command that otherwise writes `<input's name>.<suffix>`
/// for each input.
fn refuse_input_as_output(outputs: &[Option<&str>], single: Option<&str>, suffix: &str, inputs: &[&str]) -> Result<(), Failure> {
    let mut written: Vec<String> = outputs.iter().flatten().map(|s| s.to_string()).collect();
    match single {
        Some(path) => written.push(path.to_string()),
        None if !suffix.is_empty() => written.extend(inputs.iter().map(|f| format!("{}.{suffix}", basename(f)))),
        None => {}
    }
    fasthts_io::output::refuse_input_as_output(&written, inputs).map_err(|e| khmer_error(e.to_string()))
}

/// khmer's `check_input_files` on each of `paths`: a missing or empty file
/// is an error, or with `force` a message.
fn check_inputs<P: AsRef<str>>(paths: &[P], force: bool) -> Result<(), Failure> {
    paths.iter().try_for_each(|p| check_input_file(p.as_ref(), force))
}

fn check_input_file(path: &str, force: bool) -> Result<(), Failure> {
    if path == "-" {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Err(_) => {
            if force {
                eprintln!("ERROR: Input file {path} does not exist");
                return Ok(());
            }
            Err(khmer_error(format!(
                "ERROR: Input file {path} does not exist\nNOTE: This can be overridden using the --force argument\nExiting"
            )))
        }
        Ok(m) => {
            use std::os::unix::fs::FileTypeExt;
            let ft = m.file_type();
            if ft.is_block_device() || ft.is_fifo() || ft.is_char_device() {
                return Ok(());
            }
            if m.len() == 0 {
                if force {
                    eprintln!("ERROR: Input file {path} is empty; exiting.");
                    return Ok(());
                }
                return Err(khmer_error(format!(
                    "ERROR: Input file {path} is empty; exiting.\nNOTE: This can be overridden using the --force argument"
                )));
            }
            Ok(())
        }
    }
}

/// khmer's refusal to name outputs after standard input: with `-` or
/// `/dev/stdin` among `inputs`, an `output` (`-o`, spelt `option` in the
/// message) is needed.
fn check_stdin_output(inputs: &[String], output: Option<&str>, option: &str) -> Result<(), Failure> {
    match output {
        None if inputs.iter().any(|f| f == "-" || f == "/dev/stdin") => {
            Err(khmer_error(format!("Accepting input from stdin; output filename must be provided with {option}.")))
        }
        _ => Ok(()),
    }
}

/// Whether output `path` is standard output.
fn is_stdout(path: &str) -> bool {
    path == "-" || path == "/dev/stdout"
}

/// Where normalize, filter-abund and trim-low-abund write reads: every
/// input's to one file (`-o`), or each input's to its own, named after it
/// (`<file name>.<suffix>`, as khmer names them).
struct ReadOutputs {
    single: Option<(String, ReadOutput)>,
    suffix: &'static str,
    compression: OutputCompression,
}

impl ReadOutputs {
    fn new(single: Option<&str>, suffix: &'static str, compression: OutputCompression) -> Result<ReadOutputs, Failure> {
        let open = |path: &str| ReadOutput::open(Some(path), compression).map_err(|e| cannot_open("-o/--output", path, &e));
        let single = single.map(|path| open(path).map(|file| (path.to_string(), file))).transpose()?;
        Ok(ReadOutputs { single, suffix, compression })
    }

    /// Where `input`'s reads go.
    fn path(&self, input: &str) -> String {
        match &self.single {
            Some((path, _)) => path.clone(),
            None => format!("{}.{}", basename(input), self.suffix),
        }
    }

    /// `input`'s own output file, created now; `None` with `-o`.
    fn own(&self, input: &str) -> io::Result<Option<ReadOutput>> {
        match self.single {
            Some(_) => Ok(None),
            None => ReadOutput::open(Some(&self.path(input)), self.compression).map(Some),
        }
    }

    /// The writer of an input whose [`ReadOutputs::own`] file is `own`.
    fn writer<'a>(&'a mut self, own: &'a mut Option<ReadOutput>) -> &'a mut dyn Write {
        match (own, &mut self.single) {
            (Some(file), _) | (None, Some((_, file))) => file,
            (None, None) => unreachable!("an input without an output"),
        }
    }

    /// Commits the single output (each input's own is committed by its caller).
    fn commit(self) -> Result<(), Failure> {
        self.single.map_or(Ok(()), |(_, file)| file.commit())
    }
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

fn basename(path: &str) -> String {
    Path::new(path).file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.to_string())
}

fn fp_error_block(fp: f64, max: f64) -> String {
    format!(
        "**\n** ERROR: the graph structure is too small for \n** this data set.  Increase data structure size\n** with --max_memory_usage/-M.\n**\n** Do not use these results!!\n**\n** (estimated false positive rate of {fp:.3}; max recommended {max:.3})\n**"
    )
}

/// Creates an output written in place as the command goes (khmer's
/// `.info`, report and summary files), registered so that an interrupted
/// run leaves none of it (see `fasthts::output::hold_committed_outputs`).
fn create_in_place(path: &str) -> io::Result<File> {
    fasthts_io::output::create_in_place(Path::new(path))
}

/// [`create_in_place`] with all of its text at once; the error names the file.
fn write_in_place(path: &str, text: &str) -> Result<(), Failure> {
    create_in_place(path).and_then(|mut f| f.write_all(text.as_bytes())).map_err(|e| file_error(path, &e))
}

/// `path: <OS error>`, as one of khmer's errors.
fn file_error(path: &str, e: &io::Error) -> Failure {
    khmer_error(format!("{path}: {}", fasthts_io::os_message(e)))
}

/// Appends to a file that exists: if an interrupted run's signal handler
/// has just removed it, it stays removed.
fn append_line(path: &str, line: &str) -> Result<(), Failure> {
    let mut f = OpenOptions::new().append(true).open(path).map_err(|e| file_error(path, &e))?;
    f.write_all(line.as_bytes()).map_err(|e| file_error(path, &e))
}
