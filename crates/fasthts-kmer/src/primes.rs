//! khmer's table-size search: the N largest odd primes strictly below x.

/// Plain trial-division primality test (what khmer does; the sizes are small
/// enough that this is instant).
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    if n < 4 {
        return true;
    }
    if n % 2 == 0 {
        return false;
    }
    let mut d = 3u64;
    while d.saturating_mul(d) <= n {
        if n % d == 0 {
            return false;
        }
        d += 2;
    }
    true
}

/// khmer's `get_n_primes_near_x(n, x)`: start at `x-1`, step to the next odd
/// number below if even, walk down by 2 keeping primes until `n` are found.
/// `x == 1, n == 1` gives `[1]`. Returns `None` when fewer than `n` exist.
pub fn get_n_primes_near_x(n: usize, x: u64) -> Option<Vec<u64>> {
    if x == 1 && n == 1 {
        return Some(vec![1]);
    }
    let mut primes = Vec::with_capacity(n);
    if x < 2 {
        return if n == 0 { Some(primes) } else { None };
    }
    let mut i = x - 1;
    if i % 2 == 0 {
        i = i.saturating_sub(1);
    }
    while primes.len() < n && i > 0 {
        if is_prime(i) {
            primes.push(i);
        }
        if i < 2 {
            break;
        }
        i -= 2;
    }
    if primes.len() == n {
        Some(primes)
    } else {
        None
    }
}

/// Python's truncation of the float table size when it reaches C (`int(x)`
/// toward zero). Negative or NaN sizes become 0.
pub fn tablesize_from_float(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x.trunc() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        assert_eq!(get_n_primes_near_x(4, 1_000_000).unwrap(), vec![999983, 999979, 999961, 999959]);
        assert_eq!(get_n_primes_near_x(4, 1_000_000_000).unwrap(), vec![999999937, 999999929, 999999893, 999999883]);
        assert_eq!(get_n_primes_near_x(5, 100).unwrap(), vec![97, 89, 83, 79, 73]);
        assert_eq!(get_n_primes_near_x(3, 98).unwrap(), vec![97, 89, 83]);
        assert_eq!(get_n_primes_near_x(3, 97).unwrap(), vec![89, 83, 79]);
        assert_eq!(get_n_primes_near_x(4, 100_000).unwrap(), vec![99991, 99989, 99971, 99961]);
        assert_eq!(get_n_primes_near_x(4, 500_000).unwrap()[0], 499979);
        assert_eq!(get_n_primes_near_x(1, 1).unwrap(), vec![1]);
        assert_eq!(get_n_primes_near_x(4, 8), None); // 7,5,3 only
        assert_eq!(get_n_primes_near_x(3, 8).unwrap(), vec![7, 5, 3]);
        assert_eq!(tablesize_from_float(1e6 + 0.9), 1_000_000);
    }
}
