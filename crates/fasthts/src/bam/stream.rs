//! A BAM read as a stream, front to back, once: from a pipe, a FIFO, a
//! process substitution or standard input, and uncompressed BAM (raw
//! `BAM\1`, or gzip that is not BGZF) from anywhere.
//!
//! BGZF is inflated ahead on threads of its own ([`StreamReader`]) while the
//! caller walks records in place in one reusable buffer: nothing is
//! copied to disk and nothing is allocated per record.

use super::record::{RecordDefect, RecordRef, MAX_RECORD_SIZE};
use super::{BamError, Header};
use crate::bgzf::StreamReader;
use crate::Error;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes read from the stream at a time; records larger than this grow
/// the buffer.
const CHUNK_BYTES: usize = 4 << 20;

/// Where a stream's decompressed bytes come from.
enum Source {
    /// BGZF, inflated ahead on worker threads.
    Bgzf(StreamReader),
    /// Uncompressed BAM, or gzip inflated on the reading thread.
    Other(Box<dyn Read + Send>),
}

impl Source {
    fn reader(&mut self) -> &mut dyn Read {
        match self {
            Source::Bgzf(r) => r,
            Source::Other(r) => r,
        }
    }
}

/// A BAM read once as it arrives, its header read.
pub struct BamStream {
    path: PathBuf,
    header: Header,
    source: Source,
    buf: Vec<u8>,
    /// Unread data is `buf[pos..filled]`.
    pos: usize,
    filled: usize,
    /// Bytes of the decompressed stream before `buf[0]`.
    consumed: u64,
    eof_checked: bool,
}

impl BamStream {
    /// A BGZF-compressed BAM read from `src` (positioned at its first
    /// block), inflated ahead on `threads` threads; errors name `path`.
    pub fn bgzf(path: &Path, src: Box<dyn Read + Send>, threads: usize) -> Result<BamStream, Error> {
        BamStream::new(path, Source::Bgzf(StreamReader::new(src, threads)), true)
    }

    /// Decompressed BAM data read from `src` (uncompressed BAM, or the
    /// output of a gzip decoder), from its magic on.
    pub fn uncompressed(path: &Path, src: Box<dyn Read + Send>) -> Result<BamStream, Error> {
        BamStream::new(path, Source::Other(src), false)
    }

    fn new(path: &Path, mut source: Source, eof_checked: bool) -> Result<BamStream, Error> {
        let header = Header::read_from(source.reader()).map_err(|e| e.with_path(path))?;
        let consumed = header.to_bytes().len() as u64;
        Ok(BamStream { path: path.to_path_buf(), header, source, buf: Vec::new(), pos: 0, filled: 0, consumed, eof_checked: !eof_checked })
    }

    /// The path the stream was opened from (`-` for standard input).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Whether the BGZF stream, read to its end, lacked the end-of-file
    /// marker (the data is then probably truncated); false for
    /// uncompressed data and before the end.
    pub fn missing_eof_marker(&self) -> bool {
        match &self.source {
            Source::Bgzf(r) => self.eof_checked && !r.ended_with_eof_marker(),
            Source::Other(_) => false,
        }
    }

