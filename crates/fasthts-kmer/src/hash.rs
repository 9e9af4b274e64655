//! khmer's two-bit "exact" canonical k-mer hash (k ≤ 32).
//!
//! Base codes are khmer's, not the usual A,C,G,T order: `A`=0, `T`=1, `C`=2 and
//! every other byte = 3 (as `G`). The complement of a code is `code ^ 1`.
//! The forward value packs the first base into the most significant used bits;
//! the reverse value packs the reverse complement the same way; the canonical
//! hash is `min(forward, reverse)` (unsigned).
//!
//! Scripts clean the sequence before hashing, and the cleaning differs per
//! script. Instead of copying a cleaned sequence, each cleaning rule is folded
//! into a 256-entry code table ([`Cleaning`]).

use std::ops::{BitAnd, BitOr, Shl, Shr};

/// Largest k of khmer's exact two-bit hash (khmer's countgraph limit).
pub const MAX_K: u32 = 32;

/// Largest k of the fasthts extension: for 32 < k ≤ 64 the forward and
/// reverse-complement two-bit values are kept in 128 bits (same base codes,
/// rolled the same way), the canonical value is their minimum, and it is
/// folded to 64 bits with [`mix128`]. Not a khmer format: khmer cannot read
/// such tables.
pub const MAX_K_EXT: u32 = 64;

/// Fold a 128-bit canonical k-mer value to the 64-bit table hash (k > 32).
#[inline(always)]
pub fn mix128(c: u128) -> u64 {
    let lo = c as u64;
    let hi = (c >> 64) as u64;
    let x = lo ^ hi.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    let x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

/// The two-bit value of a k-mer: `u64` for khmer's k ≤ 32, `u128` for the
/// extension to k ≤ 64 (folded to the 64-bit table hash by [`mix128`]).
trait KmerBits:
    Copy + Ord + From<u8> + Shl<u32, Output = Self> + Shr<u32, Output = Self> + BitOr<Output = Self> + BitAnd<Output = Self>
{
    /// The low `2k` bits set.
    fn mask(k: u32) -> Self;
    /// The 64-bit table hash of a canonical value.
    fn table_hash(self) -> u64;
}

impl KmerBits for u64 {
    #[inline(always)]
    fn mask(k: u32) -> u64 {
        kmer_mask(k)
    }
    #[inline(always)]
    fn table_hash(self) -> u64 {
        self
    }
}

impl KmerBits for u128 {
    #[inline(always)]
    fn mask(k: u32) -> u128 {
        if k >= 64 {
            u128::MAX
        } else {
            (1u128 << (2 * k)) - 1
        }
    }
    #[inline(always)]
    fn table_hash(self) -> u64 {
        mix128(self)
    }
}

/// The forward and reverse-complement values after one more base of
/// two-bit `code`: the forward value shifts it in at the low end (keeping
/// `mask`), the reverse value shifts its complement in at bit `shift`.
#[inline(always)]
fn roll<W: KmerBits>(f: W, r: W, code: u8, mask: W, shift: u32) -> (W, W) {
    (((f << 2) | W::from(code)) & mask, (r >> 2) | (W::from(code ^ 1) << shift))
}

/// [`hashes_into`] for a sequence of at least `k` bases, with `W` wide
/// enough for k.
#[inline(always)]
fn rolling_hashes_into<W: KmerBits>(seq: &[u8], k: usize, t: &[u8; 256], out: &mut Vec<u64>) {
    let mask = W::mask(k as u32);
    let shift = 2 * (k as u32 - 1);
    let (mut f, mut r) = (W::from(0), W::from(0));
    for &c in &seq[..k - 1] {
        (f, r) = roll(f, r, t[c as usize], mask, shift);
    }
    out.reserve(seq.len() - k + 1);
    for &c in &seq[k - 1..] {
        (f, r) = roll(f, r, t[c as usize], mask, shift);
        out.push(f.min(r).table_hash());
    }
}

/// How a script cleans a sequence before hashing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleaning {
    /// The raw hash: `A`,`T`,`C` as themselves, every other byte as `G`
    /// (what khmer's hash functions do on an uncleaned string).
    Raw,
    /// khmer's C++ `cleaned_seq` (load-into-counting, abundance-dist,
    /// filter-abund, trim-low-abund): `ACGT` kept, `acgt` upper-cased, every
    /// other byte becomes `A`.
    CppParser,
    /// normalize-by-median's Python cleaning `seq.upper().replace('N','A')`:
    /// `N`/`n` become `A`; other IUPAC letters survive and hash as `G`.
    Screed,
}

const fn build_table(cleaning: Cleaning) -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = match cleaning {
            Cleaning::Raw => match c {
                b'A' => 0,
                b'T' => 1,
                b'C' => 2,
                _ => 3,
            },
            Cleaning::CppParser => match c {
                b'A' | b'a' => 0,
                b'T' | b't' => 1,
                b'C' | b'c' => 2,
                b'G' | b'g' => 3,
                _ => 0,
            },
            Cleaning::Screed => match c {
                b'A' | b'a' | b'N' | b'n' => 0,
                b'T' | b't' => 1,
                b'C' | b'c' => 2,
                _ => 3,
            },
        };
        i += 1;
    }
    t
}

