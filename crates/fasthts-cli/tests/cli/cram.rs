//! CRAM input (issue 21) against samtools 1.16: CRAM 2.1, 3.0 and 3.1 made
//! by `samtools view -C` from generated reads with and without an embedded
//! reference, in many small slices and containers, unmapped only, from a
//! pipe; flagstat, idxstats, quickcheck, sort and depth outputs identical,
//! `.crai` bytes identical; a missing or mismatched reference and a
//! truncated file said in one line naming the file.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A generated SAM and the FASTA of its genome in `dir`.
fn generate(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    let fasta = dir.join("ref.fa");
    let mut args = vec!["-q", "--seed", "21", "--reads", "1500", "--refs", "3", "--ref-len", "60000"];
    args.extend_from_slice(extra);
    let fasta_arg = fasta.to_str().unwrap().to_string();
    args.extend_from_slice(&["--reference-fasta", &fasta_arg]);
    let sam = fasthts_testgen::cli::sam(&args).unwrap();
    let sam_path = dir.join("reads.sam");
    std::fs::write(&sam_path, sam).unwrap();
    samtools(&[&"faidx", &fasta]);
    (sam_path, fasta)
}

fn samtools(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new("samtools");
    c.args(args).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
    let out = run(c);
    assert!(out.status.success(), "samtools {:?}: {}", args.iter().map(|a| a.as_ref().to_owned()).collect::<Vec<_>>(), text(&out.stderr));
    out
}

/// `fasthts ARGS`, htslib looking for references nowhere but where the
/// file or the options say (no network).
fn fasthts_run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = fasthts();
    c.args(args).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
    run(c)
}

/// `samtools view -C` of `sam` with `options` (`version=3.0`, ...).
fn to_cram(sam: &Path, fasta: &Path, out: &Path, options: &[&str]) {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"view", &"-C", &"-T", &fasta];
    let owned: Vec<String> = options.iter().flat_map(|o| ["--output-fmt-option".to_string(), o.to_string()]).collect();
    for o in &owned {
        args.push(o);
    }
    args.extend_from_slice(&[&"-o", &out, &sam]);
    samtools(&args);
}

/// samtools' and fasthts' stdout of the same command, compared; both must
/// succeed.
fn same(args: &[&dyn AsRef<std::ffi::OsStr>], what: &str) {
    let want = samtools(args);
    let got = fasthts_run(args);
    assert!(got.status.success(), "{what}: fasthts {}", text(&got.stderr));
    assert_eq!(text(&got.stdout), text(&want.stdout), "{what}: stdout differs");
}

/// Every command on `cram` against samtools.
fn compare_all(dir: &Path, cram: &Path, what: &str) {
    same(&[&"flagstat", &cram], &format!("{what} flagstat"));
    same(&[&"flagstat", &"-O", &"tsv", &cram], &format!("{what} flagstat tsv"));
    same(&[&"idxstats", &cram], &format!("{what} idxstats"));
    same(&[&"depth", &cram], &format!("{what} depth"));
    same(&[&"depth", &"-a", &"-Q", &"10", &cram], &format!("{what} depth -a"));
    same(&[&"quickcheck", &"-v", &cram], &format!("{what} quickcheck"));
    // Sorted by name into SAM: every field of every record decoded.
    for order in [&["-n"][..], &[][..]] {
        let (want, got) = (dir.join("want.sam"), dir.join("got.sam"));
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"sort", &"--no-PG", &"-O", &"sam"];
        for o in order {
            args.push(o);
        }
        let s_args: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().copied().chain([&"-o" as &dyn AsRef<_>, &want, &cram]).collect();
        let f_args: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().copied().chain([&"-o" as &dyn AsRef<_>, &got, &cram]).collect();
        samtools(&s_args);
        let out = fasthts_run(&f_args);
        assert!(out.status.success(), "{what} sort {order:?}: {}", text(&out.stderr));
        assert!(std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(), "{what} sort {order:?}: SAM differs");
    }
    // The .crai, byte for byte.
    let (want, got) = (dir.join("want.crai"), dir.join("got.crai"));
    samtools(&[&"index", &"-o", &want, &cram]);
    let out = fasthts_run(&[&"index", &"-o", &got, &cram]);
    assert!(out.status.success(), "{what} index: {}", text(&out.stderr));
    assert!(std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(), "{what}: .crai bytes differ");
    // From a pipe: the same counts.
    let bytes = std::fs::read(cram).unwrap();
    let mut c = fasthts();
    c.args(["flagstat", "-"]).env("REF_PATH", "/nonexistent/%s");
    let piped = run_with_stdin(c, bytes);
    assert!(piped.status.success(), "{what} flagstat from a pipe: {}", text(&piped.stderr));
    assert_eq!(text(&piped.stdout), text(&samtools(&[&"flagstat", &cram]).stdout), "{what}: flagstat from a pipe");
}

