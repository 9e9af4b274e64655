//! What samtools markdup reads from read names: the tile and x/y
//! coordinates of optical duplicates (Illumina's colon-separated fields,
//! or `--read-coords`' groups) and barcodes (`--barcode-name`,
//! `--barcode-rgx`). Regular expressions are POSIX extended ones matched
//! by the C library, as samtools matches them (leftmost-longest groups,
//! `[[:digit:]]` classes).

use super::record::{strncmp_equal, strtol};
use crate::Error;
use std::ffi::{CStr, CString};

/// A compiled POSIX extended regular expression (`regcomp` with
/// `REG_EXTENDED`), freed on drop.
pub(super) struct PosixRegex {
    compiled: Box<libc::regex_t>,
}

// SAFETY: the compiled pattern is heap memory owned by this value alone;
// glibc's regexec only reads it (under its own lock), so moving it to or
// using it from another thread is sound.
unsafe impl Send for PosixRegex {}
// SAFETY: as above; regexec takes the pattern by const pointer.
unsafe impl Sync for PosixRegex {}

/// Capture offsets of one match: `None` for a group that did not take part.
pub(super) type Groups = [Option<(usize, usize)>; 5];

impl PosixRegex {
    /// Compiles `pattern`, or returns regerror's text for it.
    pub(super) fn new(pattern: &str) -> Result<PosixRegex, String> {
        let text = CString::new(pattern).map_err(|_| "pattern contains a NUL".to_string())?;
        // SAFETY: regex_t is plain data that regcomp fills in; zeroed is a
        // valid starting value for it.
        let mut compiled: Box<libc::regex_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `compiled` points to a regex_t we own and `text` is a
        // NUL-terminated string that outlives the call.
        let code = unsafe { libc::regcomp(&mut *compiled, text.as_ptr(), libc::REG_EXTENDED) };
        if code != 0 {
            let message = error_text(code, &compiled);
            // A failed regcomp leaves nothing to free.
            return Err(message);
        }
        Ok(PosixRegex { compiled })
    }

    /// Matches `subject` (a NUL-terminated name), filling the first
    /// `wanted` groups (at most 5): `Err(regexec's code)` when it does not
    /// match.
    pub(super) fn exec(&self, subject: &CStr, wanted: usize) -> Result<Groups, i32> {
        let mut matches = [libc::regmatch_t { rm_so: -1, rm_eo: -1 }; 5];
        let wanted = wanted.min(5);
        // SAFETY: the pattern was compiled by regcomp; `subject` is
        // NUL-terminated; `matches` has room for `wanted` entries.
        let code = unsafe { libc::regexec(&*self.compiled, subject.as_ptr(), wanted, matches.as_mut_ptr(), 0) };
        if code != 0 {
            return Err(code);
        }
        let mut groups: Groups = [None; 5];
        for (group, m) in groups.iter_mut().zip(&matches[..wanted]) {
            if m.rm_so >= 0 {
                *group = Some((m.rm_so as usize, m.rm_eo as usize));
            }
        }
        Ok(groups)
    }

    /// regerror's text for a code regexec returned.
    pub(super) fn error(&self, code: i32) -> String {
        error_text(code, &self.compiled)
    }
}

fn error_text(code: i32, compiled: &libc::regex_t) -> String {
    let mut buffer = [0 as libc::c_char; 256];
    // SAFETY: regerror writes at most buffer.len() bytes, NUL-terminated.
    unsafe { libc::regerror(code, compiled, buffer.as_mut_ptr(), buffer.len()) };
    // SAFETY: regerror NUL-terminated the buffer.
    unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned()
}

impl Drop for PosixRegex {
    fn drop(&mut self) {
        // SAFETY: compiled by a successful regcomp and freed once.
        unsafe { libc::regfree(&mut *self.compiled) };
    }
}

/// `--read-coords` and `--coords-order`: which groups hold x, y and the
/// part of the name that must be equal (0: none).
pub(super) struct CoordsRegex {
    regex: PosixRegex,
    x: usize,
    y: usize,
    t: usize,
}

impl CoordsRegex {
    /// As samtools reads `--coords-order`: by its first three (or two)
    /// letters.
    pub(super) fn new(pattern: &str, order: &str) -> Result<CoordsRegex, Error> {
        let starts = |p: &str| order.as_bytes().starts_with(p.as_bytes());
        let (t, x, y) = if starts("txy") || starts("tyx") {
            (1, 2, 3)
        } else if starts("xyt") || starts("yxt") {
            (3, 1, 2)
        } else if starts("xty") || starts("ytx") {
            (2, 1, 3)
        } else if starts("xy") || starts("yx") {
            (0, 1, 2)
        } else {
            return Err(Error::InvalidArgument(format!("could not recognise regex coordinate order \"{order}\"")));
        };
        let regex = PosixRegex::new(pattern).map_err(|e| Error::InvalidArgument(format!("regex error \"{e}\"")))?;
        Ok(CoordsRegex { regex, x, y, t })
    }
}

