//! `flagstat`: samtools flagstat, through the index when the BAM has a
//! usable one, else sequentially; on one machine or planned, run in parts
//! and gathered (the Python package's dask layer).

use super::{
    by_index_or_sequentially, find_index, indexed_or_sequential, usable_index, warn_if_stream_truncated,
    warn_if_truncated, with_threads, Report,
};
use crate::bam::BamFile;
use crate::cram::{self, CramOptions, Fields};
use crate::flagstat::{self, FlagStat, FlagTally};
use crate::index::{no_index_for_regions, Index};
use crate::region::indexed::{IndexedFile, IndexedOptions};
use crate::input::{self, Format, Input};
use crate::region::{self, Plan, Region, Span};
use crate::Error;
use std::path::Path;

/// Compressed bytes per region when counting through the index: large
/// enough that re-reading the block at each cut costs under 1%, small
/// enough to balance the threads.
pub const REGION_BYTES: u64 = 8 << 20;

/// How to run flagstat.
#[derive(Clone, Debug)]
pub struct FlagstatOptions {
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Compressed bytes per region when reading through the index.
    pub region_bytes: u64,
}

impl Default for FlagstatOptions {
    fn default() -> Self {
        FlagstatOptions { threads: None, region_bytes: REGION_BYTES }
    }
}

/// Flag statistics of the BAM or SAM file at `path` (`-` for standard
/// input), equal to samtools flagstat's: a BAM with a usable index
/// ([`super::find_index`]) is counted region by region in parallel, and
/// sequentially if that fails ([`super::by_index_or_sequentially`]);
/// other input sequentially, a stream (a pipe, standard input) as it
/// arrives, inflated ahead on the other threads. A URL of a BAM with an
/// index is counted in parts of the file, each fetched by the thread that
/// counts it ([`super::remote_by_parts`]); without one, as a stream. A
/// CRAM file is counted in parts of whole containers on all threads,
/// decoding only the fields flagstat needs (no reference is read).
pub fn flagstat_path(path: &Path, options: &FlagstatOptions, report: &dyn Report) -> Result<FlagStat, Error> {
    let threads = Some(fasthts_io::pool::thread_count_for(options.threads, fasthts_io::pool::blocks_in_file(path)));
    let required = CramOptions { fields: Fields::Flagstat, ..CramOptions::default() };
    with_threads(threads, || {
        // An indexed BAM behind a URL: fetched and counted by parts.
        let by_parts = super::remote_by_parts(path, report, |records| {
            let mut tally = FlagTally::default();
            records.for_each_record(|r| tally.add(r))?;
            Ok(tally.stats())
        })?;
        if let Some(parts) = by_parts {
            let mut total = FlagStat::default();
            parts.iter().for_each(|p| total.merge(p));
            return Ok(total);
        }
        let peeked = input::peek(path)?;
        if peeked.format() == Format::Cram && peeked.is_regular_file() && path.as_os_str() != "-" {
            super::warn_if_cram_truncated(&cram::CramReader::open(path, &required)?, report);
            let part_bytes = options.region_bytes.min(cram::COUNTING_PART_BYTES);
            let parts = cram::scatter(path, &required, part_bytes, |part| {
                let mut tally = FlagTally::default();
                part.for_each_core(|c| {
                    tally.add_fields(c.flag, c.ref_id, c.mate_ref_id, c.mapq);
                    Ok(())
                })?;
                Ok(tally.stats())
            })?;
            let mut total = FlagStat::default();
            parts.iter().for_each(|p| total.merge(p));
            return Ok(total);
        }
        flagstat_opened(peeked.open_with(&required)?, path, options, report)
    })
}

/// [`flagstat_path`] of an opened input.
fn flagstat_opened(input: Input, path: &Path, options: &FlagstatOptions, report: &dyn Report) -> Result<FlagStat, Error> {
    match input {
        Input::Bam(bam) => {
            warn_if_truncated(&bam, report);
            let index = usable_index(&bam, report);
            let by_regions = |index: &Index| flagstat::count_indexed(&bam, index, options.region_bytes);
            by_index_or_sequentially(&bam, index.as_ref(), by_regions, || flagstat::count_sequential(&bam), report)
        }
        Input::Stream(mut stream) => {
            let mut tally = FlagTally::default();
            stream.for_each_record(|r| {
                tally.add(r);
                Ok::<(), Error>(())
            })?;
            warn_if_stream_truncated(&stream, report);
            Ok(tally.stats())
        }
        Input::Sam(mut sam) => {
            // Positions are not counted: SAM's 64-bit ones are fine (samtools counts them).
            sam.set_positions(crate::sam::Positions::Unread);
            let mut stats = FlagStat::default();
            sam.for_each_record(|r| {
                stats.add(&r);
                Ok::<(), Error>(())
            })
            .map_err(|e| e.with_path(path))?;
            super::report_sam_warnings(&mut sam, path, report);
            Ok(stats)
        }
        Input::Cram(mut cram) => {
            super::warn_if_cram_truncated(&cram, report);
            let mut tally = FlagTally::default();
            cram.for_each_core(|c| {
                tally.add_fields(c.flag, c.ref_id, c.mate_ref_id, c.mapq);
                Ok(())
            })?;
            Ok(tally.stats())
        }
    }
}

