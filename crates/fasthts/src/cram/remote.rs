//! A remote CRAM file read by htslib through fasthts' own requests: the
//! object is registered under a name of a scheme of ours
//! (`fasthts-obj:N`), which htslib opens through the scheme handler
//! registered here (its plug-in interface), so that every byte htslib
//! reads is a range [`RemoteObject::read_range`] fetches (retried, checked
//! to be of one version, with the credentials and endpoints of
//! `fasthts_io::remote`), only where htslib seeks: a region query reads
//! the containers the `.crai` points at, not the file. htslib's own
//! libcurl is not used, so a URL is read alike by every format.

use super::ffi;
use fasthts_io::remote::RemoteObject;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The scheme htslib sees (under its 12-byte limit for a scheme name).
const SCHEME: &str = "fasthts-obj";

/// The bytes htslib's buffer holds: the most one request fetches for a
/// small read (larger reads go to the backend whole).
const BUFFER_BYTES: usize = 64 << 10;

/// The objects registered, by number.
fn registry() -> &'static Mutex<HashMap<u64, Arc<RemoteObject>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u64, Arc<RemoteObject>>>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

/// A remote object htslib can open by [`Registered::name`] while this
/// lives (a handle opened stays readable after it is dropped).
pub struct Registered {
    id: u64,
    name: PathBuf,
}

impl Registered {
    /// Registers `object`.
    pub fn new(object: Arc<RemoteObject>) -> Registered {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        register_scheme();
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        registry().lock().unwrap_or_else(|p| p.into_inner()).insert(id, object);
        Registered { id, name: PathBuf::from(format!("{SCHEME}:{id}")) }
    }

