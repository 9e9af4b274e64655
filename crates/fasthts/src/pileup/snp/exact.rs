//! `--exact-sites`: what a user wants where FACETS' walk loses data.
//!
//! The counts come from the same per-region machinery as the default mode
//! ([`Ctx::run_region_widening`], same read filters, depth cap, overlap
//! handling and R/A/E/D rules), but nothing is replayed of FACETS' merge
//! of VCF and pileup:
//!
//! - contigs are matched per name ([`map_contig_exact`]);
//! - every used record (biallelic, single-base REF and ALT) on a known
//!   contig is looked up at its own position; of several records at one
//!   position the first (in file order) is reported, once;
//! - rows are written in the order of the VCF's records, whatever the BAM
//!   header's contig order;
//! - pseudo-SNPs (`-P N`) are the covered positions with `(pos + 1) % N == 0`
//!   that are not a site, from a contig's start up to its last site; each
//!   is written once, just before the first record row (in VCF order) of its
//!   contig that lies after it.
//!
//! The used records and their counts are held in memory (a few tens of
//! bytes per record plus 20 per site and file), unlike the default mode's
//! streaming walk.

use super::{Counts, Ctx, Job, PileupError, Rows, SiteAt, SnpInputs, SnpPileupOptions, SnpPileupStats, VcfReader, VcfSource};
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::Write;


/// Exact-sites contig matching: the BAM contig with the VCF's name, else
/// (when there is none) the one with the name with its leading `chr`
/// removed, or with `chr` added when it has none. Case-sensitive. -1 when
/// nothing matches.
pub fn map_contig_exact(vcf_name: &str, bam_names: &[&str]) -> i32 {
    let find = |n: &str| bam_names.iter().position(|b| *b == n).map(|i| i as i32);
    if let Some(i) = find(vcf_name) {
        return i;
    }
    let other = match vcf_name.strip_prefix("chr") {
        Some(rest) => rest.to_string(),
        None => format!("chr{vcf_name}"),
    };
    find(&other).unwrap_or(-1)
}

/// A used record: reference id (-1: no BAM contig), 0-based position, REF
/// and ALT characters, and whether it is the first record at its position.
struct UsedRecord {
    tid: i32,
    pos: i64,
    ref_base: u8,
    alt_base: u8,
    first_at_pos: bool,
}

/// What the regions of one reference found.
#[derive(Default)]
struct ContigCounts {
    /// Covered sites (sorted) and n_files counts for each.
    site_pos: Vec<i64>,
    site_counts: Vec<Counts>,
    /// Covered pseudo-SNP candidates (sorted) and n_files (depth, passing
    /// reads) for each.
    pseudo: Vec<i64>,
    pseudo_counts: Vec<(u32, u32)>,
}

impl ContigCounts {
    fn add(&mut self, job: &Job, r: super::RegionResult, n: usize) {
        self.site_pos.extend_from_slice(&r.site_pos);
        self.site_counts.extend_from_slice(&r.site_counts);
        // The lookahead column beyond the region belongs to the next one.
        for (k, &p) in r.pseudo.iter().enumerate() {
            if p >= job.start && p < job.end {
                self.pseudo.push(p);
                self.pseudo_counts.extend_from_slice(&r.pseudo_counts[k * n..(k + 1) * n]);
            }
        }
    }
}

