//! The command line: options, and running the generator on them
//! (`fasthts-testgen`'s `main`, and [`sam`] for tests).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Parser;

use crate::emit::Emitter;
use crate::gen::{Config, Gen};
use crate::genome::{Genome, DEFAULT_LONG_REF_LEN};
use crate::rng::Rng;
use crate::sites;

#[derive(Parser, Debug)]
#[command(
    name = "fasthts-testgen",
    version,
    about = "Seeded generator of realistic SAM test data (pipe into `samtools view -b`)",
    long_about = "Seeded generator of realistic SAM test data.\n\n\
Writes SAM text (header + records) for a synthetic genome: paired-end reads with \
SNPs, indels, soft/hard clips, secondary (from genomic repeats) and supplementary \
(chimeric, SA:Z) alignments, duplicates, QC failures, singletons, mates on other \
chromosomes, unmapped reads, several read groups and tags of every SAM type. The \
same seed and options always give the same bytes. By default records are in exact \
`samtools sort` coordinate order.\n\n\
References: chr1..chrN (every 4th one, chr3, chr7, ..., never gets reads), chrM, \
two empty unplaced contigs chrUn_gen1/2, and chrLong with --long-ref.\n\n\
Numbers accept the suffixes k, M, G (powers of 1000), e.g. --target-bytes 3G."
)]
pub struct Cli {
    /// PRNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Seed of the genome and of the sample's SNPs [default: --seed]. Two
    /// runs with the same --genome-seed and different --seed are two samples
    /// (say tumour and normal) of one individual: same references, same
    /// heterozygous SNPs, different reads.
    #[arg(long)]
    genome_seed: Option<u64>,

    /// Also write a VCF of sites to this file: every heterozygous SNP of the
    /// sample plus random positions with a random ALT (and a few
    /// multi-allelic and indel records), about --sites records, sorted.
    #[arg(long)]
    sites_vcf: Option<PathBuf>,

    /// Also write the genome (every reference, in header order) as FASTA
    /// to this file, 60 bases a line: the reference a CRAM of the reads is
    /// made with (`samtools view -C -T FILE`).
    #[arg(long)]
    reference_fasta: Option<PathBuf>,

    /// Approximate number of records in --sites-vcf.
    #[arg(long, default_value = "300k", value_parser = parse_count)]
    sites: u64,

    /// Number of templates (read pairs or single reads) [default: 10000].
    #[arg(long, value_parser = parse_count, conflicts_with = "target_bytes")]
    reads: Option<u64>,

    /// Instead of --reads: approximate size of the SAM text to produce
    /// (the number of templates is estimated from a calibration run).
    #[arg(long, value_parser = parse_count)]
    target_bytes: Option<u64>,

    /// Number of main chromosomes chr1..chrN.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    refs: u32,

    /// Typical chromosome length; actual lengths vary from ~0.5x to ~1.5x.
    /// Sequences are held in memory (refs x ref-len bytes).
    #[arg(long, default_value = "1M", value_parser = parse_count)]
    ref_len: u64,

    /// Read length: a fixed length or a range MIN-MAX.
    #[arg(long, default_value = "100-150", value_parser = parse_read_len)]
    read_len: (u32, u32),

