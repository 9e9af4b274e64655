//! Differential tests of the one-pass k-mer scripts against khmer 3.0:
//! `unique-kmers` (HyperLogLog estimate), `abundance-dist-single`,
//! `filter-abund-single` and `count-median`, on seeded reads (pairs and
//! orphans, N-rich, lower case, IUPAC, reads shorter than k, a poly-A run,
//! multi-line FASTA, gzip and bzip2, an empty file). Output files, stdout,
//! the lines of stderr that carry results, and exit codes are compared, at
//! -T 1 and at the default number of threads. khmer (Debian package
//! `khmer`) and bzip2 are required under CI (`require`).

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};


fn khmer_available() -> bool {
    have_khmer() && require(runs("bzip2", &["--help"]), "bzip2")
}

/// Seeded reads in `dir`: r.fq (pairs /1 /2 with orphans; N runs, lower
/// case, IUPAC codes, short reads, poly-A), r.fa (multi-line), r.fq.gz,
/// r.fq.bz2, nrich.fa (half its bases N), short.fa (all reads shorter than
/// 17), empty.fq.
fn make_reads(dir: &Path, seed: u64) {
    let mut rng = Rng::new(seed);
    let genome: Vec<u8> = (0..3000).map(|_| b"ACGT"[rng.below(4) as usize]).collect();
    let read = |rng: &mut Rng, len: usize, i: usize| -> Vec<u8> {
        if i % 37 == 0 {
            return vec![b'A'; len];
        }
        let p = rng.below((genome.len() - len) as u64) as usize;
        genome[p..p + len]
            .iter()
            .map(|&c| {
                let r = rng.unit();
                if r < 0.01 {
                    b"ACGT"[rng.below(4) as usize]
                } else if r < 0.015 {
                    b'N'
                } else if r < 0.02 {
                    c.to_ascii_lowercase()
                } else if r < 0.022 {
                    b"RYKMn"[rng.below(5) as usize]
                } else {
                    c
                }
            })
            .collect()
    };
    let lens = [150usize, 150, 100, 40, 21, 17, 16, 5];
    let mut fq = Vec::new();
    for i in 0..1200 {
        for mate in 1..=2 {
            if i % 11 == 4 && mate == 2 {
                continue; // an orphan
            }
            let len = lens[rng.below(lens.len() as u64) as usize];
            let s = read(&mut rng, len, i);
            write!(fq, "@pair{i}/{mate} desc\n{}\n+\n{}\n", String::from_utf8_lossy(&s), "I".repeat(s.len())).unwrap();
        }
    }
    fs::write(dir.join("r.fq"), &fq).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&fq).unwrap();
    fs::write(dir.join("r.fq.gz"), gz.finish().unwrap()).unwrap();
    let o = Command::new("bzip2").args(["-c", "r.fq"]).current_dir(dir).output().expect("bzip2");
    assert!(o.status.success());
    fs::write(dir.join("r.fq.bz2"), o.stdout).unwrap();
    let mut fa = Vec::new();
    for i in 0..500 {
        let len = [150usize, 60, 33][rng.below(3) as usize];
        let s = read(&mut rng, len, i + 1);
        let (a, b) = s.split_at(s.len() / 2);
        write!(fa, ">seq{i}\n{}\n{}\n", String::from_utf8_lossy(a), String::from_utf8_lossy(b)).unwrap();
    }
    fs::write(dir.join("r.fa"), &fa).unwrap();
    let mut nrich = Vec::new();
    for i in 0..300 {
        let s: Vec<u8> = read(&mut rng, 80, i + 1).into_iter().map(|c| if rng.below(2) == 0 { b'N' } else { c }).collect();
        write!(nrich, ">n{i}\n{}\n", String::from_utf8_lossy(&s)).unwrap();
    }
    fs::write(dir.join("nrich.fa"), &nrich).unwrap();
    fs::write(dir.join("short.fa"), ">a\nACGTACGTAC\n>b\nTTGACA\n").unwrap();
    fs::write(dir.join("empty.fq"), "").unwrap();
}

/// A test's directories: the reads in the root, khmer's run in `k/`,
/// fasthts' in `f/`.
struct Dirs {
    root: TempDir,
    k: PathBuf,
    f: PathBuf,
}

fn dirs(name: &str) -> Dirs {
    let root = TempDir::new(&format!("kmer-onepass-{name}"));
    make_reads(&root.0, 0x000e_9a55 ^ name.len() as u64);
    Dirs { k: root.path("k"), f: root.path("f"), root }
}

