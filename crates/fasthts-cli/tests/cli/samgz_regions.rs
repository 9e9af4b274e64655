//! Regions of a bgzipped SAM (`.sam.gz`) read through the CSI or BAI
//! that samtools index writes for it: `fasthts view` with regions, `-M`,
//! `-L`, `--region-file`, `-P`, `-X` and the filters, and `fasthts depth
//! -r`/`-b`/`-X`, against samtools 1.16 on a generated SAM (several
//! references, unmapped reads placed and unplaced, long deletions and
//! spliced reads spanning region edges, references without reads), at 1
//! and 2 threads; missing, foreign and tabix indexes; plain SAM refused.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One generated SAM, bgzipped twice: indexed with a CSI (`samtools index
/// -c`) and with a BAI (`samtools index`); and the same records as an
/// indexed BAM.
struct Indexed {
    dir: TempDir,
    csi: PathBuf,
    bai: PathBuf,
    bam: PathBuf,
}

/// Reads whose alignments reach far: long deletions and a long skip over
/// region edges and references' ends (1-based POS).
const LONG_REACHING: &[&str] = &[
    "del_long1\t0\tchr1\t900\t60\t50M20000D50M\t*\t0\t0",
    "del_long2\t16\tchr2\t100\t60\t30M45000D70M\t*\t0\t0",
    "spliced1\t0\tchr1\t15000\t60\t20M30000N80M\t*\t0\t0",
    "del_tail\t0\tchr4\t40000\t60\t50M5000D50M\t*\t0\t0",
    "del_short\t0\tchr1\t4990\t60\t5M3000D95M\t*\t0\t0",
];

fn generate(tag: &str) -> Option<Indexed> {
    let dir = with_samtools(tag)?;
    if !require(runs("bgzip", &["--version"]), "bgzip (Debian package tabix)") {
        return None;
    }
    let args = [
        "--seed",
        "43",
        "--reads",
        "4000",
        "--refs",
        "4",
        "--ref-len",
        "60k",
        "--read-len",
        "60-150",
        "--long-cigar-fraction",
        "0.0005",
        "--unmapped-fraction",
        "0.05",
    ];
    let mut sam = fasthts_testgen::cli::sam(&args).unwrap();
    let (seq, qual) = ("ACGT".repeat(25), "I".repeat(100));
    for line in LONG_REACHING {
        sam.extend_from_slice(format!("{line}\t{seq}\t{qual}\n").as_bytes());
    }
    let unsorted = dir.path("unsorted.sam");
    std::fs::write(&unsorted, sam).unwrap();
    let sorted = dir.path("sorted.sam");
    let mut sort = Command::new("samtools");
    sort.args(["sort", "--no-PG", "-O", "sam", "-o"]).arg(&sorted).arg(&unsorted);
    assert!(run(sort).status.success());
    let mut bgzip = Command::new("bgzip");
    bgzip.arg("-c").arg(&sorted);
    let compressed = run(bgzip);
    assert!(compressed.status.success(), "bgzip: {}", text(&compressed.stderr));
    let (csi, bai, bam) = (dir.path("csi.sam.gz"), dir.path("bai.sam.gz"), dir.path("same.bam"));
    std::fs::write(&csi, &compressed.stdout).unwrap();
    std::fs::write(&bai, &compressed.stdout).unwrap();
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&sorted);
    assert!(run(view).status.success());
    for (file, extra) in [(&csi, Some("-c")), (&bai, None), (&bam, None)] {
        let mut idx = Command::new("samtools");
        idx.arg("index").args(extra).arg(file);
        let out = run(idx);
        assert!(out.status.success(), "samtools index {}: {}", file.display(), text(&out.stderr));
    }
    assert!(PathBuf::from(format!("{}.csi", csi.display())).is_file() && PathBuf::from(format!("{}.bai", bai.display())).is_file());
    Some(Indexed { dir, csi, bai, bam })
}

const REGION_SETS: &[&[&str]] = &[
    &["chr1"],
    &["chr1:1000-5000"],
    &["chr1:1,000-5,000", "chr1:4000-9000", "chr1:1000-5000"],
    // Only the long deletion and the spliced read reach here from afar.
    &["chr1:20000-21000", "chr1:40000-44000"],
    &["chr2:40000-45000", "chr2:30000-", "chr1:100-200", "chr2"],
    &["*"],
    &["chr4:100-200", "*", "chr1:5-6"],
    &["chr4:44000-45200"],
    // References without reads, past a reference's end, a name not in the file.
    &["chrM", "chr3", "chrUn_gen1"],
    &["chr1:80990-81000", "chr2:71000-72000", "chrUn_gen2:1-10"],
    &["nope", "chr2:1-40000", "chr1:0-5"],
];

