//! `fasthts kmer fastq-to-fasta`: fastq-to-fasta.py.

use super::khmer_error;
use super::read_outputs::{refuse_input_as_output, script_failure, OutputCompression};
use clap::Args;
use fasthts_kmer::command::{check_readable, describe_output, ReadOutput};
use fasthts_kmer::pyfmt::py_exception;
use fasthts_kmer::scripts;

/// fastq-to-fasta.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Converts FASTQ format (.fq) files to FASTA format (.fa).", after_help = "", after_long_help = "Examples:
  fasthts kmer fastq-to-fasta reads.fq -o reads.fa
  fasthts kmer fastq-to-fasta -n --gzip reads.fq.gz -o reads.fa.gz")]
pub struct FastqToFastaArgs {
    #[arg(help = "The name of the input FASTQ sequence file.")]
    input_sequence: String,
    #[arg(help = "The name of the output FASTA sequence file. (default: <_io.TextIOWrapper name='<stdout>' mode='w' encoding='utf-8'>)", long_help = "The name of the output FASTA sequence file. [default: stdout]", short = 'o', long = "output", value_name = "filename")]
    output: Option<String>,
    #[arg(help = "Option to keep reads containing 'N's in input_sequence file. Default is to drop reads", long_help = "Keep reads containing 'N's (they are dropped otherwise)", short = 'n', long = "n_keep")]
    n_keep: bool,
    #[command(flatten)]
    compression: OutputCompression,
}

pub fn run(a: FastqToFastaArgs) -> crate::CmdResult {
    let input = &a.input_sequence;
    eprintln!("fastq from  {input}");
    refuse_input_as_output(&[input], a.output.as_slice())?;
    let mut out = ReadOutput::create(a.output.as_deref(), a.compression.into())?;
    check_readable(input).map_err(|e| khmer_error(py_exception(input, &e)))?;
    let dropped = scripts::fastq_to_fasta(input, a.n_keep, &mut out, |n| eprintln!("... {n}")).map_err(script_failure)?;
    out.commit()?;
    eprintln!("\nlines from {input}");
    if a.n_keep {
        eprintln!("No lines dropped from file.");
    } else {
        eprintln!("{dropped} lines dropped.");
    }
    eprintln!("Wrote output to {}", describe_output(a.output.as_deref()));
    Ok(())
}
