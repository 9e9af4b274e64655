//! `fasthts fixmate` against samtools 1.16: samtools' own fixmate tests
//! (test.pl's `test_fixmate`) against their expected files, and the same
//! commands run by both on samtools' test files and on generated pairs
//! (name-sorted and collated; BAM, SAM, CRAM, pipes), at -@1 and -@2.
//! BAM is compared decompressed (the records and header, byte for byte),
//! SAM and CRAM as written.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `tool ARGS` (samtools or fasthts) in a fresh directory `dir/side`
/// (stdin from `stdin` when given).
pub(crate) fn run_side(dir: &TempDir, side: &str, args: &[&str], stdin: Option<&Path>) -> (PathBuf, std::process::Output) {
    let work = dir.path(side);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = if side == "samtools" { Command::new("samtools") } else { fasthts() };
    cmd.current_dir(&work).args(args).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
    if let Some(input) = stdin {
        cmd.stdin(Stdio::from(std::fs::File::open(input).unwrap()));
    }
    let out = run(cmd);
    (work, out)
}

/// The bytes to compare: BGZF data decompressed (block boundaries are
/// the compressor's), anything else as it is.
pub(crate) fn comparable(bytes: Vec<u8>) -> Vec<u8> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        fasthts::bgzf::decompress_all(&bytes).unwrap()
    } else {
        bytes
    }
}

/// The files written in `dir`, by name.
pub(crate) fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// The same command (with `--no-PG`: the @PG lines differ) by samtools
/// and fasthts: the same exit status, stdout and files written.
fn same(dir: &TempDir, args: &[&str], stdin: Option<&Path>) {
    let (theirs_dir, theirs) = run_side(dir, "samtools", args, stdin);
    let (ours_dir, ours) = run_side(dir, "fasthts", args, stdin);
    assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}: ours {}; samtools {}", text(&ours.stderr), text(&theirs.stderr));
    if !theirs.status.success() {
        // samtools leaves the output it had opened; fasthts none.
        assert!(files_in(&ours_dir).is_empty(), "{args:?}: output left after a failure");
        return;
    }
    assert!(comparable(ours.stdout) == comparable(theirs.stdout), "{args:?}: stdout differs");
    assert_eq!(files_in(&ours_dir), files_in(&theirs_dir), "{args:?}: files written");
    for name in files_in(&theirs_dir) {
        let read = |d: &Path| comparable(std::fs::read(d.join(&name)).unwrap());
        assert!(read(&ours_dir) == read(&theirs_dir), "{args:?}: {name} differs");
    }
}

/// test.pl's comparison: every run of @PG lines removed.
fn without_pg(sam: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in sam.split_inclusive(|&c| c == b'\n') {
        if !line.starts_with(b"@PG\t") {
            out.extend_from_slice(line);
        }
    }
    out
}

/// samtools' own fixmate tests (test/test.pl, `test_fixmate`), with
/// fasthts in samtools' place at -@1 and -@2, against the expected files
/// as test.pl compares them (stdout without @PG lines; stderr where it
/// has an expected file; the exit status).
#[test]
fn samtools_test_cases() {
    let Some(data) = samtools_test_data() else { return };
    let cases: [(&str, &str, bool); 8] = [
        ("", "1_coord_sort", true),
        ("", "2_isize_overflow", false),
        ("", "3_reverse_read_pp_lt", false),
        ("", "4_reverse_read_pp_equal", false),
        ("-c", "5_ct", false),
        ("-c", "6_ct_replace", false),
        ("", "7_two_read_mapped", false),
        ("", "8_isize_overflow_64bit", false),
    ];
    for (option, name, fails) in cases {
        for threads in ["1", "2"] {
            let input = data.join(format!("fixmate/{name}.sam"));
            let mut cmd = fasthts();
            cmd.args(["fixmate", "-@", threads]);
            if !option.is_empty() {
                cmd.arg(option);
            }
            cmd.args(["-O", "sam"]).arg(&input).arg("-");
            let out = run(cmd);
            assert_eq!(!out.status.success(), fails, "{name} -@{threads}: {}", text(&out.stderr));
            let expected = std::fs::read(data.join(format!("fixmate/{name}.sam.expected"))).unwrap();
            assert!(without_pg(&out.stdout) == without_pg(&expected), "{name} -@{threads}: {}", text(&out.stdout));
            // test.pl reads one line of stderr (`$err = <$err_fh>`) and
            // compares it with the whole file, which ends in a blank line:
            // samtools' own run of this case is an expected failure there.
            // Its line is compared here, and that it is the only one.
            if let Ok(err) = std::fs::read(data.join(format!("fixmate/{name}.sam.expected.err"))) {
                let first_line = |b: &[u8]| text(b).split_inclusive('\n').next().unwrap_or("").to_string();
                assert_eq!(text(&out.stderr), first_line(&err), "{name} -@{threads}: stderr");
            }
        }
    }
}

