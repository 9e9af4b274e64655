//! `fasthts sort`: samtools sort.

use crate::CmdResult;
use clap::Args;
use fasthts::index::{IndexFormat, DEFAULT_MIN_SHIFT};
use fasthts::input::Input;
use fasthts::output::TempOutput;
use fasthts::sort::{self, OutputFormat, SortEngine, SortOptions, SortOrder, SortProgress};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Sorts a BAM or SAM file by coordinate (or name, tag, template-coordinate), as samtools sort.
#[derive(Args)]
#[command(after_help = "Input: BAM or plain SAM, from a file or standard input.")]
pub struct SortArgs {
    /// Compression level, from 0 (uncompressed) to 9 (best) [6].
    #[arg(short = 'l', value_name = "INT", value_parser = clap::value_parser!(u32).range(0..=9))]
    pub level: Option<u32>,
    /// Output uncompressed BAM (equivalent to -l 0).
    #[arg(short = 'u')]
    pub uncompressed: bool,
    /// Maximum memory per thread; suffix K/M/G recognised [768M].
    #[arg(short = 'm', value_name = "INT", default_value = "768M", value_parser = parse_memory)]
    pub memory: usize,
    /// Write final output to FILE rather than standard output.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format, BAM or SAM, with options: FORMAT[,OPT[=VAL]]...
    /// (level=INT sets the compression level).
    /// (Without -O: from the -o file's extension, .sam or .sam.gz, else BAM.)
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
    /// Reference sequence FASTA file (used by CRAM only; accepted, no effect).
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Set level of verbosity (accepted for samtools compatibility).
    #[arg(long = "verbosity", value_name = "INT")]
    pub verbosity: Option<i32>,
    /// Write temporary files to PREFIX.* [beside the output, or ./].
    #[arg(short = 'T', value_name = "PREFIX")]
    pub temp_prefix: Option<PathBuf>,
    /// Merge at most INT run files at once (at least 2); when more runs are
    /// written, the oldest INT are merged into one in the background while
    /// input is still read [the open-file limit, less 32].
    #[arg(long = "fan-in", value_name = "INT", value_parser = clap::value_parser!(u64).range(2..))]
    pub fan_in: Option<u64>,
    /// Sort engine: native (batches, run files, merge) or rocksdb (records
    /// in an embedded RocksDB under -T, as samtools rocksort did; needs a
    /// build with the cargo feature rocksdb).
    #[arg(long = "engine", value_name = "ENGINE", default_value = "native", value_parser = ["native", "rocksdb"])]
    pub engine: String,
    /// Worker threads (all cores by default).
    #[arg(short = '@', long = "threads", value_name = "INT")]
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
    /// Kmer size to use for minimiser (clamped to 1..=31) [20].
    #[arg(short = 'K', value_name = "INT", default_value = "20", value_parser = parse_kmer)]
    pub kmer: u8,
    /// Sort by the value of TAG, then by position (or name with -n).
    #[arg(short = 't', value_name = "TAG", value_parser = parse_tag)]
    pub tag: Option<[u8; 2]>,
    /// Index the output as it is written: OUT.csi, or the path after
    /// `##idx##` in `-o OUT##idx##INDEX` (a BAI when it ends in .bai).
    #[arg(long = "write-index")]
    pub write_index: bool,
    /// Do not add a @PG line to the header.
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Input BAM or SAM file, or - (the default) for standard input.
    #[arg(value_name = "IN.bam", default_value = "-")]
    pub input: PathBuf,
}

/// samtools reads -K with atoi and clamps it to 1..=31.
fn parse_kmer(s: &str) -> Result<u8, String> {
    let s = s.trim_start();
    let sign = if s.starts_with('-') { -1 } else { 1 };
    let digits: String = s.trim_start_matches(['+', '-']).chars().take_while(char::is_ascii_digit).collect();
    let n = digits.parse::<i64>().unwrap_or(if digits.is_empty() { 0 } else { i64::MAX }) * sign;
    Ok(n.clamp(1, 31) as u8)
}

fn parse_tag(s: &str) -> Result<[u8; 2], String> {
    match s.as_bytes() {
        [a, b] => Ok([*a, *b]),
        _ => Err(format!("invalid tag {s:?}: a tag has two characters")),
    }
}

