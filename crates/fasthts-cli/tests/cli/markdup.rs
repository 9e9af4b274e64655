//! `fasthts markdup` against samtools 1.16 markdup: samtools' own test
//! cases (test.pl's `test_markdup`) against their expected files, and
//! generated pairs with many duplicates (optical ones among them,
//! supplementary alignments, single reads, earlier marks) made ready by
//! samtools collate, fixmate -m and sort, compared with samtools' output
//! and statistics, at one and two threads.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `tool markdup ARGS` in `dir` (samtools or fasthts).
fn markdup(tool: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = if tool == "samtools" { Command::new("samtools") } else { fasthts() };
    cmd.current_dir(dir).arg("markdup").args(args);
    run(cmd)
}

/// samtools' test.pl `test_markdup` cases that succeed: each by fasthts at
/// -@1 and -@2, stdout against the expected SAM.
#[test]
fn samtools_test_cases() {
    let Some(dir) = with_samtools("markdup-cases") else { return };
    let Some(data) = samtools_test_data() else { return };
    let md = data.join("markdup");
    let cases: [(&str, &[&str]); 14] = [
        ("5_markdup", &["-O", "sam", "--no-PG"]),
        ("6_remove_dups", &["-O", "sam", "-r", "--no-PG"]),
        ("7_mark_supp_dup", &["-S", "-O", "sam", "--no-PG"]),
        ("8_optical_dup", &["-S", "-d", "100", "--mode", "s", "-t", "-O", "sam", "--no-PG"]),
        ("9_optical_dup_qcfail", &["-S", "-d", "2500", "--mode", "s", "-t", "--include-fails", "-O", "sam", "--no-PG"]),
        ("10_optical_chain", &["-S", "-d", "2500", "--mode", "s", "-t", "-O", "sam", "--no-PG", "-S"]),
        (
            "10_optical_chain",
            &[
                "-S",
                "-d",
                "2500",
                "--mode",
                "s",
                "-t",
                "-O",
                "sam",
                "--read-coords",
                "([[:digit:]]+):([[:digit:]]+):([[:digit:]]+)$",
                "--no-PG",
                "-S",
            ],
        ),
        (
            "11_optical_dup_regex",
            &[
                "-S",
                "-d",
                "100",
                "--mode",
                "s",
                "-t",
                "-O",
                "sam",
                "--read-coords",
                "^([0-9]+):([0-9]+):([[:print:]]+)",
                "--coords-order",
                "xyt",
                "--no-PG",
            ],
        ),
        (
            "11_optical_dup_regex",
            &[
                "-S",
                "-d",
                "100",
                "--mode",
                "s",
                "-t",
                "-O",
                "sam",
                "--read-coords",
                "^([0-9]+):([0-9]+)",
                "--coords-order",
                "xy",
                "--no-PG",
            ],
        ),
        (
            "12_optical_chain_regex",
            &[
                "-S",
                "-d",
                "2500",
                "--mode",
                "s",
                "-t",
                "-O",
                "sam",
                "--read-coords",
                "([[:digit:]]+):([[:digit:]]+)$",
                "--coords-order",
                "xy",
                "--no-PG",
            ],
        ),
        ("13_optical_barcode_tag", &["-S", "-d", "100", "--mode", "s", "-t", "--barcode-tag", "BX", "-O", "sam", "--no-PG"]),
        ("14_optical_barcode_name", &["-S", "-d", "100", "--mode", "s", "-t", "--barcode-name", "-O", "sam", "--no-PG"]),
        (
            "15_optical_barcode_rgx_name",
            &[
                "-S",
                "-d",
                "100",
                "--mode",
                "s",
                "-t",
                "--barcode-rgx",
                "^([!-9;-?A-~]+):[0-9]+:",
                "--read-coords",
                "^[!-9;-?A-~]+:([0-9]+):([0-9]+)",
                "--coords-order",
                "xy",
                "-O",
                "sam",
                "--no-PG",
            ],
        ),
        (
            "16_optical_barcode_rgx_name_test_2",
            &[
                "-S",
                "-d",
                "100",
                "--mode",
                "s",
                "-t",
                "--barcode-rgx",
                "^([!-9;-?A-~]+):[0-9]+:",
                "--read-coords",
                "^[!-9;-?A-~]+:([0-9]{4})([0-9]{4})",
                "--coords-order",
                "xy",
                "-O",
                "sam",
                "--no-PG",
            ],
        ),
    ];
    for (name, options) in cases {
        let input = md.join(format!("{name}.sam")).to_string_lossy().into_owned();
        let expected = std::fs::read(md.join(format!("{name}.expected.sam"))).unwrap();
        for threads in ["1", "2"] {
            let args: Vec<&str> = ["-@", threads].into_iter().chain(options.iter().copied()).chain([input.as_str(), "-"]).collect();
            let ours = markdup("fasthts", &dir.path(""), &args);
            assert!(ours.status.success(), "{name} {args:?}: {}", text(&ours.stderr));
            assert!(ours.stdout == expected, "{name} {args:?}: output differs from {name}.expected.sam");
        }
    }
}

