//! Region queries on CRAM through its `.crai`, by htslib's own iterator
//! (`sam_itr_queryi` + `sam_itr_next`), so that the records a region gives
//! are samtools' (every record overlapping it, in file order).
//!
//! [`CramQuery`] is one htslib handle with its index loaded, asked one
//! region after another. A job cut into parts runs them on several
//! threads through a [`QueryPool`], which keeps the handles (each holds
//! the reference sequences it has loaded) for the next part.

use super::{c_path, ffi, CramOptions, CramReader};
use crate::bam::{Header, RecordRef};
use crate::Error;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// A CRAM file opened with its index, read region by region.
pub struct CramQuery {
    // Dropped before `reader`: the index and iterator point into its cram_fd.
    iter: Option<NonNull<ffi::hts_itr_t>>,
    index: NonNull<ffi::hts_idx_t>,
    reader: CramReader,
    /// The region being read: reference id (-1: the unplaced reads), 0-based `[beg, end)`.
    query: (i32, i64, i64),
}

// SAFETY: the htslib objects are owned by this value alone and used by one
// thread at a time (`&mut self`).
unsafe impl Send for CramQuery {}

/// Whether an index for the CRAM file at `path` is found where htslib
/// looks (`index`: the one given, as with samtools' `-X`).
pub fn has_index(path: &Path, index: Option<&Path>) -> bool {
    match index {
        Some(i) => i.is_file(),
        None => super::crai::crai_candidates(path).iter().any(|p| p.is_file()),
    }
}

impl CramQuery {
    /// Opens the CRAM file at `path` (a regular file) with its index
    /// (`index`, or the `.crai` beside it as htslib finds it). `Ok(None)`
    /// when there is no index; an error naming the index when it cannot be
    /// read.
    pub fn open(path: &Path, options: &CramOptions, index: Option<&Path>) -> Result<Option<CramQuery>, Error> {
        if !has_index(path, index) {
            return Ok(None);
        }
        let reader = CramReader::open(path, options)?;
        let name = c_path(path)?;
        let index_name = index.map(c_path).transpose()?;
        // SAFETY: `fp` is an open CRAM file; the names outlive the call.
        let idx = unsafe {
            ffi::sam_index_load3(
                reader.fp.as_ptr(),
                name.as_ptr(),
                index_name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
                ffi::HTS_IDX_SILENT_FAIL,
            )
        };
        let Some(index) = NonNull::new(idx) else {
            let shown = index.map(Path::to_path_buf).or_else(|| super::crai::crai_candidates(path).into_iter().find(|p| p.is_file()));
            return Err(Error::Message("cannot load the CRAM index (damaged or not a .crai)".into()).with_path(&shown.unwrap_or_default()));
        };
        Ok(Some(CramQuery { iter: None, index, reader, query: (0, 0, 0) }))
    }

    /// The handle, its errors naming `path` (the name the user gave).
    pub fn named(mut self, path: &Path) -> CramQuery {
        self.reader.path = path.to_path_buf();
        self
    }

    /// The header, as a BAM header.
    pub fn header(&self) -> &Header {
        self.reader.header()
    }

    /// Whether the file lacks CRAM's EOF container.
    pub fn missing_eof_container(&self) -> bool {
        self.reader.missing_eof_container()
    }

    /// The name errors give the file.
    pub fn path(&self) -> &Path {
        self.reader.path()
    }

    /// Starts reading the records overlapping 0-based `[beg, end)` of
    /// reference `tid` (`end` may run past the reference), or with `tid`
    /// below 0 the unplaced reads at the end of the file (samtools' `*`).
    pub fn query(&mut self, tid: i32, beg: i64, end: i64) -> Result<(), Error> {
        self.drop_iter();
        // htslib's HTS_POS_MAX: the end of any reference.
        const POS_MAX: i64 = ((i32::MAX as i64) << 32) | i32::MAX as i64;
        let (t, b, e) = if tid < 0 { (ffi::HTS_IDX_NOCOOR, 0, 0) } else { (tid, beg.clamp(0, POS_MAX), end.clamp(beg.max(0), POS_MAX)) };
        // SAFETY: the index is loaded for this reader's open file.
        let iter = unsafe { ffi::sam_itr_queryi(self.index.as_ptr(), t, b, e) };
        let Some(iter) = NonNull::new(iter) else {
            return Err(Error::Message(format!("cannot query the CRAM index for reference {tid}")).with_path(self.reader.path()));
        };
        self.iter = Some(iter);
        self.query = (tid.max(-1), b, e);
        Ok(())
    }

