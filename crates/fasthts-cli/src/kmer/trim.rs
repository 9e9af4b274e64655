//! `fasthts kmer trim-low-abund`: trim-low-abund.py.

use super::{
    check_inputs, khmer_error, load_graph, read_outputs, refuse_input_as_output, save_graph_and_free, BoxError, GraphArgs,
    OutputCompression,
};
use clap::Args;
use fasthts_kmer::command::{self, output_name, trim_summary_path, trim_summary_text, write_in_place, ReadOutput, SummaryFormat};
use fasthts_kmer::scripts::{self, TrimOptions, TrimStats};
use fasthts_kmer::seqio::Record;
use fasthts_kmer::Countgraph;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// trim-low-abund.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Trim low-abundance k-mers using a streaming algorithm.", after_help = "The output is one file for each input file, \"<input file>.abundtrim\", placed in
the current directory.  This output contains the input sequences trimmed at
low-abundance k-mers.

The `-V`/`--variable-coverage` parameter will, if specified, prevent
elimination of low-abundance reads by only trimming low-abundance k-mers from
high-abundance reads; use this for non-genomic data sets that may have variable
coverage.

Note that the output reads will not necessarily be in the same order as the
reads in the input files; if this is an important consideration, use `load-
into-counting.py` and `filter-abund.py`. However, read pairs will be kept
together, in \"broken-paired\" format; you can use `extract-paired-reads.py` to
extract read pairs and orphans.

Example:

    trim-low-abund.py -x 5e7 -k 20 -C 2 data/100k-filtered.fa", after_long_help = "Writes INPUT.abundtrim for each input (its basename, in the current directory) unless -o is given.
Note that -T is khmer's --tempdir here, not threads.

Examples:
  fasthts kmer trim-low-abund -k 20 -C 3 -M 4G reads.fq.gz
  fasthts kmer trim-low-abund -V -Z 20 -k 20 -C 3 -M 4G -T /scratch -o trimmed.fq reads.fq
  fasthts kmer trim-low-abund --diginorm -k 20 -C 3 -M 4G --gzip -o trimmed.fq.gz reads.fq")]
pub struct TrimArgs {
    #[command(flatten)]
    graph: GraphArgs,
    #[arg(help = "remove k-mers below this abundance", allow_negative_numbers = true, short = 'C', long = "cutoff", value_name = "CUTOFF", default_value = "2", value_parser = crate::numbers::whole::<u16>(0, u16::MAX.into()))]
    cutoff: u16,
    #[arg(help = "trim reads when entire read above this coverage", allow_negative_numbers = true, short = 'Z', long = "trim-at-coverage", visible_alias = "normalize-to", value_name = "TRIM_AT_COVERAGE", default_value = "20", value_parser = crate::numbers::whole::<u16>(0, u16::MAX.into()))]
    trim_at_coverage: u16,
    #[arg(help = "only output a single file with the specified filename; use a single dash \"-\" to specify that output should go to STDOUT (the terminal)", long_help = "only output a single file with the specified filename", short = 'o', long = "output", value_name = "output_filename")]
    output: Option<String>,
    #[arg(help = "Only trim low-abundance k-mers from sequences that have high coverage.", short = 'V', long = "variable-coverage")]
    variable_coverage: bool,
    #[arg(help = "load a precomputed k-mer graph from disk", short = 'l', long = "loadgraph", value_name = "filename")]
    loadgraph: Option<String>,
    #[arg(help = "save the k-mer countgraph to disk after allreads are loaded. (default: )", long_help = "save the k-mer countgraph to disk after all reads are loaded.", short = 's', long = "savegraph", value_name = "filename")]
    savegraph: Option<String>,
    #[arg(long_help = "Print no progress messages (warnings and errors still go to stderr)", short = 'q', long = "quiet")]
    quiet: bool,
    #[arg(help = "What format should the machine readable run summary be in? (`json` or `tsv`, disabled by default)", long_help = "What format should the machine readable run summary be in?", long = "summary-info", value_name = "FORMAT", value_parser = ["json", "tsv"])]
    summary_info: Option<String>,
    #[arg(long_help = "Overwrite output file if it exists; continue past a too-small table", long = "force")]
    force: bool,
    #[arg(help = "treat all reads as if they were singletons", long = "ignore-pairs")]
    ignore_pairs: bool,
    #[arg(help = "Set location of temporary directory for second pass", short = 'T', long = "tempdir", default_value = "./")]
    tempdir: String,
    /// Accepted as in the other k-mer commands, without effect: the trimming
    /// is order-dependent and runs on one thread (-T is khmer's --tempdir)
    #[arg(hide_short_help = true, short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    threads: Option<usize>,
    #[command(flatten)]
    compression: OutputCompression,
    #[arg(help = "Eliminate high-coverage reads altogether (digital normalization).", long = "diginorm")]
    diginorm: bool,
    #[arg(help = "Coverage threshold for --diginorm", long_help = "Coverage at which to normalize reads (with --diginorm)", allow_negative_numbers = true, long = "diginorm-coverage", value_name = "DIGINORM_COVERAGE", default_value = "20", value_parser = crate::numbers::whole::<u16>(0, u16::MAX.into()))]
    diginorm_coverage: u16,
    #[arg(help = "Do not do a second pass across the low coverage data", long = "single-pass")]
    single_pass: bool,
    #[arg(long_help = "FAST[AQ] sequence files to trim.", value_name = "INPUT", required = true)]
    input_filenames: Vec<String>,
}