/// test.pl's four failing cases (name-sorted, out of order, no MC, no ms):
/// samtools' exit status, and one line saying what samtools 1.16 says
/// first, naming the input.
#[test]
fn samtools_refusals() {
    let Some(dir) = with_samtools("markdup-refusals") else { return };
    let Some(data) = samtools_test_data() else { return };
    for name in ["1_name_sort", "2_bad_order", "3_missing_mc", "4_missing_ms"] {
        let input = data.join(format!("markdup/{name}.sam")).to_string_lossy().into_owned();
        for threads in ["1", "2"] {
            let args = ["-@", threads, "-O", "sam", "--no-PG", input.as_str(), "out.sam"];
            let theirs = markdup("samtools", &dir.path(""), &args);
            let _ = std::fs::remove_file(dir.path("out.sam"));
            let ours = markdup("fasthts", &dir.path(""), &args);
            assert_eq!(ours.status.code(), theirs.status.code(), "{name}");
            let said = text(&theirs.stderr);
            let said = said.lines().next().unwrap().trim_start_matches("[markdup] error: ").trim_end_matches('.');
            let ours_said = text(&ours.stderr);
            assert_eq!(ours_said.lines().count(), 1, "{name}: {ours_said}");
            assert!(ours_said.starts_with(&format!("fasthts markdup: {input}: {said}")), "{name}: {ours_said} (samtools: {said})");
            assert!(!dir.path("out.sam").exists(), "{name}: an output was left");
        }
    }
}