    /// Moves to the next record of the region; false after the last one.
    /// The record is then [`CramQuery::current`].
    pub fn advance(&mut self) -> Result<bool, Error> {
        let Some(iter) = self.iter else { return Ok(false) };
        let r = &mut self.reader;
        // SAFETY: the iterator belongs to this reader's file and index; the
        // record is owned by the reader.
        let ret = unsafe {
            ffi::hts_itr_next(std::ptr::null_mut(), iter.as_ptr(), r.record.as_ptr().cast::<c_void>(), r.fp.as_ptr().cast::<c_void>())
        };
        if ret == -1 {
            self.drop_iter();
            return Ok(false);
        }
        if ret < -1 {
            self.drop_iter();
            return Err(self.decode_error());
        }
        // SAFETY: the iterator filled the record.
        let b = unsafe { r.record.as_ref() };
        let n_ref = r.header.references.len();
        let filled = super::fill_record(r.fields, b, &mut r.buf);
        let checked = filled.and_then(|()| RecordRef::new(&r.buf, n_ref).map(|_| ()).map_err(|d| d.to_string()));
        if let Err(e) = checked {
            return Err(Error::Message(format!("CRAM record in {}: {e}", self.region_text())).with_path(self.reader.path()));
        }
        r.records_read += 1;
        Ok(true)
    }

    /// The record [`CramQuery::advance`] moved to.
    pub fn current(&self) -> RecordRef<'_> {
        RecordRef::new_prevalidated(&self.reader.buf)
    }

    /// The next record of the region, or `None` after the last one.
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, Error> {
        Ok(if self.advance()? { Some(self.current()) } else { None })
    }

    /// The region being read, for messages (1-based, as samtools writes it).
    fn region_text(&self) -> String {
        let (tid, beg, end) = self.query;
        match usize::try_from(tid).ok().and_then(|t| self.reader.header.references.get(t)) {
            Some(r) => format!("region {}:{}-{}", r.name, beg + 1, end),
            None => "the unplaced reads".into(),
        }
    }

    /// Why the region's records could not be decoded: the reference of the
    /// contig is missing or is not the one the file was made with, or the
    /// data is damaged.
    fn decode_error(&mut self) -> Error {
        let (tid, beg, end) = self.query;
        let region = self.region_text();
        let r = &mut self.reader;
        let named = usize::try_from(tid).ok().and_then(|t| r.header.references.get(t)).map(|c| c.name.clone());
        let Some(contig) = named.filter(|_| r.fields.whole_records()) else {
            return r.damaged(&format!("damaged or truncated CRAM data in {region}"));
        };
        // SAFETY: `fp` is an open CRAM file; cram_get_ref only loads a sequence.
        let found = unsafe {
            let fd = (*r.fp.as_ptr()).fp as *mut ffi::cram_fd;
            !ffi::cram_get_ref(fd, tid, beg + 1, end.min(i64::from(i32::MAX)).max(beg + 1)).is_null()
        };
        let what = if found {
            format!(
                "cannot decode CRAM records of contig {contig}: its reference sequence does not match the one the file was made \
                 with (MD5 mismatch), or the data is damaged"
            )
        } else {
            format!("reference sequence of contig {contig} not found (give the FASTA with --reference, or set REF_PATH/REF_CACHE)")
        };
        r.damaged(&what)
    }

    fn drop_iter(&mut self) {
        if let Some(iter) = self.iter.take() {
            // SAFETY: made by sam_itr_queryi, destroyed once.
            unsafe { ffi::hts_itr_destroy(iter.as_ptr()) };
        }
    }
}

impl Drop for CramQuery {
    fn drop(&mut self) {
        self.drop_iter();
        // SAFETY: loaded by sam_index_load3 for `reader`, which is still open.
        unsafe { ffi::hts_idx_destroy(self.index.as_ptr()) };
    }
}

