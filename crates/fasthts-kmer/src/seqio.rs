//! FASTA/FASTQ input (plain, gzip, BGZF, stdin) in batches, and khmer's
//! record writer.
//!
//! Records are parsed in place from large buffers: a batch owns the bytes of
//! the complete records it holds, and a record is a view (name, sequence,
//! optional quality) into them; only multi-line sequences are joined into a
//! side buffer. Names are the whole header line after `>`/`@` (description
//! included), as khmer's parsers give them. Line endings `\n` and `\r\n` are
//! accepted. Compression is detected by content: BGZF (bgzip; inflated on
//! several threads, see [`fasthts_io::bgzf::StreamReader`]), other gzip, bzip2.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};

/// A parse or I/O error, with the input's name.
#[derive(Debug, Clone)]
pub struct SeqError {
    /// Human-readable message (one line).
    pub msg: String,
    /// True for khmer's "Sequence is empty" condition.
    pub empty_sequence: bool,
}

impl std::fmt::Display for SeqError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}
impl std::error::Error for SeqError {}

fn err(msg: impl Into<String>) -> SeqError {
    SeqError { msg: msg.into(), empty_sequence: false }
}

/// One record: views into its batch.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// Whole header line after `>`/`@`.
    pub name: &'a [u8],
    /// Sequence (lines joined).
    pub seq: &'a [u8],
    /// Quality for FASTQ, `None` for FASTA.
    pub qual: Option<&'a [u8]>,
}

impl<'a> Record<'a> {
    /// The record cut to its first `len` bases (and qualities).
    pub fn truncated(self, len: usize) -> Record<'a> {
        Record { name: self.name, seq: &self.seq[..len], qual: self.qual.map(|q| &q[..len]) }
    }
    /// Writes it as FASTA or FASTQ (as it was read).
    pub fn write<W: Write + ?Sized>(&self, w: &mut W) -> io::Result<()> {
        write_record(w, self.name, self.seq, self.qual)
    }
}

#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    end: usize,
    extra: bool,
}

#[derive(Clone, Copy, Debug)]
struct RecIdx {
    name: Span,
    seq: Span,
    qual: Option<Span>,
}

/// A batch of complete records in file order.
#[derive(Default)]
pub struct RecordBatch {
    data: Vec<u8>,
    extra: Vec<u8>,
    recs: Vec<RecIdx>,
    /// Batch number within its input (0, 1, ...).
    pub seq_no: u64,
    /// Index of the batch's first record within its input.
    pub first_record: u64,
}

impl RecordBatch {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.recs.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }
    #[inline]
    fn span(&self, s: Span) -> &[u8] {
        if s.extra {
            &self.extra[s.start..s.end]
        } else {
            &self.data[s.start..s.end]
        }
    }
    /// Record `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Record<'_> {
        let r = &self.recs[i];
        Record { name: self.span(r.name), seq: self.span(r.seq), qual: r.qual.map(|q| self.span(q)) }
    }
    /// Records in order.
    pub fn iter(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        (0..self.recs.len()).map(move |i| self.get(i))
    }
    /// Keep only the first `n` records.
    pub fn truncate(&mut self, n: usize) {
        self.recs.truncate(n);
    }
    /// Total sequence bytes.
    pub fn bases(&self) -> u64 {
        self.recs.iter().map(|r| (r.seq.end - r.seq.start) as u64).sum()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Fasta,
    Fastq,
}

/// Open a path (`-` or `/dev/stdin` = standard input), transparently
/// decompressing by content ([`fasthts_io::compression`]: BGZF inflated
/// in parallel, other gzip, bzip2 — khmer's screed opens these by content
/// too).
pub fn open_input(path: &str) -> Result<Box<dyn Read + Send>, SeqError> {
    let threads = fasthts_io::pool::thread_count(None).min(4);
    let name = if path == "/dev/stdin" { "-" } else { path };
    match fasthts_io::compression::open(Path::new(name), threads) {
        Ok((reader, _)) => Ok(reader),
        // `e.path`: a URL shown without credentials.
        Err(e) => Err(err(format!(
            "{}: {}",
            if fasthts_io::remote::is_url(path) { e.path.display().to_string() } else { path.to_string() },
            e.source
        ))),
    }
}

