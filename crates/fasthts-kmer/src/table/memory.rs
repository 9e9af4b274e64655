//! The counters' memory: zeroed byte tables backed by transparent huge
//! pages, and the prefetch hint.

use std::sync::atomic::AtomicU8;

/// A zero-initialised byte table usable with atomics. Allocated with
/// `calloc` (lazy zero pages) and advised to use transparent huge pages.
pub(crate) struct ByteTable {
    data: Box<[AtomicU8]>,
}

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
        ByteTable { data }
    }
    #[inline(always)]
    pub(crate) fn cell(&self, i: usize) -> &AtomicU8 {
        &self.data[i]
    }
    #[inline(always)]
    pub(super) fn ptr(&self) -> *const AtomicU8 {
        self.data.as_ptr()
    }
    pub(crate) fn as_bytes(&mut self) -> &[u8] {
        // SAFETY: &mut self excludes concurrent atomic writers; same layout.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr() as *const u8, self.data.len()) }
    }
    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_mut_ptr() as *mut u8, self.data.len()) }
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
