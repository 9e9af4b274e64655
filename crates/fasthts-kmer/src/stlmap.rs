//! Iteration order of a libstdc++ (GCC ≥ 5) `std::unordered_map<uint64_t, T>`.
//!
//! khmer writes its bigcount map by iterating a `std::unordered_map` with the
//! identity hash, so the byte order of a `.ct` file's bigcount section is that
//! container's iteration order, which depends only on the insertion order of
//! the keys. This module replays libstdc++'s `_Hashtable` exactly: a singly
//! linked list of nodes, `bucket[b]` pointing at the node *before* the first
//! node of bucket `b`; a new node goes to the front of its bucket, or to the
//! front of the whole list when its bucket is empty; `_Prime_rehash_policy`
//! (max load factor 1.0, growth factor 2, the small-size table
//! 2,2,2,3,5,5,7,7,11,11,11,11,13,13 and libstdc++'s prime list) decides when
//! and to what size to rehash, and a rehash re-threads the list in its
//! current order. Verified against a real `std::unordered_map` in the tests
//! (when a C++ compiler is available).

const NIL: usize = usize::MAX;
const BEFORE_BEGIN: usize = usize::MAX - 1;

const FAST_BKT: [usize; 14] = [2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13];

/// libstdc++'s `__prime_list` from 17 on (what `_M_next_bkt` searches for
/// n ≥ 14), dumped from `_Prime_rehash_policy::_M_next_bkt` of GCC 12.
static PRIME_LIST: &[u64] = &[
    17,
    19,
    23,
    29,
    31,
    37,
    41,
    43,
    47,
    53,
    59,
    61,
    67,
    71,
    73,
    79,
    83,
    89,
    97,
    103,
    109,
    113,
    127,
    137,
    139,
    149,
    157,
    167,
    179,
    193,
    199,
    211,
    227,
    241,
    257,
    277,
    293,
    313,
    337,
    359,
    383,
    409,
    439,
    467,
    503,
    541,
    577,
    619,
    661,
    709,
    761,
    823,
    887,
    953,
    1031,
    1109,
    1193,
    1289,
    1381,
    1493,
    1613,
    1741,
    1879,
    2029,
    2179,
    2357,
    2549,
    2753,
    2971,
    3209,
    3469,
    3739,
    4027,
    4349,
    4703,
    5087,
    5503,
    5953,
    6427,
    6949,
    7517,
    8123,
    8783,
    9497,
    10273,
    11113,
    12011,
    12983,
    14033,
    15173,
    16411,
    17749,
    19183,
    20753,
    22447,
    24281,
    26267,
    28411,
    30727,
    33223,
    35933,
    38873,
    42043,
    45481,
    49201,
    53201,
    57557,
    62233,
    67307,
    72817,
    78779,
    85229,
    92203,
    99733,
    107897,
    116731,
    126271,
    136607,
    147793,
    159871,
    172933,
    187091,
    202409,
    218971,
    236897,
    256279,
    277261,
    299951,
    324503,
    351061,
    379787,
    410857,
    444487,
    480881,
    520241,
    562841,
    608903,
    658753,
    712697,
    771049,
    834181,
    902483,
    976369,
    1056323,
    1142821,
    1236397,
    1337629,
    1447153,
    1565659,
    1693859,
    1832561,
    1982627,
    2144977,
    2320627,
    2510653,
    2716249,
    2938679,
    3179303,
    3439651,
    3721303,
    4026031,
    4355707,
    4712381,
    5098259,
    5515729,
    5967347,
    6456007,
    6984629,
    7556579,
    8175383,
    8844859,
    9569143,
    10352717,
    11200489,
    12117689,
    13109983,
    14183539,
    15345007,
    16601593,
    17961079,
    19431899,
    21023161,
    22744717,
    24607243,
    26622317,
    28802401,
    31160981,
    33712729,
    36473443,
    39460231,
    42691603,
    46187573,
    49969847,
    54061849,
    58488943,
    63278561,
    68460391,
    74066549,
    80131819,
    86693767,
    93793069,
    101473717,
    109783337,
    118773397,
    128499677,
    139022417,
    150406843,
    162723577,
    176048909,
    190465427,
    206062531,
    222936881,
    241193053,
    260944219,
    282312799,
    305431229,
    330442829,
    357502601,
    386778277,
    418451333,
    452718089,
    489790921,
    529899637,
    573292817,
    620239453,
    671030513,
    725980837,
    785430967,
    849749479,
    919334987,
    994618837,
    1076067617,
    1164186217,
    1259520799,
    1362662261,
    1474249943,
    1594975441,
    1725587117,
    1866894511,
    2019773507,
    2185171673,
    2364114217,
    2557710269,
    2767159799,
    2993761039,
    3238918481,
    3504151727,
    3791104843,
    4101556399,
    4294967291,
    6442450933,
    8589934583,
    12884901857,
    17179869143,
    25769803693,
    34359738337,
    51539607367,
    68719476731,
    103079215087,
    137438953447,
    206158430123,
    274877906899,
    412316860387,
    549755813881,
    824633720731,
    1099511627689,
    1649267441579,
    2199023255531,
    3298534883309,
    4398046511093,
    6597069766607,
    8796093022151,
    13194139533241,
    17592186044399,
    26388279066581,
    35184372088777,
    52776558133177,
    70368744177643,
    105553116266399,
    140737488355213,
    211106232532861,
    281474976710597,
    562949953421231,
    1125899906842597,
    2251799813685119,
    4503599627370449,
    9007199254740881,
    18014398509481951,
    36028797018963913,
    72057594037927931,
    144115188075855859,
    288230376151711717,
    576460752303423433,
    1152921504606846883,
    2305843009213693951,
    4611686018427387847,
    9223372036854775783,
    18446744073709551557,
];

