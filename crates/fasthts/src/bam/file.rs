//! A memory-mapped BAM file.

use super::{BamError, Header, RecordReader};
use crate::bgzf::{self, BlockReader, VirtualOffset};
use crate::Error;
use fasthts_io::remote::RemoteObject;
use fasthts_io::sparse::SparseCopy;
use memmap2::Mmap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An open, memory-mapped BAM file with its parsed header.
///
/// # The mmap contract
///
/// The file is mapped read-only. If another process truncates it while it is
/// mapped, reading the vanished pages raises SIGBUS; that is the price of
/// zero-copy access and the same contract every mmap-based reader has. Do
/// not modify a BAM while fasthts reads it.
pub struct BamFile {
    path: PathBuf,
    bytes: Bytes,
    header: Header,
    first_record: VirtualOffset,
    has_eof_marker: bool,
}

/// Where a BamFile's compressed bytes are.
enum Bytes {
    Mapped(Mmap),
    /// Read from a stream into memory (an index built from a pipe).
    Owned(Vec<u8>),
    /// A remote object: memory of its length, holding only the ranges
    /// fetched ([`BamFile::prefetch`]); the rest reads as zeros, which no
    /// BGZF block header matches.
    Remote(Box<SparseCopy>),
}

impl BamFile {
    /// Opens and maps `path` and reads its header. A file that is not a
    /// BGZF-compressed BAM is refused with the words every command uses
    /// for it ([`crate::format::check_mappable`]).
    pub fn open(path: impl AsRef<Path>) -> Result<BamFile, Error> {
        let path = path.as_ref().to_path_buf();
        let with_path = |e: Error| e.with_path(&path);
        // Looked at before opening: opening a FIFO waits for a writer.
        let meta = std::fs::metadata(&path).map_err(|e| with_path(e.into()))?;
        if meta.is_dir() {
            return Err(with_path(Error::IsADirectory));
        }
        if !meta.is_file() {
            // A pipe, a FIFO, a device: read once as it streams, never mapped.
            return Err(with_path(Error::Message(
                "not a regular file: a BAM from a pipe or FIFO is read as it streams, and cannot be read through an index".into(),
            )));
        }
        let file = File::open(&path).map_err(|e| with_path(e.into()))?;
        if meta.len() == 0 {
            return Err(crate::format::check_mappable(crate::format::Format::Empty, &path).unwrap_err());
        }
        // SAFETY: read-only private map; the module docs state the contract
        // that the file is not truncated while mapped.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| with_path(e.into()))?;
        BamFile::from_bytes(path, Bytes::Mapped(map))
    }

    /// A BAM held in memory (`bytes`, the whole compressed file), named
    /// `path` in messages.
    pub fn from_vec(path: impl AsRef<Path>, bytes: Vec<u8>) -> Result<BamFile, Error> {
        BamFile::from_bytes(path.as_ref().to_path_buf(), Bytes::Owned(bytes))
    }

