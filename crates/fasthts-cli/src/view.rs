//! `fasthts view`: samtools view 1.16. The work is in
//! `fasthts::command::view_file`; records are selected by `fasthts::view`.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, SkippedRegion, ViewArguments, ViewRun};
use std::path::PathBuf;

/// Prints, filters and converts alignments, whole or by region (samtools view).
#[derive(Args)]
#[command(
    disable_help_flag = true,
    override_usage = "fasthts view [options] in.bam|in.sam [region ...]",
    after_help = "Output: SAM records (with -h the header too), or BAM with -b, -u, -O bam or an -o name \
    ending .bam, identical to samtools view 1.16 (its @PG line names fasthts; --no-PG leaves it out). \
    Regions (CONTIG, CONTIG:BEG-END, * for unplaced reads) need an indexed BAM, a bgzipped SAM with its CSI or BAI, \
    or a CRAM with its .crai; each region gives \
    every record overlapping it, region by region, so a record overlapping two regions is printed twice \
    unless -M (with -M, -L and regions: their intersection; -P adds the mates of the selected pairs). \
    Regions are read through the index in parallel windows and written in order.\n\n\
    -e takes htslib 1.16's expression language (see -e below). \
    CRAM output (-C, -O cram, an -o name ending .cram) is written by htslib as samtools writes it, \
    with the reference of -T (also a CRAM input's reference).\n\n\
    Examples:\n  fasthts view -h in.bam | less\n  fasthts view -c -F 0x904 -q 30 in.bam chr1:1,000,000-2,000,000\n  \
    fasthts view -b --subsample 0.1 --subsample-seed 7 -o sub.bam in.bam\n  \
    fasthts view -M -L targets.bed -b --write-index -o on_target.bam in.bam"
)]
pub struct ViewArgs {
    /// Print help (-h is samtools' --with-header here; -? as in samtools)
    #[arg(long = "help", short = '?', action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Output BAM
    #[arg(short = 'b', long = "bam", overrides_with = "cram")]
    pub bam: bool,
    /// Output CRAM (needs the reference: -T)
    #[arg(short = 'C', long = "cram", overrides_with = "bam")]
    pub cram: bool,
    /// Reference FASTA of a CRAM input or output [default: as htslib finds it: REF_PATH, REF_CACHE, @SQ UR]
    #[arg(short = 'T', long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Use fast BAM compression (level 1; BAM unless -o names SAM)
    #[arg(short = '1', long = "fast")]
    pub fast: bool,
    /// Uncompressed BAM output (BAM unless -o names SAM)
    #[arg(short = 'u', long = "uncompressed")]
    pub uncompressed: bool,
    /// Include the header in SAM output
    #[arg(short = 'h', long = "with-header", overrides_with = "no_header")]
    pub with_header: bool,
    /// Print the header only (no alignments)
    #[arg(short = 'H', long = "header-only", overrides_with = "no_header")]
    pub header_only: bool,
    /// Print alignment records only, as without -h or -H
    #[arg(long = "no-header", overrides_with_all = ["with_header", "header_only"])]
    pub no_header: bool,
    /// Print only the count of matching records
    #[arg(short = 'c', long = "count")]
    pub count: bool,
    /// Write output to FILE [standard output]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the records not selected by the filters to FILE
    #[arg(short = 'U', long = "unoutput", visible_alias = "output-unselected", value_name = "FILE")]
    pub unselected: Option<PathBuf>,
    /// Use the index and the multi-region iterator: each record once, in file order
    #[arg(short = 'M', long = "use-index")]
    pub multi_region: bool,
    /// Read the regions of a BED FILE through the index (as -M -L FILE)
    #[arg(long = "region-file", visible_alias = "regions-file", value_name = "FILE")]
    pub region_file: Option<PathBuf>,
    /// The index file follows the input on the command line (in.bam in.bam.bai [region ...])
    #[arg(short = 'X', long = "customized-index", visible_alias = "customised-index")]
    pub explicit_index: bool,
    /// Only records overlapping the BED FILE's regions
    #[arg(short = 'L', long = "target-file", visible_alias = "targets-file", value_name = "FILE")]
    pub bed: Option<PathBuf>,
    /// Only records whose name is listed in FILE
    #[arg(short = 'N', long = "qname-file", visible_alias = "QNAME-file", value_name = "FILE")]
    pub names: Option<PathBuf>,
    /// Only records with tag STR1 (with value STR2)
    #[arg(short = 'd', long = "tag", value_name = "STR1[:STR2]")]
    pub tag: Vec<String>,
    /// Only records with tag STR whose value is listed in FILE
    #[arg(short = 'D', long = "tag-file", value_name = "STR:FILE")]
    pub tag_file: Vec<String>,
    /// Only records the filter expression passes (htslib 1.16's language:
    /// fields, [XX] tags, numbers, "strings", library; + - * / % & | ^ ~ !
    /// == != < <= > >= =~ !~ && ||, parentheses; length min max avg exists
    /// default exp log sqrt pow; records it fails on are left out, as by
    /// samtools, with one warning)
    #[arg(short = 'e', long = "expr", visible_alias = "expression", value_name = "STR", allow_hyphen_values = true)]
    pub expr: Option<String>,
    /// Only records with mapping quality >= INT [0]
    #[arg(short = 'q', long = "min-MQ", visible_aliases = ["min-mq", "min-mapq"], value_name = "INT", allow_hyphen_values = true)]
    pub min_mapq: Option<String>,
    /// Only records covering >= INT query bases (as measured via CIGAR) [0]
    #[arg(short = 'm', long = "min-qlen", value_name = "INT", allow_hyphen_values = true)]
    pub min_qlen: Option<String>,
    /// Only records with all bits of FLAG set (number or names, e.g. PAIRED,READ1)
    #[arg(short = 'f', long = "require-flags", value_name = "FLAG")]
    pub require_flags: Vec<String>,
    /// Only records with none of the bits of FLAG set
    #[arg(short = 'F', long = "excl-flags", visible_alias = "exclude-flags", value_name = "FLAG")]
    pub exclude_flags: Vec<String>,
    /// Only records with any bit of FLAG set
    #[arg(long = "rf", visible_aliases = ["incl-flags", "include-flags"], value_name = "FLAG")]
    pub any_flags: Vec<String>,
    /// Leave out records with all bits of FLAG set
    #[arg(short = 'G', value_name = "FLAG")]
    pub all_flags_off: Vec<String>,
    /// Keep only FLOAT (0 to 1) of the templates, chosen by a hash of the read name
    #[arg(long = "subsample", value_name = "FLOAT")]
    pub subsample: Option<String>,
    /// Seed for --subsample [0]
    #[arg(long = "subsample-seed", value_name = "INT", allow_hyphen_values = true)]
    pub subsample_seed: Option<String>,
    /// Subsample: seed INT and fraction .FRAC in one (-s 42.1: seed 42, 10 %)
    #[arg(short = 's', value_name = "INT.FRAC")]
    pub seed_fraction: Option<String>,
    /// Remove these tags (XX,YY; ^XX,YY keeps only these)
    #[arg(short = 'x', long = "remove-tag", value_name = "STR")]
    pub remove_tag: Vec<String>,
    /// Set these flags on the records written
    #[arg(long = "add-flags", value_name = "FLAG")]
    pub add_flags: Vec<String>,
    /// Clear these flags on the records written
    #[arg(long = "remove-flags", value_name = "FLAG")]
    pub remove_flags: Vec<String>,
    /// Keep only these tags (XX,YY)
    #[arg(long = "keep-tag", value_name = "STR")]
    pub keep_tag: Vec<String>,
    /// Output format, SAM, BAM or CRAM, with options: FORMAT[,OPT[=VAL]]... (level=INT; htslib's CRAM options)
    #[arg(short = 'O', long = "output-fmt", value_name = "FORMAT[,OPT[=VAL]]...")]
    pub format: Option<String>,
    /// A single output format option, OPT or OPT=VAL (level=INT)
    #[arg(long = "output-fmt-option", value_name = "OPT[=VAL]")]
    pub output_options: Vec<String>,
    /// Index the BAM output as it is written: OUT.csi, or the path after ##idx## in -o OUT##idx##INDEX
    #[arg(long = "write-index")]
    pub write_index: bool,
    /// Do not add a @PG line to the header
    #[arg(long = "no-PG")]
    pub no_pg: bool,
    /// Worker threads [default: all cores]
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Positions per parallel window (output does not depend on it)
    #[arg(long = "window-bases", value_name = "INT", hide = true)]
    pub window_bases: Option<u64>,
    /// Write the records not selected to the output too, made unmapped
    /// (flag UNMAP, MAPQ 0, TLEN 0, no CIGAR)
    #[arg(short = 'p', long = "unmap")]
    pub unmap: bool,
    /// Only records in read group STR (or without RG); other @RG lines are left out of the header
    #[arg(short = 'r', long = "read-group", visible_alias = "readgroup", value_name = "STR")]
    pub read_group: Vec<String>,
    /// Only records in a read group listed in FILE (or without RG)
    #[arg(short = 'R', long = "read-group-file", visible_alias = "readgroup-file", value_name = "FILE")]
    pub read_group_file: Vec<PathBuf>,
    /// Only records in library STR (the LB of their read group's @RG line)
    #[arg(short = 'l', long = "library", value_name = "STR")]
    pub library: Option<String>,
    /// Retrieve complete pairs even when outside of region (read as with -M, then the mates)
    #[arg(short = 'P', long = "fetch-pairs")]
    pub fetch_pairs: bool,
    /// A single input file format option, OPT or OPT=VAL (accepted; fasthts reads BAM, SAM and CRAM without them)
    #[arg(long = "input-fmt-option", value_name = "OPT[=VAL]", hide = true)]
    pub input_options: Vec<String>,
    /// FILE listing reference names and lengths (a .fai), for a SAM input without @SQ lines
    #[arg(short = 't', long = "fai-reference", value_name = "FILE")]
    pub fai_reference: Option<PathBuf>,
    /// Collapse the backward CIGAR operation (B)
    #[arg(short = 'B', long = "remove-B")]
    pub remove_b: bool,
    /// Ignored (the input format is detected), as in samtools
    #[arg(short = 'S', hide = true)]
    pub sam_input: bool,
    /// Accepted for samtools compatibility; fasthts prints the same messages at any level
    #[arg(long = "verbosity", value_name = "INT", hide = true, allow_hyphen_values = true)]
    pub verbosity: Option<String>,
    /// Input BAM or SAM file (- for standard input), then regions (chr, chr:from-to; chr an @SQ SN: or AN: name)
    #[arg(value_name = "in.bam [region ...]")]
    pub args: Vec<String>,
}

