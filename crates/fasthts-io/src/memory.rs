//! Memory advice: giving back the pages of a memory map that have been
//! read, and backing large buffers with huge pages.
//!
//! Pages of a file mapping that a reader has touched count towards the
//! process's resident memory until unmapped. A pass over a 100 GB BAM would
//! look like a 100 GB process (harmless page cache, but alarming and hostile
//! to memory limits). Readers therefore drop the pages behind them.

/// Bytes read between two releases of a mapping's pages. A reader holds up
/// to this much of the file mapped behind it, so two readers at 2 MiB held
/// 4-5 MB of a `stats -@2` or `flagstat -@2` peak of 20-26 MB (samtools':
/// 5 MB); a call per 256 KiB is a few thousand `madvise` per GB read, which
/// cost no measurable CPU (BENCHMARKS.md, "Peak memory of the summary
/// commands").
pub const RELEASE_STEP: u64 = 256 << 10;

/// How far around a faulting address Linux maps file pages that are already
/// cached (`fault_around_bytes`, 64 KiB by default): a reader that starts or
/// ends inside a file also maps up to this much of its neighbours' bytes,
/// which their own releases may already have passed.
pub const FAULT_AROUND: u64 = 64 << 10;

/// A transparent huge page.
const HUGE_PAGE: usize = 2 << 20;

/// Drops the process's mapping of the whole pages within `file[from..to]`
/// (the data stays in the page cache and is simply faulted back in if read
/// again). Returns where the pages released end (`from` if none were): a
/// reader that releases as it goes passes it as the next `from`, else the
/// page holding each `to` would stay mapped, one page a call.
///
/// # Safety
///
/// `file` must be a read-only, file-backed memory map (or part of one). On
/// anonymous or private writable memory `MADV_DONTNEED` discards the
/// contents, which would corrupt the data.
pub unsafe fn release_mapped_pages(file: &[u8], from: u64, to: u64) -> u64 {
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
        return end - base;
    }
    from
}

/// Asks for the whole 2 MiB pages inside `[ptr, ptr + len)` to be backed by
/// transparent huge pages (THP is in `madvise` mode on common distributions):
/// random access to gigabyte tables is TLB-bound without them. Setting the
/// environment variable `FASTHTS_NO_HUGEPAGES` turns this off (to measure it).
///
/// # Safety
///
/// `[ptr, ptr + len)` must be memory the caller has allocated (its
/// contents may be uninitialised: they are neither read nor changed).
pub unsafe fn advise_huge_pages(ptr: *const u8, len: usize) {
    if std::env::var_os("FASTHTS_NO_HUGEPAGES").is_none() {
        // SAFETY: MADV_HUGEPAGE only changes how memory is backed; the
        // contents stay. Failure (no THP support) is harmless.
        unsafe { advise_whole_huge_pages(ptr, len, HugePageAdvice::HugePages) };
    }
}

/// Gives the whole 2 MiB pages inside `[ptr, ptr + len)` back to the
/// kernel; they read as zeros afterwards.
///
/// # Safety
///
/// The range must lie in anonymous memory the caller owns and no longer
/// reads.
pub unsafe fn release_huge_pages(ptr: *const u8, len: usize) {
    // SAFETY: the caller owns the range and does not read it again.
    unsafe { advise_whole_huge_pages(ptr, len, HugePageAdvice::Release) };
}

enum HugePageAdvice {
    HugePages,
    Release,
}

/// `madvise` on the whole 2 MiB pages inside `[ptr, ptr + len)`.
///
/// # Safety
///
/// As the advice requires: `Release` discards the pages' contents.
unsafe fn advise_whole_huge_pages(ptr: *const u8, len: usize, advice: HugePageAdvice) {
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).div_ceil(HUGE_PAGE) * HUGE_PAGE;
        let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            let advice = match advice {
                HugePageAdvice::HugePages => libc::MADV_HUGEPAGE,
                HugePageAdvice::Release => libc::MADV_DONTNEED,
            };
            // SAFETY: whole pages of the caller's memory; the caller
            // answers for what the advice does to their contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, advice);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len, advice);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    /// Which pages of `bytes` are mapped into the process (bit 63 of each
    /// page's entry in /proc/self/pagemap, readable without privileges).
    fn mapped_pages(bytes: &[u8]) -> Vec<bool> {
        let page = 4096;
        let first = bytes.as_ptr() as u64 / page;
        let count = bytes.len() as u64 / page;
        let mut pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        pagemap.seek(SeekFrom::Start(first * 8)).unwrap();
        let mut entries = vec![0u8; count as usize * 8];
        pagemap.read_exact(&mut entries).unwrap();
        entries.chunks(8).map(|e| u64::from_le_bytes(e.try_into().unwrap()) >> 63 == 1).collect()
    }

    #[test]
    fn releases_at_unaligned_offsets_leave_no_page_behind() {
        // SAFETY: sysconf has no preconditions.
        assert_eq!(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }, 4096, "the test counts 4 KiB pages");
        let path = std::env::temp_dir().join(format!("fasthts-release-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 64 * 4096]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a read-only map of a file this test made and does not change.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        assert_eq!(map.iter().map(|&b| u64::from(b)).sum::<u64>(), 7 * 64 * 4096, "every page read");
        assert!(mapped_pages(&map).iter().all(|&m| m));
        // A reader's steps end inside pages, as BGZF blocks do.
        let mut released = 0;
        for to in [10_001, 50_003, 120_007, 200_009] {
            // SAFETY: a read-only file mapping.
            released = unsafe { release_mapped_pages(&map, released, to) };
            assert_eq!(released, to / 4096 * 4096);
        }
        let mapped = mapped_pages(&map);
        let still: Vec<usize> = (0..200_009 / 4096).filter(|&p| mapped[p]).collect();
        assert!(still.is_empty(), "pages before the last step still mapped: {still:?}");
        assert!(mapped[200_009 / 4096..].iter().all(|&m| m), "pages not yet passed stay mapped");
        // Nothing whole to release: `from` comes back.
        // SAFETY: as above.
        assert_eq!(unsafe { release_mapped_pages(&map, released, released + 100) }, released);
        drop(map);
        std::fs::remove_file(&path).unwrap();
    }
}
