//! khmer's mRNAseq digital-normalisation protocol end to end (the worked
//! example in docs/kmer-protocol.md): interleave-reads →
//! normalize-by-median -p → filter-abund -V → extract-paired-reads →
//! split-paired-reads, run with `fasthts kmer ...` and with khmer 3.0's
//! scripts on the same generated pairs; every file each step writes is
//! compared byte for byte. khmer is required under CI=true.

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};


/// The protocol's steps: (fasthts subcommand, khmer script, arguments).
const STEPS: &[(&str, &str, &[&str])] = &[
    ("interleave-reads", "interleave-reads.py", &["R1.fq.gz", "R2.fq.gz", "-o", "reads.pe.fq"]),
    ("normalize", "normalize-by-median.py", &["-p", "-k", "20", "-C", "20", "-M", "1e6", "-s", "normC20k20.ct", "reads.pe.fq"]),
    ("filter-abund", "filter-abund.py", &["-V", "normC20k20.ct", "reads.pe.fq.keep"]),
    ("extract-paired-reads", "extract-paired-reads.py", &["reads.pe.fq.keep.abundfilt"]),
    ("split-paired-reads", "split-paired-reads.py", &["reads.pe.fq.keep.abundfilt.pe"]),
];

/// Mates from both strands of a 20 kb transcriptome-like sequence, with
/// highly and lowly covered parts, a few errors and Ns, gzip-compressed.
fn write_pairs(dir: &Path, pairs: usize) {
    let mut rng = Rng::new(0x6d52_4e41);
    let genome: Vec<u8> = (0..20_000).map(|_| b"ACGT"[rng.below(4) as usize]).collect();
    let comp = |b: u8| match b {
        b'A' => b'T',
        b'C' => b'G',
        b'G' => b'C',
        b'T' => b'A',
        other => other,
    };
    let mut r1 = Vec::new();
    let mut r2 = Vec::new();
    for i in 0..pairs {
        // the first 2 kb is ten times as covered as the rest
        let start = if rng.below(2) == 0 { rng.below(2_000 - 300) } else { rng.below(20_000 - 300) } as usize;
        let fragment = &genome[start..start + 300];
        let noisy = |s: &[u8], rng: &mut Rng| -> Vec<u8> {
            s.iter()
                .map(|&c| {
                    let r = rng.unit();
                    if r < 0.005 {
                        b"ACGT"[rng.below(4) as usize]
                    } else if r < 0.007 {
                        b'N'
                    } else {
                        c
                    }
                })
                .collect()
        };
        let first = noisy(&fragment[..100], &mut rng);
        let second: Vec<u8> = noisy(&fragment[200..], &mut rng).iter().rev().map(|&c| comp(c)).collect();
        let quality = "I".repeat(100);
        write!(r1, "@frag{i}/1\n{}\n+\n{quality}\n", String::from_utf8_lossy(&first)).unwrap();
        write!(r2, "@frag{i}/2\n{}\n+\n{quality}\n", String::from_utf8_lossy(&second)).unwrap();
    }
    for (name, bytes) in [("R1.fq.gz", r1), ("R2.fq.gz", r2)] {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&bytes).unwrap();
        std::fs::write(dir.join(name), gz.finish().unwrap()).unwrap();
    }
}

/// Runs the protocol in `dir`, each step with `command(step)`; its wall time.
fn run_protocol(dir: &Path, command: impl Fn(&str, &str) -> Command) -> Duration {
    let start = Instant::now();
    for (sub, script, args) in STEPS {
        let mut c = command(sub, script);
        c.args(*args).current_dir(dir);
        let out = run(c);
        assert!(out.status.success(), "{sub} {args:?} in {}: {}", dir.display(), text(&out.stderr));
    }
    start.elapsed()
}

#[test]
fn mrnaseq_protocol_gives_khmers_files() {
    if !have_khmer() {
        return;
    }
    let (ours, theirs) = (TempDir::new("protocol-f"), TempDir::new("protocol-k"));
    for d in [&ours, &theirs] {
        write_pairs(&d.0, 20_000);
    }
    // the read-handling scripts have no -q (in khmer either)
    let quiet = |sub: &str| !matches!(sub, "interleave-reads" | "extract-paired-reads" | "split-paired-reads");
    let fasthts_time = run_protocol(&ours.0, |sub, _| {
        let mut c = fasthts();
        c.args(["kmer", sub]);
        if quiet(sub) {
            c.arg("-q");
        }
        c
    });
    let khmer_time = run_protocol(&theirs.0, |sub, script| {
        let mut c = Command::new("/usr/bin/python3");
        c.arg(Path::new(KHMER_BIN).join(script));
        if quiet(sub) {
            c.arg("-q");
        }
        c
    });
    eprintln!("mRNAseq protocol on 20,000 pairs: fasthts {fasthts_time:.2?}, khmer {khmer_time:.2?}");
    let files = |d: &TempDir| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&d.0)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    let (a, b) = (files(&ours), files(&theirs));
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "the protocol's files");
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{name} differs from khmer's ({} vs {} bytes)", x.len(), y.len());
    }
    // the protocol did something: reads were dropped and both mates files are there
    let size = |n: &str| a.iter().find(|f| f.0 == n).map_or(0, |f| f.1.len());
    assert!(size("reads.pe.fq.keep") < size("reads.pe.fq") && size("reads.pe.fq.keep.abundfilt.pe.1") > 0);
}
