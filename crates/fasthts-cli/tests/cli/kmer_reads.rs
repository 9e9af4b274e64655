//! Differential tests of khmer's read-handling scripts: `fasthts kmer
//! interleave-reads`, `split-paired-reads`, `extract-paired-reads`,
//! `extract-long-sequences`, `fastq-to-fasta`, `readstats` and
//! `sample-reads-randomly` against khmer 3.0's on seeded reads (pairs `/1`
//! `/2`, Casava 1.8 and fastq-dump names, orphans, N-rich and lower-case
//! reads, multi-line FASTA, gzip and bzip2 inputs, empty input, stdin).
//! Compared: exit status, stdout, stderr (khmer's citation banner left out,
//! a Python traceback reduced to its last line), and every output file
//! (decompressed). Where fasthts fails on purpose differently (it removes
//! the outputs of a failed run, where khmer leaves them partial; it names
//! the file and record of a parse error), only what stays comparable is.
//! Without khmer the tests fail under CI=true, else pass with a note.

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};


/// Whether khmer is installed. Under CI=true its absence is a failure: a
/// differential test must not pass vacuously there.
fn khmer_available() -> bool {
    have_khmer()
}

fn bases(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len);
    let n_rich = rng.below(10) == 0;
    let lower = rng.below(12) == 0;
    for _ in 0..len {
        let c = if n_rich && rng.below(4) == 0 { b'N' } else { b"ACGT"[rng.below(4) as usize] };
        s.push(if lower { c.to_ascii_lowercase() } else { c } as char);
    }
    s
}

fn fastq(out: &mut String, name: &str, seq: &str) {
    write!(out, "@{name}\n{seq}\n+\n{}\n", "I".repeat(seq.len())).unwrap();
}

