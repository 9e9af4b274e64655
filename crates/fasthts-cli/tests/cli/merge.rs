//! fasthts merge against samtools merge 1.16: samtools' own merge tests
//! (test.pl's `test_merge`, and the merge lines of `test_index` and
//! `test_large_positions`) with fasthts in samtools' place, then the same
//! records and header as samtools merge on parts of the differential
//! corpus (by coordinate, name and tag; IDs renamed, combined, set from
//! file names), on SAM, bgzipped SAM, CRAM and piped inputs, by region and
//! BED through the indexes, and the refusals of bad inputs.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn view(file: &Path) -> Vec<u8> {
    let mut c = Command::new("samtools");
    c.args(["view", "-h", "--no-PG"]).arg(file);
    let out = run(c);
    assert!(out.status.success(), "samtools view {}: {}", file.display(), text(&out.stderr));
    out.stdout
}

/// test.pl's `ignore_pg_header`: runs of `@PG` lines removed.
fn without_pg(sam: &[u8]) -> String {
    text(sam).lines().filter(|l| !l.starts_with("@PG\t")).map(|l| format!("{l}\n")).collect()
}

fn samtools(args: &[&str], files: &[&Path]) {
    let mut c = Command::new("samtools");
    c.args(args).args(files);
    let out = run(c);
    assert!(out.status.success(), "samtools {args:?}: {}", text(&out.stderr));
}

/// One of test.pl's merge cases: the arguments after `merge -@ N`, the
/// expected stdout (compared without `@PG` unless `keep_pg`), and the
/// expected stderr when test.pl compares it.
struct Case {
    args: Vec<String>,
    expected: PathBuf,
    keep_pg: bool,
    stderr: Option<PathBuf>,
}

