//! `fasthts idxstats`: samtools idxstats.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, IdxstatsOptions};
use std::path::PathBuf;

/// Reports per-reference mapped and unmapped record counts from the index,
/// as samtools idxstats (counting every record when there is no index).
#[derive(Args)]
pub struct IdxstatsArgs {
    /// Worker threads (all cores by default).
    #[arg(short = '@', long = "threads", value_name = "INT")]
    pub threads: Option<usize>,
    /// Input BAM file (indexed).
    #[arg(value_name = "IN.bam")]
    pub input: PathBuf,
}

pub fn run(args: IdxstatsArgs) -> CmdResult {
    let text = command::idxstats(&args.input, &IdxstatsOptions { threads: args.threads }, &Terminal { command: "idxstats" })?;
    crate::write_stdout(text.as_bytes())
}
