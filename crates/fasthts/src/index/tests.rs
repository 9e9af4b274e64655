//! Differential tests against samtools 1.16: BAMs made from SAM text written
//! here (and the golden tumour BAM), indexed by `samtools index [-c]`, walked
//! by a minimal test-only BAM reader, pushed through [`IndexBuilder`] and
//! compared with samtools' index structurally and byte for byte; then
//! `samtools idxstats` / `samtools view IN REGION` run with our index must
//! print what they print with samtools' own. Tests that need samtools fail
//! without it under CI and skip with a note elsewhere
//! (`fasthts_testgen::support::require`).

use std::path::{Path, PathBuf};
use std::process::Command;

use fasthts_testgen::rng::Rng;
use fasthts_testgen::support::{golden_snp_pileup, with_samtools};

use super::*;
use crate::bgzf::{Block, VirtualOffset};

// ---------------------------------------------------------------------------
// A test-only BAM walker.

/// One record as the indexer sees it.
#[derive(Debug, Clone)]
struct Rec {
    tid: i32,
    pos: i64,
    end: i64,
    flag: u16,
    /// Virtual offsets of the record's first byte and just past it.
    start: VirtualOffset,
    stop: VirtualOffset,
}

struct Bam {
    names: Vec<(String, u64)>,
    header_end: VirtualOffset,
    records: Vec<Rec>,
    final_offset: VirtualOffset,
}

fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

/// Inflates every block, remembering where each starts.
fn walk_bam(file: &[u8]) -> Bam {
    let mut d = libdeflater::Decompressor::new();
    let mut data = Vec::new();
    // (compressed offset, uncompressed start, uncompressed length)
    let mut blocks: Vec<(u64, usize, usize)> = Vec::new();
    let mut off = 0u64;
    while (off as usize) < file.len() {
        let b = Block::parse(file, off).unwrap();
        let mut out = vec![0u8; b.uncompressed_size as usize];
        b.inflate_into(file, &mut d, &mut out).unwrap();
        blocks.push((off, data.len(), out.len()));
        data.extend_from_slice(&out);
        off = b.next_offset();
    }
    let file_len = file.len() as u64;
    // Canonical virtual offset of an uncompressed position: the end of a
    // block is the start of the next one.
    let voff = |p: usize| -> VirtualOffset {
        for &(c, s, l) in &blocks {
            if p >= s && p < s + l {
                return VirtualOffset::new(c, (p - s) as u16).unwrap();
            }
        }
        let next = blocks
            .iter()
            .find(|&&(_, s, l)| s >= p && (l > 0 || s == p))
            .map(|&(c, _, _)| c);
        VirtualOffset::new(next.unwrap_or(file_len), 0).unwrap()
    };
    assert_eq!(&data[..4], b"BAM\x01");
    let l_text = le_i32(&data, 4) as usize;
    let mut p = 8 + l_text;
    let n_ref = le_i32(&data, p) as usize;
    p += 4;
    let mut names = Vec::new();
    for _ in 0..n_ref {
        let l_name = le_i32(&data, p) as usize;
        let name = String::from_utf8(data[p + 4..p + 4 + l_name - 1].to_vec()).unwrap();
        let l_ref = le_i32(&data, p + 4 + l_name) as u32 as u64;
        names.push((name, l_ref));
        p += 8 + l_name;
    }
    let header_end = voff(p);
    let mut records = Vec::new();
    while p < data.len() {
        let block_size = le_i32(&data, p) as usize;
        let r = &data[p + 4..p + 4 + block_size];
        let tid = le_i32(r, 0);
        let pos = i64::from(le_i32(r, 4));
        let l_read_name = r[8] as usize;
        let n_cigar = le_u16(r, 12) as usize;
        let flag = le_u16(r, 14);
        let mut rlen = 0i64;
        if flag & 4 == 0 {
            for i in 0..n_cigar {
                let c = u32::from_le_bytes(r[32 + l_read_name + 4 * i..][..4].try_into().unwrap());
                if matches!(c & 0xf, 0 | 2 | 3 | 7 | 8) {
                    rlen += i64::from(c >> 4);
                }
            }
        }
        let end = pos + if rlen == 0 { 1 } else { rlen };
        let start = voff(p);
        p += 4 + block_size;
        records.push(Rec {
            tid,
            pos,
            end,
            flag,
            start,
            stop: voff(p),
        });
    }
    Bam {
        names,
        header_end,
        records,
        final_offset: voff(data.len()),
    }
}

