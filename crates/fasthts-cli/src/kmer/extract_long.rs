//! `fasthts kmer extract-long-sequences`: extract-long-sequences.py.

use super::khmer_error;
use super::read_outputs::{
    check_readable, output_name, python_exception, refuse_input_as_output, script_failure, OutputCompression, ReadOutput,
};
use clap::Args;
use fasthts_kmer::scripts;

/// extract-long-sequences.py
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fasthts kmer extract-long-sequences -l 500 contigs.fa -o long.fa
  fasthts kmer extract-long-sequences -l 100 reads.fq.gz > long.fq")]
pub struct ExtractLongArgs {
    /// Input FAST[AQ] sequence filename.
    #[arg(required = true)]
    input_filenames: Vec<String>,
    /// The name of the output sequence file. [default: stdout]
    #[arg(short = 'o', long = "output", value_name = "output")]
    output: Option<String>,
    /// The minimum length of the sequence file.
    #[arg(short = 'l', long = "length", default_value_t = 200, allow_negative_numbers = true)]
    length: i64,
    #[command(flatten)]
    compression: OutputCompression,
}

pub fn run(a: ExtractLongArgs) -> crate::CmdResult {
    refuse_input_as_output(&a.input_filenames, a.output.as_slice())?;
    let mut out = ReadOutput::create(a.output.as_deref(), a.compression)?;
    for f in &a.input_filenames {
        check_readable(f).map_err(|e| khmer_error(python_exception(f, &e)))?;
        scripts::extract_long_sequences(f, a.length, &mut out).map_err(script_failure)?;
    }
    out.commit()?;
    eprintln!("wrote to: {}", output_name(a.output.as_deref()));
    Ok(())
}
