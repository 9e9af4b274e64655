//! Sequential reading of a BGZF file's uncompressed stream, inflating blocks
//! in batches on all threads.

use super::block::Block;
use super::block_map::BlockMap;
use super::{BgzfError, VirtualOffset};
use libdeflater::Decompressor;
use rayon::prelude::*;
use std::cell::RefCell;

/// Uncompressed bytes gathered per refill, unless a record needs more. Small
/// enough that a batch stays in cache between inflate and use (measured:
/// 4 MiB batches cost 8% more CPU than 256 KiB or 1 MiB ones in a flagstat
/// pass), large enough (16 blocks) that threads splitting a batch wait
/// little for each other at its end.
pub const DEFAULT_BATCH_BYTES: usize = 1 << 20;

thread_local! {
    // One decompressor per thread: libdeflate's state is not shareable and
    // is too large to create per block.
    static DECOMPRESSOR: RefCell<Decompressor> = RefCell::new(Decompressor::new());
}

/// Inflates `blocks` (consecutive or not) of `file` into `out`, which must be
/// exactly the sum of their uncompressed sizes, in parallel on the current
/// rayon pool. On failure the error of the earliest bad block is returned,
/// whatever the thread count.
pub fn inflate_blocks(file: &[u8], blocks: &[Block], out: &mut [u8]) -> Result<(), BgzfError> {
    if blocks.len() <= 1 || crate::cancel::requested() {
        return inflate_blocks_here(file, blocks, out);
    }
    let mut slices = Vec::with_capacity(blocks.len());
    let mut rest = out;
    for b in blocks {
        let (head, tail) = rest.split_at_mut(b.uncompressed_size as usize);
        slices.push(head);
        rest = tail;
    }
    let first_error = blocks
        .par_iter()
        .zip(slices)
        .filter_map(|(b, out)| DECOMPRESSOR.with(|d| b.inflate_into(file, &mut d.borrow_mut(), out)).err())
        .min_by_key(BgzfError::offset);
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// As [`inflate_blocks`], on the calling thread.
pub fn inflate_blocks_here(file: &[u8], blocks: &[Block], out: &mut [u8]) -> Result<(), BgzfError> {
    if crate::cancel::requested() {
        // The job is being cancelled (crate::cancel); the error is not shown.
        return Err(BgzfError::Corrupt { offset: blocks.first().map_or(0, |b| b.offset), reason: "cancelled" });
    }
    DECOMPRESSOR.with(|d| {
        let d = &mut d.borrow_mut();
        let mut rest = out;
        for b in blocks {
            let (head, tail) = rest.split_at_mut(b.uncompressed_size as usize);
            b.inflate_into(file, d, head)?;
            rest = tail;
        }
        Ok(())
    })
}

/// Inflates a whole BGZF byte buffer (all its blocks, in order).
pub fn decompress_all(file: &[u8]) -> Result<Vec<u8>, BgzfError> {
    let mut blocks = Vec::new();
    let mut offset = 0u64;
    let mut total = 0usize;
    while offset < file.len() as u64 {
        let b = Block::parse(file, offset)?;
        offset = b.next_offset();
        total += b.uncompressed_size as usize;
        blocks.push(b);
    }
    let mut out = vec![0; total];
    inflate_blocks(file, &blocks, &mut out)?;
    Ok(out)
}

/// Reads the uncompressed stream of a BGZF file from a virtual offset,
/// refilling a contiguous buffer with batches of blocks inflated in parallel.
///
/// The buffer is reused: steady-state reading allocates nothing.
pub struct BlockReader<'a> {
    file: &'a [u8],
    next_block: u64,
    /// Blocks starting at or after this offset are not loaded.
    limit: u64,
    /// Past this offset, blocks are loaded one at a time (see `set_soft_limit`).
    soft_limit: u64,
    buf: Vec<u8>,
    filled: usize,
    pos: usize,
    /// Which block each buffered byte came from.
    map: BlockMap,
    blocks: Vec<Block>,
    batch_bytes: usize,
    /// Inflate batches on the rayon pool (true) or on the calling thread.
    parallel: bool,
    /// Compressed offset of the first block this reader read.
    origin: u64,
    /// When set, pages of `file` before this offset that are no longer
    /// needed are released every `RELEASE_STEP` bytes (see `release_read_pages`).
    released: Option<u64>,
}