/// Writes `name.sam` in `dir`: generated pairs (40% duplicates of the
/// pair before, supplementary alignments, single reads, unmapped mates, QC
/// failures, earlier duplicate flags; `extra` testgen options, such as
/// `--unsorted`) with Illumina names on two tiles and x/y folded into 400
/// pixels, so that many duplicates are optical at `-d 100`.
pub(super) fn generated_sam(dir: &TempDir, name: &str, seed: &str, extra: &[&str]) -> PathBuf {
    let args: Vec<&str> = [
        "-q",
        "--seed",
        seed,
        "--reads",
        "6000",
        "--refs",
        "3",
        "--ref-len",
        "40000",
        "--dup-fraction",
        "0.4",
        "--single-end-fraction",
        "0.08",
        "--singleton-fraction",
        "0.05",
        "--chimeric-fraction",
        "0.05",
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .collect();
    let sam = String::from_utf8(fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let mut folded = String::with_capacity(sam.len());
    for line in sam.lines() {
        if line.starts_with('@') {
            folded.push_str(line);
        } else {
            let (qname, rest) = line.split_once('\t').unwrap();
            let fields: Vec<&str> = qname.split(':').collect();
            assert_eq!(fields.len(), 7, "an Illumina name: {qname}");
            let number = |s: &str| s.parse::<u64>().unwrap();
            let tile = 1101 + number(fields[4]) % 2;
            let x = number(fields[5]) % 400;
            let y = (number(fields[6]) * 37) % 400;
            folded.push_str(&format!("{}:{}:{}:{}:{tile}:{x}:{y}_{}\t{rest}", fields[0], fields[1], fields[2], fields[3], fields[6]));
        }
        folded.push('\n');
    }
    let sam_path = dir.path(&format!("{name}.sam"));
    std::fs::write(&sam_path, folded).unwrap();
    sam_path
}

/// Makes `name.bam` in `dir` from [`generated_sam`]'s records, collated,
/// fixmate -m'd and sorted by samtools.
fn generated_input(dir: &TempDir, name: &str, seed: &str) -> PathBuf {
    let sam_path = generated_sam(dir, name, seed, &[]);
    let bam = dir.path(&format!("{name}.bam"));
    let script = format!(
        "set -e -o pipefail; samtools collate -O -u {sam} {tmp} | samtools fixmate -m -u - - | samtools sort --no-PG -o {bam} -",
        sam = sam_path.display(),
        tmp = dir.path(&format!("{name}-collate")).display(),
        bam = bam.display()
    );
    let out = run({
        let mut c = Command::new("bash");
        c.args(["-c", &script]);
        c
    });
    assert!(out.status.success(), "preparing {name}: {}", text(&out.stderr));
    bam
}

/// The statistics lines of a `-s` stderr or `-f` file, without COMMAND
/// (which names the program).
pub(super) fn stats_lines(text: &str) -> Vec<String> {
    text.lines().filter(|l| !l.starts_with("COMMAND: ") && !l.contains("warning") && l.contains(": ")).map(str::to_string).collect()
}

/// Generated duplicates: fasthts and samtools give the same records and
/// statistics under every marking option, at one and two threads.
#[test]
fn generated_duplicates_match_samtools() {
    let Some(dir) = with_samtools("markdup-generated") else { return };
    let bam = generated_input(&dir, "fixed", "11");
    let input = bam.to_string_lossy().into_owned();
    let option_sets: &[&[&str]] = &[
        &[],
        &["-r"],
        &["-S"],
        &["-S", "-r"],
        &["-d", "100"],
        &["-d", "100", "-S", "-t"],
        &["-d", "100", "--mode", "s", "-t", "-S"],
        &["--mode", "s"],
        &["-c"],
        &["-c", "-t", "-d", "100", "-S", "-r"],
        &["--include-fails", "-d", "100"],
        &["--no-multi-dup", "-d", "100", "-t"],
        &["-l", "150", "-d", "2500"],
        &["-t"],
    ];
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    for options in option_sets {
        let mut theirs_stats = None;
        for (tool, threads) in [("samtools", "1"), ("fasthts", "1"), ("fasthts", "2")] {
            let args: Vec<&str> = ["-@", threads, "-O", "sam", "--no-PG", "-f", "stats.txt"]
                .into_iter()
                .chain(options.iter().copied())
                .chain([input.as_str(), "out.sam"])
                .collect();
            let out = markdup(tool, &work, &args);
            assert!(out.status.success(), "{tool} {args:?}: {}", text(&out.stderr));
            let records = std::fs::read(work.join("out.sam")).unwrap();
            let stats = stats_lines(&std::fs::read_to_string(work.join("stats.txt")).unwrap());
            match &theirs_stats {
                None => {
                    std::fs::rename(work.join("out.sam"), work.join("theirs.sam")).unwrap();
                    theirs_stats = Some(stats);
                }
                Some(expected) => {
                    let theirs = std::fs::read(work.join("theirs.sam")).unwrap();
                    assert!(records == theirs, "{args:?}: records differ from samtools'");
                    assert_eq!(&stats, expected, "{args:?}: statistics");
                }
            }
        }
        let marked = theirs_stats.unwrap();
        assert!(marked.iter().any(|l| l.starts_with("DUPLICATE PAIR: ") && l != "DUPLICATE PAIR: 0"), "{options:?}: {marked:?}");
    }
    // The data has what the options are about.
    let stats = |options: &[&str]| {
        let args: Vec<&str> =
            ["-f", "s.txt", "--no-PG"].into_iter().chain(options.iter().copied()).chain([input.as_str(), "o.bam"]).collect();
        assert!(markdup("samtools", &work, &args).status.success());
        std::fs::read_to_string(work.join("s.txt")).unwrap()
    };
    let optical = stats(&["-d", "100", "-S"]);
    for counted in ["DUPLICATE PAIR OPTICAL", "DUPLICATE SINGLE", "DUPLICATE NON PRIMARY", "EXCLUDED"] {
        assert!(!optical.contains(&format!("{counted}: 0\n")), "{counted} is 0:\n{optical}");
    }
}

/// BAM output (compressed, and uncompressed with -u to stdout) record for
/// record, -s statistics on stderr, and samtools' @PG-less header.
#[test]
fn bam_output_and_stderr_statistics() {
    let Some(dir) = with_samtools("markdup-bam") else { return };
    let bam = generated_input(&dir, "fixed", "12");
    let input = bam.to_string_lossy().into_owned();
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    let theirs = markdup("samtools", &work, &["-s", "--no-PG", "-d", "100", "-S", &input, "theirs.bam"]);
    assert!(theirs.status.success());
    for threads in ["1", "2"] {
        let ours = markdup("fasthts", &work, &["-@", threads, "-s", "--no-PG", "-d", "100", "-S", &input, "ours.bam"]);
        assert!(ours.status.success(), "{}", text(&ours.stderr));
        // The BAM's data; its BGZF blocks end where fasthts' writer ends
        // them, as for every command (htslib ends one before a record that
        // would cross it).
        let data = |name: &str| fasthts::bgzf::decompress_all(&std::fs::read(work.join(name)).unwrap()).unwrap();
        assert!(data("ours.bam") == data("theirs.bam"), "BAM data differs");
        assert_eq!(stats_lines(&text(&ours.stderr)), stats_lines(&text(&theirs.stderr)));
        assert!(!stats_lines(&text(&ours.stderr)).is_empty());
    }
    let theirs = markdup("samtools", &work, &["-u", "--no-PG", "-r", &input, "-"]);
    let ours = markdup("fasthts", &work, &["-u", "--no-PG", "-r", &input, "-"]);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let data = |bytes: &[u8]| fasthts::bgzf::decompress_all(bytes).unwrap();
    assert!(data(&ours.stdout) == data(&theirs.stdout), "uncompressed BAM on stdout differs");
    // Uncompressed: level 0 blocks, as samtools' -u to standard output.
    assert!(ours.stdout.len() > data(&ours.stdout).len(), "not uncompressed");
    // No temporary file of -S left behind.
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().contains("tmp")), "{left:?}");
}

