//! A, C, G and T counts per reference position, as pysam's
//! `AlignmentFile.count_coverage` counts them: every aligned base (CIGAR
//! M, = and X; not insertions, soft clips or deletions) of each record
//! given, inside `[start, stop)`, whose base quality reaches the threshold
//! (with a threshold of 0, every base; otherwise a record without
//! qualities counts nothing). Records without a sequence count nothing.
//! No pileup: no depth cap, no overlap adjustment.

use crate::bam::{flags, RecordRef};
use std::ffi::c_ulong;

/// pysam's `read_callback="all"`: records with any of these flags are skipped.
pub const ALL_EXCLUDES: u16 = flags::UNMAPPED | flags::SECONDARY | flags::QC_FAIL | flags::DUPLICATE;

/// The counts of an interval, one `c_ulong` per position and base (the
/// element type of pysam's `array.array('L')`).
#[derive(Clone, Debug)]
pub struct BaseCounts {
    start: i64,
    stop: i64,
    threshold: i64,
    /// A, C, G, T.
    pub counts: [Vec<c_ulong>; 4],
}

impl BaseCounts {
    /// Zero counts for `[start, stop)`; bases of quality below `threshold`
    /// are not counted (0: no quality test).
    pub fn new(start: i64, stop: i64, threshold: i64) -> Self {
        let n = usize::try_from(stop - start).unwrap_or(0);
        BaseCounts { start, stop, threshold, counts: std::array::from_fn(|_| vec![0; n]) }
    }

    /// Counts the bases of `r`.
    pub fn add(&mut self, r: &RecordRef<'_>) {
        let len = r.seq_len();
        if len == 0 {
            return;
        }
        let qual = r.qual();
        // pysam reads the qualities as `query_qualities`: None when absent.
        let has_qual = qual.first().is_some_and(|&q| q != 0xff);
        if self.threshold != 0 && !has_qual {
            return;
        }
        let seq = r.seq_raw();
        let mut rpos = i64::from(r.pos());
        let mut qpos = 0usize;
        for (op, n) in r.cigar().iter() {
            let n = n as usize;
            match op.code() {
                // M, =, X: aligned bases.
                0 | 7 | 8 => {
                    let lo = (self.start - rpos).clamp(0, n as i64) as usize;
                    let hi = (self.stop - rpos).clamp(0, n as i64) as usize;
                    for i in lo..hi {
                        let q = qpos + i;
                        if q >= len {
                            break;
                        }
                        if self.threshold != 0 && i64::from(qual[q]) < self.threshold {
                            continue;
                        }
                        let code = if q % 2 == 0 { seq[q / 2] >> 4 } else { seq[q / 2] & 0xf };
                        let which = match code {
                            1 => 0,
                            2 => 1,
                            4 => 2,
                            8 => 3,
                            _ => continue,
                        };
                        self.counts[which][(rpos + i as i64 - self.start) as usize] += 1;
                    }
                    rpos += n as i64;
                    qpos += n;
                }
                // I, S: query only.
                1 | 4 => qpos += n,
                // D, N: reference only.
                2 | 3 => rpos += n as i64,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record at `pos` with `cigar` (`(op, len)`), 4-bit `bases`, `qual`.
    fn record(pos: i32, cigar: &[(u32, u32)], bases: &[u8], qual: &[u8]) -> Vec<u8> {
        let name = b"r\0";
        let mut d = Vec::new();
        d.extend_from_slice(&0i32.to_le_bytes());
        d.extend_from_slice(&pos.to_le_bytes());
        d.push(name.len() as u8);
        d.push(60);
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&(cigar.len() as u16).to_le_bytes());
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&(bases.len() as i32).to_le_bytes());
        d.extend_from_slice(&(-1i32).to_le_bytes());
        d.extend_from_slice(&(-1i32).to_le_bytes());
        d.extend_from_slice(&0i32.to_le_bytes());
        d.extend_from_slice(name);
        for &(op, len) in cigar {
            d.extend_from_slice(&(len << 4 | op).to_le_bytes());
        }
        for pair in bases.chunks(2) {
            d.push(pair[0] << 4 | pair.get(1).copied().unwrap_or(0));
        }
        d.extend_from_slice(qual);
        d
    }

    #[test]
    fn counts_aligned_bases_in_the_interval_above_the_threshold() {
        // 2S3M1I1D2M: A C | G T A | C | (del) | G T
        let d = record(10, &[(4, 2), (0, 3), (1, 1), (2, 1), (0, 2)], &[1, 2, 4, 8, 1, 2, 4, 8], &[30, 30, 30, 5, 30, 30, 30, 30]);
        let r = RecordRef::new(&d, 1).unwrap();
        let mut c = BaseCounts::new(10, 16, 15);
        c.add(&r);
        // G at 10, T at 11 (quality 5: not counted), A at 12, G at 14, T at 15.
        assert_eq!(c.counts[2], [1, 0, 0, 0, 1, 0]);
        assert_eq!(c.counts[3], [0, 0, 0, 0, 0, 1]);
        assert_eq!(c.counts[0], [0, 0, 1, 0, 0, 0]);
        let mut all = BaseCounts::new(11, 13, 0);
        all.add(&r);
        assert_eq!(all.counts[3], [1, 0]);
        // Without qualities: nothing above a threshold, everything without one.
        let d = record(10, &[(0, 2)], &[1, 1], &[0xff, 0xff]);
        let r = RecordRef::new(&d, 1).unwrap();
        let mut c = BaseCounts::new(10, 12, 15);
        c.add(&r);
        assert_eq!(c.counts[0], [0, 0]);
        let mut c = BaseCounts::new(10, 12, 0);
        c.add(&r);
        assert_eq!(c.counts[0], [1, 1]);
    }
}
