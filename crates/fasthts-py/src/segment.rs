//! `AlignedSegment`: one record with pysam's attribute names and
//! conventions, read from any alignment file (`crate::alignment`) or made
//! by a pileup (`crate::pileup`); both import it from here.

use crate::to_py;
use fasthts::bam::{flags, AuxValue, CigarOp, Header, RecordRef};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyList, PyTuple};
use std::sync::Arc;

/// One alignment record with pysam's `AlignedSegment` attributes (the
/// commonly edited ones settable: `flag`, `mapping_quality`, `query_name`,
/// `set_tag`; the edits are the library's, `fasthts::bam::edit`).
#[pyclass(module = "fasthts._fasthts")]
pub struct AlignedSegment {
    pub(crate) data: Box<[u8]>,
    pub(crate) header: Arc<Header>,
}

static ARRAY_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A Python `array.array(typecode, bytes)` (pysam's type for qualities and
/// `B` tags).
pub(crate) fn py_array<'py>(py: Python<'py>, typecode: &str, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let array = ARRAY_TYPE.get_or_try_init(py, || py.import("array")?.getattr("array").map(Bound::unbind))?;
    // A bytearray, not bytes: CPython shares one object per one-byte bytes
    // value, and pysam's query_qualities_str writes into those in place.
    array.bind(py).call1((typecode, PyByteArray::new(py, bytes)))
}

/// The Python value of a tag, as pysam's `get_tag` gives it.
fn tag_value<'py>(py: Python<'py>, v: AuxValue<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        AuxValue::Char(c) => (c as char).to_string().into_pyobject(py)?.into_any(),
        AuxValue::Int(i) => i.into_pyobject(py)?.into_any(),
        AuxValue::Float(f) => f64::from(f).into_pyobject(py)?.into_any(),
        AuxValue::Double(f) => f.into_pyobject(py)?.into_any(),
        AuxValue::String(s) | AuxValue::Hex(s) => String::from_utf8_lossy(s).into_pyobject(py)?.into_any(),
        AuxValue::Array { subtype, bytes, .. } => {
            let code = match subtype {
                b'c' => "b",
                b'C' => "B",
                b's' => "h",
                b'S' => "H",
                b'i' => "i",
                b'I' => "I",
                _ => "f",
            };
            py_array(py, code, bytes)?
        }
    })
}

/// The type letter of a tag value as stored (`B` arrays with their subtype
/// when `with_subtype`, as pysam's `get_tag` reports them).
fn tag_type(aux: &[u8], tag: [u8; 2], with_subtype: bool) -> String {
    // Walks the raw fields to the tag: AuxValue widens the integer types.
    let mut rest = aux;
    while rest.len() >= 3 {
        let t = rest[2];
        let size = match t {
            b'A' | b'c' | b'C' => 1,
            b's' | b'S' => 2,
            b'i' | b'I' | b'f' => 4,
            b'd' => 8,
            b'Z' | b'H' => rest[3..].iter().position(|&c| c == 0).map_or(rest.len(), |p| p + 1),
            b'B' if rest.len() >= 8 => {
                let n = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
                let elem = match rest[3] {
                    b'c' | b'C' => 1,
                    b's' | b'S' => 2,
                    _ => 4,
                };
                5 + n * elem
            }
            _ => return String::new(),
        };
        if rest[..2] == tag {
            return if t == b'B' && with_subtype { format!("B{}", rest[3] as char) } else { (t as char).to_string() };
        }
        rest = rest.get(3 + size..).unwrap_or(&[]);
    }
    String::new()
}

fn tag_key(tag: &str) -> PyResult<[u8; 2]> {
    match tag.as_bytes() {
        &[a, b] => Ok([a, b]),
        _ => Err(PyValueError::new_err(format!("invalid tag {tag:?}: a tag is two characters"))),
    }
}

impl AlignedSegment {
    /// A segment of a record's bytes (validated when read).
    pub(crate) fn from_bytes(data: Box<[u8]>, header: Arc<Header>) -> Self {
        AlignedSegment { data, header }
    }

    /// The record's data as read (without `block_size`).
    pub(crate) fn data(&self) -> &[u8] {
        &self.data
    }

