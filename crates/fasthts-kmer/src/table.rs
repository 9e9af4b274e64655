//! The count-min sketch (khmer's `Countgraph` with `ByteStorage`) and the
//! presence Bloom filter (`Nodegraph`, used by abundance-dist).
//!
//! # Concurrency and determinism
//!
//! The N tables of u8 counters are shared by all threads. Updates come in two
//! modes:
//! * **exclusive** (`&mut self`, one thread): plain loads and stores, no
//!   `lock` prefix;
//! * **shared** (`&self`, many threads): each bin is incremented with a
//!   compare-and-swap loop that stops at 255, so a counter never wraps (khmer's unguarded race can wrap
//!   a bin to 0; we do not copy that). Each bin therefore receives exactly
//!   `min(255, adds)` increments whatever the interleaving, and the **tables
//!   are identical at any thread count**.
//!
//! Statistics: `occupied` counts 0→1 transitions of table 0; the old value
//! returned by the atomic tells exactly one add, so it is exact at any thread
//! count. `n_unique_kmers` (+1 when *any* bin of the add was 0) and the
//! bigcount values depend on the order of adds only when distinct k-mers share
//! bins; at one thread they equal khmer's exactly, at several threads they can
//! differ in those collision cases (as khmer's own values do).
//!
//! Bigcount *order*: each bigcount entry remembers the position (in input
//! order: batch number, k-mer index) of the add that created it; at save time
//! entries are replayed in that order into an emulated libstdc++
//! `unordered_map` ([`crate::stlmap`]). So the file order is deterministic and
//! equal to khmer's single-thread order at any thread count.

use crate::fastmod::FastMod;
use crate::hash::{hashes_into, Cleaning, KmerIter, MAX_K_EXT};
use crate::primes::get_n_primes_near_x;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;

/// Saturation value of the 8-bit counters.
pub const MAX_COUNT: u8 = 255;
/// Saturation value of the bigcount map.
pub const MAX_BIGCOUNT: u16 = 65535;

/// How many k-mers ahead the counting loop prefetches bins.
const PREFETCH_DIST: usize = 16;

/// Bits of a sorted-update entry that hold the k-mer's index in its batch
/// (the bin takes the bits above).
const IDX_BITS: u32 = 24;
/// Bins per region of the counting sort in
/// [`Countgraph::update_partition_sorted`] (and the sorted lookups): 2 MiB
/// of counters, one transparent huge page, so a region's updates share one
/// TLB entry, and a table of 1e9 bins has 477 regions, whose write
/// positions stay in L1 while the sort scatters. Measured on warm 1e9-bin
/// tables, 60 batches of 1 Mi random hashes, CPU s of one thread updating
/// 2 tables (AMD EPYC, 1 MiB L2, a loaded host): 64 KiB regions 3.3–4.0,
/// 1 MiB 2.7–3.4, 2 MiB 2.5–2.9, 4 MiB 2.6–2.9, 16 MiB 2.8–3.1; two
/// threads with 2 tables each: 64 KiB 7.5–7.7 s wall, 2 MiB 5.6–6.7.
const REGION_BITS: u32 = 21;

/// Tables smaller than this (in bins) stay mostly in cache, where the
/// plain prefetched update is cheaper than sorting first.
const SORT_MIN_BINS: u64 = 1 << 25;

/// Reusable buffers of [`Countgraph::update_partition_sorted`].
#[derive(Default)]
pub struct SortScratch {
    hist: Vec<u32>,
    entries: Vec<u64>,
}

/// A zero-initialised byte table usable with atomics. Allocated with
/// `calloc` (lazy zero pages) and advised to use transparent huge pages.
pub(crate) struct ByteTable {
    data: Box<[AtomicU8]>,
}

impl ByteTable {
    pub(crate) fn zeroed(n: usize) -> Self {
        Self::from_vec(vec![0u8; n])
    }
    /// A table holding `v`'s bytes.
    pub(crate) fn from_vec(v: Vec<u8>) -> Self {
        let b = v.into_boxed_slice();
        advise_hugepages(b.as_ptr(), b.len());
        let raw = Box::into_raw(b) as *mut [AtomicU8];
        // SAFETY: AtomicU8 has the same size, alignment and bit validity as u8.
        let data = unsafe { Box::from_raw(raw) };
        ByteTable { data }
    }
    #[inline(always)]
    pub(crate) fn cell(&self, i: usize) -> &AtomicU8 {
        &self.data[i]
    }
    #[inline(always)]
    fn ptr(&self) -> *const AtomicU8 {
        self.data.as_ptr()
    }
    pub(crate) fn as_bytes(&mut self) -> &[u8] {
        // SAFETY: &mut self excludes concurrent atomic writers; same layout.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr() as *const u8, self.data.len()) }
    }
    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_mut_ptr() as *mut u8, self.data.len()) }
    }
}

/// Huge pages for a table of at least a few of them (smaller ones gain
/// nothing measurable).
fn advise_hugepages(ptr: *const u8, len: usize) {
    if len >= 4 * HUGE_PAGE {
        fasthts_io::memory::advise_huge_pages(ptr, len);
    }
}

const HUGE_PAGE: usize = 2 << 20;

#[inline(always)]
fn prefetch(p: *const AtomicU8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A fast hasher for the u64 k-mer keys of the bigcount map (the keys are
/// two-bit k-mer values, so mix them with a multiply; no DoS concern here).
#[derive(Default, Clone, Copy)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        let h = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.0 = h ^ (h >> 32);
    }
}

type KeyBuild = std::hash::BuildHasherDefault<KeyHasher>;

#[derive(Default)]
struct BigCounts {
    /// hash → (count, position of the add that created the entry)
    map: HashMap<u64, (u16, u128), KeyBuild>,
}

impl BigCounts {
    /// One more add of `h` (at add position `pos`) to a k-mer whose bins
    /// are all saturated.
    fn hit(&mut self, h: u64, pos: u128) {
        match self.map.get_mut(&h) {
            Some(e) => {
                if e.0 < MAX_BIGCOUNT {
                    e.0 += 1;
                }
                if pos < e.1 {
                    e.1 = pos;
                }
            }
            None => {
                self.map.insert(h, (MAX_COUNT as u16 + 1, pos));
            }
        }
    }
}