/// view's region options, and -P (mates of the region's reads).
fn option_sets() -> impl Iterator<Item = &'static [&'static str]> {
    crate::view::REGION_OPTION_SETS.iter().copied().chain([&["-P"][..]])
}

#[test]
fn view_regions_of_bgzipped_sam_match_samtools() {
    let Some(g) = generate("samgz-view") else { return };
    let mut lines = 0;
    for regions in REGION_SETS {
        for options in option_sets() {
            lines += crate::view::compare_on(options, &g.csi, regions);
        }
        for options in option_sets().take(3) {
            lines += crate::view::compare_on(options, &g.bai, regions);
        }
    }
    assert!(lines > 20_000, "too little compared: {lines} lines");
    // BED files: -L filters the regions (or the whole file), -M -L and
    // --region-file read the BED intervals through the index.
    let bed = g.dir.path("targets.bed");
    std::fs::write(&bed, "# targets\nchr1\t1000\t5000\nchr1 4000 9000\nchr2\t100\ntrack x\nchr4 20000 30000\nchrM 0 100\nchrZ 5 10\n").unwrap();
    let bed = bed.to_str().unwrap();
    let sets: &[(&[&str], &[&str])] = &[
        (&["-L", bed], &["chr1:3000-20000", "chr4"]),
        (&["-L", bed, "-c"], &["chr1", "*"]),
        (&["-M", "-L", bed], &[]),
        (&["--region-file", bed], &[]),
        (&["--region-file", bed, "-b"], &["chr4:29000-40000", "chrM"]),
        (&["-M", "-L", bed, "-c"], &["chr1:4500-4600", "chr2", "chr4:25000-30200", "nope", "chr1:8000-40000"]),
        (&["-P", "-L", bed], &[]),
        (&["-M", "-L", bed], &["chr3"]),
    ];
    for (options, regions) in sets {
        crate::view::compare_on(options, &g.csi, regions);
        crate::view::compare_on(options, &g.bai, regions);
    }
}

/// `-X`: the index named after the input (a CSI or a BAI, the input
/// having none beside it); the records are those of the same BAM's regions.
#[test]
fn view_explicit_index_and_the_same_records_as_the_bam() {
    let Some(g) = generate("samgz-view-index") else { return };
    let bare = g.dir.path("bare.sam.gz");
    std::fs::copy(&g.csi, &bare).unwrap();
    for index in [format!("{}.csi", g.csi.display()), format!("{}.bai", g.bai.display())] {
        for options in [&[][..], &["-c"], &["-M", "-h"]] {
            let mut args = vec!["--no-PG"];
            args.extend_from_slice(options);
            args.extend(["-X", bare.to_str().unwrap(), &index, "chr1:100-20000", "chr2", "*"]);
            crate::view::compare(&args);
        }
    }
    for regions in REGION_SETS {
        let ours = |input: &Path| {
            let mut c = fasthts();
            c.args(["view", "--no-PG", "-@", "2"]).arg(input).args(*regions);
            run(c)
        };
        let (sam, bam) = (ours(&g.csi), ours(&g.bam));
        assert!(sam.status.success() && bam.status.success(), "{regions:?}: {}", text(&sam.stderr));
        assert!(sam.stdout == bam.stdout, "{regions:?}: the SAM.gz's records differ from the BAM's");
    }
}

