//! `BamFile`, `Record`: a BAM, CRAM or SAM file (`fasthts::alignment_file`),
//! its regions and its records as objects or as columns (`crate::columns`).

use crate::columns::{self, Column, Columns};
use crate::regions::{region_arg, region_args, Region};
use crate::source::{next_records, Source};
use crate::{err, run_detached, threads_arg, to_py, with_threads, FsPath};
use fasthts::alignment_file::{AlignmentFile, OpenOptions};
use fasthts::bam::{AuxValue, Header, RecordRef};
use fasthts::command::REGION_BYTES;
use fasthts::cram::{CramOptions, Fields};
use fasthts::region::indexed::{Cursor, Rule, WithoutIndex};
use fasthts::region::{pieces, Plan};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BamFile>()?;
    m.add_class::<Record>()?;
    m.add_class::<RecordIter>()?;
    m.add_class::<Column>()?;
    Ok(())
}

/// The reference names of the alignment file at `path`.
pub(crate) fn reference_names(py: Python<'_>, path: &Path) -> PyResult<Vec<String>> {
    run_detached(py, |w| Ok(AlignmentFile::open(path, &OpenOptions::default(), w)?.header().references.iter().map(|r| r.name.clone()).collect()))
}

/// Region arguments (`regions`, an iterable of them) against the
/// references of the alignment file at `path` (its one name map).
pub(crate) fn file_regions(py: Python<'_>, path: &Path, regions: &Bound<'_, PyAny>) -> PyResult<Vec<fasthts::region::Region>> {
    let names = run_detached(py, |w| Ok(AlignmentFile::open(path, &OpenOptions::default(), w)?.ref_names().clone()))?;
    regions.try_iter()?.map(|r| region_arg(&names, &r?)).collect()
}

/// A BAM file, memory-mapped, with its index; a CRAM file, decoded by
/// htslib; or SAM text, read whole from its start (a bgzipped one by region
/// through its index). What it is and how it is read are the library's
/// decisions (`fasthts::alignment_file`).
#[pyclass(frozen, subclass, module = "fasthts._fasthts")]
pub struct BamFile {
    file: AlignmentFile,
    names: Arc<Vec<String>>,
}

impl BamFile {
    fn header(&self) -> &Header {
        self.file.header()
    }

    fn file_path(&self) -> &Path {
        self.file.path()
    }

    /// As the CLI, a file without its end-of-file marker is reported (a
    /// Python `UserWarning` with the CLI's text) by every call that reads it.
    fn eof_check(&self, py: Python<'_>) -> PyResult<()> {
        let w = crate::Warnings::default();
        self.file.warn_if_truncated(&w);
        w.issue(py)
    }
}

/// The FASTA of a CRAM: `reference=`, or pysam's name for it,
/// `reference_filename=` (not both, unless the same).
fn reference_arg(reference: Option<FsPath>, reference_filename: Option<FsPath>) -> PyResult<Option<PathBuf>> {
    match (reference.map(|p| p.0), reference_filename.map(|p| p.0)) {
        (Some(a), Some(b)) if a != b => {
            Err(PyValueError::new_err("give the reference once: reference= and reference_filename= name different files"))
        }
        (a, b) => Ok(a.or(b)),
    }
}

#[pymethods]
impl BamFile {
    #[new]
    #[pyo3(signature = (path, index=None, reference=None, reference_filename=None))]
    fn new(
        py: Python<'_>,
        path: FsPath,
        index: Option<FsPath>,
        reference: Option<FsPath>,
        reference_filename: Option<FsPath>,
    ) -> PyResult<Self> {
        // A BAM or CRAM file without an index file is indexed in memory
        // when a region is first read; a bgzipped SAM is refused.
        let options = OpenOptions {
            index: index.map(|p| p.0),
            cram: CramOptions { reference: reference_arg(reference, reference_filename)?, ..Default::default() },
            bam_without_index: WithoutIndex::Build,
            cram_without_index: WithoutIndex::Build,
            // Loaded when first used: whole-file reads need no index.
            load_found_index_at_open: false,
        };
        let file = run_detached(py, |w| {
            let file = AlignmentFile::open(&path, &options, w)?;
            file.warn_if_truncated(w);
            Ok(file)
        })?;
        let names = Arc::new(file.header().references.iter().map(|r| r.name.clone()).collect());
        Ok(BamFile { file, names })
    }

    /// The path the file was opened with.
    #[getter]
    fn path(&self) -> String {
        self.file_path().display().to_string()
    }

    /// Whether the file is CRAM (read through htslib) rather than BAM.
    #[getter]
    fn is_cram(&self) -> bool {
        self.file.is_cram()
    }

