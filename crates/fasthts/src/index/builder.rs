//! Building an index from a coordinate-sorted record stream, exactly as
//! `samtools index` (htslib's `hts_idx_push` / `hts_idx_finish`) does.
//!
//! The builder replays htslib's state machine: a chunk is closed whenever the
//! bin of consecutive records changes; a reference's metadata pseudo-bin is
//! written when the next reference starts; at the end the linear index gaps
//! are filled, each bin gets its minimum offset, bins whose chunks span less
//! than 64 KiB of compressed data are merged into their parent, and adjacent
//! chunks starting in the same BGZF block are joined. Bins live in a model of
//! htslib's hash table ([`super::khash`]) so that they come out in the order
//! samtools writes them, making the written index byte-identical.

use crate::bam::binning::{bin_bottom, bin_first, bin_parent, reg2bin};
use super::khash::KHash;
use super::{Bin, Chunk, Index, IndexError, IndexFormat, Metadata, ReferenceIndex};
use crate::bgzf::VirtualOffset;

/// samtools' default `-m` for CSI: 2^14-base windows.
pub const DEFAULT_MIN_SHIFT: u32 = 14;

/// Minimum compressed span (64 KiB) below which a bin's chunks are merged
/// into its parent (htslib's `HTS_MIN_MARKER_DIST`).
const MIN_MARKER_DIST: u64 = 0x10000;
/// "No bin yet" marker (htslib's `0xffffffffu`).
const NO_BIN: u32 = u32::MAX;
/// Unset linear index entry.
const UNSET: u64 = u64::MAX;

/// The CSI depth `samtools index -c -m min_shift` chooses for a header whose
/// longest reference is `max_ref_len`: the fewest levels whose coordinate
/// space, `2^(min_shift + 3 * depth)`, holds `max_ref_len + 256`.
///
/// ```
/// use fasthts::index::csi_depth;
/// assert_eq!(csi_depth(14, 248_956_422), 5); // human chr1 fits 2^29
/// assert_eq!(csi_depth(14, 1 << 29), 6);
/// assert_eq!(csi_depth(14, 0), 0);
/// assert_eq!(csi_depth(12, 1_000_000_000), 6);
/// ```
pub fn csi_depth(min_shift: u32, max_ref_len: u64) -> u32 {
    let max_len = u128::from(max_ref_len) + 256;
    let mut depth = 0;
    let mut span = 1u128 << min_shift.min(100);
    while max_len > span {
        depth += 1;
        span <<= 3;
    }
    depth
}

/// A bin being built: htslib's `bins_t`.
#[derive(Default, Debug, Clone)]
struct Bins {
    loff: u64,
    list: Vec<(u64, u64)>,
}

/// Builds an [`Index`] from records pushed in file order.
///
/// ```
/// use fasthts::bgzf::VirtualOffset;
/// use fasthts::index::{IndexBuilder, IndexError, IndexFormat};
/// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
/// let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 100));
/// b.push(0, 500, 600, vo(0, 200), true)?;
/// let err = b.push(0, 400, 450, vo(0, 300), true).unwrap_err();
/// assert_eq!(err.to_string(), "Unsorted positions on sequence #1: 501 followed by 401");
/// # Ok::<(), IndexError>(())
/// ```
#[derive(Debug, Clone)]
pub struct IndexBuilder {
    /// Unsupported CSI parameters, reported by `push` and `finish`.
    invalid: Option<(u32, u32)>,
    format: IndexFormat,
    min_shift: u32,
    depth: u32,
    n_bins: u32,
    meta_bin: u32,
    max_pos: i64,
    bidx: Vec<Option<KHash<Bins>>>,
    lidx: Vec<Linear>,
    n_no_coor: u64,
    save_tid: i32,
    last_tid: i32,
    save_bin: u32,
    last_bin: u32,
    save_off: u64,
    last_off: u64,
    off_beg: u64,
    last_coor: i64,
    n_mapped: u64,
    n_unmapped: u64,
    /// Every `insert_bin`, in order, when this builds an [`IndexSegment`].
    log: Option<Vec<(i32, u32, u64, u64)>>,
}

