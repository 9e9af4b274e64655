//! Depth and allele counts at arbitrary positions: a second user of the
//! pileup engine, giving what `samtools mpileup` shows at those positions
//! with the same read filters, overlap handling and base-quality threshold.
//!
//! ```
//! use fasthts::bam::BamFile;
//! use fasthts::index::Index;
//! use fasthts::pileup::counts::counts_at;
//! use fasthts::pileup::{PileupOptions, ReadFilter};
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam");
//! let bam = BamFile::open(path)?;
//! let index = Index::from_path(format!("{path}.bai"))?;
//! // samtools mpileup's defaults, without its BAQ (-B) and depth cap (-d 0).
//! let opts = PileupOptions {
//!     max_depth: i32::MAX,
//!     overlaps: true,
//!     filter: ReadFilter { skip_mapq_zero: false, ..ReadFilter::default() },
//! };
//! let counts = counts_at(&[bam], &[index], &[(0, 1000), (0, 5000)], &opts, 13)?;
//! assert_eq!(counts.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{Pileup, PileupError, PileupOptions, RegionRecords};
use crate::bam::BamFile;
use crate::index::Index;
use rayon::prelude::*;

/// What one file shows at one position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AlleleCounts {
    /// Reads counted (quality at least the threshold): bases, deletions
    /// and ref-skips.
    pub depth: u32,
    /// Bases A, C, G, T and anything else (N and IUPAC codes), uppercase.
    pub bases: [u32; 5],
    /// Reads in a deletion here.
    pub deletions: u32,
    /// Reads in a ref-skip (CIGAR N) here.
    pub ref_skips: u32,
}

/// Counts at each of `positions` (reference id, 0-based position; any
/// order, repeats allowed), one [`AlleleCounts`] per file, in the order
/// given. A read counts when it passes `opts` and its base quality (for a
/// deletion or ref-skip: that of the next base, as htslib) is at least
/// `min_base_quality`. Each reference is read from its start, so the
/// depth cap and overlap adjustment are those of a whole-file pileup.
/// References are worked on in parallel on the current rayon pool.
pub fn counts_at(
    bams: &[BamFile],
    indexes: &[Index],
    positions: &[(usize, i64)],
    opts: &PileupOptions,
    min_base_quality: u8,
) -> Result<Vec<Vec<AlleleCounts>>, PileupError> {
    if indexes.len() != bams.len() {
        return Err(PileupError::Message("counts_at needs an index for each BAM".into()));
    }
    let n_refs = bams.first().map_or(0, |b| b.header().references.len());
    if let Some(&(tid, _)) = positions.iter().find(|p| p.0 >= n_refs) {
        return Err(PileupError::Message(format!("reference id {tid} is not in the header")));
    }
    let mut order: Vec<usize> = (0..positions.len()).collect();
    order.sort_by_key(|&i| positions[i]);
    // One group of sorted position indices per reference.
    let mut groups: Vec<&[usize]> = Vec::new();
    let mut rest = &order[..];
    while let Some(&first) = rest.first() {
        let tid = positions[first].0;
        let k = rest.partition_point(|&i| positions[i].0 == tid);
        groups.push(&rest[..k]);
        rest = &rest[k..];
    }
    let per_group: Vec<Vec<Vec<AlleleCounts>>> = groups
        .par_iter()
        .map(|g| {
            let tid = positions[g[0]].0;
            let last = positions[g[g.len() - 1]].1;
            let sources: Vec<RegionRecords<'_>> = bams
                .iter()
                .zip(indexes)
                .map(|(b, ix)| {
                    let mut r = RegionRecords::new(b, ix, tid, 0, i64::MAX);
                    r.expect_end(last + 1);
                    r
                })
                .collect();
            let mut pileup = Pileup::new(sources, opts);
            let mut out = Vec::with_capacity(g.len());
            let mut prev: Option<(i64, Vec<AlleleCounts>)> = None;
            for &i in g.iter() {
                let pos = positions[i].1;
                if let Some((p, c)) = &prev {
                    if *p == pos {
                        out.push(c.clone());
                        continue;
                    }
                }
                let mut counts = vec![AlleleCounts::default(); bams.len()];
                if pos >= 0 && pileup.goto(tid as i32, pos)? {
                    for (f, c) in counts.iter_mut().enumerate() {
                        for r in pileup.reads(f) {
                            if r.qual() < min_base_quality {
                                continue;
                            }
                            c.depth += 1;
                            if r.is_refskip() {
                                c.ref_skips += 1;
                            } else if r.is_del() {
                                c.deletions += 1;
                            } else {
                                let k = match r.base() {
                                    b'A' => 0,
                                    b'C' => 1,
                                    b'G' => 2,
                                    b'T' => 3,
                                    _ => 4,
                                };
                                c.bases[k] += 1;
                            }
                        }
                    }
                }
                prev = Some((pos, counts.clone()));
                out.push(counts);
            }
            Ok(out)
        })
        .collect::<Result<_, PileupError>>()?;
    let mut result = vec![Vec::new(); positions.len()];
    for (g, counts) in groups.iter().zip(per_group) {
        for (&i, c) in g.iter().zip(counts) {
            result[i] = c;
        }
    }
    Ok(result)
}
