//! `fasthts stats` against samtools stats 1.16: the text byte for byte
//! (but for the two lines naming the program and its command line) on
//! generated BAMs (long CIGARs, records larger than a block, reads long
//! enough to grow samtools' arrays), the repository's test BAMs and the
//! corpus; every option; regions and target files; SAM, bgzipped SAM,
//! CRAM and a pipe; at 1 and 2 threads; and bad input.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The lines that name the program and its command line, which differ.
fn comparable(text: &[u8]) -> String {
    String::from_utf8_lossy(text)
        .lines()
        .filter(|l| !l.starts_with("# This file was produced by") && !l.starts_with("# The command line was:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn samtools_stats(args: &[&str], dir: Option<&Path>) -> Output {
    let mut c = Command::new("samtools");
    c.arg("stats").args(args);
    if let Some(dir) = dir {
        c.current_dir(dir);
    }
    run(c)
}

fn fasthts_stats(args: &[&str], dir: Option<&Path>) -> Output {
    let mut c = fasthts();
    c.arg("stats").args(args);
    if let Some(dir) = dir {
        c.current_dir(dir);
    }
    run(c)
}

/// Compares fasthts with samtools on `args` (the input among them) at 1
/// and 2 threads: the same text and exit status. Returns the text.
pub(crate) fn compare(args: &[&str]) -> String {
    let want = samtools_stats(args, None);
    let mut first: Option<String> = None;
    for threads in ["-@1", "-@2"] {
        let mut with = vec![threads];
        with.extend_from_slice(args);
        let got = fasthts_stats(&with, None);
        assert_eq!(got.status.code(), want.status.code(), "{args:?} {threads}: status; stderr {}", text(&got.stderr));
        let got_text = comparable(&got.stdout);
        assert!(got_text == comparable(&want.stdout), "{args:?} {threads}: {}", first_difference(&comparable(&want.stdout), &got_text));
        // Every line but the command line's.
        if let Some(first) = &first {
            assert!(first == &got_text, "{args:?}: -@1 and -@2 differ: {}", first_difference(first, &got_text));
        }
        first = Some(got_text);
    }
    comparable(&want.stdout)
}

fn first_difference(want: &str, got: &str) -> String {
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w != g {
            return format!("line {}: samtools {w:?}, fasthts {g:?}", i + 1);
        }
    }
    format!("samtools {} lines, fasthts {}", want.lines().count(), got.lines().count())
}

/// Generated, indexed BAMs and their SAM text, and the genome's FASTA.
struct Generated {
    dir: TempDir,
    /// Short reads, a few long CIGARs and huge records.
    short: PathBuf,
    /// Reads of up to 400 bases (samtools grows its arrays).
    long: PathBuf,
    /// `short` as SAM.
    sam: PathBuf,
    reference: PathBuf,
}

fn samtools(args: &[&str]) {
    let mut c = Command::new("samtools");
    c.args(args);
    let out = run(c);
    assert!(out.status.success(), "samtools {args:?}: {}", text(&out.stderr));
}

fn generate(tag: &str) -> Option<Generated> {
    let dir = with_samtools(tag)?;
    let reference = dir.path("genome.fa");
    let make = |name: &str, args: &[&str]| {
        let sam = fasthts_testgen::cli::sam(args).unwrap();
        let sam_path = dir.path(&format!("{name}.sam"));
        std::fs::write(&sam_path, sam).unwrap();
        let bam = dir.path(&format!("{name}.bam"));
        samtools(&["view", "--no-PG", "-b", "-o", bam.to_str().unwrap(), sam_path.to_str().unwrap()]);
        samtools(&["index", bam.to_str().unwrap()]);
        (bam, sam_path)
    };
    let fasta = reference.to_str().unwrap().to_string();
    let common = ["--refs", "4", "--ref-len", "60k", "--tag-fraction", "0.2"];
    let mut a = vec!["--seed", "41", "--reads", "5000", "--read-len", "60-150", "--reference-fasta", &fasta];
    a.extend(["--long-cigar-fraction", "0.0005", "--huge-record-fraction", "0.0005"]);
    a.extend(common);
    let (short, sam) = make("short", &a);
    let mut b = vec!["--seed", "42", "--genome-seed", "41", "--reads", "1500", "--read-len", "100-400"];
    b.extend(common);
    let (long, _) = make("long", &b);
    Some(Generated { dir, short, long, sam, reference })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn default_output_matches_samtools_on_generated_test_and_corpus_bams() {
    let Some(g) = generate("stats-default") else { return };
    let mut files = vec![g.short.clone(), g.long.clone()];
    files.extend(corpus());
    for name in ["small.bam", "unsorted.bam", "long_cigar.bam", "huge_record.bam", "unmapped_only.bam", "header_only.bam"] {
        files.push(data(name));
    }
    for f in &files {
        compare(&[s(f)]);
    }
    // The first line is the one MultiQC and plot-bamstats look for.
    let out = fasthts_stats(&[s(&g.short)], None);
    let first = text(&out.stdout).lines().next().unwrap().to_string();
    assert!(first.starts_with("# This file was produced by samtools stats (fasthts "), "{first}");
    assert!(first.ends_with(") and can be plotted using plot-bamstats"), "{first}");
    drop(g.dir);
}

#[test]
fn each_option_matches_samtools() {
    let Some(g) = generate("stats-options") else { return };
    let reference = s(&g.reference);
    let options: &[&[&str]] = &[
        &["-f", "2"],
        &["-f", "PAIRED,READ1"],
        &["-F", "0x10"],
        &["-F", "UNMAP", "-F", "DUP"],
        &["-d"],
        &["-q", "20"],
        &["-l", "100"],
        &["-i", "300"],
        &["-i", "0"],
        &["-m", "0.5"],
        &["-c", "5,100,10"],
        &["-c", "1,10,20"],
        &["-x"],
        &["--GC-depth", "5000"],
        &["--GC-depth", "2e3"],
        &["-p"],
        &["-p", "-F", "0x10"],
        &["-I", "rg1"],
        &["-I", "nobody"],
        &["-r", reference],
        &["-r", reference, "--GC-depth", "3000"],
        &["-s"],
        // samtools' edge cases: GC-depth bins of 0 (depths divided by
        // zero), coverage bins it cannot allocate.
        &["--GC-depth", "0.5"],
        &["-c", "10,5,2"],
    ];
    for bam in [&g.short, &g.long] {
        for opts in options {
            let mut args = opts.to_vec();
            args.push(s(bam));
            compare(&args);
        }
    }
    drop(g.dir);
}

#[test]
fn regions_and_target_files_match_samtools() {
    let Some(g) = generate("stats-regions") else { return };
    let targets = g.dir.path("targets.txt");
    std::fs::write(&targets, "# targets\nchr1\t1000\t20000\nchrNone\t1\t100\nchr1\t15000\t30000\nchr3\t1\t5000\n").unwrap();
    let short = s(&g.short);
    let t = s(&targets);
    for args in [
        vec!["-t", t, short],
        vec!["-t", t, "-g", "3", short],
        vec!["-t", t, "-p", short],
        vec![short, "chr1"],
        vec![short, "chr1:1,000-5,000"],
        vec![short, "chr1:1000-5000", "chr1:4000-9000", "chr2:100-200"],
        vec![short, "chr1:1000-5000", "chr1:5001-6000"],
        vec!["-g", "2", short, "chr2:10000-20000"],
        vec!["-p", short, "chr1:1000-30000"],
        vec![short, "chrNone", "chr2:1-1000"],
        vec![short, "*"],
        vec!["-t", t, short, "chr2"],
    ] {
        compare(&args);
    }
    drop(g.dir);
}

#[test]
fn split_files_match_samtools_and_appear_whole() {
    let Some(g) = generate("stats-split") else { return };
    let (theirs, ours) = (g.dir.path("theirs"), g.dir.path("ours"));
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::create_dir_all(&ours).unwrap();
    let want = samtools_stats(&["-S", "RG", "-P", "x", s(&g.short)], Some(&theirs));
    let got = fasthts_stats(&["-S", "RG", "-P", "x", s(&g.short)], Some(&ours));
    assert!(want.status.success() && got.status.success(), "{}", text(&got.stderr));
    assert_eq!(comparable(&got.stdout), comparable(&want.stdout));
    let names = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&ours), names(&theirs));
    assert!(names(&ours).len() > 2, "{:?}", names(&ours));
    for name in names(&theirs) {
        let (w, o) = (std::fs::read(theirs.join(&name)).unwrap(), std::fs::read(ours.join(&name)).unwrap());
        assert_eq!(comparable(&o), comparable(&w), "{name}");
    }
    // A tag some records lack: samtools' error, and no file left half-written.
    let empty = g.dir.path("none");
    std::fs::create_dir_all(&empty).unwrap();
    let got = fasthts_stats(&["-S", "XZ", "-P", "x", s(&g.short)], Some(&empty));
    assert_eq!(got.status.code(), Some(1));
    assert!(text(&got.stderr).contains("Tag 'XZ' not found"), "{}", text(&got.stderr));
    assert!(names(&empty).is_empty(), "{:?}", names(&empty));
    drop(g.dir);
}

