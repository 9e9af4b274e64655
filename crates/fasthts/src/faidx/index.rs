//! The `.fai` index: one line per sequence, as htslib 1.16 writes and
//! reads it (`fai_save`, `fai_read`).

use crate::Error;
use std::collections::HashMap;

/// What a file holds, and so how many columns its `.fai` lines have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceFormat {
    /// FASTA: name, length, offset, bases per line, bytes per line.
    Fasta,
    /// FASTQ: the same and the offset of the qualities.
    Fastq,
}

impl SequenceFormat {
    /// "FASTA" or "FASTQ", as htslib names them in its messages.
    pub fn name(self) -> &'static str {
        match self {
            SequenceFormat::Fasta => "FASTA",
            SequenceFormat::Fastq => "FASTQ",
        }
    }
}

/// One sequence of a `.fai`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaiEntry {
    /// The sequence's name: the header's first word (bytes as in the file).
    pub name: Vec<u8>,
    /// Bases (printable characters) in the sequence.
    pub length: u64,
    /// Offset of its first base in the (uncompressed) file.
    pub offset: u64,
    /// Printable characters on each full line.
    pub line_bases: u32,
    /// Bytes of each full line, its end of line included.
    pub line_width: u32,
    /// Offset of its first quality (FASTQ; 0 for FASTA).
    pub qual_offset: u64,
}

impl FaiEntry {
    /// The name as text (a name that is not UTF-8 is shown with
    /// replacement characters).
    pub fn name_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }
}

/// A sequence name met again: htslib keeps the first and warns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateName {
    /// The name.
    pub name: Vec<u8>,
    /// Offset of the ignored sequence's first base.
    pub offset: u64,
}

impl std::fmt::Display for DuplicateName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ignoring duplicate sequence \"{}\" at byte offset {}", String::from_utf8_lossy(&self.name), self.offset)
    }
}

/// A `.fai`: the sequences in file order, found by name.
#[derive(Clone, Debug)]
pub struct FastaIndex {
    format: SequenceFormat,
    entries: Vec<FaiEntry>,
    by_name: HashMap<Vec<u8>, usize>,
}

impl FastaIndex {
    /// An empty index of `format`.
    pub fn new(format: SequenceFormat) -> FastaIndex {
        FastaIndex { format, entries: Vec::new(), by_name: HashMap::new() }
    }

    /// Adds `entry` unless its name is already there (htslib's
    /// `fai_insert_index`): then the first stays and the duplicate is
    /// returned for a warning.
    pub fn insert(&mut self, entry: FaiEntry) -> Option<DuplicateName> {
        if self.by_name.contains_key(&entry.name) {
            return Some(DuplicateName { name: entry.name, offset: entry.offset });
        }
        self.by_name.insert(entry.name.clone(), self.entries.len());
        self.entries.push(entry);
        None
    }

    /// FASTA or FASTQ (the columns its text has).
    pub fn format(&self) -> SequenceFormat {
        self.format
    }

    /// The sequences in file order.
    pub fn entries(&self) -> &[FaiEntry] {
        &self.entries
    }

    /// The number of the sequence named `name`.
    pub fn id(&self, name: &[u8]) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The sequence named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&FaiEntry> {
        self.id(name).map(|i| &self.entries[i])
    }

