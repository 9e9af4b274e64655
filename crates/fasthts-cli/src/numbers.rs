//! Value parsers of the numeric options: each refuses what has no meaning
//! (junk, NaN, infinities, numbers out of range) while arguments are parsed,
//! before any output exists, with a message that says what is accepted.
//! `main` prints clap's error as one line with the command's usage status.

use std::fmt::Display;

/// A number of worker threads (`-@`, the k-mer commands' `-T`): a whole
/// number, 0 or more (0 as in samtools: no extra threads).
pub fn threads(s: &str) -> Result<usize, String> {
    whole(0, i64::MAX)(s)
}

/// A whole number from `lo` to `hi` (inclusive; `i64::MAX` means no upper
/// bound), in decimal with an optional sign.
pub fn whole<T>(lo: i64, hi: i64) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<i64>,
{
    move |s: &str| {
        // Bounds that are only the type's are not worth stating.
        let accepted = || match (lo <= i32::MIN.into(), hi >= i32::MAX.into()) {
            (true, true) => "expected a whole number".to_string(),
            (false, true) => format!("expected a whole number, {lo} or more"),
            _ => format!("expected a whole number from {lo} to {hi}"),
        };
        let t = s.trim();
        let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(accepted());
        }
        // Digits that overflow i64 are out of range whatever the bounds.
        let v: i64 = t.parse().map_err(|_| accepted())?;
        if v < lo || v > hi {
            return Err(accepted());
        }
        T::try_from(v).map_err(|_| accepted())
    }
}

/// A finite number from `lo` to `hi` (inclusive), as Python's `float()`
/// reads it (`1e6`, `20000.5`): NaN and infinities are refused.
pub fn real(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| s.trim().parse::<f64>().map_err(|_| between(lo, hi)).and_then(|v| in_range(v, lo, hi))
}

/// `v` if finite and from `lo` to `hi`.
pub fn in_range(v: f64, lo: f64, hi: f64) -> Result<f64, String> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(v)
    } else {
        Err(between(lo, hi))
    }
}

fn between(lo: impl Display, hi: f64) -> String {
    format!("expected a number from {lo} to {}", short_float(hi))
}

/// `1e15` rather than `1000000000000000`.
fn short_float(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_in_range() {
        let level = whole::<i32>(-1, 9);
        assert_eq!(level("-1"), Ok(-1));
        assert_eq!(level(" 9 "), Ok(9));
        assert_eq!(level("+3"), Ok(3));
        for bad in ["10", "-2", "nan", "inf", "1e1", "3.0", "", "-", "99999999999999999999"] {
            assert_eq!(level(bad), Err("expected a whole number from -1 to 9".to_string()), "{bad:?}");
        }
        assert_eq!(threads("0"), Ok(0));
        assert_eq!(threads("-1"), Err("expected a whole number, 0 or more".to_string()));
        // In range for i64, not for the option's type.
        assert!(whole::<u8>(0, i64::MAX)("300").is_err());
        assert_eq!(whole::<i32>(i32::MIN.into(), i32::MAX.into())("x"), Err("expected a whole number".to_string()));
        assert_eq!(whole::<i32>(0, i32::MAX.into())("-5"), Err("expected a whole number, 0 or more".to_string()));
    }

    #[test]
    fn finite_numbers_in_range() {
        let size = real(0.0, 1e15);
        assert_eq!(size("1e6"), Ok(1e6));
        assert_eq!(size("20000.5"), Ok(20000.5));
        for bad in ["nan", "inf", "-inf", "1e19", "-1", "x", ""] {
            assert_eq!(size(bad), Err("expected a number from 0 to 1e15".to_string()), "{bad:?}");
        }
    }
}
