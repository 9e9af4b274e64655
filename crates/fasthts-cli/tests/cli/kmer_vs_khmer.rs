//! Differential tests: `fasthts kmer ...` against khmer 3.0's scripts on
//! small seeded inputs (N, lower case, IUPAC, short reads, pairs, poly-A
//! reads that saturate into bigcount, multi-line FASTA, gzip input).
//! Outputs are compared byte for byte. khmer (Debian package `khmer`),
//! bgzip and bzip2 are required under CI; elsewhere their absence skips
//! the tests with a note (`fasthts_testgen::support::require`).

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;


/// Whether khmer and the compressors [`make_data`] runs are there (see
/// [`require`]).
fn khmer_available() -> bool {
    have_khmer() && compressors_available()
}

/// Whether bgzip and bzip2, which make [`make_data`]'s compressed reads, run.
fn compressors_available() -> bool {
    require(runs("bgzip", &["--version"]), "bgzip (Debian package tabix)") && require(runs("bzip2", &["--help"]), "bzip2")
}

/// Reverse complement, case kept; N and IUPAC codes stay as they are.
fn revcomp(s: &[u8]) -> Vec<u8> {
    s.iter().rev().map(|&c| b"ACGTacgt".iter().position(|&x| x == c).map_or(c, |k| b"TGCAtgca"[k])).collect()
}

/// Test data in `dir`: r.fq (pairs /1 /2, some Casava-named), r.fa
/// (multi-line), r.fq.gz, single.fq.
fn make_data(dir: &Path, seed: u64) {
    let mut rng = Rng::new(seed);
    let genome: Vec<u8> = (0..4000).map(|_| b"ACGT"[rng.below(4) as usize]).collect();
    let mutate = |s: &[u8], rng: &mut Rng| -> Vec<u8> {
        s.iter()
            .map(|&c| {
                let r = rng.unit();
                if r < 0.01 {
                    b"ACGT"[rng.below(4) as usize]
                } else if r < 0.013 {
                    b'N'
                } else if r < 0.016 {
                    c.to_ascii_lowercase()
                } else if r < 0.017 {
                    b"RYKMn."[rng.below(6) as usize]
                } else {
                    c
                }
            })
            .collect()
    };
    let read = |rng: &mut Rng, len: usize, i: usize| -> Vec<u8> {
        if i % 40 == 0 {
            return vec![b'A'; len];
        }
        let p = rng.below((genome.len() - len) as u64) as usize;
        let s = mutate(&genome[p..p + len], rng);
        if rng.below(2) == 0 {
            revcomp(&s)
        } else {
            s
        }
    };
    let lens = [150usize, 150, 100, 30, 21, 20, 19, 5, 150];
    let mut fq = Vec::new();
    for i in 0..1500 {
        for mate in 1..=2 {
            let len = lens[rng.below(lens.len() as u64) as usize];
            let s = read(&mut rng, len, i);
            let name = if i % 7 == 3 { format!("frag{i} {mate}:N:0:ACGT") } else { format!("frag{i}/{mate} x") };
            // an occasional orphan
            if i % 13 == 5 && mate == 2 {
                continue;
            }
            write!(fq, "@{name}\n{}\n+\n{}\n", String::from_utf8_lossy(&s), "I".repeat(s.len())).unwrap();
        }
    }
    fs::write(dir.join("r.fq"), &fq).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&fq).unwrap();
    fs::write(dir.join("r.fq.gz"), gz.finish().unwrap()).unwrap();
    // multi-member gzip (as BGZF is): two members, split mid-file at a record
    let cut = fq.len() / 2;
    let cut = cut + fq[cut..].windows(2).position(|w| w == b"\n@").unwrap() + 1;
    let mut mm = Vec::new();
    for part in [&fq[..cut], &fq[cut..]] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(part).unwrap();
        mm.extend(gz.finish().unwrap());
    }
    fs::write(dir.join("mm.fq.gz"), mm).unwrap();
    // BGZF (bgzip, inflated in parallel by fasthts) and bzip2, both detected
    // by content as khmer does; small blocks (-b is not in bgzip 1.16, so
    // the file is made of the reads repeated to span several jobs)
    let big: Vec<u8> = fq.repeat(8);
    fs::write(dir.join("big.fq"), &big).unwrap();
    for (tool, out) in [("bgzip", "big.fq.bgz"), ("bzip2", "r.fq.bz2")] {
        let src = if tool == "bgzip" { "big.fq" } else { "r.fq" };
        let o = Command::new(tool).args(["-c", src]).current_dir(dir).output().expect(tool);
        assert!(o.status.success(), "{tool} failed");
        fs::write(dir.join(out), o.stdout).unwrap();
    }
    let mut fa = Vec::new();
    for i in 0..600 {
        let len = [150usize, 60, 25, 33][rng.below(4) as usize];
        let s = read(&mut rng, len, i + 1);
        write!(fa, ">seq{i} desc\n{}\n{}\n", String::from_utf8_lossy(&s[..len / 2]), String::from_utf8_lossy(&s[len / 2..])).unwrap();
    }
    fs::write(dir.join("r.fa"), &fa).unwrap();
}