fn build(bam: &Bam, format: IndexFormat) -> Result<Index, IndexError> {
    let mut b = IndexBuilder::new(format, bam.names.len(), bam.header_end);
    for r in &bam.records {
        b.push(r.tid, r.pos, r.end, r.stop, r.flag & 4 == 0)?;
    }
    b.finish(bam.final_offset)
}

/// Records overlapping `[beg, end)` found by scanning the query's chunks as
/// htslib's iterator does; returned as record start offsets.
fn scan_query(index: &Index, bam: &Bam, tid: usize, beg: i64, end: i64) -> Vec<VirtualOffset> {
    let mut out = Vec::new();
    let chunks = index.query(tid, beg, end);
    'chunks: for c in &chunks {
        let first = bam.records.partition_point(|r| r.start < c.start);
        for r in &bam.records[first..] {
            if r.start >= c.end {
                break;
            }
            if r.tid != tid as i32 || r.pos >= end {
                break 'chunks;
            }
            if r.end > beg.max(0) && end > r.pos && out.last().map_or(true, |&l| l < r.start) {
                out.push(r.start);
            }
        }
    }
    out
}

/// The records a correct index must yield for the region.
fn naive_overlap(bam: &Bam, tid: usize, beg: i64, end: i64) -> Vec<VirtualOffset> {
    bam.records
        .iter()
        .filter(|r| r.tid == tid as i32 && r.end > beg.max(0) && end > r.pos)
        .map(|r| r.start)
        .collect()
}

// ---------------------------------------------------------------------------
// Test data.

fn run(args: &[&str]) -> std::process::Output {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    out
}