impl<'a> BlockReader<'a> {
    /// A reader positioned at `start` within `file` (the whole file).
    pub fn new(file: &'a [u8], start: VirtualOffset) -> Result<Self, BgzfError> {
        Self::with_batch_bytes(file, start, DEFAULT_BATCH_BYTES)
    }

    /// As [`BlockReader::new`], with the number of uncompressed bytes per refill.
    pub fn with_batch_bytes(file: &'a [u8], start: VirtualOffset, batch_bytes: usize) -> Result<Self, BgzfError> {
        let mut r = BlockReader {
            file,
            next_block: start.compressed(),
            limit: file.len() as u64,
            soft_limit: u64::MAX,
            buf: Vec::new(),
            filled: 0,
            pos: 0,
            map: BlockMap::new(start.compressed()),
            blocks: Vec::new(),
            batch_bytes: batch_bytes.max(1),
            released: None,
            origin: start.compressed(),
            parallel: true,
        };
        let skip = usize::from(start.uncompressed());
        if skip > 0 {
            let offset = start.compressed();
            let b = Block::parse(file, offset)?;
            if skip > b.uncompressed_size as usize {
                return Err(BgzfError::Corrupt { offset, reason: "virtual offset beyond the end of its block" });
            }
            // Only the block holding the start, on this thread: the batch
            // size, and whether batches are inflated on the pool (set after
            // construction, see `set_parallel`), apply from the next load.
            let batch_bytes = std::mem::replace(&mut r.batch_bytes, 1);
            r.load_batch(skip)?;
            r.batch_bytes = batch_bytes;
            r.pos = skip;
        }
        Ok(r)
    }

    /// Releases the pages of the file behind the reader as it advances.
    ///
    /// # Safety
    ///
    /// The reader's `file` must be a read-only, file-backed memory map (see
    /// [`crate::memory::release_mapped_pages`]).
    pub unsafe fn release_read_pages(&mut self) {
        // From the first block this reader touched: a reader made at a
        // virtual offset inside a block has already loaded it.
        self.released = Some(self.origin);
    }

    /// Inflates on the calling thread only: for readers that are themselves
    /// run in parallel (one per region), where nested parallelism only adds
    /// scheduling and cache traffic.
    pub fn set_parallel(&mut self, parallel: bool) {
        self.parallel = parallel;
    }

    /// Loads about `bytes` uncompressed bytes per refill from now on (see
    /// [`BlockReader::with_batch_bytes`]).
    pub fn set_batch_bytes(&mut self, bytes: usize) {
        self.batch_bytes = bytes.max(1);
    }

    /// Stops loading blocks that start at or after `offset` (a compressed
    /// file offset). Data already loaded stays readable.
    pub fn set_limit(&mut self, offset: u64) {
        self.limit = offset.min(self.file.len() as u64);
    }

    /// Loads blocks that start at or after `offset` one at a time, as they
    /// are needed, instead of in batches: for a reader whose data probably
    /// ends near `offset` but may run on.
    pub fn set_soft_limit(&mut self, offset: u64) {
        self.soft_limit = offset;
    }

    /// Moves the cursor to `v` (forwards or back) when the block holding it
    /// is loaded and still buffered; false, and the reader unchanged,
    /// otherwise. The bytes read from there are those a reader made at `v`
    /// would read: a reader of many small regions in a row (the references
    /// of a draft assembly, a few records each, many in one block) then
    /// inflates each block once, not once per region.
    pub fn seek_loaded(&mut self, v: VirtualOffset) -> bool {
        match self.map.position_of(v) {
            Some(p) if p <= self.filled => {
                self.pos = p;
                true
            }
            _ => false,
        }
    }

    /// How many unread loaded bytes lie before `v`: `Some` when the block
    /// holding `v` is loaded and `v` is at or past the cursor, `None` when
    /// it is not loaded (yet, or any more).
    pub fn available_before(&self, v: VirtualOffset) -> Option<usize> {
        let p = self.map.position_of(v)?;
        (self.pos..=self.filled).contains(&p).then(|| p - self.pos)
    }

