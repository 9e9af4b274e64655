//! `fasthts mosdepth` against mosdepth 0.3.3 (Debian package mosdepth):
//! every output file's text (the .gz files decompressed) for the everyday
//! options, on generated BAMs and the repository's test BAMs, at 1 and 2
//! threads and in windows small enough that reads and pairs cross cuts;
//! then an input without an index and a missing one.

use crate::common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether mosdepth can be run, through [`require`]: under CI=true its
/// absence fails the tests.
fn have_mosdepth() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    require(*FOUND.get_or_init(|| runs("mosdepth", &["--version"])), "mosdepth 0.3.3 (Debian package mosdepth)")
}

/// The files a run with `prefix` wrote, by suffix, with their text.
fn outputs(dir: &Path, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(suffix) = name.strip_prefix(prefix) else { continue };
        if suffix.ends_with(".csi") {
            // mosdepth's indexes of its BED outputs: fasthts writes none.
            continue;
        }
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        let text = if suffix.ends_with(".gz") {
            let mut text = Vec::new();
            flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut text).unwrap();
            text
        } else {
            bytes
        };
        files.push((suffix.to_string(), text));
    }
    files.sort();
    files
}

/// Runs mosdepth and fasthts (at 1 and 2 threads, and 2 threads in windows
/// of `small_window` bases) with `args` on `bam` and compares every output.
/// Returns the number of files compared per run.
fn compare(dir: &TempDir, bam: &Path, args: &[&str], small_window: &str) -> usize {
    for entry in std::fs::read_dir(&dir.0).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("m.") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let mut m = Command::new("mosdepth");
    m.args(args).arg(dir.path("m")).arg(bam);
    let got = run(m);
    assert!(got.status.success(), "mosdepth {args:?} {}: {}", bam.display(), text(&got.stderr));
    let expected = outputs(&dir.0, "m.");
    assert!(expected.len() >= 2, "mosdepth {args:?} wrote {:?}", expected.iter().map(|e| &e.0).collect::<Vec<_>>());
    for extra in [vec!["-t", "1"], vec!["-t", "2"], vec!["-t", "2", "--window-bases", small_window]] {
        let prefix = format!("f{}", extra.join("").replace('-', "_"));
        let mut f = fasthts();
        f.arg("mosdepth").args(&extra).args(args).arg(dir.path(&prefix)).arg(bam);
        let got = run(f);
        assert!(got.status.success(), "fasthts mosdepth {extra:?} {args:?} {}: {}", bam.display(), text(&got.stderr));
        let ours = outputs(&dir.0, &format!("{prefix}."));
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&ours), names(&expected), "{args:?} {extra:?} {}", bam.display());
        for ((name, a), (_, b)) in ours.iter().zip(&expected) {
            if a != b {
                let (a, b) = (text(a), text(b));
                let first = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(a.lines().count().min(b.lines().count()));
                panic!(
                    "{name} differs for {args:?} {extra:?} on {}: line {}: fasthts {:?}, mosdepth {:?}",
                    bam.display(),
                    first + 1,
                    a.lines().nth(first),
                    b.lines().nth(first)
                );
            }
        }
        for (name, _) in &ours {
            std::fs::remove_file(dir.path(&format!("{prefix}.{name}"))).ok();
        }
    }
    expected.len()
}

/// A generated BAM of paired reads (overlapping mates, deletions, skips,
/// clips, duplicates, secondaries, references without reads), indexed.
fn generated(dir: &TempDir, name: &str, args: &[&str], csi: bool) -> PathBuf {
    let sam = fasthts_testgen::cli::sam(args).unwrap();
    let sam_path = dir.path(&format!("{name}.sam"));
    std::fs::write(&sam_path, sam).unwrap();
    let bam = dir.path(&format!("{name}.bam"));
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&sam_path);
    assert!(run(view).status.success());
    let mut idx = Command::new("samtools");
    idx.arg("index").args(if csi { &["-c"][..] } else { &[][..] }).arg(&bam);
    assert!(run(idx).status.success());
    bam
}

fn bed(dir: &TempDir) -> PathBuf {
    let path = dir.path("regions.bed");
    std::fs::write(
        &path,
        "track name=x\n# comment\nchr1\t100\t2000\tg1\nchr1\t50\t60\nchr1\t1500\t40000\tlong\nchr2\t1000\t5000\tg2\textra\n\
         chr2\t1500\t1600\tinner\nchrM\t0\t16569\tmt\nchr9\t1\t2\tnope\nchr3\t10\t20\tempty\nbad line\n",
    )
    .unwrap();
    path
}

const EVERYDAY: &[&[&str]] = &[
    &[],
    &["-n"],
    &["-x"],
    &["--by", "500"],
    &["--by", "500", "-T", "1,5,10"],
    &["--by", "BED"],
    &["--by", "BED", "-T", "0,1,3", "-n"],
    &["-Q", "20"],
    &["-F", "0"],
    &["-F", "0", "-x", "--by", "77"],
    &["-i", "64", "-Q", "30", "--by", "1000"],
    &["-c", "chr2", "--by", "BED", "-T", "2"],
];

