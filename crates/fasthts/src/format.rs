//! What an input is, from its first bytes ([`recognise`]), and what is
//! said about an input that is not a supported one ([`check_supported`]),
//! so that every command and the Python package name a wrong input alike.
//! Below the readers (a BAM file that is no BAM says what it is) and the
//! opener ([`crate::input`]).

use crate::bgzf::{Block, BlockReader, VirtualOffset};
use crate::Error;
use fasthts_io::compression::{self, Compression};
use std::io::{Cursor, Read};
use std::path::Path;

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
/// use fasthts::format::{recognise, Format};
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
            if compression::is_bgzf(prefix) && Block::parse(prefix, 0).is_err() && prefix.len() < 18 {
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
    } else if compression == Compression::Gzip && looks_like_crai(content) {
        Format::Index("CRAI")
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

/// htslib's test for a `.crai` (gzip-compressed): a first line of six
/// tab-separated integers.
fn looks_like_crai(content: &[u8]) -> bool {
    let Some(line) = content.split(|&c| c == b'\n').next().filter(|_| content.contains(&b'\n')) else { return false };
    let fields: Vec<&[u8]> = line.split(|&c| c == b'\t').collect();
    let integer = |f: &&[u8]| {
        let digits = f.strip_prefix(b"-").unwrap_or(f);
        !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
    };
    fields.len() == 6 && fields.iter().all(integer)
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
/// and read through its index ([`crate::bam::BamFile`]): bgzipped SAM, which is
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