static TABLE_RAW: [u8; 256] = build_table(Cleaning::Raw);
static TABLE_CPP: [u8; 256] = build_table(Cleaning::CppParser);
static TABLE_SCREED: [u8; 256] = build_table(Cleaning::Screed);

impl Cleaning {
    /// The byte → two-bit code table for this cleaning rule.
    #[inline]
    pub fn table(self) -> &'static [u8; 256] {
        match self {
            Cleaning::Raw => &TABLE_RAW,
            Cleaning::CppParser => &TABLE_CPP,
            Cleaning::Screed => &TABLE_SCREED,
        }
    }

    /// The cleaned sequence as khmer would build it (for tests and for the
    /// rare caller that needs the string).
    pub fn clean(self, seq: &[u8]) -> Vec<u8> {
        seq.iter()
            .map(|&c| match self {
                Cleaning::Raw => c,
                Cleaning::CppParser => match c {
                    b'A' | b'C' | b'G' | b'T' => c,
                    b'a' | b'c' | b'g' | b't' => c & 0xDF,
                    _ => b'A',
                },
                Cleaning::Screed => {
                    let u = c.to_ascii_uppercase();
                    if u == b'N' {
                        b'A'
                    } else {
                        u
                    }
                }
            })
            .collect()
    }
}

/// Bit mask of the low `2k` bits.
#[inline]
pub fn kmer_mask(k: u32) -> u64 {
    if k >= 32 {
        u64::MAX
    } else {
        (1u64 << (2 * k)) - 1
    }
}

/// Forward, reverse and canonical two-bit values of one k-mer (`seq.len() == k`)
/// under the raw codes (the sequence is assumed already cleaned).
pub fn hash_kmer(seq: &[u8]) -> (u64, u64, u64) {
    hash_kmer_with(seq, Cleaning::Raw)
}

/// As [`hash_kmer`], cleaning with `cleaning`.
///
/// For 32 < k ≤ 64 (the extension) the three values are the folded forward,
/// reverse and canonical values (`mix128` of each 128-bit value).
pub fn hash_kmer_with(seq: &[u8], cleaning: Cleaning) -> (u64, u64, u64) {
    let k = seq.len();
    assert!((1..=MAX_K_EXT as usize).contains(&k), "k must be in 1..=64");
    let t = cleaning.table();
    if k > 32 {
        kmer_values::<u128>(seq, t)
    } else {
        kmer_values::<u64>(seq, t)
    }
}

/// [`hash_kmer_with`] with `W` wide enough for the k-mer.
fn kmer_values<W: KmerBits>(seq: &[u8], t: &[u8; 256]) -> (u64, u64, u64) {
    let k = seq.len() as u32;
    let (mut f, mut r) = (W::from(0), W::from(0));
    for (i, &c) in (0u32..).zip(seq) {
        let code = t[c as usize];
        f = f | (W::from(code) << (2 * (k - 1 - i)));
        r = r | (W::from(code ^ 1) << (2 * i));
    }
    (f.table_hash(), r.table_hash(), f.min(r).table_hash())
}

/// Rolling iterator over the canonical hashes of all k-mers of a sequence, in
/// order of start position. A sequence shorter than k yields nothing.
pub struct KmerIter<'a> {
    long: Option<std::vec::IntoIter<u64>>,
    seq: &'a [u8],
    table: &'static [u8; 256],
    pos: usize,
    f: u64,
    r: u64,
    mask: u64,
    shift: u32,
}

impl<'a> KmerIter<'a> {
    /// Iterate the k-mers of `seq` (k in 1..=32) with the given cleaning.
    pub fn new(seq: &'a [u8], k: u32, cleaning: Cleaning) -> Self {
        assert!((1..=MAX_K_EXT).contains(&k), "k must be in 1..=64");
        let table = cleaning.table();
        let long = if k > MAX_K {
            let mut v = Vec::new();
            hashes_into(seq, k, cleaning, &mut v);
            Some(v.into_iter())
        } else {
            None
        };
        let k = (k as usize).min(32);
        let mut it =
            KmerIter { long, seq, table, pos: k.saturating_sub(1), f: 0, r: 0, mask: kmer_mask(k as u32), shift: 2 * (k as u32 - 1) };
        if seq.len() >= k {
            for &c in &seq[..k - 1] {
                it.push(c);
            }
        } else {
            it.pos = seq.len();
        }
        it
    }

    #[inline(always)]
    fn push(&mut self, c: u8) {
        (self.f, self.r) = roll(self.f, self.r, self.table[c as usize], self.mask, self.shift);
    }
}

impl Iterator for KmerIter<'_> {
    type Item = u64;
    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        if let Some(l) = self.long.as_mut() {
            return l.next();
        }
        if self.pos >= self.seq.len() {
            return None;
        }
        // SAFETY-free indexing: bounds checked above.
        let c = self.seq[self.pos];
        self.pos += 1;
        self.push(c);
        Some(self.f.min(self.r))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if let Some(l) = self.long.as_ref() {
            return l.size_hint();
        }
        let n = self.seq.len().saturating_sub(self.pos);
        (n, Some(n))
    }
}

