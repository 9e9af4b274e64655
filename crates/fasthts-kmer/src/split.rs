//! Cutting a FASTA/FASTQ file into record-aligned parts, so that several
//! workers (threads or dask tasks) each count their own part: byte offsets
//! of a plain file, BGZF virtual offsets of a BGZF-compressed one.

use crate::seqio::{SeqError, SeqReader};
use fasthts_io::bgzf::{BlockHeader, StreamReader, VirtualOffset};
use fasthts_io::compression::{self, Compression};
use fasthts_io::remote::{self, RemoteObject, RemoteReader};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// Cuts a FASTA/FASTQ file into about `parts` ranges `[(start, end), ...]`
/// that begin at record starts: byte offsets of a plain file, or BGZF
/// virtual offsets of a BGZF-compressed one. FASTQ must be 4 lines per
/// record (a cut goes to a line starting `@` whose next-but-one line starts
/// `+`); FASTA cuts go to a line starting `>`. Other compressed files come
/// back whole: `[(0, None)]`.
///
/// A URL ([`fasthts_io::remote::is_url`]) is cut as a plain file is, by
/// reading a little at each target (a compressed one comes back whole).
pub fn split_file(path: &Path, parts: usize) -> std::io::Result<Vec<(u64, Option<u64>)>> {
    if let Some(url) = path.to_str().filter(|p| remote::is_url(p)) {
        return split_remote(url, parts);
    }
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let mut head = Vec::with_capacity(compression::DETECT_BYTES);
    (&mut f).take(compression::DETECT_BYTES as u64).read_to_end(&mut head)?;
    if parts <= 1 || len == 0 {
        return Ok(vec![(0, None)]);
    }
    match compression::detect(&head) {
        Compression::Bgzf => return split_bgzf(path, parts),
        Compression::Gzip | Compression::Bzip2 => return Ok(vec![(0, None)]),
        Compression::None => {}
    }
    let fasta = head.first() == Some(&b'>');
    record_aligned_parts(len, parts, |target| record_start_after(&mut f, target, fasta))
}

/// `parts` ranges of a plain file of `len` bytes, each `(start, Some(end))`,
/// cut at the record start `start_after(target)` finds after each even
/// share (the first at 0; cuts that would repeat or pass the end dropped).
fn record_aligned_parts(
    len: u64,
    parts: usize,
    mut start_after: impl FnMut(u64) -> std::io::Result<Option<u64>>,
) -> std::io::Result<Vec<(u64, Option<u64>)>> {
    let mut cuts = vec![0u64];
    for i in 1..parts {
        let target = len * i as u64 / parts as u64;
        if target <= *cuts.last().unwrap_or(&0) {
            continue;
        }
        match start_after(target)? {
            Some(c) if c > *cuts.last().unwrap_or(&0) && c < len => cuts.push(c),
            _ => {}
        }
    }
    cuts.dedup();
    Ok(cuts.iter().enumerate().map(|(i, &c)| (c, cuts.get(i + 1).copied().or(Some(len)))).collect())
}

/// Opens the part `start..end` of `path` (offsets from [`split_file`];
/// `None` for the file's start or end) as a sequence reader; of a URL,
/// only the part's bytes are fetched.
pub fn open_part(path: &str, start: Option<u64>, end: Option<u64>) -> Result<SeqReader, SeqError> {
    let shown = remote::shown_path(Path::new(path)).display().to_string();
    let io = |e: std::io::Error| SeqError { msg: format!("{shown}: {e}"), empty_sequence: false };
    if matches!((start, end), (None | Some(0), None)) {
        // The whole file, compressed or not.
        return SeqReader::open(path);
    }
    if remote::is_url(path) {
        // A part of a plain file (a compressed one is split whole).
        let object = Arc::new(RemoteObject::open(path).map_err(io)?);
        let s = start.unwrap_or(0);
        let e = end.unwrap_or(object.len()).min(object.len());
        let src = RemoteReader::new(object, s).take(e.saturating_sub(s));
        return Ok(SeqReader::from_reader(Box::new(BufReader::with_capacity(1 << 20, src)), &shown));
    }
    let s = start.unwrap_or(0);
    let mut f = File::open(path).map_err(io)?;
    let mut head = Vec::with_capacity(compression::DETECT_BYTES);
    (&mut f).take(compression::DETECT_BYTES as u64).read_to_end(&mut head).map_err(io)?;
    if compression::detect(&head) == Compression::Bgzf {
        return Ok(SeqReader::from_reader(bgzf_range(path.as_ref(), s, end).map_err(io)?, path));
    }
    f.seek(SeekFrom::Start(s)).map_err(io)?;
    let src: Box<dyn Read + Send> = match end {
        Some(e) => Box::new(BufReader::with_capacity(1 << 20, f.take(e.saturating_sub(s)))),
        None => Box::new(BufReader::with_capacity(1 << 20, f)),
    };
    Ok(SeqReader::from_reader(src, path))
}

