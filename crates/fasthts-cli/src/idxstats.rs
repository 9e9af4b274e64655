//! `fasthts idxstats`: samtools idxstats.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, IdxstatsOptions};
use std::path::PathBuf;

/// Reports per-reference mapped and unmapped record counts from the index,
/// as samtools idxstats (counting every record when there is no index).
#[derive(Args)]
#[command(
    arg_required_else_help = true,
    after_help = "Output: one line per reference, name, length, mapped and unmapped records, then * for the
unplaced unmapped records.

Examples:
  fasthts idxstats in.bam              from in.bam.bai or in.bam.csi
  fasthts idxstats -@ 2 in.bam | sort -k3,3nr | head    references with the most reads"
)]
pub struct IdxstatsArgs {
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Input BAM file (indexed), SAM or CRAM (every record counted).
    #[arg(value_name = "IN.bam")]
    pub input: PathBuf,
}

pub fn run(args: IdxstatsArgs) -> CmdResult {
    // Shown only when there is no index and every record is counted (with
    // one, the job is over before the bar's delay).
    let bar = crate::progress::Bar::start("idxstats", false, crate::progress::Source::Inflated(vec![args.input.clone()]));
    let text = command::idxstats(&args.input, &IdxstatsOptions { threads: args.threads }, &Terminal { command: "idxstats" })?;
    drop(bar);
    crate::write_stdout(text.as_bytes())
}
