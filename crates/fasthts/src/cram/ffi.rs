//! The part of htslib's C API (Debian: libhts-dev, 1.16) that CRAM input
//! uses, declared by hand: the `bam1_t`/`htsFile` layouts below are
//! htslib's since 1.10.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

/// `hts_pos_t`.
pub type hts_pos_t = i64;

/// An opaque htslib type.
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(sam_hdr_t, cram_fd, hFILE, BGZF);

/// `kstring_t`.
#[repr(C)]
pub struct kstring_t {
    pub l: usize,
    pub m: usize,
    pub s: *mut c_char,
}

/// The leading fields of `htsFile`, up to the union holding the `cram_fd`.
#[repr(C)]
pub struct htsFile {
    pub bits: u32,
    pub lineno: i64,
    pub line: kstring_t,
    pub fn_: *mut c_char,
    pub fn_aux: *mut c_char,
    /// `fp.cram` when the file is CRAM.
    pub fp: *mut c_void,
}

/// `bam1_core_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct bam1_core_t {
    pub pos: hts_pos_t,
    pub tid: i32,
    pub bin: u16,
    pub qual: u8,
    pub l_extranul: u8,
    pub flag: u16,
    pub l_qname: u16,
    pub n_cigar: u32,
    pub l_qseq: i32,
    pub mtid: i32,
    pub mpos: hts_pos_t,
    pub isize: hts_pos_t,
}

/// `bam1_t`.
#[repr(C)]
pub struct bam1_t {
    pub core: bam1_core_t,
    pub id: u64,
    pub data: *mut u8,
    pub l_data: c_int,
    pub m_data: u32,
    pub mempolicy: u32,
}

/// `enum hts_fmt_option` values used here.
pub const CRAM_OPT_DECODE_MD: c_int = 0;
pub const CRAM_OPT_REFERENCE: c_int = 9;
pub const CRAM_OPT_REQUIRED_FIELDS: c_int = 18;

/// `SAM_*` field bits for `CRAM_OPT_REQUIRED_FIELDS`.
pub const SAM_QNAME: c_int = 0x1;
pub const SAM_FLAG: c_int = 0x2;
pub const SAM_RNAME: c_int = 0x4;
pub const SAM_POS: c_int = 0x8;
pub const SAM_MAPQ: c_int = 0x10;
pub const SAM_CIGAR: c_int = 0x20;
pub const SAM_RNEXT: c_int = 0x40;
pub const SAM_PNEXT: c_int = 0x80;
pub const SAM_TLEN: c_int = 0x100;
pub const SAM_SEQ: c_int = 0x200;
pub const SAM_QUAL: c_int = 0x400;

/// `HTS_LOG_OFF`.
pub const HTS_LOG_OFF: c_int = 0;

#[link(name = "hts")]
extern "C" {
    pub fn hts_open(fn_: *const c_char, mode: *const c_char) -> *mut htsFile;
    pub fn hts_hopen(fp: *mut hFILE, fn_: *const c_char, mode: *const c_char) -> *mut htsFile;
    pub fn hdopen(fd: c_int, mode: *const c_char) -> *mut hFILE;
    /// Closes an `hFILE` without flushing: the caller's to call when
    /// `hts_hopen` fails, which leaves the `hFILE` it was given open.
    pub fn hclose_abruptly(fp: *mut hFILE);
    pub fn hts_close(fp: *mut htsFile) -> c_int;
    pub fn hts_set_opt(fp: *mut htsFile, opt: c_int, ...) -> c_int;
    pub fn hts_check_EOF(fp: *mut htsFile) -> c_int;
    pub fn hts_set_log_level(level: c_int);
    pub fn sam_hdr_read(fp: *mut htsFile) -> *mut sam_hdr_t;
    pub fn sam_hdr_destroy(h: *mut sam_hdr_t);
    pub fn sam_hdr_str(h: *mut sam_hdr_t) -> *const c_char;
    pub fn sam_hdr_length(h: *mut sam_hdr_t) -> usize;
    pub fn sam_hdr_nref(h: *const sam_hdr_t) -> c_int;
    pub fn sam_hdr_tid2name(h: *const sam_hdr_t, tid: c_int) -> *const c_char;
    pub fn sam_hdr_tid2len(h: *const sam_hdr_t, tid: c_int) -> hts_pos_t;
    pub fn sam_read1(fp: *mut htsFile, h: *mut sam_hdr_t, b: *mut bam1_t) -> c_int;
    pub fn bam_init1() -> *mut bam1_t;
    pub fn bam_destroy1(b: *mut bam1_t);
    pub fn cram_seek(fd: *mut cram_fd, offset: libc::off_t, whence: c_int) -> c_int;
    pub fn cram_get_ref(fd: *mut cram_fd, id: c_int, start: hts_pos_t, end: hts_pos_t) -> *mut c_char;
    pub fn bgzf_open(path: *const c_char, mode: *const c_char) -> *mut BGZF;
    pub fn bgzf_write(fp: *mut BGZF, data: *const c_void, length: usize) -> isize;
    pub fn bgzf_close(fp: *mut BGZF) -> c_int;
    pub fn sam_index_build3(fn_: *const c_char, fnidx: *const c_char, min_shift: c_int, nthreads: c_int) -> c_int;
}

