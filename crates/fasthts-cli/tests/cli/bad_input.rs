//! Broken input: every command answers with one clear error line and a
//! non-zero exit, within seconds, never a panic, and leaves no output.

// Issue 19: outputs, streams, signals, threads, memory limits.
mod outputs;

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Case {
    name: String,
    path: PathBuf,
}

/// Damaged variants of a small valid BAM.
fn corpus(dir: &TempDir) -> Vec<Case> {
    let good = std::fs::read(data("small.bam")).unwrap();
    let mut cases = Vec::new();
    let mut add = |name: String, bytes: &[u8]| {
        let path = dir.path(&format!("{name}.bam"));
        std::fs::write(&path, bytes).unwrap();
        cases.push(Case { name, path });
    };
    add("empty".into(), b"");
    add("text".into(), b"@HD\tVN:1.6\nthis is not a BAM file\n");
    add("plain_gzip".into(), &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    add("only_magic".into(), &good[..10]);
    // Truncations at many offsets, inside the header block, inside data
    // blocks, and just before the EOF marker.
    for cut in [1, 17, 18, 100, good.len() / 7, good.len() / 3, good.len() / 2, good.len() - 29] {
        add(format!("cut{cut}"), &good[..cut]);
    }
    // Byte flips in the header block, in compressed data, in a CRC.
    for pos in [20, 60, good.len() / 4, good.len() / 2 + 3, good.len() - 40] {
        let mut b = good.clone();
        b[pos] ^= 0x5a;
        add(format!("flip{pos}"), &b);
    }
    cases
}

/// Checks a failed run: non-zero exit, no panic, and exactly one
/// non-warning line on stderr that names the command.
fn assert_clean_failure(what: &str, out: &std::process::Output) {
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{what}: succeeded on bad input");
    assert_eq!(out.status.code(), Some(1), "{what}: exit status {:?}, stderr {err}", out.status);
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{what}: panic: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| !l.contains("warning:")).collect();
    assert_eq!(errors.len(), 1, "{what}: expected one error line, got {err:?}");
    assert!(errors[0].starts_with("fasthts "), "{what}: {err:?}");
}

fn run_quick(args: &[&str], file: &Path) -> std::process::Output {
    let mut c = fasthts();
    c.args(args).arg(file);
    run_with_timeout(c, Duration::from_secs(20))
}

#[test]
fn damaged_files_fail_cleanly_in_every_command() {
    let dir = TempDir::new("bad");
    for case in corpus(&dir) {
        let out = run_quick(&["flagstat"], &case.path);
        // A cut just before the EOF marker leaves complete records: samtools
        // accepts that with a warning, and so do we.
        if case.name == format!("cut{}", std::fs::metadata(data("small.bam")).unwrap().len() - 29) {
            continue;
        }
        assert_clean_failure(&format!("flagstat {}", case.name), &out);
        assert!(out.stdout.is_empty(), "flagstat {}: printed output on failure", case.name);
        let out = run_quick(&["idxstats"], &case.path);
        assert_clean_failure(&format!("idxstats {}", case.name), &out);
        let out = run_quick(&["index"], &case.path);
        assert_clean_failure(&format!("index {}", case.name), &out);
        let leftovers: Vec<_> = std::fs::read_dir(&dir.0)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("{}.bam.", case.name)) || n.starts_with(&format!(".{}.bam", case.name)))
            .collect();
        assert!(leftovers.is_empty(), "index {}: left {leftovers:?}", case.name);
    }
}

#[test]
fn missing_files_and_directories_fail_cleanly() {
    let dir = TempDir::new("missing");
    for cmd in ["flagstat", "idxstats", "index"] {
        assert_clean_failure(&format!("{cmd} missing"), &run_quick(&[cmd], &dir.path("nope.bam")));
        assert_clean_failure(&format!("{cmd} directory"), &run_quick(&[cmd], &dir.0));
    }
}

