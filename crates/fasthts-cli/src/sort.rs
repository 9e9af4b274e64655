//! `fasthts sort`: samtools sort.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, SortFileOptions};
use fasthts::record_output::{cram_output_options, parse_output_options, OutputFormat};
use fasthts::sort::{SortEngine, SortProgress};
use std::path::{Path, PathBuf};
use crate::progress::{Bar, Source};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Sorts a BAM, SAM or CRAM file by coordinate (or name, tag, template-coordinate), as samtools sort.
#[derive(Args)]
#[command(after_help = "Input: BAM, SAM (plain or bgzipped) or CRAM, from a file or standard input.
Output: BAM, SAM, bgzipped SAM or CRAM (written by htslib as samtools writes it; give the
reference with --reference, else htslib looks for it as for CRAM input and, not finding it,
embeds it in the file).

Examples:
  fasthts sort -o out.bam in.bam                      by coordinate
  fasthts sort --reference ref.fa -o out.cram in.bam  by coordinate, to CRAM
  fasthts sort -n -@ 8 -m 2G -o by_name.bam in.bam    by read name, 8 threads, 2 GB each
  bwa mem ref.fa r1.fq r2.fq | fasthts sort --write-index -o out.bam -")]
pub struct SortArgs {
    /// Compression level, from 0 (uncompressed) to 9 (best), or -1 for the
    /// default (6).
    #[arg(short = 'l', value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i32>(-1, 9))]
    pub level: Option<i32>,
    /// Output uncompressed BAM (equivalent to -l 0).
    #[arg(short = 'u')]
    pub uncompressed: bool,
    /// Maximum memory per thread: bytes, or with K, M or G (768M, 2G, 2GB,
    /// 2000M); at least 1M.
    #[arg(short = 'm', value_name = "INT", default_value = "768M", value_parser = |s: &str| command::parse_memory_size(s).map_err(|e| e.to_string()))]
    pub memory: usize,
    /// Write final output to FILE rather than standard output.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format, BAM, SAM, SAM.gz or CRAM, with options:
    /// FORMAT[,OPT[=VAL]]... (level=INT sets the compression level; CRAM
    /// takes htslib's options: version=3.1, embed_ref=1, seqs_per_slice=N, ...).
    /// (Without -O: from the -o file's extension, .sam, .sam.gz or .cram, else BAM.)
    #[arg(short = 'O', long = "output-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub format: Option<String>,
    /// A single output format option, OPT or OPT=VAL (as in -O).
    #[arg(long = "output-fmt-option", value_name = "OPT[=VAL]")]
    pub output_options: Vec<String>,
    /// Input format; accepted for samtools compatibility (BAM and SAM are
    /// recognised from their bytes).
    #[arg(long = "input-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub input_format: Option<String>,
    /// A single input format option; the CRAM-only ones are accepted and
    /// have no effect on BAM or SAM.
    #[arg(long = "input-fmt-option", value_name = "OPT[=VAL]")]
    pub input_options: Vec<String>,
    /// Reference FASTA of CRAM input and output [default: as htslib finds it: REF_PATH, REF_CACHE, @SQ UR].
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Set level of verbosity (accepted for samtools compatibility).
    #[arg(long = "verbosity", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i32>(i32::MIN.into(), i32::MAX.into()))]
    pub verbosity: Option<i32>,
    /// Write temporary files to PREFIX.* [beside the output, or ./].
    #[arg(short = 'T', value_name = "PREFIX")]
    pub temp_prefix: Option<PathBuf>,
    /// Merge at most INT run files at once (at least 2); when more runs are
    /// written, the oldest INT are merged into one in the background while
    /// input is still read [the open-file limit, less 32].
    #[arg(long = "fan-in", value_name = "INT", value_parser = crate::numbers::whole::<u64>(2, i64::MAX))]
    pub fan_in: Option<u64>,
    /// Sort engine: native (batches, run files, merge) or rocksdb (records
    /// in an embedded RocksDB under -T, as samtools rocksort did; needs a
    /// build with the cargo feature rocksdb).
    #[arg(long = "engine", value_name = "ENGINE", default_value = "native", value_parser = ["native", "rocksdb"])]
    pub engine: String,
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Sort by read name (samtools' natural order), not by coordinate.
    #[arg(short = 'n', overrides_with_all = ["template_coordinate", "minimiser"])]
    pub by_name: bool,
    /// Sort by template-coordinate: the unclipped 5' ends of both reads of
    /// a pair, then library, MI tag and name (pairs need MC tags).
    #[arg(long = "template-coordinate", overrides_with_all = ["by_name", "minimiser"])]
    pub template_coordinate: bool,
    /// Use minimiser for clustering unaligned/unplaced reads.
    #[arg(short = 'M', overrides_with_all = ["by_name", "template_coordinate"])]
    pub minimiser: bool,
    /// Kmer size to use for minimiser (as samtools, less than 1 is 1 and more than 31 is 31).
    #[arg(short = 'K', value_name = "INT", default_value = "20", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i64>(i32::MIN.into(), i32::MAX.into()))]
    pub kmer: i64,
    /// Sort by the value of TAG, then by position (or name with -n).
    #[arg(short = 't', value_name = "TAG", value_parser = |s: &str| command::parse_tag(s).map_err(|e| e.to_string()))]
    pub tag: Option<[u8; 2]>,
    /// Index the output as it is written: OUT.csi (OUT.crai for CRAM), or
    /// the path after `##idx##` in `-o OUT##idx##INDEX` (a BAI when it ends in .bai).
    #[arg(long = "write-index")]
    pub write_index: bool,
    /// Do not add a @PG line to the header.
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Input BAM, SAM or CRAM file, or - for standard input.
    #[arg(value_name = "IN.bam", default_value = "-")]
    pub input: PathBuf,
}

/// Checks `--input-fmt`/`--input-fmt-option`: options that only change how
/// CRAM is decoded are accepted; others (such as `filter`) are refused
/// rather than silently ignored.
fn check_input_options(format: Option<&str>, options: &[String]) -> Result<(), String> {
    let mut parts = format.map(|f| f.split(',')).into_iter().flatten();
    if let Some(name) = parts.next() {
        if !matches!(name.to_ascii_lowercase().as_str(), "bam" | "sam" | "cram" | "") {
            return Err(format!("input format {name:?} is not supported; BAM, SAM and CRAM are"));
        }
    }
    for opt in parts.chain(options.iter().map(String::as_str)).filter(|o| !o.is_empty()) {
        let key = opt.split_once('=').map_or(opt, |(k, _)| k).to_ascii_lowercase();
        if !matches!(key.as_str(), "nthreads" | "reference" | "decode_md" | "required_fields" | "ignore_md5" | "fastq_name2") {
            return Err(format!("input option {opt:?} is not supported"));
        }
    }
    Ok(())
}

pub fn run(args: SortArgs) -> CmdResult {
    // `-o -` is standard output, as in samtools.
    let output = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    // As samtools: -O, else the output file's extension; the format
    // options apply either way.
    let extra_options = args.output_options.iter().map(String::as_str);
    let spec_options = args.format.as_deref().map(|spec| spec.split(',').skip(1)).into_iter().flatten();
    let cram_options = cram_output_options(spec_options.chain(extra_options.clone()));
    let (format, format_level) = match &args.format {
        Some(spec) => {
            let (format, level) = OutputFormat::parse_spec(spec)?;
            (format, parse_output_options(extra_options)?.or(level))
        }
        None => (OutputFormat::from_path(&output)?, parse_output_options(extra_options)?),
    };
    check_input_options(args.input_format.as_deref(), &args.input_options)?;
    let progress = crate::progress::wanted(false).then(|| Arc::new(SortProgress::default()));
    let _bar = progress.clone().map(|p| Bar::start("sort", false, Source::Custom(Box::new(move |bar| show_progress(&p, bar)))));
    let options = SortFileOptions {
        // As in samtools, the last of -n, -M and --template-coordinate wins
        // (clap keeps only that one).
        order: command::sort_order(args.tag, args.by_name, args.template_coordinate, args.minimiser.then_some(args.kmer)),
        format: Some(format),
        // -l -1: zlib's default level, as no -l.
        level: if args.uncompressed { Some(0) } else { args.level.and_then(|l| u32::try_from(l).ok()).or(format_level) },
        memory_per_thread: args.memory,
        threads: args.threads,
        write_index: args.write_index,
        temp_prefix: args.temp_prefix.clone(),
        program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), crate::command_line())),
        max_fan_in: args.fan_in.map(|n| n as usize),
        engine: if args.engine == "rocksdb" { SortEngine::RocksDb } else { SortEngine::Native },
        progress,
        // --reference, else --input-fmt-option reference=FILE, as samtools.
        reference: args.reference.clone().or_else(|| {
            args.input_options.iter().find_map(|o| o.strip_prefix("reference=").map(PathBuf::from))
        }),
        cram_options,
    };
    command::sort_file(Path::new(&args.input), &output, &options, &Terminal { command: "sort" })?;
    Ok(())
}

/// Records read and runs written, then records written out of those read.
fn show_progress(p: &SortProgress, bar: &indicatif::ProgressBar) {
    let read = p.records_read.load(Relaxed);
    let runs = p.runs_written.load(Relaxed);
    if p.input_done.load(Relaxed) {
        if bar.length() != Some(read) {
            bar.set_style(crate::progress::counted_style("records written"));
            bar.set_length(read);
        }
        bar.set_position(p.records_written.load(Relaxed));
        bar.set_message(format!("(from {runs} runs)"));
    } else {
        if bar.length().is_some() || bar.position() == 0 {
            bar.set_style(crate::progress::spinner_style());
        }
        bar.set_position(read);
        bar.set_message(format!("{read} records read, {runs} runs written"));
    }
}
