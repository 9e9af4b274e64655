//! The RocksDB sort engine (`--engine rocksdb`, cargo feature `rocksdb`):
//! samtools rocksort's idea, records stored in an embedded key-value store
//! keyed by their sort key, flushed and compacted by RocksDB's background
//! threads, then read back in key order.
//!
//! Linked against the system's librocksdb (Debian: librocksdb-dev) through
//! the handful of its C API functions declared here. Not the `rocksdb`
//! crate (tried 2026-11-26 with `ROCKSDB_LIB_DIR` on Debian's 7.8.3): 0.20.1
//! links but its comparator is a plain `fn` (ours carries the order and the
//! `@RG` libraries); 0.21.0 links but binds RocksDB 8.1.1's headers to the
//! 7.8.3 library; 0.22.0 fails to link (`rocksdb_write_buffer_manager_destroy`);
//! each runs bindgen at build time, which needs libclang-dev (654 MB).
//!
//! A key is the record's 128-bit sort key (big-endian), its input
//! position (big-endian, so ties keep input order) and the record itself
//! (`block_size` included), which the orders that compare more than the
//! key (names, tag values) read through a comparator callback. Coordinate
//! and minimiser orders need no callback: RocksDB's own bytewise order of
//! the first 24 bytes is theirs. Values are empty.

