//! Building a `.fai` from a FASTA or FASTQ file: htslib 1.16's
//! `fai_build_core`, state for state, so the same files are indexed the
//! same way and the same ones refused.

use super::data::{is_graph, Stream};
use super::index::{is_space, DuplicateName, FaiEntry, FastaIndex, SequenceFormat};
use crate::Error;

/// Where the reader is, as htslib's `read_state`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    OutRead,
    InName,
    InSeq,
    SeqEnd,
    InQual,
}

/// Why a file cannot be indexed (htslib's words, its line numbers).
fn refuse(message: String) -> Error {
    Error::Message(message)
}

/// Indexes the stream, whose format (FASTA or FASTQ) its first record
/// says. Duplicate names keep the first and are returned for warnings.
pub(crate) fn build(stream: &mut Stream<'_>) -> Result<(FastaIndex, Vec<DuplicateName>), Error> {
    let mut format: Option<SequenceFormat> = None;
    let mut entries: Vec<FaiEntry> = Vec::new();
    let mut state = State::OutRead;
    let mut read_done = false;
    let mut line_num: u64 = 1;
    let mut name: Vec<u8> = Vec::new();
    let (mut seq_offset, mut qual_offset, mut seq_len, mut qual_len) = (0u64, 0u64, 0u64, 0u64);
    let (mut char_len, mut line_len) = (0u64, 0u64);
    let name_text = |name: &[u8]| String::from_utf8_lossy(name).into_owned();
    let mut record = |name: &[u8], seq_len, line_len: u64, char_len: u64, seq_offset, qual_offset| {
        entries.push(FaiEntry {
            name: name.to_vec(),
            length: seq_len,
            offset: seq_offset,
            // htslib keeps these in 32 bits.
            line_bases: char_len as u32,
            line_width: line_len as u32,
            qual_offset,
        });
    };

    // `c` is the byte just read, as in htslib's loop; `continue` there
    // reads the next one.
    while let Some(mut c) = stream.getc()? {
        match state {
            State::OutRead => match c {
                b'>' => {
                    if format == Some(SequenceFormat::Fastq) {
                        return Err(refuse(format!("found '>' in a FASTQ file, error at line {line_num}")));
                    }
                    format = Some(SequenceFormat::Fasta);
                    state = State::InName;
                }
                b'@' => {
                    if format == Some(SequenceFormat::Fasta) {
                        return Err(refuse(format!("found '@' in a FASTA file, error at line {line_num}")));
                    }
                    format = Some(SequenceFormat::Fastq);
                    state = State::InName;
                }
                b'\r' => {
                    if stream.getc()? == Some(b'\n') {
                        line_num += 1;
                    } else {
                        return Err(refuse(format!("format error, carriage return not followed by new line at line {line_num}")));
                    }
                }
                b'\n' => line_num += 1,
                _ => {
                    let what = if c.is_ascii_graphic() || c == b' ' { format!("\"{}\"", c as char) } else { "character".into() };
                    return Err(refuse(format!("format error, unexpected {what} at line {line_num}")));
                }
            },
            State::InName => {
                if read_done {
                    record(&name, seq_len, line_len, char_len, seq_offset, qual_offset);
                    read_done = false;
                }
                name.clear();
                // Leading white space is skipped; the name ends at the
                // first white space after it (or the line's end).
                let mut at_end = false;
                loop {
                    if !is_space(c) {
                        name.push(c);
                    } else if !name.is_empty() || c == b'\n' {
                        break;
                    }
                    match stream.getc()? {
                        Some(next) => c = next,
                        None => {
                            at_end = true;
                            break;
                        }
                    }
                }
                if at_end {
                    return Err(refuse(format!("the last entry '{}' has no sequence", name_text(&name))));
                }
                if c != b'\n' {
                    stream.skip_line()?;
                }
                state = State::InSeq;
                seq_len = 0;
                qual_len = 0;
                char_len = 0;
                line_len = 0;
                seq_offset = stream.tell();
                line_num += 1;
            }
            State::InSeq => {
                match format {
                    Some(SequenceFormat::Fasta) => {
                        if c == b'\n' {
                            state = State::OutRead;
                            line_num += 1;
                            continue;
                        } else if c == b'>' {
                            state = State::InName;
                            continue;
                        }
                    }
                    _ => {
                        if c == b'+' {
                            state = State::InQual;
                            stream.skip_line()?;
                            qual_offset = stream.tell();
                            line_num += 1;
                            continue;
                        } else if c == b'\n' {
                            return Err(refuse(format!(
                                "inlined empty line is not allowed in sequence '{}' at line {line_num}",
                                name_text(&name)
                            )));
                        }
                    }
                }
                if format == Some(SequenceFormat::Fasta) {
                    read_done = true;
                }
                let (bytes, graph) = stream.rest_of_line()?;
                // htslib counts the first byte, the rest and the line's end.
                let ll = bytes + 2;
                let cl = graph + u64::from(is_graph(c));
                seq_len += cl;
                if line_len == 0 {
                    line_len = ll;
                    char_len = cl;
                } else if line_len > ll {
                    state = if format == Some(SequenceFormat::Fasta) { State::OutRead } else { State::SeqEnd };
                } else if line_len < ll {
                    return Err(refuse(format!("different line length in sequence '{}'", name_text(&name))));
                }
                line_num += 1;
            }
            State::SeqEnd => {
                if c == b'+' {
                    state = State::InQual;
                    stream.skip_line()?;
                    qual_offset = stream.tell();
                    line_num += 1;
                } else {
                    return Err(refuse(format!("format error, expecting '+', got '{}' at line {line_num}", c as char)));
                }
            }
            State::InQual => {
                if c == b'\n' {
                    if !read_done {
                        return Err(refuse(format!("inlined empty line is not allowed in quality of sequence '{}'", name_text(&name))));
                    }
                    state = State::OutRead;
                    line_num += 1;
                    continue;
                } else if c == b'@' && read_done {
                    state = State::InName;
                    continue;
                }
                let (bytes, graph) = stream.rest_of_line()?;
                let ll = bytes + 2;
                let cl = graph + u64::from(is_graph(c));
                qual_len += cl;
                if line_len < ll {
                    return Err(refuse(format!("quality line length too long in '{}' at line {line_num}", name_text(&name))));
                } else if qual_len == seq_len {
                    read_done = true;
                } else if qual_len > seq_len {
                    return Err(refuse(format!("quality length longer than sequence in '{}' at line {line_num}", name_text(&name))));
                } else if line_len > ll {
                    return Err(refuse(format!("quality line length too short in '{}' at line {line_num}", name_text(&name))));
                }
                line_num += 1;
            }
        }
    }
    if !read_done {
        // htslib fails here without a word of its own.
        return Err(refuse(match format {
            None => "no sequences found".to_string(),
            Some(_) => format!("the last entry '{}' is incomplete", name_text(&name)),
        }));
    }
    record(&name, seq_len, line_len, char_len, seq_offset, qual_offset);
    let mut index = FastaIndex::new(format.unwrap_or(SequenceFormat::Fasta));
    let mut duplicates = Vec::new();
    for entry in entries {
        duplicates.extend(index.insert(entry));
    }
    Ok((index, duplicates))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fai(text: &[u8]) -> Result<String, String> {
        let mut stream = Stream::new(text, false);
        build(&mut stream).map(|(i, _)| String::from_utf8(i.to_text()).unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn fasta_as_htslib() {
        assert_eq!(fai(b">a desc\nACGT\nAC\n>b\nGG\n").unwrap(), "a\t6\t8\t4\t5\nb\t2\t19\t2\t3\n");
        // CRLF lines: the \r counts in the width, not the bases.
        assert_eq!(fai(b">a\r\nACGT\r\nAC\r\n").unwrap(), "a\t6\t4\t4\t6\n");
        // No final newline.
        assert_eq!(fai(b">a\nACGT\nAC").unwrap(), "a\t6\t3\t4\t5\n");
        // A record without sequence lines is left out (htslib's read_done).
        assert_eq!(fai(b">a\n>b\nAC\n").unwrap(), "b\t2\t6\t2\t3\n");
        assert!(fai(b">a\nAC\nACGT\n").unwrap_err().contains("different line length"));
        assert!(fai(b">a\nACGT\nAC\nAC\n").unwrap_err().contains("unexpected \"A\" at line 4"));
        assert!(fai(b">a\nAC\n>b\n").is_err());
        assert!(fai(b"").is_err());
        assert!(fai(b">a").unwrap_err().contains("no sequence"));
    }

    #[test]
    fn fastq_as_htslib() {
        assert_eq!(fai(b"@r1 x\nACGT\n+\nIIII\n@r2\nAC\n+r2\nII\n").unwrap(), "r1\t4\t6\t4\t5\t13\nr2\t2\t22\t2\t3\t29\n");
        // Wrapped sequence and quality.
        assert_eq!(fai(b"@r\nACG\nT\n+\nIII\nI\n").unwrap(), "r\t4\t3\t3\t4\t11\n");
        assert!(fai(b"@r\nACGT\n+\nIII\n").is_err());
        assert!(fai(b"@r\nACGT\n+\nIIIII\n").unwrap_err().contains("too long"));
        assert!(fai(b">a\nAC\n@r\nAC\n+\nII\n").unwrap_err().contains("unexpected \"I\" at line 6"));
    }
}
