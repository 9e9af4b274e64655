//! pysam's pileup objects over the library's pysam-style pileup
//! (`fasthts::pileup::columns`): `_PileupIter` fills columns a batch at a
//! time with the GIL released; `PileupColumn` and `PileupRead` give them
//! pysam's attributes. Also `count_coverage`'s arrays
//! (`fasthts::pileup::base_counts`) and `mate()`'s record.

use crate::segment::AlignedSegment;
use fasthts::bam::{flags, Header};
use fasthts::pileup::baq::nt16_htslib_1_24;
use fasthts::pileup::base_counts::BaseCounts;
use fasthts::pileup::columns::{ColumnOptions, ColumnRead, Columns, Stepper};
use fasthts::pileup::PileupError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PileupIter>()?;
    m.add_class::<PileupColumn>()?;
    m.add_class::<PileupRead>()?;
    Ok(())
}

fn pileup_err(e: PileupError) -> PyErr {
    match e {
        PileupError::Read(e) => crate::to_py(e),
        // pysam formats the name's C string as Python bytes.
        PileupError::MissingReference { name, tid } => Python::attach(|py| {
            let shown = PyBytes::new(py, &name).repr().map(|r| r.to_string()).unwrap_or_default();
            PyValueError::new_err(format!("reference sequence for '{shown}' (tid={tid}) not found"))
        }),
        // pysam: "error during iteration" (htslib prints why).
        e => PyValueError::new_err(format!("error during iteration: {e}")),
    }
}

/// pysam's pileup keyword arguments, converted.
pub(crate) fn column_options(
    stepper: &str,
    max_depth: i32,
    ignore_overlaps: bool,
    flag_filter: u32,
    flag_require: u32,
    ignore_orphans: bool,
    min_mapping_quality: i64,
) -> PyResult<ColumnOptions> {
    let stepper = match stepper {
        "all" => Stepper::All,
        "nofilter" => Stepper::NoFilter,
        "samtools" => Stepper::Samtools,
        other => return Err(PyValueError::new_err(format!("unknown stepper option `{other}` in IteratorColumn"))),
    };
    Ok(ColumnOptions { stepper, max_depth, ignore_overlaps, flag_filter, flag_require, ignore_orphans, min_mapping_quality })
}

struct IterState {
    columns: Option<Columns>,
    /// Columns handed out so far (the current one's number).
    seq: u64,
}

/// An iterator over `PileupColumn`s (pysam's `IteratorColumn`).
#[pyclass(frozen, module = "fasthts._fasthts", name = "_PileupIter")]
pub struct PileupIter {
    state: Mutex<IterState>,
    header: Arc<Header>,
    min_base_quality: i64,
}

impl PileupIter {
    pub(crate) fn new(columns: Columns, header: Arc<Header>, min_base_quality: i64) -> Self {
        PileupIter { state: Mutex::new(IterState { columns: Some(columns), seq: 0 }), header, min_base_quality }
    }

    /// The state, waiting without the GIL while another thread holds it.
    fn lock<'a>(&'a self, py: Python<'_>) -> MutexGuard<'a, IterState> {
        loop {
            match self.state.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(|| drop(self.state.lock())),
            }
        }
    }
}

#[pymethods]
impl PileupIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Option<PileupColumn>> {
        let py = slf.py();
        let this = slf.get();
        let mut st = this.lock(py);
        let Some(columns) = st.columns.as_mut() else { return Ok(None) };
        // Column by column with the GIL held, as pysam: a column's reads are
        // collected only if asked for, while it is current.
        let next = match columns.advance() {
            Ok(next) => next,
            Err(e) => {
                st.columns = None;
                return Err(pileup_err(e));
            }
        };
        let Some((tid, pos, n)) = next else {
            st.columns = None;
            return Ok(None);
        };
        let reference = columns.reference_sequence();
        st.seq += 1;
        Ok(Some(PileupColumn {
            tid,
            pos,
            n,
            reference,
            reads: None,
            iter: slf.clone().unbind(),
            seq: st.seq,
            min_base_quality: this.min_base_quality,
            header: this.header.clone(),
        }))
    }
}