/// The reads the tests run on, in `dir`:
/// * `mixed.fq` (+ `.gz`, `.bz2`): interleaved pairs with `/1` `/2`, Casava
///   1.8 and fastq-dump names, orphans, a name with trailing blanks (kept by
///   khmer's C++ parser, stripped by screed), N-rich and lower-case reads
/// * `mixed.fa`: the same as multi-line FASTA
/// * `paired.fq`: pairs only; `single.fq`: no pairs at all
/// * `r1.fq`, `r2.fq` (+ `.gz`/`.bz2`): mates in two files, names with and
///   without mate suffixes; `r2short.fq` lacks the last mate; `r2bad.fq`
///   has a mate of another fragment
/// * `big.fq` (+ `.gz`): 24,000 units, for the every-10,000 progress lines
///   and `-M`
/// * `empty.fq`: empty; `emptyseq.fq`: a read without bases; `ties.fq`: 4 reads of 5 bases (average 1.25)
fn make_reads(dir: &Path, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut mixed = String::new();
    let mut fasta = String::new();
    let mut paired = String::new();
    for i in 0..600 {
        let style = i % 5;
        for mate in 1..=2 {
            if (i % 9 == 4 && mate == 2) || (i % 13 == 7 && mate == 1) {
                continue; // orphans
            }
            let name = match style {
                0 => format!("frag{i} {mate}:N:0:ACGT"),
                1 => format!("SRR01.{i} {i}/{mate}"),
                2 if i % 4 == 0 => format!("frag{i}/{mate}  "),
                _ => format!("frag{i}/{mate} desc"),
            };
            let len = [20usize, 50, 150, 201, 250][rng.below(5) as usize];
            let seq = bases(&mut rng, len);
            fastq(&mut mixed, &name, &seq);
            if !(i % 9 == 4 || i % 13 == 7) {
                fastq(&mut paired, &name, &seq);
            }
            let (a, b) = seq.split_at(len / 2);
            write!(fasta, ">{name}\n{a}\n{b}\n").unwrap();
        }
    }
    fs::write(dir.join("mixed.fq"), &mixed).unwrap();
    fs::write(dir.join("mixed.fa"), &fasta).unwrap();
    fs::write(dir.join("paired.fq"), &paired).unwrap();
    let mut single = String::new();
    for i in 0..50 {
        let seq = bases(&mut rng, 40);
        fastq(&mut single, &format!("read{i}"), &seq);
    }
    fs::write(dir.join("single.fq"), single).unwrap();
    let (mut r1, mut r2, mut r2bad) = (String::new(), String::new(), String::new());
    for i in 0..300 {
        let (n1, n2) = match i % 4 {
            0 => (format!("f{i}"), format!("f{i}")),
            1 => (format!("f{i}/1"), format!("f{i} 2:N:0")),
            2 => (format!("f{i} 1:Y:0"), format!("f{i}/2")),
            _ => (format!("SRR9.{i} {i}"), format!("SRR9.{i} {i}")),
        };
        let (s1, s2) = (bases(&mut rng, 60), bases(&mut rng, 61));
        fastq(&mut r1, &n1, &s1);
        fastq(&mut r2, &n2, &s2);
        fastq(&mut r2bad, if i == 150 { "other" } else { &n2 }, &s2);
    }
    fs::write(dir.join("r1.fq"), &r1).unwrap();
    fs::write(dir.join("r2.fq"), &r2).unwrap();
    fs::write(dir.join("r2bad.fq"), &r2bad).unwrap();
    let cut = r2.trim_end().rfind("\n@").unwrap() + 1;
    fs::write(dir.join("r2short.fq"), &r2[..cut]).unwrap();
    let mut big = String::new();
    for i in 0..16_000 {
        for mate in 1..=2 {
            if i % 2 == 1 && mate == 2 {
                continue;
            }
            let len = rng.range(10, 40) as usize;
            let seq = bases(&mut rng, len);
            fastq(&mut big, &format!("b{i}/{mate}"), &seq);
        }
    }
    fs::write(dir.join("big.fq"), &big).unwrap();
    fs::write(dir.join("empty.fq"), "").unwrap();
    fs::write(dir.join("emptyseq.fq"), "@a/1\nACGT\n+\nIIII\n@a/2\nACGT\n+\nIIII\n@b/1\n\n+\n\n@b/2\nAC\n+\nII\n").unwrap();
    fs::write(dir.join("ties.fq"), "@a\nAC\n+\nII\n@b\nA\n+\nI\n@c\nA\n+\nI\n@d\nA\n+\nI\n").unwrap();
    for (tool, src) in [("gzip", "mixed.fq"), ("bzip2", "mixed.fq"), ("gzip", "r1.fq"), ("bzip2", "r2.fq"), ("gzip", "big.fq")] {
        let o = Command::new(tool).args(["-c", src]).current_dir(dir).output().expect(tool);
        assert!(o.status.success(), "{tool} failed");
        let ext = if tool == "gzip" { "gz" } else { "bz2" };
        fs::write(dir.join(format!("{src}.{ext}")), o.stdout).unwrap();
    }
}

/// khmer's stderr without its citation banner (a blank line, `||` lines, a
/// blank line) and with a traceback reduced to its last line (the
/// exception), as fasthts prints it.
fn khmer_stderr(raw: &[u8]) -> String {
    let text = without_khmer_banner(&String::from_utf8_lossy(raw));
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("Traceback (most recent call last):") {
            i += 1;
            while i < lines.len() && (lines[i].starts_with(' ') || lines[i].is_empty()) {
                i += 1;
            }
            continue;
        }
        out.push(lines[i]);
        i += 1;
    }
    out.join("\n")
}

/// All files under `dir`, relative, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, &mut v);
    v.sort();
    v
}

/// A file's content, gzip or bzip2 decompressed.
fn content(p: &Path) -> Vec<u8> {
    let raw = fs::read(p).unwrap();
    let mut v = Vec::new();
    if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut v).unwrap();
        v
    } else if raw.starts_with(b"BZh") {
        let o = run_with_stdin(
            {
                let mut c = Command::new("bzip2");
                c.arg("-dc");
                c
            },
            raw,
        );
        assert!(o.status.success(), "bzip2 -dc {} failed", p.display());
        o.stdout
    } else {
        raw
    }
}

