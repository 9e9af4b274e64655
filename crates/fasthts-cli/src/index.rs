//! `fasthts index`: samtools index (BAI or CSI).

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, IndexOptions};
use std::path::{Path, PathBuf};

/// Indexes a coordinate-sorted BAM file (or a CRAM file: .crai), as samtools index.
#[derive(Args)]
#[command(
    override_usage = "fasthts index [OPTIONS] <IN.bam> [<OUT.index>]\n       fasthts index [OPTIONS] -M <IN.bam>...",
    arg_required_else_help = true,
    after_help = "The index is written to IN.bam.bai (or IN.bam.csi with -c/-m; IN.cram.crai for CRAM) unless OUT or -o is given.

Examples:
  fasthts index in.bam                    writes in.bam.bai
  fasthts index -c -m 12 in.bam           a CSI index, in.bam.csi
  fasthts index -M -@ 4 a.bam b.bam c.bam several files, 4 threads each"
)]
pub struct IndexArgs {
    // As in samtools, -b, -c and -m apply in order and the last one wins:
    // `-m 12 -b` makes a BAI, `-b -m 12` a CSI.
    /// Generate a BAI-format index (what is made without -c or -m).
    #[arg(short = 'b', overrides_with_all = ["csi", "min_shift"])]
    pub bai: bool,
    /// Generate a CSI-format index.
    #[arg(short = 'c', overrides_with = "bai")]
    pub csi: bool,
    /// Minimum interval size for CSI indices is 2^INT [14] (implies -c; 0 or less makes a BAI).
    #[arg(short = 'm', value_name = "INT", overrides_with = "bai", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i32>(i32::MIN.into(), i32::MAX.into()))]
    pub min_shift: Option<i32>,
    /// Interpret all filename arguments as files to be indexed.
    #[arg(short = 'M')]
    pub multiple: bool,
    /// Write the index to FILE (alternative to OUT as an argument).
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Input BAM or CRAM file(s), optionally followed by the output index.
    #[arg(value_name = "IN.bam", required = true)]
    pub files: Vec<PathBuf>,
}

pub fn run(args: IndexArgs) -> CmdResult {
    let mut inputs = args.files.clone();
    let mut output = args.output.clone();
    // samtools' legacy synopsis: `index IN OUT` when OUT does not exist or is an index.
    if inputs.len() == 2 && output.is_none() && nonexistent_or_index(&inputs[1]) {
        output = inputs.pop();
    }
    if inputs.len() > 1 && !args.multiple {
        return Err("use -M to enable indexing more than one alignment file".into());
    }
    if output.is_some() && inputs.len() > 1 {
        return Err("can't use -o with multiple input alignment files".into());
    }
    let format = command::index_format(args.csi, args.min_shift);
    let report = Terminal { command: "index" };
    let _bar = crate::progress::Bar::start("index", false, crate::progress::Source::Inflated(inputs.clone()));
    for input in &inputs {
        let options = IndexOptions { format, output: output.clone(), threads: args.threads };
        command::index_file(input, &options, &report)?;
    }
    Ok(())
}

/// True if `path` does not exist or starts like a BAI/CSI index (its first
/// 64 KiB are read: enough for a BGZF block; the second argument may be a
/// BAM of many GB).
fn nonexistent_or_index(path: &Path) -> bool {
    use std::io::Read;
    let mut bytes = Vec::new();
    match std::fs::File::open(path).and_then(|f| f.take(1 << 16).read_to_end(&mut bytes)) {
        Err(_) => !path.exists(),
        Ok(_) => {
            matches!(fasthts::format::recognise(&bytes), fasthts::format::Format::Index(_))
                || bytes.starts_with(b"BAI\x01")
                || bytes.starts_with(b"CSI\x01")
                || fasthts::bgzf::decompress_all(&bytes).map_or(false, |d| d.starts_with(b"CSI\x01"))
                || fasthts_io::compression::is_gzip(&bytes) && path.extension().is_some_and(|e| e == "csi")
        }
    }
}
