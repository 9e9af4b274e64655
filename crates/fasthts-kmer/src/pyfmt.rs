//! Python-compatible number formatting (khmer's outputs are written by
//! Python: `repr(float)`, `round(x, 3)`, `'%1.3f'`, `'{:.4}'`, `json.dump`).

/// Python's `repr(x)` for a float (shortest round-trip digits; scientific
/// notation when the decimal exponent is < -4 or ≥ 16).
pub fn py_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let e = format!("{:e}", x); // shortest digits, e.g. "-7.083e-15", "1e16"
    let (mant, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let m = if digits.len() > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits.clone() };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    let nd = digits.len() as i32;
    if exp >= 0 {
        let int_len = exp + 1;
        if nd <= int_len {
            format!("{sign}{}{}.0", digits, "0".repeat((int_len - nd) as usize))
        } else {
            format!("{sign}{}.{}", &digits[..int_len as usize], &digits[int_len as usize..])
        }
    } else {
        format!("{sign}0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    }
}

/// Python's `round(x, nd)` followed by `repr` (correctly rounded, ties to
/// even on the exact binary value, as Rust's `{:.N}` formatting is).
pub fn py_round_repr(x: f64, nd: usize) -> String {
    let s = format!("{:.*}", nd, x);
    py_repr(s.parse::<f64>().unwrap())
}

/// Python's `'{:.N}'.format(x)` (general format, N significant digits,
/// trailing zeros removed, no exponent for the magnitudes we print).
pub fn py_general(x: f64, sig: usize) -> String {
    if x == 0.0 {
        return "0.0".into();
    }
    let e = format!("{:.*e}", sig - 1, x);
    let (_, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if exp < -4 || exp >= sig as i32 {
        // Python: mantissa without trailing zeros, exponent 2+ digits
        let (m, _) = e.split_once('e').unwrap();
        let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{m}e{es}{:02}", exp.abs());
    }
    let decimals = (sig as i32 - 1 - exp).max(0) as usize;
    let s = format!("{:.*}", decimals, x);
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    // Python's '{:.4}' (no type) keeps at least one digit after the point
    // for floats: format(1.0, '.4') == '1.0'.
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

/// Python's `format(x, 'g')`: 6 significant digits, no trailing zeros.
pub fn py_g(x: f64) -> String {
    let s = py_general(x, 6);
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A JSON string literal as Python's `json.dump` writes it (`ensure_ascii`).
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{08}' => o.push_str("\\b"),
            '\u{0c}' => o.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    o.push_str(&format!("\\u{:04x}", u));
                }
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Python's text of an OS error on `path`, as its `OSError` shows it:
/// `[Errno 2] No such file or directory: 'path'`.
pub fn py_os_error(path: &str, e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(errno) => {
            let strerror = text.strip_suffix(&format!(" (os error {errno})")).unwrap_or(&text);
            format!("[Errno {errno}] {strerror}: '{path}'")
        }
        None => text,
    }
}

/// Python's exception (class and text) for an OS error on `path`, as a
/// traceback's last line shows it: `FileNotFoundError: [Errno 2] ...`.
pub fn py_exception(path: &str, e: &std::io::Error) -> String {
    let class = match e.raw_os_error() {
        Some(libc::ENOENT) => "FileNotFoundError",
        Some(libc::EACCES | libc::EPERM) => "PermissionError",
        Some(libc::EISDIR) => "IsADirectoryError",
        Some(libc::ENOTDIR) => "NotADirectoryError",
        _ => "OSError",
    };
    format!("{class}: {}", py_os_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_format_as_python() {
        assert_eq!(py_g(1e6), "1e+06");
        assert_eq!(py_g(123456.0), "123456");
        assert_eq!(py_g(2.5), "2.5");
    }

    #[test]
    fn os_errors_as_python_shows_them() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(py_os_error("x.fq", &e), "[Errno 2] No such file or directory: 'x.fq'");
        assert_eq!(py_exception("x.fq", &e), "FileNotFoundError: [Errno 2] No such file or directory: 'x.fq'");
        let e = std::io::Error::from_raw_os_error(libc::EISDIR);
        assert_eq!(py_exception("d", &e), "IsADirectoryError: [Errno 21] Is a directory: 'd'");
        assert_eq!(py_os_error("x", &std::io::Error::other("odd")), "odd");
    }

    #[test]
    fn repr_like_python() {
        assert_eq!(py_repr(7.083854349740781e-15), "7.083854349740781e-15");
        assert_eq!(py_repr(0.0), "0.0");
        assert_eq!(py_repr(1.0), "1.0");
        assert_eq!(py_repr(0.789), "0.789");
        assert_eq!(py_repr(1e-5), "1e-05");
        assert_eq!(py_repr(0.0001), "0.0001");
        assert_eq!(py_repr(1e16), "1e+16");
        assert_eq!(py_repr(1234567890123456.0), "1234567890123456.0");
        assert_eq!(py_repr(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(py_repr(2.5e-7), "2.5e-07");
        assert_eq!(py_round_repr(0.0625, 3), "0.062");
        assert_eq!(py_round_repr(1.0, 3), "1.0");
        assert_eq!(py_round_repr(2.0 / 3.0, 3), "0.667");
        assert_eq!(py_round_repr(0.00001, 3), "0.0");
    }

    #[test]
    fn general_like_python() {
        assert_eq!(py_general(0.998, 4), "0.998");
        assert_eq!(py_general(0.80672, 4), "0.8067");
        assert_eq!(py_general(1.0, 4), "1.0");
        assert_eq!(py_general(0.5, 4), "0.5");
        assert_eq!(py_general(0.123456, 4), "0.1235");
        assert_eq!(py_general(0.00001234, 4), "1.234e-05");
    }

    #[test]
    fn json() {
        assert_eq!(json_str("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(json_str("é"), "\"\\u00e9\"");
    }
}
