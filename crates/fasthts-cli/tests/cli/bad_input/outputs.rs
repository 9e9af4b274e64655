//! Issue 19, outputs and processes: special files and symbolic links are
//! written, never replaced; an output that is an input is refused; closed
//! and full streams end a run cleanly; messages name the user's paths;
//! what a killed run leaves is removed by the next; signals ignored at
//! start stay ignored; `-@` is bounded; memory limits fail monotonically.

use crate::common::*;
use crate::harness::{listing, run_measured, Limits};
use std::fs;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut c = fasthts();
    c.current_dir(dir).args(args).stdin(Stdio::null());
    run_with_timeout(c, Duration::from_secs(60))
}

/// Runs `args` in `dir` with stdout to the file `stdout`.
fn run_to_file(dir: &Path, args: &[&str], stdout: &Path) -> Output {
    let file = fs::File::create(stdout).unwrap();
    fasthts().current_dir(dir).args(args).stdin(Stdio::null()).stdout(file).stderr(Stdio::piped()).output().unwrap()
}

fn assert_ok(what: &str, out: &Output) {
    assert!(out.status.success(), "{what}: {:?} {}", out.status, text(&out.stderr));
}

/// One error line (after khmer's chatter, for the k-mer commands) that
/// contains each of `words`, a non-zero status, no panic.
fn assert_one_error(what: &str, out: &Output, words: &[&str]) {
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{what}: succeeded");
    assert_ne!(out.status.code(), Some(101), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    let last = err.lines().last().unwrap_or_default();
    for w in words {
        assert!(last.contains(w), "{what}: {w:?} not in the error line {last:?} (stderr {err:?})");
    }
    assert!(!err.contains(".tmp."), "{what}: names a temporary: {err}");
}

/// small.bam and reads for the k-mer commands, copied into a fresh directory.
fn workdir(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    fs::copy(data("small.bam"), dir.path("in.bam")).unwrap();
    fs::copy(data("small.bam.bai"), dir.path("in.bam.bai")).unwrap();
    fs::write(dir.path("reads.fa"), random_fastq(7, 300, 80, "r")).unwrap();
    fs::write(dir.path("sites.vcf"), "#CHROM\tPOS\tID\tREF\tALT\nchr1\t1000\t.\tA\tC\nchr1\t5000\t.\tG\tT\nchr2\t2000\t.\tC\tA\n").unwrap();
    dir
}

/// [`write_small_bam_20_times`] in `dir`.
fn big_bam(dir: &TempDir) -> PathBuf {
    let path = dir.path("big.bam");
    write_small_bam_20_times(&path);
    path
}

#[test]
fn special_files_are_written_directly_in_every_command() {
    let dir = workdir("out-special");
    let d = &dir.0;
    // sort -o /dev/stdout > out.bam: the BAM in out.bam, /dev/stdout untouched.
    assert_ok("sort -o file", &run_in(d, &["sort", "--no-PG", "-o", "ref.bam", "in.bam"]));
    assert_ok("sort -o /dev/stdout", &run_to_file(d, &["sort", "--no-PG", "-o", "/dev/stdout", "in.bam"], &dir.path("out.bam")));
    assert_eq!(fs::read(dir.path("out.bam")).unwrap(), fs::read(dir.path("ref.bam")).unwrap(), "sort -o /dev/stdout");
    assert!(fs::symlink_metadata("/dev/stdout").unwrap().file_type().is_symlink(), "/dev/stdout replaced");
    assert_ok("sort -o /dev/fd/1", &run_to_file(d, &["sort", "--no-PG", "-o", "/dev/fd/1", "in.bam"], &dir.path("fd.bam")));
    assert_eq!(fs::read(dir.path("fd.bam")).unwrap(), fs::read(dir.path("ref.bam")).unwrap(), "sort -o /dev/fd/1");
    // index -o /dev/stdout, and sort --write-index with the index to /dev/stdout.
    assert_ok("index", &run_in(d, &["index", "-o", "ref.bai", "ref.bam"]));
    assert_ok("index -o /dev/stdout", &run_to_file(d, &["index", "-o", "/dev/stdout", "ref.bam"], &dir.path("out.bai")));
    assert_eq!(fs::read(dir.path("out.bai")).unwrap(), fs::read(dir.path("ref.bai")).unwrap(), "index -o /dev/stdout");
    let named = "w.bam##idx##/dev/stdout";
    assert_ok("--write-index to stdout", &run_to_file(d, &["sort", "--no-PG", "--write-index", "-o", named, "in.bam"], &dir.path("w.csi")));
    assert_ok("--write-index", &run_in(d, &["sort", "--no-PG", "--write-index", "-o", "v.bam", "in.bam"]));
    assert_eq!(fs::read(dir.path("w.csi")).unwrap(), fs::read(dir.path("v.bam.csi")).unwrap(), "--write-index to /dev/stdout");
    // snp-pileup's CSV to /dev/stdout (FACETS refuses an existing output
    // file; a device is not one).
    assert_ok("snp-pileup", &run_in(d, &["snp-pileup", "sites.vcf", "ref.csv", "in.bam"]));
    assert_ok("snp-pileup /dev/stdout", &run_to_file(d, &["snp-pileup", "sites.vcf", "/dev/stdout", "in.bam"], &dir.path("out.csv")));
    // Then FACETS' "Finished in" line, on stdout too.
    let csv = fs::read(dir.path("out.csv")).unwrap();
    assert!(csv.starts_with(&fs::read(dir.path("ref.csv")).unwrap()), "snp-pileup to /dev/stdout: {}", text(&csv));
    assert!(text(&csv).ends_with(" seconds.\n"), "{}", text(&csv));
    // k-mer outputs: normalize -o /dev/fd/1 and /dev/stdout, abundance-dist to /dev/stdout.
    let k = ["-k", "17", "-x", "1e5", "-N", "2", "-q"];
    let norm = |o: &'static str| [&["kmer", "normalize"][..], &k, &["-o", o, "reads.fa"]].concat();
    assert_ok("normalize", &run_in(d, &norm("ref.keep")));
    for o in ["/dev/stdout", "/dev/fd/1"] {
        let out = run_to_file(d, &norm(o), &dir.path("out.keep"));
        assert_ok(o, &out);
        assert_eq!(fs::read(dir.path("out.keep")).unwrap(), fs::read(dir.path("ref.keep")).unwrap(), "normalize -o {o}");
    }
    assert_ok("count", &run_in(d, &[&["kmer", "count"][..], &k, &["t.ct", "reads.fa"]].concat()));
    assert_ok("abundance-dist", &run_in(d, &["kmer", "abundance-dist", "-q", "t.ct", "reads.fa", "ref.hist"]));
    let out = run_to_file(d, &["kmer", "abundance-dist", "-q", "t.ct", "reads.fa", "/dev/stdout"], &dir.path("out.hist"));
    assert_ok("abundance-dist /dev/stdout", &out);
    assert_eq!(fs::read(dir.path("out.hist")).unwrap(), fs::read(dir.path("ref.hist")).unwrap());
    // A FIFO with a reader: written through, still a FIFO afterwards.
    let fifo = dir.path("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for args in [&["sort", "--no-PG", "-o", "fifo", "in.bam"][..], &["index", "-o", "fifo", "ref.bam"]] {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).unwrap())
        };
        assert_ok(args[0], &run_in(d, args));
        let got = reader.join().unwrap();
        let want = if args[0] == "sort" { "ref.bam" } else { "ref.bai" };
        assert_eq!(got, fs::read(dir.path(want)).unwrap(), "{args:?} into a FIFO");
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "FIFO replaced");
    }
    // Nothing hidden left behind.
    assert!(listing(d).iter().all(|n| !n.contains(".tmp.") && !n.contains("fasthts-sort")), "{:?}", listing(d));
}

