//! Reading and editing one BAM record in place, as markdup needs it: the
//! flag, the name, the qualities and the `Z` tags it sets and clears
//! (htslib's `bam_aux_get`, `bam_aux_update_str`, `bam_aux_del`).
//!
//! A record is held with its 4-byte `block_size` prefix (as it is
//! written out), which every edit keeps up to date.

/// `block_size` plus the fixed fields of a BAM record.
const FIXED: usize = 4 + 32;

pub(super) const PAIRED: u16 = 0x1;
pub(super) const UNMAPPED: u16 = 0x4;
pub(super) const MATE_UNMAPPED: u16 = 0x8;
pub(super) const REVERSE: u16 = 0x10;
pub(super) const MATE_REVERSE: u16 = 0x20;
pub(super) const READ1: u16 = 0x40;
pub(super) const SECONDARY: u16 = 0x100;
pub(super) const QC_FAIL: u16 = 0x200;
pub(super) const DUPLICATE: u16 = 0x400;
pub(super) const SUPPLEMENTARY: u16 = 0x800;

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"))
}

pub(super) fn flag(data: &[u8]) -> u16 {
    u16::from_le_bytes([data[4 + 14], data[4 + 15]])
}

pub(super) fn set_flag(data: &mut [u8], flag: u16) {
    data[4 + 14..4 + 16].copy_from_slice(&flag.to_le_bytes());
}

/// The read's name, up to its first NUL (as C's string functions see it).
pub(super) fn name(data: &[u8]) -> &[u8] {
    let len = usize::from(data[4 + 8]);
    let field = &data[FIXED..FIXED + len];
    &field[..field.iter().position(|&c| c == 0).unwrap_or(field.len())]
}

fn seq_len(data: &[u8]) -> usize {
    u32_at(data, 4 + 16) as usize
}

fn qual_start(data: &[u8]) -> usize {
    let n_cigar = usize::from(u16::from_le_bytes([data[4 + 12], data[4 + 13]]));
    FIXED + usize::from(data[4 + 8]) + 4 * n_cigar + seq_len(data).div_ceil(2)
}

fn aux_start(data: &[u8]) -> usize {
    qual_start(data) + seq_len(data)
}

/// samtools markdup's score of a read: the sum of its base qualities of
/// at least 15.
pub(super) fn quality_score(data: &[u8]) -> i64 {
    let start = qual_start(data);
    data[start..start + seq_len(data)].iter().filter(|&&q| q >= 15).map(|&q| i64::from(q)).sum()
}

/// Where a tag is: the offset of its two letters and the end of its value.
#[derive(Clone, Copy)]
pub(super) struct TagAt {
    start: usize,
    end: usize,
}

/// The size of a value of `kind` at `at` (its bytes after the type letter),
/// or `None` when it runs past the record or the type is unknown.
fn value_len(data: &[u8], at: usize, kind: u8) -> Option<usize> {
    let fixed = |n: usize| (at + n <= data.len()).then_some(n);
    match kind {
        b'A' | b'c' | b'C' => fixed(1),
        b's' | b'S' => fixed(2),
        b'i' | b'I' | b'f' => fixed(4),
        b'd' => fixed(8),
        b'Z' | b'H' => data[at..].iter().position(|&c| c == 0).map(|n| n + 1),
        b'B' => {
            let sub = *data.get(at)?;
            let size = match sub {
                b'c' | b'C' => 1,
                b's' | b'S' => 2,
                b'i' | b'I' | b'f' => 4,
                _ => return None,
            };
            let count = u32::from_le_bytes(data.get(at + 1..at + 5)?.try_into().ok()?) as usize;
            fixed(5 + count.checked_mul(size)?)
        }
        _ => None,
    }
}

/// The first field of `tag` (htslib's `bam_aux_get`; a malformed tag
/// area ends the search).
pub(super) fn find(data: &[u8], tag: [u8; 2]) -> Option<TagAt> {
    let mut at = aux_start(data);
    while at + 3 <= data.len() {
        let len = value_len(data, at + 3, data[at + 2])?;
        let end = at + 3 + len;
        if data[at..at + 2] == tag {
            return Some(TagAt { start: at, end });
        }
        at = end;
    }
    None
}

/// A string value (`Z` or `H`), without its NUL: htslib's `bam_aux2Z`.
pub(super) fn string_value(data: &[u8], at: TagAt) -> Option<&[u8]> {
    matches!(data[at.start + 2], b'Z' | b'H').then(|| &data[at.start + 3..at.end - 1])
}