impl IndexBuilder {
    /// A builder for `n_refs` references (from the header) whose first record
    /// starts at `offset_after_header` (the virtual offset just after the
    /// BAM header). Unsupported CSI parameters (see
    /// [`IndexFormat::validate`]) make `push` and `finish` fail. A record with a reference id outside `-1..n_refs` is an
    /// error, as htslib's reader refuses it.
    ///
    /// ```
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let b = IndexBuilder::new(IndexFormat::Csi { min_shift: 14, depth: 6 }, 3, 0.into());
    /// let index = b.finish(0.into())?;
    /// assert_eq!(index.references().len(), 3);
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn new(format: IndexFormat, n_refs: usize, offset_after_header: VirtualOffset) -> Self {
        let off0 = u64::from(offset_after_header);
        Self {
            invalid: format
                .validate()
                .err()
                .map(|_| (format.min_shift(), format.depth())),
            format,
            min_shift: format.min_shift(),
            depth: format.depth(),
            n_bins: format.bin_count(),
            meta_bin: format.metadata_bin(),
            max_pos: format.max_position(),
            bidx: vec![None; n_refs],
            lidx: vec![Linear::default(); n_refs],
            n_no_coor: 0,
            save_tid: -1,
            last_tid: -1,
            save_bin: NO_BIN,
            last_bin: NO_BIN,
            save_off: off0,
            last_off: off0,
            off_beg: off0,
            last_coor: i64::from(u32::MAX),
            n_mapped: 0,
            n_unmapped: 0,
            log: None,
        }
    }

