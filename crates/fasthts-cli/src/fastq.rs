//! `fasthts fastq`, `fasta` and `bam2fq`: samtools 1.16's reads out of an
//! alignment file, byte for byte. The work is in
//! `fasthts::command::fastq_file`.

use crate::CmdResult;
use clap::{ArgAction, Args};
use fasthts::command::{self, AuxSelection, FastqOptions, FastxFormat};
use std::path::PathBuf;

/// Converts a SAM, BAM or CRAM (collated by name) to FASTQ or FASTA, as
/// samtools fastq / fasta.
#[derive(Args)]
#[command(
    override_usage = "fasthts fastq [options...] <in.bam>",
    after_help = "Reads are designated READ1 if FLAG READ1 is set and READ2 is not, READ2 if READ2 is set and READ1 is not, \
    otherwise READ_OTHER. Outputs named *.gz, *.bgz or *.bgzf are BGZF-compressed (-c). The input must be collated by name \
    (samtools collate or sort -n) for pairs to be found. Output identical to samtools 1.16.\n\n\
    Examples:\n  fasthts fastq -1 pair1.fq -2 pair2.fq -0 /dev/null -s /dev/null -n in.bam\n  \
    fasthts fastq in.bam > all_reads.fq\n  fasthts fasta -F 0x904 in.cram --reference ref.fa > reads.fa"
)]
pub struct FastqArgs {
    /// Write reads designated READ_OTHER to FILE
    #[arg(short = '0', value_name = "FILE")]
    pub other: Option<PathBuf>,
    /// Write reads designated READ1 to FILE
    #[arg(short = '1', value_name = "FILE", action = ArgAction::Append, value_parser = in_order)]
    pub read1: Vec<(usize, PathBuf)>,
    /// Write reads designated READ2 to FILE
    #[arg(short = '2', value_name = "FILE", action = ArgAction::Append, value_parser = in_order)]
    pub read2: Vec<(usize, PathBuf)>,
    /// Write reads designated READ1 or READ2 to FILE
    #[arg(short = 'o', value_name = "FILE", action = ArgAction::Append, value_parser = in_order)]
    pub output: Vec<(usize, PathBuf)>,
    /// Only include reads with all of the FLAGs in INT present [0]
    #[arg(short = 'f', value_name = "INT", action = ArgAction::Append, allow_hyphen_values = true)]
    pub require_flags: Vec<String>,
    /// Only include reads with none of the FLAGS in INT present [0x900]
    #[arg(short = 'F', value_name = "INT", action = ArgAction::Append, allow_hyphen_values = true)]
    pub exclude_flags: Vec<String>,
    /// Only EXCLUDE reads with all of the FLAGs in INT present [0]
    #[arg(short = 'G', value_name = "INT", action = ArgAction::Append, allow_hyphen_values = true)]
    pub exclude_all_flags: Vec<String>,
    /// Don't append /1 and /2 to the read name
    #[arg(short = 'n')]
    pub no_read_numbers: bool,
    /// Always append /1 and /2 to the read name
    #[arg(short = 'N')]
    pub read_numbers: bool,
    /// Output quality in the OQ tag if present
    #[arg(short = 'O')]
    pub use_oq: bool,
    /// Write singleton reads designated READ1 or READ2 to FILE
    #[arg(short = 's', value_name = "FILE")]
    pub singletons: Option<PathBuf>,
    /// Copy RG, BC and QT tags to the header line
    #[arg(short = 't')]
    pub copy_tags: bool,
    /// Copy arbitrary tags to the header line, '*' for all
    #[arg(short = 'T', value_name = "TAGLIST")]
    pub tags: Option<String>,
    /// Default quality score of index reads if not given in file [1]
    #[arg(short = 'v', value_name = "INT", allow_hyphen_values = true)]
    pub default_quality: Option<String>,
    /// Add Illumina Casava 1.8 format entry to header (eg 1:N:0:ATCACG)
    #[arg(short = 'i')]
    pub casava: bool,
    /// Compression level [0..9] to use when writing bgzf files [1]
    #[arg(short = 'c', value_name = "INT", allow_hyphen_values = true)]
    pub level: Option<String>,
    /// Write first index reads to FILE
    #[arg(long = "i1", alias = "I1", value_name = "FILE")]
    pub index1: Option<PathBuf>,
    /// Write second index reads to FILE
    #[arg(long = "i2", alias = "I2", value_name = "FILE")]
    pub index2: Option<PathBuf>,
    /// Barcode tag [BC]
    #[arg(long = "barcode-tag", value_name = "TAG")]
    pub barcode_tag: Option<String>,
    /// Quality tag [QT]
    #[arg(long = "quality-tag", value_name = "TAG")]
    pub quality_tag: Option<String>,
    /// How to parse barcode and quality tags (e.g. i14i8, n8i14, i*i*)
    #[arg(long = "index-format", aliases = ["if", "IF"], value_name = "STR")]
    pub index_format: Option<String>,
    /// Reference FASTA of CRAM input
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Worker threads [default: all cores]
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Input SAM, BAM or CRAM [stdin]
    #[arg(value_name = "IN.bam")]
    pub input: Option<PathBuf>,
}