/// The lines of a script's stderr that carry results (khmer's banner,
/// progress and timing lines are left out).
fn result_lines(stderr: &[u8], prefixes: &[&str]) -> Vec<String> {
    String::from_utf8_lossy(stderr).lines().filter(|l| prefixes.iter().any(|p| l.starts_with(p))).map(str::to_string).collect()
}

impl Dirs {
    fn fresh(&self) {
        for d in [&self.k, &self.f] {
            let _ = fs::remove_dir_all(d);
            fs::create_dir_all(d).unwrap();
        }
    }

    /// Runs khmer's `script` and `fasthts kmer sub` (with `extra` options
    /// too) on `args` in their own directories.
    fn run(&self, script: &str, sub: &str, args: &[&str], extra: &[&str]) -> (Output, Output) {
        self.fresh();
        let k = Command::new("/usr/bin/python3").arg(Path::new(KHMER_BIN).join(script)).args(args).current_dir(&self.k).output().unwrap();
        let f = fasthts().args(["kmer", sub]).args(extra).args(args).current_dir(&self.f).output().unwrap();
        (k, f)
    }

    /// Same exit status, stdout, result lines of stderr and output files
    /// (fasthts may leave out files khmer leaves behind when failing).
    fn check(&self, script: &str, sub: &str, args: &[&str], extra: &[&str], stderr_prefixes: &[&str]) {
        let (k, f) = self.run(script, sub, args, extra);
        let what = format!("{sub} {} {}", extra.join(" "), args.join(" "));
        assert_eq!(
            k.status.code(),
            f.status.code(),
            "{what}: exit codes differ\nkhmer: {}\nfasthts: {}",
            String::from_utf8_lossy(&k.stderr),
            String::from_utf8_lossy(&f.stderr)
        );
        assert!(k.stdout == f.stdout, "{what}: stdout differs ({} vs {} bytes)", k.stdout.len(), f.stdout.len());
        assert_eq!(result_lines(&k.stderr, stderr_prefixes), result_lines(&f.stderr, stderr_prefixes), "{what}: stderr");
        let names = |d: &Path| {
            let mut v: Vec<String> = fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
            v.sort();
            v
        };
        let (kn, fnames) = (names(&self.k), names(&self.f));
        if k.status.success() {
            assert_eq!(kn, fnames, "{what}: output files");
        } else {
            assert!(fnames.iter().all(|n| kn.contains(n)), "{what}: extra files {fnames:?} vs {kn:?}");
        }
        for n in &fnames {
            let (a, b) = (read_maybe_gz(&self.k.join(n)), in_khmer_words(n, read_maybe_gz(&self.f.join(n))));
            assert!(a == b, "{what}: {n} differs ({} vs {} bytes)", a.len(), b.len());
        }
    }
}

/// A file's bytes, decompressed if gzip (the gzip header's time stamp
/// differs).
fn read_maybe_gz(p: &Path) -> Vec<u8> {
    let raw = fs::read(p).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        use std::io::Read;
        let mut v = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut v).unwrap();
        v
    } else {
        raw
    }
}

/// Makes `name` in the data directory with khmer's load-into-counting.
fn make_ct(d: &Dirs, name: &str, args: &[&str], inputs: &[&str]) {
    let o = Command::new("/usr/bin/python3")
        .arg(Path::new(KHMER_BIN).join("load-into-counting.py"))
        .arg("-q")
        .args(args)
        .arg(name)
        .args(inputs)
        .current_dir(&d.root.0)
        .output()
        .unwrap();
    assert!(o.status.success(), "making {name}: {}", String::from_utf8_lossy(&o.stderr));
}

/// The last line of a failure's stderr (khmer's: its exception).
fn last_line(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("").to_string()
}

