//! `fasthts depth` against samtools depth 1.16: every option and the
//! common combinations, on generated BAMs (BAI and CSI, long CIGARs,
//! records larger than a block) and the corpus, at 1 and 2 threads and
//! with windows small enough that every read crosses a few cuts; then
//! inputs without an index, SAM, a pipe, `-o`, and bad input.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Two generated samples of one genome, indexed (BAI and CSI), and
/// their SAM text, made once per test.
struct Generated {
    dir: TempDir,
    first: PathBuf,
    second: PathBuf,
}

fn generate(tag: &str) -> Option<Generated> {
    let dir = with_samtools(tag)?;
    let make = |name: &str, args: &[&str], index: &[&str]| {
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
    };
    let common = ["--refs", "4", "--ref-len", "60k", "--read-len", "60-150"];
    let mut a = vec!["--seed", "31", "--reads", "6000", "--long-cigar-fraction", "0.0005", "--huge-record-fraction", "0.0005"];
    a.extend(common);
    let mut b = vec!["--seed", "32", "--genome-seed", "31", "--reads", "4000", "--unmapped-fraction", "0.05"];
    b.extend(common);
    let first = make("first", &a, &[]);
    let second = make("second", &b, &["-c"]);
    Some(Generated { dir, first, second })
}

fn samtools_depth(args: &[&str], inputs: &[&Path]) -> Output {
    let mut c = Command::new("samtools");
    c.arg("depth").args(args).args(inputs);
    run(c)
}

fn fasthts_depth(args: &[&str], extra: &[&str], inputs: &[&Path]) -> Output {
    let mut c = fasthts();
    c.arg("depth").args(extra).args(args).args(inputs);
    run(c)
}

/// Compares fasthts with samtools on `args` at 1 and 2 threads, in the
/// default windows and in windows of 1,500 bases; returns the rows.
pub(crate) fn compare(args: &[&str], inputs: &[&Path]) -> usize {
    compare_in(args, inputs, true)
}

/// [`compare`], without the small windows when `small_windows` is false
/// (a reference of 2^29 bases would be 400,000 of them).
pub(crate) fn compare_in(args: &[&str], inputs: &[&Path], small_windows: bool) -> usize {
    let expected = samtools_depth(args, inputs);
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let runs = [&["-@", "1"][..], &["-@", "2"], &["-@", "1", "--window-bases", "1500"], &["-@", "2", "--window-bases", "1500"]];
    for extra in &runs[..if small_windows { 4 } else { 2 }] {
        let got = fasthts_depth(args, extra, inputs);
        assert_eq!(
            got.status.success(),
            expected.status.success(),
            "depth {args:?} {extra:?} {names:?}: exit status differs; fasthts stderr: {}",
            text(&got.stderr)
        );
        if got.stdout != expected.stdout {
            let (e, g) = (text(&expected.stdout), text(&got.stdout));
            let first = e.lines().zip(g.lines()).position(|(a, b)| a != b);
            panic!(
                "depth {args:?} {extra:?} {names:?}: output differs ({} rows against samtools' {}), first at row {first:?}: {:?} / {:?}",
                g.lines().count(),
                e.lines().count(),
                first.and_then(|i| g.lines().nth(i)),
                first.and_then(|i| e.lines().nth(i))
            );
        }
    }
    expected.stdout.iter().filter(|&&c| c == b'\n').count()
}

/// Every option alone and the usual combinations.
const OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-a"],
    &["-aa"],
    &["-a", "-a"],
    &["-J"],
    &["-q", "25"],
    &["-J", "-q", "25"],
    &["-Q", "20"],
    &["-l", "90"],
    &["-s"],
    &["-s", "-J", "-q", "20"],
    &["-g", "0x400"],
    &["-g", "DUP,QCFAIL"],
    &["-G", "SUPPLEMENTARY"],
    &["-g", "UNMAP"],
    &["-H"],
    &["-a", "-H", "-Q", "10", "-q", "10"],
    &["-aa", "-J", "-s"],
    // -g and -G in command-line order.
    &["-G", "0x400", "-g", "0x400"],
    &["-g", "DUP", "-G", "DUP"],
    &["-G", "0x10", "-g", "0x14", "-a"],
    &["-g", "0x400", "-G", "0x500", "-g", "SECONDARY"],
];

#[test]
fn every_option_matches_samtools_on_generated_data() {
    let Some(g) = generate("depth-options") else { return };
    let mut rows = 0;
    for args in OPTION_SETS {
        rows += compare(args, &[&g.first]);
        rows += compare(args, &[&g.first, &g.second]);
    }
    assert!(rows > 1_000_000, "too little compared: {rows} rows");
}

