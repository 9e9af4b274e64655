//! samtools 1.16's `collate` (`bamshuf.c`) order, reproduced exactly: each
//! record goes to bucket `hash(name) % buckets` (samtools' X31 string hash
//! finished by Wang's integer hash); the buckets are written in turn, each
//! sorted by (hash, name, READ1/READ2 bits) with klib's `ks_introsort`,
//! ported here operation for operation so that records that compare equal
//! (a read's secondary and supplementary copies) keep samtools' order too.
//! The fast mode (`-f`) pairs primary READ1/READ2 records in a window of
//! `-r` records as samtools' ring of stored reads does ([`FastPairing`]).

use crate::bam::flags;

/// samtools' `hash_X31_Wang` of a read name (without its NUL): khash's
/// X31 string hash finished by Wang's integer hash, 0 for an empty name.
#[inline]
pub fn name_hash(name: &[u8]) -> u32 {
    if name.first().map_or(true, |&c| c == 0) {
        return 0;
    }
    crate::khash_hash::wang_hash(crate::khash_hash::x31_hash(name))
}

/// The bucket samtools writes a record of this name to.
#[inline]
pub fn bucket_of(name: &[u8], buckets: u32) -> usize {
    (name_hash(name) % buckets) as usize
}

/// A record's bytes (`block_size` first) in an arena: its name and flag.
#[inline]
fn name_and_flag(arena: &[u8], offset: usize) -> (&[u8], u16) {
    let r = &arena[offset + 4..];
    let l_name = usize::from(r[8]);
    let name = &r[32..32 + l_name];
    let name = name.strip_suffix(b"\0").unwrap_or(name);
    (name, u16::from_le_bytes([r[14], r[15]]))
}

/// One record of a bucket being sorted: its name's hash and where its
/// bytes are.
#[derive(Clone, Copy, Debug)]
pub struct Keyed {
    key: u32,
    offset: usize,
}

/// The records of `arena` (each `block_size` and data, back to back),
/// keyed as samtools keys them; `out` is cleared first (reused).
pub fn keyed_records(arena: &[u8], out: &mut Vec<Keyed>) {
    out.clear();
    let mut at = 0;
    while at + 4 <= arena.len() {
        let size = u32::from_le_bytes(arena[at..at + 4].try_into().expect("4 bytes")) as usize;
        let (name, _) = name_and_flag(arena, at);
        out.push(Keyed { key: name_hash(name), offset: at });
        at += 4 + size;
    }
}

impl Keyed {
    /// The record's bytes (`block_size` first).
    pub fn bytes<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        let size = u32::from_le_bytes(arena[self.offset..self.offset + 4].try_into().expect("4 bytes")) as usize;
        &arena[self.offset..self.offset + 4 + size]
    }
}

/// samtools' `elem_lt`: by hash, then name (`strcmp`), then the READ1 and
/// READ2 bits.
#[inline]
fn less(arena: &[u8], x: &Keyed, y: &Keyed) -> bool {
    if x.key != y.key {
        return x.key < y.key;
    }
    let (xn, xf) = name_and_flag(arena, x.offset);
    let (yn, yf) = name_and_flag(arena, y.offset);
    match xn.cmp(yn) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => (xf >> 6 & 3) < (yf >> 6 & 3),
    }
}