struct Dirs {
    root: TempDir,
    k: PathBuf,
    f: PathBuf,
}

fn dirs(name: &str) -> Dirs {
    let root = TempDir::new(&format!("kmer-vs-khmer-{name}"));
    make_data(&root.0, 0x5eed_1234 ^ name.len() as u64);
    Dirs { k: root.path("k"), f: root.path("f"), root }
}

impl Dirs {
    fn fresh(&self) {
        for d in [&self.k, &self.f] {
            let _ = fs::remove_dir_all(d);
            fs::create_dir_all(d).unwrap();
        }
    }
    /// Run the khmer script and the fasthts subcommand with the same
    /// arguments, each in its own directory; `../` reaches the data.
    /// `extra` options go to fasthts only (e.g. `-T 2` where the khmer
    /// script has no threads option).
    fn run_with(&self, script: &str, sub: &str, args: &[&str], extra: &[&str]) -> (i32, i32) {
        self.fresh();
        let k = Command::new("/usr/bin/python3").arg(Path::new(KHMER_BIN).join(script)).args(args).current_dir(&self.k).output().unwrap();
        let f = fasthts().args(["kmer", sub]).args(extra).args(args).current_dir(&self.f).output().unwrap();
        (k.status.code().unwrap_or(-1), f.status.code().unwrap_or(-1))
    }
    /// Every file khmer wrote must exist in fasthts' directory with the same
    /// bytes (`.gz` files compared decompressed), and no extra files.
    fn compare(&self, what: &str) {
        self.compare_files(what, false)
    }
    /// With `subset`, fasthts may leave out files khmer leaves behind on an
    /// error path (khmer touches its outputs before failing).
    fn compare_files(&self, what: &str, subset: bool) {
        let mut kn: Vec<String> = fs::read_dir(&self.k).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        let mut fnames: Vec<String> =
            fs::read_dir(&self.f).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        kn.sort();
        fnames.sort();
        if subset {
            assert!(fnames.iter().all(|n| kn.contains(n)), "{what}: extra output files {fnames:?} vs {kn:?}");
        } else {
            assert_eq!(kn, fnames, "{what}: output file names differ");
        }
        for n in &fnames {
            let a = read_maybe_gz(&self.k.join(n));
            let b = in_khmer_words(n, read_maybe_gz(&self.f.join(n)));
            assert!(a == b, "{what}: {n} differs ({} vs {} bytes)", a.len(), b.len());
        }
    }
}

fn read_maybe_gz(p: &Path) -> Vec<u8> {
    let raw = fs::read(p).unwrap();
    if raw.len() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
        use std::io::Read;
        let mut d = flate2::read::MultiGzDecoder::new(&raw[..]);
        let mut v = Vec::new();
        d.read_to_end(&mut v).unwrap();
        v
    } else {
        raw
    }
}

fn check(d: &Dirs, script: &str, sub: &str, args: &[&str]) {
    check_with(d, script, sub, args, &[])
}

fn check_with(d: &Dirs, script: &str, sub: &str, args: &[&str], extra: &[&str]) {
    let (kc, fc) = d.run_with(script, sub, args, extra);
    let what = format!("{sub} {} {}", extra.join(" "), args.join(" "));
    assert_eq!(kc, fc, "{what}: exit codes differ (khmer {kc}, fasthts {fc})");
    d.compare_files(&what, kc != 0);
}