#[test]
fn regions_and_bed_files_match_samtools() {
    let Some(g) = generate("depth-regions") else { return };
    let bed = g.dir.path("regions.bed");
    std::fs::write(&bed, "# intervals\nchr1\t1000\t5000\nchr1 4000 9000\nchr2\t100\ntrack x\nchr4 20000 30000\nchrM 0 100\nchrZ 5 10\n")
        .unwrap();
    let bed = bed.to_str().unwrap();
    let sets: &[&[&str]] = &[
        &["-b", bed],
        &["-a", "-b", bed],
        &["-aa", "-b", bed],
        &["-r", "chr2"],
        &["-a", "-r", "chr2:1000-50000"],
        &["-aa", "-r", "chr2:1,000-2,000"],
        &["-aa", "-r", "chr3"],
        &["-a", "-r", "chr3:5-10"],
        &["-r", "chr1:30000-"],
        &["-a", "-r", "chr1:30000-"],
        &["-s", "-r", "chr1:1000-40000"],
        &["-a", "-s", "-J", "-r", "chr2:1-1000"],
        &["-a", "-b", bed, "-r", "chr1:2000-3000"],
        &["-r", "chrM:16000-20000", "-a"],
        // Starts and ends of 0 as htslib reads them.
        &["-a", "-r", "chr1:0-5"],
        &["-r", "chr1:0-5000"],
        &["-a", "-r", "chr2:0"],
        &["-r", "chr1:0-0"],
        &["-a", "-r", "chr1:60000-0"],
        &["-a", "-r", "chr1:-50"],
        &["-r", "chr1:2-1"],
        &["-a", "-r", "chr1:7-7"],
        // htslib's leniencies: white space, signs, multipliers, braces.
        &["-a", "-r", "chr2: 1,000-2k"],
        &["-r", "chr2:+5-+3e3"],
        &["-a", "-r", "{chr2}:5-"],
        &["-r", "chr2:1000-2000x"],
        &["-r", "chr2:-1-5"],
        // The whole file, as sam_itr_querys takes `.`: no rows, as `*`.
        &["-a", "-r", "."],
        &["-H", "-r", "*"],
    ];
    for args in sets {
        compare(args, &[&g.first]);
        compare(args, &[&g.first, &g.second]);
    }
}

#[test]
fn inputs_without_index_sam_and_pipes_match_samtools() {
    let Some(g) = generate("depth-sequential") else { return };
    let bare = g.dir.path("bare.bam");
    std::fs::copy(&g.first, &bare).unwrap();
    let sam = g.dir.path("second.sam");
    for args in [&[][..], &["-a"], &["-aa", "-s"], &["-J", "-q", "20"]] {
        compare(args, &[&bare]);
        compare(args, &[&sam]);
        compare(args, &[&bare, &sam]);
        compare(args, &[&bare, &g.second]);
    }
    // From a pipe: BAM and SAM.
    for input in [&g.first, &sam] {
        let expected = samtools_depth(&["-a"], &[input]);
        let mut c = fasthts();
        c.args(["depth", "-a", "-"]);
        let got = run_with_stdin(c, std::fs::read(input).unwrap());
        assert!(got.status.success(), "{}", text(&got.stderr));
        assert!(got.stdout == expected.stdout, "depth -a - < {}", input.display());
    }
}

#[test]
fn test_bams_match_samtools() {
    if !have_samtools() {
        return;
    }
    let mut compared = 0;
    for file in corpus() {
        // -a prints every base of the references: only where they are short
        // (samtools' own test BAMs declare human chromosomes).
        let genome: u64 = match fasthts::bam::BamFile::open(&file) {
            Ok(bam) => bam.header().references.iter().map(|r| u64::from(r.len)).sum(),
            Err(_) => 0,
        };
        for args in [&[][..], &["-a"], &["-aa", "-J", "-s"], &["-s", "-q", "13", "-Q", "1"]] {
            if genome > 20_000_000 && args.first().is_some_and(|a| a.starts_with("-a")) {
                continue;
            }
            compare_in(args, &[&file], genome <= 20_000_000);
            compared += 1;
        }
    }
    assert!(compared >= 20, "corpus too small");
}

#[test]
fn output_file_is_written_whole() {
    let Some(g) = generate("depth-output") else { return };
    let out = g.dir.path("depth.tsv");
    let expected = samtools_depth(&["-a", "-H"], &[&g.first]);
    let mut c = fasthts();
    c.args(["depth", "-a", "-H", "-o"]).arg(&out).arg(&g.first);
    let got = run(c);
    assert!(got.status.success() && got.stdout.is_empty(), "{}", text(&got.stderr));
    assert!(std::fs::read(&out).unwrap() == expected.stdout);
}