/// Replays insertions into a libstdc++ `unordered_map<uint64_t, _>` and
/// reports its iteration order.
#[derive(Clone, Debug)]
pub struct StdUnorderedOrder {
    keys: Vec<u64>,
    next: Vec<usize>,
    before_begin: usize,
    buckets: Vec<usize>,
    next_resize: usize,
}

impl Default for StdUnorderedOrder {
    fn default() -> Self {
        Self::new()
    }
}

impl StdUnorderedOrder {
    /// An empty map (one bucket, nothing allocated, as a default-constructed
    /// `unordered_map`).
    pub fn new() -> Self {
        StdUnorderedOrder { keys: Vec::new(), next: Vec::new(), before_begin: NIL, buckets: vec![NIL], next_resize: 0 }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Current bucket count.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    fn next_bkt(&mut self, n: usize) -> usize {
        if n < FAST_BKT.len() {
            if n == 0 {
                return 1;
            }
            self.next_resize = FAST_BKT[n];
            return FAST_BKT[n];
        }
        let i = PRIME_LIST.partition_point(|&p| (p as u128) < n as u128);
        if i >= PRIME_LIST.len() - 1 {
            self.next_resize = usize::MAX;
            return *PRIME_LIST.last().unwrap() as usize;
        }
        let p = PRIME_LIST[i] as usize;
        self.next_resize = p;
        p
    }

    #[inline]
    fn get_next(&self, p: usize) -> usize {
        if p == BEFORE_BEGIN {
            self.before_begin
        } else {
            self.next[p]
        }
    }

    #[inline]
    fn set_next(&mut self, p: usize, v: usize) {
        if p == BEFORE_BEGIN {
            self.before_begin = v;
        } else {
            self.next[p] = v;
        }
    }

    fn rehash(&mut self, n: usize) {
        let mut nb = vec![NIL; n];
        let mut p = self.before_begin;
        self.before_begin = NIL;
        let mut bbegin_bkt = 0usize;
        while p != NIL {
            let nxt = self.next[p];
            let bkt = (self.keys[p] % n as u64) as usize;
            if nb[bkt] == NIL {
                self.next[p] = self.before_begin;
                self.before_begin = p;
                nb[bkt] = BEFORE_BEGIN;
                if self.next[p] != NIL {
                    nb[bbegin_bkt] = p;
                }
                bbegin_bkt = bkt;
            } else {
                let b = nb[bkt];
                let after = if b == BEFORE_BEGIN { self.before_begin } else { self.next[b] };
                self.next[p] = after;
                if b == BEFORE_BEGIN {
                    self.before_begin = p;
                } else {
                    self.next[b] = p;
                }
            }
            p = nxt;
        }
        self.buckets = nb;
    }

    /// Insert a key that is not yet present (the caller guarantees
    /// uniqueness, as khmer's `map[key]` on a first access does).
    pub fn insert_new(&mut self, key: u64) {
        let count = self.keys.len();
        let nbkt = self.buckets.len();
        if count + 1 > self.next_resize {
            let min_bkts = std::cmp::max(count + 1, if self.next_resize != 0 { 0 } else { 11 });
            if min_bkts >= nbkt {
                let n = self.next_bkt(std::cmp::max(min_bkts + 1, nbkt * 2));
                self.rehash(n);
            } else {
                self.next_resize = nbkt;
            }
        }
        let node = self.keys.len();
        self.keys.push(key);
        self.next.push(NIL);
        let nbkt = self.buckets.len() as u64;
        let bkt = (key % nbkt) as usize;
        if self.buckets[bkt] != NIL {
            let b = self.buckets[bkt];
            let after = self.get_next(b);
            self.next[node] = after;
            self.set_next(b, node);
        } else {
            self.next[node] = self.before_begin;
            self.before_begin = node;
            let after = self.next[node];
            if after != NIL {
                let ob = (self.keys[after] % nbkt) as usize;
                self.buckets[ob] = node;
            }
            self.buckets[bkt] = BEFORE_BEGIN;
        }
    }

    /// Insertion indices (0 = first inserted key) in iteration order.
    pub fn iter_indices(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.keys.len());
        let mut p = self.before_begin;
        while p != NIL {
            out.push(p);
            p = self.next[p];
        }
        out
    }

