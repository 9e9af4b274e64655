//! CPython's `random` module, as far as sample-reads-randomly uses it: the
//! Mersenne Twister (MT19937) seeded from an integer the way
//! `random.seed(int)` does (`init_by_array` on the absolute value's 32-bit
//! words, least significant first), `getrandbits` and `randint`, so the same
//! seed draws the same numbers as Python 3.

const N: usize = 624;
const M: usize = 397;

/// Python's `random.Random` state.
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl PyRandom {
    fn init_genrand(seed: u32) -> PyRandom {
        let mut mt = [0u32; N];
        mt[0] = seed;
        for i in 1..N {
            mt[i] = 1812433253u32.wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_add(i as u32);
        }
        PyRandom { mt, index: N }
    }

    /// `random.seed(n)` for an integer whose absolute value has the 32-bit
    /// words `key` (least significant first; `[0]` for zero).
    pub fn from_key(key: &[u32]) -> PyRandom {
        let key: &[u32] = if key.is_empty() { &[0] } else { key };
        let mut r = PyRandom::init_genrand(19650218);
        let mt = &mut r.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1664525)).wrapping_add(key[j]).wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1566083941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        r
    }

    /// `random.seed(n)` for a decimal integer as Python's `int()` reads it
    /// (optional sign, digits, surrounding whitespace, `_` between digits);
    /// `None` if it is not one.
    pub fn from_decimal(text: &str) -> Option<PyRandom> {
        Some(PyRandom::from_key(&decimal_words(text)?))
    }

    /// `random.seed(n)` for a machine integer.
    pub fn from_seed(seed: i64) -> PyRandom {
        let a = seed.unsigned_abs();
        let words: Vec<u32> = if a >> 32 == 0 { vec![a as u32] } else { vec![a as u32, (a >> 32) as u32] };
        PyRandom::from_key(&words)
    }

    fn genrand_u32(&mut self) -> u32 {
        if self.index >= N {
            let mag = |y: u32| if y & 1 == 1 { 0x9908_b0df } else { 0 };
            for k in 0..N {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % N] & 0x7fff_ffff);
                self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag(y);
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// `getrandbits(k)` for `k <= 64`.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        assert!(k <= 64, "getrandbits beyond 64 bits");
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return (self.genrand_u32() >> (32 - k)) as u64;
        }
        // words least significant first; the last one keeps its top bits
        let low = self.genrand_u32() as u64;
        let high = (self.genrand_u32() >> (64 - k)) as u64;
        low | (high << 32)
    }

    /// `_randbelow(n)` (n > 0): draws of `n.bit_length()` bits until one is
    /// below `n`.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `randint(a, b)` for `a <= b`.
    pub fn randint(&mut self, a: u64, b: u64) -> u64 {
        a + self.randbelow(b - a + 1)
    }
}

/// The 32-bit words (least significant first) of the absolute value of a
/// decimal integer written as Python's `int()` accepts it.
fn decimal_words(text: &str) -> Option<Vec<u32>> {
    let t = text.trim();
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    if t.is_empty() || t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return None;
    }
    let mut words: Vec<u32> = vec![0];
    for c in t.chars().filter(|&c| c != '_') {
        let mut carry = c.to_digit(10)? as u64;
        for w in words.iter_mut() {
            let v = *w as u64 * 10 + carry;
            *w = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            words.push(carry as u32);
        }
    }
    while words.len() > 1 && *words.last().unwrap() == 0 {
        words.pop();
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PYTHON_SEED42: [u64; 10] = [2, 1, 12, 5, 4, 4, 5, 4, 18, 3];
    const PYTHON_SEED_BIG: [u64; 4] = [66, 778792058568, 3, 246419449];
    const PYTHON_SEED0_BITS32: u64 = 3626764237;

    /// Values printed by CPython 3.11 (`random.seed(s)` then the calls).
    #[test]
    fn same_draws_as_cpython() {
        let mut r = PyRandom::from_seed(42);
        let got: Vec<u64> = (10..20).map(|c| r.randint(1, c)).collect();
        assert_eq!(got, PYTHON_SEED42);
        let mut r = PyRandom::from_decimal("-12345678901234567890").unwrap();
        let got: Vec<u64> = [100u64, 1 << 40, 3, 1_000_000_007].iter().map(|&c| r.randint(1, c)).collect();
        assert_eq!(got, PYTHON_SEED_BIG);
        let mut r = PyRandom::from_seed(0);
        assert_eq!(r.getrandbits(32), PYTHON_SEED0_BITS32);
    }

    #[test]
    fn decimal_seeds() {
        assert_eq!(decimal_words("4294967296").unwrap(), vec![0, 1]);
        assert_eq!(decimal_words(" -1_000 ").unwrap(), vec![1000]);
        assert!(decimal_words("1__0").is_none());
        assert!(decimal_words("x").is_none());
    }
}
