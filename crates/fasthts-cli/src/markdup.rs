//! `fasthts markdup`: samtools 1.16 markdup. The work is in
//! `fasthts::command::markdup_file`; this reads the options and prints
//! the warnings and the statistics.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, MarkdupFileOptions, MarkdupSummary};
use fasthts::markdup::{Barcodes, DuplicateMode, MarkdupOptions};
use fasthts::record_output::{cram_output_options, parse_output_options, OutputFormat};
use std::path::PathBuf;

/// Marks duplicate alignments in a coordinate-sorted file, as samtools markdup.
#[derive(Args)]
#[command(
    override_usage = "fasthts markdup [options] <input.bam> <output.bam>",
    after_help = "The input must be coordinate sorted and must have gone through fixmate with the mate scoring \
    option on (samtools fixmate -m: the MC and ms tags). Output identical to samtools 1.16 markdup.\n\n\
    Examples:\n  samtools collate -O -u in.bam | samtools fixmate -m -u - - | fasthts sort -o fixed.bam -\n  \
    fasthts markdup -s fixed.bam marked.bam\n  \
    fasthts markdup -r -S -d 100 -f stats.txt fixed.bam deduplicated.bam"
)]
pub struct MarkdupArgs {
    /// What decides the marks, and the statistics.
    #[command(flatten)]
    pub marking: MarkingArgs,
    /// Max read length: how far behind the current position reads are
    /// still compared (negative: 300).
    #[arg(short = 'l', value_name = "INT", default_value = "300", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i64>(i32::MIN.into(), i32::MAX.into()))]
    pub max_read_length: i64,
    /// Write -S's temporary file to PREFIX (inside it when a directory)
    /// [beside the output].
    #[arg(short = 'T', value_name = "PREFIX")]
    pub temp_prefix: Option<PathBuf>,
    /// Duplicate decision method for paired reads: t measure positions
    /// based on template start/end, s measure positions based on sequence
    /// start.
    #[arg(short = 'm', long = "mode", value_name = "TYPE", default_value = "t", value_parser = ["t", "s"])]
    pub mode: String,
    /// Output uncompressed data.
    #[arg(short = 'u')]
    pub uncompressed: bool,
    /// Do not add a PG line.
    #[arg(long = "no-PG")]
    pub no_pg: bool,
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
    /// Index the BAM output as it is written (OUT.csi, or the path after
    /// `##idx##` in `OUT##idx##INDEX`).
    #[arg(long = "write-index")]
    pub write_index: bool,
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Input: coordinate-sorted BAM, SAM or CRAM, or - for standard input.
    #[arg(value_name = "input.bam")]
    pub input: PathBuf,
    /// Output file, or - for standard output.
    #[arg(value_name = "output.bam")]
    pub output: PathBuf,
}

pub fn run(args: MarkdupArgs) -> CmdResult {
    let marking = args.marking.options(args.max_read_length, &args.mode)?;
    let extra = args.output_options.iter().map(String::as_str);
    let spec_options = args.format.as_deref().map(|spec| spec.split(',').skip(1)).into_iter().flatten();
    let cram_options = cram_output_options(spec_options.chain(extra.clone()));
    let (format, spec_level) = match &args.format {
        Some(spec) => {
            let (format, level) = OutputFormat::parse_spec(spec)?;
            (Some(format), level)
        }
        None => (None, None),
    };
    let command_line = crate::command_line();
    let options = MarkdupFileOptions {
        marking,
        format,
        level: parse_output_options(extra)?.or(spec_level),
        uncompressed: args.uncompressed,
        threads: args.threads,
        temp_prefix: args.temp_prefix.clone(),
        program: (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), command_line.clone())),
        reference: args.reference.clone(),
        cram_options,
        write_index: args.write_index,
    };
    let summary = command::markdup_file(&args.input, &args.output, &options, &Terminal { command: "markdup" })?;
    args.marking.report(&summary, "markdup", &command_line);
    Ok(())
}