#[test]
fn sam_bgzipped_sam_cram_and_a_pipe_match_samtools() {
    let Some(g) = generate("stats-inputs") else { return };
    compare(&[s(&g.sam)]);
    let gz = g.dir.path("short.sam.gz");
    samtools(&["view", "--no-PG", "-h", "--output-fmt", "sam.gz", "-o", s(&gz), s(&g.short)]);
    compare(&[s(&gz)]);
    let cram = g.dir.path("short.cram");
    samtools(&["view", "--no-PG", "-C", "-T", s(&g.reference), "-o", s(&cram), s(&g.short)]);
    samtools(&["index", s(&cram)]);
    compare(&["--reference", s(&g.reference), s(&cram)]);
    compare(&["--reference", s(&g.reference), s(&cram), "chr1:1000-9000"]);
    // A pipe: standard input, named or not.
    for args in [vec!["-"], vec![]] {
        let mut want = Command::new("samtools");
        want.arg("stats").args(&args).stdin(Stdio::from(std::fs::File::open(&g.short).unwrap()));
        let want = run(want);
        let mut got = fasthts();
        got.arg("stats").args(&args).stdin(Stdio::from(std::fs::File::open(&g.short).unwrap()));
        let got = run(got);
        assert!(got.status.success(), "{}", text(&got.stderr));
        assert_eq!(comparable(&got.stdout), comparable(&want.stdout), "pipe {args:?}");
    }
    drop(g.dir);
}