/// Streaming batch reader.
pub struct SeqReader {
    src: Box<dyn Read + Send>,
    name: String,
    buf: Vec<u8>,
    eof: bool,
    format: Option<Format>,
    target: usize,
    batch_no: u64,
    n_records: u64,
    failed: bool,
    /// The cancellation token of the call that opened the reader (reads
    /// may go on on another thread, which has none of its own).
    cancel: Option<fasthts_io::cancel::Token>,
}

/// Default bytes per batch.
pub const DEFAULT_BATCH_BYTES: usize = 1 << 20;

impl SeqReader {
    /// Open `path` (see [`open_input`]).
    pub fn open(path: &str) -> Result<Self, SeqError> {
        Ok(Self::from_reader(open_input(path)?, path))
    }

    /// Read from any byte stream (already decompressed).
    pub fn from_reader(src: Box<dyn Read + Send>, name: &str) -> Self {
        SeqReader {
            src,
            name: name.to_string(),
            buf: Vec::new(),
            eof: false,
            format: None,
            target: DEFAULT_BATCH_BYTES,
            batch_no: 0,
            n_records: 0,
            failed: false,
            cancel: fasthts_io::cancel::current(),
        }
    }

    /// Set the batch size in bytes.
    pub fn with_batch_bytes(mut self, n: usize) -> Self {
        self.target = n.max(1024);
        self
    }

    fn fill(&mut self, want: usize) -> Result<(), SeqError> {
        while !self.eof && self.buf.len() < want {
            if self.cancel.as_ref().is_some_and(fasthts_io::cancel::Token::is_cancelled) {
                return Err(err(format!("{}: cancelled", self.name)));
            }
            let old = self.buf.len();
            let grow = (want - old).max(64 * 1024);
            self.buf.resize(old + grow, 0);
            let n = loop {
                match self.src.read(&mut self.buf[old..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(old);
                        let msg = if e.kind() == io::ErrorKind::UnexpectedEof {
                            format!("{}: truncated or corrupt compressed input", self.name)
                        } else {
                            format!("{}: {e}", self.name)
                        };
                        return Err(err(msg));
                    }
                }
            };
            self.buf.truncate(old + n);
            if n == 0 {
                self.eof = true;
            }
        }
        Ok(())
    }

    /// The next batch, or `None` at the end of input.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, SeqError> {
        if self.failed {
            return Ok(None);
        }
        let r = self.next_batch_inner();
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn next_batch_inner(&mut self) -> Result<Option<RecordBatch>, SeqError> {
        let mut want = self.target;
        loop {
            self.fill(want)?;
            if self.format.is_none() {
                match self.buf.iter().find(|c| !c.is_ascii_whitespace()) {
                    None if self.eof => return Ok(None),
                    None => {
                        want = self.buf.len() + self.target;
                        continue;
                    }
                    Some(b'>') => self.format = Some(Format::Fasta),
                    Some(b'@') => self.format = Some(Format::Fastq),
                    Some(_) => return Err(err(format!("{}: not a FASTA or FASTQ file (records must start with '>' or '@')", self.name))),
                }
            }
            let mut batch = RecordBatch::default();
            let consumed = match self.format.unwrap() {
                Format::Fastq => parse_fastq(&self.buf, self.eof, &mut batch, &self.name, self.n_records)?,
                Format::Fasta => parse_fasta(&self.buf, self.eof, &mut batch, &self.name, self.n_records)?,
            };
            if batch.recs.is_empty() {
                if self.eof {
                    // only whitespace left
                    return Ok(None);
                }
                want = self.buf.len() * 2;
                continue;
            }
            let rest = self.buf[consumed..].to_vec();
            batch.data = std::mem::replace(&mut self.buf, rest);
            batch.seq_no = self.batch_no;
            batch.first_record = self.n_records;
            self.batch_no += 1;
            self.n_records += batch.recs.len() as u64;
            return Ok(Some(batch));
        }
    }
}

#[inline]
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    memchr::memchr(b'\n', &buf[from..]).map(|i| from + i)
}

