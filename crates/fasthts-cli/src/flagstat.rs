//! `fasthts flagstat`: samtools flagstat, byte for byte.

use crate::CmdResult;
use clap::{Args, ValueEnum};
use fasthts::bam::BamFile;
use fasthts::flagstat;
use fasthts::input::Input;
use std::path::PathBuf;

/// Counts records by flag category (QC-passed + QC-failed), as samtools flagstat.
#[derive(Args)]
pub struct FlagstatArgs {
    /// Worker threads (all cores by default).
    #[arg(short = '@', long = "threads", value_name = "INT")]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(short = 'O', long = "output-fmt", value_name = "FORMAT", default_value = "default", ignore_case = true)]
    pub format: OutputFormat,
    /// Input BAM or SAM file, or - for standard input.
    #[arg(value_name = "IN.bam")]
    pub input: PathBuf,
}

/// Output formats of samtools flagstat.
#[derive(Clone, Copy, ValueEnum)]
pub enum OutputFormat {
    /// The classic text.
    Default,
    /// JSON.
    Json,
    /// Tab-separated.
    Tsv,
}

/// Compressed bytes per region when counting through the index: large
/// enough that re-reading the block at each cut costs under 1%, small enough
/// to balance the threads.
const REGION_BYTES: u64 = 8 << 20;

/// Counts a BAM: by regions through its index when it has a usable one,
/// else sequentially.
fn count_bam(bam: &BamFile) -> Result<flagstat::FlagStat, fasthts::Error> {
    crate::warn_if_truncated(bam);
    let indexed = match crate::find_index(bam) {
        Ok(Some(index)) => Some(flagstat::count_indexed(bam, &index, REGION_BYTES)),
        _ => None,
    };
    match indexed {
        Some(Ok(stats)) => Ok(stats),
        // The index is only a way to parallelise: if it is unreadable or
        // does not describe the file, count sequentially, which reports the
        // file's own errors as samtools would.
        Some(Err(e)) => {
            if let fasthts::Error::IndexMismatch(_) = e {
                eprintln!("fasthts flagstat: warning: {}: {e}; reading the file sequentially", bam.path().display());
            }
            flagstat::count_sequential(bam)
        }
        None => flagstat::count_sequential(bam),
    }
}

pub fn run(args: FlagstatArgs) -> CmdResult {
    crate::with_threads(args.threads, || {
        let spool = std::env::temp_dir().join(format!("fasthts-flagstat.{}", std::process::id()));
        let stats = match fasthts::input::open(&args.input, &spool)? {
            Input::Bam(bam, _spool) => count_bam(&bam)?,
            Input::Sam(mut sam) => {
                let mut stats = flagstat::FlagStat::default();
                sam.for_each_record(|r| {
                    stats.add(&r);
                    Ok::<(), fasthts::Error>(())
                })?;
                stats
            }
        };
        let text = match args.format {
            OutputFormat::Default => stats.to_default_text(),
            OutputFormat::Json => stats.to_json(),
            OutputFormat::Tsv => stats.to_tsv(),
        };
        crate::write_stdout(text.as_bytes())
    })
}
