//! `fasthts kmer filter-abund`: filter-abund.py.

use super::{basename, check_input_file, cutoff_range, khmer_error, OutFile};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::scripts;
use fasthts_kmer::Countgraph;
use std::io::Write;
use std::path::Path;

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
    /// Compress output using gzip
    #[arg(long = "gzip", conflicts_with = "bzip")]
    gzip: bool,
    /// Compress output using bzip2 (not supported)
    #[arg(long = "bzip")]
    bzip: bool,
    input_graph: String,
    #[arg(required = true)]
    input_filename: Vec<String>,
}

pub fn run(a: FilterArgs) -> crate::CmdResult {
    let q = a.quiet;
    if a.bzip {
        return Err(khmer_error("--bzip output is not supported by fasthts; use --gzip").into());
    }
    if a.input_filename.iter().any(|f| f == "-" || f == "/dev/stdin") && a.output.is_none() {
        return Err(khmer_error("Accepting input from stdin; output filename must be provided with -o.").into());
    }
    for f in &a.input_filename {
        check_input_file(f, a.force)?;
    }
    if !q {
        eprintln!("loading countgraph: {}", a.input_graph);
    }
    let g = Countgraph::load(Path::new(&a.input_graph)).map_err(|e| format!("{}: {e}", a.input_graph))?;
    if !q {
        eprintln!("K: {}", g.ksize());
    }
    let mut single = match &a.output {
        Some(o) => Some(OutFile::create(o, a.gzip)?),
        None => None,
    };
    for f in &a.input_filename {
        if !q {
            eprintln!("filtering {f}");
        }
        let outname = format!("{}.abundfilt", basename(f));
        let mut own = match &single {
            Some(_) => None,
            None => Some(OutFile::create(&outname, a.gzip)?),
        };
        let w: &mut dyn Write = match (&mut own, &mut single) {
            (Some(o), _) => o.writer(),
            (None, Some(s)) => s.writer(),
            _ => unreachable!(),
        };
        scripts::filter_abund_file(&g, f, a.cutoff, a.variable_coverage, a.normalize_to, w, thread_count(a.threads))?;
        if let Some(o) = own {
            o.commit()?;
        }
        if !q {
            eprintln!("output in {}", a.output.as_deref().unwrap_or(&outname));
        }
    }
    if let Some(s) = single {
        s.commit()?;
    }
    Ok(())
}
