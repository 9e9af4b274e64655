//! The VCF records snp-pileup reads, streamed in file order from plain
//! text, BGZF, gzip or bzip2 (decompressed by content,
//! [`fasthts_io::compression`]), with what FACETS uses of each (contig, position,
//! first allele characters, and whether it is a biallelic single-base
//! record). Nothing is kept: [`scan`] makes a first pass for planning and
//! the walk reads the file again; a VCF that cannot be read twice (a pipe,
//! a FIFO, process substitution, standard input) is read once into memory
//! ([`VcfSource`]).

use super::PileupError;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the first pass over a VCF learns ([`scan`]): enough to plan the
/// work without keeping the sites.
#[derive(Clone, Debug, Default)]
pub struct VcfSummary {
    /// Number of data lines (used or not), as FACETS' `-p` counts them.
    pub n_records: u64,
    /// For each contig name with usable records: the largest 0-based
    /// position and, for the tiles holding records, the tile's index
    /// (`pos / tile`) and its number of records, sorted by index.
    pub contigs: Vec<(String, i64, Vec<(i64, u64)>)>,
}

/// Errors reading a VCF.
fn err(path: &Path, msg: impl std::fmt::Display) -> PileupError {
    PileupError::Message(format!("{}: {msg}", path.display()))
}

fn io_err(path: &Path, e: std::io::Error) -> PileupError {
    PileupError::Read(crate::Error::from(e).with_path(path))
}

/// One VCF data line as snp-pileup sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// CHROM.
    pub chrom: &'a [u8],
    /// 0-based position.
    pub pos: i64,
    /// First characters of REF and ALT, when the record is usable (exactly
    /// two alleles, both one character long).
    pub alleles: Option<(u8, u8)>,
}

/// Parses one data line.
pub fn parse_line(line: &[u8]) -> Result<Record<'_>, String> {
    let mut fields = line.split(|&c| c == b'\t');
    let (Some(chrom), Some(pos), Some(_id), Some(r), Some(a)) = (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err("fewer than 5 tab-separated columns".into());
    };
    if chrom.is_empty() {
        return Err("empty CHROM".into());
    }
    let pos: i64 = std::str::from_utf8(pos)
        .ok()
        .and_then(|p| p.parse().ok())
        // POS 0 (a telomere) is valid VCF; htslib reads it as -1.
        .filter(|&p: &i64| p >= 0 && p <= i64::from(i32::MAX))
        .ok_or_else(|| format!("bad POS {:?}", String::from_utf8_lossy(pos)))?;
    if r.is_empty() || a.is_empty() {
        return Err("empty REF or ALT".into());
    }
    let n_alt = if a == b"." { 0 } else { a.split(|&c| c == b',').count() };
    let alleles = (n_alt == 1 && r.len() == 1 && a.len() == 1).then(|| (r[0], a[0]));
    Ok(Record { chrom, pos: pos - 1, alleles })
}

/// A VCF to read in several passes: a regular file is opened again for
/// each; anything else (a pipe, a FIFO, process substitution, `/dev/stdin`,
/// `-`) is read once, as it arrives, and held in memory as it came
/// (compressed or not) for the passes to read.
#[derive(Clone, Debug)]
pub struct VcfSource {
    path: PathBuf,
    held: Option<Arc<HeldBytes>>,
}

/// A stream's bytes, held for the passes.
#[derive(Debug)]
struct HeldBytes(Vec<u8>);

impl AsRef<[u8]> for HeldBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// A reader of held bytes, shared by the passes.
struct SharedCursor(Cursor<ArcBytes>);

struct ArcBytes(Arc<HeldBytes>);

impl AsRef<[u8]> for ArcBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0 .0
    }
}

impl Read for SharedCursor {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl VcfSource {
    /// The VCF at `path` (`-`: standard input; a URL, streamed from its
    /// start by each reader); a stream is read whole now.
    pub fn open(path: &Path) -> Result<VcfSource, PileupError> {
        if path.to_str().is_some_and(fasthts_io::remote::is_url) {
            return Ok(VcfSource { path: path.to_path_buf(), held: None });
        }
        let stream = path.as_os_str() == "-" || !std::fs::metadata(path).map_err(|e| io_err(path, e))?.file_type().is_file();
        let held = if stream {
            let mut bytes = Vec::new();
            let read = if path.as_os_str() == "-" {
                std::io::stdin().lock().read_to_end(&mut bytes)
            } else {
                std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes))
            };
            read.map_err(|e| io_err(path, e))?;
            Some(Arc::new(HeldBytes(bytes)))
        } else {
            None
        };
        Ok(VcfSource { path: path.to_path_buf(), held })
    }

    /// The path given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text, decompressed by content, from its start.
    fn text(&self) -> Result<Box<dyn Read + Send>, PileupError> {
        // One inflating thread: the walk that reads the VCF is one of the
        // job's threads, and a VCF inflates far faster than sites are piled up.
        let opened = match &self.held {
            None => fasthts_io::compression::open(&self.path, 1).map_err(|e| e.source),
            Some(bytes) => fasthts_io::compression::decompress(SharedCursor(Cursor::new(ArcBytes(bytes.clone()))), 1),
        };
        opened.map(|(text, _)| text).map_err(|e| io_err(&self.path, e))
    }
}

