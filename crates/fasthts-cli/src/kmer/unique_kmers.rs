//! `fasthts kmer unique-kmers`: unique-kmers.py, the HyperLogLog estimate
//! of the number of distinct k-mers (`fasthts_kmer::hll`).

use super::cannot_open;
use crate::Failure;
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::command::{create_in_place, file_error, refuse_unopenable_sequences};
use fasthts_kmer::hll::HllCounter;
use fasthts_kmer::seqio::SeqReader;
use fasthts_kmer::sizing::graphsize_args_report;
use std::fs::File;
use std::io::{self, BufWriter, Write};

/// unique-kmers.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Estimate number of unique k-mers, with precision <= ERROR_RATE.", after_help = "A HyperLogLog counter is used to do cardinality estimation. Since this counter
is based on a tradeoff between precision and memory consumption, the
`-e`/`--error-rate` can be used to control how much memory will be used. In
practice the memory footprint is small even at low error rates (< 0.01).

`-k`/`--ksize` should be set to the desired k-mer size.

Informational output is sent to STDERR, but a report file can be generated with
`-R`/`--report`.

`--stream-records` will write the sequences taken in to STDOUT. This is useful
for workflows: count unique kmers in a stream, then do digital normalization.

`--diagnostics` will provide detailed options for tablesize and memory
limitations for various false positive rates. This is useful for configuring
other khmer scripts. This will be written to STDERR.

Example:

    unique-kmers.py -k 17 tests/test-data/test-abund-read{,-2,-3}.fa

Example:

    unique-kmers.py -k 17 --diagnostics tests/test-data/test-abund-read.fa

Example:

    unique-kmers.py --stream-records -k 17 tests/test-data/test-reads.fa | \\
    normalize-by-median.py -k 17 -o normalized /dev/stdin

