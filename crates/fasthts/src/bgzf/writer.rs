//! BGZF writing: blocks compressed in parallel, written in order.

use super::block::{EOF_MARKER, FOOTER_LEN, MAX_BLOCK_SIZE};
use super::VirtualOffset;
use libdeflater::{CompressionLvl, Compressor};
use rayon::prelude::*;
use std::cell::RefCell;
use std::io::{self, Write};

/// Uncompressed bytes per block, as htslib writes them (0xff00), leaving room
/// for incompressible data to fit a 64 KiB block.
pub const BLOCK_DATA_SIZE: usize = 0xff00;
/// Header of a block written by fasthts: gzip fixed header plus the BC subfield.
const HEADER_LEN: usize = 18;
/// Blocks compressed per parallel batch: 16 blocks keep two to eight threads
/// busy while holding only 2 MiB (input and output), so a sort at a small
/// `-m` stays within samtools' memory.
const BATCH_BLOCKS: usize = 16;
/// The compression level htslib uses when none is given (zlib's scale).
pub const DEFAULT_LEVEL: u32 = 6;

/// The libdeflate level htslib uses for a zlib-scale level 0–9 (its
/// `bgzf_compress` table): what reproduces samtools' bytes (CSI indexes).
pub fn htslib_libdeflate_level(zlib_level: u32) -> i32 {
    const TABLE: [i32; 10] = [0, 1, 2, 3, 5, 6, 7, 8, 10, 12];
    TABLE[zlib_level.min(9) as usize]
}

/// The libdeflate level fasthts uses for a zlib-scale level: htslib's,
/// except that the default level 6 uses libdeflate 6 instead of 7, which
/// measured 1.3× faster for output 1.1 % larger on generated BAM data
/// (`examples/deflate_levels`; the sort issue allows up to 2 % larger).
pub fn libdeflate_level(zlib_level: u32) -> i32 {
    match zlib_level {
        6 => 6,
        l => htslib_libdeflate_level(l),
    }
}

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, Compressor)>> = const { RefCell::new(None) };
}

/// Compresses `data` (at most [`BLOCK_DATA_SIZE`] bytes) into one BGZF block
/// at libdeflate `level` (0–12), replacing the contents of `out`.
pub fn compress_block(data: &[u8], level: i32, out: &mut Vec<u8>) {
    debug_assert!(data.len() <= BLOCK_DATA_SIZE);
    COMPRESSOR.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.as_ref().map(|(l, _)| *l) != Some(level) {
            let lvl = CompressionLvl::new(level.clamp(0, 12)).unwrap_or_default();
            *slot = Some((level, Compressor::new(lvl)));
        }
        let (_, c) = slot.as_mut().expect("compressor was just set");
        out.clear();
        out.resize(MAX_BLOCK_SIZE, 0);
        let room = MAX_BLOCK_SIZE - HEADER_LEN - FOOTER_LEN;
        let n = match c.deflate_compress(data, &mut out[HEADER_LEN..HEADER_LEN + room]) {
            Ok(n) => n,
            // Incompressible data: store it (level 0 never exceeds input + 5 bytes per 64 KiB).
            Err(_) => Compressor::new(CompressionLvl::new(0).expect("level 0 is valid"))
                .deflate_compress(data, &mut out[HEADER_LEN..HEADER_LEN + room])
                .expect("stored deflate of a BGZF-sized block fits a block"),
        };
        let total = HEADER_LEN + n + FOOTER_LEN;
        out.truncate(total);
        out[..HEADER_LEN].copy_from_slice(&[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0, 0]);
        out[16..18].copy_from_slice(&((total - 1) as u16).to_le_bytes());
        out[total - 8..total - 4].copy_from_slice(&libdeflater::crc32(data).to_le_bytes());
        out[total - 4..].copy_from_slice(&(data.len() as u32).to_le_bytes());
    })
}

