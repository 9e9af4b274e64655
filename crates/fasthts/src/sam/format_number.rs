//! Numbers in SAM text, printed as htslib 1.16 prints them: plain decimal
//! (kstring's `kputuw`/`kputll`), C's `%g`, and kstring's `kputd`.

use super::bytes::c_str;
use std::io::Write;

/// Plain decimal, as kstring's `kputuw`/`kputll` print.
#[inline]
pub(super) fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    if v < 10 {
        out.push(b'0' + v as u8);
        return;
    }
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while v > 0 {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&buf[i..]);
}

#[inline]
pub(super) fn put_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    put_u64(out, v.unsigned_abs());
}

/// Formats into a stack buffer (no allocation) and returns the bytes written.
fn fmt_into<'b>(buf: &'b mut [u8; 64], args: std::fmt::Arguments<'_>) -> &'b [u8] {
    let mut w = &mut buf[..];
    w.write_fmt(args).expect("a %g or %f of a double fits in 64 bytes");
    let n = 64 - w.len();
    &buf[..n]
}

/// C's `printf("%g", d)` as glibc prints it: 6 significant digits, correctly
/// rounded (ties to even), `%e` style when the exponent is below -4 or at
/// least 6, trailing zeros removed; `inf`, `nan` with their signs.
pub fn put_printf_g(out: &mut Vec<u8>, d: f64) {
    put_printf_g_precision(out, d, 6);
}

/// C's `printf("%.<precision>g", d)` as glibc prints it (a precision of 0
/// is taken as 1, as C does): [`put_printf_g`] at any precision up to 17.
pub fn put_printf_g_precision(out: &mut Vec<u8>, d: f64, precision: usize) {
    let p = precision.clamp(1, 17);
    if d.is_nan() {
        out.extend_from_slice(if d.is_sign_negative() { b"-nan" } else { b"nan" });
        return;
    }
    if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    let mut buf = [0u8; 64];
    // The exponent of the value rounded to 6 significant digits decides the
    // style (C11 7.21.6.1).
    let e_form = fmt_into(&mut buf, format_args!("{d:.*e}", p - 1));
    let e_at = e_form.iter().position(|&c| c == b'e').expect("exponent");
    let exp: i32 = std::str::from_utf8(&e_form[e_at + 1..]).expect("ASCII").parse().expect("integer exponent");
    if (-4..p as i32).contains(&exp) {
        let mut fbuf = [0u8; 64];
        let f_form = fmt_into(&mut fbuf, format_args!("{d:.*}", (p as i32 - 1 - exp) as usize));
        out.extend_from_slice(strip_fraction_zeros(f_form));
    } else {
        let mantissa = strip_fraction_zeros(&e_form[..e_at]);
        out.extend_from_slice(mantissa);
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        put_u64(out, u64::from(a));
    }
}

/// Drops trailing zeros after a decimal point, and the point if bare.
fn strip_fraction_zeros(s: &[u8]) -> &[u8] {
    if !s.contains(&b'.') {
        return s;
    }
    let mut n = s.len();
    while s[n - 1] == b'0' {
        n -= 1;
    }
    if s[n - 1] == b'.' {
        n -= 1;
    }
    &s[..n]
}

