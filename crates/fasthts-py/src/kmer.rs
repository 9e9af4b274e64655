//! khmer's `Countgraph` over `fasthts::kmer`.

use crate::err;
use fasthts::kmer::hash::{hash_kmer_with, hashes_into};
use fasthts::kmer::seqio::{SeqError, SeqReader};
use fasthts::kmer::{scripts, Cleaning, Countgraph as LibGraph};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Countgraph>()?;
    m.add_function(wrap_pyfunction!(seqfile_split, m)?)?;
    m.add_function(wrap_pyfunction!(countgraph_from_bytes, m)?)?;
    Ok(())
}

fn seq_err(e: SeqError) -> PyErr {
    err(e.to_string())
}

/// khmer's Countgraph: `n_tables` tables of 8-bit saturating counters whose
/// sizes are the largest odd primes below `table_size` (a count-min
/// sketch). Counts and `.ct` files are khmer 3.0's. `bigcount=True` tracks
/// counts above 255 (up to 65535) as load-into-counting does; khmer's
/// `Countgraph` constructor leaves it off. k is 1 to 32 as in khmer, or up
/// to 64 (a fasthts extension, the CLI's `--long-k`: khmer cannot read
/// such tables).
///
/// >>> g = Countgraph(4, 1000, 2)
/// >>> g.consume("ACGTACGT")
/// 5
/// >>> g.get("ACGT"), g.get("TTTT")
/// (2, 0)
/// >>> g.get_median_count("ACGTACGT")[0]
/// 2
/// >>> (g + g).get("ACGT")
/// 4
#[pyclass(module = "fasthts._fasthts")]
pub struct Countgraph {
    g: LibGraph,
}

#[pymethods]
impl Countgraph {
    #[new]
    #[pyo3(signature = (k, table_size, n_tables, bigcount=false))]
    fn new(k: u32, table_size: u64, n_tables: usize, bigcount: bool) -> PyResult<Self> {
        let mut g = LibGraph::new(k, table_size, n_tables).map_err(|e| PyValueError::new_err(e.to_string()))?;
        g.set_use_bigcount(bigcount);
        Ok(Countgraph { g })
    }

    /// Loads a `.ct` (or `.ct.gz`) file written by khmer or `save`.
    #[staticmethod]
    fn load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Countgraph> {
        let g = py.detach(|| LibGraph::load(&path)).map_err(|e| err(format!("{}: {e}", path.display())))?;
        Ok(Countgraph { g })
    }

    /// Writes the graph as khmer's `.ct` (gzip-compressed when the name
    /// ends in `.gz`), atomically.
    fn save(&mut self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let g = &mut self.g;
        py.detach(|| g.save(&path)).map_err(|e| PyErr::from(e))
    }

    /// k.
    fn ksize(&self) -> u32 {
        self.g.ksize()
    }
    /// Table sizes (khmer's `hashsizes()`).
    fn hashsizes(&self) -> Vec<u64> {
        self.g.sizes().to_vec()
    }
    /// Number of tables.
    fn n_tables(&self) -> usize {
        self.g.n_tables()
    }
    /// Non-zero bins of table 0.
    fn n_occupied(&self) -> u64 {
        self.g.n_occupied()
    }
    /// khmer's `n_unique_kmers()` (adds that found an empty bin; 0 after a
    /// load or a merge).
    fn n_unique_kmers(&self) -> u64 {
        self.g.n_unique_kmers()
    }
    /// khmer's false-positive estimate.
    fn fp_rate(&self) -> f64 {
        self.g.fp_rate()
    }
    /// Whether counts above 255 are tracked.
    #[getter]
    fn bigcount(&self) -> bool {
        self.g.use_bigcount()
    }
    /// khmer's `set_use_bigcount`.
    fn set_use_bigcount(&mut self, on: bool) {
        self.g.set_use_bigcount(on)
    }

    /// Adds every k-mer of `seq` (khmer's C++ cleaning: `acgt` upper-cased,
    /// other letters as `A`); returns the number of k-mers added.
    fn consume(&mut self, seq: &str) -> u64 {
        let mut v = Vec::new();
        hashes_into(seq.as_bytes(), self.g.ksize(), Cleaning::CppParser, &mut v);
        let order = self.g.reserve_order(1);
        self.g.consume_hashes(&v, order);
        v.len() as u64
    }

