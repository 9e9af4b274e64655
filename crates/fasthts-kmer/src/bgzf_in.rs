//! Parallel inflate of BGZF input (bgzip-compressed FASTA/FASTQ).
//!
//! A BGZF file is a series of gzip members of at most 64 KiB each, whose
//! header carries the member's compressed size (the `BC` extra subfield), so
//! members can be cut out of the stream without inflating them and inflated
//! on several threads. One thread cuts members and hands out jobs of a few
//! members; worker threads inflate them with libdeflate (checking CRC32 and
//! length); [`ParallelBgzfReader`] hands the output out in file order. The
//! number of jobs in flight is bounded, so memory stays a few MiB whatever
//! the file size.
//!
//! Why not `fasthts::bgzf`: the `fasthts` crate depends on this one (it
//! re-exports it as `fasthts::kmer`), so this crate cannot use it. This is
//! the small streaming subset the sequence reader needs.

use libdeflater::Decompressor;
use std::collections::BTreeMap;
use std::io::{self, BufRead, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// Members per job (up to 1 MiB of output).
const MEMBERS_PER_JOB: usize = 16;

/// True if `head` starts with a BGZF member header (gzip, FEXTRA, first
/// extra subfield `BC` of length 2), as htslib tests it.
pub fn is_bgzf(head: &[u8]) -> bool {
    head.len() >= 18
        && head[0] == 0x1f
        && head[1] == 0x8b
        && head[2] == 8
        && head[3] & 4 != 0
        && u16::from_le_bytes([head[10], head[11]]) >= 6
        && head[12] == b'B'
        && head[13] == b'C'
        && u16::from_le_bytes([head[14], head[15]]) == 2
}

fn corrupt(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("corrupt BGZF input: {msg}"))
}

fn truncated() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "truncated BGZF input")
}

/// Read one whole member into `out` (appended). Ok(false) at a clean end.
fn read_member(src: &mut dyn BufRead, out: &mut Vec<u8>) -> io::Result<bool> {
    let start = out.len();
    let mut head = [0u8; 18];
    let mut got = 0;
    while got < head.len() {
        let n = src.read(&mut head[got..])?;
        if n == 0 {
            return if got == 0 { Ok(false) } else { Err(truncated()) };
        }
        got += n;
    }
    if !is_bgzf(&head) {
        return Err(corrupt("a member without the BGZF block size (not bgzip output)"));
    }
    let xlen = u16::from_le_bytes([head[10], head[11]]) as usize;
    let bsize = u16::from_le_bytes([head[16], head[17]]) as usize + 1;
    if bsize < 12 + xlen + 8 {
        return Err(corrupt("block size too small"));
    }
    out.extend_from_slice(&head);
    out.resize(start + bsize, 0);
    if let Err(e) = src.read_exact(&mut out[start + 18..]) {
        // the job keeps only whole members
        out.truncate(start);
        return Err(if e.kind() == io::ErrorKind::UnexpectedEof { truncated() } else { e });
    }
    Ok(true)
}

/// Inflate the members of `job` (concatenated) into `out`.
fn inflate_job(d: &mut Decompressor, job: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    let mut p = 0;
    while p < job.len() {
        let xlen = u16::from_le_bytes([job[p + 10], job[p + 11]]) as usize;
        let bsize = u16::from_le_bytes([job[p + 16], job[p + 17]]) as usize + 1;
        let m = &job[p..p + bsize];
        let t = &m[bsize - 8..];
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]) as usize;
        if isize > 1 << 16 {
            return Err(corrupt("block larger than 64 KiB"));
        }
        let o = out.len();
        out.resize(o + isize, 0);
        let n = d.deflate_decompress(&m[12 + xlen..bsize - 8], &mut out[o..]).map_err(|e| corrupt(&format!("{e:?}")))?;
        if n != isize {
            return Err(corrupt("inflated size differs from the block trailer"));
        }
        if libdeflater::crc32(&out[o..]) != crc {
            return Err(corrupt("CRC32 mismatch"));
        }
        p += bsize;
    }
    Ok(())
}

type JobResult = (u64, io::Result<Vec<u8>>);