#[test]
fn depth_regions_of_bgzipped_sam_match_samtools() {
    let Some(g) = generate("samgz-depth") else { return };
    let bed = g.dir.path("regions.bed");
    std::fs::write(&bed, "chr1\t1000\t5000\nchr1 4000 9000\nchr2\t100\nchr4 20000 30000\nchrZ 5 10\n").unwrap();
    let bed = bed.to_str().unwrap();
    let sets: &[&[&str]] = &[
        &["-r", "chr1"],
        &["-a", "-r", "chr1:1000-22000"],
        &["-aa", "-r", "chr2:1,000-2,000"],
        &["-aa", "-r", "chr3"],
        &["-a", "-r", "chrUn_gen1:5-10"],
        &["-r", "chr2:30000-"],
        &["-a", "-r", "chr4:44000-"],
        &["-s", "-r", "chr1:1000-40000"],
        &["-a", "-J", "-r", "chr1:20000-21000"],
        &["-r", "*"],
        &["-b", bed],
        &["-a", "-b", bed, "-r", "chr1:2000-3000"],
        &["-Q", "20", "-q", "10", "-r", "chr1:4000-9000"],
    ];
    let mut rows = 0;
    for args in sets {
        rows += crate::depth::compare(args, &[&g.csi]);
        rows += crate::depth::compare(args, &[&g.bai]);
        rows += crate::depth::compare(args, &[&g.csi, &g.bam]);
    }
    assert!(rows > 50_000, "too little compared: {rows} rows");
    // -X: the named indexes, a CSI and a BAI.
    let (a, b) = (g.dir.path("a.sam.gz"), g.dir.path("b.sam.gz"));
    std::fs::copy(&g.csi, &a).unwrap();
    std::fs::copy(&g.bai, &b).unwrap();
    let (ai, bi) = (PathBuf::from(format!("{}.csi", g.csi.display())), PathBuf::from(format!("{}.bai", g.bai.display())));
    for args in [&["-X", "-H", "-a", "-r", "chr2:100-5000"][..], &["-X", "-r", "chr1"]] {
        crate::depth::compare(args, &[&a, &b, &ai, &bi]);
    }
}

fn fasthts_run(args: &[&str]) -> Output {
    let mut c = fasthts();
    c.args(args);
    run(c)
}

/// An error: one line naming `named`, a non-zero exit and nothing on
/// standard output, where samtools fails too.
fn fails_as_samtools(args: &[&str], named: &str) {
    let mut c = Command::new("samtools");
    c.args(args);
    let theirs = run(c);
    assert!(!theirs.status.success(), "samtools {args:?} succeeded");
    let got = fasthts_run(args);
    let err = text(&got.stderr);
    assert!(!got.status.success() && got.stdout.is_empty(), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(named), "{args:?}: {err} does not name {named}");
}

