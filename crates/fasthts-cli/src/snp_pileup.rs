//! `fasthts snp-pileup`: FACETS' snp-pileup (same options, defaults, CSV
//! and messages), on all cores. The work is in `fasthts::command::snp_pileup`.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, SnpPileupFileOptions};
use fasthts::pileup::snp::SnpPileupOptions;
use std::path::PathBuf;

/// An `int` option (FACETS reads them with `atoi`, where junk silently
/// reads as 0; here junk is refused).
fn int(s: &str) -> Result<i32, String> {
    crate::numbers::whole(i32::MIN.into(), i32::MAX.into())(s)
}

/// `-r`: comma-separated whole numbers (empty items are skipped, as in FACETS).
fn read_counts(s: &str) -> Result<String, String> {
    for item in s.split(',').filter(|t| !t.is_empty()) {
        int(item).map_err(|_| "expected comma-separated whole numbers".to_string())?;
    }
    Ok(s.to_string())
}

/// Counts, at every SNP of a VCF, the reads of each BAM showing the reference
/// allele, the alternate allele, another base or a deletion (FACETS snp-pileup).
#[derive(Args)]
#[command(after_help = "Output: CSV with columns Chromosome,Position,Ref,Alt,File1R,File1A,File1E,File1D,... \
identical to FACETS snp-pileup. BAMs and CRAMs must be coordinate-sorted; one without its index \
(.bai/.csi, .crai) is indexed in memory first. A CRAM's reference is found as FACETS' htslib finds it (REF_PATH/REF_CACHE by @SQ M5, else \
@SQ UR) or given with --reference.

Examples:
  fasthts snp-pileup sites.vcf.gz out.csv normal.bam tumour.bam
  fasthts snp-pileup -g -q15 -Q20 -P100 -r25,0 sites.vcf.gz out.csv normal.bam tumour.bam
                     FACETS' recommended settings; writes out.csv.gz
  fasthts snp-pileup -p -@ 4 sites.vcf.gz out.csv normal.bam tumour.bam    with a progress bar")]
pub struct SnpPileupArgs {
    /// Do not discard anomalous read pairs.
    #[arg(short = 'A', long = "count-orphans")]
    pub count_orphans: bool,
    /// Sets the maximum depth per file.
    #[arg(short = 'd', long = "max-depth", value_name = "DEPTH", value_parser = int, default_value = "4000", allow_negative_numbers = true)]
    pub max_depth: i32,
    /// Compresses the output file with BGZF.
    #[arg(short = 'g', long = "gzip")]
    pub gzip: bool,
    /// Every MULTIPLE positions, if there is no SNP, insert a blank record with the total count at the position
    /// (0: none).
    #[arg(short = 'P', long = "pseudo-snps", value_name = "MULTIPLE", value_parser = crate::numbers::whole::<i32>(0, i32::MAX.into()), default_value = "0", allow_negative_numbers = true)]
    pub pseudo_snps: i32,
    /// Show FACETS' progress bar on stdout (a terminal shows fasthts' own on stderr without -p).
    #[arg(short = 'p', long = "progress")]
    pub progress: bool,
    /// Sets the minimum threshold for mapping quality (MAPQ 0 is always dropped).
    #[arg(short = 'q', long = "min-map-quality", value_name = "QUALITY", value_parser = int, default_value = "0", allow_negative_numbers = true)]
    pub min_map_quality: i32,
    /// Sets the minimum threshold for base quality (quality 0 is always ignored).
    #[arg(short = 'Q', long = "min-base-quality", value_name = "QUALITY", value_parser = int, default_value = "0", allow_negative_numbers = true)]
    pub min_base_quality: i32,
    /// Comma separated list of minimum read counts for a position to be output, one per BAM in order
    /// [default: 0 for each].
    #[arg(short = 'r', long = "min-read-counts", value_name = "READS", value_parser = read_counts, allow_negative_numbers = true)]
    pub min_read_counts: Vec<String>,
    /// Show detailed messages.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Disable read-pair overlap detection.
    #[arg(short = 'x', long = "ignore-overlaps")]
    pub ignore_overlaps: bool,
    /// Not FACETS-compatible: report every usable VCF site (no walk losses), contigs matched per name
    /// (then with chr added/removed), rows in VCF order. See docs/snp-pileup.md.
    #[arg(long = "exact-sites")]
    pub exact_sites: bool,
    /// Reference FASTA of CRAM inputs (not in FACETS) [default: as htslib finds it: REF_PATH, REF_CACHE, @SQ UR]
    #[arg(long = "reference", value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(short = '@', long = "threads", value_name = "INT", allow_negative_numbers = true, value_parser = crate::numbers::threads)]
    pub threads: Option<usize>,
    /// Region size in bases for the parallel walk (output does not depend on it).
    #[arg(long = "region-size", value_name = "BASES", hide = true, value_parser = crate::numbers::whole::<i64>(1, i64::MAX))]
    pub region_size: Option<i64>,
    /// Bases before a region from which its reads are loaded (output does not depend on it).
    #[arg(long = "warmup", value_name = "BASES", hide = true, value_parser = crate::numbers::whole::<i64>(0, i64::MAX))]
    pub warmup: Option<i64>,
    /// The sites: a VCF, plain or bgzipped.
    #[arg(value_name = "VCF")]
    pub vcf: PathBuf,
    /// The CSV to write (must not exist; .gz is added with -g).
    #[arg(value_name = "OUTPUT")]
    pub output: PathBuf,
    /// Coordinate-sorted BAMs or CRAMs (indexed or not): the columns File1..., in this order.
    #[arg(value_name = "BAM", required = true)]
    pub bams: Vec<PathBuf>,
}

/// Process CPU seconds (what FACETS' `clock()` reports), from /proc.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which is in parentheses).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 (1-based), 11 and 12 here.
    (ticks(11) + ticks(12)) / 100.0
}

pub fn run(args: SnpPileupArgs) -> CmdResult {
    let (vcf, output, bams) = (args.vcf.as_path(), args.output.as_path(), &args.bams);
    let mut min_read_counts = Vec::new();
    for r in &args.min_read_counts {
        min_read_counts.extend(r.split(',').filter(|t| !t.is_empty()).map(|t| int(t).expect("checked by read_counts")));
    }
    let mut pileup = SnpPileupOptions {
        count_orphans: args.count_orphans,
        max_depth: args.max_depth,
        ignore_overlaps: args.ignore_overlaps,
        min_map_quality: args.min_map_quality,
        min_base_quality: args.min_base_quality,
        pseudo_snps: args.pseudo_snps,
        min_read_counts,
        exact_sites: args.exact_sites,
        ..SnpPileupOptions::default()
    };
    if let Some(w) = args.warmup {
        pileup.warmup = w.max(0);
    }
    if let Some(size) = args.region_size {
        pileup.region_size = size.max(1);
    }
    let options = SnpPileupFileOptions {
        pileup,
        gzip: args.gzip,
        verbose: args.verbose,
        progress: args.progress,
        threads: args.threads,
        reference: args.reference,
    };
    // FACETS' own bar (-p) goes to stdout; ours is for a terminal without it.
    let bar = crate::progress::Bar::start("snp-pileup", args.progress, crate::progress::Source::Inflated(bams.clone()));
    command::snp_pileup(vcf, output, bams, &options, &Terminal { command: "snp-pileup" })?;
    drop(bar);
    crate::write_stdout(format!("Finished in {:.6} seconds.\n", cpu_seconds()).as_bytes())
}
