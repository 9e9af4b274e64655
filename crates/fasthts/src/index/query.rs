//! Region queries and the offsets the scatter layer needs.
//!
//! [`Index::query`] follows htslib's `hts_itr_query` step by step on an index
//! as htslib loads it from disk, so a reader that scans the returned chunks
//! and keeps the records htslib's iterator keeps sees exactly what
//! `samtools view IN REGION` prints.

use crate::bam::binning::{bin_bottom, bin_first, bin_parent};
use super::{Bin, Chunk, Index, IndexFormat, ReferenceIndex};
use crate::bgzf::VirtualOffset;

impl Index {
    /// The chunks a reader must scan to find every record of reference `tid`
    /// overlapping the zero-based, half-open interval `[beg, end)`, sorted
    /// and merged as htslib's `hts_itr_query` leaves them (chunks from the
    /// overlapping bins, cut to the linear index / CSI minimum offset on the
    /// left and to the first bin right of `end` on the right).
    ///
    /// To reproduce htslib's iterator, read the chunks in order (seeking to a
    /// chunk's start unless it begins where the previous one ended) and, for
    /// each record read before the chunk's end: stop everything at the first
    /// record whose reference is not `tid` or whose start is `>= end`;
    /// otherwise keep it when `record_end > beg && end > record_start`, with
    /// `record_end` = `bam_endpos` (start + 1 when unmapped or without
    /// reference-consuming CIGAR operations). A whole-reference query is
    /// `query(tid, 0, i64::MAX)`. Empty when `end < beg`, when the index
    /// does not cover `tid`, or when nothing can overlap.
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 100));
    /// b.push(0, 10, 60, vo(0, 200), true)?;
    /// b.push(0, 100_000, 100_050, vo(70_000, 0), true)?; // far away, next block
    /// let index = b.finish(vo(140_000, 0))?;
    /// assert_eq!(index.query(0, 0, 100).len(), 1);
    /// assert_eq!(index.query(0, 0, 100)[0].start, vo(0, 100));
    /// assert_eq!(index.query(0, 100_000, 100_001)[0].start, vo(0, 200));
    /// assert!(index.query(0, 50_000, 60_000).is_empty());
    /// assert!(index.query(3, 0, 100).is_empty());
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn query(&self, tid: usize, beg: i64, end: i64) -> Vec<Chunk> {
        let beg = beg.max(0);
        let Some(r) = self.reference(tid) else {
            return Vec::new();
        };
        if end < beg || r.n_bins_on_disk() == 0 || beg >= self.format.max_position() {
            return Vec::new();
        }
        let (min_shift, depth) =
            crate::bam::binning::clamp(self.format.min_shift(), self.format.depth());
        // htslib keeps this count in a 32-bit variable.
        let unmapped = r.metadata().map_or(true, |m| m.n_unmapped as u32 != 0);
        let rel_off = (beg >> min_shift) as u64;

        // Smallest offset worth reading: the minimum offset of the bin of
        // `beg`'s window, or of the nearest bin to its left or above.
        let found = bin_at_or_before(r, (u64::from(bin_first(depth)) + rel_off) as u32);
        let mut min_off = found.map_or(0, |b| u64::from(b.loffset));
        let lin = r.effective_linear();
        if let Some(&l) = usize::try_from(rel_off).ok().and_then(|i| lin.get(i)) {
            if min_off < l {
                min_off = l;
            }
            if unmapped {
                // htslib: unmapped reads may be missing from the linear
                // index, so look back for a smaller offset.
                let mut went_past_start = true;
                for &v in lin[..rel_off as usize].iter().rev() {
                    if v < min_off {
                        min_off = v;
                        went_past_start = false;
                        break;
                    }
                }
                if let Some(b) = found {
                    if min_off < u64::from(b.loffset) || went_past_start {
                        min_off = u64::from(b.loffset);
                    }
                }
            }
        } else if unmapped {
            if let Some(b) = found {
                min_off = u64::from(b.loffset);
            }
        }

        let max_off = max_offset(r, self.format, end);

        let mut off: Vec<(u64, u64, u64)> = Vec::new();
        for bin in overlapping_bins(r, beg, end, min_shift, depth) {
            for (j, c) in bin.chunks.iter().enumerate() {
                let (u, v) = (u64::from(c.start), u64::from(c.end));
                if v > min_off && u < max_off {
                    off.push((
                        u.max(min_off),
                        v.min(max_off),
                        ((tid as u64) << 32) | j as u64,
                    ));
                }
            }
        }
        if off.is_empty() {
            return Vec::new();
        }
        off.sort_by_key(|&(u, _, max)| (u, max));
        // Drop chunks contained in the previous one.
        let mut l = 0;
        for i in 1..off.len() {
            if off[l].1 < off[i].1 {
                l += 1;
                off[l] = off[i];
            }
        }
        off.truncate(l + 1);
        // Cut overlaps between neighbours.
        for i in 1..off.len() {
            if off[i - 1].1 >= off[i].0 {
                off[i - 1].1 = off[i].0;
            }
        }
        // Join neighbours that meet in the same BGZF block.
        let mut l = 0;
        for i in 1..off.len() {
            if off[l].1 >> 16 == off[i].0 >> 16 {
                off[l].1 = off[i].1;
            } else {
                l += 1;
                off[l] = off[i];
            }
        }
        off.truncate(l + 1);
        off.into_iter()
            .map(|(u, v, _)| Chunk::new(u.into(), v.into()))
            .collect()
    }

    /// A virtual offset before which no record of reference `tid` starting
    /// at or after zero-based position `pos` lies: the BAI linear index entry
    /// of `pos`'s window (the reference's end when `pos` is past every
    /// record), or for CSI the minimum offset of the nearest bin at or left
    /// of `pos`; never before the reference's first record. `None` when the
    /// index does not cover `tid` or the reference has no records.
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 2, vo(0, 100));
    /// b.push(0, 10, 60, vo(0, 200), true)?;
    /// b.push(0, 40_000, 40_050, vo(0, 300), true)?;
    /// let index = b.finish(vo(900, 0))?;
    /// assert_eq!(index.start_offset(0, 0), Some(vo(0, 100)));
    /// assert_eq!(index.start_offset(0, 20_000), Some(vo(0, 200)));
    /// assert_eq!(index.start_offset(0, 1_000_000), Some(vo(900, 0)));
    /// assert_eq!(index.start_offset(1, 0), None);
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn start_offset(&self, tid: usize, pos: i64) -> Option<VirtualOffset> {
        let r = self.reference(tid)?;
        if r.bins().is_empty() && r.metadata().is_none() {
            return None;
        }
        let pos = pos.max(0);
        let floor = r.metadata().map_or(0, |m| u64::from(m.ref_beg));
        let (min_shift, depth) =
            crate::bam::binning::clamp(self.format.min_shift(), self.format.depth());
        let v = match self.format {
            IndexFormat::Bai => {
                let w = usize::try_from(pos >> min_shift).unwrap_or(usize::MAX);
                match r.effective_linear().get(w) {
                    Some(&v) => v,
                    None => match r.metadata() {
                        Some(m) => u64::from(m.ref_end),
                        None => r.effective_linear().last().copied().unwrap_or(0),
                    },
                }
            }
            IndexFormat::Csi { .. } => {
                if pos >= self.format.max_position() {
                    r.metadata().map_or(0, |m| u64::from(m.ref_end))
                } else {
                    let start = u64::from(bin_first(depth)) + (pos >> min_shift) as u64;
                    bin_at_or_before(r, start as u32).map_or(0, |b| u64::from(b.loffset))
                }
            }
        };
        Some(VirtualOffset::from(v.max(floor)))
    }

    /// Where records without a coordinate begin: the end of the placed
    /// reference that ends last in the file (htslib's `HTS_IDX_NOCOOR`
    /// offset). `None` when no reference has records; then any unplaced
    /// records start right after the header.
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 2, vo(0, 100));
    /// b.push(0, 10, 60, vo(0, 200), true)?;
    /// b.push(-1, -1, 0, vo(0, 300), false)?;
    /// let index = b.finish(vo(900, 0))?;
    /// assert_eq!(index.unplaced_start(), Some(vo(0, 200)));
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn unplaced_start(&self) -> Option<VirtualOffset> {
        self.references
            .iter()
            .filter_map(|r| r.metadata().map(|m| m.ref_end))
            .max()
    }

    /// The range of virtual offsets holding reference `tid`'s records
    /// (`[ref_beg, ref_end)` from its metadata pseudo-bin), for balancing
    /// work by compressed bytes: `end.compressed() - start.compressed()`.
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 100));
    /// b.push(0, 10, 60, vo(0, 200), true)?;
    /// let span = b.finish(vo(900, 0))?.reference_span(0).unwrap();
    /// assert_eq!(span.end.compressed() - span.start.compressed(), 900);
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn reference_span(&self, tid: usize) -> Option<Chunk> {
        self.reference(tid)
            .and_then(|r| r.metadata())
            .map(|m| Chunk::new(m.ref_beg, m.ref_end))
    }

    /// Checkpoints for splitting reference `tid` by position: pairs
    /// `(pos, offset)`, sorted by position with non-decreasing offsets,
    /// each promising that every record of the reference starting at or
    /// after `pos` lies at or after `offset`. From the BAI linear index (one
    /// per 16 kb window where the offset changes) or the CSI bins' minimum
    /// offsets. Empty when the reference has no records.
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 100));
    /// b.push(0, 10, 60, vo(0, 200), true)?;
    /// b.push(0, 40_000, 40_050, vo(0, 300), true)?;
    /// let index = b.finish(vo(900, 0))?;
    /// assert_eq!(index.checkpoints(0), vec![(0, vo(0, 100)), (16384, vo(0, 200))]);
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn checkpoints(&self, tid: usize) -> Vec<(i64, VirtualOffset)> {
        let Some(r) = self.reference(tid) else {
            return Vec::new();
        };
        let floor = r.metadata().map_or(0, |m| u64::from(m.ref_beg));
        let (min_shift, depth) =
            crate::bam::binning::clamp(self.format.min_shift(), self.format.depth());
        let mut points: Vec<(i64, u64)> = match self.format {
            IndexFormat::Bai => r
                .effective_linear()
                .iter()
                .enumerate()
                .filter(|&(_, &v)| v != 0 && v != u64::MAX)
                .map(|(w, &v)| ((w as i64) << min_shift, v))
                .collect(),
            IndexFormat::Csi { .. } => {
                let n_bins = self.format.bin_count();
                let mut p: Vec<(i64, u64)> = r
                    .bins()
                    .iter()
                    .filter(|b| b.id < n_bins && u64::from(b.loffset) != 0)
                    .map(|b| {
                        (
                            (bin_bottom(b.id, depth) as i64) << min_shift,
                            u64::from(b.loffset),
                        )
                    })
                    .collect();
                p.sort_unstable();
                p
            }
        };
        let mut out: Vec<(i64, VirtualOffset)> = Vec::with_capacity(points.len());
        let mut running = floor;
        for (pos, v) in points.drain(..) {
            running = running.max(v);
            match out.last_mut() {
                Some(last) if last.0 == pos => last.1 = VirtualOffset::from(running),
                Some(last) if u64::from(last.1) == running => {}
                _ => out.push((pos, VirtualOffset::from(running))),
            }
        }
        if out.is_empty() && r.metadata().is_some() {
            out.push((0, VirtualOffset::from(floor)));
        }
        out
    }
}