/// What to compare of a run.
#[derive(Clone, Copy, PartialEq)]
enum Compare {
    /// Status, stdout, stderr and all files (of a failed run, fasthts
    /// leaves none or some of those khmer leaves: it removes partial
    /// outputs; khmer opens some before it checks its inputs).
    All,
    /// All but stderr: khmer's text of a parse error differs on purpose
    /// (fasthts names the file and record).
    ExceptStderr,
}

struct Case {
    root: TempDir,
}

impl Case {
    fn new(name: &str) -> Case {
        let root = TempDir::new(&format!("kmer-reads-{name}"));
        fs::create_dir_all(root.path("data")).unwrap();
        make_reads(&root.path("data"), 0x7ead_5eed ^ name.len() as u64);
        Case { root }
    }

    fn run(&self, dir: &Path, mut cmd: Command, stdin: Option<&str>) -> Output {
        fs::create_dir_all(dir).unwrap();
        cmd.current_dir(dir).stdout(Stdio::piped()).stderr(Stdio::piped());
        match stdin {
            Some(f) => cmd.stdin(fs::File::open(self.root.path("data").join(f)).unwrap()),
            None => cmd.stdin(Stdio::null()),
        };
        cmd.output().unwrap()
    }

    /// Runs `script` of khmer and `fasthts kmer script` with `args` (data
    /// files as `../data/NAME`), each in an empty directory, and compares.
    fn check(&self, script: &str, args: &[&str], stdin: Option<&str>, compare: Compare) {
        let (kd, fd) = (self.root.path("k"), self.root.path("f"));
        for d in [&kd, &fd] {
            let _ = fs::remove_dir_all(d);
        }
        let mut k = Command::new("/usr/bin/python3");
        k.arg(Path::new(KHMER_BIN).join(format!("{script}.py"))).args(args);
        let mut f = fasthts();
        f.args(["kmer", script]).args(args);
        let ko = self.run(&kd, k, stdin);
        let fo = self.run(&fd, f, stdin);
        let what = format!("{script} {}", args.join(" "));
        let kerr = khmer_stderr(&ko.stderr);
        let ferr = String::from_utf8_lossy(&fo.stderr).into_owned();
        assert_eq!(ko.status.code(), fo.status.code(), "{what}: exit status\nkhmer: {kerr}\nfasthts: {ferr}");
        assert!(ko.stdout == fo.stdout, "{what}: stdout differs\nkhmer:\n{}\nfasthts:\n{}", text(&ko.stdout), text(&fo.stdout));
        let (kf, ff) = (files_in(&kd), files_in(&fd));
        if compare == Compare::All {
            assert_eq!(kerr, ferr, "{what}: stderr");
        }
        if ko.status.success() {
            assert_eq!(kf, ff, "{what}: output files");
        } else {
            // khmer leaves the outputs it opened (even before reading)
            assert!(ff.iter().all(|f| kf.contains(f)), "{what}: fasthts left {ff:?} (khmer {kf:?})");
        }
        for f in &ff {
            assert!(content(&kd.join(f)) == content(&fd.join(f)), "{what}: {} differs", f.display());
        }
    }
}