fn run_ok(args: &[&str]) -> Vec<u8> {
    let out = run(args);
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Sorted SAM text: several references (one with no reads, one long if
/// `long_ref`), reads with long skips, placed unmapped reads, zero-length
/// CIGARs, and unplaced reads at the end.
fn make_sam(seed: u64, n_reads: usize, long_ref: bool) -> String {
    let mut rng = Rng::new(seed);
    let mut refs: Vec<(&str, u64)> = vec![
        ("chr1", 300_000),
        ("chr2", 120_000),
        ("empty", 50_000),
        ("chr4", 2_000),
    ];
    if long_ref {
        refs.push(("big", 1_000_000_000));
    }
    refs.push(("tail_empty", 10_000));
    let mut sam = String::from("@HD\tVN:1.6\tSO:coordinate\n");
    for (n, l) in &refs {
        sam.push_str(&format!("@SQ\tSN:{n}\tLN:{l}\n"));
    }
    let bases = b"ACGT";
    let mut id = 0;
    for (name, len) in &refs {
        if name.contains("empty") {
            continue;
        }
        let share = match *name {
            "chr4" => 20,
            "big" => n_reads / 3,
            _ => n_reads / 3,
        };
        let mut positions: Vec<u64> = (0..share)
            .map(|_| {
                if *name == "big" && rng.below(2) == 0 {
                    // Cluster near 900 Mb, beyond BAI's 2^29.
                    900_000_000 + rng.below(2_000_000)
                } else {
                    rng.below(len.min(&600_000_000) - 200)
                }
            })
            .collect();
        positions.sort_unstable();
        for p in positions {
            id += 1;
            let l = 50 + rng.below(100) as usize;
            let seq: String = (0..l)
                .map(|_| bases[rng.below(4) as usize] as char)
                .collect();
            let qual: String = (0..l)
                .map(|_| (b'!' + rng.below(40) as u8) as char)
                .collect();
            let kind = rng.below(20);
            let (flag, cigar) = match kind {
                0 => (4, "*".to_string()), // unmapped, placed
                1 => (
                    0,
                    format!("{}M{}N{}M", l / 2, 20_000 + rng.below(40_000), l - l / 2),
                ), // long skip
                2 => (256, format!("{l}M")), // secondary
                3 => (0, format!("{l}I")), // no reference length
                4 => (16, format!("5S{}M2D{}M", l / 2 - 5, l - l / 2)),
                _ => (if rng.below(2) == 0 { 0 } else { 16 }, format!("{l}M")),
            };
            sam.push_str(&format!(
                "r{id}\t{flag}\t{name}\t{}\t30\t{cigar}\t*\t0\t0\t{seq}\t{qual}\n",
                p + 1
            ));
        }
    }
    for _ in 0..25 {
        id += 1;
        sam.push_str(&format!(
            "u{id}\t4\t*\t0\t0\t*\t*\t0\t0\tACGTACGTAC\tFFFFFFFFFF\n"
        ));
    }
    sam
}

fn sam_to_bam(dir: &Path, name: &str, sam: &str) -> PathBuf {
    let sam_path = dir.join(format!("{name}.sam"));
    let bam_path = dir.join(format!("{name}.bam"));
    std::fs::write(&sam_path, sam).unwrap();
    run_ok(&[
        "samtools",
        "view",
        "--no-PG",
        "-b",
        "-o",
        bam_path.to_str().unwrap(),
        sam_path.to_str().unwrap(),
    ]);
    bam_path
}

/// Regions to compare: whole references, windows, edges, empty references.
fn regions(bam: &Bam) -> Vec<(usize, i64, i64)> {
    let mut out = Vec::new();
    for (tid, (_, len)) in bam.names.iter().enumerate() {
        let len = *len as i64;
        out.push((tid, 0, i64::MAX));
        for &(b, e) in &[
            (0, 1),
            (0, 16384),
            (16383, 16385),
            (100_000, 100_500),
            (len / 2, len / 2 + 70_000),
            (len - 10, len),
        ] {
            if b < len {
                out.push((tid, b, e.min(len)));
            }
        }
        if len > 900_000_000 {
            out.push((tid, 900_500_000, 900_600_000));
            out.push((tid, 536_870_000, 536_871_000));
        }
    }
    out
}

/// Builds with our builder and checks against samtools' index for `format`;
/// returns the index path samtools wrote and ours.
fn check_against_samtools(
    dir: &Path,
    bam_path: &Path,
    bam: &Bam,
    format: IndexFormat,
    samtools_flags: &[&str],
) -> (PathBuf, PathBuf) {
    let ext = format.name();
    let theirs = dir.join(format!("theirs.{}.{ext}", samtools_flags.join("")));
    let mut args = vec!["samtools", "index"];
    args.extend_from_slice(samtools_flags);
    args.extend_from_slice(&["-o", theirs.to_str().unwrap(), bam_path.to_str().unwrap()]);
    run_ok(&args);
    let their_bytes = std::fs::read(&theirs).unwrap();
    let their_index = Index::from_bytes(&their_bytes).unwrap();
    assert_eq!(their_index.format(), format);

    let ours = build(bam, format).unwrap();
    // Structure, including bin order and the metadata slot.
    assert_eq!(
        ours, their_index,
        "{format:?}: built index differs from samtools'"
    );
    // Bytes.
    let their_raw = match format {
        IndexFormat::Bai => their_bytes.clone(),
        IndexFormat::Csi { .. } => crate::bgzf::decompress_all(&their_bytes).unwrap(),
    };
    assert!(
        ours.to_raw_bytes() == their_raw,
        "{format:?}: serialization differs from samtools'"
    );
    if format == IndexFormat::Bai {
        assert!(ours.to_bytes() == their_bytes);
    } else {
        eprintln!(
            "{format:?}: compressed CSI identical to samtools': {}",
            ours.to_bytes() == their_bytes
        );
    }
    // Re-reading our own file gives the same index.
    let our_path = dir.join(format!("ours.{}.{ext}", samtools_flags.join("")));
    ours.write_to_path(&our_path).unwrap();
    assert_eq!(Index::from_path(&our_path).unwrap(), ours);

    // Our query finds exactly the overlapping records.
    for (tid, b, e) in regions(bam) {
        assert_eq!(
            scan_query(&ours, bam, tid, b, e),
            naive_overlap(bam, tid, b, e),
            "{format:?} region {tid}:{b}-{e}"
        );
    }
    let mut rng = Rng::new(0x5eed ^ u64::from(format.min_shift()));
    for _ in 0..300 {
        let tid = rng.below(bam.names.len() as u64) as usize;
        let len = bam.names[tid].1.max(1);
        let b = rng.below(len) as i64;
        let span = if rng.below(2) == 0 { 2_000 } else { 200_000 };
        let e = b + 1 + rng.below(span) as i64;
        assert_eq!(
            scan_query(&ours, bam, tid, b, e),
            naive_overlap(bam, tid, b, e),
            "{format:?} region {tid}:{b}-{e}"
        );
    }
    // Scatter helpers are sound lower bounds.
    for (tid, _) in bam.names.iter().enumerate() {
        for (pos, off) in ours.checkpoints(tid) {
            assert!(bam
                .records
                .iter()
                .filter(|r| r.tid == tid as i32 && r.pos >= pos)
                .all(|r| r.start >= off));
        }
        for pos in [0i64, 5_000, 16_384, 70_000, 250_000, 900_000_000] {
            if let Some(off) = ours.start_offset(tid, pos) {
                let recs: Vec<&Rec> = bam
                    .records
                    .iter()
                    .filter(|r| r.tid == tid as i32 && r.pos >= pos)
                    .collect();
                assert!(
                    recs.iter().all(|r| r.start >= off),
                    "{format:?} start_offset({tid}, {pos})"
                );
            }
        }
    }
    if let Some(first_unplaced) = bam.records.iter().find(|r| r.tid < 0) {
        let expected = if bam.records.iter().any(|r| r.tid >= 0) {
            Some(first_unplaced.start)
        } else {
            None
        };
        assert_eq!(ours.unplaced_start(), expected);
    }
    (theirs, our_path)
}

/// Runs samtools with `BAM` in `args` replaced by the BAM path tied to the
/// index `idx` (htslib's `##idx##` syntax).
fn samtools_with(bam_path: &Path, idx: &Path, args: &[&str]) -> Vec<u8> {
    let mut a: Vec<String> = vec!["samtools".to_string()];
    for s in args {
        a.push(if *s == "BAM" {
            format!("{}##idx##{}", bam_path.display(), idx.display())
        } else {
            s.to_string()
        });
    }
    let refs: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    run_ok(&refs)
}

/// `samtools view IN REGION` prints the same with either index.
fn samtools_views_agree(bam_path: &Path, bam: &Bam, theirs: &Path, ours: &Path) {
    for (tid, b, e) in regions(bam) {
        let name = &bam.names[tid].0;
        let region = if e == i64::MAX {
            name.clone()
        } else {
            format!("{name}:{}-{}", b + 1, e)
        };
        let ours_out = samtools_with(bam_path, ours, &["view", "BAM", &region]);
        assert_eq!(
            ours_out,
            samtools_with(bam_path, theirs, &["view", "BAM", &region]),
            "samtools view {region}"
        );
    }
}

/// `samtools idxstats` and `samtools view` must print the same with either
/// index, and our idxstats text must be samtools'.
fn samtools_agrees(_dir: &Path, bam_path: &Path, bam: &Bam, theirs: &Path, ours: &Path) {
    let stats = samtools_with(bam_path, ours, &["idxstats", "BAM"]);
    assert_eq!(stats, samtools_with(bam_path, theirs, &["idxstats", "BAM"]));
    let index = Index::from_path(ours).unwrap();
    assert_eq!(idxstats(&index, &bam.names).into_bytes(), stats);
    samtools_views_agree(bam_path, bam, theirs, ours);
}

// ---------------------------------------------------------------------------
// The tests.

#[test]
fn bai_and_csi_match_samtools_on_generated_bam() {
    let Some(tmp) = with_samtools("index-gen") else {
        return;
    };
    let dir = tmp.0.clone();
    let bam_path = sam_to_bam(&dir, "gen", &make_sam(7, 12_000, false));
    let bam = walk_bam(&std::fs::read(&bam_path).unwrap());
    assert!(bam.records.iter().any(|r| r.tid >= 0 && r.flag & 4 != 0));
    for (format, flags) in [
        (IndexFormat::Bai, vec![]),
        (
            IndexFormat::Csi {
                min_shift: 14,
                depth: csi_depth(14, 300_000),
            },
            vec!["-c"],
        ),
        (
            IndexFormat::Csi {
                min_shift: 12,
                depth: csi_depth(12, 300_000),
            },
            vec!["-m", "12"],
        ),
    ] {
        let (theirs, ours) = check_against_samtools(&dir, &bam_path, &bam, format, &flags);
        samtools_agrees(&dir, &bam_path, &bam, &theirs, &ours);
    }
}

#[test]
fn csi_for_a_reference_longer_than_2_pow_29() {
    let Some(tmp) = with_samtools("index-big") else {
        return;
    };
    let dir = tmp.0.clone();
    let bam_path = sam_to_bam(&dir, "big", &make_sam(11, 3_000, true));
    let bam = walk_bam(&std::fs::read(&bam_path).unwrap());
    let depth = csi_depth(14, 1_000_000_000);
    assert_eq!(depth, 6);
    let (theirs, ours) = check_against_samtools(
        &dir,
        &bam_path,
        &bam,
        IndexFormat::Csi {
            min_shift: 14,
            depth,
        },
        &["-c"],
    );
    samtools_agrees(&dir, &bam_path, &bam, &theirs, &ours);

    // A BAI cannot hold it: samtools refuses, and so do we, with its message.
    let out = run(&[
        "samtools",
        "index",
        "-o",
        dir.join("x.bai").to_str().unwrap(),
        bam_path.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = build(&bam, IndexFormat::Bai).unwrap_err();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&err.to_string()),
        "samtools said {stderr:?}, we said {err}"
    );
}

#[test]
fn unsorted_input_is_refused_like_samtools() {
    let Some(tmp) = with_samtools("index-unsorted") else {
        return;
    };
    let dir = tmp.0.clone();
    let sam = "@SQ\tSN:c1\tLN:1000\n\
               a\t0\tc1\t500\t30\t4M\t*\t0\t0\tACGT\tFFFF\n\
               b\t0\tc1\t100\t30\t4M\t*\t0\t0\tACGT\tFFFF\n";
    let bam_path = sam_to_bam(&dir, "uns", sam);
    let bam = walk_bam(&std::fs::read(&bam_path).unwrap());
    let out = run(&[
        "samtools",
        "index",
        "-o",
        dir.join("x.bai").to_str().unwrap(),
        bam_path.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = build(&bam, IndexFormat::Bai).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unsorted positions on sequence #1: 500 followed by 100"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&err.to_string()));
}

#[test]
fn header_only_and_unplaced_only_bams() {
    let Some(tmp) = with_samtools("index-edge") else {
        return;
    };
    let dir = tmp.0.clone();
    for (name, sam) in [
        ("hdr", "@SQ\tSN:c1\tLN:1000\n@SQ\tSN:c2\tLN:10\n".to_string()),
        ("unpl", "@SQ\tSN:c1\tLN:1000\nu\t4\t*\t0\t0\t*\t*\t0\t0\tAC\tFF\nv\t4\t*\t0\t0\t*\t*\t0\t0\tAC\tFF\n".to_string()),
        ("one", "@SQ\tSN:c1\tLN:1000\n@SQ\tSN:c2\tLN:10\nu\t4\tc2\t3\t0\t*\t*\t0\t0\tAC\tFF\n".to_string()),
    ] {
        let bam_path = sam_to_bam(&dir, name, &sam);
        let bam = walk_bam(&std::fs::read(&bam_path).unwrap());
        for (format, flags) in [(IndexFormat::Bai, vec![]), (IndexFormat::Csi { min_shift: 14, depth: 0 }, vec!["-c"])] {
            let (theirs, ours) = check_against_samtools(&dir, &bam_path, &bam, format, &flags);
            samtools_agrees(&dir, &bam_path, &bam, &theirs, &ours);
        }
    }
}

#[test]
fn golden_tumour_bam() {
    let golden = &golden_snp_pileup().join("tumour.bam");
    let Some(tmp) = with_samtools("index-golden") else {
        return;
    };
    let dir = tmp.0.clone();
    let bam = walk_bam(&std::fs::read(golden).unwrap());
    for (format, flags) in [
        (IndexFormat::Bai, vec![]),
        (
            IndexFormat::Csi {
                min_shift: 14,
                depth: csi_depth(14, bam.names.iter().map(|n| n.1).max().unwrap_or(0)),
            },
            vec!["-c"],
        ),
    ] {
        let (theirs, ours) = check_against_samtools(&dir, golden, &bam, format, &flags);
        samtools_agrees(&dir, golden, &bam, &theirs, &ours);
    }
}

#[test]
fn idxstats_without_metadata_and_count() {
    // An index with no pseudo-bins and no n_no_coor (as very old samtools
    // wrote): samtools 1.16 prints zeros.
    let r = ReferenceIndex::new(
        vec![Bin {
            id: 4681,
            loffset: 0.into(),
            chunks: vec![Chunk::new(5.into(), 9.into())],
        }],
        vec![5.into()],
        None,
    );
    let index = Index::new(IndexFormat::Bai, vec![r], None);
    let back = Index::from_bytes(&index.to_bytes()).unwrap();
    assert_eq!(back.n_no_coor(), None);
    assert_eq!(
        idxstats(&back, &[("a", 10u64), ("b", 20)]),
        "a\t10\t0\t0\nb\t20\t0\t0\n*\t0\t0\t0\n"
    );
}

/// Strips the metadata pseudo-bins and the trailing count, as indexes from
/// very old samtools lack them.
fn strip_metadata(index: &Index) -> Index {
    let refs = index
        .references()
        .iter()
        .map(|r| ReferenceIndex::new(r.bins().to_vec(), r.linear_index().to_vec(), None))
        .collect();
    Index::new(index.format(), refs, None)
}

#[test]
fn index_without_metadata_behaves_like_samtools() {
    let Some(tmp) = with_samtools("index-nometa") else {
        return;
    };
    let dir = tmp.0.clone();
    let bam_path = sam_to_bam(&dir, "nm", &make_sam(23, 6_000, false));
    let bam = walk_bam(&std::fs::read(&bam_path).unwrap());
    for (format, flags) in [
        (IndexFormat::Bai, vec![]),
        (
            IndexFormat::Csi {
                min_shift: 14,
                depth: csi_depth(14, 300_000),
            },
            vec!["-c"],
        ),
    ] {
        let (theirs, _) = check_against_samtools(&dir, &bam_path, &bam, format, &flags);
        let stripped = strip_metadata(&Index::from_path(&theirs).unwrap());
        let path = dir.join(format!("stripped.{}", format.name()));
        stripped.write_to_path(&path).unwrap();
        // Queries take htslib's "may hold unmapped reads" path: still exact.
        for (tid, b, e) in regions(&bam) {
            assert_eq!(
                scan_query(&stripped, &bam, tid, b, e),
                naive_overlap(&bam, tid, b, e),
                "{format:?} {tid}:{b}-{e}"
            );
        }
        // samtools view gives the same with it; idxstats prints zeros, as ours does.
        samtools_views_agree(&bam_path, &bam, &theirs, &path);
        let stats = samtools_with(&bam_path, &path, &["idxstats", "BAM"]);
        assert_eq!(
            String::from_utf8(stats).unwrap(),
            idxstats(&stripped, &bam.names)
        );
        assert!(idxstats(&stripped, &bam.names)
            .lines()
            .all(|l| l.ends_with("\t0\t0")));
    }
}

fn fixture(name: &str) -> PathBuf {
    fasthts_testgen::support::data("index").join(name)
}

/// Committed samtools-made fixtures (see tests/data/index/README.md): read,
/// rebuilt with our builder, byte-identical; no samtools needed.
#[test]
fn samtools_fixtures_read_and_rebuild() {
    let cases: [(&str, &str, Option<&str>); 4] = [
        (
            "small.bam",
            "small.bam.bai",
            Some("chr1\t200000\t54\t6\nempty\t5000\t0\t0\nchr3\t40000\t10\t0\n*\t0\t0\t3\n"),
        ),
        (
            "small.bam",
            "small.bam.csi",
            Some("chr1\t200000\t54\t6\nempty\t5000\t0\t0\nchr3\t40000\t10\t0\n*\t0\t0\t3\n"),
        ),
        (
            "long.bam",
            "long.bam.csi",
            Some("short\t1000\t1\t0\nlong\t1000000000\t6\t0\n*\t0\t0\t1\n"),
        ),
        ("long.bam", "long.m12.csi", None),
    ];
    for (bam_name, idx_name, stats) in cases {
        let bam = walk_bam(&std::fs::read(fixture(bam_name)).unwrap());
        let bytes = std::fs::read(fixture(idx_name)).unwrap();
        let theirs = Index::from_bytes(&bytes).unwrap();
        if let Some(stats) = stats {
            assert_eq!(idxstats(&theirs, &bam.names), stats, "{idx_name}");
        }
        let ours = build(&bam, theirs.format()).unwrap();
        assert_eq!(ours, theirs, "{idx_name}");
        let raw = if theirs.format() == IndexFormat::Bai {
            bytes.clone()
        } else {
            crate::bgzf::decompress_all(&bytes).unwrap()
        };
        assert!(ours.to_raw_bytes() == raw, "{idx_name}");
        for (tid, b, e) in regions(&bam) {
            assert_eq!(
                scan_query(&ours, &bam, tid, b, e),
                naive_overlap(&bam, tid, b, e),
                "{idx_name} {tid}:{b}-{e}"
            );
        }
    }
    // The long reference needs a CSI: the format and depth samtools chose.
    let long = Index::from_path(fixture("long.bam.csi")).unwrap();
    assert_eq!(
        long.format(),
        IndexFormat::Csi {
            min_shift: 14,
            depth: csi_depth(14, 1_000_000_000)
        }
    );
    let m12 = Index::from_path(fixture("long.m12.csi")).unwrap();
    assert_eq!(
        m12.format(),
        IndexFormat::Csi {
            min_shift: 12,
            depth: csi_depth(12, 1_000_000_000)
        }
    );
    let small = Index::from_path(fixture("small.bam.csi")).unwrap();
    assert_eq!(
        small.format(),
        IndexFormat::Csi {
            min_shift: 14,
            depth: csi_depth(14, 200_000)
        }
    );
    let err = build(
        &walk_bam(&std::fs::read(fixture("long.bam")).unwrap()),
        IndexFormat::Bai,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Region 599999999..600000019 cannot be stored in a bai index. Try using a csi index"
    );
}

/// A larger check on any sorted BAM: `FASTHTS_INDEX_TEST_BAM=x.bam cargo test
/// -p fasthts --lib index::tests::external_bam -- --ignored` (CSI when
/// `FASTHTS_INDEX_TEST_CSI` is set, with `-m $FASTHTS_INDEX_TEST_MIN_SHIFT`,
/// default 14).
#[test]
#[ignore]
fn external_bam_matches_samtools() {
    let Ok(path) = std::env::var("FASTHTS_INDEX_TEST_BAM") else {
        return;
    };
    let Some(tmp) = with_samtools("index-external") else {
        return;
    };
    let dir = tmp.0.clone();
    let bam_path = PathBuf::from(path);
    let bam = walk_bam(&std::fs::read(&bam_path).unwrap());
    let min_shift_arg =
        std::env::var("FASTHTS_INDEX_TEST_MIN_SHIFT").unwrap_or_else(|_| "14".into());
    let (format, flags) = if std::env::var("FASTHTS_INDEX_TEST_CSI").is_ok() {
        let max = bam.names.iter().map(|n| n.1).max().unwrap_or(0);
        let min_shift: u32 = min_shift_arg.parse().unwrap();
        (
            IndexFormat::Csi {
                min_shift,
                depth: csi_depth(min_shift, max),
            },
            vec!["-m", min_shift_arg.as_str()],
        )
    } else {
        (IndexFormat::Bai, vec![])
    };
    let (theirs, ours) = check_against_samtools(&dir, &bam_path, &bam, format, &flags);
    samtools_agrees(&dir, &bam_path, &bam, &theirs, &ours);
}

/// Builder throughput on `FASTHTS_INDEX_TEST_BAM` (records pushed per second).
#[test]
#[ignore]
fn builder_throughput() {
    let Ok(path) = std::env::var("FASTHTS_INDEX_TEST_BAM") else {
        return;
    };
    let bam = walk_bam(&std::fs::read(path).unwrap());
    let t = std::time::Instant::now();
    let mut n = 0;
    for _ in 0..10 {
        n += build(&bam, IndexFormat::Bai).unwrap().references().len();
    }
    let dt = t.elapsed().as_secs_f64() / 10.0;
    eprintln!(
        "{} records: {:.1} ms per build, {:.0} M records/s ({n})",
        bam.records.len(),
        dt * 1e3,
        bam.records.len() as f64 / dt / 1e6
    );
}
