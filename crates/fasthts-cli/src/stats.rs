//! `fasthts stats`: samtools stats 1.16, byte for byte but for the first
//! line's producer. The work is in `fasthts::command::stats_to`.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, StatsOptions};
use fasthts::depth::{atoi, parse_flags};
use fasthts::stats::StatsSettings;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

/// Collects statistics from an alignment file (samtools stats).
#[derive(Args)]
#[command(
    override_usage = "fasthts stats [options] in.bam [REGION ...]\n       fasthts stats [options] -X in.bam in.bam.bai [REGION ...]",
    after_help = "Output: samtools stats 1.16's text, byte for byte, except that the first line names fasthts \
    (\"# This file was produced by samtools stats (fasthts VERSION) and can be plotted using plot-bamstats\": \
    MultiQC and plot-bamstats read it as samtools'). Regions after the file are read through its index. \
    A sorted BAM with an index is counted reference by reference on all threads and the parts summed; other inputs are \
    counted in one pass while BGZF blocks are inflated on the other threads. The output is the same at any -@.\n\n\
    Examples:\n  fasthts stats in.bam > in.stats\n  fasthts stats -r ref.fa -t targets.txt in.bam\n  \
    fasthts stats -S RG -P out/sample in.bam chr1:1,000,000-2,000,000"
)]
pub struct StatsArgs {
    /// Coverage distribution min,max,step [1,1000,1]
    #[arg(short = 'c', long = "coverage", value_name = "INT,INT,INT", allow_hyphen_values = true)]
    pub coverage: Option<String>,
    /// Exclude from statistics reads marked as duplicates
    #[arg(short = 'd', long = "remove-dups")]
    pub remove_dups: bool,
    /// Use a customized index file (given after the input file)
    #[arg(short = 'X', long = "customized-index-file")]
    pub custom_index: bool,
    /// Required flag, 0 for unset (a number or names, as samtools flags) [0]
    #[arg(short = 'f', long = "required-flag", value_name = "STR|INT")]
    pub required_flag: Option<String>,
    /// Filtering flag, 0 for unset (given twice, the flags add up) [0]
    #[arg(short = 'F', long = "filtering-flag", value_name = "STR|INT", action = clap::ArgAction::Append)]
    pub filtering_flag: Vec<String>,
    /// The size of GC-depth bins (decreasing bin size increases memory requirement) [2e4]
    #[arg(long = "GC-depth", value_name = "FLOAT", allow_hyphen_values = true)]
    pub gc_depth: Option<String>,
    /// Maximum insert size [8000]
    #[arg(short = 'i', long = "insert-size", value_name = "INT", allow_hyphen_values = true)]
    pub insert_size: Option<String>,
    /// Include only listed read group or sample name
    #[arg(short = 'I', long = "id", value_name = "STR")]
    pub id: Option<String>,
    /// Include in the statistics only reads with the given read length [-1]
    #[arg(short = 'l', long = "read-length", value_name = "INT", allow_hyphen_values = true)]
    pub read_length: Option<String>,
    /// Report only the main part of inserts [0.99]
    #[arg(short = 'm', long = "most-inserts", value_name = "FLOAT", allow_hyphen_values = true)]
    pub most_inserts: Option<String>,
    /// Path or string prefix for filepaths output by -S (default is input filename)
    #[arg(short = 'P', long = "split-prefix", value_name = "STR")]
    pub split_prefix: Option<String>,
    /// The BWA trimming parameter [0]
    #[arg(short = 'q', long = "trim-quality", value_name = "INT", allow_hyphen_values = true)]
    pub trim_quality: Option<String>,
    /// Reference sequence (required for GC-depth and mismatches-per-cycle calculation)
    #[arg(short = 'r', long = "ref-seq", value_name = "FILE")]
    pub ref_seq: Option<PathBuf>,
    /// Ignored (input format is auto-detected)
    #[arg(short = 's', long = "sam")]
    pub sam: bool,
    /// Also write statistics to separate files split by tagged field
    #[arg(short = 'S', long = "split", value_name = "TAG")]
    pub split: Option<String>,
    /// Do stats in these regions only. Tab-delimited file chr,from,to, 1-based, inclusive
    #[arg(short = 't', long = "target-regions", value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// Suppress outputting IS rows where there are no insertions
    #[arg(short = 'x', long = "sparse")]
    pub sparse: bool,
    /// Remove overlaps of paired-end reads from coverage and base count computations
    #[arg(short = 'p', long = "remove-overlaps")]
    pub remove_overlaps: bool,
    /// Only bases with coverage above this value will be included in the target percentage computation [0]
    #[arg(short = 'g', long = "cov-threshold", value_name = "INT", allow_hyphen_values = true)]
    pub cov_threshold: Option<String>,
    /// Reference FASTA of CRAM input [default: as htslib finds it: REF_PATH, REF_CACHE, @SQ UR]
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// A single input file format option, OPT or OPT=VAL (accepted; fasthts reads BAM, SAM and CRAM without them)
    #[arg(long = "input-fmt-option", value_name = "OPT[=VAL]", hide = true)]
    pub input_options: Vec<String>,
    /// Accepted for samtools compatibility
    #[arg(long = "input-fmt", value_name = "FORMAT", hide = true)]
    pub input_format: Option<String>,
    /// Accepted for samtools compatibility
    #[arg(long = "verbosity", value_name = "INT", hide = true, allow_hyphen_values = true)]
    pub verbosity: Option<String>,
    /// Worker threads (all cores by default)
    #[arg(short = '@', long = "threads", value_name = "INT")]
    pub threads: Option<usize>,
    /// Input BAM, SAM or CRAM file (- for standard input), then (with -X) its index, then regions
    #[arg(value_name = "in.bam [REGION ...]")]
    pub inputs: Vec<String>,
}

