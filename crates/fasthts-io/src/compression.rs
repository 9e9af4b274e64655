//! What a stream's first bytes say about its compression, and opening a
//! path or stream decompressed by content, as htslib and khmer (screed) do:
//! the name never decides.

use crate::bgzf::{BlockHeader, StreamReader};
use crate::PathError;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

/// The two bytes every gzip member (and so every BGZF block) starts with.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How a stream is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed (or not in a format read here).
    None,
    /// gzip that is not BGZF (one or several members).
    Gzip,
    /// BGZF: gzip members that announce their size, inflated in parallel.
    Bgzf,
    /// bzip2 (one or several streams).
    Bzip2,
}

/// Bytes [`detect`] needs to tell BGZF from gzip: the fixed header and a
/// `BC` extra subfield.
pub const DETECT_BYTES: usize = 18;

/// True when `head` starts like a gzip member.
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&GZIP_MAGIC)
}

/// The four bytes every BGZF block starts with: gzip's magic, deflate
/// (8) and the flag (4) that announces the extra field holding the
/// block's size.
pub const BGZF_MAGIC: [u8; 4] = [0x1f, 0x8b, 8, 4];

/// True when `head` starts like a BGZF block ([`BGZF_MAGIC`]), as a block
/// header cut short or one among compressed bytes is looked for; whether
/// a whole header follows is [`detect`]'s (and `BlockHeader::parse`'s)
/// to say.
#[inline]
pub fn is_bgzf(head: &[u8]) -> bool {
    head.starts_with(&BGZF_MAGIC)
}

/// Recognises the compression of a stream from its first bytes (at least
/// [`DETECT_BYTES`] of them, unless the stream is shorter).
///
/// ```
/// use fasthts_io::compression::{detect, Compression};
/// assert_eq!(detect(b">r1\nACGT\n"), Compression::None);
/// assert_eq!(detect(&fasthts_io::bgzf::EOF_MARKER), Compression::Bgzf);
/// assert_eq!(detect(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), Compression::Gzip);
/// assert_eq!(detect(b"BZh91AY&SY"), Compression::Bzip2);
/// ```
pub fn detect(head: &[u8]) -> Compression {
    if is_gzip(head) {
        if BlockHeader::parse(head, 0).is_ok() {
            Compression::Bgzf
        } else {
            Compression::Gzip
        }
    } else if head.starts_with(b"BZh") {
        Compression::Bzip2
    } else {
        Compression::None
    }
}

/// Decompresses `src` by its content, BGZF inflated ahead on `threads`
/// threads of its own; also returns what was found. The stream is read
/// once, as it arrives (a pipe works as a file does). Plain input comes
/// back unbuffered: its readers read in large chunks of their own.
pub fn decompress<R: Read + Send + 'static>(mut src: R, threads: usize) -> io::Result<(Box<dyn Read + Send>, Compression)> {
    let mut head = Vec::with_capacity(DETECT_BYTES);
    (&mut src).take(DETECT_BYTES as u64).read_to_end(&mut head)?;
    let kind = detect(&head);
    let src = io::Cursor::new(head).chain(src);
    let buffered = |src| BufReader::with_capacity(1 << 20, src);
    let reader: Box<dyn Read + Send> = match kind {
        Compression::Bgzf => Box::new(StreamReader::new(Box::new(buffered(src)), threads)),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buffered(src))),
        // Concatenated streams (pbzip2) are read through.
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(buffered(src))),
        Compression::None => Box::new(src),
    };
    Ok((reader, kind))
}

/// Opens `path` (`-` for standard input; a URL, [`crate::remote::is_url`],
/// read from its start as a stream fetched ahead) and [`decompress`]es it.
/// Errors name `path` (a URL as [`crate::remote::display_url`] shows it).
pub fn open(path: &Path, threads: usize) -> Result<(Box<dyn Read + Send>, Compression), PathError> {
    if let Some(url) = path.to_str().filter(|p| crate::remote::is_url(p)) {
        let object = crate::remote::RemoteObject::open(url).map(std::sync::Arc::new);
        let opened = object.and_then(|o| decompress(crate::remote::RemoteReader::new(o, 0), threads));
        return opened.map_err(|e| PathError::new(crate::remote::display_url(url), e));
    }
    let opened =
        if path.as_os_str() == "-" { decompress(io::stdin(), threads) } else { File::open(path).and_then(|f| decompress(f, threads)) };
    opened.map_err(|e| PathError::new(path, e))
}


/// Reads `buf.len()` bytes unless the stream ends first (a pipe hands data
/// out in pieces); returns how many.
pub fn read_full(src: &mut (impl Read + ?Sized), buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_back(bytes: Vec<u8>) -> (Vec<u8>, Compression) {
        let (mut r, kind) = decompress(io::Cursor::new(bytes), 2).unwrap();
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        (out, kind)
    }

    #[test]
    fn every_format_reads_back_the_same_text() {
        let text = b"@r1\nACGT\n+\nIIII\n".repeat(5000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        // Two gzip members, as `cat a.gz b.gz` makes.
        let mut two_members = gz.finish().unwrap();
        two_members.extend_from_within(..);
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        bz.write_all(&text).unwrap();
        let bgzf = crate::bgzf::compress_all(&text, 6);
        assert_eq!(read_back(text.clone()), (text.clone(), Compression::None));
        assert_eq!(read_back(bgzf), (text.clone(), Compression::Bgzf));
        assert_eq!(read_back(bz.finish().unwrap()), (text.clone(), Compression::Bzip2));
        assert_eq!(read_back(two_members), ([text.clone(), text].concat(), Compression::Gzip));
        // Shorter than the bytes detection looks at.
        assert_eq!(read_back(b">a".to_vec()), (b">a".to_vec(), Compression::None));
        assert_eq!(read_back(Vec::new()), (Vec::new(), Compression::None));
    }

    #[test]
    fn bgzf_starts_with_its_magic_and_gzip_without_the_extra_field_does_not() {
        assert!(is_bgzf(&crate::bgzf::EOF_MARKER));
        assert!(is_bgzf(&crate::bgzf::compress_all(b"text", 6)));
        // Cut short after the magic: still the start of a block.
        assert!(is_bgzf(&crate::bgzf::EOF_MARKER[..4]));
        assert!(!is_bgzf(&crate::bgzf::EOF_MARKER[..3]));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"text").unwrap();
        assert!(!is_bgzf(&gz.finish().unwrap()));
        assert!(!is_bgzf(b"BAM\x01"));
        assert!(!is_bgzf(b""));
    }

    #[test]
    fn errors_name_the_path() {
        let e = open(Path::new("/no/such/file.fq"), 1).err().unwrap();
        assert_eq!(e.to_string(), "/no/such/file.fq: No such file or directory");
    }
}
