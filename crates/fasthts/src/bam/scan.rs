//! Whole-file record scans with inflate and record walking overlapped.
//!
//! A pull reader ([`super::RecordReader`]) inflates a batch on all threads,
//! then walks it on one, leaving the other threads idle during the walk.
//! `scan` instead walks batch *k* while jobs on the pool inflate the next
//! few batches, one job per batch: no thread waits for another at a batch
//! end, and a sequential pass over a BAM without an index runs near the
//! inflate bound.

use super::record::{RecordDefect, RecordRef};
use super::{BamError, BamFile};
use crate::bgzf::{inflate_blocks_here, BgzfError, Block, BlockMap, VirtualOffset, DEFAULT_BATCH_BYTES};
use crate::Error;
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
/// Largest `block_size` accepted (see `RecordReader`).
const MAX_RECORD_SIZE: usize = 1 << 31;

/// A batch of inflated blocks with the map from buffer positions back to
/// virtual offsets.
struct Batch {
    buf: Vec<u8>,
    /// Unread data is `buf[pos..filled]`.
    pos: usize,
    filled: usize,
    map: BlockMap,
}

impl Batch {
    fn new(end_offset: u64) -> Self {
        Batch { buf: Vec::new(), pos: 0, filled: 0, map: BlockMap::new(end_offset) }
    }

    fn virtual_offset(&self, p: usize) -> VirtualOffset {
        self.map.virtual_offset(p)
    }
}

/// Where the record handed to a [`scan`] callback lies in the file.
#[derive(Clone, Copy)]
pub struct RecordPlace<'b> {
    batch: &'b Batch,
    start: usize,
    end: usize,
}

impl RecordPlace<'_> {
    /// Virtual offset of the record's first byte.
    pub fn start(&self) -> VirtualOffset {
        self.batch.virtual_offset(self.start)
    }

    /// Virtual offset just past the record, canonical as htslib's
    /// `bgzf_tell` after reading it.
    pub fn end(&self) -> VirtualOffset {
        self.batch.virtual_offset(self.end)
    }
}

