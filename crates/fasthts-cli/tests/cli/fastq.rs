//! `fasthts fastq` / `fasta` / `bam2fq` against samtools 1.16: every
//! output file and stdout byte for byte, on samtools' own bam2fq test
//! cases and on generated reads (coordinate-sorted, name-sorted and
//! collated; BAM, SAM, CRAM and a pipe), at several thread counts.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `tool ARGS` (samtools or fasthts) in a fresh directory `dir/side`
/// (stdin from `stdin` when given); returns the directory.
fn run_side(dir: &TempDir, side: &str, args: &[&str], stdin: Option<&Path>) -> (PathBuf, std::process::Output) {
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

/// The same command by samtools and fasthts: the same exit status, stdout
/// and files written.
fn same(dir: &TempDir, args: &[&str], stdin: Option<&Path>) {
    let (theirs_dir, theirs) = run_side(dir, "samtools", args, stdin);
    let (ours_dir, ours) = run_side(dir, "fasthts", args, stdin);
    assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}: ours {}; samtools {}", text(&ours.stderr), text(&theirs.stderr));
    assert!(ours.stdout == theirs.stdout, "{args:?}: stdout differs ({} vs {} bytes)", ours.stdout.len(), theirs.stdout.len());
    let list = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    assert_eq!(list(&ours_dir), list(&theirs_dir), "{args:?}: files written");
    for name in list(&theirs_dir) {
        let (a, b) = (std::fs::read(ours_dir.join(&name)).unwrap(), std::fs::read(theirs_dir.join(&name)).unwrap());
        assert!(a == b, "{args:?}: {name} differs ({} vs {} bytes)", a.len(), b.len());
    }
    // samtools' two counting lines, the same.
    assert_eq!(text(&ours.stderr), text(&theirs.stderr), "{args:?}: stderr");
}

/// samtools' own bam2fq tests (test/test.pl, `test_bam2fq`), run by both.
#[test]
fn samtools_test_cases() {
    let Some(dir) = with_samtools("fastq-cases") else { return };
    let Some(data) = samtools_test_data() else { return };
    let sam = |n: &str| data.join(format!("dat/bam2fq.{n}.sam")).to_string_lossy().into_owned();
    let cases: Vec<Vec<String>> = [
        "fastq {001}",
        "fastq -n {001}",
        "bam2fq {001}",
        "fastq -1 1.fq -2 2.fq {001}",
        "fastq -s s.fq -1 1.fq -2 2.fq {001}",
        "fastq -s s.fq -1 1.fq -2 2.fq {002}",
        "fastq -s s.fq -1 1.fq -2 2.fq {003}",
        "fastq --barcode-tag BC --index-format n2i2 --i1 bc.fq -s s.fq -1 1.fq -2 2.fq {004}",
        "fastq --barcode-tag BC -O --index-format n2i2 --i1 bc.fq -s s.fq -1 1.fq -2 2.fq {004}",
        "fastq --barcode-tag BC -O --index-format n2i2 --i1 bc.fq -s s.fq -1 1.fq -2 2.fq {010}",
        "fastq --barcode-tag BC -N --index-format n*i* --i1 bc_split.fq -s s.fq -1 1.fq -2 2.fq {005}",
        "fastq -N -t -s s.fq -1 1.fq -2 2.fq {005}",
        "fastq -N -t -T MD,ia -s s.fq -1 1.fq -2 2.fq {005}",
        "fastq --barcode-tag BC -i --index-format n2i2 --i1 i.fq -s s.fq -1 1.fq -2 2.fq {004}",
        "fastq --barcode-tag BC -i --index-format i*i* --i1 i.fq -s s.fq -1 1.fq -2 2.fq {005}",
        "fastq -i --index-format i*i* -s s.fq -1 1.fq -2 2.fq {005}",
        "fastq -1 1.fq -2 2.fq {703}",
        "fastq -N -1 o.fq -2 o.fq {001}",
        "fasta -N -1 o.fa -2 o.fa {001}",
        "fastq -N -o o.fq {001}",
        "fastq -N -s d.s.fq -0 d.0.fq {001}",
        "fastq -T ba,bb,bc,bd,be,bf,bg {013}",
        "fastq --index-format i8n1i8 --i1 i1.fq --i2 i2.fq -0 0.fq {014}",
        "fastq -N -T * {001}",
        "fastq -N -t -T * {001}",
        "fastq -1 1.fq.gz -2 2.fq.bgz -0 0.fq.bgzf -s s.fq.gz {001}",
        "fastq -c 6 -o o.fq.gz {005}",
        "fastq -f 0x40 {001}",
        "fastq -F 0 -G 0x80 {001}",
        "fasta -F 0x4 -F 0x100 {001}",
        "fasta -i --index-format i*i* -T * {005}",
        // -o sets both files, -1/-2 one: in command-line order.
        "fastq -o o.fq -1 one.fq {001}",
        "fastq -2 two.fq -o o.fq -1 one.fq {001}",
        "fastq -1 a.fq -1 b.fq {001}",
    ]
    .iter()
    .map(|case| {
        case.split(' ')
            .map(|w| match w.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
                Some(n) => sam(n),
                None => w.to_string(),
            })
            .collect()
    })
    .collect();
    for case in &cases {
        for threads in [None, Some("3")] {
            let mut args: Vec<&str> = case.iter().map(String::as_str).collect();
            if let Some(t) = threads {
                args.splice(1..1, ["-@", t]);
            }
            same(&dir, &args, None);
        }
    }
    // -T with an empty list is "every tag", as '*'.
    same(&dir, &["fastq", "-N", "-T", "", &sam("001")], None);
}

