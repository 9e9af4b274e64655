//! A whole BGZF file read with inflate and use overlapped.
//!
//! A pull reader ([`super::BlockReader`]) inflates a batch on all threads,
//! then hands it out to be used on one, leaving the other threads idle
//! meanwhile. [`inflate_ahead`] instead hands out batch *k* while jobs on
//! the pool inflate the next few batches, one job per batch: no thread
//! waits for another at a batch end, and a sequential pass over a file
//! runs near the inflate bound. Data a batch's user leaves unread (a
//! record cut by the batch's end) is carried over to the front of the
//! next batch.

use super::{inflate_blocks_here, BgzfError, Block, BlockMap, VirtualOffset, DEFAULT_BATCH_BYTES};
use std::sync::mpsc;

/// Room kept at the front of each buffer for the partial record carried over
/// from the previous batch; larger tails (long reads) are handled by moving
/// the data.
const CARRY_ROOM: usize = 64 << 10;
/// Uncompressed bytes per inflating job. Small, because up to threads +
/// `LOOK_AHEAD` + 1 batches are held at once: a sort at `-m 64M` must stay
/// within samtools' peak memory (152-156 MB on the bench input; 1 MiB
/// batches put fasthts at 157.5 MB, 256 KiB ones at 149 MB).
const JOB_BATCH_BYTES: usize = 128 << 10;
/// Batches inflated ahead of the walk beyond one per thread. The walker
/// waits whenever the batch it needs is still being inflated by another
/// thread and it has run every queued job; more, smaller batches in the
/// same memory make that rarer and shorter (flagstat -@2 without an index,
/// 7 alternations: 6 x 256 KiB 2.148 s, 14 x 128 KiB 2.064 s, 30 x 64 KiB
/// 2.086 s, 14 x 256 KiB 2.091 s).
const LOOK_AHEAD: u64 = 14;

/// A batch of inflated blocks with the map from buffer positions back to
/// virtual offsets, handed out by [`inflate_ahead`].
pub struct AheadBatch {
    buf: Vec<u8>,
    /// Unread data is `buf[pos..filled]`.
    pos: usize,
    filled: usize,
    map: BlockMap,
}

impl AheadBatch {
    fn new(end_offset: u64) -> Self {
        AheadBatch { buf: Vec::new(), pos: 0, filled: 0, map: BlockMap::new(end_offset) }
    }

    /// The batch's data, read and unread: positions in it are those
    /// [`AheadBatch::pos`] and [`AheadBatch::virtual_offset`] speak of.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buf[..self.filled]
    }

    /// Where the unread data begins.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Marks the data before `pos` read (at most [`AheadBatch::data`]'s
    /// length); what follows is carried over to the next batch.
    #[inline]
    pub fn set_pos(&mut self, pos: usize) {
        debug_assert!(pos <= self.filled);
        self.pos = pos;
    }

    /// The virtual offset of position `p` of the data.
    #[inline]
    pub fn virtual_offset(&self, p: usize) -> VirtualOffset {
        self.map.virtual_offset(p)
    }
}

/// What ended an [`inflate_ahead`] before the end of the file.
#[derive(Debug)]
pub enum AheadError<E> {
    /// Damaged BGZF data, met once every batch before it had been used, as
    /// a sequential read would meet it.
    Bgzf(BgzfError),
    /// The error the batches' user returned.
    Use(E),
}

/// Where an [`inflate_ahead`] that reached the end of the file stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AheadEnd {
    /// The virtual offset after the last data read: htslib's `bgzf_tell`
    /// at the end of the file, as the data was last read to the end of a
    /// batch.
    pub stop: VirtualOffset,
    /// Where data left unread at the end of the file begins (a record cut
    /// off), if any.
    pub left_over: Option<VirtualOffset>,
}