#[test]
fn unique_kmers_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("unique");
    let estimates = ["Estimated number of unique", "Total estimated number of unique"];
    let with_diagnostics = [
        "Estimated number of unique",
        "Total estimated number of unique",
        "number of unique k-mers",
        "false positive rate",
        "If you have",
        "expected",
        " ",
    ];
    let cases: &[&[&str]] = &[
        &["-k", "17", "../r.fq"],
        &["-k", "17", "-R", "report.txt", "../r.fq", "../r.fa", "../nrich.fa"],
        &["-k", "31", "-e", "0.005", "-R", "report.txt", "../r.fq.gz", "../r.fq.bz2"],
        &["-k", "20", "-e", "0.3", "../r.fa"],
        &["-k", "4", "-e", "0.05", "-R", "report.txt", "../r.fq"],
        &["-k", "32", "../r.fq", "../r.fq"],
        &["-k", "12", "--stream-records", "../r.fq", "../r.fa"],
        &["-k", "12", "-S", "-R", "report.txt", "../nrich.fa"],
        &["-k", "64", "../r.fa"],
        &["-k", "1", "../r.fa"],
    ];
    for c in cases {
        for threads in [&["-T", "1"][..], &[]] {
            d.check("unique-kmers.py", "unique-kmers", c, threads, &estimates);
        }
    }
    d.check("unique-kmers.py", "unique-kmers", &["-k", "17", "--diagnostics", "../r.fq"], &[], &with_diagnostics);
    // errors: khmer's exception (its traceback's last line), exit 1
    let failures: &[&[&str]] = &[
        &["-k", "17", "../empty.fq"],
        &["-k", "17", "../r.fa", "../missing.fq"],
        &["-k", "17", "-e", "0.5", "../r.fa"],
        &["-k", "17", "-e", "0.001", "../r.fa"],
        &["-k", "17", "-e", "-1", "../r.fa"],
        &["-k", "17", "-R", "report.txt", "../short.fa"], // 0 k-mers: khmer's sizing divides by zero
    ];
    for c in failures {
        d.check("unique-kmers.py", "unique-kmers", c, &[], &estimates);
        let (k, f) = d.run("unique-kmers.py", "unique-kmers", c, &[]);
        assert_eq!(last_line(&k), last_line(&f), "{c:?}");
    }
}

/// -T 1 and the default number of threads (khmer's scripts run with their
/// default, one thread).
const THREADS: [&[&str]; 2] = [&["-T", "1"], &[]];

#[test]
fn abundance_dist_single_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("abund-single");
    let lines = ["kmer_size", "k-mer countgraph sizes", "Total number of unique", "outputting to", "wrote to", "ERROR", "\tPlease"];
    let cases: &[&[&str]] = &[
        &["-k", "17", "-x", "1e5", "../r.fq", "h.csv"],
        &["-k", "5", "-x", "1e4", "--savegraph", "g.ct", "../r.fq", "h.csv"], // poly-A: bigcount
        &["-k", "12", "-M", "1e6", "-z", "../r.fq.gz", "h.csv"],
        &["-k", "12", "-M", "4e5", "-N", "3", "-b", "--savegraph", "g.ct", "../r.fq.bz2", "h.csv"],
        &["-k", "15", "-x", "1e5", "-s", "../r.fa", "h.csv"],
        &["-k", "17", "-x", "1e5", "-z", "../nrich.fa", "h.csv"],
        &["-k", "4", "-x", "300", "-N", "2", "../r.fq", "h.csv"],
        &["-k", "17", "-x", "1e5", "../short.fa", "h.csv"], // no k-mers: uniformly zero, exit 1
        &["-k", "17", "../empty.fq", "h.csv"],
        &["-k", "17", "../missing.fq", "h.csv"],
    ];
    for c in cases {
        for t in THREADS {
            d.check("abundance-dist-single.py", "abundance-dist-single", c, t, &lines);
        }
    }
}

#[test]
fn filter_abund_single_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("filter-single");
    let lines = ["Total number of unique", "fp rate estimated", "output in", "** ERROR", "** (estimated", "ERROR"];
    let cases: &[&[&str]] = &[
        &["-k", "17", "-x", "1e5", "../r.fq"],
        &["-k", "12", "-x", "1e5", "-C", "3", "-V", "-Z", "5", "--savegraph", "g.ct", "-o", "out.fq", "../r.fq.gz"],
        &["-k", "15", "-M", "1e6", "-N", "3", "../r.fa"],
        &["-k", "17", "-x", "1e5", "-C", "1", "../nrich.fa"],
        &["-k", "17", "-x", "1e5", "--gzip", "../r.fq.bz2"],
        &["-k", "5", "-x", "300", "-N", "2", "../r.fq"], // fp rate above 0.2: exit 1
        &["-k", "5", "-x", "300", "-N", "2", "-f", "--savegraph", "g.ct", "../r.fq"],
        &["-k", "17", "../empty.fq"],
        &["-k", "17", "../missing.fq"],
    ];
    for c in cases {
        for t in THREADS {
            d.check("filter-abund-single.py", "filter-abund-single", c, t, &lines);
        }
    }
}

