//! `fasthts kmer readstats`: readstats.py.

use super::read_outputs::refuse_input_as_output;
use clap::Args;
use fasthts_kmer::command::{check_readable, Compression, ReadOutput};
use fasthts_kmer::pyfmt::py_os_error;
use fasthts_kmer::scripts::{self, average_length, FileStats};
use std::io::Write;

/// readstats.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Display summary statistics for one or more FASTA/FASTQ files.", after_help = "Report number of bases, number of sequences, and average sequence length for
one or more FASTA/FASTQ files; and report aggregate statistics at end.

With `-o`/`--output`, the output will be saved to the specified file.

Example:

    readstats.py tests/test-data/test-abund-read-2.fa", after_long_help = "Examples:
  fasthts kmer readstats reads_R1.fq.gz reads_R2.fq.gz
  fasthts kmer readstats --csv -o stats.csv *.fq.gz")]
pub struct ReadstatsArgs {
    #[arg(long_help = "FASTA/FASTQ files", required = true)]
    filenames: Vec<String>,
    #[arg(help = "output file for statistics; defaults to stdout. (default: <_io.TextIOWrapper name='<stdout>' mode='w' encoding='utf-8'>)", short = 'o', long = "output", value_name = "filename")]
    output: Option<String>,
    #[arg(help = "Use the CSV format for the statistics, including column headers.", long = "csv")]
    csv: bool,
}

pub fn run(a: ReadstatsArgs) -> crate::CmdResult {
    let mut stats = Vec::new();
    for f in &a.filenames {
        // khmer reports a file it cannot read and goes on with the next
        let counted = check_readable(f)
            .map_err(|e| py_os_error(f, &e))
            .and_then(|()| scripts::read_stats(f, |n| eprintln!("... {f} {n}")).map_err(|e| e.to_string()));
        let (bases, seqs) = match counted {
            Ok(c) => c,
            Err(msg) => {
                eprintln!("ERROR in opening {f}:\n      {msg}");
                continue;
            }
        };
        if seqs > 0 {
            eprintln!("... found {bases} bps / {seqs} seqs; {} average length -- {f}", average_length(bases, seqs));
            stats.push(FileStats { bases, seqs, name: f.clone() });
        } else {
            eprintln!("No sequences found in {f}");
        }
    }
    let text = if stats.is_empty() {
        format!("No sequences found in {} files\n", a.filenames.len())
    } else {
        scripts::format_read_stats(&stats, a.csv)
    };
    refuse_input_as_output(&a.filenames, a.output.as_slice())?;
    let mut out = ReadOutput::create(a.output.as_deref(), Compression::Plain)?;
    out.write_all(text.as_bytes())?;
    out.commit()?;
    Ok(())
}
