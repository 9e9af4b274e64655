//! `fasthts faidx` / `fqidx` against samtools 1.16: the `.fai` and `.gzi`
//! it writes, the regions it prints (stdout byte for byte, and the exit
//! status), its refusals.

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::path::Path;
use std::process::{Command, Output};

/// bgzip (htslib's tools), through `require`.
fn have_bgzip() -> bool {
    require(runs("bgzip", &["--version"]), "bgzip (Debian package tabix)")
}

fn run_in(dir: &Path, mut cmd: Command, args: &[&str]) -> Output {
    cmd.current_dir(dir).args(args);
    run(cmd)
}

/// Runs `samtools ARGS` in `dir`/samtools and `fasthts ARGS` in
/// `dir`/fasthts (each with its own copy of the inputs, so each builds
/// its own indexes).
fn both(dir: &TempDir, args: &[&str]) -> (Output, Output) {
    let theirs = run_in(&dir.path("samtools"), Command::new("samtools"), args);
    let ours = run_in(&dir.path("fasthts"), fasthts(), args);
    (ours, theirs)
}

/// Writes `name` with `bytes` into both sides' directories.
fn put(dir: &TempDir, name: &str, bytes: &[u8]) {
    for side in ["samtools", "fasthts"] {
        std::fs::create_dir_all(dir.path(side)).unwrap();
        std::fs::write(dir.path(side).join(name), bytes).unwrap();
    }
}

fn same_file(dir: &TempDir, name: &str) {
    let ours = std::fs::read(dir.path("fasthts").join(name));
    let theirs = std::fs::read(dir.path("samtools").join(name));
    match (ours, theirs) {
        (Ok(a), Ok(b)) => assert!(a == b, "{name} differs from samtools'"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("{name}: fasthts wrote it: {}, samtools: {}", a.is_ok(), b.is_ok()),
    }
}

fn assert_same(args: &[&str], ours: &Output, theirs: &Output) {
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{args:?}: exit status; ours: {}; samtools: {}",
        text(&ours.stderr),
        text(&theirs.stderr)
    );
    assert!(ours.stdout == theirs.stdout, "{args:?}: stdout differs: ours {} bytes, samtools {}", ours.stdout.len(), theirs.stdout.len());
}

/// A FASTA of `seqs` (name, length, line width; `crlf` line ends).
fn fasta(rng: &mut Rng, seqs: &[(&str, usize, usize)], crlf: bool) -> Vec<u8> {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    for &(name, len, width) in seqs {
        out.push_str(&format!(">{name} some description{eol}"));
        let bases: String =
            random_bases(rng, len).chars().enumerate().map(|(i, c)| if i % 7 == 3 { c.to_ascii_lowercase() } else { c }).collect();
        for line in bases.as_bytes().chunks(width) {
            out.push_str(std::str::from_utf8(line).unwrap());
            out.push_str(eol);
        }
    }
    out.into_bytes()
}

fn bgzip(dir: &TempDir, name: &str) {
    for side in ["samtools", "fasthts"] {
        let out = run_in(&dir.path(side), Command::new("bgzip"), &["-f", "-k", "-@1", name]);
        assert!(out.status.success(), "bgzip: {}", text(&out.stderr));
    }
}

const SEQS: [(&str, usize, usize); 6] =
    [("chr1", 150_000, 60), ("chr2", 70_001, 70), ("HLA:1-2", 500, 50), ("short", 7, 60), ("chr2:5", 90, 80), ("last", 12_345, 13)];

