//! Waiting for work handed to the rayon pool.

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
pub(crate) fn recv_helping<T>(rx: &Receiver<T>) -> T {
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
