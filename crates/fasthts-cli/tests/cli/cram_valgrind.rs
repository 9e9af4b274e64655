//! The CRAM paths that go through htslib's C API (`crates/fasthts/src/cram`),
//! run under valgrind's memcheck with threads (issue 39): `view` of
//! overlapping regions in small parallel windows to SAM with `-U`, to BAM
//! and to CRAM, samtools' test.pl view case 284 (`view -h X.cram Z:30`),
//! `depth -r`, `cat` of two CRAMs, and `snp-pileup` of an indexed CRAM
//! and of one indexed in memory (`view` to SAM and case 284 twice, the
//! others once, each with two threads where it has threads). Any error memcheck sees
//! (an invalid read or write, a use of freed memory, a bad free, a
//! decision on uninitialised memory, in our code or in htslib's use of
//! what we hand it) fails the test; each command's outputs must also be
//! those of the same command run without valgrind.
//!
//! htslib is pointed at a reference server that refuses the connection
//! (`REF_PATH=https://127.0.0.1:1/%s`), so that, offline, each thread that
//! loads a reference goes through libcurl as it does by default (EBI's
//! server, then `@SQ UR`): the threads that did so and were still ending
//! as the process exited corrupted the heap (see
//! `fasthts_io::pool::JoinedPool`).

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// memcheck's exit status when it saw an error.
const VALGRIND_ERROR: i32 = 99;

/// Whether valgrind runs, through `require` (Debian package valgrind,
/// which scripts/test.sh installs).
fn have_valgrind() -> bool {
    require(runs("valgrind", &["--version"]), "valgrind (Debian package valgrind)")
}

/// `command` with htslib's reference lookup made offline but through
/// libcurl (see the module documentation).
fn offline(mut command: Command) -> Command {
    command.env("REF_PATH", "https://127.0.0.1:1/%s").env("REF_CACHE", "/nonexistent/%2s/%2s/%s");
    command
}

/// `fasthts ARGS` under memcheck: fails the test on any error it reports.
fn under_valgrind(args: &[&dyn AsRef<OsStr>], what: &str) {
    let mut c = offline(Command::new("valgrind"));
    c.args(["-q", "--error-exitcode=99", "--fair-sched=yes", "--leak-check=no", "--trace-children=no"]);
    c.arg(env!("CARGO_BIN_EXE_fasthts")).args(args);
    let out = run(c);
    assert_ne!(out.status.code(), Some(VALGRIND_ERROR), "{what}: valgrind reports errors:\n{}", text(&out.stderr));
    assert!(out.status.success(), "{what}: failed under valgrind ({:?}):\n{}", out.status, text(&out.stderr));
}

/// `fasthts ARGS` without valgrind.
fn plain(args: &[&dyn AsRef<OsStr>], what: &str) {
    let mut c = offline(fasthts());
    c.args(args);
    let out = run(c);
    assert!(out.status.success(), "{what}: {}", text(&out.stderr));
}

fn samtools(args: &[&dyn AsRef<OsStr>]) -> Output {
    let mut c = offline(Command::new("samtools"));
    c.args(args);
    let out = run(c);
    assert!(out.status.success(), "samtools: {}", text(&out.stderr));
    out
}

/// One command of the test.
struct Case {
    /// Its name in messages and in its output directories.
    what: &'static str,
    /// Its arguments, `{OUT}` standing for the directory its outputs go to.
    args: Vec<String>,
    /// The files it writes there, compared with [`content`].
    outputs: &'static [&'static str],
    /// How many times it runs under valgrind.
    runs: usize,
}