/// (content end excluding `\r`, next line start) of the line at `p`, or None
/// if the line is incomplete and more input may come.
#[inline]
fn line(buf: &[u8], p: usize, eof: bool) -> Option<(usize, usize)> {
    match line_end(buf, p) {
        Some(e) => {
            let ce = if e > p && buf[e - 1] == b'\r' { e - 1 } else { e };
            Some((ce, e + 1))
        }
        None if eof => {
            let e = buf.len();
            let ce = if e > p && buf[e - 1] == b'\r' { e - 1 } else { e };
            Some((ce, e))
        }
        None => None,
    }
}

fn skip_blank(buf: &[u8], mut p: usize) -> usize {
    while p < buf.len() && (buf[p] == b'\n' || buf[p] == b'\r' || buf[p] == b' ' || buf[p] == b'\t') {
        p += 1;
    }
    p
}

/// The header line of the next record, found by [`record_header`].
enum Header {
    /// The record's name and where the line after the header starts.
    Line { name: Span, next: usize },
    /// No complete header follows: the parse ends, having consumed this much
    /// of the buffer.
    End(usize),
}

/// The header line of the record at or after `p` (blank lines skipped),
/// which must start with `marker` (`kind` names the format in the error).
#[inline]
fn record_header(buf: &[u8], p: usize, eof: bool, marker: u8, kind: &str, name: &str, recno: u64) -> Result<Header, SeqError> {
    let start = skip_blank(buf, p);
    if start >= buf.len() {
        return Ok(Header::End(if eof { buf.len() } else { p }));
    }
    if buf[start] != marker {
        return Err(err(format!("{name}: record {recno}: {kind} record does not start with '{}'", marker as char)));
    }
    Ok(match line(buf, start, eof) {
        Some((he, next)) => Header::Line { name: Span { start: start + 1, end: he, extra: false }, next },
        None => Header::End(p),
    })
}

fn parse_fastq(buf: &[u8], eof: bool, batch: &mut RecordBatch, name: &str, rec_base: u64) -> Result<usize, SeqError> {
    let mut p = 0usize;
    // (start, end) of each sequence and quality line of a record; reused
    // from record to record
    let mut seq_lines: Vec<(usize, usize)> = Vec::new();
    let mut qual_lines: Vec<(usize, usize)> = Vec::new();
    loop {
        let recno = rec_base + batch.recs.len() as u64 + 1;
        let (name_span, mut q) = match record_header(buf, p, eof, b'@', "FASTQ", name, recno)? {
            Header::Line { name, next } => (name, next),
            Header::End(consumed) => return Ok(consumed),
        };
        // sequence lines up to the '+' line
        seq_lines.clear();
        let plus;
        loop {
            if q >= buf.len() {
                if eof {
                    return Err(err(format!("{name}: record {recno}: truncated FASTQ record (no '+' line)")));
                }
                return Ok(p);
            }
            if buf[q] == b'+' {
                let Some((_, nq)) = line(buf, q, eof) else { return Ok(p) };
                plus = nq;
                break;
            }
            let Some((ce, nq)) = line(buf, q, eof) else { return Ok(p) };
            seq_lines.push((q, ce));
            q = nq;
        }
        let seq_len: usize = seq_lines.iter().map(|(a, b)| b - a).sum();
        // quality lines until as long as the sequence
        let mut q = plus;
        qual_lines.clear();
        let mut qual_len = 0usize;
        loop {
            if !qual_lines.is_empty() && qual_len >= seq_len {
                break;
            }
            if q >= buf.len() {
                if eof {
                    break;
                }
                return Ok(p);
            }
            let Some((ce, nq)) = line(buf, q, eof) else { return Ok(p) };
            qual_lines.push((q, ce));
            qual_len += ce - q;
            q = nq;
        }
        if qual_len != seq_len {
            return Err(err(format!(
                "{name}: record {recno} ({}): sequence and quality lengths differ ({seq_len} vs {qual_len})",
                String::from_utf8_lossy(&buf[name_span.start..name_span.end])
            )));
        }
        let seq = join(buf, &seq_lines, &mut batch.extra);
        let qual = join(buf, &qual_lines, &mut batch.extra);
        batch.recs.push(RecIdx { name: name_span, seq, qual: Some(qual) });
        p = q;
    }
}

