//! Byte-level helpers for text that htslib handles as C strings: the byte
//! at an index with NUL past the end, the bytes up to the first NUL, and a
//! word-at-a-time search for one of two bytes.

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `x` that is zero (exact for the lowest one).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// Index of the first byte equal to `a` or `b`, eight bytes at a time.
#[inline]
pub(super) fn find2(h: &[u8], a: u8, b: u8) -> Option<usize> {
    let (va, vb) = (LO * u64::from(a), LO * u64::from(b));
    let mut chunks = h.chunks_exact(8);
    let mut i = 0;
    for c in &mut chunks {
        let x = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let m = zero_bytes(x ^ va) | zero_bytes(x ^ vb);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    chunks.remainder().iter().position(|&c| c == a || c == b).map(|k| i + k)
}

/// Byte at `i`, or 0 past the end (htslib parses NUL-terminated lines).
#[inline(always)]
pub(super) fn at(s: &[u8], i: usize) -> u8 {
    match s.get(i) {
        Some(&c) => c,
        None => 0,
    }
}

/// The bytes up to the first NUL, as C's string functions see them.
pub(super) fn c_str(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n])
}
