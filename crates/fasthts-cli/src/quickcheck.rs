//! `fasthts quickcheck`: samtools quickcheck's checks, messages and exit
//! status (the OR of 2 could not open, 4 not sequence data, 8 bad header
//! or no targets, 16 missing EOF block).

use clap::{ArgAction, Args};
use fasthts::command::{self, QuickcheckOptions};
use std::path::PathBuf;

/// Quickly checks that files look like intact BAM, SAM or CRAM: readable,
/// sequence data, a header with references, and (BAM, CRAM) the EOF marker. Silent with
/// exit status 0 when all pass.
#[derive(Args)]
#[command(after_help = "Exit status: 0 when every file passes, else the OR of 2 (could not be opened), 4 (not sequence data),
8 (bad header, or no references without -u) and 16 (a BAM without its EOF block).

Examples:
  fasthts quickcheck *.bam && echo all intact
  fasthts quickcheck -v *.bam > bad_files.txt
  fasthts quickcheck -u -q unmapped.bam")]
pub struct QuickcheckArgs {
    /// Verbose output: list failing files on stdout (repeat for more).
    #[arg(short = 'v', action = ArgAction::Count)]
    pub verbose: u8,
    /// Suppress warning messages.
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Unmapped input: do not require references in the header.
    #[arg(short = 'u')]
    pub unmapped: bool,
    /// Files to check.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// Runs the checks; returns the exit status (0 when every file passes).
pub fn run(args: QuickcheckArgs) -> u8 {
    let options = QuickcheckOptions { unmapped: args.unmapped };
    let mut status = 0;
    for path in &args.files {
        let failures = command::quickcheck(path, &options);
        for failure in &failures {
            status |= failure.status();
            if !args.quiet || args.verbose >= 2 {
                eprintln!("{} {failure}", path.display());
            }
        }
        if !failures.is_empty() && args.verbose >= 1 {
            println!("{}", path.display());
        }
    }
    status
}