/// [`split_file`] of a URL: a plain file cut at record starts found by
/// reading from each target; a compressed one whole.
fn split_remote(url: &str, parts: usize) -> std::io::Result<Vec<(u64, Option<u64>)>> {
    let object = RemoteObject::open(url)?;
    let len = object.len();
    let mut head = vec![0u8; (compression::DETECT_BYTES as u64).min(len) as usize];
    object.read_range(0, &mut head)?;
    if parts <= 1 || len == 0 || compression::detect(&head) != Compression::None {
        return Ok(vec![(0, None)]);
    }
    let fasta = head.first() == Some(&b'>');
    record_aligned_parts(len, parts, |target| {
        let from = BufReader::with_capacity(1 << 16, Ranges { object: &object, at: target });
        record_start_from(from, target, fasta)
    })
}

/// A remote object read from `at` by ranges of 64 KiB, one at a time
/// (the few lines a cut looks at, not a stream's read-ahead).
struct Ranges<'a> {
    object: &'a RemoteObject,
    at: u64,
}

impl Read for Ranges<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(1 << 16).min(self.object.len().saturating_sub(self.at)) as usize;
        self.object.read_range(self.at, &mut buf[..n])?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The first record start at or after the first line start after `pos`.
fn record_start_after(f: &mut File, pos: u64, fasta: bool) -> std::io::Result<Option<u64>> {
    f.seek(SeekFrom::Start(pos))?;
    record_start_from(BufReader::with_capacity(1 << 16, &mut *f), pos, fasta)
}

/// [`record_start_after`] of the bytes `r` reads from `pos`.
fn record_start_from(mut r: impl BufRead, pos: u64, fasta: bool) -> std::io::Result<Option<u64>> {
    let mut at = pos;
    let mut line = Vec::new();
    // Skip the rest of the current line (pos may be inside it).
    at += r.read_until(b'\n', &mut line)? as u64;
    let mut lines: Vec<(u64, Vec<u8>)> = Vec::new();
    loop {
        // Keep a window of the next three lines.
        while lines.len() < 3 {
            let mut l = Vec::new();
            let n = r.read_until(b'\n', &mut l)?;
            if n == 0 {
                break;
            }
            lines.push((at, l));
            at += n as u64;
        }
        let Some((start, first)) = lines.first() else { return Ok(None) };
        if fasta {
            if first.first() == Some(&b'>') {
                return Ok(Some(*start));
            }
        } else if first.first() == Some(&b'@') && lines.get(2).is_some_and(|(_, l)| l.first() == Some(&b'+')) {
            return Ok(Some(*start));
        }
        if lines.len() < 3 && !fasta {
            return Ok(None);
        }
        lines.remove(0);
    }
}

/// One BGZF block: where it starts, its compressed size, its inflated size.
#[derive(Clone, Copy)]
struct BgzfBlock {
    offset: u64,
    size: u64,
    isize: u64,
}

/// Every block of a BGZF file, from the headers (nothing is inflated).
fn bgzf_blocks(f: &File, len: u64) -> std::io::Result<Vec<BgzfBlock>> {
    let not_bgzf = |at: u64| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not BGZF data at offset {at}"));
    let mut blocks = Vec::new();
    let mut header = Vec::new();
    let mut at = 0;
    while at < len {
        header.resize(BlockHeader::FIXED_LEN, 0);
        f.read_exact_at(&mut header, at).map_err(|_| not_bgzf(at))?;
        header.resize(BlockHeader::FIXED_LEN + BlockHeader::extra_len(&header), 0);
        f.read_exact_at(&mut header[BlockHeader::FIXED_LEN..], at + BlockHeader::FIXED_LEN as u64).map_err(|_| not_bgzf(at))?;
        let size = BlockHeader::parse(&header, at).map_err(|_| not_bgzf(at))?.size as u64;
        let mut isize = [0u8; 4];
        f.read_exact_at(&mut isize, at + size - 4).map_err(|_| not_bgzf(at))?;
        blocks.push(BgzfBlock { offset: at, size, isize: u64::from(u32::from_le_bytes(isize)) });
        at += size;
    }
    Ok(blocks)
}