/// Generated reads in every order and format samtools reads.
#[test]
fn generated_reads_match_samtools() {
    let Some(dir) = with_samtools("fastq-generated") else { return };
    let fasta = dir.path("ref.fa");
    let fasta_arg = fasta.to_string_lossy().into_owned();
    let args = ["-q", "--seed", "33", "--reads", "4000", "--refs", "3", "--ref-len", "60000", "--unmapped-fraction", "0.05"];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--reference-fasta", &fasta_arg]);
    let sam = dir.path("reads.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let samtools = |args: &[&str]| {
        let mut c = Command::new("samtools");
        c.args(args);
        let out = run(c);
        assert!(out.status.success(), "samtools {args:?}: {}", text(&out.stderr));
    };
    let p = |name: &str| dir.path(name).to_string_lossy().into_owned();
    samtools(&["view", "--no-PG", "-b", "-o", &p("coord.bam"), &p("reads.sam")]);
    samtools(&["sort", "--no-PG", "-n", "-o", &p("name.bam"), &p("reads.sam")]);
    samtools(&["collate", "--no-PG", "-o", &p("collated.bam"), &p("reads.sam"), &p("collate-tmp")]);
    samtools(&["view", "--no-PG", "-C", "-T", &p("ref.fa"), "-o", &p("name.cram"), &p("name.bam")]);
    let option_sets: [&[&str]; 8] = [
        &["fastq"],
        &["fastq", "-N", "-t"],
        &["fasta", "-n"],
        &["fastq", "-1", "1.fq", "-2", "2.fq", "-s", "s.fq", "-0", "0.fq"],
        &["fastq", "-o", "pairs.fq.gz", "-s", "single.fq"],
        &["fastq", "-F", "0x4", "-T", "*"],
        &["fastq", "-f", "1", "-G", "0x90", "-N"],
        &["bam2fq", "-O", "-T", "MD,NM,XX"],
    ];
    for input in ["coord.bam", "name.bam", "collated.bam", "reads.sam"] {
        for options in option_sets {
            for threads in ["1", "4"] {
                let path = p(input);
                let args: Vec<&str> = options.iter().copied().chain(["-@", threads, path.as_str()]).collect();
                same(&dir, &args, None);
            }
        }
    }
    let cram = p("name.cram");
    for options in
        [&["fastq", "--reference", fasta_arg.as_str()][..], &["fasta", "-1", "1.fa", "-2", "2.fa", "--reference", fasta_arg.as_str()]]
    {
        let args: Vec<&str> = options.iter().copied().chain([cram.as_str()]).collect();
        same(&dir, &args, None);
    }
    // From a pipe: standard input, named `-` or not named.
    same(&dir, &["fastq", "-"], Some(&dir.path("name.bam")));
    same(&dir, &["fasta", "-N"], Some(&dir.path("name.bam")));
}