    /// Keys in iteration order.
    pub fn iter_order(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.keys.len());
        let mut p = self.before_begin;
        while p != NIL {
            out.push(self.keys[p]);
            p = self.next[p];
        }
        out
    }
}

/// Iteration order of a `std::unordered_map` after inserting `keys` (unique)
/// in the given order.
pub fn std_unordered_order(keys: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut m = StdUnorderedOrder::new();
    for k in keys {
        m.insert_new(k);
    }
    m.iter_order()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    #[test]
    fn small_examples() {
        // 13 buckets after the first insert: keys 1 and 14 share bucket 1.
        assert_eq!(std_unordered_order([1, 14]), vec![14, 1]);
        assert_eq!(std_unordered_order([1, 2]), vec![2, 1]);
        let mut m = StdUnorderedOrder::new();
        m.insert_new(5);
        assert_eq!(m.bucket_count(), 13);
    }

    /// Compare with a real libstdc++ `unordered_map` when g++ is present.
    #[test]
    fn matches_libstdcxx() {
        let dir = std::env::temp_dir().join(format!("fasthts-stlmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("m.cc");
        std::fs::write(
            &src,
            "#include <unordered_map>\n#include <cstdio>\n#include <cstdint>\nint main(){std::unordered_map<uint64_t,uint16_t> m; unsigned long long k; while(scanf(\"%llu\",&k)==1){ if(m[k]==0) m[k]=256; } for(auto&p:m) printf(\"%llu\\n\",(unsigned long long)p.first); }\n",
        )
        .unwrap();
        let exe = dir.join("m");
        let ok = Command::new("g++").arg("-O1").arg(&src).arg("-o").arg(&exe).status().map(|s| s.success()).unwrap_or(false);
        if !fasthts_testgen::support::require(ok, "g++ (compiling the libstdc++ reference)") {
            return;
        }
        let mut s = 12345u64;
        for (n, modulus) in [(5usize, 100u64), (50, 1000), (700, 1 << 20), (3000, u64::MAX), (20000, 50000)] {
            let mut keys = Vec::new();
            let mut seen = std::collections::HashSet::new();
            while keys.len() < n {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let k = s % modulus;
                if seen.insert(k) {
                    keys.push(k);
                }
            }
            let mut child = Command::new(&exe).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
            {
                let mut stdin = child.stdin.take().unwrap();
                for k in &keys {
                    writeln!(stdin, "{k}").unwrap();
                }
            }
            let out = child.wait_with_output().unwrap();
            let want: Vec<u64> = String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect();
            assert_eq!(std_unordered_order(keys.iter().copied()), want, "n={n}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