    /// Adds one record, in file order: its reference id (`-1` without a
    /// coordinate), zero-based start, exclusive end (`bam_endpos`: start plus
    /// the CIGAR's reference length, or start + 1 when unmapped or of zero
    /// length), the virtual offset just after the record (canonical: an
    /// offset at the end of a block is the next block's start), and whether
    /// the record is mapped (flag 0x4 unset).
    ///
    /// Errors, with samtools' messages, on unsorted positions, a reference
    /// whose records are split, placed records after unplaced ones, an end
    /// before the start, or coordinates the format cannot address; and on a
    /// reference id outside `-1..n_refs`. After an
    /// error the builder should be dropped (samtools stops there too).
    ///
    /// ```
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 1, 0.into());
    /// let e = b.push(0, 1 << 29, (1 << 29) + 10, 100.into(), true).unwrap_err();
    /// assert_eq!(e.to_string(), "Region 536870912..536870922 cannot be stored in a bai index. Try using a csi index");
    /// ```
    pub fn push(
        &mut self,
        tid: i32,
        beg: i64,
        end: i64,
        record_end: VirtualOffset,
        is_mapped: bool,
    ) -> Result<(), IndexError> {
        self.check_format()?;
        let (mut beg, mut end) = if tid < 0 { (-1, 0) } else { (beg, end) };
        if tid >= 0 && !(beg <= self.max_pos && end <= self.max_pos) {
            return Err(IndexError::OutOfRange {
                beg,
                end,
                is_csi: self.format.is_csi(),
            });
        }
        if tid < -1 || (tid >= 0 && tid as usize >= self.bidx.len()) {
            return Err(IndexError::InvalidReference {
                tid,
                n_refs: self.bidx.len(),
            });
        }
        if self.last_tid != tid || (self.last_tid >= 0 && tid < 0) {
            if tid >= 0 && self.n_no_coor > 0 {
                return Err(IndexError::NoCoorNotAtEnd {
                    tid,
                    last_tid: self.last_tid,
                });
            }
            if tid >= 0 && self.bidx[tid as usize].is_some() {
                return Err(IndexError::NotContinuous { tid });
            }
            self.last_tid = tid;
            self.last_bin = NO_BIN;
        } else if tid >= 0 && self.last_coor > beg {
            return Err(IndexError::Unsorted {
                tid,
                previous: self.last_coor,
                next: beg,
            });
        }
        if end < beg {
            return Err(IndexError::InvalidRecord { tid, beg, end });
        }
        if tid >= 0 {
            let t = tid as usize;
            if self.bidx[t].is_none() {
                self.bidx[t] = Some(KHash::new());
            }
            // htslib shoehorns [-1, 0) into the leftmost bottom bin.
            if beg < 0 {
                beg = 0;
            }
            if end <= 0 {
                end = 1;
            }
            self.lidx[t].insert(beg, end, self.last_off, self.min_shift);
        } else {
            self.n_no_coor += 1;
        }
        let bin = reg2bin(beg, end, self.min_shift, self.depth);
        if self.last_bin != bin {
            if self.save_bin != NO_BIN {
                self.insert_bin(self.save_tid, self.save_bin, self.save_off, self.last_off);
            }
            if self.last_bin == NO_BIN && self.save_bin != NO_BIN {
                // Change of reference: keep its metadata.
                let off_end = self.last_off;
                self.insert_bin(self.save_tid, self.meta_bin, self.off_beg, off_end);
                self.insert_bin(self.save_tid, self.meta_bin, self.n_mapped, self.n_unmapped);
                self.n_mapped = 0;
                self.n_unmapped = 0;
                self.off_beg = off_end;
            }
            self.save_off = self.last_off;
            self.save_bin = bin;
            self.last_bin = bin;
            self.save_tid = tid;
        }
        if is_mapped {
            self.n_mapped += 1;
        } else {
            self.n_unmapped += 1;
        }
        self.last_off = u64::from(record_end);
        self.last_coor = beg;
        Ok(())
    }

    /// Sets where the next record starts, when that is not where the
    /// previous one ended: a BGZF writer that closed a block early because
    /// the next record did not fit (htslib's `hts_idx_amend_last`, which
    /// `samtools sort --write-index` calls before every record). Indexing
    /// while reading never needs it.
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 50));
    /// b.push(0, 10, 20, vo(0, 60_000), true)?;
    /// b.amend_last(vo(30_000, 0)); // the writer started a new block
    /// b.push(0, 70_000, 70_010, vo(30_000, 100), true)?;
    /// let index = b.finish(vo(30_500, 0))?;
    /// assert_eq!(index.reference(0).unwrap().linear_index()[4], vo(30_000, 0));
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn amend_last(&mut self, record_start: VirtualOffset) {
        self.last_off = u64::from(record_start);
    }

    fn check_format(&self) -> Result<(), IndexError> {
        match self.invalid {
            Some((min_shift, depth)) => Err(IndexError::UnsupportedCsi {
                min_shift: i64::from(min_shift),
                depth: i64::from(depth),
            }),
            None => Ok(()),
        }
    }

    /// htslib's `insert_to_b` on reference `tid` (ignored for `tid < 0`,
    /// which htslib never reaches).
    fn insert_bin(&mut self, tid: i32, bin: u32, beg: u64, end: u64) {
        if tid < 0 {
            return;
        }
        if let Some(log) = &mut self.log {
            log.push((tid, bin, beg, end));
        }
        if let Some(Some(h)) = self.bidx.get_mut(tid as usize) {
            let (k, _) = h.put(bin);
            h.val_mut(k).list.push((beg, end));
        }
    }

    /// Completes the index; `final_offset` is the virtual offset just after
    /// the last record (where reading hit the end of the file).
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::{IndexBuilder, IndexFormat};
    /// let vo = |c, u| VirtualOffset::new(c, u).unwrap();
    /// let mut b = IndexBuilder::new(IndexFormat::Bai, 2, vo(0, 80));
    /// b.push(1, 10, 60, vo(0, 180), true)?;
    /// let index = b.finish(vo(300, 0))?;
    /// let meta = index.reference(1).unwrap().metadata().unwrap();
    /// assert_eq!((meta.ref_beg, meta.ref_end), (vo(0, 80), vo(300, 0)));
    /// assert!(index.reference(0).unwrap().metadata().is_none());
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn finish(mut self, final_offset: VirtualOffset) -> Result<Index, IndexError> {
        self.check_format()?;
        let final_offset = u64::from(final_offset);
        if self.save_tid >= 0 {
            let t = self.save_tid;
            self.insert_bin(t, self.save_bin, self.save_off, final_offset);
            self.insert_bin(t, self.meta_bin, self.off_beg, final_offset);
            self.insert_bin(t, self.meta_bin, self.n_mapped, self.n_unmapped);
        }
        let csi = self.format.is_csi();
        let mut references = Vec::with_capacity(self.bidx.len());
        for (tid, (bidx, lidx)) in self.bidx.into_iter().zip(self.lidx).enumerate() {
            let Some(mut h) = bidx else {
                references.push(ReferenceIndex::new(Vec::new(), Vec::new(), None));
                continue;
            };
            set_loffsets(&mut h, &lidx, self.n_bins, self.depth);
            compress_binning(&mut h, self.n_bins, self.depth, tid as i32)?;
            let mut bins = Vec::with_capacity(h.len());
            let mut metadata = None;
            let mut slot = 0;
            for k in 0..h.buckets() {
                let Some(id) = h.key_at(k) else { continue };
                let v = h.val_mut(k);
                if id == self.meta_bin {
                    slot = bins.len();
                    if let [(ref_beg, ref_end), (n_mapped, n_unmapped), ..] = v.list[..] {
                        metadata = Some(Metadata {
                            ref_beg: ref_beg.into(),
                            ref_end: ref_end.into(),
                            n_mapped,
                            n_unmapped,
                        });
                    }
                } else {
                    let chunks = v
                        .list
                        .iter()
                        .map(|&(u, w)| Chunk::new(u.into(), w.into()))
                        .collect();
                    bins.push(Bin {
                        id,
                        loffset: v.loff.into(),
                        chunks,
                    });
                }
            }
            if metadata.is_none() {
                slot = bins.len();
            }
            let linear = if csi {
                Vec::new()
            } else {
                lidx.dense().into_iter().map(VirtualOffset::from).collect()
            };
            references.push(ReferenceIndex::with_slot(bins, linear, metadata, slot));
        }
        Ok(Index::new(self.format, references, Some(self.n_no_coor)))
    }
}

