//! `fasthts kmer interleave-reads`: interleave-reads.py.

use super::check_inputs;
use super::read_outputs::{refuse_input_as_output, script_failure, OutputCompression};
use clap::Args;
use fasthts_kmer::command::{describe_output, ReadOutput};
use fasthts_kmer::scripts;

/// interleave-reads.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Produce interleaved files from R1/R2 paired files", after_help = "The output is an interleaved set of reads, with each read in <R1> paired with a
read in <R2>. By default, the output goes to stdout unless `-o`/`--output` is
specified.

As a \"bonus\", this file ensures that if read names are not already formatted
properly, they are reformatted consistently, such that they look like the
pre-1.8 Casava format (`@name/1`, `@name/2`). This reformatting can be switched
off with the `--no-reformat` flag.

Example:

    interleave-reads.py tests/test-data/paired.fq.1 \\
            tests/test-data/paired.fq.2 -o paired.fq", after_long_help = "Examples:
  fasthts kmer interleave-reads reads_R1.fq reads_R2.fq -o interleaved.fq
  fasthts kmer interleave-reads --gzip -o interleaved.fq.gz reads_R1.fq.gz reads_R2.fq.gz")]
pub struct InterleaveArgs {
    #[arg(long_help = "First reads of the pairs (R1)")]
    left: String,
    #[arg(long_help = "Second reads of the pairs (R2), in the same order")]
    right: String,
    #[arg(long_help = "Output file [default: stdout]", short = 'o', long = "output", value_name = "filename")]
    output: Option<String>,
    #[arg(help = "Do not reformat read names or enforce consistency", long = "no-reformat")]
    no_reformat: bool,
    #[arg(help = "Overwrite output file if it exists", long_help = "Overwrite output file if it exists (as khmer words it: outputs are overwritten anyway; this lets a missing or empty input through)", short = 'f', long = "force")]
    force: bool,
    #[command(flatten)]
    compression: OutputCompression,
}

pub fn run(a: InterleaveArgs) -> crate::CmdResult {
    check_inputs(&[&a.left, &a.right], a.force)?;
    refuse_input_as_output(&[&a.left, &a.right], a.output.as_slice())?;
    eprintln!("Interleaving:\n\t{}\n\t{}", a.left, a.right);
    let mut out = ReadOutput::create(a.output.as_deref(), a.compression.into())?;
    let pairs =
        scripts::interleave_reads(&a.left, &a.right, !a.no_reformat, &mut out, |n| eprintln!("... {n} pairs")).map_err(script_failure)?;
    out.commit()?;
    eprintln!("final: interleaved {pairs} pairs");
    eprintln!("output written to {}", describe_output(a.output.as_deref()));
    Ok(())
}
