//! `fasthts kmer count`: load-into-counting.py.

use super::{check_inputs, khmer_error, refuse_input_as_output, save_graph, save_graph_and_free, GraphArgs};
use crate::progress::{Bar, Source};
use crate::Failure;
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::command::{append_line, count_info_path, fp_rate_too_high, write_in_place, CountSummary, SummaryFormat};
use fasthts_kmer::scripts;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// load-into-counting.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Build a k-mer countgraph from the given sequences.", after_help = "Note: with `-b`/`--no-bigcount` the output will be the exact size of the k-mer
countgraph and this script will use a constant amount of memory. In exchange
k-mer counts will stop at 255. The memory usage of this script with `-b` will
be about 1.15x the product of the `-x` and `-N` numbers.

Example:

    load-into-counting.py -k 20 -x 5e7 out data/100k-filtered.fa

Multiple threads can be used to accelerate the process, if you have extra cores
to spare.

Example:

    load-into-counting.py -k 20 -x 5e7 -T 4 out data/100k-filtered.fa", after_long_help = "Writes OUTPUT (the countgraph, as khmer's .ct) and OUTPUT.info.

Examples:
  fasthts kmer count -k 20 -M 4G reads.ct reads.fq.gz
  fasthts kmer count -k 31 -N 4 -x 1e8 -s json -T 8 reads.ct r1.fq.gz r2.fq.gz
  fasthts kmer count --long-k -k 45 -M 8G reads.ct reads.fa    (k > 32: not readable by khmer)")]
pub struct CountArgs {
    #[command(flatten)]
    graph: GraphArgs,
    #[arg(help = "Number of simultaneous threads to execute (default: 1)", long_help = "Number of simultaneous threads to execute (the tables are shared out between them; the same table at any number) [default: all cores]", short = 'T', long = "threads", visible_short_alias = '@', value_name = "THREADS", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    #[arg(help = "The default behaviour is to count past 255 using bigcount. This flag turns bigcount off, limiting counts to 255. (default: True)", long_help = "Do not count past 255 (counting past 255 with bigcount is the usual behaviour).", short = 'b', long = "no-bigcount")]
    no_bigcount: bool,
    #[arg(help = "What format should the machine readable run summary be in? (`json` or `tsv`, disabled by default)", long_help = "What format should the machine readable run summary be in? (json or tsv)", short = 's', long = "summary-info", value_name = "FORMAT", value_parser = ["json", "tsv"])]
    summary_info: Option<String>,
    #[arg(help = "Overwrite output file if it exists", short = 'f', long = "force")]
    force: bool,
    #[arg(long_help = "Print no progress messages (warnings and errors still go to stderr)", short = 'q', long = "quiet")]
    quiet: bool,
    /// A fasthts addition, not khmer's: one line on stderr after the table
    /// is saved, "counted R reads, B bp in S s (M Mbp/s); saved in T s"
    /// (for benchmarks: the counting's time apart from the process's)
    #[arg(hide_short_help = true, long = "timings")]
    timings: bool,
    #[arg(help = "The name of the file to write the k-mer countgraph to.", value_name = "OUTPUT")]
    output_countgraph_filename: String,
    #[arg(help = "The names of one or more FAST[AQ] input sequence files.", value_name = "INPUT", required = true)]
    input_sequence_filename: Vec<String>,
}

pub fn run(a: CountArgs) -> crate::CmdResult {
    let info = count_info_path(&a.output_countgraph_filename);
    // The .info file is written as counting goes (as khmer does): it is
    // part of the output, so it goes when the count fails or is interrupted
    // (it stays registered with the signal handler until `main` is done).
    // Except, as in khmer, when the table is too small: that error comes
    // after the table and its .info are written, and leaves them.
    let removing_info = |e: Failure| {
        let _ = std::fs::remove_file(&info);
        e
    };
    let counted = count_and_save(&a, &info).map_err(removing_info)?;
    if let Some(block) = fp_rate_too_high(counted.fp, 0.2) {
        if !a.force {
            return Err(block.into());
        }
        eprintln!("{block}");
    }
    Ok(count_summary(&a, &info, &counted).map_err(removing_info)?)
}

/// What `count` reports once the table is saved.
struct Counted {
    fp: f64,
    n_kmers: u64,
    reads: u64,
    bases: u64,
    count_secs: f64,
    save_secs: f64,
}

fn count_and_save(a: &CountArgs, info: &str) -> Result<Counted, Failure> {
    let q = a.quiet;
    a.graph.check(a.force, q)?;
    a.graph.report(q, None)?;
    let base = &a.output_countgraph_filename;
    check_inputs(&a.input_sequence_filename, a.force)?;
    let inputs: Vec<&str> = a.input_sequence_filename.iter().map(String::as_str).collect();
    refuse_input_as_output(&[Some(base.as_str()), Some(info)], None, "", &inputs)?;
    if !q {
        eprintln!("Saving k-mer countgraph to {base}");
        eprintln!("Loading kmers from sequences in {}", py_list(&a.input_sequence_filename));
    }
    // khmer writes its own version here; fasthts names itself.
    write_in_place(info, &format!("fasthts version: {}\n", env!("CARGO_PKG_VERSION")))?;
    if !q {
        eprintln!("making countgraph");
    }
    let mut g = a.graph.create(a.force, q)?;
    // counted straight into the output's pages where it can be (else on
    // the heap, saved at the end: the same bytes)
    g.map_tables_to(std::path::Path::new(base));
    g.set_use_bigcount(!a.no_bigcount);
    let threads = thread_count(a.threads);
    let (mut total_reads, mut total_bases) = (0u64, 0u64);
    // Reads and bases so far, which the counting updates as it goes.
    let done = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let t0 = Instant::now();
    for (index, f) in a.input_sequence_filename.iter().enumerate() {
        if !q {
            eprintln!("consuming input {f}");
        }
        // The bar is up while this input is read (the messages between
        // inputs are not drawn over).
        let message = {
            let done = Arc::clone(&done);
            Box::new(move || format!("{} reads, {:.1} Mbp", done.0.load(Relaxed), done.1.load(Relaxed) as f64 / 1e6))
        };
        let bar = Bar::start("kmer count", q, Source::FilePositions(vec![f.into()], Some(message)));
        let cb = |r: u64, b: u64| {
            done.0.store(total_reads + r, Relaxed);
            done.1.store(total_bases + b, Relaxed);
        };
        let r = scripts::consume_seqfile(&mut g, f, threads, Some(&cb));
        drop(bar);
        // bad input: no partial outputs
        let r = r.map_err(|e| khmer_error(format!("fasthts kmer count: {e}")))?;
        if let Some(at) = r.empty_sequence_at {
            // khmer: the consuming thread dies with this exception; the
            // reads before it stay counted and the script goes on.
            eprintln!("Exception in thread (consume_seqfile): {f}: record {}: Sequence is empty", at + 1);
        }
        if index > 0 && index % 10 == 0 {
            if !q {
                eprintln!("mid-save {base}");
            }
            save_graph(&mut g, base).map_err(khmer_error)?;
        }
        append_line(info, &format!("through {f}\n"))?;
        total_reads += r.n_reads;
        total_bases += r.n_bases;
    }
    let count_secs = t0.elapsed().as_secs_f64();
    let n_kmers = g.n_unique_kmers();
    if !q {
        eprintln!("Total number of unique k-mers: {n_kmers}");
    }
    append_line(info, &format!("Total number of unique k-mers: {n_kmers}\n"))?;
    if !q {
        eprintln!("saving {base}");
    }
    let t_save = Instant::now();
    let fp = g.fp_rate();
    save_graph_and_free(g, base).map_err(khmer_error)?;
    let save_secs = t_save.elapsed().as_secs_f64();
    Ok(Counted { fp, n_kmers, reads: total_reads, bases: total_bases, count_secs, save_secs })
}

/// The end of the .info file, the summary file (`-s`) and the closing report.
fn count_summary(a: &CountArgs, info: &str, c: &Counted) -> Result<(), Failure> {
    let (q, base, fp) = (a.quiet, &a.output_countgraph_filename, c.fp);
    append_line(info, &format!("fp rate estimated to be {fp:1.3}\n\n"))?;
    if let Some(format) = a.summary_info.as_deref().and_then(SummaryFormat::from_name) {
        let summary = CountSummary { countgraph: base, fp_rate: fp, n_kmers: c.n_kmers, n_reads: c.reads, files: &a.input_sequence_filename };
        let mr_file = summary.path(format);
        if !q {
            eprintln!("Writing summmary info to {mr_file}");
        }
        write_in_place(&mr_file, &summary.text(format))?;
    }
    if !q {
        eprintln!("fp rate estimated to be {fp:1.3}");
        eprintln!("DONE.");
        eprintln!("wrote to: {info}");
    }
    if a.timings {
        eprintln!(
            "counted {} reads, {} bp in {:.2} s ({:.1} Mbp/s); saved in {:.2} s",
            c.reads,
            c.bases,
            c.count_secs,
            c.bases as f64 / 1e6 / c.count_secs.max(1e-9),
            c.save_secs
        );
    }
    Ok(())
}

fn py_list(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", items.join(", "))
}
