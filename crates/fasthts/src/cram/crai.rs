//! fasthts' own `.crai` builder, byte-identical to `samtools index` (htslib
//! 1.16's `cram_index_build`) and much faster: htslib reads every byte of
//! the file and decodes each container's compression header, while a
//! `.crai` line needs only the container and slice headers. So the data
//! blocks are skipped (a regular file is read only at its headers, by
//! positional reads), and only multi-reference slices, whose lines give
//! each reference's span within the slice, are decoded (by htslib, their
//! reference ids, positions and CIGARs, on all threads of the current
//! pool). The text is compressed by htslib's own gzip writer, so the
//! bytes are samtools' bytes.
//!
//! A line per slice: reference id, alignment start, span, the container's
//! byte offset, the slice's offset within the container's data (its
//! landmark) and the slice's size in bytes.

use super::container::{container_header, itf8, ltf8, ContainerHeader, Tee};
use super::{c_path, ffi, quiet_htslib, CramOptions, CramReader, Fields, UNREADABLE};
use crate::Error;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

/// Where the CRAM to index comes from.
pub enum CramSource {
    /// A regular file, at this path.
    File(PathBuf),
    /// A stream (a pipe, standard input), read once to its end.
    Stream(Box<dyn Read + Send>),
}

/// What building a `.crai` found besides the index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CraiOutcome {
    /// The input ended without CRAM's EOF container (samtools warns).
    pub missing_eof: bool,
}

/// The name samtools gives the `.crai` of the CRAM at `data`: `DATA.crai`
/// (`index`, `--write-index` of sort and view; the first name htslib looks
/// for). With [`crai_candidates`], the one place a CRAM index is named.
pub fn crai_path_for(data: &Path) -> PathBuf {
    let mut name = data.as_os_str().to_owned();
    name.push(".crai");
    PathBuf::from(name)
}

/// The index files htslib looks for beside the CRAM at `data`
/// (`cram_index_load`): `DATA.crai`, then `DATA` with `.cram` replaced by
/// `.crai`.
pub fn crai_candidates(data: &Path) -> Vec<PathBuf> {
    let mut list = vec![crai_path_for(data)];
    if data.extension().is_some_and(|e| e == "cram") {
        list.push(data.with_extension("crai"));
    }
    list
}

/// Writes the `.crai` of the CRAM `source` (named `name` in errors) to
/// `out`, as `samtools index` writes it. Multi-reference slices are
/// decoded on the current rayon pool. A damaged or truncated input, or
/// one not sorted by position, is an error (and `out` is then
/// unspecified: the caller writes to a temporary name).
pub fn write_crai(name: &Path, source: CramSource, out: &Path) -> Result<CraiOutcome, Error> {
    quiet_htslib();
    let walked = match source {
        CramSource::File(file) => {
            // The header as htslib reads it first, so that a file it
            // cannot read is said alike by every command.
            let options = CramOptions { fields: Fields::Extent, ..CramOptions::default() };
            drop(CramReader::open(&file, &options).map_err(|e| match e {
                // `/dev/stdin` is the user's `-`.
                Error::WithPath { path, source } if path == file => source.with_path(name),
                e => e,
            })?);
            let opened = std::fs::File::open(&file).map_err(|e| Error::from(e).with_path(name))?;
            let len = opened.metadata().map_err(|e| Error::from(e).with_path(name))?.len();
            match walk(name, Source::File { file: &opened, len, pos: 0 }, BATCH_BYTES)? {
                Walked::Index(text, outcome) => Ok((text, outcome)),
                // Not seen from htslib's writers: htslib's builder does it.
                Walked::Unsupported(_) => {
                    super::build_index(&file, out, rayon::current_num_threads()).map(|()| (None, CraiOutcome::default()))
                }
            }
        }
        CramSource::Stream(stream) => {
            let source = Source::Stream { reader: BufReader::with_capacity(1 << 16, stream), pos: 0, body: Vec::new() };
            match walk(name, source, BATCH_BYTES)? {
                Walked::Index(text, outcome) => Ok((text, outcome)),
                Walked::Unsupported(what) => Err(Error::Message(format!("{what}: cannot be indexed from a stream")).with_path(name)),
            }
        }
    }?;
    let (text, outcome) = walked;
    if let Some(text) = text {
        write_gzip(&text, out)?;
    }
    Ok(outcome)
}