Example:

    unique-kmers.py -R unique_count -k 30 \\
    tests/test-data/test-abund-read-paired.fa", after_long_help = "A HyperLogLog counter estimates the number of distinct k-mers (khmer's: the same estimate \
for the same k, error rate and input); its memory is 2^ceil(log2((1.04/ERROR_RATE)^2)) bytes. The estimates go to \
stderr, and with -R to a report file; --diagnostics adds table sizes for other khmer scripts.

Examples:
  fasthts kmer unique-kmers -k 17 reads.fq.gz
  fasthts kmer unique-kmers -k 31 -e 0.005 -R unique.txt r1.fq.gz r2.fq.gz
  fasthts kmer unique-kmers -S -k 17 reads.fa | fasthts kmer normalize -k 17 -o normalized.fa -")]
pub struct UniqueKmersArgs {
    #[arg(long_help = "Print no progress messages (the estimates are still printed)", short = 'q', long = "quiet")]
    quiet: bool,
    #[arg(help = "k-mer size to use", short = 'k', long = "ksize", default_value = "32", allow_negative_numbers = true, value_parser = crate::numbers::whole::<u32>(1, 255))]
    ksize: u32,
    #[arg(help = "Acceptable error rate", long_help = "Acceptable error rate (0.0040624 to 0.367696)", short = 'e', long = "error-rate", default_value = "0.01", allow_negative_numbers = true, value_parser = parse_float)]
    error_rate: f64,
    #[arg(help = "generate informational report and write to filename", short = 'R', long = "report", value_name = "filename")]
    report: Option<String>,
    #[arg(help = "write input sequences to STDOUT", short = 'S', long = "stream-records")]
    stream_records: bool,
    #[arg(help = "print out recommended tablesize arguments and restrictions", long = "diagnostics")]
    diagnostics: bool,
    /// Threads counting k-mers (fasthts addition; the estimate is the same
    /// at any number) [default: all cores]
    #[arg(hide_short_help = true, short = 'T', long = "threads", visible_short_alias = '@', value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    #[arg(help = "Input FAST[AQ] sequence filename(s).", id = "input_sequence_filename", required = true)]
    input_filenames: Vec<String>,
}

/// Python's `float()`: any float, including nan and inf (khmer's counter
/// judges the value).
fn parse_float(s: &str) -> Result<f64, String> {
    s.trim().parse::<f64>().map_err(|_| format!("invalid float value: '{s}'"))
}

pub fn run(a: UniqueKmersArgs) -> crate::CmdResult {
    let inputs: Vec<&str> = a.input_filenames.iter().map(String::as_str).collect();
    super::refuse_input_as_output(&[a.report.as_deref()], None, "", &inputs)?;
    // argparse opens the report (FileType('w')) while parsing
    let report = match &a.report {
        Some(path) => Some((path.as_str(), create_in_place(path).map_err(|e| cannot_open("-R/--report", path, &e))?)),
        None => None,
    };
    let written = a.report.clone();
    estimate(&a, report).inspect_err(|_| {
        // the report is written as the inputs are read: a failure leaves
        // none of it (khmer leaves the lines written so far)
        if let Some(path) = written.filter(|p| !fasthts_io::output::is_special_file(std::path::Path::new(p))) {
            let _ = std::fs::remove_file(path);
        }
    })
}

fn estimate(a: &UniqueKmersArgs, mut report: Option<(&str, File)>) -> crate::CmdResult {
    let hll_error = |e: fasthts_kmer::hll::HllError| Failure::new(1, format!("ValueError: {e}"));
    let mut total = HllCounter::new(a.error_rate, a.ksize).map_err(hll_error)?;
    let threads = thread_count(a.threads);
    let stdout = io::stdout();
    for f in &a.input_filenames {
        let mut one = HllCounter::new(a.error_rate, a.ksize).map_err(hll_error)?;
        let reader = open_reads(f)?;
        let mut stream = a.stream_records.then(|| BufWriter::with_capacity(1 << 20, stdout.lock()));
        let sink = stream.as_mut().map(|w| w as &mut dyn Write);
        let bar = crate::progress::Bar::start("kmer unique-kmers", a.quiet, crate::progress::Source::FilePositions(vec![f.into()], None));
        let (n_reads, _) =
            one.consume_reader(reader, f, threads, sink).map_err(|e| Failure::new(1, format!("fasthts kmer unique-kmers: {e}")))?;
        drop(bar);
        if n_reads == 0 {
            return Err(Failure::new(1, format!("OSError: File {f} does not contain any sequences!")).into());
        }
        let cardinality = one.estimate_cardinality();
        eprintln!("Estimated number of unique {}-mers in {f}: {cardinality}", a.ksize);
        if let Some((path, file)) = &mut report {
            write_report(path, file, &format!("{cardinality} {} (total)\n", a.ksize))?;
        }
        total.merge(&one).expect("same parameters");
    }
    let cardinality = total.estimate_cardinality();
    eprintln!("Total estimated number of unique {}-mers: {cardinality}", a.ksize);
    let sizes = graphsize_args_report(cardinality, a.error_rate).map_err(|e| Failure::new(1, format!("ZeroDivisionError: {e}")))?;
    if a.diagnostics {
        eprintln!("{sizes}");
    }
    if let Some((path, file)) = &mut report {
        write_report(path, file, &format!("{cardinality} {} total\n{sizes}\n", a.ksize))?;
    }
    Ok(())
}

/// The reads of `path`; khmer's parser's words when it cannot be opened.
fn open_reads(path: &str) -> Result<SeqReader, Failure> {
    refuse_unopenable_sequences(path)?;
    SeqReader::open(path).map_err(|e| Failure::new(1, format!("fasthts kmer unique-kmers: {e}")))
}

fn write_report(path: &str, file: &mut File, text: &str) -> Result<(), Failure> {
    file.write_all(text.as_bytes()).map_err(|e| file_error(path, e).into())
}
