//! `fasthts kmer extract-long-sequences`: extract-long-sequences.py.

use super::khmer_error;
use super::read_outputs::{refuse_input_as_output, script_failure, OutputCompression};
use clap::Args;
use fasthts_kmer::command::{check_readable, output_name, ReadOutput};
use fasthts_kmer::pyfmt::py_exception;
use fasthts_kmer::scripts;

/// extract-long-sequences.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Extract FASTQ or FASTA sequences longer than specified length (default: 200
bp).", after_help = "Example:

    extract-long-sequences.py --length 10 tests/test-data/paired-mixed.fa", after_long_help = "Examples:
  fasthts kmer extract-long-sequences -l 500 contigs.fa -o long.fa
  fasthts kmer extract-long-sequences -l 100 reads.fq.gz > long.fq")]
pub struct ExtractLongArgs {
    #[arg(help = "Input FAST[AQ] sequence filename.", required = true)]
    input_filenames: Vec<String>,
    #[arg(help = "The name of the output sequence file. (default: <_io.TextIOWrapper name='<stdout>' mode='w' encoding='utf-8'>)", long_help = "The name of the output sequence file. [default: stdout]", short = 'o', long = "output", value_name = "output")]
    output: Option<String>,
    #[arg(help = "The minimum length of the sequence file.", short = 'l', long = "length", default_value_t = 200, allow_negative_numbers = true)]
    length: i64,
    #[command(flatten)]
    compression: OutputCompression,
}

pub fn run(a: ExtractLongArgs) -> crate::CmdResult {
    refuse_input_as_output(&a.input_filenames, a.output.as_slice())?;
    let mut out = ReadOutput::create(a.output.as_deref(), a.compression.into())?;
    for f in &a.input_filenames {
        check_readable(f).map_err(|e| khmer_error(py_exception(f, &e)))?;
        scripts::extract_long_sequences(f, a.length, &mut out).map_err(script_failure)?;
    }
    out.commit()?;
    eprintln!("wrote to: {}", output_name(a.output.as_deref()));
    Ok(())
}