/// `text` gzip-compressed into `out` by htslib's `bgzf_open(out, "wg")`,
/// the writer `cram_index_build` uses (zlib at its default level, in
/// 65,280-byte pieces each ended with a partial flush): samtools' bytes.
fn write_gzip(text: &str, out: &Path) -> Result<(), Error> {
    let cannot = || Error::Message("cannot write the index".into()).with_path(out);
    let name = c_path(out)?;
    // SAFETY: NUL-terminated strings that outlive the call.
    let fp = unsafe { ffi::bgzf_open(name.as_ptr(), c"wg".as_ptr()) };
    if fp.is_null() {
        return Err(Error::from(io::Error::last_os_error()).with_path(out));
    }
    // SAFETY: `fp` is open; `text` is valid for its length.
    let written = unsafe { ffi::bgzf_write(fp, text.as_ptr().cast(), text.len()) };
    // SAFETY: `fp` is open and closed once, here.
    let closed = unsafe { ffi::bgzf_close(fp) };
    if written != text.len() as isize || closed != 0 {
        return Err(cannot());
    }
    Ok(())
}

/// What walking a CRAM gives.
enum Walked {
    /// The index text (`None` when htslib's builder wrote it) and what was
    /// found on the way.
    Index(Option<String>, CraiOutcome),
    /// A CRAM this builder does not read (CRAM 1 or 4, a compressed slice
    /// header): why.
    Unsupported(String),
}

/// The bytes of a CRAM, read forward.
enum Source<'a> {
    /// A regular file, read where needed (not mapped: the pages around
    /// each header would count in the resident size).
    File { file: &'a std::fs::File, len: u64, pos: u64 },
    /// A stream; `body` holds the current container's data.
    Stream { reader: BufReader<Box<dyn Read + Send>>, pos: u64, body: Vec<u8> },
}

impl Source<'_> {
    fn pos(&self) -> u64 {
        match self {
            Source::File { pos, .. } => *pos,
            Source::Stream { pos, .. } => *pos,
        }
    }

    fn at_end(&mut self) -> io::Result<bool> {
        use std::io::BufRead;
        match self {
            Source::File { len, pos, .. } => Ok(*pos >= *len),
            Source::Stream { reader, .. } => Ok(reader.fill_buf()?.is_empty()),
        }
    }

    /// Reads with `parse` from the current position, which moves past the
    /// bytes it read; returns them too.
    fn parse<T>(&mut self, mut parse: impl FnMut(&mut Tee<'_>) -> io::Result<T>) -> io::Result<(T, Vec<u8>)> {
        let mut bytes = Vec::with_capacity(64);
        let value = match self {
            Source::File { file, len, pos } => {
                // A window that grows until the parse fits in it (a
                // container header has one ITF8 per slice).
                let mut window = 512u64;
                loop {
                    let n = window.min(*len - (*pos).min(*len)) as usize;
                    let data = Body::File { file, at: *pos, len: n }.get(0, n)?;
                    bytes.clear();
                    match parse(&mut Tee { inner: &mut &data[..], bytes: &mut bytes }) {
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && n as u64 == window => window *= 8,
                        Err(e) => return Err(e),
                        Ok(v) => {
                            *pos += bytes.len() as u64;
                            break v;
                        }
                    }
                }
            }
            Source::Stream { reader, pos, .. } => {
                let v = parse(&mut Tee { inner: reader, bytes: &mut bytes })?;
                *pos += bytes.len() as u64;
                v
            }
        };
        Ok((value, bytes))
    }

    /// The next `len` bytes.
    fn take(&mut self, len: usize) -> io::Result<Body<'_>> {
        match self {
            Source::File { file, len: file_len, pos } => {
                let at = *pos;
                *pos = at.checked_add(len as u64).filter(|e| e <= file_len).ok_or(io::ErrorKind::UnexpectedEof)?;
                Ok(Body::File { file, at, len })
            }
            Source::Stream { reader, pos, body } => {
                body.clear();
                let got = reader.by_ref().take(len as u64).read_to_end(body)?;
                if got < len {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *pos += len as u64;
                Ok(Body::Bytes(body))
            }
        }
    }
}

