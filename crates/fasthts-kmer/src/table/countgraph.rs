//! khmer's Countgraph: construction, statistics, lookups, adds, merging,
//! and the decisions on a read's counts.

use super::bigcount::BigCounts;
use super::memory::{prefetch, ByteTable};
use super::nodegraph::Nodegraph;
use super::pass::{counter_at, TableSet, EARLY_STOP_DIST, INLINE_TABLES, PREFETCH_DIST};
use super::{TableError, MAX_BIGCOUNT, MAX_COUNT};
use crate::fastmod::FastMod;
use crate::hash::{hashes_into, Cleaning, KmerIter, MAX_K_EXT};
use crate::primes::get_n_primes_near_x;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// khmer's Countgraph: N byte tables of prime sizes, saturating counters, an
/// optional bigcount map for counts above 255. Or khmer's SmallCountgraph
/// ([`Countgraph::new_small`]): the same with 4-bit counters, two to a byte,
/// that stop at 15 (no bigcount).
pub struct Countgraph {
    k: u32,
    /// 4-bit counters (SmallCountgraph)
    pub(super) nibbles: bool,
    pub(super) sizes: Vec<u64>,
    pub(super) mods: Vec<FastMod>,
    pub(crate) tables: Vec<ByteTable>,
    pub(super) use_bigcount: bool,
    pub(super) big: Mutex<BigCounts>,
    occupied: AtomicU64,
    n_unique: AtomicU64,
    /// Next "major" order position for bigcount insertions.
    next_order: AtomicU64,
    /// Made empty here (not loaded, not merged into): while table 0 is
    /// still all zeros, every table is.
    pub(crate) fresh: bool,
    /// The output file the tables live in, when they were placed there
    /// (see [`Countgraph::map_tables_to`]).
    pub(crate) mapped: Option<crate::ctfile::MappedCt>,
}

/// Counters a worker accumulates locally and publishes once per batch.
#[derive(Default, Clone, Copy, Debug)]
pub(super) struct LocalStats {
    pub(super) occupied: u64,
    pub(super) unique: u64,
}

impl Countgraph {
    /// A countgraph with the N largest odd primes below `x` as table sizes
    /// (khmer's `Countgraph(k, x, N)`).
    pub fn new(k: u32, x: u64, n_tables: usize) -> Result<Self, TableError> {
        if n_tables == 0 {
            return Err(TableError::NoTables);
        }
        let sizes = get_n_primes_near_x(n_tables, x).ok_or(TableError::NoPrimes { n: n_tables, x })?;
        Self::with_sizes(k, sizes)
    }

    /// A countgraph with explicit table sizes.
    pub fn with_sizes(k: u32, sizes: Vec<u64>) -> Result<Self, TableError> {
        Self::with_sizes_of(k, sizes, false)
    }

    /// khmer's `SmallCountgraph(k, x, N)`: 4-bit counters (15 at most),
    /// tables of the N largest odd primes below `x` entries, each stored in
    /// `size / 2 + 1` bytes.
    pub fn new_small(k: u32, x: u64, n_tables: usize) -> Result<Self, TableError> {
        if n_tables == 0 {
            return Err(TableError::NoTables);
        }
        let sizes = get_n_primes_near_x(n_tables, x).ok_or(TableError::NoPrimes { n: n_tables, x })?;
        Self::with_sizes_of(k, sizes, true)
    }

    fn with_sizes_of(k: u32, sizes: Vec<u64>, nibbles: bool) -> Result<Self, TableError> {
        if k == 0 || k > MAX_K_EXT {
            return Err(TableError::BadK(k));
        }
        if sizes.is_empty() {
            return Err(TableError::NoTables);
        }
        let tables = sizes.iter().map(|&s| ByteTable::zeroed(table_bytes_for(s, nibbles) as usize)).collect();
        let mut g = Self::from_tables_of(k, sizes, tables, nibbles);
        g.fresh = true;
        Ok(g)
    }

