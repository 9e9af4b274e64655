//! `fasthts fixmate`: samtools fixmate. The work is in
//! `fasthts::command::fixmate_file`.

use crate::{CmdResult, Failure, Terminal};
use clap::Args;
use fasthts::command::{self, FixmateFileOptions, FIXMATE_COORDINATE_SORTED};
use fasthts::fixmate::FixmateOptions;
use fasthts::record_output::{cram_output_options, parse_output_options, OutputFormat};
use std::path::{Path, PathBuf};

/// Fills in mate coordinates, TLEN and mate flags and tags of a name-grouped
/// file, as samtools fixmate.
#[derive(Args)]
#[command(
    arg_required_else_help = true,
    override_usage = "fasthts fixmate [options] <in.nameSrt.bam> <out.nameSrt.bam>",
    after_help = "As elsewhere in samtools, use '-' as the filename for stdin/stdout. The input file must be grouped by \
    read name (e.g. sorted by name, or collated). Coordinate-sorted input is not accepted.\n\n\
    Input: BAM, SAM (plain or bgzipped) or CRAM. Output: as -O says, else as the output name's extension says \
    (.bam, .sam, .sam.gz, .cram), else BAM. Records identical to samtools 1.16's (the @PG line names fasthts).\n\n\
    Examples:\n  fasthts sort -n -o by_name.bam in.bam && fasthts fixmate -m by_name.bam fixed.bam\n  \
    fasthts collate -O -u in.bam | fasthts fixmate -m -u - - | fasthts sort -o out.bam -"
)]
pub struct FixmateArgs {
    /// Remove unmapped reads and secondary alignments
    #[arg(short = 'r')]
    pub remove_reads: bool,
    /// Disable FR proper pair check
    #[arg(short = 'p')]
    pub no_proper_pair_check: bool,
    /// Add template cigar ct tag
    #[arg(short = 'c')]
    pub template_cigar: bool,
    /// Add mate score tag (ms; MC is always added)
    #[arg(short = 'm')]
    pub mate_score: bool,
    /// Uncompressed output (when the output's name has no .bam, .sam, .sam.gz or .cram extension, as in samtools)
    #[arg(short = 'u')]
    pub uncompressed: bool,
    /// Do not add a PG line
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Specify output format (SAM, BAM, CRAM), with options: FORMAT[,OPT[=VAL]]...
    #[arg(short = 'O', long = "output-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub format: Option<String>,
    /// Specify a single output file format option in the form of OPTION or OPTION=VALUE
    #[arg(long = "output-fmt-option", value_name = "OPT[=VAL]")]
    pub output_options: Vec<String>,
    /// Specify input format (SAM, BAM, CRAM); recognised from the bytes in any case
    #[arg(long = "input-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub input_format: Option<String>,
    /// Specify a single input file format option in the form of OPTION or OPTION=VALUE
    #[arg(long = "input-fmt-option", value_name = "OPT[=VAL]")]
    pub input_options: Vec<String>,
    /// Reference sequence FASTA FILE (CRAM input and output)
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Worker threads, decompressing and compressing too (samtools' -@ N adds N to its main thread) [default: all cores]
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Accepted for samtools compatibility (fixmate writes no index, as samtools)
    #[arg(long = "write-index", hide = true)]
    pub write_index: bool,
    /// Set level of verbosity (accepted for samtools compatibility)
    #[arg(long = "verbosity", value_name = "INT", hide = true, allow_hyphen_values = true)]
    pub verbosity: Option<String>,
    /// Input, grouped by read name (- for standard input)
    #[arg(value_name = "in.nameSrt.bam")]
    pub input: PathBuf,
    /// Output (- for standard output)
    #[arg(value_name = "out.nameSrt.bam")]
    pub output: PathBuf,
}

/// The format htslib's `sam_open_mode` gives an output name, when it
/// recognises its extension (samtools fixmate's `-u` then has no effect).
pub(crate) fn format_of_name(path: &Path) -> Option<OutputFormat> {
    let name = path.to_string_lossy();
    let name = name.split("##idx##").next().unwrap_or(&name);
    let base = &name[name.rfind('/').map_or(0, |i| i + 1)..];
    let lower = base.to_ascii_lowercase();
    let mut dot = lower.rfind('.')?;
    // htslib permits one compression suffix, .gz or .bgz (so `sam.gz`).
    if matches!(&lower[dot..], ".gz" | ".bgz") {
        dot = lower[..dot].rfind('.')?;
    }
    let ext = &lower[dot + 1..];
    if ext.len() < 3 {
        return None;
    }
    match ext {
        "bam" => Some(OutputFormat::Bam),
        "cram" => Some(OutputFormat::Cram),
        "sam" => Some(OutputFormat::Sam),
        "sam.gz" => Some(OutputFormat::SamGz),
        _ => None,
    }
}

/// The output format and level samtools picks from `-O`, the format
/// options, `-u` and the output's name.
pub(crate) fn output_format(
    spec: Option<&str>,
    extra: &[String],
    uncompressed: bool,
    output: &Path,
) -> Result<(OutputFormat, Option<u32>, Vec<String>), fasthts::Error> {
    let extra_options = extra.iter().map(String::as_str);
    let spec_options = spec.map(|s| s.split(',').skip(1)).into_iter().flatten();
    let cram_options = cram_output_options(spec_options.chain(extra_options.clone()));
    let named = format_of_name(output);
    // "wb" with -u is "wb0", unless the name's extension rewrites the mode.
    let mut level = (uncompressed && named.is_none()).then_some(0);
    let format = match spec {
        Some(spec) => {
            let (format, spec_level) = OutputFormat::parse_spec(spec)?;
            level = parse_output_options(extra_options)?.or(spec_level).or(level);
            format
        }
        None => {
            level = parse_output_options(extra_options)?.or(level);
            named.unwrap_or(OutputFormat::Bam)
        }
    };
    Ok((format, level, cram_options))
}

pub fn run(args: FixmateArgs) -> CmdResult {
    let (format, level, cram_options) = output_format(args.format.as_deref(), &args.output_options, args.uncompressed, &args.output)?;
    let options = FixmateFileOptions {
        fix: FixmateOptions {
            remove_reads: args.remove_reads,
            proper_pair_check: !args.no_proper_pair_check,
            template_cigar: args.template_cigar,
            mate_score: args.mate_score,
        },
        format,
        level,
        program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), crate::command_line())),
        threads: args.threads,
        reference: args
            .reference
            .clone()
            .or_else(|| args.input_options.iter().find_map(|o| o.strip_prefix("reference=").map(PathBuf::from))),
        cram_options,
    };
    match command::fixmate_file(&args.input, &args.output, &options, &Terminal { command: "fixmate" }) {
        // samtools' own words, which its tests compare.
        Err(e) if e.to_string() == FIXMATE_COORDINATE_SORTED => Err(Failure::new(1, FIXMATE_COORDINATE_SORTED).into()),
        r => Ok(r?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_sam_open_mode_reads_them() {
        let of = |n: &str| format_of_name(Path::new(n));
        assert_eq!(of("x.bam"), Some(OutputFormat::Bam));
        assert_eq!(of("x.SAM"), Some(OutputFormat::Sam));
        assert_eq!(of("x.sam.gz"), Some(OutputFormat::SamGz));
        assert_eq!(of("x.cram"), Some(OutputFormat::Cram));
        assert_eq!(of("-"), None);
        assert_eq!(of("x.out"), None);
        assert_eq!(of("x.gz"), None);
        assert_eq!(of("x.sam.bgz"), None);
        assert_eq!(of("dir.sam/x"), None);
        let (format, level, _) = output_format(None, &[], true, Path::new("-")).unwrap();
        assert_eq!((format, level), (OutputFormat::Bam, Some(0)));
        let (format, level, _) = output_format(None, &[], true, Path::new("x.bam")).unwrap();
        assert_eq!((format, level), (OutputFormat::Bam, None));
        let (format, level, _) = output_format(Some("sam"), &[], false, Path::new("x.bam")).unwrap();
        assert_eq!((format, level), (OutputFormat::Sam, None));
    }
}