#[test]
fn interleave_reads_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("interleave");
    let all = Compare::All;
    c.check("interleave-reads", &["../data/r1.fq", "../data/r2.fq"], None, all);
    c.check("interleave-reads", &["-o", "out.fq", "../data/r1.fq.gz", "../data/r2.fq.bz2"], None, all);
    c.check("interleave-reads", &["--no-reformat", "../data/r1.fq", "../data/r2.fq", "-o", "o.fq"], None, all);
    c.check("interleave-reads", &["--gzip", "-o", "o.fq.gz", "../data/r1.fq", "../data/r2.fq"], None, all);
    c.check("interleave-reads", &["--bzip", "-o", "o.fq.bz2", "../data/r1.fq", "../data/r2.fq"], None, all);
    c.check("interleave-reads", &["-o", "-", "../data/r1.fq", "../data/r2.fq"], None, all);
    c.check("interleave-reads", &["-o", "/dev/null", "../data/r1.fq", "../data/r2.fq"], None, all);
    // mates of different fragments; one file shorter; empty input
    c.check("interleave-reads", &["../data/r1.fq", "../data/r2bad.fq"], None, all);
    c.check("interleave-reads", &["../data/r1.fq", "../data/r2short.fq"], None, all);
    c.check("interleave-reads", &["../data/r2short.fq", "../data/r1.fq", "-o", "x"], None, all);
    c.check("interleave-reads", &["../data/r1.fq", "../data/emptyseq.fq"], None, Compare::ExceptStderr);
    c.check("interleave-reads", &["../data/empty.fq", "../data/r2.fq"], None, all);
    c.check("interleave-reads", &["-f", "../data/empty.fq", "../data/empty.fq"], None, all);
    c.check("interleave-reads", &["../data/r1.fq", "../data/missing.fq"], None, all);
}

#[test]
fn split_paired_reads_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("split");
    let all = Compare::All;
    c.check("split-paired-reads", &["../data/paired.fq"], None, all);
    c.check("split-paired-reads", &["-0", "orphans", "../data/mixed.fq"], None, all);
    c.check("split-paired-reads", &["-0", "o", "-1", "a", "-2", "b", "../data/mixed.fq.gz"], None, all);
    c.check("split-paired-reads", &["-d", "out/sub", "-0", "o", "../data/mixed.fq.bz2"], None, all);
    c.check("split-paired-reads", &["-d", "out", "-1", "first", "-0", "o", "--gzip", "../data/mixed.fa"], None, all);
    c.check("split-paired-reads", &["--bzip", "-0", "o", "../data/big.fq.gz"], None, all);
    c.check("split-paired-reads", &["-1", "a", "-2", "b"], Some("paired.fq"), all);
    c.check("split-paired-reads", &["-1", "a", "-2", "b", "-"], Some("paired.fq"), all);
    c.check("split-paired-reads", &["-1", "a"], Some("paired.fq"), all);
    // an orphan without -0; an empty sequence (khmer's parser refuses it)
    c.check("split-paired-reads", &["../data/mixed.fa"], None, Compare::ExceptStderr);
    c.check("split-paired-reads", &["-0", "o", "../data/emptyseq.fq"], None, Compare::ExceptStderr);
    c.check("split-paired-reads", &["-0", "o", "../data/mixed.fq"], None, all);
    c.check("split-paired-reads", &["../data/empty.fq"], None, all);
    c.check("split-paired-reads", &["-f", "../data/empty.fq"], None, all);
    c.check("split-paired-reads", &["../data/missing.fq"], None, all);
}

#[test]
fn extract_paired_reads_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("extract");
    let all = Compare::All;
    c.check("extract-paired-reads", &["../data/mixed.fq"], None, all);
    c.check("extract-paired-reads", &["-d", "out", "../data/mixed.fq.gz"], None, all);
    c.check("extract-paired-reads", &["-p", "p.fa", "-s", "s.fa", "../data/mixed.fa"], None, all);
    c.check("extract-paired-reads", &["--gzip", "-p", "p.gz", "../data/mixed.fq.bz2"], None, all);
    c.check("extract-paired-reads", &["--bzip", "../data/big.fq"], None, all);
    c.check("extract-paired-reads", &["-p", "p", "-s", "s"], Some("mixed.fq"), all);
    c.check("extract-paired-reads", &["-p", "p"], Some("mixed.fq"), all);
    // no pairs at all: khmer completes both outputs, then fails
    c.check("extract-paired-reads", &["../data/single.fq"], None, all);
    c.check("extract-paired-reads", &["../data/empty.fq"], None, all);
    c.check("extract-paired-reads", &["-f", "../data/empty.fq"], None, all);
    c.check("extract-paired-reads", &["../data/emptyseq.fq"], None, Compare::ExceptStderr);
    c.check("extract-paired-reads", &["../data/missing.fq"], None, all);
}

