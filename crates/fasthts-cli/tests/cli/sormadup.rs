//! `fasthts sormadup` against the samtools 1.16 chain it replaces,
//! `samtools collate -O IN | samtools fixmate -m - - | samtools sort - |
//! samtools markdup - OUT`, run here on the same input: the records
//! (`samtools view --no-PG`), the header without its @PG lines, and
//! markdup's statistics, on generated aligner output (shuffled pairs with
//! duplicates, optical ones among them, supplementary and secondary
//! alignments, single reads, unmapped mates, orphans), under markdup's and
//! fixmate's options, at one and two threads and with a `-m` small enough
//! for collate's buckets and the sort's runs to spill.

use crate::common::*;
use crate::markdup::{generated_sam, stats_lines};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `script` under bash with `set -e -o pipefail` in `dir`; it must
/// succeed.
fn bash(dir: &Path, script: &str) -> Output {
    let mut c = Command::new("bash");
    c.current_dir(dir).args(["-c", &format!("set -e -o pipefail; {script}")]);
    let out = run(c);
    assert!(out.status.success(), "{script}: {}", text(&out.stderr));
    out
}

/// The header without @PG lines and the records of `path`, as samtools
/// view prints them.
fn view(dir: &Path, path: &str) -> (String, String) {
    let out = bash(dir, &format!("samtools view -h --no-PG {path}"));
    let all = text(&out.stdout);
    let header = all.lines().filter(|l| l.starts_with('@') && !l.starts_with("@PG\t")).collect::<Vec<_>>().join("\n");
    let records = all.lines().filter(|l| !l.starts_with('@')).collect::<Vec<_>>().join("\n");
    (header, records)
}

/// samtools' chain on `input` into `theirs.bam` and `theirs.txt` (the
/// statistics), in `dir`; without collate when `collate` is false.
fn samtools_chain(dir: &Path, input: &str, fixmate: &[&str], markdup: &[&str], collate: bool) -> ((String, String), Vec<String>) {
    let first = match collate {
        true => format!("samtools collate -O {input} collate-tmp | samtools fixmate -m {} - -", fixmate.join(" ")),
        false => format!("samtools fixmate -m {} {input} -", fixmate.join(" ")),
    };
    let script = format!("{first} | samtools sort -T sort-tmp - | samtools markdup -f theirs.txt {} - theirs.bam", markdup.join(" "));
    bash(dir, &script);
    (view(dir, "theirs.bam"), stats_lines(&std::fs::read_to_string(dir.join("theirs.txt")).unwrap()))
}

/// `fasthts sormadup -f ours.txt ARGS -o ours.bam INPUT` in `dir`.
fn sormadup(dir: &Path, args: &[&str], input: &str) -> ((String, String), Vec<String>) {
    let mut c = fasthts();
    c.current_dir(dir).args(["sormadup", "-f", "ours.txt"]).args(args).args(["-o", "ours.bam", input]);
    let out = run(c);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    (view(dir, "ours.bam"), stats_lines(&std::fs::read_to_string(dir.join("ours.txt")).unwrap()))
}

/// Shuffled generated pairs, as an aligner's output whose header says
/// nothing of the order (written as `NAME.sam`, returned).
fn aligner_output(dir: &TempDir, name: &str, seed: &str) -> PathBuf {
    generated_sam(dir, name, seed, &["--unsorted", "--unmapped-fraction", "0.03", "--qcfail-fraction", "0.02"])
}

/// The threads and memory sormadup is run with for each comparison: the
/// default memory (all in memory), and 1M per thread, so that collate's
/// buckets and the sort's batches go to disk.
const RUNS: [&[&str]; 3] = [&["-@", "1"], &["-@", "2"], &["-@", "2", "-m", "1M"]];

