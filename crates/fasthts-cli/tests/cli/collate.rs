//! `fasthts collate` against samtools 1.16: samtools' own collate tests
//! (test.pl's `test_collate`) against their expected files, and samtools'
//! exact order on generated reads and samtools' test files (fasthts
//! reproduces samtools' name hash and sort), for -n, -f and -r, spilled
//! to temporary files or not, at -@1 and -@2; temporaries removed.

use crate::common::*;
use crate::fixmate::{comparable, files_in, run_side};
use std::path::{Path, PathBuf};
use std::process::Command;

/// test.pl's comparison: @PG lines removed.
fn without_pg(sam: &[u8]) -> Vec<u8> {
    sam.split_inclusive(|&c| c == b'\n').filter(|l| !l.starts_with(b"@PG\t")).flatten().copied().collect()
}

/// samtools' own collate tests (test/test.pl, `test_collate`), with
/// fasthts in samtools' place at -@1 and -@2, against the expected files
/// as test.pl compares them (without @PG lines).
#[test]
fn samtools_test_cases() {
    let Some(data) = samtools_test_data() else { return };
    let dir = TempDir::new("collate-cases");
    let input = data.join("dat/test_input_1_d.sam").to_string_lossy().into_owned();
    let fast = data.join("collate/fast_collate.sam").to_string_lossy().into_owned();
    let expected = |name: &str| without_pg(&std::fs::read(data.join("collate").join(name)).unwrap());
    for threads in ["1", "2"] {
        let work = dir.path(&format!("t{threads}"));
        std::fs::create_dir_all(&work).unwrap();
        let run_in = |args: &[&str]| {
            let mut cmd = fasthts();
            cmd.current_dir(&work).args(["collate", "-@", threads]).args(args);
            let out = run(cmd);
            assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
            out.stdout
        };
        let out = run_in(&["--output-fmt=sam", "-O", &input]);
        assert!(without_pg(&out) == expected("collate.expected.sam"), "to stdout");
        let read = |name: &str| without_pg(&std::fs::read(work.join(name)).unwrap());
        assert!(run_in(&["-o", "collate1.tmp.sam", &input]).is_empty());
        assert!(read("collate1.tmp.sam") == expected("collate.expected.sam"), "to a file");
        assert!(run_in(&["-o", "collate2.tmp.sam", &input, "collate2.tmp"]).is_empty());
        assert!(read("collate2.tmp.sam") == expected("collate.expected.sam"), "to a file, with a prefix");
        assert!(run_in(&["--output-fmt=sam", &input, "collate3.tmp"]).is_empty());
        assert!(read("collate3.tmp.sam") == expected("collate.expected.sam"), "named after the prefix");
        assert!(run_in(&["--output-fmt=sam", "-f", &fast, "-o", "1_fast_collate.sam"]).is_empty());
        assert!(read("1_fast_collate.sam") == expected("1_fast_collate.sam.expected"), "fast");
        assert!(run_in(&["--output-fmt=sam", "-f", "-r", "4", &fast, "-o", "2_fast_collate_with_tmp.sam"]).is_empty());
        assert!(read("2_fast_collate_with_tmp.sam") == expected("2_fast_collate_with_tmp_used.sam.expected"), "fast, small window");
        // Nothing left but the outputs.
        let mut left = files_in(&work);
        left.retain(|f| !f.ends_with(".sam"));
        assert!(left.is_empty(), "{left:?}");
    }
}

/// The same command by samtools and fasthts (`--no-PG`), each in a
/// directory of its own: the same status, stdout and files, compared in
/// order (BAM decompressed). fasthts leaves no temporaries.
fn same(dir: &TempDir, args: &[&str], stdin: Option<&Path>) {
    let (theirs_dir, theirs) = run_side(dir, "samtools", args, stdin);
    let (ours_dir, ours) = run_side(dir, "fasthts", args, stdin);
    assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}: ours {}; samtools {}", text(&ours.stderr), text(&theirs.stderr));
    if !theirs.status.success() {
        assert!(files_in(&ours_dir).is_empty(), "{args:?}: output left after a failure");
        return;
    }
    assert!(comparable(ours.stdout) == comparable(theirs.stdout), "{args:?}: stdout differs");
    // samtools' temporaries (PREFIX.NNNN.bam) are gone once it is done.
    assert_eq!(files_in(&ours_dir), files_in(&theirs_dir), "{args:?}: files left");
    for name in files_in(&theirs_dir) {
        let read = |d: &Path| comparable(std::fs::read(d.join(&name)).unwrap());
        assert!(read(&ours_dir) == read(&theirs_dir), "{args:?}: {name} differs");
    }
}

