//! SAM with positions past 2^31 and references longer than BAM can
//! describe (issue 21): flagstat and idxstats count them as samtools 1.16
//! does; sort refuses BAM output of them with samtools' words.

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::path::Path;
use std::process::{Command, Output};

fn tool(program: Command, args: &[&str], file: &Path) -> Output {
    let mut c = program;
    c.args(args).arg(file);
    run(c)
}

/// A SAM over two references of 5 and 3 Gb, with reads, mates and
/// template lengths past 2^31 and 2^32, unmapped reads placed there, and
/// some without coordinates.
fn large_sam(rng: &mut Rng) -> String {
    let mut s = String::from("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:big\tLN:5000000000\n@SQ\tSN:mid\tLN:3000000000\n");
    for (name, len) in [("big", 5_000_000_000u64), ("mid", 3_000_000_000)] {
        let mut pos = 1u64;
        for i in 0..300 {
            pos += rng.below(len / 320);
            let mate = pos + rng.below(1 << 20);
            let flag = [99u32, 147, 163, 83, 0, 16, 4 | 1 | 32, 1024 | 99, 512 | 16][rng.below(9) as usize];
            let tlen = if flag & 1 != 0 { (mate - pos + 100) as i64 } else { 0 };
            let mate_ref = if flag & 1 != 0 { "=" } else { "*" };
            let pnext = if flag & 1 != 0 { mate } else { 0 };
            s.push_str(&format!("r{name}{i}\t{flag}\t{name}\t{pos}\t{}\t4M\t{mate_ref}\t{pnext}\t{tlen}\tACGT\tIIII\n", rng.below(61)));
        }
    }
    for i in 0..20 {
        s.push_str(&format!("u{i}\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\tIIII\n"));
    }
    s
}

#[test]
fn flagstat_and_idxstats_of_positions_past_2_31_match_samtools() {
    let Some(dir) = with_samtools("large-pos") else { return };
    let mut files = Vec::new();
    let mut rng = Rng::new(21);
    for i in 0..3 {
        let p = dir.path(&format!("large{i}.sam"));
        std::fs::write(&p, large_sam(&mut rng)).unwrap();
        files.push(p);
    }
    if let Some(t) = samtools_test_data() {
        files.extend(files_under(&t.join("large_pos"), ".sam"));
    }
    for file in &files {
        for args in [&["flagstat"][..], &["flagstat", "-O", "tsv"], &["idxstats"]] {
            let got = tool(fasthts(), args, file);
            let expected = tool(Command::new("samtools"), args, file);
            assert_eq!(got.status.success(), expected.status.success(), "{args:?} {}: {}", file.display(), text(&got.stderr));
            assert!(got.stdout == expected.stdout, "{args:?} {}:\n{}\nvs\n{}", file.display(), text(&got.stdout), text(&expected.stdout));
        }
    }
    assert!(files.len() >= 3);
}

#[test]
fn bam_output_of_very_long_references_is_refused_as_samtools_refuses_it() {
    let Some(dir) = with_samtools("large-pos-bam") else { return };
    let sam = dir.path("large.sam");
    std::fs::write(&sam, large_sam(&mut Rng::new(5))).unwrap();
    let out = dir.path("out.bam");
    let mut c = fasthts();
    c.args(["sort", "-o"]).arg(&out).arg(&sam);
    let got = run(c);
    let mut s = Command::new("samtools");
    s.args(["sort", "-o"]).arg(&out).arg(&sam);
    let expected = run(s);
    assert_eq!((got.status.code(), expected.status.code()), (Some(1), Some(1)));
    let ours = text(&got.stderr);
    assert_eq!(ours.strip_prefix("fasthts sort: "), text(&expected.stderr).strip_prefix("samtools sort: "), "{ours}");
    assert!(!out.exists(), "no output left");
}

#[test]
fn csi_of_a_bgzipped_sam_with_large_positions_is_samtools_byte_for_byte() {
    let Some(dir) = with_samtools("large-pos-csi") else { return };
    if !require(fasthts::bgzf::have_system_libdeflate(), "the system libdeflate samtools links") {
        return;
    }
    let mut texts = vec![large_sam(&mut Rng::new(9)).into_bytes()];
    if let Some(t) = samtools_test_data() {
        for name in ["longref.sam", "longref2.sam"] {
            texts.push(std::fs::read(t.join("large_pos").join(name)).unwrap());
        }
    }
    for (i, sam) in texts.iter().enumerate() {
        let gz = dir.path(&format!("l{i}.sam.gz"));
        std::fs::write(&gz, fasthts::bgzf::compress_all(sam, 6)).unwrap();
        for mode in [&["-c"][..], &["-m", "12"], &["-b"]] {
            let (a, b) = (dir.path("ours.idx"), dir.path("theirs.idx"));
            let _ = (std::fs::remove_file(&a), std::fs::remove_file(&b));
            let mut c = fasthts();
            c.arg("index").args(mode).arg("-o").arg(&a).arg(&gz);
            let got = run(c);
            let mut s = Command::new("samtools");
            s.arg("index").args(mode).arg(&gz).arg(&b);
            let expected = run(s);
            // A BAI cannot hold these positions: both refuse it.
            let want = mode != ["-b"];
            assert_eq!((got.status.success(), expected.status.success()), (want, want), "{mode:?} l{i}: {}", text(&got.stderr));
            if want {
                assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "{mode:?} l{i}: index bytes differ");
            } else {
                assert!(text(&got.stderr).contains("cannot be stored in a bai index") && !a.exists());
            }
        }
    }
}
