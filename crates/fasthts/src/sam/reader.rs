//! [`SamReader`]: plain-text SAM streamed from any [`Read`] and encoded into
//! BAM records, one batch at a time or in parallel chunks.

use std::io::{self, Read};

use super::bytes::find2;
use super::header::HeaderBuilder;
use super::{encode_record_with, Positions, RefNames, SamError, SamHeader, Warnings};
use crate::bam::{Header, RecordRef};

/// A warning met while reading records, with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWarning {
    /// 1-based line number.
    pub line: u64,
    /// The read name.
    pub name: String,
    /// What happened.
    pub warnings: Warnings,
}

/// Default size of one read from the input by [`SamReader::new`].
pub const DEFAULT_CHUNK_BYTES: usize = 4 << 20;
/// Warnings kept for [`SamReader::take_warnings`]; later ones are only
/// counted.
pub const MAX_KEPT_WARNINGS: usize = 1000;

/// Streams plain-text SAM: reads the header on creation, then encodes
/// records into BAM form. Input is read in large chunks and split at line
/// ends; each line is encoded straight from the chunk.
pub struct SamReader<R: Read> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    line_no: u64,
    sam_header: SamHeader,
    warnings: Vec<RecordWarning>,
    warning_count: u64,
    positions: Positions,
}

impl<R: Read> SamReader<R> {
    /// Reads the header (all leading lines that start with `@`).
    pub fn new(inner: R) -> Result<SamReader<R>, SamError> {
        SamReader::with_chunk_bytes(inner, DEFAULT_CHUNK_BYTES)
    }

    /// As [`SamReader::new`], reading `chunk_bytes` at a time.
    pub fn with_chunk_bytes(inner: R, chunk_bytes: usize) -> Result<SamReader<R>, SamError> {
        let mut r = SamReader {
            inner,
            buf: vec![0; chunk_bytes.max(64)],
            start: 0,
            end: 0,
            eof: false,
            line_no: 0,
            sam_header: SamHeader { header: Header::default(), names: RefNames::default(), warnings: Vec::new() },
            warnings: Vec::new(),
            warning_count: 0,
            positions: Positions::Bam,
        };
        // Look at the first bytes only (a binary file may have no line end
        // for a long way).
        while r.end < 2 && !r.eof {
            r.read_more()?;
        }
        if fasthts_io::compression::is_gzip(&r.buf[..r.end]) {
            return Err(SamError::Compressed);
        }
        let mut b = HeaderBuilder::default();
        while let Some((ls, le, next)) = r.peek_line()? {
            if le == ls || r.buf[ls] != b'@' {
                break;
            }
            r.start = next;
            r.line_no += 1;
            b.add_line(&r.buf[ls..le])?;
        }
        r.sam_header = b.finish()?;
        Ok(r)
    }

    /// How positions past BAM's 32-bit fields are handled from now on
    /// (refused by default; [`Positions::Unread`] for a caller that does not
    /// look at positions).
    pub fn set_positions(&mut self, positions: Positions) {
        self.positions = positions;
    }

    /// The BAM header.
    pub fn header(&self) -> &Header {
        &self.sam_header.header
    }

    /// The header with its lookup and warnings.
    pub fn sam_header(&self) -> &SamHeader {
        &self.sam_header
    }

    /// Record warnings met so far (at most [`MAX_KEPT_WARNINGS`] are kept
    /// between calls), emptying the list.
    pub fn take_warnings(&mut self) -> Vec<RecordWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// How many records had warnings so far.
    pub fn warning_count(&self) -> u64 {
        self.warning_count
    }

    /// Number of lines consumed so far.
    pub fn line_number(&self) -> u64 {
        self.line_no
    }