/// Errors from building a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// k outside 1..=32.
    BadK(u32),
    /// Not enough primes below the size.
    NoPrimes {
        /// tables asked for
        n: usize,
        /// size limit
        x: u64,
    },
    /// Zero tables.
    NoTables,
    /// Graphs of different k or table sizes cannot be merged.
    Incompatible,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::BadK(k) => write!(f, "k-mer size must be between 1 and {MAX_K_EXT}, got {k}"),
            TableError::NoPrimes { n, x } => write!(f, "unable to find {n} prime numbers < {x}"),
            TableError::NoTables => write!(f, "the number of tables must be at least 1"),
            TableError::Incompatible => write!(f, "cannot merge countgraphs of different k or table sizes"),
        }
    }
}
impl std::error::Error for TableError {}

/// khmer's Countgraph: N byte tables of prime sizes, saturating counters, an
/// optional bigcount map for counts above 255.
pub struct Countgraph {
    k: u32,
    sizes: Vec<u64>,
    mods: Vec<FastMod>,
    pub(crate) tables: Vec<ByteTable>,
    use_bigcount: bool,
    big: Mutex<BigCounts>,
    occupied: AtomicU64,
    n_unique: AtomicU64,
    /// Next "major" order position for bigcount insertions.
    next_order: AtomicU64,
}

