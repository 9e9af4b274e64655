//! `fasthts depth`: samtools depth 1.16, byte for byte, on all cores. The
//! work is in `fasthts::command::depth_to`.

use crate::{CmdResult, Terminal};
use clap::{ArgAction, Args};
use fasthts::command;
use fasthts::depth::{atoi, exclude_flags_in_order, DepthOptions};
use std::io::{self, Write};
use std::path::PathBuf;

/// Computes the read depth at each position or region (samtools depth).
#[derive(Args)]
#[command(
    override_usage = "fasthts depth [options] in.bam [in.bam ...]",
    after_help = "Output: one line per position, REF<TAB>POS<TAB>DEPTH (one depth column per input), \
    identical to samtools depth 1.16. With every input an indexed BAM (for -r, or a bgzipped SAM with its index) the genome is counted in \
    parallel windows (not with -s, which follows read pairs through each file in order).\n\n\
    Examples:\n  fasthts depth in.bam > depth.tsv\n  fasthts depth -a -r chr1:1,000,000-2,000,000 -Q 20 in.bam\n  \
    fasthts depth -aa -H -o depth.tsv tumour.bam normal.bam"
)]
pub struct DepthArgs {
    /// Output all positions (including zero depth); -a -a (-aa) also of references without reads
    #[arg(short = 'a', action = ArgAction::Count)]
    pub all: u8,
    /// Specify a region in chr or chr:from-to syntax, chr an @SQ SN: or AN: name (needs indexed BAMs, bgzipped SAMs or CRAMs)
    #[arg(short = 'r', value_name = "REG")]
    pub region: Option<String>,
    /// Use bed FILE for list of regions (positions printed only inside them)
    #[arg(short = 'b', value_name = "FILE")]
    pub bed: Option<PathBuf>,
    /// Specify list of input BAM/SAM filenames, one per line
    #[arg(short = 'f', value_name = "FILE")]
    pub file_list: Option<PathBuf>,
    /// Remove specified flags from default flag filter (-g and -G apply in command-line order)
    #[arg(short = 'g', value_name = "INT", allow_hyphen_values = true, value_parser = in_order)]
    pub include_flags: Vec<(usize, String)>,
    /// Add specified flags to the default flag filter
    #[arg(short = 'G', value_name = "INT", allow_hyphen_values = true, value_parser = in_order)]
    pub exclude_flags: Vec<(usize, String)>,
    /// Use custom index files (in -X *.bam *.bam.bai order; the index is read for -r)
    #[arg(short = 'X')]
    pub explicit_index: bool,
    /// A single input file format option, OPT or OPT=VAL (accepted; fasthts reads BAM, SAM and CRAM without them)
    #[arg(long = "input-fmt-option", value_name = "OPT[=VAL]", hide = true)]
    pub input_options: Vec<String>,
    /// Accepted for samtools compatibility
    #[arg(long = "verbosity", value_name = "INT", hide = true, allow_hyphen_values = true)]
    pub verbosity: Option<String>,
    /// Print a file header line
    #[arg(short = 'H')]
    pub header: bool,
    /// Minimum read length [0]
    #[arg(short = 'l', value_name = "INT", allow_hyphen_values = true)]
    pub min_len: Option<String>,
    /// Write output to FILE [stdout]
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Filter bases with base quality smaller than INT [0]
    #[arg(short = 'q', long = "min-BQ", visible_alias = "min-bq", value_name = "INT", allow_hyphen_values = true)]
    pub min_bq: Option<String>,
    /// Filter alignments with mapping quality smaller than INT [0]
    #[arg(short = 'Q', long = "min-MQ", visible_alias = "min-mq", value_name = "INT", allow_hyphen_values = true)]
    pub min_mq: Option<String>,
    /// Include reads with deletions in depth computation
    #[arg(short = 'J')]
    pub deletions: bool,
    /// Do not count overlapping reads within a template
    #[arg(short = 's')]
    pub remove_overlaps: bool,
    /// Maximum depth (ignored, as by samtools depth since 1.13)
    #[arg(short = 'd', short_alias = 'm', value_name = "INT", hide = true)]
    pub max_depth: Option<String>,
    /// Reference FASTA of CRAM input [default: as htslib finds it: REF_PATH, REF_CACHE, @SQ UR]
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<std::path::PathBuf>,
    /// Worker threads (all cores by default)
    #[arg(short = '@', long = "threads", value_name = "INT")]
    pub threads: Option<usize>,
    /// Positions per parallel window (output does not depend on it)
    #[arg(long = "window-bases", value_name = "INT", hide = true)]
    pub window_bases: Option<u64>,
    /// Input BAM, SAM or CRAM files (- for standard input)
    #[arg(value_name = "in.bam")]
    pub inputs: Vec<PathBuf>,
}

/// Numbers the `-g`/`-G` values as clap reads them (in command-line
/// order), so that they can be applied in that order as samtools does.
fn in_order(text: &str) -> Result<(usize, String), std::convert::Infallible> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    Ok((NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed), text.to_string()))
}

pub fn run(args: DepthArgs) -> CmdResult {
    crate::exhaustion::give_large_blocks_back();
    let mut options = DepthOptions::default();
    let mut edits: Vec<(usize, bool, &str)> = args.include_flags.iter().map(|(n, t)| (*n, false, t.as_str())).collect();
    edits.extend(args.exclude_flags.iter().map(|(n, t)| (*n, true, t.as_str())));
    edits.sort_by_key(|e| e.0);
    options.exclude_flags = exclude_flags_in_order(edits.into_iter().map(|(_, add, t)| (add, t)))?;
    options.all_positions = args.all.min(2);
    options.min_base_quality = args.min_bq.as_deref().map_or(0, atoi) as i32;
    options.min_mapping_quality = args.min_mq.as_deref().map_or(0, atoi) as i32;
    options.min_read_length = args.min_len.as_deref().map_or(0, atoi);
    options.count_deletions = args.deletions;
    options.remove_overlaps = args.remove_overlaps;
    options.header = args.header;
    options.region = args.region;
    options.bed = args.bed;
    options.threads = args.threads;
    options.reference = args.reference.clone();
    if let Some(w) = args.window_bases {
        options.window_bases = w;
    }
    let mut inputs = args.inputs;
    if let Some(list) = &args.file_list {
        let text = std::fs::read_to_string(list).map_err(|e| format!("{}: {}", list.display(), fasthts_io::os_message(&e)))?;
        inputs = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).map(PathBuf::from).collect();
    }
    if args.explicit_index {
        if args.file_list.is_some() {
            return Err("the -f option cannot be combined with -X".into());
        }
        // The first half are the inputs, the second their indexes. (samtools
        // means to refuse an odd count but its test never fails.)
        if inputs.len() % 2 != 0 {
            return Err("-X needs one index specified per input file".into());
        }
        let n = inputs.len() / 2;
        options.indexes = Some(inputs[inputs.len() - n..].to_vec());
        inputs.truncate(n);
    }
    if inputs.is_empty() {
        return Err("no input files (usage: fasthts depth [options] in.bam [in.bam ...])".into());
    }
    let report = Terminal { command: "depth" };
    match &args.output {
        Some(path) if path.as_os_str() != "-" => Ok(command::depth_file(&inputs, path, &options, &report)?),
        _ => {
            let mut out = io::BufWriter::with_capacity(1 << 20, io::stdout());
            // A closed pipe (`| head`) is an error whose end is samtools'
            // (killed by SIGPIPE: main sees it and dies so).
            Ok(command::depth_to(&inputs, &options, &mut out, &report).and_then(|()| Ok(out.flush()?))?)
        }
    }
}
