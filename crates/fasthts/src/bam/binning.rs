//! The hierarchical binning scheme shared by BAI and CSI.
//!
//! A binning index with `depth` levels below the root and a smallest interval
//! of `2^min_shift` bases numbers its bins breadth first: bin 0 covers the
//! whole coordinate space `[0, 2^(min_shift + 3 * depth))`, each bin has eight
//! children, and level `l` starts at bin [`bin_first`]`(l)`. BAI is the case
//! `min_shift = 14`, `depth = 5` (bins 0..=37448, 16 kb windows, 2^29 bases).
//!
//! These functions follow htslib's `hts_reg2bin`, `reg2bins` and `hts_bin_*`
//! exactly, including their handling of the `[-1, 0)` interval that htslib
//! uses for records without a coordinate.
//!
//! Supported parameters are `depth <= 10` and `min_shift + 3 * depth <= 62`
//! ([`MAX_DEPTH`], [`MAX_SPAN_SHIFT`]); other values are clamped into that
//! range rather than overflowing.

/// Deepest binning supported (bin numbers must fit in 32 bits).
pub const MAX_DEPTH: u32 = 10;
/// Largest supported `min_shift + 3 * depth` (coordinates are `i64`).
pub const MAX_SPAN_SHIFT: u32 = 62;

/// `(min_shift, depth)` clamped into the supported range.
pub(crate) fn clamp(min_shift: u32, depth: u32) -> (u32, u32) {
    let depth = depth.min(MAX_DEPTH);
    (min_shift.min(MAX_SPAN_SHIFT - 3 * depth), depth)
}

/// First bin number of level `level` (0 is the root): `(8^level - 1) / 7`.
///
/// ```
/// use fasthts::index::binning::bin_first;
/// assert_eq!(bin_first(0), 0);
/// assert_eq!(bin_first(1), 1);
/// assert_eq!(bin_first(5), 4681);
/// ```
pub fn bin_first(level: u32) -> u32 {
    let level = level.min(MAX_DEPTH + 1);
    (((1u64 << (3 * level)) - 1) / 7) as u32
}

/// Parent of a bin (`(bin - 1) / 8`); the root has no parent and gives 0.
///
/// ```
/// use fasthts::index::binning::bin_parent;
/// assert_eq!(bin_parent(4681), 585);
/// assert_eq!(bin_parent(1), 0);
/// ```
pub fn bin_parent(bin: u32) -> u32 {
    bin.saturating_sub(1) >> 3
}

/// Level of a bin: 0 for the root, `depth` for the smallest bins.
///
/// ```
/// use fasthts::index::binning::bin_level;
/// assert_eq!(bin_level(0), 0);
/// assert_eq!(bin_level(8), 1);
/// assert_eq!(bin_level(9), 2);
/// assert_eq!(bin_level(37448), 5);
/// ```
pub fn bin_level(bin: u32) -> u32 {
    let mut level = 0;
    let mut b = bin;
    while b != 0 {
        level += 1;
        b = bin_parent(b);
    }
    level
}

/// Index of the first smallest-size window (`2^min_shift` bases) covered by
/// `bin`, in an index of `depth` levels (htslib's `hts_bin_bot`).
///
/// ```
/// use fasthts::index::binning::bin_bottom;
/// assert_eq!(bin_bottom(0, 5), 0);
/// assert_eq!(bin_bottom(4681, 5), 0);
/// assert_eq!(bin_bottom(4682, 5), 1);
/// assert_eq!(bin_bottom(2, 5), 4096);
/// ```
pub fn bin_bottom(bin: u32, depth: u32) -> u64 {
    let depth = depth.min(MAX_DEPTH);
    let level = bin_level(bin).min(depth);
    let shift = 3 * depth.saturating_sub(level);
    u64::from(bin - bin_first(level)) << shift
}

