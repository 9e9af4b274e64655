//! Sort keys, extracted once per record.

use crate::bam::{flags, RecordRef};

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