    /// Whether the file is SAM text (plain, bgzipped or gzip-compressed):
    /// read whole from its start; regions only of a bgzipped one with an
    /// index (CSI or BAI).
    #[getter]
    fn is_sam(&self) -> bool {
        self.file.is_sam()
    }

    /// `[(name, length), ...]` in reference-id order.
    #[getter]
    fn references(&self) -> Vec<(String, u32)> {
        self.header().references.iter().map(|r| (r.name.clone(), r.len)).collect()
    }

    /// The SAM header text as `samtools view -H` prints it: with `@SQ`
    /// lines made from the references when the text has none.
    #[getter]
    fn header_text(&self) -> PyResult<String> {
        let mut out = Vec::new();
        fasthts::sam::format_header(self.header(), &mut out).map_err(to_py)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Whether an index file is beside the file (or was given); without
    /// one, region queries build the index in memory first (a BAM or
    /// CRAM) or are refused (SAM).
    #[getter]
    fn has_index(&self) -> bool {
        self.file.has_index_file()
    }

    /// Reference id of `name`: an `@SQ SN:` name or an `AN:` alternative
    /// (htslib's and pysam's lookup; `KeyError` when unknown).
    fn tid(&self, name: &str) -> PyResult<i32> {
        self.file.ref_names().id(name.as_bytes()).ok_or_else(|| PyKeyError::new_err(name.to_string()))
    }

    /// Regions tiling every reference with records, plus the unplaced
    /// records: about `region_bytes` compressed bytes each (from the index;
    /// a CRAM's from its containers), or `window` bases each when given.
    #[pyo3(signature = (region_bytes=REGION_BYTES, window=None))]
    fn plan(&self, py: Python<'_>, region_bytes: u64, window: Option<u64>) -> PyResult<Vec<Region>> {
        let plan = match window {
            Some(w) => Plan::Windows(w),
            None => Plan::BalancedBytes(region_bytes),
        };
        let regions = run_detached(py, |w| self.file.plan(plan, w))?;
        Ok(regions.into_iter().map(|r| Region::from_lib(r, &self.names)).collect())
    }

    /// Parses a region argument into a `Region`.
    fn region(&self, region: &Bound<'_, PyAny>) -> PyResult<Region> {
        Ok(Region::from_lib(region_arg(self.file.ref_names(), region)?, &self.names))
    }

    /// Iterates the records starting in `region` (all records, in file
    /// order, when None) as `Record` objects; with `overlap=True`, the
    /// records overlapping `region` (pysam's and samtools' rule, the end
    /// from the CIGAR) instead.
    #[pyo3(signature = (region=None, overlap=false))]
    fn fetch(&self, py: Python<'_>, region: Option<&Bound<'_, PyAny>>, overlap: bool) -> PyResult<RecordIter> {
        self.eof_check(py)?;
        let source = match region {
            None => Source::Whole(run_detached(py, |_| self.file.records())?),
            Some(region) => {
                let rs = region_args(self.file.ref_names(), region)?;
                let rule = if overlap { Rule::Overlap } else { Rule::StartsIn };
                let queries: Vec<_> = rs.into_iter().map(|r| (r, rule)).collect();
                let file = run_detached(py, |w| self.file.for_queries(&queries, false, w))?;
                Source::Indexed(Cursor::new(file, queries))
            }
        };
        Ok(RecordIter { names: self.names.clone(), buf: VecDeque::new(), source: Some(Mutex::new(source)) })
    }

    /// The records starting in `region` (the whole file when None) as
    /// columns: `{name: Column}`; `fasthts.BamFile.columns` wraps them as
    /// numpy arrays (without a copy). The whole file is read region by region
    /// on `threads` threads; the GIL is released throughout.
    /// `piece_bytes`: compressed bytes per piece when a region is read on
    /// several threads (for tests; `fasthts::region::pieces::PIECE_BYTES`
    /// when None; a CRAM's pieces are its containers).
    #[pyo3(signature = (region=None, threads=None, piece_bytes=None))]
    fn _columns<'py>(
        &self,
        py: Python<'py>,
        region: Option<&Bound<'py, PyAny>>,
        threads: Option<i64>,
        piece_bytes: Option<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let threads = threads_arg(threads)?;
        self.eof_check(py)?;
        let piece_bytes = piece_bytes.unwrap_or(pieces::PIECE_BYTES).max(1);
        let cols = match region {
            Some(region) => {
                let rs = region_args(self.file.ref_names(), region)?;
                let file = run_detached(py, |w| self.file.for_column_queries(&rs, w))?;
                run_detached(py, |_| {
                    with_threads(threads, || {
                        let parts = rs.iter().map(|r| columns::region_columns(&file, *r, piece_bytes)).collect::<Result<Vec<_>, _>>()?;
                        Ok(Columns::concat(parts))
                    })
                })?
            }
            None => run_detached(py, |w| {
                with_threads(threads, || {
                    let parts = self.file.scatter(REGION_BYTES, Fields::Columns, w, Columns::with_capacity, |c, r| c.push(r))?;
                    Ok(Columns::concat(parts))
                })
            })?,
        };
        cols.into_py(py)
    }

