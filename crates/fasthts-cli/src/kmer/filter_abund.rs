//! `fasthts kmer filter-abund`: filter-abund.py.

use super::{check_inputs, check_stdin_output, cutoff_range, load_graph, refuse_input_as_output, Compression, ReadOutputs};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::scripts;

/// filter-abund.py
#[derive(Args, Debug)]
pub struct FilterArgs {
    /// Number of simultaneous threads to execute (khmer ignores it; here
    /// batches are filtered in parallel and written in input order)
    /// [default: all cores]
    #[arg(short = 'T', long = "threads", visible_short_alias = '@')]
    threads: Option<usize>,
    /// Trim at k-mers below this abundance.
    #[arg(short = 'C', long = "cutoff", default_value = "2", value_parser = cutoff_range)]
    cutoff: u16,
    /// Only trim low-abundance k-mers from sequences that have high coverage.
    #[arg(short = 'V', long = "variable-coverage")]
    variable_coverage: bool,
    /// Base the variable-coverage cutoff on this median k-mer abundance.
    #[arg(short = 'Z', long = "normalize-to", default_value_t = 20)]
    normalize_to: u16,
    /// Output the trimmed sequences into a single file with the given filename instead of creating a new file for each input file.
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// Overwrite output file if it exists
    #[arg(short = 'f', long = "force")]
    force: bool,
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    #[command(flatten)]
    compression: Compression,
    input_graph: String,
    #[arg(required = true)]
    input_filename: Vec<String>,
}

pub fn run(a: FilterArgs) -> crate::CmdResult {
    let q = a.quiet;
    let gzip = a.compression.gzip()?;
    check_stdin_output(&a.input_filename, a.output.as_deref(), "-o")?;
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
    let mut outputs = ReadOutputs::new(a.output.as_deref(), "abundfilt", gzip)?;
    for f in &a.input_filename {
        if !q {
            eprintln!("filtering {f}");
        }
        let mut own = outputs.own(f)?;
        let w = outputs.writer(&mut own);
        scripts::filter_abund_file(&g, f, a.cutoff, a.variable_coverage, a.normalize_to, w, thread_count(a.threads))?;
        if let Some(o) = own {
            o.commit()?;
        }
        if !q {
            eprintln!("output in {}", outputs.path(f));
        }
    }
    Ok(outputs.commit()?)
}