fn join(buf: &[u8], lines: &[(usize, usize)], extra: &mut Vec<u8>) -> Span {
    match lines.len() {
        0 => Span { start: 0, end: 0, extra: false },
        1 => Span { start: lines[0].0, end: lines[0].1, extra: false },
        _ => {
            let s = extra.len();
            for &(a, b) in lines {
                extra.extend_from_slice(&buf[a..b]);
            }
            Span { start: s, end: extra.len(), extra: true }
        }
    }
}

fn parse_fasta(buf: &[u8], eof: bool, batch: &mut RecordBatch, name: &str, rec_base: u64) -> Result<usize, SeqError> {
    let mut p = 0usize;
    let mut lines: Vec<(usize, usize)> = Vec::new();
    loop {
        let recno = rec_base + batch.recs.len() as u64 + 1;
        let (name_span, mut q) = match record_header(buf, p, eof, b'>', "FASTA", name, recno)? {
            Header::Line { name, next } => (name, next),
            Header::End(consumed) => return Ok(consumed),
        };
        lines.clear();
        loop {
            if q >= buf.len() {
                if eof {
                    break;
                }
                return Ok(p);
            }
            if buf[q] == b'>' {
                break;
            }
            let Some((ce, nq)) = line(buf, q, eof) else { return Ok(p) };
            if ce > q {
                lines.push((q, ce));
            }
            q = nq;
        }
        let seq = join(buf, &lines, &mut batch.extra);
        batch.recs.push(RecIdx { name: name_span, seq, qual: None });
        p = q;
    }
}

/// Read a whole input on a background thread, handing batches over a
/// bounded channel (read-ahead of `depth` batches).
pub fn spawn_reader(path: &str, depth: usize) -> Receiver<Result<RecordBatch, SeqError>> {
    spawn_reader_batched(path, depth, DEFAULT_BATCH_BYTES)
}

