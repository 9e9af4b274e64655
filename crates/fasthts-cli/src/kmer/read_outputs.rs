//! The `--gzip`/`--bzip` flags of the scripts that write reads, and what
//! the read-handling scripts (interleave-reads, split-paired-reads, ...)
//! share in their messages. The outputs themselves are
//! `fasthts_kmer::command::{ReadOutput, ReadOutputs}`.

use crate::Failure;
use clap::Args;
use fasthts_kmer::command::Compression;

/// `--gzip`/`--bzip`: the compression of the reads written.
#[derive(Args, Debug, Clone, Copy, Default)]
pub(super) struct OutputCompression {
    #[arg(help = "Compress output using gzip", long_help = "Compress output using gzip (BGZF: gzip members compressed on all cores)", long = "gzip", conflicts_with = "bzip")]
    gzip: bool,
    #[arg(help = "Compress output using bzip2", long = "bzip")]
    bzip: bool,
}

impl From<OutputCompression> for Compression {
    fn from(flags: OutputCompression) -> Compression {
        match flags {
            OutputCompression { gzip: true, .. } => Compression::Gzip,
            OutputCompression { bzip: true, .. } => Compression::Bzip2,
            _ => Compression::Plain,
        }
    }
}

/// One of the scripts' errors after reading started: its text, status 1
/// (an [`fasthts_kmer::scripts::UnpairedReads`] is worded by its caller).
pub(super) fn script_failure(e: fasthts_kmer::scripts::BoxError) -> Failure {
    Failure::new(1, e.to_string())
}

/// Refuses, before anything is written, an output that is one of the
/// inputs (`fasthts_kmer::command::refuse_input_as_output`), in these
/// scripts' words.
pub(super) fn refuse_input_as_output<I: AsRef<str>, O: AsRef<str>>(inputs: &[I], outputs: &[O]) -> Result<(), Failure> {
    fasthts_kmer::command::refuse_input_as_output(outputs, inputs).map_err(|e| Failure::new(1, format!("ERROR: {e}")))
}