#[test]
fn extract_long_sequences_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("long");
    let all = Compare::All;
    c.check("extract-long-sequences", &["../data/mixed.fq", "../data/mixed.fa.bz2-missing"], None, all);
    c.check("extract-long-sequences", &["-l", "50", "../data/mixed.fq", "../data/mixed.fa"], None, all);
    c.check("extract-long-sequences", &["-l", "0", "-o", "x.gz", "--gzip", "../data/mixed.fq.bz2"], None, all);
    c.check("extract-long-sequences", &["-l", "150", "-o", "x", "../data/mixed.fq.gz", "../data/empty.fq"], None, all);
    c.check("extract-long-sequences", &["-l", "0", "../data/emptyseq.fq"], None, Compare::ExceptStderr);
    c.check("extract-long-sequences", &["--length", "30", "--bzip", "-o", "x.bz2", "../data/big.fq"], None, all);
}

#[test]
fn fastq_to_fasta_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("fq2fa");
    let all = Compare::All;
    c.check("fastq-to-fasta", &["../data/mixed.fq"], None, all);
    c.check("fastq-to-fasta", &["-n", "../data/mixed.fq.gz", "-o", "x.fa"], None, all);
    c.check("fastq-to-fasta", &["--n_keep", "--gzip", "-o", "x.fa.gz", "../data/big.fq"], None, all);
    c.check("fastq-to-fasta", &["--bzip", "-o", "x.fa.bz2", "../data/mixed.fq.bz2"], None, all);
    c.check("fastq-to-fasta", &["../data/empty.fq"], None, all);
    c.check("fastq-to-fasta", &["../data/emptyseq.fq"], None, Compare::ExceptStderr);
    c.check("fastq-to-fasta", &["../data/missing.fq"], None, all);
    // FASTA input: khmer's KeyError at the first read without an N
    c.check("fastq-to-fasta", &["../data/mixed.fa"], None, all);
}

#[test]
fn readstats_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("readstats");
    let all = Compare::All;
    let inputs = ["../data/mixed.fq", "../data/missing.fq", "../data/empty.fq", "../data/mixed.fa", "../data/big.fq.gz"];
    c.check("readstats", &inputs, None, all);
    c.check("readstats", &[&["--csv"][..], &inputs].concat(), None, all);
    c.check("readstats", &["-o", "stats.txt", "../data/mixed.fq.bz2", "../data/ties.fq"], None, all);
    c.check("readstats", &["--csv", "-o", "stats.csv", "../data/ties.fq"], None, all);
    c.check("readstats", &["../data/missing.fq", "../data/empty.fq"], None, all);
    c.check("readstats", &["../data/emptyseq.fq", "../data/ties.fq"], None, Compare::ExceptStderr);
}

#[test]
fn sample_reads_randomly_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("sample");
    let all = Compare::All;
    c.check("sample-reads-randomly", &["-R", "42", "-N", "50", "../data/mixed.fq"], None, all);
    c.check("sample-reads-randomly", &["-R", "1", "-N", "300", "-S", "3", "../data/big.fq.gz"], None, all);
    c.check("sample-reads-randomly", &["-R", "-12345678901234567890", "-N", "5000", "../data/big.fq"], None, all);
    c.check("sample-reads-randomly", &["-R", "5", "--force_single", "-N", "100", "-o", "o.fq", "../data/mixed.fq.bz2"], None, all);
    c.check("sample-reads-randomly", &["-R", "9", "-M", "10000", "-N", "20", "--gzip", "../data/big.fq"], None, all);
    c.check("sample-reads-randomly", &["-R", "3", "-N", "2000", "../data/mixed.fa", "../data/single.fq"], None, all);
    c.check("sample-reads-randomly", &["-R", "3", "-N", "5", "--bzip", "-o", "o.bz2", "../data/single.fq"], None, all);
    c.check("sample-reads-randomly", &["-R", "3", "-N", "20", "-o", "o", "-"], Some("mixed.fq"), all);
    c.check("sample-reads-randomly", &["-R", "3", "-N", "20", "/dev/stdin"], Some("mixed.fq"), all);
    c.check("sample-reads-randomly", &["-R", "3", "-S", "2", "-o", "o", "../data/mixed.fq"], None, all);
    c.check("sample-reads-randomly", &["-R", "3", "-N", "30", "-S", "2", "-f", "-o", "o", "../data/mixed.fq"], None, all);
    c.check("sample-reads-randomly", &["-f", "-R", "3", "../data/empty.fq", "../data/missing.fq", "../data/single.fq"], None, all);
    c.check("sample-reads-randomly", &["../data/empty.fq"], None, all);
    c.check("sample-reads-randomly", &["-R", "3", "../data/emptyseq.fq"], None, Compare::ExceptStderr);
    // a second file past -N units: khmer's assert fails
    c.check("sample-reads-randomly", &["-R", "3", "-N", "20", "../data/single.fq", "../data/mixed.fq"], None, all);
}

