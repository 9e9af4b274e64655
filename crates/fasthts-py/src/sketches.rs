//! khmer's `HLLCounter` and `SmallCountgraph`, with khmer's method names and
//! values, over `fasthts_kmer::hll` and the library's 4-bit countgraph.

use crate::err;
use fasthts_kmer::hash::{hash_kmer_with, hashes_into, reverse_hash};
use fasthts_kmer::hll::{HllCounter as LibHll, HllError};
use fasthts_kmer::{scripts, Cleaning, Countgraph as LibGraph};
use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::path::PathBuf;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HLLCounter>()?;
    m.add_class::<SmallCountgraph>()?;
    Ok(())
}

/// khmer's exception for each refusal: a read-only attribute is an
/// `AttributeError`, the rest `ValueError`.
fn hll_err(e: HllError) -> PyErr {
    match e {
        HllError::AlreadyCounting(_) => PyAttributeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// khmer's HyperLogLog counter of distinct k-mers (`khmer.HLLCounter`):
/// 2^p one-byte counters for p = ceil(log2((1.04 / error_rate)^2)), 4 to
/// 16. Each k-mer is hashed with MurmurHash3 (with its reverse complement),
/// so estimates are khmer's for the same k, error rate and input.
///
/// >>> h = HLLCounter(0.01, 5)
/// >>> h.consume_string("ACGTTGCATTTAGGCCAGG")
/// 15
/// >>> h.estimate_cardinality() == len(h)
/// True
#[pyclass(module = "fasthts._fasthts", name = "HLLCounter")]
#[derive(Clone)]
pub struct HLLCounter {
    h: LibHll,
}

#[pymethods]
impl HLLCounter {
    #[new]
    #[pyo3(signature = (error_rate=0.01, ksize=20))]
    fn new(error_rate: f64, ksize: u32) -> PyResult<Self> {
        Ok(HLLCounter { h: LibHll::new(error_rate, ksize).map_err(hll_err)? })
    }

    /// The cardinality estimate.
    fn __len__(&self) -> usize {
        self.h.estimate_cardinality() as usize
    }

    /// Adds one k-mer (its bytes, hashed as given).
    fn add(&mut self, kmer: &str) {
        self.h.add(kmer.as_bytes())
    }

    /// The current estimate of the number of distinct k-mers.
    fn estimate_cardinality(&self) -> u64 {
        self.h.estimate_cardinality()
    }

    /// Adds every k-mer of `seq` (as given, uncleaned); returns their number.
    fn consume_string(&mut self, py: Python<'_>, seq: &str) -> PyResult<u64> {
        let mut n = 0;
        let h = &mut self.h;
        crate::kmer::in_windows(py, seq.as_bytes(), h.ksize() as usize, |window| n += h.consume_string(window))?;
        Ok(n)
    }

    /// Adds every k-mer of every read of a FASTA/FASTQ file (cleaned as
    /// khmer's parser does); with `stream_records`, each record is also
    /// written to stdout. Returns `(n_reads, n_kmers)`.
    #[pyo3(signature = (filename, stream_records=false))]
    fn consume_seqfile(&mut self, py: Python<'_>, filename: String, stream_records: bool) -> PyResult<(u64, u64)> {
        let h = &mut self.h;
        crate::run_interruptible(py, || -> Result<(u64, u64), scripts::BoxError> {
            let reader = fasthts_kmer::seqio::SeqReader::open(&filename)?;
            let threads = fasthts_io::pool::thread_count(None);
            let stdout = std::io::stdout();
            let mut out = stream_records.then(|| std::io::BufWriter::new(stdout.lock()));
            h.consume_reader(reader, &filename, threads, out.as_mut().map(|w| w as &mut dyn std::io::Write))
        })?
        .map_err(|e| err(e.to_string()))
    }

    /// Merges `other` (same error rate and k) into this counter.
    fn merge(&mut self, other: PyRef<'_, HLLCounter>) -> PyResult<()> {
        let other = other.h.clone();
        self.h.merge(&other).map_err(hll_err)
    }

    /// The alpha constant of this counter's size.
    #[getter]
    fn alpha(&self) -> f64 {
        self.h.alpha()
    }

    /// 1.04 / sqrt(number of counters); settable before counting starts.
    #[getter]
    fn get_error_rate(&self) -> f64 {
        self.h.error_rate()
    }
    #[setter]
    fn set_error_rate(&mut self, error_rate: Option<f64>) -> PyResult<()> {
        let e = error_rate.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?;
        self.h.set_error_rate(e).map_err(hll_err)
    }

    /// k; settable before counting starts.
    #[getter]
    fn get_ksize(&self) -> u32 {
        self.h.ksize()
    }
    #[setter]
    fn set_ksize(&mut self, k: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let k = k.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?;
        if k.is_instance_of::<pyo3::types::PyFloat>() {
            return Err(PyTypeError::new_err("Please use an integer value for k-mer size"));
        }
        let k: i64 = k.extract()?;
        if k <= 0 {
            return Err(PyValueError::new_err("Please set k-mer size to a value greater than zero"));
        }
        self.h.set_ksize(k as u32).map_err(hll_err)
    }

    /// The counters.
    #[getter]
    fn get_counters(&self) -> Vec<u8> {
        self.h.counters().to_vec()
    }
    #[setter]
    fn set_counters(&mut self, counters: Option<Vec<u8>>) -> PyResult<()> {
        let c = counters.ok_or_else(|| PyTypeError::new_err("Cannot delete attribute"))?;
        self.h.set_counters(c).map_err(hll_err)
    }

    fn __getstate__(&self) -> (u32, f64, Vec<u8>) {
        (self.h.ksize(), self.h.error_rate(), self.h.counters().to_vec())
    }

    fn __setstate__(&mut self, state: (u32, f64, Vec<u8>)) -> PyResult<()> {
        let (k, e, counters) = state;
        let mut h = LibHll::new(e, k).map_err(hll_err)?;
        h.set_counters(counters).map_err(hll_err)?;
        self.h = h;
        Ok(())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.borrow();
        let args = PyTuple::new(py, [this.h.error_rate().into_pyobject(py)?.into_any(), this.h.ksize().into_pyobject(py)?.into_any()])?;
        PyTuple::new(py, [slf.get_type().into_any(), args.into_any(), this.__getstate__().into_pyobject(py)?.into_any()])
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.extract::<PyRef<'_, HLLCounter>>().is_ok_and(|o| o.__getstate__() == self.__getstate__())
    }

    fn __repr__(&self) -> String {
        format!("HLLCounter(error_rate={}, ksize={})", self.h.error_rate(), self.h.ksize())
    }
}

/// khmer's SmallCountgraph (`khmer.SmallCountgraph(ksize, starting_size,
/// n_tables)`): a count-min sketch of 4-bit counters that stop at 15, the
/// tables' sizes the largest odd primes below `starting_size`. Strings are
/// hashed as khmer hashes them (uncleaned: `A`, `C`, `T`, anything else as
/// `G`); files are read as khmer's parser reads them. `.ct` files are
/// khmer's (type 7).
///
/// >>> g = SmallCountgraph(4, 1000, 2)
/// >>> g.consume("ACGTACGT")
/// 5
/// >>> g.get("ACGT")
/// 2
/// >>> for _ in range(20): g.count("TTTT")
/// >>> g.get("TTTT")
/// 15
#[pyclass(module = "fasthts._fasthts", name = "SmallCountgraph")]
pub struct SmallCountgraph {
    g: LibGraph,
}

impl SmallCountgraph {
    /// The hash of a k-mer string (of length k) or a hash given as such.
    fn kmer_hash(&self, kmer: &Bound<'_, PyAny>) -> PyResult<u64> {
        if let Ok(h) = kmer.extract::<u64>() {
            return Ok(h);
        }
        let s: String = kmer.extract().map_err(|_| PyTypeError::new_err("expected a k-mer string or a hash"))?;
        self.hash(&s)
    }

    fn counts(&self, seq: &str) -> PyResult<Vec<u16>> {
        self.check_length(seq)?;
        let mut out = Vec::new();
        self.g.get_counts(seq.as_bytes(), Cleaning::Raw, &mut out);
        Ok(out)
    }

    fn check_length(&self, seq: &str) -> PyResult<()> {
        if seq.len() < self.g.ksize() as usize {
            return Err(PyValueError::new_err(format!(
                "sequence length ({}) must >= the hashtable k-mer size ({})",
                seq.len(),
                self.g.ksize()
            )));
        }
        Ok(())
    }

    fn add_hash(&mut self, h: u64) -> bool {
        let new = self.g.get(h) == 0;
        let order = self.g.reserve_order(1);
        self.g.consume_hashes(&[h], order);
        new
    }
}

#[pymethods]
impl SmallCountgraph {
    #[new]
    fn new(ksize: u32, starting_size: u64, n_tables: usize) -> PyResult<Self> {
        let g = LibGraph::new_small(ksize, starting_size, n_tables).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(SmallCountgraph { g })
    }

    /// Loads a SmallCountgraph `.ct` file written by khmer or `save`.
    #[staticmethod]
    fn load(py: Python<'_>, filename: PathBuf) -> PyResult<SmallCountgraph> {
        let g = py.detach(|| LibGraph::load_small(&filename)).map_err(|e| err(format!("{}: {e}", filename.display())))?;
        Ok(SmallCountgraph { g })
    }

    /// Writes khmer's SmallCountgraph `.ct` (never compressed, as khmer).
    fn save(&mut self, py: Python<'_>, filename: PathBuf) -> PyResult<()> {
        let g = &mut self.g;
        py.detach(|| g.save(&filename)).map_err(PyErr::from)
    }

    fn ksize(&self) -> u32 {
        self.g.ksize()
    }
    /// The table sizes.
    fn hashsizes(&self) -> Vec<u64> {
        self.g.sizes().to_vec()
    }
    fn n_tables(&self) -> usize {
        self.g.n_tables()
    }
    /// Non-zero counters of the first table.
    fn n_occupied(&self) -> u64 {
        self.g.n_occupied()
    }
    /// Adds that found an empty counter (0 after a load).
    fn n_unique_kmers(&self) -> u64 {
        self.g.n_unique_kmers()
    }
    /// Always False: 4-bit counters have no bigcount.
    fn get_use_bigcount(&self) -> bool {
        false
    }
    /// Accepted and ignored, as in khmer.
    fn set_use_bigcount(&mut self, on: bool) {
        let _ = on;
    }

    /// khmer's hash of a k-mer (its canonical two-bit value).
    fn hash(&self, kmer: &str) -> PyResult<u64> {
        if kmer.len() != self.g.ksize() as usize {
            return Err(PyValueError::new_err("k-mer length must equal the k-mer size"));
        }
        Ok(hash_kmer_with(kmer.as_bytes(), Cleaning::Raw).2)
    }

    /// The k-mer of a hash.
    fn reverse_hash(&self, h: u64) -> String {
        reverse_hash(h, self.g.ksize())
    }

    /// The count of a k-mer or hash.
    fn get(&self, kmer: &Bound<'_, PyAny>) -> PyResult<u16> {
        Ok(self.g.get(self.kmer_hash(kmer)?))
    }

    /// Adds one to a k-mer's count.
    fn count(&mut self, kmer: &Bound<'_, PyAny>) -> PyResult<()> {
        let h = self.kmer_hash(kmer)?;
        self.add_hash(h);
        Ok(())
    }

    /// Adds one to a k-mer's count; True if it was new (a counter was 0).
    fn add(&mut self, kmer: &Bound<'_, PyAny>) -> PyResult<bool> {
        let h = self.kmer_hash(kmer)?;
        Ok(self.add_hash(h))
    }

    /// Adds every k-mer of `seq`; returns their number.
    fn consume(&mut self, py: Python<'_>, seq: &str) -> PyResult<u64> {
        crate::kmer::consume_raw(py, &mut self.g, seq)
    }

    /// Adds every k-mer of every read of a FASTA/FASTQ file (as
    /// `fasthts kmer count --small-count`); returns `(n_reads, n_kmers)`.
    #[pyo3(signature = (filename, threads=1))]
    fn consume_seqfile(&mut self, py: Python<'_>, filename: String, threads: usize) -> PyResult<(u64, u64)> {
        let g = &mut self.g;
        let r = crate::run_interruptible(py, || scripts::consume_seqfile(g, &filename, threads, None))?.map_err(|e| err(e.to_string()))?;
        if let Some(at) = r.empty_sequence_at {
            return Err(err(format!("{filename}: record {}: Sequence is empty", at + 1)));
        }
        Ok((r.n_reads, r.n_kmers))
    }

    /// The counts of the k-mers of `seq`, in order.
    fn get_kmer_counts(&self, seq: &str) -> PyResult<Vec<u16>> {
        self.counts(seq)
    }

    /// The hashes of the k-mers of `seq`, in order.
    fn get_kmer_hashes(&self, seq: &str) -> PyResult<Vec<u64>> {
        self.check_length(seq)?;
        let mut v = Vec::new();
        hashes_into(seq.as_bytes(), self.g.ksize(), Cleaning::Raw, &mut v);
        Ok(v)
    }

    /// The k-mers of `seq`, in order.
    fn get_kmers(&self, seq: &str) -> Vec<String> {
        let k = self.g.ksize() as usize;
        if seq.len() < k {
            return Vec::new();
        }
        (0..=seq.len() - k).map(|i| seq[i..i + k].to_string()).collect()
    }

    /// `(median, average, stddev)` of the counts of the k-mers of `seq`,
    /// the last two in single precision as khmer computes them.
    fn get_median_count(&self, seq: &str) -> PyResult<(u16, f32, f32)> {
        let mut c = self.counts(seq)?;
        Ok(scripts::median_average_stddev(&mut c))
    }

    /// The smallest count of the k-mers of `seq`.
    fn get_min_count(&self, seq: &str) -> PyResult<u16> {
        Ok(self.counts(seq)?.into_iter().min().unwrap_or(15))
    }

    /// The largest count of the k-mers of `seq`.
    fn get_max_count(&self, seq: &str) -> PyResult<u16> {
        Ok(self.counts(seq)?.into_iter().max().unwrap_or(0))
    }

    /// Whether the median count of the k-mers of `seq` is at least `median`.
    fn median_at_least(&self, seq: &str, median: u16) -> PyResult<bool> {
        self.check_length(seq)?;
        Ok(self.g.median_at_least(seq.as_bytes(), median, Cleaning::Raw))
    }

    /// `seq` cut before its first k-mer below `abundance`, and the length kept.
    fn trim_on_abundance(&self, seq: &str, abundance: u16) -> PyResult<(String, usize)> {
        self.check_length(seq)?;
        let t = self.g.trim_at(seq.as_bytes(), abundance, Cleaning::Raw);
        Ok((seq[..t].to_string(), t))
    }

    fn __repr__(&self) -> String {
        format!("SmallCountgraph(k={}, hashsizes={:?})", self.g.ksize(), self.g.sizes())
    }
}