#[test]
fn passes_samtools_own_merge_tests() {
    if !have_samtools() {
        return;
    }
    let Some(t) = samtools_test_data() else { return };
    let dir = TempDir::new("merge-testpl");
    let p = |rel: &str| t.join(rel).display().to_string();
    let d = |name: &str| dir.path(name).display().to_string();
    // test.pl's setup: a file list, tag-sorted inputs, indexed BED inputs,
    // the indexes of test_index's -X case.
    let fofn: String = std::fs::read_to_string(t.join("merge/test_3.fofn")).unwrap().lines().map(|l| format!("{}\n", p(l))).collect();
    std::fs::write(dir.path("fofn"), fofn).unwrap();
    for (out, args, input) in [
        ("tag1.bam", &["-t", "PG"][..], "dat/test_input_1_b.sam"),
        ("tag2.bam", &["-t", "PG"], "dat/test_input_1_d.sam"),
        ("tag3.bam", &["-n", "-t", "PG"], "dat/test_input_1_c.sam"),
        ("tag4.bam", &["-n", "-t", "PG"], "dat/test_input_1_d.sam"),
    ] {
        let mut c = Command::new("samtools");
        c.arg("sort").args(["-o", &d(out)]).args(args).args(["-m", "10M", &p(input)]);
        assert!(run(c).status.success());
    }
    for n in ["1", "2"] {
        samtools(&["view", "-h", "--no-PG", "-o", &d(&format!("bed{n}.bam")), &p(&format!("merge/merge.bed.{n}.sam"))], &[]);
        samtools(&["index", &d(&format!("bed{n}.bam"))], &[]);
    }
    samtools(&["index", "-o", &d("a.bam.bai"), &p("dat/test_input_1_a.bam")], &[]);
    samtools(&["index", "-o", &d("b.bam.bai"), &p("dat/test_input_1_b.bam")], &[]);
    let abc = |ext: &str| ["a", "b", "c"].map(|x| p(&format!("dat/test_input_1_{x}.{ext}")));
    let case = |args: Vec<String>, expected: &str, keep_pg: bool| Case { args, expected: t.join(expected), keep_pg, stderr: None };
    let words = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    let mut cases = vec![
        case([words("-s 1 -O sam -"), abc("sam").to_vec()].concat(), "merge/2.merge.expected.sam", false),
        case([words("-s 1 -O sam -"), abc("bam").to_vec()].concat(), "merge/2.merge.expected.sam", false),
        Case {
            args: [words("-s 1 -O sam -b"), vec![d("fofn"), "-".into(), p("dat/test_input_1_a.bam")]].concat(),
            expected: t.join("merge/3.merge.expected.sam"),
            keep_pg: false,
            stderr: Some(t.join("merge/3.merge.expected.err")),
        },
        case([words("-s 1 -O sam -"), vec![p("dat/test_input_1_b.bam")]].concat(), "merge/4.merge.expected.sam", false),
        case([words("-r -s 1 -O sam -"), abc("sam").to_vec()].concat(), "merge/5.merge.expected.sam", false),
        case([words("-cp -s 1 -O sam -"), abc("sam")[..2].to_vec()].concat(), "merge/6.merge.expected.sam", false),
        case(
            [words("-s 1 -O sam -"), vec![p("dat/test_input_1_a_regex.sam"), p("dat/test_input_1_b_regex.sam")]].concat(),
            "merge/7.merge.expected.sam",
            false,
        ),
        case([words("-o - -s 1 -O sam"), abc("sam").to_vec()].concat(), "merge/2.merge.expected.sam", false),
        case([words("-s 1 -p -c -t PG -O SAM -"), vec![d("tag1.bam"), d("tag2.bam")]].concat(), "merge/tag.pg.merge.expected.sam", false),
        case(
            [words("-s 1 -p -c -n -t PG -O SAM -"), vec![d("tag3.bam"), d("tag4.bam")]].concat(),
            "merge/tag.pg.n.merge.expected.sam",
            false,
        ),
        case([words("--no-PG -O SAM -"), vec![p("merge/test_no_pg_rg_co.sam")]].concat(), "merge/test_no_pg_rg_co.sam", true),
        case(
            [words("--no-PG -O SAM -L"), vec![p("merge/merge.bed"), "-".into(), d("bed1.bam"), d("bed2.bam")]].concat(),
            "merge/merge.bed.expected.sam",
            true,
        ),
        case([words("--no-PG -r -O SAM -"), vec![p("merge/test_no_pg_rg_co.sam")]].concat(), "merge/rg_from_r_mode.expected.sam", true),
        // test_index: index files after the inputs (-X).
        case(
            [
                words("-O sam - -X -cp -R ref2"),
                vec![p("dat/test_input_1_a.bam"), p("dat/test_input_1_b.bam"), d("a.bam.bai"), d("b.bam.bai")],
            ]
            .concat(),
            "dat/test_input_1_ab.X.expected",
            false,
        ),
        // test_large_positions: positions past 2^31 kept from SAM to SAM.
        case(
            [words("-O sam --no-PG -"), vec![p("large_pos/longref.sam"), p("large_pos/longref2.sam")]].concat(),
            "large_pos/merge.expected.sam",
            true,
        ),
    ];
    // The large-position case runs without -@ in test.pl; the others at both.
    let large = cases.pop().unwrap();
    for threads in [None, Some("2")] {
        for case in cases.iter().chain(threads.is_none().then_some(&large)) {
            let mut c = fasthts();
            c.arg("merge");
            if let Some(n) = threads {
                c.args(["-@", n]);
            }
            c.args(&case.args);
            let out = run(c);
            let what = format!("merge {:?} (-@ {threads:?})", case.args);
            assert!(out.status.success(), "{what}: {}", text(&out.stderr));
            let want = std::fs::read(&case.expected).unwrap();
            if case.keep_pg {
                assert!(out.stdout == want, "{what}:\n{}\n--- expected\n{}", text(&out.stdout), text(&want));
            } else {
                assert_eq!(without_pg(&out.stdout), without_pg(&want), "{what}");
            }
            if let Some(stderr) = &case.stderr {
                assert_eq!(text(&out.stderr), std::fs::read_to_string(stderr).unwrap(), "{what}: stderr");
            }
        }
    }
}

