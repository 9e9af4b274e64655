//! Tables split between threads: each thread updates or reads only its own
//! tables, and per-k-mer flags (or partial minimums) are merged after.

use super::countgraph::LocalStats;
use super::pass::{TableSet, INLINE_TABLES, PREFETCH_DIST};
use super::{Countgraph, MAX_COUNT};

impl Countgraph {
    /// Table-partitioned update for several threads: the calling thread
    /// updates only the tables listed in `tables` (it must be the only
    /// thread touching them), in input order, with plain loads and stores.
    /// For each hash it writes `flags[j]`: bit 0 = one of its bins was 0,
    /// bit 1 = all of its bins were full. Returns the 0→1 transitions of
    /// table 0 if it owns table 0. Merging the flags of all partitions with
    /// [`merge_partition_flags`] and then [`Self::apply_merged_flags`] gives
    /// exactly the single-thread result (tables, statistics, bigcount).
    pub fn update_partition(&self, hashes: &[u64], tables: &[usize], flags: &mut [u8]) -> u64 {
        assert_eq!(hashes.len(), flags.len());
        if tables.is_empty() {
            flags.fill(2);
            return 0;
        }
        let owns0 = tables[0] == 0;
        let set = TableSet::of(self, tables);
        let mut occupied = 0u64;
        set.pass::<PREFETCH_DIST>(
            hashes,
            |_, _| {},
            |u, bins| {
                let changes = set.increment::<false>(bins);
                occupied += (changes.first_was_zero & owns0) as u64;
                flags[u] = changes.any_was_zero as u8 | ((changes.all_were_full as u8) << 1);
                true
            },
        );
        occupied
    }

    /// For each hash, the minimum of its counters in `tables` only (one
    /// thread's share of a lookup split by table; see
    /// [`Self::combine_partial_mins`]). Prefetched ahead; `out` is replaced.
    pub fn partial_mins(&self, hashes: &[u64], tables: &[usize], out: &mut Vec<u8>) {
        out.clear();
        if tables.is_empty() || tables.len() > INLINE_TABLES {
            out.extend(
                hashes.iter().map(|&h| tables.iter().map(|&t| self.count_at(t, self.mods[t].rem(h) as usize)).min().unwrap_or(MAX_COUNT)),
            );
            return;
        }
        let set = TableSet::of(self, tables);
        set.pass::<PREFETCH_DIST>(
            hashes,
            |_, _| {},
            |_, bins| {
                out.push(set.min_count(bins));
                true
            },
        );
    }

    /// The counts (as [`Self::get`]) from the partial minimums of two table
    /// partitions that together cover every table: their minimum, or the
    /// bigcount value where that is 255. `out` is replaced.
    pub fn combine_partial_mins(&self, hashes: &[u64], a: &[u8], b: &[u8], out: &mut Vec<u16>) {
        out.clear();
        out.extend(a.iter().zip(b).map(|(&x, &y)| x.min(y) as u16));
        self.apply_bigcounts(hashes, out);
    }

    /// Apply merged partition flags (see [`Self::update_partition`]):
    /// `n_unique_kmers`, `occupied` and the bigcount map, as the
    /// single-thread add would have.
    pub fn apply_merged_flags(&self, hashes: &[u64], flags: &[u8], occupied: u64, first_pos: u128) {
        let mut unique = 0u64;
        // Locked once per batch, not once per saturated k-mer: repeats
        // make tens of millions of hits in a large run.
        let mut big = None;
        for (j, &f) in flags.iter().enumerate() {
            unique += (f & 1) as u64;
            if f & 2 != 0 && self.use_bigcount {
                big.get_or_insert_with(|| self.big.lock().unwrap()).hit(hashes[j], first_pos + j as u128);
            }
        }
        drop(big);
        self.publish(LocalStats { occupied, unique });
    }

    /// Which tables thread `t` of `threads` owns in the partitioned mode.
    pub fn partition_tables(&self, t: usize, threads: usize) -> Vec<usize> {
        (0..self.tables.len()).filter(|i| i % threads == t).collect()
    }
}

/// Merge the flags of one partition into the running result (`acc` starts
/// as the first partition's flags): "some bin was 0" is OR-ed, "all bins
/// full" is AND-ed.
pub fn merge_partition_flags(acc: &mut [u8], other: &[u8]) {
    for (a, &b) in acc.iter_mut().zip(other) {
        *a = ((*a | b) & 1) | (*a & b & 2);
    }
}
