//! What the workspace's tests share: the repository's paths and fixtures,
//! temporary directories, running commands with a time limit, samtools as
//! the reference, and small seeded inputs. (The CLI's integration tests add
//! the `fasthts` binary under test.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::rng::Rng;

/// The repository root. Read from the environment cargo gives the running
/// test (the tested crate's directory, `crates/NAME`), not from this
/// crate's compile-time path: a shared target directory may hold this
/// crate built from another clone, whose path would then be baked in.
pub fn repo_root() -> PathBuf {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    crate_dir.join("../..").canonicalize().unwrap()
}

/// The repository's test data directory, `tests/data` (see its README).
pub fn data_dir() -> PathBuf {
    repo_root().join("tests/data")
}

/// A file of [`data_dir`], e.g. `data("small.bam")` or `data("index/long.bam")`.
pub fn data(name: &str) -> PathBuf {
    data_dir().join(name)
}

/// The repository's golden data, `tests/data/golden` (reference tools'
/// outputs on small inputs; see its README).
pub fn golden_dir() -> PathBuf {
    data("golden")
}

/// The golden snp-pileup inputs and FACETS' outputs
/// (`tests/data/golden/snp-pileup`). Part of the repository: a checkout
/// without them is broken, and the test fails.
pub fn golden_snp_pileup() -> PathBuf {
    let d = golden_dir().join("snp-pileup");
    assert!(d.join("commands.txt").is_file(), "{}: golden snp-pileup data missing from the checkout", d.display());
    d
}

/// Whether the tests run under CI: `CI=true` (set by `.ci/run`, as by
/// most CI services).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The one way a test goes without something it compares against (a tool
/// such as samtools, khmer or bgzip, or reference data): returns
/// `available`. When it is false, under CI ([`under_ci`]) the test fails
/// naming what is missing: a CI run that skips its comparisons proves
/// nothing. Elsewhere the skip is noted on stderr and appended to the file
/// `$FASTHTS_SKIP_LOG` (scripts/test.sh lists them in its summary), and
/// the caller returns early.
pub fn require(available: bool, what: &str) -> bool {
    if available {
        return true;
    }
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    assert!(!under_ci(), "{test}: {what} is missing (CI=true: a test may not skip its comparison)");
    let line = format!("SKIPPED {test}: {what} is missing\n");
    eprint!("{line}");
    if let Some(log) = std::env::var_os("FASTHTS_SKIP_LOG") {
        use std::io::Write;
        // One short append per skip: lines from parallel tests stay whole.
        let _ = std::fs::OpenOptions::new().create(true).append(true).open(log).and_then(|mut f| f.write_all(line.as_bytes()));
    }
    false
}

/// Whether `program ARGS` runs and exits 0 (a tool's presence).
pub fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// samtools' own test files (Debian package samtools-test), or `None`
/// through [`require`].
pub fn samtools_test_data() -> Option<PathBuf> {
    let d = PathBuf::from("/usr/share/samtools/test");
    require(d.join("dat").is_dir(), "samtools' test files (Debian package samtools-test, /usr/share/samtools/test)").then_some(d)
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

/// Whether samtools is installed, through [`require`]: differential
/// tests return early without it, outside CI only.
pub fn have_samtools() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    require(*FOUND.get_or_init(|| runs("samtools", &["--version"])), "samtools (Debian package samtools)")
}

/// A temporary directory for a differential test, or `None` without
/// samtools (see [`have_samtools`]).
pub fn with_samtools(tag: &str) -> Option<TempDir> {
    have_samtools().then(|| TempDir::new(tag))
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

/// stdout as text, for messages.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file under `dir` (recursively) whose name ends with `suffix`, sorted.
pub fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Per-column counts from `samtools mpileup` output: depth, bases by letter
/// (A C G T N), deletions, ref-skips.
pub fn parse_mpileup(line: &str) -> (String, i64, [u32; 8]) {
    let f: Vec<&str> = line.split('\t').collect();
    let mut c = [0u32; 8];
    c[0] = f[3].parse().unwrap();
    // With nothing passing the quality filter samtools prints a lone `*`.
    let b = if c[0] == 0 { &[][..] } else { f[4].as_bytes() };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'^' => i += 1,
            b'$' => {}
            b'+' | b'-' => {
                let mut j = i + 1;
                let mut n = 0usize;
                while j < b.len() && b[j].is_ascii_digit() {
                    n = n * 10 + usize::from(b[j] - b'0');
                    j += 1;
                }
                i = j + n - 1;
            }
            b'*' | b'#' => c[6] += 1,
            b'>' | b'<' => c[7] += 1,
            x => c[base_slot(x)] += 1,
        }
        i += 1;
    }
    (f[0].to_string(), f[1].parse().unwrap(), c)
}

/// Where [`parse_mpileup`] counts a base: 1 to 4 for A, C, G, T (either
/// case), 5 for anything else.
pub fn base_slot(base: u8) -> usize {
    match base.to_ascii_uppercase() {
        b'A' => 1,
        b'C' => 2,
        b'G' => 3,
        b'T' => 4,
        _ => 5,
    }
}

/// `n` random bases (`ACGT`).
pub fn random_bases(rng: &mut Rng, n: usize) -> String {
    (0..n).map(|_| b"ACGT"[rng.below(4) as usize] as char).collect()
}

/// FASTQ of `reads` random reads of `len` bases named `{name}0`,
/// `{name}1`, ..., all of quality `I`.
pub fn random_fastq(seed: u64, reads: usize, len: usize, name: &str) -> String {
    let mut rng = Rng::new(seed);
    let qual = "I".repeat(len);
    (0..reads).map(|i| format!("@{name}{i}\n{}\n+\n{qual}\n", random_bases(&mut rng, len))).collect()
}