#[test]
fn indexes_match_samtools() {
    let Some(dir) = with_samtools("faidx-index") else { return };
    let mut rng = Rng::new(11);
    put(&dir, "ref.fa", &fasta(&mut rng, &SEQS, false));
    put(&dir, "crlf.fa", &fasta(&mut rng, &SEQS[..3], true));
    // A record without bases is left out; leading spaces before a name are
    // skipped; the last line has no line end.
    put(&dir, "odd.fa", b">empty\n>  spaced name\nACGT\nAC\n\n>x\tdesc\nAAAAA\nAAAAA\nA");
    put(&dir, "reads.fq", random_fastq(5, 50, 101, "read").as_bytes());
    put(&dir, "wrapped.fq", b"@r1\nACG\nTA\n+\nIII\nII\n@r2 x\nA\n+r2\nI\n");
    for name in ["ref.fa", "crlf.fa", "odd.fa", "reads.fq", "wrapped.fq"] {
        let (ours, theirs) = both(&dir, &["faidx", name]);
        assert_same(&[name], &ours, &theirs);
        assert!(ours.stderr.is_empty(), "{name}: {}", text(&ours.stderr));
        same_file(&dir, &format!("{name}.fai"));
    }
    let (ours, theirs) = both(&dir, &["fqidx", "reads.fq", "-o", "named.fai"]);
    assert_same(&["fqidx -o"], &ours, &theirs);
    same_file(&dir, "named.fai");
    if !have_bgzip() {
        return;
    }
    bgzip(&dir, "ref.fa");
    for args in [&["faidx", "ref.fa.gz"][..], &["faidx", "ref.fa.gz", "--fai-idx", "x.fai", "--gzi-idx", "x.gzi"]] {
        let (ours, theirs) = both(&dir, args);
        assert_same(args, &ours, &theirs);
    }
    for name in ["ref.fa.gz.fai", "ref.fa.gz.gzi", "x.fai", "x.gzi"] {
        same_file(&dir, name);
    }
}

/// Regions people write and the edges samtools has rules for: a start of
/// 0 (no bases, htslib's unsigned comparison), an open start or end,
/// thousands separators, a region past the end (zero-length or truncated,
/// with a warning), names with colons (braces), unknown names.
fn region_texts(rng: &mut Rng) -> Vec<String> {
    let mut regions: Vec<String> = [
        "chr1",
        "chr1:0-5",
        "chr1:1-5",
        "chr1:-30",
        "chr1:149,990",
        "chr1:1,000-2k",
        "chr1:1-1",
        "chr2:70001",
        "chr2:69990-80000",
        "chr2:80000-90000",
        "HLA:1-2",
        "HLA:1-2:5-9",
        "{HLA:1-2}:3-4",
        "chr2:5",
        "{chr2:5}",
        "{chr2}:5-6",
        "short",
        "short:7-7",
        "last:100-",
        "chr1:5-4",
        "chr1:x",
        "nope",
        "chr1:5-10x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for _ in 0..200 {
        let (name, len, _) = SEQS[rng.below(SEQS.len() as u64) as usize];
        let start = rng.below(len as u64 + 10);
        let end = start + rng.below(3000);
        let name = if name.contains(':') { format!("{{{name}}}") } else { name.to_string() };
        regions.push(format!("{name}:{}-{end}", start + 1));
    }
    regions
}

