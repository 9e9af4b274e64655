//! `fasthts kmer filter-abund`: filter-abund.py.

use super::{check_inputs, cutoff_range, load_graph, read_outputs, refuse_input_as_output, OutputCompression};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::{command, scripts};

/// filter-abund.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Trim sequences at a minimum k-mer abundance.", after_help = "Trimmed sequences will be placed in \"${input_sequence_filename}.abundfilt\" for
each input sequence file. If the input sequences are from RNAseq or metagenome
sequencing then `--variable-coverage` should be used.

Example:

    load-into-counting.py -k 20 -x 5e7 countgraph data/100k-filtered.fa
    filter-abund.py -C 2 countgraph data/100k-filtered.fa", after_long_help = "Writes INPUT.abundfilt for each input (its basename, in the current directory) unless -o is given.

Examples:
  fasthts kmer filter-abund reads.ct reads.fq.gz
  fasthts kmer filter-abund -C 3 -V -Z 20 -o filtered.fq reads.ct r1.fq r2.fq")]
pub struct FilterArgs {
    #[arg(help = "Number of simultaneous threads to execute (default: 1)", long_help = "Number of simultaneous threads to execute (khmer ignores it; here batches are filtered in parallel and written in input order) [default: all cores]", short = 'T', long = "threads", visible_short_alias = '@', value_name = "THREADS", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    #[arg(help = "Trim at k-mers below this abundance.", allow_negative_numbers = true, short = 'C', long = "cutoff", default_value = "2", value_parser = cutoff_range)]
    cutoff: u16,
    #[arg(help = "Only trim low-abundance k-mers from sequences that have high coverage.", short = 'V', long = "variable-coverage")]
    variable_coverage: bool,
    #[arg(help = "Base the variable-coverage cutoff on this median k-mer abundance.", allow_negative_numbers = true, short = 'Z', long = "normalize-to", value_name = "NORMALIZE_TO", default_value = "20", value_parser = crate::numbers::whole::<u16>(0, u16::MAX.into()))]
    normalize_to: u16,
    #[arg(help = "Output the trimmed sequences into a single file with the given filename instead of creating a new file for each input file.", short = 'o', long = "output", value_name = "optional_output_filename")]
    output: Option<String>,
    #[arg(help = "Overwrite output file if it exists", short = 'f', long = "force")]
    force: bool,
    #[arg(long_help = "Print no progress messages (warnings and errors still go to stderr)", short = 'q', long = "quiet")]
    quiet: bool,
    #[command(flatten)]
    compression: OutputCompression,
    #[arg(help = "The input k-mer countgraph filename", long_help = "The countgraph (from fasthts kmer count) to look up abundances in.", id = "input_count_graph_filename", value_name = "COUNTGRAPH")]
    input_graph: String,
    #[arg(help = "Input FAST[AQ] sequence filename", long_help = "FAST[AQ] sequence files to filter.", id = "input_sequence_filename", value_name = "INPUT", required = true)]
    input_filename: Vec<String>,
}

pub fn run(a: FilterArgs) -> crate::CmdResult {
    let q = a.quiet;
    command::require_output_for_stdin(&a.input_filename, a.output.as_deref(), "-o")?;
    check_inputs(&a.input_filename, a.force)?;
    let inputs: Vec<&str> = a.input_filename.iter().chain([&a.input_graph]).map(String::as_str).collect();
    refuse_input_as_output(&[], a.output.as_deref(), "abundfilt", &inputs)?;
    if !q {
        eprintln!("loading countgraph: {}", a.input_graph);
    }
    let g = load_graph(&a.input_graph)?;
    if !q {
        eprintln!("K: {}", g.ksize());
    }
    let mut outputs = read_outputs(a.output.as_deref(), "abundfilt", a.compression)?;
    for f in &a.input_filename {
        if !q {
            eprintln!("filtering {f}");
        }
        let mut own = outputs.own(f)?;
        let w = outputs.writer(&mut own);
        let bar = crate::progress::Bar::start("kmer filter-abund", q, crate::progress::Source::FilePositions(vec![f.into()], None));
        scripts::filter_abund_file(&g, f, a.cutoff, a.variable_coverage, a.normalize_to, w, thread_count(a.threads))?;
        drop(bar);
        if let Some(o) = own {
            o.commit()?;
        }
        if !q {
            eprintln!("output in {}", outputs.path(f));
        }
    }
    Ok(outputs.commit()?)
}
