//! Progress lines on a terminal: never on a pipe, a file, in CI or under a
//! command's `-q`.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
        Ticker::start_unless(false, line)
    }

    /// [`Ticker::start`], except that nothing is shown when `quiet` (`-q`).
    pub fn start_unless(quiet: bool, line: impl Fn(Duration) -> String + Send + 'static) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = (!quiet && on_terminal()).then(|| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let start = Instant::now();
                loop {
                    // Woken early by drop: a short job is not held up.
                    std::thread::park_timeout(Duration::from_millis(250));
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
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
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// Reads and bases done so far, shared with a [`Ticker`]'s line: counts and
/// the rate since this was made (`1200 reads, 3.4 Mbp, 56.7 Mbp/s`).
pub struct ReadsDone {
    start: Instant,
    reads: AtomicU64,
    bases: AtomicU64,
}

impl ReadsDone {
    pub fn starting_now() -> ReadsDone {
        ReadsDone { start: Instant::now(), reads: AtomicU64::new(0), bases: AtomicU64::new(0) }
    }

    pub fn set(&self, reads: u64, bases: u64) {
        self.reads.store(reads, Ordering::Relaxed);
        self.bases.store(bases, Ordering::Relaxed);
    }

    pub fn line(&self) -> String {
        let (reads, mbp) = (self.reads.load(Ordering::Relaxed), self.bases.load(Ordering::Relaxed) as f64 / 1e6);
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        format!("{reads} reads, {mbp:.1} Mbp, {:.1} Mbp/s", mbp / secs)
    }
}