    /// As `_columns` for many regions, read in parallel: a list of dicts.
    #[pyo3(signature = (regions, threads=None))]
    fn _columns_many<'py>(&self, py: Python<'py>, regions: &Bound<'py, PyAny>, threads: Option<i64>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let threads = threads_arg(threads)?;
        self.eof_check(py)?;
        let mut rs = Vec::new();
        for r in regions.try_iter()? {
            rs.push(region_arg(self.file.ref_names(), &r?)?);
        }
        let file = run_detached(py, |w| self.file.for_column_queries(&rs, w))?;
        let all = run_detached(py, |_| with_threads(threads, || columns::regions_columns(&file, &rs)))?;
        all.into_iter().map(|c| c.into_py(py)).collect()
    }

    fn __repr__(&self) -> String {
        format!("BamFile({:?})", self.file_path().display().to_string())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        // Pickled by path: a worker opens (maps) the file itself.
        let b = slf.get();
        let index = b.file.index_given().map(Path::to_path_buf);
        let args = (b.file_path().to_path_buf(), index, b.file.cram_options().reference.clone());
        PyTuple::new(slf.py(), [slf.get_type().into_any(), args.into_pyobject(slf.py())?.into_any()])
    }
}

/// Iterator over a region's records (or the whole file's) as `Record`s,
/// read `BATCH` at a time with the GIL released.
#[pyclass(module = "fasthts._fasthts")]
pub struct RecordIter {
    names: Arc<Vec<String>>,
    buf: VecDeque<Vec<u8>>,
    /// What is read (None once it has ended or failed).
    source: Option<Mutex<Source>>,
}

#[pymethods]
impl RecordIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(mut slf: PyRefMut<'_, Self>, py: Python<'_>) -> PyResult<Option<Record>> {
        if slf.buf.is_empty() {
            let Some(source) = slf.source.as_mut() else { return Ok(None) };
            let source = source.get_mut().unwrap_or_else(|p| p.into_inner());
            let mut warnings = Vec::new();
            let read = py.detach(|| crate::in_this_process(|| next_records(source, &mut warnings)));
            crate::warn_texts(py, &warnings)?;
            match read {
                Ok(buf) if buf.is_empty() => slf.source = None,
                Ok(buf) => slf.buf = buf,
                Err(e) => {
                    slf.source = None;
                    return Err(to_py(e));
                }
            }
        }
        let names = slf.names.clone();
        Ok(slf.buf.pop_front().map(|data| Record { data, names }))
    }
}

/// One BAM record (a copy of its bytes), decoded on access.
#[pyclass(frozen, module = "fasthts._fasthts")]
pub struct Record {
    data: Vec<u8>,
    names: Arc<Vec<String>>,
}

impl Record {
    fn r(&self) -> RecordRef<'_> {
        // The bytes were checked when the record was read.
        RecordRef::new_prevalidated(&self.data)
    }
}

fn aux_value<'py>(py: Python<'py>, v: AuxValue<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        AuxValue::Char(c) => (c as char).to_string().into_pyobject(py)?.into_any(),
        AuxValue::Int(i) => i.into_pyobject(py)?.into_any(),
        AuxValue::Float(f) => f64::from(f).into_pyobject(py)?.into_any(),
        AuxValue::Double(f) => f.into_pyobject(py)?.into_any(),
        AuxValue::String(s) | AuxValue::Hex(s) => String::from_utf8_lossy(s).into_pyobject(py)?.into_any(),
        AuxValue::Array { subtype, count, bytes } => {
            let size = match subtype {
                b'c' | b'C' => 1,
                b's' | b'S' => 2,
                _ => 4,
            };
            let list = PyList::empty(py);
            for i in 0..count {
                let b = &bytes[i * size..(i + 1) * size];
                let item = match subtype {
                    b'c' => (b[0] as i8).into_pyobject(py)?.into_any(),
                    b'C' => b[0].into_pyobject(py)?.into_any(),
                    b's' => i16::from_le_bytes([b[0], b[1]]).into_pyobject(py)?.into_any(),
                    b'S' => u16::from_le_bytes([b[0], b[1]]).into_pyobject(py)?.into_any(),
                    b'i' => i32::from_le_bytes([b[0], b[1], b[2], b[3]]).into_pyobject(py)?.into_any(),
                    b'I' => u32::from_le_bytes([b[0], b[1], b[2], b[3]]).into_pyobject(py)?.into_any(),
                    _ => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])).into_pyobject(py)?.into_any(),
                };
                list.append(item)?;
            }
            list.into_any()
        }
    })
}

