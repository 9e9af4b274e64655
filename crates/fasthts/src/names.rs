//! Reference names → ids, for headers of any size: draft assemblies and
//! transcriptomes have hundreds of thousands of `@SQ` lines, and every
//! command maps them, so building and querying the map must stay linear
//! with a small constant (no allocation per name).

use std::hash::Hasher;

/// A fast non-keyed hash for reference names (FxHash-style, eight bytes at a
/// time, finished with murmur3's mixer); names come from the file's own
/// header or the command line, so flooding is not a concern.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NameHash;

impl std::hash::BuildHasher for NameHash {
    type Hasher = NameHasher;
    fn build_hasher(&self) -> NameHasher {
        NameHasher(0)
    }
}

pub(crate) struct NameHasher(u64);

impl NameHasher {
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let mut last = [0u8; 8];
        let r = chunks.remainder();
        last[..r.len()].copy_from_slice(r);
        self.add(u64::from_le_bytes(last) ^ (r.len() as u64) << 56);
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    /// The multiply-rotate rounds only carry bits upwards, so the low bits
    /// a table picks a slot with depend on little more than the names'
    /// first bytes: `contig_0000001`..`contig_0600000` fell into a few
    /// hundred buckets and mapping a 600,000-reference header went
    /// quadratic. murmur3's finaliser spreads every bit over all 64.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[inline]
fn hash(name: &[u8]) -> u64 {
    let mut h = NameHasher(0);
    h.write(name);
    h.finish()
}

/// Names → ids: the names' bytes back to back in one buffer, found through
/// an open-addressing table of indices (linear probing, at most half
/// full). A header's 600,000 names cost three allocations, not 600,000.
#[derive(Clone, Debug, Default)]
pub(crate) struct NameTable {
    bytes: Vec<u8>,
    /// Per name: where it ends in `bytes` (it starts where the previous
    /// one ends) and its id.
    entries: Vec<(usize, i32)>,
    /// Per slot: 0 when free, else 1 + the name's index in `entries`.
    slots: Vec<u32>,
}

impl NameTable {
    /// A table sized for `n` names.
    pub(crate) fn with_capacity(n: usize) -> NameTable {
        let mut t = NameTable { bytes: Vec::new(), entries: Vec::with_capacity(n), slots: Vec::new() };
        t.slots = vec![0; Self::slots_for(n)];
        t
    }

    /// A table of `names`, each mapped to its index (a repeated name keeps
    /// its first index).
    pub(crate) fn of<'a>(names: impl ExactSizeIterator<Item = &'a [u8]>) -> NameTable {
        let mut t = NameTable::with_capacity(names.len());
        for (i, name) in names.enumerate() {
            t.insert(name, i as i32);
        }
        t
    }

    fn slots_for(n: usize) -> usize {
        (n.max(4) * 2).next_power_of_two()
    }

    fn name(&self, k: usize) -> &[u8] {
        let start = if k == 0 { 0 } else { self.entries[k - 1].0 };
        &self.bytes[start..self.entries[k].0]
    }

    /// The slot holding `name` (`Ok`), or the free slot where it would go.
    #[inline]
    fn find(&self, name: &[u8]) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = hash(name) as usize & mask;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                s if self.name(s as usize - 1) == name => return Ok(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// The id of `name`.
    #[inline]
    pub(crate) fn get(&self, name: &[u8]) -> Option<i32> {
        if self.slots.is_empty() {
            return None;
        }
        self.find(name).ok().map(|i| self.entries[self.slots[i] as usize - 1].1)
    }

    /// Maps `name` to `id` unless it is mapped already; returns the id it
    /// had.
    pub(crate) fn insert(&mut self, name: &[u8], id: i32) -> Option<i32> {
        self.put(name, id, false)
    }

    /// Maps `name` to `id`, replacing what it was mapped to.
    pub(crate) fn set(&mut self, name: &[u8], id: i32) {
        self.put(name, id, true);
    }

    fn put(&mut self, name: &[u8], id: i32, replace: bool) -> Option<i32> {
        if self.slots.len() < Self::slots_for(self.entries.len() + 1) {
            self.grow();
        }
        match self.find(name) {
            Ok(i) => {
                let e = &mut self.entries[self.slots[i] as usize - 1];
                let old = e.1;
                if replace {
                    e.1 = id;
                }
                Some(old)
            }
            Err(i) => {
                self.bytes.extend_from_slice(name);
                self.entries.push((self.bytes.len(), id));
                self.slots[i] = u32::try_from(self.entries.len()).expect("fewer than 2^32 reference names");
                None
            }
        }
    }

    fn grow(&mut self) {
        let mut slots = vec![0u32; Self::slots_for(self.entries.len() + 1)];
        let mask = slots.len() - 1;
        for k in 0..self.entries.len() {
            let mut i = hash(self.name(k)) as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = k as u32 + 1;
        }
        self.slots = slots;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Names that differ only in their last digits must not share the low
    /// bits a table picks slots with (they did, and a header of 600,000
    /// `@SQ` lines took seconds to map).
    #[test]
    fn numbered_names_spread_over_slots() {
        let mask = (1u64 << 16) - 1;
        for pattern in ["contig_", "scaffold", "TRINITY_DN", "", "chrUn_random_"] {
            let slots: std::collections::HashSet<u64> = (0..1u32 << 15)
                .map(|i| {
                    let mut h = NameHash.build_hasher();
                    h.write(format!("{pattern}{i:07}").as_bytes());
                    h.finish() & mask
                })
                .collect();
            // 2^15 random picks among 2^16 slots land on ~25,800.
            assert!(slots.len() > 24_000, "{pattern}: {} slots", slots.len());
        }
    }

    #[test]
    fn table_maps_names_as_a_hash_map_does() {
        let mut t = NameTable::default();
        let mut m = std::collections::HashMap::new();
        let mut x = 1u64;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let name = format!("n{}", x % 5000).into_bytes();
            if i % 3 == 0 {
                t.set(&name, i);
                m.insert(name, i);
            } else {
                assert_eq!(t.insert(&name, i), m.get(&name).copied());
                m.entry(name).or_insert(i);
            }
        }
        for k in 0..6000 {
            let name = format!("n{k}").into_bytes();
            assert_eq!(t.get(&name), m.get(&name).copied());
        }
        assert_eq!(t.get(b""), None);
        assert_eq!(NameTable::default().get(b"x"), None);
        let of = NameTable::of([&b"a"[..], b"b", b"a", b""].into_iter());
        assert_eq!((of.get(b"a"), of.get(b"b"), of.get(b""), of.get(b"c")), (Some(0), Some(1), Some(3), None));
    }
}