/// A generated paired corpus (secondary, supplementary, unmapped and
/// orphan reads, mates on other references), name-sorted and collated by
/// samtools; the generator's coordinate-sorted SAM is refused by both.
/// Returns the directory and its files' paths.
fn generated(dir: &TempDir) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let fasta = dir.path("ref.fa");
    let fasta_arg = fasta.to_string_lossy().into_owned();
    let args = ["-q", "--seed", "41", "--reads", "6000", "--refs", "3", "--ref-len", "60000", "--unmapped-fraction", "0.05"];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--reference-fasta", &fasta_arg]);
    let sam = dir.path("reads.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let samtools = |args: &[&str]| {
        let mut c = Command::new("samtools");
        c.args(args).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
        let out = run(c);
        assert!(out.status.success(), "samtools {args:?}: {}", text(&out.stderr));
    };
    let p = |name: &str| dir.path(name).to_string_lossy().into_owned();
    samtools(&["sort", "--no-PG", "-n", "-o", &p("name.bam"), &p("reads.sam")]);
    samtools(&["collate", "--no-PG", "-o", &p("collated.bam"), &p("reads.sam"), &p("collate-tmp")]);
    samtools(&["view", "--no-PG", "-C", "-T", &p("ref.fa"), "-o", &p("name.cram"), &p("name.bam")]);
    (sam, dir.path("name.bam"), dir.path("collated.bam"), fasta)
}

/// Every option samtools' tests leave out, on generated pairs, to BAM and
/// SAM, at -@1 and -@2.
#[test]
fn generated_pairs_match_samtools() {
    let Some(dir) = with_samtools("fixmate-generated") else { return };
    let (sam, name, collated, _) = generated(&dir);
    let option_sets: [&[&str]; 8] = [&[], &["-m"], &["-c"], &["-r"], &["-p"], &["-r", "-c", "-m"], &["-p", "-m"], &["-rp"]];
    for input in [&name, &collated] {
        let input = input.to_string_lossy().into_owned();
        for options in option_sets {
            for threads in ["1", "2"] {
                for output in ["out.bam", "out.sam"] {
                    let mut args = vec!["fixmate", "--no-PG", "-@", threads];
                    args.extend_from_slice(options);
                    args.extend_from_slice(&[input.as_str(), output]);
                    same(&dir, &args, None);
                }
            }
        }
    }
    // A coordinate-sorted input is refused, and nothing is written.
    let sam = sam.to_string_lossy().into_owned();
    let (work, ours) = run_side(&dir, "fasthts", &["fixmate", &sam, "out.bam"], None);
    assert_eq!(ours.status.code(), Some(1));
    assert_eq!(text(&ours.stderr), "[bam_mating_core] ERROR: Coordinate sorted, require grouped/sorted by queryname.\n");
    assert!(files_in(&work).is_empty());
}