/// The linear index of one reference while it is built: for each window of
/// `2^min_shift` bases, the start of the first record overlapping it.
///
/// htslib keeps a dense array, which for a CSI with a small `min_shift` and a
/// long reference can need gigabytes. Because records arrive sorted by start,
/// the windows set so far always end in one contiguous stretch reaching the
/// largest end seen, so the index is kept as runs of windows sharing an
/// offset, appended in order: at most one run per record, usually one per
/// window. Reading it back applies htslib's filling (`update_loff`): a window
/// no record overlaps takes the next set window's offset.
#[derive(Debug, Clone, Default)]
struct Linear {
    /// `(first window, last window, offset)`, increasing and disjoint.
    runs: Vec<(u64, u64, u64)>,
    /// htslib's `lidx->n`: one past the last window any record reached.
    n: u64,
}

impl Linear {
    /// htslib's `insert_to_l`: windows overlapping `[beg, end)` that have no
    /// offset yet get `offset`, the start of the current record.
    fn insert(&mut self, beg: i64, end: i64, offset: u64, min_shift: u32) {
        let b = (beg >> min_shift) as u64;
        let e = (end - 1) >> min_shift;
        if e < 0 {
            return;
        }
        let e = e as u64;
        self.n = self.n.max(e + 1);
        let from = match self.runs.last() {
            Some(&(_, last, _)) => b.max(last + 1),
            None => b,
        };
        if from > e {
            return;
        }
        match self.runs.last_mut() {
            Some(run) if run.1 + 1 == from && run.2 == offset => run.1 = e,
            _ => self.runs.push((from, e, offset)),
        }
    }

    /// The filled value of window `w < n`: its run's offset, or for a window
    /// no record overlaps the next run's; all-ones past the last run.
    fn filled(&self, w: u64) -> u64 {
        let i = self.runs.partition_point(|r| r.1 < w);
        self.runs.get(i).map_or(UNSET, |r| r.2)
    }

    /// The filled linear index as htslib writes it in a BAI.
    fn dense(&self) -> Vec<u64> {
        (0..self.n).map(|w| self.filled(w)).collect()
    }
}

/// Second half of `update_loff`: each real bin's minimum offset is the linear
/// index entry of its first window (0 when beyond the linear index).
fn set_loffsets(h: &mut KHash<Bins>, lidx: &Linear, n_bins: u32, depth: u32) {
    for k in 0..h.buckets() {
        let Some(id) = h.key_at(k) else { continue };
        let loff = if id < n_bins {
            let bot = bin_bottom(id, depth);
            if bot < lidx.n {
                lidx.filled(bot)
            } else {
                0
            }
        } else {
            0
        };
        h.val_mut(k).loff = loff;
    }
}