#[test]
fn symbolic_links_are_written_through_not_replaced() {
    let dir = workdir("out-links");
    let d = &dir.0;
    assert_ok("sort", &run_in(d, &["sort", "--no-PG", "-o", "ref.bam", "in.bam"]));
    fs::create_dir(dir.path("sub")).unwrap();
    fs::write(dir.path("sub/old.bam"), b"old").unwrap();
    std::os::unix::fs::symlink("sub/old.bam", dir.path("existing.bam")).unwrap();
    std::os::unix::fs::symlink("sub/new.bam", dir.path("dangling.bam")).unwrap();
    for (link, target) in [("existing.bam", "sub/old.bam"), ("dangling.bam", "sub/new.bam")] {
        assert_ok(link, &run_in(d, &["sort", "--no-PG", "-o", link, "in.bam"]));
        assert!(fs::symlink_metadata(dir.path(link)).unwrap().file_type().is_symlink(), "{link} replaced");
        assert_eq!(fs::read(dir.path(target)).unwrap(), fs::read(dir.path("ref.bam")).unwrap(), "{link}");
    }
    std::os::unix::fs::symlink("sub/idx.bai", dir.path("idx.bai")).unwrap();
    assert_ok("index", &run_in(d, &["index", "-o", "idx.bai", "ref.bam"]));
    assert!(fs::symlink_metadata(dir.path("idx.bai")).unwrap().file_type().is_symlink());
    assert!(fs::metadata(dir.path("sub/idx.bai")).unwrap().len() > 0);
    std::os::unix::fs::symlink("sub/reads.keep", dir.path("link.keep")).unwrap();
    let out = run_in(d, &["kmer", "normalize", "-q", "-k", "17", "-x", "1e5", "-N", "2", "-o", "link.keep", "reads.fa"]);
    assert_ok("normalize -o link", &out);
    assert!(fs::symlink_metadata(dir.path("link.keep")).unwrap().file_type().is_symlink());
    assert!(fs::metadata(dir.path("sub/reads.keep")).unwrap().len() > 0);
    assert!(listing(d).iter().chain(&listing(&dir.path("sub"))).all(|n| !n.contains(".tmp.")));
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
    let dir = workdir("out-same");
    let d = &dir.0;
    fs::hard_link(dir.path("in.bam"), dir.path("hard.bam")).unwrap();
    std::os::unix::fs::symlink("in.bam", dir.path("soft.bam")).unwrap();
    let bam = fs::read(dir.path("in.bam")).unwrap();
    let reads = fs::read(dir.path("reads.fa")).unwrap();
    let before = listing(d);
    let k = ["-q", "-k", "17", "-x", "1e5", "-N", "2"];
    let cases: Vec<(Vec<&str>, [&str; 2])> = vec![
        (vec!["index", "-o", "in.bam", "in.bam"], ["in.bam", "in.bam"]),
        (vec!["index", "-o", "hard.bam", "in.bam"], ["hard.bam", "in.bam"]),
        // (sort -o soft.bam in.bam sorts in place, as samtools: sort::sorts_in_place_as_samtools)
        (vec!["view", "-b", "-o", "soft.bam", "in.bam"], ["soft.bam", "in.bam"]),
        (vec!["sort", "--write-index", "-o", "o.bam##idx##in.bam", "in.bam"], ["in.bam", "in.bam"]),
        ([&["kmer", "count"][..], &k, &["reads.fa", "reads.fa"]].concat(), ["reads.fa", "reads.fa"]),
        ([&["kmer", "normalize"][..], &k, &["-o", "reads.fa", "reads.fa"]].concat(), ["reads.fa", "reads.fa"]),
        ([&["kmer", "normalize"][..], &k, &["-s", "reads.fa", "-o", "x", "reads.fa"]].concat(), ["reads.fa", "reads.fa"]),
        ([&["kmer", "trim-low-abund"][..], &k, &["-o", "reads.fa", "reads.fa"]].concat(), ["reads.fa", "reads.fa"]),
    ];
    for (args, [output, input]) in &cases {
        let out = run_in(d, args);
        assert_one_error(&format!("{args:?}"), &out, &[output, input, "same file"]);
        assert_eq!(fs::read(dir.path("in.bam")).unwrap(), bam, "{args:?}");
        assert_eq!(fs::read(dir.path("reads.fa")).unwrap(), reads, "{args:?}");
        assert_eq!(listing(d), before, "{args:?} wrote something");
    }
}