/// `-X`: the indexes named after the inputs, read for `-r`; `-H` names
/// the index files (as samtools does).
#[test]
fn explicit_indexes_as_samtools() {
    let Some(g) = generate("depth-explicit-index") else { return };
    let (a, b) = (g.dir.path("a.bam"), g.dir.path("b.bam"));
    std::fs::copy(&g.first, &a).unwrap();
    std::fs::copy(&g.second, &b).unwrap();
    let (ai, bi) = (PathBuf::from(format!("{}.bai", g.first.display())), PathBuf::from(format!("{}.csi", g.second.display())));
    for args in [&["-X", "-H", "-a", "-r", "chr2:100-5000"][..], &["-X", "-r", "chr1"], &["-X", "-H"]] {
        compare(args, &[&a, &b, &ai, &bi]);
    }
    compare(&["-X", "-a", "-r", "chr1:1000-2000"], &[&a, &ai]);
}

#[test]
fn bad_input_is_one_line_naming_the_file() {
    let dir = TempDir::new("depth-bad");
    let bare = dir.path("bare.bam");
    std::fs::copy(data("small.bam"), &bare).unwrap();
    let missing = dir.path("missing.bam");
    let out = dir.path("out.tsv");
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec![missing.display().to_string()], missing.display().to_string()),
        (vec!["-r".into(), "chr1:1-100".into(), bare.display().to_string()], bare.display().to_string()),
        (vec!["-r".into(), "chrNope:1-100".into(), data("small.bam").display().to_string()], "chrNope".into()),
        (vec!["-r".into(), "chr1:100-1".into(), data("small.bam").display().to_string()], "chr1:100-1".into()),
        (vec!["-b".into(), dir.path("missing.bed").display().to_string(), bare.display().to_string()], "missing.bed".into()),
        (vec![data("small.bam").display().to_string(), missing.display().to_string()], missing.display().to_string()),
        (vec!["-X".into(), bare.display().to_string()], "-X".into()),
        (vec!["-X".into(), "-r".into(), "chr1".into(), bare.display().to_string(), dir.path("no.bai").display().to_string()], "no.bai".into()),
    ];
    for (args, named) in cases {
        fails_in_one_line_leaving_no_output("depth", &out, &args, &named);
    }
}

/// Issue 39: a whole-file depth of a BAM whose index was made for a prefix
/// of it (newer than the BAM: not stale) used to count through it and lose
/// every row past the prefix, exit 0. The index is found not to describe
/// the file, said once per input naming it, and the file read sequentially:
/// the rows are those without an index (samtools', which reads the file
/// whole), alone and merged with another input, with -a.
#[test]
fn an_index_of_a_prefix_of_the_bam_is_not_read_through() {
    let golden = golden_snp_pileup();
    let dir = TempDir::new("depth-prefix-index");
    let bare = dir.path("bare.bam");
    let bam = dir.path("normal.bam");
    std::fs::copy(golden.join("normal.bam"), &bare).unwrap();
    std::fs::copy(golden.join("normal.bam"), &bam).unwrap();
    write_prefix_index(&bam);
    let other = golden.join("tumour.bam");
    for (args, inputs, bare_inputs) in [
        (&[][..], vec![bam.as_path()], vec![bare.as_path()]),
        (&["-a"][..], vec![bam.as_path()], vec![bare.as_path()]),
        (&[][..], vec![other.as_path(), bam.as_path()], vec![other.as_path(), bare.as_path()]),
    ] {
        let want = fasthts_depth(args, &[], &bare_inputs);
        assert!(want.status.success() && want.stderr.is_empty(), "{}", text(&want.stderr));
        if have_samtools() {
            assert!(samtools_depth(args, &bare_inputs).stdout == want.stdout, "{args:?}: without an index, rows differ from samtools'");
        }
        for threads in ["1", "2"] {
            let got = fasthts_depth(args, &["-@", threads], &inputs);
            let stderr = text(&got.stderr);
            assert_eq!(got.status.code(), Some(0), "{stderr}");
            assert!(got.stdout == want.stdout, "{args:?} {inputs:?} -@ {threads}: rows differ from those without an index");
            let lines: Vec<&str> = stderr.lines().collect();
            let expected_start = format!("fasthts depth: warning: {}: the index does not match the data file (", bam.display());
            assert!(
                lines.len() == 1 && lines[0].starts_with(&expected_start) && lines[0].ends_with("; reading the file sequentially"),
                "{args:?} -@ {threads}: {stderr:?}"
            );
        }
    }
}