    /// Adds every k-mer of every read of a FASTA/FASTQ file (plain, gzip or
    /// BGZF), as `fasthts kmer count` (load-into-counting); `threads`
    /// counting threads give the same table as one. Returns
    /// `(n_reads, n_kmers)`. With `start`/`end`, only the records of that
    /// part of the file (record-aligned, from `seqfile_split`): byte offsets
    /// in a plain file, BGZF virtual offsets in a BGZF-compressed one.
    #[pyo3(signature = (path, threads=1, start=None, end=None))]
    fn consume_seqfile(
        &mut self,
        py: Python<'_>,
        path: String,
        threads: usize,
        start: Option<u64>,
        end: Option<u64>,
    ) -> PyResult<(u64, u64)> {
        let g = &mut self.g;
        let r = py
            .detach(|| -> Result<scripts::ConsumeResult, SeqError> {
                let io = |e: std::io::Error| SeqError { msg: format!("{path}: {e}"), empty_sequence: false };
                let reader = match (start, end) {
                    // From the start to the end: the whole file, compressed or not.
                    (None | Some(0), None) => SeqReader::open(&path)?,
                    (s, e) if is_bgzf(Path::new(&path)).map_err(io)? => {
                        let src = bgzf_range(Path::new(&path), s.unwrap_or(0), e).map_err(io)?;
                        SeqReader::from_reader(src, &path)
                    }
                    (s, e) => {
                        let s = s.unwrap_or(0);
                        let mut f = File::open(&path).map_err(|e| SeqError { msg: format!("{path}: {e}"), empty_sequence: false })?;
                        f.seek(SeekFrom::Start(s)).map_err(|e| SeqError { msg: format!("{path}: {e}"), empty_sequence: false })?;
                        let src: Box<dyn Read + Send> = match e {
                            Some(e) => Box::new(BufReader::with_capacity(1 << 20, f.take(e.saturating_sub(s)))),
                            None => Box::new(BufReader::with_capacity(1 << 20, f)),
                        };
                        SeqReader::from_reader(src, &path)
                    }
                };
                scripts::consume_reader(g, reader, threads, None)
            })
            .map_err(seq_err)?;
        if let Some(at) = r.empty_sequence_at {
            return Err(err(format!("{path}: record {}: Sequence is empty", at + 1)));
        }
        Ok((r.n_reads, r.n_kmers))
    }

    /// The count of a k-mer (a string of length k) or of a hash value.
    fn get(&self, kmer: &Bound<'_, PyAny>) -> PyResult<u16> {
        if let Ok(h) = kmer.extract::<u64>() {
            return Ok(self.g.get(h));
        }
        let s: String = kmer.extract().map_err(|_| PyTypeError::new_err("get() takes a k-mer string or a hash"))?;
        if s.len() != self.g.ksize() as usize {
            return Err(PyValueError::new_err(format!("k-mer length {} does not match k = {}", s.len(), self.g.ksize())));
        }
        Ok(self.g.get_kmer(s.as_bytes()))
    }

    /// khmer's `hash(kmer)`: the canonical hash of a k-mer.
    fn hash(&self, kmer: &str) -> PyResult<u64> {
        if kmer.len() != self.g.ksize() as usize {
            return Err(PyValueError::new_err(format!("k-mer length {} does not match k = {}", kmer.len(), self.g.ksize())));
        }
        Ok(hash_kmer_with(kmer.as_bytes(), Cleaning::CppParser).2)
    }

    /// The counts of every k-mer of `seq`.
    fn get_kmer_counts(&self, seq: &str) -> Vec<u16> {
        let mut out = Vec::new();
        self.g.get_counts(seq.as_bytes(), Cleaning::CppParser, &mut out);
        out
    }

    /// khmer's `get_median_count(seq)`: `(median, average, stddev)` of the
    /// counts of the k-mers of `seq` (median of the sorted counts at index
    /// n/2; population standard deviation).
    fn get_median_count(&self, seq: &str) -> PyResult<(u16, f64, f64)> {
        let mut c = Vec::new();
        self.g.get_counts(seq.as_bytes(), Cleaning::CppParser, &mut c);
        if c.is_empty() {
            return Err(PyValueError::new_err("sequence is shorter than k"));
        }
        let n = c.len() as f64;
        let avg = c.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let var = c.iter().map(|&v| (f64::from(v) - avg).powi(2)).sum::<f64>() / n;
        c.sort_unstable();
        Ok((c[c.len() / 2], avg, var.sqrt()))
    }