/// `samtools view -h --no-PG` of `bam` dealt into `n` SAM parts, record by
/// record (each part keeps the input's order), then each sorted by
/// `samtools sort ORDER` into `dir/pK.bam`.
fn parts(dir: &TempDir, bam: &Path, n: usize, order: &[&str]) -> Vec<PathBuf> {
    let sam = view(bam);
    let mut header = String::new();
    let mut bodies = vec![String::new(); n];
    for (i, line) in text(&sam).lines().enumerate() {
        if line.starts_with('@') {
            header.push_str(line);
            header.push('\n');
        } else {
            bodies[i % n].push_str(line);
            bodies[i % n].push('\n');
        }
    }
    (0..n)
        .map(|k| {
            let sam = dir.path(&format!("p{k}.sam"));
            std::fs::write(&sam, format!("{header}{}", bodies[k])).unwrap();
            let out = dir.path(&format!("p{k}.bam"));
            let mut c = Command::new("samtools");
            c.arg("sort").args(order).args(["--no-PG", "-o"]).arg(&out).arg(&sam);
            let o = run(c);
            assert!(o.status.success(), "samtools sort: {}", text(&o.stderr));
            out
        })
        .collect()
}

/// `samtools merge ARGS -o OUT INPUTS` and `fasthts merge -@ THREADS ARGS
/// -o OUT INPUTS`: the same status, stderr and (when they succeed) the same
/// `samtools view -h --no-PG` of the outputs.
fn assert_merges_like_samtools(dir: &TempDir, args: &[&str], inputs: &[PathBuf], threads: &str) {
    let (theirs, ours) = (dir.path("theirs.bam"), dir.path("ours.bam"));
    let _ = std::fs::remove_file(&theirs);
    let _ = std::fs::remove_file(&ours);
    let mut c = Command::new("samtools");
    c.arg("merge").args(args).arg("-o").arg(&theirs).args(inputs);
    let s = run(c);
    let mut c = fasthts();
    c.args(["merge", "-@", threads]).args(args).arg("-o").arg(&ours).args(inputs);
    let f = run(c);
    let what = format!("merge {args:?} of {inputs:?} -@ {threads}");
    assert_eq!(f.status.success(), s.status.success(), "{what}: {} / {}", text(&f.stderr), text(&s.stderr));
    if s.status.success() {
        let (a, b) = (view(&ours), view(&theirs));
        assert!(
            a == b,
            "{what}: outputs differ\n{}",
            text(&a).lines().zip(text(&b).lines()).find(|(x, y)| x != y).map_or(String::new(), |(x, y)| format!("{x}\n{y}"))
        );
        assert_eq!(text(&f.stderr), text(&s.stderr), "{what}: stderr");
    }
}

#[test]
fn matches_samtools_merge_on_parts_of_the_corpus() {
    let Some(dir) = with_samtools("merge-corpus") else { return };
    for bam in corpus() {
        // The corpus' broken files are bad_input's.
        if !Command::new("samtools").args(["quickcheck"]).arg(&bam).status().unwrap().success() || view(&bam).len() > 40 << 20 {
            continue;
        }
        let by_coordinate = parts(&dir, &bam, 3, &[]);
        assert_merges_like_samtools(&dir, &["--no-PG", "-s", "7"], &by_coordinate, "2");
        let by_name = parts(&dir, &bam, 3, &["-n"]);
        assert_merges_like_samtools(&dir, &["--no-PG", "-s", "7", "-n"], &by_name, "1");
    }
}