#[test]
fn regions_match_samtools() {
    let Some(dir) = with_samtools("faidx-regions") else { return };
    let mut rng = Rng::new(12);
    put(&dir, "ref.fa", &fasta(&mut rng, &SEQS, false));
    put(&dir, "crlf.fa", &fasta(&mut rng, &SEQS, true));
    let regions = region_texts(&mut rng);
    // Regions that all exist: without -c, samtools stops at the first that
    // does not.
    let found: Vec<&str> =
        regions.iter().map(String::as_str).filter(|r| !["chr1:5-4", "chr1:x", "nope", "chr1:5-10x", "chr2:5"].contains(r)).collect();
    let mut file = regions.join("\n");
    file.push_str("\r\nchr2:3-9\n\nchr1:7-8");
    put(&dir, "regions.txt", file.as_bytes());
    let mut inputs = vec!["ref.fa", "crlf.fa"];
    if have_bgzip() {
        bgzip(&dir, "ref.fa");
        inputs.push("ref.fa.gz");
    }
    let option_sets: [&[&str]; 7] = [
        &[],
        &["-i"],
        &["-n", "7"],
        &["-n", "0"],
        &["--mark-strand", "sign"],
        &["-i", "--mark-strand", "custom, forward, reverse", "--length", "100"],
        &["--mark-strand", "no", "-i", "-n", "1"],
    ];
    for input in &inputs {
        for options in option_sets {
            let args: Vec<&str> = ["faidx"].iter().chain(options).chain([input]).chain(&found).copied().collect();
            let (ours, theirs) = both(&dir, &args);
            assert_same(&args[..args.len().min(12)], &ours, &theirs);
            let args: Vec<&str> =
                ["faidx", "-c", "-r", "regions.txt"].iter().chain(options).chain(&[*input, "chr2:1-3", "nope"]).copied().collect();
            let (ours, theirs) = both(&dir, &args);
            assert_same(&args, &ours, &theirs);
        }
        // Without -c, the first missing region ends the run (its name line
        // printed), exit 1.
        for args in [&["faidx", input, "chr1:1-5", "nope", "chr2"][..], &["faidx", "-r", "regions.txt", input, "chr1"]] {
            let (ours, theirs) = both(&dir, args);
            assert_same(args, &ours, &theirs);
            let stderr = text(&ours.stderr);
            assert!(stderr.lines().last().is_some_and(|l| l.contains("failed to fetch sequence in ")), "{args:?}: {stderr}");
        }
        // Warnings, one line each, exit 0.
        let (ours, theirs) = both(&dir, &["faidx", input, "chr1:1-5", "chr2:69990-80000", "chr2:80000-90000"]);
        assert_same(&["warnings"], &ours, &theirs);
        let stderr = text(&ours.stderr);
        assert!(
            stderr.contains("Truncated sequence: chr2:69990-80000") && stderr.contains("Zero length sequence: chr2:80000-90000"),
            "{stderr}"
        );
    }
}

#[test]
fn fastq_regions_match_samtools() {
    let Some(dir) = with_samtools("faidx-fastq") else { return };
    let mut rng = Rng::new(13);
    let mut reads = String::new();
    for i in 0..40 {
        let bases = random_bases(&mut rng, 151);
        let quals: String = (0..151).map(|_| (b'!' + rng.below(42) as u8) as char).collect();
        reads.push_str(&format!("@read{i} comment\n{bases}\n+\n{quals}\n"));
    }
    put(&dir, "reads.fq", reads.as_bytes());
    put(&dir, "wrapped.fq", b"@r1\nACGTA\nCG\n+\nABCDE\nFG\n@r2 x\nA\n+r2\nI\n");
    let names: Vec<String> = (0..40).map(|i| format!("read{i}")).collect();
    let mut regions: Vec<String> = names.iter().take(10).cloned().collect();
    regions.extend(names.iter().skip(10).take(10).map(|n| format!("{n}:5-40")));
    regions.push(format!("{}:140-200", names[30]));
    let regions: Vec<&str> = regions.iter().map(String::as_str).collect();
    for options in [&["fqidx"][..], &["fqidx", "-i", "-n", "30"], &["faidx", "-f"], &["faidx"], &["fqidx", "-c"]] {
        let args: Vec<&str> = options.iter().chain(&["reads.fq"]).chain(&regions).copied().collect();
        let (ours, theirs) = both(&dir, &args);
        assert_same(&args, &ours, &theirs);
        for args in
            [&[options, &["wrapped.fq", "r1", "r1:2-6", "r2", "r3"]].concat()[..], &[options, &["-i", "wrapped.fq", "r1:3-7"]].concat()]
        {
            let (ours, theirs) = both(&dir, args);
            assert_same(args, &ours, &theirs);
        }
    }
    // A FASTA index read for FASTQ is refused.
    put(&dir, "ref.fa", b">a\nACGT\n");
    let (ours, theirs) = both(&dir, &["fqidx", "ref.fa", "a"]);
    assert_same(&["fqidx ref.fa a"], &ours, &theirs);
    assert!(text(&ours.stderr).contains("FASTA index"), "{}", text(&ours.stderr));
}