    /// abundance-dist's histogram of the k-mers of a file: element `i` is
    /// the number of distinct k-mers (by a Bloom filter of the graph's
    /// sizes) with count `i`; 65536 elements, as khmer.
    #[pyo3(signature = (path, threads=2))]
    fn abundance_distribution(&self, py: Python<'_>, path: String, threads: usize) -> PyResult<Vec<u64>> {
        let g = &self.g;
        py.detach(|| scripts::abundance_histogram(g, &path, threads)).map_err(seq_err)
    }

    /// Adds `other`'s counts to this graph, in place: every bin becomes
    /// `min(255, a + b)`, exactly what one graph fed both inputs holds.
    /// With bigcount on, counts above 255 are the sum of both graphs'
    /// counts (capped at 65535) for every k-mer above 255 in either; a
    /// k-mer that passes 255 only in the sum reads 255. `n_unique_kmers`
    /// becomes 0 (as after a load). Same k and table sizes required.
    fn merge(&mut self, py: Python<'_>, other: PyRef<'_, Countgraph>) -> PyResult<()> {
        if std::ptr::eq(&self.g, &other.g) {
            return Err(PyValueError::new_err("cannot merge a countgraph with itself"));
        }
        let g = &mut self.g;
        let o = &other.g;
        py.detach(|| g.merge_from(o)).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// `a + b`: a new graph holding the merge of both (see `merge`).
    fn __add__(&self, py: Python<'_>, other: PyRef<'_, Countgraph>) -> PyResult<Countgraph> {
        let (a, b) = (&self.g, &other.g);
        let merged = py
            .detach(|| -> Result<LibGraph, fasthts::kmer::table::TableError> {
                let mut g = LibGraph::with_sizes(a.ksize(), a.sizes().to_vec())?;
                g.set_use_bigcount(a.use_bigcount());
                g.merge_from(a)?;
                g.merge_from(b)?;
                Ok(g)
            })
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Countgraph { g: merged })
    }

    fn __iadd__(&mut self, py: Python<'_>, other: PyRef<'_, Countgraph>) -> PyResult<()> {
        self.merge(py, other)
    }

    /// The `.ct` bytes (what `save` writes, uncompressed).
    fn to_bytes<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let g = &mut self.g;
        let v = py.detach(|| -> std::io::Result<Vec<u8>> {
            let mut v = Vec::new();
            g.write_ct(&mut v)?;
            Ok(v)
        })?;
        Ok(PyBytes::new(py, &v))
    }

    fn __reduce__<'py>(mut slf: PyRefMut<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let bytes = slf.to_bytes(py)?;
        let f = py.import("fasthts._fasthts")?.getattr("_countgraph_from_bytes")?;
        PyTuple::new(py, [f, PyTuple::new(py, [bytes])?.into_any()])
    }

    fn __repr__(&self) -> String {
        format!("Countgraph(k={}, hashsizes={:?}, bigcount={})", self.g.ksize(), self.g.sizes(), self.g.use_bigcount())
    }
}

/// A graph from `.ct` bytes (unpickling).
#[pyfunction]
#[pyo3(name = "_countgraph_from_bytes")]
fn countgraph_from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Countgraph> {
    let data = data.to_vec();
    let g = py.detach(|| LibGraph::read_ct(&mut data.as_slice())).map_err(|e| err(e.to_string()))?;
    Ok(Countgraph { g })
}

/// Cuts a FASTA/FASTQ file into about `parts` ranges `[(start, end), ...]`
/// that begin at record starts, for distributed counting: byte offsets of
/// a plain file, or BGZF virtual offsets (`block << 16 | offset in block`)
/// of a BGZF-compressed one. FASTQ must be 4 lines per record (a cut goes
/// to a line starting `@` whose next-but-one line starts `+`); FASTA cuts go
/// to a line starting `>`. Other gzip files come back whole: `[(0, None)]`.
#[pyfunction]
fn seqfile_split(py: Python<'_>, path: String, parts: usize) -> PyResult<Vec<(u64, Option<u64>)>> {
    py.detach(|| split_file(Path::new(&path), parts.max(1))).map_err(|e| crate::to_py(fasthts::Error::from(e).with_path(&path)))
}

