//! Reading a BGZF stream from any [`Read`] (a pipe, a socket, a file read
//! front to back), inflating ahead on threads of its own.
//!
//! The blocks of a BGZF stream announce their compressed size, so they can
//! be cut out of the stream without inflating them and inflated on several
//! threads. One thread cuts blocks and hands out jobs of a few blocks;
//! worker threads inflate them (with [`Block::inflate_into`], checking
//! CRC32 and length); [`StreamReader`] hands the output out in stream
//! order. The number of jobs in flight is bounded, so memory stays a few
//! MiB whatever the stream's length. The stream is read once, as it
//! arrives: nothing is copied to disk.
//!
//! The workers are threads of the reader's own rather than rayon jobs:
//! the reader's consumer may itself be a job of the pool, waiting for
//! bytes that queued jobs would inflate.

use super::block::{Block, BlockHeader, EOF_MARKER};
use super::BgzfError;
use libdeflater::Decompressor;
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Blocks per job (up to 1 MiB of output).
const BLOCKS_PER_JOB: usize = 16;

/// The reading error for a BGZF defect: truncation is an unexpected end,
/// anything else invalid data.
fn stream_error(e: BgzfError) -> io::Error {
    let kind = match e {
        BgzfError::Truncated { .. } => io::ErrorKind::UnexpectedEof,
        _ => io::ErrorKind::InvalidData,
    };
    io::Error::new(kind, e)
}

/// Reads the whole block at compressed offset `offset` of `src` and appends
/// it to `job`; its size, or `None` at a clean end of the stream.
fn read_block(src: &mut dyn Read, offset: u64, job: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let start = job.len();
    let truncated = || stream_error(BgzfError::Truncated { offset });
    job.resize(start + BlockHeader::FIXED_LEN, 0);
    let got = crate::compression::read_full(src, &mut job[start..])?;
    let result = if got == 0 {
        Ok(None)
    } else if got < BlockHeader::FIXED_LEN {
        Err(stream_error(BlockHeader::parse(&job[start..start + got], offset).err().unwrap_or(BgzfError::Truncated { offset })))
    } else {
        let header_len = BlockHeader::FIXED_LEN + BlockHeader::extra_len(&job[start..]);
        job.resize(start + header_len, 0);
        if crate::compression::read_full(src, &mut job[start + BlockHeader::FIXED_LEN..])? < header_len - BlockHeader::FIXED_LEN {
            Err(truncated())
        } else {
            match BlockHeader::parse(&job[start..], offset) {
                Err(e) => Err(stream_error(e)),
                Ok(header) => {
                    job.resize(start + header.size, 0);
                    if crate::compression::read_full(src, &mut job[start + header_len..])? < header.size - header_len {
                        Err(truncated())
                    } else {
                        Ok(Some(header.size))
                    }
                }
            }
        }
    };
    // A job keeps whole blocks only.
    if !matches!(result, Ok(Some(_))) {
        job.truncate(start);
    }
    result
}

/// Inflates the blocks of `job` (concatenated, the first at compressed
/// offset `offset`) into `out`.
fn inflate_job(d: &mut Decompressor, job: &[u8], offset: u64, out: &mut Vec<u8>) -> io::Result<()> {
    let mut at = 0u64;
    while at < job.len() as u64 {
        let block = Block::parse(job, at).map_err(|e| stream_error(relocated(e, offset)))?;
        let o = out.len();
        out.resize(o + block.uncompressed_size as usize, 0);
        block.inflate_into(job, d, &mut out[o..]).map_err(|e| stream_error(relocated(e, offset)))?;
        at = block.next_offset();
    }
    Ok(())
}

/// `e` about a block of a job, with its offset in the stream.
fn relocated(e: BgzfError, job_offset: u64) -> BgzfError {
    match e {
        BgzfError::NotBgzf { offset } => BgzfError::NotBgzf { offset: offset + job_offset },
        BgzfError::Truncated { offset } => BgzfError::Truncated { offset: offset + job_offset },
        BgzfError::Corrupt { offset, reason } => BgzfError::Corrupt { offset: offset + job_offset, reason },
    }
}

type JobResult = (u64, io::Result<Vec<u8>>);

/// Inflates a BGZF stream on threads of its own; reads in stream order.
pub struct StreamReader {
    results: Receiver<JobResult>,
    tokens: SyncSender<()>,
    pending: BTreeMap<u64, io::Result<Vec<u8>>>,
    next: u64,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
    /// Whether the last block cut so far is BGZF's end-of-file marker.
    eof_marker_last: Arc<AtomicBool>,
}