/// Runs snp-pileup in exact-sites mode (see the module docs), writing the
/// CSV (header included) to `out`. Work runs on the current rayon pool.
pub(super) fn run(inputs: &SnpInputs, opts: &SnpPileupOptions, out: &mut dyn Write) -> Result<SnpPileupStats, PileupError> {
    inputs.check()?;
    let SnpInputs { vcf, inputs, .. } = inputs;
    let n = inputs.len();
    let names: Vec<&str> = inputs[0].header().references.iter().map(|r| r.name.as_str()).collect();
    let records = read_records(vcf, &names)?;

    // Per reference: its sites, sorted, the first record at each position.
    let mut sites: Vec<Vec<SiteAt>> = vec![Vec::new(); names.len()];
    for r in records.iter().filter(|r| r.tid >= 0 && r.first_at_pos) {
        sites[r.tid as usize].push((r.pos, r.ref_base, r.alt_base));
    }
    for s in &mut sites {
        s.sort_unstable_by_key(|x| x.0);
    }

    // Regions: tiles of `region_size` up to each reference's last site,
    // those holding sites (all of them with pseudo-SNPs).
    let size = opts.region_size.max(1);
    let mut jobs: Vec<(Job, Vec<SiteAt>)> = Vec::new();
    for (tid, s) in sites.iter().enumerate() {
        let Some(last) = s.last().map(|x| x.0 + 1) else { continue };
        let mut start = 0;
        while start < last {
            let end = (start + size).min(last);
            let a = s.partition_point(|x| x.0 < start);
            let b = s.partition_point(|x| x.0 < end);
            if opts.pseudo_snps > 0 || a < b {
                jobs.push((Job { tid, start, end }, s[a..b].to_vec()));
            }
            start = end;
        }
    }
    let ctx = Ctx { inputs, opts, popts: opts.pileup_options() };
    let results: Vec<_> = jobs.par_iter().map(|(job, s)| ctx.run_region_widening(job, s)).collect();
    let mut stats = SnpPileupStats { regions: jobs.len(), ..SnpPileupStats::default() };
    let mut counts: Vec<ContigCounts> = (0..names.len()).map(|_| ContigCounts::default()).collect();
    let mut redo = vec![false; names.len()];
    for ((job, _), r) in jobs.iter().zip(results) {
        let r = r?;
        if !r.exact {
            redo[job.tid] = true;
        } else if !redo[job.tid] {
            counts[job.tid].add(job, r, n);
        }
    }
    // A cut that may have changed the pileup state (the depth cap acted
    // before it): the reference is run as one region from its start, where
    // the state is exact.
    let redone: Vec<usize> = (0..names.len()).filter(|&t| redo[t]).collect();
    let whole: Vec<_> = redone
        .par_iter()
        .map(|&tid| {
            let job = Job { tid, start: 0, end: sites[tid].last().map_or(0, |x| x.0 + 1) };
            ctx.run_region(&job, &sites[tid], 0).map(|r| (job, r))
        })
        .collect();
    for (&tid, r) in redone.iter().zip(whole) {
        let (job, r) = r?;
        counts[tid] = ContigCounts::default();
        counts[tid].add(&job, r, n);
        stats.regions += 1;
        stats.references_redone += 1;
    }

    let mut rows = Rows { names: &names, opts, out, rows: 0, line: String::new() };
    rows.out.write_all(super::header(n).as_bytes()).map_err(super::io_err)?;
    // Per reference: pseudo-SNP candidates before this index are written.
    let mut pseudo_done = vec![0usize; names.len()];
    for r in records.iter().filter(|r| r.tid >= 0 && r.first_at_pos) {
        let tid = r.tid as usize;
        let c = &counts[tid];
        if opts.pseudo_snps > 0 {
            let until = c.pseudo.partition_point(|&p| p < r.pos);
            for k in pseudo_done[tid]..until {
                let p = c.pseudo[k];
                if sites[tid].binary_search_by_key(&p, |x| x.0).is_err() {
                    rows.pseudo(tid, p, c.pseudo_counts[k * n..(k + 1) * n].iter())?;
                }
            }
            pseudo_done[tid] = pseudo_done[tid].max(until);
        }
        if let Ok(k) = c.site_pos.binary_search(&r.pos) {
            rows.site(tid, r.pos, r.ref_base, r.alt_base, c.site_counts[k * n..(k + 1) * n].iter())?;
        }
    }
    stats.rows = rows.rows;
    Ok(stats)
}

/// The VCF's used records in file order, contigs matched per name.
fn read_records(vcf: &VcfSource, names: &[&str]) -> Result<Vec<UsedRecord>, PileupError> {
    let mut reader = VcfReader::open(vcf)?;
    let mut out = Vec::new();
    let mut tids: HashMap<Vec<u8>, i32> = HashMap::new();
    let mut last: Option<(Vec<u8>, i32)> = None;
    while let Some(r) = reader.next_record()? {
        let Some((ref_base, alt_base)) = r.alleles else { continue };
        let tid = match &last {
            Some((name, tid)) if name.as_slice() == r.chrom => *tid,
            _ => {
                let tid = *tids.entry(r.chrom.to_vec()).or_insert_with(|| map_contig_exact(&String::from_utf8_lossy(r.chrom), names));
                last = Some((r.chrom.to_vec(), tid));
                tid
            }
        };
        out.push(UsedRecord { tid, pos: r.pos, ref_base, alt_base, first_at_pos: true });
    }
    // The first record at each (reference, position) is the one reported.
    let mut order: Vec<usize> = (0..out.len()).filter(|&i| out[i].tid >= 0).collect();
    order.sort_by_key(|&i| (out[i].tid, out[i].pos, i));
    for w in 1..order.len() {
        let (a, b) = (order[w - 1], order[w]);
        if out[a].tid == out[b].tid && out[a].pos == out[b].pos {
            out[b].first_at_pos = false;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contigs_match_per_name_then_with_chr_added_or_removed() {
        let chr = ["chrI", "chrX", "MtDNA"];
        assert_eq!(map_contig_exact("MtDNA", &chr), 2);
        assert_eq!(map_contig_exact("X", &chr), 1);
        assert_eq!(map_contig_exact("chrX", &chr), 1);
        assert_eq!(map_contig_exact("chrMtDNA", &chr), 2);
        assert_eq!(map_contig_exact("NA", &chr), -1);
        assert_eq!(map_contig_exact("x", &chr), -1);
        let plain = ["I", "X", "chrX"];
        // The exact name wins over the prefixed/unprefixed one.
        assert_eq!(map_contig_exact("chrX", &plain), 2);
        assert_eq!(map_contig_exact("X", &plain), 1);
        assert_eq!(map_contig_exact("chrI", &plain), 0);
        assert_eq!(map_contig_exact("V", &plain), -1);
    }
}