#[test]
fn messages_name_the_users_path_never_a_temporary() {
    let dir = workdir("out-names");
    let d = &dir.0;
    let k = ["-q", "-k", "17", "-x", "1e5", "-N", "2"];
    for args in [
        vec!["sort", "-o", "nodir/x.bam", "in.bam"],
        vec!["index", "-o", "nodir/x.bai", "in.bam"],
        vec!["snp-pileup", "sites.vcf", "nodir/x.csv", "in.bam"],
        [&["kmer", "count"][..], &k, &["nodir/x.ct", "reads.fa"]].concat(),
    ] {
        let out = run_in(d, &args);
        assert_one_error(&format!("{args:?}"), &out, &["nodir/x", "No such file or directory"]);
    }
    // khmer opens -o while parsing its arguments: argparse's error, status 2.
    for cmd in ["normalize", "trim-low-abund"] {
        let out = run_in(d, &[&["kmer", cmd][..], &k, &["-o", "nodir/x", "reads.fa"]].concat());
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", text(&out.stderr));
        assert_one_error(cmd, &out, &["nodir/x", "No such file or directory"]);
    }
    assert!(listing(d).iter().all(|n| !n.contains(".tmp.") && !n.ends_with(".info")), "{:?}", listing(d));
}

/// The write end of a pipe whose read end is closed.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the array; the read end is closed at once and the
    // write end handed to Stdio, which owns it.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        <Stdio as std::os::fd::FromRawFd>::from_raw_fd(fds[1])
    }
}

