//! `fasthts kmer normalize`: normalize-by-median.py.

use super::{
    basename, cannot_open, check_inputs, check_stdin_output, create_in_place, cutoff_range, fp_error_block, khmer_error, load_graph,
    refuse_input_as_output, save_graph_and_free, Compression, GraphArgs, ReadOutputs,
};
use clap::Args;
use fasthts_io::pool::thread_count;
use fasthts_kmer::scripts::{self, Diagnostics};
use std::io::{BufWriter, Write};

/// normalize-by-median.py
#[derive(Args, Debug)]
#[command(after_help = "Writes INPUT.keep for each input (its basename, in the current directory) unless -o is given.

Examples:
  fasthts kmer normalize -k 20 -C 20 -M 4G reads.fq.gz
  fasthts kmer normalize -p -k 20 -C 20 -M 4G -o kept.fq --gzip interleaved.fq
  fasthts kmer normalize -k 20 -C 20 -M 4G -s reads.ct -R report.txt -o - reads.fq | gzip > kept.fq.gz")]
pub struct NormArgs {
    #[command(flatten)]
    graph: GraphArgs,
    /// Print no progress messages (warnings and errors still go to stderr)
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// when the median k-mer coverage level is above this number the read is not kept.
    #[arg(allow_negative_numbers = true, short = 'C', long = "cutoff", default_value = "20", value_parser = cutoff_range)]
    cutoff: u16,
    /// require that all sequences be properly paired
    #[arg(short = 'p', long = "paired")]
    paired: bool,
    /// treat all sequences as single-ended/unpaired
    #[arg(long = "force_single")]
    force_single: bool,
    /// include a file of unpaired reads to which -p/--paired does not apply.
    #[arg(short = 'u', long = "unpaired-reads")]
    unpaired_reads: Option<String>,
    /// save the k-mer countgraph to disk after all reads are loaded.
    #[arg(short = 's', long = "savegraph")]
    savegraph: Option<String>,
    /// write progress report to report_filename
    #[arg(short = 'R', long = "report")]
    report: Option<String>,
    /// report progress every report_frequency reads
    #[arg(allow_negative_numbers = true, long = "report-frequency", value_name = "N", default_value = "100000", value_parser = crate::numbers::whole::<u64>(1, i64::MAX))]
    report_frequency: u64,
    /// continue past file reading errors
    #[arg(short = 'f', long = "force")]
    force: bool,
    /// only output a single file with the specified filename; "-" = STDOUT
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// load a precomputed k-mer graph from disk
    #[arg(short = 'l', long = "loadgraph")]
    loadgraph: Option<String>,
    #[command(flatten)]
    compression: Compression,
    /// Threads (decisions are order-dependent and made in input order; with 2
    /// or more, two threads share the tables out between them and look up
    /// and update each read's k-mers in lockstep; output equals khmer's)
    /// [default: all cores]
    #[arg(short = 'T', long = "threads", visible_short_alias = '@', value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    /// Input FAST[AQ] sequence filename.
    #[arg(value_name = "INPUT", required = true)]
    input_filenames: Vec<String>,
}

pub fn run(a: NormArgs) -> crate::CmdResult {
    let q = a.quiet;
    let gzip = a.compression.gzip()?;
    if a.paired && a.force_single {
        return Err(khmer_error("ERROR: force_single and require_paired cannot both be set!").into());
    }
    a.graph.report(q, a.loadgraph.is_some());
    let mut basenames = Vec::new();
    if a.output.is_none() {
        for f in &a.input_filenames {
            let b = basename(f);
            if basenames.contains(&b) {
                return Err(khmer_error("ERROR: Duplicate filename--Cannot handle this!\n** Exiting!").into());
            }
            basenames.push(b);
        }
    }
    check_inputs(&a.input_filenames, false)?;
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
            a.graph.create()?
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
    if let Err(e) = check_stdin_output(&a.input_filenames, a.output.as_deref(), "'-o'") {
        // The report's header is still buffered: it is not written.
        std::mem::forget(diag);
        return Err(e.into());
    }
    let mut outputs = ReadOutputs::new(a.output.as_deref(), "keep", gzip)?;
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
        let res = scripts::normalize_file(&mut g, f, &options, w, &mut diag);
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
                    if !q {
                        eprintln!("output in {}", outputs.path(f));
                    }
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
    if fp > 0.8 {
        return Err(khmer_error(fp_error_block(fp, 0.8)).into());
    }
    if !q {
        eprintln!("fp rate estimated to be {fp:1.3}");
    }
    if a.force && !corrupt.is_empty() {
        eprintln!("** WARNING: Finished with errors!\n** I/O Errors occurred in the following files:\n\t{}", corrupt.join(" "));
    }
    Ok(())
}