use super::{prepare_for_minimiser, write_output, Comparator, Push, SortOptions, SortOrder, SortStats};
use crate::bam::{Header, RecordRef};
use crate::Error;
use std::cmp::Ordering;
use std::ffi::{c_char, c_int, c_uchar, c_void, CStr, CString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

#[allow(non_camel_case_types)]
mod ffi {
    use super::*;

    macro_rules! opaque {
        ($($name:ident),*) => {$(
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*};
    }
    opaque!(rocksdb_t, rocksdb_options_t, rocksdb_comparator_t, rocksdb_writeoptions_t, rocksdb_writebatch_t, rocksdb_readoptions_t, rocksdb_iterator_t);

    pub type CompareFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> c_int;

    #[link(name = "rocksdb")]
    extern "C" {
        pub fn rocksdb_options_create() -> *mut rocksdb_options_t;
        pub fn rocksdb_options_destroy(o: *mut rocksdb_options_t);
        pub fn rocksdb_options_set_create_if_missing(o: *mut rocksdb_options_t, v: c_uchar);
        pub fn rocksdb_options_set_comparator(o: *mut rocksdb_options_t, c: *mut rocksdb_comparator_t);
        pub fn rocksdb_options_increase_parallelism(o: *mut rocksdb_options_t, threads: c_int);
        pub fn rocksdb_options_set_write_buffer_size(o: *mut rocksdb_options_t, v: usize);
        pub fn rocksdb_options_set_max_write_buffer_number(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_compression(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_max_open_files(o: *mut rocksdb_options_t, v: c_int);
        pub fn rocksdb_options_set_memtable_vector_rep(o: *mut rocksdb_options_t);
        pub fn rocksdb_options_set_allow_concurrent_memtable_write(o: *mut rocksdb_options_t, v: c_uchar);
        pub fn rocksdb_comparator_create(
            state: *mut c_void,
            destructor: unsafe extern "C" fn(*mut c_void),
            compare: CompareFn,
            name: unsafe extern "C" fn(*mut c_void) -> *const c_char,
        ) -> *mut rocksdb_comparator_t;
        pub fn rocksdb_comparator_destroy(c: *mut rocksdb_comparator_t);
        pub fn rocksdb_open(o: *const rocksdb_options_t, name: *const c_char, err: *mut *mut c_char) -> *mut rocksdb_t;
        pub fn rocksdb_close(db: *mut rocksdb_t);
        pub fn rocksdb_writeoptions_create() -> *mut rocksdb_writeoptions_t;
        pub fn rocksdb_writeoptions_destroy(o: *mut rocksdb_writeoptions_t);
        pub fn rocksdb_writeoptions_disable_WAL(o: *mut rocksdb_writeoptions_t, disable: c_int);
        pub fn rocksdb_writebatch_create() -> *mut rocksdb_writebatch_t;
        pub fn rocksdb_writebatch_destroy(b: *mut rocksdb_writebatch_t);
        pub fn rocksdb_writebatch_clear(b: *mut rocksdb_writebatch_t);
        pub fn rocksdb_writebatch_put(b: *mut rocksdb_writebatch_t, k: *const c_char, klen: usize, v: *const c_char, vlen: usize);
        pub fn rocksdb_write(db: *mut rocksdb_t, o: *const rocksdb_writeoptions_t, b: *mut rocksdb_writebatch_t, err: *mut *mut c_char);
        pub fn rocksdb_readoptions_create() -> *mut rocksdb_readoptions_t;
        pub fn rocksdb_readoptions_destroy(o: *mut rocksdb_readoptions_t);
        pub fn rocksdb_readoptions_set_fill_cache(o: *mut rocksdb_readoptions_t, v: c_uchar);
        pub fn rocksdb_readoptions_set_readahead_size(o: *mut rocksdb_readoptions_t, v: usize);
        pub fn rocksdb_create_iterator(db: *mut rocksdb_t, o: *const rocksdb_readoptions_t) -> *mut rocksdb_iterator_t;
        pub fn rocksdb_iter_destroy(i: *mut rocksdb_iterator_t);
        pub fn rocksdb_iter_seek_to_first(i: *mut rocksdb_iterator_t);
        pub fn rocksdb_iter_valid(i: *const rocksdb_iterator_t) -> c_uchar;
        pub fn rocksdb_iter_next(i: *mut rocksdb_iterator_t);
        pub fn rocksdb_iter_key(i: *const rocksdb_iterator_t, klen: *mut usize) -> *const c_char;
        pub fn rocksdb_iter_get_error(i: *const rocksdb_iterator_t, err: *mut *mut c_char);
        pub fn rocksdb_free(p: *mut c_void);
    }
}

/// Bytes before the record in a key: the sort key and the input position.
const PREFIX: usize = 16 + 8;

/// Records gathered into one write batch before it is handed to RocksDB.
const BATCH_BYTES: usize = 1 << 20;

/// The order of two keys: the sort key, then what the order compares
/// beyond it (as the native merge does), then input position.
fn key_order(cmp: &Comparator, a: &[u8], b: &[u8]) -> Ordering {
    a[..16].cmp(&b[..16])
        .then_with(|| cmp.compare(&RecordRef::new_prevalidated(&a[PREFIX + 4..]), &RecordRef::new_prevalidated(&b[PREFIX + 4..])))
        .then_with(|| a[16..PREFIX].cmp(&b[16..PREFIX]))
}

/// RocksDB's comparator callback; `state` is the sort's [`Comparator`].
unsafe extern "C" fn compare(state: *mut c_void, a: *const c_char, alen: usize, b: *const c_char, blen: usize) -> c_int {
    // SAFETY: RocksDB passes the state given at creation (a Comparator that
    // outlives the database) and two keys this module wrote.
    let (cmp, a, b) = unsafe {
        (&*(state as *const Comparator), std::slice::from_raw_parts(a.cast::<u8>(), alen), std::slice::from_raw_parts(b.cast::<u8>(), blen))
    };
    // Unwinding into C++ is undefined; a panic here is a bug, end at once.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| key_order(cmp, a, b))) {
        Ok(o) => o as c_int,
        Err(_) => std::process::abort(),
    }
}

unsafe extern "C" fn comparator_name(_: *mut c_void) -> *const c_char {
    c"fasthts.sort.v1".as_ptr()
}

unsafe extern "C" fn no_destructor(_: *mut c_void) {}

/// Takes the error RocksDB reported through `err`, if any.
fn take_error(err: *mut c_char, what: &str) -> Result<(), Error> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: RocksDB set `err` to a malloc()ed C string, ours to free.
    let message = unsafe {
        let m = CStr::from_ptr(err).to_string_lossy().into_owned();
        ffi::rocksdb_free(err.cast());
        m
    };
    Err(Error::Message(format!("rocksdb {what}: {message}")))
}

/// An open database in a temporary directory, removed on drop.
struct Db {
    db: *mut ffi::rocksdb_t,
    options: *mut ffi::rocksdb_options_t,
    /// Null when RocksDB's bytewise comparator orders the keys.
    comparator: *mut ffi::rocksdb_comparator_t,
    write_options: *mut ffi::rocksdb_writeoptions_t,
    batch: *mut ffi::rocksdb_writebatch_t,
    batch_bytes: usize,
    dir: PathBuf,
}

// SAFETY: RocksDB's handles may be used from any thread; each Db is used by
// one thread at a time.
unsafe impl Send for Db {}

impl Db {
    /// Opens a new database in `dir` (registered as a temporary) whose keys
    /// `cmp` orders; `cmp` must outlive it.
    fn create(dir: PathBuf, cmp: &Comparator, memory: usize, threads: usize, max_open_files: usize) -> Result<Db, Error> {
        crate::output::create_temporary_dir(&dir).map_err(|e| Error::from(e).with_path(&dir))?;
        let name = CString::new(dir.as_os_str().as_bytes()).map_err(|_| Error::Message(format!("{}: NUL in path", dir.display())))?;
        // SAFETY: plain C API calls on handles created here; the comparator
        // state is `cmp`, which the caller keeps alive past `Db`'s drop.
        unsafe {
            let options = ffi::rocksdb_options_create();
            let comparator = if matches!(cmp.order(), SortOrder::Coordinate | SortOrder::Minimiser { .. }) {
                std::ptr::null_mut()
            } else {
                let c = ffi::rocksdb_comparator_create((cmp as *const Comparator).cast_mut().cast(), no_destructor, compare, comparator_name);
                ffi::rocksdb_options_set_comparator(options, c);
                c
            };
            ffi::rocksdb_options_set_create_if_missing(options, 1);
            ffi::rocksdb_options_increase_parallelism(options, threads.max(2) as c_int);
            // Memtables as vectors sorted when flushed, not skip lists kept
            // sorted on every insert: the insert was 60 % of a sort's time
            // (a cache miss per level of the list per record).
            ffi::rocksdb_options_set_memtable_vector_rep(options);
            // (One thread writes; the vector takes no concurrent writers.)
            ffi::rocksdb_options_set_allow_concurrent_memtable_write(options, 0);
            // Memtables of at most 64 MiB share the budget, so that
            // several flush (each sorting its vector) on background threads
            // while the next fills, rather than one huge memtable sorted
            // on one thread at the end.
            let buffer = (memory / 2).clamp(1 << 20, 64 << 20);
            ffi::rocksdb_options_set_write_buffer_size(options, buffer);
            ffi::rocksdb_options_set_max_write_buffer_number(options, (memory / buffer).clamp(2, 16) as c_int);
            // Like run files: written once, read once, through the page cache.
            ffi::rocksdb_options_set_compression(options, 0);
            ffi::rocksdb_options_set_max_open_files(options, max_open_files.min(c_int::MAX as usize) as c_int);
            let write_options = ffi::rocksdb_writeoptions_create();
            // The database is thrown away after the sort: no log to replay.
            ffi::rocksdb_writeoptions_disable_WAL(write_options, 1);
            let mut db = Db { db: std::ptr::null_mut(), options, comparator, write_options, batch: ffi::rocksdb_writebatch_create(), batch_bytes: 0, dir };
            let mut err = std::ptr::null_mut();
            db.db = ffi::rocksdb_open(options, name.as_ptr(), &mut err);
            take_error(err, "open")?;
            Ok(db)
        }
    }

    /// Adds a key (written with the next full batch).
    fn put(&mut self, key: &[u8]) -> Result<(), Error> {
        // SAFETY: the batch copies the key.
        unsafe { ffi::rocksdb_writebatch_put(self.batch, key.as_ptr().cast(), key.len(), std::ptr::null(), 0) };
        self.batch_bytes += key.len();
        if self.batch_bytes >= BATCH_BYTES {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<(), Error> {
        let mut err = std::ptr::null_mut();
        // SAFETY: live handles; the batch is cleared after the write.
        unsafe {
            ffi::rocksdb_write(self.db, self.write_options, self.batch, &mut err);
            ffi::rocksdb_writebatch_clear(self.batch);
        }
        self.batch_bytes = 0;
        take_error(err, "write")
    }

    /// Calls `each` on every key in order.
    fn for_each_key(&mut self, each: &mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> {
        self.write_batch()?;
        // SAFETY: the iterator lives within this call; a key's bytes are
        // valid until the next step, and `each` copies what it keeps.
        unsafe {
            let read_options = ffi::rocksdb_readoptions_create();
            ffi::rocksdb_readoptions_set_fill_cache(read_options, 0);
            ffi::rocksdb_readoptions_set_readahead_size(read_options, 2 << 20);
            let iter = ffi::rocksdb_create_iterator(self.db, read_options);
            ffi::rocksdb_iter_seek_to_first(iter);
            let mut result = Ok(());
            while ffi::rocksdb_iter_valid(iter) != 0 {
                let mut len = 0usize;
                let key = ffi::rocksdb_iter_key(iter, &mut len);
                result = each(std::slice::from_raw_parts(key.cast::<u8>(), len));
                if result.is_err() {
                    break;
                }
                ffi::rocksdb_iter_next(iter);
            }
            if result.is_ok() {
                let mut err = std::ptr::null_mut();
                ffi::rocksdb_iter_get_error(iter, &mut err);
                result = take_error(err, "read");
            }
            ffi::rocksdb_iter_destroy(iter);
            ffi::rocksdb_readoptions_destroy(read_options);
            result
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: each handle was created in `create` and is released once;
        // the database closes before its comparator and options go.
        unsafe {
            if !self.db.is_null() {
                ffi::rocksdb_close(self.db);
            }
            ffi::rocksdb_writebatch_destroy(self.batch);
            ffi::rocksdb_writeoptions_destroy(self.write_options);
            ffi::rocksdb_options_destroy(self.options);
            if !self.comparator.is_null() {
                ffi::rocksdb_comparator_destroy(self.comparator);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        crate::output::unregister_temporary(&self.dir);
    }
}

/// [`super::sort_records`] through RocksDB.
pub fn sort_records<W, F>(header: &Header, opts: &SortOptions, out: W, feed: F) -> Result<(SortStats, W), Error>
where
    W: Write,
    F: FnOnce(&mut Push<'_>) -> Result<(), Error> + Send,
{
    let cmp = Comparator::new(opts.order, &header.text);
    let mut stats = SortStats::default();
    let progress = opts.progress.as_deref();
    let dir = super::run::temporary_dir(&opts.temp_prefix, "rocksdb");
    let max_open_files = opts.max_fan_in.unwrap_or_else(super::max_fan_in);
    let mut db = Db::create(dir, &cmp, opts.memory, rayon::current_num_threads(), max_open_files)?;
    let mut key = Vec::new();
    feed(&mut |r: &RecordRef<'_>| {
        cmp.check(r).map_err(Error::Message)?;
        let bytes = r.as_bytes();
        key.clear();
        key.extend_from_slice(&[0; PREFIX]);
        key.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        key.extend_from_slice(bytes);
        if let SortOrder::Minimiser { kmer } = cmp.order() {
            prepare_for_minimiser(&mut key[PREFIX + 4..], kmer);
        }
        let sort_key = cmp.key(&RecordRef::new_prevalidated(&key[PREFIX + 4..]));
        key[..16].copy_from_slice(&sort_key.to_be_bytes());
        key[16..PREFIX].copy_from_slice(&stats.records.to_be_bytes());
        db.put(&key)?;
        stats.records += 1;
        if let Some(p) = progress {
            if stats.records % super::PROGRESS_EVERY == 0 {
                p.records_read.store(stats.records, Relaxed);
            }
        }
        Ok(())
    })?;
    if let Some(p) = progress {
        p.records_read.store(stats.records, Relaxed);
        p.input_done.store(true, Relaxed);
    }
    let (index, out) = write_output(header, opts, out, false, &mut |put| db.for_each_key(&mut |k| put(&k[PREFIX..])))?;
    stats.index = index;
    drop(db);
    Ok((stats, out))
}