#[test]
fn count_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("count");
    let cases: &[&[&str]] = &[
        &["-k", "20", "-x", "1e5", "-s", "json", "out.ct", "../r.fq", "../r.fa"],
        &["-k", "4", "-x", "300", "-N", "2", "-f", "-s", "tsv", "out.ct", "../r.fq"], // many bigcounts
        &["-k", "4", "-x", "300", "-N", "2", "out.ct", "../r.fq"],                    // fp > 0.2: exit 1 after save
        &["-k", "6", "-x", "5000", "out.ct.gz", "../r.fq.gz", "../r.fa"],
        &["-k", "9", "-x", "1e5", "out.ct", "../mm.fq.gz"],
        &["-k", "11", "-x", "1e5", "out.ct", "../big.fq.bgz", "../r.fq.bz2"],
        &["-k", "5", "-x", "1000", "-N", "3", "-b", "out.ct", "../r.fa"],
        &["-k", "32", "-M", "4e5", "out.ct", "../r.fq"],
        &["-k", "12", "-N", "1", "-x", "4e5", "-T", "1", "out.ct", "../r.fq"],
        &["-k", "12", "-x", "1e5", "-M", "1e6", "out.ct", "../r.fq"], // -x with -M: usage error
        &["-k", "33", "out.ct", "../r.fq"],
        &["-k", "12", "-N", "21", "out.ct", "../r.fq"],
        &["-k", "12", "out.ct", "../missing.fq"],
    ];
    for c in cases {
        check(&d, "load-into-counting.py", "count", c);
    }
    // threads: fasthts -T 2/3 gives khmer's -T 1 file (khmer's own
    // multi-threaded occupied count and bigcount order race)
    for (extra, t) in
        [(&["-k", "5", "-x", "1e5"][..], "2"), (&["-k", "4", "-x", "300", "-N", "3", "-f"][..], "3"), (&["-k", "12", "-N", "1"][..], "2")]
    {
        d.fresh();
        let k = Command::new("/usr/bin/python3")
            .arg(Path::new(KHMER_BIN).join("load-into-counting.py"))
            .args(extra)
            .args(["-T", "1", "out.ct", "../r.fq"])
            .current_dir(&d.k)
            .output()
            .unwrap();
        let f = fasthts().args(["kmer", "count"]).args(extra).args(["-T", t, "out.ct", "../r.fq"]).current_dir(&d.f).output().unwrap();
        assert_eq!(k.status.code(), f.status.code());
        d.compare(&format!("count {extra:?} -T {t} vs khmer -T 1"));
    }
}

fn make_ct(d: &Dirs, name: &str, args: &[&str], inputs: &[&str]) {
    let st = Command::new("/usr/bin/python3")
        .arg(Path::new(KHMER_BIN).join("load-into-counting.py"))
        .arg("-q")
        .args(args)
        .arg(name)
        .args(inputs)
        .current_dir(&d.root.0)
        .output()
        .unwrap();
    assert!(st.status.success() || args.contains(&"-f"), "making {name}");
}

#[test]
fn abundance_dist_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("abund");
    make_ct(&d, "g.ct", &["-k", "15", "-x", "4e5", "-N", "3"], &["r.fq", "r.fa"]);
    make_ct(&d, "g4.ct", &["-k", "4", "-x", "300", "-N", "2", "-f"], &["r.fq"]);
    make_ct(&d, "nb.ct", &["-k", "5", "-x", "1e4", "-b"], &["r.fq"]);
    let cases: &[&[&str]] = &[
        &["../g.ct", "../r.fq", "out.csv"],
        &["-z", "../g.ct", "../r.fq", "out.csv"],
        &["-b", "../g.ct", "../r.fa", "out.csv"],
        &["../g4.ct", "../r.fa", "out.csv"],
        &["-z", "-b", "../g4.ct", "../r.fq.gz", "out.csv"],
        &["../nb.ct", "../r.fq", "out.csv"],
        &["../g.ct", "../missing.fq", "out.csv"],
    ];
    for c in cases {
        check(&d, "abundance-dist.py", "abundance-dist", c);
    }
    // fasthts' -T (an extension here) gives khmer's single-thread CSV
    for ct in ["../g.ct", "../g4.ct"] {
        d.fresh();
        let k = Command::new("/usr/bin/python3")
            .arg(Path::new(KHMER_BIN).join("abundance-dist.py"))
            .args([ct, "../r.fq", "out.csv"])
            .current_dir(&d.k)
            .output()
            .unwrap();
        let f = fasthts().args(["kmer", "abundance-dist", "-T", "2", ct, "../r.fq", "out.csv"]).current_dir(&d.f).output().unwrap();
        assert_eq!(k.status.code(), f.status.code());
        d.compare(&format!("abundance-dist -T 2 {ct}"));
    }
}