#[pymethods]
impl Record {
    /// Read name (QNAME).
    #[getter]
    fn name(&self) -> String {
        String::from_utf8_lossy(self.r().name()).into_owned()
    }
    /// FLAG.
    #[getter]
    fn flag(&self) -> u16 {
        self.r().flag()
    }
    /// Reference id (-1: none).
    #[getter]
    fn tid(&self) -> i32 {
        self.r().ref_id()
    }
    /// Reference name, or None.
    #[getter(r#ref)]
    fn reference(&self) -> Option<String> {
        usize::try_from(self.r().ref_id()).ok().and_then(|i| self.names.get(i).cloned())
    }
    /// 0-based leftmost position (-1: none).
    #[getter]
    fn pos(&self) -> i32 {
        self.r().pos()
    }
    /// End position, exclusive, as htslib's `bam_endpos` (pos + 1 when
    /// unmapped or the CIGAR consumes no reference).
    #[getter]
    fn end(&self) -> i64 {
        self.r().end_pos()
    }
    /// Mapping quality.
    #[getter]
    fn mapq(&self) -> u8 {
        self.r().mapq()
    }
    /// CIGAR as `[(op, length), ...]` with pysam's op codes (M=0 I=1 D=2
    /// N=3 S=4 H=5 P=6 '='=7 X=8 B=9); a CIGAR longer than 65535 ops is
    /// taken from the CG tag, as htslib does.
    #[getter]
    fn cigar(&self) -> Vec<(u8, u32)> {
        self.r().cigar().iter().map(|(op, len)| (op.code(), len)).collect()
    }
    /// CIGAR text ("" when there is none).
    #[getter]
    fn cigarstring(&self) -> String {
        self.r().cigar().iter().map(|(op, len)| format!("{len}{}", op.letter() as char)).collect()
    }
    /// Sequence ("" when absent).
    #[getter]
    fn seq(&self) -> String {
        let r = self.r();
        (0..r.seq_len()).map(|i| r.base(i) as char).collect()
    }
    /// Base qualities (phred values, not +33), or None when absent (0xff).
    #[getter]
    fn qual<'py>(&self, py: Python<'py>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        let q = self.r().qual();
        if q.is_empty() || q[0] == 0xff {
            return None;
        }
        Some(pyo3::types::PyBytes::new(py, q))
    }
    /// Mate's reference id.
    #[getter]
    fn mate_tid(&self) -> i32 {
        self.r().mate_ref_id()
    }
    /// Mate's position.
    #[getter]
    fn mate_pos(&self) -> i32 {
        self.r().mate_pos()
    }
    /// Template length (TLEN).
    #[getter]
    fn tlen(&self) -> i32 {
        self.r().template_len()
    }
    /// Auxiliary fields as `[(tag, value), ...]` in record order; arrays as
    /// lists, characters and hex strings as str.
    #[getter]
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let mut out = Vec::new();
        for t in self.r().aux().iter() {
            let (tag, v) = t.map_err(|_| err("malformed auxiliary field"))?;
            out.push((String::from_utf8_lossy(&tag).into_owned(), aux_value(py, v)?));
        }
        Ok(out)
    }
    /// The value of one tag; KeyError when absent.
    fn get_tag<'py>(&self, py: Python<'py>, tag: &str) -> PyResult<Bound<'py, PyAny>> {
        let b = tag.as_bytes();
        if b.len() != 2 {
            return Err(PyValueError::new_err(format!("invalid tag {tag:?}")));
        }
        match self.r().aux().find([b[0], b[1]]) {
            Some(v) => aux_value(py, v),
            None => Err(PyKeyError::new_err(tag.to_string())),
        }
    }
    /// The record's BAM bytes (without the 4-byte length).
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.data)
    }

    fn __repr__(&self) -> String {
        let r = self.r();
        format!(
            "Record(name={:?}, flag={}, ref={}, pos={}, mapq={}, cigar={:?})",
            String::from_utf8_lossy(r.name()),
            r.flag(),
            self.reference().map_or("None".to_string(), |n| format!("{n:?}")),
            r.pos(),
            r.mapq(),
            self.cigarstring()
        )
    }
}