/// kstring's `kputd` (htslib 1.16 kstring.c), step for step: values in
/// [0.0001, 999999] are scaled by 1e10, rounded by adding half a unit of the
/// 6th significant digit, then cut to 6 significant digits (so 999999.5
/// prints as `1000000`, where `%g` gives `1e+06`); other values go to `%g`.
pub fn put_kputd(out: &mut Vec<u8>, d: f64) {
    if d == 0.0 {
        out.extend_from_slice(if d.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    let mut d = d;
    if d < 0.0 {
        out.push(b'-');
        d = -d;
    }
    #[allow(clippy::manual_range_contains)] // NaN must take this branch too
    if !(d >= 0.0001 && d <= 999999.0) {
        put_printf_g(out, d);
        return;
    }
    let mut i = (d * 10000000000.0) as u64;
    i += if d < 0.001 {
        5
    } else if d < 0.01 {
        50
    } else if d < 0.1 {
        500
    } else if d < 1.0 {
        5000
    } else if d < 10.0 {
        50000
    } else if d < 100.0 {
        500000
    } else if d < 1000.0 {
        5000000
    } else if d < 10000.0 {
        50000000
    } else if d < 100000.0 {
        500000000
    } else {
        5000000000
    };
    // buf and the cursors cp, ep, xp, z mirror the C code's pointers.
    let mut buf = [0u8; 21];
    let mut cp = 20;
    loop {
        cp -= 1;
        buf[cp] = b'0' + (i % 10) as u8;
        i /= 10;
        if i < 1 {
            break;
        }
    }
    buf[20] = 0;
    let mut p = 20 - cp;
    let mut ep;
    if p <= 10 {
        // d < 1: "0." then zeros, then the first 6 digits.
        buf[cp + 6] = 0;
        ep = cp + 5;
        while p < 10 {
            cp -= 1;
            buf[cp] = b'0';
            p += 1;
        }
        cp -= 1;
        buf[cp] = b'.';
        cp -= 1;
        buf[cp] = b'0';
    } else {
        // Shift the integer digits left one place to make room for the point.
        cp -= 1;
        let mut xp = cp;
        while p > 10 {
            buf[xp] = buf[xp + 1];
            p -= 1;
            xp += 1;
        }
        buf[xp] = b'.';
        buf[cp + 7] = 0;
        ep = cp + 6;
        if buf[cp + 6] == b'.' {
            buf[cp + 6] = 0;
        }
    }
    while buf[ep] == b'0' && ep > cp {
        ep -= 1;
    }
    let z = ep + 1;
    while ep > cp {
        if buf[ep] == b'.' {
            if buf[z - 1] == b'.' {
                buf[z - 1] = 0;
            } else {
                buf[z] = 0;
            }
            break;
        }
        ep -= 1;
    }
    out.extend_from_slice(c_str(&buf[cp..]));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(d: f64) -> String {
        let mut v = Vec::new();
        put_printf_g(&mut v, d);
        String::from_utf8(v).unwrap()
    }

    fn kputd(d: f64) -> String {
        let mut v = Vec::new();
        put_kputd(&mut v, d);
        String::from_utf8(v).unwrap()
    }

    /// The C library's `%g`, the oracle for [`put_printf_g`].
    fn libc_g(d: f64) -> String {
        let mut buf = [0u8; 64];
        // SAFETY: the buffer's size is passed; the format takes one double.
        let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%g".as_ptr(), d) };
        String::from_utf8(buf[..n as usize].to_vec()).unwrap()
    }

    #[test]
    fn printf_g_matches_the_c_library() {
        let fixed = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e-4,
            9.99995e-5,
            0.000099999995,
            1e-5,
            123456.0,
            1234565.0,
            1234575.0,
            999999.5,
            999999.4,
            1e6,
            1e100,
            -1e-300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            0.1,
            1.0 / 3.0,
            2.5,
            100000.0,
            12345.65,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for d in fixed {
            assert_eq!(g(d), libc_g(d), "{d:e}");
        }
        // glibc prints the sign of a NaN.
        assert_eq!(g(f64::NAN), libc_g(f64::NAN));
        assert_eq!(g(-f64::NAN), libc_g(-f64::NAN));
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = match i % 3 {
                0 => f64::from_bits(x),
                1 => f64::from(f32::from_bits(x as u32)),
                // Short decimals, where ties of the 7th digit are common.
                _ => (x % 100_000_000) as f64 / 10f64.powi((x >> 40) as i32 % 16),
            };
            assert_eq!(g(d), libc_g(d), "{d:e} (bits {:#x})", d.to_bits());
        }
    }

    #[test]
    fn printf_g_at_other_precisions_matches_the_c_library() {
        let formats = [(1, c"%.1g"), (3, c"%.3g"), (4, c"%.4g"), (5, c"%.5g"), (6, c"%.6g")];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..60_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = match i % 3 {
                0 => f64::from_bits(x),
                1 => (x % 1_000_000) as f64 / 7.0,
                _ => (x % 100_000_000) as f64 / 10f64.powi((x >> 40) as i32 % 16),
            };
            for (p, format) in formats {
                let mut buf = [0u8; 64];
                // SAFETY: the buffer's size is passed; the format takes one double.
                let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), d) };
                let mut ours = Vec::new();
                put_printf_g_precision(&mut ours, d, p);
                assert_eq!(ours, &buf[..n as usize], "%.{p}g of {d:e}");
            }
        }
    }

    #[test]
    fn kputd_follows_kstring_not_printf() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (0.1f32 as f64, "0.1"),
            (1.0 / 3.0, "0.333333"),
            (2.0 / 3.0, "0.666667"),
            (0.0001, "0.0001"),
            (100000.0, "100000"),
            (999999.0, "999999"),
            (12.5, "12.5"),
            // Half-way cases round up here; %g rounds them to even.
            (123456.5, "123457"),
            (0.1234565, "0.123457"),
            // Outside [0.0001, 999999]: %g.
            (1e-5, "1e-05"),
            (999999.5, "1e+06"),
            (1e6, "1e+06"),
            (-3.4028234663852886e38, "-3.40282e+38"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ];
        for &(d, want) in cases {
            assert_eq!(kputd(d), want, "{d:e}");
        }
        assert_eq!(g(123456.5), "123456");
    }
}
