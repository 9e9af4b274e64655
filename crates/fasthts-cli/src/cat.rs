//! `fasthts cat`: samtools 1.16's concatenation of BAM or CRAM files,
//! byte for byte. The work is in `fasthts::command::cat_files`.

use crate::{CmdResult, Terminal};
use clap::{ArgAction, Args};
use fasthts::command::{self, CatOptions};
use std::path::PathBuf;

/// Concatenates BAM files (or CRAM files) without decoding their records,
/// as samtools cat.
#[derive(Args)]
#[command(
    disable_help_flag = true,
    override_usage = "fasthts cat [options] <in1.bam>  [... <inN.bam>]\n       fasthts cat [options] <in1.cram> [... <inN.cram>]",
    after_help = "Concatenates BAM or CRAM files, first those in the -b lists, then those on the command line; the first input's \
    format decides, and every input must have it (SAM is refused). The header is -h FILE's or the first input's; the inputs' \
    compressed blocks (CRAM containers) are copied as they are, so the output of sorted inputs given in order is sorted. \
    Output identical to samtools 1.16 (its @PG line names fasthts; --no-PG leaves it out), written to standard output \
    unless -o is given; an output file appears only once complete. -@ is accepted and, as in samtools, changes nothing.\n\n\
    Examples:\n  fasthts cat -o all.bam part1.bam part2.bam part3.bam\n  fasthts cat -h header.sam -b parts.txt > all.bam\n  \
    fasthts cat --no-PG a.cram b.cram > ab.cram"
)]
pub struct CatArgs {
    /// Print help (-h is samtools' header file here)
    #[arg(long = "help", short = '?', action = ArgAction::Help)]
    pub help: Option<bool>,
    /// List of input BAM/CRAM file names, one per line (read before the inputs named on the command line)
    #[arg(short = 'b', value_name = "FILE", action = ArgAction::Append)]
    pub lists: Vec<PathBuf>,
    /// Copy the header from FILE (SAM, BAM or CRAM) [default is 1st input file]
    #[arg(short = 'h', value_name = "FILE")]
    pub header: Option<PathBuf>,
    /// Output BAM/CRAM [standard output]
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Do not add a @PG line to the header
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Accepted as samtools accepts it; blocks and containers are copied, not compressed
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Input BAM or CRAM files (- for standard input)
    #[arg(value_name = "IN")]
    pub inputs: Vec<PathBuf>,
}

pub fn run(args: CatArgs) -> CmdResult {
    let mut inputs = Vec::new();
    for list in &args.lists {
        inputs.extend(command::read_file_list(list)?);
    }
    inputs.extend(args.inputs);
    if inputs.is_empty() {
        // samtools: its usage on stderr, status 1.
        let mut cli = crate::command();
        let help = cli.find_subcommand_mut("cat").map(|c| c.render_help().to_string()).unwrap_or_default();
        return Err(crate::Failure::new(1, help.trim_end().to_string()).into());
    }
    let options =
        CatOptions { header: args.header, program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), crate::command_line())) };
    let output = args.output.unwrap_or_else(|| PathBuf::from("-"));
    command::cat_files(&inputs, &output, &options, &Terminal { command: "cat" })?;
    Ok(())
}
