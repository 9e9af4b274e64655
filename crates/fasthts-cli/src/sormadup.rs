//! `fasthts sormadup`: collate, fixmate -m, sort and markdup in one
//! process. The work is in `fasthts::command::sormadup_file`; this reads
//! the options (markdup's through [`crate::markdup::MarkingArgs`]) and
//! prints the warnings and the statistics.

use crate::markdup::MarkingArgs;
use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, SormadupOptions, SortFileOptions};
use fasthts::fixmate::FixmateOptions;
use fasthts::record_output::{cram_output_options, parse_output_options, OutputFormat};
use std::path::PathBuf;

/// Duplicate-marks and coordinate-sorts an aligner's output in one process: samtools collate, fixmate -m, sort and markdup.
#[derive(Args)]
#[command(
    override_usage = "fasthts sormadup [options] -o <OUT> <IN>",
    after_help = "From an aligner's output, unsorted or grouped by read name (BAM, SAM, bgzipped SAM or CRAM; \
    - for standard input), to a duplicate-marked, coordinate-sorted file. Its records are those of\n  \
    samtools collate -O IN | samtools fixmate -m - - | samtools sort - | samtools markdup - OUT\n\
    (samtools 1.16, with the same fixmate and markdup options). An input whose header says it is grouped \
    by name (@HD SO:queryname or GO:query) is not collated (unless --collate): its records are then those \
    of the chain without collate (collate reorders a name-sorted input, and the sort keeps ties in input order). \
    Nothing goes to disk but collate's buckets and the sort's runs past -m, and -S's records.\n\n\
    Examples:\n  bwa mem ref.fa r1.fq r2.fq | fasthts sormadup -@ 8 -o marked.bam -\n  \
    fasthts sormadup -r -S -d 100 -f stats.txt --write-index -o deduplicated.bam aligned.bam"
)]
pub struct SormadupArgs {
    /// markdup's options.
    #[command(flatten)]
    pub marking: MarkingArgs,
    /// markdup's -l: max read length, how far behind the current position
    /// reads are still compared (negative: 300).
    #[arg(long = "max-read-length", value_name = "INT", default_value = "300", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i64>(i32::MIN.into(), i32::MAX.into()))]
    pub max_read_length: i64,
    /// markdup's -m: duplicate decision method for paired reads, t
    /// (template start/end) or s (sequence start).
    #[arg(long = "mode", alias = "dup-mode", value_name = "TYPE", default_value = "t", value_parser = ["t", "s"])]
    pub mode: String,
    /// Collate even an input whose header says it is grouped by name:
    /// records equal to the chain with collate for any input.
    #[arg(long = "collate")]
    pub collate: bool,
    /// fixmate's -r: remove unmapped and secondary reads.
    #[arg(long = "fix-remove")]
    pub fix_remove: bool,
    /// fixmate's -p: keep PROPER_PAIR on pairs that cannot be FR pairs.
    #[arg(long = "fix-no-pair-check")]
    pub fix_no_pair_check: bool,
    /// fixmate's -c: add the template cigar ct tag.
    #[arg(long = "fix-template-cigar")]
    pub fix_template_cigar: bool,
    /// Compression level, from 0 (uncompressed) to 9 (best), or -1 for the
    /// default (6).
    #[arg(short = 'l', value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i32>(-1, 9))]
    pub level: Option<i32>,
    /// Maximum memory per thread, for the sort and again for collate's
    /// buckets: bytes, or with K, M or G (768M, 2G); at least 1M.
    #[arg(short = 'm', value_name = "INT", default_value = "768M", value_parser = |s: &str| command::parse_memory_size(s).map_err(|e| e.to_string()))]
    pub memory: usize,
    /// Output file, or - for standard output.
    #[arg(short = 'o', value_name = "FILE", required = true)]
    pub output: PathBuf,
    /// Output format, BAM, SAM, SAM.gz or CRAM, with options:
    /// FORMAT[,OPT[=VAL]]... (Without -O: from the output's extension,
    /// else BAM.)
    #[arg(short = 'O', long = "output-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub format: Option<String>,
    /// A single output format option, OPT or OPT=VAL (as in -O).
    #[arg(long = "output-fmt-option", value_name = "OPT[=VAL]")]
    pub output_options: Vec<String>,
    /// Reference FASTA of CRAM input and output.
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Prefix of the temporary files (collate's buckets, the sort's runs,
    /// -S's records) [the output's name].
    #[arg(short = 'T', value_name = "PREFIX")]
    pub temp_prefix: Option<PathBuf>,
    /// Index the BAM output as it is written (OUT.csi, or the path after
    /// `##idx##` in `-o OUT##idx##INDEX`).
    #[arg(long = "write-index")]
    pub write_index: bool,
    /// Do not add a @PG line to the header.
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Input: an aligner's output, unsorted or grouped by name (BAM, SAM or
    /// CRAM), or - for standard input.
    #[arg(value_name = "IN", default_value = "-")]
    pub input: PathBuf,
}

pub fn run(args: SormadupArgs) -> CmdResult {
    let marking = args.marking.options(args.max_read_length, &args.mode)?;
    let extra = args.output_options.iter().map(String::as_str);
    let spec_options = args.format.as_deref().map(|spec| spec.split(',').skip(1)).into_iter().flatten();
    let cram_options = cram_output_options(spec_options.chain(extra.clone()));
    let (format, format_level) = match &args.format {
        Some(spec) => {
            let (format, level) = OutputFormat::parse_spec(spec)?;
            (Some(format), parse_output_options(extra)?.or(level))
        }
        None => (None, parse_output_options(extra)?),
    };
    let command_line = crate::command_line();
    let sort = SortFileOptions {
        format,
        // -l -1: zlib's default level, as no -l.
        level: args.level.and_then(|l| u32::try_from(l).ok()).or(format_level),
        memory_per_thread: args.memory,
        threads: args.threads,
        write_index: args.write_index,
        temp_prefix: args.temp_prefix.clone(),
        program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), command_line.clone())),
        reference: args.reference.clone(),
        cram_options,
        ..SortFileOptions::default()
    };
    let fix = FixmateOptions {
        remove_reads: args.fix_remove,
        proper_pair_check: !args.fix_no_pair_check,
        template_cigar: args.fix_template_cigar,
        mate_score: true,
    };
    let options = SormadupOptions { sort, fix, marking, always_collate: args.collate };
    let summary = command::sormadup_file(&args.input, &args.output, &options, &Terminal { command: "sormadup" })?;
    args.marking.report(&summary, "sormadup", &command_line);
    Ok(())
}
