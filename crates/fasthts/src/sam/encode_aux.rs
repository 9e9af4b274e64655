//! The optional fields of a SAM line → BAM aux bytes, as htslib 1.16's
//! `aux_parse` (strict mode) and `sam_parse_B_vals`: smallest integer
//! types, and B arrays retyped when their values do not fit.

use super::bytes::{at, find2};
use super::parse_number::{str2int, str2uint, strtod};
use super::RecordError;
use crate::bam::record::aux_elem_size;

/// `c > '\t'` with C's signed `char` (x86-64): bytes >= 0x80 are negative.
#[inline(always)]
fn above_tab(c: u8) -> bool {
    (c as i8) > b'\t' as i8
}

/// htslib's `aux_parse` (strict mode) from `q` to the end of the line.
pub(super) fn parse_aux(s: &[u8], mut q: usize, out: &mut Vec<u8>) -> Result<(), RecordError> {
    let p = s.len();
    let mut overflow = false;
    while q < p {
        if p - q < 5 {
            return Err(RecordError::InvalidAux("incomplete aux field"));
        }
        if (s[q] as i8) < b'!' as i8 || (s[q + 1] as i8) < b'!' as i8 {
            return Err(RecordError::InvalidAux("invalid aux tag id"));
        }
        out.extend_from_slice(&s[q..q + 2]);
        q += 3;
        let ty = at(s, q);
        q += 2;
        if ty != b'Z' && ty != b'H' && !above_tab(at(s, q)) {
            return Err(RecordError::InvalidAux("incomplete aux field"));
        }
        match ty {
            b'A' | b'a' | b'c' | b'C' => {
                out.push(b'A');
                out.push(at(s, q));
                q += 1;
            }
            b'i' | b'I' => {
                if at(s, q) == b'-' {
                    let (v, e) = str2int(s, q, 32, &mut overflow);
                    q = e;
                    let x = v as i32;
                    if x >= i8::MIN as i32 {
                        out.push(b'c');
                        out.push(x as u8);
                    } else if x >= i16::MIN as i32 {
                        out.push(b's');
                        out.extend_from_slice(&(x as i16).to_le_bytes());
                    } else {
                        out.push(b'i');
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                } else {
                    let (v, e) = str2uint(s, q, 32, &mut overflow);
                    q = e;
                    let x = v as u32;
                    if x <= u8::MAX as u32 {
                        out.push(b'C');
                        out.push(x as u8);
                    } else if x <= u16::MAX as u32 {
                        out.push(b'S');
                        out.extend_from_slice(&(x as u16).to_le_bytes());
                    } else {
                        out.push(b'I');
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                }
            }
            b'f' => {
                let (v, e) = strtod(s, q);
                q = e;
                out.push(b'f');
                out.extend_from_slice(&(v as f32).to_le_bytes());
            }
            b'd' => {
                let (v, e) = strtod(s, q);
                q = e;
                out.push(b'd');
                out.extend_from_slice(&v.to_le_bytes());
            }
            b'Z' | b'H' => {
                let rest = s.get(q..).unwrap_or(&[]);
                let len = find2(rest, b'\t', 0).unwrap_or(rest.len());
                if ty == b'H' && len & 1 != 0 {
                    return Err(RecordError::InvalidAux("hex field does not have an even number of digits"));
                }
                out.push(ty);
                out.extend_from_slice(&rest[..len]);
                out.push(0);
                q += len;
            }
            b'B' => {
                let sub = at(s, q);
                q += 1;
                if !matches!(at(s, q), 0 | b',' | b'\t') {
                    return Err(RecordError::InvalidAux("B aux field type not followed by ','"));
                }
                let mut r = q;
                let mut n: u32 = 0;
                while above_tab(at(s, r)) {
                    if s[r] == b',' {
                        n += 1;
                    }
                    r += 1;
                }
                q = parse_b_values(s, sub, n, q, r, out)?;
            }
            _ => return Err(RecordError::InvalidAux("unrecognized type")),
        }
        while above_tab(at(s, q)) {
            q += 1;
        }
        q += 1;
    }
    if overflow {
        return Err(RecordError::AuxOutOfRange);
    }
    Ok(())
}

/// Moves `q` to the next comma (or the array's end), htslib's
/// `skip_to_comma_`.
#[inline]
fn skip_to_comma(s: &[u8], mut q: usize) -> usize {
    while above_tab(at(s, q)) && s[q] != b',' {
        q += 1;
    }
    q
}

/// htslib's `sam_parse_B_vals`: `q` is at the comma before the first value,
/// `r` at the end of the array. Returns where parsing stopped.
fn parse_b_values(s: &[u8], sub: u8, n: u32, start: usize, r: usize, out: &mut Vec<u8>) -> Result<usize, RecordError> {
    let size = aux_elem_size(sub).unwrap_or(0);
    if size == 0 || size > 4 || sub == b'A' {
        return Err(RecordError::InvalidAux("unrecognized B array type"));
    }
    let orig = out.len();
    out.reserve(6 + n as usize * size);
    out.push(b'B');
    out.push(sub);
    out.extend_from_slice(&n.to_le_bytes());
    let mut overflow = false;
    let mut q = start;
    while q < r {
        match sub {
            b'c' => {
                let (v, e) = str2int(s, q + 1, 8, &mut overflow);
                out.push(v as u8);
                q = e;
            }
            b's' => {
                let (v, e) = str2int(s, q + 1, 16, &mut overflow);
                out.extend_from_slice(&(v as i16).to_le_bytes());
                q = e;
            }
            b'i' => {
                let (v, e) = str2int(s, q + 1, 32, &mut overflow);
                out.extend_from_slice(&(v as i32).to_le_bytes());
                q = e;
            }
            // htslib tests `*q != '-'` where q is still at the comma, so a
            // negative value parses as 0 (no digits) rather than failing.
            b'C' | b'S' | b'I' => {
                if at(s, q) != b'-' {
                    let bits = 8 * size as u32;
                    let (v, e) = str2uint(s, q + 1, bits, &mut overflow);
                    match size {
                        1 => out.push(v as u8),
                        2 => out.extend_from_slice(&(v as u16).to_le_bytes()),
                        _ => out.extend_from_slice(&(v as u32).to_le_bytes()),
                    }
                    q = e;
                } else {
                    overflow = true;
                }
            }
            _ => {
                // 'f'
                let (v, e) = strtod(s, q + 1);
                out.extend_from_slice(&(v as f32).to_le_bytes());
                q = e;
            }
        }
        q = skip_to_comma(s, q);
    }
    if !overflow {
        return Ok(q);
    }
    // The given type was wrong: find the range and retry with one that fits.
    out.truncate(orig);
    let (mut min, mut max) = (0i64, 0i64);
    let mut over = false;
    let mut q = start;
    while q < r {
        let (v, e) = str2int(s, q + 1, 64, &mut over);
        max = max.max(v);
        min = min.min(v);
        q = skip_to_comma(s, e);
    }
    if !over {
        let t = if min < 0 {
            if min >= i8::MIN as i64 && max <= i8::MAX as i64 {
                Some(b'c')
            } else if min >= i16::MIN as i64 && max <= i16::MAX as i64 {
                Some(b's')
            } else if min >= i32::MIN as i64 && max <= i32::MAX as i64 {
                Some(b'i')
            } else {
                None
            }
        } else if max < u8::MAX as i64 {
            Some(b'C')
        } else if max <= u16::MAX as i64 {
            Some(b'S')
        } else if max <= u32::MAX as i64 {
            Some(b'I')
        } else {
            None
        };
        if let Some(t) = t {
            return parse_b_values(s, t, n, start, r, out);
        }
    }
    Err(RecordError::InvalidAux("numeric value in B array out of allowed range"))
}
