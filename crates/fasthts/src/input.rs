//! Recognising and opening an alignment input, a file or a pipe.
//!
//! One function says what an input is ([`recognise`]) and one what is
//! said about an input that is not a supported one ([`unsupported`]), so
//! every command and the Python package name a wrong input alike.
//! BGZF-compressed BAM in a regular file is memory-mapped; BAM from a pipe,
//! a FIFO, process substitution or standard input is read once as it
//! streams ([`BamStream`], inflated ahead on worker threads), as is
//! uncompressed BAM (raw `BAM\1`, or gzip that is not BGZF) from anywhere;
//! SAM, plain or compressed (BGZF as `bgzip` writes it, or gzip, as htslib
//! reads both), is parsed as a stream; CRAM is decoded by htslib
//! ([`crate::cram`]), from the file or as it streams. Nothing is copied to
//! disk.

use crate::bam::{BamFile, BamStream};
use crate::bgzf::{Block, BlockReader, VirtualOffset};
use crate::cram::{CramOptions, CramReader};
use crate::sam::SamReader;
use crate::Error;
use fasthts_io::compression::{self, Compression};
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};

/// What the first bytes of an input say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// BAM, compressed as given.
    Bam(Compression),
    /// Plain SAM text.
    Sam,
    /// SAM text compressed (BGZF or gzip).
    CompressedSam(Compression),
    /// CRAM.
    Cram,
    /// An index (`"BAI"`, `"CSI"`, `"tabix"`), not data.
    Index(&'static str),
    /// Sequences without alignments (`"FASTA"`, `"FASTQ"`), compressed or not.
    Sequences(&'static str),
    /// VCF text, compressed or not.
    Vcf,
    /// Compressed data that is none of the above.
    OtherCompressed(Compression),
    /// No bytes at all.
    Empty,
    /// Something else (text that does not look like SAM, binary data).
    Unknown,
}

/// Bytes read to recognise an input (a BGZF block is at most 64 KiB).
pub const SNIFF_BYTES: usize = 1 << 16;
/// Decompressed bytes looked at to recognise compressed content.
const CONTENT_BYTES: usize = 4096;

/// Recognises an input from its first bytes (up to [`SNIFF_BYTES`]),
/// looking into compressed data.
///
/// ```
/// use fasthts::input::{recognise, Format};
/// use fasthts_io::compression::Compression;
/// assert_eq!(recognise(b"@HD\tVN:1.6\n"), Format::Sam);
/// assert_eq!(recognise(b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI\n"), Format::Sam);
/// assert_eq!(recognise(b"BAM\x01\0\0\0\0\0\0\0\0"), Format::Bam(Compression::None));
/// assert_eq!(recognise(b"CRAM\x03\0"), Format::Cram);
/// assert_eq!(recognise(b"@r1\nACGT\n+\nIIII\n"), Format::Sequences("FASTQ"));
/// assert_eq!(recognise(b"this is not a BAM file\n"), Format::Unknown);
/// assert_eq!(recognise(b""), Format::Empty);
/// ```
pub fn recognise(prefix: &[u8]) -> Format {
    if prefix.is_empty() {
        return Format::Empty;
    }
    match compression::detect(prefix) {
        Compression::None => recognise_content(prefix, Compression::None),
        Compression::Bgzf => {
            // One block at a time: the prefix may end inside the second block.
            let mut content = Vec::with_capacity(CONTENT_BYTES);
            let read = BlockReader::with_batch_bytes(prefix, VirtualOffset::default(), 1).and_then(|mut r| {
                let n = r.fill(CONTENT_BYTES)?.min(CONTENT_BYTES);
                content.extend_from_slice(&r.available()[..n]);
                Ok(n)
            });
            match read {
                // A damaged first block: let the BAM reader say what is wrong.
                Err(_) => Format::Bam(Compression::Bgzf),
                // A header, and the EOF marker or nothing after it: an empty BGZF file.
                Ok(0) => Format::OtherCompressed(Compression::Bgzf),
                Ok(_) => recognise_content(&content, Compression::Bgzf),
            }
        }
        other => {
            // A BGZF header cut short is a (truncated) BAM as far as we can
            // tell; gzip without the BC subfield is not BGZF.
            if prefix.starts_with(&[0x1f, 0x8b, 8, 4]) && Block::parse(prefix, 0).is_err() && prefix.len() < 18 {
                return Format::Bam(Compression::Bgzf);
            }
            let mut content = Vec::with_capacity(CONTENT_BYTES);
            if let Ok((reader, _)) = compression::decompress(Cursor::new(prefix.to_vec()), 1) {
                // The prefix may end mid-stream: what came out before that is enough.
                let _ = reader.take(CONTENT_BYTES as u64).read_to_end(&mut content);
            }
            if content.is_empty() {
                Format::OtherCompressed(other)
            } else {
                recognise_content(&content, other)
            }
        }
    }
}

/// What decompressed (or plain) bytes are.
fn recognise_content(content: &[u8], compression: Compression) -> Format {
    let compressed = |f: Format| if compression == Compression::None { f } else { Format::OtherCompressed(compression) };
    if content.starts_with(b"BAM\x01") {
        Format::Bam(compression)
    } else if content.starts_with(b"CRAM") {
        compressed(Format::Cram)
    } else if content.starts_with(b"BAI\x01") {
        Format::Index("BAI")
    } else if content.starts_with(b"CSI\x01") {
        Format::Index("CSI")
    } else if content.starts_with(b"TBI\x01") {
        Format::Index("tabix")
    } else if content.starts_with(b"##fileformat=VCF") {
        Format::Vcf
    } else if looks_like_sam(content) {
        if compression == Compression::None {
            Format::Sam
        } else {
            Format::CompressedSam(compression)
        }
    } else if content.starts_with(b">") && is_text(content) {
        Format::Sequences("FASTA")
    } else if content.starts_with(b"@") && is_text(content) && content.split(|&c| c == b'\n').nth(2).is_some_and(|l| l.starts_with(b"+")) {
        Format::Sequences("FASTQ")
    } else if compression != Compression::None {
        Format::OtherCompressed(compression)
    } else {
        Format::Unknown
    }
}

/// Printable text, tabs and line ends only.
fn is_text(bytes: &[u8]) -> bool {
    bytes.iter().all(|&c| (b' '..0x7f).contains(&c) || c == b'\t' || c == b'\n' || c == b'\r')
}

/// The error for an input that is not one this build reads as
/// alignments, naming `path`: the same words for the same input in every
/// command and in Python. `Ok(())` for BAM, SAM (plain, BGZF- or
/// gzip-compressed, as htslib reads them) and CRAM.
pub fn check_supported(format: Format, path: &Path) -> Result<(), Error> {
    let what = match format {
        Format::Bam(_) | Format::Sam | Format::Cram => return Ok(()),
        Format::CompressedSam(Compression::Bgzf | Compression::Gzip) => return Ok(()),
        Format::Empty => "empty file, not BAM or SAM".to_string(),
        // htslib does not read bzip2 SAM either.
        Format::CompressedSam(c) => format!("{} SAM input is not supported", compressed_name(c)),
        Format::Index(kind) => format!("a {kind} index, not the BAM or SAM file it indexes"),
        Format::Sequences(kind) => format!("{kind} sequences, not BAM or SAM alignments"),
        Format::Vcf => "VCF, not BAM or SAM alignments".into(),
        Format::OtherCompressed(c) => format!("{} data that is not BAM or SAM", compressed_name(c)),
        Format::Unknown => "not a BAM or SAM file".into(),
    };
    Err(Error::Message(what).with_path(path))
}

/// The error for an input that is read as a stream only, where a BGZF file
/// is needed (an index is built): plain or gzip-compressed SAM,
/// uncompressed BAM; else what [`check_supported`] says. BGZF BAM and
/// BGZF SAM (samtools indexes both) pass.
pub fn check_indexable(format: Format, path: &Path) -> Result<(), Error> {
    if format == Format::Cram {
        let what = "CRAM, where a BGZF-compressed BAM is needed (fasthts.AlignmentFile reads CRAM by region; fasthts sort -o OUT.bam converts)";
        return Err(Error::Message(what.into()).with_path(path));
    }
    let what = match format {
        Format::Bam(Compression::Bgzf) | Format::CompressedSam(Compression::Bgzf) => return Ok(()),
        Format::Sam => "SAM",
        Format::CompressedSam(Compression::Gzip) => "SAM compressed with gzip, not BGZF,",
        Format::Bam(Compression::None) => "uncompressed BAM",
        Format::Bam(_) => "BAM compressed with gzip, not BGZF,",
        other => return check_supported(other, path),
    };
    Err(Error::Message(format!(
        "{what} cannot be indexed or read through an index: only BGZF-compressed BAM or SAM can (fasthts sort and bgzip write them)"
    ))
    .with_path(path))
}

/// The error for an input that is not a BGZF BAM where one is memory-mapped
/// and read through its index ([`BamFile`]): bgzipped SAM, which is
/// indexed and read as a stream only; else what [`check_indexable`] says.
pub fn check_mappable(format: Format, path: &Path) -> Result<(), Error> {
    if format == Format::CompressedSam(Compression::Bgzf) {
        let what = "bgzipped SAM is read as a stream, not through an index: only BGZF-compressed BAM can be (fasthts sort writes one)";
        return Err(Error::Message(what.into()).with_path(path));
    }
    check_indexable(format, path)
}

fn compressed_name(c: Compression) -> &'static str {
    match c {
        Compression::Bgzf => "BGZF-compressed",
        Compression::Gzip => "gzip-compressed",
        Compression::Bzip2 => "bzip2-compressed",
        Compression::None => "uncompressed",
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
    /// A memory-mapped BGZF BAM (a regular file).
    Bam(BamFile),
    /// A BAM read once as it streams (a pipe, a FIFO, standard input;
    /// uncompressed BAM).
    Stream(Box<BamStream>),
    /// A SAM stream (plain, or decompressed as it is read) with its
    /// header read.
    Sam(Box<SamReader<Box<dyn Read + Send>>>),
    /// CRAM, decoded by htslib (a file, or a stream as it arrives).
    Cram(Box<CramReader>),
}

impl Input {
    /// The header's references (SAM's converted as BAM's).
    pub fn header(&self) -> &crate::bam::Header {
        match self {
            Input::Bam(bam) => bam.header(),
            Input::Stream(s) => s.header(),
            Input::Sam(sam) => sam.header(),
            Input::Cram(cram) => cram.header(),
        }
    }
}

/// An input whose first bytes have been read and recognised, the rest
/// still to read.
pub struct Peeked {
    path: PathBuf,
    format: Format,
    /// The path to map, when the input is a regular file (also standard
    /// input redirected from one).
    regular: Option<PathBuf>,
    prefix: Vec<u8>,
    rest: Box<dyn Read + Send>,
}

/// Opens `path` (`-` for standard input) and recognises its first bytes.
/// Errors name `path`.
pub fn peek(path: &Path) -> Result<Peeked, Error> {
    let stdin = path.as_os_str() == "-";
    let with_path = |e: Error| e.with_path(path);
    // Standard input redirected from a file is that file (`< x.bam`).
    let meta_path = if stdin { Path::new("/dev/stdin") } else { path };
    let meta = std::fs::metadata(meta_path);
    let meta = match (stdin, meta) {
        (false, Err(e)) => return Err(with_path(e.into())),
        (_, m) => m.ok(),
    };
    if meta.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(with_path(Error::IsADirectory));
    }
    let regular = meta.as_ref().is_some_and(|m| m.is_file()).then(|| meta_path.to_path_buf());
    let mut rest: Box<dyn Read + Send> =
        if stdin { Box::new(io::stdin()) } else { Box::new(File::open(path).map_err(|e| with_path(e.into()))?) };
    let mut prefix = Vec::with_capacity(SNIFF_BYTES);
    (&mut rest).take(SNIFF_BYTES as u64).read_to_end(&mut prefix).map_err(|e| with_path(e.into()))?;
    let format = recognise(&prefix);
    Ok(Peeked { path: path.to_path_buf(), format, regular, prefix, rest })
}

