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
    /// byte range of a plain file (record-aligned, from `seqfile_split`).
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
                let reader = match (start, end) {
                    // From the start to the end: the whole file, compressed or not.
                    (None | Some(0), None) => SeqReader::open(&path)?,
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

/// Cuts a plain (uncompressed) FASTA/FASTQ file into about `parts` byte
/// ranges `[(start, end), ...]` that begin at record starts, for
/// distributed counting. FASTQ must be 4 lines per record (a cut goes to a
/// line starting `@` whose next-but-one line starts `+`); FASTA cuts go to
/// a line starting `>`. Compressed files come back whole: `[(0, None)]`.
#[pyfunction]
fn seqfile_split(py: Python<'_>, path: String, parts: usize) -> PyResult<Vec<(u64, Option<u64>)>> {
    py.detach(|| split_file(Path::new(&path), parts.max(1))).map_err(|e| crate::to_py(fasthts::Error::from(e).with_path(&path)))
}

fn split_file(path: &Path, parts: usize) -> std::io::Result<Vec<(u64, Option<u64>)>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let mut head = [0u8; 2];
    let n = f.read(&mut head)?;
    if n == 2 && head == [0x1f, 0x8b] || parts == 1 || len == 0 {
        return Ok(vec![(0, None)]);
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