/// C's `atof`: the longest prefix that reads as a decimal number (0 when none).
fn atof(text: &str) -> f64 {
    let s = text.trim_start();
    (1..=s.len()).rev().filter(|&n| s.is_char_boundary(n)).find_map(|n| s[..n].parse::<f64>().ok().filter(|v| v.is_finite())).unwrap_or(0.0)
}

pub fn run(args: StatsArgs) -> CmdResult {
    crate::exhaustion::give_large_blocks_back();
    let mut settings = StatsSettings::default();
    if let Some(f) = &args.required_flag {
        settings.require_flags = parse_flags(f)?;
    }
    for f in &args.filtering_flag {
        settings.filter_flags |= parse_flags(f)?;
    }
    if args.remove_dups {
        settings.filter_flags |= fasthts::bam::flags::DUPLICATE;
    }
    if let Some(c) = &args.coverage {
        let parts: Vec<&str> = c.splitn(3, ',').collect();
        let number = |s: &str| -> Option<i32> {
            let t = s.trim_start();
            let sign = usize::from(t.starts_with(['-', '+']));
            let digits = t[sign..].bytes().take_while(u8::is_ascii_digit).count();
            (digits > 0).then(|| atoi(&t[..sign + digits]) as i32)
        };
        match (parts.len() == 3).then(|| (number(parts[0]), number(parts[1]), number(parts[2]))) {
            Some((Some(a), Some(b), Some(step))) if step > 0 => settings.coverage = (a, b, step),
            _ => return Err(format!("Unable to parse -c {c}").into()),
        }
    }
    if let Some(g) = &args.gc_depth {
        // An int in samtools (0 divides its depths by zero: `inf`, `nan`).
        settings.gcd_bin_size = atof(g) as i32;
    }
    if let Some(i) = &args.insert_size {
        settings.max_insert_size = atoi(i) as i32;
    }
    if let Some(l) = &args.read_length {
        settings.read_length = atoi(l) as i32;
    }
    if let Some(m) = &args.most_inserts {
        settings.main_bulk = atof(m) as f32;
    }
    if let Some(q) = &args.trim_quality {
        settings.trim_quality = atoi(q) as i32;
    }
    if let Some(g) = &args.cov_threshold {
        settings.cov_threshold = atoi(g) as i32;
        if settings.cov_threshold < 0 || settings.cov_threshold == i32::MAX {
            return Err(format!("Unsupported value for coverage threshold {}", settings.cov_threshold).into());
        }
    }
    if let Some(tag) = &args.split {
        let b = tag.as_bytes();
        if b.len() != 2 {
            return Err(format!("-S {tag}: a tag is two characters").into());
        }
        settings.split_tag = Some([b[0], b[1]]);
    }
    settings.reference = args.ref_seq.clone();
    settings.remove_overlaps = args.remove_overlaps;
    settings.sparse = args.sparse;
    settings.group_id = args.id.clone();

    let mut positional = args.inputs.into_iter();
    let input = match positional.next() {
        Some(path) => path,
        None if io::stdin().is_terminal() => return Err("no input file (usage: fasthts stats [options] in.bam [REGION ...])".into()),
        None => "-".to_string(),
    };
    let index = if args.custom_index {
        match positional.next() {
            Some(index) => Some(PathBuf::from(index)),
            None => return Err("No index file provided".into()),
        }
    } else {
        None
    };
    let regions: Vec<String> = positional.collect();
    let command_line = crate::command_line_after_program();
    let options = StatsOptions {
        settings,
        targets: args.targets,
        regions,
        index,
        split_prefix: args.split_prefix,
        cram_reference: args.reference,
        threads: args.threads,
        producer: format!("fasthts {}", env!("CARGO_PKG_VERSION")),
        command_line,
    };
    let report = Terminal { command: "stats" };
    let mut out = io::BufWriter::with_capacity(1 << 20, io::stdout());
    let notes = command::stats_to(std::path::Path::new(&input), &options, &mut out, &report);
    let notes = notes.and_then(|notes| {
        out.flush().map_err(|e| command::StatsFailure { error: e.into(), while_decoding: false })?;
        Ok(notes)
    });
    match notes {
        Ok(notes) => {
            for line in notes.lines {
                eprintln!("{line}");
            }
            Ok(())
        }
        // samtools stops with the status of its failed read (-2: 254).
        Err(e) if e.while_decoding => Err(crate::Failure::new(254, format!("fasthts stats: {}", e.error)).into()),
        Err(e) => Err(e.error.into()),
    }
}
