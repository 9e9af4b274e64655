//! The pileup engine (`fasthts::pileup`) against samtools: its columns,
//! its region reader and `counts_at` give what `samtools mpileup` and
//! `samtools view -c` give, on the golden tumour/normal pair and on
//! `small.bam`; resolving only some columns changes nothing.

use fasthts::bam::BamFile;
use fasthts::index::Index;
use fasthts::pileup::{PileupOptions, ReadFilter};
use fasthts_testgen::rng::Rng;
use fasthts_testgen::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The golden tumour BAM's path and the BAM, when it and samtools are there.
fn golden_tumour() -> Option<(PathBuf, BamFile)> {
    let path = golden_snp_pileup().join("tumour.bam");
    if !have_samtools() {
        return None;
    }
    let bam = BamFile::open(&path).unwrap();
    Some((path, bam))
}

/// `samtools mpileup -B -d 0 -Q MIN_Q [-x] PATH`, parsed: every read
/// (MAPQ 0 kept, orphans dropped), overlapping mates detected unless
/// `overlaps` is false (`-x`).
fn samtools_mpileup(path: &Path, overlaps: bool, min_q: u8) -> Vec<(String, i64, [u32; 8])> {
    let mut cmd = Command::new("samtools");
    cmd.args(["mpileup", "-B", "-d", "0", "-Q", &min_q.to_string()]);
    if !overlaps {
        cmd.arg("-x");
    }
    let o = cmd.arg(path).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout).lines().map(parse_mpileup).collect()
}

/// The pileup options that count as [`samtools_mpileup`] does.
fn mpileup_options(overlaps: bool) -> PileupOptions {
    PileupOptions { max_depth: i32::MAX, overlaps, filter: ReadFilter { skip_mapq_zero: false, ..ReadFilter::default() } }
}

/// A second user of the pileup engine: per-position depth and allele counts
/// with samtools mpileup's filters (`-B -d 0`, MAPQ 0 kept, orphans
/// dropped), checked against `samtools mpileup` with and without overlap
/// detection and at two base-quality thresholds.
#[test]
fn engine_matches_samtools_mpileup() {
    use fasthts::pileup::{FileRecords, Pileup};
    let Some((path, bam)) = golden_tumour() else { return };
    let names: Vec<String> = bam.header().references.iter().map(|r| r.name.clone()).collect();
    for (overlaps, min_q) in [(true, 0u8), (true, 20), (false, 20)] {
        let theirs = samtools_mpileup(&path, overlaps, min_q);
        let opts = mpileup_options(overlaps);
        let mut p = Pileup::new(vec![FileRecords::new(&bam).unwrap()], &opts);
        let mut ours = Vec::new();
        while let Some((tid, pos)) = p.next_column().unwrap() {
            let mut c = [0u32; 8];
            for r in p.reads(0) {
                if r.qual() < min_q {
                    continue;
                }
                c[0] += 1;
                let k = if r.is_refskip() {
                    7
                } else if r.is_del() {
                    6
                } else {
                    base_slot(r.base())
                };
                c[k] += 1;
            }
            ours.push((names[tid as usize].clone(), pos + 1, c));
        }
        assert_eq!(ours.len(), theirs.len(), "columns (overlaps {overlaps}, Q {min_q})");
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "overlaps {overlaps}, Q {min_q}");
        }
    }
}

/// The pileup's index reader returns what `samtools view -c BAM REGION`
/// counts: every record overlapping the region.
#[test]
fn region_records_match_samtools_view() {
    use fasthts::pileup::{RecordSource, RegionRecords};
    let Some((path, bam)) = golden_tumour() else { return };
    let index = Index::from_path(format!("{}.bai", path.display())).unwrap();
    for (tid, name, beg, end) in [
        (0, "I", 0, 1),
        (0, "I", 999, 2000),
        (0, "I", 29_950, 31_050),
        (1, "II", 19_990, 20_900),
        (3, "MtDNA", 0, 5000),
        (2, "X", 29_990, 40_000),
    ] {
        let mut r = RegionRecords::new(&bam, &index, tid, beg, end);
        let mut n = 0;
        while r.advance().unwrap() {
            n += 1;
        }
        let o = Command::new("samtools").args(["view", "-c"]).arg(&path).arg(format!("{name}:{}-{end}", beg + 1)).output().unwrap();
        assert_eq!(text(&o.stdout).trim(), n.to_string(), "{name}:{}-{end}", beg + 1);
    }
}