/// Hands every batch of the BGZF `file` (a whole file, mapped or in
/// memory) from virtual offset `start` to `use_batch`, in file order, on
/// the calling pool thread, while batches further on are inflated on the
/// pool. `use_batch` reads what it can of a batch's unread data and says
/// how far it got ([`AheadBatch::set_pos`]); an error it returns stops the
/// reading. With `release_mapped`, `file` is a read-only file mapping
/// whose pages are given back as the reading passes them.
pub fn inflate_ahead<E, F>(file: &[u8], start: VirtualOffset, release_mapped: bool, mut use_batch: F) -> Result<AheadEnd, AheadError<E>>
where
    E: Send,
    F: FnMut(&mut AheadBatch) -> Result<(), E> + Send,
{
    let mut next_block = start.compressed();
    let mut blocks: Vec<Block> = Vec::new();
    let mut cur = AheadBatch::new(start.compressed());

    // Prime: the block holding the first record, then skip to it.
    collect_blocks(file, &mut next_block, DEFAULT_BATCH_BYTES, &mut blocks).map_err(AheadError::Bgzf)?;
    fill(file, &blocks, &mut cur, CARRY_ROOM).map_err(AheadError::Bgzf)?;
    cur.pos = CARRY_ROOM + usize::from(start.uncompressed());
    if cur.pos > cur.filled {
        return Err(AheadError::Bgzf(BgzfError::Corrupt { offset: start.compressed(), reason: "header ends beyond its block" }));
    }
    let mut stop = cur.virtual_offset(cur.pos);
    let mut released = start.compressed();
    // Batches inflated ahead of the walk, each by one job on one thread, so
    // that the pool's threads never wait for each other at batch ends. The
    // walking thread runs queued jobs newest first while it waits, so some
    // batches in the window are done out of order: with only two spare
    // jobs the queue ran dry (index -@2: 2.49 s, against 2.31 s and 2.27 s
    // with four and eight).
    let depth = rayon::current_num_threads() as u64 + LOOK_AHEAD;
    rayon::scope(|scope| {
        let (tx, rx) = mpsc::channel::<Inflated>();
        let mut ready: Vec<Inflated> = Vec::new();
        let mut spare_batches: Vec<AheadBatch> = Vec::new();
        let mut spare_blocks: Vec<Vec<Block>> = Vec::new();
        // Sequence numbers of batches handed to jobs and of batches walked.
        let (mut spawned, mut walked) = (0u64, 0u64);
        // A damaged block header ends the collection; it is reported once
        // every batch before it has been walked, as a sequential read would.
        let mut collect_error: Option<BgzfError> = None;
        let mut exhausted = false;
        loop {
            use_batch(&mut cur).map_err(AheadError::Use)?;
            if cur.pos == cur.filled {
                stop = cur.virtual_offset(cur.pos);
            }
            let walked_to = cur.map.end_offset();
            if release_mapped && walked_to >= released + crate::memory::RELEASE_STEP {
                // SAFETY: `file` is a read-only file mapping (the caller
                // says so); every block before `walked_to` has been inflated.
                released = unsafe { crate::memory::release_mapped_pages(file, released, walked_to) };
            }
            while !exhausted && spawned - walked < depth {
                let mut blocks = spare_blocks.pop().unwrap_or_default();
                if let Err(e) = collect_blocks(file, &mut next_block, JOB_BATCH_BYTES, &mut blocks) {
                    collect_error = Some(e);
                }
                if collect_error.is_some() || blocks.is_empty() {
                    exhausted = true;
                    break;
                }
                let mut batch = spare_batches.pop().unwrap_or_else(|| AheadBatch::new(next_block));
                let (tx, seq) = (tx.clone(), spawned);
                scope.spawn(move |_| {
                    let result = fill(file, &blocks, &mut batch, CARRY_ROOM);
                    let _ = tx.send(Inflated { seq, blocks, batch, result });
                });
                spawned += 1;
            }
            if walked == spawned {
                if let Some(e) = collect_error {
                    return Err(AheadError::Bgzf(e));
                }
                let left_over = (cur.pos < cur.filled).then(|| cur.virtual_offset(cur.pos));
                return Ok(AheadEnd { stop, left_over });
            }
            let Inflated { mut blocks, mut batch, result, .. } = wait_for(walked, &rx, &mut ready);
            walked += 1;
            result.map_err(AheadError::Bgzf)?;
            blocks.clear();
            spare_blocks.push(blocks);
            carry_tail(&mut cur, &mut batch);
            spare_batches.push(std::mem::replace(&mut cur, batch));
        }
    })
}

/// A batch inflated by a job, or the error it met.
struct Inflated {
    seq: u64,
    blocks: Vec<Block>,
    batch: AheadBatch,
    result: Result<(), BgzfError>,
}

/// Waits for batch `seq`, keeping batches that finish before it in `ready`
/// and running queued pool jobs meanwhile.
fn wait_for(seq: u64, rx: &mpsc::Receiver<Inflated>, ready: &mut Vec<Inflated>) -> Inflated {
    loop {
        if let Some(i) = ready.iter().position(|b| b.seq == seq) {
            return ready.swap_remove(i);
        }
        ready.push(crate::pool::recv_helping(rx));
    }
}

/// Block headers from `*next` until about `want` uncompressed bytes.
fn collect_blocks(file: &[u8], next: &mut u64, want: usize, blocks: &mut Vec<Block>) -> Result<(), BgzfError> {
    blocks.clear();
    let mut total = 0;
    while total < want && *next < file.len() as u64 {
        let b = Block::parse(file, *next)?;
        *next = b.next_offset();
        if b.uncompressed_size > 0 {
            total += b.uncompressed_size as usize;
            blocks.push(b);
        } else {
            // An empty block (the EOF marker) is checked all the same.
            inflate_blocks_here(file, &[b], &mut [])?;
        }
    }
    Ok(())
}

/// Inflates `blocks` into `batch` after `room` reserved bytes, on the
/// calling thread.
fn fill(file: &[u8], blocks: &[Block], batch: &mut AheadBatch, room: usize) -> Result<(), BgzfError> {
    let total: usize = blocks.iter().map(|b| b.uncompressed_size as usize).sum();
    if batch.buf.len() < room + total {
        batch.buf.resize(room + total, 0);
    }
    inflate_blocks_here(file, blocks, &mut batch.buf[room..room + total])?;
    batch.map.clear();
    let mut start = room as isize;
    for b in blocks {
        batch.map.push(b, start);
        start += b.uncompressed_size as isize;
    }
    batch.pos = room;
    batch.filled = room + total;
    Ok(())
}