#[test]
fn a_closed_or_full_stdout_or_stderr_is_not_a_crash() {
    let dir = workdir("out-closed");
    let d = &dir.0;
    for n in 0..50 {
        fs::write(dir.path(&format!("bad{n}.bam")), b"not a bam").unwrap();
    }
    let bad: Vec<String> = (0..50).map(|n| format!("bad{n}.bam")).collect();
    let quickcheck: Vec<&str> = ["quickcheck", "-v"].into_iter().chain(bad.iter().map(String::as_str)).collect();
    let k = ["-q", "-k", "17", "-x", "1e5", "-N", "2"];
    assert_ok("count", &run_in(d, &[&["kmer", "count"][..], &k, &["t.ct", "reads.fa"]].concat()));
    let writers: Vec<Vec<&str>> = vec![
        vec!["flagstat", "in.bam"],
        vec!["idxstats", "in.bam"],
        vec!["sort", "-o", "-", "in.bam"],
        vec!["sort", "-O", "sam", "-o", "/dev/stdout", "in.bam"],
        vec!["index", "-o", "/dev/stdout", "in.bam"],
        vec!["snp-pileup", "sites.vcf", "/dev/stdout", "in.bam"],
        [&["kmer", "normalize"][..], &k, &["-o", "-", "reads.fa"]].concat(),
        vec!["kmer", "abundance-dist", "-q", "t.ct", "reads.fa", "-"],
        quickcheck.clone(),
    ];
    let died_quietly = |what: &str, status: std::process::ExitStatus| {
        // samtools dies of SIGPIPE; a quiet exit is fine too; never a panic (101).
        assert!(status.signal() == Some(libc::SIGPIPE) || matches!(status.code(), Some(0 | 1 | 4 | 8)), "{what}: {status:?}");
    };
    for args in &writers {
        let what = format!("{args:?}");
        // Stdout closed.
        let out = fasthts().current_dir(d).args(args).stdin(Stdio::null()).stdout(closed_pipe()).stderr(Stdio::piped()).output().unwrap();
        died_quietly(&what, out.status);
        assert!(!text(&out.stderr).contains("panicked"), "{what}: {}", text(&out.stderr));
        // Stdout full: one line naming it (quickcheck's names are not its output).
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = fasthts().current_dir(d).args(args).stdin(Stdio::null()).stdout(full).stderr(Stdio::piped()).output().unwrap();
        if args[0] == "quickcheck" {
            assert!(!text(&out.stderr).contains("panicked") && out.status.code() != Some(101), "{what}: {}", text(&out.stderr));
        } else {
            assert_one_error(&format!("{what} > /dev/full"), &out, &["No space left on device"]);
            assert!(text(&out.stderr).contains("/dev/"), "{what}: the error names stdout: {}", text(&out.stderr));
        }
    }
    // Stderr closed or full, for a failing command and a chatty one.
    let noisy: Vec<Vec<&str>> = vec![
        vec!["flagstat", "missing.bam"],
        quickcheck,
        [&["kmer", "count"][..], &["-k", "17", "-x", "1e5", "t2.ct", "reads.fa"]].concat(),
    ];
    for args in &noisy {
        let what = format!("{args:?} 2>closed");
        let status = fasthts().current_dir(d).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(closed_pipe()).status().unwrap();
        died_quietly(&what, status);
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let status = fasthts().current_dir(d).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(full).status().unwrap();
        assert_ne!(status.code(), Some(101), "{args:?} 2>/dev/full");
        assert!(status.signal().is_none(), "{args:?} 2>/dev/full: {status:?}");
    }
    assert!(listing(d).iter().all(|n| !n.contains(".tmp.") && !n.contains("fasthts-sort")), "{:?}", listing(d));
}

