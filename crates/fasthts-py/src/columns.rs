//! A region's records as columns handed to numpy without a copy, and how
//! they are read from a file: a region in pieces on the current pool
//! (`fasthts::region::pieces`) or many regions in parallel (a whole file's
//! in parts: `fasthts::alignment_file::AlignmentFile::scatter`).

use fasthts::bam::RecordRef;
use fasthts::region::indexed::{IndexedFile, Rule};
use fasthts::region::{self, pieces, Region as LibRegion};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

/// The columns of the records starting in `region` of `file`, read on the
/// current pool: the region is cut into pieces of about `piece_bytes`
/// compressed bytes (a CRAM file's at its containers), read in parallel
/// and appended in order.
pub(crate) fn region_columns(file: &IndexedFile, region: LibRegion, piece_bytes: u64) -> Result<Columns, fasthts::Error> {
    let plan = pieces::plan(file, region, piece_bytes)?;
    if plan.len() == 1 {
        return query_columns(file, region);
    }
    // Pieces are read into buffers that are appended in order and reused:
    // the output is the only large memory written.
    let mut out = Columns::with_capacity(pieces::estimate_records(file, region));
    let new_buffer = |piece| Columns::with_capacity(pieces::estimate_records(file, piece));
    let fill = |records: &mut region::indexed::Records<'_>, c: &mut Columns| {
        c.clear();
        records.for_each_record(|r| c.push(r))
    };
    pieces::read_in_order(file, &plan, new_buffer, fill, |c| {
        out.append(c);
        Ok(())
    })?;
    Ok(out)
}

/// The columns of the records starting in `region` of `file`, read by one
/// query.
fn query_columns(file: &IndexedFile, region: LibRegion) -> Result<Columns, fasthts::Error> {
    let mut c = Columns::with_capacity(pieces::estimate_records(file, region));
    file.query(region, Rule::StartsIn)?.for_each_record(|r| c.push(r))?;
    Ok(c)
}

/// The columns of each of `regions`, read in parallel on the current pool,
/// in the order given; the error of the first failing region (in that
/// order), as `fasthts::region::scatter`.
pub(crate) fn regions_columns(file: &IndexedFile, regions: &[LibRegion]) -> Result<Vec<Columns>, fasthts::Error> {
    let read: Vec<Result<Columns, fasthts::Error>> = regions.par_iter().map(|r| query_columns(file, *r)).collect();
    read.into_iter().collect()
}

/// Per-record columns of a region.
pub(crate) struct Columns {
    tid: ColVec<i32>,
    pos: ColVec<i32>,
    end: ColVec<i64>,
    flag: ColVec<u16>,
    mapq: ColVec<u8>,
    len: ColVec<i32>,
    mate_tid: ColVec<i32>,
    mate_pos: ColVec<i32>,
    tlen: ColVec<i32>,
}

impl Columns {
    /// Empty columns with room for `n` records.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Columns {
            tid: ColVec::with_capacity(n),
            pos: ColVec::with_capacity(n),
            end: ColVec::with_capacity(n),
            flag: ColVec::with_capacity(n),
            mapq: ColVec::with_capacity(n),
            len: ColVec::with_capacity(n),
            mate_tid: ColVec::with_capacity(n),
            mate_pos: ColVec::with_capacity(n),
            tlen: ColVec::with_capacity(n),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, r: &RecordRef<'_>) {
        self.tid.push(r.ref_id());
        self.pos.push(r.pos());
        self.end.push(r.end_pos());
        self.flag.push(r.flag());
        self.mapq.push(r.mapq());
        self.len.push(r.seq_len() as i32);
        self.mate_tid.push(r.mate_ref_id());
        self.mate_pos.push(r.mate_pos());
        self.tlen.push(r.template_len());
    }

    /// Empties the columns, keeping their memory.
    pub(crate) fn clear(&mut self) {
        for len in [
            &mut self.tid.len,
            &mut self.pos.len,
            &mut self.end.len,
            &mut self.flag.len,
            &mut self.mapq.len,
            &mut self.len.len,
            &mut self.mate_tid.len,
            &mut self.mate_pos.len,
            &mut self.tlen.len,
        ] {
            *len = 0;
        }
    }

    /// Appends the records of `other`.
    pub(crate) fn append(&mut self, other: &Columns) {
        self.tid.extend_from_slice(other.tid.as_slice());
        self.pos.extend_from_slice(other.pos.as_slice());
        self.end.extend_from_slice(other.end.as_slice());
        self.flag.extend_from_slice(other.flag.as_slice());
        self.mapq.extend_from_slice(other.mapq.as_slice());
        self.len.extend_from_slice(other.len.as_slice());
        self.mate_tid.extend_from_slice(other.mate_tid.as_slice());
        self.mate_pos.extend_from_slice(other.mate_pos.as_slice());
        self.tlen.extend_from_slice(other.tlen.as_slice());
    }

    /// The concatenation of `parts`, in order: a single part is taken as
    /// it is, several are copied once into columns of their total length.
    pub(crate) fn concat(mut parts: Vec<Columns>) -> Columns {
        if parts.len() == 1 {
            return parts.pop().expect("one part");
        }
        let n = parts.iter().map(|c| c.tid.len()).sum();
        let mut out = Columns::with_capacity(n);
        for c in &parts {
            out.append(c);
        }
        out
    }

    /// `{name: Column}`, handing each column's memory over to Python.
    pub(crate) fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        let put = |name: &str, data: ColumnData| d.set_item(name, Column { data });
        put("tid", ColumnData::I32(self.tid))?;
        put("pos", ColumnData::I32(self.pos))?;
        put("end", ColumnData::I64(self.end))?;
        put("flag", ColumnData::U16(self.flag))?;
        put("mapq", ColumnData::U8(self.mapq))?;
        put("len", ColumnData::I32(self.len))?;
        put("mate_tid", ColumnData::I32(self.mate_tid))?;
        put("mate_pos", ColumnData::I32(self.mate_pos))?;
        put("tlen", ColumnData::I32(self.tlen))?;
        Ok(d)
    }
}