/// A container's data: in memory, or in the file, read where needed.
enum Body<'a> {
    Bytes(&'a [u8]),
    File { file: &'a std::fs::File, at: u64, len: usize },
}

impl<'a> Body<'a> {
    fn len(&self) -> usize {
        match self {
            Body::Bytes(b) => b.len(),
            Body::File { len, .. } => *len,
        }
    }

    /// Up to `n` bytes from offset `at` (fewer at the end).
    fn get(&self, at: usize, n: usize) -> io::Result<Cow<'a, [u8]>> {
        let end = at.saturating_add(n).min(self.len());
        let at = at.min(end);
        match self {
            Body::Bytes(b) => Ok(Cow::Borrowed(&b[at..end])),
            Body::File { file, at: start, .. } => {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0u8; end - at];
                file.read_exact_at(&mut buf, start + at as u64)?;
                Ok(Cow::Owned(buf))
            }
        }
    }
}

/// A block within a container's data.
struct Block<'a> {
    method: u8,
    content_type: u8,
    /// Its data, when it was checked (else empty: not read).
    data: Cow<'a, [u8]>,
    /// Offset just past the block.
    end: usize,
}

/// The block at `at` of `body` (CRAM `major`); its CRC32 checked when
/// `check` (CRAM 3).
fn block_at<'a>(body: &Body<'a>, at: usize, major: u8, check: bool) -> Result<Block<'a>, String> {
    let cut = || "a block is cut off".to_string();
    // The header: two bytes and three ITF8s of at most 5 bytes.
    let head = body.get(at, 17).map_err(|e| e.to_string())?;
    let mut r = &head[..];
    let fields = |r: &mut &[u8]| -> io::Result<(u8, u8, i32, i32)> {
        let mut two = [0u8; 2];
        r.read_exact(&mut two)?;
        itf8(r)?; // content id
        Ok((two[0], two[1], itf8(r)?, itf8(r)?))
    };
    let (method, content_type, compressed, raw) = fields(&mut r).map_err(|_| cut())?;
    let size = if method == 0 { (raw >= 0 && compressed == raw).then_some(raw) } else { (compressed >= 0 && raw >= 0).then_some(compressed) };
    let size = size.ok_or_else(|| "a block with impossible sizes".to_string())? as usize;
    let head_len = head.len() - r.len();
    let crc_len = if major >= 3 { 4 } else { 0 };
    let end = at + head_len + size + crc_len;
    if end > body.len() {
        return Err(cut());
    }
    let mut data = Cow::Borrowed(&[][..]);
    if check {
        let whole = body.get(at, end - at).map_err(|e| e.to_string())?;
        if major >= 3 {
            let (covered, stored) = whole.split_at(whole.len() - 4);
            if libdeflater::crc32(covered) != u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]) {
                return Err("block CRC32 mismatch".into());
            }
        }
        data = match whole {
            Cow::Borrowed(b) => Cow::Borrowed(&b[head_len..head_len + size]),
            Cow::Owned(b) => Cow::Owned(b[head_len..head_len + size].to_vec()),
        };
    }
    Ok(Block { method, content_type, data, end })
}

/// Block content types (CRAM specification).
const COMPRESSION_HEADER: u8 = 1;
const MAPPED_SLICE: u8 = 2;
const UNMAPPED_SLICE: u8 = 3;