/// One pileup column (pysam's `PileupColumn`). Its reads are collected
/// when first asked for, which must be while it is the iterator's current
/// column (pysam's then show another column's reads; here that is a
/// `ValueError`); once collected, it keeps them.
#[pyclass(module = "fasthts._fasthts")]
pub struct PileupColumn {
    tid: i32,
    pos: i64,
    n: usize,
    /// The sequence pysam's column holds (a `fastafile` with the
    /// `samtools` stepper): that of the last read the stepper read.
    reference: Option<Arc<Vec<u8>>>,
    reads: Option<Vec<ColumnRead>>,
    iter: Py<PileupIter>,
    seq: u64,
    min_base_quality: i64,
    header: Arc<Header>,
}

impl PileupColumn {
    fn all(&mut self, py: Python<'_>) -> PyResult<&[ColumnRead]> {
        if self.reads.is_none() {
            let it = self.iter.get();
            let mut guard = it.lock(py);
            let st = &mut *guard;
            let mut reads = Vec::with_capacity(self.n);
            match st.columns.as_mut() {
                Some(columns) if st.seq == self.seq => columns.current_reads(&mut reads).map_err(pileup_err)?,
                _ => {
                    return Err(PyValueError::new_err(
                        "PileupColumn accessed after the iterator moved on: read its reads while it is the current column",
                    ))
                }
            }
            self.reads = Some(reads);
        }
        Ok(self.reads.as_deref().unwrap_or(&[]))
    }

    /// The reads pysam's lists include (base quality filter).
    fn kept(&mut self, py: Python<'_>) -> PyResult<Vec<ColumnRead>> {
        let m = self.min_base_quality;
        Ok(self.all(py)?.iter().filter(|r| !r.below(m)).cloned().collect())
    }
}

const NT16: &[u8; 16] = b"=ACMGRSVTWYHKDBN";

/// pysam's `strand_mark_char`.
fn strand_mark(c: u8, reverse: bool) -> u8 {
    match (c, reverse) {
        (b'=', true) => b',',
        (b'=', false) => b'.',
        (c, true) => c.to_ascii_lowercase(),
        (c, false) => c.to_ascii_uppercase(),
    }
}

#[pymethods]
impl PileupColumn {
    /// The reference id.
    #[getter]
    fn reference_id(&self) -> i32 {
        self.tid
    }

    /// Deprecated name of `reference_id`.
    #[getter]
    fn tid(&self) -> i32 {
        self.tid
    }

    /// The reference name.
    #[getter]
    fn reference_name(&self) -> Option<String> {
        usize::try_from(self.tid).ok().and_then(|t| self.header.references.get(t)).map(|r| r.name.clone())
    }

    /// The 0-based position.
    #[getter]
    fn reference_pos(&self) -> i64 {
        self.pos
    }

    /// Deprecated name of `reference_pos`.
    #[getter]
    fn pos(&self) -> i64 {
        self.pos
    }

    /// Reads at this column (deletions and ref-skips included; no base
    /// quality filter).
    #[getter]
    fn nsegments(&self) -> usize {
        self.n
    }

    /// Deprecated name of `nsegments`.
    #[getter]
    fn n(&self) -> usize {
        self.n
    }

    /// Sets the base quality filter of the `get_*` lists and `pileups`.
    fn set_min_base_quality(&mut self, min_base_quality: i64) {
        self.min_base_quality = min_base_quality;
    }

