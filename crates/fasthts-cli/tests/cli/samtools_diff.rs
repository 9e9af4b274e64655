//! Differential tests: fasthts flagstat, index and idxstats against
//! samtools 1.16 on every BAM of the corpus (repository fixtures, the shared
//! golden pair, samtools' own test files), at 1 and 4 threads.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn samtools(args: &[&str], file: &Path) -> std::process::Output {
    let mut c = Command::new("samtools");
    c.args(args).arg(file);
    run(c)
}

#[test]
fn flagstat_matches_samtools_in_every_format_and_thread_count() {
    if !have_samtools() {
        return;
    }
    let corpus = corpus();
    assert!(corpus.len() >= 8, "corpus too small: {corpus:?}");
    let mut compared = 0;
    for file in &corpus {
        for fmt in ["default", "json", "tsv"] {
            let expected = samtools(&["flagstat", "-O", fmt], file);
            for threads in ["1", "4"] {
                let mut c = fasthts();
                c.args(["flagstat", "-@", threads, "-O", fmt]).arg(file);
                let got = run(c);
                assert_eq!(
                    got.status.success(),
                    expected.status.success(),
                    "{} -O {fmt} -@ {threads}: exit status differs; fasthts stderr: {}",
                    file.display(),
                    text(&got.stderr)
                );
                assert!(
                    got.stdout == expected.stdout,
                    "{} -O {fmt} -@ {threads}:\n--- samtools\n{}--- fasthts\n{}",
                    file.display(),
                    text(&expected.stdout),
                    text(&got.stdout)
                );
                compared += 1;
            }
        }
    }
    eprintln!("compared {compared} flagstat outputs");
}

/// Copies `file` into `dir` without any index, so each tool makes its own.
fn private_copy(dir: &TempDir, file: &Path, name: &str) -> std::path::PathBuf {
    let p = dir.path(name);
    std::fs::copy(file, &p).unwrap();
    p
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    fasthts::bgzf::decompress_all(bytes).expect("CSI is BGZF")
}

#[test]
fn index_matches_samtools_byte_for_byte_and_idxstats_agree() {
    let Some(dir) = with_samtools("index") else { return };
    if !require(fasthts::bgzf::have_system_libdeflate(), "the system libdeflate samtools links (Debian package libdeflate0)") {
        return;
    }
    let mut indexed = 0;
    for (i, file) in corpus().iter().enumerate() {
        let bam = private_copy(&dir, file, &format!("in{i}.bam"));
        for mode in [&[][..], &["-c"][..], &["-m", "12"][..]] {
            let ours = dir.path(&format!("in{i}.ours.idx"));
            let theirs = dir.path(&format!("in{i}.theirs.idx"));
            for threads in ["1", "4"] {
                let _ = std::fs::remove_file(&ours);
                let mut c = fasthts();
                c.arg("index").args(mode).args(["-@", threads, "-o"]).arg(&ours).arg(&bam);
                let got = run(c);
                let mut s = Command::new("samtools");
                s.arg("index").args(mode).arg(&bam).arg(&theirs);
                let expected = run(s);
                assert_eq!(
                    got.status.success(),
                    expected.status.success(),
                    "{} index {mode:?}: fasthts stderr {:?}, samtools stderr {:?}",
                    file.display(),
                    text(&got.stderr),
                    text(&expected.stderr)
                );
                if !got.status.success() {
                    assert!(!ours.exists(), "failed index left a file behind");
                    continue;
                }
                let (a, b) = (std::fs::read(&ours).unwrap(), std::fs::read(&theirs).unwrap());
                if mode.is_empty() {
                    assert!(a == b, "{}: BAI differs from samtools'", file.display());
                } else {
                    assert!(gunzip(&a) == gunzip(&b), "{} {mode:?}: CSI content differs", file.display());
                    // The same bytes too: the CSI is compressed by the libdeflate samtools links.
                    assert!(a == b, "{} {mode:?}: CSI bytes differ from samtools' ({} vs {})", file.display(), a.len(), b.len());
                }
                indexed += 1;
            }
        }
        // idxstats with each tool's own index.
        let ours = private_copy(&dir, file, &format!("own{i}.bam"));
        let mut c = fasthts();
        c.arg("index").arg(&ours);
        if !run(c).status.success() {
            continue;
        }
        let theirs = private_copy(&dir, file, &format!("sam{i}.bam"));
        assert!(samtools(&["index"], &theirs).status.success());
        let expected = samtools(&["idxstats"], &theirs);
        let mut c = fasthts();
        c.arg("idxstats").arg(&ours);
        let got = run(c);
        assert!(got.status.success(), "idxstats failed: {}", text(&got.stderr));
        assert!(
            got.stdout == expected.stdout,
            "{}: idxstats differ:\n{}\nvs\n{}",
            file.display(),
            text(&got.stdout),
            text(&expected.stdout)
        );
        // samtools itself, reading regions through fasthts' index, sees what
        // it sees through its own.
        for region in regions_of(&expected.stdout) {
            let mut a = Command::new("samtools");
            a.args(["view", "-c"]).arg(&ours).arg(&region);
            let mut b = Command::new("samtools");
            b.args(["view", "-c"]).arg(&theirs).arg(&region);
            let (a, b) = (run(a), run(b));
            assert_eq!(text(&a.stdout), text(&b.stdout), "{} region {region}", file.display());
        }
    }
    eprintln!("compared {indexed} indexes");
    assert!(indexed >= 10);
}