/// An integer value, 0 for another type: htslib's `bam_aux2i`.
pub(super) fn integer_value(data: &[u8], at: TagAt) -> i64 {
    let v = &data[at.start + 3..at.end];
    match data[at.start + 2] {
        b'c' => i64::from(v[0] as i8),
        b'C' => i64::from(v[0]),
        b's' => i64::from(i16::from_le_bytes([v[0], v[1]])),
        b'S' => i64::from(u16::from_le_bytes([v[0], v[1]])),
        b'i' => i64::from(i32::from_le_bytes([v[0], v[1], v[2], v[3]])),
        b'I' => i64::from(u32::from_le_bytes([v[0], v[1], v[2], v[3]])),
        _ => 0,
    }
}

/// The string value of `tag`, if it has one.
pub(super) fn string_tag(data: &[u8], tag: [u8; 2]) -> Option<&[u8]> {
    find(data, tag).and_then(|at| string_value(data, at))
}

fn update_block_size(data: &mut [u8]) {
    let size = (data.len() - 4) as u32;
    data[..4].copy_from_slice(&size.to_le_bytes());
}

/// Sets `tag` to the string `value` where it is, or appends it: htslib's
/// `bam_aux_update_str`, which refuses (`Err`) a field of `tag` that is
/// not a `Z` string. A record's 64-bit positions
/// ([`crate::sam::Positions::Wide`], with `wide`) stay its last field.
pub(super) fn update_string(data: &mut Vec<u8>, tag: [u8; 2], value: &[u8], wide: bool) -> Result<(), ()> {
    match find(data, tag) {
        Some(at) if data[at.start + 2] != b'Z' => return Err(()),
        Some(at) => {
            let old = &data[at.start + 3..at.end - 1];
            if old != value {
                data.splice(at.start + 3..at.end - 1, value.iter().copied());
            }
        }
        None => {
            let tail = if wide { crate::sam::wide_positions_len(&data[4..]) } else { 0 };
            let at = data.len() - tail;
            let field = tag.iter().chain(b"Z").chain(value).chain(b"\0").copied();
            data.splice(at..at, field);
        }
    }
    update_block_size(data);
    Ok(())
}

/// Removes the first field of `tag`, if any (htslib's `bam_aux_del`).
pub(super) fn delete(data: &mut Vec<u8>, tag: [u8; 2]) {
    if let Some(at) = find(data, tag) {
        data.drain(at.start..at.end);
        update_block_size(data);
    }
}

/// Leading clipped bases (`S` and `H`) of `cigar`, as `(op, len)` pairs.
pub(super) fn leading_clips(cigar: impl Iterator<Item = (u8, u32)>) -> i64 {
    let mut clipped = 0;
    for (op, len) in cigar {
        if matches!(op, b'S' | b'H') {
            clipped += i64::from(len);
        } else {
            break;
        }
    }
    clipped
}

/// C's `strtol` reading base-10 digits at the start of `text` (blanks and
/// a sign first): `None` when there are no digits; saturating as strtol
/// does.
pub(super) fn strtol(text: &[u8]) -> Option<i64> {
    let mut i = text.iter().take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)).count();
    let negative = match text.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = text[i.min(text.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut value: i64 = 0;
    for &c in &text[i..i + digits] {
        let d = i64::from(c - b'0');
        value = if negative { value.saturating_mul(10).saturating_sub(d) } else { value.saturating_mul(10).saturating_add(d) };
    }
    Some(value)
}

/// C's `strncmp` of two NUL-free names (each ends where its slice does).
pub(super) fn strncmp_equal(a: &[u8], b: &[u8], n: usize) -> bool {
    let (a, b) = (&a[..a.len().min(n)], &b[..b.len().min(n)]);
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_reads_as_c() {
        assert_eq!(strtol(b"123:4"), Some(123));
        assert_eq!(strtol(b" -7x"), Some(-7));
        assert_eq!(strtol(b"x1"), None);
        assert_eq!(strtol(b""), None);
        assert_eq!(strtol(b"99999999999999999999999"), Some(i64::MAX));
    }

    #[test]
    fn strncmp_as_c() {
        assert!(strncmp_equal(b"ab:1", b"ab:2", 3));
        assert!(!strncmp_equal(b"ab", b"abc", 3));
        assert!(strncmp_equal(b"x", b"y", 0));
    }
}