/// Starts `sort -m 1M -@ 1 ARGS -o - big.bam` with its stdout a pipe nobody
/// reads: once the pipe is full the sort waits in its final merge, with its
/// run directory in place. Returns the child and that directory (found
/// under `dir`, named after `stem`).
fn blocked_sort(d: &Path, big: &Path, extra: &[&str], look_in: &Path, stem: &str) -> (Child, PathBuf) {
    blocked_sort_with(fasthts(), d, big, extra, look_in, stem)
}

fn blocked_sort_with(mut cmd: Command, d: &Path, big: &Path, extra: &[&str], look_in: &Path, stem: &str) -> (Child, PathBuf) {
    cmd.current_dir(d).args(["sort", "--no-PG", "-m", "1M", "-@", "1"]).args(extra).args(["-o", "-"]).arg(big);
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let want = format!("{stem}{}.runs", child.id());
    let start = Instant::now();
    loop {
        let runs = look_in.join(&want);
        if fs::read_dir(&runs).is_ok_and(|r| r.count() >= 2) {
            return (child, runs);
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("sort ended ({status:?}) before {want} appeared in {}: {:?}", look_in.display(), listing(look_in));
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no {want} in {}: {:?}", look_in.display(), listing(look_in));
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn sort_t_puts_runs_inside_an_existing_directory_and_the_next_run_removes_what_kill_9_left() {
    let dir = TempDir::new("out-runs");
    let d = &dir.0;
    let big = big_bam(&dir);
    fs::create_dir(dir.path("tmp")).unwrap();
    // -T DIR (existing): inside it, as samtools' DIR/samtools.PID.*.tmp.
    let (mut child, runs) = blocked_sort(d, &big, &["-T", "tmp"], &dir.path("tmp"), "fasthts-sort.");
    assert!(fs::read_dir(&runs).unwrap().all(|e| e.unwrap().file_name().to_string_lossy().ends_with(".run")));
    child.kill().unwrap(); // SIGKILL: nothing can clean up
    child.wait().unwrap();
    assert!(runs.exists(), "kill -9 leaves the run directory (documented)");
    // -T PREFIX (not a directory): named after it.
    let (mut child, prefixed) = blocked_sort(d, &big, &["-T", "tmp/pre"], &dir.path("tmp"), "pre.fasthts-sort.");
    // A live sort's runs are never removed by another run.
    assert_ok("sort -T tmp", &run_in(d, &["sort", "-m", "1M", "-T", "tmp", "-o", "a.bam", "big.bam"]));
    assert!(!runs.exists(), "the next run removes a dead sort's run directory");
    assert!(prefixed.exists(), "a live sort's run directory was removed");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ok("sort -T tmp/pre", &run_in(d, &["sort", "-m", "1M", "-T", "tmp/pre", "-o", "a.bam", "big.bam"]));
    assert_eq!(listing(&dir.path("tmp")), Vec::<String>::new());
    // The default prefix is the output's name: a killed sort's runs and
    // hidden output, removed by the next sort to that output.
    // (`-o -`: the prefix `fasthts-sort` in the working directory.)
    let (mut child, beside) = blocked_sort(d, &big, &[], d, "fasthts-sort.fasthts-sort.");
    child.kill().unwrap();
    child.wait().unwrap();
    let dead = child.id();
    fs::write(dir.path(&format!(".a.bam.tmp.{dead}")), b"partial").unwrap();
    fs::write(dir.path(".a.bam.tmp.1"), b"pid 1 is alive").unwrap();
    let out = run_in(d, &["sort", "-m", "1M", "-o", "a.bam", "big.bam"]);
    assert_ok("sort", &out);
    assert!(beside.exists(), "only a sort with the same prefix removes a run directory");
    assert_ok("sort -o -", &run_in(d, &["sort", "-m", "1M", "-o", "-", "big.bam"]));
    assert!(!beside.exists(), "a dead sort's runs of the prefix `fasthts-sort` stay");
    assert!(!dir.path(&format!(".a.bam.tmp.{dead}")).exists(), "a dead process's temporary output stays");
    assert!(dir.path(".a.bam.tmp.1").exists(), "a live process's temporary was removed");
}

#[test]
fn stale_temporaries_of_killed_runs_are_removed_by_the_next_run_to_the_same_output() {
    let dir = workdir("out-stale");
    let d = &dir.0;
    let dead = {
        let mut c = Command::new("true").spawn().unwrap();
        let id = c.id();
        c.wait().unwrap();
        id
    };
    let k = ["-q", "-k", "17", "-x", "1e5", "-N", "2"];
    for (args, output) in [
        (vec!["sort", "-o", "s.bam", "in.bam"], "s.bam"),
        (vec!["index", "-o", "i.bai", "in.bam"], "i.bai"),
        (vec!["snp-pileup", "sites.vcf", "p.csv", "in.bam"], "p.csv"),
        ([&["kmer", "count"][..], &k, &["t.ct", "reads.fa"]].concat(), "t.ct"),
        ([&["kmer", "normalize"][..], &k, &["-o", "n.keep", "reads.fa"]].concat(), "n.keep"),
    ] {
        let stale = dir.path(&format!(".{output}.tmp.{dead}"));
        let live = dir.path(&format!(".{output}.tmp.1"));
        fs::write(&stale, b"left by kill -9").unwrap();
        fs::write(&live, b"another live process's").unwrap();
        assert_ok(output, &run_in(d, &args));
        assert!(!stale.exists(), "{args:?}: {} left", stale.display());
        assert!(live.exists(), "{args:?}: removed a live process's temporary");
        fs::remove_file(&live).unwrap();
    }
}

#[test]
fn a_sort_that_fails_early_removes_its_run_directory() {
    let dir = TempDir::new("out-nofile");
    let d = &dir.0;
    let big = big_bam(&dir);
    fs::create_dir(dir.path("tmp")).unwrap();
    let mut failed = 0;
    for n in 4..=12u64 {
        let mut c = fasthts();
        c.current_dir(d).args(["sort", "-m", "1M", "-@", "1", "-T", "tmp", "-o", "o.bam"]).arg(&big);
        let m = run_measured(c, Limits { address_space: None, open_files: Some(n) }, Duration::from_secs(60));
        assert_ne!(m.code, Some(101), "ulimit -n {n}: {}", text(&m.stderr));
        assert!(m.signal.is_none(), "ulimit -n {n}: {:?}", m.signal);
        if m.code != Some(0) {
            failed += 1;
        }
        assert_eq!(listing(&dir.path("tmp")), Vec::<String>::new(), "ulimit -n {n}: {}", text(&m.stderr));
        assert!(listing(d).iter().all(|f| !f.contains(".tmp.")), "ulimit -n {n}: {:?}", listing(d));
    }
    assert!(failed > 0, "no limit made the sort fail: the test tests nothing");
}

/// Starts a blocked sort with `sig` ignored (as `nohup`, `trap '' SIG`, or
/// a script's `&` set it up), sends it `sig`, and returns whether it was
/// still running afterwards, then finishes it by reading its output.
fn survives(sig: libc::c_int, ignored: bool, d: &Path, big: &Path) -> (bool, std::process::ExitStatus, usize) {
    let mut cmd = fasthts();
    // Set either way: the test itself may run with the signal ignored
    // (under nohup, SIGHUP is ignored for the whole process tree).
    let disposition = if ignored { libc::SIG_IGN } else { libc::SIG_DFL };
    // SAFETY: signal() is async-signal-safe, called between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(sig, disposition);
            Ok(())
        });
    }
    let (mut child, _) = blocked_sort_with(cmd, d, big, &[], d, "fasthts-sort.fasthts-sort.");
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    std::thread::sleep(Duration::from_millis(300));
    let alive = child.try_wait().unwrap().is_none();
    let mut bytes = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut bytes).unwrap();
    (alive, child.wait().unwrap(), bytes.len())
}