/// A `.crai` made in memory for a CRAM file without one (fasthts' own
/// builder, [`super::write_crai`]: container headers, and multi-reference
/// slices decoded), so that a job that reads regions (snp-pileup, Python's
/// `BamFile`) reads an unindexed CRAM as an indexed one, leaving nothing
/// on disk. It lives in an anonymous memory file, which htslib opens by
/// its `/proc/self/fd` name as it opens a `.crai`.
pub struct MemoryIndex {
    _file: OwnedFd,
    path: PathBuf,
}

impl MemoryIndex {
    /// Indexes the CRAM file at `path` (errors name `shown`, the user's
    /// name for it).
    pub fn build(path: &Path, shown: &Path) -> Result<MemoryIndex, Error> {
        // SAFETY: the name is NUL-terminated; the flags are valid.
        let fd = unsafe { libc::memfd_create(c"fasthts-crai".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::from(std::io::Error::last_os_error()).with_path(shown));
        }
        // SAFETY: memfd_create just made it; nobody else owns it.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let index = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        super::write_crai(shown, super::CramSource::File(path.to_path_buf()), &index)?;
        Ok(MemoryIndex { _file: file, path: index })
    }

    /// An index whose bytes are `bytes` (a remote file's `.crai`,
    /// fetched; errors name `shown`).
    pub fn from_bytes(bytes: &[u8], shown: &Path) -> Result<MemoryIndex, Error> {
        use std::io::Write;
        // SAFETY: the name is NUL-terminated; the flags are valid.
        let fd = unsafe { libc::memfd_create(c"fasthts-crai".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::from(std::io::Error::last_os_error()).with_path(shown));
        }
        // SAFETY: memfd_create just made it; nobody else owns it.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let mut writer = std::fs::File::from(file);
        writer.write_all(bytes).map_err(|e| Error::from(e).with_path(shown))?;
        Ok(MemoryIndex { _file: OwnedFd::from(writer), path })
    }

    /// The name htslib opens the index by (valid in this process only).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Handles on one indexed CRAM file for parts of a job run on several
/// threads: each part takes a free handle (or opens one) and gives it
/// back when done.
pub struct QueryPool {
    path: PathBuf,
    shown: PathBuf,
    options: CramOptions,
    index: Option<PathBuf>,
    /// The index made in memory, when the file has none, or a remote
    /// file's, fetched (`index` names it).
    _memory_index: Option<Arc<MemoryIndex>>,
    /// A remote file: what `path` names, and its version.
    remote: Option<(Arc<super::remote::Registered>, (u8, u8))>,
    header: Header,
    free: Mutex<Vec<CramQuery>>,
}

impl QueryPool {
    /// A pool over the CRAM file at `path` whose index is known to load
    /// (`first`: a handle already open on it); errors name `shown`.
    pub fn new(first: CramQuery, path: &Path, options: &CramOptions, index: Option<&Path>) -> QueryPool {
        QueryPool {
            shown: first.path().to_path_buf(),
            path: path.to_path_buf(),
            options: options.clone(),
            index: index.map(Path::to_path_buf),
            _memory_index: None,
            remote: None,
            header: first.header().clone(),
            free: Mutex::new(vec![first]),
        }
    }

    /// A pool over the CRAM file at `path` (errors name `shown`): with its
    /// index as htslib finds it, or else one made now in memory
    /// ([`MemoryIndex`]). The flag says whether the index was made.
    pub fn open_or_index(path: &Path, shown: &Path, options: &CramOptions) -> Result<(QueryPool, bool), Error> {
        if let Some(q) = CramQuery::open(path, options, None)? {
            return Ok((QueryPool::new(q.named(shown), path, options, None), false));
        }
        let built = MemoryIndex::build(path, shown)?;
        let q = CramQuery::open(path, options, Some(built.path()))?
            .ok_or_else(|| Error::Message("the CRAM index made in memory has gone".into()).with_path(shown))?;
        let mut pool = QueryPool::new(q.named(shown), path, options, Some(built.path()));
        pool._memory_index = Some(Arc::new(built));
        Ok((pool, true))
    }

