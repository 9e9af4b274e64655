//! Exact `a mod d` for a fixed divisor without a hardware divide.
//!
//! Precomputed reciprocal (Barrett reduction): with `m = floor((2^64-1)/d)`,
//! `q = floor(a·m / 2^64)` is `floor(a/d)` or one less, for every 64-bit `a`
//! (because `a/d - 1 < a·m/2^64 ≤ a/d`), so `r = a - q·d` needs at most one
//! correction `r -= d`. Two multiplies and a conditional move instead of a
//! 40–90 cycle `div`, bit-identical to `%` (checked against `%` in the tests
//! below). Divisors ≥ 2^63 (where `r` could overflow) use Lemire's 128-bit
//! "fastmod" (Lemire, Kaser & Kurz 2019) instead.

/// A precomputed divisor.
#[derive(Clone, Copy, Debug)]
pub struct FastMod {
    d: u64,
    m: u64,
    /// Lemire's 128-bit constant, used only for d ≥ 2^63.
    big: u128,
}

impl FastMod {
    /// Precompute for divisor `d` (d ≥ 1).
    pub fn new(d: u64) -> Self {
        assert!(d >= 1, "divisor must be positive");
        let m = u64::MAX / d;
        let big = if d >= 1 << 63 { (u128::MAX / d as u128).wrapping_add(1) } else { 0 };
        FastMod { d, m, big }
    }

    /// The divisor.
    #[inline(always)]
    pub fn divisor(&self) -> u64 {
        self.d
    }

    /// `a % d`.
    #[inline(always)]
    pub fn rem(&self, a: u64) -> u64 {
        if self.big != 0 {
            return self.rem_lemire(a);
        }
        let q = ((a as u128 * self.m as u128) >> 64) as u64;
        let r = a.wrapping_sub(q.wrapping_mul(self.d));
        if r >= self.d {
            r - self.d
        } else {
            r
        }
    }

    #[cold]
    fn rem_lemire(&self, a: u64) -> u64 {
        let low = self.big.wrapping_mul(a as u128);
        let lo = low as u64 as u128;
        let hi = (low >> 64) as u64 as u128;
        let d = self.d as u128;
        let bottom = (lo * d) >> 64;
        let top = hi * d + bottom;
        (top >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_hardware_remainder() {
        let mut s = 0x9E3779B97F4A7C15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut divisors = vec![
            1u64,
            2,
            3,
            7,
            73,
            97,
            99991,
            999983,
            999959,
            999999937,
            999999883,
            4294967291,
            4294967311,
            (1 << 40) - 87,
            u64::MAX,
            u64::MAX - 58,
            1 << 63,
        ];
        for _ in 0..200 {
            divisors.push(next() >> (next() % 64) | 1);
        }
        for &d in &divisors {
            let f = FastMod::new(d);
            let edge = [0u64, 1, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1, u64::MAX / 2];
            for &a in &edge {
                assert_eq!(f.rem(a), a % d, "a={a} d={d}");
            }
            for _ in 0..20_000 {
                let a = next();
                assert_eq!(f.rem(a), a % d, "a={a} d={d}");
                let a = a >> (a % 64);
                assert_eq!(f.rem(a), a % d, "a={a} d={d}");
            }
        }
    }
}