/// Numbers the `-1`/`-2`/`-o` values as clap reads them (in command-line
/// order): samtools applies them in that order (`-o` sets both).
fn in_order(text: &str) -> Result<(usize, PathBuf), std::convert::Infallible> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    Ok((NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed), PathBuf::from(text)))
}

/// C's `strtol(text, NULL, 0)` as an int: a sign, then hex (`0x`), octal
/// (`0`) or decimal digits; 0 when there are none.
fn strtol(text: &str) -> u32 {
    let s = text.trim_start();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.starts_with('0') {
        (8, s)
    } else {
        (10, s)
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    let value = i64::from_str_radix(&digits[..end], radix).unwrap_or(if end == 0 { 0 } else { i64::MAX });
    (if negative { value.wrapping_neg() } else { value }) as u32
}

fn tag(text: &str) -> [u8; 2] {
    let b = text.as_bytes();
    [b.first().copied().unwrap_or(0), b.get(1).copied().unwrap_or(0)]
}

pub fn run(args: FastqArgs, format: FastxFormat) -> CmdResult {
    let name = match format {
        FastxFormat::Fastq => "fastq",
        FastxFormat::Fasta => "fasta",
    };
    // samtools' getopt order: -o sets both, a later -1 or -2 one of them.
    let mut events: Vec<(usize, u8, &PathBuf)> = args.read1.iter().map(|(i, p)| (*i, 1, p)).collect();
    events.extend(args.read2.iter().map(|(i, p)| (*i, 2, p)));
    events.extend(args.output.iter().map(|(i, p)| (*i, 3, p)));
    events.sort_by_key(|e| e.0);
    let (mut read1, mut read2) = (None, None);
    for (_, which, path) in events {
        if which & 1 != 0 {
            read1 = Some(path.clone());
        }
        if which & 2 != 0 {
            read2 = Some(path.clone());
        }
    }
    let mut read_numbers = !args.no_read_numbers;
    if read1.is_some() || read2.is_some() {
        read_numbers = false;
    }
    if args.read_numbers {
        read_numbers = true;
    }
    let n_index = args.index_format.as_deref().map_or(0, |f| f.bytes().filter(|&c| c == b'i').count());
    let usage_error = |message: &str| -> CmdResult { Err(crate::Failure::new(1, format!("fasthts {name}: {message}")).into()) };
    if n_index > 2 {
        return usage_error("invalid index format: more than 2 indexes");
    }
    if args.index2.is_some() && args.index1.is_none() {
        return usage_error("index one specified, but index two not given");
    }
    if args.casava && n_index == 0 {
        return usage_error("you must specify an index format (--index-format) with the Illumina Casava (-i) option");
    }
    if n_index == 0 && args.index1.is_some() {
        return usage_error("index_format not specified, but index file given");
    }
    let default_quality = args.default_quality.as_deref().map_or(1, fasthts::depth::atoi);
    if !(0..=93).contains(&default_quality) {
        return usage_error(&format!("invalid -v default quality {default_quality}, allowed range 0 to 93"));
    }
    let mut tag_warnings = Vec::new();
    let aux = AuxSelection::from_options(args.copy_tags, args.tags.as_deref(), &mut tag_warnings);
    for w in tag_warnings {
        eprintln!("fasthts {name}: warning: {w}");
    }
    let or_flags = |v: &[String]| v.iter().fold(0u32, |acc, t| acc | strtol(t));
    let options = FastqOptions {
        format,
        other: args.other,
        read1,
        read2,
        singletons: args.singletons,
        index1: args.index1,
        index2: args.index2,
        read_numbers,
        casava: args.casava,
        use_oq: args.use_oq,
        aux,
        barcode_tag: args.barcode_tag.as_deref().map_or(*b"BC", tag),
        quality_tag: args.quality_tag.as_deref().map_or(*b"QT", tag),
        index_format: args.index_format,
        require_flags: or_flags(&args.require_flags),
        exclude_flags: if args.exclude_flags.is_empty() { 0x900 } else { or_flags(&args.exclude_flags) },
        exclude_all_flags: or_flags(&args.exclude_all_flags),
        default_quality: default_quality as u8,
        compression_level: args.level.as_deref().map_or(1, |l| fasthts::depth::atoi(l).clamp(0, 9) as u32),
        threads: args.threads,
        reference: args.reference,
    };
    // samtools: no input named and a terminal on stdin, the usage.
    if args.input.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        let mut cli = crate::command();
        let help = cli.find_subcommand_mut(name).map(|c| c.render_help().to_string()).unwrap_or_default();
        return crate::write_stdout(help.as_bytes());
    }
    let input = args.input.unwrap_or_else(|| PathBuf::from("-"));
    let mut stdout = std::io::stdout();
    let summary = command::fastq_file(&input, &options, &mut stdout)?;
    eprintln!("[M::bam2fq_mainloop] discarded {} singletons", summary.singletons);
    eprintln!("[M::bam2fq_mainloop] processed {} reads", summary.reads);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn strtol_as_c() {
        use super::strtol;
        assert_eq!(strtol("0x900"), 0x900);
        assert_eq!(strtol("010"), 8);
        assert_eq!(strtol("12abc"), 12);
        assert_eq!(strtol("PAIRED"), 0);
        assert_eq!(strtol("-1"), u32::MAX);
    }
}
