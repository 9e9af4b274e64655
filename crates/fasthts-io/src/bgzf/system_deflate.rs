//! BGZF compressed by the system's libdeflate, the shared library samtools
//! links, so that small files written as htslib writes them (CSI indexes)
//! have samtools' bytes, not only its content.
//!
//! Every libdeflate version inflates every other's output, but the bytes a
//! compressor produces differ between versions (Debian's 1.14, which its
//! samtools 1.16 links, against the 1.2x bundled by the libdeflater crate:
//! a 71-byte CSI where samtools writes 76). Both define the same symbols,
//! so the system library cannot be linked beside the bundled one; it is
//! loaded with `dlopen` (its own namespace) for these few writes only. The
//! bulk paths (inflate, BAM output) keep the bundled, faster version. Without
//! a system libdeflate the bundled one is used: same content, other bytes.

use super::block::{EOF_MARKER, FOOTER_LEN, HEADER_LEN, MAX_BLOCK_SIZE};
use super::writer::{compress_all, BLOCK_DATA_SIZE};
use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

/// The sonames tried, newest ABI first (libdeflate has kept soname 0).
const SONAMES: [&CStr; 1] = [c"libdeflate.so.0"];

type AllocCompressor = unsafe extern "C" fn(c_int) -> *mut c_void;
type DeflateCompress = unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void, usize) -> usize;
type FreeCompressor = unsafe extern "C" fn(*mut c_void);

/// The three entry points of the loaded library (stable since libdeflate 1.0).
struct SystemLibdeflate {
    alloc: AllocCompressor,
    compress: DeflateCompress,
    free: FreeCompressor,
}

fn system_libdeflate() -> Option<&'static SystemLibdeflate> {
    static LOADED: OnceLock<Option<SystemLibdeflate>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            // SAFETY: dlopen/dlsym with NUL-terminated names; the handle is
            // never closed, so the symbols stay valid for the process.
            unsafe {
                let handle = SONAMES.iter().map(|n| libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL)).find(|h| !h.is_null())?;
                let sym = |name: &CStr| {
                    let p = libc::dlsym(handle, name.as_ptr());
                    (!p.is_null()).then_some(p)
                };
                Some(SystemLibdeflate {
                    alloc: std::mem::transmute::<*mut c_void, AllocCompressor>(sym(c"libdeflate_alloc_compressor")?),
                    compress: std::mem::transmute::<*mut c_void, DeflateCompress>(sym(c"libdeflate_deflate_compress")?),
                    free: std::mem::transmute::<*mut c_void, FreeCompressor>(sym(c"libdeflate_free_compressor")?),
                })
            }
        })
        .as_ref()
}

/// Whether a system libdeflate was found (tests that expect samtools'
/// exact bytes need it, as samtools does).
pub fn have_system_libdeflate() -> bool {
    system_libdeflate().is_some()
}

/// `data` as htslib's `bgzf_write` + `bgzf_close` write it at libdeflate
/// `level`: blocks of [`BLOCK_DATA_SIZE`] bytes and the EOF marker, each
/// compressed by the system's libdeflate when there is one (see the
/// module's note), else by the bundled one.
pub fn compress_all_as_htslib(data: &[u8], level: i32) -> Vec<u8> {
    system_libdeflate().and_then(|lib| compress_with(lib, data, level)).unwrap_or_else(|| compress_all(data, level))
}

/// `None` when the library cannot allocate a compressor or a block does not
/// compress into a block (then the bundled writer, which stores such
/// blocks, is used for all of them).
fn compress_with(lib: &SystemLibdeflate, data: &[u8], level: i32) -> Option<Vec<u8>> {
    // SAFETY: the compressor is used by this thread only and freed below;
    // input and output pointers come from live slices with their lengths.
    let compressor = unsafe { (lib.alloc)(level.clamp(1, 12)) };
    if compressor.is_null() {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    let mut block = vec![0u8; MAX_BLOCK_SIZE];
    let mut ok = true;
    for chunk in data.chunks(BLOCK_DATA_SIZE) {
        let room = MAX_BLOCK_SIZE - HEADER_LEN - FOOTER_LEN;
        let dst = &mut block[HEADER_LEN..HEADER_LEN + room];
        let n = unsafe { (lib.compress)(compressor, chunk.as_ptr().cast(), chunk.len(), dst.as_mut_ptr().cast(), dst.len()) };
        if n == 0 {
            ok = false;
            break;
        }
        let total = HEADER_LEN + n + FOOTER_LEN;
        block[..HEADER_LEN].copy_from_slice(&[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0, 0]);
        block[16..18].copy_from_slice(&((total - 1) as u16).to_le_bytes());
        block[total - 8..total - 4].copy_from_slice(&libdeflater::crc32(chunk).to_le_bytes());
        block[total - 4..total].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
        out.extend_from_slice(&block[..total]);
    }
    unsafe { (lib.free)(compressor) };
    ok.then(|| {
        out.extend_from_slice(&EOF_MARKER);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_library_gives_valid_bgzf_with_the_same_content() {
        let mut data = Vec::new();
        for i in 0u32..40_000 {
            data.extend_from_slice(&(i % 977).to_le_bytes());
        }
        for input in [&b""[..], b"CSI\x01", &data] {
            let bytes = compress_all_as_htslib(input, 7);
            assert_eq!(super::super::decompress_all(&bytes).unwrap(), input);
            assert!(bytes.ends_with(&EOF_MARKER));
        }
    }
}

#[cfg(test)]
mod timing {
    /// Time of both compressors on the content of the CSI named by
    /// `FASTHTS_CSI_BENCH` (ignored by default): `FASTHTS_CSI_BENCH=x.csi
    /// cargo test --release -p fasthts-io system_deflate::timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn system_against_bundled() {
        let Ok(path) = std::env::var("FASTHTS_CSI_BENCH") else { return };
        let raw = super::super::decompress_all(&std::fs::read(path).unwrap()).unwrap();
        let t = std::time::Instant::now();
        let first = super::compress_all_as_htslib(&raw, 7).len();
        let first_call = t.elapsed();
        for (name, f) in [("system", super::compress_all_as_htslib as fn(&[u8], i32) -> Vec<u8>), ("bundled", super::compress_all)] {
            let t = std::time::Instant::now();
            let mut n = 0;
            for _ in 0..20 {
                n = f(&raw, 7).len();
            }
            eprintln!("{name}: {} raw bytes -> {n} in {:.3} ms per call", raw.len(), t.elapsed().as_secs_f64() * 1e3 / 20.0);
        }
        eprintln!("first call (dlopen included): {:.3} ms, {first} bytes", first_call.as_secs_f64() * 1e3);
    }
}
