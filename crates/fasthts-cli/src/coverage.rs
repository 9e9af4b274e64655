//! `fasthts coverage`: samtools coverage 1.16, byte for byte, on all
//! cores. The work is in `fasthts::command::coverage_table`.

use crate::{CmdResult, Terminal};
use clap::{ArgAction, Args};
use fasthts::command;
use fasthts::coverage::{parse_flag_value, CoverageOptions, HistogramOptions};
use fasthts::depth::atoi;
use std::io::{self, Write};
use std::path::PathBuf;

/// Coverage and depth per reference or region, as a table or histograms (samtools coverage).
#[derive(Args)]
#[command(
    override_usage = "fasthts coverage [options] in1.bam [in2.bam [...]]",
    after_help = "Output: one line per reference, #rname startpos endpos numreads covbases coverage meandepth \
    meanbaseq meanmapq (the references reached by reads first, then the others), or with -m a histogram of each \
    reference reached; identical to samtools coverage 1.16. Several inputs are summed. With every input an indexed BAM \
    (for -r, or a bgzipped SAM with its index) the genome is counted in parallel windows.\n\n\
    Columns:\n  rname       Reference name / chromosome\n  startpos    Start position\n  \
    endpos      End position (or sequence length)\n  numreads    Number reads aligned to the region (after filtering)\n  \
    covbases    Number of covered bases with depth >= 1\n  coverage    Percentage of covered bases [0..100]\n  \
    meandepth   Mean depth of coverage\n  meanbaseq   Mean baseQ in covered region\n  meanmapq    Mean mapQ of selected reads\n\n\
    Examples:\n  fasthts coverage in.bam > coverage.tsv\n  fasthts coverage -r chr1:1,000,000-2,000,000 -q 20 -Q 20 in.bam\n  \
    fasthts coverage -m -w 60 tumour.bam normal.bam"
)]
pub struct CoverageArgs {
    /// List of input BAM filenames, one per line
    #[arg(short = 'b', long = "bam-list", value_name = "FILE")]
    pub bam_list: Option<PathBuf>,
    /// Ignore reads shorter than INT bp (query length by the CIGAR) [0]
    #[arg(short = 'l', long = "min-read-len", value_name = "INT", allow_hyphen_values = true)]
    pub min_len: Option<String>,
    /// Mapping quality threshold [0]
    #[arg(short = 'q', long = "min-MQ", visible_alias = "min-mq", value_name = "INT", allow_hyphen_values = true)]
    pub min_mq: Option<String>,
    /// Base quality threshold [0]
    #[arg(short = 'Q', long = "min-BQ", visible_alias = "min-bq", value_name = "INT", allow_hyphen_values = true)]
    pub min_bq: Option<String>,
    /// Required flags: skip reads with none of the mask bits set []
    #[arg(long = "rf", visible_alias = "incl-flags", value_name = "INT|STR", allow_hyphen_values = true)]
    pub require_flags: Vec<String>,
    /// Filter flags: skip reads with mask bits set [UNMAP,SECONDARY,QCFAIL,DUP]
    #[arg(long = "ff", visible_alias = "excl-flags", value_name = "INT|STR", allow_hyphen_values = true)]
    pub exclude_flags: Vec<String>,
    /// Maximum allowed coverage depth [1000000]; 0: no limit
    #[arg(short = 'd', long = "depth", value_name = "INT", allow_hyphen_values = true)]
    pub depth: Option<String>,
    /// Show histogram instead of tabular output
    #[arg(short = 'm', long = "histogram")]
    pub histogram: bool,
    /// Show only ASCII characters in histogram
    #[arg(short = 'A', long = "ascii")]
    pub ascii: bool,
    /// Write output to FILE [stdout]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Don't print a header in tabular mode
    #[arg(short = 'H', long = "no-header")]
    pub no_header: bool,
    /// Number of bins in histogram [terminal width - 40]
    #[arg(short = 'w', long = "n-bins", value_name = "INT", allow_hyphen_values = true)]
    pub n_bins: Option<String>,
    /// Show specified region. Format: chr:start-end, chr an @SQ SN: or AN: name (needs indexed inputs)
    #[arg(short = 'r', long = "region", value_name = "REG")]
    pub region: Option<String>,
    /// Reference FASTA of CRAM input [default: as htslib finds it: REF_PATH, REF_CACHE, @SQ UR]
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// A single input file format option, OPT or OPT=VAL (accepted; fasthts reads BAM, SAM and CRAM without them)
    #[arg(long = "input-fmt-option", value_name = "OPT[=VAL]", hide = true)]
    pub input_options: Vec<String>,
    /// Accepted for samtools compatibility
    #[arg(long = "verbosity", value_name = "INT", hide = true, allow_hyphen_values = true)]
    pub verbosity: Option<String>,
    /// Worker threads (all cores by default)
    #[arg(short = '@', long = "threads", value_name = "INT", value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Positions per parallel window (output does not depend on it)
    #[arg(long = "window-bases", value_name = "INT", hide = true)]
    pub window_bases: Option<u64>,
    /// Input BAM, SAM or CRAM files (- for standard input)
    #[arg(value_name = "in.bam", action = ArgAction::Append)]
    pub inputs: Vec<PathBuf>,
}

