//! Reading ahead of a Python iterator: batches are filled on a pool of the
//! iterator's own while Python walks the previous one.

use pyo3::prelude::*;
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;

/// Batches filled and waiting, besides the one being filled: with two,
/// the walker rarely waits for the filler when it is the faster.
const DEPTH: usize = 2;

/// The most threads a read-ahead pool gets: a fill inflates at most one
/// reader batch of BGZF blocks (1 MiB of blocks of up to 64 KiB) at a
/// time, so more threads would only wait (and each costs a start).
const MAX_THREADS: usize = fasthts_io::bgzf::DEFAULT_BATCH_BYTES >> 16;

/// Batches filled ahead by a producer running on a pool of its own.
pub(crate) struct ReadAhead<T> {
    // (Waited on without the GIL, from a closure that must be Sync.)
    ready: Mutex<Receiver<T>>,
    spare: Sender<T>,
}

impl<T: Default + Send + 'static> ReadAhead<T> {
    /// Starts `fill` on a pool of `threads` threads (at most `MAX_THREADS`;
    /// its parallel work, BGZF inflation, runs there too): it is called on
    /// batches (spare ones handed back, else new), each sent in order,
    /// until it returns false (that batch is the last sent) or the
    /// `ReadAhead` is dropped.
    pub(crate) fn start(threads: usize, mut fill: impl FnMut(&mut T) -> bool + Send + 'static) -> ReadAhead<T> {
        let (ready_tx, ready) = sync_channel(DEPTH);
        let (spare, spare_rx) = channel::<T>();
        let produce = move || loop {
            let mut batch = spare_rx.try_recv().unwrap_or_default();
            let more = fill(&mut batch);
            // A send fails once the iterator is gone: nothing more to do.
            if ready_tx.send(batch).is_err() || !more {
                return;
            }
        };
        match fasthts_io::pool::pool_builder(threads.clamp(1, MAX_THREADS)).build() {
            // The pool ends once the producer returns.
            Ok(pool) => pool.spawn(produce),
            Err(_) => drop(std::thread::spawn(produce)),
        }
        ReadAhead { ready: Mutex::new(ready), spare }
    }

    /// The next batch (None after the last), waiting with the GIL
    /// released; a signal (Ctrl-C) while waiting raises its exception and
    /// leaves the batch to the next call.
    pub(crate) fn next(&self, py: Python<'_>) -> PyResult<Option<T>> {
        loop {
            let got = py.detach(|| self.ready.lock().unwrap_or_else(|p| p.into_inner()).recv_timeout(crate::SIGNAL_CHECK_INTERVAL));
            match got {
                Ok(batch) => return Ok(Some(batch)),
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
                Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            }
        }
    }

    /// Hands a used batch back for refilling (its buffers are reused).
    pub(crate) fn recycle(&self, batch: T) {
        let _ = self.spare.send(batch);
    }
}