/// One slice of a container, as its `.crai` line needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slice {
    ref_id: i32,
    start: i32,
    span: i32,
    records: i32,
    /// Offset of the slice in the container's data.
    landmark: i32,
    /// Its size: header block and data blocks.
    size: i32,
}

/// Why a container cannot be indexed here.
enum Refusal {
    Damaged(String),
    Unsupported(String),
}

/// The slices of a container from its data `body`, read as htslib's
/// builder reads them: the compression header block first, then each
/// slice where its landmark says, its header block and its data blocks;
/// the blocks must fill the container.
fn slices_of(body: &Body<'_>, header: &ContainerHeader, major: u8) -> Result<Vec<Slice>, Refusal> {
    let damaged = Refusal::Damaged;
    let compression = block_at(body, 0, major, true).map_err(damaged)?;
    if compression.content_type != COMPRESSION_HEADER {
        return Err(damaged("the first block is not a compression header".into()));
    }
    let mut at = compression.end;
    let mut slices = Vec::with_capacity(header.landmarks.len());
    for &landmark in &header.landmarks {
        if at as i64 != i64::from(landmark) {
            return Err(damaged(format!("a slice at offset {at} where its landmark says {landmark}")));
        }
        let head = block_at(body, at, major, true).map_err(damaged)?;
        if head.content_type != MAPPED_SLICE && head.content_type != UNMAPPED_SLICE {
            return Err(damaged("a slice does not start with a slice header".into()));
        }
        if head.method != 0 {
            return Err(Refusal::Unsupported("a compressed slice header".into()));
        }
        let (ref_id, start, span, records, blocks) = slice_header(&head.data, head.content_type, major)
            .map_err(|_| damaged("a slice header is cut off or invalid".into()))?;
        at = head.end;
        for _ in 0..blocks {
            at = block_at(body, at, major, false).map_err(damaged)?.end;
        }
        let size = i32::try_from(at - landmark as usize).map_err(|_| damaged("a slice of more than 2 GiB".into()))?;
        slices.push(Slice { ref_id, start, span, records, landmark, size });
    }
    if at != body.len() {
        return Err(damaged(format!("its blocks end at {at} of its {} bytes", body.len())));
    }
    Ok(slices)
}

/// A slice header's reference id, start, span, record count and block
/// count (htslib's checks: start and span not negative, at least one
/// block and one content id, the MD5 present).
fn slice_header(data: &[u8], content_type: u8, major: u8) -> io::Result<(i32, i32, i32, i32, i32)> {
    let r = &mut &data[..];
    let invalid = || io::Error::from(io::ErrorKind::InvalidData);
    let (ref_id, start, span) = if content_type == MAPPED_SLICE { (itf8(r)?, itf8(r)?, itf8(r)?) } else { (0, 0, 0) };
    if start < 0 || span < 0 {
        return Err(invalid());
    }
    let records = itf8(r)?;
    if major >= 3 {
        ltf8(r)?;
    } else {
        itf8(r)?;
    }
    let blocks = itf8(r)?;
    let content_ids = itf8(r)?;
    if blocks < 1 || content_ids < 1 {
        return Err(invalid());
    }
    for _ in 0..content_ids {
        itf8(r)?;
    }
    if content_type == MAPPED_SLICE {
        itf8(r)?; // embedded reference block
    }
    if r.len() < 16 {
        return Err(invalid());
    }
    Ok((ref_id, start, span, records, blocks))
}

/// A record of a multi-reference slice, as the `.crai` counts it: its
/// reference id, 1-based start, and end (htslib's `bam_endpos`, which is
/// the last base covered, 1-based, or the start when none is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Placement {
    ref_id: i32,
    start: i64,
    end: i64,
}

/// One `.crai` line.
fn line(text: &mut String, ref_id: i32, start: i64, span: i64, container: u64, slice: &Slice) {
    let _ = writeln!(text, "{ref_id}\t{start}\t{span}\t{container}\t{}\t{}", slice.landmark, slice.size);
}