    pub(crate) fn from_tables(k: u32, sizes: Vec<u64>, tables: Vec<ByteTable>) -> Self {
        Self::from_tables_of(k, sizes, tables, false)
    }

    /// A graph over loaded tables (`nibbles`: SmallCountgraph tables of
    /// `size / 2 + 1` bytes).
    pub(crate) fn from_tables_of(k: u32, sizes: Vec<u64>, tables: Vec<ByteTable>, nibbles: bool) -> Self {
        let mods = sizes.iter().map(|&s| FastMod::new(s.max(1))).collect();
        Countgraph {
            k,
            nibbles,
            sizes,
            mods,
            tables,
            use_bigcount: false,
            big: Mutex::new(BigCounts::default()),
            occupied: AtomicU64::new(0),
            n_unique: AtomicU64::new(0),
            next_order: AtomicU64::new(0),
            fresh: false,
            mapped: None,
        }
    }

    /// k.
    pub fn ksize(&self) -> u32 {
        self.k
    }
    /// Table sizes (khmer's `hashsizes()`).
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }
    /// Number of tables.
    pub fn n_tables(&self) -> usize {
        self.sizes.len()
    }
    /// Whether counts above 255 are tracked.
    pub fn use_bigcount(&self) -> bool {
        self.use_bigcount
    }
    /// Turn the bigcount map on or off (khmer's `set_use_bigcount`; a
    /// SmallCountgraph has none, and stays without).
    pub fn set_use_bigcount(&mut self, on: bool) {
        self.use_bigcount = on && !self.nibbles;
    }
    /// Whether this is a SmallCountgraph (4-bit counters).
    pub fn is_small(&self) -> bool {
        self.nibbles
    }
    /// The largest count a counter holds: 255, or 15 in a SmallCountgraph.
    pub fn max_count(&self) -> u8 {
        if self.nibbles {
            15
        } else {
            MAX_COUNT
        }
    }
    /// Bytes table `i` takes in memory and in a `.ct` file.
    pub fn table_len(&self, i: usize) -> u64 {
        table_bytes_for(self.sizes[i], self.nibbles)
    }
    /// Bytes all tables take together.
    pub fn total_table_bytes(&self) -> u64 {
        (0..self.n_tables()).map(|i| self.table_len(i)).sum()
    }
    /// Counter `bin` of table `t`.
    #[inline(always)]
    pub(crate) fn count_at(&self, t: usize, bin: usize) -> u8 {
        let (i, shift) = counter_at(self.nibbles, bin);
        (self.tables[t].cell(i).load(Relaxed) >> shift) & self.max_count()
    }
    /// Bins of table 0 that are non-zero (counted at 0→1 transitions).
    pub fn n_occupied(&self) -> u64 {
        self.occupied.load(Relaxed)
    }
    pub(crate) fn set_occupied(&mut self, v: u64) {
        self.occupied.store(v, Relaxed)
    }
    /// khmer's `n_unique_kmers()`: adds that found at least one empty bin
    /// (0 after a load).
    pub fn n_unique_kmers(&self) -> u64 {
        self.n_unique.load(Relaxed)
    }
    /// Number of bigcount entries.
    pub fn n_bigcounts(&self) -> usize {
        self.big.lock().unwrap().map.len()
    }

    /// khmer's false-positive estimate `(occupied / min(S_i)) ** N`.
    pub fn fp_rate(&self) -> f64 {
        let min = *self.sizes.iter().min().unwrap() as f64;
        (self.n_occupied() as f64 / min).powf(self.sizes.len() as f64)
    }

    /// `get(h)`: the minimum over the tables, or the bigcount value when that
    /// minimum is 255 and bigcount is on and `h` is in the map.
    #[inline]
    pub fn get(&self, h: u64) -> u16 {
        let mut min = u8::MAX;
        for (t, m) in self.mods.iter().enumerate() {
            let c = self.count_at(t, m.rem(h) as usize);
            if c < min {
                min = c;
            }
        }
        self.count_from_min(h, min)
    }

    /// The count of `h` from the minimum of its counters: the bigcount
    /// value where that is 255, bigcount is on and the map has `h`.
    #[inline(always)]
    pub(super) fn count_from_min(&self, h: u64, min: u8) -> u16 {
        if min == MAX_COUNT && self.use_bigcount {
            if let Some(&(v, _)) = self.big.lock().unwrap().map.get(&h) {
                return v;
            }
        }
        min as u16
    }

    /// `get` for many hashes, with the bins prefetched a few k-mers ahead
    /// (the lookups are independent, so many cache misses overlap).
    /// Appends one count per hash to `out`.
    pub fn get_many(&self, hashes: &[u64], out: &mut Vec<u16>) {
        out.reserve(hashes.len());
        if self.tables.len() > INLINE_TABLES {
            out.extend(hashes.iter().map(|&h| self.get(h)));
            return;
        }
        let set = TableSet::all(self);
        set.pass::<PREFETCH_DIST>(
            hashes,
            |_, _| {},
            |u, bins| {
                out.push(self.count_from_min(hashes[u], set.min_count(bins)));
                true
            },
        );
    }

    /// Visit the counts of `hashes` in order, `f(index, count)`, stopping as
    /// soon as `f` returns false. The bins of the next k-mers are prefetched
    /// while earlier ones are read, so cache misses overlap.
    pub fn for_each_count(&self, hashes: &[u64], mut f: impl FnMut(usize, u16) -> bool) {
        if self.tables.len() > INLINE_TABLES {
            for (i, &h) in hashes.iter().enumerate() {
                if !f(i, self.get(h)) {
                    return;
                }
            }
            return;
        }
        let set = TableSet::all(self);
        set.pass::<EARLY_STOP_DIST>(hashes, |_, _| {}, |u, bins| f(u, self.count_from_min(hashes[u], set.min_count(bins))));
    }

    /// `median_at_least` over precomputed hashes, stopping as soon as the
    /// answer is known (as khmer's C++ does).
    pub fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u16) -> bool {
        let n = hashes.len();
        if n == 0 {
            return false;
        }
        let min_req = n.div_ceil(2);
        let mut hit = 0usize;
        let mut result = false;
        self.for_each_count(hashes, |i, c| {
            if c >= cutoff {
                hit += 1;
            }
            if hit >= min_req {
                result = true;
                return false;
            }
            hit + (n - i - 1) >= min_req
        });
        result
    }

    /// filter-abund's cut (`trim_at`) over precomputed hashes of a read of
    /// `len` bases, stopping at the first low-abundance k-mer.
    pub fn trim_at_hashes(&self, hashes: &[u64], len: usize, cutoff: u16) -> usize {
        let k = self.k as usize;
        let n = hashes.len();
        if n <= 1 {
            return 0;
        }
        let mut t = len;
        self.for_each_count(hashes, |j, c| {
            if c < cutoff {
                t = if j == 0 { 0 } else { k + j - 1 };
                return false;
            }
            true
        });
        t
    }

    /// Count of a k-mer string (raw codes; the caller cleans).
    pub fn get_kmer(&self, kmer: &[u8]) -> u16 {
        self.get(crate::hash::hash_kmer(kmer).2)
    }

    fn bigcount_hit(&self, h: u64, pos: u128) {
        self.big.lock().unwrap().hit(h, pos);
    }

    /// Insert a loaded bigcount entry (in file order).
    pub(crate) fn load_bigcount(&mut self, h: u64, count: u16) {
        let pos = (self.next_order.fetch_add(1, Relaxed) as u128) << 64;
        self.big.get_mut().unwrap().map.insert(h, (count, pos));
    }

    /// Adds `other`'s counts to this graph's (the Python package's `+`):
    /// every bin becomes the saturating sum `min(255, a + b)`, which is
    /// exactly the bin a single graph fed both inputs would hold. Bigcount
    /// entries (when this graph has bigcount on) are the union of both maps
    /// with value `min(65535, get_a(h) + get_b(h))`: exact for a k-mer that
    /// went past 255 in at least one part and had no collisions; a k-mer
    /// that passes 255 only in the sum reads 255 (no part saw it saturate).
    /// `occupied` is recounted from table 0; `n_unique_kmers` (a running
    /// statistic of adds, not of contents) becomes 0, as after a load.
    /// Entries of this graph keep their order, `other`'s new ones follow.
    pub fn merge_from(&mut self, other: &Countgraph) -> Result<(), TableError> {
        if self.k != other.k || self.sizes != other.sizes {
            return Err(TableError::Incompatible);
        }
        self.fresh = false;
        let mut big: Vec<(u64, u16)> = Vec::new();
        if self.use_bigcount {
            let mine = self.big.get_mut().unwrap().map.keys().copied().collect::<Vec<_>>();
            let theirs = other.big.lock().unwrap().map.keys().copied().collect::<Vec<_>>();
            for h in mine.into_iter().chain(theirs) {
                let v = (u32::from(self.get(h)) + u32::from(other.get(h))).min(u32::from(MAX_BIGCOUNT)) as u16;
                big.push((h, v));
            }
        }
        if self.nibbles != other.nibbles {
            return Err(TableError::Incompatible);
        }
        if self.nibbles {
            for t in 0..self.tables.len() {
                for bin in 0..self.sizes[t] as usize {
                    let sum = (self.count_at(t, bin) + other.count_at(t, bin)).min(self.max_count());
                    let (i, shift) = counter_at(true, bin);
                    let cell = self.tables[t].cell(i);
                    let byte = cell.load(Relaxed);
                    cell.store((byte & !(0xf << shift)) | (sum << shift), Relaxed);
                }
            }
        } else {
            for (a, b) in self.tables.iter_mut().zip(&other.tables) {
                let dst = a.as_bytes_mut();
                for (i, d) in dst.iter_mut().enumerate() {
                    *d = d.saturating_add(b.cell(i).load(Relaxed));
                }
            }
        }
        let occupied = if self.nibbles {
            (0..self.sizes[0] as usize).filter(|&bin| self.count_at(0, bin) != 0).count() as u64
        } else {
            self.tables[0].as_bytes().iter().filter(|&&c| c != 0).count() as u64
        };
        self.occupied.store(occupied, Relaxed);
        self.n_unique.store(0, Relaxed);
        for (h, v) in big {
            let next = &self.next_order;
            let map = &mut self.big.get_mut().unwrap().map;
            match map.get_mut(&h) {
                Some(e) => e.0 = v,
                None => {
                    let pos = (next.fetch_add(1, Relaxed) as u128) << 64;
                    map.insert(h, (v, pos));
                }
            }
        }
        Ok(())
    }

    /// Bigcount entries in khmer's file order (libstdc++ `unordered_map`
    /// iteration order after inserting in first-saturation order).
    pub fn bigcounts_in_file_order(&self) -> Vec<(u64, u16)> {
        let g = self.big.lock().unwrap();
        let mut v: Vec<(u128, u64, u16)> = g.map.iter().map(|(&h, &(c, p))| (p, h, c)).collect();
        drop(g);
        v.sort_unstable_by_key(|e| e.0);
        let mut m = crate::stlmap::StdUnorderedOrder::new();
        for e in &v {
            m.insert_new(e.1);
        }
        m.iter_indices().into_iter().map(|i| (v[i].1, v[i].2)).collect()
    }

    /// Add one k-mer hash (thread-safe; statistics and bigcount exact for a
    /// single caller).
    pub fn add(&self, h: u64) {
        let order = self.reserve_order(1);
        self.consume_hashes_shared(std::slice::from_ref(&h), order);
    }

    /// Add every k-mer of `seq` (cleaned with `cleaning`), one thread.
    pub fn consume(&mut self, seq: &[u8], cleaning: Cleaning) -> u64 {
        let mut v = Vec::new();
        hashes_into(seq, self.k, cleaning, &mut v);
        let order = self.next_order.fetch_add(1, Relaxed);
        self.consume_hashes(&v, order);
        v.len() as u64
    }

    /// Counts of every k-mer of `seq`, appended to `out`.
    pub fn get_counts(&self, seq: &[u8], cleaning: Cleaning, out: &mut Vec<u16>) {
        for h in KmerIter::new(seq, self.k, cleaning) {
            out.push(self.get(h));
        }
    }

    pub(super) fn publish(&self, st: LocalStats) {
        if st.occupied != 0 {
            self.occupied.fetch_add(st.occupied, Relaxed);
        }
        if st.unique != 0 {
            self.n_unique.fetch_add(st.unique, Relaxed);
        }
    }

    /// Reserve `n` consecutive order numbers for batches (bigcount ordering);
    /// returns the first.
    pub fn reserve_order(&self, n: u64) -> u64 {
        self.next_order.fetch_add(n, Relaxed)
    }

    /// Add a batch of hashes, exclusive access (plain stores, prefetched).
    /// `order` places this batch in input order for the bigcount map.
    pub fn consume_hashes(&mut self, hashes: &[u64], order: u64) {
        let st = self.consume_impl::<false>(hashes, order);
        self.publish(st);
    }

    /// Add a batch of hashes from one of several threads sharing the table
    /// (each counter updated with a saturating compare-and-swap).
    pub fn consume_hashes_shared(&self, hashes: &[u64], order: u64) {
        let st = self.consume_impl::<true>(hashes, order);
        self.publish(st);
    }

    /// Adds `hashes` to every table (`ATOMIC`: see [`TableSet::increment`]);
    /// hash j of the batch is at input position `(order << 64) + j` for
    /// the bigcount order.
    fn consume_impl<const ATOMIC: bool>(&self, hashes: &[u64], order: u64) -> LocalStats {
        let first_pos = (order as u128) << 64;
        let set = TableSet::all(self);
        let mut st = LocalStats::default();
        set.pass::<PREFETCH_DIST>(
            hashes,
            |_, _| {},
            |u, bins| {
                let changes = set.increment::<ATOMIC>(bins);
                st.occupied += changes.first_was_zero as u64;
                st.unique += changes.any_was_zero as u64;
                if changes.all_were_full && self.use_bigcount {
                    self.bigcount_hit(hashes[u], first_pos + u as u128);
                }
                true
            },
        );
        st
    }

    /// Replace each saturated minimum (255) in `counts` by the bigcount
    /// value of its hash, where bigcount is on and the map has one (the
    /// last step of [`Self::get`], for counts gathered in bulk).
    pub(super) fn apply_bigcounts(&self, hashes: &[u64], counts: &mut [u16]) {
        if self.use_bigcount && counts.contains(&(MAX_COUNT as u16)) {
            let big = self.big.lock().unwrap();
            for (c, h) in counts.iter_mut().zip(hashes) {
                if *c == MAX_COUNT as u16 {
                    if let Some(&(v, _)) = big.map.get(h) {
                        *c = v;
                    }
                }
            }
        }
    }

    /// abundance-dist's inner loop over a run of hashes, in order: skip a
    /// k-mer the tracking Bloom filter (same table sizes) has seen, else mark
    /// it and count `hist[get(h)]`. Bins are prefetched ahead in both.
    pub fn abundance_update(&self, tracking: &mut Nodegraph, hashes: &[u64], hist: &mut [u64]) {
        assert_eq!(tracking.mods.len(), self.tables.len());
        let set = TableSet::all(self);
        let seen_words = tracking.word_ptrs();
        set.pass::<PREFETCH_DIST>(
            hashes,
            |i, b| prefetch(seen_words[i].wrapping_add(b >> 6)),
            |u, bins| {
                if !tracking.test_and_set_bins(bins) {
                    hist[self.count_from_min(hashes[u], set.min_count(bins)) as usize] += 1;
                }
                true
            },
        );
    }

    /// True iff at least `ceil(n/2)` of the `n` k-mers of `seq` have a count
    /// ≥ `cutoff` (khmer's `median_at_least`; equal to
    /// `sorted_counts[n/2] >= cutoff`). A sequence shorter than k gives false.
    pub fn median_at_least(&self, seq: &[u8], cutoff: u16, cleaning: Cleaning) -> bool {
        let k = self.k as usize;
        if seq.len() < k {
            return false;
        }
        let n = seq.len() - k + 1;
        let min_req = n.div_ceil(2);
        let mut hit = 0usize;
        for (i, h) in KmerIter::new(seq, self.k, cleaning).enumerate() {
            if self.get(h) >= cutoff {
                hit += 1;
                if hit >= min_req {
                    return true;
                }
            }
            // cannot reach min_req any more
            if hit + (n - i - 1) < min_req {
                return false;
            }
        }
        hit >= min_req
    }

    /// khmer's `get_median_count(...)[0]`: `sorted(counts)[n/2]` (0 for a
    /// sequence shorter than k).
    pub fn median_count(&self, seq: &[u8], cleaning: Cleaning) -> u16 {
        let mut v = Vec::new();
        self.get_counts(seq, cleaning, &mut v);
        if v.is_empty() {
            return 0;
        }
        v.sort_unstable();
        v[v.len() / 2]
    }

    /// khmer's `trim_on_abundance`-style cut used by filter-abund and
    /// trim-low-abund: the length to keep (see the spec §9).
    pub fn trim_at(&self, seq: &[u8], cutoff: u16, cleaning: Cleaning) -> usize {
        let k = self.k as usize;
        if seq.len() < k {
            return 0;
        }
        let mut it = KmerIter::new(seq, self.k, cleaning);
        let first = it.next().unwrap();
        if self.get(first) < cutoff {
            return 0;
        }
        let mut any = false;
        for (j, h) in (1usize..).zip(it) {
            any = true;
            if self.get(h) < cutoff {
                return k + j - 1;
            }
        }
        if !any {
            // read of exactly k bases: khmer returns 0
            return 0;
        }
        seq.len()
    }

    /// The first byte of table `i` (`table_len(i)` bytes). Reading through it
    /// is only sound while nothing updates the table, e.g. in `save` under
    /// `&mut self`.
    pub(crate) fn table_ptr(&self, i: usize) -> *const u8 {
        self.tables[i].ptr() as *const u8
    }

    pub(crate) fn table_bytes(&mut self, i: usize) -> &[u8] {
        self.tables[i].as_bytes()
    }

    /// Raw counter of table `i`, bin `b` (tests, debugging).
    pub fn raw_count(&self, i: usize, b: u64) -> u8 {
        self.count_at(i, b as usize)
    }
}