#[test]
fn signals_ignored_at_start_stay_ignored() {
    let dir = TempDir::new("out-signals");
    let d = &dir.0;
    let big = big_bam(&dir);
    let whole = {
        let out = run_in(d, &["sort", "--no-PG", "-o", "-", "big.bam"]);
        assert_ok("sort", &out);
        out.stdout.len()
    };
    for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        let (alive, status, len) = survives(sig, true, d, &big);
        assert!(alive && status.success(), "signal {sig} ignored at start: {status:?}");
        assert_eq!(len, whole, "signal {sig} ignored at start: output complete");
        let (_, status, _) = survives(sig, false, d, &big);
        assert_eq!(status.code(), Some(128 + sig), "signal {sig} not ignored ends the sort");
        assert!(listing(d).iter().all(|n| !n.contains("fasthts-sort")), "{:?}", listing(d));
    }
}

#[test]
fn thread_counts_are_bounded() {
    let dir = workdir("out-threads");
    let d = &dir.0;
    let one = run_in(d, &["flagstat", "-@", "1", "in.bam"]);
    for args in [
        vec!["flagstat", "-@", "5000", "in.bam"],
        vec!["flagstat", "-@", "100000", "in.bam"],
        vec!["idxstats", "-@", "5000", "in.bam"],
        vec!["sort", "-@", "5000", "-o", "s.bam", "in.bam"],
        vec!["index", "-@", "5000", "-o", "i.bai", "in.bam"],
        vec!["kmer", "count", "-q", "-k", "17", "-x", "1e5", "-N", "2", "-T", "5000", "t.ct", "reads.fa"],
    ] {
        let start = Instant::now();
        let out = run_in(d, &args);
        assert_ok(&format!("{args:?}"), &out);
        assert!(start.elapsed() < Duration::from_secs(10), "{args:?} took {:?}", start.elapsed());
        if args[0] == "flagstat" {
            assert_eq!(out.stdout, one.stdout);
        }
    }
}