/// Under each option set (samtools fixmate's, samtools markdup's, and the
/// same as sormadup's), the records, header and statistics of samtools'
/// chain.
#[test]
fn options_match_the_samtools_chain() {
    let Some(dir) = with_samtools("sormadup-options") else { return };
    let sam = aligner_output(&dir, "aligned", "21");
    let input = sam.to_string_lossy().into_owned();
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    // (fixmate options, markdup options, sormadup options)
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (&[], &[], &[]),
        (&[], &["-r"], &["-r"]),
        (&[], &["-S"], &["-S"]),
        (&[], &["-d", "100", "-S", "-t"], &["-d", "100", "-S", "-t"]),
        (&[], &["--mode", "s", "-d", "100"], &["--mode", "s", "-d", "100"]),
        (&[], &["-c", "-r", "-S"], &["-c", "-r", "-S"]),
        (&[], &["--include-fails", "--no-multi-dup", "-d", "100"], &["--include-fails", "--no-multi-dup", "-d", "100"]),
        (&[], &["-l", "150", "-d", "2500"], &["--max-read-length", "150", "-d", "2500"]),
        (&["-r"], &["-S"], &["--fix-remove", "-S"]),
        (&["-p", "-c"], &[], &["--fix-no-pair-check", "--fix-template-cigar"]),
    ];
    for (fixmate, markdup, ours_options) in cases {
        let theirs = samtools_chain(&work, &input, fixmate, markdup, true);
        assert!(theirs.1.iter().any(|l| l.starts_with("DUPLICATE PAIR: ") && l != "DUPLICATE PAIR: 0"), "{markdup:?}: {:?}", theirs.1);
        for run in RUNS {
            let args: Vec<&str> = run.iter().chain(ours_options.iter()).copied().collect();
            let ours = sormadup(&work, &args, &input);
            assert!(ours.0 .0 == theirs.0 .0, "{args:?}: header differs:\n{}\nsamtools:\n{}", ours.0 .0, theirs.0 .0);
            assert!(ours.0 .1 == theirs.0 .1, "{args:?}: records differ from samtools'");
            assert_eq!(ours.1, theirs.1, "{args:?}: statistics");
        }
    }
    // The data has what the options are about.
    let stats = samtools_chain(&work, &input, &[], &["-d", "100", "-S"], true).1;
    for counted in ["DUPLICATE PAIR OPTICAL", "DUPLICATE SINGLE", "DUPLICATE NON PRIMARY", "EXCLUDED"] {
        assert!(!stats.contains(&format!("{counted}: 0")), "{counted} is 0: {stats:?}");
    }
    let records = view(&work, "theirs.bam").1;
    let flags: Vec<u16> = records.lines().map(|l| l.split('\t').nth(1).unwrap().parse().unwrap()).collect();
    for (bit, what) in [(0x100, "secondary"), (0x800, "supplementary"), (0x8, "mate unmapped"), (0x4, "unmapped")] {
        assert!(flags.iter().any(|f| f & bit != 0), "no {what} record");
    }
    assert!(flags.iter().any(|f| f & 1 == 0), "no single read");
}

/// The input's forms: BAM, SAM and bgzipped SAM files, SAM and BAM on
/// standard input; SAM output on standard output.
#[test]
fn input_forms_and_standard_streams() {
    let Some(dir) = with_samtools("sormadup-inputs") else { return };
    let sam = aligner_output(&dir, "aligned", "22");
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    let input = sam.to_string_lossy().into_owned();
    bash(&work, &format!("samtools view --no-PG -b -o aligned.bam {input}; bgzip -c {input} > aligned.sam.gz"));
    let theirs = samtools_chain(&work, &input, &[], &["-S", "-d", "100"], true);
    for source in ["aligned.bam", "aligned.sam.gz", &input] {
        for run in RUNS {
            let args: Vec<&str> = run.iter().copied().chain(["-S", "-d", "100"]).collect();
            assert!(sormadup(&work, &args, source) == theirs, "{source} {args:?}: differs from samtools' chain");
        }
    }
    for (source, threads) in [("aligned.bam", "1"), ("aligned.sam.gz", "2"), (input.as_str(), "2")] {
        let script = format!(
            "cat {source} | {fasthts} sormadup -@ {threads} -S -d 100 -O sam --no-PG -o - - > ours.sam",
            fasthts = env!("CARGO_BIN_EXE_fasthts")
        );
        bash(&work, &script);
        assert!(view(&work, "ours.sam").1 == theirs.0 .1, "{source} on standard input: records differ");
    }
}

