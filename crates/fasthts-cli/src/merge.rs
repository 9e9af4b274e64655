//! `fasthts merge`: samtools merge.

use crate::{CmdResult, Failure, Terminal};
use clap::Args;
use fasthts::command::{self, MergeOptions};
use fasthts::merge::HeaderRules;
use fasthts::record_output::{cram_output_options, parse_output_options, OutputFormat};
use std::path::PathBuf;

/// Merges sorted BAM, SAM or CRAM files into one, as samtools merge.
#[derive(Args)]
#[command(
    disable_help_flag = true,
    arg_required_else_help = true,
    override_usage = "fasthts merge [options] -o <out.bam> <in1.bam> ... <inN.bam>\n       fasthts merge [options] <out.bam> <in1.bam> ... <inN.bam>",
    after_help = "Inputs: BAM, SAM (plain or bgzipped) or CRAM, sorted alike (by coordinate, or as -n, -t or \
    --template-coordinate say). Output: BAM, SAM, bgzipped SAM or CRAM, the records and header of samtools merge 1.16 \
    (its @PG line names fasthts; --no-PG leaves it out): @SQ lines in order of first appearance, @RG/@PG lines whose IDs \
    collide renamed ID-XXXX as samtools renames them (-s fixes the suffixes), or combined with -c/-p; records of equal \
    keys in input order.\n\n\
    Examples:\n  fasthts merge -@ 8 -o all.bam part1.bam part2.bam part3.bam\n  \
    fasthts merge -n -o by_name.bam a.bam b.bam\n  fasthts merge -R chr1 -O sam -o - a.bam b.bam"
)]
pub struct MergeArgs {
    /// Print help (-h is samtools' header file here)
    #[arg(long = "help", short = '?', action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Input files are sorted by read name.
    #[arg(short = 'n')]
    pub by_name: bool,
    /// Input files are sorted by TAG value.
    #[arg(short = 't', value_name = "TAG", value_parser = |s: &str| command::parse_tag(s).map_err(|e| e.to_string()))]
    pub tag: Option<[u8; 2]>,
    /// Input files are sorted by template-coordinate.
    #[arg(long = "template-coordinate")]
    pub template_coordinate: bool,
    /// Attach RG tag (inferred from file names).
    #[arg(short = 'r')]
    pub read_groups: bool,
    /// Uncompressed BAM output.
    #[arg(short = 'u', overrides_with_all = ["level", "fast"])]
    pub uncompressed: bool,
    /// Overwrite the output BAM if exist.
    #[arg(short = 'f')]
    pub force: bool,
    /// Specify output file via option instead of <out.bam> argument.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compress level 1.
    #[arg(short = '1', overrides_with_all = ["level", "uncompressed"])]
    pub fast: bool,
    /// Compression level, from 0 to 9 [-1].
    #[arg(short = 'l', value_name = "INT", allow_negative_numbers = true, overrides_with_all = ["fast", "uncompressed"],
          value_parser = crate::numbers::whole::<i32>(i32::MIN.into(), i32::MAX.into()))]
    pub level: Option<i32>,
    /// Merge file in the specified region STR [all].
    #[arg(short = 'R', value_name = "STR")]
    pub region: Option<String>,
    /// Copy the header in FILE to <out.bam> [in1.bam].
    #[arg(short = 'h', value_name = "FILE")]
    pub header: Option<PathBuf>,
    /// Combine @RG headers with colliding IDs [alter IDs to be distinct].
    #[arg(short = 'c')]
    pub combine_rg: bool,
    /// Combine @PG headers with colliding IDs [alter IDs to be distinct].
    #[arg(short = 'p')]
    pub combine_pg: bool,
    /// Override random seed.
    #[arg(short = 's', value_name = "VALUE", allow_hyphen_values = true)]
    pub seed: Option<String>,
    /// List of input BAM filenames, one per line [null].
    #[arg(short = 'b', value_name = "FILE", action = clap::ArgAction::Append)]
    pub lists: Vec<PathBuf>,
    /// Use customized index files (given after the inputs, one per input).
    #[arg(short = 'X')]
    pub index_files: bool,
    /// Specify a BED file for multiple region filtering [null].
    #[arg(short = 'L', value_name = "FILE")]
    pub bed: Option<PathBuf>,
    /// Do not add a PG line.
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Output format, BAM, SAM, SAM.gz or CRAM, with options: FORMAT[,OPT[=VAL]]...
    #[arg(short = 'O', long = "output-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub format: Option<String>,
    /// A single output format option, OPT or OPT=VAL (as in -O).
    #[arg(long = "output-fmt-option", value_name = "OPT[=VAL]")]
    pub output_options: Vec<String>,
    /// Input format; accepted for samtools compatibility.
    #[arg(long = "input-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub input_format: Option<String>,
    /// A single input format option (reference=FILE is the CRAM reference).
    #[arg(long = "input-fmt-option", value_name = "OPT[=VAL]")]
    pub input_options: Vec<String>,
    /// Reference FASTA of CRAM inputs and output [default: as htslib finds it].
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Index the output as it is written (OUT.csi, OUT.crai for CRAM, or OUT##idx##INDEX).
    #[arg(long = "write-index")]
    pub write_index: bool,
    /// Set level of verbosity (accepted for samtools compatibility).
    #[arg(long = "verbosity", value_name = "INT", allow_negative_numbers = true)]
    pub verbosity: Option<String>,
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// The output (unless -o), then the inputs (then, with -X, their indexes).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// C's `atol`: leading blanks, a sign, digits; 0 when there are none.
fn atol(text: &str) -> i64 {
    let t = text.trim_start();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = digits.bytes().take_while(u8::is_ascii_digit).fold(0i64, |n, d| n.wrapping_mul(10).wrapping_add(i64::from(d - b'0')));
    if negative {
        n.wrapping_neg()
    } else {
        n
    }
}

/// htslib's `hts_readlines` on a file: its non-empty lines.
fn read_list(path: &PathBuf) -> Result<Vec<PathBuf>, String> {
    let text = std::fs::read(path).map_err(|_| format!("Invalid file list \"{}\"", path.display()))?;
    Ok(text
        .split(|&c| c == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(|l| PathBuf::from(String::from_utf8_lossy(l).into_owned()))
        .collect())
}

pub fn run(args: MergeArgs) -> CmdResult {
    let mut positional = args.files.clone().into_iter();
    let output = match args.output.clone().or_else(|| positional.next()) {
        Some(output) => output,
        None => return Err("You must at least specify the output file".into()),
    };
    let mut rest: Vec<PathBuf> = positional.collect();
    if args.index_files && !args.lists.is_empty() {
        return Err("The -b option cannot be combined with -X".into());
    }
    let mut inputs = Vec::new();
    for list in &args.lists {
        inputs.extend(read_list(list)?);
    }
    if !args.force && command::output_exists(&output) {
        return Err(Failure::new(1, command::output_exists_message(&output)).into());
    }
    let mut indexes = None;
    if args.index_files {
        if rest.len() % 2 != 0 {
            return Err(Failure::new(1, "Odd number of filenames detected! Each BAM file should have an index file").into());
        }
        indexes = Some(rest.split_off(rest.len() / 2));
    }
    inputs.extend(rest);
    let extra_options = args.output_options.iter().map(String::as_str);
    let spec_options = args.format.as_deref().map(|spec| spec.split(',').skip(1)).into_iter().flatten();
    let cram_options = cram_output_options(spec_options.chain(extra_options.clone()));
    let (format, format_level) = match &args.format {
        Some(spec) => {
            let (format, level) = OutputFormat::parse_spec(spec)?;
            (format, parse_output_options(extra_options)?.or(level))
        }
        None => (OutputFormat::from_path(&output)?, parse_output_options(extra_options)?),
    };
    let level = if args.uncompressed {
        Some(0)
    } else if args.fast {
        Some(1)
    } else {
        args.level.filter(|&l| l >= 0).map(|l| l.min(9) as u32).or(format_level)
    };
    let order = command::sort_order(args.tag, args.by_name, args.template_coordinate, None);
    let options = MergeOptions {
        order,
        format: Some(format),
        level,
        threads: args.threads,
        write_index: args.write_index,
        program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), crate::command_line())),
        header: args.header.clone(),
        rules: HeaderRules { combine_rg: args.combine_rg, combine_pg: args.combine_pg },
        read_groups_from_names: args.read_groups,
        seed: args
            .seed
            .as_deref()
            .map_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64), atol),
        region: args.region.clone(),
        bed: args.bed.clone(),
        indexes,
        force: args.force,
        reference: args
            .reference
            .clone()
            .or_else(|| args.input_options.iter().find_map(|o| o.strip_prefix("reference=").map(PathBuf::from))),
        cram_options,
    };
    command::merge_files(&inputs, &output, &options, &Terminal { command: "merge" })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::atol;

    #[test]
    fn seeds_read_as_atol_reads_them() {
        assert_eq!(atol("1"), 1);
        assert_eq!(atol(" -42x"), -42);
        assert_eq!(atol("x"), 0);
    }
}
