//! The VCF records snp-pileup reads, streamed in file order from plain
//! text, BGZF or gzip, with what FACETS uses of each (contig, position,
//! first allele characters, and whether it is a biallelic single-base
//! record). Nothing is kept: [`scan`] makes a first pass for planning and
//! the walk reads the file again.

use super::PileupError;
use std::path::Path;

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

/// The largest expansion deflate allows (a run of 258 bytes in one bit).
const MAX_DEFLATE_RATIO: usize = 1032;

/// The first and the largest output buffer sizes for inflating the gzip
/// member `data` (at least 18 bytes): the first from its ISIZE (size mod
/// 2^32), both capped by deflate's largest expansion, so a damaged trailer
/// cannot make us allocate gigabytes.
fn gunzip_buffer_bounds(data: &[u8]) -> (usize, usize) {
    let most = data.len().saturating_mul(MAX_DEFLATE_RATIO).max(1 << 16);
    let isize = u32::from_le_bytes(data[data.len() - 4..].try_into().unwrap()) as usize;
    (isize.clamp(1 << 16, most), most)
}

/// Plain (non-BGZF) gzip with a single member.
fn gunzip(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < 18 {
        return None;
    }
    let mut d = libdeflater::Decompressor::new();
    let (mut cap, most) = gunzip_buffer_bounds(data);
    loop {
        let mut buf = vec![0u8; cap];
        match d.gzip_decompress(data, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return Some(buf);
            }
            Err(libdeflater::DecompressionError::InsufficientSpace) if cap < most => cap = cap.saturating_mul(2).min(most),
            Err(_) => return None,
        }
    }
}

/// The decompressed text of a VCF as a stream: plain text and BGZF are
/// read a block at a time (memory does not grow with the file); plain
/// gzip, which cannot be cut into blocks, is inflated whole.
enum Text {
    Plain(std::io::BufReader<std::fs::File>),
    Bgzf { file: std::io::BufReader<std::fs::File>, block: Vec<u8>, out: Vec<u8>, inflater: libdeflater::Decompressor },
    Whole(Vec<u8>),
}

impl Text {
    fn open(path: &Path) -> Result<(Text, Vec<u8>), PileupError> {
        use std::io::Read;
        let mut f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
        let mut head = [0u8; 18];
        let mut got = 0;
        while got < head.len() {
            match f.read(&mut head[got..]).map_err(|e| io_err(path, e))? {
                0 => break,
                n => got += n,
            }
        }
        let head = &head[..got];
        let gz = got >= 2 && head[0] == 0x1f && head[1] == 0x8b;
        let bgzf = got == 18 && gz && head[3] & 4 != 0 && head[12] == b'B' && head[13] == b'C';
        let pending = head.to_vec();
        if !gz {
            return Ok((Text::Plain(std::io::BufReader::with_capacity(1 << 16, f)), pending));
        }
        if bgzf {
            let text = Text::Bgzf {
                file: std::io::BufReader::with_capacity(1 << 16, f),
                block: Vec::new(),
                out: Vec::new(),
                inflater: libdeflater::Decompressor::new(),
            };
            // The 18 bytes read are the first block's header: handed back
            // as "compressed pending" through the Bgzf arm below.
            return Ok((text, pending));
        }
        let mut raw = pending;
        f.read_to_end(&mut raw).map_err(|e| io_err(path, e))?;
        let text = gunzip(&raw).ok_or_else(|| err(path, "damaged or unsupported gzip data"))?;
        Ok((Text::Whole(text), Vec::new()))
    }
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

/// A VCF read line by line, in file order.
pub struct VcfReader {
    path: std::path::PathBuf,
    text: Text,
    /// Compressed bytes read but not yet used (BGZF), or text (plain).
    pending: Vec<u8>,
    /// Decompressed text not yet split into lines, from `start`.
    buf: Vec<u8>,
    start: usize,
    line: Vec<u8>,
    line_no: usize,
    eof: bool,
}

impl VcfReader {
    /// Opens `path` (plain, BGZF or gzip).
    pub fn open(path: &Path) -> Result<VcfReader, PileupError> {
        let (text, pending) = Text::open(path)?;
        let (buf, pending) = match text {
            Text::Plain(_) => (pending, Vec::new()),
            _ => (Vec::new(), pending),
        };
        Ok(VcfReader { path: path.to_path_buf(), text, pending, buf, start: 0, line: Vec::new(), line_no: 0, eof: false })
    }