/// Input sorted by name (or collated: @HD GO:query) is not collated: the
/// records of samtools fixmate -m | sort | markdup; with --collate, those
/// of the chain with collate.
#[test]
fn grouped_input() {
    let Some(dir) = with_samtools("sormadup-grouped") else { return };
    let sam = aligner_output(&dir, "aligned", "23");
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    let input = sam.to_string_lossy().into_owned();
    bash(&work, &format!("samtools sort -n --no-PG -o by_name.bam {input}; samtools collate --no-PG -o collated.bam {input} c-tmp"));
    for grouped in ["by_name.bam", "collated.bam"] {
        let theirs = samtools_chain(&work, grouped, &[], &["-S"], false);
        let collated = samtools_chain(&work, grouped, &[], &["-S"], true);
        for run in RUNS {
            let args: Vec<&str> = run.iter().copied().chain(["-S"]).collect();
            assert!(sormadup(&work, &args, grouped) == theirs, "{grouped} {args:?}: differs from fixmate | sort | markdup");
            let args: Vec<&str> = args.into_iter().chain(["--collate"]).collect();
            assert!(sormadup(&work, &args, grouped) == collated, "{grouped} {args:?}: differs from the chain with collate");
        }
    }
    // Collate reorders a name-sorted input: the two chains differ (so the
    // comparison above tells them apart).
    let by_name = samtools_chain(&work, "by_name.bam", &[], &[], false);
    assert!(by_name.0 .1 != samtools_chain(&work, "by_name.bam", &[], &[], true).0 .1);
}

/// --write-index: a CSI beside the BAM that samtools reads regions with.
#[test]
fn writes_an_index() {
    let Some(dir) = with_samtools("sormadup-index") else { return };
    let sam = aligner_output(&dir, "aligned", "24");
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    let input = sam.to_string_lossy().into_owned();
    let ours = sormadup(&work, &["-@", "2", "--write-index"], &input);
    assert!(work.join("ours.bam.csi").exists());
    let count = |script: &str| text(&bash(&work, script).stdout).trim().to_string();
    let by_index = count("samtools view -c ours.bam chr1:1000-30000");
    let by_scan = count("samtools view ours.bam | awk '$3 == \"chr1\" && $4 <= 30000' | wc -l");
    assert!(by_index.parse::<u64>().unwrap() > 0);
    // Records that start before 1000 and reach into the region count too.
    assert!(by_index.parse::<u64>().unwrap() <= by_scan.parse::<u64>().unwrap());
    assert!(!ours.0 .1.is_empty());
    assert_eq!(count("samtools view -c ours.bam chr1"), count("samtools view ours.bam | awk '$3 == \"chr1\"' | wc -l"));
}

/// Bad input: one line naming the path, a failing status, no output and
/// no temporary file left.
#[test]
fn bad_input() {
    let Some(dir) = with_samtools("sormadup-bad") else { return };
    let sam = aligner_output(&dir, "aligned", "25");
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    let input = sam.to_string_lossy().into_owned();
    bash(
        &work,
        &format!("samtools view --no-PG -b -o good.bam {input}; head -c 60000 good.bam > truncated.bam; echo garbage > garbage.bam"),
    );
    std::fs::write(work.join("bad.sam"), "@SQ\tSN:c\tLN:100\nr\t0\tc\tnotanumber\t60\t4M\t*\t0\t0\tACGT\tIIII\n").unwrap();
    for bad in ["truncated.bam", "garbage.bam", "bad.sam", "missing.bam"] {
        let path = work.join(bad).to_string_lossy().into_owned();
        for memory in ["768M", "1M"] {
            let args = ["-m".to_string(), memory.to_string(), path.clone()];
            fails_in_one_line_leaving_no_output("sormadup", &work.join("out.bam"), &args, &path);
            let left: Vec<String> =
                std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
            assert!(left.iter().all(|n| !n.contains("out.bam") && !n.contains("tmp")), "{bad}: left {left:?}");
        }
    }
}
