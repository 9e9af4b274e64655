//! The scatter/gather engine: any plan, any thread count, every record
//! exactly once; an index that does not describe the file is detected.

use fasthts::bam::BamFile;
use fasthts::flagstat::{self, FlagStat};
use fasthts::index::{Index, IndexFormat};
use fasthts::region::{self, Plan, Region};
use fasthts_testgen::support::*;
use std::collections::BTreeMap;

/// Each region's records, read one by one with `next_record` or, with
/// `walk`, by `for_each_record` after the first `pulled` of them.
fn names_by_region(bam: &BamFile, index: &Index, plan: Plan, walk: bool, pulled: usize) -> Vec<(Region, Vec<Vec<u8>>)> {
    let regions = region::plan(bam, index, plan);
    let parts = region::scatter(bam, index, &regions, |_, records| {
        let mut names = Vec::new();
        let key = |r: &fasthts::bam::RecordRef<'_>| [r.name(), &r.flag().to_le_bytes()[..]].concat();
        while !walk || names.len() < pulled {
            let Some(r) = records.next_record()? else { break };
            names.push(key(&r));
        }
        if walk {
            records.for_each_record(|r| names.push(key(r)))?;
        }
        Ok(names)
    })
    .unwrap();
    regions.into_iter().zip(parts).collect()
}

#[test]
fn every_record_once_whatever_the_plan_and_threads() {
    for fixture in ["small.bam", "long_ref.bam", "huge_record.bam", "long_cigar.bam", "refs_without_reads.bam", "unmapped_only.bam"] {
        let bam = BamFile::open(data(fixture)).unwrap();
        // All records, in file order, by a plain sequential read.
        let mut all = Vec::new();
        let mut rr = bam.records().unwrap();
        while let Some(r) = rr.next_record().unwrap() {
            all.push([r.name(), &r.flag().to_le_bytes()[..]].concat());
        }
        let formats = [IndexFormat::Bai, IndexFormat::Csi { min_shift: 14, depth: 0 }, IndexFormat::Csi { min_shift: 12, depth: 0 }];
        for format in formats {
            let Ok(index) = fasthts::index::build(&bam, format) else { continue };
            for plan in [Plan::Windows(20_000), Plan::Windows(1_000_000), Plan::Windows(u64::MAX), Plan::BalancedBytes(1), Plan::BalancedBytes(20_000)] {
                for threads in [1, 3] {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    let parts = pool.install(|| names_by_region(&bam, &index, plan, false, 0));
                    let gathered: Vec<Vec<u8>> = parts.iter().flat_map(|(_, n)| n.iter().cloned()).collect();
                    assert!(gathered == all, "{fixture} {format:?} {plan:?} -@{threads}: {} vs {} records", gathered.len(), all.len());
                    for pulled in [0, 1, 5] {
                        let walked = pool.install(|| names_by_region(&bam, &index, plan, true, pulled));
                        assert!(walked == parts, "{fixture} {format:?} {plan:?} -@{threads}: for_each_record after {pulled}");
                    }
                    // Regions are in genome order and tile each reference.
                    let mut by_ref: BTreeMap<i32, Vec<Region>> = BTreeMap::new();
                    for (r, _) in &parts {
                        by_ref.entry(r.ref_id).or_default().push(*r);
                    }
                    for rs in by_ref.values() {
                        assert_eq!(rs[0].start, i64::MIN);
                        assert_eq!(rs.last().unwrap().end, i64::MAX);
                        assert!(rs.windows(2).all(|w| w[0].end == w[1].start));
                    }
                    let stats = pool.install(|| flagstat::count_indexed(&bam, &index, 30_000)).unwrap();
                    assert_eq!(stats, flagstat::count_sequential(&bam).unwrap(), "{fixture}");
                }
            }
        }
    }
}

#[test]
fn an_index_of_another_file_is_detected_not_trusted() {
    let small = BamFile::open(data("small.bam")).unwrap();
    let other = BamFile::open(data("refs_without_reads.bam")).unwrap();
    let wrong = fasthts::index::build(&other, IndexFormat::Bai).unwrap();
    let truth = flagstat::count_sequential(&small).unwrap();
    match flagstat::count_indexed(&small, &wrong, 10_000) {
        Ok(stats) => assert_eq!(stats, truth, "a wrong index gave a wrong answer"),
        Err(e) => eprintln!("detected: {e}"),
    }
    assert_ne!(truth, FlagStat::default());
}

#[test]
fn a_region_reads_no_further_than_what_follows_it_needs() {
    // Damage a block well inside chr2: reading chr1 must not reach it (as
    // htslib would not), whatever the thread count; reading chr2 must
    // report it.
    let path = data("small.bam");
    let good = BamFile::open(&path).unwrap();
    let index = fasthts::index::build(&good, IndexFormat::Bai).unwrap();
    let chr2 = region::region_start(&good, &index, Region::whole(1)).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let after = fasthts::bgzf::Block::parse(&bytes, chr2.compressed()).unwrap().next_offset();
    bytes[after as usize + 40] ^= 0x55;
    let dir = TempDir::new("scatter-damage");
    let damaged_path = dir.path("damaged.bam");
    std::fs::write(&damaged_path, &bytes).unwrap();
    let damaged = BamFile::open(&damaged_path).unwrap();
    let names = |bam: &BamFile, region: Region| {
        region::scatter(bam, &index, &[region], |_, records| {
            let mut names = Vec::new();
            records.for_each_record(|r| names.push(r.name().to_vec()))?;
            Ok(names)
        })
    };
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let expected = pool.install(|| names(&good, Region::whole(0))).unwrap();
        assert!(!expected[0].is_empty());
        assert_eq!(pool.install(|| names(&damaged, Region::whole(0))).unwrap(), expected, "-@{threads}");
        let err = pool.install(|| names(&damaged, Region::whole(1))).unwrap_err().to_string();
        assert!(err.contains(&format!("offset {after}")), "-@{threads}: {err}");
    }
}
