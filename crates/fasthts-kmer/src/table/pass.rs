//! The prefetched pass over a run of hashes that every table update and
//! lookup is built on, and the tables a pass works on.

use super::memory::prefetch;
use super::{Countgraph, MAX_COUNT};

/// Where counter `bin` of a table lives: its byte, and the shift of its
/// bits in that byte. Byte counters: byte `bin`, shift 0. Nibble counters
/// (khmer's SmallCountgraph): byte `bin / 2`, the high half (shift 4) for
/// an even bin, the low half for an odd one.
#[inline(always)]
pub(super) fn counter_at(nibbles: bool, bin: usize) -> (usize, u32) {
    let n = nibbles as u32;
    (bin >> n, ((!bin & 1) as u32 & n) << 2)
}

/// Adds 1 to the counter at `shift` in `cell` unless it is at `max`; the
/// only writer of the table (a plain load and store, branch-free). Returns
/// (it was 0, it was full).
#[inline(always)]
pub(super) fn bump(cell: &AtomicU8, shift: u32, max: u8) -> (bool, bool) {
    let byte = cell.load(Relaxed);
    let c = (byte >> shift) & max;
    let full = c == max;
    cell.store(byte + (((!full) as u8) << shift), Relaxed);
    (c == 0, full)
}
use crate::fastmod::FastMod;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// How many k-mers ahead the table passes compute and prefetch bins.
pub(super) const PREFETCH_DIST: usize = 16;

/// The same for the scans that may stop early (median, trim): an early stop
/// wastes fewer prefetches. 11 is the distance the scan was tuned at.
pub(super) const EARLY_STOP_DIST: usize = 11;

/// Tables whose addresses and prefetched bins a pass keeps on the stack;
/// graphs with more (khmer's default is 4) spill them to the heap, or take
/// the plain per-k-mer path where a pass runs once per read.
pub(super) const INLINE_TABLES: usize = 8;

/// The pass every table update and lookup makes over a run of hashes:
/// the bins of each k-mer (one per modulus of `mods`) are computed and
/// `prefetch_bin(table, bin)` is called `DIST` k-mers before
/// `visit(index, bins)` sees them, so many cache misses are in flight at
/// once (the passes are bound by memory latency). `visit` returning false
/// ends the pass. Allocates only for more than [`INLINE_TABLES`] tables.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // j runs DIST past the hashes
pub(super) fn prefetched_pass<const DIST: usize>(
    mods: &[FastMod],
    hashes: &[u64],
    mut prefetch_bin: impl FnMut(usize, usize),
    mut visit: impl FnMut(usize, &[usize]) -> bool,
) {
    let nt = mods.len();
    let mut inline = [0usize; PREFETCH_DIST * INLINE_TABLES];
    let mut spilled = Vec::new();
    let ring: &mut [usize] = if nt <= INLINE_TABLES && DIST <= PREFETCH_DIST {
        &mut inline[..DIST * nt]
    } else {
        spilled.resize(DIST * nt, 0);
        &mut spilled
    };
    let n = hashes.len();
    for j in 0..n + DIST {
        if j >= DIST {
            let u = j - DIST;
            let slot = (u % DIST) * nt;
            if !visit(u, &ring[slot..slot + nt]) {
                return;
            }
        }
        if j < n {
            let slot = (j % DIST) * nt;
            let h = hashes[j];
            for (i, m) in mods.iter().enumerate() {
                let b = m.rem(h) as usize;
                ring[slot + i] = b;
                prefetch_bin(i, b);
            }
        }
    }
}

/// What one add did to the bins of a k-mer in the tables it touched.
#[derive(Clone, Copy)]
pub(super) struct BinChanges {
    pub(super) any_was_zero: bool,
    /// the first table's bin was 0 (table 0's: the `occupied` statistic)
    pub(super) first_was_zero: bool,
    pub(super) all_were_full: bool,
}

/// The tables one pass reads or updates (all of a graph's, or one
/// thread's partition): their counters and moduli, on the stack for up to
/// [`INLINE_TABLES`] tables (normalize-by-median and trim-low-abund run a
/// pass per read).
pub(super) struct TableSet {
    len: usize,
    nibbles: bool,
    max: u8,
    inline_bases: [*const AtomicU8; INLINE_TABLES],
    inline_mods: [FastMod; INLINE_TABLES],
    spilled_bases: Vec<*const AtomicU8>,
    spilled_mods: Vec<FastMod>,
}

impl TableSet {
    pub(super) fn all(g: &Countgraph) -> Self {
        Self::new(g, 0..g.tables.len())
    }

