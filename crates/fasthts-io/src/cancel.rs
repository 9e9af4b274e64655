//! Cancelling running work from outside it (Ctrl-C in the Python package).
//!
//! A request is per call: the caller makes a [`Token`], runs its job under
//! it ([`Token::run`]) and cancels it from another thread. Work checks the
//! token of the thread it runs on ([`requested`]): the job's own thread and
//! the threads of the pools the job makes ([`crate::pool::with_threads`]
//! passes the token on), so other calls (other tokens, or none, as in the
//! CLI) go on. While a job's token is cancelled, inflating BGZF data fails
//! (every BAM read goes through it), so the job stops within a batch of
//! blocks and returns an error, dropping its temporary outputs; readers
//! of other inputs check [`Token::is_cancelled`] per buffer they fill.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One call's cancellation flag, shared by the caller and the call's threads.
#[derive(Clone, Debug, Default)]
pub struct Token(Arc<AtomicBool>);

thread_local! {
    // The token of the call this thread works for (None: not cancellable).
    static CURRENT: RefCell<Option<Token>> = const { RefCell::new(None) };
}

impl Token {
    /// A token not cancelled.
    pub fn new() -> Token {
        Token::default()
    }

    /// Asks the work under this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`Token::cancel`] was called.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `f` on this thread with this token as its current one (the
    /// previous one is restored after, also on panic).
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Token>);
        impl Drop for Restore {
            fn drop(&mut self) {
                set_current(self.0.take());
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.replace(Some(self.clone()))));
        f()
    }
}

/// The token of the call this thread works for, to hand to threads the
/// call starts.
pub fn current() -> Option<Token> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Makes `token` this thread's for the rest of its life (a pool thread
/// started for one call).
pub fn set_current(token: Option<Token>) {
    CURRENT.with(|c| *c.borrow_mut() = token);
}

/// Whether the call this thread works for has been cancelled.
#[inline]
pub fn requested() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(Token::is_cancelled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_token_is_seen_only_by_work_under_it() {
        let mine = Token::new();
        let other = Token::new();
        mine.cancel();
        assert!(!requested());
        assert!(mine.run(requested));
        assert!(!other.run(requested));
        // Restored after the run, and passed to a pool's threads.
        assert!(!requested());
        let on_pool = mine.run(|| crate::pool::with_threads(Some(2), || rayon::join(requested, requested)));
        assert_eq!(on_pool, (true, true));
        let elsewhere = std::thread::spawn(requested).join().unwrap();
        assert!(!elsewhere);
    }
}