/// The plan of a flagstat run in parts ([`flagstat_regions`] on each,
/// then [`flagstat_gather`]): the regions of `options.region_bytes` that
/// [`flagstat_path`] would read through the index, or `None` when it
/// would read the file sequentially (no usable index; SAM input).
pub fn flagstat_plan(path: &Path, options: &FlagstatOptions, report: &dyn Report) -> Result<Option<Vec<Region>>, Error> {
    // A stream is counted once, as it arrives, not planned (and not opened
    // here: a FIFO would give its data to this look and none to the count).
    if path.as_os_str() == "-" || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(None);
    }
    if input::remote_url(path).is_some() {
        return Ok(remote_bam(path)?.and_then(IndexedFile::into_bam).map(|(bam, index)| {
            warn_if_truncated(&bam, report);
            region::plan(&bam, &index, Plan::BalancedBytes(options.region_bytes))
        }));
    }
    Ok(match input::open(path)? {
        Input::Bam(bam) => {
            warn_if_truncated(&bam, report);
            usable_index(&bam, report).map(|index| region::plan(&bam, &index, Plan::BalancedBytes(options.region_bytes)))
        }
        Input::Stream(_) | Input::Sam(_) | Input::Cram(_) => None,
    })
}

/// One part of a planned flagstat: the flag statistics of the records
/// starting in `regions` of the BAM at `path` (read through its usable
/// index, in parallel on `options.threads`), and each region's span of the
/// file for [`flagstat_gather`]'s coverage check.
pub fn flagstat_regions(
    path: &Path,
    regions: &[Region],
    options: &FlagstatOptions,
    report: &dyn Report,
) -> Result<(FlagStat, Vec<Span>), Error> {
    let no_index = || Error::Message("no usable index for a planned flagstat".into()).with_path(path);
    let (local, remote);
    let (bam, index) = if input::remote_url(path).is_some() {
        // Only the ranges of `regions` are fetched.
        let mut file = remote_bam(path)?.ok_or_else(no_index)?;
        with_threads(options.threads, || file.prefetch_regions(regions))?;
        remote = file;
        remote.bam().ok_or_else(no_index)?
    } else {
        let bam = BamFile::open(path)?;
        let index = find_index(&bam, report)?.ok_or_else(no_index)?;
        local = (bam, index);
        (&local.0, &local.1)
    };
    let parts =
        with_threads(options.threads, || region::scatter_with_spans(bam, index, regions, |_, records| flagstat::count_region(records)))?;
    let mut total = FlagStat::default();
    let mut spans = Vec::with_capacity(parts.len());
    for (stats, span) in parts {
        total.merge(&stats);
        spans.push(span);
    }
    Ok((total, spans))
}

/// The flag statistics of a planned flagstat from its parts (each a
/// [`flagstat_regions`] result, in plan order; an error if any part
/// failed), or `None` when the file is to be counted sequentially instead
/// ([`flagstat_path`]'s rule: the parts failed, or their spans do not
/// cover the file exactly, so the index does not describe it).
pub fn flagstat_gather(
    path: &Path,
    regions: &[Region],
    parts: Result<Vec<(FlagStat, Vec<Span>)>, Error>,
    report: &dyn Report,
) -> Result<Option<FlagStat>, Error> {
    let bam = match input::remote_url(path) {
        Some(_) => {
            let (mut bam, _) = remote_bam(path)?.and_then(IndexedFile::into_bam).ok_or_else(|| no_index_for_regions(path))?;
            // What follows the last region, which the coverage check reads.
            let last = parts.as_ref().ok().and_then(|p| p.iter().flat_map(|(_, spans)| spans.last()).last().map(|s| s.1.compressed()));
            bam.prefetch(&[(last.unwrap_or(0), u64::MAX)])?;
            bam
        }
        None => BamFile::open(path)?,
    };
    let gathered = parts.and_then(|parts| {
        region::check_coverage(&bam, regions.iter().zip(parts.iter().flat_map(|(_, spans)| spans.iter().copied())))?;
        let mut total = FlagStat::default();
        for (stats, _) in &parts {
            total.merge(stats);
        }
        Ok(total)
    });
    Ok(indexed_or_sequential(&bam, gathered, report))
}

