//! One region of an [`IndexedFile`] read on several threads: cut into
//! pieces of about so many compressed bytes, the pieces read in parallel
//! on the rayon pool and handed on in order (the Python package's
//! `BamFile.columns` of a region).
//!
//! The records are those **starting** in the region ([`Rule::StartsIn`]),
//! so the pieces, which tile it, give each record once; together, in
//! order, what one query of the region gives.
//!
//! ```
//! use fasthts::region::indexed::{IndexedFile, IndexedOptions, WithoutIndex};
//! use fasthts::region::{pieces, Region};
//! # let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam"));
//! let options = IndexedOptions { without_index: WithoutIndex::Build, ..Default::default() };
//! let file = IndexedFile::open(path, &options, &|_| {})?;
//! let region = Region::whole(0);
//! let mut positions = Vec::new();
//! pieces::read_in_order(
//!     &file,
//!     &pieces::plan(&file, region, 64 << 10)?,
//!     |_| Vec::new(),
//!     |records, buffer: &mut Vec<i32>| {
//!         buffer.clear();
//!         records.for_each_record(|r| buffer.push(r.pos()))
//!     },
//!     |buffer| Ok(positions.extend_from_slice(buffer)),
//! )?;
//! assert!(positions.windows(2).all(|w| w[0] <= w[1]));
//! # Ok::<(), fasthts::Error>(())
//! ```

use super::indexed::{IndexedFile, Records, Rule};
use super::{Plan, Region};
use crate::Error;

/// Compressed bytes per piece when one region is read on several threads.
/// Small pieces balance the threads' work; each piece start costs an index
/// lookup and re-inflates the block the previous piece ends in (see
/// [`super::region_start`]). chr1 of the bench BAM on 2 threads
/// (callgrind): 1 MB pieces 2.3 % more instructions than 4 MB ones, 16 MB
/// 0.5 % fewer (but only 10 pieces to share).
pub const PIECE_BYTES: u64 = 4 << 20;

/// The pieces `region` is read in, in order, tiling it: for a BAM or a
/// bgzipped SAM cut where a plan of about `piece_bytes` compressed bytes
/// cuts its reference ([`super::plan`] by [`Plan::BalancedBytes`]); for a
/// CRAM file where its containers begin. One piece, the region, for the
/// unplaced records or when the current rayon pool has one thread.
pub fn plan(file: &IndexedFile, region: Region, piece_bytes: u64) -> Result<Vec<Region>, Error> {
    if region.ref_id < 0 || rayon::current_num_threads() == 1 {
        return Ok(vec![region]);
    }
    let cuts: Vec<i64> = match file.indexed() {
        Some((indexed, index)) => super::plan(indexed, index, Plan::BalancedBytes(piece_bytes.max(1)))
            .iter()
            .filter(|p| p.ref_id == region.ref_id)
            .map(|p| p.end)
            .collect(),
        // A container's start (1-based) is its first record's position.
        None => file.cram_containers()?.iter().filter(|c| c.ref_id == region.ref_id).map(|c| c.start - 1).collect(),
    };
    let mut pieces = Vec::new();
    let mut start = region.start;
    for cut in cuts {
        if cut > start && cut < region.end {
            pieces.push(Region { ref_id: region.ref_id, start, end: cut });
            start = cut;
        }
    }
    pieces.push(Region { ref_id: region.ref_id, start, end: region.end });
    Ok(pieces)
}