/// Counters a worker accumulates locally and publishes once per batch.
#[derive(Default, Clone, Copy, Debug)]
struct LocalStats {
    occupied: u64,
    unique: u64,
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
        if k == 0 || k > MAX_K_EXT {
            return Err(TableError::BadK(k));
        }
        if sizes.is_empty() {
            return Err(TableError::NoTables);
        }
        let tables = sizes.iter().map(|&s| ByteTable::zeroed(s as usize)).collect();
        Ok(Self::from_tables(k, sizes, tables))
    }

    pub(crate) fn from_tables(k: u32, sizes: Vec<u64>, tables: Vec<ByteTable>) -> Self {
        let mods = sizes.iter().map(|&s| FastMod::new(s.max(1))).collect();
        Countgraph {
            k,
            sizes,
            mods,
            tables,
            use_bigcount: false,
            big: Mutex::new(BigCounts::default()),
            occupied: AtomicU64::new(0),
            n_unique: AtomicU64::new(0),
            next_order: AtomicU64::new(0),
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
    /// Turn the bigcount map on or off (khmer's `set_use_bigcount`).
    pub fn set_use_bigcount(&mut self, on: bool) {
        self.use_bigcount = on;
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

    #[inline(always)]
    fn bins(&self, h: u64, out: &mut [usize]) {
        for (o, m) in out.iter_mut().zip(&self.mods) {
            *o = m.rem(h) as usize;
        }
    }

    /// `get(h)`: the minimum over the tables, or the bigcount value when that
    /// minimum is 255 and bigcount is on and `h` is in the map.
    #[inline]
    pub fn get(&self, h: u64) -> u16 {
        let mut min = u8::MAX;
        for (t, m) in self.tables.iter().zip(&self.mods) {
            let c = t.cell(m.rem(h) as usize).load(Relaxed);
            if c < min {
                min = c;
            }
        }
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
        let nt = self.tables.len();
        let n = hashes.len();
        out.reserve(n);
        let mut ring = [0usize; PREFETCH_DIST * 8];
        if nt > 8 {
            out.extend(hashes.iter().map(|&h| self.get(h)));
            return;
        }
        let bases: [*const AtomicU8; 8] = std::array::from_fn(|i| if i < nt { self.tables[i].ptr() } else { std::ptr::null() });
        for j in 0..n + PREFETCH_DIST {
            if j >= PREFETCH_DIST {
                let u = j - PREFETCH_DIST;
                let slot = (u % PREFETCH_DIST) * 8;
                let mut min = u8::MAX;
                for i in 0..nt {
                    // SAFETY: bin < table size.
                    let c = unsafe { &*bases[i].add(ring[slot + i]) }.load(Relaxed);
                    min = min.min(c);
                }
                let v = if min == MAX_COUNT && self.use_bigcount {
                    match self.big.lock().unwrap().map.get(&hashes[u]) {
                        Some(&(v, _)) => v,
                        None => min as u16,
                    }
                } else {
                    min as u16
                };
                out.push(v);
            }
            if j < n {
                let slot = (j % PREFETCH_DIST) * 8;
                let h = hashes[j];
                for i in 0..nt {
                    let b = self.mods[i].rem(h) as usize;
                    ring[slot + i] = b;
                    prefetch(bases[i].wrapping_add(b));
                }
            }
        }
    }

    /// Visit the counts of `hashes` in order, `f(index, count)`, stopping as
    /// soon as `f` returns false. The bins of the next k-mers are prefetched
    /// while earlier ones are read, so cache misses overlap.
    pub fn for_each_count(&self, hashes: &[u64], mut f: impl FnMut(usize, u16) -> bool) {
        // a continuous prefetch ring (no drain between chunks); an early
        // stop wastes at most DIST prefetched k-mers
        const DIST: usize = 12;
        let nt = self.tables.len();
        if nt > 8 {
            for (i, &h) in hashes.iter().enumerate() {
                if !f(i, self.get(h)) {
                    return;
                }
            }
            return;
        }
        let n = hashes.len();
        let bases: [*const AtomicU8; 8] = std::array::from_fn(|i| if i < nt { self.tables[i].ptr() } else { std::ptr::null() });
        let mut ring = [[0usize; 8]; DIST];
        for j in 0..n + DIST {
            if j < n {
                let h = hashes[j];
                let slot = &mut ring[j % DIST];
                for i in 0..nt {
                    let b = self.mods[i].rem(h) as usize;
                    slot[i] = b;
                    prefetch(bases[i].wrapping_add(b));
                }
            }
            if j + 1 >= DIST {
                let u = j + 1 - DIST;
                if u >= n {
                    continue;
                }
                let slot = &ring[u % DIST];
                let mut min = u8::MAX;
                for i in 0..nt {
                    // SAFETY: bin < table size.
                    min = min.min(unsafe { &*bases[i].add(slot[i]) }.load(Relaxed));
                }
                let v = if min == MAX_COUNT && self.use_bigcount {
                    match self.big.lock().unwrap().map.get(&hashes[u]) {
                        Some(&(v, _)) => v,
                        None => min as u16,
                    }
                } else {
                    min as u16
                };
                if !f(u, v) {
                    return;
                }
            }
        }
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
        let mut big: Vec<(u64, u16)> = Vec::new();
        if self.use_bigcount {
            let mine = self.big.get_mut().unwrap().map.keys().copied().collect::<Vec<_>>();
            let theirs = other.big.lock().unwrap().map.keys().copied().collect::<Vec<_>>();
            for h in mine.into_iter().chain(theirs) {
                let v = (u32::from(self.get(h)) + u32::from(other.get(h))).min(u32::from(MAX_BIGCOUNT)) as u16;
                big.push((h, v));
            }
        }
        for (a, b) in self.tables.iter_mut().zip(&other.tables) {
            let dst = a.as_bytes_mut();
            for (i, d) in dst.iter_mut().enumerate() {
                *d = d.saturating_add(b.cell(i).load(Relaxed));
            }
        }
        let occupied = self.tables[0].as_bytes().iter().filter(|&&c| c != 0).count() as u64;
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
        let pos = (self.next_order.fetch_add(1, Relaxed) as u128) << 64;
        let mut b = [0usize; 32];
        let nt = self.sizes.len();
        let mut bins_v;
        let bins: &mut [usize] = if nt <= 32 {
            &mut b[..nt]
        } else {
            bins_v = vec![0usize; nt];
            &mut bins_v
        };
        self.bins(h, bins);
        let st = self.update_shared(h, bins, pos, 255 - 64);
        self.publish(st);
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

    fn publish(&self, st: LocalStats) {
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
        self.consume_hashes_at(hashes, (order as u128) << 64);
    }

    /// As [`Self::consume_hashes`] through a shared reference: plain (not
    /// read-modify-write atomic) updates. The caller must be the only thread
    /// *writing* the tables meanwhile; other threads may read them (e.g. a
    /// prefetching helper). Concurrent writers would lose updates, but it is
    /// never memory-unsafe (the counters are atomics).
    pub fn consume_hashes_single_writer(&self, hashes: &[u64], order: u64) {
        let st = self.consume_impl::<false>(hashes, (order as u128) << 64, 0);
        self.publish(st);
    }

    /// As [`Self::consume_hashes`], with the input position of the first
    /// hash given as `(order << 64) | index`.
    pub fn consume_hashes_at(&mut self, hashes: &[u64], first_pos: u128) {
        let st = self.consume_impl::<false>(hashes, first_pos, 0);
        self.publish(st);
    }

    /// As [`Self::consume_hashes_shared`], with an explicit first position.
    pub fn consume_hashes_shared_at(&self, hashes: &[u64], first_pos: u128, threads: usize) {
        let limit = 255usize.saturating_sub(threads.max(1)) as u8;
        let st = self.consume_impl::<true>(hashes, first_pos, limit);
        self.publish(st);
    }

    /// Add a batch of hashes from one of several threads sharing the table.
    /// `threads` bounds how many threads may update concurrently (it decides
    /// when the saturating compare-and-swap path is needed).
    pub fn consume_hashes_shared(&self, hashes: &[u64], order: u64, threads: usize) {
        self.consume_hashes_shared_at(hashes, (order as u128) << 64, threads);
    }

    #[inline(always)]
    fn update_shared(&self, h: u64, bins: &[usize], pos: u128, limit: u8) -> LocalStats {
        let mut st = LocalStats::default();
        let mut n_full = 0usize;
        let mut new = false;
        for (i, (&b, t)) in bins.iter().zip(&self.tables).enumerate() {
            let cell = t.cell(b);
            // Always a compare-and-swap: a `fetch_add` guarded by an earlier
            // load can wrap 255 to 0 when its thread stalls between the two
            // while others saturate the bin (seen under heavy load).
            let _ = limit;
            let mut c = cell.load(Relaxed);
            let old = loop {
                if c == MAX_COUNT {
                    break None;
                }
                match cell.compare_exchange_weak(c, c + 1, Relaxed, Relaxed) {
                    Ok(_) => break Some(c),
                    Err(v) => c = v,
                }
            };
            match old {
                Some(0) => {
                    new = true;
                    if i == 0 {
                        st.occupied += 1;
                    }
                }
                Some(_) => {}
                None => n_full += 1,
            }
        }
        if new {
            st.unique += 1;
        }
        if n_full == bins.len() && self.use_bigcount {
            self.bigcount_hit(h, pos);
        }
        st
    }

    #[inline(always)]
    fn update_exclusive(&self, h: u64, bins: &[usize], pos: u128, st: &mut LocalStats) {
        let mut n_full = 0usize;
        let mut new = false;
        for (i, (&b, t)) in bins.iter().zip(&self.tables).enumerate() {
            // SAFETY: b < table size by construction (b = h mod size).
            let cell = unsafe { &*t.ptr().add(b) };
            // branch-free: whether a bin is empty or full is unpredictable
            let c = cell.load(Relaxed);
            let zero = c == 0;
            let full = c == MAX_COUNT;
            new |= zero;
            st.occupied += (zero & (i == 0)) as u64;
            cell.store(c + (!full) as u8, Relaxed);
            n_full += full as usize;
        }
        if new {
            st.unique += 1;
        }
        if n_full == bins.len() && self.use_bigcount {
            self.bigcount_hit(h, pos);
        }
    }

    fn consume_impl<const SHARED: bool>(&self, hashes: &[u64], first_pos: u128, limit: u8) -> LocalStats {
        let nt = self.tables.len();
        let n = hashes.len();
        let mut st = LocalStats::default();
        // stack buffers for the usual N ≤ 8 (this runs once per read in
        // normalize/trim)
        let mut ring_stack = [0usize; PREFETCH_DIST * 8];
        let mut ring_heap = Vec::new();
        let ring: &mut [usize] = if nt <= 8 {
            &mut ring_stack[..PREFETCH_DIST * nt]
        } else {
            ring_heap.resize(PREFETCH_DIST * nt, 0);
            &mut ring_heap
        };
        let mut bases_stack = [std::ptr::null::<AtomicU8>(); 8];
        let bases_heap: Vec<*const AtomicU8>;
        let bases: &[*const AtomicU8] = if nt <= 8 {
            for (b, t) in bases_stack.iter_mut().zip(&self.tables) {
                *b = t.ptr();
            }
            &bases_stack[..nt]
        } else {
            bases_heap = self.tables.iter().map(|t| t.ptr()).collect();
            &bases_heap
        };
        for j in 0..n + PREFETCH_DIST {
            if j >= PREFETCH_DIST {
                let u = j - PREFETCH_DIST;
                let slot = (u % PREFETCH_DIST) * nt;
                let bins = &ring[slot..slot + nt];
                let pos = first_pos + u as u128;
                if SHARED {
                    let s = self.update_shared(hashes[u], bins, pos, limit);
                    st.occupied += s.occupied;
                    st.unique += s.unique;
                } else {
                    self.update_exclusive(hashes[u], bins, pos, &mut st);
                }
            }
            if j < n {
                let slot = (j % PREFETCH_DIST) * nt;
                let h = hashes[j];
                for i in 0..nt {
                    let b = self.mods[i].rem(h) as usize;
                    ring[slot + i] = b;
                    // SAFETY: only forms an address for the prefetch hint.
                    prefetch(bases[i].wrapping_add(b));
                }
            }
        }
        st
    }

    /// Table-partitioned update for several threads: the calling thread
    /// updates only the tables listed in `tables` (it must be the only
    /// thread touching them), in input order, with plain loads and stores.
    /// For each hash it writes `flags[j]`: bit 0 = one of its bins was 0,
    /// bit 1 = all of its bins were full. Returns the 0→1 transitions of
    /// table 0 if it owns table 0. Merging the flags of all partitions with
    /// [`merge_partition_flags`] and then [`Self::apply_merged_flags`] gives
    /// exactly the single-thread result (tables, statistics, bigcount).
    #[allow(clippy::needless_range_loop)]
    pub fn update_partition(&self, hashes: &[u64], tables: &[usize], flags: &mut [u8]) -> u64 {
        assert_eq!(hashes.len(), flags.len());
        let nt = tables.len();
        let n = hashes.len();
        if nt == 0 {
            flags.fill(2);
            return 0;
        }
        let mut occupied = 0u64;
        // fixed-size buffers for up to 8 tables: called once per read by
        // normalize's split lookup, so no allocation per call there
        let (mut ring_small, mut bases_small, mut mods_small);
        let (mut ring_big, mut bases_big, mut mods_big);
        let (ring, bases, mods): (&mut [usize], &mut [*const AtomicU8], &mut [FastMod]) = if nt <= 8 {
            ring_small = [0usize; PREFETCH_DIST * 8];
            bases_small = [std::ptr::null::<AtomicU8>(); 8];
            mods_small = [self.mods[tables[0]]; 8];
            (&mut ring_small[..PREFETCH_DIST * nt], &mut bases_small[..nt], &mut mods_small[..nt])
        } else {
            ring_big = vec![0usize; PREFETCH_DIST * nt];
            bases_big = vec![std::ptr::null::<AtomicU8>(); nt];
            mods_big = vec![self.mods[tables[0]]; nt];
            (&mut ring_big[..], &mut bases_big[..], &mut mods_big[..])
        };
        for (ti, &i) in tables.iter().enumerate() {
            bases[ti] = self.tables[i].ptr();
            mods[ti] = self.mods[i];
        }
        let owns0 = tables.first() == Some(&0);
        for j in 0..n + PREFETCH_DIST {
            if j >= PREFETCH_DIST {
                let u = j - PREFETCH_DIST;
                let slot = (u % PREFETCH_DIST) * nt;
                let mut zero = false;
                let mut n_full = 0usize;
                for (ti, &b) in ring[slot..slot + nt].iter().enumerate() {
                    // SAFETY: b < table size (b = h mod size); this thread
                    // is the only writer of this table.
                    let cell = unsafe { &*bases[ti].add(b) };
                    let c = cell.load(Relaxed);
                    let z = c == 0;
                    let full = c == MAX_COUNT;
                    zero |= z;
                    occupied += (z & (ti == 0) & owns0) as u64;
                    cell.store(c + (!full) as u8, Relaxed);
                    n_full += full as usize;
                }
                flags[u] = zero as u8 | (((n_full == nt) as u8) << 1);
            }
            if j < n {
                let slot = (j % PREFETCH_DIST) * nt;
                let h = hashes[j];
                for (ti, m) in mods.iter().enumerate() {
                    let b = m.rem(h) as usize;
                    ring[slot + ti] = b;
                    prefetch(bases[ti].wrapping_add(b));
                }
            }
        }
        occupied
    }

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
    /// grown). Small tables (all below 2^25 bins), batches of 2^24 hashes or
    /// more, and tables of 2^40 bins or more take the plain prefetched path.
    pub fn update_partition_sorted(&self, hashes: &[u64], tables: &[usize], flags: &mut [u8], scratch: &mut SortScratch) -> u64 {
        self.update_partition_sorted_with(hashes, tables, flags, scratch, SORT_MIN_BINS, REGION_BITS)
    }

    /// [`Self::update_partition_sorted`] with the size threshold and the
    /// region size as parameters (the tests sort small tables in tiny
    /// regions).
    fn update_partition_sorted_with(
        &self,
        hashes: &[u64],
        tables: &[usize],
        flags: &mut [u8],
        scratch: &mut SortScratch,
        min_bins: u64,
        region_bits: u32,
    ) -> u64 {
        assert_eq!(hashes.len(), flags.len());
        let n = hashes.len();
        let small = tables.iter().all(|&t| self.sizes[t] < min_bins);
        if small || n >= 1 << IDX_BITS || tables.iter().any(|&t| self.sizes[t] >= 1 << (64 - IDX_BITS)) {
            return self.update_partition(hashes, tables, flags);
        }
        flags.fill(2);
        let mut occupied = 0u64;
        for &t in tables {
            self.sort_by_bin_region(t, hashes, scratch, region_bits);
            let mut zeros = 0u64;
            // The calling thread is the only writer of this table.
            self.walk_sorted(t, &scratch.entries, |j, cell| {
                let c = cell.load(Relaxed);
                let zero = c == 0;
                let full = c == MAX_COUNT;
                zeros += zero as u64;
                cell.store(c + (!full) as u8, Relaxed);
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

    /// Calls `f(index, cell)` for each entry of `entries`, as
    /// [`Self::sort_by_bin_region`] left them for table `t`, in order: the
    /// entry's index in its batch and the counter of its bin, prefetched a
    /// few entries ahead.
    #[inline(always)]
    fn walk_sorted(&self, t: usize, entries: &[u64], mut f: impl FnMut(usize, &AtomicU8)) {
        const AHEAD: usize = 16;
        let base = self.tables[t].ptr();
        for i in 0..entries.len() {
            if let Some(&e) = entries.get(i + AHEAD) {
                prefetch(base.wrapping_add((e >> IDX_BITS) as usize));
            }
            let e = entries[i];
            // SAFETY: the bin is h mod the size of table t, so within it.
            let cell = unsafe { &*base.add((e >> IDX_BITS) as usize) };
            f((e & ((1 << IDX_BITS) - 1)) as usize, cell);
        }
    }

    /// `get` of every hash (as [`Self::get_many`]: one count per hash
    /// appended to `out`, in order), but each table is read in bin order
    /// after a counting sort, for the reason given at
    /// [`Self::update_partition_sorted`]: with gigabyte tables a sweep costs
    /// far less than random reads. Small tables and huge batches take
    /// [`Self::get_many`].
    pub fn get_many_sorted(&self, hashes: &[u64], out: &mut Vec<u16>, scratch: &mut SortScratch) {
        self.get_many_sorted_with(hashes, out, scratch, SORT_MIN_BINS, REGION_BITS)
    }

    fn get_many_sorted_with(&self, hashes: &[u64], out: &mut Vec<u16>, scratch: &mut SortScratch, min_bins: u64, region_bits: u32) {
        let n = hashes.len();
        if self.sizes.iter().all(|&s| s < min_bins) || n >= 1 << IDX_BITS || self.sizes.iter().any(|&s| s >= 1 << (64 - IDX_BITS)) {
            return self.get_many(hashes, out);
        }
        let first = out.len();
        out.resize(first + n, MAX_COUNT as u16);
        let mins = &mut out[first..];
        for t in 0..self.tables.len() {
            self.sort_by_bin_region(t, hashes, scratch, region_bits);
            self.walk_sorted(t, &scratch.entries, |j, cell| mins[j] = mins[j].min(cell.load(Relaxed) as u16));
        }
        self.apply_bigcounts(hashes, mins);
    }

    /// Replace each saturated minimum (255) in `counts` by the bigcount
    /// value of its hash, where bigcount is on and the map has one (the
    /// last step of [`Self::get`], for counts gathered in bulk).
    fn apply_bigcounts(&self, hashes: &[u64], counts: &mut [u16]) {
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

    /// For each hash, the minimum of its counters in `tables` only (one
    /// thread's share of a lookup split by table; see
    /// [`Self::combine_partial_mins`]). Prefetched ahead; `out` is replaced.
    pub fn partial_mins(&self, hashes: &[u64], tables: &[usize], out: &mut Vec<u8>) {
        out.clear();
        let nt = tables.len();
        if nt == 0 || nt > 8 {
            out.extend(hashes.iter().map(|&h| {
                tables.iter().map(|&t| self.tables[t].cell(self.mods[t].rem(h) as usize).load(Relaxed)).min().unwrap_or(MAX_COUNT)
            }));
            return;
        }
        let bases: [*const AtomicU8; 8] = std::array::from_fn(|i| if i < nt { self.tables[tables[i]].ptr() } else { std::ptr::null() });
        let mods: [FastMod; 8] = std::array::from_fn(|i| self.mods[tables[i.min(nt - 1)]]);
        let mut ring = [[0usize; 8]; PREFETCH_DIST];
        let n = hashes.len();
        for j in 0..n + PREFETCH_DIST {
            if j >= PREFETCH_DIST {
                let slot = &ring[(j - PREFETCH_DIST) % PREFETCH_DIST];
                let mut min = MAX_COUNT;
                for i in 0..nt {
                    // SAFETY: bin < table size (bin = h mod size).
                    min = min.min(unsafe { &*bases[i].add(slot[i]) }.load(Relaxed));
                }
                out.push(min);
            }
            if j < n {
                let slot = &mut ring[j % PREFETCH_DIST];
                for i in 0..nt {
                    let b = mods[i].rem(hashes[j]) as usize;
                    slot[i] = b;
                    prefetch(bases[i].wrapping_add(b));
                }
            }
        }
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

    /// abundance-dist's inner loop over a run of hashes, in order: skip a
    /// k-mer the tracking Bloom filter (same table sizes) has seen, else mark
    /// it and count `hist[get(h)]`. Bins are prefetched ahead in both.
    #[allow(clippy::needless_range_loop)]
    pub fn abundance_update(&self, tracking: &mut Nodegraph, hashes: &[u64], hist: &mut [u64]) {
        let nt = self.tables.len();
        assert_eq!(tracking.mods.len(), nt);
        let n = hashes.len();
        let mut ring = vec![0usize; PREFETCH_DIST * nt];
        let bases: Vec<*const AtomicU8> = self.tables.iter().map(|t| t.ptr()).collect();
        for j in 0..n + PREFETCH_DIST {
            if j >= PREFETCH_DIST {
                let u = j - PREFETCH_DIST;
                let slot = (u % PREFETCH_DIST) * nt;
                let bins = &ring[slot..slot + nt];
                if !tracking.test_and_set_bins(bins) {
                    let mut min = u8::MAX;
                    for (i, &b) in bins.iter().enumerate() {
                        // SAFETY: bin < table size.
                        min = min.min(unsafe { &*bases[i].add(b) }.load(Relaxed));
                    }
                    let v = if min == MAX_COUNT && self.use_bigcount {
                        match self.big.lock().unwrap().map.get(&hashes[u]) {
                            Some(&(v, _)) => v,
                            None => min as u16,
                        }
                    } else {
                        min as u16
                    };
                    hist[v as usize] += 1;
                }
            }
            if j < n {
                let slot = (j % PREFETCH_DIST) * nt;
                let h = hashes[j];
                for i in 0..nt {
                    let b = self.mods[i].rem(h) as usize;
                    ring[slot + i] = b;
                    prefetch(bases[i].wrapping_add(b));
                    tracking.prefetch_bin(i, b);
                }
            }
        }
    }

    /// Which tables thread `t` of `threads` owns in the partitioned mode.
    pub fn partition_tables(&self, t: usize, threads: usize) -> Vec<usize> {
        (0..self.tables.len()).filter(|i| i % threads == t).collect()
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

    /// The first byte of table `i` (`sizes()[i]` bytes). Reading through it
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
        self.tables[i].cell(b as usize).load(Relaxed)
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

/// Merge the flags of one partition into the running result (`acc` starts
/// as the first partition's flags): "some bin was 0" is OR-ed, "all bins
/// full" is AND-ed.
pub fn merge_partition_flags(acc: &mut [u8], other: &[u8]) {
    for (a, &b) in acc.iter_mut().zip(other) {
        *a = ((*a | b) & 1) | (*a & b & 2);
    }
}

/// khmer's Nodegraph semantics (one bit per bin, same prime sizes): the
/// "seen" test used by abundance-dist.
pub struct Nodegraph {
    mods: Vec<FastMod>,
    bits: Vec<Vec<u64>>,
}

impl Nodegraph {
    /// A Bloom filter with the given table sizes.
    pub fn with_sizes(sizes: &[u64]) -> Self {
        Nodegraph {
            mods: sizes.iter().map(|&s| FastMod::new(s.max(1))).collect(),
            bits: sizes.iter().map(|&s| vec![0u64; (s as usize).div_ceil(64)]).collect(),
        }
    }

    /// If all N bits of `h` are set return true ("seen"); otherwise set them
    /// and return false.
    #[inline]
    pub fn test_and_set(&mut self, h: u64) -> bool {
        let mut all = true;
        for (m, t) in self.mods.iter().zip(&mut self.bits) {
            let b = m.rem(h) as usize;
            let w = &mut t[b >> 6];
            let bit = 1u64 << (b & 63);
            if *w & bit == 0 {
                all = false;
                *w |= bit;
            }
        }
        all
    }

    /// `test_and_set` for a run of hashes in order (bits prefetched ahead);
    /// appends one "seen" flag per hash to `seen`.
    pub fn test_and_set_many(&mut self, hashes: &[u64], seen: &mut Vec<bool>) {
        let nt = self.mods.len();
        let n = hashes.len();
        seen.reserve(n);
        let mut ring = vec![0usize; PREFETCH_DIST * nt];
        for j in 0..n + PREFETCH_DIST {
            if j >= PREFETCH_DIST {
                let u = j - PREFETCH_DIST;
                let slot = (u % PREFETCH_DIST) * nt;
                let mut bins = [0usize; 32];
                let nb = nt.min(32);
                bins[..nb].copy_from_slice(&ring[slot..slot + nb]);
                let r = if nt <= 32 { self.test_and_set_bins(&bins[..nt]) } else { self.test_and_set(hashes[u]) };
                seen.push(r);
            }
            if j < n {
                let slot = (j % PREFETCH_DIST) * nt;
                let h = hashes[j];
                for i in 0..nt {
                    let b = self.mods[i].rem(h) as usize;
                    ring[slot + i] = b;
                    self.prefetch_bin(i, b);
                }
            }
        }
    }

    /// `test_and_set` with the bins already computed (same sizes).
    #[inline]
    pub fn test_and_set_bins(&mut self, bins: &[usize]) -> bool {
        let mut all = true;
        for (t, &b) in self.bits.iter_mut().zip(bins) {
            let w = &mut t[b >> 6];
            let bit = 1u64 << (b & 63);
            all &= *w & bit != 0;
            *w |= bit;
        }
        all
    }

    #[inline(always)]
    fn prefetch_bin(&self, table: usize, b: usize) {
        let p = self.bits[table].as_ptr().wrapping_add(b >> 6);
        prefetch(p as *const AtomicU8);
    }

    /// Whether all bits of `h` are set.
    pub fn get(&self, h: u64) -> bool {
        self.mods.iter().zip(&self.bits).all(|(m, t)| {
            let b = m.rem(h) as usize;
            t[b >> 6] & (1u64 << (b & 63)) != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::hash_kmer;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Naive oracle: khmer's add/get semantics with `%` and a HashMap.
    struct Oracle {
        sizes: Vec<u64>,
        t: Vec<HashMap<u64, u8>>,
        big: HashMap<u64, u16>,
        order: Vec<u64>,
        occupied: u64,
        unique: u64,
        bigcount: bool,
    }
    impl Oracle {
        fn new(sizes: Vec<u64>, bigcount: bool) -> Self {
            let n = sizes.len();
            Oracle { sizes, t: vec![HashMap::new(); n], big: HashMap::new(), order: vec![], occupied: 0, unique: 0, bigcount }
        }
        fn add(&mut self, h: u64) {
            let mut full = 0;
            let mut new = false;
            for i in 0..self.sizes.len() {
                let c = self.t[i].entry(h % self.sizes[i]).or_insert(0);
                if *c == 0 {
                    new = true;
                    if i == 0 {
                        self.occupied += 1;
                    }
                }
                if *c < 255 {
                    *c += 1
                } else {
                    full += 1
                }
            }
            if new {
                self.unique += 1;
            }
            if full == self.sizes.len() && self.bigcount {
                match self.big.get_mut(&h) {
                    Some(v) => *v = (*v).saturating_add(1),
                    None => {
                        self.big.insert(h, 256);
                        self.order.push(h);
                    }
                }
            }
        }
        fn get(&self, h: u64) -> u16 {
            let m = (0..self.sizes.len()).map(|i| *self.t[i].get(&(h % self.sizes[i])).unwrap_or(&0)).min().unwrap();
            if m == 255 && self.bigcount {
                if let Some(&v) = self.big.get(&h) {
                    return v;
                }
            }
            m as u16
        }
    }

    fn random_seqs(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let len = (rng.next() % 60) as usize + if i % 7 == 0 { 0 } else { 10 };
                (0..len)
                    .map(|_| {
                        let r = rng.next() % 100;
                        if r < 2 {
                            b'N'
                        } else if r < 4 {
                            b"acgt"[(r % 4) as usize]
                        } else if r < 60 {
                            b'A' // skew towards poly-A to reach saturation
                        } else {
                            b"ACGT"[(r % 4) as usize]
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn matches_oracle_single_and_shared() {
        for (k, x, n, bigcount) in
            [(5u32, 200u64, 3usize, true), (12, 1000, 4, true), (20, 100_000, 2, false), (32, 5000, 1, true), (40, 3000, 2, true)]
        {
            let mut rng = Rng(k as u64 * 977 + x);
            let seqs = random_seqs(&mut rng, 400);
            let mut g = Countgraph::new(k, x, n).unwrap();
            g.set_use_bigcount(bigcount);
            let g2 = {
                let mut g2 = Countgraph::new(k, x, n).unwrap();
                g2.set_use_bigcount(bigcount);
                g2
            };
            let mut o = Oracle::new(g.sizes().to_vec(), bigcount);
            for (si, s) in seqs.iter().enumerate() {
                g.consume(s, Cleaning::CppParser);
                let mut hs = Vec::new();
                hashes_into(s, k, Cleaning::CppParser, &mut hs);
                g2.consume_hashes_shared(&hs, si as u64, 2);
                for &h in &hs {
                    o.add(h);
                }
            }
            assert_eq!(g.n_occupied(), o.occupied);
            assert_eq!(g.n_unique_kmers(), o.unique);
            assert_eq!(g2.n_occupied(), o.occupied);
            assert_eq!(g2.n_unique_kmers(), o.unique);
            let mut exact: HashMap<u64, u64> = HashMap::new();
            for s in &seqs {
                for h in KmerIter::new(s, k, Cleaning::CppParser) {
                    *exact.entry(h).or_default() += 1;
                    assert_eq!(g.get(h), o.get(h));
                    assert_eq!(g2.get(h), o.get(h));
                }
            }
            // never under-estimates (up to the saturation limit)
            let cap = if bigcount { 65535 } else { 255 };
            for (&h, &c) in &exact {
                assert!(g.get(h) as u64 >= c.min(cap), "under-estimate");
            }
            let want: Vec<(u64, u16)> =
                crate::stlmap::std_unordered_order(o.order.iter().copied()).into_iter().map(|h| (h, o.big[&h])).collect();
            assert_eq!(g.bigcounts_in_file_order(), want);
            assert_eq!(g2.bigcounts_in_file_order(), want);
            if bigcount && k == 5 {
                assert!(!want.is_empty(), "test should reach bigcount");
            }
        }
    }

    #[test]
    fn saturation_without_bigcount() {
        let mut g = Countgraph::new(4, 100, 2).unwrap();
        let h = hash_kmer(b"ACGT").2;
        for _ in 0..1000 {
            g.consume_hashes(&[h], 0);
        }
        assert_eq!(g.get(h), 255);
        g.set_use_bigcount(true);
        for _ in 0..300 {
            g.add(h);
        }
        assert_eq!(g.get(h), 256 + 299);
    }

    #[test]
    fn threads_give_identical_tables() {
        let mut rng = Rng(99);
        let seqs = random_seqs(&mut rng, 2000);
        let mut batches: Vec<Vec<u64>> = Vec::new();
        for c in seqs.chunks(50) {
            let mut v = Vec::new();
            for s in c {
                hashes_into(s, 7, Cleaning::CppParser, &mut v);
            }
            batches.push(v);
        }
        let mk = || {
            let mut g = Countgraph::new(7, 3000, 3).unwrap();
            g.set_use_bigcount(true);
            g
        };
        let mut a = mk();
        for (i, b) in batches.iter().enumerate() {
            a.consume_hashes(b, i as u64);
        }
        let b = mk();
        std::thread::scope(|s| {
            for t in 0..4 {
                let b = &b;
                let batches = &batches;
                s.spawn(move || {
                    for (i, x) in batches.iter().enumerate() {
                        if i % 4 == t {
                            b.consume_hashes_shared(x, i as u64, 4);
                        }
                    }
                });
            }
        });
        let mut b = b;
        for i in 0..3 {
            assert_eq!(a.table_bytes(i), b.table_bytes(i));
        }
        assert_eq!(a.n_occupied(), b.n_occupied());
        let mut x = a.bigcounts_in_file_order();
        let mut y = b.bigcounts_in_file_order();
        x.sort();
        y.sort();
        assert_eq!(x.iter().map(|e| e.0).collect::<Vec<_>>(), y.iter().map(|e| e.0).collect::<Vec<_>>());
    }

    #[test]
    fn partitioned_equals_serial() {
        let mut rng = Rng(4242);
        let seqs = random_seqs(&mut rng, 1500);
        let mut hs = Vec::new();
        for s in &seqs {
            hashes_into(s, 6, Cleaning::CppParser, &mut hs);
        }
        for threads in [2usize, 3, 5] {
            let mut a = Countgraph::new(6, 2000, 4).unwrap();
            a.set_use_bigcount(true);
            let mut b = Countgraph::new(6, 2000, 4).unwrap();
            b.set_use_bigcount(true);
            for (ci, c) in hs.chunks(1000).enumerate() {
                a.consume_hashes(c, ci as u64);
                let mut parts: Vec<(Vec<u8>, u64)> = Vec::new();
                std::thread::scope(|s| {
                    let hs: Vec<_> = (0..threads)
                        .map(|t| {
                            let b = &b;
                            s.spawn(move || {
                                let mut f = vec![0u8; c.len()];
                                let o = b.update_partition(c, &b.partition_tables(t, threads), &mut f);
                                (f, o)
                            })
                        })
                        .collect();
                    for h in hs {
                        parts.push(h.join().unwrap());
                    }
                });
                let mut acc = parts[0].0.clone();
                for p in &parts[1..] {
                    merge_partition_flags(&mut acc, &p.0);
                }
                let occ: u64 = parts.iter().map(|p| p.1).sum();
                b.apply_merged_flags(c, &acc, occ, (ci as u128) << 64);
            }
            for i in 0..4 {
                assert!(a.table_bytes(i) == b.table_bytes(i));
            }
            assert_eq!(a.n_occupied(), b.n_occupied());
            assert_eq!(a.n_unique_kmers(), b.n_unique_kmers());
            assert_eq!(a.bigcounts_in_file_order(), b.bigcounts_in_file_order());
            assert!(a.n_bigcounts() > 0);
        }
    }

    #[test]
    fn sorted_partition_equals_serial() {
        let mut rng = Rng(515);
        let seqs = random_seqs(&mut rng, 1500);
        let mut hs = Vec::new();
        for s in &seqs {
            hashes_into(s, 6, Cleaning::CppParser, &mut hs);
        }
        for (threads, region_bits) in [(1usize, 0u32), (1, 4), (2, 3), (3, 20)] {
            let mut a = Countgraph::new(6, 2000, 4).unwrap();
            a.set_use_bigcount(true);
            let mut b = Countgraph::new(6, 2000, 4).unwrap();
            b.set_use_bigcount(true);
            let mut scratch: Vec<SortScratch> = (0..threads).map(|_| SortScratch::default()).collect();
            for (ci, c) in hs.chunks(1000).enumerate() {
                a.consume_hashes(c, ci as u64);
                let mut acc = Vec::new();
                let mut occ = 0;
                for (t, sc) in scratch.iter_mut().enumerate() {
                    let mut f = vec![0u8; c.len()];
                    occ += b.update_partition_sorted_with(c, &b.partition_tables(t, threads), &mut f, sc, 0, region_bits);
                    if t == 0 {
                        acc = f;
                    } else {
                        merge_partition_flags(&mut acc, &f);
                    }
                }
                b.apply_merged_flags(c, &acc, occ, (ci as u128) << 64);
            }
            for i in 0..4 {
                assert!(a.table_bytes(i) == b.table_bytes(i));
            }
            assert_eq!(a.n_occupied(), b.n_occupied());
            assert_eq!(a.n_unique_kmers(), b.n_unique_kmers());
            assert_eq!(a.bigcounts_in_file_order(), b.bigcounts_in_file_order());
            assert!(a.n_bigcounts() > 0);
        }
    }

    /// `n` random sequences and a small graph (k 7, 3 x 3000, bigcount on)
    /// fed the first half of them: saturated bins, bigcount values and
    /// absent k-mers among the second half's.
    fn half_consumed_graph(seed: u64, n: usize) -> (Countgraph, Vec<Vec<u8>>) {
        let mut rng = Rng(seed);
        let seqs = random_seqs(&mut rng, n);
        let mut g = Countgraph::new(7, 3000, 3).unwrap();
        g.set_use_bigcount(true);
        for s in &seqs[..n / 2] {
            g.consume(s, Cleaning::CppParser);
        }
        (g, seqs)
    }

    #[test]
    fn batched_lookups_match_direct() {
        let (g, seqs) = half_consumed_graph(777, 600);
        let mut tracking = Nodegraph::with_sizes(g.sizes());
        let mut tracking2 = Nodegraph::with_sizes(g.sizes());
        let mut hist = vec![0u64; 65536];
        let mut hist2 = vec![0u64; 65536];
        for s in &seqs {
            let mut hs = Vec::new();
            hashes_into(s, 7, Cleaning::CppParser, &mut hs);
            let mut c = Vec::new();
            g.get_many(&hs, &mut c);
            let direct: Vec<u16> = hs.iter().map(|&h| g.get(h)).collect();
            assert_eq!(c, direct);
            for cut in [0u16, 1, 2, 5, 200, 300] {
                assert_eq!(median_at_least_counts(&c, cut), g.median_at_least(s, cut, Cleaning::CppParser));
                assert_eq!(g.median_at_least_hashes(&hs, cut), g.median_at_least(s, cut, Cleaning::CppParser));
                assert_eq!(g.trim_at_hashes(&hs, s.len(), cut), g.trim_at(s, cut, Cleaning::CppParser));
                assert_eq!(trim_at_counts(&c, 7, s.len(), cut), g.trim_at(s, cut, Cleaning::CppParser));
            }
            assert_eq!(median_of_counts(&mut c.clone()), g.median_count(s, Cleaning::CppParser));
            g.abundance_update(&mut tracking, &hs, &mut hist);
            for &h in &hs {
                if !tracking2.test_and_set(h) {
                    hist2[g.get(h) as usize] += 1;
                }
            }
        }
        assert_eq!(hist, hist2);
        // the split (Bloom test here, counts elsewhere) gives the same
        let mut tracking3 = Nodegraph::with_sizes(g.sizes());
        let mut hist3 = vec![0u64; 65536];
        for s in &seqs {
            let mut hs = Vec::new();
            hashes_into(s, 7, Cleaning::CppParser, &mut hs);
            let mut seen = Vec::new();
            tracking3.test_and_set_many(&hs, &mut seen);
            let mut c = Vec::new();
            g.get_many(&hs, &mut c);
            for j in 0..hs.len() {
                if !seen[j] {
                    hist3[c[j] as usize] += 1;
                }
            }
        }
        assert_eq!(hist, hist3);
        assert!(hist[256..].iter().sum::<u64>() > 0, "bigcount values reached");
    }

    #[test]
    fn sorted_lookups_match_direct() {
        let (g, seqs) = half_consumed_graph(4242, 400);
        let mut all = Vec::new();
        for s in &seqs {
            hashes_into(s, 7, Cleaning::CppParser, &mut all);
        }
        let direct: Vec<u16> = all.iter().map(|&h| g.get(h)).collect();
        assert!(direct.iter().any(|&c| c > 255), "bigcount values reached");
        assert!(direct.contains(&0), "absent k-mers present");
        let mut scratch = SortScratch::default();
        for (min_bins, region_bits) in [(0, 3), (0, 6), (u64::MAX, 16)] {
            // appended after what `out` already holds, like get_many
            let mut out = vec![9u16];
            g.get_many_sorted_with(&all, &mut out, &mut scratch, min_bins, region_bits);
            assert_eq!(out[0], 9);
            assert_eq!(&out[1..], &direct[..], "min_bins {min_bins} region_bits {region_bits}");
        }
    }

    #[test]
    fn median_and_trim() {
        let mut g = Countgraph::new(4, 1000, 2).unwrap();
        g.consume(b"AAAAAAAA", Cleaning::Raw);
        // AAAA has count 5; read AAAAAACGT: kmers AAAA x3 then AAAC, AACG, ACGT
        let s = b"AAAAAACGT";
        assert_eq!(g.trim_at(s, 2, Cleaning::Raw), 4 + 3 - 1);
        assert!(g.median_at_least(s, 2, Cleaning::Raw)); // 3 of 6 k-mers >= 2, ceil(6/2) = 3
        assert!(!g.median_at_least(b"AAAACGTCC", 2, Cleaning::Raw));
        assert_eq!(g.median_count(s, Cleaning::Raw), 5);
    }

    #[test]
    fn merge_of_parts_equals_one_graph_fed_both() {
        let mut rng = Rng(7);
        let hashes: Vec<u64> = (0..20000).map(|_| rng.next() % 5000).collect();
        let (a_part, b_part) = hashes.split_at(12000);
        let mut whole = Countgraph::new(11, 1000, 3).unwrap();
        whole.consume_hashes(&hashes, 0);
        let mut a = Countgraph::new(11, 1000, 3).unwrap();
        a.consume_hashes(a_part, 0);
        let mut b = Countgraph::new(11, 1000, 3).unwrap();
        b.consume_hashes(b_part, 0);
        a.merge_from(&b).unwrap();
        for (i, t) in whole.tables.iter_mut().enumerate() {
            assert_eq!(t.as_bytes(), a.tables[i].as_bytes(), "table {i}");
        }
        assert_eq!(a.n_occupied(), whole.n_occupied());
        assert_eq!(a.n_unique_kmers(), 0);
        assert_eq!(a.merge_from(&Countgraph::new(11, 2000, 3).unwrap()), Err(TableError::Incompatible));
    }

    #[test]
    fn merge_sums_bigcounts_of_either_part() {
        let h = hash_kmer(b"ACGT").2;
        let graph = |n: usize| {
            let mut g = Countgraph::new(4, 100, 2).unwrap();
            g.set_use_bigcount(true);
            for _ in 0..n {
                g.add(h);
            }
            g
        };
        let mut a = graph(300);
        a.merge_from(&graph(100)).unwrap();
        assert_eq!(a.get(h), 400);
        let mut c = graph(200);
        c.merge_from(&graph(200)).unwrap();
        assert_eq!(c.get(h), 255, "past 255 only in the sum: saturated, no entry");
        let mut d = graph(60000);
        d.merge_from(&graph(60000)).unwrap();
        assert_eq!(d.get(h), MAX_BIGCOUNT);
    }
}