/// One column of a region's records, handed to numpy without a copy: numpy
/// reads `__array_interface__` and keeps this object alive as the array's
/// base, so the memory the records were written into is the array's memory.
#[pyclass(frozen, module = "fasthts._fasthts")]
pub struct Column {
    data: ColumnData,
}

/// A column's values (the element type is the column's dtype).
enum ColumnData {
    U8(ColVec<u8>),
    U16(ColVec<u16>),
    I32(ColVec<i32>),
    I64(ColVec<i64>),
}

#[pymethods]
impl Column {
    /// numpy's array interface (version 3): a writable 1-d array of the
    /// column's values, little-endian or big-endian as the machine.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (addr, len, code, size) = match &self.data {
            ColumnData::U8(v) => (v.addr(), v.len(), 'u', 1),
            ColumnData::U16(v) => (v.addr(), v.len(), 'u', 2),
            ColumnData::I32(v) => (v.addr(), v.len(), 'i', 4),
            ColumnData::I64(v) => (v.addr(), v.len(), 'i', 8),
        };
        let order = if size == 1 {
            '|'
        } else if cfg!(target_endian = "little") {
            '<'
        } else {
            '>'
        };
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", (len,))?;
        d.set_item("typestr", format!("{order}{code}{size}"))?;
        // (address, read-only): numpy may write to the values.
        d.set_item("data", (addr, false))?;
        Ok(d)
    }

    fn __len__(&self) -> usize {
        match &self.data {
            ColumnData::U8(v) => v.len(),
            ColumnData::U16(v) => v.len(),
            ColumnData::I32(v) => v.len(),
            ColumnData::I64(v) => v.len(),
        }
    }
}

/// A growable column buffer: a `Vec` whose memory, once handed to numpy
/// (see `Column`), is written by Python through a raw address. It is kept
/// as raw parts so that Rust holds no reference to memory Python mutates.
struct ColVec<T> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
    cap: usize,
}

// SAFETY: a ColVec owns its allocation exclusively, like the Vec it came
// from; Rust reads it only through `&mut self` (before the hand-over) or
// not at all (after: only its address is given out).
unsafe impl<T: Send> Send for ColVec<T> {}
unsafe impl<T: Sync> Sync for ColVec<T> {}

/// Columns of at least this many bytes are backed by transparent huge
/// pages where the kernel offers them: a column is written once, front to
/// back, and 4 KiB page faults cost ~10 % of the time of a region read.
const HUGE_PAGE_BYTES: usize = 4 << 20;

impl<T: Copy> ColVec<T> {
    fn with_capacity(n: usize) -> Self {
        Self::from_vec(Vec::with_capacity(n))
    }

    fn from_vec(v: Vec<T>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        let s = ColVec { ptr: std::ptr::NonNull::new(v.as_mut_ptr()).expect("Vec pointers are not null"), len: v.len(), cap: v.capacity() };
        s.advise_huge_pages();
        s
    }

    fn into_vec(self) -> Vec<T> {
        let s = std::mem::ManuallyDrop::new(self);
        // SAFETY: the parts came from a Vec<T> and were kept consistent.
        unsafe { Vec::from_raw_parts(s.ptr.as_ptr(), s.len, s.cap) }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    #[inline]
    fn push(&mut self, x: T) {
        if self.len == self.cap {
            self.grow();
        }
        // SAFETY: len < cap after grow.
        unsafe { self.ptr.as_ptr().add(self.len).write(x) };
        self.len += 1;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut v = std::mem::replace(self, ColVec::from_vec(Vec::new())).into_vec();
        v.reserve(v.capacity().max(1024));
        *self = ColVec::from_vec(v);
    }

    /// The values written so far.
    fn as_slice(&self) -> &[T] {
        // SAFETY: the first len values are initialised; callers use this
        // only before the column is handed to Python.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Appends `values` (capacity permitting a single copy).
    fn extend_from_slice(&mut self, values: &[T]) {
        if self.cap - self.len < values.len() {
            let mut v = std::mem::replace(self, ColVec::from_vec(Vec::new())).into_vec();
            v.reserve(values.len());
            *self = ColVec::from_vec(v);
        }
        // SAFETY: capacity checked above; the regions do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), self.ptr.as_ptr().add(self.len), values.len()) };
        self.len += values.len();
    }

    fn advise_huge_pages(&self) {
        let bytes = self.cap * std::mem::size_of::<T>();
        if bytes >= HUGE_PAGE_BYTES {
            // SAFETY: the column's allocation, `cap` elements long.
            unsafe { fasthts_io::memory::advise_huge_pages(self.addr() as *const u8, bytes) };
        }
    }
}

impl<T> Drop for ColVec<T> {
    fn drop(&mut self) {
        // SAFETY: as `into_vec`; T is a plain integer (no destructor).
        drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap) });
    }
}