/// Reads `pieces` (regions, tiling one, as [`plan`] cuts it) of `file` on
/// the current rayon pool, each by a query of the records starting in it
/// ([`IndexedFile::query`] by [`Rule::StartsIn`]), and hands them on in
/// order: `fill(records, buffer)` reads a piece into a buffer (a new one,
/// `new_buffer(piece)`, or one that held an earlier piece, which it should
/// clear), `append(buffer)` takes each filled buffer in piece order
/// ([`crate::gather::fill_in_order`]: buffers are reused, so that only the
/// caller's output is large fresh memory). The error of the first failing
/// piece, in order.
pub fn read_in_order<B: Send>(
    file: &IndexedFile,
    pieces: &[Region],
    new_buffer: impl Fn(Region) -> B + Sync,
    fill: impl Fn(&mut Records<'_>, &mut B) -> Result<(), Error> + Sync,
    append: impl FnMut(&B) -> Result<(), Error> + Send,
) -> Result<(), Error> {
    crate::gather::fill_in_order(
        pieces.len(),
        |i| new_buffer(pieces[i]),
        |i, buffer| fill(&mut file.query(pieces[i], Rule::StartsIn)?, buffer),
        append,
    )
}

/// About how many records `region` of `file` holds, from its index: the
/// reference's record count (or the unplaced count), scaled by the share
/// of the reference's compressed bytes the region spans, with a margin; 0
/// for CRAM (its `.crai` holds no counts). Only sizes buffers (they grow
/// when it is short), so it need not be exact.
pub fn estimate_records(file: &IndexedFile, region: Region) -> usize {
    let Some((indexed, index)) = file.indexed() else { return 0 };
    if region.ref_id < 0 {
        return index.n_no_coor().unwrap_or(0) as usize;
    }
    let tid = region.ref_id as usize;
    let (Some(span), Some((mapped, unmapped))) = (index.reference_span(tid), index.mapped_unmapped(tid)) else { return 0 };
    let n = mapped + unmapped;
    let (first, last) = (span.start.compressed(), span.end.compressed());
    let at = |pos: i64, default: u64| {
        super::start_offset(indexed, index, region.ref_id, pos).map_or(default, |v| v.compressed()).clamp(first, last)
    };
    let from = if region.start == i64::MIN { first } else { at(region.start, first) };
    let to = if region.end == i64::MAX { last } else { at(region.end, last) };
    if last <= first {
        return n as usize;
    }
    // Index offsets are block starts: a block (<= 64 KiB) of slack at each
    // end, and 10 % for uneven density.
    let share = (to.saturating_sub(from) + (128 << 10)) as f64 / (last - first) as f64;
    ((n as f64 * share * 1.1) as u64).min(n) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::indexed::IndexedOptions;
    use std::path::Path;

    fn normal() -> IndexedFile {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden/snp-pileup/normal.bam");
        IndexedFile::open(&path, &IndexedOptions::default(), &|_| {}).unwrap()
    }

    fn one_query(file: &IndexedFile, region: Region) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        file.query(region, Rule::StartsIn).unwrap().for_each_record(|r| out.push(r.as_bytes().to_vec())).unwrap();
        out
    }

    #[test]
    fn pieces_tile_the_region_and_give_its_records_in_order() {
        let file = normal();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        pool.install(|| {
            for region in [Region::whole(0), Region { ref_id: 0, start: 5000, end: 40_000 }, Region::unplaced()] {
                let pieces = plan(&file, region, 16 << 10).unwrap();
                assert_eq!(pieces.first().map(|p| p.start), Some(region.start));
                assert_eq!(pieces.last().map(|p| p.end), Some(region.end));
                assert!(pieces.windows(2).all(|w| w[0].end == w[1].start && w[0].ref_id == w[1].ref_id));
                if region.ref_id >= 0 {
                    assert!(pieces.len() > 2, "{region}: {pieces:?}");
                }
                let mut got = Vec::new();
                let fill = |records: &mut Records<'_>, buffer: &mut Vec<Vec<u8>>| {
                    buffer.clear();
                    records.for_each_record(|r| buffer.push(r.as_bytes().to_vec()))
                };
                read_in_order(&file, &pieces, |_| Vec::new(), fill, |b| Ok(got.extend_from_slice(b))).unwrap();
                assert_eq!(got, one_query(&file, region), "{region}");
                let estimate = estimate_records(&file, region);
                assert!(estimate >= got.len() * 9 / 10, "{region}: {estimate} for {}", got.len());
            }
        });
        // On one thread, one piece.
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(one.install(|| plan(&file, Region::whole(0), 1)).unwrap(), [Region::whole(0)]);
    }
}