#[test]
fn memory_limits_fail_monotonically_and_clearly() {
    let dir = TempDir::new("out-ulimit");
    let d = &dir.0;
    fs::copy(data("small.bam"), dir.path("in.bam")).unwrap();
    let want_sort = run_in(d, &["sort", "--no-PG", "-o", "-", "in.bam"]).stdout;
    let want_flagstat = run_in(d, &["flagstat", "in.bam"]).stdout;
    for (args, want) in [(vec!["flagstat", "in.bam"], &want_flagstat), (vec!["sort", "--no-PG", "-o", "-", "in.bam"], &want_sort)] {
        let mut passed_at = None;
        // 140-160 MiB failed while 80 and 175 passed (glibc arenas).
        for mib in (20..=200u64).step_by(10).chain([145, 155]) {
            let mut c = fasthts();
            c.current_dir(d).args(&args);
            let m = run_measured(c, Limits { address_space: Some(mib << 20), open_files: None }, Duration::from_secs(60));
            let err = text(&m.stderr);
            assert!(m.signal.is_none() && m.code != Some(101), "{args:?} at {mib} MiB: {:?} {err}", m.signal);
            if m.code == Some(0) {
                assert_eq!(&m.stdout, want, "{args:?} at {mib} MiB");
                passed_at.get_or_insert(mib);
            } else {
                assert_eq!(m.code, Some(1), "{args:?} at {mib} MiB: {err}");
                assert!(err.lines().count() == 1 && err.contains("out of memory"), "{args:?} at {mib} MiB: {err}");
                assert!(passed_at.is_none_or(|p| mib < p), "{args:?}: passed at {passed_at:?} MiB, failed at {mib}: {err}");
            }
        }
        assert!(passed_at.is_some_and(|p| p <= 80), "{args:?} first passed at {passed_at:?} MiB");
    }
    assert_eq!(listing(d), vec!["in.bam".to_string()]);
}