/// Number of bins of an index with `depth` levels below the root,
/// `(8^(depth + 1) - 1) / 7`; the metadata pseudo-bin is this plus one.
///
/// ```
/// use fasthts::index::binning::bin_count;
/// assert_eq!(bin_count(5), 37449);
/// ```
pub fn bin_count(depth: u32) -> u32 {
    bin_first(depth.min(MAX_DEPTH) + 1)
}

/// The smallest bin that contains the whole zero-based, half-open interval
/// `[beg, end)` (htslib's `hts_reg2bin`).
///
/// `end` is exclusive; an empty interval (`end == beg`) is treated like
/// `[beg, beg]` by htslib's arithmetic, and the interval `[-1, 0)` (a record
/// without a coordinate) maps to bin `bin_first(depth) - 1`, as in htslib.
///
/// ```
/// use fasthts::index::binning::reg2bin;
/// // BAI parameters: 16 kb windows, 5 levels.
/// assert_eq!(reg2bin(0, 1, 14, 5), 4681);
/// assert_eq!(reg2bin(16383, 16384, 14, 5), 4681);
/// assert_eq!(reg2bin(16383, 16385, 14, 5), 585);
/// assert_eq!(reg2bin(0, 1 << 29, 14, 5), 0);
/// assert_eq!(reg2bin(-1, 0, 14, 5), 4680);
/// ```
pub fn reg2bin(beg: i64, end: i64, min_shift: u32, depth: u32) -> u32 {
    let (min_shift, depth) = clamp(min_shift, depth);
    let end = end.saturating_sub(1);
    let mut shift = min_shift;
    let mut first = i64::from(bin_first(depth));
    let mut level = depth;
    while level > 0 {
        if beg >> shift == end >> shift {
            return first.wrapping_add(beg >> shift) as u32;
        }
        level -= 1;
        shift += 3;
        first -= 1i64 << (3 * level);
    }
    0
}

