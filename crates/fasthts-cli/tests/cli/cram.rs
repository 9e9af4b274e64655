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
    let mut c = fasthts();
    c.args(["idxstats", "-"]).env("REF_PATH", "/nonexistent/%s");
    let piped = run_with_stdin(c, std::fs::read(cram).unwrap());
    assert!(piped.status.success(), "{what} idxstats from a pipe: {}", text(&piped.stderr));
    assert_eq!(text(&piped.stdout), text(&samtools(&[&"idxstats", &cram]).stdout), "{what}: idxstats from a pipe");
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

/// samtools' test.pl, index section, run twice (without threads, then with
/// `-@ 2`): `index [-@ 2] X.cram OUT.crai` where OUT.crai exists already
/// (htslib sees it is an index: it is the output, not a second input), and
/// the `.crai` is the one `view --write-index` wrote.
#[test]
fn index_in_out_overwrites_an_existing_crai_as_samtools_does() {
    let Some(dir) = with_samtools("cram-index-out") else { return };
    let (sam, fasta) = generate(&dir.0, &[]);
    let cram = dir.path("w.cram");
    let written = fasthts_run(&[&"view", &"-T", &fasta, &"--write-index", &"-o", &cram, &sam]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    let out = dir.path("out.crai");
    for threads in [&[][..], &["-@", "2"]] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"index"];
        args.extend(threads.iter().map(|t| t as &dyn AsRef<std::ffi::OsStr>));
        args.extend([&cram as &dyn AsRef<std::ffi::OsStr>, &out]);
        let got = fasthts_run(&args);
        assert!(got.status.success(), "index {threads:?}: {}", text(&got.stderr));
        assert!(std::fs::read(&out).unwrap() == std::fs::read(dir.path("w.cram.crai")).unwrap(), "index {threads:?}: not view's .crai");
        let mut samtools_args = args.clone();
        let theirs = dir.path("theirs.crai");
        *samtools_args.last_mut().unwrap() = &theirs;
        samtools(&samtools_args);
        samtools(&samtools_args);
        assert!(std::fs::read(&theirs).unwrap() == std::fs::read(&out).unwrap(), "index {threads:?}: not samtools' .crai");
    }
    // A .crai is an index, not alignments, to every command.
    let got = fasthts_run(&[&"flagstat", &out]);
    assert_eq!(text(&got.stderr), format!("fasthts flagstat: {}: a CRAI index, not the BAM or SAM file it indexes\n", out.display()));
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
    // depth decodes no bases unless -l asks for read lengths (as samtools
    // depth): the reference is not read, and the rows are samtools'.
    same(&[&"depth", &cram], "depth, a mismatched reference unread");
    one_line(&fasthts_run(&[&"depth", &"-l", &"1", &cram]), "contig chr1 does not match");
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
        // The EOF container cut short: samtools (one thread) fails unless
        // fewer than 4 bytes of it are left; htslib on threads ended such a
        // file as if complete, and fasthts reads on threads (issue 39 item 14).
        for left in [1, 3, 4, 10, eof_len - 12, eof_len - 1] {
            let cut = dir.path(&format!("{version}-eof-{left}.cram"));
            std::fs::write(&cut, &bytes[..bytes.len() - eof_len + left]).unwrap();
            let sorted = dir.path("sorted.bam");
            let mut s = Command::new("samtools");
            s.args(["sort", "-o"]).arg(&sorted).arg(&cut);
            let want = run(s).status.code();
            for threads in ["1", "2"] {
                for args in [&[&"sort" as &dyn AsRef<std::ffi::OsStr>, &"-o", &sorted][..], &[&"flagstat"], &[&"view", &"-c"]] {
                    let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = args.to_vec();
                    all.extend([&"-@" as &dyn AsRef<std::ffi::OsStr>, &threads, &cut]);
                    let got = fasthts_run(&all);
                    assert_eq!(got.status.code(), want, "{version}, {left} bytes of the EOF container, -@{threads}: {}", text(&got.stderr));
                }
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

/// A damaged CRAM arriving on a pipe, much larger than a socket's buffer:
/// htslib cannot read its header, and each command says so and ends. It
/// used to wait forever for the thread copying the stream into htslib's
/// socket, which stayed open: `hts_hopen` leaves the `hFILE` it was given
/// open when it fails.
#[test]
fn a_large_damaged_cram_stream_is_refused_without_waiting_forever() {
    let mut bytes = b"CRAM\x03\x00".to_vec();
    bytes.extend((0u32..4 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    for (args, said) in [
        (&["view", "-"][..], "fasthts view: -: not a readable CRAM file (damaged or truncated header)\n"),
        (&["flagstat", "-"][..], "fasthts flagstat: -: not a readable CRAM file (damaged or truncated header)\n"),
        (&["quickcheck", "-"][..], ""),
    ] {
        let mut c = fasthts();
        c.args(args).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = bytes.clone();
        // The command stops reading early: the rest of the write fails.
        let writer = std::thread::spawn(move || drop(std::io::Write::write_all(&mut stdin, &input)));
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(60) {
                let _ = child.kill();
                panic!("{args:?}: still running after 60 s on a damaged CRAM stream");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(!out.status.success(), "{args:?}");
        if !said.is_empty() {
            assert_eq!(text(&out.stderr), said, "{args:?}");
        }
    }
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

// ---- The .crai: fasthts' own builder against samtools index ----

/// `fasthts index` of `cram` at -@1 and -@2, from the file, a pipe and
/// standard input redirected from the file, byte for byte against
/// `samtools index`; returns samtools' .crai.
fn same_crai(dir: &Path, cram: &Path, what: &str) -> Vec<u8> {
    let want = dir.join("want.crai");
    samtools(&[&"index", &"-o", &want, &cram]);
    let want = std::fs::read(&want).unwrap();
    for threads in ["1", "2"] {
        let got = dir.join("got.crai");
        let out = fasthts_run(&[&"index", &"-@", &threads, &"-o", &got, &cram]);
        assert!(out.status.success() && out.stderr.is_empty(), "{what} -@{threads}: {}", text(&out.stderr));
        assert!(std::fs::read(&got).unwrap() == want, "{what} -@{threads}: .crai bytes differ from samtools'");
        std::fs::remove_file(&got).unwrap();
    }
    // Beside the file by default.
    let copy = dir.join("beside.cram");
    std::fs::copy(cram, &copy).unwrap();
    let out = fasthts_run(&[&"index", &copy]);
    assert!(out.status.success(), "{what} beside: {}", text(&out.stderr));
    assert!(std::fs::read(dir.join("beside.cram.crai")).unwrap() == want, "{what}: beside.cram.crai differs");
    // From a pipe: `-` gets `-.crai` in the working directory, as in samtools.
    let mut c = fasthts();
    c.args(["index", "-@", "2", "-"]).current_dir(dir).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
    let out = run_with_stdin(c, std::fs::read(cram).unwrap());
    assert!(out.status.success(), "{what} from a pipe: {}", text(&out.stderr));
    assert!(std::fs::read(dir.join("-.crai")).unwrap() == want, "{what}: -.crai from a pipe differs");
    std::fs::remove_file(dir.join("-.crai")).unwrap();
    let mut c = fasthts();
    c.args(["index", "-o"]).arg(dir.join("redirected.crai")).arg("-").stdin(std::fs::File::open(cram).unwrap());
    let out = run(c);
    assert!(out.status.success(), "{what} < file: {}", text(&out.stderr));
    assert!(std::fs::read(dir.join("redirected.crai")).unwrap() == want, "{what}: .crai of standard input from the file differs");
    want
}

/// Whether a .crai has a slice that holds several references (lines
/// sharing a container offset and a landmark), from `zcat`.
fn has_multi_reference_slice(crai: &[u8]) -> bool {
    let mut c = Command::new("gzip");
    c.arg("-dc").stdin(std::process::Stdio::piped());
    let lines = text(&run_with_stdin(c, crai.to_vec()).stdout);
    let mut seen = std::collections::HashSet::new();
    lines.lines().any(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        !seen.insert((f[3].to_string(), f[4].to_string()))
    })
}

#[test]
fn crai_bytes_are_samtools_on_every_version_and_kind_of_slice() {
    let Some(dir) = with_samtools("crai-kinds") else { return };
    let (sam, fasta) = generate(&dir.0, &[]);
    // Many small references: slices that hold several (multi-reference).
    let many = TempDir::new("crai-many-refs");
    let fasta_arg = many.path("ref.fa");
    let args = ["-q", "--seed", "22", "--reads", "2000", "--refs", "60", "--ref-len", "10000", "--reference-fasta", fasta_arg.to_str().unwrap()];
    let many_sam = many.path("many.sam");
    std::fs::write(&many_sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    samtools(&[&"faidx", &fasta_arg]);
    let unmapped = TempDir::new("crai-unmapped");
    let (unmapped_sam, unmapped_fasta) = generate(&unmapped.0, &["--no-mapped"]);
    for version in ["2.1", "3.0", "3.1"] {
        let v = format!("version={version}");
        let cases: [(&str, &Path, &Path, Vec<&str>); 5] = [
            ("default", &sam, &fasta, vec![&v]),
            ("many-containers", &sam, &fasta, vec![&v, "seqs_per_slice=50", "slices_per_container=3"]),
            ("embedded", &sam, &fasta, vec![&v, "embed_ref=1", "seqs_per_slice=300"]),
            ("multi-ref", &many_sam, &fasta_arg, vec![&v, "seqs_per_slice=300"]),
            ("unmapped-only", &unmapped_sam, &unmapped_fasta, vec![&v, "seqs_per_slice=200"]),
        ];
        for (name, input, reference, options) in cases {
            let cram = dir.path(&format!("{name}-{version}.cram"));
            to_cram(input, reference, &cram, &options);
            let crai = same_crai(&dir.0, &cram, &format!("{name} {version}"));
            // Containers listed alike for flagstat's parts (a 2.1 header
            // container can end past its stated length).
            same(&[&"flagstat", &"-@", &"2", &cram], &format!("{name} {version} flagstat"));
            if name == "multi-ref" {
                assert!(has_multi_reference_slice(&crai), "{version}: no multi-reference slice made; the case tests nothing");
            }
        }
    }
}

#[test]
fn crai_of_a_damaged_unsorted_or_eof_less_cram_is_said_as_samtools_says_it() {
    let Some(dir) = with_samtools("crai-damaged") else { return };
    let (sam, fasta) = generate(&dir.0, &[]);
    let cram = dir.path("ok.cram");
    to_cram(&sam, &fasta, &cram, &["version=3.0", "seqs_per_slice=200"]);
    let bytes = std::fs::read(&cram).unwrap();
    // The first data container: after the 26-byte definition and the
    // header container (its offset is in samtools' .crai).
    let want = dir.path("want.crai");
    samtools(&[&"index", &"-o", &want, &cram]);
    let mut z = Command::new("gzip");
    z.arg("-dc").arg(&want);
    let first: usize = text(&run(z).stdout).split('\t').nth(3).unwrap().parse().unwrap();

    // Without the EOF container: indexed all the same, with samtools' warning.
    let no_eof = dir.path("no-eof.cram");
    std::fs::write(&no_eof, &bytes[..bytes.len() - 38]).unwrap();
    let got = dir.path("no-eof.crai");
    let out = fasthts_run(&[&"index", &"-o", &got, &no_eof]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), format!("fasthts: warning: {}: EOF marker is absent. The input is probably truncated\n", no_eof.display()));
    assert!(std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(), "no EOF container: .crai differs");

    // Cut in the middle (samtools fails too, but leaves a partial .crai);
    // a flipped bit in a container header (samtools stops there and writes
    // an index of the containers before it, saying nothing of it on exit);
    // a flipped bit in a slice header block (its CRC32).
    let mut flipped_container = bytes.clone();
    flipped_container[first + 2] ^= 0x40;
    let mut flipped_slice = bytes.clone();
    let compression_block = {
        // The landmark of the first slice: the compression header's size.
        let mut z = Command::new("gzip");
        z.arg("-dc").arg(&want);
        text(&run(z).stdout).split('\t').nth(4).unwrap().parse::<usize>().unwrap()
    };
    // A CRAM 3 container header ends with the CRC32 of its other bytes.
    let container_header_len = 4 + (8..200)
        .find(|&n| {
            let mut crc = flate2::Crc::new();
            crc.update(&bytes[first..first + n]);
            crc.sum() == u32::from_le_bytes(bytes[first + n..first + n + 4].try_into().unwrap())
        })
        .unwrap();
    flipped_slice[first + container_header_len + compression_block + 4] ^= 0x01;
    let cases = [
        ("cut", bytes[..bytes.len() / 2].to_vec(), "truncated CRAM data"),
        ("container-header", flipped_container, "damaged CRAM data"),
        ("slice-header", flipped_slice, "damaged CRAM data"),
    ];
    for (name, damaged, said) in cases {
        let path = dir.path(&format!("{name}.cram"));
        std::fs::write(&path, &damaged).unwrap();
        for threads in ["1", "2"] {
            let out = fasthts_run(&[&"index", &"-@", &threads, &path]);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{name}: {err}");
            assert_eq!(err.lines().count(), 1, "{name}: {err}");
            assert!(err.starts_with(&format!("fasthts index: {}: {said}", path.display())), "{name}: {err}");
            assert!(!dir.path(&format!("{name}.cram.crai")).exists(), "{name}: a .crai left behind");
        }
        // From a pipe alike (which fasthts may leave unread after the damage).
        let mut c = Command::new("sh");
        c.args(["-c", "cat \"$1\" | \"$2\" index -o \"$3\" -", "sh"]).arg(&path).arg(env!("CARGO_BIN_EXE_fasthts")).arg(dir.path("piped.crai"));
        let out = run(c);
        assert_eq!(out.status.code(), Some(1), "{name} from a pipe: {}", text(&out.stderr));
        assert!(text(&out.stderr).starts_with(&format!("fasthts index: -: {said}")), "{name}: {}", text(&out.stderr));
        assert!(!dir.path("piped.crai").exists(), "{name}: a .crai left behind from a pipe");
    }

    // Not sorted by position: samtools refuses, and so does fasthts.
    let unsorted_sam = dir.path("unsorted.sam");
    let fasta_arg = fasta.to_str().unwrap().to_string();
    let args = ["-q", "--seed", "21", "--reads", "1500", "--refs", "3", "--ref-len", "60000", "--unsorted", "--reference-fasta", &fasta_arg];
    std::fs::write(&unsorted_sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let unsorted = dir.path("unsorted.cram");
    to_cram(&unsorted_sam, &fasta, &unsorted, &["version=3.0"]);
    let mut s = Command::new("samtools");
    s.args(["index", "-o"]).arg(dir.path("s-unsorted.crai")).arg(&unsorted);
    assert_eq!(run(s).status.code(), Some(1), "samtools indexed an unsorted CRAM");
    let out = fasthts_run(&[&"index", &unsorted]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), format!("fasthts index: {}: file is not position sorted\n", unsorted.display()));
    assert!(!dir.path("unsorted.cram.crai").exists(), "unsorted: a .crai left behind");
}

/// CRAM 4.0 (a draft htslib 1.16 writes on request): fasthts' own .crai
/// builder does not read it, htslib's builder does (samtools' bytes);
/// counts, records and regions as samtools gives them, read without a
/// warning (htslib's EOF check does not know CRAM 4's EOF container: only
/// quickcheck says it is missing, as samtools' does). CRAM 1.x cannot be
/// made with the installed tools (samtools 1.16 fails writing it).
#[test]
fn cram_4_0_is_read_and_indexed_as_samtools_does_through_htslib() {
    let Some(dir) = with_samtools("cram-4.0") else { return };
    let (sam, fasta) = generate(&dir.0, &[]);
    for (name, options) in [("default", &["version=4.0"][..]), ("many-containers", &["version=4.0", "seqs_per_slice=100", "slices_per_container=2"])] {
        let cram = dir.path(&format!("{name}-4.0.cram"));
        to_cram(&sam, &fasta, &cram, options);
        assert_eq!(&std::fs::read(&cram).unwrap()[..6], b"CRAM\x04\x00", "{name}: samtools did not write CRAM 4.0");
        let what = format!("{name} 4.0");
        for args in [&["flagstat"][..], &["flagstat", "-@", "2"], &["flagstat", "-O", "tsv"], &["idxstats"], &["depth", "-a"], &["view", "--no-PG", "-h"]] {
            let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>).collect();
            a.push(&cram);
            same(&a, &format!("{what} {args:?}"));
            assert!(fasthts_run(&a).stderr.is_empty(), "{what} {args:?}: a warning samtools does not give");
        }
        // The .crai: htslib's builder, samtools' bytes; then regions through it.
        let (want, got) = (dir.path("want.crai"), dir.path(&format!("{name}-4.0.cram.crai")));
        samtools(&[&"index", &"-o", &want, &cram]);
        for threads in ["1", "2"] {
            let out = fasthts_run(&[&"index", &"-@", &threads, &cram]);
            assert!(out.status.success(), "{what} index -@{threads}: {}", text(&out.stderr));
            assert!(std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(), "{what} -@{threads}: .crai bytes differ");
        }
        same(&[&"view", &"-c", &cram, &"chr2:1000-30000"], &format!("{what} view -c region"));
        same(&[&"view", &cram, &"chr1:5000-6000", &"chr3"], &format!("{what} view regions"));
        same(&[&"depth", &"-r", &"chr2:100-20000", &cram], &format!("{what} depth -r"));
        for order in [&["-n"][..], &[]] {
            let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"sort", &"--no-PG", &"-O", &"sam"];
            a.extend(order.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>));
            a.push(&cram);
            same(&a, &format!("{what} sort {order:?}"));
        }
        let mut s = Command::new("samtools");
        s.args(["quickcheck", "-v"]).arg(&cram);
        let want = run(s);
        let got = fasthts_run(&[&"quickcheck", &"-v", &cram]);
        assert_eq!((got.status.code(), text(&got.stdout)), (want.status.code(), text(&want.stdout)), "{what} quickcheck");
    }
}
