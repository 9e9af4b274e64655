//! `fasthts mosdepth`: mosdepth 0.3.3's outputs (per-base runs, `--by`
//! regions, thresholds, distributions, summary) with its numbers, on all
//! cores. The work is in `fasthts::command::mosdepth`.

use crate::{CmdResult, Failure, Terminal};
use clap::Args;
use fasthts::command;
use fasthts::mosdepth::{parse_thresholds, By, MosdepthOptions, DEFAULT_EXCLUDE_FLAGS};
use std::path::PathBuf;

/// Depth per base, per window or BED region, thresholds and distributions, as mosdepth.
#[derive(Args)]
#[command(
    override_usage = "fasthts mosdepth [options] <prefix> <BAM-or-CRAM>",
    after_help = "Outputs, named from <prefix>, with mosdepth 0.3.3's numbers:\n  \
    {prefix}.mosdepth.global.dist.txt   cumulative distribution: per reference, the fraction of bases at or above each depth\n  \
    {prefix}.mosdepth.summary.txt       per reference: length, bases, mean, min and max depth (and _region rows with --by)\n  \
    {prefix}.per-base.bed.gz            runs of equal depth (unless -n/--no-per-base)\n  \
    {prefix}.regions.bed.gz             mean depth of each --by window or BED region\n  \
    {prefix}.mosdepth.region.dist.txt   cumulative distribution of the regions (with --by)\n  \
    {prefix}.thresholds.bed.gz          bases at or above each --thresholds depth per region\n\n\
    What counts, as mosdepth counts it: reads without a flag of -F (default 1796: unmapped, secondary, QC-failed, \
    duplicate), with one of -i if given, of MAPQ at least -Q; their M/=/X blocks (not deletions or skips), the overlap \
    of the two reads of a proper pair counted once; with -x/--fast-mode each read's whole span and no overlap correction. \
    The input must be indexed. The genome is counted in parallel windows through the index; the output does not depend \
    on the thread count. The .gz files are BGZF; mosdepth's .csi indexes beside them are not written.\n\n\
    Examples:\n  fasthts mosdepth -n -x sample sample.bam\n  fasthts mosdepth --by 500 -T 1,10,20 sample sample.bam\n  \
    fasthts mosdepth --by exons.bed -Q 20 -t 4 sample sample.cram -f ref.fa"
)]
pub struct MosdepthArgs {
    /// Worker threads [default: all cores; mosdepth's own default is 0 decompression threads]
    #[arg(short = 't', long = "threads", value_name = "threads", value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Chromosome to restrict depth calculation
    #[arg(short = 'c', long = "chrom", value_name = "chrom")]
    pub chrom: Option<String>,
    /// Optional BED file or (integer) window size
    #[arg(short = 'b', long = "by", value_name = "bed|window")]
    pub by: Option<String>,
    /// Don't output per-base depth
    #[arg(short = 'n', long = "no-per-base")]
    pub no_per_base: bool,
    /// FASTA file for use with CRAM files
    #[arg(short = 'f', long = "fasta", value_name = "fasta")]
    pub fasta: Option<PathBuf>,
    /// Exclude reads with any of the bits in FLAG set
    #[arg(short = 'F', long = "flag", value_name = "FLAG", default_value_t = DEFAULT_EXCLUDE_FLAGS)]
    pub flag: u16,
    /// Only include reads with any of the bits in FLAG set (0: unset)
    #[arg(short = 'i', long = "include-flag", value_name = "FLAG", default_value_t = 0)]
    pub include_flag: u16,
    /// Don't look at internal CIGAR operations or correct mate overlaps
    #[arg(short = 'x', long = "fast-mode")]
    pub fast_mode: bool,
    /// Mapping quality threshold: reads with a quality less than this are ignored
    #[arg(short = 'Q', long = "mapq", value_name = "mapq", default_value_t = 0)]
    pub mapq: i64,
    /// For each interval in --by, write the number of bases covered by at least each threshold (comma-separated integers)
    #[arg(short = 'T', long = "thresholds", value_name = "thresholds")]
    pub thresholds: Option<String>,
    /// Positions per parallel window (output does not depend on it)
    #[arg(long = "window-bases", value_name = "INT", hide = true)]
    pub window_bases: Option<u64>,
    /// Output prefix
    #[arg(value_name = "prefix")]
    pub prefix: String,
    /// The indexed alignment file (BAM or CRAM)
    #[arg(value_name = "BAM-or-CRAM")]
    pub input: PathBuf,
}

pub fn run(args: MosdepthArgs) -> CmdResult {
    let mut options = MosdepthOptions {
        threads: args.threads.map(|t| t.max(1)),
        chrom: args.chrom,
        no_per_base: args.no_per_base,
        exclude_flags: args.flag,
        include_flags: args.include_flag,
        fast_mode: args.fast_mode,
        min_mapq: args.mapq,
        fasta: args.fasta,
        ..Default::default()
    };
    if let Some(t) = &args.thresholds {
        options.thresholds = parse_thresholds(t)?;
    }
    if let Some(by) = &args.by {
        options.by = Some(if !by.is_empty() && by.bytes().all(|b| b.is_ascii_digit()) {
            By::Window(by.parse().map_err(|_| format!("invalid --by window size {by:?}"))?)
        } else {
            By::Bed(PathBuf::from(by))
        });
    }
    if let Some(w) = args.window_bases {
        options.window_bases = w;
    }
    // mosdepth's status 2 for an input without an index (a CRAM's .crai
    // is looked for as the library opens it).
    let is_cram = args.input.extension().is_some_and(|e| e == "cram");
    if args.input.is_file() && !is_cram && matches!(command::locate_index(&args.input), command::IndexLocation::Missing) {
        return Err(Failure::new(
            2,
            format!(
                "fasthts mosdepth: {}: alignment file must be indexed (no .bai or .csi beside it: fasthts index it first)",
                args.input.display()
            ),
        )
        .into());
    }
    let report = Terminal { command: "mosdepth" };
    let run = command::mosdepth(&args.prefix, &args.input, &options, &report)?;
    for w in &run.warnings {
        eprintln!("{w}");
    }
    Ok(())
}
