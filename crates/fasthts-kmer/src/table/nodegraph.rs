//! khmer's Nodegraph: the presence Bloom filter abundance-dist uses.

use super::memory::prefetch;
use super::pass::{prefetched_pass, PREFETCH_DIST};
use crate::fastmod::FastMod;

/// khmer's Nodegraph semantics (one bit per bin, same prime sizes): the
/// "seen" test used by abundance-dist.
pub struct Nodegraph {
    pub(super) mods: Vec<FastMod>,
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
        seen.reserve(hashes.len());
        let words = self.word_ptrs();
        let Nodegraph { mods, bits } = self;
        prefetched_pass::<PREFETCH_DIST>(
            mods,
            hashes,
            |i, b| prefetch(words[i].wrapping_add(b >> 6)),
            |_, bins| {
                seen.push(test_and_set_bits(bits, bins));
                true
            },
        );
    }

    /// `test_and_set` with the bins already computed (same sizes).
    #[inline]
    pub fn test_and_set_bins(&mut self, bins: &[usize]) -> bool {
        test_and_set_bits(&mut self.bits, bins)
    }

    /// The first word of each table, for prefetching (the words of bin b
    /// are at `b >> 6`).
    pub(super) fn word_ptrs(&self) -> Vec<*const u64> {
        self.bits.iter().map(|t| t.as_ptr()).collect()
    }

    /// Whether all bits of `h` are set.
    pub fn get(&self, h: u64) -> bool {
        self.mods.iter().zip(&self.bits).all(|(m, t)| {
            let b = m.rem(h) as usize;
            t[b >> 6] & (1u64 << (b & 63)) != 0
        })
    }
}

/// [`Nodegraph::test_and_set_bins`] on the bit tables.
#[inline(always)]
fn test_and_set_bits(bits: &mut [Vec<u64>], bins: &[usize]) -> bool {
    let mut all = true;
    for (t, &b) in bits.iter_mut().zip(bins) {
        let w = &mut t[b >> 6];
        let bit = 1u64 << (b & 63);
        all &= *w & bit != 0;
        *w |= bit;
    }
    all
}