pub fn run(a: TrimArgs) -> crate::CmdResult {
    let q = a.quiet;
    command::refuse_repeated_inputs(&a.input_filenames)?;
    if a.trim_at_coverage != 20 && !a.variable_coverage {
        return Err(khmer_error("Error: --trim-at-coverage/-Z given, but --variable-coverage/-V not specified.").into());
    }
    if a.diginorm_coverage != 20 && !a.diginorm {
        return Err(khmer_error("Error: --diginorm-coverage given, but --diginorm not specified.").into());
    }
    if a.diginorm && a.single_pass {
        return Err(khmer_error(
            "Error: --diginorm and --single-pass are incompatible!\nYou probably want to use normalize-by-median.py instead.",
        )
        .into());
    }
    a.graph.report_as(q, a.loadgraph.as_deref(), a.graph.small_count)?;
    check_inputs(&a.input_filenames, a.force)?;
    let inputs: Vec<&str> = a.input_filenames.iter().chain(&a.loadgraph).map(String::as_str).collect();
    refuse_input_as_output(&[a.savegraph.as_deref()], a.output.as_deref(), "abundtrim", &inputs)?;
    command::require_output_for_stdin(&a.input_filenames, a.output.as_deref(), "-o")?;
    let mut g = match &a.loadgraph {
        Some(l) => {
            if !q {
                eprintln!("loading countgraph from {l}");
            }
            if a.graph.small_count {
                super::load_small_graph(l)?
            } else {
                load_graph(l)?
            }
        }
        None => {
            a.graph.check(a.force, q)?;
            if !q {
                eprintln!("making countgraph");
            }
            a.graph.create(a.force, q)?
        }
    };
    let tempdir = command::trim_tempdir(&a.tempdir)?;
    if !q {
        eprintln!("created temporary directory {};\nuse -T to change location", tempdir.display());
    }
    let result = trim_with_tempdir(&a, &mut g, &tempdir);
    if !q && result.is_ok() {
        eprintln!("removing temp directory & contents ({})", tempdir.display());
    }
    let _ = std::fs::remove_dir_all(&tempdir);
    fasthts_io::output::unregister_temporary(&tempdir);
    let (stats, saved_for_pass2) = result?;
    let fp = g.fp_rate();
    if let Some(s) = &a.savegraph {
        save_graph_and_free(g, s)?;
    }
    if !q && stats.n_reads > 0 {
        let n_reads = stats.n_reads as f64;
        eprintln!("read {} reads, {} bp", stats.n_reads, stats.n_bp);
        eprintln!("wrote {} reads, {} bp", stats.written_reads, stats.written_bp);
        eprintln!("looked at {saved_for_pass2} reads twice ({:.2} passes)", 1.0 + saved_for_pass2 as f64 / n_reads);
        let removed = stats.n_reads - stats.written_reads;
        eprintln!(
            "removed {removed} reads and trimmed {} reads ({:.2}%)",
            stats.trimmed_reads,
            (stats.trimmed_reads + removed) as f64 / n_reads * 100.0
        );
        // khmer's `%%` is printed as it is (a str.format string)
        eprintln!(
            "trimmed or removed {:.2}%% of bases ({} total)",
            (1.0 - stats.written_bp as f64 / stats.n_bp as f64) * 100.0,
            stats.n_bp as i64 - stats.written_bp as i64
        );
        if a.variable_coverage {
            let high = stats.n_reads - stats.n_skipped;
            eprintln!("{high} reads were high coverage ({:.2}%);", 100.0 * high as f64 / n_reads);
            eprintln!("skipped {} reads/{} bases because of low coverage", stats.n_skipped, stats.bp_skipped);
        }
    }
    if let Some(block) = command::fp_rate_too_high(fp, 0.8) {
        if !a.force {
            return Err(block.into());
        }
        eprintln!("{block}");
    }
    if !q {
        eprintln!("fp rate estimated to be {fp:1.3}");
        match a.output.as_deref() {
            None => eprintln!("output in *.abundtrim"),
            Some(o) => eprintln!("output in {}", output_name(Some(o))),
        }
    }
    if let Some(format) = a.summary_info.as_deref().and_then(SummaryFormat::from_name) {
        write_in_place(&trim_summary_path(a.output.as_deref(), format), &trim_summary_text(format, fp, &stats))?;
    }
    Ok(())
}