fn split_file(path: &Path, parts: usize) -> std::io::Result<Vec<(u64, Option<u64>)>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let mut head = [0u8; 2];
    let n = f.read(&mut head)?;
    if parts == 1 || len == 0 {
        return Ok(vec![(0, None)]);
    }
    if n == 2 && head == [0x1f, 0x8b] {
        return if is_bgzf(path)? { split_bgzf(path, parts) } else { Ok(vec![(0, None)]) };
    }
    let fasta = head[0] == b'>';
    let mut cuts = vec![0u64];
    for i in 1..parts {
        let target = len * i as u64 / parts as u64;
        if target <= *cuts.last().unwrap_or(&0) {
            continue;
        }
        match record_start_after(&mut f, target, fasta)? {
            Some(c) if c > *cuts.last().unwrap_or(&0) && c < len => cuts.push(c),
            _ => {}
        }
    }
    cuts.dedup();
    let mut out = Vec::new();
    for (i, &c) in cuts.iter().enumerate() {
        out.push((c, cuts.get(i + 1).copied().or(Some(len))));
    }
    Ok(out)
}

/// The first record start at or after the first line start after `pos`.
fn record_start_after(f: &mut File, pos: u64, fasta: bool) -> std::io::Result<Option<u64>> {
    f.seek(SeekFrom::Start(pos))?;
    let mut r = BufReader::with_capacity(1 << 16, &mut *f);
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

/// The BGZF header of the block at `offset` (None at the end of the file or
/// when the data is not BGZF there).
fn bgzf_block_at(f: &mut File, offset: u64) -> std::io::Result<Option<BgzfBlock>> {
    let mut h = [0u8; 18];
    f.seek(SeekFrom::Start(offset))?;
    let mut got = 0;
    while got < h.len() {
        match f.read(&mut h[got..])? {
            0 => break,
            n => got += n,
        }
    }
    if got < 18 || h[..4] != [0x1f, 0x8b, 8, 4] || &h[12..14] != b"BC" || h[14..16] != [2, 0] {
        return Ok(None);
    }
    let size = u64::from(u16::from_le_bytes([h[16], h[17]])) + 1;
    let mut tail = [0u8; 4];
    f.seek(SeekFrom::Start(offset + size - 4))?;
    f.read_exact(&mut tail)?;
    Ok(Some(BgzfBlock { offset, size, isize: u64::from(u32::from_le_bytes(tail)) }))
}

/// Whether `path` starts with a BGZF block.
fn is_bgzf(path: &Path) -> std::io::Result<bool> {
    Ok(bgzf_block_at(&mut File::open(path)?, 0)?.is_some())
}

/// Every block of a BGZF file, from the headers (nothing is inflated).
fn bgzf_blocks(f: &mut File, len: u64) -> std::io::Result<Vec<BgzfBlock>> {
    let mut blocks = Vec::new();
    let mut at = 0;
    while at < len {
        match bgzf_block_at(f, at)? {
            Some(b) => {
                at += b.size;
                blocks.push(b);
            }
            None => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not BGZF data at offset {at}"))),
        }
    }
    Ok(blocks)
}

/// The inflated bytes of the BGZF file from virtual offset `start` to
/// `end` (None: the end of the file).
fn bgzf_range(path: &Path, start: u64, end: Option<u64>) -> std::io::Result<Box<dyn Read + Send>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let blocks = bgzf_blocks(&mut f, len)?;
    let (b0, u0) = (start >> 16, start & 0xffff);
    let first = blocks.iter().position(|b| b.offset == b0).ok_or_else(|| bad_offset(start))?;
    let (stop_at, inflated) = match end {
        None => (len, None),
        Some(e) => {
            let (b1, u1) = (e >> 16, e & 0xffff);
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
    let compressed = BufReader::with_capacity(1 << 20, f.take(stop_at - b0));
    let mut inflate = fasthts::kmer::flate2::read::MultiGzDecoder::new(compressed);
    std::io::copy(&mut (&mut inflate).take(u0), &mut std::io::sink())?;
    Ok(match inflated {
        Some(n) => Box::new(inflate.take(n)),
        None => Box::new(inflate),
    })
}

fn bad_offset(v: u64) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("virtual offset {v} is not in the file"))
}

/// `split_file` for BGZF: cuts at the first record start after the first
/// block boundary past each target, as virtual offsets.
fn split_bgzf(path: &Path, parts: usize) -> std::io::Result<Vec<(u64, Option<u64>)>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let blocks = bgzf_blocks(&mut f, len)?;
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
