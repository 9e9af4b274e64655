//! Running fasthts under limits and measuring it: wall-clock timeout,
//! address-space limit, peak RSS as GNU time reports it.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a measured run ended.
#[derive(Debug)]
pub struct Measured {
    /// Exit code, when the process exited.
    pub code: Option<i32>,
    /// Terminating signal, when killed by one.
    pub signal: Option<i32>,
    /// Drained so that the child cannot block on a full pipe; no test reads it yet.
    #[allow(dead_code)]
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Peak resident set size in KiB.
    pub max_rss_kib: i64,
    pub elapsed: Duration,
    /// Killed by us after the time limit.
    pub timed_out: bool,
}

impl Measured {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Address-space limit for runs (`ulimit -v`): large enough for the thread
/// stacks and allocator arenas of a normal run, small enough that an
/// allocation sized from a corrupt length fails instead of succeeding lazily.
pub const ADDRESS_SPACE_LIMIT: u64 = 4 << 30;

/// Resource limits a measured run starts under (`ulimit -v`, `ulimit -n`).
#[derive(Clone, Copy, Default)]
pub struct Limits {
    /// RLIMIT_AS in bytes.
    pub address_space: Option<u64>,
    /// RLIMIT_NOFILE.
    pub open_files: Option<u64>,
}

impl Limits {
    /// Sets the limits in `cmd`'s process before exec; its children
    /// inherit them.
    fn apply(self, cmd: &mut Command) {
        // SAFETY: only async-signal-safe setrlimit calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let set = |resource, v: u64| {
                    let r = libc::rlimit { rlim_cur: v, rlim_max: v };
                    if libc::setrlimit(resource, &r) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                };
                if let Some(v) = self.address_space {
                    set(libc::RLIMIT_AS, v)?;
                }
                if let Some(n) = self.open_files {
                    set(libc::RLIMIT_NOFILE, n)?;
                }
                Ok(())
            });
        }
    }
}

/// GNU time, which reports its child's own peak RSS. wait4 on a child of
/// this test process cannot: Linux records the parent's high-water RSS in
/// the child when it execs (the fork's copy of the parent's memory), so
/// every run looked as big as the test binary was at that moment (over
/// 1 GiB while other tests held their data: kmer runs of a few MiB were
/// reported at 1.0-1.3 GiB). time's own memory is small, so the child it
/// forks starts clean.
const GNU_TIME: &str = "/usr/bin/time";

/// Runs `cmd` (stdin closed) under `limits` to completion or `timeout`,
/// whichever comes first, and reports its status, output and peak RSS.
pub fn run_measured(cmd: Command, limits: Limits, timeout: Duration) -> Measured {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let have_time = fasthts_testgen::support::require(Path::new(GNU_TIME).exists(), "GNU time (Debian package time), for peak RSS");
    let report = std::env::temp_dir().join(format!(
        "fasthts-measured-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let mut wrapped = if have_time {
        let mut w = Command::new(GNU_TIME);
        w.arg("-f").arg("%M").arg("-o").arg(&report).arg("--").arg(cmd.get_program()).args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => w.env(k, v),
                None => w.env_remove(k),
            };
        }
        if let Some(d) = cmd.get_current_dir() {
            w.current_dir(d);
        }
        w
    } else {
        cmd
    };
    limits.apply(&mut wrapped);
    // Its own process group: a timeout kills time and the command alike.
    wrapped.process_group(0);
    let start = Instant::now();
    let mut child = wrapped.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).ok();
        v
    });
    let (status, usage, timed_out) = wait_rusage(pid, start, timeout);
    // The process is reaped by wait4: std must not wait for it again.
    std::mem::forget(child);
    let (mut code, mut signal) = decode(status);
    let mut max_rss_kib = usage.ru_maxrss;
    if have_time {
        // time writes "Command terminated by signal N" (then exits 128+N)
        // or "Command exited with non-zero status N", then the figure.
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        let _ = std::fs::remove_file(&report);
        max_rss_kib = text.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
        if let Some(n) = text.lines().find_map(|l| l.strip_prefix("Command terminated by signal ")) {
            (code, signal) = (None, n.trim().parse().ok());
        }
    }
    Measured {
        code,
        signal,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        max_rss_kib,
        elapsed: start.elapsed(),
        timed_out,
    }
}

/// Waits for `pid` with wait4, killing its process group once `timeout`
/// has passed.
pub fn wait_rusage(pid: libc::pid_t, start: Instant, timeout: Duration) -> (libc::c_int, libc::rusage, bool) {
    let mut timed_out = false;
    loop {
        let mut status = 0;
        // SAFETY: plain syscall on our own child with valid out-pointers.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if timed_out { 0 } else { libc::WNOHANG };
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if r == pid {
            return (status, usage, timed_out);
        }
        assert!(r == 0, "wait4 failed: {}", std::io::Error::last_os_error());
        if start.elapsed() > timeout {
            // SAFETY: signalling the process group of our own unreaped
            // child (it leads the group, so the id is not reused).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            timed_out = true;
        } else {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

pub fn decode(status: libc::c_int) -> (Option<i32>, Option<i32>) {
    if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    }
}

/// Every entry under `dir`, recursively, as paths relative to it (sorted).
pub fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            if p.is_dir() {
                walk(base, &p, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Sets the modification time of `path` to `secs_ago` seconds in the past.
pub fn age(path: &Path, secs_ago: u64) {
    let t = std::time::SystemTime::now() - Duration::from_secs(secs_ago);
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// The peak RSS of a run is the command's own: a small command stays small
/// while this test process holds much more, and a big one is seen big.
#[test]
fn peak_rss_is_the_commands_own_not_the_test_process() {
    let held: Vec<u8> = vec![1; 600 << 20];
    let mut small = Command::new("sh");
    small.args(["-c", "exit 0"]);
    let small = run_measured(small, Limits::default(), Duration::from_secs(60));
    let mut big = Command::new("python3");
    big.args(["-c", "x = b'a' * (300 << 20)"]);
    let big = run_measured(big, Limits::default(), Duration::from_secs(60));
    assert!(held.iter().step_by(4096).all(|&b| b == 1));
    assert!(small.success() && big.success(), "{} {}", small.stderr_text(), big.stderr_text());
    assert!(small.max_rss_kib < 100 << 10, "sh -c 'exit 0' reported at {} KiB", small.max_rss_kib);
    assert!(big.max_rss_kib > 300 << 10, "300 MiB of bytes reported at {} KiB", big.max_rss_kib);
    let mut killed = Command::new("sh");
    killed.args(["-c", "kill -SEGV $$"]);
    let killed = run_measured(killed, Limits::default(), Duration::from_secs(60));
    assert_eq!((killed.code, killed.signal), (None, Some(libc::SIGSEGV)));
}