    /// Fraction of templates that are long reads whose CIGAR has more than
    /// 65,535 operations (stored in BAM via the CG tag).
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction)]
    long_cigar_fraction: f64,

    /// Fraction of templates with a record larger than 64 kB (long read plus
    /// a B:I array), so one BAM record spans several BGZF blocks.
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction)]
    huge_record_fraction: f64,

    /// Add chrLong, a reference longer than 2^29 (generated lazily), with
    /// reads beyond position 2^29 (BAI cannot index these; use CSI).
    #[arg(long)]
    long_ref: bool,

    /// Length of chrLong.
    #[arg(long, default_value_t = DEFAULT_LONG_REF_LEN, value_parser = clap::value_parser!(u32).range(1_000_000..=i32::MAX as i64))]
    long_ref_len: u32,

    /// Shuffle the record order (header says SO:unsorted).
    #[arg(long)]
    unsorted: bool,

    /// All reads unmapped and unplaced (RNAME `*`).
    #[arg(long)]
    no_mapped: bool,

    /// Fraction of templates that are unmapped and unplaced (written at the end).
    #[arg(long, default_value_t = 0.01, value_parser = parse_fraction)]
    unmapped_fraction: f64,

    /// Chance that a pair duplicates the previous pair (flag 1024).
    #[arg(long, default_value_t = 0.03, value_parser = parse_fraction)]
    dup_fraction: f64,

    /// Fraction of templates failing QC (flag 512).
    #[arg(long, default_value_t = 0.01, value_parser = parse_fraction)]
    qcfail_fraction: f64,

    /// Chance that a read is chimeric (supplementary record, SA:Z tags).
    #[arg(long, default_value_t = 0.02, value_parser = parse_fraction)]
    chimeric_fraction: f64,

    /// Fraction of pairs whose mate is on another chromosome.
    #[arg(long, default_value_t = 0.01, value_parser = parse_fraction)]
    interchrom_fraction: f64,

    /// Fraction of pairs with one read unmapped (placed at its mate).
    #[arg(long, default_value_t = 0.02, value_parser = parse_fraction)]
    singleton_fraction: f64,

    /// Fraction of templates that are single-end reads (read group rg4).
    #[arg(long, default_value_t = 0.01, value_parser = parse_fraction)]
    single_end_fraction: f64,

    /// Chance of each optional extra tag (A, i, f, Z, H, B:c/C/s/S/i/I/f) per record.
    #[arg(long, default_value_t = 0.03, value_parser = parse_fraction)]
    tag_fraction: f64,

    /// Per-base sequencing error rate.
    #[arg(long, default_value_t = 0.003, value_parser = parse_fraction)]
    mismatch_rate: f64,

    /// Output file [default: stdout].
    #[arg(short, long)]
    output: Option<PathBuf>,

    /// Do not print the summary line to stderr.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_count(s: &str) -> Result<u64, String> {
    let s = s.trim().replace('_', "");
    let (num, mult) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1_000),
        Some('m' | 'M') => (&s[..s.len() - 1], 1_000_000),
        Some('g' | 'G') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (&s[..], 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|e| format!("invalid number {s:?}: {e}"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("number too large: {s}"))
}

fn parse_read_len(s: &str) -> Result<(u32, u32), String> {
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (a, b),
        None => (s, s),
    };
    let lo: u32 = lo
        .trim()
        .parse()
        .map_err(|e| format!("invalid read length {s:?}: {e}"))?;
    let hi: u32 = hi
        .trim()
        .parse()
        .map_err(|e| format!("invalid read length {s:?}: {e}"))?;
    if lo < 50 || hi < lo || hi > 10_000 {
        return Err("read length must satisfy 50 <= MIN <= MAX <= 10000".into());
    }
    Ok((lo, hi))
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .parse()
        .map_err(|e| format!("invalid fraction {s:?}: {e}"))?;
    if (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(format!("fraction must be within 0..1, got {s}"))
    }
}

