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
/// tumour/normal pair when present, art_illumina's alignments ([`art_bam`]),
/// and samtools' own test BAMs when the samtools-test package is installed.
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
    files.extend(art_bam());
    files
}

/// stdout as text, for messages.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A coordinate-sorted BAM of the alignments art_illumina writes for the
/// paired 100 bp reads it simulates over a seeded genome of three
/// references (`=`/`X` CIGARs, proper pairs on both strands): a simulator's
/// output rather than our generator's. Made once in cargo's test scratch
/// directory and reused; `None` (with a note) without art_illumina (Debian
/// package art-nextgen-simulation-tools) or samtools.
pub fn art_bam() -> Option<PathBuf> {
    static BAM: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BAM.get_or_init(make_art_bam).clone()
}

/// Whether a SAM line's CIGAR consumes as many query bases as its SEQ has.
fn cigar_fits_sequence(line: &str) -> bool {
    let fields: Vec<&str> = line.split('\t').collect();
    let (cigar, seq) = (fields[5], fields[9]);
    if cigar == "*" || seq == "*" {
        return true;
    }
    let mut query = 0;
    let mut len = 0;
    for c in cigar.bytes() {
        if c.is_ascii_digit() {
            len = len * 10 + usize::from(c - b'0');
        } else {
            if b"MIS=X".contains(&c) {
                query += len;
            }
            len = 0;
        }
    }
    query == seq.len()
}

fn make_art_bam() -> Option<PathBuf> {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let done = scratch.join("art-corpus-v1");
    let bam = done.join("art.bam");
    if bam.exists() {
        return Some(bam);
    }
    if Command::new("art_illumina").output().is_err() || !have_samtools() {
        eprintln!("art_illumina or samtools not found: the simulator's BAM is left out of the corpus");
        return None;
    }
    // Built aside and renamed into place, so that test processes running at
    // once never see a half-made BAM.
    let work = scratch.join(format!("art-corpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let mut fasta = String::new();
    let mut x = 0x2545f4914f6cdd1du64;
    for (name, len) in [("chrA", 120_000), ("chrB", 60_000), ("chrC", 25_000)] {
        fasta.push_str(&format!(">{name}\n"));
        for i in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            fasta.push(b"ACGT"[(x >> 32) as usize % 4] as char);
            if i % 60 == 59 {
                fasta.push('\n');
            }
        }
        fasta.push('\n');
    }
    std::fs::write(work.join("ref.fa"), fasta).unwrap();
    let mut art = Command::new("art_illumina");
    art.current_dir(&work).args(["-q", "-ss", "HS25", "-sam", "-i", "ref.fa", "-p", "-l", "100", "-f", "8", "-m", "300", "-s", "30"]);
    art.args(["-rs", "7", "-na", "-o", "art"]);
    let out = run(art);
    assert!(out.status.success(), "art_illumina failed: {}", text(&out.stderr));
    // art 2016.06.05 writes a few records whose CIGAR covers one base more
    // than the read (`101=` for 100 bases) where a read meets a reference
    // end; samtools rejects them, so they are left out.
    let sam = std::fs::read_to_string(work.join("art.sam")).unwrap();
    let valid: String = sam.lines().filter(|line| line.starts_with('@') || cigar_fits_sequence(line)).flat_map(|l| [l, "\n"]).collect();
    assert!(valid.len() > sam.len() * 9 / 10, "art_illumina's SAM is mostly invalid");
    std::fs::write(work.join("art.sam"), valid).unwrap();
    let mut sort = Command::new("samtools");
    sort.current_dir(&work).args(["sort", "--no-PG", "-o", "art.bam", "art.sam"]);
    let out = run(sort);
    assert!(out.status.success(), "samtools sort failed: {}", text(&out.stderr));
    for name in ["ref.fa", "art.sam", "art1.fq", "art2.fq"] {
        let _ = std::fs::remove_file(work.join(name));
    }
    if std::fs::rename(&work, &done).is_err() {
        // Another test process got there first.
        let _ = std::fs::remove_dir_all(&work);
    }
    Some(bam)
}