/// Every bin that may hold records overlapping the zero-based, half-open
/// interval `[beg, end)`, level by level from the root (htslib's `reg2bins`).
/// Empty when `beg >= end`; a negative `beg` counts as 0 and `end` is
/// clipped to the index's coordinate space.
///
/// ```
/// use fasthts::index::binning::reg2bins;
/// assert_eq!(reg2bins(0, 1, 14, 5), vec![0, 1, 9, 73, 585, 4681]);
/// assert_eq!(reg2bins(16383, 16385, 14, 5), vec![0, 1, 9, 73, 585, 4681, 4682]);
/// assert!(reg2bins(5, 5, 14, 5).is_empty());
/// ```
pub fn reg2bins(beg: i64, end: i64, min_shift: u32, depth: u32) -> Vec<u32> {
    let mut bins = Vec::new();
    let beg = beg.max(0);
    if beg >= end {
        return bins;
    }
    let (min_shift, depth) = clamp(min_shift, depth);
    let mut shift = min_shift + 3 * depth;
    let limit = 1i64 << shift;
    let end = end.min(limit) - 1;
    let mut first = 0i64;
    for level in 0..=depth {
        let b = first + (beg >> shift);
        let e = first + (end >> shift);
        let mut i = b;
        while i <= e {
            bins.push(i as u32);
            i += 1;
        }
        first += 1i64 << (3 * level);
        shift = shift.saturating_sub(3);
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SAM specification's reference implementation of reg2bin for BAI,
    /// written out level by level (section 5.3).
    fn spec_reg2bin(beg: i64, end: i64) -> u32 {
        let end = end - 1;
        if beg >> 14 == end >> 14 {
            return (((1 << 15) - 1) / 7 + (beg >> 14)) as u32;
        }
        if beg >> 17 == end >> 17 {
            return (((1 << 12) - 1) / 7 + (beg >> 17)) as u32;
        }
        if beg >> 20 == end >> 20 {
            return (((1 << 9) - 1) / 7 + (beg >> 20)) as u32;
        }
        if beg >> 23 == end >> 23 {
            return (((1 << 6) - 1) / 7 + (beg >> 23)) as u32;
        }
        if beg >> 26 == end >> 26 {
            return (1 + (beg >> 26)) as u32;
        }
        0
    }

    /// The specification's reg2bins: all bins overlapping `[beg, end)`.
    fn spec_reg2bins(beg: i64, end: i64) -> Vec<u32> {
        let end = end - 1;
        let mut list = vec![0u32];
        for (first, shift) in [(1i64, 26), (9, 23), (73, 20), (585, 17), (4681, 14)] {
            for k in (first + (beg >> shift))..=(first + (end >> shift)) {
                list.push(k as u32);
            }
        }
        list
    }

    #[test]
    fn reg2bin_matches_spec_for_bai() {
        let points = [
            0i64,
            1,
            16383,
            16384,
            16385,
            131071,
            131072,
            1 << 20,
            (1 << 20) + 7,
            1 << 23,
            1 << 26,
            (1 << 26) + 1,
            (1 << 29) - 2,
            (1 << 29) - 1,
        ];
        for &beg in &points {
            for len in [
                1i64,
                2,
                100,
                16384,
                20000,
                1 << 17,
                1 << 20,
                1 << 23,
                1 << 26,
            ] {
                let end = (beg + len).min(1 << 29);
                if end <= beg {
                    continue;
                }
                assert_eq!(
                    reg2bin(beg, end, 14, 5),
                    spec_reg2bin(beg, end),
                    "[{beg}, {end})"
                );
                assert_eq!(
                    reg2bins(beg, end, 14, 5),
                    spec_reg2bins(beg, end),
                    "[{beg}, {end})"
                );
            }
        }
    }

    #[test]
    fn hand_checked_values() {
        // Level boundaries for BAI.
        assert_eq!(reg2bin(0, 1 << 14, 14, 5), 4681);
        assert_eq!(reg2bin(0, (1 << 14) + 1, 14, 5), 585);
        assert_eq!(reg2bin(0, 1 << 17, 14, 5), 585);
        assert_eq!(reg2bin(0, (1 << 17) + 1, 14, 5), 73);
        assert_eq!(reg2bin(0, (1 << 26) + 1, 14, 5), 0);
        assert_eq!(reg2bin((1 << 29) - 1, 1 << 29, 14, 5), 37448);
        // CSI with 6 levels: the space is 2^32.
        assert_eq!(bin_count(6), 299593);
        assert_eq!(reg2bin(0, 1, 14, 6), 37449);
        assert_eq!(
            reg2bin(900_000_000, 900_000_100, 14, 6),
            37449 + (900_000_000 >> 14)
        );
        assert_eq!(reg2bin(0, 1 << 29, 14, 6), 1);
        assert_eq!(reg2bin(0, (1 << 29) + 1, 14, 6), 0);
        // No coordinate.
        assert_eq!(reg2bin(-1, 0, 14, 6), 37448);
        // Bins covering the last window only.
        assert_eq!(
            reg2bins((1 << 29) - 1, 1 << 29, 14, 5),
            vec![0, 8, 72, 584, 4680, 37448]
        );
        // End clipped to the coordinate space.
        assert_eq!(
            reg2bins((1 << 29) - 1, i64::MAX, 14, 5),
            vec![0, 8, 72, 584, 4680, 37448]
        );
        assert!(reg2bins(1 << 29, i64::MAX, 14, 5).is_empty());
    }

    #[test]
    fn bin_geometry() {
        for bin in [0u32, 1, 8, 9, 72, 73, 584, 585, 4680, 4681, 37448] {
            let level = bin_level(bin);
            assert!(bin >= bin_first(level) && bin < bin_first(level + 1));
            if bin > 0 {
                assert_eq!(bin_level(bin_parent(bin)), level - 1);
            }
        }
        assert_eq!(bin_bottom(37448, 5), 32767);
        assert_eq!(bin_bottom(8, 5), 7 << 12);
    }
}
