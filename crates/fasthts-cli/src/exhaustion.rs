//! Memory exhaustion ends the process the way any other error does: one
//! line naming the command, temporaries removed, status 1. Rust's default
//! is an abort ("memory allocation of N bytes failed", SIGABRT) that
//! leaves run files and temporary outputs behind; that happens whenever
//! an address-space limit (`ulimit -v`, a batch scheduler's) is smaller
//! than what `-m` and `-@` ask for.
//!
//! Every allocation of the binary goes through [`ExitOnExhaustion`], which
//! passes it to the system allocator and only acts when that returns
//! null. A consequence: `try_reserve` in the binary never reports an
//! error (the process ends instead, with this module's message); the
//! Python extension keeps the default allocator and sees those errors.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

pub struct ExitOnExhaustion;

/// Address space each glibc malloc arena reserves (`HEAP_MAX_SIZE` on
/// 64-bit), whether or not it is used.
const ARENA_RESERVATION: u64 = 64 << 20;

/// Under an address-space limit (`ulimit -v`), lets glibc's malloc keep
/// at most one arena per quarter of the limit divided by an arena's
/// reservation (at least one).
///
/// Why: each thread that allocates may get an arena of its own (up to 8
/// per core), and each reserves 64 MiB of address space on creation.
/// Measured with sort of a 390 KB BAM on 2 cores: it succeeded under 40 to
/// 135 MiB (no arena fits: every thread shares the main heap), failed at
/// 140-145 MiB (one or two arenas fit, then their reservations leave too
/// little for the work) and succeeded again from 150 MiB; with one arena
/// it succeeds at every one of those limits. Without a limit, nothing
/// changes.
pub fn fit_allocator_to_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct owned here.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return;
    }
    let arenas = (limit.rlim_cur as u64 / 4 / ARENA_RESERVATION).clamp(1, 1 << 16) as libc::c_int;
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt with a documented parameter, before other threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = arenas;
}

/// The size from which [`give_large_blocks_back`] has glibc map a block on
/// its own: glibc's initial threshold.
const OWN_MAPPING_FROM: usize = 128 << 10;

/// Has glibc's malloc map every block of 128 KiB or more on its own and
/// unmap it when it is freed, for the rest of the process: for commands
/// that hold little but a few large arrays per part of a file (stats,
/// flagstat, depth, coverage), whose peak resident memory is the measure
/// samtools is compared on. Call before the command starts its threads.
///
/// Why: glibc starts so, but the first such block freed (a part's reader
/// buffer) raises the threshold to its size, up to 32 MiB; from then on
/// the blocks of each part come from per-thread arenas that keep their
/// pages after `free`, and `calloc` writes zeros through the whole block
/// instead of leaving fresh pages untouched (stats' 256-row quality
/// histograms). Measured, `stats -@2` of a 300 MB BAM: 17.1 MB peak
/// against 14.1 MB with this, CPU the same within noise (BENCHMARKS.md,
/// "Peak memory of the summary commands").
pub fn give_large_blocks_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt with a documented parameter; no other thread
    // allocates yet (only the signal thread runs, waiting for signals).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_MAPPING_FROM as libc::c_int);
    }
}

/// The subcommand's name for the error line (set once by `main`).
static COMMAND: OnceLock<&'static str> = OnceLock::new();

/// The thread that is reporting exhaustion and removing temporaries (0:
/// none yet). A second failure on that thread (while cleaning up) exits
/// at once; on any other thread it waits for the first to finish.
static REPORTING_THREAD: AtomicI32 = AtomicI32::new(0);

pub fn set_command(name: &'static str) {
    let _ = COMMAND.set(name);
}

// SAFETY: every method forwards to `System` with the caller's arguments and
// returns its result unchanged; only a null result is intercepted, and
// then the function does not return.
unsafe impl GlobalAlloc for ExitOnExhaustion {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if p.is_null() {
            exhausted(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if p.is_null() {
            exhausted(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() {
            exhausted(new_size);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// A fixed buffer to format the error line into: formatting must not
/// allocate here.
struct Line {
    bytes: [u8; 256],
    len: usize,
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[cold]
fn exhausted(size: usize) -> ! {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    if let Err(reporter) = REPORTING_THREAD.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
        if reporter == me {
            // Cleaning up needed memory that is not there: end now.
            // SAFETY: _exit ends the process without running anything else.
            unsafe { libc::_exit(1) }
        }
        loop {
            std::thread::park();
        }
    }
    let mut line = Line { bytes: [0; 256], len: 0 };
    let command = COMMAND.get().copied().unwrap_or("error");
    let hint = if command == "sort" { " (lower -m or -@, or raise the memory limit)" } else { "" };
    let _ = writeln!(line, "fasthts {command}: out of memory: could not allocate {size} bytes{hint}");
    // SAFETY: writes initialised bytes of a live buffer to stderr; _exit
    // ends the process without unwinding or running destructors, which
    // could themselves need memory.
    unsafe {
        libc::write(2, line.bytes.as_ptr().cast(), line.len);
        fasthts::output::remove_in_progress();
        libc::_exit(1)
    }
}
