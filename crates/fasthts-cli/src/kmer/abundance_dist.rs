//! `fasthts kmer abundance-dist`: abundance-dist.py.

use super::{check_inputs, load_graph, refuse_input_as_output};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::command;
use fasthts_kmer::plot::PlotFormat;
use fasthts_kmer::scripts;

/// abundance-dist.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Calculate abundance distribution of the k-mers in the sequence file using a
pre-made k-mer countgraph.", after_help = "Example:

    load-into-counting.py -x 1e7 -N 2 -k 17 counts \\
            tests/test-data/test-abund-read-2.fa
    abundance-dist.py counts tests/test-data/test-abund-read-2.fa test-dist", after_long_help = "Examples:
  fasthts kmer abundance-dist reads.ct reads.fq.gz reads.hist
  fasthts kmer abundance-dist -z -s --plot reads.png reads.ct reads.fq.gz reads.hist
  fasthts kmer abundance-dist -q reads.ct reads.fq.gz - | head")]
pub struct AbundArgs {
    #[arg(help = "Do not output zero-count bins (default: True)", long_help = "Do not output zero-count bins", short = 'z', long = "no-zero")]
    no_zero: bool,
    #[arg(help = "Overwrite existing output_histogram_filename", short = 's', long = "squash")]
    squash: bool,
    #[arg(help = "Do not count k-mers past 255 (default: True)", long_help = "Do not count k-mers past 255", short = 'b', long = "no-bigcount")]
    no_bigcount: bool,
    #[arg(help = "Continue even if specified input files do not exist or are empty.", short = 'f', long = "force")]
    force: bool,
    #[arg(long_help = "Print no progress messages (warnings and errors still go to stderr)", short = 'q', long = "quiet")]
    quiet: bool,
    /// Threads: 2 or more look up counts on a second thread while the
    /// order-dependent Bloom test runs in input order (same histogram)
    /// [default: all cores]
    #[arg(hide_short_help = true, short = 'T', long = "threads", visible_short_alias = '@', value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    /// Also draw the histogram (log-scaled axes) to FILE.png or FILE.svg (fasthts addition)
    #[arg(hide_short_help = true, long = "plot", value_name = "FILE", value_parser = |s: &str| PlotFormat::from_path(s).map(|_| s.to_string()))]
    plot: Option<String>,
    #[arg(help = "The name of the input k-mer countgraph file.", value_name = "COUNTGRAPH")]
    input_count_graph_filename: String,
    #[arg(help = "The name of the input FAST[AQ] sequence file.", value_name = "INPUT")]
    input_sequence_filename: String,
    #[arg(help = "The columns are: (1) k-mer abundance, (2) k-mer count, (3) cumulative count, (4) fraction of total distinct k-mers.", long_help = "The histogram to write (- for standard output). The columns are: (1) k-mer abundance, (2) k-mer count, (3) cumulative count, (4) fraction of total distinct k-mers.", value_name = "OUTPUT")]
    output_histogram_filename: String,
}

pub fn run(a: AbundArgs) -> crate::CmdResult {
    let q = a.quiet;
    check_inputs(&[&a.input_count_graph_filename, &a.input_sequence_filename], false)?;
    let inputs = [a.input_count_graph_filename.as_str(), a.input_sequence_filename.as_str()];
    refuse_input_as_output(&[Some(a.output_histogram_filename.as_str()), a.plot.as_deref()], None, "", &inputs)?;
    if !q {
        eprintln!("Loading counting graph from {}", a.input_count_graph_filename);
    }
    let mut g = load_graph(&a.input_count_graph_filename)?;
    if !g.use_bigcount() && !a.no_bigcount && !q {
        eprintln!("WARNING: The loaded graph has bigcount DISABLED while bigcount reporting is ENABLED--counts higher than 255 will not be reported.");
    }
    g.set_use_bigcount(!a.no_bigcount);
    let out = &a.output_histogram_filename;
    if !q {
        eprintln!("K: {}", g.ksize());
        eprintln!("outputting to {out}");
    }
    if command::check_histogram_output(out, a.squash)? && !q {
        eprintln!("** squashing existing file {out}");
    }
    if !q {
        eprintln!("preparing hist...");
    }
    let bar = crate::progress::Bar::start("kmer abundance-dist", q, crate::progress::Source::FilePositions(vec![(&a.input_sequence_filename).into()], None));
    let hist = scripts::abundance_histogram(&g, &a.input_sequence_filename, thread_count(a.threads))?;
    drop(bar);
    command::write_histogram(&hist, a.no_zero, out)?;
    if let Some(p) = &a.plot {
        fasthts_kmer::plot::write_plot(&hist, p)?;
    }
    Ok(())
}
