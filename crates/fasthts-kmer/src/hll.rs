//! khmer's `HLLCounter`: a HyperLogLog estimate of the number of distinct
//! k-mers (unique-kmers.py), the same estimate as khmer's for the same k,
//! error rate and input.
//!
//! Each k-mer (the read cleaned as khmer's C++ parser does: `acgt`
//! upper-cased, any other byte `A`) is hashed with MurmurHash3 x64-128
//! (seed 0, first 64 bits) of its bytes, XORed with the same hash of its
//! reverse complement (a palindrome keeps its forward hash). The low p bits
//! choose the counter; the counter keeps the largest "leading zeros of the
//! rest, + 1". The estimate is HyperLogLog++'s: linear counting below the
//! threshold for p, else the raw estimate corrected by the empirical bias
//! (the six nearest sampled raw estimates) up to 5m.
//!
//! Counting is order-free (a counter only grows to a maximum), so files are
//! split between threads that keep counters of their own and are merged.
//!
//! Speed: the hashing is nearly all the time (two MurmurHash3 per k-mer).
//! Each k-mer is hashed where it lies in the read and in its reverse
//! complement (both padded), its tail read as whole masked words, and on
//! CPUs with AVX-512 eight k-mers at a time (`hll_x86.rs`); every path
//! gives the bits of the plain [`murmur3_x64_128`] (tests below).

use crate::hash::Cleaning;
use crate::seqio::{RecordBatch, SeqError, SeqReader};
use std::io::Write;
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;

#[path = "hll_bias.rs"]
mod bias;
#[cfg(target_arch = "x86_64")]
#[path = "hll_x86.rs"]
mod x86;

/// Linear counting is used while its estimate is at most this (index p - 4).
const THRESHOLDS: [f64; 15] =
    [10.0, 20.0, 40.0, 80.0, 220.0, 400.0, 900.0, 1800.0, 3100.0, 6500.0, 11500.0, 20000.0, 50000.0, 120000.0, 350000.0];

/// Why an `HLLCounter` cannot be made or changed (khmer's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HllError {
    /// error rate below 0
    NegativeErrorRate,
    /// fewer than 16 counters
    ErrorRateTooLarge,
    /// more than 65536 counters
    ErrorRateTooSmall,
    /// error rate or k changed after counting started
    AlreadyCounting(&'static str),
    /// merging counters of different sizes or k
    Incompatible,
    /// new counters of the wrong length
    WrongLength,
}

impl std::fmt::Display for HllError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HllError::NegativeErrorRate => f.write_str("Please set error rate to a value greater than zero"),
            HllError::ErrorRateTooLarge => f.write_str("Please set error rate to a value smaller than 0.367696"),
            HllError::ErrorRateTooSmall => f.write_str("Please set error rate to a value greater than 0.0040624"),
            HllError::AlreadyCounting(what) => write!(f, "You can only change {what} prior to first counting"),
            HllError::Incompatible => f.write_str("HLLCounters to be merged must be created with same parameters"),
            HllError::WrongLength => f.write_str("New counters must match the size of old counters"),
        }
    }
}
impl std::error::Error for HllError {}

/// khmer's HyperLogLog counter of k-mers.
#[derive(Clone, Debug, PartialEq)]
pub struct HllCounter {
    p: u32,
    alpha: f64,
    ksize: u32,
    counters: Vec<u8>,
}

impl HllCounter {
    /// khmer's `HLLCounter(error_rate, ksize)`: 2^p counters with
    /// p = ceil(log2((1.04 / error_rate)^2)), 4 ≤ p ≤ 16.
    pub fn new(error_rate: f64, ksize: u32) -> Result<Self, HllError> {
        Self::with_counters(counters_for(error_rate)?, ksize)
    }

