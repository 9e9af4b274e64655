//! khmer's `Countgraph` over `fasthts_kmer`.

use crate::{err, threads_arg, FsPath};
use fasthts_kmer::hash::{hash_kmer_with, hashes_into};
use fasthts_kmer::seqio::SeqError;
use fasthts_kmer::{command, scripts, split, Cleaning, Countgraph as LibGraph};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::path::Path;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Countgraph>()?;
    m.add_function(wrap_pyfunction!(seqfile_split, m)?)?;
    m.add_function(wrap_pyfunction!(countgraph_from_bytes, m)?)?;
    Ok(())
}

/// An `OSError` naming `path` (`FileNotFoundError`, `IsADirectoryError`,
/// `PermissionError`) when it cannot be opened for reading, as the
/// scripts check it (`command::check_readable`): the k-mer readers'
/// errors are messages only.
fn check_readable(path: &Path) -> PyResult<()> {
    command::check_readable(path).map_err(|e| {
        let e = match e.raw_os_error() {
            // EISDIR
            Some(21) => fasthts::Error::IsADirectory,
            _ => e.into(),
        };
        // A URL is named without credentials.
        crate::to_py(e.with_path(&fasthts_io::remote::shown_path(path)))
    })
}

impl Countgraph {
    /// khmer's refusal of a sequence shorter than k.
    fn check_length(&self, seq: &str) -> PyResult<()> {
        let k = self.g.ksize() as usize;
        if seq.len() < k {
            return Err(PyValueError::new_err(format!("sequence length ({}) must >= the hashtable k-mer size ({k})", seq.len())));
        }
        Ok(())
    }

    /// The hash of a k-mer given as a string, as khmer's Python API hashes it.
    fn kmer_hash(&self, kmer: &str) -> PyResult<u64> {
        let k = self.g.ksize() as usize;
        if kmer.len() != k {
            return Err(PyValueError::new_err(format!("Expected k-mer length {k} but got {}.", kmer.len())));
        }
        Ok(hash_kmer_with(kmer.as_bytes(), Cleaning::Raw).2)
    }
}

/// Bases of a long sequence consumed between two looks for Ctrl-C.
const CONSUME_WINDOW: usize = 1 << 20;

/// Calls `f` on consecutive windows of `seq` sharing `k - 1` bases (each
/// k-mer is in exactly one), looking for signals (Ctrl-C) between the
/// windows of a long sequence.
pub(crate) fn in_windows(py: Python<'_>, seq: &[u8], k: usize, mut f: impl FnMut(&[u8])) -> PyResult<()> {
    let overlap = k.max(1) - 1;
    let mut start = 0;
    loop {
        let end = (start + CONSUME_WINDOW + overlap).min(seq.len());
        f(&seq[start..end]);
        if end == seq.len() {
            return Ok(());
        }
        py.check_signals()?;
        start += CONSUME_WINDOW;
    }
}