/// The lines of a multi-reference slice: one per run of records on one
/// reference, spanning from the run's first start to its furthest end
/// (htslib's `cram_index_build_multiref`). An error when the records are
/// not sorted within a reference.
fn multi_ref_lines(text: &mut String, records: &[Placement], container: u64, slice: &Slice) -> Result<(), String> {
    let mut run: Option<(i32, i64, i64)> = None;
    let mut last = (-9, -9);
    for r in records {
        if r.ref_id == last.0 && r.start < last.1 {
            return Err(NOT_SORTED.into());
        }
        last = (r.ref_id, r.start);
        match &mut run {
            Some((id, _, end)) if *id == r.ref_id => *end = (*end).max(r.end),
            _ => {
                if let Some((id, start, end)) = run {
                    line(text, id, start, end - start + 1, container, slice);
                }
                run = Some((r.ref_id, r.start, r.end));
            }
        }
    }
    if let Some((id, start, end)) = run {
        line(text, id, start, end - start + 1, container, slice);
    }
    Ok(())
}

const NOT_SORTED: &str = "file is not position sorted";

/// A part of the index not yet written out: text, or the slices of a
/// container whose records are decoded first.
enum Piece {
    Text(String),
    Multi { container: u64, slices: Vec<Slice>, batch_index: usize },
}

/// Containers with multi-reference slices, waiting to be decoded.
#[derive(Default)]
struct Batch {
    /// Each container's bytes and record count.
    containers: Vec<(Vec<u8>, u64)>,
    bytes: usize,
}

/// Multi-reference containers decoded together: about this many bytes.
const BATCH_BYTES: usize = 64 << 20;

/// Reads the header container into `prefix`, ending where htslib's
/// `cram_read_SAM_hdr` ends it: after its blocks, or after its stated
/// length if that is further (padding). Not always at its stated length:
/// htslib 1.16 writes CRAM 2.1 header containers 2 bytes shorter than
/// their blocks.
fn header_container(source: &mut Source<'_>, major: u8, prefix: &mut Vec<u8>) -> io::Result<()> {
    let (header, bytes) = source.parse(|r| container_header(r, major))?;
    prefix.extend_from_slice(&bytes);
    let blocks = header.blocks;
    if blocks < 1 {
        return Err(io::ErrorKind::InvalidData.into());
    }
    let mut len = 0;
    for _ in 0..blocks {
        let (size, bytes) = source.parse(|r| {
            let mut two = [0u8; 2];
            r.read_exact(&mut two)?;
            itf8(r)?;
            let (compressed, raw) = (itf8(r)?, itf8(r)?);
            if compressed < 0 || raw < 0 || (two[0] == 0 && compressed != raw) {
                return Err(io::ErrorKind::InvalidData.into());
            }
            Ok(compressed as usize + if major >= 3 { 4 } else { 0 })
        })?;
        prefix.extend_from_slice(&bytes);
        prefix.extend_from_slice(&source.take(size)?.get(0, size)?);
        len += bytes.len() + size;
    }
    if header.length > len {
        let padding = header.length - len;
        prefix.extend_from_slice(&source.take(padding)?.get(0, padding)?);
    }
    Ok(())
}

/// The offset of the first container after the header container of the
/// CRAM 2 or 3 `file` (`len` bytes), as htslib finds it.
pub(super) fn first_container_offset(file: &std::fs::File, len: u64, major: u8) -> io::Result<u64> {
    let mut source = Source::File { file, len, pos: 26 };
    header_container(&mut source, major, &mut Vec::new())?;
    Ok(source.pos())
}