/// htslib's `compress_binning`: merge small bins into their parents, level
/// by level from the bottom, then join chunks that start in the block where
/// the previous one ends.
fn compress_binning(
    h: &mut KHash<Bins>,
    n_bins: u32,
    depth: u32,
    tid: i32,
) -> Result<(), IndexError> {
    for level in (1..=depth).rev() {
        let start = bin_first(level);
        for k in 0..h.buckets() {
            let Some(id) = h.key_at(k) else { continue };
            if id >= n_bins || id < start {
                continue;
            }
            let p = h.val_mut(k);
            if level < depth && p.list.len() > 1 {
                p.list.sort_unstable_by_key(|&(u, _)| u);
            }
            let (Some(first), Some(last)) = (p.list.first(), p.list.last()) else {
                continue;
            };
            if (last.1 >> 16).wrapping_sub(first.0 >> 16) < MIN_MARKER_DIST {
                let Some(kp) = h.get(bin_parent(id)) else {
                    continue;
                };
                let moved = std::mem::take(&mut h.val_mut(k).list);
                let q = h.val_mut(kp);
                if q.list.len() + moved.len() > i32::MAX as usize {
                    return Err(IndexError::TooManyChunks {
                        tid,
                        bin: bin_parent(id),
                    });
                }
                q.list.extend_from_slice(&moved);
                h.del(k);
            }
        }
    }
    if let Some(k) = h.get(0) {
        h.val_mut(k).list.sort_unstable_by_key(|&(u, _)| u);
    }
    for k in 0..h.buckets() {
        let Some(id) = h.key_at(k) else { continue };
        if id >= n_bins {
            continue;
        }
        let list = &mut h.val_mut(k).list;
        if list.is_empty() {
            continue;
        }
        let mut m = 0;
        for l in 1..list.len() {
            if list[m].1 >> 16 >= list[l].0 >> 16 {
                if list[m].1 < list[l].1 {
                    list[m].1 = list[l].1;
                }
            } else {
                m += 1;
                list[m] = list[l];
            }
        }
        list.truncate(m + 1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vo(c: u64, u: u16) -> VirtualOffset {
        VirtualOffset::new(c, u).unwrap()
    }

    #[test]
    fn samtools_error_messages() {
        let mut b = IndexBuilder::new(IndexFormat::Bai, 2, vo(0, 10));
        b.push(1, 5, 10, vo(0, 50), true).unwrap();
        b.push(0, 5, 10, vo(0, 90), true).unwrap();
        let e = b.push(1, 7, 10, vo(0, 130), true).unwrap_err();
        assert_eq!(e.to_string(), "Chromosome blocks not continuous");

        let mut b = IndexBuilder::new(IndexFormat::Bai, 2, vo(0, 10));
        b.push(0, 5, 10, vo(0, 50), true).unwrap();
        b.push(-1, -1, 0, vo(0, 90), false).unwrap();
        let e = b.push(1, 7, 10, vo(0, 130), true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "NO_COOR reads not in a single block at the end 1 -1"
        );

        let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 10));
        let e = b.push(0, 7, 5, vo(0, 130), true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid record on sequence #1: end 5 < begin 8"
        );
        let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 10));
        assert!(matches!(
            b.push(1, 7, 9, vo(0, 130), true),
            Err(IndexError::InvalidReference { tid: 1, n_refs: 1 })
        ));
        assert!(matches!(
            b.push(-2, 7, 9, vo(0, 130), true),
            Err(IndexError::InvalidReference { tid: -2, .. })
        ));
        let mut b = IndexBuilder::new(
            IndexFormat::Csi {
                min_shift: 60,
                depth: 3,
            },
            1,
            vo(0, 10),
        );
        assert!(matches!(
            b.push(0, 7, 9, vo(0, 130), true),
            Err(IndexError::UnsupportedCsi {
                min_shift: 60,
                depth: 3
            })
        ));
        assert!(b.finish(vo(1, 0)).is_err());

        let mut b = IndexBuilder::new(
            IndexFormat::Csi {
                min_shift: 14,
                depth: 6,
            },
            1,
            vo(0, 10),
        );
        b.push(0, 1 << 31, (1 << 31) + 5, vo(0, 130), true).unwrap();
        let e = b
            .push(0, (1 << 32) - 1, (1 << 32) + 1, vo(0, 230), true)
            .unwrap_err();
        assert_eq!(e.to_string(), "Region 4294967295..4294967297 cannot be stored in a csi index. Please check headers match the data");
    }

    #[test]
    fn small_bins_merge_into_parents() {
        // Two records in different bottom bins of one 128 kb bin, all in one
        // BGZF block: both chunks move to their common parent and join.
        let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 10));
        b.push(0, 100, 200, vo(0, 100), true).unwrap();
        b.push(0, 20000, 20100, vo(0, 200), true).unwrap();
        let index = b.finish(vo(1000, 0)).unwrap();
        let r = index.reference(0).unwrap();
        // Bottom bins 4681 and 4682 have no parent bin (585) present, so
        // they stay; their chunks are [10, 100) and [100, 1000:0).
        let ids: Vec<u32> = r.bins().iter().map(|b| b.id).collect();
        assert_eq!(ids.len(), 2);
        assert!(ids.contains(&4681) && ids.contains(&4682));
        assert_eq!(
            r.bin(4682).unwrap().chunks,
            vec![Chunk::new(vo(0, 100), vo(1000, 0))]
        );
        assert_eq!(r.linear_index(), &[vo(0, 10), vo(0, 100)]);

        // Add a record spanning the two windows: bin 585 exists, children merge into it.
        let mut b = IndexBuilder::new(IndexFormat::Bai, 1, vo(0, 10));
        b.push(0, 100, 200, vo(0, 100), true).unwrap();
        b.push(0, 16000, 17000, vo(0, 200), true).unwrap();
        b.push(0, 20000, 20100, vo(0, 300), true).unwrap();
        let index = b.finish(vo(1000, 0)).unwrap();
        let r = index.reference(0).unwrap();
        assert_eq!(r.bins().len(), 1);
        assert_eq!(r.bins()[0].id, 585);
        assert_eq!(r.bins()[0].chunks, vec![Chunk::new(vo(0, 10), vo(1000, 0))]);
        let m = r.metadata().unwrap();
        assert_eq!(
            (m.ref_beg, m.ref_end, m.n_mapped, m.n_unmapped),
            (vo(0, 10), vo(1000, 0), 3, 0)
        );
    }
}

