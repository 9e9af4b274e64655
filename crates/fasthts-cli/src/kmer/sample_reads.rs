//! `fasthts kmer sample-reads-randomly`: sample-reads-randomly.py.

use super::check_inputs;
use super::read_outputs::{refuse_input_as_output, script_failure, OutputCompression};
use clap::Args;
use fasthts_kmer::command::{sample_generator, sample_outputs, Compression, ReadOutput};
use fasthts_kmer::pyrandom::PyRandom;
use fasthts_kmer::scripts::{Reservoirs, SampleOptions, SampleProgress, SampledUnit};

/// sample-reads-randomly.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Uniformly subsample sequences from a collection of files", after_help = "Take a list of files containing sequences, and subsample 100,000 sequences
(`-N`/`--num_reads`) uniformly, using reservoir sampling.  Stop after first
100m sequences (`-M`/`--max_reads`). By default take one subsample, but take
`-S`/`--samples` samples if specified.

The output is placed in `-o`/`--output` <file> (for a single sample) or in
\"<file>.subset.0\" to \"<file>.subset.S-1\" (for more than one sample).

This script uses the reservoir sampling algorithm.
http://en.wikipedia.org/wiki/Reservoir_sampling", after_long_help = "Examples:
  fasthts kmer sample-reads-randomly -N 100000 -R 1 reads.fq -o subset.fq
  fasthts kmer sample-reads-randomly -N 1000 -S 3 -R 7 reads.fq   (writes reads.fq.subset.0 to .2)")]
pub struct SampleReadsArgs {
    #[arg(long_help = "Input files (sampled together)", required = true)]
    filenames: Vec<String>,
    #[arg(help = "samples the number of sequences or pairs specified with -N", short = 'N', long = "num_reads", default_value_t = 100_000, allow_negative_numbers = true)]
    num_reads: i64,
    #[arg(long_help = "stop reading a file after this many sequences or pairs (checked every 10,000)", short = 'M', long = "max_reads", default_value_t = 100_000_000, allow_negative_numbers = true)]
    max_reads: i64,
    #[arg(long_help = "number of samples to take", short = 'S', long = "samples", default_value_t = 1, allow_negative_numbers = true)]
    num_samples: i64,
    #[arg(help = "Provide a random seed for the generator", long_help = "Provide a random seed for the generator (the same seed picks the same reads as khmer)", short = 'R', long = "random-seed", value_parser = python_int, allow_negative_numbers = true)]
    random_seed: Option<String>,
    #[arg(help = "Ignore read pair information if present", long = "force_single")]
    force_single: bool,
    #[arg(long_help = "Output file (one sample only) [default: <first input>.subset]", short = 'o', long = "output", value_name = "filename")]
    output: Option<String>,
    #[arg(help = "Overwrite output file if it exits", long_help = "Overwrite output file if it exists (as khmer words it: outputs are overwritten anyway; this lets a missing or empty input through)", short = 'f', long = "force")]
    force: bool,
    #[command(flatten)]
    compression: OutputCompression,
}

/// argparse's `type=int`: any size of integer.
fn python_int(s: &str) -> Result<String, String> {
    match PyRandom::from_decimal(s) {
        Some(_) => Ok(s.to_string()),
        None => Err(format!("invalid int value: '{s}'")),
    }
}

fn write_sample(path: &str, sample: &[SampledUnit], inputs: &[String], compression: Compression) -> crate::CmdResult {
    refuse_input_as_output(inputs, &[path])?;
    let mut out = ReadOutput::create(Some(path), compression)?;
    for unit in sample {
        unit.write(&mut out)?;
    }
    out.commit()?;
    Ok(())
}

pub fn run(a: SampleReadsArgs) -> crate::CmdResult {
    check_inputs(&a.filenames, a.force)?;
    let rng = sample_generator(a.random_seed.as_deref()).expect("checked by the parser");
    let num_samples = a.num_samples.max(1) as usize;
    let outputs = sample_outputs(a.output.as_deref(), &a.filenames, num_samples, a.force)?;
    if outputs.unused.is_some() {
        // khmer's message has no line end
        crate::print_stderr(format_args!("Error: cannot specify -o with more than one sample."));
    }
    let output_filename = &outputs.name;
    if num_samples == 1 {
        eprintln!("Subsampling {} reads using reservoir sampling.", a.num_reads);
        eprintln!("Subsampled reads will be placed in {output_filename}");
    } else {
        eprintln!("Subsampling {} reads, {num_samples} times,  using reservoir sampling.", a.num_reads);
        eprintln!("Subsampled reads will be placed in {output_filename}.N");
    }
    eprintln!();
    let options = SampleOptions { num_reads: a.num_reads, max_reads: a.max_reads, samples: num_samples, force_single: a.force_single };
    let mut reservoirs = Reservoirs::new(options, rng);
    for f in &a.filenames {
        eprintln!("opening {f} for reading");
        let input = if f == "/dev/stdin" { "-" } else { f.as_str() };
        reservoirs
            .add_file(input, |p| match p {
                SampleProgress::Scanned(n) => eprintln!("... {n} reads scanned"),
                SampleProgress::LimitReached => eprintln!("reached upper limit of {} reads (see -M); exiting", a.max_reads),
            })
            .map_err(script_failure)?;
    }
    if let Some(p) = &outputs.unused {
        write_sample(p, &[], &a.filenames, Compression::Plain)?;
    }
    for (sample, path) in reservoirs.samples.iter().zip(&outputs.paths) {
        eprintln!("Writing {} sequences to {}", sample.len(), if num_samples == 1 { output_filename } else { path });
        write_sample(path, sample, &a.filenames, a.compression.into())?;
    }
    Ok(())
}