    /// A counter with `n` counters (rounded down to a power of two, as
    /// khmer's `HLLCounter(int, ksize)` indexes them).
    pub fn with_counters(n: u64, ksize: u32) -> Result<Self, HllError> {
        let p = if n == 0 { 0 } else { 63 - n.leading_zeros() };
        let alpha = match p {
            0..=3 => return Err(HllError::ErrorRateTooLarge),
            17.. => return Err(HllError::ErrorRateTooSmall),
            4 => 0.673,
            5 => 0.697,
            6 => 0.709,
            _ => 0.7213 / (1.0 + 1.079 / (1u64 << p) as f64),
        };
        Ok(HllCounter { p, alpha, ksize, counters: vec![0; n as usize] })
    }

    /// k.
    pub fn ksize(&self) -> u32 {
        self.ksize
    }
    /// khmer's `alpha`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// khmer's `error_rate`: 1.04 / sqrt(number of counters).
    pub fn error_rate(&self) -> f64 {
        1.04 / (self.counters.len() as f64).sqrt()
    }
    /// The counters.
    pub fn counters(&self) -> &[u8] {
        &self.counters
    }

    fn counting_started(&self) -> bool {
        self.counters.iter().any(|&c| c != 0)
    }

    /// khmer's `error_rate` setter: only before counting.
    pub fn set_error_rate(&mut self, error_rate: f64) -> Result<(), HllError> {
        if self.counting_started() {
            return Err(HllError::AlreadyCounting("error rate"));
        }
        *self = Self::with_counters(counters_for(error_rate)?, self.ksize)?;
        Ok(())
    }

    /// khmer's `ksize` setter: only before counting.
    pub fn set_ksize(&mut self, k: u32) -> Result<(), HllError> {
        if self.counting_started() {
            return Err(HllError::AlreadyCounting("k-mer size"));
        }
        self.ksize = k;
        Ok(())
    }

    /// khmer's `counters` setter.
    pub fn set_counters(&mut self, counters: Vec<u8>) -> Result<(), HllError> {
        if counters.len() != self.counters.len() {
            return Err(HllError::WrongLength);
        }
        self.counters = counters;
        Ok(())
    }

    /// Adds one k-mer, given as its bytes (khmer's `add`: the whole string
    /// is hashed, uncleaned).
    pub fn add(&mut self, kmer: &[u8]) {
        let rc: Vec<u8> = kmer.iter().rev().map(|&c| complement(c)).collect();
        self.add_hash(kmer_hash(kmer, &rc));
    }

    #[inline]
    fn add_hash(&mut self, h: u64) {
        let index = (h & (self.counters.len() as u64 - 1)) as usize;
        let rest = h >> self.p;
        let zeros = if rest > 0 { rest.leading_zeros() } else { 64 };
        let v = (zeros + 1 - self.p) as u8;
        let c = &mut self.counters[index];
        if v > *c {
            *c = v;
        }
    }

    /// Adds every k-mer of `seq` as given (khmer's `consume_string`: the
    /// bytes hashed uncleaned); returns the number of k-mers.
    pub fn consume_string(&mut self, seq: &[u8]) -> u64 {
        let mut rc = Vec::new();
        self.consume_bytes(seq, &mut rc)
    }

    /// Adds the k-mers of a read as khmer's `consume_seqfile` does (the
    /// C++ parser's cleaning first). `scratch` is reused between reads.
    pub fn consume_read(&mut self, seq: &[u8], scratch: &mut ReadScratch) -> u64 {
        let table = Cleaning::CppParser.table();
        scratch.clean.clear();
        scratch.clean.extend(seq.iter().map(|&c| b"ATCG"[table[c as usize] as usize]));
        let ReadScratch { clean, rc } = scratch;
        self.consume_padded(clean, rc)
    }

    fn consume_bytes(&mut self, seq: &[u8], rc: &mut Vec<u8>) -> u64 {
        let mut fwd = Vec::with_capacity(seq.len() + PADDING);
        fwd.extend_from_slice(seq);
        self.consume_padded(&mut fwd, rc)
    }

