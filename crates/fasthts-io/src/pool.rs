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
/// the caller's cancellation token ([`crate::cancel`]), and have ended
/// when this returns (or unwinds): see [`JoinedPool`].
pub fn with_threads<T: Send>(requested: Option<usize>, f: impl FnOnce() -> T + Send) -> T {
    let pool = JoinedPool::new(thread_count(requested));
    match &pool.pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// A rayon pool whose threads are joined when it is dropped, so that none
/// of them is still ending after the job that made it has returned.
///
/// rayon's own `ThreadPool` only tells its threads to stop when dropped:
/// they end a little later, running the thread-exit destructors of every
/// C library they used. A thread that read CRAM through htslib has used
/// libcurl and OpenSSL (htslib fetches a reference named by its `@SQ` `M5`
/// from `REF_PATH`, by default EBI's server over https, before its `UR`),
/// and OpenSSL's destructor for a thread's state racing with its
/// `OPENSSL_cleanup` (run by `exit` as the command returns) corrupted the
/// heap: `malloc_consolidate(): unaligned fastbin chunk detected`, double
/// frees and crashes in libcrypto, once in a few hundred runs of `view` on
/// a CRAM region. Joined, the threads have run those destructors before
/// anything else happens.
pub struct JoinedPool {
    /// `None` when no pool could be made.
    pool: Option<rayon::ThreadPool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl JoinedPool {
    /// A pool of `threads` threads made by [`pool_builder`].
    pub fn new(threads: usize) -> JoinedPool {
        let mut handles = Vec::with_capacity(threads);
        let pool = pool_builder(threads)
            .spawn_handler(|thread| {
                // As rayon's default spawn handler makes its threads.
                let mut builder = std::thread::Builder::new();
                if let Some(name) = thread.name() {
                    builder = builder.name(name.to_owned());
                }
                if let Some(size) = thread.stack_size() {
                    builder = builder.stack_size(size);
                }
                handles.push(builder.spawn(move || thread.run())?);
                Ok(())
            })
            .build()
            .ok();
        // A pool that failed to build has told the threads it made to end.
        JoinedPool { pool, threads: handles }
    }

    /// The pool (`None` if none could be made).
    pub fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool.as_ref()
    }
}

impl Drop for JoinedPool {
    fn drop(&mut self) {
        // Dropping the pool tells its threads to end once their queued
        // jobs are done; joining waits until each has ended entirely.
        drop(self.pool.take());
        for thread in self.threads.drain(..) {
            // A worker's panic was reported where it happened (rayon
            // catches a job's panic and hands it to the caller).
            let _ = thread.join();
        }
    }
}

/// A rayon pool builder for `threads` threads that work under the calling
/// thread's cancellation token ([`crate::cancel`]).
pub fn pool_builder(threads: usize) -> rayon::ThreadPoolBuilder {
    let token = crate::cancel::current();
    rayon::ThreadPoolBuilder::new().num_threads(threads).start_handler(move |_| crate::cancel::set_current(token.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Threads whose thread-exit destructors have run.
    static ENDED: AtomicUsize = AtomicUsize::new(0);

    struct CountsItsEnd;

    impl Drop for CountsItsEnd {
        fn drop(&mut self) {
            // Slow, so that a pool not joined would be seen still ending.
            std::thread::sleep(std::time::Duration::from_millis(20));
            ENDED.fetch_add(1, Ordering::SeqCst);
        }
    }

    thread_local! {
        static MARK: CountsItsEnd = const { CountsItsEnd };
    }

    #[test]
    fn with_threads_returns_after_its_threads_have_ended() {
        let threads = with_threads(Some(3), || {
            // Every thread of the pool touches its thread-local value.
            rayon::broadcast(|_| MARK.with(|_| ()));
            rayon::current_num_threads()
        });
        assert!(threads >= 1);
        assert_eq!(ENDED.load(Ordering::SeqCst), threads, "every pool thread ended before with_threads returned");
    }
}