#[test]
fn normalize_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("norm");
    make_ct(&d, "g.ct", &["-k", "15", "-x", "4e5", "-N", "3"], &["r.fq"]);
    let cases: &[&[&str]] = &[
        &["-C", "5", "-k", "15", "-x", "4e5", "../r.fq", "../r.fa"],
        &["-C", "3", "-k", "12", "-x", "1e4", "-N", "3", "../r.fq.gz"],
        &["-C", "5", "-k", "15", "-x", "4e5", "--force_single", "../r.fq"],
        &["-C", "20", "-k", "20", "-x", "1e5", "-R", "rep.txt", "--report-frequency", "300", "../r.fq", "../r.fa"],
        &["-C", "2", "-k", "15", "-x", "4e5", "-s", "saved.ct", "../r.fa"],
        &["-C", "0", "-k", "15", "../r.fq"],
        &["-C", "4", "-k", "10", "-x", "3e3", "-N", "2", "-o", "out.fq", "../r.fq", "../r.fa"],
        &["-p", "-C", "5", "-k", "15", "-x", "4e5", "../r.fa"], // unpaired with -p: exit 1
        &["-C", "5", "-k", "15", "-x", "4e5", "-l", "../g.ct", "-s", "saved.ct", "../r.fa"],
        &["-C", "5", "-k", "15", "-x", "4e5", "-u", "../r.fa", "-o", "-", "../r.fq"],
        &["-C", "5", "-k", "15", "-x", "4e5", "--gzip", "../r.fa"],
        &["-C", "256", "../r.fa"],
        &["--force_single", "-p", "../r.fa"],
        // r.fq fails at its first orphan: the units before it stay counted
        // (two threads left the last one's statistics out)
        &["-p", "-f", "-C", "5", "-k", "15", "-x", "4e5", "-s", "saved.ct", "../r.fa", "../r.fq"],
    ];
    for c in cases {
        check(&d, "normalize-by-median.py", "normalize", c);
        // -T 2 splits the tables between two threads in lockstep: same
        // decisions, outputs, reports and saved tables
        check_with(&d, "normalize-by-median.py", "normalize", c, &["-T", "2"]);
    }
    // fasthts' -T (an extension here) gives khmer's output
    d.fresh();
    let args = ["-C", "5", "-k", "15", "-x", "4e5", "-R", "rep.txt", "../r.fq", "../r.fa"];
    let k = Command::new("/usr/bin/python3")
        .arg(Path::new(KHMER_BIN).join("normalize-by-median.py"))
        .args(args)
        .current_dir(&d.k)
        .output()
        .unwrap();
    let f = fasthts().args(["kmer", "normalize", "-T", "2"]).args(args).current_dir(&d.f).output().unwrap();
    assert_eq!(k.status.code(), f.status.code());
    d.compare("normalize -T 2");
}

#[test]
fn filter_abund_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("filter");
    make_ct(&d, "g.ct", &["-k", "15", "-x", "4e5", "-N", "3"], &["r.fq", "r.fa"]);
    make_ct(&d, "g4.ct.gz", &["-k", "4", "-x", "300", "-N", "2", "-f"], &["r.fq"]);
    let cases: &[&[&str]] = &[
        &["../g.ct", "../r.fq", "../r.fa"],
        &["-C", "5", "../g.ct", "../r.fq.gz"],
        &["-C", "3", "-V", "-Z", "4", "../g.ct", "../r.fq", "../r.fa"],
        &["-C", "0", "-T", "2", "../g.ct", "../r.fq"],
        &["-C", "200", "-o", "all.fq", "../g4.ct.gz", "../r.fq", "../r.fa"],
        &["-C", "2", "--gzip", "../g.ct", "../r.fa"],
    ];
    for c in cases {
        check(&d, "filter-abund.py", "filter-abund", c);
    }
}