/// Moves `cur`'s unread tail in front of `next`'s data, with its blocks.
fn carry_tail(cur: &mut AheadBatch, next: &mut AheadBatch) {
    let tail = cur.filled - cur.pos;
    if tail == 0 {
        return;
    }
    let data_start = next.pos;
    let new_start = if tail <= data_start {
        data_start - tail
    } else {
        // A tail larger than the reserved room: shift the new data right
        // to make space.
        let shift = tail - data_start;
        let end = next.filled + shift;
        if next.buf.len() < end {
            next.buf.resize(end, 0);
        }
        next.buf.copy_within(data_start..next.filled, data_start + shift);
        next.map.shift(shift as isize);
        next.filled = end;
        0
    };
    next.buf[new_start..new_start + tail].copy_from_slice(&cur.buf[cur.pos..cur.filled]);
    next.map.prepend_from(&cur.map, cur.pos, new_start as isize - cur.pos as isize);
    next.pos = new_start;
    cur.pos = cur.filled;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgzf::BgzfWriter;
    use std::io::Write;

    /// Items of many sizes, some far larger than a block and than the
    /// carry room, each a 4-byte length and that many bytes, written after
    /// a 10-byte prefix in a block of its own: the file, and each item's
    /// uncompressed offset.
    fn items(n: usize) -> (Vec<u8>, Vec<(u64, Vec<u8>)>) {
        let mut w = BgzfWriter::new(Vec::new(), 1);
        w.write_all(b"prefix....").unwrap();
        w.end_block().unwrap();
        let mut x = 7u64;
        let mut at = 10u64;
        let mut all = Vec::new();
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = if i % 97 == 5 { 300_000 } else if i % 31 == 3 { 70_000 } else { (x >> 52) as usize };
            let item: Vec<u8> = (0..len).map(|j| (j * 7 + i) as u8).collect();
            w.write_all(&(len as u32).to_le_bytes()).unwrap();
            w.write_all(&item).unwrap();
            all.push((at, item));
            at += 4 + len as u64;
        }
        (w.finish().unwrap(), all)
    }

    /// The whole items of `batch`, with their virtual offsets.
    fn take_items(batch: &mut AheadBatch, got: &mut Vec<(VirtualOffset, Vec<u8>)>) -> Result<(), String> {
        let mut p = batch.pos();
        loop {
            let rest = &batch.data()[p..];
            if rest.len() < 4 {
                break;
            }
            let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
            if rest.len() < 4 + len {
                break;
            }
            got.push((batch.virtual_offset(p), rest[4..4 + len].to_vec()));
            p += 4 + len;
        }
        batch.set_pos(p);
        Ok(())
    }

    #[test]
    fn every_item_comes_once_in_order_at_its_offset_and_a_cut_one_is_left_over() {
        let (file, want) = items(400);
        let start = VirtualOffset::new(0, 10).unwrap();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut got = Vec::new();
            let end = pool.install(|| inflate_ahead(&file, start, false, |b| take_items(b, &mut got))).unwrap();
            assert!(got.iter().map(|(_, item)| item).eq(want.iter().map(|(_, item)| item)), "at {threads} threads");
            assert_eq!(end.left_over, None);
            // Each offset is where a reader from it finds the item.
            for (offset, item) in got.iter().step_by(13) {
                let mut r = super::super::BlockReader::with_batch_bytes(&file, *offset, 1).unwrap();
                assert!(r.fill(4 + item.len()).unwrap() >= 4 + item.len());
                assert_eq!(&r.available()[4..4 + item.len()], &item[..], "at {threads} threads");
            }
            // A block cut short: an error, once the items before it are read.
            let mut before = Vec::new();
            let cut = &file[..file.len() - 28 - 100];
            let end = pool.install(|| inflate_ahead(cut, start, false, |b| take_items(b, &mut before)));
            assert!(matches!(end, Err(AheadError::Bgzf(BgzfError::Truncated { .. }))), "at {threads} threads");
            assert!(before.len() > want.len() / 2 && before.iter().zip(&want).all(|((_, a), (_, b))| a == b), "at {threads} threads");
        }
        // An item cut off by the end of the data: left over, where it begins.
        let mut w = BgzfWriter::new(Vec::new(), 1);
        w.write_all(b"prefix....").unwrap();
        w.end_block().unwrap();
        w.write_all(&1000u32.to_le_bytes()).unwrap();
        w.write_all(&[1; 10]).unwrap();
        let cut = w.finish().unwrap();
        let end = inflate_ahead(&cut, start, false, |b| take_items(b, &mut Vec::new())).unwrap();
        let mut r = super::super::BlockReader::with_batch_bytes(&cut, end.left_over.expect("left over"), 1).unwrap();
        assert_eq!(r.fill(14).unwrap(), 14);
        assert_eq!(&r.available()[..4], &1000u32.to_le_bytes());
    }
}