    /// The bytes of a BAM held in memory ([`BamFile::from_vec`]), given
    /// back; `None` for a mapped or remote file.
    pub fn into_vec(self) -> Option<Vec<u8>> {
        match self.bytes {
            Bytes::Owned(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The BAM behind a remote `object`, named `path` in messages, whose
    /// first bytes `known` were fetched already: its header and its last
    /// bytes (the EOF marker) are fetched; the ranges to read are fetched
    /// before they are read ([`BamFile::prefetch`]).
    pub fn open_remote(path: impl AsRef<Path>, object: Arc<RemoteObject>, known: &[u8]) -> Result<BamFile, Error> {
        let path = path.as_ref().to_path_buf();
        let len = object.len();
        if len == 0 {
            return Err(crate::format::check_mappable(crate::format::Format::Empty, &path).unwrap_err());
        }
        let io = |e: std::io::Error| Error::from(e).with_path(&path);
        let mut sparse = SparseCopy::new(object, known).map_err(io)?;
        let tail = bgzf::EOF_MARKER.len() as u64;
        sparse.fetch(&[(len.saturating_sub(tail), len)]).map_err(io)?;
        sparse.fetch_start_until(|bytes| read_header(bytes).is_ok()).map_err(io)?;
        BamFile::from_bytes(path, Bytes::Remote(Box::new(sparse)))
    }

    /// Fetches the compressed byte ranges `[start, end)` of a remote BAM
    /// that have not been fetched yet, in parallel on the current pool
    /// (nothing for a local file). A range must be fetched before records
    /// are read from it; reading one that was not fails as a damaged block.
    pub fn prefetch(&mut self, ranges: &[(u64, u64)]) -> Result<(), Error> {
        match &mut self.bytes {
            Bytes::Remote(sparse) => sparse.fetch(ranges).map_err(|e| Error::from(e).with_path(&self.path)),
            _ => Ok(()),
        }
    }

    /// Whether `[start, end)` may be read: always for a local file; for a
    /// remote one, when it was fetched ([`BamFile::prefetch`]).
    pub fn is_fetched(&self, start: u64, end: u64) -> bool {
        match &self.bytes {
            Bytes::Remote(sparse) => sparse.is_fetched(start, end),
            _ => true,
        }
    }

    /// Another handle on a remote BAM holding only its header and last
    /// bytes (copied, not fetched again); its ranges are fetched as this
    /// one's are ([`BamFile::prefetch`]). `None` for a local file.
    ///
    /// What a reader still holds of this file stays as it is: ranges are
    /// fetched into a handle no reader borrows, never under one.
    pub fn remote_copy(&self) -> Option<Result<BamFile, Error>> {
        let Bytes::Remote(sparse) = &self.bytes else { return None };
        Some(sparse.copy_ends().map_err(|e| Error::from(e).with_path(&self.path)).map(|copy| BamFile {
            path: self.path.clone(),
            bytes: Bytes::Remote(Box::new(copy)),
            header: self.header.clone(),
            first_record: self.first_record,
            has_eof_marker: self.has_eof_marker,
        }))
    }

    /// The remote object behind a remote BAM; `None` for a local one.
    pub fn remote_object(&self) -> Option<&Arc<RemoteObject>> {
        match &self.bytes {
            Bytes::Remote(sparse) => Some(sparse.object()),
            _ => None,
        }
    }

    /// How many of a remote BAM's first bytes have been fetched (its header
    /// at least); the whole file for a local one.
    pub fn fetched_prefix(&self) -> u64 {
        match &self.bytes {
            Bytes::Remote(sparse) => sparse.fetched_prefix(),
            _ => self.bytes().len() as u64,
        }
    }

    /// Whether the bytes are a remote object's, fetched as they are needed.
    pub fn is_remote(&self) -> bool {
        matches!(self.bytes, Bytes::Remote(_))
    }

    fn from_bytes(path: PathBuf, bytes: Bytes) -> Result<BamFile, Error> {
        let data: &[u8] = match &bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
            Bytes::Remote(s) => s.bytes(),
        };
        let (header, first_record) = match read_header(data) {
            Ok(read) => read,
            Err(e) => {
                // Not BAM in BGZF at all: say what it is instead.
                let head = &data[..data.len().min(crate::format::SNIFF_BYTES)];
                crate::format::check_mappable(crate::format::recognise(head), &path)?;
                return Err(Error::from(e).with_path(&path));
            }
        };
        let has_eof_marker = bgzf::has_eof_marker(data);
        Ok(BamFile { path, bytes, header, first_record, has_eof_marker })
    }

    /// The same file, named `path` in messages (`-` for standard input
    /// redirected from it).
    pub fn with_path(mut self, path: impl AsRef<Path>) -> BamFile {
        self.path = path.as_ref().to_path_buf();
        self
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The whole compressed file.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
            Bytes::Remote(s) => s.bytes(),
        }
    }

    /// Whether the bytes are a file mapping (whose pages read can be
    /// released), not memory of the process's own.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Mapped(_))
    }

    /// Virtual offset of the first record (just after the header).
    pub fn first_record_offset(&self) -> VirtualOffset {
        self.first_record
    }

    /// False when the file lacks the BGZF EOF marker (probably truncated).
    /// Callers should warn, as htslib does.
    pub fn has_eof_marker(&self) -> bool {
        self.has_eof_marker
    }

    /// All records from the first, in file order.
    pub fn records(&self) -> Result<RecordReader<'_>, Error> {
        self.records_from(self.first_record)
    }

    /// Records starting at `offset`, which must be the start of a record.
    pub fn records_from(&self, offset: VirtualOffset) -> Result<RecordReader<'_>, Error> {
        let mut blocks = BlockReader::new(self.bytes(), offset).map_err(|e| Error::from(BamError::from(e)).with_path(&self.path))?;
        if let Bytes::Mapped(_) = self.bytes {
            // SAFETY: `bytes()` is the read-only file mapping made in `open`.
            unsafe { blocks.release_read_pages() };
        }
        Ok(RecordReader::new(blocks, self.header.references.len()))
    }
}

/// The header of the BAM `data` and the offset of its first record.
fn read_header(data: &[u8]) -> Result<(Header, VirtualOffset), BamError> {
    // One block at a time: the header is usually a block or two.
    BlockReader::with_batch_bytes(data, VirtualOffset::default(), 1)
        .map_err(BamError::from)
        .and_then(|mut reader| Header::read(&mut reader).map(|h| (h, reader.virtual_offset())))
}