#[test]
fn bad_input_fails_as_samtools_does_naming_the_file() {
    let Some(g) = generate("stats-bad") else { return };
    // Truncated part way: samtools' status 254, nothing on stdout.
    let bytes = std::fs::read(&g.short).unwrap();
    let truncated = g.dir.path("truncated.bam");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let want = samtools_stats(&[s(&truncated)], None);
    let got = fasthts_stats(&[s(&truncated)], None);
    assert_eq!(got.status.code(), want.status.code());
    assert_eq!(got.status.code(), Some(254));
    assert!(got.stdout.is_empty());
    let last = text(&got.stderr).lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("fasthts stats: ") && last.contains("truncated.bam"), "{last}");
    // A reference of another genome: samtools' words, status 1.
    let other = g.dir.path("other.fa");
    std::fs::write(&other, ">elsewhere\nACGTACGTACGTAAACCCGGGTTT\n").unwrap();
    compare(&["-r", s(&other), s(&g.short)]);
    let got = fasthts_stats(&["-r", s(&other), s(&g.short)], None);
    assert!(text(&got.stderr).contains("Failed to fetch the sequence \"chr1\""), "{}", text(&got.stderr));
    // Targets on no known sequence; targets out of order.
    let unknown = g.dir.path("unknown.txt");
    std::fs::write(&unknown, "chrNone\t1\t100\n").unwrap();
    compare(&["-t", s(&unknown), s(&g.short)]);
    let unordered = g.dir.path("unordered.txt");
    std::fs::write(&unordered, "chr1\t5000\t6000\nchr1\t1000\t2000\n").unwrap();
    compare(&["-t", s(&unordered), s(&g.short)]);
    // -g without targets.
    compare(&["-g", "2", s(&g.short)]);
    // An unsorted BAM: -t needs sorted input; a region needs an index.
    let unsorted = data("unsorted.bam");
    let t_any = g.dir.path("any.txt");
    let name = {
        let mut c = Command::new("samtools");
        c.args(["view", "-H"]).arg(&unsorted);
        let header = text(&run(c).stdout);
        header.lines().find_map(|l| l.strip_prefix("@SQ\tSN:").map(|r| r.split('\t').next().unwrap().to_string())).unwrap()
    };
    std::fs::write(&t_any, format!("{name}\t1\t100000000\n")).unwrap();
    compare(&["-t", s(&t_any), s(&unsorted)]);
    let region = fasthts_stats(&[s(&unsorted), &name], None);
    assert_eq!(region.status.code(), samtools_stats(&[s(&unsorted), &name], None).status.code());
    assert!(text(&region.stderr).contains("unsorted.bam"), "{}", text(&region.stderr));
    // A missing file: one line naming it (samtools 1.16.1 crashes here).
    let got = fasthts_stats(&[s(&g.dir.path("missing.bam"))], None);
    assert_eq!(got.status.code(), Some(1));
    let err = text(&got.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("missing.bam"), "{err}");
    drop(g.dir);
}

