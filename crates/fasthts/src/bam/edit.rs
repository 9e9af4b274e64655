//! Edits of a record's data (without `block_size`), as pysam's
//! `AlignedSegment` setters make them through htslib: the fixed fields in
//! place (the bin recomputed where pysam recomputes it), the name, CIGAR
//! and sequence replaced, qualities overwritten, a tag removed where it
//! stood and appended at the end.

use super::binning::reg2bin;
use super::flags;
use super::record::{aux_elem_size, move_cigar_to_tag, RecordRef};
use crate::Error;
use std::ops::Range;

/// Offsets in the fixed part of a record's data.
const REF_ID: Range<usize> = 0..4;
const POS: Range<usize> = 4..8;
const L_READ_NAME: usize = 8;
const MAPQ: usize = 9;
const BIN: Range<usize> = 10..12;
const N_CIGAR: Range<usize> = 12..14;
const FLAG: Range<usize> = 14..16;
const L_SEQ: Range<usize> = 16..20;
const NEXT_REF_ID: Range<usize> = 20..24;
const NEXT_POS: Range<usize> = 24..28;
const TLEN: Range<usize> = 28..32;
const FIXED_LEN: usize = 32;

/// The CIGAR operation letters in code order (`M`=0 ... `B`=9).
const CIGAR_LETTERS: &[u8; 10] = b"MIDNSHP=XB";

/// The data of pysam's `AlignedSegment()`: no name, CIGAR, sequence or
/// tags; reference ids and positions -1, everything else 0 (bin too).
pub fn empty_record() -> [u8; FIXED_LEN] {
    let mut data = [0u8; FIXED_LEN];
    for field in [REF_ID, POS, NEXT_REF_ID, NEXT_POS] {
        data[field].copy_from_slice(&(-1i32).to_le_bytes());
    }
    data
}

fn set_i32(data: &mut [u8], field: Range<usize>, v: i32) {
    data[field].copy_from_slice(&v.to_le_bytes());
}

/// Sets the reference id (not checked against a header: the caller's).
pub fn set_reference_id(data: &mut [u8], tid: i32) {
    set_i32(data, REF_ID, tid);
}

/// Sets the position and recomputes the bin, as pysam's `reference_start`.
pub fn set_position(data: &mut [u8], pos: i32) {
    set_i32(data, POS, pos);
    update_bin(data);
}

/// Sets the mate's reference id.
pub fn set_mate_reference_id(data: &mut [u8], tid: i32) {
    set_i32(data, NEXT_REF_ID, tid);
}

/// Sets the mate's position.
pub fn set_mate_position(data: &mut [u8], pos: i32) {
    set_i32(data, NEXT_POS, pos);
}

/// Sets the template length.
pub fn set_template_length(data: &mut [u8], tlen: i32) {
    set_i32(data, TLEN, tlen);
}

/// Sets the bin as given (pysam's `bin` setter: no check).
pub fn set_bin(data: &mut [u8], bin: u16) {
    data[BIN].copy_from_slice(&bin.to_le_bytes());
}

/// Recomputes the bin from the position and the aligned span, as pysam's
/// `update_bin` (htslib's `hts_reg2bin` over `bam_endpos`: one base when
/// unmapped or the CIGAR consumes no reference), truncated to 16 bits as
/// BAM stores it.
pub fn update_bin(data: &mut [u8]) {
    let r = RecordRef::new_prevalidated(data);
    let bin = reg2bin(i64::from(r.pos()), r.end_pos(), 14, 5) as u16;
    set_bin(data, bin);
}

/// Sets or clears the flag bits `bits`, as pysam's flag properties; the
/// unmapped bit also recomputes the bin (the span becomes or stops being
/// one base), as pysam's `is_unmapped` and `is_mapped` setters do.
pub fn set_flag_bits(data: &mut [u8], bits: u16, on: bool) {
    let r = RecordRef::new_prevalidated(data);
    let flag = if on { r.flag() | bits } else { r.flag() & !bits };
    set_flag(data, flag);
    if bits & flags::UNMAPPED != 0 {
        update_bin(data);
    }
}

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