    /// The unread bytes currently loaded.
    #[inline]
    pub fn available(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }

    /// Marks `n` loaded bytes as read.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        debug_assert!(self.pos + n <= self.filled);
        self.pos += n;
    }

    /// Makes at least `n` unread bytes available if the file has them; returns
    /// how many are available (fewer than `n` only at the end of the data).
    pub fn fill(&mut self, n: usize) -> Result<usize, BgzfError> {
        while self.filled - self.pos < n {
            if !self.load_batch(n - (self.filled - self.pos))? {
                break;
            }
        }
        Ok(self.filled - self.pos)
    }

    /// True when every block up to the limit has been loaded and read.
    pub fn at_end(&self) -> bool {
        self.pos == self.filled && self.next_block >= self.limit
    }

    /// Virtual offset of the next unread byte, in htslib's canonical form (a
    /// position at the end of a block is the start of the next block).
    pub fn virtual_offset(&self) -> VirtualOffset {
        self.virtual_offset_at(0)
    }

    /// Virtual offset of the unread byte `ahead` bytes past the cursor.
    pub fn virtual_offset_at(&self, ahead: usize) -> VirtualOffset {
        self.map.virtual_offset(self.pos + ahead)
    }

    /// Loads at least one more non-empty block (more, up to the batch size, or
    /// `need` bytes if that is larger). Returns false at the end of the data.
    fn load_batch(&mut self, need: usize) -> Result<bool, BgzfError> {
        self.compact();
        let want = need.max(self.batch_bytes);
        self.blocks.clear();
        let mut total = 0usize;
        while total < want && self.next_block < self.limit {
            if self.next_block >= self.soft_limit && total >= need {
                break;
            }
            let b = Block::parse(self.file, self.next_block)?;
            self.next_block = b.next_offset();
            if b.uncompressed_size == 0 {
                // Nothing to read, but damage to an empty block (the EOF
                // marker) is still damage: htslib inflates it and checks
                // its CRC too.
                inflate_blocks_here(self.file, &[b], &mut [])?;
                continue;
            }
            total += b.uncompressed_size as usize;
            self.blocks.push(b);
        }
        if total == 0 {
            return Ok(false);
        }
        let end = self.filled + total;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        if self.parallel {
            inflate_blocks(self.file, &self.blocks, &mut self.buf[self.filled..end])?;
        } else {
            inflate_blocks_here(self.file, &self.blocks, &mut self.buf[self.filled..end])?;
        }
        if let Some(released) = self.released {
            // Inflated blocks' compressed bytes are never read again.
            if self.next_block >= released + crate::memory::RELEASE_STEP {
                // SAFETY: `released` is set only after `release_read_pages`,
                // whose caller vouched for a read-only file mapping.
                let released = unsafe { crate::memory::release_mapped_pages(self.file, released, self.next_block) };
                self.released = Some(released);
            }
        }
        let mut start = self.filled as isize;
        for b in &self.blocks {
            self.map.push(b, start);
            start += b.uncompressed_size as isize;
        }
        self.filled = end;
        Ok(true)
    }

    /// Moves unread bytes to the front of the buffer.
    fn compact(&mut self) {
        if self.pos == 0 {
            return;
        }
        let shift = self.pos;
        self.buf.copy_within(shift..self.filled, 0);
        self.filled -= shift;
        self.pos = 0;
        self.map.keep_from(shift, -(shift as isize));
    }
}

