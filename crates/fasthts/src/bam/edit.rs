//! Edits of a record's data (without `block_size`), as pysam's
//! `AlignedSegment` setters make them through htslib: the flag and mapping
//! quality in place, the name replaced, a tag removed where it stood and
//! appended at the end.

use super::record::{aux_elem_size, RecordRef};
use crate::Error;

/// Offsets in the fixed part of a record's data.
const L_READ_NAME: usize = 8;
const MAPQ: usize = 9;
const FLAG: std::ops::Range<usize> = 14..16;
const FIXED_LEN: usize = 32;

/// Sets the flag.
pub fn set_flag(data: &mut [u8], flag: u16) {
    data[FLAG].copy_from_slice(&flag.to_le_bytes());
}

/// Sets the mapping quality.
pub fn set_mapping_quality(data: &mut [u8], mapq: u8) {
    data[MAPQ] = mapq;
}

/// The record with the read name `name` (at most 254 bytes, no NUL), NUL
/// terminated, as htslib writes what pysam's `query_name` setter stores
/// (its padding to 4 bytes, `l_extranul`, is not written).
pub fn with_name(data: &[u8], name: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    if name.len() > 254 {
        return Err(Error::InvalidArgument(format!("query length out of range {} > 254", name.len())));
    }
    if name.contains(&0) {
        return Err(Error::InvalidArgument("a read name cannot hold a NUL".into()));
    }
    let old = usize::from(data[L_READ_NAME]);
    let stored = name.len() + 1;
    out.clear();
    out.extend_from_slice(&data[..FIXED_LEN]);
    out[L_READ_NAME] = stored as u8;
    out.extend_from_slice(name);
    out.resize(FIXED_LEN + stored, 0);
    out.extend_from_slice(&data[FIXED_LEN + old..]);
    Ok(())
}

/// A tag's value, typed as it is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TagValue<'a> {
    /// An integer stored as type `c C s S i I`.
    Int(i64, u8),
    /// `f`.
    Float(f32),
    /// `d`.
    Double(f64),
    /// `A`.
    Char(u8),
    /// `Z` or `H` (the type) text, without NUL.
    Text(&'a [u8], u8),
}

/// The smallest integer type holding `v`, as pysam picks it when no type
/// is given: `C`, `S`, `I` for values from 0, `c`, `s`, `i` below; None
/// when no 32-bit type holds it.
pub fn smallest_int_type(v: i64) -> Option<u8> {
    Some(match v {
        0..=0xff => b'C',
        0x100..=0xffff => b'S',
        0x1_0000..=0xffff_ffff => b'I',
        -0x80..=-1 => b'c',
        -0x8000..=-0x81 => b's',
        -0x8000_0000..=-0x8001 => b'i',
        _ => return None,
    })
}

/// Removes the first field tagged `tag` (nothing when there is none or the
/// fields before it are malformed).
pub fn remove_tag(data: &mut Vec<u8>, tag: [u8; 2]) {
    if let Some(field) = find_tag(data, tag) {
        data.drain(field);
    }
}

/// Where the first field tagged `tag` lies in the record's bytes (tag,
/// type and value), as htslib's `bam_aux_get` finds it: `None` when there
/// is none or the fields before it are malformed.
pub fn find_tag(data: &[u8], tag: [u8; 2]) -> Option<std::ops::Range<usize>> {
    let r = RecordRef::new_prevalidated(data);
    let mut at = r.aux_start();
    while at + 3 <= data.len() {
        let len = field_len(&data[at..])?;
        if data[at..at + 2] == tag {
            return Some(at..at + len);
        }
        at += len;
    }
    None
}

/// The length of the aux field starting `b`, if well formed.
fn field_len(b: &[u8]) -> Option<usize> {
    let t = *b.get(2)?;
    let body = b.get(3..)?;
    let len = match t {
        b'Z' | b'H' => body.iter().position(|&c| c == 0)? + 1,
        b'B' => {
            let size = aux_elem_size(*body.first()?)?;
            5 + size * u32::from_le_bytes(body.get(1..5)?.try_into().ok()?) as usize
        }
        t => aux_elem_size(t)?,
    };
    (3 + len <= b.len()).then_some(3 + len)
}

/// Appends the field `tag` with `value` at the end of the record; an
/// integer that its type cannot hold is refused.
pub fn append_tag(data: &mut Vec<u8>, tag: [u8; 2], value: TagValue<'_>) -> Result<(), Error> {
    let out_of_range = |v: i64, t: u8| Error::InvalidArgument(format!("value {v} out of range of tag type '{}'", t as char));
    data.extend_from_slice(&tag);
    match value {
        TagValue::Int(v, t) => {
            data.push(t);
            let ok = match t {
                b'c' => i8::try_from(v).map(|x| data.extend_from_slice(&x.to_le_bytes())).is_ok(),
                b'C' => u8::try_from(v).map(|x| data.push(x)).is_ok(),
                b's' => i16::try_from(v).map(|x| data.extend_from_slice(&x.to_le_bytes())).is_ok(),
                b'S' => u16::try_from(v).map(|x| data.extend_from_slice(&x.to_le_bytes())).is_ok(),
                b'i' => i32::try_from(v).map(|x| data.extend_from_slice(&x.to_le_bytes())).is_ok(),
                b'I' => u32::try_from(v).map(|x| data.extend_from_slice(&x.to_le_bytes())).is_ok(),
                _ => false,
            };
            if !ok {
                data.truncate(data.len() - 3);
                return Err(out_of_range(v, t));
            }
        }
        TagValue::Float(v) => {
            data.push(b'f');
            data.extend_from_slice(&v.to_le_bytes());
        }
        TagValue::Double(v) => {
            data.push(b'd');
            data.extend_from_slice(&v.to_le_bytes());
        }
        TagValue::Char(c) => data.extend_from_slice(&[b'A', c]),
        TagValue::Text(text, t) => {
            data.push(t);
            data.extend_from_slice(text);
            data.push(0);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_types_are_pysams() {
        let got: Vec<_> = [5, -5, 300, -300, 70000, 3_000_000_000, -70000, 1 << 32].iter().map(|&v| smallest_int_type(v)).collect();
        assert_eq!(got, [Some(b'C'), Some(b'c'), Some(b'S'), Some(b's'), Some(b'I'), Some(b'I'), Some(b'i'), None]);
    }

    #[test]
    fn tag_fields_are_measured() {
        assert_eq!(field_len(b"XXZab\0rest"), Some(6));
        assert_eq!(field_len(b"XXBC\x02\0\0\0\x01\x02"), Some(10));
        assert_eq!(field_len(b"XXi\x01\0\0\0"), Some(7));
        assert_eq!(field_len(b"XXi\x01"), None);
    }
}