#[test]
fn missing_foreign_and_tabix_indexes_and_plain_sam() {
    let Some(g) = generate("samgz-bad-index") else { return };
    let bare = g.dir.path("bare.sam.gz");
    std::fs::copy(&g.csi, &bare).unwrap();
    let s = |p: &Path| p.display().to_string();
    let bare_s = s(&bare);
    // No index beside it.
    fails_as_samtools(&["view", &bare_s, "chr1"], &bare_s);
    fails_as_samtools(&["view", "-c", "-M", &bare_s, "chr1"], &bare_s);
    fails_as_samtools(&["depth", "-r", "chr1", &bare_s], &bare_s);
    let err = text(&fasthts_run(&["view", &bare_s, "chr1"]).stderr);
    assert!(err.contains("cannot load index"), "{err}");
    // Beside it under htslib's other name: the extension replaced.
    let renamed = g.dir.path("renamed.sam.gz");
    std::fs::copy(&g.csi, &renamed).unwrap();
    std::fs::copy(format!("{}.csi", g.csi.display()), g.dir.path("renamed.sam.csi")).unwrap();
    crate::view::compare_on(&["-c"], &renamed, &["chr1", "chr2:100-5000"]);
    crate::depth::compare(&["-r", "chr2:100-5000"], &[&renamed]);
    // A named index that is not there, or is another file's (another
    // number of references).
    let other = g.dir.path("other.bam");
    std::fs::copy(data("long_ref.bam"), &other).unwrap();
    let mut idx = Command::new("samtools");
    idx.args(["index", "-c"]).arg(&other);
    assert!(run(idx).status.success());
    let foreign = format!("{}.csi", other.display());
    let missing = s(&g.dir.path("none.csi"));
    fails_as_samtools(&["view", "-X", &bare_s, &missing, "chr1"], &missing);
    let got = fasthts_run(&["view", "-X", &bare_s, &foreign, "chr1"]);
    let err = text(&got.stderr);
    assert!(!got.status.success() && got.stdout.is_empty() && err.lines().count() == 1 && err.contains(&foreign), "{err}");
    let got = fasthts_run(&["depth", "-X", "-r", "chr1", &bare_s, &foreign]);
    assert!(!got.status.success() && text(&got.stderr).contains(&foreign), "{}", text(&got.stderr));
    // A tabix index: samtools reads one only when named, and numbers its
    // references in the order of the data, not the header's (chr3 and
    // chr4 get mixed up); fasthts refuses it in one line.
    if require(runs("tabix", &["--version"]), "tabix (Debian package tabix)") {
        let mut tabix = Command::new("tabix");
        tabix.args(["-p", "sam", "-f"]).arg(&bare);
        assert!(run(tabix).status.success());
        let tbi = format!("{bare_s}.tbi");
        let got = fasthts_run(&["view", "-X", &bare_s, &tbi, "chr1"]);
        let err = text(&got.stderr);
        assert!(!got.status.success() && got.stdout.is_empty() && err.contains(&tbi) && err.contains("tabix"), "{err}");
        // Beside the file, samtools does not look for it.
        fails_as_samtools(&["view", &bare_s, "chr1"], &bare_s);
    }
    // Plain SAM: refused with regions, as samtools refuses it.
    let plain = g.dir.path("plain.sam");
    let mut c = Command::new("bgzip");
    c.arg("-dc").arg(&g.csi);
    std::fs::write(&plain, run(c).stdout).unwrap();
    let plain_s = s(&plain);
    fails_as_samtools(&["view", &plain_s, "chr1"], &plain_s);
    let err = text(&fasthts_run(&["view", &plain_s, "chr1"]).stderr);
    assert!(err.contains("random alignment retrieval only works for indexed SAM.gz, BAM or CRAM files"), "{err}");
    fails_as_samtools(&["depth", "-r", "chr1", &plain_s], &plain_s);
    // A bgzipped SAM piped to standard input has no index to read regions
    // through: one line saying so, nothing written (`cat` may see the
    // pipe close early, so it feeds the pipe rather than the test).
    let mut cat = Command::new("cat");
    cat.arg(&g.csi).stdout(std::process::Stdio::piped());
    let mut cat = cat.spawn().unwrap();
    let mut c = fasthts();
    c.args(["view", "-", "chr1"]).stdin(cat.stdout.take().unwrap());
    let got = run(c);
    let _ = cat.wait();
    let err = text(&got.stderr);
    assert!(!got.status.success() && got.stdout.is_empty() && err.lines().count() == 1, "{err}");
    assert!(err.contains("view: -: ") && err.contains("standard input cannot be"), "{err}");
}

/// A region before a record past BAM's 32-bit positions is read as
/// samtools reads it; a region holding such a record is printed as
/// samtools prints it to SAM, and refused in one line for a BAM output
/// (as samtools refuses it).
#[test]
fn regions_before_positions_past_2_31_as_samtools() {
    let Some(dir) = with_samtools("samgz-wide") else { return };
    if !require(runs("bgzip", &["--version"]), "bgzip (Debian package tabix)") {
        return;
    }
    let sam = "@SQ\tSN:big\tLN:3000000000\nr1\t0\tbig\t100\t60\t4M\t*\t0\t0\tACGT\tIIII\nr2\t0\tbig\t2500000000\t60\t4M\t*\t0\t0\tACGT\tIIII\n";
    let mut bgzip = Command::new("bgzip");
    bgzip.arg("-c");
    let compressed = run_with_stdin(bgzip, sam.as_bytes().to_vec());
    let file = dir.path("big.sam.gz");
    std::fs::write(&file, compressed.stdout).unwrap();
    let mut idx = Command::new("samtools");
    idx.args(["index", "-c"]).arg(&file);
    assert!(run(idx).status.success());
    crate::view::compare_on(&[], &file, &["big:1-1000"]);
    crate::depth::compare(&["-a", "-r", "big:90-110"], &[&file]);
    assert_eq!(crate::view::compare_on(&[], &file, &["big:2400000000-2600000000"]), 1, "r2, printed by both");
    let got = fasthts_run(&["view", "-b", file.to_str().unwrap(), "big:2400000000-2600000000"]);
    let err = text(&got.stderr);
    assert!(!got.status.success() && err.lines().count() == 1 && err.contains("too large"), "{err}");
    let mut samtools = Command::new("samtools");
    samtools.args(["view", "-b"]).arg(&file).arg("big:2400000000-2600000000");
    assert!(!run(samtools).status.success(), "samtools refuses it too");
}
