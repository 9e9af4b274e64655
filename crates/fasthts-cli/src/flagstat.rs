//! `fasthts flagstat`: samtools flagstat, byte for byte.

use crate::{CmdResult, Terminal};
use clap::{Args, ValueEnum};
use fasthts::command::{self, FlagstatOptions};
use std::path::PathBuf;

/// Counts records by flag category (QC-passed + QC-failed), as samtools flagstat.
#[derive(Args)]
#[command(
    arg_required_else_help = true,
    after_help = "Examples:
  fasthts flagstat in.bam                 counts, as samtools flagstat prints them
  fasthts flagstat -O json -@ 4 in.bam    as JSON, on 4 threads
  samtools view -b -q 20 in.bam | fasthts flagstat -    from a pipe"
)]
pub struct FlagstatArgs {
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(short = 'O', long = "output-fmt", value_name = "FORMAT", default_value = "default", ignore_case = true)]
    pub format: OutputFormat,
    /// Input BAM, SAM or CRAM file, or - for standard input.
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

pub fn run(args: FlagstatArgs) -> CmdResult {
    crate::exhaustion::give_large_blocks_back();
    let options = FlagstatOptions { threads: args.threads, ..FlagstatOptions::default() };
    let bar = crate::progress::Bar::start("flagstat", false, crate::progress::Source::Inflated(vec![args.input.clone()]));
    let stats = command::flagstat_path(&args.input, &options, &Terminal { command: "flagstat" })?;
    drop(bar);
    let text = match args.format {
        OutputFormat::Default => stats.to_default_text(),
        OutputFormat::Json => stats.to_json(),
        OutputFormat::Tsv => stats.to_tsv(),
    };
    crate::write_stdout(text.as_bytes())
}
