//! Updates and lookups applied table by table in address order after a
//! counting sort by bin region (tables of several GB: fewer TLB misses).

use super::memory::prefetch;
use super::pass::{bump, counter_at};
use super::{Countgraph, MAX_COUNT};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Bits of a sorted-update entry that hold the k-mer's index in its batch
/// (the bin takes the bits above).
const IDX_BITS: u32 = 24;

/// Bins per region of the counting sort in
/// [`Countgraph::update_partition_sorted`] (and the sorted lookups): 2 MiB
/// of counters, one transparent huge page, so a region's updates share one
/// TLB entry, and a table of 1e9 bins has 477 regions, whose write
/// positions stay in L1 while the sort scatters (measured:
/// BENCHMARKS.md, "Tuning constants").
const REGION_BITS: u32 = 21;

/// Below this many bytes of tables in one pass, the plain prefetched pass
/// is cheaper than sorting first: the tables are on 2 MiB pages (heap and
/// mapped `.ct` files alike), whose TLB entries then cover most of them;
/// the turn lies between 1 and 1.5 GB per pass (measured: BENCHMARKS.md,
/// "Tuning constants").
const SORT_MIN_BYTES: u64 = 5 << 28;

/// Reusable buffers of [`Countgraph::update_partition_sorted`].
#[derive(Default)]
pub struct SortScratch {
    hist: Vec<u32>,
    entries: Vec<u64>,
}

impl Countgraph {
    /// As [`Self::update_partition`] (same flags, same return value, same
    /// table contents), but each table's updates are first grouped by bin
    /// region with a stable counting sort and then applied region by region
    /// in increasing address order.
    ///
    /// Why: with gigabyte tables every random update is a cache miss *and* a
    /// TLB miss (under virtualisation a two-dimensional page walk); applied
    /// in address order, a batch of a few million updates touches each page
    /// once and the hardware prefetchers follow the sweep. The sort is
    /// stable, so the adds to any one bin stay in input order and each add's
    /// "bin was 0" / "bin was full" flags are exactly those of the in-order
    /// update (a bin's value depends only on the adds to that bin).
    ///
    /// `scratch` is reused between calls (no allocation per batch once
    /// grown). Tables of fewer than [`SORT_MIN_BYTES`] together, batches of
    /// 2^24 hashes or more, and tables of 2^40 bins or more take the plain
    /// prefetched path.
    pub fn update_partition_sorted(&self, hashes: &[u64], tables: &[usize], flags: &mut [u8], scratch: &mut SortScratch) -> u64 {
        self.update_partition_sorted_with(hashes, tables, flags, scratch, SORT_MIN_BYTES, REGION_BITS)
    }

    /// [`Self::update_partition_sorted`] with the size threshold (bytes of
    /// `tables` together) and the region size as parameters (the tests
    /// sort small tables in tiny regions).
    pub(super) fn update_partition_sorted_with(
        &self,
        hashes: &[u64],
        tables: &[usize],
        flags: &mut [u8],
        scratch: &mut SortScratch,
        min_bytes: u64,
        region_bits: u32,
    ) -> u64 {
        assert_eq!(hashes.len(), flags.len());
        let n = hashes.len();
        let small = tables.iter().map(|&t| self.table_len(t)).sum::<u64>() < min_bytes;
        if small || n >= 1 << IDX_BITS || tables.iter().any(|&t| self.sizes[t] >= 1 << (64 - IDX_BITS)) {
            return self.update_partition(hashes, tables, flags);
        }
        flags.fill(2);
        let mut occupied = 0u64;
        for &t in tables {
            self.sort_by_bin_region(t, hashes, scratch, region_bits);
            let mut zeros = 0u64;
            // The calling thread is the only writer of this table.
            let max = self.max_count();
            self.walk_sorted(t, &scratch.entries, |j, cell, shift| {
                let (zero, full) = bump(cell, shift, max);
                zeros += zero as u64;
                flags[j] = (flags[j] | zero as u8) & !((!full as u8) << 1);
            });
            if t == 0 {
                occupied = zeros;
            }
        }
        occupied
    }

