//! Cancelling running work from outside it (Ctrl-C in the Python package).
//!
//! A request is process-wide, as a Ctrl-C is: while it stands, inflating
//! BGZF data fails (every BAM read goes through it), so a job reading a
//! BAM stops within a batch of blocks and returns an error, dropping its
//! temporary outputs. The requester clears it once the job has returned.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks running jobs to stop.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Withdraws the request (the interrupted job has returned).
pub fn clear() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// Whether jobs have been asked to stop.
#[inline]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
