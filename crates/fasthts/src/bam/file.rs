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
    map: Option<Mmap>,
    header: Header,
    first_record: VirtualOffset,
    has_eof_marker: bool,
}

impl BamFile {
    /// Opens and maps `path` and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<BamFile, Error> {
        let path = path.as_ref().to_path_buf();
        let with_path = |e: Error| e.with_path(&path);
        let file = File::open(&path).map_err(|e| with_path(e.into()))?;
        let meta = file.metadata().map_err(|e| with_path(e.into()))?;
        if meta.is_dir() {
            return Err(with_path(Error::IsADirectory));
        }
        if meta.len() == 0 {
            return Err(with_path(BamError::Empty.into()));
        }
        // SAFETY: read-only private map; the module docs state the contract
        // that the file is not truncated while mapped.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| with_path(e.into()))?;
        // One block at a time: the header is usually a block or two.
        let (header, first_record) = {
            let mut reader =
                BlockReader::with_batch_bytes(&map, VirtualOffset::default(), 1).map_err(|e| with_path(BamError::from(e).into()))?;
            let header = Header::read(&mut reader).map_err(|e| with_path(e.into()))?;
            (header, reader.virtual_offset())
        };
        let has_eof_marker = bgzf::has_eof_marker(&map);
        Ok(BamFile { path, map: Some(map), header, first_record, has_eof_marker })
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
        self.map.as_deref().unwrap_or(&[])
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
        // SAFETY: `bytes()` is the read-only file mapping made in `open`.
        unsafe { blocks.release_read_pages() };
        Ok(RecordReader::new(blocks, self.header.references.len()))
    }
}
