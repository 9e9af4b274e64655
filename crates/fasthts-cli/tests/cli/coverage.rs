//! `fasthts coverage` against samtools coverage 1.16: every option and the
//! usual combinations, tables and histograms, on generated BAMs (BAI and
//! CSI) and the corpus, at 1 and 2 threads and in windows small enough
//! that every read crosses a few cuts; then the pileup limit (`-d`),
//! inputs without an index, SAM, bgzipped SAM, CRAM, a pipe, `-o`, and bad
//! input.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Two generated samples of one genome, indexed (BAI and CSI).
struct Generated {
    dir: TempDir,
    first: PathBuf,
    second: PathBuf,
}

/// `name.bam` (and `name.sam`) in `dir` of the generator's `args`, indexed
/// with `index`'s options.
fn make_bam(dir: &TempDir, name: &str, args: &[&str], index: &[&str]) -> PathBuf {
    let sam = fasthts_testgen::cli::sam(args).unwrap();
    let sam_path = dir.path(&format!("{name}.sam"));
    std::fs::write(&sam_path, sam).unwrap();
    let bam = dir.path(&format!("{name}.bam"));
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&sam_path);
    assert!(run(view).status.success());
    let mut idx = Command::new("samtools");
    idx.arg("index").args(index).arg(&bam);
    assert!(run(idx).status.success());
    bam
}

fn generate(tag: &str) -> Option<Generated> {
    let dir = with_samtools(tag)?;
    let common = ["--refs", "4", "--ref-len", "60k", "--read-len", "60-150", "-q"];
    let mut a = vec!["--seed", "41", "--reads", "6000", "--long-cigar-fraction", "0.0005", "--huge-record-fraction", "0.0005"];
    a.extend(common);
    let mut b = vec!["--seed", "42", "--genome-seed", "41", "--reads", "4000", "--unmapped-fraction", "0.05"];
    b.extend(common);
    let first = make_bam(&dir, "first", &a, &[]);
    let second = make_bam(&dir, "second", &b, &["-c"]);
    Some(Generated { dir, first, second })
}

fn samtools_coverage(args: &[&str], inputs: &[&Path]) -> Output {
    let mut c = Command::new("samtools");
    c.arg("coverage").args(args).args(inputs).env_remove("COLUMNS");
    run(c)
}

fn fasthts_coverage(args: &[&str], extra: &[&str], inputs: &[&Path]) -> Output {
    let mut c = fasthts();
    c.arg("coverage").args(extra).args(args).args(inputs).env_remove("COLUMNS");
    run(c)
}

/// Compares fasthts with samtools on `args` at 1 and 2 threads, in the
/// default windows and in windows of 1,500 bases; returns samtools' output.
/// Where samtools fails (an unsorted input: it prints what it had counted
/// when its pileup stopped) fasthts fails too, with one line and no output.
pub(crate) fn compare(args: &[&str], inputs: &[&Path]) -> Vec<u8> {
    let expected = samtools_coverage(args, inputs);
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    for extra in [&["-@", "1"][..], &["-@", "2"], &["-@", "1", "--window-bases", "1500"], &["-@", "2", "--window-bases", "1500"]] {
        let got = fasthts_coverage(args, extra, inputs);
        assert_eq!(
            got.status.code(),
            expected.status.code(),
            "coverage {args:?} {extra:?} {names:?}: exit status differs; fasthts stderr: {}",
            text(&got.stderr)
        );
        if !expected.status.success() {
            let err = text(&got.stderr);
            assert!(got.stdout.is_empty() && err.lines().filter(|l| !l.starts_with("fasthts: warning: ")).count() == 1, "{args:?} {names:?}: {err}");
            continue;
        }
        assert!(
            got.stdout == expected.stdout,
            "coverage {args:?} {extra:?} {names:?}: output differs:\n--- samtools\n{}--- fasthts\n{}",
            text(&expected.stdout),
            text(&got.stdout)
        );
    }
    expected.stdout
}

