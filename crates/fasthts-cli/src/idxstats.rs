//! `fasthts idxstats`: samtools idxstats.

use crate::CmdResult;
use clap::Args;
use fasthts::bam::BamFile;
use fasthts::indexer;
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
    crate::with_threads(args.threads, || -> CmdResult {
        let bam = BamFile::open(&args.input)?;
        crate::warn_if_truncated(&bam);
        let text = match crate::find_index(&bam)? {
            Some(index) => indexer::idxstats(&bam, &index),
            None => {
                eprintln!(
                    "fasthts idxstats: warning: no usable index for \"{}\"; counting every record instead",
                    args.input.display()
                );
                indexer::idxstats_by_scan(&bam)?
            }
        };
        crate::write_stdout(text.as_bytes())
    })
}
