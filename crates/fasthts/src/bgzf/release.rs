//! Giving back the pages of a memory map that have been read.
//!
//! Pages of a file mapping that a reader has touched count towards the
//! process's resident memory until unmapped. A pass over a 100 GB BAM would
//! look like a 100 GB process (harmless page cache, but alarming and hostile
//! to memory limits). Readers therefore drop the pages behind them.

/// Bytes read between two releases.
pub const RELEASE_STEP: u64 = 2 << 20;

/// How far around a faulting address Linux maps file pages that are already
/// cached (`fault_around_bytes`, 64 KiB by default): a reader that starts or
/// ends inside a file also maps up to this much of its neighbours' bytes,
/// which their own releases may already have passed.
pub const FAULT_AROUND: u64 = 64 << 10;

/// Drops the process's mapping of the whole pages within `file[from..to]`
/// (the data stays in the page cache and is simply faulted back in if read
/// again).
///
/// # Safety
///
/// `file` must be a read-only, file-backed memory map (or part of one). On
/// anonymous or private writable memory `MADV_DONTNEED` discards the
/// contents, which would corrupt the data.
pub unsafe fn release_pages(file: &[u8], from: u64, to: u64) {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let base = file.as_ptr() as u64;
    let start = (base + from).div_ceil(page) * page;
    let end = (base + to.min(file.len() as u64)) / page * page;
    if end > start {
        // SAFETY: [start, end) lies within `file`, page-aligned; the caller
        // guarantees a read-only file mapping, for which MADV_DONTNEED only
        // drops page-table entries. Failure is harmless, so it is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, (end - start) as usize, libc::MADV_DONTNEED);
        }
    }
}