/// Where a name's optical coordinates are, and the span of it (`beg..end`)
/// that must be equal in the other name.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Coordinates {
    pub x: i64,
    pub y: i64,
    pub beg: usize,
    pub end: usize,
}

/// Why a name gave no coordinates: warned about (samtools' 1), or not
/// matched by `--read-coords` (its -1: an error for an original read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CoordsFailure {
    Warned,
    NoMatch,
}

/// Counts warnings of one kind; the first ten go to the log (shared by
/// the kinds, in the order samtools prints them).
#[derive(Default)]
pub(super) struct Warnings {
    pub count: u64,
}

/// samtools prints this many warnings of one kind, then stays quiet.
pub(super) const WARNING_MAX: u64 = 10;

impl Warnings {
    pub(super) fn add(&mut self, log: &mut Vec<String>, message: impl FnOnce() -> String) {
        self.count += 1;
        if self.count <= WARNING_MAX {
            log.push(message());
        }
    }
}

/// The name as a C string, in a buffer kept for the next name.
fn c_name<'a>(name: &[u8], buffer: &'a mut Vec<u8>) -> &'a CStr {
    buffer.clear();
    buffer.extend_from_slice(name);
    buffer.push(0);
    CStr::from_bytes_with_nul(buffer).expect("a name has no NUL inside")
}

/// The optical coordinates of `name`: from `--read-coords`, else from
/// Illumina's colon-separated fields.
pub(super) fn coordinates(
    regex: Option<&CoordsRegex>,
    name: &[u8],
    buffer: &mut Vec<u8>,
    warnings: &mut Warnings,
    log: &mut Vec<String>,
) -> Result<Coordinates, CoordsFailure> {
    match regex {
        None => colon_coordinates(name, warnings, log),
        Some(r) => regex_coordinates(r, name, buffer, warnings, log),
    }
}

