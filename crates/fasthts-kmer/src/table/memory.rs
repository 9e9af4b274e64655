//! The counters' memory: zeroed byte tables backed by transparent huge
//! pages or by a mapped output file, and the prefetch hint.

use std::sync::atomic::AtomicU8;
use std::sync::Arc;

/// A zero-initialised byte table usable with atomics: on the heap
/// (`calloc`: lazy zero pages, advised to use transparent huge pages), or
/// a part of a shared file mapping (a `.ct` file's table, see
/// [`SharedMap`]).
pub(crate) struct ByteTable {
    ptr: *const AtomicU8,
    len: usize,
    /// Owns the memory `ptr..ptr + len` lies in.
    _backing: Backing,
}

enum Backing {
    Heap(#[allow(dead_code)] Box<[AtomicU8]>),
    Mapped(#[allow(dead_code)] Arc<SharedMap>),
}

// SAFETY: the table is memory owned by `_backing` (a box or a mapping that
// lives as long as any table in it); all access through `&self` is atomic.
unsafe impl Send for ByteTable {}
unsafe impl Sync for ByteTable {}

impl ByteTable {
    pub(crate) fn zeroed(n: usize) -> Self {
        Self::from_vec(vec![0u8; n])
    }
    /// A table holding `v`'s bytes.
    pub(crate) fn from_vec(v: Vec<u8>) -> Self {
        let b = v.into_boxed_slice();
        advise_hugepages(&b);
        let raw = Box::into_raw(b) as *mut [AtomicU8];
        // SAFETY: AtomicU8 has the same size, alignment and bit validity as u8.
        let data = unsafe { Box::from_raw(raw) };
        ByteTable { ptr: data.as_ptr(), len: data.len(), _backing: Backing::Heap(data) }
    }
    /// The `len` bytes at `offset` of `map` (which must be zeros).
    pub(crate) fn in_map(map: &Arc<SharedMap>, offset: usize, len: usize) -> Self {
        assert!(offset + len <= map.len, "table outside its mapping");
        // SAFETY: within the mapping (checked above), which the Arc keeps.
        let ptr = unsafe { map.ptr.add(offset) } as *const AtomicU8;
        ByteTable { ptr, len, _backing: Backing::Mapped(Arc::clone(map)) }
    }
    #[inline(always)]
    fn cells(&self) -> &[AtomicU8] {
        // SAFETY: `ptr..ptr + len` is owned by `_backing` while self lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    #[inline(always)]
    pub(crate) fn cell(&self, i: usize) -> &AtomicU8 {
        &self.cells()[i]
    }
    #[inline(always)]
    pub(super) fn ptr(&self) -> *const AtomicU8 {
        self.ptr
    }
    pub(crate) fn as_bytes(&mut self) -> &[u8] {
        // SAFETY: &mut self excludes concurrent atomic writers; same layout.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) }
    }
}

/// A writable shared mapping of a whole file: the memory of tables whose
/// file is their output (so the counts reach the file as they are made,
/// with no copy at the end). Unmapped when the last table in it goes.
pub(crate) struct SharedMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain memory; the tables in it synchronise their own access.
unsafe impl Send for SharedMap {}
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// No mapping (a placeholder).
    pub(crate) fn empty() -> SharedMap {
        SharedMap { ptr: std::ptr::null_mut(), len: 0 }
    }
    /// Maps the first `len` bytes of `file` (opened for reading and
    /// writing, at least `len` long) shared and writable.
    pub(crate) fn new(file: &std::fs::File, len: usize) -> std::io::Result<Arc<SharedMap>> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a new mapping of the caller's file; nothing else refers
        // to the address range it returns.
        let ptr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // Huge folios in the page cache, mapped whole, whatever order the
        // counters are first touched in: without the advice the kernel's
        // fault-around sees random first touches and falls back to 4 KiB
        // pages (a TLB miss per update; `kmer count -x 2e8 -T 2` of 100
        // Mbp: 13.2 user s unsorted, 6.5 sorted; with it 4.3 and 5.8).
        // SAFETY: the mapping just made; the advice does not change its contents.
        unsafe { fasthts_io::memory::advise_huge_pages(ptr as *const u8, len) };
        Ok(Arc::new(SharedMap { ptr: ptr as *mut u8, len }))
    }
    /// Copies `bytes` to `offset` (the file's header and size fields).
    /// Only while no table in the mapping is being updated.
    pub(crate) fn write_at(&self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.len, "write outside the mapping");
        // SAFETY: within the mapping; the header bytes lie outside every table.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) };
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the mapping made in `new`; no table in it is left (each
        // holds an Arc of it).
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// Huge pages for a table of at least a few of them (smaller ones gain
/// nothing measurable).
fn advise_hugepages(table: &[u8]) {
    if table.len() >= 4 * HUGE_PAGE {
        // SAFETY: the table's own allocation.
        unsafe { fasthts_io::memory::advise_huge_pages(table.as_ptr(), table.len()) };
    }
}

const HUGE_PAGE: usize = 2 << 20;

#[inline(always)]
pub(super) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
