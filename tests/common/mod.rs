//! Helpers shared by the integration tests: running fasthts and samtools,
//! temporary directories, the file corpus.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The fasthts binary under test.
pub fn fasthts() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fasthts"))
}

/// The seeded SAM generator (crates/fasthts-testgen), built beside the
/// binary under test by `cargo test --workspace`; `None` (with a note)
/// when it has not been built.
pub fn testgen() -> Option<Command> {
    let exe = Path::new(env!("CARGO_BIN_EXE_fasthts")).with_file_name("fasthts-testgen");
    if exe.exists() {
        Some(Command::new(exe))
    } else {
        eprintln!("{} not built: skipping generated-data checks (run cargo test --workspace)", exe.display());
        None
    }
}

/// Whether samtools is installed; differential tests print a note and
/// pass vacuously without it (CI installs it, see `.ci/run`).
pub fn have_samtools() -> bool {
    let ok = Command::new("samtools").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("samtools not found: skipping differential checks");
    }
    ok
}

/// Runs a command to completion, failing the test if it takes longer than
/// `limit` (a hang is a bug too).
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let start = Instant::now();
    // Drain pipes on threads so a chatty child cannot block.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("command timed out after {limit:?}: {cmd:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { status, stdout: t_out.join().unwrap(), stderr: t_err.join().unwrap() }
}

/// Runs `cmd` with `input` written to its standard input (from another
/// thread, so a child that writes while reading cannot deadlock).
pub fn run_with_stdin(mut cmd: Command, input: Vec<u8>) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer thread").expect("write to child's stdin");
    out
}

/// Runs and returns output, with a generous timeout.
pub fn run(cmd: Command) -> Output {
    run_with_timeout(cmd, Duration::from_secs(120))
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("fasthts-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// BAM files to compare on: the repository fixtures, the shared golden
/// tumour/normal pair when present, and samtools' own test BAMs when the
/// samtools-test package is installed.
pub fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut add_dir = |dir: &Path| {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut v: Vec<PathBuf> =
                rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "bam")).collect();
            v.sort();
            files.extend(v);
        }
    };
    add_dir(&repo_root().join("tests/data"));
    add_dir(&repo_root().join("../shared/golden/snp-pileup"));
    for sub in ["dat", "bedcov", "quickcheck", "mpileup", "split", "stat", "merge", "index", "depth", "coverage", "markdup", "sort", "view"]
    {
        add_dir(&Path::new("/usr/share/samtools/test").join(sub));
    }
    files
}

/// stdout as text, for messages.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