#[test]
fn cram_versions_embedded_references_and_slicing_read_as_samtools_reads_them() {
    let Some(dir) = with_samtools("cram-versions") else { return };
    let (sam, fasta) = generate(&dir.0, &[]);
    let cases: [(&str, &[&str]); 6] = [
        ("2.1", &["version=2.1"]),
        ("3.0", &["version=3.0"]),
        ("3.1", &["version=3.1"]),
        ("3.0-slices", &["version=3.0", "seqs_per_slice=100", "slices_per_container=3"]),
        ("3.1-small-containers", &["version=3.1", "seqs_per_slice=50", "slices_per_container=1"]),
        ("3.0-embedded", &["version=3.0", "embed_ref=1"]),
    ];
    for (name, options) in cases {
        let cram = dir.path(&format!("{name}.cram"));
        to_cram(&sam, &fasta, &cram, options);
        compare_all(&dir.0, &cram, name);
    }
    // With the reference gone, the embedded one is all there is.
    std::fs::rename(&fasta, dir.path("elsewhere.fa")).unwrap();
    compare_all(&dir.0, &dir.path("3.0-embedded.cram"), "embedded, FASTA gone");
}

#[test]
fn unmapped_only_cram_reads_as_samtools_reads_it() {
    let Some(dir) = with_samtools("cram-unmapped") else { return };
    let (sam, fasta) = generate(&dir.0, &["--no-mapped"]);
    let cram = dir.path("unmapped.cram");
    to_cram(&sam, &fasta, &cram, &["version=3.0", "seqs_per_slice=200"]);
    compare_all(&dir.0, &cram, "unmapped");
}

#[test]
fn a_missing_or_mismatched_reference_is_one_line_naming_the_contig() {
    let Some(dir) = with_samtools("cram-reference") else { return };
    let (sam, fasta) = generate(&dir.0, &[]);
    let cram = dir.path("r.cram");
    to_cram(&sam, &fasta, &cram, &["version=3.0"]);
    let want_flagstat = samtools(&[&"flagstat", &cram]).stdout;
    let saved = std::fs::read(&fasta).unwrap();
    std::fs::remove_file(&fasta).unwrap();
    std::fs::remove_file(dir.path("ref.fa.fai")).unwrap();
    let one_line = |out: &Output, want: &str| {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(cram.to_str().unwrap()) && err.contains(want), "{err}");
        assert!(out.stdout.is_empty() || !out.stdout.starts_with(b"@"), "no partial output");
    };
    // Missing: flagstat needs no reference; sort names the contig.
    let out = fasthts_run(&[&"flagstat", &cram]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(out.stdout, want_flagstat);
    let sorted = dir.path("s.sam");
    one_line(&fasthts_run(&[&"sort", &"-O", &"sam", &"-o", &sorted, &cram]), "reference sequence of contig chr1 not found");
    assert!(!sorted.exists(), "no output left behind");
    // Given with --reference (sort, depth), as samtools takes it.
    let elsewhere = dir.path("elsewhere.fa");
    std::fs::write(&elsewhere, &saved).unwrap();
    let want = dir.path("want.sam");
    samtools(&[&"sort", &"--no-PG", &"--reference", &elsewhere, &"-O", &"sam", &"-o", &want, &cram]);
    let out = fasthts_run(&[&"sort", &"--no-PG", &"--reference", &elsewhere, &"-O", &"sam", &"-o", &sorted, &cram]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&sorted).unwrap() == std::fs::read(&want).unwrap(), "sort --reference: SAM differs");
    std::fs::remove_file(&sorted).unwrap();
    same(&[&"depth", &"--reference", &elsewhere, &cram], "depth --reference");
    // Mismatched: the same names, other bases.
    let other: Vec<u8> = saved
        .split(|&c| c == b'\n')
        .flat_map(|line| {
            let mut l: Vec<u8> = if line.starts_with(b">") { line.to_vec() } else { line.iter().map(|&b| if b == b'A' { b'C' } else { b }).collect() };
            l.push(b'\n');
            l
        })
        .collect();
    std::fs::write(&fasta, &other[..other.len() - 1]).unwrap();
    one_line(&fasthts_run(&[&"sort", &"-O", &"sam", &"-o", &sorted, &cram]), "contig chr1 does not match");
    one_line(&fasthts_run(&[&"depth", &cram]), "contig chr1 does not match");
}