/// Walks the CRAM in `source`: every container header, every slice header,
/// decoding the records of multi-reference slices in batches.
fn walk(name: &Path, mut source: Source<'_>, batch_bytes: usize) -> Result<Walked, Error> {
    let named = |what: String| Error::Message(what).with_path(name);
    let io_error = |e: io::Error| Error::from(e).with_path(name);
    let definition = source
        .parse(|r| {
            let mut d = [0u8; 26];
            r.read_exact(&mut d)?;
            Ok(d)
        })
        .map_err(|_| named(UNREADABLE.into()))?
        .0;
    let major = definition[4];
    if &definition[..4] != b"CRAM" {
        return Err(named(UNREADABLE.into()));
    }
    if !(2..=3).contains(&major) {
        return Ok(Walked::Unsupported(format!("CRAM {major}.{}", definition[5])));
    }
    // The SAM header's container: kept whole, as the start of the streams
    // multi-reference containers are decoded from.
    let mut prefix = definition.to_vec();
    header_container(&mut source, major, &mut prefix).map_err(|_| named(UNREADABLE.into()))?;

    let mut text = String::new();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut batch = Batch::default();
    let mut last = (-9i64, -9i64);
    let mut eof_seen = false;
    while !source.at_end().map_err(io_error)? {
        let offset = source.pos();
        let damaged = |what: &str| named(format!("damaged CRAM data: the container at byte {offset} {what}"));
        let cut = |e: io::Error| match e.kind() {
            io::ErrorKind::UnexpectedEof => named(format!("truncated CRAM data: the container at byte {offset} is cut off")),
            io::ErrorKind::InvalidData => damaged(&format!("has a damaged header ({e})")),
            _ => io_error(e),
        };
        let (header, header_bytes) = source.parse(|r| container_header(r, major)).map_err(cut)?;
        if i64::from(header.ref_id) == last.0 && i64::from(header.start) < last.1 {
            return Err(named(NOT_SORTED.into()));
        }
        last = (i64::from(header.ref_id), i64::from(header.start));
        eof_seen = header.is_eof();
        let body = source.take(header.length).map_err(cut)?;
        let slices = match slices_of(&body, &header, major) {
            Ok(s) => s,
            Err(Refusal::Damaged(what)) => return Err(damaged(&format!("is damaged: {what}"))),
            Err(Refusal::Unsupported(what)) => return Ok(Walked::Unsupported(what)),
        };
        if slices.iter().any(|s| s.ref_id == -2) {
            let mut bytes = header_bytes;
            bytes.extend_from_slice(&body.get(0, body.len()).map_err(io_error)?);
            let records = slices.iter().map(|s| s.records.max(0) as u64).sum();
            batch.bytes += bytes.len();
            batch.containers.push((bytes, records));
            pieces.push(Piece::Multi { container: offset, slices, batch_index: batch.containers.len() - 1 });
            if batch.bytes >= batch_bytes {
                render(name, &prefix, std::mem::take(&mut batch), &mut pieces, &mut text)?;
            }
        } else {
            let mut lines = String::new();
            for s in &slices {
                line(&mut lines, s.ref_id, i64::from(s.start), i64::from(s.span), offset, s);
            }
            // Text waits behind a container still to be decoded.
            match pieces.last_mut() {
                None => text.push_str(&lines),
                Some(Piece::Text(t)) => t.push_str(&lines),
                Some(Piece::Multi { .. }) => pieces.push(Piece::Text(lines)),
            }
        }
    }
    render(name, &prefix, batch, &mut pieces, &mut text)?;
    Ok(Walked::Index(Some(text), CraiOutcome { missing_eof: !eof_seen }))
}