/// The bytes of a table of `size` counters: one each, or for nibble
/// counters khmer's `size / 2 + 1`.
pub(crate) fn table_bytes_for(size: u64, nibbles: bool) -> u64 {
    if nibbles {
        size / 2 + 1
    } else {
        size
    }
}

/// `median_at_least` on precomputed counts (one per k-mer): at least
/// `ceil(n/2)` counts ≥ `cutoff`; false for no k-mers.
pub fn median_at_least_counts(counts: &[u16], cutoff: u16) -> bool {
    if counts.is_empty() {
        return false;
    }
    let min_req = counts.len().div_ceil(2);
    counts.iter().filter(|&&c| c >= cutoff).count() >= min_req
}

/// `get_median_count(...)[0]` on precomputed counts: `sorted[n/2]`, 0 when
/// empty. Reorders `counts`.
pub fn median_of_counts(counts: &mut [u16]) -> u16 {
    if counts.is_empty() {
        return 0;
    }
    let m = counts.len() / 2;
    *counts.select_nth_unstable(m).1
}

/// filter-abund's cut on precomputed counts of a read of `len` bases (see
/// [`Countgraph::trim_at`]).
pub fn trim_at_counts(counts: &[u16], k: usize, len: usize, cutoff: u16) -> usize {
    if counts.is_empty() || counts[0] < cutoff || counts.len() == 1 {
        return 0;
    }
    for (j, &c) in counts.iter().enumerate().skip(1) {
        if c < cutoff {
            return k + j - 1;
        }
    }
    len
}
