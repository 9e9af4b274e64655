//! Opening an alignment input that may be BAM or SAM, a file or a pipe.
//!
//! BAM files are memory-mapped; BAM arriving on a pipe is first spooled to
//! a temporary file (removed afterwards) so it can be mapped too. SAM is
//! parsed as a stream, from a file or a pipe alike.

use crate::sam::SamReader;
use crate::bam::BamFile;
use crate::bgzf::{Block, BlockReader, VirtualOffset};
use crate::output::TempOutput;
use crate::Error;
use std::fs::File;
use std::io::{self, BufWriter, Cursor, Read, Write};
use std::path::{Path, PathBuf};

/// What the first bytes of an input say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// BGZF whose first block starts with `BAM\1`.
    Bam,
    /// Plain text (SAM).
    Sam,
    /// gzip or BGZF holding something else (compressed SAM): not supported.
    Compressed,
    /// No bytes at all.
    Empty,
    /// Something else (text that does not look like SAM, binary data).
    Unknown,
}

/// Bytes read to recognise an input (a BGZF block is at most 64 KiB).
const SNIFF_BYTES: usize = 1 << 16;

/// Recognises an input from its first bytes (up to 64 KiB).
///
/// ```
/// use fasthts::input::{sniff, Kind};
/// assert_eq!(sniff(b"@HD\tVN:1.6\n"), Kind::Sam);
/// assert_eq!(sniff(b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI\n"), Kind::Sam);
/// assert_eq!(sniff(b"this is not a BAM file\n"), Kind::Unknown);
/// assert_eq!(sniff(b""), Kind::Empty);
/// assert_eq!(sniff(&[0x1f, 0x8b, 8, 0]), Kind::Compressed);
/// ```
pub fn sniff(prefix: &[u8]) -> Kind {
    if prefix.is_empty() {
        return Kind::Empty;
    }
    if !fasthts_io::compression::is_gzip(prefix) {
        return if looks_like_sam(prefix) { Kind::Sam } else { Kind::Unknown };
    }
    match Block::parse(prefix, 0) {
        // A whole first block: its contents decide.
        Ok(_) => {
            let mut first = [0u8; 4];
            // One block at a time: the prefix may end inside the second block.
            let read = BlockReader::with_batch_bytes(prefix, VirtualOffset::default(), 1).and_then(|mut r| {
                let n = r.fill(4)?.min(4);
                first[..n].copy_from_slice(&r.available()[..n]);
                Ok(n)
            });
            match read {
                Ok(4) if first == *b"BAM\x01" => Kind::Bam,
                Ok(_) => Kind::Compressed,
                // A damaged first block: let the BAM reader say what is wrong.
                Err(_) => Kind::Bam,
            }
        }
        // A BGZF header cut short is a (truncated) BAM as far as we can tell;
        // gzip without the BC subfield is not BGZF.
        Err(crate::bgzf::BgzfError::Truncated { .. }) if prefix.starts_with(&[0x1f, 0x8b, 8, 4]) => Kind::Bam,
        Err(_) => Kind::Compressed,
    }
}