/// Every option alone and the usual combinations (reads without a
/// sequence, which samtools gives "qualities" from its buffers, are
/// secondary: the default `--ff` leaves them out).
const OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-H"],
    &["-q", "30"],
    &["--min-MQ", "1"],
    &["-Q", "20"],
    &["--min-BQ", "35"],
    &["-l", "100"],
    &["--min-read-len", "151"],
    &["--ff", "UNMAP,SECONDARY,DUP"],
    &["--ff", "0x704"],
    &["--excl-flags", "UNMAP,SECONDARY"],
    &["--rf", "PAIRED"],
    &["--rf", "0x40"],
    &["--incl-flags", "READ2,REVERSE"],
    &["--rf", "0x800"],
    &["-d", "0"],
    &["-d", "1000000"],
    &["-q", "20", "-Q", "25", "-l", "80", "-H"],
    &["-m"],
    &["-m", "-w", "7"],
    &["-A"],
    &["-A", "-w", "100", "-q", "10"],
    &["-w", "1"],
    &["-w", "13", "-Q", "30"],
    &["-m", "-w", "200000"],
];

#[test]
fn every_option_matches_samtools_on_generated_data() {
    let Some(g) = generate("coverage-options") else { return };
    let mut compared = 0;
    for args in OPTION_SETS {
        compared += compare(args, &[&g.first]).len();
        compared += compare(args, &[&g.first, &g.second]).len();
    }
    assert!(compared > 10_000, "too little compared: {compared} bytes");
}

/// `--ff` letting secondary reads in: samtools sums "qualities" of their
/// absent sequences from whatever its buffers hold, so `meanbaseq` (and the
/// histogram's mean baseQ) is left out of the comparison; every other
/// column is compared.
/// Output without what reads without a sequence make unpredictable in
/// samtools': the table's `meanbaseq`, the histogram's mean baseQ.
fn without_meanbaseq(out: &[u8]) -> String {
    let line = |l: &str| -> String {
        match l.find("Mean baseQ:") {
            Some(at) => l[..at].to_string(),
            None => l.split('\t').enumerate().filter(|(i, _)| *i != 7).map(|(_, f)| f).collect::<Vec<_>>().join("\t"),
        }
    };
    text(out).lines().map(|l| line(l) + "\n").collect()
}

/// Whether `file` has a mapped record without a sequence.
fn has_reads_without_sequence(file: &Path) -> bool {
    let mut c = Command::new("samtools");
    c.args(["view", "-F", "4"]).arg(file);
    text(&run(c).stdout).lines().any(|l| l.split('\t').nth(9) == Some("*"))
}

#[test]
fn reads_without_a_sequence_count_as_samtools_counts_them() {
    let Some(g) = generate("coverage-no-seq") else { return };
    for args in [&["--ff", "0"][..], &["--ff", "UNMAP"], &["--ff", "0", "-Q", "1"]] {
        let expected = samtools_coverage(args, &[&g.first, &g.second]);
        for extra in [&["-@", "1"][..], &["-@", "2", "--window-bases", "1500"]] {
            let got = fasthts_coverage(args, extra, &[&g.first, &g.second]);
            assert!(got.status.success(), "{}", text(&got.stderr));
            assert_eq!(without_meanbaseq(&got.stdout), without_meanbaseq(&expected.stdout), "{args:?} {extra:?}");
        }
    }
}

#[test]
fn regions_match_samtools() {
    let Some(g) = generate("coverage-regions") else { return };
    let sets: &[&[&str]] = &[
        &["-r", "chr2"],
        &["-r", "chr2:1000-50000"],
        &["-r", "chr2:1,000-2,000", "-Q", "30"],
        &["-r", "chr1:30000-"],
        &["-r", "chr1:30000-100000000"],
        &["-r", "chr3"],
        &["-r", "chrM:16000-20000"],
        &["-r", "chr1:0-5"],
        &["-r", "chr1:7-7"],
        &["-r", "{chr2}:5-"],
        &["-r", "chr4:59990-60000"],
        &["-H", "-r", "chr1:100-59000", "-q", "20", "-l", "90"],
        &["-m", "-r", "chr2:1000-50000"],
        &["-A", "-w", "30", "-r", "chr1:1-1000"],
        &["-m", "-w", "50", "-r", "chr1:1-20"],
        &["-m", "-r", "chr3:5-10"],
        &["-r", "."],
        &["-H", "-r", "."],
        &["-r", "*"],
        &["-m", "-r", "*"],
    ];
    for args in sets {
        compare(args, &[&g.first]);
        compare(args, &[&g.first, &g.second]);
    }
}