/// Generated reads (secondary, supplementary, unmapped, orphans) in
/// coordinate and name order, and samtools' own test files: samtools'
/// exact order for each -n, -f and -r, kept in memory or spilled.
#[test]
fn order_is_samtools_order() {
    let Some(dir) = with_samtools("collate-order") else { return };
    let args = ["-q", "--seed", "17", "--reads", "6000", "--refs", "3", "--ref-len", "60000", "--unmapped-fraction", "0.05"];
    let sam = dir.path("reads.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let name_bam = dir.path("name.bam");
    let mut sort = Command::new("samtools");
    sort.args(["sort", "--no-PG", "-n", "-o"]).arg(&name_bam).arg(&sam);
    assert!(run(sort).status.success());
    let option_sets: [&[&str]; 7] = [&[], &["-n", "7"], &["-n", "1"], &["-f"], &["-f", "-r", "50"], &["-f", "-r", "3", "-n", "5"], &["-u"]];
    for input in [&sam, &name_bam] {
        let input = input.to_string_lossy().into_owned();
        for options in option_sets {
            for threads in ["1", "2"] {
                for output in ["out.bam", "out.sam"] {
                    let mut args = vec!["collate", "--no-PG", "-@", threads];
                    args.extend_from_slice(options);
                    args.extend_from_slice(&["-o", output, input.as_str(), "tmp"]);
                    same(&dir, &args, None);
                }
            }
        }
        // Spilled to temporary files: the same order, and no leftovers
        // (same() compares the files left).
        for options in [&["-n", "9"][..], &["-f", "-r", "40"]] {
            let mut ours = vec!["collate", "--no-PG"];
            ours.extend_from_slice(options);
            ours.extend_from_slice(&["-o", "out.bam", input.as_str(), "tmp"]);
            let (theirs_dir, _) = run_side(&dir, "samtools", &ours, None);
            ours.splice(2..2, ["--max-memory", "64K"]);
            let (ours_dir, out) = run_side(&dir, "fasthts", &ours, None);
            assert!(out.status.success(), "{}", text(&out.stderr));
            let read = |d: &Path| comparable(std::fs::read(d.join("out.bam")).unwrap());
            assert!(read(&ours_dir) == read(&theirs_dir), "{options:?}: spilled run differs");
            assert_eq!(files_in(&ours_dir), ["out.bam"]);
        }
    }
    // Standard output (-O: BAM; -o -: SAM, as samtools), from a pipe too,
    // and the output named after the prefix.
    let bam = name_bam.to_string_lossy().into_owned();
    same(&dir, &["collate", "--no-PG", "-O", &bam], None);
    same(&dir, &["collate", "--no-PG", "-O", "-u", "-"], Some(&name_bam));
    same(&dir, &["collate", "--no-PG", "-o", "-", &bam], None);
    same(&dir, &["collate", "--no-PG", "-o", "out.txt", &bam], None);
    same(&dir, &["collate", "--no-PG", &bam, "named"], None);
    same(&dir, &["collate", "--no-PG", "--output-fmt", "sam", &bam, "named"], None);
    // samtools' test files.
    let Some(data) = samtools_test_data() else { return };
    let mut inputs: Vec<PathBuf> = Vec::new();
    for sub in ["dat", "collate", "fixmate", "markdup"] {
        let mut sams: Vec<PathBuf> = std::fs::read_dir(data.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "sam"))
            .collect();
        sams.sort();
        inputs.extend(sams);
    }
    for input in &inputs {
        let input = input.to_string_lossy().into_owned();
        // A prefix in the run's directory: samtools leaves its temporary
        // files behind when it fails (positions past BAM's range).
        same(&dir, &["collate", "--no-PG", "-o", "out.sam", &input, "tmp"], None);
    }
}

/// The @PG line names fasthts; the header's @HD says SO:unsorted GO:query.
#[test]
fn header_and_pg_line() {
    let Some(dir) = with_samtools("collate-header") else { return };
    let Some(data) = samtools_test_data() else { return };
    let input = data.join("dat/test_input_1_d.sam").to_string_lossy().into_owned();
    let (ours_dir, ours) = run_side(&dir, "fasthts", &["collate", "-o", "out.sam", &input], None);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let (theirs_dir, _) = run_side(&dir, "samtools", &["collate", "-o", "out.sam", &input], None);
    let (ours, theirs) = (std::fs::read(ours_dir.join("out.sam")).unwrap(), std::fs::read(theirs_dir.join("out.sam")).unwrap());
    assert!(without_pg(&ours) == without_pg(&theirs));
    let first = text(&ours).lines().next().unwrap_or("").to_string();
    assert!(first.starts_with("@HD\t") && first.contains("\tSO:unsorted") && first.contains("\tGO:query"), "{first}");
    assert!(text(&ours).lines().any(|l| l.starts_with("@PG\tID:fasthts\tPN:fasthts\t") && l.contains("collate")));
}