    /// Fill `scratch.entries` with `(bin << IDX_BITS) | index` for each hash
    /// of `hashes` in table `t`, grouped by bin region of `2^region_bits`
    /// bins in increasing address order (a stable counting sort).
    fn sort_by_bin_region(&self, t: usize, hashes: &[u64], scratch: &mut SortScratch, region_bits: u32) {
        let m = self.mods[t];
        let n_buckets = (self.sizes[t] >> region_bits) as usize + 1;
        let hist = &mut scratch.hist;
        hist.clear();
        hist.resize(n_buckets + 1, 0);
        for &h in hashes {
            hist[(m.rem(h) >> region_bits) as usize + 1] += 1;
        }
        for i in 1..=n_buckets {
            hist[i] += hist[i - 1];
        }
        let entries = &mut scratch.entries;
        entries.resize(hashes.len(), 0);
        for (j, &h) in hashes.iter().enumerate() {
            let b = m.rem(h);
            let slot = &mut hist[(b >> region_bits) as usize];
            entries[*slot as usize] = (b << IDX_BITS) | j as u64;
            *slot += 1;
        }
    }

    /// Calls `f(index, cell, shift)` for each entry of `entries`, as
    /// [`Self::sort_by_bin_region`] left them for table `t`, in order: the
    /// entry's index in its batch and the byte and shift of its bin's
    /// counter (see `counter_at`), prefetched a few entries ahead.
    #[inline(always)]
    fn walk_sorted(&self, t: usize, entries: &[u64], mut f: impl FnMut(usize, &AtomicU8, u32)) {
        const AHEAD: usize = 16;
        let base = self.tables[t].ptr();
        let nibbles = self.nibbles;
        for i in 0..entries.len() {
            if let Some(&e) = entries.get(i + AHEAD) {
                prefetch(base.wrapping_add(counter_at(nibbles, (e >> IDX_BITS) as usize).0));
            }
            let e = entries[i];
            let (byte, shift) = counter_at(nibbles, (e >> IDX_BITS) as usize);
            // SAFETY: the bin is h mod the size of table t, so its byte is
            // within the table.
            let cell = unsafe { &*base.add(byte) };
            f((e & ((1 << IDX_BITS) - 1)) as usize, cell, shift);
        }
    }

    /// `get` of every hash (as [`Self::get_many`]: one count per hash
    /// appended to `out`, in order), but each table is read in bin order
    /// after a counting sort, for the reason given at
    /// [`Self::update_partition_sorted`]: with several gigabytes of tables a
    /// sweep costs less than random reads. Tables of fewer than
    /// [`SORT_MIN_BYTES`] together and huge batches take [`Self::get_many`].
    pub fn get_many_sorted(&self, hashes: &[u64], out: &mut Vec<u16>, scratch: &mut SortScratch) {
        self.get_many_sorted_with(hashes, out, scratch, SORT_MIN_BYTES, REGION_BITS)
    }

    pub(super) fn get_many_sorted_with(
        &self,
        hashes: &[u64],
        out: &mut Vec<u16>,
        scratch: &mut SortScratch,
        min_bytes: u64,
        region_bits: u32,
    ) {
        let n = hashes.len();
        if self.total_table_bytes() < min_bytes || n >= 1 << IDX_BITS || self.sizes.iter().any(|&s| s >= 1 << (64 - IDX_BITS)) {
            return self.get_many(hashes, out);
        }
        let first = out.len();
        out.resize(first + n, MAX_COUNT as u16);
        let mins = &mut out[first..];
        for t in 0..self.tables.len() {
            self.sort_by_bin_region(t, hashes, scratch, region_bits);
            let max = self.max_count();
            self.walk_sorted(t, &scratch.entries, |j, cell, shift| mins[j] = mins[j].min(((cell.load(Relaxed) >> shift) & max) as u16));
        }
        self.apply_bigcounts(hashes, mins);
    }
}