/// Usage errors of samtools' own: exit 1 with one line, nothing written.
#[test]
fn refusals() {
    let Some(dir) = with_samtools("fastq-refusals") else { return };
    let Some(data) = samtools_test_data() else { return };
    let sam = data.join("dat/bam2fq.001.sam").to_string_lossy().into_owned();
    for args in [
        &["fastq", "--index-format", "i1i1i1", &sam][..],
        &["fastq", "--i2", "x.fq", "--index-format", "i*", &sam],
        &["fastq", "-i", &sam],
        &["fastq", "--i1", "x.fq", &sam],
        &["fastq", "-v", "94", &sam],
    ] {
        let (work, ours) = run_side(&dir, "fasthts", args, None);
        let (_, theirs) = run_side(&dir, "samtools", args, None);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert_eq!(ours.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&ours.stderr).lines().count(), 1, "{args:?}: {}", text(&ours.stderr));
        assert_eq!(std::fs::read_dir(work).unwrap().count(), 0, "{args:?}: wrote files");
    }
    // A missing input: one line naming it, exit 1, no output file left.
    let (work, ours) = run_side(&dir, "fasthts", &["fastq", "-o", "out.fq", "missing.bam"], None);
    assert_eq!(ours.status.code(), Some(1));
    assert!(text(&ours.stderr).contains("missing.bam"), "{}", text(&ours.stderr));
    assert!(!work.join("out.fq").exists());
}

/// samtools compares each record's name with the current name where that
/// name was read, in a slot a better copy of the read can free and the
/// next record overwrite: then a new name (B after A, E after D) joins the
/// group before it. fasthts groups as samtools does.
#[test]
fn a_freed_slot_joins_names_as_in_samtools() {
    let Some(dir) = with_samtools("fastq-slots") else { return };
    let sam = "@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:c\tLN:1000\n\
        A\t77\t*\t0\t0\t*\t*\t0\t0\tACGT\t*\nA\t77\t*\t0\t0\t*\t*\t0\t0\tACGA\tIIII\n\
        B\t141\t*\t0\t0\t*\t*\t0\t0\tTTTT\tJJJJ\n\
        C\t77\t*\t0\t0\t*\t*\t0\t0\tGGGG\tKKKK\nC\t141\t*\t0\t0\t*\t*\t0\t0\tCCCC\tLLLL\n\
        D\t4\t*\t0\t0\t*\t*\t0\t0\tCC\t*\nD\t4\t*\t0\t0\t*\t*\t0\t0\tCA\tII\nE\t4\t*\t0\t0\t*\t*\t0\t0\tCT\tII\n";
    let path = dir.path("slots.sam");
    std::fs::write(&path, sam).unwrap();
    let path = path.to_string_lossy().into_owned();
    for args in [&["fastq", path.as_str()][..], &["fastq", "-s", "s.fq", "-1", "1.fq", "-2", "2.fq", "-0", "0.fq", &path]] {
        same(&dir, args, None);
    }
    let (_, ours) = run_side(&dir, "fasthts", &["fastq", &path], None);
    assert!(text(&ours.stdout).contains("@B/2\nTTTT") && !text(&ours.stdout).contains("@E"), "{}", text(&ours.stdout));
}