/// An output's content for comparison: its bytes, or a CRAM's records.
fn content(path: &Path, fasta: &Path) -> Vec<u8> {
    if path.extension().is_some_and(|e| e == "cram") {
        samtools(&[&"view", &"-h", &"--no-PG", &"-T", &fasta, &path]).stdout
    } else {
        std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// Runs `case` without valgrind once and under it `case.runs` times, each
/// into a directory of its own under `dir`, and compares the outputs.
fn check(dir: &Path, case: &Case, fasta: &Path) {
    let run_in = |tag: &str, valgrind: bool| -> PathBuf {
        let out_dir = dir.join(format!("{}-{tag}", case.what));
        std::fs::create_dir_all(&out_dir).unwrap();
        let args: Vec<String> = case.args.iter().map(|a| a.replace("{OUT}", out_dir.to_str().unwrap())).collect();
        let args: Vec<&dyn AsRef<OsStr>> = args.iter().map(|a| a as &dyn AsRef<OsStr>).collect();
        let what = format!("{} ({tag})", case.what);
        if valgrind {
            under_valgrind(&args, &what);
        } else {
            plain(&args, &what);
        }
        out_dir
    };
    let want_dir = run_in("plain", false);
    for name in case.outputs {
        assert!(!content(&want_dir.join(name), fasta).is_empty(), "{}: {name} is empty", case.what);
    }
    for i in 0..case.runs {
        let got_dir = run_in(&format!("valgrind{i}"), true);
        for name in case.outputs {
            assert!(
                content(&got_dir.join(name), fasta) == content(&want_dir.join(name), fasta),
                "{}: {name} differs under valgrind",
                case.what
            );
        }
    }
}

#[test]
fn cram_region_and_output_paths_are_clean_under_valgrind_with_threads() {
    if !have_valgrind() {
        return;
    }
    let Some(dir) = with_samtools("cram-valgrind") else { return };
    let Some(samtools_tests) = samtools_test_data() else { return };
    let started = Instant::now();
    // Small inputs (memcheck is 20-50 times slower): 600 templates on
    // three contigs, CRAM slices of 60 records so that regions and
    // windows span several containers.
    let fasta = dir.path("ref.fa");
    let sites = dir.path("sites.vcf");
    let (fasta_arg, sites_arg) = (fasta.to_str().unwrap().to_string(), sites.to_str().unwrap().to_string());
    let gen = ["-q", "--seed", "11", "--reads", "600", "--refs", "3", "--ref-len", "20k", "--reference-fasta", &fasta_arg];
    let sam = dir.path("reads.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&[&gen[..], &["--sites-vcf", &sites_arg, "--sites", "200"]].concat()).unwrap()).unwrap();
    samtools(&[&"faidx", &fasta]);
    let cram = dir.path("reads.cram");
    samtools_cram(&sam, &fasta, &cram, &["seqs_per_slice=60", "slices_per_container=1"]);
    // Without a .crai: snp-pileup indexes it in memory (a memfd htslib
    // opens by its /proc/self/fd name).
    let bare = dir.path("bare.cram");
    std::fs::copy(&cram, &bare).unwrap();
    // samtools' test.pl view case 284: view.002.sam with @SQ UR naming its
    // FASTA, as CRAM, indexed; the reference is found by UR alone.
    let one_bp_fasta = samtools_tests.join("dat/view.002.fa");
    let one_bp_sam = dir.path("view.002.sam");
    let with_ur: String = text(&std::fs::read(samtools_tests.join("dat/view.002.sam")).unwrap())
        .lines()
        .map(|l| if l.starts_with("@SQ") { format!("{l}\tUR:{}\n", one_bp_fasta.display()) } else { format!("{l}\n") })
        .collect();
    std::fs::write(&one_bp_sam, with_ur).unwrap();
    let one_bp = dir.path("view.002.cram");
    samtools(&[&"view", &"-C", &"--no-PG", &"-o", &one_bp, &one_bp_sam]);
    samtools(&[&"index", &one_bp]);

    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let (cram, bare, one_bp) = (cram.to_str().unwrap(), bare.to_str().unwrap(), one_bp.to_str().unwrap());
    let fasta_s = fasta.to_str().unwrap();
    let regions = ["chr1:100-5000", "chr1:3000-9000", "chr2", "chr1:8000-8100", "*"];
    let view = |extra: &[&str]| {
        let mut a = s(&["view", "--no-PG", "-@2", "--window-bases", "700", "-q", "30"]);
        a.extend(s(extra));
        a.push(cram.to_string());
        a.extend(s(&regions));
        a
    };
    let cases = [
        Case {
            what: "view-sam-and-U",
            args: view(&["-h", "-o", "{OUT}/o.sam", "-U", "{OUT}/u.sam"]),
            outputs: &["o.sam", "u.sam"],
            runs: 2,
        },
        Case { what: "view-bam", args: view(&["-b", "-o", "{OUT}/o.bam", "-U", "{OUT}/u.sam"]), outputs: &["o.bam", "u.sam"], runs: 1 },
        Case {
            what: "view-cram",
            args: view(&["-C", "-T", fasta_s, "-o", "{OUT}/o.cram", "-U", "{OUT}/u.cram"]),
            outputs: &["o.cram", "u.cram"],
            runs: 1,
        },
        Case {
            what: "view-1bp-Z30",
            args: s(&["view", "-h", "--no-PG", "-o", "{OUT}/o.sam", one_bp, "Z:30"]),
            outputs: &["o.sam"],
            runs: 2,
        },
        Case {
            what: "view-1bp-regions",
            args: s(&["view", "-@2", "--window-bases", "7", "-h", "--no-PG", "-o", "{OUT}/o.sam", one_bp, "Z:10-40", "Z:30", "Z:5-12"]),
            outputs: &["o.sam"],
            runs: 1,
        },
        Case {
            what: "depth",
            args: s(&["depth", "-@2", "-a", "-r", "chr1:1000-20000", "-o", "{OUT}/d.tsv", cram]),
            outputs: &["d.tsv"],
            runs: 1,
        },
        Case {
            // cram/cat.rs: containers copied through htslib's CRAM API.
            what: "cat-cram",
            args: s(&["cat", "--no-PG", "-o", "{OUT}/c.cram", cram, bare]),
            outputs: &["c.cram"],
            runs: 1,
        },
        Case {
            what: "snp-pileup",
            args: s(&["snp-pileup", "-@2", "--region-size", "3000", "-r", "5,0", &sites_arg, "{OUT}/p.csv", cram, bare]),
            outputs: &["p.csv"],
            runs: 1,
        },
    ];
    for case in &cases {
        check(&dir.0, case, &fasta);
    }
    eprintln!("cram under valgrind: {:.1} s", started.elapsed().as_secs_f64());
}
