//! A memory-mapped BAM file.

use super::{BamError, Header, RecordReader};
use crate::bgzf::{self, BlockReader, VirtualOffset};
use crate::Error;
use memmap2::Mmap;
use std::fs::File;
use std::path::{Path, PathBuf};

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

    fn from_bytes(path: PathBuf, bytes: Bytes) -> Result<BamFile, Error> {
        let data: &[u8] = match &bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        };
        // One block at a time: the header is usually a block or two.
        let read = BlockReader::with_batch_bytes(data, VirtualOffset::default(), 1)
            .map_err(BamError::from)
            .and_then(|mut reader| Header::read(&mut reader).map(|h| (h, reader.virtual_offset())));
        let (header, first_record) = match read {
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