    #[inline]
    fn r(&self) -> RecordRef<'_> {
        // The bytes were checked when the record was read (and edits keep
        // them valid): not checked again on every attribute read.
        RecordRef::new_prevalidated(&self.data)
    }

    fn name_of(&self, tid: i32) -> Option<String> {
        usize::try_from(tid).ok().and_then(|i| self.header.references.get(i)).map(|r| r.name.clone())
    }

    /// Whether the CIGAR was taken from the `CG` tag (htslib then drops the
    /// tag: pysam does not see it).
    fn cigar_from_cg(&self) -> bool {
        self.r().cigar_tag_field().is_some()
    }

    /// The value of `tag` as pysam sees it.
    fn find_tag(&self, key: [u8; 2]) -> Option<AuxValue<'_>> {
        if key == *b"CG" && self.cigar_from_cg() {
            return None;
        }
        self.r().aux().find(key)
    }

    fn has_flag(&self, bit: u16) -> bool {
        self.r().flag() & bit != 0
    }

    /// The aligned span's reference length, as pysam (None when unmapped
    /// or without a CIGAR).
    fn aligned(&self) -> Option<i64> {
        let r = self.r();
        (r.flag() & flags::UNMAPPED == 0 && !r.cigar().is_empty()).then(|| r.end_pos())
    }

    /// pysam's `query_alignment_start`: soft clips at the start skipped.
    fn query_start(&self) -> usize {
        let mut start = 0usize;
        for (op, len) in self.r().cigar().iter() {
            match op {
                CigarOp::HardClip => {}
                CigarOp::SoftClip => start += len as usize,
                _ => break,
            }
        }
        start
    }

    /// pysam's `query_alignment_end`: soft clips at the end removed (from
    /// the CIGAR's query-consuming operations when there is no sequence).
    fn query_end(&self) -> usize {
        let r = self.r();
        let cigar = r.cigar();
        let mut end = r.seq_len();
        if end == 0 {
            for (op, len) in cigar.iter() {
                if matches!(op, CigarOp::Match | CigarOp::Insertion | CigarOp::SequenceMatch | CigarOp::SequenceMismatch)
                    || (op == CigarOp::SoftClip && end == 0)
                {
                    end += len as usize;
                }
            }
            return end;
        }
        let ops: Vec<(CigarOp, u32)> = cigar.iter().collect();
        for &(op, len) in ops.iter().skip(1).rev() {
            match op {
                CigarOp::HardClip => {}
                CigarOp::SoftClip => end = end.saturating_sub(len as usize),
                _ => break,
            }
        }
        end
    }

    fn sequence(&self, from: usize, to: usize) -> Option<String> {
        let r = self.r();
        (r.seq_len() > 0).then(|| (from..to.min(r.seq_len())).map(|i| r.base(i) as char).collect())
    }

    /// pysam's reference sequence from the MD tag (`crate::md`).
    fn reference_bases(&self) -> PyResult<Vec<u8>> {
        let r = self.r();
        let md = match self.find_tag(*b"MD") {
            None => crate::md::Md::Absent,
            Some(AuxValue::String(t)) => crate::md::Md::Text(t),
            Some(AuxValue::Char(c)) => crate::md::Md::Char(c),
            Some(_) => crate::md::Md::OtherType(tag_type(r.aux_bytes(), *b"MD", false).chars().next().unwrap_or('?')),
        };
        let cigar: Vec<(CigarOp, u32)> = r.cigar().iter().collect();
        let read =
            (r.seq_len() > 0).then(|| (self.query_start()..self.query_end().min(r.seq_len())).map(|i| r.base(i)).collect::<Vec<u8>>());
        crate::md::reference_sequence(&cigar, read.as_deref(), md)
    }

    fn quals(&self) -> Option<&[u8]> {
        let q = self.r().qual();
        (!q.is_empty() && q[0] != 0xff).then_some(q)
    }
}

