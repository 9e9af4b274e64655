//! Sort orders and their comparisons, as samtools sort 1.16 defines them.

use crate::bam::{flags, AuxValue, RecordRef};
use std::cmp::Ordering;

/// Which order to sort in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// By reference, position, strand (`samtools sort`).
    Coordinate,
    /// By read name in samtools' natural order, then READ1/READ2 flags
    /// (`samtools sort -n`).
    QueryName,
    /// By the value of an aux tag (records without it first), then by
    /// coordinate, or by name when `then_by_name` (`samtools sort -t TAG [-n]`).
    Tag {
        /// The tag.
        tag: [u8; 2],
        /// Name order rather than coordinate order among equal tag values.
        then_by_name: bool,
    },
}

impl SortOrder {
    /// The `@HD SO:` value samtools writes for this order.
    pub fn header_value(self) -> &'static str {
        match self {
            SortOrder::Coordinate => "coordinate",
            SortOrder::QueryName => "queryname",
            SortOrder::Tag { .. } => "unknown",
        }
    }

    /// The key extracted once per record: the whole comparison for
    /// coordinate order, a prefilter for name order (see [`compare`]).
    #[inline]
    pub fn key(self, r: &RecordRef<'_>) -> u128 {
        match self {
            SortOrder::Coordinate => record_coordinate_key(r),
            SortOrder::QueryName | SortOrder::Tag { .. } => 0,
        }
    }

    /// Compares two records with equal or unused keys.
    #[inline]
    pub fn compare(self, a: &RecordRef<'_>, b: &RecordRef<'_>) -> Ordering {
        match self {
            SortOrder::Coordinate => Ordering::Equal,
            SortOrder::QueryName => by_name(a, b),
            SortOrder::Tag { tag, then_by_name } => {
                let core = || if then_by_name { by_name(a, b) } else { record_coordinate_key(a).cmp(&record_coordinate_key(b)) };
                compare_tags(a.aux().find(tag), b.aux().find(tag)).unwrap_or_else(core)
            }
        }
    }
}

/// samtools' name order: [`strnum_cmp`] of the names, then the READ1/READ2 bits.
fn by_name(a: &RecordRef<'_>, b: &RecordRef<'_>) -> Ordering {
    let pair = flags::READ1 | flags::READ2;
    strnum_cmp(a.name(), b.name()).then_with(|| (a.flag() & pair).cmp(&(b.flag() & pair)))
}

/// samtools' `bam1_cmp_by_tag` up to its tie-break: records without the tag
/// first; values compared within their normalised type (integers, floats —
/// an integer against a float compares as floats —, characters, strings and
/// hex); different types by their normalised type letter. `None` means equal
/// here (or arrays, which samtools does not compare): fall back to the
/// secondary order.
fn compare_tags(a: Option<AuxValue<'_>>, b: Option<AuxValue<'_>>) -> Option<Ordering> {
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (None, Some(_)) => return Some(Ordering::Less),
        (Some(_), None) => return Some(Ordering::Greater),
        (Some(a), Some(b)) => (a, b),
    };
    // The type letters samtools normalises to, in its comparison order.
    let class = |v: &AuxValue<'_>| match v {
        AuxValue::Char(_) => b'A',
        AuxValue::Array { .. } => b'B',
        AuxValue::String(_) | AuxValue::Hex(_) => b'H',
        AuxValue::Int(_) => b'c',
        AuxValue::Float(_) | AuxValue::Double(_) => b'f',
    };
    let as_f64 = |v: &AuxValue<'_>| match *v {
        AuxValue::Int(i) => i as f64,
        AuxValue::Float(f) => f64::from(f),
        AuxValue::Double(d) => d,
        _ => 0.0,
    };
    // samtools returns "less" when a < b and "greater" otherwise for
    // unequal values, so incomparable floats (NaN) sort after.
    let unequal = |less: bool| Some(if less { Ordering::Less } else { Ordering::Greater });
    let (ca, cb) = (class(&a), class(&b));
    let numeric = |c: u8| c == b'c' || c == b'f';
    if ca != cb && !(numeric(ca) && numeric(cb)) {
        return Some(ca.cmp(&cb));
    }
    match (a, b) {
        (AuxValue::Int(x), AuxValue::Int(y)) => (x != y).then(|| x.cmp(&y)),
        (AuxValue::Char(x), AuxValue::Char(y)) => (x != y).then(|| x.cmp(&y)),
        (AuxValue::String(x) | AuxValue::Hex(x), AuxValue::String(y) | AuxValue::Hex(y)) => (x != y).then(|| x.cmp(y)),
        (AuxValue::Array { .. }, AuxValue::Array { .. }) => None,
        (x, y) => {
            let (x, y) = (as_f64(&x), as_f64(&y));
            if x != y {
                unequal(x < y)
            } else {
                None
            }
        }
    }
}