/// Compresses a whole buffer into BGZF blocks followed by the EOF marker,
/// at libdeflate `level`.
pub fn compress_all(data: &[u8], level: i32) -> Vec<u8> {
    let mut w = BgzfWriter::with_libdeflate_level(Vec::new(), level);
    w.write_all(data).expect("writing to a Vec cannot fail");
    w.finish().expect("writing to a Vec cannot fail")
}

/// A BGZF writer that compresses batches of blocks on the rayon pool and
/// writes them in order. Output buffers are reused between batches.
pub struct BgzfWriter<W: Write> {
    inner: Option<W>,
    /// libdeflate level.
    level: i32,
    pending: Vec<u8>,
    compressed: Vec<Vec<u8>>,
    /// Compressed bytes written so far: the file offset of the next block.
    written: u64,
    /// Uncompressed bytes in the blocks written so far.
    flushed: u64,
    /// `(uncompressed start, compressed offset)` of recent blocks, when
    /// tracking virtual offsets for an index.
    block_log: Option<std::collections::VecDeque<(u64, u64)>>,
}

impl<W: Write> BgzfWriter<W> {
    /// A writer compressing at `level` (0–9 on zlib's scale, as samtools'
    /// `-l`; mapped to libdeflate levels by [`libdeflate_level`]; 6 is
    /// htslib's default).
    pub fn new(inner: W, level: u32) -> Self {
        Self::with_libdeflate_level(inner, libdeflate_level(level))
    }

    /// A writer compressing at libdeflate `level` (0–12).
    pub fn with_libdeflate_level(inner: W, level: i32) -> Self {
        BgzfWriter {
            inner: Some(inner),
            level,
            pending: Vec::with_capacity(BATCH_BLOCKS * BLOCK_DATA_SIZE),
            compressed: Vec::new(),
            written: 0,
            flushed: 0,
            block_log: None,
        }
    }

    /// Keeps the information needed by [`BgzfWriter::virtual_offset_of`].
    pub fn track_virtual_offsets(&mut self) {
        self.block_log.get_or_insert_with(Default::default);
    }

    /// Uncompressed bytes accepted so far (the position of the next byte
    /// written, in the uncompressed stream).
    pub fn uncompressed_position(&self) -> u64 {
        self.flushed + self.pending.len() as u64
    }

    /// The virtual offset of uncompressed position `pos`, in htslib's
    /// canonical form (the end of a block is the start of the next), once
    /// the block holding it has been written; `None` before that, or when
    /// tracking is off or `pos` lies in a block already forgotten.
    pub fn virtual_offset_of(&self, pos: u64) -> Option<VirtualOffset> {
        let log = self.block_log.as_ref()?;
        if pos == self.flushed {
            return VirtualOffset::new(self.written, 0);
        }
        if pos > self.flushed {
            return None;
        }
        let i = log.partition_point(|&(start, _)| start <= pos).checked_sub(1)?;
        let (start, offset) = log[i];
        VirtualOffset::new(offset, (pos - start) as u16)
    }

    /// Drops tracking information for blocks that end at or before `pos`.
    pub fn forget_before(&mut self, pos: u64) {
        if let Some(log) = self.block_log.as_mut() {
            while log.len() >= 2 && log[1].0 <= pos {
                log.pop_front();
            }
        }
    }

    /// Ends the current block here, so that what follows starts a new block
    /// (htslib does this after the BAM header).
    pub fn end_block(&mut self) -> io::Result<()> {
        self.flush_batch(true)
    }

    /// Compressed bytes written to the inner writer so far.
    pub fn compressed_offset(&self) -> u64 {
        self.written
    }