/// The reference's bins among `reg2bins(beg, end)`, in that order (level by
/// level, increasing id), found by range look-ups in the sorted bin table so
/// that a deep CSI does not enumerate millions of absent bins.
fn overlapping_bins<'a>(
    r: &'a ReferenceIndex,
    beg: i64,
    end: i64,
    min_shift: u32,
    depth: u32,
) -> impl Iterator<Item = &'a Bin> + 'a {
    let mut ranges = Vec::new();
    if beg < end {
        let mut shift = min_shift + 3 * depth;
        let end = end.min(1i64 << shift) - 1;
        let mut first = 0u64;
        for level in 0..=depth {
            let b = first + (beg >> shift) as u64;
            let e = first + (end >> shift) as u64;
            if b <= e {
                ranges.push((b, e));
            }
            first += 1u64 << (3 * level);
            shift = shift.saturating_sub(3);
        }
    }
    ranges.into_iter().flat_map(move |(b, e)| {
        let lookup = r.lookup();
        let lo = lookup.partition_point(|&(id, _)| u64::from(id) < b);
        let hi = lookup.partition_point(|&(id, _)| u64::from(id) <= e);
        lookup[lo..hi]
            .iter()
            .filter_map(move |&(_, i)| r.bins.get(i as usize))
    })
}