    /// The next line as (start, end without line end, start of the line
    /// after), refilling the buffer as needed; `None` at end of input.
    fn peek_line(&mut self) -> io::Result<Option<(usize, usize, usize)>> {
        let mut searched = self.start;
        loop {
            if let Some(k) = find2(&self.buf[searched..self.end], b'\n', b'\n') {
                let nl = searched + k;
                let mut le = nl;
                if le > self.start && self.buf[le - 1] == b'\r' {
                    le -= 1;
                }
                return Ok(Some((self.start, le, nl + 1)));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                return Ok(Some((self.start, self.end, self.end)));
            }
            // Move the partial line to the front, grow if it fills the
            // buffer, and read more.
            let searched_off = self.end - self.start;
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let n = self.buf.len() * 2;
                self.buf.resize(n, 0);
            }
            self.read_more()?;
            searched = searched_off;
        }
    }

    /// One read into the free end of the buffer; sets `eof` on end of input.
    fn read_more(&mut self) -> io::Result<()> {
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn encode_next(&mut self, out: &mut Vec<u8>) -> Result<bool, SamError> {
        let Some((ls, le, next)) = self.peek_line()? else { return Ok(false) };
        self.start = next;
        self.line_no += 1;
        let line = &self.buf[ls..le];
        match encode_record_with(line, &self.sam_header.names, out, self.positions) {
            Ok(w) => {
                if !w.is_empty() {
                    self.warning_count += 1;
                    if self.warnings.len() < MAX_KEPT_WARNINGS {
                        self.warnings.push(RecordWarning { line: self.line_no, name: qname_of(line), warnings: w });
                    }
                }
                Ok(true)
            }
            Err(source) => Err(SamError::Record { line: self.line_no, name: qname_of(line), source }),
        }
    }

    /// Appends encoded records (`block_size` + record each, as in a BAM
    /// stream) to `arena` until it has grown by at least `target_bytes` or
    /// the input ends. Returns the number of records appended; 0 means end
    /// of input.
    pub fn next_batch(&mut self, arena: &mut Vec<u8>, target_bytes: usize) -> Result<usize, SamError> {
        let base = arena.len();
        let mut n = 0;
        while arena.len() - base < target_bytes.max(1) {
            if !self.encode_next(arena)? {
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    /// Calls `f` with each record in turn (a view of its encoded bytes,
    /// checked like a BAM record). Text is read in chunks that are parsed
    /// on all threads of the current rayon pool, the next chunk while `f`
    /// takes the records of the previous one, in order; an error stops at
    /// the first bad line, after `f` has seen every record before it.
    pub fn for_each_record<E, F>(&mut self, mut f: F) -> Result<(), E>
    where
        E: From<SamError> + Send,
        F: FnMut(RecordRef<'_>) -> Result<(), E> + Send,
    {
        let n_ref = self.sam_header.header.references.len();
        let positions = self.positions;
        let mut parsed = match self.read_chunk().map_err(|e| E::from(SamError::Io(e)))? {
            Some(text) => parse_chunk(&text, self.line_no, &self.sam_header.names, n_ref, positions),
            None => return Ok(()),
        };
        loop {
            self.line_no += parsed.lines();
            let next = self.read_chunk().map_err(|e| E::from(SamError::Io(e)))?;
            let names = &self.sam_header.names;
            let next_first_line = self.line_no;
            let (delivered, next_parsed) =
                rayon::join(|| parsed.deliver(&mut f), || next.map(|text| parse_chunk(&text, next_first_line, names, n_ref, positions)));
            // Pieces after a failed one were parsed ahead: their warnings
            // are not the input's (it stops at the error).
            let failed = parsed.pieces.iter().position(|p| p.error.is_some() || p.failed);
            let read = failed.map_or(parsed.pieces.len(), |i| i + 1);
            for piece in &mut parsed.pieces[..read] {
                self.warning_count += piece.warning_count;
                for w in piece.warnings.drain(..) {
                    if self.warnings.len() < MAX_KEPT_WARNINGS {
                        self.warnings.push(w);
                    }
                }
            }
            delivered?;
            match next_parsed {
                Some(p) => parsed = p,
                None => return Ok(()),
            }
        }
    }

    /// The next run of whole lines, at least [`PARSE_CHUNK_BYTES`] of them
    /// unless the input ends first; `None` at end of input.
    fn read_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            let have = self.end - self.start;
            if self.eof || have >= PARSE_CHUNK_BYTES {
                if let Some(last_nl) = memrchr(b'\n', &self.buf[self.start..self.end]) {
                    let cut = self.start + last_nl + 1;
                    let text = self.buf[self.start..cut].to_vec();
                    self.start = cut;
                    return Ok(Some(text));
                }
                if self.eof {
                    if have == 0 {
                        return Ok(None);
                    }
                    let text = self.buf[self.start..self.end].to_vec();
                    self.start = self.end;
                    return Ok(Some(text));
                }
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let n = (self.buf.len() * 2).max(2 * PARSE_CHUNK_BYTES);
                self.buf.resize(n, 0);
            }
            self.read_more()?;
        }
    }
}

/// Text parsed per chunk of [`SamReader::for_each_record`].
const PARSE_CHUNK_BYTES: usize = 4 << 20;
/// Smallest piece of a chunk given to one thread.
const PARSE_PIECE_BYTES: usize = 256 << 10;

fn memrchr(needle: u8, h: &[u8]) -> Option<usize> {
    h.iter().rposition(|&c| c == needle)
}

/// Records encoded from one piece of text, or the error that stopped it.
struct ParsedPiece {
    /// `block_size` + record, back to back, each already checked.
    arena: Vec<u8>,
    lines: u64,
    warnings: Vec<RecordWarning>,
    warning_count: u64,
    error: Option<SamError>,
    /// Its error has been handed on.
    failed: bool,
}

/// A chunk's pieces, in order.
struct ParsedChunk {
    pieces: Vec<ParsedPiece>,
}

impl ParsedChunk {
    fn lines(&self) -> u64 {
        self.pieces.iter().map(|p| p.lines).sum()
    }

    /// Hands the records to `f` in order, up to the first error.
    fn deliver<E, F>(&mut self, f: &mut F) -> Result<(), E>
    where
        E: From<SamError>,
        F: FnMut(RecordRef<'_>) -> Result<(), E>,
    {
        for piece in &mut self.pieces {
            let mut at = 0;
            while at < piece.arena.len() {
                let n = u32::from_le_bytes(piece.arena[at..at + 4].try_into().expect("4 bytes")) as usize;
                f(RecordRef::new_prevalidated(&piece.arena[at + 4..at + 4 + n]))?;
                at += 4 + n;
            }
            if let Some(e) = piece.error.take() {
                piece.failed = true;
                return Err(E::from(e));
            }
        }
        Ok(())
    }
}

/// Encodes the lines of `text` (whole lines) on the current rayon pool,
/// in pieces split at line ends; line numbers count from `first_line + 1`.
fn parse_chunk(text: &[u8], first_line: u64, names: &RefNames, n_ref: usize, positions: Positions) -> ParsedChunk {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads().max(1);
    let piece_bytes = (text.len() / (4 * threads)).max(PARSE_PIECE_BYTES);
    let mut bounds = vec![0];
    while let Some(&last) = bounds.last() {
        if last >= text.len() {
            break;
        }
        let target = (last + piece_bytes).min(text.len());
        let cut = match text[target..].iter().position(|&c| c == b'\n') {
            Some(k) if target < text.len() => target + k + 1,
            _ => text.len(),
        };
        bounds.push(cut);
    }
    let mut pieces: Vec<ParsedPiece> = bounds.par_windows(2).map(|w| parse_piece(&text[w[0]..w[1]], names, n_ref, positions)).collect();
    // Line numbers were counted from each piece's start: make them global.
    let mut base = first_line;
    for piece in &mut pieces {
        for w in &mut piece.warnings {
            w.line += base;
        }
        match &mut piece.error {
            Some(SamError::Record { line, .. }) | Some(SamError::InvalidRecord { line, .. }) => *line += base,
            _ => {}
        }
        base += piece.lines;
    }
    ParsedChunk { pieces }
}

/// Encodes whole lines, stopping at the first bad one; line numbers from 1.
fn parse_piece(text: &[u8], names: &RefNames, n_ref: usize, positions: Positions) -> ParsedPiece {
    let mut piece =
        ParsedPiece { arena: Vec::with_capacity(text.len()), lines: 0, warnings: Vec::new(), warning_count: 0, error: None, failed: false };
    let mut at = 0;
    while at < text.len() {
        let nl = find2(&text[at..], b'\n', b'\n').map_or(text.len(), |k| at + k);
        let mut le = nl;
        if le > at && text[le - 1] == b'\r' {
            le -= 1;
        }
        let line = &text[at..le];
        at = nl + 1;
        piece.lines += 1;
        let start = piece.arena.len();
        match encode_record_with(line, names, &mut piece.arena, positions) {
            Ok(w) => {
                if !w.is_empty() {
                    piece.warning_count += 1;
                    if piece.warnings.len() < MAX_KEPT_WARNINGS {
                        piece.warnings.push(RecordWarning { line: piece.lines, name: qname_of(line), warnings: w });
                    }
                }
                if let Err(defect) = RecordRef::new(&piece.arena[start + 4..], n_ref) {
                    piece.arena.truncate(start);
                    piece.error = Some(SamError::InvalidRecord { line: piece.lines, defect });
                    break;
                }
            }
            Err(source) => {
                piece.arena.truncate(start);
                piece.error = Some(SamError::Record { line: piece.lines, name: qname_of(line), source });
                break;
            }
        }
    }
    piece
}

pub(crate) fn qname_of(line: &[u8]) -> String {
    let end = line.iter().position(|&c| c == b'\t').unwrap_or(line.len()).min(254);
    String::from_utf8_lossy(&line[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sam::tests::{data_dir, ours, varied_sam};

    #[test]
    fn parallel_parsing_keeps_order_line_numbers_and_stops_at_the_first_error() {
        // Enough lines for several pieces per chunk; warnings and one bad
        // line deep inside must carry their own line numbers.
        let mut text = String::from("@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:100000\n");
        for i in 0..40_000 {
            if i == 30_000 {
                text.push_str("bad\tline\n");
            } else if i % 9_999 == 0 {
                // Mapped mate at position 0: htslib's warning, treated as unmapped.
                text.push_str(&format!("r{i}\t1\tchr1\t{}\t60\t4M\tchr1\t0\t0\tACGT\tIIII\n", i + 1));
            } else {
                text.push_str(&format!("r{i}\t0\tchr1\t{}\t60\t4M\t*\t0\t0\tACGT\tIIII\n", i + 1));
            }
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        pool.install(|| {
            let mut sam = SamReader::new(text.as_bytes()).unwrap();
            let mut seen = 0u64;
            let result: Result<(), SamError> = sam.for_each_record(|r| {
                assert_eq!(r.pos() as u64, seen, "records in input order");
                seen += 1;
                Ok(())
            });
            assert_eq!(seen, 30_000, "every record before the bad line, none after");
            match result {
                Err(SamError::Record { line, name, .. }) => assert_eq!((line, name.as_str()), (2 + 30_001, "bad")),
                other => panic!("expected the bad line's error, got {other:?}"),
            }
            let lines: Vec<u64> = sam.take_warnings().iter().map(|w| w.line).collect();
            assert_eq!(lines, vec![3, 3 + 9_999, 3 + 19_998, 3 + 29_997]);
        });
    }

    /// Throughput on a SAM file named by `FASTHTS_SAM_BENCH` (ignored by
    /// default): `FASTHTS_SAM_BENCH=x.sam cargo test -p fasthts --release
    /// sam::reader::tests::throughput -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn throughput() {
        let Ok(path) = std::env::var("FASTHTS_SAM_BENCH") else { return };
        let file = std::fs::File::open(path).unwrap();
        let t = std::time::Instant::now();
        let mut r = SamReader::new(file).unwrap();
        // With FASTHTS_SAM_EXPECT=<samtools view -b --no-PG output>, also
        // compare every byte.
        let expect = std::env::var("FASTHTS_SAM_EXPECT").ok().map(|p| crate::bgzf::decompress_all(&std::fs::read(p).unwrap()).unwrap());
        let mut at = 0;
        if let Some(e) = &expect {
            let h = r.header().to_bytes();
            assert_eq!(&e[..h.len()], &h[..], "headers differ");
            at = h.len();
        }
        let mut arena = Vec::new();
        let (mut n, mut bytes) = (0usize, 0usize);
        loop {
            arena.clear();
            let k = r.next_batch(&mut arena, 8 << 20).unwrap();
            if k == 0 {
                break;
            }
            if let Some(e) = &expect {
                assert!(e[at..].starts_with(&arena), "records {n}..{} differ", n + k);
                at += arena.len();
            }
            n += k;
            bytes += arena.len();
        }
        if let Some(e) = &expect {
            assert_eq!(at, e.len(), "samtools wrote more records");
        }
        let s = t.elapsed().as_secs_f64();
        eprintln!("{n} records, {bytes} BAM bytes in {s:.3} s ({:.0} k records/s)", n as f64 / s / 1e3);
    }

    /// A reader that hands out a few bytes at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 = self.1 % 7 + 1;
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn short_reads_give_the_same_records() {
        let sam = varied_sam();
        let (expected, _) = ours(&sam, DEFAULT_CHUNK_BYTES, 1 << 30).unwrap();
        let mut r = SamReader::with_chunk_bytes(Trickle(&sam, 0), 64).unwrap();
        let mut got = r.header().to_bytes();
        while r.next_batch(&mut got, 1000).unwrap() > 0 {}
        assert!(got == expected);
        // No final line end, and a final "\r" kept as htslib keeps it.
        let sam = b"@SQ\tSN:c\tLN:9\nr\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI";
        let (a, _) = ours(sam, 64, 1).unwrap();
        let (b, _) = ours(&[&sam[..], b"\n"].concat(), 64, 1).unwrap();
        assert_eq!(a, b);
        assert!(ours(&[&sam[..], b"\r"].concat(), 64, 1).is_err());
        assert_eq!(ours(&[&sam[..], b"\r\n"].concat(), 64, 1).unwrap().0, a);
    }

    #[test]
    fn compressed_input_is_refused() {
        let bam = std::fs::read(data_dir().join("small.bam")).unwrap();
        assert!(matches!(SamReader::new(&bam[..]), Err(SamError::Compressed)));
        assert!(SamReader::new(&b""[..]).unwrap().header().text.is_empty());
    }

    #[test]
    fn positions_past_bam_are_refused_unless_unread() {
        let sam = b"@SQ\tSN:c\tLN:9000000000\nr1\t1\tc\t3000000000\t60\t2M\t=\t4000000000\t1000000100\tAC\tII\n";
        let mut r = SamReader::new(&sam[..]).unwrap();
        let refused: Result<(), SamError> = r.for_each_record(|_| Ok(()));
        assert!(refused.unwrap_err().to_string().contains("positional data is too large for BAM format (POS)"));
        let mut r = SamReader::new(&sam[..]).unwrap();
        r.set_positions(Positions::Unread);
        let mut seen = Vec::new();
        r.for_each_record(|rec| {
            seen.push((rec.ref_id(), rec.flag(), rec.pos(), rec.mate_pos(), rec.template_len()));
            Ok::<_, SamError>(())
        })
        .unwrap();
        assert_eq!(seen, vec![(0, 1, -1, -1, 1_000_000_100)]);
    }

    #[test]
    fn for_each_record_views() {
        let sam = b"@SQ\tSN:c\tLN:100\nr1\t0\tc\t5\t60\t2M\t*\t0\t0\tAC\tII\tXY:i:-3\nr2\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\n";
        let mut r = SamReader::new(&sam[..]).unwrap();
        let mut names = Vec::new();
        r.for_each_record(|rec| {
            names.push(rec.name().to_vec());
            Ok::<_, SamError>(())
        })
        .unwrap();
        assert_eq!(names, vec![b"r1".to_vec(), b"r2".to_vec()]);
    }
}
