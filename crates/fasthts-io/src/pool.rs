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
/// `None` or 0 (samtools' `-@` and khmer's `-T` both count threads).
pub fn thread_count(requested: Option<usize>) -> usize {
    requested.filter(|&n| n > 0).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `f` on a rayon pool of [`thread_count`]`(requested)` threads (on the
/// calling thread if no pool can be made).
pub fn with_threads<T: Send>(requested: Option<usize>, f: impl FnOnce() -> T + Send) -> T {
    match rayon::ThreadPoolBuilder::new().num_threads(thread_count(requested)).build() {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}
