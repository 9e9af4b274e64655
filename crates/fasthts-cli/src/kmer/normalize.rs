//! `fasthts kmer normalize`: normalize-by-median.py.

use super::{
    cannot_open, cutoff_range, khmer_error, load_graph, read_outputs, refuse_input_as_output, save_graph_and_free, GraphArgs,
    OutputCompression,
};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::command::{self, create_in_place, describe_output};
use fasthts_kmer::pyfmt::py_os_error;
use fasthts_kmer::scripts::{self, Diagnostics};
use std::io::{BufWriter, Write};

/// normalize-by-median.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Do digital normalization (remove mostly redundant sequences)", after_help = "Discard sequences based on whether or not their median k-mer abundance lies
above a specified cutoff. Kept sequences will be placed in <fileN>.keep.

By default, paired end reads will be considered together; if either read should
be kept, both will be kept. (This keeps both reads from a fragment, and helps
with retention of repeats.) Unpaired reads are treated individually.

If `-p`/`--paired` is set, then proper pairing is required and the script will
exit on unpaired reads, although `--unpaired-reads` can be used to supply a
file of orphan reads to be read after the paired reads.

`--force_single` will ignore all pairing information and treat reads
individually.

With `-s`/`--savegraph`, the k-mer countgraph will be saved to the specified
file after all sequences have been processed. `-l`/`--loadgraph` will load the
specified k-mer countgraph before processing the specified files.  Note that
these graphs are are in the same format as those produced by `load-into-
counting.py` and consumed by `abundance-dist.py`.

To append reads to an output file (rather than overwriting it), send output to
STDOUT with `--output -` and use UNIX file redirection syntax (`>>`) to append
to the file.

Example:

    normalize-by-median.py -k 17 tests/test-data/test-abund-read-2.fa

Example:

    normalize-by-median.py -p -k 17 \\
    tests/test-data/test-abund-read-paired.fa

Example:

    normalize-by-median.py -p -k 17 -o - tests/test-data/paired.fq \\
    >> appended-output.fq

Example:

    normalize-by-median.py -k 17 -f tests/test-data/test-error-reads.fq \\
    tests/test-data/test-fastq-reads.fq

Example:

    normalize-by-median.py -k 17 -s test.ct \\
    tests/test-data/test-abund-read-2.fa \\
    tests/test-data/test-fastq-reads.fq", after_long_help = "Writes INPUT.keep for each input (its basename, in the current directory) unless -o is given.

Examples:
  fasthts kmer normalize -k 20 -C 20 -M 4G reads.fq.gz
  fasthts kmer normalize -p -k 20 -C 20 -M 4G -o kept.fq --gzip interleaved.fq
  fasthts kmer normalize -k 20 -C 20 -M 4G -s reads.ct -R report.txt -o - reads.fq | gzip > kept.fq.gz")]
pub struct NormArgs {
    #[command(flatten)]
    graph: GraphArgs,
    #[arg(long_help = "Print no progress messages (warnings and errors still go to stderr)", short = 'q', long = "quiet")]
    quiet: bool,
    #[arg(help = "when the median k-mer coverage level is above this number the read is not kept.", allow_negative_numbers = true, short = 'C', long = "cutoff", default_value = "20", value_parser = cutoff_range)]
    cutoff: u16,
    #[arg(help = "require that all sequences be properly paired", short = 'p', long = "paired")]
    paired: bool,
    #[arg(help = "treat all sequences as single-ended/unpaired", long = "force_single")]
    force_single: bool,
    #[arg(help = "include a file of unpaired reads to which -p/--paired does not apply.", short = 'u', long = "unpaired-reads", value_name = "unpaired_reads_filename")]
    unpaired_reads: Option<String>,
    #[arg(help = "save the k-mer countgraph to disk after all reads are loaded.", short = 's', long = "savegraph", value_name = "filename")]
    savegraph: Option<String>,
    #[arg(help = "write progress report to report_filename", short = 'R', long = "report", value_name = "report_filename")]
    report: Option<String>,
    #[arg(help = "report progress every report_frequency reads", allow_negative_numbers = true, long = "report-frequency", value_name = "report_frequency", default_value = "100000", value_parser = crate::numbers::whole::<u64>(1, i64::MAX))]
    report_frequency: u64,
    #[arg(help = "continue past file reading errors", short = 'f', long = "force")]
    force: bool,
    #[arg(help = "only output a single file with the specified filename; use a single dash \"-\" to specify that output should go to STDOUT (the terminal)", long_help = "only output a single file with the specified filename; \"-\" = STDOUT", short = 'o', long = "output", value_name = "filename")]
    output: Option<String>,
    #[arg(help = "load a precomputed k-mer graph from disk", short = 'l', long = "loadgraph", value_name = "filename")]
    loadgraph: Option<String>,
    #[command(flatten)]
    compression: OutputCompression,
    /// Threads (decisions are order-dependent and made in input order; with 2
    /// or more, two threads share the tables out between them and look up
    /// and update each read's k-mers in lockstep; output equals khmer's)
    /// [default: all cores]
    #[arg(hide_short_help = true, short = 'T', long = "threads", visible_short_alias = '@', value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    #[arg(help = "Input FAST[AQ] sequence filename.", id = "input_sequence_filename", value_name = "INPUT", required = true)]
    input_filenames: Vec<String>,
}