    /// Writes the EOF marker, flushes, and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_batch(true)?;
        let mut inner = self.inner.take().expect("finish is called once");
        inner.write_all(&EOF_MARKER)?;
        inner.flush()?;
        Ok(inner)
    }

    /// Compresses and writes whole blocks of `pending`; with `all`, the tail too.
    fn flush_batch(&mut self, all: bool) -> io::Result<()> {
        let whole = if all { self.pending.len() } else { self.pending.len() / BLOCK_DATA_SIZE * BLOCK_DATA_SIZE };
        if whole == 0 {
            return Ok(());
        }
        let n_blocks = whole.div_ceil(BLOCK_DATA_SIZE);
        if self.compressed.len() < n_blocks {
            self.compressed.resize_with(n_blocks, Vec::new);
        }
        let level = self.level;
        self.pending[..whole]
            .par_chunks(BLOCK_DATA_SIZE)
            .zip(self.compressed[..n_blocks].par_iter_mut())
            .for_each(|(data, out)| compress_block(data, level, out));
        let inner = self.inner.as_mut().expect("writer used after finish");
        for (i, block) in self.compressed[..n_blocks].iter().enumerate() {
            inner.write_all(block)?;
            if let Some(log) = self.block_log.as_mut() {
                log.push_back((self.flushed + (i * BLOCK_DATA_SIZE) as u64, self.written));
            }
            self.written += block.len() as u64;
        }
        self.flushed += whole as u64;
        self.pending.drain(..whole);
        Ok(())
    }
}

impl<W: Write> Write for BgzfWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = BATCH_BLOCKS * BLOCK_DATA_SIZE - self.pending.len();
        let n = buf.len().min(room);
        self.pending.extend_from_slice(&buf[..n]);
        if self.pending.len() == BATCH_BLOCKS * BLOCK_DATA_SIZE {
            self.flush_batch(false)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_batch(true)?;
        self.inner.as_mut().expect("writer used after finish").flush()
    }
}

impl<W: Write> Drop for BgzfWriter<W> {
    fn drop(&mut self) {
        // Deliberately nothing: a writer dropped without `finish` leaves an
        // output without EOF marker, which readers flag as truncated.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgzf::block::{has_eof_marker, Block};

    #[test]
    fn blocks_are_valid_and_bounded() {
        // Incompressible input exercises the stored fallback.
        let mut x = 1u64;
        let data: Vec<u8> = (0..5 * BLOCK_DATA_SIZE + 17)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        for level in [0, 1, 6, 12] {
            let out = compress_all(&data, level);
            assert!(has_eof_marker(&out));
            let mut off = 0;
            let mut n = 0;
            while off < out.len() as u64 {
                let b = Block::parse(&out, off).unwrap();
                assert!(b.size as usize <= MAX_BLOCK_SIZE);
                off = b.next_offset();
                n += 1;
            }
            assert_eq!(n, 6 + 1);
            assert_eq!(crate::bgzf::decompress_all(&out).unwrap(), data);
        }
    }

    #[test]
    fn tracked_virtual_offsets_point_at_the_right_bytes() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut w = BgzfWriter::new(Vec::new(), 1);
        w.track_virtual_offsets();
        let mut marks = Vec::new();
        for (i, chunk) in data.chunks(7_001).enumerate() {
            if i == 3 {
                w.end_block().unwrap();
            }
            marks.push(w.uncompressed_position());
            w.write_all(chunk).unwrap();
        }
        w.end_block().unwrap();
        let end = w.uncompressed_position();
        let voffsets: Vec<VirtualOffset> = marks.iter().map(|&p| w.virtual_offset_of(p).unwrap()).collect();
        let end_voffset = w.virtual_offset_of(end).unwrap();
        let file = w.finish().unwrap();
        for (&p, &v) in marks.iter().zip(&voffsets) {
            let mut r = crate::bgzf::BlockReader::new(&file, v).unwrap();
            assert!(r.fill(10).unwrap() >= 10);
            assert_eq!(&r.available()[..10], &data[p as usize..p as usize + 10]);
        }
        assert_eq!(end_voffset, VirtualOffset::new(file.len() as u64 - 28, 0).unwrap());
    }

    #[test]
    fn empty_input_is_just_the_eof_marker() {
        assert_eq!(compress_all(&[], 6), EOF_MARKER);
    }
}
