//! Numbers in SAM text, parsed as htslib 1.16 parses them: `hts_str2uint`,
//! `hts_str2int`, and C's `strtoll` and `strtod`. Each takes the text and
//! the index to start at, and returns the value and the index after it.

use super::bytes::at;

/// htslib's `hts_str2uint`: returns the value and the index after it.
pub(super) fn str2uint(s: &[u8], mut i: usize, bits: u32, overflow: &mut bool) -> (u64, usize) {
    let limit: u64 = if bits < 64 { (1u64 << bits) - 1 } else { u64::MAX };
    let fast = bits * 1000 / 3322 + 1;
    if at(s, i) == b'+' {
        i += 1;
    }
    unsigned_digits(s, i, fast, limit, overflow)
}

/// The digits of an htslib integer from `i`: up to `fast - 1` of them
/// without overflow checks, the rest checked against `limit`.
fn unsigned_digits(s: &[u8], mut i: usize, mut fast: u32, limit: u64, overflow: &mut bool) -> (u64, usize) {
    let mut n: u64 = 0;
    loop {
        fast -= 1;
        let d = at(s, i);
        if fast == 0 || !d.is_ascii_digit() {
            break;
        }
        n = n * 10 + u64::from(d - b'0');
        i += 1;
    }
    if fast == 0 {
        slow_digits(s, &mut i, &mut n, limit, overflow);
    }
    (n, i)
}

/// htslib's `hts_str2int`.
pub(super) fn str2int(s: &[u8], mut i: usize, bits: u32, overflow: &mut bool) -> (i64, usize) {
    let mut limit: u64 = (1u64 << (bits - 1)) - 1;
    let fast = (bits - 1) * 1000 / 3322 + 1;
    let mut neg = false;
    match at(s, i) {
        b'-' => {
            neg = true;
            limit += 1;
            i += 1;
        }
        b'+' => i += 1,
        _ => {}
    }
    let (n, i) = unsigned_digits(s, i, fast, limit, overflow);
    let v = if n != 0 && neg { -((n - 1) as i64) - 1 } else { n as i64 };
    (v, i)
}

#[inline]
fn slow_digits(s: &[u8], i: &mut usize, n: &mut u64, limit: u64, overflow: &mut bool) {
    let (ld10, lm10) = (limit / 10, limit % 10);
    loop {
        let d = at(s, *i).wrapping_sub(b'0');
        if d >= 10 {
            break;
        }
        let d = u64::from(d);
        if *n < ld10 || (*n == ld10 && d <= lm10) {
            *n = *n * 10 + d;
            *i += 1;
        } else {
            loop {
                *i += 1;
                if at(s, *i).wrapping_sub(b'0') >= 10 {
                    break;
                }
            }
            *n = limit;
            *overflow = true;
            break;
        }
    }
}

/// C `strtoll(s + i, &end, 10)`.
pub(super) fn strtoll(s: &[u8], mut i: usize) -> (i64, usize) {
    let start = i;
    while matches!(at(s, i), b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    match at(s, i) {
        b'-' => {
            neg = true;
            i += 1;
        }
        b'+' => i += 1,
        _ => {}
    }
    if !at(s, i).is_ascii_digit() {
        return (0, start);
    }
    let mut n: u64 = 0;
    let mut over = false;
    while at(s, i).is_ascii_digit() {
        let d = u64::from(at(s, i) - b'0');
        match n.checked_mul(10).and_then(|v| v.checked_add(d)) {
            Some(v) => n = v,
            None => over = true,
        }
        i += 1;
    }
    let v = if neg {
        if over || n > 1u64 << 63 {
            i64::MIN
        } else {
            (n as i64).wrapping_neg()
        }
    } else if over || n > i64::MAX as u64 {
        i64::MAX
    } else {
        n as i64
    };
    (v, i)
}

/// C `strtod(s + i, &end)` in the C locale, where `s` is NUL-terminated
/// at its end. Returns the value and the index after what was parsed
/// (`i` when nothing was).
pub(super) fn strtod(s: &[u8], i: usize) -> (f64, usize) {
    let rest = s.get(i..).unwrap_or(&[]);
    // strtod skips leading white space (tabs and newlines included), so a
    // field starting with white space may read into the next field; a field
    // starting otherwise stops before any tab. Copy only what it can read.
    let take = if rest.first().is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')) {
        rest.len()
    } else {
        rest.iter().position(|&c| c == b'\t').unwrap_or(rest.len())
    };
    let token = &rest[..take];
    let token = match token.iter().position(|&c| c == 0) {
        Some(z) => &token[..z],
        None => token,
    };
    let mut stack = [0u8; 257];
    let mut heap;
    let buf: &[u8] = if token.len() < stack.len() {
        stack[..token.len()].copy_from_slice(token);
        &stack[..=token.len()]
    } else {
        heap = Vec::with_capacity(token.len() + 1);
        heap.extend_from_slice(token);
        heap.push(0);
        &heap
    };
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated (its last byte is 0 and no byte before
    // it is, by construction) and outlives the call; strtod reads up to the
    // NUL and stores in `end` a pointer into `buf`.
    let v = unsafe { libc::strtod(buf.as_ptr() as *const libc::c_char, &mut end) };
    let used = (end as usize).wrapping_sub(buf.as_ptr() as usize);
    let used = if used <= token.len() { used } else { 0 };
    (v, i + used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_parsers_match_htslib() {
        let mut of = false;
        assert_eq!(str2uint(b"255", 0, 8, &mut of), (255, 3));
        assert!(!of);
        assert_eq!(str2uint(b"256", 0, 8, &mut of), (255, 3));
        assert!(of);
        let mut of = false;
        assert_eq!(str2int(b"-2147483648", 0, 32, &mut of), (-2147483648, 11));
        assert!(!of);
        assert_eq!(str2int(b"-2147483649x", 0, 32, &mut of), (-2147483648, 11));
        assert!(of);
        assert_eq!(strtoll(b" -12x", 0), (-12, 4));
        assert_eq!(strtoll(b"x", 0), (0, 0));
        assert_eq!(strtod(b"1.5e1x", 0), (15.0, 5));
        assert_eq!(strtod(b"abc", 0).1, 0);
    }
}