#[test]
fn matches_samtools_merge_by_tag_and_header_rules() {
    let Some(dir) = with_samtools("merge-rules") else { return };
    let mut inputs = vec![data("small.bam"), data("unsorted.bam")];
    inputs.extend(samtools_test_data().map(|t| t.join("dat/test_input_1_a.bam")));
    inputs.extend(art_bam());
    for bam in &inputs {
        let by_coordinate = parts(&dir, bam, 4, &[]);
        for args in [&["-s", "7"][..], &["-c", "-p"], &["-r", "-s", "3"], &["-c", "-s", "9"], &["-p", "-s", "11"]] {
            assert_merges_like_samtools(&dir, &[&["--no-PG"], args].concat(), &by_coordinate, "2");
        }
        // Equal keys across inputs: the same input twice.
        assert_merges_like_samtools(&dir, &["--no-PG", "-c", "-p"], &[by_coordinate[0].clone(), by_coordinate[0].clone()], "2");
        for (sort, merge) in
            [(&["-t", "RG"][..], &["-t", "RG"][..]), (&["-n", "-t", "RG"], &["-n", "-t", "RG"]), (&["-t", "NM"], &["-t", "NM"])]
        {
            let sorted = parts(&dir, bam, 3, sort);
            assert_merges_like_samtools(&dir, &[&["--no-PG", "-s", "5"], merge].concat(), &sorted, "2");
        }
    }
}

#[test]
fn matches_samtools_merge_by_template_coordinate() {
    let Some(dir) = with_samtools("merge-template") else { return };
    let fixed = dir.path("fixmate.sam");
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("samtools view -u -F 0x900 \"$1\" | samtools sort -n -u - | samtools fixmate -m -O sam - \"$2\"")
        .arg("sh")
        .arg(data("small.bam"))
        .arg(&fixed);
    assert!(run(c).status.success());
    let sorted = parts(&dir, &fixed, 3, &["--template-coordinate"]);
    assert_merges_like_samtools(&dir, &["--no-PG", "-c", "-p", "--template-coordinate"], &sorted, "2");
}

#[test]
fn reads_sam_bgzipped_sam_cram_and_pipes_as_samtools() {
    let Some(dir) = with_samtools("merge-formats") else { return };
    let sam = dir.path("small.sam");
    std::fs::write(&sam, view(&data("small.bam"))).unwrap();
    let gz = dir.path("small.sam.gz");
    let mut c = Command::new("sh");
    c.arg("-c").arg("bgzip -c \"$1\" > \"$2\"").arg("sh").arg(&sam).arg(&gz);
    assert!(run(c).status.success());
    assert_merges_like_samtools(&dir, &["--no-PG", "-s", "2"], &[gz.clone(), data("small.bam"), sam.clone()], "2");
    if let Some(t) = samtools_test_data() {
        // A CRAM whose reference htslib finds from its @SQ M5/UR.
        let cram = t.join("dat/test_input_1_a.cram");
        assert_merges_like_samtools(&dir, &["--no-PG", "-s", "2"], &[cram, t.join("dat/test_input_1_b.bam")], "2");
    }
    // Standard input: a BAM piped in, as `-`.
    let mut ours = fasthts();
    ours.args(["merge", "--no-PG", "-s", "2", "-O", "sam", "-", "-"]).arg(&sam);
    let f = run_with_stdin(ours, std::fs::read(data("small.bam")).unwrap());
    assert!(f.status.success(), "{}", text(&f.stderr));
    let mut theirs = Command::new("samtools");
    theirs.args(["merge", "--no-PG", "-s", "2", "-O", "sam", "-", "-"]).arg(&sam);
    let s = run_with_stdin(theirs, std::fs::read(data("small.bam")).unwrap());
    assert_eq!(text(&f.stdout), text(&s.stdout));
    // SAM output by -O and by name, BAM levels: the same records.
    for args in [&["-O", "SAM"][..], &["-u"], &["-1"], &["-l", "9"], &["-O", "bam,level=2"]] {
        assert_merges_like_samtools(&dir, &[&["--no-PG", "-c", "-p"], args].concat(), &[data("small.bam"), sam.clone()], "2");
    }
    let out = dir.path("out.sam");
    let mut c = fasthts();
    c.args(["merge", "--no-PG", "-c", "-p"]).arg(&out).arg(data("small.bam")).arg(&sam);
    assert!(run(c).status.success());
    assert!(std::fs::read(&out).unwrap().starts_with(b"@HD\t"), "a .sam output name writes SAM");
}