/// CRAM in and out (the same reference and output names, so the same
/// bytes), standard input and output, -u, -O and the @PG line.
#[test]
fn formats_and_pipes_match_samtools() {
    let Some(dir) = with_samtools("fixmate-formats") else { return };
    let (_, name, _, fasta) = generated(&dir);
    let (bam, fasta) = (name.to_string_lossy().into_owned(), fasta.to_string_lossy().into_owned());
    let cram = dir.path("name.cram").to_string_lossy().into_owned();
    // CRAM: samtools without -@ (htslib without a thread pool) writes the
    // bytes fasthts writes at -@1 (samtools' -@1 is a pool of one thread,
    // whose containers differ); with threads, the decoded records.
    for args in [
        &["fixmate", "--no-PG", "-m", "--reference", &fasta, &cram, "out.cram"][..],
        &["fixmate", "--no-PG", "-c", "-O", "cram", "--reference", &fasta, &bam, "-"],
    ] {
        let (theirs_dir, theirs) = run_side(&dir, "samtools", args, None);
        let mut single = args.to_vec();
        single.splice(1..1, ["-@", "1"]);
        let (ours_dir, ours) = run_side(&dir, "fasthts", &single, None);
        assert!(ours.status.success() && theirs.status.success(), "{args:?}: {}", text(&ours.stderr));
        assert!(ours.stdout == theirs.stdout, "{args:?}: CRAM on stdout differs");
        assert_eq!(files_in(&ours_dir), files_in(&theirs_dir));
        for name in files_in(&theirs_dir) {
            assert!(std::fs::read(ours_dir.join(&name)).unwrap() == std::fs::read(theirs_dir.join(&name)).unwrap(), "{args:?}: {name}");
        }
        let mut threaded = args.to_vec();
        threaded.splice(1..1, ["-@", "2"]);
        let (ours_dir, ours) = run_side(&dir, "fasthts", &threaded, None);
        assert!(ours.status.success(), "{}", text(&ours.stderr));
        let decoded = |bytes: &[u8]| {
            let path = dir.path("decode.cram");
            std::fs::write(&path, bytes).unwrap();
            let mut view = Command::new("samtools");
            view.args(["view", "-h", "--no-PG", "-T", &fasta]).arg(&path);
            text(&run(view).stdout)
        };
        let (got, want) = match files_in(&theirs_dir).first() {
            Some(name) => (std::fs::read(ours_dir.join(name)).unwrap(), std::fs::read(theirs_dir.join(name)).unwrap()),
            None => (ours.stdout, theirs.stdout),
        };
        assert_eq!(decoded(&got), decoded(&want), "{args:?} -@2: decoded CRAM differs");
    }
    for threads in ["1", "2"] {
        same(&dir, &["fixmate", "--no-PG", "-@", threads, "-O", "sam", "--reference", &fasta, &cram, "out.txt"], None);
        same(&dir, &["fixmate", "--no-PG", "-@", threads, "-m", "-", "-"], Some(&name));
        same(&dir, &["fixmate", "--no-PG", "-@", threads, "-u", "-", "-"], Some(&name));
        same(&dir, &["fixmate", "--no-PG", "-@", threads, "-u", &bam, "out.bam"], None);
        same(&dir, &["fixmate", "--no-PG", "-@", threads, "-O", "sam.gz", &bam, "out.sam.gz"], None);
    }
    // The header: samtools' lines, and the @PG line of the program that ran.
    let (work, ours) = run_side(&dir, "fasthts", &["fixmate", &bam, "out.sam"], None);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let (theirs_dir, _) = run_side(&dir, "samtools", &["fixmate", &bam, "out.sam"], None);
    let (ours, theirs) = (std::fs::read(work.join("out.sam")).unwrap(), std::fs::read(theirs_dir.join("out.sam")).unwrap());
    assert!(without_pg(&ours) == without_pg(&theirs));
    let pg = text(&ours).lines().find(|l| l.starts_with("@PG\tID:fasthts\t")).map(str::to_string);
    assert!(pg.as_deref().is_some_and(|l| l.contains("\tCL:") && l.contains("fixmate")), "{pg:?}");
    let (_, no_pg) = run_side(&dir, "fasthts", &["fixmate", "--no-PG", "-O", "sam", &bam, "-"], None);
    assert!(!text(&no_pg.stdout).contains("@PG\tID:fasthts\t"));
}