#[test]
fn many_references_counted_in_parts_give_one_pass_bytes() {
    // 300 references of reads short and long: each reference is a part
    // summed out of order at -@2, or (reads that grow samtools' arrays
    // before the last part) the file is counted again in one pass; an
    // unindexed copy is always counted in one pass. All give samtools' bytes.
    let Some(dir) = with_samtools("stats-many-refs") else { return };
    for (name, read_len) in [("short", "50-150"), ("long", "100-320")] {
        let args = ["--seed", "43", "--reads", "4000", "--refs", "300", "--ref-len", "10k", "--read-len", read_len];
        let sam = dir.path(&format!("{name}.sam"));
        std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
        let bam = dir.path(&format!("{name}.bam"));
        samtools(&["view", "--no-PG", "-b", "-o", s(&bam), s(&sam)]);
        let one_pass = compare(&[s(&bam)]);
        samtools(&["index", s(&bam)]);
        assert_eq!(compare(&[s(&bam)]), one_pass);
        compare(&["-p", s(&bam)]);
    }
}

#[test]
fn stats_peaks_within_a_few_mb_of_flagstat() {
    // Issue 34: what stats holds beyond flagstat is a few histograms per
    // part of the file (a reference) being counted. They once took 7.7 MB
    // more than flagstat's peak on this file (each part's arrays carved
    // from arenas that keep their pages, and zeroed through by calloc);
    // now about 2.4 MB.
    let Some(dir) = with_samtools("stats-memory") else { return };
    let args = ["--seed", "44", "--reads", "60000", "--refs", "12", "--ref-len", "200k", "--read-len", "100-150"];
    let sam = dir.path("reads.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let bam = dir.path("reads.bam");
    samtools(&["view", "--no-PG", "-b", "-o", s(&bam), s(&sam)]);
    samtools(&["index", s(&bam)]);
    let peak = |command: &str| {
        let mut c = fasthts();
        c.args([command, "-@2", s(&bam)]);
        let run = crate::harness::run_measured(c, Default::default(), std::time::Duration::from_secs(120));
        assert!(run.success(), "{command}: {}", run.stderr_text());
        run.max_rss_kib
    };
    // The lower of two runs of each, against a page-cache or scheduling hiccup.
    let flagstat = peak("flagstat").min(peak("flagstat"));
    let stats = peak("stats").min(peak("stats"));
    assert!(stats < flagstat + 4096, "stats -@2 peaked at {stats} KiB, flagstat -@2 at {flagstat} KiB");
}