/// --write-index: the index samtools index makes of the output (CSI
/// beside it, or a BAI named by `##idx##`), at one and two threads with
/// -S's second pass; refused for a SAM output, leaving nothing.
#[test]
fn write_index_is_samtools_index_of_the_output() {
    let Some(dir) = with_samtools("markdup-index") else { return };
    let bam = generated_input(&dir, "fixed", "14");
    let input = bam.to_string_lossy().into_owned();
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    let samtools_index = |args: &[&str]| {
        let mut c = Command::new("samtools");
        c.current_dir(&work).arg("index").args(args);
        assert!(run(c).status.success());
    };
    for threads in ["1", "2"] {
        let ours = markdup("fasthts", &work, &["-@", threads, "-S", "--write-index", &input, "ours.bam"]);
        assert!(ours.status.success(), "{}", text(&ours.stderr));
        std::fs::copy(work.join("ours.bam"), work.join("copy.bam")).unwrap();
        samtools_index(&["-c", "copy.bam"]);
        assert!(std::fs::read(work.join("ours.bam.csi")).unwrap() == std::fs::read(work.join("copy.bam.csi")).unwrap(), "-@{threads}: CSI");
    }
    let ours = markdup("fasthts", &work, &["--write-index", &input, "named.bam##idx##named.index.bai"]);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    assert!(!work.join("named.bam.csi").exists());
    samtools_index(&["-b", "named.bam", "copy.bai"]);
    assert!(std::fs::read(work.join("named.index.bai")).unwrap() == std::fs::read(work.join("copy.bai")).unwrap(), "BAI");
    let refused = markdup("fasthts", &work, &["--write-index", &input, "out.sam"]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(text(&refused.stderr).lines().count(), 1, "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("--write-index"));
    assert!(!work.join("out.sam").exists());
}

/// Bad input: one line naming the path, exit 1, no output file left.
#[test]
fn bad_input() {
    let Some(dir) = with_samtools("markdup-bad") else { return };
    let bam = generated_input(&dir, "fixed", "13");
    let work = dir.path("run");
    std::fs::create_dir_all(&work).unwrap();
    // Sorted by name, and unsorted with no SO: refused as samtools.
    let by_name = dir.path("by_name.bam");
    let mut sort = Command::new("samtools");
    sort.args(["sort", "-n", "--no-PG", "-o"]).arg(&by_name).arg(&bam);
    assert!(run(sort).status.success());
    let mut strip_so = Command::new("bash");
    let unsorted = dir.path("unsorted.sam");
    strip_so.args([
        "-c",
        &format!("samtools view -h --no-PG {} | sed 's/SO:queryname/SO:unknown/' > {}", by_name.display(), unsorted.display()),
    ]);
    assert!(run(strip_so).status.success());
    // Without fixmate's tags.
    let no_tags = dir.path("no_tags.sam");
    let mut strip = Command::new("bash");
    strip.args(["-c", &format!("samtools view -h --no-PG -x MC -x ms {} > {}", bam.display(), no_tags.display())]);
    assert!(run(strip).status.success());
    for input in [&by_name, &unsorted, &no_tags, &dir.path("missing.bam")] {
        let path = input.to_string_lossy().into_owned();
        let theirs = markdup("samtools", &work, &[&path, "theirs.bam"]);
        let ours = markdup("fasthts", &work, &[&path, "ours.bam"]);
        assert_eq!(ours.status.code(), theirs.status.code(), "{path}: {}", text(&ours.stderr));
        let said = text(&ours.stderr);
        assert_eq!(said.lines().count(), 1, "{path}: {said}");
        assert!(said.starts_with("fasthts markdup: ") && said.contains(&path), "{path}: {said}");
        assert!(!work.join("ours.bam").exists(), "{path}: an output was left");
    }
    // An output in a missing directory.
    let ours = markdup("fasthts", &work, &[&bam.to_string_lossy(), "no/such/dir/out.bam"]);
    assert_eq!(ours.status.code(), Some(1));
    assert!(text(&ours.stderr).contains("no/such/dir/out.bam"));
}

/// A deep region: 1,500 copies of one pair (and single reads at its
/// start) on two tiles 1,000 pixels wide, so that one original has
/// hundreds of close duplicates: the optical marks, `do` tags and counts
/// as samtools' pairwise check gives them, at one and two threads.
#[test]
fn deep_duplicates_match_samtools() {
    let Some(dir) = with_samtools("markdup-deep") else { return };
    let mut rng = fasthts_testgen::rng::Rng::new(99);
    let bases =
        |rng: &mut fasthts_testgen::rng::Rng, n: usize| -> String { (0..n).map(|_| b"ACGT"[rng.below(4) as usize] as char).collect() };
    let mut sam = String::from("@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:c1\tLN:100000\n");
    for i in 0..1500 {
        let name = format!("M1:7:FC:1:{}:{}:{}", 1101 + rng.below(2), rng.below(1000), rng.below(1000));
        let qual: String = (0..100).map(|_| (b'#' + rng.below(30) as u8) as char).collect();
        let (p1, p2) = (5000 + rng.below(3), 5300);
        sam.push_str(&format!("{name}\t99\tc1\t{p1}\t60\t100M\t=\t{p2}\t400\t{}\t{qual}\n", bases(&mut rng, 100)));
        sam.push_str(&format!("{name}\t147\tc1\t{p2}\t60\t100M\t=\t{p1}\t-400\t{}\t{qual}\n", bases(&mut rng, 100)));
        if i % 10 == 0 {
            let single = format!("M1:7:FC:1:1101:{}:{}", rng.below(1000), rng.below(1000));
            sam.push_str(&format!("{single}\t0\tc1\t{p1}\t60\t100M\t*\t0\t0\t{}\t{qual}\n", bases(&mut rng, 100)));
        }
    }
    std::fs::write(dir.path("deep.sam"), sam).unwrap();
    let script = format!(
        "set -e -o pipefail; cd {d}; samtools collate -O -u deep.sam tmp | samtools fixmate -m -u - - | samtools sort --no-PG -o deep.bam -",
        d = dir.path("").display()
    );
    let mut prepare = Command::new("bash");
    prepare.args(["-c", &script]);
    let out = run(prepare);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for options in [&["-d", "100", "-t"][..], &["-d", "40", "--mode", "s", "-S"], &["-d", "100", "--no-multi-dup"]] {
        let args: Vec<&str> =
            ["-O", "sam", "--no-PG", "-f", "stats.txt"].into_iter().chain(options.iter().copied()).chain(["deep.bam", "out.sam"]).collect();
        assert!(markdup("samtools", &dir.path(""), &args).status.success());
        let theirs = (std::fs::read(dir.path("out.sam")).unwrap(), stats_lines(&std::fs::read_to_string(dir.path("stats.txt")).unwrap()));
        assert!(!theirs.1.contains(&"DUPLICATE PAIR OPTICAL: 0".to_string()), "{:?}", theirs.1);
        for threads in ["1", "2"] {
            let args: Vec<&str> = ["-@", threads].into_iter().chain(args.iter().copied()).collect();
            let ours = markdup("fasthts", &dir.path(""), &args);
            assert!(ours.status.success(), "{}", text(&ours.stderr));
            assert!(std::fs::read(dir.path("out.sam")).unwrap() == theirs.0, "{args:?}: records differ");
            assert_eq!(stats_lines(&std::fs::read_to_string(dir.path("stats.txt")).unwrap()), theirs.1, "{args:?}");
        }
    }
}