/// One record as [`IndexBuilder::push`] takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pushed {
    tid: i32,
    beg: i64,
    end: i64,
    record_end: u64,
    mapped: bool,
}

/// The index of a stretch of a BAM's records, built on its own (by another
/// task, on another machine) and then appended, in file order, to the
/// index of the records before it ([`IndexBuilder::append`]): the result
/// is the index one pass over all the records would have built, byte for
/// byte.
///
/// A segment is an [`IndexBuilder`] that also logs its bins' chunk
/// insertions: htslib's bin table comes out in an order that depends on
/// the order of insertions, so appending replays them. Only what the
/// stretch's first record meets depends on the records before it (a chunk
/// or a reference's metadata that continues); `append` pushes that record
/// for real and corrects the first chunk and metadata the segment logged.
#[derive(Debug, Clone)]
pub struct IndexSegment {
    builder: IndexBuilder,
    first: Option<Pushed>,
}

impl IndexSegment {
    /// A segment in `format` whose first record starts at `start`.
    pub fn new(format: IndexFormat, n_refs: usize, start: VirtualOffset) -> IndexSegment {
        let mut builder = IndexBuilder::new(format, n_refs, start);
        builder.log = Some(Vec::new());
        IndexSegment { builder, first: None }
    }

    /// Adds one record, as [`IndexBuilder::push`].
    pub fn push(&mut self, tid: i32, beg: i64, end: i64, record_end: VirtualOffset, is_mapped: bool) -> Result<(), IndexError> {
        self.builder.push(tid, beg, end, record_end, is_mapped)?;
        if self.first.is_none() {
            self.first = Some(Pushed { tid, beg, end, record_end: u64::from(record_end), mapped: is_mapped });
        }
        Ok(())
    }