    /// Adds every k-mer of `fwd` (the read, to be followed by
    /// [`PADDING`] bytes here) with its reverse complement built in `rc`.
    /// Each k-mer is hashed where it lies in the two buffers, its tail
    /// read as whole words and masked (MurmurHash3 mixes a zero tail word
    /// to nothing, so this is its hash of the k bytes).
    fn consume_padded(&mut self, fwd: &mut Vec<u8>, rc: &mut Vec<u8>) -> u64 {
        self.consume_padded_with(fwd, rc, wide_hashing())
    }

    /// [`Self::consume_padded`], eight k-mers at a time with `wide`.
    fn consume_padded_with(&mut self, fwd: &mut Vec<u8>, rc: &mut Vec<u8>, wide: bool) -> u64 {
        // khmer's loop takes k-mers of max(k, 1) bytes
        let k = self.ksize.max(1) as usize;
        let len = fwd.len();
        if len < k {
            return 0;
        }
        rc.clear();
        rc.extend(fwd.iter().rev().map(|&c| complement(c)));
        fwd.resize(len + PADDING, 0);
        rc.resize(len + PADDING, 0);
        let key = KeyShape::new(k);
        let n = len - k + 1;
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if wide {
            // SAFETY: `wide_hashing` found the instructions
            done = unsafe { x86::add_kmers_x8(self, fwd, rc, n, key) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = wide;
        // the block count as a constant for the usual k (≤ 47), so that
        // the hash is one straight run of instructions without bounds checks
        match key.blocks {
            0 => self.add_kmers::<16>(fwd, rc, done..n, n, key),
            1 => self.add_kmers::<32>(fwd, rc, done..n, n, key),
            2 => self.add_kmers::<48>(fwd, rc, done..n, n, key),
            _ => {
                for i in done..n {
                    let j = n - 1 - i;
                    self.add_pair(
                        murmur_h1_padded(fwd, i, key.blocks, key),
                        murmur_h1_padded(rc, j, key.blocks, key),
                        &fwd[i..i + k],
                        &rc[j..j + k],
                    );
                }
            }
        }
        n as u64
    }

    /// Adds the k-mers `range` of the `n` of `fwd` (k-mer `i` at `i`; its
    /// reverse complement at `n - 1 - i` in `rc`), both padded, for keys
    /// of `SPAN / 16 - 1` whole blocks.
    #[inline(always)]
    fn add_kmers<const SPAN: usize>(&mut self, fwd: &[u8], rc: &[u8], range: std::ops::Range<usize>, n: usize, key: KeyShape) {
        let k = key.len;
        for i in range {
            let j = n - 1 - i;
            let (f, r) = (window::<SPAN>(fwd, i), window::<SPAN>(rc, j));
            self.add_pair(murmur_h1_padded(f, 0, SPAN / 16 - 1, key), murmur_h1_padded(r, 0, SPAN / 16 - 1, key), &f[..k], &r[..k]);
        }
    }

    /// Adds a k-mer of forward hash `h` and reverse-complement hash `r`.
    #[inline(always)]
    fn add_pair(&mut self, h: u64, r: u64, kmer: &[u8], rc: &[u8]) {
        // equal hashes: a palindrome (or, vanishingly rarely, a collision,
        // which khmer XORs to 0)
        self.add_hash(if h == r && kmer == rc { h } else { h ^ r });
    }

    /// Merges `other` (same size and k) into this counter.
    pub fn merge(&mut self, other: &HllCounter) -> Result<(), HllError> {
        if self.counters.len() != other.counters.len() || self.ksize != other.ksize {
            return Err(HllError::Incompatible);
        }
        for (a, &b) in self.counters.iter_mut().zip(&other.counters) {
            *a = (*a).max(b);
        }
        Ok(())
    }

    /// khmer's `estimate_cardinality` (truncated to an integer, as khmer's
    /// C++ returns it).
    pub fn estimate_cardinality(&self) -> u64 {
        let m = self.counters.len() as f64;
        let zeros = self.counters.iter().filter(|&&c| c == 0).count();
        if zeros > 0 {
            let h = m * (m / zeros as f64).ln();
            if h <= THRESHOLDS[self.p as usize - 4] {
                return h as u64;
            }
        }
        let sum: f64 = self.counters.iter().map(|&v| 2f64.powf(-(v as f32) as f64)).sum();
        let e = self.alpha * m.powf(2.0) / sum;
        if e <= 5.0 * m {
            return (e - self.estimate_bias(e)) as u64;
        }
        e as u64
    }

    /// The mean bias of the six sampled raw estimates nearest `e` (ties by
    /// table order).
    fn estimate_bias(&self, e: f64) -> f64 {
        let (raw, bias) = bias::BIAS_TABLES[self.p as usize - 4];
        let mut dist: Vec<(f64, usize)> = raw.iter().enumerate().map(|(i, &v)| ((e - v).powf(2.0), i)).collect();
        dist.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let nearest = &dist[..6];
        nearest.iter().map(|&(_, i)| bias[i]).sum::<f64>() / nearest.len() as f64
    }

    /// Adds every k-mer of every read of `reader` (khmer's
    /// `consume_seqfile`), with `threads` threads each counting whole
    /// batches into counters of its own, merged at the end (the counters
    /// do not depend on the order). With `stream`, each record is written
    /// to it as read, in input order (`--stream-records`). Returns (reads,
    /// k-mers). An empty sequence is an error, as in khmer's parser.
    pub fn consume_reader(
        &mut self,
        mut reader: SeqReader,
        path: &str,
        threads: usize,
        mut stream: Option<&mut dyn Write>,
    ) -> Result<(u64, u64), crate::scripts::BoxError> {
        let threads = threads.max(1);
        let (tx, rx) = sync_channel::<RecordBatch>(threads * 2);
        let rx = Mutex::new(rx);
        let template = HllCounter { counters: vec![0; self.counters.len()], ..self.clone() };
        let mut n_reads = 0u64;
        let parts = std::thread::scope(|s| -> Result<Vec<(HllCounter, u64)>, crate::scripts::BoxError> {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let rx = &rx;
                    let mut mine = template.clone();
                    s.spawn(move || {
                        let mut scratch = ReadScratch::default();
                        let mut n = 0u64;
                        loop {
                            let msg = rx.lock().unwrap().recv();
                            let Ok(b) = msg else { return (mine, n) };
                            for r in b.iter() {
                                n += mine.consume_read(r.seq, &mut scratch);
                            }
                        }
                    })
                })
                .collect();
            let mut read_all = || -> Result<(), crate::scripts::BoxError> {
                while let Some(b) = reader.next_batch()? {
                    if let Some(i) = b.iter().position(|r| r.seq.is_empty()) {
                        return Err(SeqError {
                            msg: format!("{path}: record {}: Sequence is empty", b.first_record + i as u64 + 1),
                            empty_sequence: true,
                        }
                        .into());
                    }
                    if let Some(w) = stream.as_deref_mut() {
                        for r in b.iter() {
                            r.write(w)?;
                        }
                    }
                    n_reads += b.len() as u64;
                    if tx.send(b).is_err() {
                        break;
                    }
                }
                Ok(())
            };
            let result = read_all();
            drop(tx);
            let parts = workers.into_iter().map(|w| w.join().unwrap()).collect();
            result.map(|()| parts)
        })?;
        let mut n_kmers = 0;
        for (part, n) in &parts {
            self.merge(part).expect("same parameters");
            n_kmers += n;
        }
        if let Some(w) = stream {
            w.flush()?;
        }
        Ok((n_reads, n_kmers))
    }
}