#[test]
fn trim_low_abund_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("trim");
    let cases: &[&[&str]] = &[
        &["../r.fq", "../r.fa"],
        &["-V", "../r.fq", "../r.fa"],
        &["-C", "3", "-k", "15", "-x", "4e5", "../r.fq"],
        &["-V", "-Z", "10", "-C", "3", "-k", "12", "../r.fq", "../r.fa"],
        &["--ignore-pairs", "-k", "15", "../r.fq"],
        &["--single-pass", "-k", "15", "../r.fq", "../r.fa"],
        &["--diginorm", "-k", "15", "-C", "3", "../r.fq"],
        &["-k", "15", "-o", "all.fq", "-s", "saved.ct", "../r.fq", "../r.fa"],
        &["-Z", "10", "../r.fq"], // -Z without -V: exit 1
        &["-V", "-k", "15", "-o", "out.fq", "--summary-info", "json", "../r.fq", "../r.fa"],
        &["-V", "-Z", "5", "-C", "3", "-k", "12", "-o", "out.fq", "--summary-info", "tsv", "../r.fq"],
    ];
    for c in cases {
        check(&d, "trim-low-abund.py", "trim-low-abund", c);
    }
}

/// What a run left: exit status, stdout, stderr
/// and every file in its directory.
type RunOutput = (Option<i32>, Vec<u8>, String, Vec<(String, Vec<u8>)>);

fn run_in(dir: &Path, args: &[&str]) -> RunOutput {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).unwrap();
    let out = fasthts().arg("kmer").args(args).current_dir(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), fs::read(e.path()).unwrap()))
        .collect();
    files.sort();
    (out.status.code(), out.stdout, stderr, files)
}

/// Every k-mer command writes the same files, output and messages at -T 1,
/// at the default (all cores) and at more threads than cores or tables
/// (trim-low-abund's thread option is -@: its -T is khmer's --tempdir).
#[test]
fn same_output_at_any_thread_count() {
    if !compressors_available() {
        return;
    }
    let d = dirs("threads");
    for (table, args) in [("g.ct", &["-k", "15", "-x", "4e5", "-N", "3"][..]), ("g4.ct", &["-k", "4", "-x", "300", "-N", "2", "-f"][..])] {
        let st = fasthts().args(["kmer", "count", "-q"]).args(args).args([table, "r.fq", "r.fa"]).current_dir(&d.root.0).output();
        assert!(st.unwrap().status.success(), "making {table}");
    }
    let runs: &[(&str, &str, &[&str])] = &[
        ("count", "-T", &["-k", "20", "-x", "1e5", "-s", "json", "out.ct", "../r.fq", "../r.fa"]),
        ("count", "-T", &["-k", "4", "-x", "300", "-N", "3", "-f", "-s", "tsv", "out.ct", "../r.fq"]),
        ("count", "-T", &["-k", "12", "-x", "1e5", "out.ct.gz", "../big.fq.bgz", "../r.fq.bz2"]),
        ("abundance-dist", "-T", &["../g.ct", "../r.fq", "out.csv"]),
        ("abundance-dist", "-T", &["-z", "../g4.ct", "../big.fq.bgz", "out.csv"]),
        (
            "normalize",
            "-T",
            &["-C", "5", "-k", "15", "-x", "4e5", "-R", "rep.txt", "--report-frequency", "300", "-s", "s.ct", "../r.fq", "../r.fa"],
        ),
        ("normalize", "-T", &["-p", "-f", "-C", "5", "-k", "15", "-x", "4e5", "-s", "s.ct", "../r.fa", "../r.fq"]),
        ("normalize", "-T", &["-C", "3", "-k", "12", "-x", "1e4", "-N", "3", "--gzip", "-o", "out.fq.gz", "../big.fq"]),
        ("filter-abund", "-T", &["-o", "all.fq", "../g.ct", "../big.fq", "../r.fa"]),
        ("filter-abund", "-T", &["-V", "-Z", "4", "-C", "3", "../g4.ct", "../r.fq"]),
        ("trim-low-abund", "-@", &["-V", "-k", "15", "-x", "1e5", "../r.fq", "../r.fa"]),
        ("trim-low-abund", "-@", &["-k", "15", "-x", "1e5", "-o", "out.fq", "-s", "s.ct", "--summary-info", "json", "../r.fq"]),
    ];
    for (sub, flag, args) in runs {
        let at = |threads: Option<&str>| {
            let mut all = vec![*sub];
            all.extend(threads.map(|t| [*flag, t]).iter().flatten());
            all.extend_from_slice(args);
            run_in(&d.root.path(&format!("t{}", threads.unwrap_or("default"))), &all)
        };
        let one = at(Some("1"));
        assert!(!one.3.is_empty() || one.0 != Some(0), "{sub} {args:?}: no output");
        for threads in [None, Some("5")] {
            let other = at(threads);
            let what = format!("{sub} {args:?}: -T 1 vs {}", threads.unwrap_or("the default"));
            assert_eq!(one.0, other.0, "{what}: exit status");
            assert!(one.1 == other.1, "{what}: stdout differs");
            // trim-low-abund names its temporary directory (after the process id)
            let masked = crate::kmer_args::tempdir_named;
            assert_eq!(masked(&one.2), masked(&other.2), "{what}: stderr");
            let names = |o: &RunOutput| o.3.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
            assert_eq!(names(&one), names(&other), "{what}: output files");
            for (a, b) in one.3.iter().zip(&other.3) {
                assert!(a.1 == b.1, "{what}: {} differs", a.0);
            }
        }
    }
}

