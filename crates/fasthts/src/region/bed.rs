//! BED files as samtools reads them: the intervals that depth's printed
//! positions (`-b`) and view's reads (`-L`) are filtered by.

use crate::Error;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// The intervals of a BED file (samtools' `bed_read`), by reference name:
/// 0-based half-open `start end` after the name, or a single 1-based
/// position (VCF-like); blank, `#`, `browser` and `track` lines skipped.
/// Used by depth as a filter on printed positions and by view (`-L`) as
/// one on reads.
#[derive(Clone, Debug, Default)]
pub struct BedFilter {
    /// The intervals of each reference name.
    references: HashMap<String, BedIntervals>,
}

/// The intervals of one reference in a BED file.
#[derive(Clone, Debug, Default)]
struct BedIntervals {
    /// Sorted and merged, zero-length ones left out.
    merged: Vec<(i64, i64)>,
    /// The zero-length ones (`chr1 1000 1000`: an insertion site, between
    /// two bases), sorted: they hold no position, but samtools'
    /// `bed_overlap` selects a read that straddles one.
    points: Vec<i64>,
}

impl BedFilter {
    /// Reads `path` (plain or gzip-compressed; `-` for standard input).
    pub fn read(path: &Path) -> Result<BedFilter, Error> {
        let with_path = |e: Error| e.with_path(path);
        let mut text = Vec::new();
        if path.as_os_str() == "-" {
            std::io::stdin().read_to_end(&mut text).map_err(|e| with_path(e.into()))?;
        } else {
            let (mut r, _) = fasthts_io::compression::open(path, 1).map_err(Error::from)?;
            r.read_to_end(&mut text).map_err(|e| with_path(e.into()))?;
        }
        BedFilter::parse(&text).map_err(|e| with_path(Error::Message(e)))
    }

    /// Parses BED text (see [`BedFilter`]).
    pub fn parse(text: &[u8]) -> Result<BedFilter, String> {
        let mut intervals: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
        let mut line_no = 0u64;
        for raw in text.split(|&c| c == b'\n') {
            if raw.is_empty() {
                continue;
            }
            line_no += 1;
            let line = raw.trim_ascii_start();
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let name_end = line.iter().position(|c| c.is_ascii_whitespace()).unwrap_or(line.len());
            let name = &line[..name_end];
            let (mut beg, mut end, num) = scan_two_u64(line.get(name_end + 1..).unwrap_or(&[]));
            if num == 1 {
                end = beg;
                beg = beg.wrapping_sub(1);
            }
            if num < 1 || end < beg {
                if name == b"browser" || name == b"track" {
                    continue;
                }
                return Err(if num < 1 {
                    format!("parse error at line {line_no}")
                } else {
                    format!("parse error at line {line_no}: end ({end}) must not be less than start ({beg})")
                });
            }
            let name = String::from_utf8_lossy(name).into_owned();
            let clamp = |v: u64| v.min(i64::MAX as u64) as i64;
            intervals.entry(name).or_default().push((clamp(beg), clamp(end)));
        }
        let references = intervals
            .into_iter()
            .map(|(name, mut list)| {
                list.sort_unstable();
                let mut merged: Vec<(i64, i64)> = Vec::with_capacity(list.len());
                for &(b, e) in list.iter().filter(|(b, e)| b < e) {
                    match merged.last_mut() {
                        Some(last) if b <= last.1 => last.1 = last.1.max(e),
                        _ => merged.push((b, e)),
                    }
                }
                let mut points: Vec<i64> = list.iter().filter(|(b, e)| b == e).map(|&(b, _)| b).collect();
                points.dedup();
                (name, BedIntervals { merged, points })
            })
            .collect();
        Ok(BedFilter { references })
    }

    /// The sorted, disjoint intervals on reference `name` (empty if none),
    /// without the zero-length ones ([`BedFilter::points`]).
    pub fn intervals(&self, name: &str) -> &[(i64, i64)] {
        self.references.get(name).map_or(&[], |r| &r.merged)
    }

    /// The reference names the file has intervals on, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.references.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The zero-length intervals on reference `name`: sorted positions
    /// between two bases (`p` for `name p p`).
    pub fn points(&self, name: &str) -> &[i64] {
        self.references.get(name).map_or(&[], |r| &r.points)
    }

    /// Whether a read over `[beg, end)` of reference `name` overlaps the
    /// file's intervals as samtools' `bed_overlap` decides it: an interval
    /// sharing a base with it, or a zero-length one strictly inside it.
    pub fn overlaps(&self, name: &str, beg: i64, end: i64) -> bool {
        let Some(r) = self.references.get(name) else { return false };
        let k = r.merged.partition_point(|&(_, e)| e <= beg);
        if r.merged.get(k).is_some_and(|&(b, _)| b < end) {
            return true;
        }
        let k = r.points.partition_point(|&p| p <= beg);
        r.points.get(k).is_some_and(|&p| p < end)
    }
}

/// `sscanf(s, "%lu %lu")`: how many of two unsigned numbers it reads.
fn scan_two_u64(s: &[u8]) -> (u64, u64, usize) {
    let mut at = 0;
    let read = |at: &mut usize| -> Option<u64> {
        while *at < s.len() && s[*at].is_ascii_whitespace() {
            *at += 1;
        }
        let negative = match s.get(*at) {
            Some(b'-') => {
                *at += 1;
                true
            }
            Some(b'+') => {
                *at += 1;
                false
            }
            _ => false,
        };
        let start = *at;
        let mut v: u64 = 0;
        while *at < s.len() && s[*at].is_ascii_digit() {
            v = v.saturating_mul(10).saturating_add(u64::from(s[*at] - b'0'));
            *at += 1;
        }
        if *at == start {
            return None;
        }
        Some(if negative { v.wrapping_neg() } else { v })
    };
    match read(&mut at) {
        None => (0, 0, 0),
        Some(a) => match read(&mut at) {
            None => (a, 0, 1),
            Some(b) => (a, b, 2),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bed_lines_as_samtools_reads_them() {
        let bed = BedFilter::parse(b"# comment\nbrowser x\nchr1 10 20\nchr1\t15\t30 name\nchr2 5\n\nchr1 40 40\n").unwrap();
        assert_eq!(bed.intervals("chr1"), &[(10, 30)]);
        assert_eq!(bed.intervals("chr2"), &[(4, 5)]);
        assert_eq!(bed.intervals("chr3"), &[] as &[(i64, i64)]);
        assert_eq!(BedFilter::parse(b"chr1 x\n").unwrap_err(), "parse error at line 1");
        assert!(BedFilter::parse(b"chr1 30 20\n").unwrap_err().contains("must not be less than start"));
    }
}