    /// Reads passing the base quality filter.
    fn get_num_aligned(&mut self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.kept(py)?.len())
    }

    fn __len__(&mut self, py: Python<'_>) -> PyResult<usize> {
        self.get_num_aligned(py)
    }

    /// The reads passing the base quality filter, as `PileupRead`s.
    #[getter]
    fn pileups<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for r in &self.kept(py)? {
            list.append(PileupRead::of(py, r, &self.header)?)?;
        }
        Ok(list)
    }

    /// The bases (samtools mpileup's marks optional), one per read passing
    /// the base quality filter; "" when none passes. `mark_matches` and
    /// the deleted bases of `add_indels` need the pileup's reference
    /// (`fastafile` with the `samtools` stepper): without one, matches are
    /// not marked and deleted bases are `N`.
    #[pyo3(signature = (mark_matches=false, mark_ends=false, add_indels=false))]
    fn get_query_sequences<'py>(
        &mut self,
        py: Python<'py>,
        mark_matches: bool,
        mark_ends: bool,
        add_indels: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        // pysam reads the reference unchecked: its NUL past the end.
        let reference = self.reference.clone();
        let ref_at = |i: i64| -> u8 {
            let seq = reference.as_deref().map_or(&[][..], |s| &s[..]);
            usize::try_from(i).ok().and_then(|i| seq.get(i).copied()).unwrap_or(0)
        };
        let mark_matches = mark_matches && reference.is_some();
        let ref_code = if mark_matches { nt16_htslib_1_24(ref_at(self.pos)) } else { 0 };
        // pysam joins the reads' strings with ':' and splits them there
        // again (a mapping quality of 25 shown after '^' splits too).
        let mut s = Vec::new();
        let mut any = false;
        for r in &self.kept(py)? {
            any = true;
            let rec = r.record();
            let reverse = rec.flag() & flags::REVERSE != 0;
            if mark_ends && r.is_head {
                s.push(b'^');
                s.push(if rec.mapq() > 93 { 126 } else { rec.mapq() + 33 });
            }
            if !r.is_del {
                let mut c = NT16[usize::from(r.base_code_at(r.qpos))];
                if mark_matches && nt16_htslib_1_24(c) == ref_code {
                    c = b'=';
                }
                s.push(strand_mark(c, reverse));
            } else if add_indels {
                s.push(match (r.is_refskip, reverse) {
                    (true, true) => b'<',
                    (true, false) => b'>',
                    (false, _) => b'*',
                });
            }
            if add_indels && r.indel != 0 {
                s.push(if r.indel > 0 { b'+' } else { b'-' });
                s.extend_from_slice(r.indel.unsigned_abs().to_string().as_bytes());
                for j in 1..=i64::from(r.indel.unsigned_abs()) {
                    let c = if r.indel > 0 {
                        NT16[usize::from(r.inserted_base_code(j))]
                    } else if reference.is_some() {
                        ref_at(self.pos + j)
                    } else {
                        b'N'
                    };
                    s.push(strand_mark(c, reverse));
                }
            }
            if mark_ends && r.is_tail {
                s.push(b'$');
            }
            s.push(b':');
        }
        if !any {
            return Ok(PyString::new(py, "").into_any());
        }
        s.pop();
        let list = PyList::empty(py);
        for part in s.split(|&c| c == b':') {
            list.append(PyString::new(py, &String::from_utf8_lossy(part)))?;
        }
        Ok(list.into_any())
    }

    /// Base qualities of the reads passing the filter.
    fn get_query_qualities(&mut self, py: Python<'_>) -> PyResult<Vec<u32>> {
        Ok(self.kept(py)?.iter().map(|r| u32::from(r.qual())).collect())
    }

    /// Mapping qualities of the reads passing the filter.
    fn get_mapping_qualities(&mut self, py: Python<'_>) -> PyResult<Vec<u32>> {
        Ok(self.kept(py)?.iter().map(|r| u32::from(r.record().mapq())).collect())
    }

    /// Query positions of the reads passing the filter.
    fn get_query_positions(&mut self, py: Python<'_>) -> PyResult<Vec<i64>> {
        Ok(self.kept(py)?.iter().map(|r| r.qpos).collect())
    }

    /// Names of the reads passing the filter.
    fn get_query_names(&mut self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.kept(py)?.iter().map(|r| String::from_utf8_lossy(r.record().name()).into_owned()).collect())
    }

    fn __str__(&mut self, py: Python<'_>) -> PyResult<String> {
        let mut out = format!("{}\t{}\t{}\n", self.tid, self.pos, self.n);
        let mut lines = Vec::new();
        for r in &self.kept(py)? {
            let p = Bound::new(py, PileupRead::of(py, r, &self.header)?)?;
            lines.push(p.str()?.to_string());
        }
        out.push_str(&lines.join("\n"));
        Ok(out)
    }
}

