//! Running fasthts under limits and measuring it: wall-clock timeout,
//! address-space limit, peak RSS from the kernel's accounting (wait4).

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

/// Sets RLIMIT_AS (bytes) and RLIMIT_NOFILE in the child before exec.
pub fn limit(cmd: &mut Command, address_space: Option<u64>, open_files: Option<u64>) {
    // SAFETY: only async-signal-safe setrlimit calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(v) = address_space {
                let r = libc::rlimit { rlim_cur: v, rlim_max: v };
                if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(n) = open_files {
                let r = libc::rlimit { rlim_cur: n, rlim_max: n };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Runs `cmd` (stdin closed) to completion or `timeout`, whichever comes
/// first, and reports its status, output and peak RSS.
pub fn run_measured(mut cmd: Command, timeout: Duration) -> Measured {
    let start = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
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
    let (code, signal) = decode(status);
    Measured {
        code,
        signal,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        max_rss_kib: usage.ru_maxrss,
        elapsed: start.elapsed(),
        timed_out,
    }
}

/// Waits for `pid` with wait4, killing it once `timeout` has passed.
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
            // SAFETY: signalling our own unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
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