/// Adds every k-mer of `seq` to `g`, hashed as khmer's Python API hashes
/// strings (see `Countgraph.consume`), in windows (see [`in_windows`]).
pub(crate) fn consume_raw(py: Python<'_>, g: &mut LibGraph, seq: &str) -> PyResult<u64> {
    let k = g.ksize();
    let mut hashes = Vec::new();
    let mut n = 0u64;
    in_windows(py, seq.as_bytes(), k as usize, |window| {
        hashes.clear();
        hashes_into(window, k, Cleaning::Raw, &mut hashes);
        let order = g.reserve_order(1);
        g.consume_hashes(&hashes, order);
        n += hashes.len() as u64;
    })?;
    Ok(n)
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
    fn load(py: Python<'_>, path: FsPath) -> PyResult<Countgraph> {
        let g = py.detach(|| LibGraph::load(&path)).map_err(|e| match e {
            fasthts_kmer::ctfile::CtError::Io(io) => crate::to_py(fasthts::Error::from(io).with_path(&*path)),
            e => err(format!("{}: {e}", path.display())),
        })?;
        Ok(Countgraph { g })
    }

    /// Writes the graph as khmer's `.ct` (gzip-compressed when the name
    /// ends in `.gz`), atomically.
    fn save(&mut self, py: Python<'_>, path: FsPath) -> PyResult<()> {
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

    /// Adds every k-mer of `seq`, hashed as khmer's Python API hashes
    /// strings (not cleaned: `A`, `C`, `T` as themselves, anything else,
    /// lowercase and `N` included, as `G`); returns the number of k-mers.
    /// A sequence shorter than k is a ValueError, as in khmer.
    /// A long sequence is consumed in windows, Ctrl-C seen between them
    /// (the k-mers before it stay counted).
    fn consume(&mut self, py: Python<'_>, seq: &str) -> PyResult<u64> {
        self.check_length(seq)?;
        consume_raw(py, &mut self.g, seq)
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
        path: FsPath,
        threads: i64,
        start: Option<u64>,
        end: Option<u64>,
    ) -> PyResult<(u64, u64)> {
        let threads = threads_arg(Some(threads))?.unwrap_or(1);
        check_readable(&path)?;
        let path = path.display().to_string();
        let g = &mut self.g;
        let r = crate::run_interruptible(py, || -> Result<scripts::ConsumeResult, SeqError> {
            let reader = split::open_part(&path, start, end)?;
            scripts::consume_reader(g, reader, threads, None)
        })?
        .map_err(seq_err)?;
        if let Some(at) = r.empty_sequence_at {
            return Err(err(format!("{path}: record {}: Sequence is empty", at + 1)));
        }
        Ok((r.n_reads, r.n_kmers))
    }

    /// The count of a k-mer (a string of length k, hashed as `consume`
    /// hashes) or of a hash value.
    fn get(&self, kmer: &Bound<'_, PyAny>) -> PyResult<u16> {
        if let Ok(h) = kmer.extract::<u64>() {
            return Ok(self.g.get(h));
        }
        let s: String = kmer.extract().map_err(|_| PyTypeError::new_err("get() takes a k-mer string or a hash"))?;
        Ok(self.g.get(self.kmer_hash(&s)?))
    }

    /// khmer's `hash(kmer)`: the canonical hash of a k-mer (not cleaned,
    /// as `consume`).
    fn hash(&self, kmer: &str) -> PyResult<u64> {
        self.kmer_hash(kmer)
    }

    /// khmer's `get_kmer_hashes(seq)`: the hash of every k-mer of `seq`.
    fn get_kmer_hashes(&self, seq: &str) -> PyResult<Vec<u64>> {
        self.check_length(seq)?;
        let mut v = Vec::new();
        hashes_into(seq.as_bytes(), self.g.ksize(), Cleaning::Raw, &mut v);
        Ok(v)
    }

    /// The counts of every k-mer of `seq` (hashed as `consume`).
    fn get_kmer_counts(&self, seq: &str) -> PyResult<Vec<u16>> {
        Ok(self.get_kmer_hashes(seq)?.into_iter().map(|h| self.g.get(h)).collect())
    }

    /// khmer's `get_median_count(seq)`: `(median, average, stddev)` of the
    /// counts of the k-mers of `seq` (median of the sorted counts at index
    /// n/2; population standard deviation).
    fn get_median_count(&self, seq: &str) -> PyResult<(u16, f64, f64)> {
        let mut c = self.get_kmer_counts(seq)?;
        // In single precision, as khmer computes them (its `float`s).
        let n = c.len() as f32;
        let avg = c.iter().fold(0f32, |a, &v| a + f32::from(v)) / n;
        let var = c.iter().fold(0f32, |a, &v| a + (f32::from(v) - avg) * (f32::from(v) - avg)) / n;
        c.sort_unstable();
        Ok((c[c.len() / 2], f64::from(avg), f64::from(var.sqrt())))
    }

    /// abundance-dist's histogram of the k-mers of a file: element `i` is
    /// the number of distinct k-mers (by a Bloom filter of the graph's
    /// sizes) with count `i`; 65536 elements, as khmer.
    #[pyo3(signature = (path, threads=2))]
    fn abundance_distribution(&self, py: Python<'_>, path: FsPath, threads: i64) -> PyResult<Vec<u64>> {
        let threads = threads_arg(Some(threads))?.unwrap_or(1);
        check_readable(&path)?;
        let path = path.display().to_string();
        let g = &self.g;
        crate::run_interruptible(py, || scripts::abundance_histogram(g, &path, threads))?.map_err(seq_err)
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
            .detach(|| -> Result<LibGraph, fasthts_kmer::table::TableError> {
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
/// to a line starting `>`. Other compressed files come back whole: `[(0, None)]`.
#[pyfunction]
fn seqfile_split(py: Python<'_>, path: FsPath, parts: usize) -> PyResult<Vec<(u64, Option<u64>)>> {
    py.detach(|| split::split_file(&path, parts.max(1))).map_err(|e| crate::to_py(fasthts::Error::from(e).with_path(&fasthts_io::remote::shown_path(&path))))
}
