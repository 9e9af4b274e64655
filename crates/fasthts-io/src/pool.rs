//! The thread pool: how many threads a job gets, and waiting for work
//! handed to the pool without deadlocking it.

use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

/// Receives the next message on `rx`, running queued pool jobs until one
/// arrives. The job that will send it may be queued behind the caller (on a
/// pool of one thread it always is), so a plain blocking receive could wait
/// forever; when nothing is queued here, the sender is running on another
/// thread and the wait blocks briefly on the channel.
///
/// # Panics
///
/// If every sender is dropped without sending: the callers' jobs always
/// answer.
pub fn recv_helping<T>(rx: &Receiver<T>) -> T {
    loop {
        match rx.try_recv() {
            Ok(message) => return message,
            Err(TryRecvError::Disconnected) => panic!("a pool job dropped its channel without answering"),
            Err(TryRecvError::Empty) => {}
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            match rx.recv_timeout(Duration::from_micros(100)) {
                Ok(message) => return message,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => panic!("a pool job dropped its channel without answering"),
            }
        }
    }
}

/// The number of threads a job asked for `requested` gets: all cores when
/// `None` or 0 (samtools' `-@` and khmer's `-T` both count threads), and
/// never more than [`MAX_THREADS_PER_CORE`] per core: threads beyond that
/// only wait for a core, and each costs a stack and, idle, steals work
/// from all the others (rayon's pool started 5,000 of them in 28-56 s on
/// 2 cores, for a flagstat of 390 KB).
///
/// Under an address-space limit (`ulimit -v`), also no more than one
/// thread per [`ADDRESS_SPACE_PER_THREAD`] of it: each thread reserves a
/// stack and buffers, and a pool that starts all its threads and then has
/// too little left for the work failed where fewer threads would have
/// succeeded (failures were not monotonic in the limit).
pub fn thread_count(requested: Option<usize>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let asked = requested.filter(|&n| n > 0).unwrap_or(cores);
    asked.min(cores.saturating_mul(MAX_THREADS_PER_CORE)).min(threads_the_address_space_allows()).max(1)
}

/// The most threads per core a job gets, whatever it asks for.
pub const MAX_THREADS_PER_CORE: usize = 4;

/// Address space budgeted per thread under `ulimit -v`.
pub const ADDRESS_SPACE_PER_THREAD: u64 = 32 << 20;

fn threads_the_address_space_allows() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct owned here.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return usize::MAX;
    }
    usize::try_from(limit.rlim_cur as u64 / ADDRESS_SPACE_PER_THREAD).unwrap_or(usize::MAX).max(1)
}

/// [`thread_count`] for a job of `units` independent pieces of work (BGZF
/// blocks, input files): no more threads than pieces, at least one.
pub fn thread_count_for(requested: Option<usize>, units: usize) -> usize {
    thread_count(requested).min(units).max(1)
}

/// How many pieces of work (BGZF blocks of at most 64 KiB) a file read
/// whole offers, for [`thread_count_for`]: unbounded for what is not a
/// regular file (a pipe's length is unknown).
pub fn blocks_in_file(path: &std::path::Path) -> usize {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => usize::try_from(m.len() >> 16).unwrap_or(usize::MAX).saturating_add(1),
        _ => usize::MAX,
    }
}

/// Runs `f` on a rayon pool of [`thread_count`]`(requested)` threads (on the
/// calling thread if no pool can be made). The pool's threads work under
/// the caller's cancellation token ([`crate::cancel`]).
pub fn with_threads<T: Send>(requested: Option<usize>, f: impl FnOnce() -> T + Send) -> T {
    match pool_builder(thread_count(requested)).build() {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

/// A rayon pool builder for `threads` threads that work under the calling
/// thread's cancellation token ([`crate::cancel`]).
pub fn pool_builder(threads: usize) -> rayon::ThreadPoolBuilder {
    let token = crate::cancel::current();
    rayon::ThreadPoolBuilder::new().num_threads(threads).start_handler(move |_| crate::cancel::set_current(token.clone()))
}
