//! BGZF writing: blocks compressed in parallel, written in order.

use super::block::{EOF_MARKER, FOOTER_LEN, HEADER_LEN, MAX_BLOCK_SIZE};
use super::VirtualOffset;
use libdeflater::{CompressionLvl, Compressor};
use rayon::prelude::*;
use std::cell::RefCell;
use std::io::{self, Write};
use std::sync::mpsc;

/// Uncompressed bytes per block, as htslib writes them (0xff00), leaving room
/// for incompressible data to fit a 64 KiB block.
pub const BLOCK_DATA_SIZE: usize = 0xff00;
/// Blocks compressed per parallel batch: 16 blocks keep two to eight threads
/// busy while holding only 2 MiB (input and output) per batch in flight
/// (threads + 1 of them), so a sort at a small `-m` stays within samtools'
/// memory.
const BATCH_BLOCKS: usize = 16;
/// Uncompressed bytes per batch.
const BATCH_BYTES: usize = BATCH_BLOCKS * BLOCK_DATA_SIZE;
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
    out.clear();
    out.resize(MAX_BLOCK_SIZE, 0);
    let n = compress_block_into(data, level, out);
    out.truncate(n);
}

/// [`compress_block`] into the first bytes of `out` (at least
/// [`MAX_BLOCK_SIZE`] long); returns the block's length. Buffers reused
/// this way are not cleared for every block (64 KiB of memset each).
fn compress_block_into(data: &[u8], level: i32, out: &mut [u8]) -> usize {
    debug_assert!(data.len() <= BLOCK_DATA_SIZE);
    let out = &mut out[..MAX_BLOCK_SIZE];
    COMPRESSOR.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.as_ref().map(|(l, _)| *l) != Some(level) {
            let lvl = CompressionLvl::new(level.clamp(0, 12)).unwrap_or_default();
            *slot = Some((level, Compressor::new(lvl)));
        }
        let (_, c) = slot.as_mut().expect("compressor was just set");
        let room = MAX_BLOCK_SIZE - HEADER_LEN - FOOTER_LEN;
        let n = match c.deflate_compress(data, &mut out[HEADER_LEN..HEADER_LEN + room]) {
            Ok(n) => n,
            // Incompressible data: store it (level 0 never exceeds input + 5 bytes per 64 KiB).
            Err(_) => Compressor::new(CompressionLvl::new(0).expect("level 0 is valid"))
                .deflate_compress(data, &mut out[HEADER_LEN..HEADER_LEN + room])
                .expect("stored deflate of a BGZF-sized block fits a block"),
        };
        let total = HEADER_LEN + n + FOOTER_LEN;
        out[..HEADER_LEN].copy_from_slice(&[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0, 0]);
        out[16..18].copy_from_slice(&((total - 1) as u16).to_le_bytes());
        out[total - 8..total - 4].copy_from_slice(&libdeflater::crc32(data).to_le_bytes());
        out[total - 4..total].copy_from_slice(&(data.len() as u32).to_le_bytes());
        total
    })
}

/// Compresses a whole buffer into BGZF blocks followed by the EOF marker,
/// at libdeflate `level`.
pub fn compress_all(data: &[u8], level: i32) -> Vec<u8> {
    let mut w = BgzfWriter::with_libdeflate_level(Vec::new(), level);
    w.write_all(data).expect("writing to a Vec cannot fail");
    w.finish().expect("writing to a Vec cannot fail")
}

/// How a writer compresses its blocks.
#[derive(Clone, Copy, Debug)]
enum Deflater {
    /// The bundled libdeflate at this level (0–12).
    Libdeflate(i32),
    /// The system's zlib as htslib uses it, at this zlib level (0–9).
    HtslibZlib(u32),
}

/// A batch of the uncompressed stream and its compressed blocks.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    /// Block buffers of [`MAX_BLOCK_SIZE`] bytes, each holding a block of
    /// the length in `lens` at its start.
    blocks: Vec<Vec<u8>>,
    lens: Vec<usize>,
}

impl Batch {
    fn n_blocks(&self) -> usize {
        self.data.len().div_ceil(BLOCK_DATA_SIZE)
    }

    fn compress(&mut self, deflater: Deflater) {
        let n = self.n_blocks();
        if self.blocks.len() < n {
            self.blocks.resize_with(n, || vec![0; MAX_BLOCK_SIZE]);
            self.lens.resize(n, 0);
        }
        self.data.par_chunks(BLOCK_DATA_SIZE).zip(self.blocks[..n].par_iter_mut()).zip(self.lens[..n].par_iter_mut()).for_each(
            |((data, out), len)| {
                *len = match deflater {
                    Deflater::Libdeflate(level) => compress_block_into(data, level, out),
                    Deflater::HtslibZlib(level) => super::system_zlib::compress_block_as_htslib_zlib(data, level, out)
                        .unwrap_or_else(|| compress_block_into(data, htslib_libdeflate_level(level), out)),
                }
            },
        );
    }