#[test]
fn truncation_before_eof_marker_warns_like_samtools() {
    let dir = TempDir::new("noeof");
    let good = std::fs::read(data("small.bam")).unwrap();
    let p = dir.path("noeof.bam");
    std::fs::write(&p, &good[..good.len() - 28]).unwrap();
    let out = run_quick(&["flagstat"], &p);
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("EOF marker is absent"), "{}", text(&out.stderr));
}

#[test]
fn unsorted_input_is_refused_by_index_and_leaves_nothing() {
    let dir = TempDir::new("unsorted");
    let p = dir.path("unsorted.bam");
    std::fs::copy(data("unsorted.bam"), &p).unwrap();
    let out = run_quick(&["index"], &p);
    assert_clean_failure("index unsorted", &out);
    let err = text(&out.stderr);
    assert!(err.contains("not continuous") || err.contains("nsorted"), "{err}");
    assert!(!dir.path("unsorted.bam.bai").exists());
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1, "temporary files left behind");
}

#[test]
fn bai_refuses_positions_past_2_pow_29_but_csi_works() {
    let dir = TempDir::new("longref");
    let p = dir.path("long.bam");
    std::fs::copy(data("long_ref.bam"), &p).unwrap();
    let out = run_quick(&["index"], &p);
    assert_clean_failure("index -b long_ref", &out);
    assert!(text(&out.stderr).contains("csi"), "{}", text(&out.stderr));
    let out = run_quick(&["index", "-c"], &p);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.path("long.bam.csi").exists());
}

#[test]
fn index_of_another_bam_is_refused_not_read_through() {
    // A BAM whose header lists no references, beside an index with seven:
    // snp-pileup used to find none of the sites' contigs and print an empty
    // pileup with exit status 0.
    let dir = TempDir::new("otherindex");
    let p = dir.path("x.bam");
    let header = fasthts::bam::Header { text: b"@HD\tVN:1.6\tSO:coordinate\n".to_vec(), references: vec![] };
    std::fs::write(&p, fasthts::bgzf::compress_all(&header.to_bytes(), 6)).unwrap();
    std::fs::copy(data("small.bam.bai"), dir.path("x.bam.bai")).unwrap();
    let vcf = dir.path("s.vcf");
    std::fs::write(&vcf, "chr1\t1000\t.\tA\tC\n").unwrap();
    let out = dir.path("out.csv");
    let mut c = fasthts();
    c.arg("snp-pileup").arg(&vcf).arg(&out).arg(&p);
    let run = run_with_timeout(c, Duration::from_secs(20));
    assert_clean_failure("snp-pileup with another BAM's index", &run);
    assert!(text(&run.stderr).contains("does not match"), "{}", text(&run.stderr));
    assert!(!out.exists());
    // idxstats would report the other file's counts.
    let p = dir.path("y.bam");
    std::fs::copy(data("small.bam"), &p).unwrap();
    std::fs::copy(data("refs_without_reads.bam.bai"), dir.path("y.bam.bai")).unwrap();
    assert_clean_failure("idxstats with another BAM's index", &run_quick(&["idxstats"], &p));
}

#[test]
fn kmer_count_that_cannot_save_leaves_no_info_file() {
    // The table cannot be saved (its name is a directory): the .info file
    // written while counting went on being left behind.
    let dir = TempDir::new("kmerinfo");
    let fq = dir.path("r.fq");
    std::fs::write(&fq, "@r\nACGTACGTACGTACGTACGTACGTACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIIIIIII\n").unwrap();
    let out = dir.path("out.ct");
    std::fs::create_dir_all(out.join("occupied")).unwrap();
    let mut c = fasthts();
    c.args(["kmer", "count", "-q", "-x", "10000"]).arg(&out).arg(&fq);
    let run = run_with_timeout(c, Duration::from_secs(20));
    assert!(!run.status.success(), "{}", text(&run.stderr));
    assert!(!text(&run.stderr).contains("panicked"));
    let mut left: Vec<String> = std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["out.ct", "r.fq"], "left behind");
}
