//! `fasthts kmer filter-abund-single`: filter-abund-single.py, counting (as
//! `count`) and trimming (as `filter-abund`) in one run.

use super::{
    check_inputs, cutoff_range, khmer_error, read_outputs, refuse_input_as_output, save_graph_and_free, GraphArgs, OutputCompression,
};
use crate::progress::{Bar, Source};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::{command, scripts};

/// filter-abund-single.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Trims sequences at a minimum k-mer abundance (in memory version).", after_help = "Trimmed sequences will be placed in \"${input_sequence_filename}.abundfilt\".

This script is constant memory.

To trim reads based on k-mer abundance across multiple files, use `load-into-
counting.py` and `filter-abund.py`.

Example:

    filter-abund-single.py -k 20 -x 5e7 -C 2 data/100k-filtered.fa", after_long_help = "Writes INPUT.abundfilt (its basename, in the current directory) unless -o is given.

Examples:
  fasthts kmer filter-abund-single -k 20 -M 4G -C 2 reads.fq.gz
  fasthts kmer filter-abund-single -k 20 -x 5e7 -V --savegraph reads.ct -o filtered.fq reads.fq")]
pub struct FilterSingleArgs {
    #[command(flatten)]
    graph: GraphArgs,
    #[arg(help = "Number of simultaneous threads to execute (default: 1)", long_help = "Number of simultaneous threads to execute (counting as `count`, filtering as `filter-abund`; the same output at any number) [default: all cores]", short = 'T', long = "threads", visible_short_alias = '@', value_name = "THREADS", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    #[arg(help = "Trim at k-mers below this abundance.", allow_negative_numbers = true, short = 'C', long = "cutoff", default_value = "2", value_parser = cutoff_range)]
    cutoff: u16,
    #[arg(help = "Only trim low-abundance k-mers from sequences that have high coverage.", short = 'V', long = "variable-coverage")]
    variable_coverage: bool,
    #[arg(help = "Base the variable-coverage cutoff on this median k-mer abundance.", allow_negative_numbers = true, short = 'Z', long = "normalize-to", value_name = "NORMALIZE_TO", default_value = "20", value_parser = crate::numbers::whole::<u16>(0, u16::MAX.into()))]
    normalize_to: u16,
    #[arg(help = "If present, the name of the file to save the k-mer countgraph to", long = "savegraph", value_name = "filename", default_value = "")]
    savegraph: String,
    #[arg(help = "Override default output filename and output trimmed sequences into a file with the given filename.", short = 'o', long = "outfile", value_name = "optional_output_filename")]
    outfile: Option<String>,
    #[arg(help = "Overwrite output file if it exists", short = 'f', long = "force")]
    force: bool,
    #[arg(long_help = "Print no progress messages (warnings and errors still go to stderr)", short = 'q', long = "quiet")]
    quiet: bool,
    #[command(flatten)]
    compression: OutputCompression,
    #[arg(help = "FAST[AQ] sequence file to trim", id = "input_sequence_filename")]
    datafile: String,
}

pub fn run(a: FilterSingleArgs) -> crate::CmdResult {
    let q = a.quiet;
    let log = |s: &str| {
        if !q {
            eprintln!("{s}");
        }
    };
    let input = a.datafile.as_str();
    check_inputs(&[input], a.force)?;
    command::refuse_fifo_read_twice(input, "filter-abund-single")?;
    a.graph.check(a.force, q)?;
    a.graph.report(q, None)?;
    let savegraph = (!a.savegraph.is_empty()).then_some(a.savegraph.as_str());
    refuse_input_as_output(&[savegraph], a.outfile.as_deref(), "abundfilt", &[input])?;
    log("making countgraph");
    let mut g = a.graph.create(a.force, q)?;
    if let Some(savegraph) = savegraph {
        // counted straight into the saved graph's pages where it can be
        g.map_tables_to(std::path::Path::new(savegraph));
    }
    log(&format!("consuming input, round 1 -- {input}"));
    let threads = thread_count(a.threads);
    let bar = Bar::start("kmer filter-abund-single", q, Source::FilePositions(vec![input.into()], None));
    let counted = scripts::consume_seqfile(&mut g, input, threads, None);
    drop(bar);
    counted.map_err(|e| khmer_error(format!("fasthts kmer filter-abund-single: {e}")))?;
    log(&format!("Total number of unique k-mers: {}", g.n_unique_kmers()));
    let fp = g.fp_rate();
    if let Some(block) = command::fp_rate_too_high(fp, 0.2) {
        if !a.force {
            return Err(block.into());
        }
        eprintln!("{block}");
    }
    log(&format!("fp rate estimated to be {fp:1.3}"));
    log(&format!("filtering {input}"));
    let mut outputs = read_outputs(a.outfile.as_deref(), "abundfilt", a.compression)?;
    let mut own = outputs.own(input)?;
    let w = outputs.writer(&mut own);
    let bar = Bar::start("kmer filter-abund-single", q, Source::FilePositions(vec![input.into()], None));
    scripts::filter_abund_file(&g, input, a.cutoff, a.variable_coverage, a.normalize_to, w, threads)?;
    drop(bar);
    if let Some(o) = own {
        o.commit()?;
    }
    let path = outputs.path(input);
    outputs.commit()?;
    log(&format!("output in {path}"));
    if let Some(savegraph) = savegraph {
        log(&format!("Saving k-mer countgraph filename {savegraph}"));
        save_graph_and_free(g, savegraph).map_err(khmer_error)?;
    }
    Ok(())
}