/// Resolving reads only at some columns (what snp-pileup does) gives the
/// same reads there as resolving every column (htslib's way), and finds the
/// same covered columns.
#[test]
fn skipping_columns_changes_nothing() {
    use fasthts::pileup::{FileRecords, Pileup};
    let dir = golden_snp_pileup();
    let a = BamFile::open(dir.join("tumour.bam")).unwrap();
    let b = BamFile::open(dir.join("normal.bam")).unwrap();
    let opts = PileupOptions::default();
    let snapshot = |p: &Pileup<FileRecords<'_>>| -> Vec<(usize, Vec<(usize, bool, bool, u8, u8)>)> {
        (0..2).map(|i| (p.depth(i), p.reads(i).map(|r| (r.qpos(), r.is_del(), r.is_refskip(), r.qual(), r.base())).collect())).collect()
    };
    let mut full = Pileup::new(vec![FileRecords::new(&a).unwrap(), FileRecords::new(&b).unwrap()], &opts);
    let mut sparse = Pileup::new(vec![FileRecords::new(&a).unwrap(), FileRecords::new(&b).unwrap()], &opts);
    let want = |pos: i64| pos % 37 == 0 || pos % 101 < 3;
    let mut n = 0;
    let mut last: Option<(i32, i64)> = None;
    while let Some(c) = full.next_column().unwrap() {
        if want(c.1) {
            // The sparse pileup jumps from the last wanted column to this one.
            let from = last.map_or((0, 0), |(t, p)| (t, p + 1));
            let next = sparse.next_covered(from.0, from.1).unwrap();
            assert!(next.is_some_and(|x| x <= c), "{next:?} after {from:?}, full pileup at {c:?}");
            assert!(sparse.goto(c.0, c.1).unwrap());
            assert!(snapshot(&full) == snapshot(&sparse), "column {c:?}");
            last = Some(c);
            n += 1;
        }
    }
    assert!(n > 1000);
}

/// The engine's second user, `pileup::counts::counts_at`, at random
/// positions against `samtools mpileup` with the same filters: on generated
/// data (`tests/data/small.bam`, made by fasthts-testgen: ref-skips, soft and
/// hard clips, `=`/`X` operations, SEQ and QUAL `*`, MAPQ 0, overlapping
/// mates on a deep chrM) and on the golden tumour/normal pair, with and
/// without overlap detection and at three base-quality thresholds. Positions
/// are drawn from the covered columns and uniformly (mostly uncovered on
/// the sparse generated file).
#[test]
fn counts_at_random_positions_match_samtools_mpileup() {
    use fasthts::pileup::counts::counts_at;
    if !have_samtools() {
        return;
    }
    let mut files = vec![data("small.bam")];
    let d = golden_snp_pileup();
    files.push(d.join("tumour.bam"));
    files.push(d.join("normal.bam"));
    let mut rng = Rng::new(7);
    for path in files {
        let bam = BamFile::open(&path).unwrap();
        let index = Index::from_path(format!("{}.bai", path.display())).unwrap();
        let refs: Vec<(String, i64)> = bam.header().references.iter().map(|r| (r.name.clone(), i64::from(r.len))).collect();
        let tid_of = |name: &str| refs.iter().position(|r| r.0 == name).unwrap();
        let mut checked_covered = 0;
        for (overlaps, min_q) in [(true, 13u8), (false, 0), (true, 30)] {
            let theirs = samtools_mpileup(&path, overlaps, min_q);
            let by_pos: std::collections::HashMap<(usize, i64), [u32; 8]> =
                theirs.iter().map(|(c, p, v)| ((tid_of(c), p - 1), *v)).collect();
            let mut positions: Vec<(usize, i64)> = Vec::new();
            for _ in 0..300 {
                let (c, p, _) = &theirs[rng.below(theirs.len() as u64) as usize];
                positions.push((tid_of(c), p - 1));
            }
            for _ in 0..100 {
                let t = rng.below(refs.len() as u64) as usize;
                positions.push((t, rng.below(refs[t].1.max(1) as u64) as i64));
            }
            let opts = mpileup_options(overlaps);
            let ours = counts_at(&[BamFile::open(&path).unwrap()], &[index.clone()], &positions, &opts, min_q).unwrap();
            for (&(t, p), c) in positions.iter().zip(&ours) {
                let c = c[0];
                let got = [c.depth, c.bases[0], c.bases[1], c.bases[2], c.bases[3], c.bases[4], c.deletions, c.ref_skips];
                let want = by_pos.get(&(t, p)).copied().unwrap_or([0; 8]);
                assert_eq!(got, want, "{} {}:{} (overlaps {overlaps}, Q {min_q})", path.display(), refs[t].0, p + 1);
                checked_covered += usize::from(want[0] > 0);
            }
        }
        assert!(checked_covered > 300, "{}: only {checked_covered} covered positions checked", path.display());
    }
}