/// The histogram's width: `-w`, else the terminal's (`$COLUMNS` less 40,
/// 40 at least; 40 without a terminal), 50 with `-o`.
#[test]
fn histogram_widths_follow_samtools() {
    let Some(g) = generate("coverage-widths") else { return };
    for (columns, args) in [
        (None, &["-m"][..]),
        (Some("120"), &["-m"]),
        (Some("61"), &["-A"]),
        (Some("60"), &["-m"]),
        (Some("junk"), &["-m"]),
        (Some("150"), &["-m", "-w", "0"]),
        (Some("150"), &["-m", "-w", "-5"]),
        (Some("150"), &["-m", "-w", "25"]),
    ] {
        let mut s = Command::new("samtools");
        s.arg("coverage").args(args).arg(&g.first).env_remove("COLUMNS");
        let mut f = fasthts();
        f.arg("coverage").args(args).arg(&g.first).env_remove("COLUMNS");
        if let Some(c) = columns {
            s.env("COLUMNS", c);
            f.env("COLUMNS", c);
        }
        let (want, got) = (run(s), run(f));
        assert!(got.status.success(), "{}", text(&got.stderr));
        assert!(got.stdout == want.stdout, "COLUMNS={columns:?} {args:?}:\n{}\n{}", text(&want.stdout), text(&got.stdout));
    }
    // -o: 50 bins unless -w says otherwise.
    for args in [&["-m"][..], &["-m", "-w", "12"]] {
        let (want, got) = (g.dir.path("want.txt"), g.dir.path("got.txt"));
        let mut s = Command::new("samtools");
        s.arg("coverage").args(args).arg("-o").arg(&want).arg(&g.first).env("COLUMNS", "200");
        let mut f = fasthts();
        f.arg("coverage").args(args).arg("-o").arg(&got).arg(&g.first).env("COLUMNS", "200");
        assert!(run(s).status.success());
        let out = run(f);
        assert!(out.status.success() && out.stdout.is_empty(), "{}", text(&out.stderr));
        assert!(std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(), "{args:?} -o");
    }
}

/// htslib's pileup limit: reads starting where the one before started are
/// dropped once `-d` reads are held. Small limits on the generated data,
/// and a pile of reads at a few starts deep enough for the default limit
/// of htslib (8000, a negative -d); the windows find the drop and count
/// again in one pass.
#[test]
fn the_pileup_limit_drops_reads_as_htslib() {
    let Some(g) = generate("coverage-max-depth") else { return };
    for d in ["1", "2", "3", "5", "-1"] {
        compare(&["-d", d], &[&g.first]);
        compare(&["-d", d], &[&g.first, &g.second]);
        compare(&["-d", d, "-r", "chr2:10000-40000"], &[&g.first, &g.second]);
        compare(&["-d", d, "-m", "-w", "20"], &[&g.first]);
    }
    // 9,000 reads at four starts of one reference: beyond 8,000 held.
    let mut sam = String::from("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c1\tLN:5000\n@SQ\tSN:c2\tLN:3000\n");
    for (start, n, len) in [(100, 3000, 50), (120, 4000, 80), (130, 2500, 30), (2000, 100, 40)] {
        for i in 0..n {
            let seq: String = (0..len).map(|j| b"ACGT"[(i + j) % 4] as char).collect();
            let qual: String = (0..len).map(|j| (b'!' + ((i * 7 + j) % 40) as u8) as char).collect();
            sam.push_str(&format!("r{start}_{i}\t0\tc1\t{start}\t{}\t{len}M\t*\t0\t0\t{seq}\t{qual}\n", 20 + i % 40));
        }
    }
    let dir = &g.dir;
    let deep_sam = dir.path("deep.sam");
    std::fs::write(&deep_sam, sam).unwrap();
    let deep = dir.path("deep.bam");
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&deep).arg(&deep_sam);
    assert!(run(view).status.success());
    let mut idx = Command::new("samtools");
    idx.arg("index").arg(&deep);
    assert!(run(idx).status.success());
    for args in [&[][..], &["-d", "-1"], &["-d", "5000"], &["-d", "7000", "-Q", "20"], &["-d", "4000", "-r", "c1:110-200"], &["-d", "100", "-m"]] {
        compare(args, &[&deep]);
        compare(args, &[&deep, &deep]);
        compare(args, &[&deep_sam]);
    }
}

