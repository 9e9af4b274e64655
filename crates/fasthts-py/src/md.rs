//! The reference under an alignment, rebuilt from the read, its CIGAR and
//! its MD tag as pysam rebuilds it (`AlignedSegment.get_reference_sequence`,
//! `get_aligned_pairs(with_seq=True)`): mismatches in lowercase, deleted
//! bases from the MD, skips (`N`) left out, and pysam's errors.

use fasthts::bam::CigarOp;
use pyo3::exceptions::{PyAssertionError, PyTypeError, PyValueError};
use pyo3::PyErr;

/// The MD tag's value as pysam reads it.
pub(crate) enum Md<'a> {
    Absent,
    /// `Z`.
    Text(&'a [u8]),
    /// `A` (HTSeq writes one-character MD values so).
    Char(u8),
    /// Any other type: refused, naming its type character.
    OtherType(char),
}

/// The reference bases under the alignment (`M`/`=`/`X` and `D` columns),
/// from the bases of `read` between the soft clips (None: no sequence).
pub(crate) fn reference_sequence(cigar: &[(CigarOp, u32)], read: Option<&[u8]>, md: Md<'_>) -> Result<Vec<u8>, PyErr> {
    let char_md;
    let md = match md {
        Md::Absent => return Err(PyValueError::new_err("MD tag not present")),
        Md::Text(t) => t,
        Md::Char(c) => {
            char_md = [c];
            &char_md[..]
        }
        Md::OtherType(t) => {
            return Err(PyTypeError::new_err(format!("Tagged field MD:{t}:<value> does not have expected type MD:Z")));
        }
    };
    let Some(read) = read else { return Err(PyTypeError::new_err("expected bytes, NoneType found")) };
    let aligned = alignment_sequence(cigar, read, md)?;
    let mut out = Vec::new();
    let mut at = 0usize;
    for &(op, len) in cigar {
        match op {
            CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch | CigarOp::Deletion => {
                // Past a short MD's end pysam reads the bytes' terminating NUL.
                out.extend((at..at + len as usize).map(|i| aligned.get(i).copied().unwrap_or(0)));
                at += len as usize;
            }
            CigarOp::Insertion | CigarOp::Pad => at += len as usize,
            _ => {}
        }
    }
    Ok(out)
}

/// Whether `c` is an inserted base (stored lowercase) or a mismatch, as
/// pysam's signed-char test (`>= 'a'`) sees it.
fn is_lower(c: Option<&u8>) -> bool {
    c.is_some_and(|&c| (c as i8) >= b'a' as i8)
}

/// One byte per alignment column (inserted read bases lowercase,
/// deletions `-`), then corrected by the MD: mismatches lowercase,
/// deleted bases filled in.
fn alignment_sequence(cigar: &[(CigarOp, u32)], read: &[u8], md: &[u8]) -> Result<Vec<u8>, PyErr> {
    // Every column but clips, skips included (pysam's buffer size).
    let max_len =
        cigar.iter().filter(|(op, _)| !matches!(op, CigarOp::SoftClip | CigarOp::HardClip)).fold(0u32, |n, &(_, l)| n.wrapping_add(l));
    if max_len == 0 {
        return Err(PyValueError::new_err("could not determine alignment length"));
    }
    let mut s = vec![0u8; max_len as usize + 1];
    let (mut r, mut at) = (0usize, 0usize);
    let base = |i: usize| read.get(i).copied().unwrap_or(0);
    for &(op, len) in cigar {
        for _ in 0..len {
            let c = match op {
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    r += 1;
                    base(r - 1)
                }
                CigarOp::Deletion => b'-',
                CigarOp::Insertion | CigarOp::Pad => {
                    r += 1;
                    base(r - 1).wrapping_add(32)
                }
                _ => break,
            };
            s[at] = c;
            at += 1;
        }
    }
    let filled = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    let insertions = s[..filled].iter().filter(|&&c| is_lower(Some(&c))).count();
    let md_len = md_reference_length(md);
    if md_len + insertions as u64 > u64::from(max_len) {
        return Err(PyAssertionError::new_err(format!(
            "Invalid MD tag: MD length {md_len} mismatch with CIGAR length {max_len} and {insertions} insertions"
        )));
    }
    let mut at = 0usize;
    let skip_inserted = |at: &mut usize, s: &[u8]| {
        while is_lower(s.get(*at)) {
            *at += 1;
        }
    };
    let skip_matches = |at: &mut usize, n: u64, s: &[u8]| {
        for _ in 0..n {
            if *at >= s.len() {
                break;
            }
            skip_inserted(at, s);
            *at += 1;
        }
        skip_inserted(at, s);
    };
    let mut matches = 0u64;
    let mut i = 0usize;
    while let Some(&c) = md.get(i).filter(|&&c| c != 0) {
        if c.is_ascii_digit() {
            matches = matches.saturating_mul(10).saturating_add(u64::from(c - b'0'));
            i += 1;
            continue;
        }
        skip_matches(&mut at, matches, &s);
        matches = 0;
        if c == b'^' {
            i += 1;
            while let Some(&d) = md.get(i).filter(|d| d.is_ascii_uppercase()) {
                if let Some(slot) = s.get_mut(at) {
                    *slot = d;
                }
                at += 1;
                i += 1;
            }
        } else {
            // pysam lowercases with a signed-char test: bytes above 127 too.
            if let Some(slot) = s.get_mut(at) {
                *slot = if (c as i8) <= b'Z' as i8 { c.wrapping_add(32) } else { c };
            }
            at += 1;
            i += 1;
        }
    }
    skip_matches(&mut at, matches, &s);
    s.truncate(at.min(s.len()));
    Ok(s)
}

/// The reference length an MD string describes (matches, mismatches and
/// deleted bases).
fn md_reference_length(md: &[u8]) -> u64 {
    let (mut len, mut matches, mut i) = (0u64, 0u64, 0usize);
    while let Some(&c) = md.get(i).filter(|&&c| c != 0) {
        if c.is_ascii_digit() {
            matches = matches.saturating_mul(10).saturating_add(u64::from(c - b'0'));
        } else {
            len += std::mem::take(&mut matches);
            if c == b'^' {
                while md.get(i + 1).is_some_and(u8::is_ascii_uppercase) {
                    i += 1;
                    len += 1;
                }
            } else {
                len += 1;
            }
        }
        i += 1;
    }
    len + matches
}
