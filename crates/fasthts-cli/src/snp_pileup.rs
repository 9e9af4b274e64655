//! `fasthts snp-pileup`: FACETS' snp-pileup (same options, defaults, CSV
//! and messages), on all cores. The work is in `fasthts::command::snp_pileup`.

use crate::{CmdResult, Terminal};
use clap::Args;
use fasthts::command::{self, SnpPileupFileOptions};
use fasthts::pileup::snp::SnpPileupOptions;
use std::path::{Path, PathBuf};

/// C `atoi`: optional blanks and sign, then digits; junk reads as 0.
fn atoi(s: &str) -> Result<i32, std::convert::Infallible> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        v = (v * 10 + i64::from(c - b'0')).min(i64::from(i32::MAX) + 1);
    }
    let v = if neg { -v } else { v };
    Ok(v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
}

/// Counts, at every SNP of a VCF, the reads of each BAM showing the reference
/// allele, the alternate allele, another base or a deletion (FACETS snp-pileup).
#[derive(Args)]
#[command(after_help = "Output: CSV with columns Chromosome,Position,Ref,Alt,File1R,File1A,File1E,File1D,... \
    identical to FACETS snp-pileup. BAMs must be coordinate-sorted and indexed (fasthts index).")]
pub struct SnpPileupArgs {
    /// Do not discard anomalous read pairs.
    #[arg(short = 'A', long = "count-orphans")]
    pub count_orphans: bool,
    /// Sets the maximum depth. Default is 4000.
    #[arg(short = 'd', long = "max-depth", value_name = "DEPTH", value_parser = atoi, default_value = "4000", allow_hyphen_values = true)]
    pub max_depth: i32,
    /// Compresses the output file with BGZF.
    #[arg(short = 'g', long = "gzip")]
    pub gzip: bool,
    /// Every MULTIPLE positions, if there is no SNP, insert a blank record with the total count at the position.
    #[arg(short = 'P', long = "pseudo-snps", value_name = "MULTIPLE", value_parser = atoi, default_value = "0", allow_hyphen_values = true)]
    pub pseudo_snps: i32,
    /// Show a progress bar.
    #[arg(short = 'p', long = "progress")]
    pub progress: bool,
    /// Sets the minimum threshold for mapping quality. Default is 0.
    #[arg(short = 'q', long = "min-map-quality", value_name = "QUALITY", value_parser = atoi, default_value = "0", allow_hyphen_values = true)]
    pub min_map_quality: i32,
    /// Sets the minimum threshold for base quality. Default is 0.
    #[arg(short = 'Q', long = "min-base-quality", value_name = "QUALITY", value_parser = atoi, default_value = "0", allow_hyphen_values = true)]
    pub min_base_quality: i32,
    /// Comma separated list of minimum read counts for a position to be output. Default is 0.
    #[arg(short = 'r', long = "min-read-counts", value_name = "READS", allow_hyphen_values = true)]
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
    /// Worker threads (all cores by default).
    #[arg(short = '@', long = "threads", value_name = "INT")]
    pub threads: Option<usize>,
    /// Region size in bases for the parallel walk (output does not depend on it).
    #[arg(long = "region-size", value_name = "BASES", hide = true)]
    pub region_size: Option<i64>,
    /// Bases before a region from which its reads are loaded (output does not depend on it).
    #[arg(long = "warmup", value_name = "BASES", hide = true)]
    pub warmup: Option<i64>,
    /// <vcf file> <output file> <sequence files...>
    #[arg(value_name = "FILES")]
    pub files: Vec<String>,
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

/// FACETS' usage error: two lines and status 64 (EX_USAGE).
fn usage_failure() -> crate::Failure {
    crate::Failure::new(
        64,
        "Usage: fasthts snp-pileup [OPTION...] <vcf file> <output file> <sequence files...>\nTry `fasthts snp-pileup --help' for more information.",
    )
}

pub fn run(args: SnpPileupArgs) -> CmdResult {
    if args.files.len() < 3 {
        return Err(usage_failure().into());
    }
    let vcf = Path::new(&args.files[0]);
    let output = Path::new(&args.files[1]);
    let bams: Vec<PathBuf> = args.files[2..].iter().map(PathBuf::from).collect();
    let mut min_read_counts = Vec::new();
    for r in &args.min_read_counts {
        min_read_counts.extend(r.split(',').filter(|t| !t.is_empty()).map(|t| atoi(t).unwrap_or(0)));
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
    let options = SnpPileupFileOptions { pileup, gzip: args.gzip, verbose: args.verbose, progress: args.progress, threads: args.threads };
    command::snp_pileup(vcf, output, &bams, &options, &Terminal { command: "snp-pileup" })?;
    crate::write_stdout(format!("Finished in {:.6} seconds.\n", cpu_seconds()).as_bytes())
}