#[test]
fn inputs_without_index_sam_and_pipes_match_samtools() {
    let Some(g) = generate("coverage-sequential") else { return };
    let bare = g.dir.path("bare.bam");
    std::fs::copy(&g.first, &bare).unwrap();
    let sam = g.dir.path("second.sam");
    let sam_gz = g.dir.path("second.sam.gz");
    if !require(runs("bgzip", &["--version"]), "bgzip (Debian package tabix)") {
        return;
    }
    let mut bgzip = Command::new("bgzip");
    bgzip.arg("-c").arg(&sam);
    let compressed = run(bgzip);
    assert!(compressed.status.success(), "bgzip: {}", text(&compressed.stderr));
    std::fs::write(&sam_gz, compressed.stdout).unwrap();
    let mut idx = Command::new("samtools");
    idx.arg("index").arg(&sam_gz);
    assert!(run(idx).status.success());
    for args in [&[][..], &["-Q", "20", "-q", "10"], &["-m", "-w", "33"], &["-d", "2"]] {
        compare(args, &[&bare]);
        compare(args, &[&sam]);
        compare(args, &[&sam_gz]);
        compare(args, &[&bare, &sam]);
        compare(args, &[&bare, &g.second]);
    }
    compare(&["-r", "chr1:5000-40000"], &[&sam_gz]);
    compare(&["-r", "chr2", "-Q", "10"], &[&sam_gz, &g.second]);
    // From a pipe: BAM and SAM.
    for input in [&g.first, &sam] {
        let expected = samtools_coverage(&["-q", "5"], &[input]);
        let mut c = fasthts();
        c.args(["coverage", "-q", "5", "-"]);
        let got = run_with_stdin(c, std::fs::read(input).unwrap());
        assert!(got.status.success(), "{}", text(&got.stderr));
        assert!(got.stdout == expected.stdout, "coverage - < {}", input.display());
    }
    // -b: a list of inputs.
    let list = g.dir.path("list.txt");
    std::fs::write(&list, format!("{}\n{}\n", g.first.display(), g.second.display())).unwrap();
    compare(&["-b", list.to_str().unwrap()], &[]);
}

#[test]
fn cram_matches_samtools() {
    let Some(dir) = with_samtools("coverage-cram") else { return };
    let fasta = dir.path("ref.fa");
    let fasta_arg = fasta.to_str().unwrap().to_string();
    let args = ["-q", "--seed", "43", "--reads", "3000", "--refs", "3", "--ref-len", "60000", "--reference-fasta", &fasta_arg];
    let sam = fasthts_testgen::cli::sam(&args).unwrap();
    let sam_path = dir.path("reads.sam");
    std::fs::write(&sam_path, sam).unwrap();
    let mut faidx = Command::new("samtools");
    faidx.arg("faidx").arg(&fasta);
    assert!(run(faidx).status.success());
    let cram = dir.path("reads.cram");
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-C", "-T"]).arg(&fasta).arg("-o").arg(&cram).arg(&sam_path);
    assert!(run(view).status.success());
    let mut idx = Command::new("samtools");
    idx.arg("index").arg(&cram);
    assert!(run(idx).status.success());
    let reference = format!("--reference={}", fasta.display());
    for args in [&[reference.as_str()][..], &[&reference, "-Q", "20"], &[&reference, "-r", "chr2:100-30000"], &[&reference, "-m", "-w", "20"]] {
        let mut s = Command::new("samtools");
        s.arg("coverage").args(args).arg(&cram).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
        let mut f = fasthts();
        f.arg("coverage").args(args).arg(&cram).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
        let (want, got) = (run(s), run(f));
        assert!(want.status.success(), "{}", text(&want.stderr));
        assert!(got.status.success(), "{args:?}: {}", text(&got.stderr));
        assert!(got.stdout == want.stdout, "{args:?}:\n{}\n{}", text(&want.stdout), text(&got.stdout));
    }
}

#[test]
fn test_bams_match_samtools() {
    if !have_samtools() {
        return;
    }
    let mut compared = 0;
    for file in corpus() {
        let without_sequence = has_reads_without_sequence(&file);
        for args in [&[][..], &["-Q", "13", "-q", "1"], &["-m", "-w", "30"]] {
            if without_sequence {
                let expected = samtools_coverage(args, &[&file]);
                for extra in [&["-@", "1"][..], &["-@", "2", "--window-bases", "1500"]] {
                    let got = fasthts_coverage(args, extra, &[&file]);
                    assert_eq!(got.status.code(), expected.status.code(), "{args:?} {file:?}: {}", text(&got.stderr));
                    if expected.status.success() {
                        assert_eq!(without_meanbaseq(&got.stdout), without_meanbaseq(&expected.stdout), "{args:?} {extra:?} {file:?}");
                    }
                }
            } else {
                compare(args, &[&file]);
            }
            compared += 1;
        }
    }
    assert!(compared >= 20, "corpus too small");
}