// Region queries through a `.crai` (`cram::region`).
opaque!(hts_idx_t, hts_itr_t);

/// `HTS_IDX_NOCOOR`: the reads without coordinates, at the end of the file.
pub const HTS_IDX_NOCOOR: c_int = -2;
/// `HTS_IDX_SILENT_FAIL`: no message when the index is absent.
pub const HTS_IDX_SILENT_FAIL: c_int = 2;

#[link(name = "hts")]
extern "C" {
    pub fn sam_index_load3(fp: *mut htsFile, fn_: *const c_char, fnidx: *const c_char, flags: c_int) -> *mut hts_idx_t;
    pub fn hts_idx_destroy(idx: *mut hts_idx_t);
    pub fn sam_itr_queryi(idx: *const hts_idx_t, tid: c_int, beg: hts_pos_t, end: hts_pos_t) -> *mut hts_itr_t;
    /// `sam_itr_next` (an inline function in sam.h) for CRAM: no BGZF, the
    /// `htsFile` as `data`.
    pub fn hts_itr_next(fp: *mut BGZF, iter: *mut hts_itr_t, r: *mut c_void, data: *mut c_void) -> c_int;
    pub fn hts_itr_destroy(iter: *mut hts_itr_t);
}

// CRAM output (write.rs).

opaque!(hts_opt);

/// `HTS_LOG_WARNING`.
pub const HTS_LOG_WARNING: c_int = 3;

#[link(name = "hts")]
extern "C" {
    pub fn sam_hdr_parse(l_text: usize, text: *const c_char) -> *mut sam_hdr_t;
    pub fn sam_hdr_write(fp: *mut htsFile, h: *const sam_hdr_t) -> c_int;
    pub fn sam_write1(fp: *mut htsFile, h: *const sam_hdr_t, b: *const bam1_t) -> c_int;
    pub fn hts_set_threads(fp: *mut htsFile, n: c_int) -> c_int;
    pub fn hts_opt_add(opts: *mut *mut hts_opt, c_arg: *const c_char) -> c_int;
    pub fn hts_opt_apply(fp: *mut htsFile, opts: *mut hts_opt) -> c_int;
    pub fn hts_opt_free(opts: *mut hts_opt);
    pub fn sam_idx_init(fp: *mut htsFile, h: *mut sam_hdr_t, min_shift: c_int, fnidx: *const c_char) -> c_int;
    pub fn sam_idx_save(fp: *mut htsFile) -> c_int;
}

// A scheme of fasthts' own through which htslib reads a remote object
// (`cram::remote`): `hfile_internal.h`'s plug-in interface, exported by
// libhts for its own plug-ins (htslib 1.16's layouts).

/// The leading fields of `struct hFILE` (hfile.h), which `hfile_init`
/// allocates at the start of a larger struct of the backend's own.
#[repr(C)]
pub struct hFILE_base {
    pub buffer: *mut c_char,
    pub begin: *mut c_char,
    pub end: *mut c_char,
    pub limit: *mut c_char,
    pub backend: *const hFILE_backend,
    pub offset: libc::off_t,
    /// `at_eof:1, mobile:1, readonly:1`.
    pub bits: std::ffi::c_uint,
    pub has_errno: c_int,
}

/// `struct hFILE_backend`.
#[repr(C)]
pub struct hFILE_backend {
    pub read: unsafe extern "C" fn(fp: *mut hFILE, buffer: *mut c_void, nbytes: usize) -> isize,
    pub write: unsafe extern "C" fn(fp: *mut hFILE, buffer: *const c_void, nbytes: usize) -> isize,
    pub seek: unsafe extern "C" fn(fp: *mut hFILE, offset: libc::off_t, whence: c_int) -> libc::off_t,
    pub flush: unsafe extern "C" fn(fp: *mut hFILE) -> c_int,
    pub close: unsafe extern "C" fn(fp: *mut hFILE) -> c_int,
}

/// `struct hFILE_scheme_handler` of priority below 2000 (no `vopen`).
#[repr(C)]
pub struct hFILE_scheme_handler {
    pub open: unsafe extern "C" fn(filename: *const c_char, mode: *const c_char) -> *mut hFILE,
    pub isremote: unsafe extern "C" fn(filename: *const c_char) -> c_int,
    pub provider: *const c_char,
    pub priority: c_int,
}

#[link(name = "hts")]
extern "C" {
    pub fn hfile_init(struct_size: usize, mode: *const c_char, capacity: usize) -> *mut hFILE;
    pub fn hfile_add_scheme_handler(scheme: *const c_char, handler: *const hFILE_scheme_handler);
    pub fn hisremote(filename: *const c_char) -> c_int;
}
