//! `fasthts kmer abundance-dist-single`: abundance-dist-single.py, counting
//! (as `count`) and the histogram (as `abundance-dist`) in one run.

use super::{check_inputs, khmer_error, refuse_input_as_output, save_graph_and_free, GraphArgs};
use crate::progress::{Bar, Source};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::{command, scripts};

/// abundance-dist-single.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Calculate the abundance distribution of k-mers from a single sequence file.", after_help = "Note that with `-b`/`--no-bigcount` this script is constant memory; in
exchange, k-mer counts will stop at 255. The memory usage of this script with
`-b` will be about 1.15x the product of the `-x` and `-N` numbers.

To count k-mers in multiple files use `load_into_counting.py` and
`abundance_dist.py`.

Example:

    abundance-dist-single.py -x 1e7 -N 2 -k 17 \\
            tests/test-data/test-abund-read-2.fa test-dist", after_long_help = "With -M the tables are sized as khmer sizes them here: 8/9.3 of -M / N entries each (the \
tracking Bloom filter takes the rest).

Examples:
  fasthts kmer abundance-dist-single -k 17 -M 4G reads.fq.gz reads.hist
  fasthts kmer abundance-dist-single -x 1e7 -N 2 -k 17 -z --savegraph reads.ct reads.fa reads.hist")]
pub struct AbundSingleArgs {
    #[command(flatten)]
    graph: GraphArgs,
    #[arg(help = "Number of simultaneous threads to execute (default: 1)", long_help = "Number of simultaneous threads to execute (counting as `count` does; the same histogram at any number) [default: all cores]", short = 'T', long = "threads", visible_short_alias = '@', value_name = "THREADS", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    #[arg(help = "Do not output zero-count bins (default: True)", long_help = "Do not output zero-count bins", short = 'z', long = "no-zero")]
    no_zero: bool,
    #[arg(help = "Do not count k-mers past 255 (default: True)", long_help = "Do not count k-mers past 255", short = 'b', long = "no-bigcount")]
    no_bigcount: bool,
    #[arg(help = "Overwrite output file if it exists", short = 's', long = "squash")]
    squash: bool,
    #[arg(help = "Save the k-mer countgraph to the specified filename.", long = "savegraph", value_name = "filename")]
    savegraph: Option<String>,
    #[arg(help = "Override sanity checks", short = 'f', long = "force")]
    force: bool,
    #[arg(long_help = "Print no progress messages (warnings and errors still go to stderr)", short = 'q', long = "quiet")]
    quiet: bool,
    #[arg(help = "The name of the input FAST[AQ] sequence file.", value_name = "input_sequence_filename")]
    input_sequence_filename: String,
    #[arg(help = "The name of the output histogram file. The columns are: (1) k-mer abundance, (2) k-mer count, (3) cumulative count, (4) fraction of total distinct k-mers.", long_help = "The name of the output histogram file (- for standard output). The columns are: (1) k-mer abundance, (2) k-mer count, (3) cumulative count, (4) fraction of total distinct k-mers.", value_name = "output_histogram_filename")]
    output_histogram_filename: String,
}

/// The share of -M the countgraph gets here (khmer's multiplier: the
/// tracking Bloom filter needs one bit per entry of each table).
const COUNTGRAPH_SHARE: f64 = 8.0 / (9. + 0.3);

pub fn run(a: AbundSingleArgs) -> crate::CmdResult {
    let q = a.quiet;
    let log = |s: &str| {
        if !q {
            eprintln!("{s}");
        }
    };
    a.graph.check(a.force, q)?;
    a.graph.report_as(q, None, a.graph.small_count)?;
    let input = a.input_sequence_filename.as_str();
    let out = a.output_histogram_filename.as_str();
    check_inputs(&[input], a.force)?;
    command::refuse_fifo_read_twice(input, "abundance-dist-single")?;
    refuse_input_as_output(&[Some(out), a.savegraph.as_deref()], None, "", &[input])?;
    command::check_histogram_output(out, a.squash)?;
    log("making countgraph");
    let mut g = a.graph.options().create_scaled(COUNTGRAPH_SHARE, a.force, &mut super::print_note(q))?;
    g.set_use_bigcount(!a.no_bigcount);
    log("building k-mer tracking graph");
    log(&format!("kmer_size: {}", g.ksize()));
    log(&format!("k-mer countgraph sizes: {:?}", g.sizes()));
    log(&format!("outputting to {out}"));
    log(&format!("consuming input, round 1 -- {input}"));
    let threads = thread_count(a.threads);
    let bar = Bar::start("kmer abundance-dist-single", q, Source::FilePositions(vec![input.into()], None));
    let counted = scripts::consume_seqfile(&mut g, input, threads, None);
    drop(bar);
    counted.map_err(|e| khmer_error(format!("fasthts kmer abundance-dist-single: {e}")))?;
    log(&format!("Total number of unique k-mers: {}", g.n_unique_kmers()));
    log(&format!("preparing hist from {input}..."));
    log(&format!("consuming input, round 2 -- {input}"));
    let bar = Bar::start("kmer abundance-dist-single", q, Source::FilePositions(vec![input.into()], None));
    let hist = scripts::abundance_histogram(&g, input, threads)?;
    drop(bar);
    command::write_histogram(&hist, a.no_zero, out)?;
    if let Some(path) = &a.savegraph {
        log(&format!("Saving k-mer countgraph to {path}"));
        save_graph_and_free(g, path).map_err(khmer_error)?;
    }
    log(&format!("wrote to: {out}"));
    Ok(())
}
