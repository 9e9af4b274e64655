//! A VCF of "known polymorphic sites" for a generated genome, as FACETS
//! snp-pileup and similar tools take: every heterozygous SNP of the sample
//! (so pileups there show both alleles) plus random positions with a random
//! ALT (most dbSNP sites are not variant in a given individual), and a few
//! records such tools skip (multi-allelic, indels).

use std::io::{self, Write};

use crate::aln::ErrorModel;
use crate::gen::{sample_snp_seed, Config};
use crate::genome::{Genome, BASES};
use crate::rng::{Prob, Rng};

/// Writes about `n_sites` records for the materialised references of
/// `genome` (not the lazy chrLong), in header order then position order.
pub fn write_vcf<W: Write>(genome: &Genome, cfg: &Config, n_sites: u64, mut out: W) -> io::Result<()> {
    let em = ErrorModel { mismatch: Prob::new(0.0), n_base: Prob::new(0.0), snp_seed: sample_snp_seed(cfg.genome_seed) };
    let total: u64 = genome.refs.iter().filter(|r| r.bases.is_some()).map(|r| u64::from(r.len)).sum();
    // The sample's SNPs are 1 in 1000 positions; the rest are random.
    let random = n_sites.saturating_sub(total / 1000);
    let p_random = Prob::new((random as f64 / total.max(1) as f64).min(1.0));
    let mut rng = Rng::derive(cfg.genome_seed, 0x51_7E5);
    writeln!(out, "##fileformat=VCFv4.2")?;
    writeln!(out, "##source=fasthts-testgen --genome-seed {} --sites {n_sites}", cfg.genome_seed)?;
    for r in genome.refs.iter().filter(|r| r.bases.is_some()) {
        writeln!(out, "##contig=<ID={},length={}>", r.name, r.len)?;
    }
    writeln!(out, "##INFO=<ID=HET,Number=0,Type=Flag,Description=\"A heterozygous SNP of the generated sample\">")?;
    writeln!(out, "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO")?;
    let mut id = 0u64;
    for (tid, r) in genome.refs.iter().enumerate() {
        let Some(bases) = &r.bases else { continue };
        for (pos, &rb) in bases.iter().enumerate() {
            let alt = em.snp_alt(tid as u32, pos as u32, rb);
            let het = alt.is_some();
            if !het && !rng.hit(p_random) {
                continue;
            }
            id += 1;
            let alt = alt.unwrap_or_else(|| {
                let i = BASES.iter().position(|&b| b == rb).unwrap_or(0);
                BASES[(i + 1 + rng.below(3) as usize) % 4]
            });
            let (chrom, p1, rb, ab) = (&r.name, pos + 1, rb as char, alt as char);
            let info = if het { "HET" } else { "." };
            match rng.below(400) {
                // Records snp-pileup skips: multi-allelic, deletion, insertion.
                0 => {
                    let other = BASES.iter().copied().find(|&b| b != rb as u8 && b != ab as u8).unwrap_or(b'N') as char;
                    writeln!(out, "{chrom}\t{p1}\trs{id}\t{rb}\t{ab},{other}\t.\tPASS\t{info}")?
                }
                1 if pos + 1 < bases.len() => writeln!(out, "{chrom}\t{p1}\trs{id}\t{rb}{}\t{rb}\t.\tPASS\t.", bases[pos + 1] as char)?,
                2 => writeln!(out, "{chrom}\t{p1}\trs{id}\t{rb}\t{rb}{ab}\t.\tPASS\t.")?,
                _ => writeln!(out, "{chrom}\t{p1}\trs{id}\t{rb}\t{ab}\t.\tPASS\t{info}")?,
            }
        }
    }
    out.flush()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The generator's default options (the CLI's), for tests.
    pub(crate) fn config(seed: u64, genome_seed: u64) -> Config {
        Config {
            seed,
            read_len: (100, 150),
            long_cigar_fraction: 0.0,
            huge_record_fraction: 0.0,
            unsorted: false,
            no_mapped: false,
            unmapped_fraction: 0.01,
            dup_fraction: 0.03,
            qcfail_fraction: 0.01,
            chimeric_fraction: 0.02,
            interchrom_fraction: 0.01,
            singleton_fraction: 0.02,
            single_end_fraction: 0.01,
            tag_fraction: 0.03,
            mismatch_rate: 0.003,
            genome_seed,
            command_line: "test".into(),
        }
    }

    #[test]
    fn sites_are_sorted_match_the_genome_and_include_the_samples_snps() {
        let genome = Genome::build(7, 3, 100_000, None);
        let mut out = Vec::new();
        write_vcf(&genome, &config(1, 7), 2_000, &mut out).unwrap();
        // A second sample of the same genome gets the same sites.
        let mut again = Vec::new();
        write_vcf(&genome, &config(2, 7), 2_000, &mut again).unwrap();
        assert_eq!(out, again);
        let text = String::from_utf8(out).unwrap();
        let mut last: Option<(usize, u64)> = None;
        let (mut n, mut het) = (0, 0);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split('\t').collect();
            let tid = genome.refs.iter().position(|r| r.name == f[0]).unwrap();
            let pos: u64 = f[1].parse().unwrap();
            let bases = genome.refs[tid].bases.as_ref().unwrap();
            assert_eq!(f[3].as_bytes()[0], bases[pos as usize - 1], "{line}");
            assert!(last < Some((tid, pos)), "not sorted at {line}");
            last = Some((tid, pos));
            n += 1;
            het += usize::from(f[7] == "HET");
        }
        assert!((1_500..2_600).contains(&n), "{n} records");
        assert!(het > 100, "{het} heterozygous SNPs");
    }
}
