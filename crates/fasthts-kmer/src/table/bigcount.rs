//! The bigcount map: the counts above 255 of k-mers whose bins are all
//! saturated, each with the input position of the add that created it
//! (the file order is replayed from those positions).

use super::{MAX_BIGCOUNT, MAX_COUNT};
use std::collections::HashMap;

/// A fast hasher for the u64 k-mer keys of the bigcount map (the keys are
/// two-bit k-mer values, so mix them with a multiply; no DoS concern here).
#[derive(Default, Clone, Copy)]
pub(super) struct KeyHasher(u64);

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

pub(super) type KeyBuild = std::hash::BuildHasherDefault<KeyHasher>;

#[derive(Default)]
pub(super) struct BigCounts {
    /// hash → (count, position of the add that created the entry)
    pub(super) map: HashMap<u64, (u16, u128), KeyBuild>,
}

impl BigCounts {
    /// One more add of `h` (at add position `pos`) to a k-mer whose bins
    /// are all saturated.
    pub(super) fn hit(&mut self, h: u64, pos: u128) {
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