    /// Calls `f` on every record, in stream order, each a view into the
    /// read buffer; an error it returns stops the walk. Reads the stream
    /// to its end.
    pub fn for_each_record<E: From<Error>>(&mut self, mut f: impl FnMut(&RecordRef<'_>) -> Result<(), E>) -> Result<(), E> {
        while let Some(record) = self.next_record()? {
            f(&record)?;
        }
        Ok(())
    }

    /// The next record, a view into the read buffer valid until the next
    /// call; `None` at the end of the stream (a record cut short there is
    /// an error).
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, Error> {
        loop {
            // A complete record at `pos`: handed out in place.
            let rest = &self.buf[self.pos..self.filled];
            if rest.len() >= 4 {
                let size = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let offset = self.consumed + self.pos as u64;
                if size > MAX_RECORD_SIZE {
                    return Err(self.error(BamError::InvalidStreamRecord { offset, defect: RecordDefect::BlockSizeTooLarge }));
                }
                if rest.len() >= 4 + size {
                    let start = self.pos + 4;
                    self.pos = start + size;
                    let n_ref = self.header.references.len();
                    return match RecordRef::new(&self.buf[start..start + size], n_ref) {
                        Ok(record) => Ok(Some(record)),
                        Err(defect) => Err(Error::from(BamError::InvalidStreamRecord { offset, defect }).with_path(&self.path)),
                    };
                }
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    /// Moves the partial record at `pos` to the front and reads more after
    /// it (growing the buffer for a large record); false at the end.
    fn refill(&mut self) -> Result<bool, Error> {
        if self.buf.len() < CHUNK_BYTES {
            self.buf.resize(CHUNK_BYTES, 0);
        }
        self.buf.copy_within(self.pos..self.filled, 0);
        self.consumed += self.pos as u64;
        self.filled -= self.pos;
        self.pos = 0;
        if self.filled >= 4 {
            // A large record's room grows as its bytes arrive (doubling
            // when full): a damaged size field in a short stream does not
            // make it take gigabytes.
            let size = u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize;
            if 4 + size > self.buf.len() && self.filled == self.buf.len() {
                self.buf.resize((4 + size).min(2 * self.buf.len()), 0);
            }
        }
        let n = fasthts_io::compression::read_full(self.source.reader(), &mut self.buf[self.filled..]).map_err(|e| Error::from(e).with_path(&self.path))?;
        if n == 0 {
            self.eof_checked = true;
            if self.filled > 0 {
                return Err(self.error(BamError::TruncatedStreamRecord { offset: self.consumed }));
            }
            return Ok(false);
        }
        self.filled += n;
        Ok(true)
    }

    fn error(&self, e: BamError) -> Error {
        Error::from(e).with_path(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::scan::tests::{open_bam, synthetic_bam};
    use std::io::Cursor;

    fn names_streamed(bytes: Vec<u8>, bgzf: bool) -> Result<Vec<Vec<u8>>, Error> {
        let src: Box<dyn Read + Send> = Box::new(Cursor::new(bytes));
        let mut s = if bgzf { BamStream::bgzf(Path::new("-"), src, 2)? } else { BamStream::uncompressed(Path::new("-"), src)? };
        let mut names = Vec::new();
        s.for_each_record(|r| {
            names.push(r.name().to_vec());
            Ok::<(), Error>(())
        })?;
        assert!(!s.missing_eof_marker());
        Ok(names)
    }

    #[test]
    fn streamed_records_equal_mapped_ones_compressed_or_not() {
        // Records far larger than a block and than the read chunk.
        let bytes = synthetic_bam(600);
        let (bam, dir) = open_bam(&bytes, "stream");
        let mut expected = Vec::new();
        let mut rr = bam.records().unwrap();
        while let Some(r) = rr.next_record().unwrap() {
            expected.push(r.name().to_vec());
        }
        assert_eq!(names_streamed(bytes.clone(), true).unwrap(), expected);
        let raw = crate::bgzf::decompress_all(&bytes).unwrap();
        assert_eq!(names_streamed(raw.clone(), false).unwrap(), expected);
        // Cut inside a record: an error naming the stream, never a short success.
        let err = names_streamed(raw[..raw.len() - 10].to_vec(), false).unwrap_err().to_string();
        assert!(err.starts_with("-: truncated BAM record at uncompressed offset "), "{err}");
        // A BGZF stream without its EOF marker is told apart.
        let cut = bytes[..bytes.len() - crate::bgzf::EOF_MARKER.len()].to_vec();
        let mut s = BamStream::bgzf(Path::new("-"), Box::new(Cursor::new(cut)), 1).unwrap();
        s.for_each_record(|_| Ok::<(), Error>(())).unwrap();
        assert!(s.missing_eof_marker());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_size_field_does_not_take_its_size_in_memory() {
        // The first record's block_size made 1 GiB, in a stream that ends
        // a few MB later: an error, with the buffer grown only as bytes came.
        let bytes = synthetic_bam(600);
        let mut raw = crate::bgzf::decompress_all(&bytes).unwrap();
        let (bam, dir) = open_bam(&bytes, "damaged-size");
        let first = bam.header().to_bytes().len();
        raw[first..first + 4].copy_from_slice(&(1u32 << 30).to_le_bytes());
        let mut s = BamStream::uncompressed(Path::new("-"), Box::new(Cursor::new(raw.clone()))).unwrap();
        let err = s.for_each_record(|_| Ok::<(), Error>(())).unwrap_err().to_string();
        assert!(err.starts_with("-: truncated BAM record"), "{err}");
        assert!(s.buf.len() <= 2 * raw.len().max(CHUNK_BYTES), "{} bytes of room for a {}-byte stream", s.buf.len(), raw.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
