//! `fasthts quickcheck`: samtools quickcheck's checks, messages and exit
//! status (the OR of 2 could not open, 4 not sequence data, 8 bad header
//! or no targets, 16 missing EOF block).

use clap::{ArgAction, Args};
use fasthts::sam::SamReader;
use fasthts::bam::BamFile;
use fasthts::input::{sniff, Kind};
use std::io::Read;
use std::path::PathBuf;

const FAIL_OPEN: u8 = 2;
const NOT_SEQUENCE: u8 = 4;
const BAD_HEADER: u8 = 8;
const NO_EOF_BLOCK: u8 = 16;

/// Quickly checks that files look like intact BAM or SAM: readable, sequence
/// data, a header with references, and (BAM) the EOF marker. Silent with
/// exit status 0 when all pass.
#[derive(Args)]
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
    let mut status = 0;
    for path in &args.files {
        let mut state = 0;
        let mut fail = |bit: u8, what: &str| {
            state |= bit;
            if !args.quiet || args.verbose >= 2 {
                eprintln!("{} {what}", path.display());
            }
        };
        let prefix = std::fs::File::open(path).and_then(|f| {
            let mut v = Vec::new();
            f.take(1 << 16).read_to_end(&mut v).map(|_| v)
        });
        match prefix {
            Err(_) => fail(FAIL_OPEN, "could not be opened for reading."),
            Ok(prefix) => match sniff(&prefix) {
                Kind::Bam => match BamFile::open(path) {
                    Err(_) => fail(BAD_HEADER, "caused an error whilst reading its header."),
                    Ok(bam) => {
                        if !args.unmapped && bam.header().references.is_empty() {
                            fail(BAD_HEADER, "had no targets in header.");
                        }
                        if !bam.has_eof_marker() {
                            fail(NO_EOF_BLOCK, "was missing EOF block when one should be present.");
                        }
                    }
                },
                Kind::Sam => match std::fs::File::open(path).map_err(|_| ()).and_then(|f| SamReader::new(f).map_err(|_| ())) {
                    Err(()) => fail(BAD_HEADER, "caused an error whilst reading its header."),
                    Ok(sam) => {
                        if !args.unmapped && sam.header().references.is_empty() {
                            fail(BAD_HEADER, "had no targets in header.");
                        }
                    }
                },
                Kind::Compressed | Kind::Empty | Kind::Unknown => fail(NOT_SEQUENCE, "was not identified as sequence data."),
            },
        }
        if state > 0 && args.verbose >= 1 {
            println!("{}", path.display());
        }
        status |= state;
    }
    status
}