/// An output that is one of the inputs (by any name) is refused, and the
/// input stays as it was (khmer truncates it before reading it).
#[test]
fn outputs_never_replace_inputs() {
    let root = TempDir::new("kmer-reads-in-place");
    let data = root.path("data");
    fs::create_dir_all(&data).unwrap();
    make_reads(&data, 11);
    let before = fs::read(data.join("mixed.fq")).unwrap();
    std::os::unix::fs::symlink("mixed.fq", data.join("alias.fq")).unwrap();
    let cases: &[&[&str]] = &[
        &["interleave-reads", "r1.fq", "r2.fq", "-o", "r1.fq"],
        &["split-paired-reads", "-0", "o", "-1", "alias.fq", "mixed.fq"],
        &["extract-paired-reads", "-s", "mixed.fq", "mixed.fq"],
        &["extract-long-sequences", "mixed.fq", "-o", "alias.fq"],
        &["fastq-to-fasta", "mixed.fq", "-o", "mixed.fq"],
        &["readstats", "mixed.fq", "-o", "mixed.fq"],
        &["sample-reads-randomly", "-R", "1", "mixed.fq", "-o", "alias.fq"],
    ];
    for args in cases {
        let r1 = fs::read(data.join("r1.fq")).unwrap();
        let out = fasthts().arg("kmer").args(*args).current_dir(&data).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("output is the same file as input"), "{args:?}: {err}");
        assert_eq!(fs::read(data.join("mixed.fq")).unwrap(), before, "{args:?} changed its input");
        assert_eq!(fs::read(data.join("r1.fq")).unwrap(), r1, "{args:?} changed its input");
    }
}

/// The progress lines khmer prints every 100,000 pairs, reads or
/// sequences (interleave-reads, extract-paired-reads, readstats), on
/// 200,002 short reads.
#[test]
fn progress_lines_match_khmer() {
    if !khmer_available() {
        return;
    }
    let c = Case::new("progress");
    let data = c.root.path("data");
    let (mut r1, mut r2, mut inter) = (String::new(), String::new(), String::new());
    let mut rng = Rng::new(99);
    for i in 0..100_001 {
        let (a, b) = (bases(&mut rng, 8), bases(&mut rng, 9));
        fastq(&mut r1, &format!("p{i}"), &a);
        fastq(&mut r2, &format!("p{i}"), &b);
        fastq(&mut inter, &format!("p{i}/1"), &a);
        if i % 3 != 0 {
            fastq(&mut inter, &format!("p{i}/2"), &b);
        }
    }
    fs::write(data.join("p1.fq"), r1).unwrap();
    fs::write(data.join("p2.fq"), r2).unwrap();
    fs::write(data.join("inter.fq"), inter).unwrap();
    c.check("interleave-reads", &["../data/p1.fq", "../data/p2.fq", "-o", "il.fq"], None, Compare::All);
    c.check("extract-paired-reads", &["../data/inter.fq"], None, Compare::All);
    c.check("readstats", &["../data/inter.fq", "../data/p1.fq"], None, Compare::All);
}