/// `-d`/`-D`: the one tag all of them name (samtools refuses two).
pub fn run(args: ViewArgs) -> CmdResult {
    let program = (!args.no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), crate::command_line()));
    let arguments = ViewArguments {
        bam: args.bam,
        cram: args.cram,
        reference: args.reference,
        fast: args.fast,
        uncompressed: args.uncompressed,
        with_header: args.with_header,
        header_only: args.header_only,
        no_header: args.no_header,
        count: args.count,
        output: args.output,
        unselected: args.unselected,
        multi_region: args.multi_region,
        region_file: args.region_file,
        explicit_index: args.explicit_index,
        bed: args.bed,
        names: args.names,
        tag: args.tag,
        tag_file: args.tag_file,
        expr: args.expr,
        min_mapq: args.min_mapq,
        min_qlen: args.min_qlen,
        require_flags: args.require_flags,
        exclude_flags: args.exclude_flags,
        any_flags: args.any_flags,
        all_flags_off: args.all_flags_off,
        subsample: args.subsample,
        subsample_seed: args.subsample_seed,
        seed_fraction: args.seed_fraction,
        remove_tag: args.remove_tag,
        add_flags: args.add_flags,
        remove_flags: args.remove_flags,
        keep_tag: args.keep_tag,
        format: args.format,
        output_options: args.output_options,
        write_index: args.write_index,
        threads: args.threads,
        window_bases: args.window_bases,
        unmap: args.unmap,
        read_group: args.read_group,
        read_group_file: args.read_group_file,
        library: args.library,
        fetch_pairs: args.fetch_pairs,
        fai_reference: args.fai_reference,
        remove_b: args.remove_b,
        args: args.args,
        program,
    };
    let ViewRun { input, output, options } = arguments.resolve()?;
    let skipped = |SkippedRegion(region): SkippedRegion| {
        eprintln!("fasthts view: warning: region \"{region}\" specifies an invalid region or unknown reference; continuing");
    };
    match command::view_file(&input, &output, &options, &Terminal { command: "view" }, &skipped) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