impl Peeked {
    /// What the input is.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the input is a regular file (it can be mapped and read
    /// more than once).
    pub fn is_regular_file(&self) -> bool {
        self.regular.is_some()
    }

    /// Whether a regular file ends with BGZF's EOF marker (htslib's
    /// `bgzf_check_EOF`); `None` for a stream, whose end cannot be looked
    /// at before it is read.
    pub fn ends_with_eof_marker(&self) -> Option<bool> {
        use std::io::{Seek, SeekFrom};
        let path = self.regular.as_ref()?;
        let mut tail = [0u8; 28];
        let read = File::open(path).and_then(|mut f| {
            let len = f.seek(SeekFrom::End(0))?;
            if len < tail.len() as u64 {
                return Ok(false);
            }
            f.seek(SeekFrom::Start(len - tail.len() as u64))?;
            f.read_exact(&mut tail)?;
            Ok(true)
        });
        Some(matches!(read, Ok(true)) && crate::bgzf::has_eof_marker(&tail))
    }

    /// The whole input, as it is, read to its end: the first bytes and
    /// the rest.
    pub fn into_reader(self) -> Box<dyn Read + Send> {
        Box::new(Cursor::new(self.prefix).chain(self.rest))
    }

    /// Opens the input for reading records: BGZF BAM in a regular file is
    /// mapped, other BAM streamed (BGZF inflated ahead on as many threads
    /// as the current pool has), SAM parsed as a stream (compressed SAM
    /// inflated ahead the same way), CRAM decoded with every field and the
    /// reference htslib finds by itself; anything else is refused
    /// ([`check_supported`]).
    pub fn open(self) -> Result<Input, Error> {
        self.open_with(&CramOptions::default())
    }