    /// Moves every offset `bytes` further into the file (a part written
    /// on its own, placed at that distance in the whole).
    pub fn shift(&mut self, bytes: u64) {
        let d = bytes << 16;
        let b = &mut self.builder;
        let meta_bin = b.meta_bin;
        if let Some(first) = &mut self.first {
            first.record_end += d;
        }
        // Metadata comes in pairs: offsets, then counts (not offsets).
        let mut meta_events = 0usize;
        for (_, bin, beg, end) in b.log.iter_mut().flatten() {
            if *bin == meta_bin {
                meta_events += 1;
                if meta_events % 2 == 0 {
                    continue;
                }
            }
            *beg += d;
            *end += d;
        }
        b.save_off += d;
        b.last_off += d;
        b.off_beg += d;
        for l in &mut b.lidx {
            for run in &mut l.runs {
                run.2 += d;
            }
        }
    }

    /// The segment as bytes, to travel between machines ([`IndexSegment::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let b = &self.builder;
        let mut out = Vec::new();
        let mut put = |v: u64| out.extend_from_slice(&v.to_le_bytes());
        let (kind, min_shift, depth) = match b.format {
            IndexFormat::Bai => (0, 0, 0),
            IndexFormat::Csi { min_shift, depth } => (1, min_shift, depth),
        };
        for v in [kind, u64::from(min_shift), u64::from(depth), b.bidx.len() as u64] {
            put(v);
        }
        match self.first {
            None => put(0),
            Some(f) => {
                for v in [1, f.tid as u64, f.beg as u64, f.end as u64, f.record_end, u64::from(f.mapped)] {
                    put(v);
                }
            }
        }
        for v in [
            b.n_no_coor,
            b.save_tid as u64,
            b.last_tid as u64,
            u64::from(b.save_bin),
            u64::from(b.last_bin),
            b.save_off,
            b.last_off,
            b.off_beg,
            b.last_coor as u64,
            b.n_mapped,
            b.n_unmapped,
        ] {
            put(v);
        }
        let log = b.log.as_deref().unwrap_or(&[]);
        put(log.len() as u64);
        for &(tid, bin, beg, end) in log {
            for v in [tid as u64, u64::from(bin), beg, end] {
                put(v);
            }
        }
        for (h, l) in b.bidx.iter().zip(&b.lidx) {
            put(u64::from(h.is_some()));
            put(l.n);
            put(l.runs.len() as u64);
            for &(from, to, off) in &l.runs {
                for v in [from, to, off] {
                    put(v);
                }
            }
        }
        out
    }

    /// A segment from [`IndexSegment::to_bytes`]; `None` if the bytes are
    /// not one.
    pub fn from_bytes(bytes: &[u8]) -> Option<IndexSegment> {
        let mut at = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
        let mut next = || at.next();
        let format = match (next()?, next()?, next()?) {
            (0, _, _) => IndexFormat::Bai,
            (1, min_shift, depth) => IndexFormat::Csi { min_shift: u32::try_from(min_shift).ok()?, depth: u32::try_from(depth).ok()? },
            _ => return None,
        };
        let n_refs = usize::try_from(next()?).ok()?;
        let first = match next()? {
            0 => None,
            _ => Some(Pushed { tid: next()? as i32, beg: next()? as i64, end: next()? as i64, record_end: next()?, mapped: next()? != 0 }),
        };
        let mut b = IndexBuilder::new(format, n_refs.min(1 << 24), VirtualOffset::from(0));
        if b.bidx.len() != n_refs {
            return None;
        }
        b.n_no_coor = next()?;
        b.save_tid = next()? as i32;
        b.last_tid = next()? as i32;
        b.save_bin = next()? as u32;
        b.last_bin = next()? as u32;
        b.save_off = next()?;
        b.last_off = next()?;
        b.off_beg = next()?;
        b.last_coor = next()? as i64;
        b.n_mapped = next()?;
        b.n_unmapped = next()?;
        let n_log = usize::try_from(next()?).ok()?;
        let mut log = Vec::with_capacity(n_log.min(bytes.len() / 32));
        for _ in 0..n_log {
            log.push((next()? as i32, next()? as u32, next()?, next()?));
        }
        b.log = Some(log);
        for t in 0..n_refs {
            if next()? != 0 {
                b.bidx[t] = Some(KHash::new());
            }
            b.lidx[t].n = next()?;
            let runs = usize::try_from(next()?).ok()?;
            for _ in 0..runs.min(bytes.len() / 24) {
                b.lidx[t].runs.push((next()?, next()?, next()?));
            }
        }
        next().is_none().then_some(IndexSegment { builder: b, first })
    }
}

