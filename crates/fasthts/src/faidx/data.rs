//! The bytes of a FASTA or FASTQ file, plain or BGZF, read as htslib's
//! `bgzf_getc` reads them: forward from an uncompressed offset, a BGZF
//! file's blocks found through its `.gzi` offsets.

use crate::Error;
use fasthts_io::bgzf::{self, Block};
use fasthts_io::compression::{self, Compression};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// A file's bytes: mapped, or read whole where it cannot be mapped (an
/// empty file, a pipe).
pub(crate) enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    pub(crate) fn open(path: &Path) -> Result<Bytes, Error> {
        let mut file = File::open(path).map_err(|e| Error::from(e).with_path(path))?;
        let meta = file.metadata().map_err(|e| Error::from(e).with_path(path))?;
        if meta.is_dir() {
            return Err(Error::IsADirectory.with_path(path));
        }
        if meta.is_file() && meta.len() > 0 {
            // SAFETY: the map is read only; a file changed under it while
            // it is read gives wrong bytes (or SIGBUS if truncated), as a
            // file changed under samtools' reads gives wrong bytes. Every
            // mapped reader of this crate takes the same stance (bam::BamFile).
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).with_path(path))?;
            return Ok(Bytes::Mapped(map));
        }
        let mut all = Vec::new();
        file.read_to_end(&mut all).map_err(|e| Error::from(e).with_path(path))?;
        Ok(Bytes::Owned(all))
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// How a file is compressed, as far as indexing is concerned.
pub(crate) fn compression_of(file: &[u8]) -> Compression {
    compression::detect(&file[..file.len().min(compression::DETECT_BYTES)])
}

/// C's `isgraph` in the C locale: the characters a sequence or quality
/// is made of (a space, a tab, `\r` are not).
#[inline]
pub(crate) fn is_graph(c: u8) -> bool {
    c.wrapping_sub(0x21) < 0x5e
}

/// Uncompressed bytes inflated per refill while a BGZF file is indexed.
const BATCH_BYTES: usize = 4 << 20;

/// The uncompressed stream of a file read from its start (to index it):
/// plain bytes as they are, BGZF inflated in batches of blocks on the
/// pool, the start of each block that holds data noted for the `.gzi`.
pub(crate) struct Stream<'a> {
    file: &'a [u8],
    bgzf: bool,
    /// BGZF: the current batch of inflated bytes.
    buf: Vec<u8>,
    /// Position in the current chunk (the file, or `buf`).
    pos: usize,
    /// Uncompressed offset of the current chunk's first byte.
    chunk_start: u64,
    /// BGZF: offset of the next block to inflate.
    next_block: u64,
    /// BGZF: (compressed, uncompressed) offset of each block with data,
    /// in file order.
    pub(crate) blocks: Vec<(u64, u64)>,
    /// BGZF: the uncompressed offset after the blocks read so far.
    inflated_end: u64,
    batch: Vec<Block>,
}

