//! The SAM header: `@` lines → the BAM [`Header`] `samtools view -b` writes
//! for them, with the warnings htslib prints (htslib's `sam_hdr_create`).

use super::bytes::at;
use super::parse_number::strtoll;
use super::{RefNames, SamError};
use crate::bam::{Header, Reference};
pub use crate::error::sam::HeaderError;
use crate::names::NameTable;

/// A non-fatal problem in the header (htslib logs these as warnings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderWarning {
    /// An `@SQ` line repeats an earlier `SN:`; it is ignored.
    DuplicateReference {
        /// 1-based line number.
        line: u64,
        /// The repeated name.
        name: String,
    },
    /// An `@SQ` line without a usable (non-negative) `LN:`; it is ignored.
    BadLength {
        /// 1-based line number.
        line: u64,
        /// The reference name.
        name: String,
    },
    /// An `@SQ` line without `SN:`; it is ignored.
    MissingName {
        /// 1-based line number.
        line: u64,
    },
    /// An `@SQ` line with more than one `SN:`; the last one counts.
    SeveralNames {
        /// 1-based line number.
        line: u64,
    },
}

/// A parsed SAM header: the BAM header `samtools view -b` writes for it, the
/// name lookup for records, and the warnings htslib would print.
#[derive(Debug, Clone)]
pub struct SamHeader {
    /// The BAM header (text verbatim with `\n` line ends; references from
    /// `@SQ` lines in order, duplicates and lines without `SN:`/valid `LN:`
    /// skipped).
    pub header: Header,
    /// Name → reference id lookup for records.
    pub names: RefNames,
    /// Non-fatal problems found.
    pub warnings: Vec<HeaderWarning>,
}

impl SamHeader {
    /// Parses header text: lines separated by `\n` (a `\r` before it is
    /// dropped), each starting with `@`.
    pub fn parse(text: &[u8]) -> Result<SamHeader, SamError> {
        let mut lines = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (line, next) = match rest.iter().position(|&c| c == b'\n') {
                Some(nl) => {
                    let mut l = &rest[..nl];
                    if let [head @ .., b'\r'] = l {
                        l = head;
                    }
                    (l, &rest[nl + 1..])
                }
                None => (rest, &rest[rest.len()..]),
            };
            lines.push(line);
            rest = next;
        }
        SamHeader::from_lines(lines)
    }

    /// Parses header lines given without their line ends.
    pub fn from_lines<'a, I: IntoIterator<Item = &'a [u8]>>(lines: I) -> Result<SamHeader, SamError> {
        let mut b = HeaderBuilder::default();
        for line in lines {
            b.add_line(line)?;
        }
        b.finish()
    }
}

#[derive(Default)]
pub(super) struct HeaderBuilder {
    text: Vec<u8>,
    references: Vec<Reference>,
    /// The references' names → ids, handed on to [`RefNames`].
    seen: NameTable,
    warnings: Vec<HeaderWarning>,
    line_no: u64,
}

impl HeaderBuilder {
    /// One line, without its line end (htslib's `sam_hdr_create`).
    pub(super) fn add_line(&mut self, line: &[u8]) -> Result<(), SamError> {
        self.line_no += 1;
        let line_no = self.line_no;
        if line.len() > 3 && line.starts_with(b"@SQ") {
            let mut sn: Option<&[u8]> = None;
            let mut ln: i64 = -1;
            let mut q = 4;
            loop {
                if line.get(q..q + 3) == Some(b"SN:") {
                    q += 3;
                    let mut r = q;
                    while !matches!(at(line, r), b'\t' | b'\n' | 0) {
                        r += 1;
                    }
                    if sn.is_some() {
                        self.warnings.push(HeaderWarning::SeveralNames { line: line_no });
                    }
                    sn = Some(&line[q.min(line.len())..r.min(line.len())]);
                    q = r;
                } else if line.get(q..q + 3) == Some(b"LN:") {
                    let (v, end) = strtoll(line, q + 3);
                    ln = v;
                    q = end;
                }
                while !matches!(at(line, q), b'\t' | b'\n' | 0) {
                    q += 1;
                }
                if matches!(at(line, q), b'\n' | 0) {
                    break;
                }
                q += 1;
            }
            match sn {
                Some(name) if ln >= 0 => {
                    if self.seen.get(name).is_some() {
                        self.warnings.push(HeaderWarning::DuplicateReference { line: line_no, name: String::from_utf8_lossy(name).into() });
                    } else {
                        let s =
                            std::str::from_utf8(name).map_err(|_| SamError::Header { line: line_no, source: HeaderError::NonUtf8Name })?;
                        if self.references.len() >= i32::MAX as usize {
                            return Err(SamError::Header { line: line_no, source: HeaderError::TooManyReferences });
                        }
                        self.seen.insert(name, self.references.len() as i32);
                        let len = if ln >= u32::MAX as i64 { u32::MAX } else { ln as u32 };
                        self.references.push(Reference { name: s.to_owned(), len });
                    }
                }
                Some(name) => self.warnings.push(HeaderWarning::BadLength { line: line_no, name: String::from_utf8_lossy(name).into() }),
                None => self.warnings.push(HeaderWarning::MissingName { line: line_no }),
            }
        } else if !valid_header_type(line) {
            return Err(SamError::Header { line: line_no, source: HeaderError::InvalidLine });
        }
        self.text.extend_from_slice(line);
        self.text.push(b'\n');
        Ok(())
    }

    pub(super) fn finish(self) -> Result<SamHeader, SamError> {
        let header = Header { text: self.text, references: self.references };
        let names = RefNames::with_table(&header, self.seen);
        Ok(SamHeader { header, names, warnings: self.warnings })
    }
}

/// htslib's `valid_sam_header_type` (the line is NUL-terminated there).
fn valid_header_type(s: &[u8]) -> bool {
    if at(s, 0) != b'@' {
        return false;
    }
    match at(s, 1) {
        b'H' => at(s, 2) == b'D' && at(s, 3) == b'\t',
        b'S' => at(s, 2) == b'Q' && at(s, 3) == b'\t',
        b'R' | b'P' => at(s, 2) == b'G' && at(s, 3) == b'\t',
        b'C' => at(s, 2) == b'O',
        _ => false,
    }
}