impl IndexBuilder {
    /// Appends the index of the records that follow the ones pushed so far
    /// (see [`IndexSegment`]); the segment must start where the last record
    /// pushed ended (an empty segment changes nothing). The errors are
    /// those `push` would have given had the records been pushed one by one.
    pub fn append(&mut self, segment: IndexSegment) -> Result<(), IndexError> {
        let Some(first) = segment.first else { return Ok(()) };
        let seg = segment.builder;
        // References the segment goes on to after its first one must be new.
        for (t, h) in seg.bidx.iter().enumerate() {
            if h.is_some() && t as i32 != first.tid && self.bidx.get(t).is_some_and(Option::is_some) {
                return Err(IndexError::NotContinuous { tid: t as i32 });
            }
        }
        if self.n_no_coor > 0 && seg.bidx.iter().any(Option::is_some) {
            let tid = seg.bidx.iter().position(Option::is_some).unwrap_or(0) as i32;
            return Err(IndexError::NoCoorNotAtEnd { tid, last_tid: self.last_tid });
        }
        self.push(first.tid, first.beg, first.end, VirtualOffset::from(first.record_end), first.mapped)?;
        // What the segment began afresh and this index continues: the open
        // chunk, the reference's metadata start and its counts.
        let chunk_start = self.save_off;
        let ref_start = self.off_beg;
        let earlier_mapped = self.n_mapped - u64::from(first.mapped);
        let earlier_unmapped = self.n_unmapped - u64::from(!first.mapped);
        let (mut chunk_fixed, mut meta_events) = (false, 0usize);
        for (tid, bin, mut beg, mut end) in seg.log.into_iter().flatten() {
            if bin == self.meta_bin {
                meta_events += 1;
                match meta_events {
                    1 => beg = ref_start,
                    2 => {
                        beg += earlier_mapped;
                        end += earlier_unmapped;
                    }
                    _ => {}
                }
            } else if !chunk_fixed {
                chunk_fixed = true;
                beg = chunk_start;
            }
            let t = tid as usize;
            if self.bidx[t].is_none() {
                self.bidx[t] = Some(KHash::new());
            }
            self.insert_bin(tid, bin, beg, end);
        }
        for (mine, theirs) in self.lidx.iter_mut().zip(&seg.lidx) {
            mine.append(theirs);
        }
        self.n_no_coor += seg.n_no_coor - u64::from(first.tid < 0);
        self.save_tid = seg.save_tid;
        self.last_tid = seg.last_tid;
        self.save_bin = seg.save_bin;
        self.last_bin = seg.last_bin;
        self.last_off = seg.last_off;
        self.last_coor = seg.last_coor;
        if chunk_fixed {
            self.save_off = seg.save_off;
        }
        if meta_events > 0 {
            self.off_beg = seg.off_beg;
            self.n_mapped = seg.n_mapped;
            self.n_unmapped = seg.n_unmapped;
        } else {
            self.n_mapped = earlier_mapped + seg.n_mapped;
            self.n_unmapped = earlier_unmapped + seg.n_unmapped;
        }
        Ok(())
    }
}

impl Linear {
    /// Appends the windows of a later stretch of records, as its records
    /// would have set them here: windows already set stay.
    fn append(&mut self, later: &Linear) {
        for &(from, to, offset) in &later.runs {
            let from = match self.runs.last() {
                Some(&(_, last, _)) => from.max(last + 1),
                None => from,
            };
            if from > to {
                continue;
            }
            match self.runs.last_mut() {
                Some(run) if run.1 + 1 == from && run.2 == offset => run.1 = to,
                _ => self.runs.push((from, to, offset)),
            }
        }
        self.n = self.n.max(later.n);
    }
}