#[test]
fn truncated_cram_fails_quickcheck_and_reading_as_samtools_does() {
    let Some(dir) = with_samtools("cram-truncated") else { return };
    let (sam, fasta) = generate(&dir.0, &[]);
    for version in ["2.1", "3.0", "3.1"] {
        let cram = dir.path(&format!("{version}.cram"));
        to_cram(&sam, &fasta, &cram, &[&format!("version={version}"), "seqs_per_slice=200"]);
        let bytes = std::fs::read(&cram).unwrap();
        let eof_len = if version == "2.1" { 30 } else { 38 };
        for (name, keep) in [("no-eof", bytes.len() - eof_len), ("cut", bytes.len() / 2), ("header-cut", 40)] {
            let cut = dir.path(&format!("{version}-{name}.cram"));
            std::fs::write(&cut, &bytes[..keep]).unwrap();
            let mut s = Command::new("samtools");
            s.args(["quickcheck", "-v"]).arg(&cut);
            let want = run(s);
            let got = fasthts_run(&[&"quickcheck", &"-v", &cut]);
            assert_eq!(got.status.code(), want.status.code(), "{version} {name}: {}", text(&got.stderr));
            assert_eq!(text(&got.stdout), text(&want.stdout), "{version} {name}");
            // Without the EOF container: read, with htslib's warning.
            if name == "no-eof" {
                let out = fasthts_run(&[&"flagstat", &cut]);
                assert!(out.status.success(), "{version}: {}", text(&out.stderr));
                assert!(text(&out.stderr).contains("EOF marker is absent"), "{version}: {}", text(&out.stderr));
                assert_eq!(out.stdout, samtools(&[&"flagstat", &cut]).stdout, "{version} no EOF: flagstat");
            }
            // Reading records: samtools fails on the cut ones; fasthts says so in one line.
            if name != "no-eof" {
                let out = fasthts_run(&[&"flagstat", &cut]);
                let err = text(&out.stderr);
                assert_eq!(out.status.code(), Some(1), "{version} {name}: {err}");
                // One error, after htslib's warning of the missing EOF container.
                assert_eq!(err.lines().filter(|l| !l.starts_with("fasthts: warning: ")).count(), 1, "{err}");
                assert!(err.contains(cut.to_str().unwrap()), "{err}");
            }
        }
    }
}

#[test]
fn a_cram_htslib_cannot_open_is_named_alike_by_every_command() {
    let dir = TempDir::new("cram-unreadable");
    let bad = dir.path("x.cram");
    let bytes = b"CRAM\x03\x00 and then some container".to_vec();
    std::fs::write(&bad, &bytes).unwrap();
    let said = format!("{}: not a readable CRAM file (damaged or truncated header)\n", bad.display());
    for args in [vec!["flagstat"], vec!["idxstats"], vec!["index"], vec!["sort", "-o"], vec!["depth"]] {
        let out_name = dir.path("out.bam");
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>).collect();
        if args[0] == "sort" {
            a.push(&out_name);
        }
        a.push(&bad);
        let out = fasthts_run(&a);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&out.stderr), format!("fasthts {}: {said}", args[0]), "{args:?}");
        assert!(!out_name.exists() && !dir.path("x.cram.crai").exists(), "{args:?}: no output");
    }
    let mut c = fasthts();
    c.args(["flagstat", "-"]);
    let out = run_with_stdin(c, bytes);
    assert_eq!(text(&out.stderr), "fasthts flagstat: -: not a readable CRAM file (damaged or truncated header)\n");
}

#[test]
fn records_of_more_than_65535_cigar_operations_sort_as_samtools_sorts_them() {
    let Some(dir) = with_samtools("cram-long-cigar") else { return };
    let (sam, fasta) = generate(&dir.0, &["--long-cigar-fraction", "0.02"]);
    let long = text(&std::fs::read(&sam).unwrap())
        .lines()
        .filter(|l| !l.starts_with('@'))
        .filter(|l| l.split('\t').nth(5).is_some_and(|c| c.bytes().filter(u8::is_ascii_alphabetic).count() > 65_535))
        .count();
    assert!(long > 0, "the generator made no CIGAR longer than BAM's 65,535 operations");
    let cram = dir.path("long.cram");
    to_cram(&sam, &fasta, &cram, &["version=3.0"]);
    // BAM records keep such a CIGAR in a CG tag: sorted through them, then as SAM.
    let (want, got) = (dir.path("want.sam"), dir.path("got.sam"));
    samtools(&[&"sort", &"--no-PG", &"-O", &"sam", &"-o", &want, &cram]);
    let out = fasthts_run(&[&"sort", &"--no-PG", &"-O", &"sam", &"-o", &got, &cram]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(), "sorted SAM differs");
}