/// A VCF read line by line, in file order.
pub struct VcfReader {
    path: std::path::PathBuf,
    text: Box<dyn std::io::Read + Send>,
    /// Decompressed text not yet split into lines, from `start`.
    buf: Vec<u8>,
    start: usize,
    line: Vec<u8>,
    line_no: usize,
    eof: bool,
}

impl VcfReader {
    /// Reads `source` (plain, BGZF, gzip or bzip2) from its start.
    pub fn open(source: &VcfSource) -> Result<VcfReader, PileupError> {
        let text = source.text()?;
        Ok(VcfReader { path: source.path.clone(), text, buf: Vec::new(), start: 0, line: Vec::new(), line_no: 0, eof: false })
    }

    /// Reads more text into `buf`; false at the end.
    fn refill(&mut self) -> Result<bool, PileupError> {
        self.buf.drain(..self.start);
        self.start = 0;
        let old = self.buf.len();
        self.buf.resize(old + (1 << 16), 0);
        let n = loop {
            match self.text.read(&mut self.buf[old..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                r => break r.map_err(|e| io_err(&self.path, e))?,
            }
        };
        self.buf.truncate(old + n);
        Ok(n > 0)
    }

    /// The next data line (headers skipped), or `None` at the end.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, PileupError> {
        loop {
            let found = loop {
                if let Some(i) = self.buf[self.start..].iter().position(|&c| c == b'\n') {
                    break Some(i);
                }
                if self.eof || !self.refill()? {
                    self.eof = true;
                    break None;
                }
            };
            self.line.clear();
            match found {
                Some(i) => {
                    self.line.extend_from_slice(&self.buf[self.start..self.start + i]);
                    self.start += i + 1;
                }
                None if self.start < self.buf.len() => {
                    self.line.extend_from_slice(&self.buf[self.start..]);
                    self.start = self.buf.len();
                }
                None => return Ok(None),
            }
            self.line_no += 1;
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
            if self.line.is_empty() || self.line[0] == b'#' {
                continue;
            }
            break;
        }
        let (path, no) = (&self.path, self.line_no);
        parse_line(&self.line).map(Some).map_err(|m| err(path, format_args!("line {no}: {m}")))
    }
}

/// The first pass: counts the records, checks every line and notes where
/// usable records are (tiles of `tile` bases), without keeping them.
pub fn scan(source: &VcfSource, tile: i64) -> Result<VcfSummary, PileupError> {
    scan_records(source, tile, 0..u64::MAX)
}