/// Canonical option string for `@PG CL:` — derived from the parsed options
/// (not argv) so that equivalent invocations and output paths give the same
/// bytes.
fn command_line(c: &Cli) -> String {
    let mut s = format!("fasthts-testgen --seed {}", c.seed);
    if let Some(g) = c.genome_seed.filter(|&g| g != c.seed) {
        s += &format!(" --genome-seed {g}");
    }
    match (c.reads, c.target_bytes) {
        (_, Some(t)) => s += &format!(" --target-bytes {t}"),
        (Some(r), None) => s += &format!(" --reads {r}"),
        (None, None) => {}
    }
    s += &format!(
        " --refs {} --ref-len {} --read-len {}-{}",
        c.refs, c.ref_len, c.read_len.0, c.read_len.1
    );
    let fracs = [
        ("long-cigar-fraction", c.long_cigar_fraction, 0.0),
        ("huge-record-fraction", c.huge_record_fraction, 0.0),
        ("unmapped-fraction", c.unmapped_fraction, 0.01),
        ("dup-fraction", c.dup_fraction, 0.03),
        ("qcfail-fraction", c.qcfail_fraction, 0.01),
        ("chimeric-fraction", c.chimeric_fraction, 0.02),
        ("interchrom-fraction", c.interchrom_fraction, 0.01),
        ("singleton-fraction", c.singleton_fraction, 0.02),
        ("single-end-fraction", c.single_end_fraction, 0.01),
        ("tag-fraction", c.tag_fraction, 0.03),
        ("mismatch-rate", c.mismatch_rate, 0.003),
    ];
    for (name, v, default) in fracs {
        if v != default {
            s += &format!(" --{name} {v}");
        }
    }
    if c.long_ref {
        s += &format!(" --long-ref --long-ref-len {}", c.long_ref_len);
    }
    if c.unsorted {
        s += " --unsorted";
    }
    if c.no_mapped {
        s += " --no-mapped";
    }
    s
}

/// Generate `n` templates into `out`; returns (records, bytes).
fn generate<W: Write>(
    cfg: &Config,
    genome: &Genome,
    n: u64,
    out: W,
) -> io::Result<(u64, u64, u64)> {
    let shuffle = cfg
        .unsorted
        .then(|| (10_000, Rng::derive(cfg.seed, 0x5_4FF1E)));
    let mut em = Emitter::new(out, shuffle);
    let mut gen = Gen::new(cfg, genome);
    em.write_raw(&gen.header())?;
    gen.run(n, &mut em)?;
    let templates = gen.templates;
    let (records, bytes) = em.finish()?;
    Ok((templates, records, bytes))
}

/// A writer that only counts bytes (for --target-bytes calibration).
struct CountingSink;

impl Write for CountingSink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Refuses what clap's parsers cannot: a `--ref-len` out of range.
pub fn check(cli: &Cli) -> Result<(), String> {
    if cli.ref_len < 10_000 || cli.ref_len > i32::MAX as u64 {
        return Err("--ref-len must be within 10000..=2147483647".into());
    }
    Ok(())
}