/// A few regions per reference named in idxstats output.
fn regions_of(idxstats: &[u8]) -> Vec<String> {
    let mut v = Vec::new();
    for line in text(idxstats).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 4 || f[0] == "*" || f[2] == "0" {
            continue;
        }
        let len: u64 = f[1].parse().unwrap_or(0);
        v.push(f[0].to_string());
        for (a, b) in [(1, len / 3), (len / 2, len / 2 + 1000), (len.saturating_sub(5000).max(1), len)] {
            if b >= a && a >= 1 {
                v.push(format!("{}:{a}-{b}", f[0]));
            }
        }
    }
    v
}

#[test]
fn flagstat_through_the_index_equals_a_sequential_scan() {
    let Some(dir) = with_samtools("regions") else { return };
    for (i, file) in corpus().iter().enumerate() {
        let bam = private_copy(&dir, file, &format!("r{i}.bam"));
        let mut c = fasthts();
        c.args(["flagstat", "-O", "json"]).arg(&bam);
        let sequential = run(c);
        let mut c = fasthts();
        c.arg("index").arg(&bam);
        if !run(c).status.success() {
            continue;
        }
        for threads in ["1", "2", "4"] {
            let mut c = fasthts();
            c.args(["flagstat", "-O", "json", "-@", threads]).arg(&bam);
            let by_region = run(c);
            assert!(by_region.stdout == sequential.stdout, "{} at -@ {threads}", file.display());
        }
    }
}

/// Whether a SAM record line has a POS or PNEXT past 2^31 or a TLEN
/// outside 32 bits (what BAM cannot hold).
fn has_large_position(line: &str) -> bool {
    let f: Vec<&str> = line.split('\t').collect();
    !line.starts_with('@')
        && f.len() > 8
        && (f[3].parse::<i64>().is_ok_and(|p| p > 1 << 31)
            || f[7].parse::<i64>().is_ok_and(|p| p > 1 << 31)
            || f[8].parse::<i64>().is_ok_and(|t| i32::try_from(t).is_err()))
}

/// samtools' own SAM test files, those with positions past 2^31 included.
fn sam_corpus() -> Vec<std::path::PathBuf> {
    let Some(samtools_tests) = samtools_test_data() else { return Vec::new() };
    files_under(&samtools_tests, ".sam")
}

#[test]
fn flagstat_of_sam_matches_samtools() {
    if !have_samtools() {
        return;
    }
    let files = sam_corpus();
    let (mut compared, mut large) = (0, 0);
    for file in &files {
        let expected = samtools(&["flagstat"], file);
        let mut c = fasthts();
        c.arg("flagstat").arg(file);
        let got = run(c);
        // Positions past 2^31 included: flagstat counts them as samtools does.
        if text(&std::fs::read(file).unwrap_or_default()).lines().any(has_large_position) {
            large += 1;
        }
        assert_eq!(got.status.success(), expected.status.success(), "{}: {}", file.display(), text(&got.stderr));
        assert!(got.stdout == expected.stdout, "{}", file.display());
        compared += 1;
    }
    eprintln!("compared flagstat on {compared} SAM files, {large} with positions past 2^31");
    assert!(files.is_empty() || (compared > 100 && large >= 7), "{compared} files, {large} with large positions");
}

#[test]
fn quickcheck_matches_samtools() {
    let Some(dir) = with_samtools("quickcheck") else { return };
    let good = std::fs::read(data("small.bam")).unwrap();
    let mut files: Vec<std::path::PathBuf> = corpus();
    let mut add = |name: &str, bytes: &[u8]| {
        let p = dir.path(name);
        std::fs::write(&p, bytes).unwrap();
        files.push(p);
    };
    add("empty.bam", b"");
    add("text.txt", b"this is not a BAM file\n");
    add("cut.bam", &good[..good.len() / 3]);
    add("noeof.bam", &good[..good.len() - 28]);
    add("noref.sam", b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI\n");
    files.push(dir.path("missing.bam"));
    files.push(dir.0.clone());
    for flags in [&["-v"][..], &["-u"][..], &["-q", "-v"][..]] {
        for f in &files {
            let mut c = fasthts();
            c.arg("quickcheck").args(flags).arg(f);
            let got = run(c);
            let mut s = Command::new("samtools");
            s.arg("quickcheck").args(flags).arg(f);
            let expected = run(s);
            assert_eq!(got.status.code(), expected.status.code(), "{} {flags:?}", f.display());
            assert_eq!(text(&got.stdout), text(&expected.stdout), "{} {flags:?}", f.display());
            assert_eq!(text(&got.stderr), text(&expected.stderr), "{} {flags:?}", f.display());
        }
    }
}