/// Calls `f` on every record of `bam` from the first, in file order. The
/// callback runs on the calling pool thread while batches further on are
/// inflated on the pool; an error it returns stops the scan. Returns the
/// virtual offset where reading stopped (htslib's `bgzf_tell` at end of
/// file).
pub fn scan<F>(bam: &BamFile, mut f: F) -> Result<VirtualOffset, Error>
where
    F: FnMut(&RecordRef<'_>, RecordPlace<'_>) -> Result<(), Error> + Send,
{
    let file = bam.bytes();
    let n_ref = bam.header().references.len();
    let wrap = |e: BamError| Error::from(e).with_path(bam.path());
    let start = bam.first_record_offset();
    let mut next_block = start.compressed();
    let mut blocks: Vec<Block> = Vec::new();
    let mut cur = Batch::new(start.compressed());

    // Prime: the block holding the first record, then skip to it.
    collect_blocks(file, &mut next_block, DEFAULT_BATCH_BYTES, &mut blocks).map_err(|e| wrap(e.into()))?;
    fill(file, &blocks, &mut cur, CARRY_ROOM).map_err(|e| wrap(e.into()))?;
    cur.pos = CARRY_ROOM + usize::from(start.uncompressed());
    if cur.pos > cur.filled {
        return Err(wrap(BgzfError::Corrupt { offset: start.compressed(), reason: "header ends beyond its block" }.into()));
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
        let mut spare_batches: Vec<Batch> = Vec::new();
        let mut spare_blocks: Vec<Vec<Block>> = Vec::new();
        // Sequence numbers of batches handed to jobs and of batches walked.
        let (mut spawned, mut walked) = (0u64, 0u64);
        // A damaged block header ends the collection; it is reported once
        // every batch before it has been walked, as a sequential read would.
        let mut collect_error: Option<BgzfError> = None;
        let mut exhausted = false;
        loop {
            walk(&mut cur, n_ref, &mut f, &wrap)?;
            if cur.pos == cur.filled {
                stop = cur.virtual_offset(cur.pos);
            }
            let walked_to = cur.map.end_offset();
            if bam.is_mapped() && walked_to >= released + fasthts_io::memory::RELEASE_STEP {
                // SAFETY: `file` is the BamFile's read-only file mapping;
                // every block before `walked_to` has been inflated.
                unsafe { fasthts_io::memory::release_mapped_pages(file, released, walked_to) };
                released = walked_to;
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
                let mut batch = spare_batches.pop().unwrap_or_else(|| Batch::new(next_block));
                let (tx, seq) = (tx.clone(), spawned);
                scope.spawn(move |_| {
                    let result = fill(file, &blocks, &mut batch, CARRY_ROOM);
                    let _ = tx.send(Inflated { seq, blocks, batch, result });
                });
                spawned += 1;
            }
            if walked == spawned {
                if let Some(e) = collect_error {
                    return Err(wrap(e.into()));
                }
                if cur.pos < cur.filled {
                    return Err(wrap(BamError::TruncatedRecord { offset: cur.virtual_offset(cur.pos) }));
                }
                return Ok(stop);
            }
            let Inflated { mut blocks, mut batch, result, .. } = wait_for(walked, &rx, &mut ready);
            walked += 1;
            result.map_err(|e| wrap(e.into()))?;
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
    batch: Batch,
    result: Result<(), BgzfError>,
}

/// Waits for batch `seq`, keeping batches that finish before it in `ready`
/// and running queued pool jobs meanwhile.
fn wait_for(seq: u64, rx: &mpsc::Receiver<Inflated>, ready: &mut Vec<Inflated>) -> Inflated {
    loop {
        if let Some(i) = ready.iter().position(|b| b.seq == seq) {
            return ready.swap_remove(i);
        }
        ready.push(fasthts_io::pool::recv_helping(rx));
    }
}

/// Walks complete records of `batch`, leaving a partial one unread.
/// Record defects are reported through `wrap` (which names the file);
/// the callback's own errors pass through as they are.
fn walk<F>(batch: &mut Batch, n_ref: usize, f: &mut F, wrap: &impl Fn(BamError) -> Error) -> Result<(), Error>
where
    F: FnMut(&RecordRef<'_>, RecordPlace<'_>) -> Result<(), Error>,
{
    let mut p = batch.pos;
    let result = loop {
        let rest = &batch.buf[p..batch.filled];
        if rest.len() < 4 {
            break Ok(());
        }
        let size = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if size > MAX_RECORD_SIZE {
            break Err(wrap(BamError::InvalidRecord { offset: batch.virtual_offset(p), defect: RecordDefect::BlockSizeTooLarge }));
        }
        if rest.len() < 4 + size {
            break Ok(());
        }
        let rec = match RecordRef::new(&rest[4..4 + size], n_ref) {
            Ok(r) => r,
            Err(defect) => break Err(wrap(BamError::InvalidRecord { offset: batch.virtual_offset(p), defect })),
        };
        if let Err(e) = f(&rec, RecordPlace { batch, start: p, end: p + 4 + size }) {
            break Err(e);
        }
        p += 4 + size;
    };
    batch.pos = p;
    result
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
fn fill(file: &[u8], blocks: &[Block], batch: &mut Batch, room: usize) -> Result<(), BgzfError> {
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
fn carry_tail(cur: &mut Batch, next: &mut Batch) {
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
pub(crate) mod tests {
    use super::*;
    use crate::bam::record::tests::encode;
    use crate::bam::{Header, Reference};
    use crate::bgzf::BgzfWriter;
    use std::io::Write;

    /// A BAM of one 100 Mb reference holding `records` (encoded, without
    /// their `block_size`), the header in its own block.
    pub(crate) fn bam_of(records: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
        let header = Header {
            text: b"@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c1\tLN:100000000\n".to_vec(),
            references: vec![Reference { name: "c1".into(), len: 100_000_000 }],
        };
        let mut w = BgzfWriter::new(Vec::new(), 1);
        w.write_all(&header.to_bytes()).unwrap();
        w.end_block().unwrap();
        for rec in records {
            w.write_all(&(rec.len() as u32).to_le_bytes()).unwrap();
            w.write_all(&rec).unwrap();
        }
        w.finish().unwrap()
    }

    /// A BAM with records of many sizes, some far larger than a block and
    /// than the carry room, written with the header in its own block.
    pub(crate) fn synthetic_bam(n: usize) -> Vec<u8> {
        let mut x = 7u64;
        bam_of((0..n).map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let big = if i % 97 == 5 { 300_000 } else if i % 31 == 3 { 70_000 } else { (x >> 52) as usize };
            let mut aux = b"ZBBC".to_vec();
            aux.extend_from_slice(&(big as u32).to_le_bytes());
            aux.extend((0..big).map(|j| (j * 7 + i) as u8));
            encode(&format!("r{i}"), 0, 0, i as i32 * 10, 60, &[(0, 4)], "ACGT", &aux)
        }))
    }

    /// `bytes` written as `s.bam` in a fresh directory of its own (the
    /// caller removes it), and opened.
    pub(crate) fn open_bam(bytes: &[u8], tag: &str) -> (BamFile, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("fasthts-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("s.bam"), bytes).unwrap();
        (BamFile::open(dir.join("s.bam")).unwrap(), dir)
    }

    /// The error a read of every record with the pull reader meets.
    pub(crate) fn pull_reader_error(bam: &BamFile) -> BamError {
        let mut rr = bam.records().unwrap();
        loop {
            match rr.next_record() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the damaged file read to its end"),
                Err(e) => break e,
            }
        }
    }

    #[test]
    fn scan_agrees_with_pull_reader_on_records_and_offsets() {
        let bytes = synthetic_bam(600);
        let (bam, dir) = open_bam(&bytes, "scan");
        let path = dir.join("s.bam");
        let mut expected = Vec::new();
        let mut rr = bam.records().unwrap();
        while let Some(r) = rr.next_record().unwrap() {
            let name = r.name().to_vec();
            expected.push((name, rr.record_start(), rr.record_end()));
        }
        assert_eq!(expected.len(), 600);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut got = Vec::new();
            let end = pool.install(|| {
                scan(&bam, |r, at| {
                    got.push((r.name().to_vec(), at.start(), at.end()));
                    Ok(())
                })
            });
            let end = end.unwrap();
            assert!(got == expected, "scan and pull reader disagree at {threads} threads");
            assert_eq!(end, expected.last().unwrap().2);
        }
        // Every record start is a valid place to resume.
        for (name, start, _) in expected.iter().step_by(37) {
            let mut rr = bam.records_from(*start).unwrap();
            assert_eq!(rr.next_record().unwrap().unwrap().name(), &name[..]);
        }
        // A cut anywhere inside the records is an error, never a short
        // success (cutting only the EOF marker leaves complete records).
        for cut in [bytes.len() - 29, bytes.len() / 2, bytes.len() / 3 + 5] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let bam = BamFile::open(&path).unwrap();
            assert!(scan(&bam, |_, _| Ok(())).is_err(), "cut at {cut}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_first_defect_in_file_order_is_reported_though_a_later_one_is_inflated_first() {
        // About 3 MB of records; the one at 1.5 MB has an empty name.
        let mut bytes = bam_of((0..6000u32).map(|i| {
            let aux: Vec<u8> = b"ZBZ".iter().copied().chain((0..480).map(|j| b'A' + ((i + j) % 26) as u8)).chain([0]).collect();
            let mut rec = encode(&format!("r{i}"), 0, 0, i as i32 * 10, 60, &[(0, 4)], "ACGT", &aux);
            if i == 3000 {
                rec[8] = 0;
            }
            rec
        }));
        // A damaged block header 1.2 MB of data further on: within the
        // scan's look-ahead, beyond the pull reader's 1 MB batch.
        let (mut offset, mut data) = (0u64, 0u64);
        while data < 2_700_000 {
            let b = Block::parse(&bytes, offset).unwrap();
            data += u64::from(b.uncompressed_size);
            offset = b.next_offset();
        }
        bytes[offset as usize] = 0;
        let (bam, dir) = open_bam(&bytes, "scan-order");
        let sequential = pull_reader_error(&bam);
        assert!(matches!(sequential, BamError::InvalidRecord { defect: RecordDefect::EmptyReadName, .. }), "{sequential}");
        let expected = Error::from(sequential).with_path(bam.path()).to_string();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let got = pool.install(|| scan(&bam, |_, _| Ok(()))).expect_err("the damaged file passed the scan");
            assert_eq!(got.to_string(), expected, "at {threads} threads");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damaged_eof_marker_is_an_error() {
        let mut bytes = synthetic_bam(20);
        let eof = bytes.len() - crate::bgzf::EOF_MARKER.len();
        bytes[eof + 20] ^= 1; // its CRC32
        let (bam, dir) = open_bam(&bytes, "scan-eof");
        let result = scan(&bam, |_, _| Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(result.is_err(), "a damaged EOF marker block passed the scan");
    }
}