/// The terminal's width as samtools coverage finds it: `$COLUMNS` (as
/// `atoi` reads it), else the window size of standard error, else 0.
fn terminal_columns() -> i64 {
    if let Ok(columns) = std::env::var("COLUMNS") {
        return atoi(&columns);
    }
    // SAFETY: TIOCGWINSZ fills the winsize struct it is given, or fails.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok {
        i64::from(ws.ws_col)
    } else {
        0
    }
}

pub fn run(args: CoverageArgs) -> CmdResult {
    crate::exhaustion::give_large_blocks_back();
    let mut options = CoverageOptions::default();
    // samtools keeps the last of each.
    if let Some(text) = args.exclude_flags.last() {
        options.exclude_flags = parse_flag_value(text).map_err(|_| format!("Could not parse --ff {text}"))?;
    }
    if let Some(text) = args.require_flags.last() {
        options.require_flags = parse_flag_value(text).map_err(|_| format!("Could not parse --rf {text}"))?;
    }
    options.min_read_length = args.min_len.as_deref().map_or(0, atoi);
    options.min_mapping_quality = args.min_mq.as_deref().map_or(0, atoi);
    options.min_base_quality = args.min_bq.as_deref().map_or(0, atoi);
    if let Some(d) = &args.depth {
        options.max_depth = atoi(d);
    }
    options.header = !args.no_header;
    options.region = args.region.clone();
    options.threads = args.threads;
    options.reference = args.reference.clone();
    if let Some(w) = args.window_bases {
        options.window_bases = w;
    }
    if args.histogram || args.ascii || args.n_bins.is_some() {
        // -o and -w turn off the terminal's width; a -w of 0 or less asks for it.
        let full_width = args.output.is_none() && args.n_bins.is_none();
        let mut bins = args.n_bins.as_deref().map_or(50, atoi);
        if bins <= 0 || full_width {
            let columns = terminal_columns();
            bins = if columns > 60 { columns - 40 } else { 40 };
        }
        options.histogram = Some(HistogramOptions { bins, ascii: args.ascii });
    }
    let mut inputs = args.inputs;
    if let Some(list) = &args.bam_list {
        let text = std::fs::read_to_string(list).map_err(|e| format!("Cannot open file list \"{}\": {}", list.display(), fasthts_io::os_message(&e)))?;
        inputs = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).map(PathBuf::from).collect();
    }
    if inputs.is_empty() {
        // samtools prints its usage and exits 0.
        let mut help = <crate::Cli as clap::CommandFactory>::command();
        let sub = help.find_subcommand_mut("coverage").expect("coverage is a subcommand");
        crate::print_stdout(format_args!("{}", sub.render_help()));
        return Ok(());
    }
    let report = Terminal { command: "coverage" };
    match &args.output {
        Some(path) if path.as_os_str() != "-" => Ok(command::coverage_file(&inputs, path, &options, &report)?),
        _ => {
            let mut out = io::BufWriter::with_capacity(1 << 20, io::stdout());
            Ok(command::coverage_to(&inputs, &options, &mut out, &report).and_then(|()| Ok(out.flush()?))?)
        }
    }
}