/// The SAM text `fasthts-testgen ARGS` writes to standard output (the
/// summary line still goes to stderr unless `-q`): test data made in the
/// test's process, without the binary.
pub fn sam(args: &[&str]) -> Result<Vec<u8>, String> {
    let cli = Cli::try_parse_from(std::iter::once("fasthts-testgen").chain(args.iter().copied())).map_err(|e| e.to_string())?;
    check(&cli)?;
    let mut out = Vec::new();
    run_into(&cli, Some(&mut out)).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Generates what `cli` asks for: SAM to `-o` or standard output.
pub fn run(cli: &Cli) -> io::Result<()> {
    run_into(cli, None)
}

/// As [`run`], with standard output replaced by `stdout` when given.
fn run_into(cli: &Cli, stdout: Option<&mut Vec<u8>>) -> io::Result<()> {
    let cfg = Config {
        seed: cli.seed,
        read_len: cli.read_len,
        long_cigar_fraction: cli.long_cigar_fraction,
        huge_record_fraction: cli.huge_record_fraction,
        unsorted: cli.unsorted,
        no_mapped: cli.no_mapped,
        unmapped_fraction: cli.unmapped_fraction,
        dup_fraction: cli.dup_fraction,
        qcfail_fraction: cli.qcfail_fraction,
        chimeric_fraction: cli.chimeric_fraction,
        interchrom_fraction: cli.interchrom_fraction,
        singleton_fraction: cli.singleton_fraction,
        single_end_fraction: cli.single_end_fraction,
        tag_fraction: cli.tag_fraction,
        mismatch_rate: cli.mismatch_rate,
        genome_seed: cli.genome_seed.unwrap_or(cli.seed),
        command_line: command_line(cli),
    };
    let genome = Genome::build(
        cfg.genome_seed,
        cli.refs,
        cli.ref_len as u32,
        cli.long_ref.then_some(cli.long_ref_len),
    );

    if let Some(path) = &cli.sites_vcf {
        let f = File::create(path)?;
        sites::write_vcf(&genome, &cfg, cli.sites, BufWriter::with_capacity(1 << 20, f))?;
    }

    if let Some(path) = &cli.reference_fasta {
        let f = File::create(path)?;
        genome.write_fasta(BufWriter::with_capacity(1 << 20, f))?;
    }

    let n = match (cli.reads, cli.target_bytes) {
        (Some(n), _) => n,
        (None, None) => 10_000,
        (None, Some(target)) => {
            // Calibrate: bytes per template for these exact options.
            const SAMPLE: u64 = 20_000;
            let header = Gen::new(&cfg, &genome).header().len() as u64;
            let (_, _, bytes) = generate(&cfg, &genome, SAMPLE, CountingSink)?;
            let per = ((bytes - header) as f64 / SAMPLE as f64).max(1.0);
            (target.saturating_sub(header) as f64 / per).round() as u64
        }
    };

    let (templates, records, bytes) = match (&cli.output, stdout) {
        (Some(path), _) => {
            let f = File::create(path)?;
            generate(&cfg, &genome, n, BufWriter::with_capacity(1 << 20, f))?
        }
        (None, Some(out)) => generate(&cfg, &genome, n, out)?,
        (None, None) => {
            let out = io::stdout().lock();
            generate(&cfg, &genome, n, BufWriter::with_capacity(1 << 20, out))?
        }
    };
    if !cli.quiet {
        eprintln!(
            "fasthts-testgen: {templates} templates, {records} records, {bytes} bytes of SAM"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! End-to-end checks on generated SAM text (parsing it back with a few
    //! lines of code, independent of the generator's own structures).
    use super::*;
    use std::collections::HashMap;

    fn config(seed: u64, unsorted: bool) -> Config {
        Config {
            long_cigar_fraction: 0.01,
            huge_record_fraction: 0.01,
            unsorted,
            chimeric_fraction: 0.05,
            interchrom_fraction: 0.02,
            tag_fraction: 0.05,
            ..crate::sites::tests::config(seed, seed)
        }
    }

    fn sam(seed: u64, unsorted: bool, n: u64) -> Vec<u8> {
        let cfg = config(seed, unsorted);
        let genome = Genome::build(seed, 5, 300_000, Some(600_000_000));
        let mut out = Vec::new();
        generate(&cfg, &genome, n, &mut out).unwrap();
        out
    }

    fn cigar_lens(c: &str) -> (u64, u64, usize) {
        let (mut q, mut r, mut ops, mut num) = (0u64, 0u64, 0usize, 0u64);
        for ch in c.bytes() {
            if ch.is_ascii_digit() {
                num = num * 10 + (ch - b'0') as u64;
                continue;
            }
            ops += 1;
            match ch {
                b'M' | b'=' | b'X' => {
                    q += num;
                    r += num
                }
                b'I' | b'S' => q += num,
                b'D' | b'N' => r += num,
                b'H' | b'P' => {}
                _ => panic!("bad CIGAR op in {c}"),
            }
            num = 0;
        }
        (q, r, ops)
    }

    /// Reads longer than what is left of a short reference (chrM, 16,569
    /// bp) near its end: mates placed at its last base and chimeras skipped
    /// there, overhangs soft-clipped; seed 1 used to panic (a window past
    /// chrM's end, then a QUAL slice past a clipped primary's end).
    #[test]
    fn long_reads_near_the_end_of_a_short_reference_stay_inside_it() {
        for seed in ["1", "2", "3"] {
            let args = ["--seed", seed, "--reads", "5000", "--refs", "4", "--ref-len", "60k", "--read-len", "100-3000"];
            let text = String::from_utf8(super::sam(&args).unwrap()).unwrap();
            let mut lengths = HashMap::new();
            for line in text.lines() {
                if let Some(h) = line.strip_prefix("@SQ\tSN:") {
                    let (name, rest) = h.split_once('\t').unwrap();
                    lengths.insert(name.to_string(), rest.strip_prefix("LN:").unwrap().parse::<u64>().unwrap());
                    continue;
                }
                if line.starts_with('@') {
                    continue;
                }
                let f: Vec<&str> = line.split('\t').collect();
                if f[5] == "*" {
                    continue;
                }
                let (q, r, _) = cigar_lens(f[5]);
                if f[9] != "*" {
                    assert_eq!(q, f[9].len() as u64, "seed {seed}: {line}");
                }
                let pos: u64 = f[3].parse().unwrap();
                assert!(pos + r - 1 <= lengths[f[2]], "seed {seed}: past the reference's end: {line}");
            }
        }
    }

    #[test]
    fn same_seed_same_bytes() {
        assert_eq!(sam(11, false, 3_000), sam(11, false, 3_000));
        assert_eq!(sam(11, true, 3_000), sam(11, true, 3_000));
        assert_ne!(sam(11, false, 3_000), sam(12, false, 3_000));
    }

    #[test]
    fn records_are_consistent_and_sorted() {
        let text = String::from_utf8(sam(5, false, 4_000)).unwrap();
        let mut tids = HashMap::new();
        let mut empty = Vec::new();
        let mut last_key = (0u64, 0u64, false);
        let mut primaries: HashMap<(String, u32), Vec<String>> = HashMap::new();
        let mut long_cigars = 0;
        let mut beyond_2_29 = 0;
        for line in text.lines() {
            if let Some(h) = line.strip_prefix("@SQ\tSN:") {
                let name = h.split('\t').next().unwrap().to_string();
                tids.insert(name.clone(), tids.len() as u64);
                if name == "chr3" || name.starts_with("chrUn") {
                    empty.push(name);
                }
                continue;
            }
            if line.starts_with('@') {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            assert!(f.len() >= 11, "{line}");
            let flag: u32 = f[1].parse().unwrap();
            let pos: u64 = f[3].parse().unwrap();
            // Exact samtools coordinate order: (tid unsigned, POS, reverse).
            let tid = if f[2] == "*" { u64::MAX } else { tids[f[2]] };
            let key = (tid, pos, flag & 16 != 0);
            assert!(key >= last_key, "order violated at {line}");
            last_key = key;
            assert!(
                !empty.iter().any(|e| e == f[2] || e == f[6]),
                "record on an empty ref: {line}"
            );
            if flag & 4 != 0 {
                assert_eq!(f[5], "*");
            } else {
                let (q, _r, ops) = cigar_lens(f[5]);
                if f[9] != "*" {
                    assert_eq!(q, f[9].len() as u64, "CIGAR/SEQ length mismatch: {line}");
                }
                if ops > 65_535 {
                    long_cigars += 1;
                }
                if pos > 1 << 29 {
                    beyond_2_29 += 1;
                }
            }
            if f[10] != "*" {
                assert_eq!(f[9].len(), f[10].len());
            }
            if flag & 0x900 == 0 && flag & 1 != 0 {
                primaries
                    .entry((f[0].to_string(), flag & 0xC0))
                    .or_default()
                    .push(line.to_string());
            }
        }
        assert!(long_cigars > 0);
        assert!(beyond_2_29 > 0);
        // Mate fields point at the mate's primary record; TLENs cancel.
        for ((name, which), recs) in &primaries {
            assert_eq!(recs.len(), 1, "one primary per read: {name}");
            let other = if *which == 0x40 { 0x80 } else { 0x40 };
            let mate = &primaries[&(name.clone(), other)][0];
            let a: Vec<&str> = recs[0].split('\t').collect();
            let m: Vec<&str> = mate.split('\t').collect();
            let rnext = if a[6] == "=" { a[2] } else { a[6] };
            assert_eq!(rnext, m[2], "{}", recs[0]);
            assert_eq!(a[7], m[3], "{}", recs[0]);
            let (ta, tm): (i64, i64) = (a[8].parse().unwrap(), m[8].parse().unwrap());
            assert_eq!(ta, -tm, "{}", recs[0]);
        }
    }
}