    /// As [`Peeked::open`], a CRAM input read with `cram` (a reference,
    /// only the fields a job needs).
    pub fn open_with(self, cram: &CramOptions) -> Result<Input, Error> {
        check_supported(self.format, &self.path)?;
        let path = self.path.clone();
        match (self.format, &self.regular) {
            (Format::Cram, Some(file)) => Ok(Input::Cram(Box::new(CramReader::open(file, cram)?.named(&path)))),
            (Format::Cram, None) => Ok(Input::Cram(Box::new(CramReader::from_stream(&path, self.into_reader(), cram)?))),
            (Format::Bam(Compression::Bgzf), Some(map)) => {
                let bam = BamFile::open(map).map_err(|e| rename(e, map, &path))?;
                Ok(Input::Bam(bam.with_path(&path)))
            }
            (Format::Bam(Compression::Bgzf), None) => {
                Ok(Input::Stream(Box::new(BamStream::bgzf(&path, self.into_reader(), rayon::current_num_threads())?)))
            }
            (Format::Bam(Compression::None), _) => Ok(Input::Stream(Box::new(BamStream::uncompressed(&path, self.into_reader())?))),
            (Format::Bam(_), _) => {
                let (decompressed, _) = compression::decompress(self.into_reader(), 1).map_err(|e| Error::from(e).with_path(&path))?;
                Ok(Input::Stream(Box::new(BamStream::uncompressed(&path, decompressed)?)))
            }
            (Format::CompressedSam(_), _) => {
                let (text, _) =
                    compression::decompress(self.into_reader(), rayon::current_num_threads()).map_err(|e| Error::from(e).with_path(&path))?;
                let sam = SamReader::new(text).map_err(|e| Error::from(e).with_path(&path))?;
                Ok(Input::Sam(Box::new(sam)))
            }
            _ => {
                let sam = SamReader::new(self.into_reader()).map_err(|e| Error::from(e).with_path(&path))?;
                Ok(Input::Sam(Box::new(sam)))
            }
        }
    }
}