/// markdup's options that sormadup shares (its `-l` and `-m` are
/// sormadup's compression and memory, so they are not here).
#[derive(Args)]
pub struct MarkingArgs {
    /// Remove duplicate reads.
    #[arg(short = 'r')]
    pub remove: bool,
    /// Mark supplementary alignments of duplicates as duplicates (slower).
    #[arg(short = 'S')]
    pub supplementary: bool,
    /// Report stats (to standard error).
    #[arg(short = 's')]
    pub stats: bool,
    /// Write stats to named file. Implies -s.
    #[arg(short = 'f', value_name = "NAME")]
    pub stats_file: Option<PathBuf>,
    /// Optical distance (if set, marks with dt tag).
    #[arg(short = 'd', value_name = "INT", default_value = "0", allow_negative_numbers = true, value_parser = crate::numbers::whole::<i64>(i32::MIN.into(), i32::MAX.into()))]
    pub optical_distance: i64,
    /// Clear previous duplicate settings and tags.
    #[arg(short = 'c')]
    pub clear: bool,
    /// Include quality check failed reads.
    #[arg(long = "include-fails")]
    pub include_fails: bool,
    /// Reduced duplicates of duplicates checking.
    #[arg(long = "no-multi-dup")]
    pub no_multi_dup: bool,
    /// Regex for coords from read name (POSIX extended, as samtools).
    #[arg(long = "read-coords", value_name = "STR")]
    pub read_coords: Option<String>,
    /// Order of regex elements, t being a part of the read names that must
    /// be equal and x/y being coordinates.
    #[arg(long = "coords-order", value_name = "STR", default_value = "txy")]
    pub coords_order: String,
    /// Use barcode a tag that duplicates must match.
    #[arg(long = "barcode-tag", value_name = "STR")]
    pub barcode_tag: Option<String>,
    /// Use the UMI/barcode in the read name (eighth colon delimited part).
    #[arg(long = "barcode-name")]
    pub barcode_name: bool,
    /// Regex for barcode in the readname (alternative to --barcode-name).
    #[arg(long = "barcode-rgx", value_name = "STR")]
    pub barcode_rgx: Option<String>,
    /// Mark primary duplicates with the name of the original in a 'do' tag.
    /// Mainly for information and debugging.
    #[arg(short = 't')]
    pub tag: bool,
}

impl MarkingArgs {
    /// The library's options, with markdup's `-l` and `-m` (`t` or `s`).
    pub fn options(&self, max_read_length: i64, mode: &str) -> Result<MarkdupOptions, String> {
        let barcodes = Barcodes::from_options(self.barcode_tag.as_deref(), self.barcode_name, self.barcode_rgx.as_deref())
            .map_err(|e| e.to_string())?;
        Ok(MarkdupOptions {
            remove_duplicates: self.remove,
            max_read_length,
            mark_supplementary: self.supplementary,
            tag_originals: self.tag,
            optical_distance: self.optical_distance,
            clear_previous: self.clear,
            mode: DuplicateMode::from_letter(mode).map_err(|e| e.to_string())?,
            include_fails: self.include_fails,
            check_chains: !self.no_multi_dup,
            read_coords: self.read_coords.clone().map(|r| (r, self.coords_order.clone())),
            barcodes,
        })
    }

    /// Prints the run's warnings, and its statistics as `-s` and `-f`
    /// ask, as `fasthts COMMAND`.
    pub fn report(&self, summary: &MarkdupSummary, command: &str, command_line: &str) {
        for warning in &summary.warnings {
            eprintln!("fasthts {command}: warning: {warning}");
        }
        if self.stats || self.stats_file.is_some() {
            let (text, warning) = summary.stats.text(command_line);
            if let Some(warning) = warning {
                eprintln!("fasthts {command}: warning: {warning}");
            }
            let written = self
                .stats_file
                .as_ref()
                .map(|path| fasthts::output::write_atomically(path, |w| std::io::Write::write_all(w, text.as_bytes())));
            match written {
                Some(Ok(())) => {}
                Some(Err(e)) => {
                    eprintln!("fasthts {command}: warning: cannot write stats to {e}");
                    crate::print_stderr(format_args!("{text}"));
                }
                None => crate::print_stderr(format_args!("{text}")),
            }
        }
    }
}