/// htslib's test for SAM text (`hts_detect_format`): a header line starting
/// `@HD`, `@SQ`, `@RG`, `@PG` or `@CO` and a tab, or a first line whose
/// tab-separated columns look like a record (name, integer flag, reference,
/// integer position and MAPQ, CIGAR or `*`, mate reference, integer mate
/// position and length, sequence, qualities; 9 columns suffice if the line is
/// cut off by the end of the prefix).
fn looks_like_sam(prefix: &[u8]) -> bool {
    if [&b"@HD\t"[..], b"@SQ\t", b"@RG\t", b"@PG\t", b"@CO\t"].iter().any(|h| prefix.starts_with(h)) {
        return true;
    }
    let end = prefix.iter().position(|&c| c == b'\n');
    let line = &prefix[..end.unwrap_or(prefix.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().any(|&c| c < b' ' && c != b'\t') {
        return false;
    }
    let cols: Vec<&[u8]> = line.split(|&c| c == b'\t').collect();
    let int = |c: &[u8]| {
        let d = c.strip_prefix(b"-").or_else(|| c.strip_prefix(b"+")).unwrap_or(c);
        !d.is_empty() && d.iter().all(u8::is_ascii_digit)
    };
    let cigar = |c: &[u8]| c == b"*" || (!c.is_empty() && c.iter().all(|&b| b.is_ascii_digit() || b"MIDNSHP=XB".contains(&b)));
    let shape = [None, Some(int as fn(&[u8]) -> bool), None, Some(int), Some(int), Some(cigar), None, Some(int), Some(int), None, None];
    let matching = cols.iter().zip(shape.iter()).take_while(|(c, want)| want.map_or(true, |f| f(c))).count();
    matching >= if end.is_some() { 11 } else { 9 }
}

/// An opened input.
pub enum Input {
    /// A memory-mapped BAM; the spool file, if any, is removed on drop.
    Bam(BamFile, Option<TempOutput>),
    /// A SAM stream with its header read.
    Sam(Box<SamReader<Box<dyn Read + Send>>>),
}

/// Opens `path` (`-` for standard input). BAM from a pipe is spooled to
/// `spool_prefix` + `.input`.
pub fn open(path: &Path, spool_prefix: &Path) -> Result<Input, Error> {
    let stdin = path.as_os_str() == "-";
    let with_path = |e: Error| e.with_path(path);
    let meta = if stdin { None } else { Some(std::fs::metadata(path).map_err(|e| with_path(e.into()))?) };
    if meta.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(with_path(Error::IsADirectory));
    }
    let regular = meta.as_ref().is_some_and(|m| m.is_file());
    let mut reader: Box<dyn Read + Send> =
        if stdin { Box::new(io::stdin()) } else { Box::new(File::open(path).map_err(|e| with_path(e.into()))?) };
    let mut prefix = Vec::with_capacity(SNIFF_BYTES);
    (&mut reader).take(SNIFF_BYTES as u64).read_to_end(&mut prefix).map_err(|e| with_path(e.into()))?;
    match sniff(&prefix) {
        Kind::Empty => Err(with_path(Error::Message("empty input".into()))),
        Kind::Unknown => Err(with_path(Error::Message("not a BAM or SAM file".into()))),
        Kind::Compressed => {
            Err(with_path(Error::Message("compressed SAM (or other gzip data) is not supported; give BAM or plain SAM".into())))
        }
        Kind::Sam => {
            let chained: Box<dyn Read + Send> = Box::new(Cursor::new(prefix).chain(reader));
            let sam = SamReader::new(chained).map_err(|e| with_path(e.into()))?;
            Ok(Input::Sam(Box::new(sam)))
        }
        Kind::Bam if regular => Ok(Input::Bam(BamFile::open(path)?, None)),
        Kind::Bam => {
            let target = PathBuf::from(format!("{}.input", spool_prefix.display()));
            let (temp, file) = TempOutput::create(&target)?;
            let mut w = BufWriter::with_capacity(1 << 20, file);
            w.write_all(&prefix)
                .and_then(|()| io::copy(&mut reader, &mut w).map(|_| ()))
                .and_then(|()| w.flush())
                .map_err(|e| with_path(e.into()))?;
            let bam = BamFile::open(temp.path()).map_err(|e| match e {
                Error::WithPath { source, .. } => source.with_path(path),
                e => e,
            })?;
            Ok(Input::Bam(bam, Some(temp)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bam_prefix_is_bam_even_when_cut_mid_block() {
        let bam = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam")).unwrap();
        for cut in [bam.len(), SNIFF_BYTES, 100, 19] {
            assert_eq!(sniff(&bam[..cut.min(bam.len())]), Kind::Bam, "cut at {cut}");
        }
        // gzip-compressed text is not BAM.
        let text = crate::bgzf::compress_all(b"@HD\tVN:1.6\n", 1);
        assert_eq!(sniff(&text), Kind::Compressed);
    }
}
