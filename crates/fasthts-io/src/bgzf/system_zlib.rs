//! BGZF blocks compressed as an htslib built without libdeflate compresses
//! them: the system's zlib, one `deflateInit2(level, -15, 8)` stream per
//! block, and level 0 as one stored block. pysam's wheels are built so
//! (`libdeflate=no`, linking the system's `libz.so.1`), so this is what
//! reproduces the bytes of a BAM pysam writes.
//!
//! zlib is loaded with `dlopen`, as the system libdeflate is
//! (`system_deflate`): the bytes depend on the zlib build, and pysam uses
//! the system's. Without it the bundled libdeflate is used: same content,
//! other bytes.

use super::block::{FOOTER_LEN, HEADER_LEN, MAX_BLOCK_SIZE};
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr};
use std::sync::OnceLock;

/// zlib's `z_stream` (zlib.h; the same layout in every zlib since 1.0).
#[repr(C)]
struct ZStream {
    next_in: *const u8,
    avail_in: c_uint,
    total_in: c_ulong,
    next_out: *mut u8,
    avail_out: c_uint,
    total_out: c_ulong,
    msg: *const c_char,
    state: *mut c_void,
    zalloc: *const c_void,
    zfree: *const c_void,
    opaque: *mut c_void,
    data_type: c_int,
    adler: c_ulong,
    reserved: c_ulong,
}

type DeflateInit2 = unsafe extern "C" fn(*mut ZStream, c_int, c_int, c_int, c_int, c_int, *const c_char, c_int) -> c_int;
type Deflate = unsafe extern "C" fn(*mut ZStream, c_int) -> c_int;
type DeflateEnd = unsafe extern "C" fn(*mut ZStream) -> c_int;
type ZlibVersion = unsafe extern "C" fn() -> *const c_char;

struct SystemZlib {
    init: DeflateInit2,
    deflate: Deflate,
    end: DeflateEnd,
    version: *const c_char,
}

// SAFETY: the function pointers and the static version string of a library
// never unloaded are valid on every thread.
unsafe impl Send for SystemZlib {}
unsafe impl Sync for SystemZlib {}

fn system_zlib() -> Option<&'static SystemZlib> {
    static LOADED: OnceLock<Option<SystemZlib>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            // SAFETY: dlopen/dlsym with NUL-terminated names; the handle is
            // never closed, so the symbols stay valid for the process; the
            // transmutes give each symbol its zlib.h signature.
            unsafe {
                let handle = libc::dlopen(c"libz.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
                if handle.is_null() {
                    return None;
                }
                let sym = |name: &CStr| {
                    let p = libc::dlsym(handle, name.as_ptr());
                    (!p.is_null()).then_some(p)
                };
                let version = std::mem::transmute::<*mut c_void, ZlibVersion>(sym(c"zlibVersion")?)();
                Some(SystemZlib {
                    init: std::mem::transmute::<*mut c_void, DeflateInit2>(sym(c"deflateInit2_")?),
                    deflate: std::mem::transmute::<*mut c_void, Deflate>(sym(c"deflate")?),
                    end: std::mem::transmute::<*mut c_void, DeflateEnd>(sym(c"deflateEnd")?),
                    version,
                })
            }
        })
        .as_ref()
}

/// Whether the system's zlib was found (tests expecting pysam's exact
/// bytes need it, as pysam does).
pub fn have_system_zlib() -> bool {
    system_zlib().is_some()
}

/// Compresses `data` (at most a block's worth) into one BGZF block in the
/// first bytes of `out` (at least [`MAX_BLOCK_SIZE`] long) as htslib's
/// zlib `bgzf_compress` does at zlib `level` (0–9); returns the block's
/// length, or `None` without a system zlib or when zlib fails (the caller
/// then compresses it with libdeflate).
pub(super) fn compress_block_as_htslib_zlib(data: &[u8], level: u32, out: &mut [u8]) -> Option<usize> {
    let room = MAX_BLOCK_SIZE - HEADER_LEN - FOOTER_LEN;
    let n = if level == 0 {
        // htslib writes level 0 itself: one final stored block.
        let len = data.len() as u16;
        out[HEADER_LEN] = 1;
        out[HEADER_LEN + 1..HEADER_LEN + 3].copy_from_slice(&len.to_le_bytes());
        out[HEADER_LEN + 3..HEADER_LEN + 5].copy_from_slice(&(!len).to_le_bytes());
        out[HEADER_LEN + 5..HEADER_LEN + 5 + data.len()].copy_from_slice(data);
        data.len() + 5
    } else {
        let lib = system_zlib()?;
        let dst = &mut out[HEADER_LEN..HEADER_LEN + room];
        // SAFETY: zeroed is zlib's documented initial state (Z_NULL
        // allocators: its own); the stream is used by this thread only,
        // points into live slices of the given lengths, and is ended below.
        unsafe {
            let mut zs: ZStream = std::mem::zeroed();
            let size = std::mem::size_of::<ZStream>() as c_int;
            if (lib.init)(&mut zs, level.min(9) as c_int, 8, -15, 8, 0, lib.version, size) != 0 {
                return None;
            }
            zs.next_in = data.as_ptr();
            zs.avail_in = data.len() as c_uint;
            zs.next_out = dst.as_mut_ptr();
            zs.avail_out = dst.len() as c_uint;
            const Z_FINISH: c_int = 4;
            const Z_STREAM_END: c_int = 1;
            let status = (lib.deflate)(&mut zs, Z_FINISH);
            let n = zs.total_out as usize;
            (lib.end)(&mut zs);
            if status != Z_STREAM_END {
                return None;
            }
            n
        }
    };
    let total = HEADER_LEN + n + FOOTER_LEN;
    out[..HEADER_LEN].copy_from_slice(&[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0, 0]);
    out[16..18].copy_from_slice(&((total - 1) as u16).to_le_bytes());
    out[total - 8..total - 4].copy_from_slice(&libdeflater::crc32(data).to_le_bytes());
    out[total - 4..total].copy_from_slice(&(data.len() as u32).to_le_bytes());
    Some(total)
}
