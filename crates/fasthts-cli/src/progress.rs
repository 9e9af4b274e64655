//! Progress bars, one style for every command (indicatif): on a terminal
//! only, never on a pipe or a file, with `CI` set, or under a command's
//! `-q`; and only for a job still running after a second, so that short
//! ones never flash a bar.
//!
//! The hot path is not touched: a thread of the bar's own reads counters
//! the work keeps anyway (sort's record counts, the BGZF bytes inflated,
//! the kernel's position in an input file) five times a second. When no bar
//! is shown, no thread is started and nothing is read.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a job runs before its bar appears.
const DELAY: Duration = Duration::from_secs(1);
/// How often the bar's state is read.
const POLL: Duration = Duration::from_millis(200);

/// Whether to show progress: standard error is a terminal, `CI` is unset
/// and the command was not asked to be quiet.
pub fn wanted(quiet: bool) -> bool {
    !quiet && io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// Where a bar's position comes from.
pub enum Source {
    /// The compressed BGZF bytes inflated so far (any reader), out of the
    /// sizes of these files (a pipe or `-` adds nothing: the bar then shows
    /// bytes and rate without a total).
    Inflated(Vec<PathBuf>),
    /// How far the process has read into these files, from the kernel's
    /// file positions (`/proc/self/fdinfo`): for inputs read with `read`,
    /// such as the k-mer commands' FASTA/FASTQ, plain or compressed; with
    /// a message made from the command's own counters, if it has some.
    FilePositions(Vec<PathBuf>, Option<Message>),
    /// A command's own counters: sets the bar's length, position and
    /// message from them.
    Custom(Box<dyn Fn(&ProgressBar) + Send>),
}

/// Reads how many bytes of the sized inputs are done.
type Counter = fn(&[(PathBuf, u64)]) -> u64;

/// A line of text a bar shows after its counts (`1200 reads, 3.4 Mbp`).
pub type Message = Box<dyn Fn() -> String + Send>;

/// A progress bar shown while this lives (see the module's notes); dropping
/// it erases the bar.
pub struct Bar {
    running: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Bar {
    /// Starts a bar named `name` (`sort`, `kmer count`) whose state comes
    /// from `source`, if [`wanted`]`(quiet)`.
    pub fn start(name: &str, quiet: bool, source: Source) -> Bar {
        if !wanted(quiet) {
            return Bar { running: None };
        }
        let stop = Arc::new(AtomicBool::new(false));
        let name = name.to_string();
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || show(&name, source, &stop))
        };
        Bar { running: Some((stop, thread)) }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            stop.store(true, Ordering::Relaxed);
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Sleeps `d` unless woken to stop; whether to go on.
fn wait(d: Duration, stop: &AtomicBool) -> bool {
    std::thread::park_timeout(d);
    !stop.load(Ordering::Relaxed)
}

fn show(name: &str, source: Source, stop: &AtomicBool) {
    if !wait(DELAY, stop) {
        return;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_prefix(name.to_string());
    let (files, counted): (Vec<PathBuf>, Counter) = match &source {
        Source::Inflated(files) => (files.clone(), |_| fasthts_io::progress::inflated_bytes()),
        Source::FilePositions(files, _) => (files.clone(), positions),
        Source::Custom(_) => (Vec::new(), |_| 0),
    };
    let sized: Vec<(PathBuf, u64)> = files.iter().filter_map(|p| regular_file_size(p).map(|n| (canonical(p), n))).collect();
    let total: u64 = sized.iter().map(|(_, n)| n).sum();
    match &source {
        Source::Custom(_) => {}
        _ if total > 0 => {
            bar.set_length(total);
            bar.set_style(bytes_style());
        }
        // A pipe: no total, and no position the kernel keeps for it.
        Source::FilePositions(..) => bar.set_style(spinner_style()),
        Source::Inflated(_) => bar.set_style(spinner_bytes_style()),
    }
    // A file read to its end is closed while the work on it goes on: the
    // bar keeps the furthest position seen.
    let mut furthest = 0;
    loop {
        match &source {
            Source::Custom(update) => update(&bar),
            _ => {
                // The inflated count starts with the process, as the job does.
                furthest = furthest.max(counted(&sized));
                let done = furthest;
                bar.set_position(if total > 0 { done.min(total) } else { done });
                if let Source::FilePositions(_, Some(message)) = &source {
                    bar.set_message(message());
                }
            }
        }
        bar.tick();
        if !wait(POLL, stop) {
            break;
        }
    }
    bar.finish_and_clear();
}

/// The bar with a known total of input bytes.
fn bytes_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix}: [{bar:30}] {percent:>3}% {bytes}/{total_bytes} {binary_bytes_per_sec} {msg} ETA {eta} [{elapsed}]")
        .expect("valid template")
        .progress_chars("=> ")
}

/// Input bytes without a total (a pipe).
fn spinner_bytes_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix}: {spinner} {bytes} read, {binary_bytes_per_sec} [{elapsed}]").expect("valid template")
}

/// A bar for a count of `unit` with a known total (`{pos}/{len}`).
pub fn counted_style(unit: &str) -> ProgressStyle {
    ProgressStyle::with_template(&format!("{{prefix}}: [{{bar:30}}] {{percent:>3}}% {{human_pos}}/{{human_len}} {unit} {{msg}} ETA {{eta}} [{{elapsed}}]"))
        .expect("valid template")
        .progress_chars("=> ")
}

/// A count without a total: a spinner and the message.
pub fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix}: {spinner} {msg} [{elapsed}]").expect("valid template")
}

fn regular_file_size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len())
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The furthest position of any open descriptor on each of `files`
/// (summed over the files).
fn positions(files: &[(PathBuf, u64)]) -> u64 {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else { return 0 };
    let mut furthest = vec![0u64; files.len()];
    for fd in fds.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else { continue };
        let Some(i) = files.iter().position(|(p, _)| *p == target) else { continue };
        let info = std::fs::read_to_string(Path::new("/proc/self/fdinfo").join(fd.file_name())).unwrap_or_default();
        if let Some(pos) = info.lines().find_map(|l| l.strip_prefix("pos:")).and_then(|v| v.trim().parse::<u64>().ok()) {
            furthest[i] = furthest[i].max(pos.min(files[i].1));
        }
    }
    furthest.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn file_positions_follow_reads() {
        let path = std::env::temp_dir().join(format!("fasthts-progress-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 10_000]).unwrap();
        let files = vec![(canonical(&path), 10_000)];
        let mut f = std::fs::File::open(&path).unwrap();
        let mut buf = vec![0u8; 4000];
        f.read_exact(&mut buf).unwrap();
        assert_eq!(positions(&files), 4000);
        drop(f);
        assert_eq!(positions(&files), 0);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn no_bar_off_a_terminal() {
        // Tests run with stderr captured or redirected: never a terminal.
        let bar = Bar::start("test", false, Source::FilePositions(vec![], None));
        assert!(bar.running.is_none() || io::stderr().is_terminal());
        assert!(Bar::start("test", true, Source::Inflated(vec![])).running.is_none());
    }
}