#[test]
fn count_median_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("count-median");
    make_ct(&d, "g.ct", &["-k", "15", "-x", "1e5"], &["r.fq", "r.fa"]);
    make_ct(&d, "g5.ct", &["-k", "5", "-x", "1e4", "-N", "2"], &["r.fq"]); // bigcounts
    let lines = ["loading k-mer countgraph", "writing to", "ERROR"];
    let cases: &[&[&str]] = &[
        &["../g.ct", "../r.fq", "med.csv"],
        &["../g.ct", "../r.fa", "-"],
        &["../g5.ct", "../r.fq", "med.csv"],
        &["../g5.ct", "../nrich.fa", "med.csv"],
        &["../g.ct", "../r.fq.gz", "med.csv"],
        &["../g.ct", "../short.fa", "med.csv"],
        &["../g.ct", "../empty.fq", "med.csv"],
        &["../g.ct", "../missing.fq", "med.csv"],
        &["../missing.ct", "../r.fq", "med.csv"],
    ];
    for c in cases {
        d.check("count-median.py", "count-median", c, &[], &lines);
    }
}

/// --small-count (khmer's SmallCountgraph: 4-bit counters, its own .ct
/// type) on every script that takes it: the same tables, reads and
/// histograms as khmer's.
#[test]
fn small_count_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("small-count");
    let lines = ["Total number of unique", "fp rate estimated", "ERROR", "Estimated memory usage"];
    let cases: &[(&str, &str, &[&str])] = &[
        ("load-into-counting.py", "count", &["--small-count", "-k", "17", "-x", "1e5", "out.ct", "../r.fq", "../r.fa"]),
        ("load-into-counting.py", "count", &["--small-count", "-k", "5", "-M", "1e5", "-N", "3", "-f", "-s", "json", "out.ct", "../r.fq.gz"]),
        ("load-into-counting.py", "count", &["--small-count", "-k", "20", "-x", "1e5", "out.ct.gz", "../nrich.fa"]),
        ("normalize-by-median.py", "normalize", &["--small-count", "-k", "17", "-x", "1e5", "-C", "5", "-s", "n.ct", "../r.fq"]),
        ("normalize-by-median.py", "normalize", &["--small-count", "-k", "12", "-M", "1e6", "-C", "3", "-p", "-o", "out.fq", "../r.fq"]),
        ("trim-low-abund.py", "trim-low-abund", &["--small-count", "-k", "17", "-M", "1e6", "-V", "-s", "t.ct", "../r.fq"]),
        ("trim-low-abund.py", "trim-low-abund", &["--small-count", "-k", "13", "-x", "1e5", "-C", "3", "-Z", "4", "../r.fa"]),
        ("abundance-dist-single.py", "abundance-dist-single", &["--small-count", "-k", "17", "-M", "1e6", "--savegraph", "a.ct", "../r.fq", "h.csv"]),
        ("abundance-dist-single.py", "abundance-dist-single", &["--small-count", "-k", "5", "-x", "1e4", "-z", "../r.fq.bz2", "h.csv"]),
        ("filter-abund-single.py", "filter-abund-single", &["--small-count", "-k", "12", "-x", "1e5", "-C", "3", "--savegraph", "f.ct", "../r.fq"]),
        ("filter-abund-single.py", "filter-abund-single", &["--small-count", "-k", "15", "-M", "1e6", "-V", "-Z", "3", "../r.fa"]),
    ];
    for (script, sub, args) in cases {
        for t in THREADS {
            // trim-low-abund's -T is its temporary directory
            let t: &[&str] = if *sub == "trim-low-abund" && !t.is_empty() { &["-@", "1"] } else { t };
            d.check(script, sub, args, t, &lines);
        }
    }
    // a saved SmallCountgraph loaded again (trim-low-abund --small-count -l)
    make_ct(&d, "small.ct", &["--small-count", "-k", "17", "-x", "1e5"], &["r.fq"]);
    // (the parameters khmer reports are then the file's, which the
    // argument handling reads; not compared here)
    d.check("trim-low-abund.py", "trim-low-abund", &["--small-count", "-l", "../small.ct", "-o", "t.fq", "../r.fa"], &[], &lines[..3]);
}
