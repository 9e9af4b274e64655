//! `fasthts kmer count-median`: count-median.py.

use super::{cannot_open, check_inputs, load_graph};
use clap::Args;
use fasthts_kmer::command::{Compression, ReadOutput};
use fasthts_kmer::scripts;

/// count-median.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Count k-mers summary stats for sequences", after_help = "Count the median/avg k-mer abundance for each sequence in the input file, based
on the k-mer counts in the given k-mer countgraph.  Can be used to estimate
expression levels (mRNAseq) or coverage (genomic/metagenomic).

The output file contains sequence id, median, average, stddev, and seq length,
in comma-separated value (CSV) format.

Example:

    load-into-counting.py counts tests/test-data/test-reads.fq.gz
    count-median.py counts tests/test-data/test-reads.fq.gz medians.txt

NOTE: All 'N's in the input sequences are converted to 'A's.", after_long_help = "The output has, per sequence at least k long: its name, the median, average and standard \
deviation of its k-mer counts, and its length, as CSV. N is counted as A.

Examples:
  fasthts kmer count reads.ct reads.fq.gz
  fasthts kmer count-median reads.ct reads.fq.gz medians.csv")]
pub struct CountMedianArgs {
    #[arg(help = "Overwrite output file if it exists", short = 'f', long = "force")]
    force: bool,
    /// Print no progress messages (a fasthts addition; errors still go to stderr)
    #[arg(hide_short_help = true, short = 'q', long = "quiet")]
    quiet: bool,
    #[arg(help = "input k-mer countgraph filename", id = "input_count_graph_filename")]
    countgraph: String,
    #[arg(help = "input FAST[AQ] sequence filename", id = "input_sequence_filename")]
    input: String,
    #[arg(help = "output summary filename", long_help = "output summary filename (- for standard output)", id = "output_summary_filename")]
    output: String,
}

pub fn run(a: CountMedianArgs) -> crate::CmdResult {
    // argparse opens the output (FileType('w')) while parsing
    let mut out = ReadOutput::open(Some(&a.output), Compression::Plain).map_err(|e| cannot_open("output_summary_filename", &a.output, &e))?;
    check_inputs(&[&a.countgraph, &a.input], a.force)?;
    super::refuse_input_as_output(&[Some(a.output.as_str())], None, "", &[a.countgraph.as_str(), a.input.as_str()])?;
    if !a.quiet {
        eprintln!("loading k-mer countgraph from {}", a.countgraph);
    }
    let g = load_graph(&a.countgraph)?;
    let name = if a.output == "-" { "<stdout>" } else { a.output.as_str() };
    if !a.quiet {
        eprintln!("writing to {name}");
    }
    scripts::count_median_file(&g, &a.input, &mut out)?;
    out.commit()?;
    Ok(())
}