impl StreamReader {
    /// Starts inflating `src`, positioned at the first block, on `threads`
    /// worker threads (at least one).
    pub fn new(mut src: Box<dyn Read + Send>, threads: usize) -> Self {
        let threads = threads.max(1);
        let in_flight = 2 * threads + 2;
        let (job_tx, job_rx) = sync_channel::<(u64, u64, Vec<u8>)>(threads);
        let (res_tx, results) = sync_channel::<JobResult>(in_flight);
        let (tokens, token_rx) = sync_channel::<()>(in_flight);
        for _ in 0..in_flight {
            tokens.send(()).expect("the channel has room for every token");
        }
        // The cutter: whole blocks, a few per job; a job waits for a token,
        // so at most `in_flight` jobs' outputs exist at once.
        let res_err = res_tx.clone();
        let eof_marker_last = Arc::new(AtomicBool::new(false));
        let marker_seen = eof_marker_last.clone();
        std::thread::spawn(move || {
            let (mut seq, mut offset) = (0u64, 0u64);
            loop {
                if token_rx.recv().is_err() {
                    return;
                }
                let mut job = Vec::with_capacity(BLOCKS_PER_JOB << 16);
                let job_offset = offset;
                let mut last = false;
                // The first jobs are small (1, 2, 4, ... blocks), so that a
                // slow producer's first bytes (a header) come out at once.
                for _ in 0..BLOCKS_PER_JOB.min(1 << seq.min(4)) {
                    let start = job.len();
                    match read_block(&mut *src, offset, &mut job) {
                        Ok(Some(size)) => {
                            offset += size as u64;
                            marker_seen.store(job[start..] == EOF_MARKER, Ordering::Relaxed);
                        }
                        Ok(None) => {
                            last = true;
                            break;
                        }
                        Err(e) => {
                            // In order: the error comes after the jobs before it.
                            if !job.is_empty() && job_tx.send((seq, job_offset, job)).is_ok() {
                                seq += 1;
                            }
                            let _ = res_err.send((seq, Err(e)));
                            return;
                        }
                    }
                }
                if !job.is_empty() {
                    if job_tx.send((seq, job_offset, job)).is_err() {
                        return;
                    }
                    seq += 1;
                }
                if last {
                    let _ = res_err.send((seq, Ok(Vec::new())));
                    return;
                }
            }
        });
        let job_rx = Arc::new(Mutex::new(job_rx));
        for _ in 0..threads {
            let job_rx = job_rx.clone();
            let res_tx = res_tx.clone();
            std::thread::spawn(move || {
                let mut d = Decompressor::new();
                loop {
                    let msg = job_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok((seq, offset, job)) = msg else { return };
                    let mut out = Vec::with_capacity(BLOCKS_PER_JOB << 16);
                    let r = inflate_job(&mut d, &job, offset, &mut out).map(|_| out);
                    if res_tx.send((seq, r)).is_err() {
                        return;
                    }
                }
            });
        }
        StreamReader { results, tokens, pending: BTreeMap::new(), next: 0, cur: Vec::new(), pos: 0, done: false, eof_marker_last }
    }

    /// Whether the stream, read to its end, ended with BGZF's end-of-file
    /// marker (false before the end): without it, the data is probably
    /// truncated, as htslib warns for files.
    pub fn ended_with_eof_marker(&self) -> bool {
        // The end-of-stream result is sent after the last block is cut.
        self.done && self.eof_marker_last.load(Ordering::Relaxed)
    }

    /// Makes `cur` the next job's output; false at the end.
    fn advance(&mut self) -> io::Result<bool> {
        loop {
            if self.done {
                return Ok(false);
            }
            if let Some(r) = self.pending.remove(&self.next) {
                self.next += 1;
                let _ = self.tokens.try_send(());
                let v = r.inspect_err(|_| self.done = true)?;
                if v.is_empty() {
                    // The end marker (or an empty job).
                    self.done = true;
                    return Ok(false);
                }
                self.cur = v;
                self.pos = 0;
                return Ok(true);
            }
            match self.results.recv() {
                Ok((seq, r)) => {
                    self.pending.insert(seq, r);
                }
                Err(_) => {
                    // Every sender gone without an end marker: a thread died.
                    self.done = true;
                    return Err(io::Error::other("BGZF stream: an inflating thread ended early"));
                }
            }
        }
    }
}

impl Read for StreamReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if !self.advance()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.cur.len() - self.pos);
        buf[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgzf::{compress_all, EOF_MARKER};
    use std::io::Write;

    fn read_all(file: Vec<u8>, threads: usize) -> io::Result<Vec<u8>> {
        let mut r = StreamReader::new(Box::new(io::Cursor::new(file)), threads);
        let mut v = Vec::new();
        r.read_to_end(&mut v)?;
        Ok(v)
    }

    fn sample(n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        let mut x = 7u64;
        while v.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            write!(v, "@r{x}\n{}\n+\n{}\n", ["ACGT"; 30].concat(), "I".repeat(120)).unwrap();
        }
        v
    }

    #[test]
    fn round_trip_in_order_at_any_thread_count() {
        let data = sample(3 << 20);
        let file = compress_all(&data, 6);
        for t in [1, 2, 5] {
            assert_eq!(read_all(file.clone(), t).unwrap(), data);
        }
        assert_eq!(read_all(EOF_MARKER.to_vec(), 2).unwrap(), b"");
        assert_eq!(read_all(Vec::new(), 2).unwrap(), b"");
    }

    #[test]
    fn tells_whether_the_stream_ended_with_the_eof_marker() {
        let file = compress_all(&sample(200_000), 6);
        let ended = |bytes: &[u8]| {
            let mut r = StreamReader::new(Box::new(io::Cursor::new(bytes.to_vec())), 2);
            assert!(!r.ended_with_eof_marker());
            io::copy(&mut r, &mut io::sink()).unwrap();
            r.ended_with_eof_marker()
        };
        assert!(ended(&file));
        assert!(!ended(&file[..file.len() - EOF_MARKER.len()]));
        assert!(!ended(b""));
    }

    #[test]
    fn truncation_and_corruption_are_errors_with_the_stream_offset() {
        let data = sample(1 << 20);
        let file = compress_all(&data, 6);
        for cut in [file.len() / 2, 5, 15] {
            let e = read_all(file[..cut].to_vec(), 2).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}: {e}");
        }
        let mut bad = file.clone();
        let mid = bad.len() / 3;
        bad[mid] ^= 0x55;
        assert!(read_all(bad, 2).is_err());
        // A plain gzip member after BGZF blocks, named at its offset.
        let mut mixed = file[..file.len() - EOF_MARKER.len()].to_vec();
        let at = mixed.len();
        mixed.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let e = read_all(mixed, 2).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), format!("not BGZF data at offset {at} (bad block header)"));
    }
}