impl Drop for BlockReader<'_> {
    fn drop(&mut self) {
        // A reader that loaded nothing (one made for a region found empty)
        // touched no page: no system call for it.
        if self.released.is_some() && self.next_block > self.origin {
            // Everything this reader mapped, with what faults at its two ends
            // mapped of the bytes around it: readers of many regions would
            // otherwise each leave up to 128 KiB mapped.
            let from = self.origin.saturating_sub(crate::memory::FAULT_AROUND);
            // SAFETY: as in `load_batch`.
            unsafe { crate::memory::release_mapped_pages(self.file, from, self.next_block.saturating_add(crate::memory::FAULT_AROUND)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgzf::writer::compress_all;

    fn sample(len: usize) -> Vec<u8> {
        let mut x = 0x9e3779b97f4a7c15u64;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Compressible but not trivially so.
                if i % 3 == 0 {
                    b'A' + (x % 4) as u8
                } else {
                    (x >> 24) as u8
                }
            })
            .collect()
    }

    #[test]
    fn roundtrip_through_reader_in_small_batches() {
        let data = sample(300_000);
        let bgzf = compress_all(&data, 1);
        assert_eq!(decompress_all(&bgzf).unwrap(), data);
        for batch in [1, 1000, 70_000, 1 << 22] {
            let mut r = BlockReader::with_batch_bytes(&bgzf, VirtualOffset::default(), batch).unwrap();
            let mut got = Vec::new();
            loop {
                let n = r.fill(12345).unwrap();
                if n == 0 {
                    break;
                }
                let take = n.min(12345);
                got.extend_from_slice(&r.available()[..take]);
                r.consume(take);
            }
            assert!(r.at_end());
            assert_eq!(got, data);
        }
    }

    #[test]
    fn virtual_offsets_are_canonical_and_seekable() {
        let data = sample(200_000);
        let bgzf = compress_all(&data, 1);
        let mut r = BlockReader::with_batch_bytes(&bgzf, VirtualOffset::default(), 100).unwrap();
        // Walk in steps, record (voffset, position), then seek to each.
        let mut marks = Vec::new();
        let mut pos = 0usize;
        while r.fill(7919).unwrap() >= 7919 {
            marks.push((r.virtual_offset(), pos));
            r.consume(7919);
            pos += 7919;
        }
        let at_end = r.virtual_offset();
        r.consume(r.available().len());
        assert!(at_end.uncompressed() < 65535);
        for (v, p) in marks {
            let mut s = BlockReader::new(&bgzf, v).unwrap();
            // Only the block holding the start is loaded before the first
            // fill, whatever the batch size or parallelism set afterwards.
            let loaded = Block::parse(&bgzf, v.compressed()).unwrap().uncompressed_size as usize - usize::from(v.uncompressed());
            assert!(v.uncompressed() == 0 || s.available().len() == loaded, "seek to {v}");
            assert!(s.fill(10).unwrap() >= 10);
            assert_eq!(&s.available()[..10], &data[p..p + 10], "seek to {v}");
            // Canonical: never at the end of a block.
            let b = Block::parse(&bgzf, v.compressed()).unwrap();
            assert!(u32::from(v.uncompressed()) < b.uncompressed_size);
        }
    }

    #[test]
    fn damaged_empty_blocks_are_errors() {
        let data = sample(1000);
        let good = compress_all(&data, 1);
        let eof = good.len() - crate::bgzf::EOF_MARKER.len();
        // Deflate data, CRC32 and XLEN of the EOF marker block.
        for at in [18, 20, 10] {
            let mut bad = good.clone();
            bad[eof + at] ^= 1;
            let mut r = BlockReader::new(&bad, VirtualOffset::default()).unwrap();
            let mut failed = false;
            for _ in 0..3 {
                match r.fill(1 << 20) {
                    Ok(n) => r.consume(n),
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            assert!(failed, "damage at EOF block byte {at} not detected");
        }
    }

    #[test]
    fn corrupt_block_reports_earliest_offset() {
        let data = sample(400_000);
        let mut bgzf = compress_all(&data, 1);
        // Corrupt the deflate data of the second and third blocks.
        let b0 = Block::parse(&bgzf, 0).unwrap();
        let b1 = Block::parse(&bgzf, b0.next_offset()).unwrap();
        let b2 = Block::parse(&bgzf, b1.next_offset()).unwrap();
        bgzf[(b1.offset + 40) as usize] ^= 0x55;
        bgzf[(b2.offset + 40) as usize] ^= 0x55;
        let err = decompress_all(&bgzf).unwrap_err();
        assert_eq!(err.offset(), b1.offset);
        // Truncation names the offset of the cut block.
        let cut = &bgzf[..(b2.offset + 10) as usize];
        let err = BlockReader::new(cut, VirtualOffset::from(b2.offset << 16)).unwrap().fill(1).unwrap_err();
        assert!(matches!(err, BgzfError::Truncated { offset } if offset == b2.offset));
    }
}