/// Every SAM and BAM file of samtools' tests and of the repository (those
/// samtools refuses, refused alike), with -c and -m, to SAM.
#[test]
fn samtools_test_files_match_samtools() {
    let Some(dir) = with_samtools("fixmate-files") else { return };
    let Some(data) = samtools_test_data() else { return };
    let mut inputs: Vec<PathBuf> = corpus();
    for sub in ["dat", "merge", "collate", "fixmate", "markdup", "sort", "view"] {
        if let Ok(entries) = std::fs::read_dir(data.join(sub)) {
            let mut sams: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sam")).collect();
            sams.sort();
            inputs.extend(sams);
        }
    }
    assert!(inputs.len() > 50, "{} inputs", inputs.len());
    for input in &inputs {
        let input = input.to_string_lossy().into_owned();
        same(&dir, &["fixmate", "--no-PG", "-c", "-m", "-O", "sam", &input, "out.sam"], None);
    }
}

/// Bad input: one line naming the file, exit 1 as samtools, no output
/// left behind; no arguments: the usage on stdout, as samtools.
#[test]
fn bad_input_is_refused_cleanly() {
    let Some(dir) = with_samtools("fixmate-bad") else { return };
    let (_, name, _, _) = generated(&dir);
    let bytes = std::fs::read(&name).unwrap();
    let truncated = dir.path("truncated.bam");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let junk = dir.path("junk.bam");
    std::fs::write(&junk, b"not an alignment file\n").unwrap();
    for input in [&truncated, &junk, &dir.path("missing.bam")] {
        let shown = input.to_string_lossy().into_owned();
        let (work, ours) = run_side(&dir, "fasthts", &["fixmate", &shown, "out.bam"], None);
        let (_, theirs) = run_side(&dir, "samtools", &["fixmate", &shown, "out.bam"], None);
        assert_eq!(ours.status.code(), theirs.status.code(), "{shown}");
        let stderr = text(&ours.stderr);
        let error = stderr.lines().filter(|l| !l.contains("warning")).collect::<Vec<_>>();
        assert_eq!(error.len(), 1, "{stderr}");
        assert!(error[0].starts_with("fasthts fixmate: ") && error[0].contains(&shown), "{stderr}");
        assert!(files_in(&work).is_empty(), "{shown}: output left");
    }
    // The input as the output: refused before anything is written.
    let copy = dir.path("copy.bam");
    std::fs::copy(&name, &copy).unwrap();
    let copy_arg = copy.to_string_lossy().into_owned();
    let mut cmd = fasthts();
    cmd.args(["fixmate", &copy_arg, &copy_arg]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1));
    assert!(std::fs::read(&copy).unwrap() == bytes, "input overwritten");
    // No arguments: the usage, as samtools prints it, and success.
    let (_, ours) = run_side(&dir, "fasthts", &["fixmate"], None);
    let (_, theirs) = run_side(&dir, "samtools", &["fixmate"], None);
    assert_eq!(ours.status.code(), theirs.status.code());
    assert!(text(&ours.stdout).contains("Usage: fasthts fixmate"), "{}", text(&ours.stdout));
    // One file only: a usage error.
    let (_, ours) = run_side(&dir, "fasthts", &["fixmate", &copy_arg], None);
    let (_, theirs) = run_side(&dir, "samtools", &["fixmate", &copy_arg], None);
    assert_eq!(ours.status.code(), theirs.status.code());
}