/// One read at a column (pysam's `PileupRead`).
#[pyclass(frozen, module = "fasthts._fasthts")]
pub struct PileupRead {
    alignment: Py<AlignedSegment>,
    qpos: i64,
    indel: i32,
    is_del: bool,
    is_refskip: bool,
    is_head: bool,
    is_tail: bool,
}

impl PileupRead {
    fn of(py: Python<'_>, r: &ColumnRead, header: &Arc<Header>) -> PyResult<PileupRead> {
        let seg = AlignedSegment::from_bytes(r.record_bytes().into(), header.clone());
        Ok(PileupRead {
            alignment: Py::new(py, seg)?,
            qpos: r.qpos,
            indel: r.indel,
            is_del: r.is_del,
            is_refskip: r.is_refskip,
            is_head: r.is_head,
            is_tail: r.is_tail,
        })
    }
}

#[pymethods]
impl PileupRead {
    /// The read (qualities as the overlap adjustment left them).
    #[getter]
    fn alignment(&self, py: Python<'_>) -> Py<AlignedSegment> {
        self.alignment.clone_ref(py)
    }

    /// Query position of the base; None in a deletion or ref-skip.
    #[getter]
    fn query_position(&self) -> Option<i64> {
        (!self.is_del && !self.is_refskip).then_some(self.qpos)
    }

    /// Query position of the base, or of the next one in a deletion.
    #[getter]
    fn query_position_or_next(&self) -> i64 {
        self.qpos
    }

    /// Insertion (positive) or deletion (negative) length after this position.
    #[getter]
    fn indel(&self) -> i32 {
        self.indel
    }

    /// Always 0 (pysam: "not computed").
    #[getter]
    fn level(&self) -> i32 {
        0
    }

    /// 1 in a deletion or ref-skip.
    #[getter]
    fn is_del(&self) -> u32 {
        u32::from(self.is_del)
    }

    /// 1 at the read's first aligned position.
    #[getter]
    fn is_head(&self) -> u32 {
        u32::from(self.is_head)
    }

    /// 1 at the read's last aligned position.
    #[getter]
    fn is_tail(&self) -> u32 {
        u32::from(self.is_tail)
    }

    /// 1 in a ref-skip.
    #[getter]
    fn is_refskip(&self) -> u32 {
        u32::from(self.is_refskip)
    }

    fn __str__(&self, py: Python<'_>) -> PyResult<String> {
        let qp = match self.query_position() {
            Some(q) => q.to_string(),
            None => "None".to_string(),
        };
        Ok(format!(
            "{}\t{}\t{}\t0\t{}\t{}\t{}\t{}",
            self.alignment.bind(py).str()?,
            qp,
            self.indel,
            u32::from(self.is_del),
            u32::from(self.is_head),
            u32::from(self.is_tail),
            u32::from(self.is_refskip)
        ))
    }
}

/// `count_coverage`'s four arrays.
pub(crate) type CountArrays<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);

/// The four `array.array('L')` of `counts` (A, C, G, T).
pub(crate) fn count_arrays<'py>(py: Python<'py>, counts: &BaseCounts) -> PyResult<CountArrays<'py>> {
    let arr = |v: &[std::ffi::c_ulong]| {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        crate::segment::py_array(py, "L", &bytes)
    };
    let [a, c, g, t] = &counts.counts;
    Ok((arr(a)?, arr(c)?, arr(g)?, arr(t)?))
}
