//! What reading regions through a BAI costs in BGZF blocks, from the index
//! and the block layout alone (no timing: it can run on a busy machine).
//!
//! `cargo run --release --example region_io -- IN.bam REGIONS.txt` (one
//! samtools region a line) prints, for the regions read one by one as
//! `view` and samtools do (from the linear index's offset for the
//! region's start to where the records after it begin): the blocks
//! inflated against the file's, the share inflated more than once (by
//! several regions) and by the region just before (what a cache of the
//! last blocks per worker would save), and the records decoded against
//! those in the regions: the lead-in is the part of each region's first
//! 16 kb window before its start, read only to be skipped (BAI's linear
//! index has no finer offsets). It decodes every region's records once.

use fasthts::bam::BamFile;
use fasthts::bgzf::Block;
use fasthts::index::Index;
use fasthts::region::{self, Region};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (path, regions) = match (args.next(), args.next()) {
        (Some(p), Some(r)) => (p, r),
        _ => return Err("usage: region_io IN.bam REGIONS.txt".into()),
    };
    let bam = BamFile::open(&path)?;
    let index = Index::from_path(format!("{path}.bai"))?;
    let names = fasthts::sam::RefNames::new(bam.header());
    // Block start offsets, in file order.
    let bytes = bam.bytes();
    let mut starts = Vec::new();
    let mut off = 0u64;
    while off < bytes.len() as u64 {
        starts.push(off);
        off = Block::parse(bytes, off)?.next_offset();
    }
    let block_of = |c: u64| starts.partition_point(|&s| s <= c) - 1;
    let mut times_read = vec![0u32; starts.len()];
    let (mut total, mut from_previous) = (0u64, 0u64);
    let (mut decoded, mut returned) = (0u64, 0u64);
    let mut previous = 0..0;
    let text = std::fs::read_to_string(&regions)?;
    for line in text.lines().filter(|l| !l.is_empty()) {
        let r = Region::parse(line, &names)?;
        let Some(start) = region::start_offset(&bam, &index, r.ref_id, r.start) else { continue };
        // As view reads a region: every record from the linear index's
        // offset that starts before the region's end; those ending after
        // its start are the region's.
        let scope = Region { ref_id: r.ref_id, start: i64::MIN, end: r.end };
        let following = region::following_start(&bam, &index, Region { ref_id: r.ref_id, start: r.start.max(0), end: r.end });
        let mut reader = region::RegionReader::new(&bam, scope, start, following)?;
        reader.for_each_record(|rec| {
            decoded += 1;
            returned += u64::from(rec.end_pos() > r.start);
        })?;
        let blocks = block_of(start.compressed())..block_of(reader.record_end().compressed()) + 1;
        if std::env::var_os("REGION_IO_DEBUG").is_some() {
            eprintln!("{line}: blocks {blocks:?}");
        }
        for b in blocks.clone() {
            times_read[b] += 1;
        }
        total += blocks.len() as u64;
        from_previous += blocks.clone().filter(|b| previous.contains(b)).count() as u64;
        previous = blocks;
    }
    let records: u64 = index.references().iter().filter_map(|r| r.metadata()).map(|m| m.n_mapped + m.n_unmapped).sum();
    let distinct = times_read.iter().filter(|&&n| n > 0).count() as u64;
    let n = starts.len() as f64;
    println!("file: {} blocks, {} bytes, {records} placed records", starts.len(), bytes.len());
    println!("blocks inflated: {total} ({:.2}x the file's)", total as f64 / n);
    println!(
        "distinct blocks: {distinct} ({:.2}x the file's); inflated again: {:.1} %",
        distinct as f64 / n,
        100.0 * (total - distinct) as f64 / total as f64
    );
    println!("shared with the region just before: {from_previous} ({:.2} %)", 100.0 * from_previous as f64 / total as f64);
    println!(
        "records decoded: {decoded} ({:.2}x the file's); in the regions: {returned} ({:.2}x); lead-in (decoded, not in the region): {:.1} %",
        decoded as f64 / records as f64,
        returned as f64 / records as f64,
        100.0 * (decoded - returned) as f64 / decoded as f64
    );
    Ok(())
}
