//! `fasthts collate`: samtools collate. The work is in
//! `fasthts::command::collate_file`.

use crate::{CmdResult, Failure, Terminal};
use clap::Args;
use fasthts::command::{self, CollateOptions};
use fasthts::record_output::{cram_output_options, parse_output_options, OutputFormat};
use std::path::PathBuf;

/// Groups the records of each read name together, as samtools collate, in
/// samtools' own order.
#[derive(Args)]
#[command(
    override_usage = "fasthts collate [-Ou] [-o <name>] [-n nFiles] [-l cLevel] <in.bam> [<prefix>]",
    after_help = "<prefix> is required unless the -o or -O options are used: the output is then <prefix>.bam \
    (<prefix>.sam, .cram with --output-fmt).\n\n\
    The order is samtools 1.16's, record for record: names are dealt into -n buckets by samtools' name hash and \
    each bucket is sorted as samtools sorts it (so the order depends on -n, as in samtools). With -f, pairs of \
    primary READ1/READ2 records found within -r records of each other are written as they are found, the rest \
    as above; other records are left out.\n\n\
    Records are held in memory up to --max-memory, then spilled to files in the directory \
    <PREFIX>.fasthts-collate.<pid>.tmp (PREFIX: -T, else <prefix>, else $TMPDIR/collate), removed when the run \
    ends or is interrupted (SIGINT, SIGTERM); one left by a killed run is removed by the next run with that prefix.\n\n\
    Output: -o's name gives the format (.bam, .cram, .sam.gz; any other name, '-' included, is SAM, as in \
    samtools); -O writes BAM to standard output; --output-fmt overrides either. The @PG line names fasthts.\n\n\
    Examples:\n  fasthts collate -o by_name.bam in.bam\n  \
    fasthts collate -Ou in.bam | fasthts fastq -1 r1.fq -2 r2.fq -"
)]
pub struct CollateArgs {
    /// Output to stdout
    #[arg(short = 'O')]
    pub to_stdout: bool,
    /// Output file name (use prefix if not set)
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Uncompressed BAM output
    #[arg(short = 'u')]
    pub uncompressed: bool,
    /// Fast (only primary alignments)
    #[arg(short = 'f')]
    pub fast: bool,
    /// Working reads stored (with -f)
    #[arg(short = 'r', value_name = "INT", default_value = "10000", allow_hyphen_values = true)]
    pub reads_store: String,
    /// Compression level
    #[arg(short = 'l', value_name = "INT", default_value = "1", allow_hyphen_values = true)]
    pub level: String,
    /// Number of temporary files (buckets; the order depends on it)
    #[arg(short = 'n', value_name = "INT", default_value = "64", allow_hyphen_values = true)]
    pub buckets: String,
    /// Write temporary files to PREFIX.fasthts-collate.<pid>.tmp/ (as later samtools' -T)
    #[arg(short = 'T', value_name = "PREFIX")]
    pub temp_prefix: Option<PathBuf>,
    /// Record bytes held in memory before buckets are spilled to temporary files (K, M, G)
    #[arg(long = "max-memory", value_name = "SIZE", default_value = "768M", value_parser = |s: &str| command::parse_memory_size(s).map_err(|e| e.to_string()))]
    pub memory: usize,
    /// Do not add a PG line
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Specify output format (SAM, BAM, CRAM), with options: FORMAT[,OPT[=VAL]]...
    #[arg(long = "output-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
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
    /// Accepted for samtools compatibility (collate writes no index, as samtools)
    #[arg(long = "write-index", hide = true)]
    pub write_index: bool,
    /// Set level of verbosity (accepted for samtools compatibility)
    #[arg(long = "verbosity", value_name = "INT", hide = true, allow_hyphen_values = true)]
    pub verbosity: Option<String>,
    /// Input BAM, SAM or CRAM (- for standard input)
    #[arg(value_name = "in.bam")]
    pub input: PathBuf,
    /// Prefix of the output (without -o or -O) and of the temporary files
    #[arg(value_name = "prefix")]
    pub prefix: Option<PathBuf>,
}

/// htslib's `hts_format_file_extension` of an `--output-fmt` format.
fn extension_of(format: OutputFormat) -> &'static str {
    match format {
        OutputFormat::Bam => "bam",
        OutputFormat::Sam => "sam",
        OutputFormat::SamGz => "sam.gz",
        OutputFormat::Cram => "cram",
    }
}

pub fn run(args: CollateArgs) -> CmdResult {
    let usage_error = |message: &str| -> CmdResult { Err(Failure::new(1, format!("fasthts collate: {message}")).into()) };
    if args.prefix.is_none() && !args.to_stdout && args.output.is_none() {
        return usage_error("give <prefix>, -o or -O (see 'fasthts collate --help')");
    }
    if args.to_stdout && args.output.is_some() {
        return usage_error("-o and -O options cannot be used together");
    }
    let atoi = |s: &str| fasthts::depth::atoi(s);
    // samtools: a level outside 0..9 is its default, 1; -u is 0.
    let level = match atoi(&args.level) {
        _ if args.uncompressed => 0,
        l @ 0..=9 => l as u32,
        _ => 1,
    };
    let extra = args.output_options.iter().map(String::as_str);
    let spec_options = args.format.as_deref().map(|s| s.split(',').skip(1)).into_iter().flatten();
    let cram_options = cram_output_options(spec_options.chain(extra.clone()));
    let (spec_format, spec_level) = match &args.format {
        Some(spec) => {
            let (format, level) = OutputFormat::parse_spec(spec)?;
            (Some(format), level)
        }
        None => (None, None),
    };
    let level = parse_output_options(extra)?.or(spec_level).unwrap_or(level);
    let (output, format) = if args.to_stdout {
        (PathBuf::from("-"), spec_format.unwrap_or(OutputFormat::Bam))
    } else if let Some(output) = &args.output {
        // "w" and the extension's letter: SAM when htslib knows none.
        (output.clone(), spec_format.or_else(|| crate::fixmate::format_of_name(output)).unwrap_or(OutputFormat::Sam))
    } else {
        let prefix = args.prefix.as_ref().expect("checked above");
        let format = spec_format.unwrap_or(OutputFormat::Bam);
        let mut name = prefix.as_os_str().to_owned();
        name.push(format!(".{}", extension_of(format)));
        (PathBuf::from(name), format)
    };
    let buckets = atoi(&args.buckets);
    if buckets < 1 {
        return usage_error(&format!("invalid number of temporary files (-n) {buckets}: give at least 1"));
    }
    let temp_prefix = args.temp_prefix.clone().or_else(|| args.prefix.clone()).unwrap_or_else(|| std::env::temp_dir().join("collate"));
    let options = CollateOptions {
        buckets: buckets as u32,
        fast: args.fast.then(|| atoi(&args.reads_store).max(2) as usize),
        format,
        level: Some(level),
        temp_prefix,
        memory: args.memory,
        program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), crate::command_line())),
        threads: args.threads,
        reference: args
            .reference
            .clone()
            .or_else(|| args.input_options.iter().find_map(|o| o.strip_prefix("reference=").map(PathBuf::from))),
        cram_options,
    };
    command::collate_file(&args.input, &output, &options, &Terminal { command: "collate" })?;
    Ok(())
}