    /// The compressed blocks, in order.
    fn compressed(&self) -> impl Iterator<Item = &[u8]> {
        self.blocks.iter().zip(&self.lens).take(self.n_blocks()).map(|(b, &len)| &b[..len])
    }
}

/// A BGZF writer that compresses batches of blocks on the rayon pool and
/// writes them in order.
///
/// Compression runs in the background: a full batch is handed to the pool
/// and the caller goes on filling the next one, writing finished batches
/// (in order) as it goes, so filling and writing overlap compression
/// instead of leaving the other threads idle. At most a few batches are in
/// flight; buffers are reused.
pub struct BgzfWriter<W: Write> {
    inner: Option<W>,
    /// How blocks are compressed.
    deflater: Deflater,
    /// The pool compressing the batches (None: rayon's current one).
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
    /// The batch being filled.
    pending: Vec<u8>,
    /// Batches handed to the pool, oldest first; each answers on its channel.
    in_flight: std::collections::VecDeque<mpsc::Receiver<Batch>>,
    /// Most batches in flight before the caller waits for the oldest.
    max_in_flight: usize,
    /// Written batches, for reuse.
    spare: Vec<Batch>,
    /// Compressed bytes written so far: the file offset of the next block.
    written: u64,
    /// Uncompressed bytes in the blocks written so far.
    flushed: u64,
    /// Uncompressed bytes handed to the pool (written or in flight).
    submitted: u64,
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
            deflater: Deflater::Libdeflate(level),
            pool: None,
            pending: Vec::with_capacity(BATCH_BYTES),
            in_flight: Default::default(),
            // One batch per thread compressing, one more being written.
            max_in_flight: rayon::current_num_threads() + 1,
            spare: Vec::new(),
            written: 0,
            flushed: 0,
            submitted: 0,
            block_log: None,
        }
    }

    /// A writer compressing each block as an htslib built without
    /// libdeflate does at zlib `level` (0–9), with the system's zlib: the
    /// bytes pysam writes (see `system_zlib`; the bundled libdeflate when
    /// there is no system zlib). Slower than [`BgzfWriter::new`].
    pub fn as_htslib_with_zlib(inner: W, level: u32) -> Self {
        let mut w = Self::with_libdeflate_level(inner, 0);
        w.deflater = Deflater::HtslibZlib(level.min(9));
        w
    }

    /// Compresses on `pool` instead of rayon's current pool (a writer used
    /// from outside any pool, as a Python binding's).
    pub fn on_pool(mut self, pool: std::sync::Arc<rayon::ThreadPool>) -> Self {
        self.max_in_flight = pool.current_num_threads() + 1;
        self.pool = Some(pool);
        self
    }

    /// Writes `record` (a BAM record with its `block_size`) as htslib's
    /// `bam_write1` does: when it does not fit the rest of the current
    /// block, that block ends first, so records start blocks rather than
    /// straddle them (a record larger than a block still spans several).
    pub fn write_unsplit(&mut self, record: &[u8]) -> io::Result<()> {
        let in_block = self.pending.len() % BLOCK_DATA_SIZE;
        if in_block > 0 && in_block + record.len() > BLOCK_DATA_SIZE {
            // Ending the batch here ends its last block here.
            self.submit();
            while self.in_flight.len() >= self.max_in_flight {
                self.write_oldest()?;
            }
        }
        self.write_all(record)
    }

    /// Keeps the information needed by [`BgzfWriter::virtual_offset_of`].
    pub fn track_virtual_offsets(&mut self) {
        self.block_log.get_or_insert_with(Default::default);
    }

    /// Uncompressed bytes accepted so far (the position of the next byte
    /// written, in the uncompressed stream).
    pub fn uncompressed_position(&self) -> u64 {
        self.submitted + self.pending.len() as u64
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
    /// (htslib does this after the BAM header), and writes everything
    /// accepted so far to the inner writer.
    pub fn end_block(&mut self) -> io::Result<()> {
        self.submit();
        while !self.in_flight.is_empty() {
            self.write_oldest()?;
        }
        Ok(())
    }

    /// Compressed bytes written to the inner writer so far.
    pub fn compressed_offset(&self) -> u64 {
        self.written
    }

    /// Writes the EOF marker, flushes, and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.end_block()?;
        let mut inner = self.inner.take().expect("finish is called once");
        inner.write_all(&EOF_MARKER)?;
        inner.flush()?;
        Ok(inner)
    }

    /// Hands the pending bytes (if any) to the pool as one batch.
    fn submit(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut batch = self.spare.pop().unwrap_or_default();
        std::mem::swap(&mut batch.data, &mut self.pending);
        self.pending.clear();
        if self.pending.capacity() < BATCH_BYTES {
            self.pending.reserve_exact(BATCH_BYTES);
        }
        self.submitted += batch.data.len() as u64;
        let (tx, rx) = mpsc::sync_channel(1);
        let deflater = self.deflater;
        let job = move || {
            batch.compress(deflater);
            let _ = tx.send(batch);
        };
        match &self.pool {
            Some(pool) => pool.spawn(job),
            None => rayon::spawn(job),
        }
        self.in_flight.push_back(rx);
    }

    /// Waits for the oldest batch in flight (running pool work meanwhile:
    /// on a pool thread, the batch may be queued behind this very caller)
    /// and writes its blocks.
    fn write_oldest(&mut self) -> io::Result<()> {
        let rx = self.in_flight.pop_front().expect("a batch is in flight");
        let batch = crate::pool::recv_helping(&rx);
        let inner = self.inner.as_mut().expect("writer used after finish");
        for (i, block) in batch.compressed().enumerate() {
            inner.write_all(block)?;
            if let Some(log) = self.block_log.as_mut() {
                log.push_back((self.flushed + (i * BLOCK_DATA_SIZE) as u64, self.written));
            }
            self.written += block.len() as u64;
        }
        self.flushed += batch.data.len() as u64;
        self.spare.push(batch);
        Ok(())
    }
}

