//! `fasthts kmer interleave-reads`: interleave-reads.py.

use super::check_input_file;
use super::read_outputs::{describe_output, refuse_input_as_output, script_failure, OutputCompression, ReadOutput};
use clap::Args;
use fasthts_kmer::scripts;

/// interleave-reads.py
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fasthts kmer interleave-reads reads_R1.fq reads_R2.fq -o interleaved.fq
  fasthts kmer interleave-reads --gzip -o interleaved.fq.gz reads_R1.fq.gz reads_R2.fq.gz")]
pub struct InterleaveArgs {
    /// First reads of the pairs (R1)
    left: String,
    /// Second reads of the pairs (R2), in the same order
    right: String,
    /// Output file [default: stdout]
    #[arg(short = 'o', long = "output", value_name = "filename")]
    output: Option<String>,
    /// Do not reformat read names or enforce consistency
    #[arg(long = "no-reformat")]
    no_reformat: bool,
    /// Overwrite output file if it exists (as khmer words it: outputs are overwritten anyway; this lets a missing or empty input through)
    #[arg(short = 'f', long = "force")]
    force: bool,
    #[command(flatten)]
    compression: OutputCompression,
}

pub fn run(a: InterleaveArgs) -> crate::CmdResult {
    check_input_file(&a.left, a.force)?;
    check_input_file(&a.right, a.force)?;
    refuse_input_as_output(&[&a.left, &a.right], a.output.as_slice())?;
    eprintln!("Interleaving:\n\t{}\n\t{}", a.left, a.right);
    let mut out = ReadOutput::create(a.output.as_deref(), a.compression)?;
    let pairs =
        scripts::interleave_reads(&a.left, &a.right, !a.no_reformat, &mut out, |n| eprintln!("... {n} pairs")).map_err(script_failure)?;
    out.commit()?;
    eprintln!("final: interleaved {pairs} pairs");
    eprintln!("output written to {}", describe_output(a.output.as_deref()));
    Ok(())
}
