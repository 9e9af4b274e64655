//! `fasthts kmer extract-paired-reads`: extract-paired-reads.py.

use super::read_outputs::{refuse_input_as_output, script_failure, OutputCompression};
use super::{check_inputs, khmer_error};
use clap::Args;
use fasthts_kmer::command::{extract_paired_outputs, ReadOutput};
use fasthts_kmer::scripts;

/// extract-paired-reads.py
#[derive(Args, Debug)]
// khmer's description and epilog (its `--help`, see `argparse`); after_long_help: fasthts's notes (`fasthts help kmer ...`)
#[command(long_about = "Take a mixture of reads and split into pairs and orphans.", after_help = "Many read-handling programs (assemblers, mappers, etc.) require that you give
them either perfectly interleaved files, or files containing only single reads.
This script takes files that were originally interleaved but where reads may
have been orphaned (via error filtering, application of abundance filtering,
digital normalization in non-paired mode, or partitioning) and separates the
interleaved reads from the orphaned reads.

The default output is two files, `<input file>.pe` and `<input file>.se`,
placed in the current directory. The .pe file contains interleaved and properly
paired sequences, while the .se file contains orphan sequences.

The directory into which the interleaved and orphaned reads are output may be
specified using `-d`/`--output-dir`. This directory will be created if it does
not already exist.

Alternatively, you can specify the filenames directly with `-p`/`--output-
paired` and `-s`/`--output-single`, which will override the `-d`/`--output-dir`
option.

Example:

    extract-paired-reads.py tests/test-data/paired.fq", after_long_help = "Examples:
  fasthts kmer extract-paired-reads kept.fq   (writes kept.fq.pe and kept.fq.se)
  fasthts kmer extract-paired-reads -p pairs.fq -s singles.fq --gzip kept.fq.gz")]
pub struct ExtractPairedArgs {
    #[arg(long_help = "Reads, pairs interleaved with orphans (plain, gzip, BGZF or bzip2); `-` = stdin", default_value = "/dev/stdin")]
    infile: String,
    #[arg(help = "Output split reads to specified directory. Creates directory if necessary", short = 'd', long = "output-dir", default_value = "", hide_default_value = true)]
    output_dir: String,
    #[arg(help = "Output paired reads to this file", long_help = "Output paired reads to this file [default: <infile>.pe]", short = 'p', long = "output-paired", value_name = "filename")]
    output_paired: Option<String>,
    #[arg(help = "Output orphaned reads to this file", long_help = "Output orphaned reads to this file [default: <infile>.se]", short = 's', long = "output-single", value_name = "filename")]
    output_single: Option<String>,
    #[arg(help = "Overwrite output file if it exists", long_help = "Overwrite output file if it exists (as khmer words it: outputs are overwritten anyway; this lets a missing or empty input through)", short = 'f', long = "force")]
    force: bool,
    #[command(flatten)]
    compression: OutputCompression,
}

pub fn run(a: ExtractPairedArgs) -> crate::CmdResult {
    check_inputs(&[&a.infile], a.force)?;
    let outputs = extract_paired_outputs(&a.infile, &a.output_dir, a.output_paired.as_deref(), a.output_single.as_deref())?;
    let infile = outputs.input.as_str();
    refuse_input_as_output(&[infile], &outputs.paths)?;
    let compression = a.compression.into();
    let mut paired = ReadOutput::create(Some(&outputs.paths[0]), compression)?;
    let mut single = ReadOutput::create(Some(&outputs.paths[1]), compression)?;
    let [out2, out1] = &outputs.names;
    eprintln!("reading file \"{infile}\"");
    eprintln!("outputting interleaved pairs to \"{out2}\"");
    eprintln!("outputting orphans to \"{out1}\"");
    let (n_pe, n_se) = scripts::extract_paired_reads(infile, &mut paired, &mut single, |n| eprintln!("... {n}")).map_err(script_failure)?;
    single.commit()?;
    paired.commit()?;
    if n_pe == 0 {
        // khmer raises this after closing (so completing) both outputs
        return Err(khmer_error("TypeError: no paired reads!? check file formats...").into());
    }
    eprintln!("DONE; read {} sequences, {n_pe} pairs and {n_se} singletons", n_pe * 2 + n_se);
    eprintln!("wrote to: {out2} and {out1}");
    Ok(())
}