    /// A pool over the remote CRAM file `object` (its first bytes `head`;
    /// errors name `shown`) with the `.crai` `index` (its bytes, fetched;
    /// named `index_shown`): htslib reads the ranges it seeks to through
    /// fasthts' requests ([`super::remote`]), the index from memory.
    pub fn open_remote(
        object: Arc<fasthts_io::remote::RemoteObject>,
        head: &[u8],
        shown: &Path,
        options: &CramOptions,
        index: &[u8],
        index_shown: &Path,
    ) -> Result<QueryPool, Error> {
        let memory = MemoryIndex::from_bytes(index, index_shown)?;
        let registered = super::remote::Registered::new(object);
        let opened = CramQuery::open(registered.name(), options, Some(memory.path())).map_err(|e| match e {
            Error::WithPath { path, source } if path == memory.path() => source.with_path(index_shown),
            Error::WithPath { path, source } if path == registered.name() => source.with_path(shown),
            e => e,
        })?;
        let q = opened.ok_or_else(|| Error::Message("the CRAM index fetched has gone".into()).with_path(index_shown))?;
        let mut pool = QueryPool::new(q.named(shown), registered.name(), options, Some(memory.path()));
        pool.shown = shown.to_path_buf();
        pool._memory_index = Some(Arc::new(memory));
        let version = if head.len() >= 6 && &head[..4] == b"CRAM" { (head[4], head[5]) } else { (0, 0) };
        pool.remote = Some((Arc::new(registered), version));
        Ok(pool)
    }

    /// Whether the file is a remote object, read by the ranges htslib asks for.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// A pool over the same file and index (one made in memory
    /// included), its handles decoding `fields`.
    pub fn with_fields(&self, fields: super::Fields) -> QueryPool {
        QueryPool {
            path: self.path.clone(),
            shown: self.shown.clone(),
            options: CramOptions { fields, ..self.options.clone() },
            index: self.index.clone(),
            _memory_index: self._memory_index.clone(),
            remote: self.remote.clone(),
            header: self.header.clone(),
            free: Mutex::new(Vec::new()),
        }
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's CRAM version `(major, minor)` (`(0, 0)` if it can no
    /// longer be read).
    pub fn version(&self) -> (u8, u8) {
        if let Some((_, version)) = self.remote {
            return version;
        }
        super::version(&self.path).unwrap_or((0, 0))
    }

    /// The name errors give the file.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// A handle for one part of the job, back in the pool when dropped.
    pub fn take(&self) -> Result<Pooled<'_>, Error> {
        Ok(Pooled { pool: self, query: Some(self.take_owned()?) })
    }

    /// A handle of the pool's, or a new one: the caller gives it back
    /// ([`QueryPool::give_back`]) when done.
    pub fn take_owned(&self) -> Result<CramQuery, Error> {
        let free = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match free {
            Some(q) => Ok(q),
            None => {
                let opened = CramQuery::open(&self.path, &self.options, self.index.as_deref()).map_err(|e| match e {
                    // A remote file's registered name is not the user's.
                    Error::WithPath { path, source } if path == self.path => source.with_path(&self.shown),
                    e => e,
                })?;
                let mut q = opened.ok_or_else(|| Error::Message("the CRAM index has gone".into()).with_path(&self.path))?;
                q.reader.path.clone_from(&self.shown);
                Ok(q)
            }
        }
    }

    /// Gives a handle back to the pool, for the next part.
    pub fn give_back(&self, mut query: CramQuery) {
        query.drop_iter();
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(query);
    }

    /// Runs `f` with a handle of the pool.
    pub fn with<T>(&self, f: impl FnOnce(&mut CramQuery) -> Result<T, Error>) -> Result<T, Error> {
        let mut q = self.take()?;
        f(&mut *q)
    }
}

/// A handle taken from a [`QueryPool`].
pub struct Pooled<'a> {
    pool: &'a QueryPool,
    query: Option<CramQuery>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = CramQuery;
    fn deref(&self) -> &CramQuery {
        self.query.as_ref().expect("taken until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut CramQuery {
        self.query.as_mut().expect("taken until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(q) = self.query.take() {
            self.pool.give_back(q);
        }
    }
}