pub fn run(a: NormArgs) -> crate::CmdResult {
    let q = a.quiet;
    if a.paired && a.force_single {
        return Err(khmer_error("ERROR: force_single and require_paired cannot both be set!").into());
    }
    a.graph.report(q, a.loadgraph.as_deref())?;
    if a.output.is_none() {
        command::refuse_duplicate_basenames(&a.input_filenames)?;
    }
    for problem in command::missing_or_empty(&a.input_filenames) {
        eprintln!("{}", problem.warning());
    }
    let inputs: Vec<&str> = a.input_filenames.iter().chain(&a.unpaired_reads).chain(&a.loadgraph).map(String::as_str).collect();
    refuse_input_as_output(&[a.savegraph.as_deref(), a.report.as_deref()], a.output.as_deref(), "keep", &inputs)?;
    let mut g = match &a.loadgraph {
        Some(l) => {
            if !q {
                eprintln!("loading k-mer countgraph from {l}");
            }
            load_graph(l)?
        }
        None => {
            a.graph.check(a.force, q)?;
            if !q {
                eprintln!("making countgraph");
            }
            a.graph.create(a.force, q)?
        }
    };
    let report: Option<Box<dyn Write + Send>> = match &a.report {
        Some(r) => Some(Box::new(BufWriter::new(create_in_place(r).map_err(|e| cannot_open("-R/--report", r, &e))?))),
        None => None,
    };
    let mut diag = Diagnostics::new(report, a.report_frequency)?;
    let mut files: Vec<(String, bool)> = a.input_filenames.iter().map(|f| (f.clone(), a.paired)).collect();
    if let Some(u) = &a.unpaired_reads {
        files.push((u.clone(), false));
    }
    if let Err(e) = command::require_output_for_stdin(&a.input_filenames, a.output.as_deref(), "'-o'") {
        // The report's header is still buffered: it is not written.
        std::mem::forget(diag);
        return Err(e.into());
    }
    let mut outputs = read_outputs(a.output.as_deref(), "keep", a.compression)?;
    let mut corrupt = Vec::new();
    for (f, require_paired) in &files {
        let mut own = outputs.own(f)?;
        let w = outputs.writer(&mut own);
        let start = diag.total;
        let options = scripts::NormalizeOptions {
            cutoff: a.cutoff,
            require_paired: *require_paired,
            force_single: a.force_single,
            threads: thread_count(a.threads),
        };
        let bar = crate::progress::Bar::start("kmer normalize", q, crate::progress::Source::FilePositions(vec![f.into()], None));
        // a missing input fails here, in Python's words, as khmer's does
        let res = match command::check_readable(f) {
            Ok(()) => scripts::normalize_file(&mut g, f, &options, w, &mut diag),
            Err(e) => Err(py_os_error(f, &e).into()),
        };
        drop(bar);
        match res {
            Ok(()) => {
                if !q {
                    if diag.total == start {
                        eprintln!("SKIPPED empty file {f}");
                    } else {
                        eprintln!(
                            "DONE with {f}; kept {} of {} or {:.1}%",
                            diag.kept,
                            diag.total,
                            100.0 * diag.kept as f64 / diag.total as f64
                        );
                    }
                }
                if let Some(o) = own {
                    o.commit()?;
                }
                if !q {
                    // after every input, also into -o's one output
                    eprintln!("output in {}", describe_output(Some(&outputs.path(f))));
                }
            }
            Err(e) => {
                let failed = format!("** ERROR: {e}\n** Failed on {f}: ");
                drop(own);
                if !a.force {
                    // No partial output (khmer leaves it); the report keeps
                    // only what was flushed, as khmer's does on this exit.
                    std::mem::forget(diag);
                    return Err(khmer_error(format!("{failed}\n** Exiting!")).into());
                }
                eprintln!("{failed}\n*** Skipping error file, moving on...");
                corrupt.push(f.clone());
            }
        }
    }
    diag.finish()?;
    outputs.commit()?;
    if !q {
        eprintln!("Total number of unique k-mers: {}", g.n_unique_kmers());
    }
    let fp = g.fp_rate();
    if let Some(s) = &a.savegraph {
        if !q {
            eprintln!("...saving to {s}");
        }
        save_graph_and_free(g, s)?;
    }
    if let Some(block) = command::fp_rate_too_high(fp, 0.8) {
        return Err(block.into());
    }
    if !q {
        eprintln!("fp rate estimated to be {fp:1.3}");
    }
    if a.force && !corrupt.is_empty() {
        eprintln!("** WARNING: Finished with errors!\n** I/O Errors occurred in the following files:\n\t{}", corrupt.join(" "));
    }
    Ok(())
}