/// samtools' coordinate order (`bam1_cmp_core` in bam_sort.c, 1.16):
/// reference id as an unsigned number (so unplaced records, id -1, come
/// last), then `pos + 1` as unsigned (position -1 first), then forward
/// before reverse strand. Ties keep input order, which callers get from a
/// stable sort and by merging runs in input order.
///
/// ```
/// use fasthts::sort::coordinate_key;
/// // (tid, pos+1, rev) packed so that u128 order is samtools' order.
/// assert!(coordinate_key(0, 10, false) < coordinate_key(0, 10, true));
/// assert!(coordinate_key(0, 10, true) < coordinate_key(0, 11, false));
/// assert!(coordinate_key(5, 0, false) < coordinate_key(-1, -1, false));
/// assert!(coordinate_key(0, -1, false) < coordinate_key(0, 0, false));
/// ```
#[inline]
pub fn coordinate_key(ref_id: i32, pos: i32, reverse: bool) -> u128 {
    let tid = u128::from(ref_id as u32);
    let pos1 = u128::from((i64::from(pos) + 1) as u64);
    (tid << 64) | (pos1 << 1) | u128::from(reverse)
}

/// [`coordinate_key`] of a record.
#[inline]
pub fn record_coordinate_key(r: &RecordRef<'_>) -> u128 {
    coordinate_key(r.ref_id(), r.pos(), r.flag() & flags::REVERSE != 0)
}

/// samtools' natural name order (`strnum_cmp`): runs of digits compare as
/// numbers, leading zeros aside; numerically equal runs with different
/// zero padding are ordered by how far into each name the run ended, as
/// samtools does.
///
/// ```
/// use fasthts::sort::strnum_cmp;
/// use std::cmp::Ordering::*;
/// assert_eq!(strnum_cmp(b"r2", b"r10"), Less);
/// assert_eq!(strnum_cmp(b"r10", b"r10"), Equal);
/// assert_eq!(strnum_cmp(b"a01", b"a1"), Less);
/// assert_eq!(strnum_cmp(b"a", b"a1"), Less);
/// assert_eq!(strnum_cmp(b"x:9:b", b"x:9:a"), Greater);
/// ```
pub fn strnum_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let digit = |c: u8| c.is_ascii_digit();
    let (mut pa, mut pb) = (0usize, 0usize);
    while at(a, pa) != 0 && at(b, pb) != 0 {
        if digit(at(a, pa)) && digit(at(b, pb)) {
            while at(a, pa) == b'0' {
                pa += 1;
            }
            while at(b, pb) == b'0' {
                pb += 1;
            }
            while digit(at(a, pa)) && digit(at(b, pb)) && at(a, pa) == at(b, pb) {
                pa += 1;
                pb += 1;
            }
            if digit(at(a, pa)) && digit(at(b, pb)) {
                let mut i = 0;
                while digit(at(a, pa + i)) && digit(at(b, pb + i)) {
                    i += 1;
                }
                return if digit(at(a, pa + i)) {
                    Ordering::Greater
                } else if digit(at(b, pb + i)) {
                    Ordering::Less
                } else {
                    at(a, pa).cmp(&at(b, pb))
                };
            } else if digit(at(a, pa)) {
                return Ordering::Greater;
            } else if digit(at(b, pb)) {
                return Ordering::Less;
            } else if pa != pb {
                return if pa < pb { Ordering::Greater } else { Ordering::Less };
            }
        } else {
            if at(a, pa) != at(b, pb) {
                return at(a, pa).cmp(&at(b, pb));
            }
            pa += 1;
            pb += 1;
        }
    }
    if at(a, pa) != 0 {
        Ordering::Greater
    } else if at(b, pb) != 0 {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}