/// Buffers [`HllCounter::consume_read`] reuses: the cleaned read and its
/// reverse complement.
#[derive(Default)]
pub struct ReadScratch {
    clean: Vec<u8>,
    rc: Vec<u8>,
}

/// The number of counters for an error rate: 2^ceil(log2((1.04/e)^2)).
fn counters_for(error_rate: f64) -> Result<u64, HllError> {
    if error_rate < 0.0 {
        return Err(HllError::NegativeErrorRate);
    }
    let p = (1.04 / error_rate).powf(2.0).log2().ceil();
    // an infinite or NaN p (error rate 0 or NaN) is INT_MIN in khmer's
    // conversion, fewer than 16 counters
    if !p.is_finite() || p < 4.0 {
        return Err(HllError::ErrorRateTooLarge);
    }
    if p > 16.0 {
        return Err(HllError::ErrorRateTooSmall);
    }
    Ok(1u64 << p as u32)
}

/// khmer's `_revcomp` of one byte, from its complement table: the IUPAC
/// codes' complements in upper case (`a` → `T`, `r` → `Y`, `u` → `A`), a
/// space for the other letters and for bytes below `@`, NUL for `z`. khmer
/// reads past its table for bytes above `z` (undefined); they become a
/// space here.
#[inline(always)]
fn complement(c: u8) -> u8 {
    REVCOMP_TABLE[c as usize]
}