fn lossy(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

fn colon_coordinates(name: &[u8], warnings: &mut Warnings, log: &mut Vec<String>) -> Result<Coordinates, CoordsFailure> {
    let (mut separators, mut xpos, mut ypos) = (0, 0, 0);
    for (at, _) in name.iter().enumerate().filter(|(_, &c)| c == b':') {
        separators += 1;
        match separators {
            2 => xpos = at + 1,
            3 => ypos = at + 1,
            // HiSeq names: lane:tile:x:y after the first field.
            4 => {
                xpos = ypos;
                ypos = at + 1;
            }
            // Newer Illumina names.
            5 => xpos = at + 1,
            6 => ypos = at + 1,
            _ => {}
        }
    }
    if !matches!(separators, 3 | 4 | 6 | 7) {
        warnings.add(log, || format!("cannot decipher read name {} for optical duplicate marking.", lossy(name)));
        return Err(CoordsFailure::Warned);
    }
    let Some(x) = strtol(&name[xpos..]) else {
        warnings.add(log, || format!("cannot decipher x coordinate in {} .", lossy(name)));
        return Err(CoordsFailure::Warned);
    };
    let Some(y) = strtol(&name[ypos..]) else {
        warnings.add(log, || format!("cannot decipher y coordinate in {} .", lossy(name)));
        return Err(CoordsFailure::Warned);
    };
    Ok(Coordinates { x, y, beg: 0, end: xpos })
}

fn regex_coordinates(
    r: &CoordsRegex,
    name: &[u8],
    buffer: &mut Vec<u8>,
    warnings: &mut Warnings,
    log: &mut Vec<String>,
) -> Result<Coordinates, CoordsFailure> {
    let wanted = if r.t != 0 { 5 } else { 4 };
    let groups = r.regex.exec(c_name(name, buffer), wanted).map_err(|_| CoordsFailure::NoMatch)?;
    let (beg, end) = if r.t != 0 { groups[r.t].ok_or(CoordsFailure::NoMatch)? } else { (0, 0) };
    let (Some((xb, xe)), Some((yb, ye))) = (groups[r.x], groups[r.y]) else { return Err(CoordsFailure::NoMatch) };
    let mut number = |from: usize, to: usize, axis: char| {
        if to - from > 254 {
            warnings
                .add(log, || format!("{axis} coordinate string longer than allowed qname length in {} ({} long).", lossy(name), to - from));
            return Err(CoordsFailure::Warned);
        }
        let text = &name[from..to];
        strtol(text).ok_or_else(|| {
            warnings.add(log, || format!("cannot decipher {axis} coordinate in {} ({}).", lossy(name), lossy(text)));
            CoordsFailure::Warned
        })
    };
    let x = number(xb, xe, 'x')?;
    let y = number(yb, ye, 'y')?;
    Ok(Coordinates { x, y, beg, end })
}

/// Whether two reads' coordinates are within `distance` on the same tile
/// (the first name's tile span compared with the second's).
pub(super) fn close(a_name: &[u8], a: &Coordinates, b_name: &[u8], b: &Coordinates, distance: i64) -> bool {
    let span = a.end.saturating_sub(a.beg);
    strncmp_equal(&a_name[a.beg.min(a_name.len())..], &b_name[b.beg.min(b_name.len())..], span)
        && (a.x - b.x).abs() <= distance
        && (a.y - b.y).abs() <= distance
}

/// Where a read's barcode comes from.
pub(super) enum BarcodeSource {
    /// No barcodes.
    None,
    /// A string tag (`--barcode-tag`).
    Tag([u8; 2]),
    /// The first group of a regular expression on the name
    /// (`--barcode-name`, `--barcode-rgx`).
    Name(PosixRegex),
}

/// Illumina's UMI: the eighth colon-delimited field of the name.
pub(super) const ILLUMINA_UMI: &str = "[0-9A-Za-z]+:[0-9]+:[0-9]+:[0-9]+:[0-9]+:[0-9]+:[0-9]+:([!-?A-~]+)";

/// Bob Jenkins' one-at-a-time hash, as samtools reduces barcodes (and
/// keys) to 32 bits.
pub(super) fn one_at_a_time(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0;
    for &b in bytes {
        hash = hash.wrapping_add(u32::from(b));
        hash = hash.wrapping_add(hash << 10);
        hash ^= hash >> 6;
    }
    hash = hash.wrapping_add(hash << 3);
    hash ^= hash >> 11;
    hash.wrapping_add(hash << 15)
}

/// The barcode hash of a read (0 without one), warning as samtools does.
pub(super) fn barcode(source: &BarcodeSource, data: &[u8], buffer: &mut Vec<u8>, warnings: &mut Warnings, log: &mut Vec<String>) -> u32 {
    let before = warnings.count;
    let hash = match source {
        BarcodeSource::None => return 0,
        BarcodeSource::Tag(tag) => match super::record::find(data, *tag) {
            None => 0,
            Some(at) => match super::record::string_value(data, at) {
                Some(value) => one_at_a_time(value),
                None => {
                    warnings.add(log, || format!("{} tag wrong type. Aux tag needs to be a string type.", String::from_utf8_lossy(tag)));
                    0
                }
            },
        },
        BarcodeSource::Name(regex) => {
            let name = super::record::name(data);
            match regex.exec(c_name(name, buffer), 2) {
                Ok(groups) => match groups[1] {
                    Some((b, e)) => one_at_a_time(&name[b..e]),
                    None => {
                        warnings.add(log, || format!("barcode regex unable to match substring on {}.", lossy(name)));
                        0
                    }
                },
                Err(code) => {
                    warnings.add(log, || format!("barcode regex match error \"{}\" on {}.", regex.error(code), lossy(name)));
                    0
                }
            }
        }
    };
    if warnings.count == WARNING_MAX && before != warnings.count {
        log.push(format!("{} barcode read warnings.  New warnings will not be reported.", warnings.count));
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn illumina_names() {
        let mut w = Warnings::default();
        let c = colon_coordinates(b"M1:1:FC:2:1101:1234:5678", &mut w, &mut Vec::new()).unwrap();
        assert_eq!((c.x, c.y, c.end), (1234, 5678, 15));
        let c = colon_coordinates(b"HS:3:1101:15:99", &mut w, &mut Vec::new()).unwrap();
        assert_eq!((c.x, c.y), (15, 99));
        assert_eq!(colon_coordinates(b"read1", &mut w, &mut Vec::new()).unwrap_err(), CoordsFailure::Warned);
        assert_eq!(w.count, 1);
    }

    #[test]
    fn posix_classes_match() {
        let r = CoordsRegex::new("([[:digit:]]+):([[:digit:]]+):([[:digit:]]+)$", "txy").unwrap();
        let mut w = Warnings::default();
        let c = regex_coordinates(&r, b"a:12:345:678", &mut Vec::new(), &mut w, &mut Vec::new()).unwrap();
        assert_eq!((c.x, c.y, c.beg, c.end), (345, 678, 2, 4));
    }
}
