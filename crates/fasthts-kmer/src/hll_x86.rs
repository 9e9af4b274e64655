//! The HyperLogLog k-mer hashes eight at a time with AVX-512 (F, DQ for
//! 64-bit multiplies, VBMI for the byte permute, CD for leading zeros): the same MurmurHash3
//! steps as the scalar `murmur_h1_padded`, one k-mer per 64-bit lane.
//! Eight consecutive k-mers' words are eight overlapping 8-byte windows of
//! 15 bytes, so each word vector is one 16-byte load and one permute.

use super::{HllCounter, KeyShape, C1, C2};
use std::arch::x86_64::*;

/// Whether this CPU has the instructions [`add_kmers_x8`] uses.
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vbmi")
        && is_x86_feature_detected!("avx512cd")
}

/// Adds the `n` k-mers as `HllCounter::add_kmers` does and returns `n`,
/// or returns 0 (adding none) for fewer than 8. `fwd` and `rc` are padded
/// (`PADDING` bytes after the read).
///
/// # Safety
/// The CPU must have the features [`available`] checks.
#[target_feature(enable = "avx512f,avx512dq,avx512vbmi,avx512cd")]
pub(super) unsafe fn add_kmers_x8(h: &mut HllCounter, fwd: &[u8], rc: &[u8], n: usize, key: KeyShape) -> usize {
    // lane l's word starts l bytes into the forward load, and (the reverse
    // complements running backwards) 7 - l bytes into the reverse one
    let fwd_windows = _mm512_set_epi8(
        14, 13, 12, 11, 10, 9, 8, 7, 13, 12, 11, 10, 9, 8, 7, 6, 12, 11, 10, 9, 8, 7, 6, 5, 11, 10, 9, 8, 7, 6, 5, 4, 10, 9, 8, 7, 6, 5, 4,
        3, 9, 8, 7, 6, 5, 4, 3, 2, 8, 7, 6, 5, 4, 3, 2, 1, 7, 6, 5, 4, 3, 2, 1, 0,
    );
    let rc_windows = _mm512_set_epi8(
        7, 6, 5, 4, 3, 2, 1, 0, 8, 7, 6, 5, 4, 3, 2, 1, 9, 8, 7, 6, 5, 4, 3, 2, 10, 9, 8, 7, 6, 5, 4, 3, 11, 10, 9, 8, 7, 6, 5, 4, 12, 11,
        10, 9, 8, 7, 6, 5, 13, 12, 11, 10, 9, 8, 7, 6, 14, 13, 12, 11, 10, 9, 8, 7,
    );
    let (c1, c2) = (_mm512_set1_epi64(C1 as i64), _mm512_set1_epi64(C2 as i64));
    let (low_mask, high_mask) = (_mm512_set1_epi64(key.low_mask as i64), _mm512_set1_epi64(key.high_mask as i64));
    let len = _mm512_set1_epi64(key.len as i64);
    // the 8 words at `at` bytes into the keys starting at `base..base + 8`
    let words = |buf: &[u8], base: usize, windows: __m512i| {
        let bytes: &[u8; 16] = buf[base..base + 16].try_into().unwrap();
        // SAFETY: 16 readable bytes (`bytes`), loaded unaligned
        _mm512_permutexvar_epi8(windows, _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }))
    };
    let mix_k1 = |k: __m512i| _mm512_mullo_epi64(_mm512_rol_epi64::<31>(_mm512_mullo_epi64(k, c1)), c2);
    let mix_k2 = |k: __m512i| _mm512_mullo_epi64(_mm512_rol_epi64::<33>(_mm512_mullo_epi64(k, c2)), c1);
    // x * 5 + c
    let times5_plus = |x: __m512i, c: i64| _mm512_add_epi64(_mm512_add_epi64(_mm512_slli_epi64::<2>(x), x), _mm512_set1_epi64(c));
    let fmix = |k: __m512i| {
        let k = _mm512_xor_si512(k, _mm512_srli_epi64::<33>(k));
        let k = _mm512_mullo_epi64(k, _mm512_set1_epi64(0xff51_afd7_ed55_8ccd_u64 as i64));
        let k = _mm512_xor_si512(k, _mm512_srli_epi64::<33>(k));
        let k = _mm512_mullo_epi64(k, _mm512_set1_epi64(0xc4ce_b9fe_1a85_ec53_u64 as i64));
        _mm512_xor_si512(k, _mm512_srli_epi64::<33>(k))
    };
    let hash = |buf: &[u8], base: usize, windows: __m512i| {
        let (mut h1, mut h2) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut at = base;
        for _ in 0..key.blocks {
            h1 = _mm512_xor_si512(h1, mix_k1(words(buf, at, windows)));
            h1 = times5_plus(_mm512_add_epi64(_mm512_rol_epi64::<27>(h1), h2), 0x52dc_e729);
            h2 = _mm512_xor_si512(h2, mix_k2(words(buf, at + 8, windows)));
            h2 = times5_plus(_mm512_add_epi64(_mm512_rol_epi64::<31>(h2), h1), 0x3849_5ab5);
            at += 16;
        }
        h2 = _mm512_xor_si512(h2, mix_k2(_mm512_and_si512(words(buf, at + 8, windows), high_mask)));
        h1 = _mm512_xor_si512(h1, mix_k1(_mm512_and_si512(words(buf, at, windows), low_mask)));
        h1 = _mm512_xor_si512(h1, len);
        h2 = _mm512_xor_si512(h2, len);
        h1 = _mm512_add_epi64(h1, h2);
        h2 = _mm512_add_epi64(h2, h1);
        _mm512_add_epi64(fmix(h1), fmix(h2))
    };
    let k = key.len;
    let index_mask = _mm512_set1_epi64(h.counters.len() as i64 - 1);
    let p = h.p as i64;
    let (mut index, mut rank) = ([0u64; 8], [0u64; 8]);
    let mut add_group = |start: usize| {
        // forward k-mers start..start+8; their reverse complements start
        // at n-1-start down to n-8-start
        let f = hash(fwd, start, fwd_windows);
        let r = hash(rc, n - 8 - start, rc_windows);
        let mut x = _mm512_xor_si512(f, r);
        let equal = _mm512_cmpeq_epi64_mask(f, r);
        if equal != 0 {
            // a palindrome keeps its forward hash (`HllCounter::add_pair`)
            let palindromes = (0..8).filter(|&l| equal >> l & 1 == 1).fold(0u8, |m, l| {
                let (i, j) = (start + l, n - 1 - start - l);
                if fwd[i..i + k] == rc[j..j + k] {
                    m | 1 << l
                } else {
                    m
                }
            });
            x = _mm512_mask_mov_epi64(x, palindromes, f);
        }
        // `HllCounter::add_hash`: the counter, and the leading zeros of
        // the rest + 1 (64 for a zero rest)
        let zeros = _mm512_lzcnt_epi64(_mm512_srlv_epi64(x, _mm512_set1_epi64(p)));
        // SAFETY: each array is 64 writable bytes, stored unaligned
        unsafe {
            _mm512_storeu_si512(index.as_mut_ptr().cast(), _mm512_and_si512(x, index_mask));
            _mm512_storeu_si512(rank.as_mut_ptr().cast(), _mm512_sub_epi64(zeros, _mm512_set1_epi64(p - 1)));
        }
        for l in 0..8 {
            let c = &mut h.counters[index[l] as usize];
            *c = (*c).max(rank[l] as u8);
        }
    };
    if n < 8 {
        return 0;
    }
    let mut start = 0;
    while start + 8 <= n {
        add_group(start);
        start += 8;
    }
    if start < n {
        // the last k-mers in a group that ends at the last one: a counter
        // keeps a maximum, so the k-mers added twice change nothing
        add_group(n - 8);
    }
    n
}