/// `e` about `opened`, said about `path` instead (`/dev/stdin` is `-`).
fn rename(e: Error, opened: &Path, path: &Path) -> Error {
    match e {
        Error::WithPath { path: p, source } if p == opened => source.with_path(path),
        e => e,
    }
}

/// Opens `path` (`-` for standard input) for reading records (see
/// [`Peeked::open`]).
pub fn open(path: &Path) -> Result<Input, Error> {
    peek(path)?.open()
}

/// As [`open`], a CRAM input read with `cram` ([`Peeked::open_with`]).
pub fn open_with(path: &Path, cram: &CramOptions) -> Result<Input, Error> {
    peek(path)?.open_with(cram)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn a_bam_prefix_is_bam_even_when_cut_mid_block() {
        let bam = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam")).unwrap();
        for cut in [bam.len(), SNIFF_BYTES, 100, 19, 10] {
            assert_eq!(recognise(&bam[..cut.min(bam.len())]), Format::Bam(Compression::Bgzf), "cut at {cut}");
        }
        let raw = crate::bgzf::decompress_all(&bam).unwrap();
        assert_eq!(recognise(&raw), Format::Bam(Compression::None));
        assert_eq!(recognise(&gzip(&raw)), Format::Bam(Compression::Gzip));
    }

    #[test]
    fn every_wrong_input_is_named_as_what_it_is() {
        let sam = b"@HD\tVN:1.6\n@SQ\tSN:c\tLN:5\n";
        let say = |bytes: &[u8]| match check_supported(recognise(bytes), Path::new("x")) {
            Ok(()) => "supported".to_string(),
            Err(e) => e.to_string(),
        };
        assert_eq!(say(&crate::bgzf::compress_all(sam, 1)), "supported");
        assert_eq!(say(&gzip(sam)), "supported");
        assert_eq!(say(b"CRAM\x03\x00rest"), "supported");
        assert_eq!(say(&gzip(b"hello\n")), "x: gzip-compressed data that is not BAM or SAM");
        assert_eq!(say(b"hello\n"), "x: not a BAM or SAM file");
        assert_eq!(say(b""), "x: empty file, not BAM or SAM");
        assert_eq!(say(b"BAI\x01\0\0\0\0"), "x: a BAI index, not the BAM or SAM file it indexes");
        assert_eq!(say(&crate::bgzf::compress_all(b"CSI\x01\0\0\0\0", 1)), "x: a CSI index, not the BAM or SAM file it indexes");
        assert_eq!(say(b">r\nACGT\n"), "x: FASTA sequences, not BAM or SAM alignments");
        assert_eq!(say(&gzip(b"@r\nACGT\n+\nIIII\n")), "x: FASTQ sequences, not BAM or SAM alignments");
        assert_eq!(say(b"##fileformat=VCFv4.2\n"), "x: VCF, not BAM or SAM alignments");
        assert_eq!(say(sam), "supported");
        let indexable = check_indexable(recognise(sam), Path::new("c.sam")).unwrap_err().to_string();
        assert!(indexable.starts_with("c.sam: SAM cannot be indexed"), "{indexable}");
        let mappable = check_mappable(recognise(&crate::bgzf::compress_all(sam, 1)), Path::new("c.sam.gz")).unwrap_err().to_string();
        assert!(mappable.starts_with("c.sam.gz: bgzipped SAM is read as a stream"), "{mappable}");
        assert!(check_indexable(recognise(&crate::bgzf::compress_all(sam, 1)), Path::new("c.sam.gz")).is_ok());
        let gz = check_indexable(recognise(&gzip(sam)), Path::new("g.sam.gz")).unwrap_err().to_string();
        assert!(gz.starts_with("g.sam.gz: SAM compressed with gzip, not BGZF, cannot be indexed"), "{gz}");
    }
}