/// Refusals: one line naming the file, samtools' exit status, no index or
/// output left behind.
#[test]
fn refusals_match_samtools() {
    let Some(dir) = with_samtools("faidx-refusals") else { return };
    put(&dir, "uneven.fa", b">a\nACGT\nACGTT\n");
    put(&dir, "short_then_more.fa", b">a\nACGT\nAC\nACGT\n");
    put(&dir, "quality.fq", b"@r\nACGT\n+\nIII\n");
    put(&dir, "nosequence.fa", b">a\nACGT\n>b\n");
    put(&dir, "ref.fa", b">a\nACGT\nAC\n");
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b">a\nACGT\n").unwrap();
        e.finish().unwrap()
    };
    put(&dir, "plain.fa.gz", &gz);
    let cases: [(&[&str], &str); 9] = [
        (&["faidx", "uneven.fa"], "uneven.fa"),
        (&["faidx", "uneven.fa", "a"], "uneven.fa"),
        (&["faidx", "short_then_more.fa"], "short_then_more.fa"),
        (&["fqidx", "quality.fq"], "quality.fq"),
        (&["faidx", "nosequence.fa"], "nosequence.fa"),
        (&["faidx", "missing.fa"], "missing.fa"),
        (&["faidx", "plain.fa.gz"], "plain.fa.gz"),
        (&["faidx", "-r", "missing.txt", "ref.fa"], "missing.txt"),
        (&["faidx", "ref.fa", "-o", "ref.fa", "a"], "ref.fa"),
    ];
    for (args, file) in cases {
        let (ours, theirs) = both(&dir, args);
        assert_same(args, &ours, &theirs);
        let stderr = text(&ours.stderr);
        assert!(stderr.lines().count() == 1 && stderr.contains(file), "{args:?}: {stderr}");
    }
    for name in ["uneven.fa.fai", "short_then_more.fa.fai", "quality.fq.fai", "nosequence.fa.fai", "plain.fa.gz.fai"] {
        assert!(!dir.path("fasthts").join(name).exists(), "{name} left behind");
    }
    // --mark-strand of an unknown kind: a usage error.
    let ours = run_in(&dir.path("fasthts"), fasthts(), &["faidx", "--mark-strand", "minus", "ref.fa", "a"]);
    assert_eq!(ours.status.code(), Some(1));
}

#[test]
fn duplicate_names_keep_the_first() {
    let Some(dir) = with_samtools("faidx-duplicates") else { return };
    put(&dir, "dup.fa", b">a\nACGT\n>b\nGG\n>a\nTTTT\n");
    let (ours, theirs) = both(&dir, &["faidx", "dup.fa", "a", "b"]);
    assert_same(&["dup"], &ours, &theirs);
    same_file(&dir, "dup.fa.fai");
    let stderr = text(&ours.stderr);
    assert!(stderr.lines().count() == 1 && stderr.contains("duplicate sequence \"a\""), "{stderr}");
}

/// `-o FILE` holds what stdout would, and nothing at all when a region
/// fails (samtools leaves the part written so far).
#[test]
fn output_file_is_whole_or_absent() {
    let Some(dir) = with_samtools("faidx-output") else { return };
    put(&dir, "ref.fa", b">a\nACGTACGT\nAC\n>b\nTTTT\n");
    let (ours, theirs) = both(&dir, &["faidx", "-n", "3", "-o", "out.fa", "ref.fa", "a:2-9", "b"]);
    assert_same(&["-o"], &ours, &theirs);
    same_file(&dir, "out.fa");
    let failed = run_in(&dir.path("fasthts"), fasthts(), &["faidx", "-o", "failed.fa", "ref.fa", "a", "nope"]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(!dir.path("fasthts").join("failed.fa").exists());
    // No arguments: the usage on stdout, exit 0, as samtools.
    let mut usage = fasthts();
    usage.arg("faidx");
    let usage = run(usage);
    assert!(usage.status.success() && text(&usage.stdout).contains("faidx"));
}
