//! `fasthts kmer split-paired-reads`: split-paired-reads.py.

use super::read_outputs::{refuse_input_as_output, script_failure, OutputCompression};
use super::{check_inputs, khmer_error};
use clap::Args;
use fasthts_kmer::command::{describe_output, split_paired_outputs, ReadOutput};
use fasthts_kmer::scripts::{self, UnpairedReads};

/// split-paired-reads.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Split interleaved reads into two files, left and right.", after_help = "Some programs want paired-end read input in the One True Format, which is
interleaved; other programs want input in the Insanely Bad Format, with left-
and right- reads separated. This reformats the former to the latter.

The directory into which the left- and right- reads are output may be specified
using `-d`/`--output-dir`. This directory will be created if it does not
already exist.

Alternatively, you can specify the filenames directly with `-1`/`--output-
first` and `-2`/`--output-second`, which will override the `-d`/`--output-dir`
setting on a file-specific basis.

`-0`/'--output-orphans` will allow broken-paired format, and orphaned reads
will be saved separately, to the specified file.

Example:

    split-paired-reads.py tests/test-data/paired.fq

Example:

    split-paired-reads.py -0 reads-output-file tests/test-data/paired.fq

Example:

    split-paired-reads.py -1 reads.1 -2 reads.2 tests/test-data/paired.fq", after_long_help = "Examples:
  fasthts kmer split-paired-reads interleaved.fq   (writes interleaved.fq.1 and .2)
  fasthts kmer split-paired-reads -0 orphans.fq -1 R1.fq -2 R2.fq interleaved.fq
  gunzip -c kept.fq.gz | fasthts kmer split-paired-reads -d out/ -")]
pub struct SplitPairedArgs {
    #[arg(long_help = "Interleaved reads (plain, gzip, BGZF or bzip2); `-` = stdin", default_value = "/dev/stdin")]
    infile: String,
    #[arg(help = "Output split reads to specified directory. Creates directory if necessary", short = 'd', long = "output-dir", value_name = "output_directory", default_value = "", hide_default_value = true)]
    output_directory: String,
    #[arg(help = "Allow \"orphaned\" reads and extract them to this file", short = '0', long = "output-orphaned", value_name = "output_orphaned")]
    output_orphaned: Option<String>,
    #[arg(help = "Output \"left\" reads to this file", long_help = "Output \"left\" reads to this file [default: <infile>.1]", short = '1', long = "output-first", value_name = "output_first")]
    output_first: Option<String>,
    #[arg(help = "Output \"right\" reads to this file", long_help = "Output \"right\" reads to this file [default: <infile>.2]", short = '2', long = "output-second", value_name = "output_second")]
    output_second: Option<String>,
    #[arg(help = "Overwrite output file if it exists", long_help = "Overwrite output file if it exists (as khmer words it: outputs are overwritten anyway; this lets a missing or empty input through)", short = 'f', long = "force")]
    force: bool,
    #[command(flatten)]
    compression: OutputCompression,
}

pub fn run(a: SplitPairedArgs) -> crate::CmdResult {
    check_inputs(&[&a.infile], a.force)?;
    let outputs = split_paired_outputs(&a.infile, &a.output_directory, a.output_first.as_deref(), a.output_second.as_deref())?;
    let [first, second] = &outputs.paths;
    let orphaned = a.output_orphaned.as_deref().unwrap_or("-");
    refuse_input_as_output(&[&outputs.input], &[first, second, orphaned])?;
    let compression = a.compression.into();
    let mut fp1 = ReadOutput::create(Some(first), compression)?;
    let mut fp2 = ReadOutput::create(Some(second), compression)?;
    let mut fp0 = a.output_orphaned.as_deref().map(|p| ReadOutput::create(Some(p), compression)).transpose()?;
    let orphans = fp0.as_mut().map(|w| w as &mut dyn std::io::Write);
    let counts = scripts::split_paired_reads(&outputs.input, &mut fp1, &mut fp2, orphans, |n| eprintln!("... {n}")).map_err(|e| match e
        .downcast_ref::<UnpairedReads>(
    ) {
        Some(u) => khmer_error(format!("Unpaired reads found starting at {}; exiting", u.first)),
        None => script_failure(e),
    })?;
    fp1.commit()?;
    fp2.commit()?;
    if let Some(f) = fp0 {
        f.commit()?;
    }
    eprintln!(
        "DONE; split {} sequences ({} left, {} right, {} orphans)",
        counts.left + counts.right,
        counts.left,
        counts.right,
        counts.orphans
    );
    let [out1, out2] = &outputs.names;
    eprintln!("/1 reads in {out1}");
    eprintln!("/2 reads in {out2}");
    if let Some(p) = &a.output_orphaned {
        eprintln!("orphans in {}", describe_output(Some(p)));
    }
    Ok(())
}