/// Bad input: one line naming the file, exit 1, nothing left behind (no
/// output, no temporaries); usage errors as samtools'.
#[test]
fn bad_input_is_refused_cleanly() {
    let Some(dir) = with_samtools("collate-bad") else { return };
    let Some(data) = samtools_test_data() else { return };
    let good = std::fs::read(data.join("dat/test_input_1_d.sam")).unwrap();
    let broken = dir.path("broken.sam");
    let mut text_with_bad_line = good.clone();
    text_with_bad_line.extend_from_slice(b"bad\tnot-a-flag\t*\t0\t0\t*\t*\t0\t0\tA\t*\n");
    std::fs::write(&broken, &text_with_bad_line).unwrap();
    let junk = dir.path("junk.bam");
    std::fs::write(&junk, b"\x1f\x8b\x08\x04junk").unwrap();
    for input in [&broken, &junk, &dir.path("missing.bam")] {
        let shown = input.to_string_lossy().into_owned();
        for extra in [&[][..], &["--max-memory", "1K"]] {
            let mut args = vec!["collate"];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["-o", "out.bam", &shown, "tmp"]);
            let (work, ours) = run_side(&dir, "fasthts", &args, None);
            let (_, theirs) = run_side(&dir, "samtools", &args, None);
            assert_eq!(ours.status.code(), theirs.status.code(), "{shown}: {}", text(&ours.stderr));
            let stderr = text(&ours.stderr);
            let errors: Vec<&str> = stderr.lines().filter(|l| !l.contains("warning")).collect();
            assert_eq!(errors.len(), 1, "{stderr}");
            assert!(errors[0].starts_with("fasthts collate: ") && errors[0].contains(&shown), "{stderr}");
            assert!(files_in(&work).is_empty(), "{shown}: left {:?}", files_in(&work));
        }
    }
    // Usage errors: no prefix, -o or -O; -o with -O; status 1 as samtools.
    let input = data.join("dat/test_input_1_d.sam").to_string_lossy().into_owned();
    for args in [&["collate", input.as_str()][..], &["collate", "-O", "-o", "x.bam", &input]] {
        let (work, ours) = run_side(&dir, "fasthts", args, None);
        let (_, theirs) = run_side(&dir, "samtools", args, None);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert_eq!(text(&ours.stderr).lines().count(), 1, "{}", text(&ours.stderr));
        assert!(files_in(&work).is_empty());
    }
    // The input as the output: refused, the input intact.
    let copy = dir.path("copy.bam");
    let mut view = Command::new("samtools");
    view.args(["view", "-b", "-o"]).arg(&copy).arg(data.join("dat/test_input_1_d.sam"));
    assert!(run(view).status.success());
    let before = std::fs::read(&copy).unwrap();
    let mut cmd = fasthts();
    cmd.arg("collate").arg("-o").arg(&copy).arg(&copy);
    assert_eq!(run(cmd).status.code(), Some(1));
    assert!(std::fs::read(&copy).unwrap() == before, "input overwritten");
}

/// SIGTERM mid-run removes the spilled buckets and the unfinished output;
/// SIGKILL's leftovers are removed by the next run with the prefix.
#[test]
fn interrupted_runs_leave_nothing() {
    let dir = TempDir::new("collate-signals");
    let args = ["-q", "--seed", "3", "--reads", "120000", "--refs", "3", "--ref-len", "600000"];
    let sam = dir.path("reads.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let work = dir.path("work");
    std::fs::create_dir_all(&work).unwrap();
    let start = |out: &str| {
        let mut cmd = fasthts();
        cmd.current_dir(&work).args(["collate", "-@", "1", "--max-memory", "2M", "-T", "p", "-o", out]).arg(&sam);
        cmd.stderr(std::process::Stdio::null());
        cmd.spawn().unwrap()
    };
    // Wait until the spill directory exists.
    let spilled = || files_in(&work).iter().any(|f| f.starts_with("p.fasthts-collate."));
    let wait_for_spill = || {
        for _ in 0..400 {
            if spilled() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    };
    let mut child = start("out.bam");
    assert!(wait_for_spill(), "no spill directory appeared");
    // SAFETY: sends SIGTERM to the child this test started (its pid).
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(files_in(&work).is_empty(), "left after SIGTERM: {:?}", files_in(&work));
    let mut child = start("out.bam");
    assert!(wait_for_spill());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(spilled(), "SIGKILL leaves the spill directory");
    let mut next = fasthts();
    next.current_dir(&work).args(["collate", "--max-memory", "2M", "-T", "p", "-o", "out.bam"]).arg(&sam);
    assert!(run(next).status.success());
    assert_eq!(files_in(&work), ["out.bam"], "the killed run's temporaries are removed by the next");
}