/// The CIGAR words (`length << 4 | code`) of a CIGAR string, as pysam's
/// `cigarstring` setter finds them: every `<digits><op letter>` in the
/// text, anything else skipped ("*" or text without one: no CIGAR). A
/// length whose word does not fit 32 bits is refused.
pub fn cigar_words_of_text(text: &[u8], words: &mut Vec<u32>) -> Result<(), Error> {
    words.clear();
    let mut at = 0;
    while at < text.len() {
        let digits = text[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        let op = text.get(at + digits).and_then(|c| CIGAR_LETTERS.iter().position(|l| l == c));
        let (true, Some(op)) = (digits > 0, op) else {
            at += 1;
            continue;
        };
        let len = std::str::from_utf8(&text[at..at + digits]).ok().and_then(|d| d.parse::<u64>().ok()).filter(|&l| l < 1 << 28);
        let Some(len) = len else {
            return Err(Error::InvalidArgument("value too large to convert to uint32_t".into()));
        };
        words.push((len as u32) << 4 | op as u32);
        at += digits + 1;
    }
    Ok(())
}

/// The record with the CIGAR `words` (`length << 4 | code` each; none: no
/// CIGAR), the bin recomputed, as pysam's `cigartuples` setter. A CIGAR
/// held in the `CG` tag is replaced (the field removed); more than 65,535
/// operations are stored as htslib writes them, `<l_seq>S<ref_len>N` and a
/// `CG:B,I` field at the end (refused when they cover 2^28 bases or more:
/// BAM cannot hold them).
pub fn with_cigar(data: &[u8], words: &[u32], out: &mut Vec<u8>) -> Result<(), Error> {
    let r = RecordRef::new_prevalidated(data);
    let cigar_start = FIXED_LEN + usize::from(data[L_READ_NAME]);
    let seq_start = cigar_start + 4 * usize::from(r.n_cigar_op());
    let aux_start = r.aux_start();
    let cg_field = r.cigar_tag_field().map(|f| aux_start + f.start..aux_start + f.end);
    out.clear();
    out.reserve(data.len() + 4 * words.len() + 8);
    out.extend_from_slice(&data[..cigar_start]);
    out.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    match &cg_field {
        Some(cg) => {
            out.extend_from_slice(&data[seq_start..cg.start]);
            out.extend_from_slice(&data[cg.end..]);
        }
        None => out.extend_from_slice(&data[seq_start..]),
    }
    let n_stored = if words.len() > 0xffff {
        move_cigar_to_tag(out, cigar_start, words.len() as u32, r.seq_len()).map_err(|ref_len| {
            Error::InvalidArgument(format!(
                "a CIGAR of {} operations covering {ref_len} reference bases cannot be stored in BAM",
                words.len()
            ))
        })?;
        2
    } else {
        words.len() as u16
    };
    out[N_CIGAR].copy_from_slice(&n_stored.to_le_bytes());
    update_bin(out);
    Ok(())
}

/// htslib's `seq_nt16_table`: a base letter's 4-bit code (`=ACMGRSVTWYHKDBN`
/// order, either case, U as T; anything else N).
fn base_code(c: u8) -> u8 {
    match c.to_ascii_uppercase() {
        b'=' => 0,
        b'A' => 1,
        b'C' => 2,
        b'M' => 3,
        b'G' => 4,
        b'R' => 5,
        b'S' => 6,
        b'V' => 7,
        b'T' | b'U' => 8,
        b'W' => 9,
        b'Y' => 10,
        b'H' => 11,
        b'K' => 12,
        b'D' => 13,
        b'B' => 14,
        _ => 15,
    }
}

/// The record with the sequence `seq` (letters; empty: none) and no
/// qualities (0xff throughout), as pysam's `query_sequence` setter. A
/// CIGAR held in the `CG` tag keeps its placeholder's clip as long as the
/// sequence, as htslib would write it.
pub fn with_sequence(data: &[u8], seq: &[u8], out: &mut Vec<u8>) {
    let r = RecordRef::new_prevalidated(data);
    let seq_start = FIXED_LEN + usize::from(data[L_READ_NAME]) + 4 * usize::from(r.n_cigar_op());
    let has_cg_cigar = r.cigar_tag_field().is_some();
    out.clear();
    out.reserve(data.len() + seq.len() * 2);
    out.extend_from_slice(&data[..seq_start]);
    out.extend(seq.chunks(2).map(|pair| base_code(pair[0]) << 4 | pair.get(1).map_or(0, |&c| base_code(c))));
    out.resize(out.len() + seq.len(), 0xff);
    out.extend_from_slice(&data[r.aux_start()..]);
    out[L_SEQ].copy_from_slice(&(seq.len() as i32).to_le_bytes());
    if has_cg_cigar {
        let clip = (seq.len() as u32) << 4 | 4;
        let cigar_start = FIXED_LEN + usize::from(data[L_READ_NAME]);
        out[cigar_start..cigar_start + 4].copy_from_slice(&clip.to_le_bytes());
    }
}

/// Sets the base qualities (raw Phred values; None: absent, 0xff
/// throughout), as pysam's `query_qualities` setter: as many as there are
/// bases, else pysam's length-mismatch error.
pub fn set_qualities(data: &mut [u8], quals: Option<&[u8]>) -> Result<(), Error> {
    let r = RecordRef::new_prevalidated(data);
    let (qual_start, l_seq) = (r.aux_start() - r.seq_len(), r.seq_len());
    match quals {
        None => data[qual_start..qual_start + l_seq].fill(0xff),
        Some(q) if q.len() == l_seq => data[qual_start..qual_start + l_seq].copy_from_slice(q),
        Some(q) => {
            return Err(Error::InvalidArgument(format!("quality ({}) and sequence ({l_seq}) length mismatch", q.len())));
        }
    }
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
    /// A `B` array: its subtype, element count and elements as stored.
    Array(u8, u32, &'a [u8]),
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

/// The subtype of a `B` array of integers from `min` to `max`, as pysam
/// picks it for a list: `c`, `s` or `i` when `min` is negative (`i` also
/// when only one bound fits it, as pysam's test reads), else `C`, `S`,
/// `I` by `max`; None when no type holds them.
pub fn smallest_array_type(min: i64, max: i64) -> Option<u8> {
    let fits = |lo: i64, hi: i64| min >= lo && max <= hi;
    Some(if min < 0 {
        if fits(i8::MIN.into(), i8::MAX.into()) {
            b'c'
        } else if fits(i16::MIN.into(), i16::MAX.into()) {
            b's'
        } else if min >= i32::MIN.into() || max <= i32::MAX.into() {
            b'i'
        } else {
            return None;
        }
    } else {
        match max {
            0..=0xff => b'C',
            0x100..=0xffff => b'S',
            0x1_0000..=0xffff_ffff => b'I',
            _ => return None,
        }
    })
}

/// Replaces the record's tags with the fields `fields` (encoded as BAM
/// stores them), as pysam's `set_tags`. A CIGAR held in the `CG` tag stays
/// (at the end, where htslib writes it): it is the alignment's, not a tag.
pub fn replace_tags(data: &mut Vec<u8>, fields: &[u8]) {
    let r = RecordRef::new_prevalidated(data);
    let aux_start = r.aux_start();
    let cg_field = r.cigar_tag_field().map(|f| aux_start + f.start..aux_start + f.end);
    let mut tail = Vec::with_capacity(fields.len() + cg_field.as_ref().map_or(0, |f| f.len()));
    tail.extend_from_slice(fields);
    if let Some(cg) = cg_field {
        tail.extend_from_slice(&data[cg]);
    }
    data.truncate(aux_start);
    data.extend_from_slice(&tail);
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
        TagValue::Array(subtype, count, elements) => {
            let size = aux_elem_size(subtype).filter(|&size| size * count as usize == elements.len());
            if size.is_none() {
                data.truncate(data.len() - 2);
                return Err(Error::InvalidArgument(format!("invalid array of {count} elements of type '{}'", subtype as char)));
            }
            data.extend_from_slice(&[b'B', subtype]);
            data.extend_from_slice(&count.to_le_bytes());
            data.extend_from_slice(elements);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::CigarOp;

    #[test]
    fn smallest_types_are_pysams() {
        let got: Vec<_> = [5, -5, 300, -300, 70000, 3_000_000_000, -70000, 1 << 32].iter().map(|&v| smallest_int_type(v)).collect();
        assert_eq!(got, [Some(b'C'), Some(b'c'), Some(b'S'), Some(b's'), Some(b'I'), Some(b'I'), Some(b'i'), None]);
    }

    use crate::bam::record::tests::encode;

    #[test]
    fn cigar_text_is_read_as_pysams_regex_finds_it() {
        let mut words = Vec::new();
        cigar_words_of_text(b"12Q3M2=x4B", &mut words).unwrap();
        assert_eq!(words, [3 << 4, 2 << 4 | 7, 4 << 4 | 9]);
        cigar_words_of_text(b"*", &mut words).unwrap();
        assert!(words.is_empty());
        assert!(cigar_words_of_text(b"268435456M", &mut words).is_err());
    }

    #[test]
    fn position_and_unmapped_bit_recompute_the_bin() {
        let mut data = encode("r", 0, 0, 100, 30, &[(0, 20000)], "", b"");
        set_position(&mut data, 16000);
        assert_eq!(RecordRef::new_prevalidated(&data).bin(), 585);
        set_flag_bits(&mut data, flags::UNMAPPED, true);
        assert_eq!(RecordRef::new_prevalidated(&data).bin(), 4681);
        set_position(&mut data, -1);
        assert_eq!(RecordRef::new_prevalidated(&data).bin(), 4680);
    }

    #[test]
    fn cigar_and_sequence_are_replaced() {
        let data = encode("r", 0, 0, 16380, 30, &[(0, 2)], "AC", b"XAZx\0");
        let mut out = Vec::new();
        with_cigar(&data, &[5 << 4], &mut out).unwrap();
        let r = RecordRef::new_prevalidated(&out);
        assert_eq!((r.cigar().iter().collect::<Vec<_>>(), r.bin(), r.aux_bytes()), (vec![(CigarOp::Match, 5)], 585, &b"XAZx\0"[..]));
        let mut seq = Vec::new();
        with_sequence(&out, b"acgtNx=", &mut seq);
        let r = RecordRef::new_prevalidated(&seq);
        assert_eq!((0..7).map(|i| r.base(i)).collect::<Vec<_>>(), b"ACGTNN=");
        assert_eq!((r.qual(), r.aux_bytes()), (&[0xff; 7][..], &b"XAZx\0"[..]));
        assert!(set_qualities(&mut seq, Some(&[1, 2])).is_err());
        set_qualities(&mut seq, Some(&[1; 7])).unwrap();
        assert_eq!(RecordRef::new_prevalidated(&seq).qual(), &[1; 7]);
    }

    #[test]
    fn a_long_cigar_is_stored_in_the_cg_tag() {
        let data = encode("r", 0, 0, 0, 30, &[], "", b"");
        let words: Vec<u32> = (0..70000).map(|i| 1 << 4 | if i % 2 == 0 { 0 } else { 2 }).collect();
        let mut out = Vec::new();
        with_cigar(&data, &words, &mut out).unwrap();
        let r = RecordRef::new_prevalidated(&out);
        assert_eq!((r.n_cigar_op(), r.cigar().len(), r.end_pos()), (2, 70000, 70000));
        let mut back = Vec::new();
        with_cigar(&out, &[3 << 4], &mut back).unwrap();
        assert_eq!(back, {
            let mut d = encode("r", 0, 0, 0, 30, &[(0, 3)], "", b"");
            set_bin(&mut d, 4681);
            d
        });
    }

    #[test]
    fn array_types_are_pysams() {
        let got: Vec<_> = [(1, 3), (-1, 200), (-200, 40000), (0, 70000), (-1 << 33, 5), (0, 1 << 33)]
            .iter()
            .map(|&(lo, hi)| smallest_array_type(lo, hi))
            .collect();
        assert_eq!(got, [Some(b'C'), Some(b's'), Some(b'i'), Some(b'I'), Some(b'i'), None]);
    }

    #[test]
    fn tags_are_replaced_and_arrays_appended() {
        let mut data = encode("r", 0, 0, 0, 30, &[(0, 1)], "A", b"NMC\x01XAZx\0");
        replace_tags(&mut data, b"RGZa\0");
        append_tag(&mut data, *b"XB", TagValue::Array(b's', 2, &[1, 0, 2, 0])).unwrap();
        assert!(append_tag(&mut data, *b"XC", TagValue::Array(b'i', 2, &[1, 0])).is_err());
        assert_eq!(RecordRef::new_prevalidated(&data).aux_bytes(), b"RGZa\0XBBs\x02\0\0\0\x01\0\x02\0");
    }

    #[test]
    fn tag_fields_are_measured() {
        assert_eq!(field_len(b"XXZab\0rest"), Some(6));
        assert_eq!(field_len(b"XXBC\x02\0\0\0\x01\x02"), Some(10));
        assert_eq!(field_len(b"XXi\x01\0\0\0"), Some(7));
        assert_eq!(field_len(b"XXi\x01"), None);
    }
}