/// The remote BGZF BAM at `path` (a URL, or `URL##idx##INDEX`) with its
/// index; `None` for another format or a BAM without an index (counted
/// sequentially, as it streams). The object is opened once: every range
/// read of it is of the version first seen.
pub(super) fn remote_bam(path: &Path) -> Result<Option<IndexedFile>, Error> {
    let text = path.to_str().unwrap_or_default();
    let (data, index) = match text.split_once("##idx##") {
        Some((data, index)) => (data, Some(std::path::PathBuf::from(index))),
        None => (text, None),
    };
    let peeked = input::peek(Path::new(data))?;
    if peeked.format() != Format::Bam(fasthts_io::compression::Compression::Bgzf) {
        return Ok(None);
    }
    let Some((object, head)) = peeked.remote_object() else { return Ok(None) };
    let options = IndexedOptions { index, ..IndexedOptions::default() };
    IndexedFile::open_remote_object(data, std::sync::Arc::clone(object), head, peeked.path(), &options)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{age, data, scratch, Kept};
    use super::*;

    fn options(threads: usize, region_bytes: u64) -> FlagstatOptions {
        FlagstatOptions { threads: Some(threads), region_bytes }
    }

    #[test]
    fn a_cram_counted_in_parts_of_containers_counts_as_the_bam_it_was_made_from() {
        if !fasthts_testgen::support::have_samtools() {
            return;
        }
        // Many small containers (no reference needed: bases stored as they
        // are), then slices of several references.
        let dir = scratch("flagstat-cram-parts");
        let want = flagstat::count_sequential(&BamFile::open(data("small.bam")).unwrap()).unwrap();
        for (name, slicing) in [("small", ["seqs_per_slice=50", "slices_per_container=2"]), ("multi-ref", ["seqs_per_slice=300", "multi_seq_per_slice=1"])] {
            let cram = dir.join(format!("{name}.cram"));
            let made = std::process::Command::new("samtools")
                .args(["view", "-C", "--output-fmt-option", "no_ref=1", "--output-fmt-option", slicing[0]])
                .args(["--output-fmt-option", slicing[1], "-o"])
                .arg(&cram)
                .arg(data("small.bam"))
                .status()
                .unwrap();
            assert!(made.success());
            let containers = cram::containers(&std::fs::File::open(&cram).unwrap()).unwrap();
            assert!(containers.len() > 5, "{name}: {} containers", containers.len());
            assert_eq!(containers.iter().any(|c| c.ref_id == -2), name == "multi-ref", "{name}");
            let kept = Kept::default();
            // One part per container, a few, one.
            for (threads, part_bytes) in [(3, 1), (2, 20_000), (1, u64::MAX)] {
                assert_eq!(flagstat_path(&cram, &options(threads, part_bytes), &kept).unwrap(), want, "{name} {threads} {part_bytes}");
            }
            assert!(kept.warnings().is_empty(), "{:?}", kept.warnings());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn indexed_planned_and_sequential_counts_agree() {
        let path = data("small.bam");
        let bam = BamFile::open(&path).unwrap();
        let want = flagstat::count_sequential(&bam).unwrap();
        let kept = Kept::default();
        for threads in [1, 3] {
            assert_eq!(flagstat_path(&path, &options(threads, 4096), &kept).unwrap(), want);
            let opts = options(threads, 4096);
            let regions = flagstat_plan(&path, &opts, &kept).unwrap().expect("small.bam is indexed");
            assert!(regions.len() > 2);
            // In three parts, as tasks on several machines would.
            let mut parts = Vec::new();
            for chunk in regions.chunks(regions.len().div_ceil(3)) {
                parts.push(flagstat_regions(&path, chunk, &opts, &kept).unwrap());
            }
            assert_eq!(flagstat_gather(&path, &regions, Ok(parts), &kept).unwrap(), Some(want));
            // A failed part means counting sequentially, silently.
            assert_eq!(flagstat_gather(&path, &regions, Err(Error::Message("lost".into())), &kept).unwrap(), None);
        }
        assert!(kept.warnings().is_empty(), "{:?}", kept.warnings());
    }

    /// Writes to `target` the BAI of `bam` with reference `tid` emptied.
    fn write_index_without_reference(bam: &Path, tid: usize, target: &Path) {
        use crate::index::{Index, IndexFormat, ReferenceIndex};
        let index = crate::index::build(&BamFile::open(bam).unwrap(), IndexFormat::Bai).unwrap();
        let mut references = index.references().to_vec();
        references[tid] = ReferenceIndex::new(Vec::new(), Vec::new(), None);
        crate::index::write_index(&Index::new(IndexFormat::Bai, references, index.n_no_coor()), target).unwrap();
    }

    /// Writes to `target` the BAI of `bam` with its last chunk moved 1 MB
    /// past the end of the file.
    pub(crate) fn write_index_past_the_end(bam: &Path, target: &Path) {
        use crate::bgzf::VirtualOffset;
        use crate::index::{Bin, Index, IndexFormat, ReferenceIndex};
        let index = crate::index::build(&BamFile::open(bam).unwrap(), IndexFormat::Bai).unwrap();
        let mut references = index.references().to_vec();
        let tid = references.iter().rposition(|r| !r.bins().is_empty()).unwrap();
        let r = &references[tid];
        let mut bins: Vec<Bin> = r.bins().to_vec();
        let bin = bins.iter_mut().rev().find(|b| !b.chunks.is_empty() && b.id < 37450).unwrap();
        let last = bin.chunks.last_mut().unwrap();
        let past = std::fs::metadata(bam).unwrap().len() + (1 << 20);
        last.end = VirtualOffset::new(past, 0).unwrap();
        references[tid] = ReferenceIndex::new(bins, r.linear_index().to_vec(), r.metadata().copied());
        crate::index::write_index(&Index::new(IndexFormat::Bai, references, index.n_no_coor()), target).unwrap();
    }

    #[test]
    fn foreign_and_stale_indexes_mean_reading_sequentially() {
        let dir = scratch("flagstat");
        let path = dir.join("x.bam");
        std::fs::copy(data("small.bam"), &path).unwrap();
        let want = flagstat::count_sequential(&BamFile::open(&path).unwrap()).unwrap();
        let opts = options(2, 4096);
        // No index: planned as one sequential task.
        assert_eq!(flagstat_plan(&path, &opts, &Kept::default()).unwrap(), None);

        // An index of another file with other references: not used, silently.
        std::fs::copy(data("long_ref.bam.csi"), dir.join("x.bam.csi")).unwrap();
        let kept = Kept::default();
        assert_eq!(flagstat_path(&path, &opts, &kept).unwrap(), want);
        assert_eq!(flagstat_plan(&path, &opts, &kept).unwrap(), None);
        assert!(kept.warnings().is_empty(), "{:?}", kept.warnings());
        std::fs::remove_file(dir.join("x.bam.csi")).unwrap();

        // An index whose chunks point past the end of the file (as one
        // made for a longer file): caught before reading, and read
        // sequentially.
        write_index_past_the_end(&path, &dir.join("x.bam.bai"));
        let kept = Kept::default();
        assert_eq!(flagstat_path(&path, &opts, &kept).unwrap(), want);
        let warnings = kept.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("lies past the end of the file"), "{warnings:?}");
        std::fs::remove_file(dir.join("x.bam.bai")).unwrap();

        // An index with as many references that does not describe the
        // file (as of a copy before chr2's records were written): reading
        // through it fails the coverage check, which is reported.
        write_index_without_reference(&path, 1, &dir.join("x.bam.bai"));
        let kept = Kept::default();
        assert_eq!(flagstat_path(&path, &opts, &kept).unwrap(), want);
        let warnings = kept.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let prefix = format!("{}: the index does not match the data file (region #3:", path.display());
        assert!(warnings[0].starts_with(&prefix) && warnings[0].ends_with("); reading the file sequentially"), "{warnings:?}");
        // The same decision when planned and gathered.
        let kept_planned = Kept::default();
        let regions = flagstat_plan(&path, &opts, &kept_planned).unwrap().unwrap();
        let parts = flagstat_regions(&path, &regions, &opts, &kept_planned).unwrap();
        assert_eq!(flagstat_gather(&path, &regions, Ok(vec![parts]), &kept_planned).unwrap(), None);
        assert_eq!(kept_planned.warnings(), warnings);

        // Older than the BAM: used with a warning, as htslib does; the
        // same mismatch is found.
        age(&dir.join("x.bam.bai"), 3600);
        let kept = Kept::default();
        assert_eq!(flagstat_path(&path, &opts, &kept).unwrap(), want);
        let warnings = kept.warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains(" is older than the data file "), "{warnings:?}");
        assert!(warnings[1].ends_with("; reading the file sequentially"), "{warnings:?}");
        // A stale index that describes the file is read through.
        crate::index::write_index(
            &crate::index::build(&BamFile::open(&path).unwrap(), crate::index::IndexFormat::Bai).unwrap(),
            dir.join("x.bam.bai"),
        )
        .unwrap();
        age(&dir.join("x.bam.bai"), 3600);
        let kept = Kept::default();
        assert_eq!(flagstat_path(&path, &opts, &kept).unwrap(), want);
        assert!(flagstat_plan(&path, &opts, &kept).unwrap().is_some());
        assert_eq!(kept.warnings().len(), 2, "{:?}", kept.warnings());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