    pub(super) fn of(g: &Countgraph, tables: &[usize]) -> Self {
        Self::new(g, tables.iter().copied())
    }

    #[inline(always)]
    fn new(g: &Countgraph, tables: impl ExactSizeIterator<Item = usize>) -> Self {
        let len = tables.len();
        let mut set = TableSet {
            len,
            nibbles: g.nibbles,
            max: g.max_count(),
            inline_bases: [std::ptr::null(); INLINE_TABLES],
            inline_mods: [g.mods[0]; INLINE_TABLES],
            spilled_bases: Vec::new(),
            spilled_mods: Vec::new(),
        };
        if len <= INLINE_TABLES {
            for (i, t) in tables.enumerate() {
                set.inline_bases[i] = g.tables[t].ptr();
                set.inline_mods[i] = g.mods[t];
            }
        } else {
            for t in tables {
                set.spilled_bases.push(g.tables[t].ptr());
                set.spilled_mods.push(g.mods[t]);
            }
        }
        set
    }

    #[inline(always)]
    fn bases(&self) -> &[*const AtomicU8] {
        if self.len <= INLINE_TABLES {
            &self.inline_bases[..self.len]
        } else {
            &self.spilled_bases
        }
    }

    #[inline(always)]
    fn mods(&self) -> &[FastMod] {
        if self.len <= INLINE_TABLES {
            &self.inline_mods[..self.len]
        } else {
            &self.spilled_mods
        }
    }

    /// [`prefetched_pass`] over these tables, prefetching their counters
    /// and, with `also_prefetch(table, bin)`, anything else the pass reads
    /// at the same bins.
    #[inline(always)]
    pub(super) fn pass<const DIST: usize>(
        &self,
        hashes: &[u64],
        mut also_prefetch: impl FnMut(usize, usize),
        visit: impl FnMut(usize, &[usize]) -> bool,
    ) {
        let bases = self.bases();
        let nibbles = self.nibbles as u32;
        prefetched_pass::<DIST>(
            self.mods(),
            hashes,
            |i, b| {
                prefetch(bases[i].wrapping_add(b >> nibbles));
                also_prefetch(i, b);
            },
            visit,
        );
    }

    /// The smallest counter at `bins` (as a pass gives them).
    #[inline(always)]
    pub(super) fn min_count(&self, bins: &[usize]) -> u8 {
        let mut min = MAX_COUNT;
        for (&base, &b) in self.bases().iter().zip(bins) {
            let (i, shift) = counter_at(self.nibbles, b);
            // SAFETY: b = h mod this table's size (the pass computed it
            // with this set's moduli), so its byte is within the table.
            min = min.min((unsafe { &*base.add(i) }.load(Relaxed) >> shift) & self.max);
        }
        min
    }

    /// Adds 1 to the counters at `bins` (as a pass gives them), saturating
    /// at 255. `ATOMIC`: a compare-and-swap, for tables other threads update
    /// too; otherwise a plain load and store, branch-free (whether a bin is
    /// empty or full is unpredictable), for the only writer of the tables.
    #[inline(always)]
    pub(super) fn increment<const ATOMIC: bool>(&self, bins: &[usize]) -> BinChanges {
        let mut any_zero = false;
        let mut first_zero = false;
        let mut n_full = 0usize;
        for (i, (&base, &b)) in self.bases().iter().zip(bins).enumerate() {
            let (byte_index, shift) = counter_at(self.nibbles, b);
            // SAFETY: as in `min_count`.
            let cell = unsafe { &*base.add(byte_index) };
            let (zero, full) = if ATOMIC {
                // Always a compare-and-swap: a `fetch_add` guarded by an
                // earlier load can wrap 255 to 0 when its thread stalls
                // between the two while others saturate the bin (seen under
                // heavy load). A nibble shares its byte with its neighbour,
                // which the swap keeps.
                let mut byte = cell.load(Relaxed);
                loop {
                    let c = (byte >> shift) & self.max;
                    if c == self.max {
                        break (false, true);
                    }
                    match cell.compare_exchange_weak(byte, byte + (1 << shift), Relaxed, Relaxed) {
                        Ok(_) => break (c == 0, false),
                        Err(v) => byte = v,
                    }
                }
            } else {
                bump(cell, shift, self.max)
            };
            any_zero |= zero;
            first_zero |= zero & (i == 0);
            n_full += full as usize;
        }
        BinChanges { any_was_zero: any_zero, first_was_zero: first_zero, all_were_full: n_full == bins.len() }
    }
}