#[test]
fn merges_regions_and_bed_intervals_through_the_indexes() {
    let Some(dir) = with_samtools("merge-regions") else { return };
    let sorted = parts(&dir, &data("small.bam"), 3, &[]);
    for part in &sorted {
        samtools(&["index"], &[part]);
    }
    for region in ["chr1", "chr1:1000-50000", "chr2:5-100000", "chr3:1-1"] {
        assert_merges_like_samtools(&dir, &["--no-PG", "-s", "1", "-R", region], &sorted, "2");
    }
    let bed = dir.path("r.bed");
    std::fs::write(&bed, "chr1\t100\t5000\nchr1\t20000\t90000\nchr2\t0\t1000\nchr9\t1\t5\n").unwrap();
    let b = bed.display().to_string();
    assert_merges_like_samtools(&dir, &["--no-PG", "-s", "1", "-L", &b], &sorted, "2");
    // Refused as samtools refuses them.
    for (args, message) in [
        (&["-R", "nope"][..], "Badly formatted region or unknown reference name: \"nope\""),
        (&["-R", "chr1", "-L", &b], "You must specify either a BED file or a region"),
    ] {
        let mut c = fasthts();
        c.args(["merge", "-f", "-o"]).arg(dir.path("x.bam")).args(args).args(&sorted);
        let out = run(c);
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains(message), "{}", text(&out.stderr));
    }
    // -X: the indexes after the inputs, named as no index is named beside them.
    let mut renamed = sorted.clone();
    for (i, part) in sorted.iter().enumerate() {
        let x = dir.path(&format!("x{i}.bai"));
        std::fs::rename(format!("{}.bai", part.display()), &x).unwrap();
        renamed.push(x);
    }
    assert_merges_like_samtools(&dir, &["--no-PG", "-s", "1", "-X", "-R", "chr2"], &renamed, "1");
}

#[test]
fn region_names_as_samtools_reads_them() {
    // sam_parse_region on the output header: `AN:` aliases, `{name}`,
    // a start of 0, commas; `.`, `*` and reversed ranges refused.
    let Some(dir) = with_samtools("merge-region-names") else { return };
    let sam = dir.path("an.sam");
    std::fs::write(
        &sam,
        "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:1000\tAN:1,one\n@SQ\tSN:chr2\tLN:1000\tAN:2\n\
         r1\t0\tchr1\t10\t60\t4M\t*\t0\t0\tACGT\tIIII\nr2\t0\tchr2\t20\t60\t4M\t*\t0\t0\tACGT\tIIII\n",
    )
    .unwrap();
    let inputs: Vec<PathBuf> = ["a.bam", "b.bam"].iter().map(|n| dir.path(n)).collect();
    for bam in &inputs {
        samtools(&["view", "-b", "-o"], &[bam, &sam]);
        samtools(&["index"], &[bam]);
    }
    for region in ["one", "2", "one:5-15", "{one}", "chr1:0-15", "2:1-30", "chr1:1,0-20", ".", "*", "chr3", "chr1:15-5"] {
        assert_merges_like_samtools(&dir, &["--no-PG", "-s", "1", "-R", region], &inputs, "2");
    }
}

#[test]
fn output_names_index_and_header_file() {
    let Some(dir) = with_samtools("merge-outputs") else { return };
    let sorted = parts(&dir, &data("small.bam"), 2, &[]);
    // The positional output; then refused without -f, in samtools' words.
    let out = dir.path("out.bam");
    let mut c = fasthts();
    c.args(["merge", "--no-PG", "-c", "-p"]).arg(&out).args(&sorted);
    assert!(run(c).status.success());
    let first = view(&out);
    let mut c = fasthts();
    c.args(["merge", "--no-PG"]).arg(&out).args(&sorted);
    let refused = run(c);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(text(&refused.stderr), format!("[bam_merge] File '{}' exists. Please apply '-f' to overwrite. Abort.\n", out.display()));
    assert_eq!(view(&out), first, "the existing output is left alone");
    // --write-index: the CSI samtools index makes of the output.
    let mut c = fasthts();
    c.args(["merge", "-f", "--no-PG", "-c", "-p", "--write-index", "-o"]).arg(&out).args(&sorted);
    assert!(run(c).status.success());
    let copy = dir.path("copy.bam");
    std::fs::copy(&out, &copy).unwrap();
    samtools(&["index", "-c"], &[&copy]);
    assert_eq!(std::fs::read(dir.path("copy.bam.csi")).unwrap(), std::fs::read(dir.path("out.bam.csi")).unwrap());
    // -h FILE: its lines first, as samtools merges them.
    let header = dir.path("h.sam");
    std::fs::write(&header, "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:extra\tLN:10\n@RG\tID:rg1\tSM:x\n@PG\tID:given\n@CO\tgiven header\n")
        .unwrap();
    let h = header.display().to_string();
    assert_merges_like_samtools(&dir, &["--no-PG", "-s", "4", "-h", &h], &sorted, "2");
    assert_merges_like_samtools(&dir, &["--no-PG", "-c", "-p", "-h", &h], &sorted, "2");
    // -b: the listed files come first.
    let list = dir.path("list");
    std::fs::write(&list, format!("{}\n", sorted[1].display())).unwrap();
    let l = list.display().to_string();
    assert_merges_like_samtools(&dir, &["--no-PG", "-s", "4", "-b", &l], &sorted[..1], "2");
}