/// Bad input: one clear error line, non-zero exit, no partial output.
#[test]
fn bad_input_fails_cleanly() {
    if !compressors_available() {
        return;
    }
    let dir = TempDir::new("kmer-bad");
    let root = &dir.0;
    make_data(root, 7);
    let fq = fs::read(root.join("r.fq.gz")).unwrap();
    fs::write(root.join("trunc.fq.gz"), &fq[..fq.len() / 2]).unwrap();
    for f in ["big.fq.bgz", "r.fq.bz2"] {
        let v = fs::read(root.join(f)).unwrap();
        fs::write(root.join(format!("trunc.{f}")), &v[..v.len() / 2]).unwrap();
        let mut flipped = v.clone();
        flipped[v.len() / 3] ^= 0x40;
        fs::write(root.join(format!("flipped.{f}")), &flipped).unwrap();
    }
    fs::write(root.join("mismatch.fq"), b"@a\nACGTACGT\n+\nIIII\n").unwrap();
    fs::write(root.join("garbage.fq"), [0u8, 159, 146, 150, 1, 2, 3, 4, 5]).unwrap();
    fs::write(root.join("empty.fq"), b"").unwrap();
    let ok = fasthts().args(["kmer", "count", "-q", "-k", "12", "good.ct", "r.fq"]).current_dir(root).status().unwrap();
    assert!(ok.success());
    let ct = fs::read(root.join("good.ct")).unwrap();
    let mut v4 = ct.clone();
    v4[4] = 3;
    fs::write(root.join("version.ct"), &v4).unwrap();
    fs::write(root.join("trunc.ct"), &ct[..ct.len() / 2]).unwrap();

    for input in [
        "trunc.fq.gz",
        "trunc.big.fq.bgz",
        "flipped.big.fq.bgz",
        "trunc.r.fq.bz2",
        "flipped.r.fq.bz2",
        "mismatch.fq",
        "garbage.fq",
        "empty.fq",
    ] {
        for t in ["1", "2"] {
            let out = fasthts().args(["kmer", "count", "-q", "-k", "12", "-T", t, "bad.ct", input]).current_dir(root).output().unwrap();
            assert!(!out.status.success(), "{input}: should fail");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{input}: {err}");
            assert!(!root.join("bad.ct").exists(), "{input}: no .ct should be written");
            assert!(!root.join("bad.ct.info").exists(), "{input}: no .info should be left");
        }
        let out = fasthts().args(["kmer", "filter-abund", "-o", "bad.out", "good.ct", input]).current_dir(root).output().unwrap();
        assert!(!out.status.success(), "filter {input}: should fail");
        assert!(!root.join("bad.out").exists(), "filter {input}: no partial output");
    }
    for ct in ["version.ct", "trunc.ct", "r.fq"] {
        let out = fasthts().args(["kmer", "abundance-dist", "-q", ct, "r.fq", "bad.csv"]).current_dir(root).output().unwrap();
        assert!(!out.status.success(), "{ct}: should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && err.trim().lines().count() == 1, "{ct}: {err}");
        assert!(!root.join("bad.csv").exists());
    }
}

/// The k > 32 extension (`--long-k`): counts never under-estimate the exact
/// counts, and khmer's k <= 32 error stays the default.
#[test]
fn long_k_extension_counts() {
    if !compressors_available() {
        return;
    }
    let dir = TempDir::new("kmer-longk");
    let root = &dir.0;
    make_data(root, 11);
    let out = fasthts().args(["kmer", "count", "-q", "-k", "40", "l.ct", "r.fq"]).current_dir(root).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out =
        fasthts().args(["kmer", "count", "-q", "--long-k", "-k", "40", "-x", "2e5", "l.ct", "r.fq"]).current_dir(root).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let g = fasthts_kmer::Countgraph::load(&root.join("l.ct")).unwrap();
    assert_eq!(g.ksize(), 40);
    let mut exact = std::collections::HashMap::new();
    for r in fasthts_kmer::seqio::read_all(root.join("r.fq").to_str().unwrap()).unwrap() {
        for h in fasthts_kmer::KmerIter::new(&r.seq, 40, fasthts_kmer::Cleaning::CppParser) {
            *exact.entry(h).or_insert(0u64) += 1;
        }
    }
    assert!(!exact.is_empty());
    for (&h, &c) in &exact {
        assert!(g.get(h) as u64 >= c.min(65535), "under-estimate");
    }
}

/// Names in `dir` of temporaries (`.NAME.tmp.PID`, `.NAME.tmp.PID.table`).
fn temporaries_in(dir: &Path) -> Vec<String> {
    fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.contains(".tmp.")).collect()
}