/// khmer's REPORT_EVERY_N_READS: reads between two progress lines.
const PROGRESS_EVERY: u64 = 10_000;

/// The two passes; their summary counters and the number of reads set
/// aside for the second.
fn trim_with_tempdir(a: &TrimArgs, g: &mut Countgraph, tempdir: &Path) -> Result<(TrimStats, u64), BoxError> {
    let opt = TrimOptions {
        cutoff: a.cutoff,
        trim_at_coverage: a.trim_at_coverage,
        variable_coverage: a.variable_coverage,
        diginorm: if a.diginorm { Some(a.diginorm_coverage) } else { None },
        ignore_pairs: a.ignore_pairs,
        single_pass: a.single_pass,
    };
    let mut stats = TrimStats::default();
    let mut outputs = read_outputs(a.output.as_deref(), "abundtrim", a.compression)?;
    // per input: (pass2 file, own output)
    let mut pass2: Vec<(String, Option<ReadOutput>)> = Vec::new();
    let mut last_start = 0;
    for f in &a.input_filenames {
        let p2 = command::trim_pass2_path(tempdir, f);
        let p2s = p2.to_string_lossy().into_owned();
        let mut saver = BufWriter::new(File::create(&p2)?);
        let mut own = outputs.own(f)?;
        let w = outputs.writer(&mut own);
        let bar = crate::progress::Bar::start("kmer trim-low-abund", a.quiet, crate::progress::Source::FilePositions(vec![f.into()], None));
        let (reads_before, saved_before) = (stats.n_reads, stats.n_saved);
        last_start = reads_before;
        let mut watermark = PROGRESS_EVERY;
        let mut emit = |r: Record<'_>, s: &TrimStats| {
            // khmer's progress line, checked at each read written
            if !a.quiet && s.n_reads - reads_before > watermark {
                eprintln!("... {f} {} {} {} {} {}", s.n_saved, s.n_reads, s.n_bp, s.written_reads, s.written_bp);
                watermark += PROGRESS_EVERY;
            }
            r.write(&mut *w)
        };
        scripts::trim_pass1(g, f, &opt, &mut saver, &mut stats, &mut emit)?;
        drop(bar);
        if !a.quiet {
            eprintln!("{f}: kept aside {} of {} from first pass", stats.n_saved - saved_before, stats.n_reads - reads_before);
        }
        saver.flush()?;
        pass2.push((p2s, own));
    }
    let after_pass1 = stats.clone();
    for (p, own) in pass2.iter_mut() {
        if !opt.single_pass {
            if !a.quiet {
                eprintln!("second pass: looking at sequences kept aside in {p}");
            }
            let w = outputs.writer(own);
            let bar = crate::progress::Bar::start("kmer trim-low-abund (second pass)", a.quiet, crate::progress::Source::FilePositions(vec![PathBuf::from(&*p)], None));
            let mut watermark = PROGRESS_EVERY;
            let mut emit = |r: Record<'_>, s: &TrimStats| {
                // khmer counts from the start of the last file of pass 1 here
                if !a.quiet && s.n_reads - last_start > watermark {
                    eprintln!("... x 2 {} {p} {} {} {} {} {}", s.n_reads - last_start, s.n_saved, s.n_reads, s.n_bp, s.written_reads, s.written_bp);
                    watermark += PROGRESS_EVERY;
                }
                r.write(&mut *w)
            };
            scripts::trim_pass2(g, p, &opt, &mut stats, &mut emit)?;
            drop(bar);
            if !a.quiet {
                eprintln!("removing {p}");
            }
        }
        let _ = std::fs::remove_file(&*p);
    }
    for (_, own) in pass2 {
        if let Some(o) = own {
            o.commit()?;
        }
    }
    outputs.commit()?;
    Ok((TrimStats::summary(&after_pass1, &stats), after_pass1.n_saved))
}
