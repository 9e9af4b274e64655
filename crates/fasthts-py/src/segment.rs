//! `AlignedSegment`: one record with pysam's attribute names and
//! conventions, read from any alignment file (`crate::alignment`) or made
//! by a pileup (`crate::pileup`); both import it from here.

use crate::to_py;
use fasthts::bam::{flags, AuxValue, CigarOp, Header, RecordRef};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyNotImplementedError, PyOverflowError, PyTypeError, PyValueError};
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

/// Appends the field `key` = `value` (not None) to `data`, typed as
/// pysam's `set_tag` and `set_tags` type it (see `set_tag`); a list with a
/// `value_type` is an array of that subtype for `set_tags`
/// (`typed_arrays`), not for `set_tag`.
fn append_python_tag(
    py: Python<'_>,
    data: &mut Vec<u8>,
    key: [u8; 2],
    value: &Bound<'_, PyAny>,
    value_type: Option<&str>,
    typed_arrays: bool,
) -> PyResult<()> {
    use fasthts::bam::edit::{append_tag, smallest_int_type, TagValue};
    if value_type.is_none() || typed_arrays {
        if let Some((subtype, count, elements)) = array_tag(py, value, value_type)? {
            return append_tag(data, key, TagValue::Array(subtype, count, &elements)).map_err(to_py);
        }
    }
    let text: Vec<u8>;
    let typed = match value_type.map(|t| t.as_bytes()) {
        None if value.is_instance_of::<pyo3::types::PyBool>() || value.is_instance_of::<pyo3::types::PyInt>() => {
            let v: i64 = value.extract()?;
            let t = smallest_int_type(v).ok_or_else(|| PyOverflowError::new_err(format!("integer {v} does not fit a 32-bit tag")))?;
            TagValue::Int(v, t)
        }
        None if value.is_instance_of::<pyo3::types::PyFloat>() => TagValue::Float(value.extract::<f64>()? as f32),
        None | Some(b"Z" | b"H") if value.is_instance_of::<pyo3::types::PyString>() || value.is_instance_of::<pyo3::types::PyBytes>() => {
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
    append_tag(data, key, typed).map_err(|e| PyOverflowError::new_err(e.to_string()))
}

/// `value` as pysam stores an array.array, list or tuple in a `B` tag:
/// `(subtype, count, elements)`, None for other values. An array keeps its
/// elements' bytes (typecodes `bBhHiIf` only); a list's subtype is
/// `value_type`, else from its smallest and largest element (a float: `f`;
/// ints: `fasthts::bam::edit::smallest_array_type`), its elements packed
/// by Python's `struct`, as pysam packs them (struct.error when one does
/// not fit).
fn array_tag(py: Python<'_>, value: &Bound<'_, PyAny>, value_type: Option<&str>) -> PyResult<Option<(u8, u32, Vec<u8>)>> {
    const PYTHON_CODES: &[u8] = b"bBhHiIf";
    const BAM_CODES: &[u8] = b"cCsSiIf";
    let struct_code = |subtype: u8| -> PyResult<char> {
        let formats: &[(u8, char)] =
            &[(b'c', 'b'), (b'C', 'B'), (b's', 'h'), (b'S', 'H'), (b'i', 'i'), (b'I', 'I'), (b'f', 'f'), (b'd', 'd'), (b'A', 'c')];
        formats
            .iter()
            .find(|(t, _)| *t == subtype)
            .map(|&(_, c)| c)
            .ok_or_else(|| PyValueError::new_err(format!("invalid value type '{}'", subtype as char)))
    };
    let given = value_type.and_then(|t| t.bytes().next());
    let array_type = ARRAY_TYPE.get_or_try_init(py, || py.import("array")?.getattr("array").map(Bound::unbind))?;
    if value.is_instance(array_type.bind(py))? {
        let typecode: String = value.getattr("typecode")?.extract()?;
        let subtype = match given {
            Some(t) => t,
            None => match PYTHON_CODES.iter().position(|&c| typecode.as_bytes() == [c]) {
                Some(i) => BAM_CODES[i],
                None => return Err(PyValueError::new_err(format!("unsupported type code '{typecode}'"))),
            },
        };
        struct_code(subtype)?;
        let elements: Vec<u8> = value.call_method0("tobytes")?.extract()?;
        return Ok(Some((subtype, value.len()? as u32, elements)));
    }
    if !value.is_exact_instance_of::<PyList>() && !value.is_exact_instance_of::<PyTuple>() {
        return Ok(None);
    }
    let subtype = match given {
        Some(t) => t,
        None => {
            let builtins = py.import("builtins")?;
            let (min, max) = (builtins.call_method1("min", (value,))?, builtins.call_method1("max", (value,))?);
            if min.is_exact_instance_of::<pyo3::types::PyFloat>() {
                b'f'
            } else if min.is_exact_instance_of::<pyo3::types::PyInt>() {
                let (lo, hi) = (min.extract::<i64>().unwrap_or(i64::MIN), max.extract::<i64>().unwrap_or(i64::MAX));
                fasthts::bam::edit::smallest_array_type(lo, hi).ok_or_else(|| {
                    PyValueError::new_err(if lo < 0 {
                        "at least one signed integer out of range of BAM/SAM specification"
                    } else {
                        "at least one integer out of range of BAM/SAM specification"
                    })
                })?
            } else {
                let text = if min.is_instance_of::<pyo3::types::PyBytes>() { min } else { min.call_method1("encode", ("ascii",))? };
                if text.len()? == 1 {
                    b'A'
                } else {
                    b'Z'
                }
            }
        }
    };
    let n = value.len()?;
    let format = format!("<{n}{}", struct_code(subtype)?);
    let mut args = vec![format.into_pyobject(py)?.into_any()];
    args.extend(value.try_iter()?.collect::<PyResult<Vec<_>>>()?);
    let packed = py.import("struct")?.call_method1("pack", PyTuple::new(py, args)?)?;
    Ok(Some((subtype, n as u32, packed.extract()?)))
}

fn tag_key(tag: &str) -> PyResult<[u8; 2]> {
    match tag.as_bytes() {
        &[a, b] => Ok([a, b]),
        _ => Err(PyValueError::new_err(format!("invalid tag {tag:?}: a tag is two characters"))),
    }
}

/// A Python number as Cython converts it to a C integer for pysam's
/// setters: an int (bool too) as it is, a float truncated; anything else
/// TypeError.
fn c_integer(v: &Bound<'_, PyAny>) -> PyResult<i128> {
    if v.is_instance_of::<pyo3::types::PyFloat>() {
        return v.call_method0("__int__")?.extract();
    }
    if !v.is_instance_of::<pyo3::types::PyInt>() {
        return Err(PyTypeError::new_err("an integer is required"));
    }
    v.extract()
}

/// `c_integer` in the C type `c_name`, with Cython's OverflowError messages.
fn c_value<T: TryFrom<i128>>(v: &Bound<'_, PyAny>, c_name: &str) -> PyResult<T> {
    let n = c_integer(v)?;
    T::try_from(n).map_err(|_| {
        PyOverflowError::new_err(match n {
            n if n < 0 && c_name.starts_with('u') => format!("can't convert negative value to {c_name}"),
            n if n < 0 => format!("value too small to convert to {c_name}"),
            _ => format!("value too large to convert to {c_name}"),
        })
    })
}

/// The header of segments made without one (pysam's `header=None`):
/// compared by address, so a header with no references stays a header.
fn no_header() -> &'static Arc<Header> {
    static NONE: std::sync::OnceLock<Arc<Header>> = std::sync::OnceLock::new();
    NONE.get_or_init(|| Arc::new(Header { text: Vec::new(), references: Vec::new() }))
}

/// A library header kept on the `fasthts.AlignmentHeader` it was built
/// from (as `_library_header`): segments made against one header share it,
/// built once (a header's text and references do not change).
#[pyclass(module = "fasthts._fasthts", frozen)]
struct LibraryHeader(Arc<Header>);

/// The library header of a `fasthts.AlignmentHeader`, from its text and
/// references (read from them, not from the file it came from: this
/// module does not reach into `crate::alignment`, which uses it).
fn header_of(header: &Bound<'_, PyAny>) -> PyResult<Arc<Header>> {
    let (Ok(refs), Ok(raw)) = (header.getattr("_refs"), header.getattr("_raw")) else {
        return Err(PyTypeError::new_err(format!(
            "Argument 'header' has incorrect type (expected fasthts.AlignmentHeader, got {})",
            header.get_type().name()?
        )));
    };
    if let Ok(kept) = header.getattr("_library_header") {
        if let Ok(kept) = kept.cast::<LibraryHeader>() {
            return Ok(kept.get().0.clone());
        }
    }
    let references: Vec<(String, u32)> = refs.extract()?;
    let built = Arc::new(Header {
        text: raw.extract::<String>()?.into_bytes(),
        references: references.into_iter().map(|(name, len)| fasthts::bam::Reference { name, len }).collect(),
    });
    // A header object that takes no attributes just builds it again.
    let _ = header.setattr("_library_header", LibraryHeader(built.clone()));
    Ok(built)
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

    fn has_header(&self) -> bool {
        !Arc::ptr_eq(&self.header, no_header())
    }

    /// The name of reference `tid` (None for -1), as pysam's getters:
    /// ValueError without a header (`what`: the attribute).
    fn name_of(&self, tid: i32, what: &str) -> PyResult<Option<String>> {
        if tid == -1 {
            return Ok(None);
        }
        if !self.has_header() {
            return Err(PyValueError::new_err(format!("{what} unknown if no header associated with record")));
        }
        Ok(usize::try_from(tid).ok().and_then(|i| self.header.references.get(i)).map(|r| r.name.clone()))
    }

    /// A reference id to set, checked against the header as pysam checks it.
    fn checked_tid(&self, tid: &Bound<'_, PyAny>) -> PyResult<i32> {
        let tid: i32 = c_value(tid, "int")?;
        if tid != -1 && self.has_header() && !(0..self.header.references.len() as i64).contains(&i64::from(tid)) {
            return Err(PyValueError::new_err(format!("reference id {tid} does not exist in header")));
        }
        Ok(tid)
    }

    /// The id of the reference named `name`, as pysam's name setters find
    /// it: None or "*" → -1; `mate_of`: "=" → that id.
    fn tid_of_name(&self, name: &Bound<'_, PyAny>, what: &str, mate_of: Option<i32>) -> PyResult<i32> {
        if name.is_none() || name.eq("*")? {
            return Ok(-1);
        }
        if let (Some(tid), true) = (mate_of, name.eq("=")?) {
            return Ok(tid);
        }
        if !self.has_header() {
            return Err(PyValueError::new_err(format!("{what} can not be set if no header associated with record")));
        }
        let text = if let Ok(b) = name.cast::<pyo3::types::PyBytes>() {
            String::from_utf8_lossy(b.as_bytes()).into_owned()
        } else {
            name.extract::<String>().map_err(|_| PyTypeError::new_err("Argument must be string, bytes or unicode."))?
        };
        match self.header.references.iter().position(|r| r.name == text) {
            Some(tid) => Ok(tid as i32),
            None => Err(PyValueError::new_err(format!("reference {text} does not exist in header"))),
        }
    }

    fn set_flag_bits(&mut self, bits: u16, on: bool) {
        fasthts::bam::edit::set_flag_bits(&mut self.data, bits, on);
    }

    /// pysam's flag setters: the value as a C uint16, any non-zero sets.
    fn set_flag_from(&mut self, bits: u16, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v: u16 = c_value(value, "uint16_t")?;
        self.set_flag_bits(bits, v != 0);
        Ok(())
    }

    fn set_cigar_words(&mut self, words: &[u32]) -> PyResult<()> {
        let mut edited = Vec::new();
        fasthts::bam::edit::with_cigar(&self.data, words, &mut edited).map_err(to_py)?;
        self.replace_data(edited);
        Ok(())
    }

    fn set_quals(&mut self, quals: Option<&[u8]>) -> PyResult<()> {
        fasthts::bam::edit::set_qualities(&mut self.data, quals).map_err(to_py)
    }

    /// Replaces the record's data with an edit's result.
    fn replace_data(&mut self, edited: Vec<u8>) {
        self.data = edited.into_boxed_slice();
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
    /// pysam's `AlignedSegment(header=None)`: no name, CIGAR, sequence or
    /// tags, reference ids and positions -1.
    #[new]
    #[pyo3(signature = (header=None))]
    fn new(header: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let header = match header {
            Some(h) if !h.is_none() => header_of(h)?,
            _ => no_header().clone(),
        };
        Ok(AlignedSegment { data: Box::new(fasthts::bam::edit::empty_record()), header })
    }

    /// An independent copy (sharing the header), as pysam's.
    fn __copy__(&self) -> Self {
        AlignedSegment { data: self.data.clone(), header: self.header.clone() }
    }

    /// As `__copy__` (pysam's deep copy shares the header too).
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Self {
        self.__copy__()
    }

    /// None when the record has no name (a new segment's).
    #[getter]
    fn query_name(&self) -> Option<String> {
        (self.data[8] != 0).then(|| String::from_utf8_lossy(self.r().name()).into_owned())
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
    /// pysam's: -1 or an id of the header (ValueError otherwise).
    #[setter(reference_id)]
    fn set_reference_id(&mut self, tid: &Bound<'_, PyAny>) -> PyResult<()> {
        let tid = self.checked_tid(tid)?;
        fasthts::bam::edit::set_reference_id(&mut self.data, tid);
        Ok(())
    }
    /// None when the record has no reference.
    #[getter]
    fn reference_name(&self) -> PyResult<Option<String>> {
        self.name_of(self.r().ref_id(), "reference_name")
    }
    /// A name of the header; None or "*": no reference.
    #[setter(reference_name)]
    fn set_reference_name(&mut self, name: &Bound<'_, PyAny>) -> PyResult<()> {
        let tid = self.tid_of_name(name, "reference_name", None)?;
        fasthts::bam::edit::set_reference_id(&mut self.data, tid);
        Ok(())
    }
    /// 0-based leftmost position (-1 when unset).
    #[getter]
    fn reference_start(&self) -> i32 {
        self.r().pos()
    }
    /// Recomputes the bin, as pysam (BAM's positions are 32-bit: larger
    /// ones raise OverflowError here, where pysam fails when writing).
    #[setter(reference_start)]
    fn set_reference_start(&mut self, pos: &Bound<'_, PyAny>) -> PyResult<()> {
        fasthts::bam::edit::set_position(&mut self.data, c_value(pos, "int32_t")?);
        Ok(())
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
    #[setter(bin)]
    fn set_bin(&mut self, bin: &Bound<'_, PyAny>) -> PyResult<()> {
        fasthts::bam::edit::set_bin(&mut self.data, c_value(bin, "uint16_t")?);
        Ok(())
    }
    /// None without a CIGAR.
    #[getter]
    fn cigarstring(&self) -> Option<String> {
        let c = self.r().cigar();
        (!c.is_empty()).then(|| c.iter().map(|(op, len)| format!("{len}{}", op.letter() as char)).collect())
    }
    /// pysam's: every `<length><op>` in the text; None, "" or "*" clears.
    #[setter(cigarstring)]
    fn set_cigarstring(&mut self, cigar: Option<&str>) -> PyResult<()> {
        let mut words = Vec::new();
        fasthts::bam::edit::cigar_words_of_text(cigar.unwrap_or("").as_bytes(), &mut words)
            .map_err(|e| PyOverflowError::new_err(e.to_string()))?;
        self.set_cigar_words(&words)
    }
    /// `[(op, length), ...]` (M=0 I=1 D=2 N=3 S=4 H=5 P=6 '='=7 X=8 B=9);
    /// None without a CIGAR.
    #[getter]
    fn cigartuples(&self) -> Option<Vec<(u8, u32)>> {
        let c = self.r().cigar();
        (!c.is_empty()).then(|| c.iter().map(|(op, len)| (op.code(), len)).collect())
    }
    /// `[(op, length), ...]` (any iterable of pairs); None or empty clears.
    /// Each word is pysam's `length << 4 | op` as a C uint32.
    #[setter(cigartuples)]
    fn set_cigartuples(&mut self, values: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut words = Vec::new();
        if !values.is_none() {
            for item in values.try_iter()? {
                let pair: Vec<Bound<'_, PyAny>> = item?.try_iter()?.collect::<PyResult<_>>()?;
                let [op, len] = &pair[..] else {
                    return Err(PyValueError::new_err(format!("expected 2 values to unpack, got {}", pair.len())));
                };
                words.push(c_value(&len.lshift(4)?.bitor(op)?, "uint32_t")?);
            }
        }
        self.set_cigar_words(&words)
    }
    /// None when absent.
    #[getter]
    fn query_sequence(&self) -> Option<String> {
        self.sequence(0, usize::MAX)
    }
    /// pysam's: the qualities become absent; None, "" or "*" clears both.
    #[setter(query_sequence)]
    fn set_query_sequence(&mut self, seq: &Bound<'_, PyAny>) -> PyResult<()> {
        let bases: Vec<u8> = if seq.is_none() {
            Vec::new()
        } else if let Ok(b) = seq.cast::<pyo3::types::PyBytes>() {
            b.as_bytes().to_vec()
        } else if let Ok(text) = seq.extract::<String>() {
            // pysam takes as many bytes of the UTF-8 text as it has characters.
            let mut bytes = text.clone().into_bytes();
            bytes.truncate(text.chars().count());
            if text == "*" {
                Vec::new()
            } else {
                bytes
            }
        } else {
            return Err(PyTypeError::new_err("Argument must be string, bytes or unicode."));
        };
        let mut edited = Vec::new();
        fasthts::bam::edit::with_sequence(&self.data, &bases, &mut edited);
        self.replace_data(edited);
        Ok(())
    }
    /// `array.array('B')` of phred values; None when absent.
    #[getter]
    fn query_qualities<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.quals().map(|q| py_array(py, "B", q)).transpose()
    }
    /// pysam's: phred values (any iterable of ints, as many as bases) or
    /// SAM text; None or empty makes them absent.
    #[setter(query_qualities)]
    fn set_query_qualities(&mut self, quals: &Bound<'_, PyAny>) -> PyResult<()> {
        if quals.is_instance_of::<pyo3::types::PyString>() {
            return self.set_query_qualities_str(quals);
        }
        let n = if quals.is_none() { 0 } else { quals.len()? };
        if n == 0 {
            return self.set_quals(None);
        }
        if n != self.r().seq_len() {
            // Checked before the values are converted, as pysam: the
            // library's length-mismatch error.
            return self.set_quals(Some(&vec![0; n]));
        }
        let values: Vec<u8> = quals.try_iter()?.map(|q| c_value(&q?, "uint8_t")).collect::<PyResult<_>>()?;
        self.set_quals(Some(&values))
    }
    /// Qualities as SAM text (phred + 33); None when absent.
    #[getter]
    fn query_qualities_str(&self) -> Option<String> {
        self.quals().map(|q| q.iter().map(|&v| (v.saturating_add(33)) as char).collect())
    }
    /// pysam's: SAM text (ASCII, phred + 33, as many as bases); None, ""
    /// or "*" makes them absent.
    #[setter(query_qualities_str)]
    fn set_query_qualities_str(&mut self, quals: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = if quals.is_none() { 0 } else { quals.len()? };
        if n == 0 || quals.eq("*")? {
            return self.set_quals(None);
        }
        if n != self.r().seq_len() {
            // Checked before the values are converted, as pysam: the
            // library's length-mismatch error.
            return self.set_quals(Some(&vec![0; n]));
        }
        let text = quals.call_method1("encode", ("ascii",))?;
        let values: Vec<u8> = text.extract::<Vec<u8>>()?.iter().map(|c| c.wrapping_sub(33)).collect();
        self.set_quals(Some(&values))
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
    #[setter(next_reference_id)]
    fn set_next_reference_id(&mut self, tid: &Bound<'_, PyAny>) -> PyResult<()> {
        let tid = self.checked_tid(tid)?;
        fasthts::bam::edit::set_mate_reference_id(&mut self.data, tid);
        Ok(())
    }
    #[getter]
    fn next_reference_name(&self) -> PyResult<Option<String>> {
        self.name_of(self.r().mate_ref_id(), "next_reference_name")
    }
    /// A name of the header, "=" (the record's own reference); None or "*":
    /// none.
    #[setter(next_reference_name)]
    fn set_next_reference_name(&mut self, name: &Bound<'_, PyAny>) -> PyResult<()> {
        let tid = self.tid_of_name(name, "next_reference_name", Some(self.r().ref_id()))?;
        fasthts::bam::edit::set_mate_reference_id(&mut self.data, tid);
        Ok(())
    }
    #[getter]
    fn next_reference_start(&self) -> i32 {
        self.r().mate_pos()
    }
    #[setter(next_reference_start)]
    fn set_next_reference_start(&mut self, pos: &Bound<'_, PyAny>) -> PyResult<()> {
        fasthts::bam::edit::set_mate_position(&mut self.data, c_value(pos, "int32_t")?);
        Ok(())
    }
    #[getter]
    fn template_length(&self) -> i32 {
        self.r().template_len()
    }
    #[setter(template_length)]
    fn set_template_length(&mut self, tlen: &Bound<'_, PyAny>) -> PyResult<()> {
        fasthts::bam::edit::set_template_length(&mut self.data, c_value(tlen, "int32_t")?);
        Ok(())
    }
    #[getter]
    fn is_paired(&self) -> bool {
        self.has_flag(flags::PAIRED)
    }
    #[setter(is_paired)]
    fn set_is_paired(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::PAIRED, value)
    }
    #[getter]
    fn is_proper_pair(&self) -> bool {
        self.has_flag(flags::PROPER_PAIR)
    }
    #[setter(is_proper_pair)]
    fn set_is_proper_pair(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::PROPER_PAIR, value)
    }
    #[getter]
    fn is_unmapped(&self) -> bool {
        self.has_flag(flags::UNMAPPED)
    }
    #[setter(is_unmapped)]
    fn set_is_unmapped(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::UNMAPPED, value)
    }
    #[getter]
    fn is_mapped(&self) -> bool {
        !self.has_flag(flags::UNMAPPED)
    }
    /// pysam's: clears the bit when `value` is true (any object).
    #[setter(is_mapped)]
    fn set_is_mapped(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_bits(flags::UNMAPPED, !value.is_truthy()?);
        Ok(())
    }
    #[getter]
    fn mate_is_unmapped(&self) -> bool {
        self.has_flag(flags::MATE_UNMAPPED)
    }
    #[setter(mate_is_unmapped)]
    fn set_mate_is_unmapped(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::MATE_UNMAPPED, value)
    }
    #[getter]
    fn mate_is_mapped(&self) -> bool {
        !self.has_flag(flags::MATE_UNMAPPED)
    }
    /// pysam's: clears the bit when `value` is true (any object).
    #[setter(mate_is_mapped)]
    fn set_mate_is_mapped(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_bits(flags::MATE_UNMAPPED, !value.is_truthy()?);
        Ok(())
    }
    #[getter]
    fn is_reverse(&self) -> bool {
        self.has_flag(flags::REVERSE)
    }
    #[setter(is_reverse)]
    fn set_is_reverse(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::REVERSE, value)
    }
    #[getter]
    fn is_forward(&self) -> bool {
        !self.has_flag(flags::REVERSE)
    }
    /// pysam's: clears the bit when `value` is true (any object).
    #[setter(is_forward)]
    fn set_is_forward(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_bits(flags::REVERSE, !value.is_truthy()?);
        Ok(())
    }
    #[getter]
    fn mate_is_reverse(&self) -> bool {
        self.has_flag(flags::MATE_REVERSE)
    }
    #[setter(mate_is_reverse)]
    fn set_mate_is_reverse(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::MATE_REVERSE, value)
    }
    #[getter]
    fn mate_is_forward(&self) -> bool {
        !self.has_flag(flags::MATE_REVERSE)
    }
    /// pysam's: clears the bit when `value` is true (any object).
    #[setter(mate_is_forward)]
    fn set_mate_is_forward(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_bits(flags::MATE_REVERSE, !value.is_truthy()?);
        Ok(())
    }
    #[getter]
    fn is_read1(&self) -> bool {
        self.has_flag(flags::READ1)
    }
    #[setter(is_read1)]
    fn set_is_read1(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::READ1, value)
    }
    #[getter]
    fn is_read2(&self) -> bool {
        self.has_flag(flags::READ2)
    }
    #[setter(is_read2)]
    fn set_is_read2(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::READ2, value)
    }
    #[getter]
    fn is_secondary(&self) -> bool {
        self.has_flag(flags::SECONDARY)
    }
    #[setter(is_secondary)]
    fn set_is_secondary(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::SECONDARY, value)
    }
    #[getter]
    fn is_qcfail(&self) -> bool {
        self.has_flag(flags::QC_FAIL)
    }
    #[setter(is_qcfail)]
    fn set_is_qcfail(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::QC_FAIL, value)
    }
    #[getter]
    fn is_duplicate(&self) -> bool {
        self.has_flag(flags::DUPLICATE)
    }
    #[setter(is_duplicate)]
    fn set_is_duplicate(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::DUPLICATE, value)
    }
    #[getter]
    fn is_supplementary(&self) -> bool {
        self.has_flag(flags::SUPPLEMENTARY)
    }
    #[setter(is_supplementary)]
    fn set_is_supplementary(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_flag_from(flags::SUPPLEMENTARY, value)
    }

    /// pysam's `set_tag`: `value` None removes the tag; without
    /// `value_type`, an int is stored in the smallest type holding it, a
    /// float as `f`, a str or bytes as `Z`, an array.array, list or tuple
    /// as a `B` array (see `array_tag`); `replace=False` keeps a field
    /// already there.
    #[pyo3(signature = (tag, value, value_type=None, replace=true))]
    fn set_tag(&mut self, py: Python<'_>, tag: &str, value: &Bound<'_, PyAny>, value_type: Option<&str>, replace: bool) -> PyResult<()> {
        use fasthts::bam::edit::remove_tag;
        if tag.len() != 2 {
            return Err(PyValueError::new_err(format!("Invalid tag: {tag}")));
        }
        let key = tag_key(tag)?;
        let mut data = self.data.to_vec();
        if replace {
            remove_tag(&mut data, key);
        }
        if !value.is_none() {
            if let Some(t) = value_type.filter(|t| t.len() != 1 || !"aAsSIcCZidfH".contains(*t)) {
                return Err(PyValueError::new_err(format!("can't guess type or invalid type code specified: {} {t}", value.str()?)));
            }
            append_python_tag(py, &mut data, key, value, value_type, false)?;
        }
        self.data = data.into_boxed_slice();
        Ok(())
    }

    /// pysam's `set_tags`: the record's tags become `tags`, `(tag, value)`
    /// or `(tag, value, value_type)` each, typed as `set_tag` types them
    /// (`value_type` also gives a list's array subtype); None or empty
    /// removes them all. Nothing changes when one cannot be stored.
    fn set_tags(&mut self, py: Python<'_>, tags: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut fields = Vec::new();
        if !tags.is_none() {
            for item in tags.try_iter()? {
                let item = item?;
                let parts: Vec<Bound<'_, PyAny>> = item.try_iter()?.collect::<PyResult<_>>()?;
                let (tag, value, value_type) = match &parts[..] {
                    [tag, value] => (tag, value, None),
                    [tag, value, t] => (tag, value, (!t.is_none()).then(|| t.extract::<String>()).transpose()?),
                    _ => return Err(PyValueError::new_err(format!("malformatted tag: {}", item.str()?))),
                };
                let tag = match tag.cast::<pyo3::types::PyBytes>() {
                    Ok(b) => String::from_utf8_lossy(b.as_bytes()).into_owned(),
                    Err(_) => tag.extract::<String>()?,
                };
                let value_type = value_type.as_deref().and_then(|t| t.get(..1));
                append_python_tag(py, &mut fields, tag_key(&tag)?, value, value_type, true)?;
            }
        }
        let mut data = self.data.to_vec();
        fasthts::bam::edit::replace_tags(&mut data, &fields);
        self.data = data.into_boxed_slice();
        Ok(())
    }

    /// pysam's deprecated `tags`: `get_tags()`.
    #[getter(tags)]
    fn tags_property<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.get_tags(py, false)
    }
    #[setter(tags)]
    fn set_tags_property(&mut self, py: Python<'_>, tags: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_tags(py, tags)
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

    /// The record as a SAM line (without the line end), as samtools view
    /// prints it; as pysam, NotImplementedError without a header and
    /// ValueError for a record without a name.
    fn to_string(&self) -> PyResult<String> {
        if !self.has_header() {
            return Err(PyNotImplementedError::new_err("todo"));
        }
        if self.data[8] == 0 {
            return Err(PyValueError::new_err("sam_format failed"));
        }
        let mut out = Vec::new();
        fasthts::sam::format_record(&self.r(), &self.header.references, &mut out).map_err(to_py)?;
        if out.last() == Some(&b'\n') {
            out.pop();
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// pysam's `fromstring`: the record of the SAM line `sam`, as htslib
    /// parses it against `header` (ValueError when it cannot).
    #[classmethod]
    fn fromstring(_cls: &Bound<'_, pyo3::types::PyType>, sam: &str, header: &Bound<'_, PyAny>) -> PyResult<Self> {
        let header = if header.is_none() { no_header().clone() } else { header_of(header)? };
        let refs = fasthts::sam::RefNames::new(&header);
        let mut record = Vec::with_capacity(sam.len() + 36);
        fasthts::sam::encode_record(sam.trim_end_matches(['\n', '\r']).as_bytes(), &refs, &mut record)
            .map_err(|e| PyValueError::new_err(format!("parsing SAM record string failed ({e})")))?;
        record.drain(..4);
        Ok(AlignedSegment { data: record.into_boxed_slice(), header })
    }

    /// pysam's `to_dict`: the SAM fields as text under pysam's names, the
    /// tags as a list of their SAM text.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let line = self.to_string()?;
        let mut fields = line.split('\t');
        let out = pyo3::types::PyDict::new(py);
        for key in &SAM_FIELD_NAMES[..11] {
            out.set_item(key, fields.next().unwrap_or(""))?;
        }
        out.set_item(SAM_FIELD_NAMES[11], fields.collect::<Vec<_>>())?;
        Ok(out)
    }

    /// pysam's `from_dict`: the record of `to_dict`'s fields (`tags` may be
    /// missing).
    #[classmethod]
    fn from_dict(cls: &Bound<'_, pyo3::types::PyType>, sam_dict: &Bound<'_, PyAny>, header: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut fields: Vec<String> = Vec::with_capacity(12);
        for key in &SAM_FIELD_NAMES[..11] {
            fields.push(sam_dict.get_item(key)?.extract()?);
        }
        let tags: Vec<String> = match sam_dict.call_method1("get", (SAM_FIELD_NAMES[11],))? {
            t if t.is_none() => Vec::new(),
            t => t.extract()?,
        };
        let line = fields.join("\t") + "\t" + &tags.join("\t");
        Self::fromstring(cls, &line, header)
    }

    /// pysam's `compare`: -1, 0 or 1 as this record's htslib form (its
    /// `bam1_core_t`, then its data's length and bytes) sorts before, equal
    /// to or after `other`'s (None: -1). pysam returns `memcmp`'s value,
    /// of the same sign.
    fn compare(&self, other: Option<PyRef<'_, AlignedSegment>>) -> i32 {
        let Some(other) = other else { return -1 };
        let (a, b) = (in_memory_form(&self.r()), in_memory_form(&other.r()));
        let order = a.0.cmp(&b.0).then(a.1.len().cmp(&b.1.len())).then_with(|| a.1.cmp(&b.1));
        order as i32
    }

    /// pysam's deprecated name of `to_string` (`htsfile` ignored).
    #[pyo3(signature = (htsfile=None))]
    fn tostring(&self, htsfile: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
        let _ = htsfile;
        self.to_string()
    }

    /// The SAM line; for a record without a header or name (which have
    /// none), pysam's approximate line (`#<id>` for a reference, the
    /// qualities and tags as Python shows them).
    fn __str__(&self, py: Python<'_>) -> PyResult<String> {
        if self.has_header() && self.data[8] != 0 {
            return self.to_string();
        }
        let r = self.r();
        let reference = |tid: i32| match self.name_of(tid, "") {
            Ok(Some(name)) => name,
            Ok(None) => "*".to_string(),
            Err(_) => format!("#{tid}"),
        };
        let show = |v: Option<String>| v.unwrap_or_else(|| "None".to_string());
        let quals = match self.query_qualities(py)? {
            Some(q) => q.str()?.to_string(),
            None => "None".to_string(),
        };
        Ok([
            show(self.query_name()),
            r.flag().to_string(),
            reference(r.ref_id()),
            (i64::from(r.pos()) + 1).to_string(),
            r.mapq().to_string(),
            show(self.cigarstring()),
            reference(r.mate_ref_id()),
            (i64::from(r.mate_pos()) + 1).to_string(),
            r.template_len().to_string(),
            show(self.query_sequence()),
            quals,
            self.get_tags(py, false)?.str()?.to_string(),
        ]
        .join("\t"))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<fasthts.AlignedSegment {}>", self.__str__(py)?.split('\t').take(6).collect::<Vec<_>>().join("\t")))
    }

    // pysam's deprecated names, still in pysam 0.24 and in older scripts:
    // each is the attribute it names (pysam's own aliases).
    #[getter]
    fn qname(&self) -> Option<String> {
        self.query_name()
    }
    #[setter]
    fn set_qname(&mut self, name: Option<&str>) -> PyResult<()> {
        self.set_query_name(name)
    }
    #[getter]
    fn tid(&self) -> i32 {
        self.reference_id()
    }
    #[setter]
    fn set_tid(&mut self, tid: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_reference_id(tid)
    }
    #[getter]
    fn rname(&self) -> i32 {
        self.reference_id()
    }
    #[setter]
    fn set_rname(&mut self, tid: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_reference_id(tid)
    }
    #[getter]
    fn pos(&self) -> i32 {
        self.reference_start()
    }
    #[setter]
    fn set_pos(&mut self, pos: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_reference_start(pos)
    }
    #[getter]
    fn mapq(&self) -> u8 {
        self.mapping_quality()
    }
    #[setter]
    fn set_mapq(&mut self, mapq: u8) {
        self.set_mapping_quality(mapq)
    }
    #[getter]
    fn rnext(&self) -> i32 {
        self.next_reference_id()
    }
    #[setter]
    fn set_rnext(&mut self, tid: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_next_reference_id(tid)
    }
    #[getter]
    fn mrnm(&self) -> i32 {
        self.next_reference_id()
    }
    #[setter]
    fn set_mrnm(&mut self, tid: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_next_reference_id(tid)
    }
    #[getter]
    fn pnext(&self) -> i32 {
        self.next_reference_start()
    }
    #[setter]
    fn set_pnext(&mut self, pos: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_next_reference_start(pos)
    }
    #[getter]
    fn mpos(&self) -> i32 {
        self.next_reference_start()
    }
    #[setter]
    fn set_mpos(&mut self, pos: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_next_reference_start(pos)
    }
    /// pysam's `cigar`: `cigartuples`, an empty list where that is None.
    #[getter]
    fn cigar(&self) -> Vec<(u8, u32)> {
        self.cigartuples().unwrap_or_default()
    }
    #[setter]
    fn set_cigar(&mut self, values: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_cigartuples(values)
    }
    #[getter]
    fn tlen(&self) -> i32 {
        self.template_length()
    }
    #[setter]
    fn set_tlen(&mut self, tlen: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_template_length(tlen)
    }
    #[getter]
    fn isize(&self) -> i32 {
        self.template_length()
    }
    #[setter]
    fn set_isize(&mut self, tlen: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_template_length(tlen)
    }
    #[getter]
    fn seq(&self) -> Option<String> {
        self.query_sequence()
    }
    #[setter]
    fn set_seq(&mut self, seq: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_query_sequence(seq)
    }
    /// pysam's `qual`: `query_qualities_str`.
    #[getter]
    fn qual(&self) -> Option<String> {
        self.query_qualities_str()
    }
    #[setter]
    fn set_qual(&mut self, quals: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_query_qualities_str(quals)
    }
    #[getter]
    fn alen(&self) -> Option<i64> {
        self.reference_length()
    }
    #[getter]
    fn aend(&self) -> Option<i64> {
        self.reference_end()
    }
    #[getter]
    fn rlen(&self) -> usize {
        self.query_length()
    }
    #[getter]
    fn query(&self) -> Option<String> {
        self.query_alignment_sequence()
    }
    #[getter]
    fn qstart(&self) -> usize {
        self.query_alignment_start()
    }
    #[getter]
    fn qend(&self) -> usize {
        self.query_alignment_end()
    }
    #[getter]
    fn qlen(&self) -> usize {
        self.query_alignment_length()
    }
    // (Named apart: pyo3 names a getter's wrapper after `get_` and the
    // attribute, which get_blocks and get_aligned_pairs already are.)
    #[getter(blocks)]
    fn blocks_alias(&self) -> Vec<(u32, u32)> {
        self.get_blocks()
    }
    #[getter(aligned_pairs)]
    fn aligned_pairs_alias<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.get_aligned_pairs(py, false, false, false)
    }
    #[getter]
    fn inferred_length(&self) -> Option<i64> {
        self.infer_query_length(false)
    }
    #[getter]
    fn positions(&self) -> Vec<Option<u32>> {
        self.get_reference_positions(false)
    }
    /// pysam's `opt`: `get_tag(tag)`.
    fn opt<'py>(&self, py: Python<'py>, tag: &str) -> PyResult<Bound<'py, PyAny>> {
        self.get_tag(py, tag, false)
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