#[test]
fn bad_inputs_fail_in_one_line_and_leave_no_output() {
    let Some(dir) = with_samtools("merge-bad") else { return };
    let out = dir.path("out.bam");
    let truncated = dir.path("truncated.bam");
    let bytes = std::fs::read(data("small.bam")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for bad in [dir.path("missing.bam"), truncated.clone(), dir.path("")] {
        let mut c = fasthts();
        c.args(["merge", "-o"]).arg(&out).arg(data("small.bam")).arg(&bad);
        let r = run(c);
        assert!(!r.status.success(), "{}", bad.display());
        let errors: Vec<String> = text(&r.stderr).lines().filter(|l| !l.contains("warning")).map(str::to_string).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains(&bad.display().to_string()), "{errors:?}");
        assert!(!out.exists(), "no output left after {}", bad.display());
        assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1, "nothing but the truncated input");
    }
    // Inputs whose @SQ lists disagree: merged onto the union, with samtools'
    // warning (and status) when an input's references change order.
    let a = dir.path("a.sam");
    let b = dir.path("b.sam");
    std::fs::write(&a, "@SQ\tSN:c1\tLN:100\n@SQ\tSN:c2\tLN:100\nr1\t0\tc1\t5\t0\t4M\t*\t0\t0\tACGT\t*\n").unwrap();
    std::fs::write(&b, "@SQ\tSN:c2\tLN:100\n@SQ\tSN:c3\tLN:50\n@SQ\tSN:c1\tLN:90\nr2\t0\tc2\t5\t0\t4M\t*\t0\t0\tACGT\t*\nr3\t16\tc1\t7\t0\t4M\t*\t0\t0\tACGT\t*\n").unwrap();
    assert_merges_like_samtools(&dir, &["--no-PG"], &[a.clone(), b.clone()], "1");
    assert_merges_like_samtools(&dir, &["--no-PG"], &[b, a], "1");
    // No inputs: refused; no arguments at all: the usage on stdout, as samtools.
    let mut c = fasthts();
    c.args(["merge", "-o"]).arg(&out);
    let r = run(c);
    assert_eq!(r.status.code(), Some(1));
    assert!(text(&r.stderr).contains("You must specify at least one (and usually two or more) input files"), "{}", text(&r.stderr));
    let mut c = fasthts();
    c.arg("merge");
    let r = run(c);
    assert_eq!(r.status.code(), Some(0));
    assert!(text(&r.stdout).contains("Usage: fasthts merge"), "{}", text(&r.stdout));
}

#[test]
fn many_inputs_merge_like_samtools() {
    // Forty inputs, one heap.
    let Some(dir) = with_samtools("merge-many") else { return };
    let many = parts(&dir, &data("small.bam"), 40, &[]);
    assert_merges_like_samtools(&dir, &["--no-PG", "-s", "1"], &many, "2");
    assert_merges_like_samtools(&dir, &["--no-PG", "-c", "-p"], &many[..5], "1");
}