impl<'a> Stream<'a> {
    pub(crate) fn new(file: &'a [u8], bgzf: bool) -> Stream<'a> {
        Stream {
            file,
            bgzf,
            buf: Vec::new(),
            pos: 0,
            chunk_start: 0,
            next_block: 0,
            blocks: Vec::new(),
            inflated_end: 0,
            batch: Vec::new(),
        }
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        if self.bgzf {
            &self.buf
        } else {
            self.file
        }
    }

    /// Loads the next batch of blocks; false at the end of the file.
    fn refill(&mut self) -> Result<bool, Error> {
        if !self.bgzf {
            return Ok(false);
        }
        self.chunk_start += self.buf.len() as u64;
        self.pos = 0;
        self.batch.clear();
        let mut total = 0usize;
        while total < BATCH_BYTES && self.next_block < self.file.len() as u64 {
            let block = Block::parse(self.file, self.next_block)?;
            self.next_block = block.next_offset();
            if block.uncompressed_size > 0 {
                self.blocks.push((block.offset, self.inflated_end));
                self.inflated_end += u64::from(block.uncompressed_size);
                total += block.uncompressed_size as usize;
                self.batch.push(block);
            }
        }
        self.buf.clear();
        self.buf.resize(total, 0);
        bgzf::inflate_blocks(self.file, &self.batch, &mut self.buf)?;
        Ok(total > 0)
    }

    /// The next byte (`bgzf_getc`), None at the end.
    #[inline]
    pub(crate) fn getc(&mut self) -> Result<Option<u8>, Error> {
        loop {
            if let Some(&c) = self.chunk().get(self.pos) {
                self.pos += 1;
                return Ok(Some(c));
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    /// The uncompressed offset of the next byte (`bgzf_utell`).
    pub(crate) fn tell(&self) -> u64 {
        self.chunk_start + self.pos as u64
    }

    /// Reads through the end of the line (its `\n` consumed): the bytes
    /// before the `\n` (or the end of the file), and how many of them are
    /// printable.
    pub(crate) fn rest_of_line(&mut self) -> Result<(u64, u64), Error> {
        let (mut bytes, mut graph) = (0u64, 0u64);
        loop {
            let chunk = &self.chunk()[self.pos..];
            let (len, ended) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            bytes += len as u64;
            graph += chunk[..len].iter().filter(|&&c| is_graph(c)).count() as u64;
            self.pos += len + usize::from(ended);
            if ended || !self.refill()? {
                return Ok((bytes, graph));
            }
        }
    }

    /// Reads through the end of the line, counting nothing.
    pub(crate) fn skip_line(&mut self) -> Result<(), Error> {
        loop {
            let chunk = &self.chunk()[self.pos..];
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    self.pos += i + 1;
                    return Ok(());
                }
                None => self.pos += chunk.len(),
            }
            if !self.refill()? {
                return Ok(());
            }
        }
    }
}

/// The `.gzi` of a BGZF file as htslib writes it (`bgzf_index_dump`):
/// the number of entries, then the compressed and uncompressed offsets
/// of every block holding data but the first, little-endian 64-bit.
pub(crate) fn gzi_bytes(blocks: &[(u64, u64)]) -> Vec<u8> {
    let rest = blocks.get(1..).unwrap_or_default();
    let mut out = Vec::with_capacity(8 + 16 * rest.len());
    out.extend_from_slice(&(rest.len() as u64).to_le_bytes());
    for &(c, u) in rest {
        out.extend_from_slice(&c.to_le_bytes());
        out.extend_from_slice(&u.to_le_bytes());
    }
    out
}

/// Reads a `.gzi`: its entries behind the (0, 0) of the first block, as
/// `bgzf_index_load` has them.
pub(crate) fn read_gzi(bytes: &[u8]) -> Result<Vec<(u64, u64)>, Error> {
    let word = |i: usize| bytes.get(i * 8..i * 8 + 8).map(|w| u64::from_le_bytes(w.try_into().unwrap()));
    let truncated = || Error::Message("truncated .gzi index".into());
    let count = word(0).ok_or_else(truncated)?;
    if count > (bytes.len() as u64) / 16 {
        return Err(truncated());
    }
    let mut entries = Vec::with_capacity(count as usize + 1);
    entries.push((0, 0));
    for i in 0..count as usize {
        entries.push((word(1 + 2 * i).ok_or_else(truncated)?, word(2 + 2 * i).ok_or_else(truncated)?));
    }
    Ok(entries)
}

/// Where a fetch reads from: the file's bytes and, for BGZF, its blocks.
pub(crate) enum Data {
    Plain(Bytes),
    /// A remote object, read by the ranges a fetch needs (`gzi`: a BGZF
    /// one's `.gzi`; `id` as for `Bgzf`).
    Remote {
        object: std::sync::Arc<fasthts_io::remote::RemoteObject>,
        gzi: Option<Vec<(u64, u64)>>,
        id: u64,
    },
    /// `id` names this opening of the file for [`BlockCache`].
    Bgzf {
        file: Bytes,
        gzi: Vec<(u64, u64)>,
        id: u64,
    },
}

/// A new id for a BGZF file's [`Data`].
pub(crate) fn next_file_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The last block a thread inflated (which file, where), kept because
/// the next fetch often reads it again (regions in order, a FASTQ
/// record's sequence then its qualities).
#[derive(Default)]
pub(crate) struct BlockCache {
    file: u64,
    offset: u64,
    data: Vec<u8>,
}

/// Why bytes could not be read.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The file ended before the bytes asked for (a `.fai` that does not
    /// describe the file).
    EndOfFile,
    /// Damaged BGZF data.
    Damaged(Error),
}

thread_local! {
    static DECOMPRESSOR: std::cell::RefCell<libdeflater::Decompressor> = std::cell::RefCell::new(libdeflater::Decompressor::new());
}

impl Data {
    /// Appends to `out` the next `count` printable bytes from the
    /// uncompressed offset `at`, skipping the others (line ends), as
    /// htslib's `fai_retrieve` does. `block` is a caller's buffer for a
    /// BGZF block.
    pub(crate) fn printable_from(&self, at: u64, count: u64, out: &mut Vec<u8>, cache: &mut BlockCache) -> Result<(), ReadFailure> {
        out.reserve(count as usize);
        let mut need = count;
        match self {
            Data::Plain(bytes) => {
                let file = bytes.as_slice();
                let start = usize::try_from(at).ok().filter(|&s| s <= file.len()).ok_or(ReadFailure::EndOfFile)?;
                take_printable(&file[start..], &mut need, out);
            }
            Data::Bgzf { file, gzi, id } => {
                let file = file.as_slice();
                // The last entry at or before `at` (bgzf_useek's search).
                let i = gzi.partition_point(|&(_, u)| u <= at).saturating_sub(1);
                let (mut offset, mut uoffset) = gzi[i];
                let mut skip = at - uoffset;
                while need > 0 {
                    if offset >= file.len() as u64 {
                        break;
                    }
                    let b = Block::parse(file, offset).map_err(|e| ReadFailure::Damaged(e.into()))?;
                    offset = b.next_offset();
                    let size = u64::from(b.uncompressed_size);
                    if skip >= size {
                        skip -= size;
                        uoffset += size;
                        continue;
                    }
                    if cache.file != *id || cache.offset != b.offset {
                        // Marked empty first: a failed inflate leaves no stale block.
                        cache.file = 0;
                        cache.data.resize(b.uncompressed_size as usize, 0);
                        DECOMPRESSOR
                            .with(|d| b.inflate_into(file, &mut d.borrow_mut(), &mut cache.data))
                            .map_err(|e| ReadFailure::Damaged(e.into()))?;
                        (cache.file, cache.offset) = (*id, b.offset);
                    }
                    take_printable(&cache.data[skip as usize..], &mut need, out);
                    skip = 0;
                    uoffset += size;
                }
                let _ = uoffset;
            }
            Data::Remote { object, gzi: None, .. } => {
                // Ranges of at least 64 KiB from `at` until enough printable
                // bytes are read (printable bytes taken range after range
                // are those taken from the whole).
                let mut pos = at;
                while need > 0 && pos < object.len() {
                    let n = need.saturating_mul(2).max(64 << 10).min(object.len() - pos);
                    let mut range = vec![0u8; n as usize];
                    object.read_range(pos, &mut range).map_err(|e| ReadFailure::Damaged(Error::from(e)))?;
                    take_printable(&range, &mut need, out);
                    pos += n;
                }
            }
            Data::Remote { object, gzi: Some(gzi), id } => {
                let i = gzi.partition_point(|&(_, u)| u <= at).saturating_sub(1);
                let (mut offset, uoffset) = gzi[i];
                let mut skip = at - uoffset;
                // Compressed bytes fetched from `window_at`, enough for
                // several blocks at a time.
                let (mut window, mut window_at) = (Vec::new(), 0u64);
                while need > 0 && offset < object.len() {
                    let in_window = offset.checked_sub(window_at).and_then(|rel| Block::parse(&window, rel).ok());
                    let b = match in_window {
                        Some(b) => b,
                        None => {
                            let n = (need.saturating_add(skip).max(1 << 18)).min(object.len() - offset);
                            window.resize(n as usize, 0);
                            object.read_range(offset, &mut window).map_err(|e| ReadFailure::Damaged(Error::from(e)))?;
                            window_at = offset;
                            Block::parse(&window, 0).map_err(|e| ReadFailure::Damaged(e.into()))?
                        }
                    };
                    offset = window_at + b.next_offset();
                    let size = u64::from(b.uncompressed_size);
                    if skip >= size {
                        skip -= size;
                        continue;
                    }
                    let at_file = window_at + b.offset;
                    if cache.file != *id || cache.offset != at_file {
                        cache.file = 0;
                        cache.data.resize(b.uncompressed_size as usize, 0);
                        DECOMPRESSOR
                            .with(|d| b.inflate_into(&window, &mut d.borrow_mut(), &mut cache.data))
                            .map_err(|e| ReadFailure::Damaged(e.into()))?;
                        (cache.file, cache.offset) = (*id, at_file);
                    }
                    take_printable(&cache.data[skip as usize..], &mut need, out);
                    skip = 0;
                }
            }
        }
        if need > 0 {
            return Err(ReadFailure::EndOfFile);
        }
        Ok(())
    }
}

/// Moves the printable bytes of `bytes` to `out` until `need` of them
/// have gone: a line at a time (a run of printable bytes copied whole).
fn take_printable(mut bytes: &[u8], need: &mut u64, out: &mut Vec<u8>) {
    while *need > 0 && !bytes.is_empty() {
        let window = &bytes[..bytes.len().min(*need as usize)];
        match window.iter().position(|&c| !is_graph(c)) {
            None => {
                out.extend_from_slice(window);
                *need -= window.len() as u64;
                bytes = &bytes[window.len()..];
            }
            Some(k) => {
                out.extend_from_slice(&window[..k]);
                *need -= k as u64;
                bytes = &bytes[k + 1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_bytes_skip_line_ends() {
        let mut out = Vec::new();
        let mut need = 7;
        take_printable(b"AC GT\r\nACGT\nAC", &mut need, &mut out);
        assert_eq!((out.as_slice(), need), (&b"ACGTACG"[..], 0));
        let mut need = 20;
        out.clear();
        take_printable(b"AC\nGT", &mut need, &mut out);
        assert_eq!((out.as_slice(), need), (&b"ACGT"[..], 16));
    }

    #[test]
    fn gzi_round_trips() {
        let blocks = [(0, 0), (100, 65280), (180, 130560)];
        let bytes = gzi_bytes(&blocks);
        assert_eq!(bytes.len(), 8 + 32);
        assert_eq!(read_gzi(&bytes).unwrap(), blocks);
        assert!(read_gzi(&bytes[..20]).is_err());
    }
}