#[test]
fn generated_bams_as_mosdepth() {
    if !have_mosdepth() {
        return;
    }
    let Some(dir) = with_samtools("mosdepth-generated") else { return };
    let common = ["--refs", "4", "--ref-len", "60k", "--read-len", "60-300"];
    let mut a = vec!["--seed", "41", "--reads", "6000", "--long-cigar-fraction", "0.0005", "--dup-fraction", "0.05"];
    a.extend(common);
    let mut b = vec!["--seed", "42", "--reads", "3000", "--unmapped-fraction", "0.05", "--single-end-fraction", "0.3"];
    b.extend(common);
    let first = generated(&dir, "first", &a, false);
    let second = generated(&dir, "second", &b, true);
    let bed = bed(&dir);
    let mut compared = 0;
    for bam in [&first, &second] {
        for args in EVERYDAY {
            let args: Vec<&str> = args.iter().map(|a| if *a == "BED" { bed.to_str().unwrap() } else { a }).collect();
            compared += compare(&dir, bam, &args, "1000");
        }
    }
    assert!(compared >= 2 * EVERYDAY.len() * 2);
}

#[test]
fn repository_bams_as_mosdepth() {
    if !have_mosdepth() {
        return;
    }
    let dir = TempDir::new("mosdepth-repo");
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    for name in ["small.bam", "refs_without_reads.bam", "long_ref.bam"] {
        let bam = data.join(name);
        for args in [&[][..], &["-x", "--by", "1000", "-T", "1,10"][..], &["--by", "50000", "-Q", "20", "-n"][..]] {
            compare(&dir, &bam, args, "5000");
        }
    }
}

#[test]
fn without_index_as_mosdepth_exits_2() {
    if !have_mosdepth() {
        return;
    }
    let Some(dir) = with_samtools("mosdepth-noindex") else { return };
    let bam = dir.path("noindex.bam");
    std::fs::copy(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/small.bam"), &bam).unwrap();
    let mut m = Command::new("mosdepth");
    m.arg(dir.path("m")).arg(&bam);
    let theirs = run(m);
    assert_eq!(theirs.status.code(), Some(2), "{}", text(&theirs.stderr));
    let mut f = fasthts();
    f.arg("mosdepth").arg(dir.path("f")).arg(&bam);
    let ours = run(f);
    assert_eq!(ours.status.code(), Some(2));
    let err = text(&ours.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("noindex.bam") && err.contains("must be indexed"), "{err}");
    assert!(outputs(&dir.0, "f.").is_empty(), "outputs left");
}

#[test]
fn missing_input_in_one_line_leaving_nothing() {
    let dir = TempDir::new("mosdepth-missing");
    for args in [vec![], vec!["--by", "500", "-T", "1"], vec!["--by", "/nonexistent/regions.bed"]] {
        let mut f = fasthts();
        let missing = if args.contains(&"/nonexistent/regions.bed") { dir.path("small.bam") } else { dir.path("nope.bam") };
        if !missing.ends_with("nope.bam") {
            std::fs::copy(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/small.bam"), &missing).unwrap();
            std::fs::copy(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/small.bam.bai"), dir.path("small.bam.bai"))
                .unwrap();
        }
        f.arg("mosdepth").args(&args).arg(dir.path("f")).arg(&missing);
        let got = run(f);
        assert!(!got.status.success());
        let err = text(&got.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        let named = if missing.ends_with("nope.bam") { "nope.bam" } else { "/nonexistent/regions.bed" };
        assert!(err.starts_with("fasthts mosdepth: ") && err.contains(named), "{err}");
        assert!(outputs(&dir.0, "f.").is_empty(), "outputs left for {args:?}");
    }
    // --thresholds without --by, as mosdepth refuses it.
    let mut f = fasthts();
    f.args(["mosdepth", "-T", "1"]).arg(dir.path("f")).arg(dir.path("small.bam"));
    let got = run(f);
    assert!(!got.status.success() && text(&got.stderr).contains("--by"));
    assert!(outputs(&dir.0, "f.").is_empty());
}

#[test]
fn cram_as_mosdepth() {
    if !have_mosdepth() {
        return;
    }
    let Some(dir) = with_samtools("mosdepth-cram") else { return };
    let fasta = dir.path("ref.fa");
    let fasta_arg = fasta.to_str().unwrap();
    let sam =
        fasthts_testgen::cli::sam(&["--seed", "5", "--reads", "3000", "--refs", "3", "--ref-len", "40k", "--reference-fasta", fasta_arg])
            .unwrap();
    let sam_path = dir.path("c.sam");
    std::fs::write(&sam_path, sam).unwrap();
    let cram = dir.path("c.cram");
    samtools_cram(&sam_path, &fasta, &cram, &[]);
    for args in [&["-f", fasta_arg][..], &["-f", fasta_arg, "--by", "1000", "-T", "1,3", "-x"][..]] {
        compare(&dir, &cram, args, "3000");
    }
}