#[test]
fn output_file_is_written_whole() {
    let Some(g) = generate("coverage-output") else { return };
    let out = g.dir.path("coverage.tsv");
    let expected = samtools_coverage(&["-H"], &[&g.first]);
    let mut c = fasthts();
    c.args(["coverage", "-H", "-o"]).arg(&out).arg(&g.first);
    let got = run(c);
    assert!(got.status.success() && got.stdout.is_empty(), "{}", text(&got.stderr));
    assert!(std::fs::read(&out).unwrap() == expected.stdout);
}

#[test]
fn bad_input_is_one_line_naming_the_file() {
    let Some(dir) = with_samtools("coverage-bad") else { return };
    let bare = dir.path("bare.bam");
    std::fs::copy(data("small.bam"), &bare).unwrap();
    let missing = dir.path("missing.bam");
    let truncated = dir.path("truncated.bam");
    let bytes = std::fs::read(data("small.bam")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.path("out.tsv");
    let small = data("small.bam").display().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec![missing.display().to_string()], missing.display().to_string()),
        (vec![truncated.display().to_string()], truncated.display().to_string()),
        (vec!["-r".into(), "chr1:1-100".into(), bare.display().to_string()], bare.display().to_string()),
        (vec!["-r".into(), "chrNope:1-100".into(), small.clone()], "chrNope".into()),
        (vec!["-r".into(), "chr1:100-1".into(), small.clone()], "chr1:100-1".into()),
        (vec![small.clone(), missing.display().to_string()], missing.display().to_string()),
        (vec!["--ff".into(), "NOPE".into(), small.clone()], "--ff NOPE".into()),
        (vec!["--rf".into(), "-1".into(), small.clone()], "--rf -1".into()),
        (vec!["-b".into(), dir.path("no-list.txt").display().to_string()], "no-list.txt".into()),
    ];
    for (args, named) in cases {
        let want = samtools_coverage(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
        let got = fails_in_one_line_leaving_no_output("coverage", &out, &args, &named);
        assert_eq!(got.status.code(), want.status.code(), "{args:?}: exit status differs from samtools'");
    }
}

/// Without inputs samtools prints its usage and exits 0.
#[test]
fn no_inputs_print_the_usage() {
    let got = fasthts_coverage(&[], &[], &[]);
    assert!(got.status.success());
    assert!(text(&got.stdout).contains("Usage: fasthts coverage"), "{}", text(&got.stdout));
}

/// A draft assembly: 50,000 references, reads on every 15th (three each):
/// the references reached, then the others, as samtools orders them.
#[test]
fn many_references_match_samtools() {
    let Some(dir) = with_samtools("coverage-many-refs") else { return };
    let refs = 50_000;
    let name = |i: usize| format!("scaffold_{i}_pilon");
    let len = |i: usize| 500 + (i * 7919) % 20_000;
    let mut sam = String::from("@HD\tVN:1.6\tSO:coordinate\n");
    for i in 0..refs {
        sam.push_str(&format!("@SQ\tSN:{}\tLN:{}\n", name(i), len(i)));
    }
    let mut n = 0;
    for i in (0..refs).step_by(15) {
        let mut positions: Vec<usize> = (0..3).map(|k| 1 + (i * 31 + k * 977) % (len(i) - 100)).collect();
        positions.sort_unstable();
        for (k, pos) in positions.into_iter().enumerate() {
            let flag = if k == 1 { 1024 } else { 0 };
            sam.push_str(&format!("r{n}\t{flag}\t{}\t{pos}\t{}\t20M\t*\t0\t0\tACGTACGTACGTACGTACGT\tIIIIIIIIIIIIIIIIIIII\n", name(i), n % 61));
            n += 1;
        }
    }
    let sam_path = dir.path("many.sam");
    std::fs::write(&sam_path, sam).unwrap();
    let bam = dir.path("many.bam");
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&sam_path);
    assert!(run(view).status.success());
    let mut idx = Command::new("samtools");
    idx.arg("index").arg(&bam);
    assert!(run(idx).status.success());
    for args in [&[][..], &["-q", "30"], &["-m", "-w", "10"]] {
        compare(args, &[&bam]);
    }
    compare(&[], &[&sam_path]);
}