/// The inflated bytes of the BGZF file from virtual offset `start` to
/// `end` (None: the end of the file).
fn bgzf_range(path: &Path, start: u64, end: Option<u64>) -> std::io::Result<Box<dyn Read + Send>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let blocks = bgzf_blocks(&f, len)?;
    let start = VirtualOffset::from(start);
    let (b0, u0) = (start.compressed(), u64::from(start.uncompressed()));
    let first = blocks.iter().position(|b| b.offset == b0).ok_or_else(|| bad_offset(start))?;
    let (stop_at, inflated) = match end.map(VirtualOffset::from) {
        None => (len, None),
        Some(e) => {
            let (b1, u1) = (e.compressed(), u64::from(e.uncompressed()));
            let last = blocks.iter().position(|b| b.offset == b1).ok_or_else(|| bad_offset(e))?;
            if last < first || (last == first && u1 < u0) {
                return Err(bad_offset(e));
            }
            let whole: u64 = blocks[first..last].iter().map(|b| b.isize).sum();
            let stop = if u1 > 0 { blocks[last].offset + blocks[last].size } else { blocks[last].offset };
            (stop, Some(whole + u1 - u0))
        }
    };
    f.seek(SeekFrom::Start(b0))?;
    // One inflating thread: each part is one worker's.
    let mut inflate = StreamReader::new(Box::new(BufReader::with_capacity(1 << 20, f.take(stop_at - b0))), 1);
    std::io::copy(&mut (&mut inflate).take(u0), &mut std::io::sink())?;
    Ok(match inflated {
        Some(n) => Box::new(inflate.take(n)),
        None => Box::new(inflate),
    })
}

fn bad_offset(v: VirtualOffset) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("virtual offset {} is not in the file", u64::from(v)))
}

/// `split_file` for BGZF: cuts at the first record start after the first
/// block boundary past each target, as virtual offsets.
fn split_bgzf(path: &Path, parts: usize) -> std::io::Result<Vec<(u64, Option<u64>)>> {
    let f = File::open(path)?;
    let len = f.metadata()?.len();
    let blocks = bgzf_blocks(&f, len)?;
    let fasta = {
        let mut head = [0u8; 1];
        bgzf_range(path, 0, None)?.read_exact(&mut head).map(|()| head[0] == b'>').unwrap_or(false)
    };
    let mut cuts: Vec<u64> = vec![0];
    for i in 1..parts {
        let target = len * i as u64 / parts as u64;
        let Some(k) = blocks.iter().position(|b| b.offset >= target) else { break };
        if blocks[k].offset <= *cuts.last().unwrap_or(&0) >> 16 {
            continue;
        }
        // Inflate from this block on until a record start is found (the
        // window of `record_start_in` needs three more lines).
        let mut text = Vec::new();
        let mut r = bgzf_range(path, blocks[k].offset << 16, None)?;
        let mut found = None;
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            let n = r.read(&mut chunk)?;
            text.extend_from_slice(&chunk[..n]);
            if let Some(at) = record_start_in(&text, fasta, n == 0) {
                found = Some(at);
                break;
            }
            if n == 0 {
                break;
            }
        }
        let Some(mut at) = found.map(|a| a as u64) else { break };
        // Offset in the inflated stream -> virtual offset.
        let mut j = k;
        while j < blocks.len() && at >= blocks[j].isize {
            at -= blocks[j].isize;
            j += 1;
        }
        if j >= blocks.len() {
            break;
        }
        let v = (blocks[j].offset << 16) | at;
        if v > *cuts.last().unwrap_or(&0) {
            cuts.push(v);
        }
    }
    let mut out = Vec::new();
    for (i, &c) in cuts.iter().enumerate() {
        out.push((c, cuts.get(i + 1).copied()));
    }
    Ok(out)
}

/// In `text` (starting anywhere), the offset of the first record start
/// after the first newline: a line starting `>` (FASTA), or `@` with a line
/// starting `+` two lines later (FASTQ). None if `text` may be too short
/// to tell (unless `at_end`).
fn record_start_in(text: &[u8], fasta: bool, at_end: bool) -> Option<usize> {
    let mut starts = Vec::new();
    let mut i = text.iter().position(|&c| c == b'\n')? + 1;
    while i < text.len() {
        starts.push(i);
        match text[i..].iter().position(|&c| c == b'\n') {
            Some(n) => i += n + 1,
            None => break,
        }
    }
    // Lines whose end was seen (the last start may be a partial line).
    let complete = if text.ends_with(b"\n") || at_end { starts.len() } else { starts.len().saturating_sub(1) };
    for (k, &s) in starts.iter().enumerate().take(complete) {
        if fasta {
            if text[s] == b'>' {
                return Some(s);
            }
        } else if text[s] == b'@' && k + 2 < complete && text[starts[k + 2]] == b'+' {
            return Some(s);
        }
    }
    None
}