/// samtools' memory sizes: a number with an optional K, M or G (powers of 1024).
fn parse_memory(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1usize << 10),
        Some((i, 'm' | 'M')) => (&s[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    let n: usize = num.parse().map_err(|_| format!("invalid memory size {s:?}"))?;
    n.checked_mul(mult).ok_or_else(|| format!("memory size {s:?} is too large"))
}

/// Smallest -m samtools accepts: fewer bytes would mean a run file for
/// every few records.
const MIN_MEMORY_PER_THREAD: usize = 1 << 20;

/// Parses `-O FORMAT[,OPT[=VAL]]...` and `--output-fmt-option`s: the
/// format, and the compression level if an option sets one.
fn parse_output_format(spec: &str, extra: &[String]) -> Result<(OutputFormat, Option<u32>), String> {
    let mut parts = spec.split(',');
    let name = parts.next().unwrap_or("");
    let format = match name.to_ascii_lowercase().as_str() {
        "bam" => OutputFormat::Bam,
        "sam" => OutputFormat::Sam,
        "sam.gz" => OutputFormat::SamGz,
        "cram" => return Err("CRAM output is not supported; use BAM or SAM".into()),
        _ => return Err(format!("unknown output format {name:?}; use BAM or SAM")),
    };
    let mut level = None;
    for opt in parts.chain(extra.iter().map(String::as_str)).filter(|o| !o.is_empty()) {
        let (key, value) = opt.split_once('=').unwrap_or((opt, ""));
        match key.to_ascii_lowercase().as_str() {
            "level" => match value.parse::<u32>() {
                Ok(l) if l <= 9 => level = Some(l),
                _ => return Err(format!("invalid output option {opt:?}: level is 0 to 9")),
            },
            // Thread counts come from -@; the rest are CRAM's.
            "nthreads"
            | "reference"
            | "version"
            | "embed_ref"
            | "no_ref"
            | "seqs_per_slice"
            | "bases_per_slice"
            | "slices_per_container"
            | "use_bzip2"
            | "use_lzma"
            | "use_tok"
            | "use_fqz"
            | "use_arith"
            | "lossy_names"
            | "store_md"
            | "store_nm" => {}
            _ => return Err(format!("output option {opt:?} is not supported")),
        }
    }
    Ok((format, level))
}

/// Checks `--input-fmt`/`--input-fmt-option`: options that only change how
/// CRAM is decoded are accepted; others (such as `filter`) are refused
/// rather than silently ignored.
fn check_input_options(format: Option<&str>, options: &[String]) -> Result<(), String> {
    let mut parts = format.map(|f| f.split(',')).into_iter().flatten();
    if let Some(name) = parts.next() {
        if !matches!(name.to_ascii_lowercase().as_str(), "bam" | "sam" | "") {
            return Err(format!("input format {name:?} is not supported; BAM and SAM are"));
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

/// The format htslib's `sam_open_mode` picks from an output file name
/// (its extension, `.gz` taking the one before it), if it knows it.
fn format_of_extension(path: &str) -> Option<&'static str> {
    let path = path.split("##idx##").next().unwrap_or(path);
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let (stem, gz) = match name.strip_suffix(".gz").or_else(|| name.strip_suffix(".bgz")).or_else(|| name.strip_suffix(".bgzf")) {
        Some(stem) => (stem.to_string(), true),
        None => (name, false),
    };
    let ext = stem.rsplit_once('.').map(|(_, e)| e)?;
    match (ext, gz) {
        ("bam", false) => Some("bam"),
        ("sam", false) => Some("sam"),
        ("sam", true) => Some("sam.gz"),
        ("cram", false) => Some("cram"),
        _ => None,
    }
}

/// samtools' complaint about a too small -m, sizes shown as it shows them.
fn memory_too_small(bytes: usize) -> String {
    let (mut n, mut suffix) = (bytes, "");
    for next in ["K", "M"] {
        if n > 9 << 10 {
            n >>= 10;
            suffix = next;
        }
    }
    format!("-m setting ({n}{suffix} bytes) is less than the minimum required (1M)")
}

pub fn run(args: SortArgs) -> CmdResult {
    // As samtools: -O, else the output file's extension, else BAM.
    let spec = match (&args.format, &args.output) {
        (Some(f), _) => f.clone(),
        (None, Some(o)) => format_of_extension(&o.to_string_lossy()).unwrap_or("bam").to_string(),
        (None, None) => "bam".to_string(),
    };
    let (format, format_level) = parse_output_format(&spec, &args.output_options)?;
    check_input_options(args.input_format.as_deref(), &args.input_options)?;
    if args.write_index && format != OutputFormat::Bam {
        return Err("--write-index is only supported with BAM output".into());
    }
    if args.memory < MIN_MEMORY_PER_THREAD {
        return Err(memory_too_small(args.memory).into());
    }
    let threads = args.threads.filter(|&n| n > 0).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let level = if args.uncompressed { 0 } else { args.level.or(format_level).unwrap_or(fasthts::bgzf::DEFAULT_LEVEL) };
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    // samtools' `-o out.bam##idx##out.bam.bai` names the index.
    // `-o -` is standard output, as in samtools.
    let (output, index_path) = match args.output.as_ref().map(|o| o.to_string_lossy().into_owned()).filter(|o| o != "-") {
        Some(o) => match o.split_once("##idx##") {
            Some((bam, idx)) => (Some(PathBuf::from(bam)), Some(PathBuf::from(idx))),
            None => (Some(PathBuf::from(&o)), Some(PathBuf::from(format!("{o}.csi")))),
        },
        None => (None, None),
    };
    let temp_prefix = args.temp_prefix.clone().unwrap_or_else(|| output.clone().unwrap_or_else(|| PathBuf::from("fasthts-sort")));
    // As in samtools, the last of -n, -M and --template-coordinate wins,
    // and -t turns it into tag order (by name with -n, else by position).
    let order = match args.tag {
        Some(tag) => SortOrder::Tag { tag, then_by_name: args.by_name },
        None if args.by_name => SortOrder::QueryName,
        None if args.template_coordinate => SortOrder::TemplateCoordinate,
        None if args.minimiser => SortOrder::Minimiser { kmer: args.kmer },
        None => SortOrder::Coordinate,
    };
    let mut index = None;
    if args.write_index {
        if !order.is_positional() {
            eprintln!("fasthts sort: warning: ignoring --write-index as it only works for position sorted files");
        } else if let Some(p) = &index_path {
            let bai = p.extension().is_some_and(|e| e == "bai");
            index = Some(if bai { IndexFormat::Bai } else { IndexFormat::Csi { min_shift: DEFAULT_MIN_SHIFT, depth: 0 } });
        } else {
            return Err("--write-index needs an output file (-o)".into());
        }
    }
    let progress = crate::progress::on_terminal().then(|| Arc::new(SortProgress::default()));
    let _ticker = progress.clone().map(|p| crate::progress::Ticker::start(move |elapsed| progress_line(&p, elapsed)));
    let opts = SortOptions {
        max_fan_in: args.fan_in.map(|n| n as usize),
        engine: if args.engine == "rocksdb" { SortEngine::RocksDb } else { SortEngine::Native },
        index,
        order,
        memory: args.memory.saturating_mul(threads),
        level,
        temp_prefix,
        program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), command_line)),
        progress: progress.clone(),
        format,
    };
    crate::with_threads(Some(threads), || -> CmdResult {
        let mut input = fasthts::input::open(&args.input, &opts.temp_prefix)?;
        if let Input::Bam(bam, _) = &input {
            crate::warn_if_truncated(bam);
        }
        match &output {
            Some(path) => {
                let (temp, file) = TempOutput::create(path)?;
                let writer = BufWriter::with_capacity(1 << 20, fasthts::output::WritebackFile::new(file));
                let (stats, out) = sort::sort_input(&mut input, &opts, writer)?;
                let file = out.into_inner().map_err(|e| e.into_error())?.into_inner();
                fasthts::output::sync_if_file(&file)?;
                temp.commit()?;
                if let (Some(index), Some(p)) = (stats.index, &index_path) {
                    fasthts::indexer::write_index(&index, p)?;
                }
            }
            None => {
                let stdout = io::stdout().lock();
                match sort::sort_input(&mut input, &opts, BufWriter::with_capacity(1 << 20, stdout)) {
                    Err(fasthts::Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
                    r => {
                        r?;
                    }
                }
                io::stdout().flush().ok();
            }
        }
        Ok(())
    })
}

/// The status line: records read and runs written, then merge progress.
fn progress_line(p: &SortProgress, elapsed: Duration) -> String {
    let read = p.records_read.load(Relaxed);
    let runs = p.runs_written.load(Relaxed);
    let secs = elapsed.as_secs_f64();
    if p.input_done.load(Relaxed) {
        let written = p.records_written.load(Relaxed);
        let percent = if read == 0 { 100.0 } else { 100.0 * written as f64 / read as f64 };
        format!("sort: {read} records read, {runs} runs; writing {written} ({percent:.0}%) [{secs:.0}s]")
    } else {
        format!("sort: {read} records read, {runs} runs written [{secs:.0}s]")
    }
}
