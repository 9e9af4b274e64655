//! `fasthts faidx` and `fasthts fqidx`: samtools faidx and fqidx 1.16,
//! byte for byte. The work is in `fasthts::command::faidx`.

use crate::CmdResult;
use clap::Args;
use fasthts::command::{self, FaidxOptions, StrandMarks, DEFAULT_LINE_WIDTH};
use fasthts::faidx::{OpenOptions, SequenceFormat};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Indexes a FASTA/FASTQ file or prints regions of it (samtools faidx).
#[derive(Args)]
#[command(
    arg_required_else_help = true,
    override_usage = "fasthts faidx <file.fa|file.fa.gz> [<reg> [...]]",
    after_help = "Without regions, writes FILE.fai (and FILE.gzi for a bgzipped file), as samtools faidx. With regions \
    (chr, chr:from-to, {name:with:colons}:from-to; 1-based, inclusive), prints them as FASTA (FASTQ with -f) with \
    lines of -n bases, reading through the index (built first if missing). Output identical to samtools 1.16.\n\n\
    Examples:\n  fasthts faidx ref.fa                          write ref.fa.fai\n  \
    fasthts faidx ref.fa chr1:1,000-2,000 chr2     print two regions\n  \
    fasthts faidx -i -n 80 ref.fa.gz chr3:5-900     reverse complement of a bgzipped FASTA's region\n  \
    fasthts faidx -f reads.fq read17               a FASTQ record"
)]
pub struct FaidxArgs {
    /// Write FASTA to FILE (without regions: the index) [stdout]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Length of FASTA sequence line [60]
    #[arg(short = 'n', long = "length", value_name = "INT", allow_hyphen_values = true)]
    pub length: Option<String>,
    /// Continue after trying to retrieve missing region
    #[arg(short = 'c', long = "continue")]
    pub keep_going: bool,
    /// File of regions, one per line (chr:from-to)
    #[arg(short = 'r', long = "region-file", value_name = "FILE")]
    pub region_file: Option<PathBuf>,
    /// Reverse complement sequences
    #[arg(short = 'i', long = "reverse-complement")]
    pub reverse_complement: bool,
    /// Strand indicator added to sequence names: rc (/rc on the negative strand; default), no, sign ((+) / (-)),
    /// custom,<pos>,<neg>
    #[arg(long = "mark-strand", value_name = "TYPE")]
    pub mark_strand: Option<String>,
    /// Name of the index file [FILE.fai]
    #[arg(long = "fai-idx", value_name = "FILE")]
    pub fai_idx: Option<PathBuf>,
    /// Name of the compressed file's index [FILE.gzi]
    #[arg(long = "gzi-idx", value_name = "FILE")]
    pub gzi_idx: Option<PathBuf>,
    /// File and index in FASTQ format
    #[arg(short = 'f', long = "fastq")]
    pub fastq: bool,
    /// FASTA (or FASTQ) file, plain or bgzipped
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Regions to print
    #[arg(value_name = "REGION")]
    pub regions: Vec<OsString>,
}

/// Runs faidx (`fastq`: as fqidx, FASTQ by default).
pub fn run(args: FaidxArgs, fastq: bool) -> CmdResult {
    let command = if fastq { "fqidx" } else { "faidx" };
    let line_width = match &args.length {
        None => DEFAULT_LINE_WIDTH,
        Some(text) => match fasthts::depth::atoi(text) {
            n if n >= 1 && n <= i64::from(i32::MAX) => n as usize,
            _ => {
                eprintln!("fasthts {command}: warning: bad line length '{text}', using default: {DEFAULT_LINE_WIDTH}");
                DEFAULT_LINE_WIDTH
            }
        },
    };
    let strand_marks = match &args.mark_strand {
        None => StrandMarks::default(),
        Some(text) => StrandMarks::parse(text)?,
    };
    let format = (fastq || args.fastq).then_some(SequenceFormat::Fastq);
    let options = FaidxOptions {
        index: OpenOptions { fai: args.fai_idx, gzi: args.gzi_idx, format },
        regions: args.regions.iter().map(|r| r.as_bytes().to_vec()).collect(),
        region_file: args.region_file,
        line_width,
        keep_going: args.keep_going,
        reverse_complement: args.reverse_complement,
        strand_marks,
    };
    let mut stdout = std::io::stdout().lock();
    command::faidx(&args.input, &options, args.output.as_deref(), &mut stdout, &mut |w| eprintln!("fasthts {command}: warning: {w}"))?;
    Ok(())
}