    /// Reads more text into `buf`; false at the end.
    fn refill(&mut self) -> Result<bool, PileupError> {
        use std::io::Read;
        self.buf.drain(..self.start);
        self.start = 0;
        match &mut self.text {
            Text::Plain(f) => {
                let old = self.buf.len();
                self.buf.resize(old + (1 << 16), 0);
                let n = f.read(&mut self.buf[old..]).map_err(|e| io_err(&self.path, e))?;
                self.buf.truncate(old + n);
                Ok(n > 0)
            }
            Text::Whole(t) => {
                if t.is_empty() {
                    return Ok(false);
                }
                self.buf.append(t);
                Ok(true)
            }
            Text::Bgzf { file, block, out, inflater } => loop {
                // A block: 18-byte header with BSIZE, then the rest.
                let mut header = std::mem::take(&mut self.pending);
                while header.len() < 18 {
                    let mut b = [0u8; 18];
                    let want = 18 - header.len();
                    let n = file.read(&mut b[..want]).map_err(|e| io_err(&self.path, e))?;
                    if n == 0 {
                        if header.is_empty() {
                            return Ok(false);
                        }
                        return Err(err(&self.path, "truncated BGZF block"));
                    }
                    header.extend_from_slice(&b[..n]);
                }
                if header[0] != 0x1f || header[1] != 0x8b || header[12] != b'B' || header[13] != b'C' {
                    return Err(err(&self.path, "damaged BGZF data"));
                }
                let bsize = usize::from(u16::from_le_bytes([header[16], header[17]])) + 1;
                if bsize < 26 {
                    return Err(err(&self.path, "damaged BGZF block"));
                }
                block.clear();
                block.extend_from_slice(&header);
                block.resize(bsize, 0);
                file.read_exact(&mut block[18..]).map_err(|_| err(&self.path, "truncated BGZF block"))?;
                let isize = u32::from_le_bytes(block[bsize - 4..].try_into().unwrap_or([0; 4])) as usize;
                if isize > 65536 {
                    return Err(err(&self.path, "damaged BGZF block"));
                }
                out.resize(isize, 0);
                let n = inflater.deflate_decompress(&block[18..bsize - 8], out).map_err(|_| err(&self.path, "damaged BGZF block"))?;
                if n != isize {
                    return Err(err(&self.path, "damaged BGZF block"));
                }
                if n > 0 {
                    self.buf.extend_from_slice(&out[..n]);
                    return Ok(true);
                }
            },
        }
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
pub fn scan(path: &Path, tile: i64) -> Result<VcfSummary, PileupError> {
    scan_records(path, tile, 0..u64::MAX)
}

/// [`scan`] noting only the usable records numbered `records` (0-based, in
/// file order, counting usable records only): the plan of a run over that
/// block of the VCF (`snp::run_from`). Every line is still checked and
/// counted in `n_records`.
pub fn scan_records(path: &Path, tile: i64, records: std::ops::Range<u64>) -> Result<VcfSummary, PileupError> {
    let mut r = VcfReader::open(path)?;
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
        let mut r = VcfReader::open(&dir).unwrap();
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
    fn gzip_with_absurd_isize_is_refused_without_a_huge_allocation() {
        use std::io::Write;
        let text = b"#CHROM\tPOS\tID\tREF\tALT\n1\t5\t.\tA\tC\n".repeat(100);
        let mut e = fasthts_kmer::flate2::write::GzEncoder::new(Vec::new(), fasthts_kmer::flate2::Compression::default());
        e.write_all(&text).unwrap();
        let mut gz = e.finish().unwrap();
        assert_eq!(gunzip(&gz).unwrap(), text);
        let n = gz.len();
        // ISIZE claims 4 GiB: the buffer stays within deflate's bound
        // (it was 4 GiB, an abort under `ulimit -v`), and the member is
        // refused as damaged.
        gz[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let (first, most) = gunzip_buffer_bounds(&gz);
        assert!(first <= most && most <= (n * MAX_DEFLATE_RATIO).max(1 << 16), "{first} {most}");
        assert!(gunzip(&gz).is_none());
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert_eq!(parse_line(b"1\tx\t.\tA\tC").unwrap_err(), "bad POS \"x\"");
        assert!(parse_line(b"1\t5\t.\tA").is_err());
    }
}