/// Inflates a BGZF stream on `threads` threads; reads in file order.
pub struct ParallelBgzfReader {
    results: Receiver<JobResult>,
    tokens: SyncSender<()>,
    pending: BTreeMap<u64, io::Result<Vec<u8>>>,
    next: u64,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ParallelBgzfReader {
    /// Start inflating `src` (positioned at the first member).
    pub fn new(mut src: Box<dyn BufRead + Send>, threads: usize) -> Self {
        let threads = threads.max(1);
        let in_flight = 2 * threads + 2;
        let (job_tx, job_rx) = sync_channel::<(u64, Vec<u8>)>(threads);
        let (res_tx, results) = sync_channel::<JobResult>(in_flight);
        let (tokens, token_rx) = sync_channel::<()>(in_flight);
        for _ in 0..in_flight {
            tokens.send(()).unwrap();
        }
        // cutter: whole members, a few per job; a job waits for a token, so
        // at most `in_flight` jobs' outputs exist at once
        let res_err = res_tx.clone();
        std::thread::spawn(move || {
            let mut seq = 0u64;
            loop {
                if token_rx.recv().is_err() {
                    return;
                }
                let mut job = Vec::with_capacity(MEMBERS_PER_JOB << 16);
                let mut last = false;
                for _ in 0..MEMBERS_PER_JOB {
                    match read_member(&mut *src, &mut job) {
                        Ok(true) => {}
                        Ok(false) => {
                            last = true;
                            break;
                        }
                        Err(e) => {
                            // keep order: the error comes after the jobs before it
                            if !job.is_empty() && job_tx.send((seq, job)).is_ok() {
                                seq += 1;
                            }
                            let _ = res_err.send((seq, Err(e)));
                            return;
                        }
                    }
                }
                if !job.is_empty() {
                    if job_tx.send((seq, job)).is_err() {
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
                    let msg = job_rx.lock().unwrap().recv();
                    let Ok((seq, job)) = msg else { return };
                    let mut out = Vec::with_capacity(MEMBERS_PER_JOB << 16);
                    let r = inflate_job(&mut d, &job, &mut out).map(|_| out);
                    if res_tx.send((seq, r)).is_err() {
                        return;
                    }
                }
            });
        }
        ParallelBgzfReader { results, tokens, pending: BTreeMap::new(), next: 0, cur: Vec::new(), pos: 0, done: false }
    }

    /// Make `cur` the next job's output; false at the end.
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
                    // the end marker (or an empty job)
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
                    self.done = true;
                    return Err(truncated());
                }
            }
        }
    }
}

impl Read for ParallelBgzfReader {
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
    use std::io::Write;

    /// A BGZF file of `data` in members of `chunk` bytes, plus the EOF block.
    fn bgzf(data: &[u8], chunk: usize) -> Vec<u8> {
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
        let mut out = Vec::new();
        let mut member = |d: &[u8], out: &mut Vec<u8>| {
            let mut z = vec![0u8; c.deflate_compress_bound(d.len())];
            let n = c.deflate_compress(d, &mut z).unwrap();
            let bsize = 18 + n + 8;
            out.extend_from_slice(&[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0]);
            out.extend_from_slice(&((bsize - 1) as u16).to_le_bytes());
            out.extend_from_slice(&z[..n]);
            out.extend_from_slice(&libdeflater::crc32(d).to_le_bytes());
            out.extend_from_slice(&(d.len() as u32).to_le_bytes());
        };
        for ch in data.chunks(chunk) {
            member(ch, &mut out);
        }
        member(&[], &mut out);
        out
    }

    fn read_all(file: Vec<u8>, threads: usize) -> io::Result<Vec<u8>> {
        let mut r = ParallelBgzfReader::new(Box::new(io::Cursor::new(file)), threads);
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
        let file = bgzf(&data, 65280);
        assert!(is_bgzf(&file));
        for t in [1, 2, 5] {
            assert_eq!(read_all(file.clone(), t).unwrap(), data);
        }
        assert_eq!(read_all(bgzf(b"", 100), 2).unwrap(), b"");
    }

    #[test]
    fn truncation_and_corruption_are_errors() {
        let data = sample(1 << 20);
        let file = bgzf(&data, 60000);
        let e = read_all(file[..file.len() / 2].to_vec(), 2).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let mut bad = file.clone();
        let mid = bad.len() / 3;
        bad[mid] ^= 0x55;
        assert!(read_all(bad, 2).is_err());
        // a plain gzip member after BGZF ones
        let mut mixed = file[..file.len() - 28].to_vec();
        mixed.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(read_all(mixed, 2).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