/// klib's `__ks_insertsort`.
fn insertion_sort(arena: &[u8], a: &mut [Keyed]) {
    for i in 1..a.len() {
        let mut j = i;
        while j > 0 && less(arena, &a[j], &a[j - 1]) {
            a.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// klib's `ks_combsort`.
fn comb_sort(arena: &[u8], a: &mut [Keyed]) {
    #[allow(clippy::excessive_precision)]
    const SHRINK_FACTOR: f64 = 1.2473309501039786540366528676643;
    let n = a.len();
    let mut gap = n;
    loop {
        if gap > 2 {
            gap = (gap as f64 / SHRINK_FACTOR) as usize;
            if gap == 9 || gap == 10 {
                gap = 11;
            }
        }
        let mut swapped = false;
        for i in 0..n.saturating_sub(gap) {
            let j = i + gap;
            if less(arena, &a[j], &a[i]) {
                a.swap(i, j);
                swapped = true;
            }
        }
        if !(swapped || gap > 2) {
            break;
        }
    }
    if gap != 1 {
        insertion_sort(arena, a);
    }
}

/// klib's `ks_introsort` as samtools 1.16 runs it on a bucket: not a
/// stable sort, so equal records end where this algorithm puts them.
pub fn sort_bucket(arena: &[u8], a: &mut [Keyed]) {
    let n = a.len();
    if n < 1 {
        return;
    }
    if n == 2 {
        if less(arena, &a[1], &a[0]) {
            a.swap(0, 1);
        }
        return;
    }
    let mut d: u32 = 2;
    while (1usize << d) < n {
        d += 1;
    }
    // (left, right, depth) of the parts left for later.
    let mut stack: Vec<(usize, usize, u32)> = Vec::new();
    let (mut s, mut t) = (0usize, n - 1);
    let mut d = d << 1;
    loop {
        if s < t {
            d -= 1;
            if d == 0 {
                comb_sort(arena, &mut a[s..=t]);
                t = s;
                continue;
            }
            let (mut i, mut j) = (s, t);
            let mut k = i + ((j - i) >> 1) + 1;
            if less(arena, &a[k], &a[i]) {
                if less(arena, &a[k], &a[j]) {
                    k = j;
                }
            } else {
                k = if less(arena, &a[j], &a[i]) { i } else { j };
            }
            let pivot = a[k];
            if k != t {
                a.swap(k, t);
            }
            loop {
                i += 1;
                while less(arena, &a[i], &pivot) {
                    i += 1;
                }
                // `do --j; while (i <= j && lt(rp, *j))`: j may pass s by one.
                let mut jj = j as isize - 1;
                while (i as isize) <= jj && less(arena, &pivot, &a[jj as usize]) {
                    jj -= 1;
                }
                if jj <= i as isize {
                    break;
                }
                j = jj as usize;
                a.swap(i, j);
            }
            a.swap(i, t);
            if i - s > t - i {
                if i - s > 16 {
                    stack.push((s, i - 1, d));
                }
                s = if t - i > 16 { i + 1 } else { t };
            } else {
                if t - i > 16 {
                    stack.push((i + 1, t, d));
                }
                t = if i - s > 16 { i - 1 } else { s };
            }
        } else {
            match stack.pop() {
                None => {
                    insertion_sort(arena, a);
                    return;
                }
                Some((left, right, depth)) => {
                    (s, t, d) = (left, right, depth);
                }
            }
        }
    }
}

/// What [`FastPairing::push`] does with a record.
#[derive(Debug, PartialEq, Eq)]
pub enum FastStep {
    /// Not a primary READ1 or READ2: samtools' fast mode leaves it out.
    Dropped,
    /// Stored to wait for its mate.
    Stored {
        /// The slot of an older stored record pushed out of the window,
        /// to go to its bucket.
        evicted: Option<usize>,
    },
    /// Its mate was waiting: the pair goes out now.
    Paired {
        /// Where the mate is.
        slot: usize,
        /// The new record has READ1 set: it is written first.
        new_is_read1: bool,
    },
}

/// samtools' fast collate (`-f`): a ring of `store_max` records, with the
/// names of those waiting for a mate in a table (no allocation per
/// record: slots and table are reused).
pub struct FastPairing {
    slots: Vec<Vec<u8>>,
    written: Vec<bool>,
    index: usize,
    /// Open addressing over slot numbers plus one (0: empty), keyed by the
    /// slot's name; removals shift entries back (no tombstones).
    table: Vec<u32>,
}

impl FastPairing {
    /// A window of `store_max` records (samtools makes it at least 2).
    pub fn new(store_max: usize) -> FastPairing {
        let size = store_max.max(2);
        let table_len = (size * 2).next_power_of_two();
        FastPairing { slots: vec![Vec::new(); size], written: vec![true; size], index: 0, table: vec![0; table_len] }
    }

    /// A stored record's bytes (`block_size` first).
    pub fn slot(&self, slot: usize) -> &[u8] {
        &self.slots[slot]
    }

    fn slot_name(&self, slot: usize) -> &[u8] {
        name_and_flag(&self.slots[slot], 0).0
    }

    /// The table position holding `name`, or the empty one where it would go.
    fn probe(&self, name: &[u8]) -> (usize, bool) {
        let mask = self.table.len() - 1;
        let mut at = (crate::khash_hash::x31_hash(name) as usize) & mask;
        loop {
            match self.table[at] {
                0 => return (at, false),
                e if self.slot_name(e as usize - 1) == name => return (at, true),
                _ => at = (at + 1) & mask,
            }
        }
    }

    fn remove_at(&mut self, mut hole: usize) {
        let mask = self.table.len() - 1;
        self.table[hole] = 0;
        let mut at = (hole + 1) & mask;
        while self.table[at] != 0 {
            let e = self.table[at];
            let home = (crate::khash_hash::x31_hash(self.slot_name(e as usize - 1)) as usize) & mask;
            // Move back an entry whose home is not within (hole, at].
            let between = if hole <= at { home > hole && home <= at } else { home > hole || home <= at };
            if !between {
                self.table[hole] = e;
                self.table[at] = 0;
                hole = at;
            }
            at = (at + 1) & mask;
        }
    }

    /// Removes the table's entry of a stored slot: found from its name's
    /// home position by the slot number (names in the table are unique).
    fn remove_name_of(&mut self, slot: usize) {
        let mask = self.table.len() - 1;
        let mut at = (crate::khash_hash::x31_hash(self.slot_name(slot)) as usize) & mask;
        while self.table[at] != 0 {
            if self.table[at] as usize == slot + 1 {
                self.remove_at(at);
                return;
            }
            at = (at + 1) & mask;
        }
    }

    /// Takes the next record (`block_size` and data); what becomes of it.
    /// After `Stored { evicted: Some(s) }` the caller writes slot `s` to its
    /// bucket before the next call; after `Paired` it writes the pair.
    pub fn push(&mut self, record: &[u8]) -> FastStep {
        let (name, flag) = name_and_flag(record, 0);
        let read = flag & (flags::READ1 | flags::READ2);
        if flag & (flags::SECONDARY | flags::SUPPLEMENTARY) != 0 || !(read == flags::READ1 || read == flags::READ2) {
            return FastStep::Dropped;
        }
        let (at, found) = self.probe(name);
        if found {
            let slot = self.table[at] as usize - 1;
            self.remove_at(at);
            self.written[slot] = true;
            // The new record is read into the free slot at `index` and
            // written at once: it is never stored.
            return FastStep::Paired { slot, new_is_read1: flag & flags::READ1 != 0 };
        }
        let slot = self.index;
        self.slots[slot].clear();
        self.slots[slot].extend_from_slice(record);
        self.written[slot] = false;
        self.table[at] = slot as u32 + 1;
        self.index = (self.index + 1) % self.slots.len();
        let next = self.index;
        if self.written[next] {
            return FastStep::Stored { evicted: None };
        }
        self.written[next] = true;
        self.remove_name_of(next);
        FastStep::Stored { evicted: Some(next) }
    }

    /// The records still waiting at the end, in slot order (as samtools
    /// sends them to their buckets).
    pub fn leftovers(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.slots.len()).filter(|&s| !self.written[s]).map(|s| &self.slots[s][..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &[u8], flag: u16) -> Vec<u8> {
        let mut r = vec![0u8; 32];
        r[8] = (name.len() + 1) as u8;
        r[14..16].copy_from_slice(&flag.to_le_bytes());
        r.extend_from_slice(name);
        r.push(0);
        let mut out = (r.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&r);
        out
    }

    #[test]
    fn introsort_sorts_as_a_sort() {
        let mut arena = Vec::new();
        for i in 0..2000u32 {
            let name = format!("r{}", (i * 7919) % 613);
            arena.extend_from_slice(&record(name.as_bytes(), if i % 2 == 0 { 0x40 } else { 0x80 }));
        }
        let mut keyed = Vec::new();
        keyed_records(&arena, &mut keyed);
        sort_bucket(&arena, &mut keyed);
        for w in keyed.windows(2) {
            assert!(!less(&arena, &w[1], &w[0]));
        }
        assert_eq!(keyed.len(), 2000);
    }

    #[test]
    fn fast_pairing_pairs_and_evicts() {
        let mut p = FastPairing::new(2);
        assert_eq!(p.push(&record(b"a", 0x41)), FastStep::Stored { evicted: None });
        assert_eq!(p.push(&record(b"b", 0x41)), FastStep::Stored { evicted: Some(0) });
        assert_eq!(p.push(&record(b"b", 0x81)), FastStep::Paired { slot: 1, new_is_read1: false });
        assert_eq!(p.push(&record(b"c", 0x901)), FastStep::Dropped);
        assert_eq!(p.leftovers().count(), 0);
    }
}