static REVCOMP_TABLE: [u8; 256] = {
    // the table from '@' (64) to 'y' (121)
    const FROM_AT: &[u8; 58] = b" TVGH FCD  M KN   YSAABW R       TVGH FCD  M KN   YSAABW R";
    let mut t = [b' '; 256];
    let mut i = 0;
    while i < FROM_AT.len() {
        t[64 + i] = FROM_AT[i];
        i += 1;
    }
    t[b'z' as usize] = 0;
    t
};

/// Bytes after a read in the buffers the hashes read: the last 16-byte
/// load of [`murmur_h1_padded`] may start up to 15 bytes before the key's
/// end, and the eight-lane one 7 bytes later.
const PADDING: usize = 32;

/// Whether k-mers are hashed eight at a time (AVX-512, found at run time).
fn wide_hashing() -> bool {
    #[cfg(target_arch = "x86_64")]
    return x86::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The length of the keys MurmurHash3 hashes, as its 16-byte blocks and
/// the masks of the tail's two little-endian words.
#[derive(Clone, Copy)]
struct KeyShape {
    len: usize,
    blocks: usize,
    low_mask: u64,
    high_mask: u64,
}

impl KeyShape {
    fn new(len: usize) -> Self {
        let tail = len % 16;
        let mask = |bytes: usize| if bytes >= 8 { u64::MAX } else { (1u64 << (8 * bytes)) - 1 };
        KeyShape { len, blocks: len / 16, low_mask: mask(tail), high_mask: mask(tail.saturating_sub(8)) }
    }
}

/// The `SPAN` bytes at `at`.
#[inline(always)]
fn window<const SPAN: usize>(buf: &[u8], at: usize) -> &[u8; SPAN] {
    buf[at..at + SPAN].try_into().unwrap()
}

/// The little-endian word at `at`.
#[inline(always)]
fn word_at(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().unwrap())
}

/// The first 64 bits of [`murmur3_x64_128`] (seed 0) of `buf[start..start
/// + key.len]` (`blocks` = `key.blocks`, a constant where the caller
/// knows it), reading up to [`PADDING`] bytes past it.
#[inline(always)]
fn murmur_h1_padded(buf: &[u8], start: usize, blocks: usize, key: KeyShape) -> u64 {
    let (mut h1, mut h2) = (0u64, 0u64);
    let mut at = start;
    for _ in 0..blocks {
        h1 ^= mix_k1(word_at(buf, at));
        h1 = h1.rotate_left(27).wrapping_add(h2).wrapping_mul(5).wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(word_at(buf, at + 8));
        h2 = h2.rotate_left(31).wrapping_add(h1).wrapping_mul(5).wrapping_add(0x3849_5ab5);
        at += 16;
    }
    // the tail: a zero word mixes to zero, as if there were no such word
    h2 ^= mix_k2(word_at(buf, at + 8) & key.high_mask);
    h1 ^= mix_k1(word_at(buf, at) & key.low_mask);
    finish(h1, h2, key.len as u64).0
}

