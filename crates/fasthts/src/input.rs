//! Recognising and opening an alignment input, a file or a pipe.
//!
//! What an input is ([`recognise`]) and what is said about one that is not
//! supported ([`check_supported`]) are [`crate::format`]'s, re-exported
//! here. BGZF-compressed BAM in a regular file is memory-mapped; BAM from a pipe,
//! a FIFO, process substitution or standard input is read once as it
//! streams ([`BamStream`], inflated ahead on worker threads), as is
//! uncompressed BAM (raw `BAM\1`, or gzip that is not BGZF) from anywhere;
//! SAM, plain or compressed (BGZF as `bgzip` writes it, or gzip, as htslib
//! reads both), is parsed as a stream; CRAM is decoded by htslib
//! ([`crate::cram`]), from the file or as it streams. Nothing is copied to
//! disk.

use crate::bam::{BamFile, BamStream};
use crate::cram::{CramOptions, CramReader};
use crate::sam::SamReader;
use crate::Error;
use fasthts_io::compression::{self, Compression};
use fasthts_io::remote::{self, RemoteObject, RemoteReader};
use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::format::{check_indexable, check_mappable, check_supported, recognise, Format, SNIFF_BYTES};

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
    /// A remote object (read as a stream, fetched ahead).
    remote: Option<Arc<RemoteObject>>,
    prefix: Vec<u8>,
    rest: Box<dyn Read + Send>,
}

/// Opens `path` (`-` for standard input) and recognises its first bytes.
/// Errors name `path`.
pub fn peek(path: &Path) -> Result<Peeked, Error> {
    if let Some(url) = remote_url(path) {
        return peek_remote(url);
    }
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
    Ok(Peeked { path: path.to_path_buf(), format, regular, remote: None, prefix, rest })
}

/// `path` when it is a URL ([`remote::is_url`]).
pub fn remote_url(path: &Path) -> Option<&str> {
    path.to_str().filter(|p| remote::is_url(p))
}

/// The remote object at `url`, opened; errors name it as messages may
/// show it ([`remote::display_url`]), as does what is read from it.
pub fn open_remote(url: &str) -> Result<(Arc<RemoteObject>, PathBuf), Error> {
    let shown = PathBuf::from(remote::display_url(url));
    let object = RemoteObject::open(url).map_err(|e| Error::from(e).with_path(&shown))?;
    Ok((Arc::new(object), shown))
}

/// [`peek`] of a URL: its first bytes fetched as one range; the rest read
/// as a stream, fetched ahead from its first read on (a region query
/// reads the object by its own ranges, and fetches none of it twice).
fn peek_remote(url: &str) -> Result<Peeked, Error> {
    let (object, path) = open_remote(url)?;
    let mut prefix = vec![0u8; object.len().min(SNIFF_BYTES as u64) as usize];
    object.read_range(0, &mut prefix).map_err(|e| Error::from(e).with_path(&path))?;
    let rest: Box<dyn Read + Send> = Box::new(RemoteReader::new(Arc::clone(&object), prefix.len() as u64));
    let format = recognise(&prefix);
    Ok(Peeked { path, format, regular: None, remote: Some(object), prefix, rest })
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

    /// Whether the input is a remote object (a URL), read as a stream.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The remote object (a URL) and its first bytes, fetched already.
    pub fn remote_object(&self) -> Option<(&Arc<RemoteObject>, &[u8])> {
        self.remote.as_ref().map(|object| (object, &self.prefix[..]))
    }

    /// The name messages give the input (a URL without credentials).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a regular file or a remote object ends with BGZF's EOF
    /// marker (htslib's `bgzf_check_EOF`); `None` for a stream, whose end cannot be looked
    /// at before it is read.
    pub fn ends_with_eof_marker(&self) -> Option<bool> {
        use std::io::{Seek, SeekFrom};
        if let Some(object) = &self.remote {
            // A remote object's last bytes are fetched on their own.
            let mut tail = [0u8; 28];
            let Some(at) = object.len().checked_sub(tail.len() as u64) else { return Some(false) };
            return Some(object.read_range(at, &mut tail).is_ok() && crate::bgzf::has_eof_marker(&tail));
        }
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