impl<W: Write> Write for BgzfWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = BATCH_BYTES - self.pending.len();
        let n = buf.len().min(room);
        self.pending.extend_from_slice(&buf[..n]);
        if self.pending.len() == BATCH_BYTES {
            self.submit();
            while self.in_flight.len() >= self.max_in_flight {
                self.write_oldest()?;
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.end_block()?;
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
    fn same_bytes_on_one_thread_and_many() {
        // Enough batches to fill the queue of batches in flight; on one
        // thread the writer itself must run the queued compression.
        let data: Vec<u8> = (0..40 * BLOCK_DATA_SIZE as u32 + 999).map(|i| (i % 97 + i / 4099 % 7) as u8).collect();
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut w = BgzfWriter::new(Vec::new(), 6);
                for chunk in data.chunks(10_007) {
                    w.write_all(chunk).unwrap();
                }
                w.finish().unwrap()
            })
        };
        let one = on(1);
        assert_eq!(crate::bgzf::decompress_all(&one).unwrap(), data);
        assert!(one == on(4), "output depends on the thread count");
        assert!(one == compress_all(&data, libdeflate_level(6)), "pool and global-pool outputs differ");
    }

    #[test]
    fn unsplit_records_start_blocks_and_zlib_output_reads_back() {
        // Records of 1,000 to 7,000 bytes, and one larger than a block.
        let records: Vec<Vec<u8>> = (0..200u32)
            .map(|i| {
                let len = if i == 77 { 3 * BLOCK_DATA_SIZE / 2 } else { 1000 + (i as usize * 37) % 6000 };
                (0..len).map(|j| (j as u32 * 31 + i) as u8 % 7 + b'A').collect()
            })
            .collect();
        let data: Vec<u8> = records.concat();
        for level in [0, 1, 6] {
            let on = |threads| {
                let pool = std::sync::Arc::new(rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap());
                let mut w = BgzfWriter::as_htslib_with_zlib(Vec::new(), level).on_pool(pool);
                for r in &records {
                    w.write_unsplit(r).unwrap();
                }
                w.finish().unwrap()
            };
            let out = on(1);
            assert!(out == on(3), "output depends on the thread count");
            assert_eq!(crate::bgzf::decompress_all(&out).unwrap(), data);
            // A block starts with a record, unless the one before is full
            // (the large record spans blocks).
            let starts: std::collections::HashSet<usize> =
                records.iter().scan(0, |at, r| Some(std::mem::replace(at, *at + r.len()))).collect();
            let (mut off, mut pos, mut before) = (0u64, 0usize, 0usize);
            while off < out.len() as u64 {
                let b = Block::parse(&out, off).unwrap();
                let n = b.uncompressed_size as usize;
                assert!(n == 0 || before == BLOCK_DATA_SIZE || starts.contains(&pos), "a block starts inside a record at {pos}");
                (pos, before, off) = (pos + n, n, b.next_offset());
            }
        }
    }

    #[test]
    fn empty_input_is_just_the_eof_marker() {
        assert_eq!(compress_all(&[], 6), EOF_MARKER);
    }
}
