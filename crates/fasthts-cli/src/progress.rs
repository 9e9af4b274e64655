//! Progress lines on a terminal: never on a pipe, a file or in CI.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Whether progress should be shown: standard error is a terminal and the
/// `CI` environment variable is unset.
pub fn on_terminal() -> bool {
    io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// Redraws one status line on standard error four times a second from a
/// thread of its own, until dropped (which erases the line).
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts redrawing `line(elapsed)` when [`on_terminal`]; does nothing otherwise.
    pub fn start(line: impl Fn(Duration) -> String + Send + 'static) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = on_terminal().then(|| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let start = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    let mut err = io::stderr().lock();
                    let _ = write!(err, "\r\x1b[K{}", line(start.elapsed()));
                    let _ = err.flush();
                }
                let _ = write!(io::stderr().lock(), "\r\x1b[K");
            })
        });
        Ticker { stop, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