/// [`spawn_reader`] with batches of about `batch_bytes` of input.
pub fn spawn_reader_batched(path: &str, depth: usize, batch_bytes: usize) -> Receiver<Result<RecordBatch, SeqError>> {
    let (tx, rx) = sync_channel(depth.max(1));
    let path = path.to_string();
    // The reader works for the caller's call (crate-external cancellation).
    let token = fasthts_io::cancel::current();
    std::thread::spawn(move || {
        fasthts_io::cancel::set_current(token);
        let mut r = match SeqReader::open(&path) {
            Ok(r) => r.with_batch_bytes(batch_bytes),
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        loop {
            match r.next_batch() {
                Ok(Some(b)) => {
                    if tx.send(Ok(b)).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
    });
    rx
}

/// khmer's record writer: FASTQ `@name\nseq\n+\nqual\n`, FASTA `>name\nseq\n`.
pub fn write_record<W: Write + ?Sized>(w: &mut W, name: &[u8], seq: &[u8], qual: Option<&[u8]>) -> io::Result<()> {
    match qual {
        Some(q) => {
            w.write_all(b"@")?;
            w.write_all(name)?;
            w.write_all(b"\n")?;
            w.write_all(seq)?;
            w.write_all(b"\n+\n")?;
            w.write_all(q)?;
            w.write_all(b"\n")
        }
        None => {
            w.write_all(b">")?;
            w.write_all(name)?;
            w.write_all(b"\n")?;
            w.write_all(seq)?;
            w.write_all(b"\n")
        }
    }
}

/// An owned record (for pairing buffers and temp files).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedRecord {
    /// Header line.
    pub name: Vec<u8>,
    /// Sequence.
    pub seq: Vec<u8>,
    /// Quality, if FASTQ.
    pub qual: Option<Vec<u8>>,
}

impl OwnedRecord {
    /// Copy a record view.
    pub fn from_record(r: &Record<'_>) -> Self {
        OwnedRecord { name: r.name.to_vec(), seq: r.seq.to_vec(), qual: r.qual.map(|q| q.to_vec()) }
    }
    /// Copies a record view into this record, reusing its buffers (a
    /// record recycled this way allocates only while its reads grow).
    pub fn set_from(&mut self, r: &Record<'_>) {
        self.name.clear();
        self.name.extend_from_slice(r.name);
        self.seq.clear();
        self.seq.extend_from_slice(r.seq);
        match (r.qual, &mut self.qual) {
            (Some(q), Some(mine)) => {
                mine.clear();
                mine.extend_from_slice(q);
            }
            (Some(q), None) => self.qual = Some(q.to_vec()),
            (None, _) => self.qual = None,
        }
    }
    /// A view of this record.
    pub fn as_record(&self) -> Record<'_> {
        Record { name: &self.name, seq: &self.seq, qual: self.qual.as_deref() }
    }
    /// Write it.
    pub fn write<W: Write + ?Sized>(&self, w: &mut W) -> io::Result<()> {
        write_record(w, &self.name, &self.seq, self.qual.as_deref())
    }
}

/// Iterate all records of a path as owned records (convenience; the hot
/// paths use batches).
pub fn read_all(path: &str) -> Result<Vec<OwnedRecord>, SeqError> {
    let mut r = SeqReader::open(path)?;
    let mut v = Vec::new();
    while let Some(b) = r.next_batch()? {
        v.extend(b.iter().map(|x| OwnedRecord::from_record(&x)));
    }
    Ok(v)
}

/// True if `path` is an existing file (khmer's input checks).
pub fn input_exists(path: &str) -> bool {
    path == "-" || path == "/dev/stdin" || Path::new(path).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(data: &[u8], batch: usize) -> Result<Vec<OwnedRecord>, SeqError> {
        let mut r = SeqReader::from_reader(Box::new(io::Cursor::new(data.to_vec())), "t").with_batch_bytes(batch);
        let mut v = Vec::new();
        while let Some(b) = r.next_batch()? {
            v.extend(b.iter().map(|x| OwnedRecord::from_record(&x)));
        }
        Ok(v)
    }

    #[test]
    fn fastq_and_fasta() {
        let fq = b"@r1 desc\tx\nACGT\n+r1\nIIII\n@r2\r\nAC\r\nGT\r\n+\r\nII\r\nII\r\n@r3\n\n+\n\n@r4\nA\n+\n@\n";
        for bs in [1024, 1, 7] {
            let v = parse_all(fq, bs).unwrap();
            assert_eq!(v.len(), 4);
            assert_eq!(v[0].name, b"r1 desc\tx");
            assert_eq!(v[0].seq, b"ACGT");
            assert_eq!(v[1].seq, b"ACGT");
            assert_eq!(v[1].qual.as_deref(), Some(&b"IIII"[..]));
            assert_eq!(v[2].seq, b"");
            assert_eq!(v[3].qual.as_deref(), Some(&b"@"[..]));
        }
        let fa = b">s1 x\nACGT\nAC\n\n>s2\n>s3\nGGG";
        for bs in [1024, 1, 5] {
            let v = parse_all(fa, bs).unwrap();
            assert_eq!(v.len(), 3);
            assert_eq!(v[0].seq, b"ACGTAC");
            assert_eq!(v[1].seq, b"");
            assert_eq!(v[2].seq, b"GGG");
            assert!(v[2].qual.is_none());
        }
    }

    #[test]
    fn bad_inputs() {
        assert!(parse_all(b"@r1\nACGT\n+\nIII\n@r2\nA\n+\nI\n", 1024).is_err());
        assert!(parse_all(b"@r1\nACGT\n+\nIIIII\n", 1024).is_err());
        assert!(parse_all(b"\x00\x01garbage", 1024).is_err());
        assert!(parse_all(b"@r1\nACGT\n", 1024).is_err());
        assert_eq!(parse_all(b"", 1024).unwrap().len(), 0);
        for bs in [1024, 1] {
            let e = parse_all(b"@r1\nACGT\n+\nIIII\nr2\nA\n+\nI\n", bs).unwrap_err();
            assert_eq!(e.msg, "t: record 2: FASTQ record does not start with '@'");
        }
    }
}