/// Decodes the containers of `batch` on all threads and appends the text of
/// `pieces` (which it empties) to `text`.
fn render(name: &Path, prefix: &[u8], batch: Batch, pieces: &mut Vec<Piece>, text: &mut String) -> Result<(), Error> {
    use rayon::prelude::*;
    let decoded: Vec<Vec<Placement>> = if batch.containers.is_empty() {
        Vec::new()
    } else {
        // Runs of consecutive containers of about equal size, a few per thread.
        let per_part = batch.bytes.div_ceil(2 * rayon::current_num_threads()).max(1);
        let mut parts: Vec<&[(Vec<u8>, u64)]> = Vec::new();
        let (mut first, mut bytes) = (0, 0);
        for (i, (c, _)) in batch.containers.iter().enumerate() {
            bytes += c.len();
            if bytes >= per_part || i + 1 == batch.containers.len() {
                parts.push(&batch.containers[first..=i]);
                (first, bytes) = (i + 1, 0);
            }
        }
        let decoded: Result<Vec<Vec<Vec<Placement>>>, Error> = parts.par_iter().map(|part| decode(name, prefix, part)).collect();
        decoded?.into_iter().flatten().collect()
    };
    for piece in pieces.drain(..) {
        match piece {
            Piece::Text(t) => text.push_str(&t),
            Piece::Multi { container, slices, batch_index } => {
                let mut records = &decoded[batch_index][..];
                for s in &slices {
                    let (these, rest) = records.split_at((s.records.max(0) as usize).min(records.len()));
                    records = rest;
                    if s.ref_id == -2 {
                        multi_ref_lines(text, these, container, s).map_err(|e| Error::Message(e).with_path(name))?;
                    } else {
                        line(text, s.ref_id, i64::from(s.start), i64::from(s.span), container, s);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The placements of every record of each container of `part`, decoded by
/// htslib from a stream of the file's definition and header container
/// (`prefix`) followed by the part's containers.
fn decode(name: &Path, prefix: &[u8], part: &[(Vec<u8>, u64)]) -> Result<Vec<Vec<Placement>>, Error> {
    let mut stream = prefix.to_vec();
    for (bytes, _) in part {
        stream.extend_from_slice(bytes);
    }
    let options = CramOptions { fields: Fields::Extent, ..CramOptions::default() };
    let mut reader = CramReader::from_stream(name, Box::new(Cursor::new(stream)), &options)?;
    part.iter()
        .map(|&(_, records)| {
            let mut placements = Vec::with_capacity(records as usize);
            for _ in 0..records {
                match reader.next_placement()? {
                    Some(p) => placements.push(p),
                    None => {
                        let what = "CRAM data ends before the records a multi-reference slice announces";
                        return Err(Error::Message(what.into()).with_path(name));
                    }
                }
            }
            Ok(placements)
        })
        .collect()
}

impl CramReader {
    /// The next record's placement, read from htslib's record directly.
    fn next_placement(&mut self) -> Result<Option<Placement>, Error> {
        // SAFETY: all three are open and owned by this reader.
        let ret = unsafe { ffi::sam_read1(self.fp.as_ptr(), self.hdr.as_ptr(), self.record.as_ptr()) };
        if ret == -1 {
            return Ok(None);
        }
        if ret < -1 {
            return Err(self.decode_error());
        }
        self.records_read += 1;
        // SAFETY: sam_read1 filled the record.
        let b = unsafe { self.record.as_ref() };
        let c = &b.core;
        let mut reference_len = 0i64;
        if c.flag & 4 == 0 && c.n_cigar > 0 {
            let at = usize::from(c.l_qname);
            let len = 4 * c.n_cigar as usize;
            if b.data.is_null() || b.l_data < 0 || at + len > b.l_data as usize {
                return Err(Error::Message("CRAM record shorter than its CIGAR".into()).with_path(&self.path));
            }
            // SAFETY: htslib's record holds `l_data` bytes at `data`, the
            // CIGAR (4-byte aligned) after the name.
            let cigar = unsafe { std::slice::from_raw_parts(b.data.add(at), len) };
            reference_len = cigar
                .chunks_exact(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .filter(|op| matches!(op & 0xf, 0 | 2 | 3 | 7 | 8))
                .map(|op| i64::from(op >> 4))
                .sum();
        }
        Ok(Some(Placement { ref_id: c.tid, start: c.pos + 1, end: c.pos + reference_len.max(1) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice() -> Slice {
        Slice { ref_id: -2, start: 0, span: 0, records: 0, landmark: 500, size: 1000 }
    }

    #[test]
    fn a_multi_reference_slice_gives_a_line_per_run_of_one_reference() {
        let p = |ref_id, start, end| Placement { ref_id, start, end };
        let records = [p(0, 10, 109), p(0, 50, 80), p(1, 5, 104), p(-1, 0, 0), p(-1, 0, 0)];
        let mut text = String::new();
        multi_ref_lines(&mut text, &records, 7000, &slice()).unwrap();
        assert_eq!(text, "0\t10\t100\t7000\t500\t1000\n1\t5\t100\t7000\t500\t1000\n-1\t0\t1\t7000\t500\t1000\n");
        let unsorted = [p(0, 50, 80), p(0, 10, 20)];
        assert_eq!(multi_ref_lines(&mut String::new(), &unsorted, 0, &slice()), Err(NOT_SORTED.into()));
    }

    #[test]
    fn blocks_with_impossible_sizes_or_a_bad_crc_are_refused() {
        // RAW, content type 4, id 1, sizes 3 and 3, data, CRC32.
        let mut block = vec![0u8, 4, 1, 3, 3, b'a', b'b', b'c'];
        let crc = libdeflater::crc32(&block);
        block.extend_from_slice(&crc.to_le_bytes());
        let b = block_at(&Body::Bytes(&block), 0, 3, true).unwrap();
        assert_eq!((&b.data[..], b.end), (&b"abc"[..], block.len()));
        assert_eq!(block_at(&Body::Bytes(&block[..8]), 0, 2, true).unwrap().end, 8);
        block[6] = b'x';
        assert!(block_at(&Body::Bytes(&block), 0, 3, true).is_err());
        assert!(block_at(&Body::Bytes(&block), 0, 3, false).is_ok());
        assert!(block_at(&Body::Bytes(&[0, 4, 1, 3, 2, 0, 0, 0]), 0, 2, false).is_err());
        assert!(block_at(&Body::Bytes(&block[..7]), 0, 3, false).is_err());
    }

    /// Multi-reference containers decoded a batch at a time (one container
    /// per batch here) give samtools' lines all the same.
    #[test]
    fn multi_reference_containers_in_small_batches_give_samtools_lines() {
        use std::process::Command;
        let Some(dir) = fasthts_testgen::support::with_samtools("crai-batches") else { return };
        let fasta = dir.path("ref.fa");
        let args = ["-q", "--seed", "23", "--reads", "1500", "--refs", "60", "--ref-len", "10000", "--reference-fasta", fasta.to_str().unwrap()];
        let sam = dir.path("r.sam");
        std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
        let (cram, crai) = (dir.path("r.cram"), dir.path("r.crai"));
        let samtools = |args: &[&std::ffi::OsStr]| {
            let out = Command::new("samtools").args(args).env("REF_PATH", "/nonexistent/%s").output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        samtools(&["faidx".as_ref(), fasta.as_ref()]);
        let opt = "--output-fmt-option".as_ref();
        samtools(&["view".as_ref(), "-C".as_ref(), "-T".as_ref(), fasta.as_ref(), opt, "seqs_per_slice=100".as_ref(), "-o".as_ref(), cram.as_ref(), sam.as_ref()]);
        samtools(&["index".as_ref(), "-o".as_ref(), crai.as_ref(), cram.as_ref()]);
        let mut want = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&crai).unwrap()).read_to_string(&mut want).unwrap();
        let file = std::fs::File::open(&cram).unwrap();
        let len = file.metadata().unwrap().len();
        let Walked::Index(Some(text), outcome) = walk(&cram, Source::File { file: &file, len, pos: 0 }, 1).unwrap() else {
            panic!("not walked");
        };
        assert_eq!(outcome, CraiOutcome { missing_eof: false });
        let slices: std::collections::HashSet<Vec<&str>> = text.lines().map(|l| l.split('\t').skip(3).take(2).collect()).collect();
        assert!(text.lines().count() > slices.len(), "no multi-reference slice made");
        assert_eq!(text, want);
    }
}