/// htslib's search for the bin whose minimum offset bounds a query: the bin
/// `start` itself, else its left siblings, else its parent, and so on up to
/// the root.
fn bin_at_or_before(r: &ReferenceIndex, start: u32) -> Option<&Bin> {
    let mut bin = start;
    loop {
        if let Some(b) = r.bin(bin) {
            return Some(b);
        }
        let first = (bin_parent(bin) << 3) + 1;
        bin = if bin > first {
            bin - 1
        } else {
            bin_parent(bin)
        };
        if bin == 0 {
            return r.bin(0);
        }
    }
}

/// htslib's `max_off`: the first chunk start of the first existing bin to
/// the right of `end`, moving right among siblings and up to the parent at
/// each first child; `u64::MAX` when there is none. Reproduces htslib's
/// 32-bit bin arithmetic for huge `end` (a whole-reference query).
fn max_offset(r: &ReferenceIndex, format: IndexFormat, end: i64) -> u64 {
    let (min_shift, depth) = crate::bam::binning::clamp(format.min_shift(), format.depth());
    let wide = i64::from(bin_first(depth))
        .wrapping_add((end.wrapping_sub(1) >> min_shift).wrapping_add(1));
    let mut bin = wide as i32;
    if bin >= format.bin_count() as i32 {
        bin = 0;
    }
    if bin < 0 {
        // htslib walks up to 0 one bin at a time without finding anything.
        return u64::MAX;
    }
    loop {
        while bin % 8 == 1 {
            bin = (bin - 1) >> 3;
        }
        if bin == 0 {
            return u64::MAX;
        }
        if let Some(b) = r.bin(bin as u32) {
            if let Some(c) = b.chunks.first() {
                return u64::from(c.start);
            }
        }
        bin += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexBuilder;

    fn vo(c: u64, u: u16) -> VirtualOffset {
        VirtualOffset::new(c, u).unwrap()
    }

    #[test]
    fn extreme_arguments_do_not_panic() {
        for format in [
            IndexFormat::Bai,
            IndexFormat::Csi {
                min_shift: 14,
                depth: 0,
            },
            IndexFormat::Csi {
                min_shift: 14,
                depth: 6,
            },
            IndexFormat::Csi {
                min_shift: 32,
                depth: 10,
            },
            IndexFormat::Csi {
                min_shift: 0,
                depth: 10,
            },
        ] {
            let mut b = IndexBuilder::new(format, 2, vo(0, 10));
            let limit = format.max_position();
            b.push(0, 0, 1, vo(0, 100), true).unwrap();
            b.push(0, 5, 10_000, vo(0, 200), false).unwrap();
            b.push(0, limit - 2, limit, vo(90_000, 0), true).unwrap();
            assert!(
                b.push(0, limit, limit + 1, vo(90_000, 5), true).is_err()
                    || format.max_position() == i64::MAX
            );
            let index = b.finish(vo(200_000, 0)).unwrap();
            let back = Index::from_bytes(&index.to_bytes()).unwrap();
            assert_eq!(back, index);
            let points = [
                i64::MIN,
                -1,
                0,
                1,
                16_383,
                16_384,
                limit - 1,
                limit,
                i64::MAX - 1,
                i64::MAX,
            ];
            for tid in [0usize, 1, 2, usize::MAX] {
                for &b in &points {
                    for &e in &points {
                        let chunks = index.query(tid, b, e);
                        assert!(
                            chunks.windows(2).all(|w| w[0].end <= w[1].start),
                            "{format:?} {b} {e}"
                        );
                    }
                    let _ = index.start_offset(tid, b);
                }
                let _ = index.checkpoints(tid);
                let _ = index.reference_span(tid);
            }
            // The first record is found from anywhere left of it.
            assert_eq!(
                index.query(0, 0, 1).first().map(|c| c.start),
                Some(vo(0, 10))
            );
            assert_eq!(
                index.query(0, i64::MIN, i64::MAX).first().map(|c| c.start),
                Some(vo(0, 10))
            );
            let last = index.query(0, limit - 1, limit);
            assert!(
                last.iter()
                    .any(|c| c.start <= vo(0, 200) && c.end > vo(0, 200)),
                "{format:?} {last:?}"
            );
        }
    }
}