/// [`scan`] noting only the usable records numbered `records` (0-based, in
/// file order, counting usable records only): the plan of a run over that
/// block of the VCF (`snp::run_from`). Every line is still checked and
/// counted in `n_records`.
pub fn scan_records(source: &VcfSource, tile: i64, records: std::ops::Range<u64>) -> Result<VcfSummary, PileupError> {
    let mut r = VcfReader::open(source)?;
    let mut out = VcfSummary::default();
    let mut names: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
    let mut last: Option<usize> = None;
    let mut used: u64 = 0;
    while let Some(rec) = r.next_record()? {
        out.n_records += 1;
        if rec.alleles.is_none() {
            continue;
        }
        used += 1;
        if !records.contains(&(used - 1)) {
            continue;
        }
        let id = match last {
            Some(id) if out.contigs[id].0.as_bytes() == rec.chrom => id,
            _ => {
                let id = match names.get(rec.chrom) {
                    Some(&id) => id,
                    None => {
                        out.contigs.push((String::from_utf8_lossy(rec.chrom).into_owned(), -1, Vec::new()));
                        names.insert(rec.chrom.to_vec(), out.contigs.len() - 1);
                        out.contigs.len() - 1
                    }
                };
                last = Some(id);
                id
            }
        };
        let c = &mut out.contigs[id];
        c.1 = c.1.max(rec.pos);
        let t = rec.pos.max(0) / tile.max(1);
        match c.2.last_mut() {
            Some(last) if last.0 == t => last.1 += 1,
            _ => c.2.push((t, 1)),
        }
    }
    for c in &mut out.contigs {
        // Merge the counts of a tile seen in several stretches.
        c.2.sort_unstable_by_key(|t| t.0);
        let mut merged: Vec<(i64, u64)> = Vec::with_capacity(c.2.len());
        for &(t, n) in &c.2 {
            match merged.last_mut() {
                Some(last) if last.0 == t => last.1 += n,
                _ => merged.push((t, n)),
            }
        }
        c.2 = merged;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &[u8]) -> Vec<(String, i64, Option<(u8, u8)>)> {
        let dir = std::env::temp_dir().join(format!("fasthts-vcf-test-{}-{}", std::process::id(), text.len()));
        std::fs::write(&dir, text).unwrap();
        let mut r = VcfReader::open(&VcfSource::open(&dir).unwrap()).unwrap();
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            out.push((String::from_utf8_lossy(rec.chrom).into_owned(), rec.pos, rec.alleles));
        }
        std::fs::remove_file(&dir).unwrap();
        out
    }

    #[test]
    fn keeps_biallelic_snvs_only() {
        let text = b"##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\n\
            1\t5\t.\tA\tC\t.\t.\t.\n1\t6\t.\tA\tC,G\n1\t7\t.\tAT\tA\n1\t8\t.\tA\t.\n\
            chr2\t9\t.\tt\t*\n1\t10\t.\tN\tN";
        let got = records(text);
        assert_eq!(got.len(), 6);
        let used: Vec<_> = got.iter().filter_map(|(c, p, a)| a.map(|a| (c.as_str(), *p, a))).collect();
        assert_eq!(used, vec![("1", 4, (b'A', b'C')), ("chr2", 8, (b't', b'*')), ("1", 9, (b'N', b'N'))]);
    }

    #[test]
    fn bgzf_and_plain_read_the_same() {
        let mut text = b"#h\n".to_vec();
        for i in 0..20_000 {
            text.extend_from_slice(format!("chr1\t{}\t.\tA\tG\n", i + 1).as_bytes());
        }
        let mut gz = Vec::new();
        {
            let mut w = crate::bgzf::BgzfWriter::new(&mut gz, crate::bgzf::DEFAULT_LEVEL);
            std::io::Write::write_all(&mut w, &text).unwrap();
            w.finish().unwrap();
        }
        let a = records(&text);
        let b = records(&gz);
        assert_eq!(a.len(), 20_000);
        assert_eq!(a, b);
    }

    #[test]
    fn gzip_reads_as_plain_and_damage_is_an_error_naming_the_file() {
        use std::io::Write;
        let text = b"#CHROM\tPOS\tID\tREF\tALT\n1\t5\t.\tA\tC\n".repeat(100);
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&text).unwrap();
        let mut gz = e.finish().unwrap();
        assert_eq!(records(&gz), records(&text));
        let n = gz.len();
        // A trailer that does not match the data (ISIZE claims 4 GiB).
        gz[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let path = std::env::temp_dir().join(format!("fasthts-vcf-damaged-{}.vcf.gz", std::process::id()));
        std::fs::write(&path, &gz).unwrap();
        let mut r = VcfReader::open(&VcfSource::open(&path).unwrap()).unwrap();
        let e = std::iter::from_fn(|| Some(r.next_record().map(|rec| rec.is_some()))).find(|r| !matches!(r, Ok(true))).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(e.unwrap_err().to_string().starts_with(&path.display().to_string()));
    }

    #[test]
    fn a_fifo_is_read_once_and_every_pass_sees_it_whole() {
        let dir = std::env::temp_dir().join(format!("fasthts-vcf-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("sites.vcf");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let text = b"#CHROM\tPOS\tID\tREF\tALT\n1\t5\t.\tA\tC\n2\t9\t.\tG\tT\n".to_vec();
        let writer = {
            let (fifo, text) = (fifo.clone(), text.clone());
            std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
        };
        let source = VcfSource::open(&fifo).unwrap();
        writer.join().unwrap();
        for _ in 0..2 {
            assert_eq!(scan(&source, 1000).unwrap().n_records, 2);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert_eq!(parse_line(b"1\tx\t.\tA\tC").unwrap_err(), "bad POS \"x\"");
        assert!(parse_line(b"1\t5\t.\tA").is_err());
    }
}