/// Append the canonical hashes of every k-mer of `seq` to `out`.
#[inline]
pub fn hashes_into(seq: &[u8], k: u32, cleaning: Cleaning, out: &mut Vec<u64>) {
    let k = k as usize;
    if seq.len() < k {
        return;
    }
    let t = cleaning.table();
    if k > 32 {
        rolling_hashes_into::<u128>(seq, k, t, out);
    } else {
        rolling_hashes_into::<u64>(seq, k, t, out);
    }
}

/// The k-mer string of a canonical or forward hash (A,T,C,G codes), for
/// debugging and tests.
pub fn reverse_hash(mut h: u64, k: u32) -> String {
    let mut s = vec![b'A'; k as usize];
    for i in (0..k as usize).rev() {
        s[i] = b"ATCG"[(h & 3) as usize];
        h >>= 2;
    }
    String::from_utf8(s).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> u64 {
        hash_kmer(s.as_bytes()).2
    }

    #[test]
    fn spec_examples() {
        assert_eq!(canon("AAAA"), 0);
        assert_eq!(canon("TTTT"), 0);
        assert_eq!(canon("ACGT"), 45);
        assert_eq!(canon("CCCC"), 170);
        assert_eq!(canon("GGGG"), 170);
        assert_eq!(canon("ATCG"), 27);
        assert_eq!(canon("ACGG"), 47);
        assert_eq!(canon("CCGT"), 47);
        assert_eq!(canon(&"A".repeat(20)), 0);
        assert_eq!(canon("ACGTACGTACGTACGTACGT"), 194031463725);
    }

    fn revcomp(s: &[u8]) -> Vec<u8> {
        s.iter()
            .rev()
            .map(|&c| match c {
                b'A' => b'T',
                b'T' => b'A',
                b'C' => b'G',
                _ => b'C',
            })
            .collect()
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    #[test]
    fn rolling_matches_direct_and_revcomp() {
        let mut rng = Lcg(7);
        for k in 1..=32u32 {
            let len = 80;
            let seq: Vec<u8> = (0..len).map(|_| b"ACGT"[(rng.next() % 4) as usize]).collect();
            let rolled: Vec<u64> = KmerIter::new(&seq, k, Cleaning::Raw).collect();
            let mut v = Vec::new();
            hashes_into(&seq, k, Cleaning::Raw, &mut v);
            assert_eq!(rolled, v);
            assert_eq!(rolled.len(), len - k as usize + 1);
            for (i, &h) in rolled.iter().enumerate() {
                let w = &seq[i..i + k as usize];
                assert_eq!(h, hash_kmer(w).2);
                assert_eq!(h, hash_kmer(&revcomp(w)).2, "canonical of revcomp");
            }
            // the whole reverse complement yields the same k-mers reversed
            let rc: Vec<u64> = KmerIter::new(&revcomp(&seq), k, Cleaning::Raw).collect();
            let mut rr = rolled.clone();
            rr.reverse();
            assert_eq!(rc, rr);
        }
    }

    #[test]
    fn long_k_extension() {
        let mut rng = Lcg(11);
        for k in [33u32, 40, 63, 64] {
            let seq: Vec<u8> = (0..150).map(|_| b"ACGT"[(rng.next() % 4) as usize]).collect();
            let rolled: Vec<u64> = KmerIter::new(&seq, k, Cleaning::Raw).collect();
            assert_eq!(rolled.len(), 150 - k as usize + 1);
            for (i, &h) in rolled.iter().enumerate() {
                let w = &seq[i..i + k as usize];
                assert_eq!(h, hash_kmer(w).2);
                assert_eq!(h, hash_kmer(&revcomp(w)).2, "canonical of revcomp, k={k}");
            }
            let mut all: Vec<u64> = rolled.clone();
            all.sort();
            all.dedup();
            assert_eq!(all.len(), rolled.len(), "no collisions on random k-mers");
        }
    }

    #[test]
    fn cleaning_tables() {
        let s = b"ACGTacgtNnRy.";
        let a: Vec<u64> = KmerIter::new(s, 4, Cleaning::CppParser).collect();
        let b: Vec<u64> = KmerIter::new(&Cleaning::CppParser.clean(s), 4, Cleaning::Raw).collect();
        assert_eq!(a, b);
        assert_eq!(Cleaning::CppParser.clean(s), b"ACGTACGTAAAAA");
        let a: Vec<u64> = KmerIter::new(s, 4, Cleaning::Screed).collect();
        let b: Vec<u64> = KmerIter::new(&Cleaning::Screed.clean(s), 4, Cleaning::Raw).collect();
        assert_eq!(a, b);
        assert_eq!(Cleaning::Screed.clean(s), b"ACGTACGTAARY.");
        assert_eq!(KmerIter::new(b"ACG", 4, Cleaning::Raw).count(), 0);
    }
}