/// pysam's names of the SAM fields in `to_dict`.
const SAM_FIELD_NAMES: [&str; 12] =
    ["name", "flag", "ref_name", "ref_pos", "map_quality", "cigar", "next_ref_name", "next_ref_pos", "length", "seq", "qual", "tags"];

/// A record as htslib holds it in memory, what pysam's `compare` compares:
/// its `bam1_core_t` (48 bytes, little-endian, in field order) and its data,
/// the name padded with NULs to a multiple of 4 bytes.
fn in_memory_form(r: &RecordRef<'_>) -> ([u8; 48], Vec<u8>) {
    let data = r.as_bytes();
    let l_name = usize::from(data[8]);
    let extra_nul = if l_name % 4 == 0 { 0 } else { 4 - l_name % 4 };
    let mut core = [0u8; 48];
    core[0..8].copy_from_slice(&i64::from(r.pos()).to_le_bytes());
    core[8..12].copy_from_slice(&r.ref_id().to_le_bytes());
    core[12..14].copy_from_slice(&r.bin().to_le_bytes());
    core[14] = r.mapq();
    core[15] = extra_nul as u8;
    core[16..18].copy_from_slice(&r.flag().to_le_bytes());
    core[18..20].copy_from_slice(&((l_name + extra_nul) as u16).to_le_bytes());
    core[20..24].copy_from_slice(&u32::from(r.n_cigar_op()).to_le_bytes());
    core[24..28].copy_from_slice(&(r.seq_len() as i32).to_le_bytes());
    core[28..32].copy_from_slice(&r.mate_ref_id().to_le_bytes());
    core[32..40].copy_from_slice(&i64::from(r.mate_pos()).to_le_bytes());
    core[40..48].copy_from_slice(&i64::from(r.template_len()).to_le_bytes());
    let mut memory = Vec::with_capacity(data.len() - 32 + extra_nul);
    memory.extend_from_slice(&data[32..32 + l_name]);
    memory.resize(l_name + extra_nul, 0);
    memory.extend_from_slice(&data[32 + l_name..]);
    (core, memory)
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