/// The table counted in its mapped output file (a regular file, or a
/// symbolic link's target), on the heap (`FASTHTS_NO_TABLE_MAP`) and
/// written to special files that cannot be mapped (`/dev/stdout`, a
/// FIFO): khmer's `.ct` every time, at -T 1 and 2, with no temporary left;
/// the same for filter-abund-single's `--savegraph`.
#[test]
fn count_table_in_its_file_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("mapped");
    // bigcount entries (poly-A reads) and a full header
    let args = ["-k", "12", "-x", "2e5", "-N", "3"];
    d.fresh();
    let k = Command::new("/usr/bin/python3")
        .arg(Path::new(KHMER_BIN).join("load-into-counting.py"))
        .args(args)
        .args(["-T", "1", "out.ct", "../r.fq", "../r.fa"])
        .current_dir(&d.k)
        .output()
        .unwrap();
    assert!(k.status.success());
    let want = fs::read(d.k.join("out.ct")).unwrap();
    let count = |out: &str, threads: &str, no_map: bool| {
        let mut c = fasthts();
        c.args(["kmer", "count", "-q"]).args(args).args(["-T", threads, out, "../r.fq", "../r.fa"]).current_dir(&d.f);
        if no_map {
            c.env("FASTHTS_NO_TABLE_MAP", "1");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "count {out} -T {threads}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(temporaries_in(&d.f), Vec::<String>::new(), "count {out} -T {threads}: temporaries left");
        o.stdout
    };
    for threads in ["1", "2"] {
        for no_map in [false, true] {
            d.fresh();
            count("out.ct", threads, no_map);
            assert!(fs::read(d.f.join("out.ct")).unwrap() == want, "out.ct -T {threads} (heap: {no_map}) differs from khmer's");
        }
        // through a symbolic link: its target is replaced, the link stays
        d.fresh();
        fs::write(d.f.join("real.ct"), b"old").unwrap();
        std::os::unix::fs::symlink("real.ct", d.f.join("link.ct")).unwrap();
        count("link.ct", threads, false);
        assert!(fs::symlink_metadata(d.f.join("link.ct")).unwrap().file_type().is_symlink());
        assert!(fs::read(d.f.join("real.ct")).unwrap() == want, "via a link -T {threads}");
        // special files are written, not mapped
        d.fresh();
        assert!(count("/dev/stdout", threads, false) == want, "/dev/stdout -T {threads}");
        d.fresh();
        let fifo = d.f.join("out.fifo");
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let reader = std::thread::spawn(move || fs::read(fifo).unwrap());
        count("out.fifo", threads, false);
        assert!(reader.join().unwrap() == want, "FIFO -T {threads}");
    }
    // filter-abund-single --savegraph: a file (mapped) and /dev/stdout
    let fas = ["-k", "12", "-x", "2e5", "-N", "3", "-C", "2"];
    d.fresh();
    let k = Command::new("/usr/bin/python3")
        .arg(Path::new(KHMER_BIN).join("filter-abund-single.py"))
        .args(fas)
        .args(["--savegraph", "sg.ct", "-o", "out.fq", "../r.fq"])
        .current_dir(&d.k)
        .output()
        .unwrap();
    assert!(k.status.success());
    let (want_sg, want_fq) = (fs::read(d.k.join("sg.ct")).unwrap(), fs::read(d.k.join("out.fq")).unwrap());
    for (sg, threads) in [("sg.ct", "1"), ("sg.ct", "2"), ("/dev/stdout", "2")] {
        d.fresh();
        let o = fasthts()
            .args(["kmer", "filter-abund-single", "-q"])
            .args(fas)
            .args(["-T", threads, "--savegraph", sg, "-o", "out.fq", "../r.fq"])
            .current_dir(&d.f)
            .output()
            .unwrap();
        assert!(o.status.success(), "filter-abund-single --savegraph {sg}: {}", String::from_utf8_lossy(&o.stderr));
        let saved = if sg == "sg.ct" { fs::read(d.f.join(sg)).unwrap() } else { o.stdout };
        assert!(saved == want_sg, "filter-abund-single --savegraph {sg} -T {threads}: differs from khmer's");
        assert!(fs::read(d.f.join("out.fq")).unwrap() == want_fq);
        assert_eq!(temporaries_in(&d.f), Vec::<String>::new());
    }
}