/// khmer's `_hash_murmur`: the forward hash XOR#[inline(always)]
fn kmer_hash(kmer: &[u8], rc: &[u8]) -> u64 {
    let h = murmur3_x64_128(kmer, 0).0;
    let r = murmur3_x64_128(rc, 0).0;
    // equal hashes: a palindrome (or, vanishingly rarely, a collision,
    // which khmer XORs to 0)
    if h == r && kmer == rc {
        h
    } else {
        h ^ r
    }
}

#[inline(always)]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

#[inline(always)]
fn mix_k1(k: u64) -> u64 {
    k.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

#[inline(always)]
fn mix_k2(k: u64) -> u64 {
    k.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// MurmurHash3's finalisation of `(h1, h2)` for a key of `len` bytes.
#[inline(always)]
fn finish(mut h1: u64, mut h2: u64, len: u64) -> (u64, u64) {
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

/// MurmurHash3's x64 128-bit hash (Austin Appleby's public-domain
/// algorithm), little-endian blocks: `(h1, h2)`.
pub fn murmur3_x64_128(data: &[u8], seed: u32) -> (u64, u64) {
    let (mut h1, mut h2) = (seed as u64, seed as u64);
    let mut blocks = data.chunks_exact(16);
    for b in &mut blocks {
        let k1 = u64::from_le_bytes(b[..8].try_into().unwrap());
        let k2 = u64::from_le_bytes(b[8..].try_into().unwrap());
        h1 ^= mix_k1(k1);
        h1 = h1.rotate_left(27).wrapping_add(h2).wrapping_mul(5).wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(k2);
        h2 = h2.rotate_left(31).wrapping_add(h1).wrapping_mul(5).wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        // the tail's bytes as little-endian words: bytes 0..8 in k1, 8..16 in k2
        let word = |bytes: &[u8]| bytes.iter().rev().fold(0u64, |w, &b| (w << 8) | b as u64);
        if tail.len() > 8 {
            h2 ^= mix_k2(word(&tail[8..]));
        }
        h1 ^= mix_k1(word(&tail[..tail.len().min(8)]));
    }
    finish(h1, h2, data.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter one k-mer sets: (index, value).
    fn single(kmer: &[u8], error_rate: f64) -> (usize, u8) {
        let mut h = HllCounter::new(error_rate, kmer.len() as u32).unwrap();
        h.add(kmer);
        let i = h.counters().iter().position(|&c| c != 0).unwrap();
        (i, h.counters()[i])
    }

    #[test]
    fn same_counters_as_khmer() {
        // khmer 3.0's HLLCounter(0.0041, len).add(s): the one counter set
        assert_eq!(single(b"hello", 0.0041), (55012, 1));
        assert_eq!(single(b"The quick brown fox jumps over the lazy dog", 0.0041), (1751, 1));
        assert_eq!(single(b"ACGTACGTACGTACGTAC", 0.0041), (52910, 5));
        // HLLCounter(0.26, 5).consume_string(...): counters and estimate
        let mut h = HllCounter::new(0.26, 5).unwrap();
        h.consume_string(b"ACGTTGCATTTAGGCCAGGATTACAGGGTACCCAAATTT");
        assert_eq!(h.counters(), &[1, 2, 1, 2, 3, 0, 4, 1, 2, 1, 1, 4, 3, 3, 1, 1]);
        assert_eq!(h.estimate_cardinality(), 28);
    }

    #[test]
    fn sizes_and_errors() {
        assert_eq!(HllCounter::new(0.01, 20).unwrap().counters().len(), 16384);
        assert_eq!(HllCounter::new(0.5, 20), Err(HllError::ErrorRateTooLarge));
        assert_eq!(HllCounter::new(0.0, 20), Err(HllError::ErrorRateTooLarge));
        assert_eq!(HllCounter::new(0.001, 20), Err(HllError::ErrorRateTooSmall));
        assert_eq!(HllCounter::new(-1.0, 20), Err(HllError::NegativeErrorRate));
    }

    #[test]
    fn palindromes_and_strands_agree() {
        let mut a = HllCounter::new(0.01, 4).unwrap();
        let mut b = a.clone();
        a.consume_string(b"ACGTTGCA");
        b.consume_string(b"TGCAACGT");
        assert_eq!(a, b);
        // a read and its cleaned form count the same k-mers
        let mut c = HllCounter::new(0.01, 4).unwrap();
        c.consume_read(b"acgttgca", &mut ReadScratch::default());
        assert_eq!(a, c);
    }

    #[test]
    fn padded_hashing_is_murmur3_of_each_kmer() {
        // every k (blocks 0..4, every tail length), reads of every length
        // around k, bytes of all kinds: the counters of consume_string and
        // consume_read equal those of adding each k-mer through the plain
        // MurmurHash3 (`add`)
        let mut rng = fasthts_testgen::rng::Rng::new(11);
        let alphabet = b"ACGTACGTACGTacgtNnRYz.\xff";
        for k in 1..=70u32 {
            let mut fast = HllCounter::new(0.01, k).unwrap();
            let mut cleaned = fast.clone();
            let mut plain = fast.clone();
            let mut scratch = ReadScratch::default();
            for len in [k as usize - 1, k as usize, k as usize + 1, k as usize + 17, 150] {
                let seq: Vec<u8> = (0..len).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize]).collect();
                let n = fast.consume_string(&seq);
                assert_eq!(n as usize, (len + 1).saturating_sub(k as usize));
                for w in seq.windows(k as usize) {
                    plain.add(w);
                }
                cleaned.consume_read(&seq, &mut scratch);
                let mut reference = HllCounter::new(0.01, k).unwrap();
                for w in Cleaning::CppParser.clean(&seq).windows(k as usize) {
                    reference.add(w);
                }
                let mut alone = HllCounter::new(0.01, k).unwrap();
                alone.consume_read(&seq, &mut ReadScratch::default());
                assert_eq!(alone, reference, "k {k} len {len}");
            }
            assert_eq!(fast, plain, "k {k}");
        }
        // palindromes keep their forward hash
        let mut a = HllCounter::new(0.01, 4).unwrap();
        let mut b = a.clone();
        a.consume_string(b"ACGT");
        b.add(b"ACGT");
        assert_eq!(a, b);
    }

    #[test]
    fn wide_and_scalar_hashing_agree() {
        // the eight-lane path (where the CPU has it; required under CI on
        // x86-64, whose test machines have AVX-512) against the scalar one
        let wide = wide_hashing();
        if !wide && std::env::var_os("CI").is_some() && cfg!(target_arch = "x86_64") {
            panic!("CI=true: AVX-512 (f, dq, vbmi, cd) is missing, the eight-lane hashing is untested");
        }
        let mut rng = fasthts_testgen::rng::Rng::new(5);
        for k in 1..=70u32 {
            let (mut scalar, mut eight) = (HllCounter::new(0.0041, k).unwrap(), HllCounter::new(0.0041, k).unwrap());
            for len in [k as usize, k as usize + 7, k as usize + 8, k as usize + 9, 150, 301] {
                // the 301-base reads of A and T only: palindromes at even k
                let seq: Vec<u8> = (0..len).map(|_| b"ATCGN"[rng.below(if len == 301 { 2 } else { 5 }) as usize]).collect();
                for (h, w) in [(&mut scalar, false), (&mut eight, wide)] {
                    let (mut f, mut r) = (seq.clone(), Vec::new());
                    h.consume_padded_with(&mut f, &mut r, w);
                }
            }
            assert_eq!(scalar, eight, "k {k}");
        }
    }

    #[test]
    fn estimate_of_distinct_kmers() {
        let mut h = HllCounter::new(0.01, 20).unwrap();
        let mut rng = fasthts_testgen::rng::Rng::new(7);
        let seq: Vec<u8> = (0..200_000).map(|_| b"ACGT"[rng.below(4) as usize]).collect();
        h.consume_string(&seq);
        let est = h.estimate_cardinality() as f64;
        assert!((est - 199_981.0).abs() / 199_981.0 < 0.03, "{est}");
    }
}