#[pymethods]
impl AlignedSegment {
    #[getter]
    fn query_name(&self) -> String {
        String::from_utf8_lossy(self.r().name()).into_owned()
    }
    /// pysam's setter: None or "" leaves the name as it is.
    #[setter(query_name)]
    fn set_query_name(&mut self, name: Option<&str>) -> PyResult<()> {
        let Some(name) = name.filter(|n| !n.is_empty()) else { return Ok(()) };
        let mut edited = Vec::with_capacity(self.data.len() + name.len());
        fasthts::bam::edit::with_name(&self.data, name.as_bytes(), &mut edited).map_err(to_py)?;
        self.data = edited.into_boxed_slice();
        Ok(())
    }
    #[getter]
    fn flag(&self) -> u16 {
        self.r().flag()
    }
    #[setter(flag)]
    fn set_flag(&mut self, flag: u16) {
        fasthts::bam::edit::set_flag(&mut self.data, flag);
    }
    #[getter]
    fn reference_id(&self) -> i32 {
        self.r().ref_id()
    }
    /// None when the record has no reference.
    #[getter]
    fn reference_name(&self) -> Option<String> {
        self.name_of(self.r().ref_id())
    }
    /// 0-based leftmost position (-1 when unset).
    #[getter]
    fn reference_start(&self) -> i32 {
        self.r().pos()
    }
    /// One past the last aligned base (None when unmapped or without a CIGAR).
    #[getter]
    fn reference_end(&self) -> Option<i64> {
        self.aligned()
    }
    #[getter]
    fn reference_length(&self) -> Option<i64> {
        self.aligned().map(|e| e - i64::from(self.r().pos()))
    }
    #[getter]
    fn mapping_quality(&self) -> u8 {
        self.r().mapq()
    }
    #[setter(mapping_quality)]
    fn set_mapping_quality(&mut self, mapq: u8) {
        fasthts::bam::edit::set_mapping_quality(&mut self.data, mapq);
    }
    #[getter]
    fn bin(&self) -> u16 {
        self.r().bin()
    }
    /// None without a CIGAR.
    #[getter]
    fn cigarstring(&self) -> Option<String> {
        let c = self.r().cigar();
        (!c.is_empty()).then(|| c.iter().map(|(op, len)| format!("{len}{}", op.letter() as char)).collect())
    }
    /// `[(op, length), ...]` (M=0 I=1 D=2 N=3 S=4 H=5 P=6 '='=7 X=8 B=9);
    /// None without a CIGAR.
    #[getter]
    fn cigartuples(&self) -> Option<Vec<(u8, u32)>> {
        let c = self.r().cigar();
        (!c.is_empty()).then(|| c.iter().map(|(op, len)| (op.code(), len)).collect())
    }
    /// None when absent.
    #[getter]
    fn query_sequence(&self) -> Option<String> {
        self.sequence(0, usize::MAX)
    }
    /// `array.array('B')` of phred values; None when absent.
    #[getter]
    fn query_qualities<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.quals().map(|q| py_array(py, "B", q)).transpose()
    }
    /// Qualities as SAM text (phred + 33); None when absent.
    #[getter]
    fn query_qualities_str(&self) -> Option<String> {
        self.quals().map(|q| q.iter().map(|&v| (v.saturating_add(33)) as char).collect())
    }
    #[getter]
    fn query_length(&self) -> usize {
        self.r().seq_len()
    }
    #[getter]
    fn query_alignment_start(&self) -> usize {
        self.query_start()
    }
    #[getter]
    fn query_alignment_end(&self) -> usize {
        self.query_end()
    }
    #[getter]
    fn query_alignment_length(&self) -> usize {
        self.query_end().saturating_sub(self.query_start())
    }
    #[getter]
    fn query_alignment_sequence(&self) -> Option<String> {
        self.sequence(self.query_start(), self.query_end())
    }
    #[getter]
    fn query_alignment_qualities<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (s, e) = (self.query_start(), self.query_end());
        self.quals().map(|q| py_array(py, "B", q.get(s..e.min(q.len())).unwrap_or(&[]))).transpose()
    }
    #[getter]
    fn next_reference_id(&self) -> i32 {
        self.r().mate_ref_id()
    }
    #[getter]
    fn next_reference_name(&self) -> Option<String> {
        self.name_of(self.r().mate_ref_id())
    }
    #[getter]
    fn next_reference_start(&self) -> i32 {
        self.r().mate_pos()
    }
    #[getter]
    fn template_length(&self) -> i32 {
        self.r().template_len()
    }
    #[getter]
    fn is_paired(&self) -> bool {
        self.has_flag(flags::PAIRED)
    }
    #[getter]
    fn is_proper_pair(&self) -> bool {
        self.has_flag(flags::PROPER_PAIR)
    }
    #[getter]
    fn is_unmapped(&self) -> bool {
        self.has_flag(flags::UNMAPPED)
    }
    #[getter]
    fn is_mapped(&self) -> bool {
        !self.has_flag(flags::UNMAPPED)
    }
    #[getter]
    fn mate_is_unmapped(&self) -> bool {
        self.has_flag(flags::MATE_UNMAPPED)
    }
    #[getter]
    fn mate_is_mapped(&self) -> bool {
        !self.has_flag(flags::MATE_UNMAPPED)
    }
    #[getter]
    fn is_reverse(&self) -> bool {
        self.has_flag(flags::REVERSE)
    }
    #[getter]
    fn is_forward(&self) -> bool {
        !self.has_flag(flags::REVERSE)
    }
    #[getter]
    fn mate_is_reverse(&self) -> bool {
        self.has_flag(flags::MATE_REVERSE)
    }
    #[getter]
    fn mate_is_forward(&self) -> bool {
        !self.has_flag(flags::MATE_REVERSE)
    }
    #[getter]
    fn is_read1(&self) -> bool {
        self.has_flag(flags::READ1)
    }
    #[getter]
    fn is_read2(&self) -> bool {
        self.has_flag(flags::READ2)
    }
    #[getter]
    fn is_secondary(&self) -> bool {
        self.has_flag(flags::SECONDARY)
    }
    #[getter]
    fn is_qcfail(&self) -> bool {
        self.has_flag(flags::QC_FAIL)
    }
    #[getter]
    fn is_duplicate(&self) -> bool {
        self.has_flag(flags::DUPLICATE)
    }
    #[getter]
    fn is_supplementary(&self) -> bool {
        self.has_flag(flags::SUPPLEMENTARY)
    }

    /// pysam's `set_tag`: `value` None removes the tag; without
    /// `value_type`, an int is stored in the smallest type holding it, a
    /// float as `f`, a str or bytes as `Z`; `replace=False` keeps a field
    /// already there. Arrays (`B`) are not settable yet.
    #[pyo3(signature = (tag, value, value_type=None, replace=true))]
    fn set_tag(&mut self, tag: &str, value: &Bound<'_, PyAny>, value_type: Option<&str>, replace: bool) -> PyResult<()> {
        use fasthts::bam::edit::{append_tag, remove_tag, smallest_int_type, TagValue};
        if tag.len() != 2 {
            return Err(PyValueError::new_err(format!("Invalid tag: {tag}")));
        }
        let key = tag_key(tag)?;
        let mut data = self.data.to_vec();
        if replace {
            remove_tag(&mut data, key);
        }
        if value.is_none() {
            self.data = data.into_boxed_slice();
            return Ok(());
        }
        let text: Vec<u8>;
        let typed = match value_type.map(|t| t.as_bytes()) {
            None if value.is_instance_of::<pyo3::types::PyBool>() || value.is_instance_of::<pyo3::types::PyInt>() => {
                let v: i64 = value.extract()?;
                let t = smallest_int_type(v).ok_or_else(|| PyOverflowError::new_err(format!("integer {v} does not fit a 32-bit tag")))?;
                TagValue::Int(v, t)
            }
            None if value.is_instance_of::<pyo3::types::PyFloat>() => TagValue::Float(value.extract::<f64>()? as f32),
            None | Some(b"Z" | b"H")
                if value.is_instance_of::<pyo3::types::PyString>() || value.is_instance_of::<pyo3::types::PyBytes>() =>
            {
                text = value.extract::<String>().map(String::into_bytes).or_else(|_| value.extract::<Vec<u8>>())?;
                TagValue::Text(&text, value_type.map_or(b'Z', |t| t.as_bytes()[0]))
            }
            Some([t @ (b'c' | b'C' | b's' | b'S' | b'i' | b'I')]) => TagValue::Int(value.extract()?, *t),
            Some(b"f") => TagValue::Float(value.extract::<f64>()? as f32),
            Some(b"d") => TagValue::Double(value.extract()?),
            Some(b"A" | b"a") => {
                let c: String = value.extract()?;
                TagValue::Char(*c.as_bytes().first().ok_or_else(|| PyValueError::new_err("an 'A' tag needs one character"))?)
            }
            _ => {
                return Err(PyValueError::new_err(format!(
                    "can't guess type or invalid type code specified: {} {}",
                    value.str()?,
                    value_type.unwrap_or("None")
                )))
            }
        };
        append_tag(&mut data, key, typed).map_err(|e| PyOverflowError::new_err(e.to_string()))?;
        self.data = data.into_boxed_slice();
        Ok(())
    }

    fn has_tag(&self, tag: &str) -> PyResult<bool> {
        Ok(self.find_tag(tag_key(tag)?).is_some())
    }

    /// The value of `tag` (KeyError when absent); with `with_value_type`,
    /// `(value, type)` with the type as stored (`"Bc"` etc. for arrays).
    #[pyo3(signature = (tag, with_value_type=false))]
    fn get_tag<'py>(&self, py: Python<'py>, tag: &str, with_value_type: bool) -> PyResult<Bound<'py, PyAny>> {
        let key = tag_key(tag)?;
        let r = self.r();
        let Some(v) = self.find_tag(key) else { return Err(PyKeyError::new_err(format!("tag '{tag}' not present"))) };
        let value = tag_value(py, v)?;
        if with_value_type {
            return Ok(PyTuple::new(py, [value, tag_type(r.aux_bytes(), key, true).into_pyobject(py)?.into_any()])?.into_any());
        }
        Ok(value)
    }

    /// `[(tag, value), ...]` in record order (`(tag, value, type)` with
    /// `with_value_type`; `"B"` for arrays).
    #[pyo3(signature = (with_value_type=false))]
    fn get_tags<'py>(&self, py: Python<'py>, with_value_type: bool) -> PyResult<Bound<'py, PyList>> {
        let r = self.r();
        let out = PyList::empty(py);
        let hide_cg = self.cigar_from_cg();
        for t in r.aux().iter() {
            let (tag, v) = t.map_err(|_| crate::err("malformed auxiliary field"))?;
            if hide_cg && tag == *b"CG" {
                continue;
            }
            let name = String::from_utf8_lossy(&tag).into_owned().into_pyobject(py)?.into_any();
            let value = tag_value(py, v)?;
            if with_value_type {
                let ty = tag_type(r.aux_bytes(), tag, false).into_pyobject(py)?.into_any();
                out.append(PyTuple::new(py, [name, value, ty])?)?;
            } else {
                out.append(PyTuple::new(py, [name, value])?)?;
            }
        }
        Ok(out)
    }

    /// `[(query_pos, ref_pos), ...]` (None on the side an operation does not
    /// consume); `matches_only`: only aligned pairs. `with_seq` adds the
    /// reference base (from the MD tag, as `get_reference_sequence`; None
    /// for insertions, clips, pads and skips); `with_cigar` adds the
    /// operation's code.
    #[pyo3(signature = (matches_only=false, with_seq=false, with_cigar=false))]
    fn get_aligned_pairs<'py>(
        &self,
        py: Python<'py>,
        matches_only: bool,
        with_seq: bool,
        with_cigar: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let r = self.r();
        let out = PyList::empty(py);
        if r.cigar().is_empty() {
            return Ok(out);
        }
        let reference = if with_seq { Some(self.reference_bases()?) } else { None };
        // The index of the next reference base (M, =, X and D columns).
        let mut r_idx = 0usize;
        // pysam counts in uint32: a record at position -1 wraps, and its
        // loops over `pos..pos + len` then run as far as the wrapped bounds
        // say (the counts below follow them, as pysam's do).
        let mut pos = r.pos() as u32;
        let mut qpos = 0u32;
        let push = |q: Option<u32>, p: Option<u32>, op: CigarOp, base: Option<usize>| -> PyResult<()> {
            let Some(reference) = &reference else {
                return if with_cigar { out.append((q, p, op.code())) } else { out.append((q, p)) };
            };
            let base = match base {
                None => None,
                // pysam indexes its str: past a short MD's end, IndexError.
                Some(i) => Some(*reference.get(i).ok_or_else(|| PyIndexError::new_err("string index out of range"))? as char),
            };
            if with_cigar {
                out.append((q, p, base, op.code()))
            } else {
                out.append((q, p, base))
            }
        };
        for (op, len) in r.cigar().iter() {
            let span = pos..pos.wrapping_add(len);
            match op {
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    for i in span {
                        push(Some(qpos), Some(i), op, Some(r_idx))?;
                        r_idx += 1;
                        qpos = qpos.wrapping_add(1);
                    }
                    pos = pos.wrapping_add(len);
                }
                CigarOp::Insertion | CigarOp::SoftClip | CigarOp::Pad => {
                    if matches_only {
                        qpos = qpos.wrapping_add(len);
                    } else {
                        for _ in span {
                            push(Some(qpos), None, op, None)?;
                            qpos = qpos.wrapping_add(1);
                        }
                    }
                }
                CigarOp::Deletion => {
                    if matches_only {
                        r_idx += len as usize;
                    } else {
                        for i in span {
                            push(None, Some(i), op, Some(r_idx))?;
                            r_idx += 1;
                        }
                    }
                    pos = pos.wrapping_add(len);
                }
                CigarOp::Skip => {
                    if !matches_only {
                        for i in span {
                            push(None, Some(i), op, None)?;
                        }
                    }
                    pos = pos.wrapping_add(len);
                }
                CigarOp::HardClip | CigarOp::Unknown(_) => {}
            }
        }
        Ok(out)
    }

    /// The reference under the alignment from the MD tag (mismatches in
    /// lowercase), as pysam: ValueError without an MD tag.
    fn get_reference_sequence(&self) -> PyResult<String> {
        Ok(String::from_utf8_lossy(&self.reference_bases()?).into_owned())
    }

    /// The number of aligned (`M`, `=`, `X`) bases within `[start, end)`
    /// of the reference; None without a CIGAR. pysam's arithmetic: the
    /// position as uint32, sums unbounded, and an OverflowError where
    /// pysam converts one back that does not fit (a record at -1).
    fn get_overlap(&self, start: u32, end: u32) -> PyResult<Option<u32>> {
        let r = self.r();
        let cigar = r.cigar();
        if cigar.is_empty() {
            return Ok(None);
        }
        let (start, end) = (i64::from(start), i64::from(end));
        let (mut pos, mut overlap) = (i64::from(r.pos() as u32), 0u32);
        for (op, len) in cigar.iter() {
            let len = i64::from(len);
            if matches!(op, CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch) {
                let o = (pos + len).min(end) - pos.max(start);
                let o = i32::try_from(o).map_err(|_| PyOverflowError::new_err("value too large to convert to int"))?;
                if o > 0 {
                    overlap = overlap.wrapping_add(o as u32);
                }
            }
            if op.consumes_reference() {
                pos += len;
                if pos > i64::from(u32::MAX) {
                    return Err(PyOverflowError::new_err("value too large to convert to uint32_t"));
                }
            }
        }
        Ok(Some(overlap))
    }

    /// `(bases, blocks)`: two `array('I')` of 11 counts, per CIGAR
    /// operation code (`MIDNSHP=XB`) the bases and the operations, the
    /// last field of `bases` the NM tag (0 without one), as pysam.
    fn get_cigar_stats<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let r = self.r();
        let (mut bases, mut blocks) = ([0u32; 11], [0u32; 11]);
        for (op, len) in r.cigar().iter() {
            let code = usize::from(op.code());
            if code >= 10 {
                return Err(PyIndexError::new_err("Out of bounds on buffer access (axis 0)"));
            }
            bases[code] = bases[code].wrapping_add(len);
            blocks[code] += 1;
        }
        if let Some(AuxValue::Int(nm)) = self.find_tag(*b"NM") {
            bases[10] = nm as i32 as u32;
        }
        let bytes = |v: &[u32; 11]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        Ok((py_array(py, "I", &bytes(&bases))?, py_array(py, "I", &bytes(&blocks))?))
    }

    /// Gapless aligned blocks `[(start, end), ...]` in reference coordinates.
    fn get_blocks(&self) -> Vec<(u32, u32)> {
        let r = self.r();
        // uint32 arithmetic, as pysam's (see get_aligned_pairs).
        let mut pos = r.pos() as u32;
        let mut out = Vec::new();
        for (op, len) in r.cigar().iter() {
            match op {
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    out.push((pos, pos.wrapping_add(len)));
                    pos = pos.wrapping_add(len);
                }
                CigarOp::Deletion | CigarOp::Skip => pos = pos.wrapping_add(len),
                _ => {}
            }
        }
        out
    }

    /// Reference positions of the aligned bases; `full_length`: one entry
    /// per query base, None where it is not aligned.
    #[pyo3(signature = (full_length=false))]
    fn get_reference_positions(&self, full_length: bool) -> Vec<Option<u32>> {
        let r = self.r();
        // uint32 arithmetic, as pysam's (see get_aligned_pairs).
        let mut pos = r.pos() as u32;
        let mut out = Vec::new();
        for (op, len) in r.cigar().iter() {
            match op {
                CigarOp::SoftClip | CigarOp::Insertion => {
                    if full_length {
                        out.extend(std::iter::repeat_n(None, len as usize));
                    }
                }
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    out.extend((pos..pos.wrapping_add(len)).map(Some));
                    pos = pos.wrapping_add(len);
                }
                CigarOp::Deletion | CigarOp::Skip => pos = pos.wrapping_add(len),
                _ => {}
            }
        }
        out
    }

    /// Query length from the CIGAR (without hard clips); None without one.
    #[pyo3(signature = (always=false))]
    fn infer_query_length(&self, always: bool) -> Option<i64> {
        if always {
            return self.infer_read_length();
        }
        let c = self.r().cigar();
        (!c.is_empty()).then(|| c.iter().filter(|(op, _)| op.consumes_query()).map(|(_, l)| i64::from(l)).sum())
    }

    /// Read length from the CIGAR, hard clips included; None without one.
    fn infer_read_length(&self) -> Option<i64> {
        let c = self.r().cigar();
        (!c.is_empty()).then(|| c.iter().filter(|(op, _)| op.consumes_query() || *op == CigarOp::HardClip).map(|(_, l)| i64::from(l)).sum())
    }

    /// The read as sequenced (reverse-complemented back when on the
    /// reverse strand); None without a sequence.
    fn get_forward_sequence(&self) -> Option<String> {
        let s = self.sequence(0, usize::MAX)?;
        if !self.has_flag(flags::REVERSE) {
            return Some(s);
        }
        Some(s.bytes().rev().map(|b| complement(b) as char).collect())
    }

    /// The qualities as sequenced (reversed when on the reverse strand).
    fn get_forward_qualities<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(q) = self.quals() else { return Ok(None) };
        if !self.has_flag(flags::REVERSE) {
            return py_array(py, "B", q).map(Some);
        }
        let rev: Vec<u8> = q.iter().rev().copied().collect();
        py_array(py, "B", &rev).map(Some)
    }

    /// The record as a SAM line (without the line end), as samtools view prints it.
    fn to_string(&self) -> PyResult<String> {
        let mut out = Vec::new();
        fasthts::sam::format_record(&self.r(), &self.header.references, &mut out).map_err(to_py)?;
        if out.last() == Some(&b'\n') {
            out.pop();
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn __str__(&self) -> PyResult<String> {
        self.to_string()
    }

    fn __repr__(&self) -> PyResult<String> {
        Ok(format!("<fasthts.AlignedSegment {}>", self.to_string()?.split('\t').take(6).collect::<Vec<_>>().join("\t")))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<AlignedSegment>().is_ok_and(|o| o.try_borrow().is_ok_and(|o| o.data == self.data))
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.data.hash(&mut h);
        h.finish()
    }
}

/// The complement htslib's reverse complement uses (IUPAC codes too).
fn complement(b: u8) -> u8 {
    match b {
        b'A' => b'T',
        b'C' => b'G',
        b'G' => b'C',
        b'T' => b'A',
        b'M' => b'K',
        b'R' => b'Y',
        b'W' => b'W',
        b'S' => b'S',
        b'Y' => b'R',
        b'K' => b'M',
        b'V' => b'B',
        b'H' => b'D',
        b'D' => b'H',
        b'B' => b'V',
        b'N' => b'N',
        b'=' => b'=',
        other => other,
    }
}