    /// The `.fai` text, as htslib's `fai_save` writes it.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * 48);
        for e in &self.entries {
            out.extend_from_slice(&e.name);
            let columns = match self.format {
                SequenceFormat::Fasta => format!("\t{}\t{}\t{}\t{}\n", e.length, e.offset, e.line_bases, e.line_width),
                SequenceFormat::Fastq => {
                    format!("\t{}\t{}\t{}\t{}\t{}\n", e.length, e.offset, e.line_bases, e.line_width, e.qual_offset)
                }
            };
            out.extend_from_slice(columns.as_bytes());
        }
        out
    }

    /// Reads `.fai` text as htslib's `fai_read` does for a file opened as
    /// `format`: the name is the line's first word, then four (FASTA) or
    /// five (FASTQ) numbers; more columns are ignored, so a FASTQ index
    /// serves FASTA reading. Duplicate names are returned for warnings.
    pub fn from_text(text: &[u8], format: SequenceFormat) -> Result<(FastaIndex, Vec<DuplicateName>), Error> {
        let mut index = FastaIndex::new(format);
        let mut duplicates = Vec::new();
        let wanted = match format {
            SequenceFormat::Fasta => 4,
            SequenceFormat::Fastq => 5,
        };
        for (n, line) in text.split_inclusive(|&c| c == b'\n').enumerate() {
            let name_end = line.iter().position(|&c| is_space(c)).unwrap_or(line.len());
            let mut fields = [0u64; 5];
            let mut rest = line.get(name_end + 1..).unwrap_or_default();
            let mut got = 0;
            while got < wanted {
                match scan_unsigned(rest) {
                    Some((value, after)) => {
                        fields[got] = value;
                        rest = &rest[after..];
                        got += 1;
                    }
                    None => break,
                }
            }
            if got < wanted {
                let why = if format == SequenceFormat::Fastq && got == 4 {
                    format!("possibly this is a FASTA index, try using faidx (line {})", n + 1)
                } else {
                    format!("could not understand {} index line {}", format.name(), n + 1)
                };
                return Err(Error::Message(why));
            }
            let entry = FaiEntry {
                name: line[..name_end].to_vec(),
                length: fields[0],
                offset: fields[1],
                // sscanf's %u into a uint32_t keeps the low 32 bits.
                line_bases: fields[2] as u32,
                line_width: fields[3] as u32,
                qual_offset: fields[4],
            };
            duplicates.extend(index.insert(entry));
        }
        Ok((index, duplicates))
    }
}

/// C's `isspace` in the C locale.
pub(crate) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `sscanf("%" SCNu64)`: white space, an optional sign, decimal digits
/// (a minus wraps, as strtoull's does; too many digits saturate). Returns
/// the value and where the number ends.
fn scan_unsigned(s: &[u8]) -> Option<(u64, usize)> {
    let mut i = s.iter().take_while(|&&c| is_space(c)).count();
    let negative = match s.get(i) {
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
    let digits = s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut value: u64 = 0;
    for &c in &s[i..i + digits] {
        value = value.checked_mul(10).and_then(|v| v.checked_add(u64::from(c - b'0'))).unwrap_or(u64::MAX);
    }
    Some((if negative { value.wrapping_neg() } else { value }, i + digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        let text = b"chr1\t10\t6\t4\t5\nchr2\t3\t25\t3\t4\n";
        let (index, dups) = FastaIndex::from_text(text, SequenceFormat::Fasta).unwrap();
        assert!(dups.is_empty());
        assert_eq!(index.to_text(), text);
        assert_eq!(index.get(b"chr2").unwrap().offset, 25);
        let fastq = b"r1\t4\t4\t4\t5\t11\n";
        let (index, _) = FastaIndex::from_text(fastq, SequenceFormat::Fastq).unwrap();
        assert_eq!(index.to_text(), fastq);
        // A FASTQ index read for FASTA: its fifth column is ignored.
        assert_eq!(FastaIndex::from_text(fastq, SequenceFormat::Fasta).unwrap().0.entries()[0].length, 4);
        let err = FastaIndex::from_text(text, SequenceFormat::Fastq).unwrap_err();
        assert!(err.to_string().contains("FASTA index"), "{err}");
    }

    #[test]
    fn duplicates_keep_the_first() {
        let (index, dups) = FastaIndex::from_text(b"a\t1\t3\t1\t2\na\t2\t9\t2\t3\n", SequenceFormat::Fasta).unwrap();
        assert_eq!(index.entries().len(), 1);
        assert_eq!(index.entries()[0].length, 1);
        assert_eq!(dups, [DuplicateName { name: b"a".to_vec(), offset: 9 }]);
    }
}