/// A count interrupted while its table is mapped in the output's
/// temporary (seen in the directory: the mapped path is in use) leaves
/// nothing: no temporary, no `.ct`, no `.info`.
#[test]
fn interrupted_count_leaves_no_table_file() {
    let dir = TempDir::new("kmer-mapped-interrupt");
    let w = dir.path("w");
    fs::create_dir_all(&w).unwrap();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // reads on a pipe that stays open: the count waits for more, mapped
        let mut child = fasthts()
            .args(["kmer", "count", "-q", "-k", "20", "-x", "1e6", "-N", "4", "out.ct", "/dev/stdin"])
            .current_dir(&w)
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        for i in 0..2000 {
            writeln!(input, "@r{i}\n{}\n+\n{}", "ACGTTGCAAGGCTTAACCGGTTAAACCCGGGTTTAAA", "I".repeat(37)).unwrap();
        }
        input.flush().unwrap();
        let table = format!(".out.ct.tmp.{}.table", child.id());
        let start = std::time::Instant::now();
        while !w.join(&table).exists() {
            assert!(start.elapsed() < std::time::Duration::from_secs(60), "no mapped table file {table} appeared");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        drop(input);
        assert_eq!(out.status.code(), Some(128 + sig), "{}", String::from_utf8_lossy(&out.stderr));
        let left: Vec<_> = fs::read_dir(&w).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "signal {sig} left {left:?}");
    }
}

/// Eleven inputs: count saves the table after the eleventh (khmer's
/// "mid-save") while the table is still mapped in the final output's
/// temporary, then saves it again at the end: khmer's files, and no
/// temporary left.
#[test]
fn count_with_a_mid_save_matches_khmer() {
    if !khmer_available() {
        return;
    }
    let d = dirs("midsave");
    let mut args = vec!["-k", "12", "-x", "2e5", "-N", "3", "out.ct"];
    args.extend(["../r.fa"; 11]);
    check(&d, "load-into-counting.py", "count", &args);
    assert_eq!(temporaries_in(&d.f), Vec::<String>::new());
}