    /// The name htslib opens it by (in this process only).
    pub fn name(&self) -> &Path {
        &self.name
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        registry().lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}

/// Whether `path` names a registered object ([`Registered::name`]).
pub fn is_registered_name(path: &Path) -> bool {
    path.to_str().is_some_and(|p| p.strip_prefix(SCHEME).is_some_and(|rest| rest.starts_with(':')))
}

thread_local! {
    /// The last failed request of this thread's htslib reads: what a
    /// "damaged data" from htslib was really (a 404, a timeout).
    static LAST_ERROR: RefCell<Option<io::Error>> = const { RefCell::new(None) };
}

/// The error of the last range this thread failed to fetch for htslib,
/// taken (so it is told once).
pub fn take_last_error() -> Option<io::Error> {
    LAST_ERROR.with(|e| e.borrow_mut().take())
}

/// What `hfile_init` allocates: htslib's fields, then ours.
#[repr(C)]
struct RemoteHFile {
    base: ffi::hFILE_base,
    /// From `Arc::into_raw`; released by `close`.
    object: *const RemoteObject,
    at: u64,
}

static BACKEND: ffi::hFILE_backend = ffi::hFILE_backend { read, write, seek, flush, close };

/// Registers the scheme with htslib, once, before any file is opened
/// through it. htslib's table of schemes is made on its first look-up
/// (`hisremote` makes one), and is not locked when later read, so the
/// scheme is added while no other thread can be opening a file: from
/// [`super::quiet_htslib`]'s once, which runs before any htslib call.
fn register_scheme() {
    super::quiet_htslib();
}

/// [`register_scheme`]'s work, run once by [`super::quiet_htslib`].
pub(super) fn add_scheme_handler() {
    struct Handler(ffi::hFILE_scheme_handler);
    // SAFETY: the handler holds function pointers and a pointer to a
    // static string, read-only: shared by threads without harm.
    unsafe impl Sync for Handler {}
    static HANDLER: Handler = Handler(ffi::hFILE_scheme_handler { open, isremote, provider: c"fasthts".as_ptr(), priority: 50 });
    // SAFETY: both strings are NUL-terminated statics; the handler is a
    // static htslib keeps a pointer to. `hisremote` of a name of an unknown
    // scheme only makes htslib's table of schemes.
    unsafe {
        ffi::hisremote(c"fasthts:x".as_ptr());
        ffi::hfile_add_scheme_handler(c"fasthts-obj".as_ptr(), &HANDLER.0);
    }
}

/// htslib's `open` for `fasthts-obj:N`: a handle on object N.
unsafe extern "C" fn open(filename: *const c_char, mode: *const c_char) -> *mut ffi::hFILE {
    // SAFETY: htslib passes its NUL-terminated file name.
    let name = unsafe { CStr::from_ptr(filename) }.to_str().unwrap_or("");
    let id = name.strip_prefix(SCHEME).and_then(|r| r.strip_prefix(':')).and_then(|n| n.parse::<u64>().ok());
    let object = id.and_then(|id| registry().lock().unwrap_or_else(|p| p.into_inner()).get(&id).cloned());
    let Some(object) = object else {
        set_errno(libc::ENOENT);
        return std::ptr::null_mut();
    };
    // SAFETY: `mode` is htslib's NUL-terminated mode; the size is our
    // struct's, which starts with htslib's.
    let fp = unsafe { ffi::hfile_init(std::mem::size_of::<RemoteHFile>(), mode, BUFFER_BYTES) };
    if fp.is_null() {
        return fp;
    }
    let ours = fp.cast::<RemoteHFile>();
    // SAFETY: `hfile_init` allocated a RemoteHFile-sized block and set
    // its leading hFILE; our fields are written before htslib reads them.
    unsafe {
        (*ours).base.backend = &BACKEND;
        std::ptr::addr_of_mut!((*ours).object).write(Arc::into_raw(object));
        std::ptr::addr_of_mut!((*ours).at).write(0);
    }
    fp
}

unsafe extern "C" fn isremote(_filename: *const c_char) -> c_int {
    // Said local: htslib then never downloads an index of it to the
    // working directory (the index is always given, fetched by fasthts).
    0
}

fn set_errno(value: c_int) {
    // SAFETY: errno is this thread's.
    unsafe { *libc::__errno_location() = value };
}

/// SAFETY (all below): htslib calls them with a handle `open` made.
unsafe extern "C" fn read(fp: *mut ffi::hFILE, buffer: *mut c_void, nbytes: usize) -> isize {
    // SAFETY: see above; the object lives until `close`.
    let ours = unsafe { &mut *fp.cast::<RemoteHFile>() };
    let object = unsafe { &*ours.object };
    let n = object.len().saturating_sub(ours.at).min(nbytes as u64) as usize;
    if n == 0 {
        return 0;
    }
    // SAFETY: htslib's buffer has room for `nbytes` ≥ `n`.
    let out = unsafe { std::slice::from_raw_parts_mut(buffer.cast::<u8>(), n) };
    match object.read_range(ours.at, out) {
        Ok(()) => {
            ours.at += n as u64;
            n as isize
        }
        Err(e) => {
            LAST_ERROR.with(|last| *last.borrow_mut() = Some(e));
            set_errno(libc::EIO);
            -1
        }
    }
}

unsafe extern "C" fn write(_fp: *mut ffi::hFILE, _buffer: *const c_void, _nbytes: usize) -> isize {
    set_errno(libc::EBADF);
    -1
}

unsafe extern "C" fn seek(fp: *mut ffi::hFILE, offset: libc::off_t, whence: c_int) -> libc::off_t {
    // SAFETY: see above.
    let ours = unsafe { &mut *fp.cast::<RemoteHFile>() };
    let len = unsafe { &*ours.object }.len() as i64;
    let base = match whence {
        libc::SEEK_SET => 0,
        libc::SEEK_CUR => ours.at as i64,
        libc::SEEK_END => len,
        _ => -1,
    };
    match base.checked_add(offset) {
        Some(at) if base >= 0 && at >= 0 => {
            ours.at = at as u64;
            at
        }
        _ => {
            set_errno(libc::EINVAL);
            -1
        }
    }
}

unsafe extern "C" fn flush(_fp: *mut ffi::hFILE) -> c_int {
    0
}

unsafe extern "C" fn close(fp: *mut ffi::hFILE) -> c_int {
    // SAFETY: see above; htslib frees the block after this returns, and
    // calls nothing of ours on it again.
    let ours = unsafe { &mut *fp.cast::<RemoteHFile>() };
    // SAFETY: made by `Arc::into_raw` in `open`, released once, here.
    drop(unsafe { Arc::from_raw(ours.object) });
    ours.object = std::ptr::null();
    0
}
