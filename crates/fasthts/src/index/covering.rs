//! Whether an index describes all of a file, and so whether a whole-file
//! job reads through it or sequentially.

use super::{usable_index, Index, Indexed};
use crate::bam::BamFile;
use crate::bgzf::VirtualOffset;
use crate::report::{Report, Warning};
use crate::Error;

/// Where the records `index` places end in the file: the latest end of any
/// of its chunks or reference spans; `None` when it places no record.
fn placed_end(index: &Index) -> Option<VirtualOffset> {
    let chunk_ends = index.references().iter().flat_map(|r| r.bins().iter().flat_map(|b| b.chunks.iter().map(|c| c.end)));
    let span_ends = index.references().iter().filter_map(|r| r.metadata().map(|m| m.ref_end));
    chunk_ends.chain(span_ends).max()
}

/// Checks that `index` places every record of `file` that has a
/// reference, so that a job reading a whole file's placed records by
/// position through it (depth without a region, snp-pileup, a plan) loses
/// none. Two checks, cheap next to such a job:
///
/// * the references' spans (from the metadata of each reference with
///   records, in reference order) follow one another with no gap from the
///   first record on: a reference the index has no records on, whose
///   records lie between others, is found without reading any record;
/// * from where the last record it places ends, only records without a
///   reference (or nothing) follow to the end of the file: an index made
///   for a prefix of the file (the same leading BGZF blocks: the file cut
///   after some records, re-terminated, then indexed), whose offsets are
///   all valid and check out block by block
///   ([`crate::index::verify_index`]), is found. This reads the file from
///   there (its unplaced records, in a sorted file; the whole file for an
///   index that places nothing). An end past the file's last block of data
///   leaves nothing to read.
///
/// Fails with [`Error::IndexMismatch`]. A job that reads every record
/// region by region checks more, after reading ([`crate::region::check_coverage`]).
pub fn check_placed_coverage<F: Indexed + ?Sized>(file: &F, index: &Index) -> Result<(), Error> {
    let bytes = file.bytes();
    let floor = file.first_record_offset();
    let name = |tid: usize| file.header().references.get(tid).map_or("?", |r| r.name.as_str());
    let spans: Vec<(usize, &crate::index::Metadata)> = index
        .references()
        .iter()
        .enumerate()
        .filter_map(|(tid, r)| r.metadata().filter(|m| m.n_mapped + m.n_unmapped > 0).map(|m| (tid, m)))
        .collect();
    // An index without metadata (older writers) has no spans to chain.
    let chained = index.references().iter().all(|r| r.bins().is_empty() || r.metadata().is_some());
    if chained {
        let mut expected = same_place(bytes, floor);
        for &(tid, m) in &spans {
            let begins = same_place(bytes, m.ref_beg);
            if begins != expected {
                return Err(Error::IndexMismatch(format!(
                    "the records it places on {} begin at {begins}, not at {expected} where those before them end: it leaves records out",
                    name(tid)
                )));
            }
            expected = same_place(bytes, m.ref_end);
        }
    }
    let from = placed_end(index).map_or(floor, |end| end.max(floor));
    let marker = crate::bgzf::EOF_MARKER.len();
    let data_end = if bytes.ends_with(&crate::bgzf::EOF_MARKER) { bytes.len() - marker } else { bytes.len() } as u64;
    if from.compressed() >= data_end {
        // Past the last block with data (an index made for another
        // encoding of the same records may end inside the EOF marker): no
        // record can follow.
        return Ok(());
    }
    let fits = crate::bgzf::Block::parse(bytes, from.compressed()).is_ok_and(|b| u32::from(from.uncompressed()) <= b.uncompressed_size);
    if !fits {
        return Err(Error::IndexMismatch(format!("the records it places end at {from}, which is not a place in the file's blocks")));
    }
    match file.first_placed_from(from)? {
        None => Ok(()),
        Some((at, ref_id)) => Err(Error::IndexMismatch(format!(
            "the records it places end at {from}, but a record on {} follows at {at}: it describes only the start of the file",
            usize::try_from(ref_id).map_or("?", name)
        ))),
    }
}

/// `at` written as the start of a block when it is the end of one (htslib
/// writes the offset past a record either way), past empty blocks: two
/// offsets of one place in `bytes` are then equal.
fn same_place(bytes: &[u8], mut at: VirtualOffset) -> VirtualOffset {
    while let Ok(block) = crate::bgzf::Block::parse(bytes, at.compressed()) {
        let next = block.next_offset();
        if u32::from(at.uncompressed()) != block.uncompressed_size || next as usize >= bytes.len() {
            break;
        }
        match VirtualOffset::new(next, 0) {
            Some(v) => at = v,
            None => break,
        }
    }
    at
}

/// Whether `index` describes all of `file` for a whole-file job that reads
/// the placed records by position through it (depth without a region,
/// snp-pileup, the Python package's plans and pysam-style `fetch()`), which
/// has no coverage check of its own ([`crate::region::check_coverage`] is for jobs
/// that read every record region by region, as flagstat): every record
/// with a reference lies where the index places records
/// ([`check_placed_coverage`]). One that does not (made for a
/// prefix of the file) is reported ([`Warning::ReadingSequentially`]) and
/// the job reads the file as it would without an index: sequentially, or
/// through an index built from it in memory ([`replace_if_not_covering`]).
/// An error reading the file is returned.
pub fn index_covers<F: Indexed + ?Sized>(file: &F, index: &Index, report: &dyn Report) -> Result<bool, Error> {
    match not_covering(file, index)? {
        None => Ok(true),
        Some(warning) => {
            report.warning(warning);
            Ok(false)
        }
    }
}

/// As [`index_covers`], for a job that reads through an index in any case
/// (snp-pileup, Python's plans): `None` when `index` describes the whole
/// file; else the index `build` makes from the file (given the format of
/// the one replaced: for a BAM, [`build_index`](super::build_index)), and the failed check is
/// reported once it is made, so that an error of `build` (a file not
/// sorted by coordinate) is the job's only word.
pub fn replace_if_not_covering<F: Indexed + ?Sized>(
    file: &F,
    index: &Index,
    report: &dyn Report,
    build: impl FnOnce(crate::index::IndexFormat) -> Result<Index, Error>,
) -> Result<Option<Index>, Error> {
    match not_covering(file, index)? {
        None => Ok(None),
        Some(warning) => {
            let built = build(index.format())?;
            report.warning(warning);
            Ok(Some(built))
        }
    }
}

/// The warning of an `index` that does not describe all of `file`
/// ([`check_placed_coverage`]), or `None` when it does.
fn not_covering<F: Indexed + ?Sized>(file: &F, index: &Index) -> Result<Option<Warning>, Error> {
    match check_placed_coverage(file, index) {
        Ok(()) => Ok(None),
        Err(e @ Error::IndexMismatch(_)) => Ok(Some(Warning::ReadingSequentially { path: file.path().to_path_buf(), reason: e.to_string() })),
        Err(e) => Err(e),
    }
}

/// The index a whole-file job that reads placed records by position
/// (depth without a region) reads `bam` through: the [`usable_index`], if
/// it describes the whole file ([`index_covers`]); else `None`, and the
/// file is read sequentially (which reports the file's own errors, should
/// the check fail to read it).
pub(crate) fn covering_index(bam: &BamFile, report: &dyn Report) -> Option<Index> {
    let index = usable_index(bam, report)?;
    index_covers(bam, &index, report).unwrap_or(false).then_some(index)
}

/// Runs a whole-file job as flagstat does: through `index` when there is
/// one (`by_regions`), else sequentially (`sequential`), and sequentially
/// too when reading through the index fails: the index is only a way to
/// read in parallel, and the sequential reading reports the file's own
/// errors as samtools would. An index that turns out not to describe the
/// file is reported ([`Warning::ReadingSequentially`]).
pub fn by_index_or_sequentially<T>(
    bam: &BamFile,
    index: Option<&Index>,
    by_regions: impl FnOnce(&Index) -> Result<T, Error>,
    sequential: impl FnOnce() -> Result<T, Error>,
    report: &dyn Report,
) -> Result<T, Error> {
    match index.and_then(|index| indexed_or_sequential(bam, by_regions(index), report)) {
        Some(t) => Ok(t),
        None => sequential(),
    }
}

/// The result of a whole-file job run through the index, or `None` when
/// the file is to be read sequentially instead (see
/// [`by_index_or_sequentially`]).
pub(crate) fn indexed_or_sequential<T>(bam: &BamFile, indexed: Result<T, Error>, report: &dyn Report) -> Option<T> {
    match indexed {
        Ok(t) => Some(t),
        Err(e) => {
            if let Error::IndexMismatch(_) = e {
                report.warning(Warning::ReadingSequentially { path: bam.path().to_path_buf(), reason: e.to_string() });
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::find_index;
    use crate::test_support::{age, data, scratch, Kept};

    /// small.bam's records written again in two runs of BGZF blocks, the
    /// first holding its header and first `n` records: `(whole, prefix)`,
    /// the whole file and the first run alone, re-terminated (an index of
    /// the prefix has only offsets valid in the whole file).
    fn split_small_bam(n: usize) -> (Vec<u8>, Vec<u8>) {
        let raw = crate::bgzf::decompress_all(&std::fs::read(data("small.bam")).unwrap()).unwrap();
        let u32_at = |p: usize| u32::from_le_bytes(raw[p..p + 4].try_into().unwrap()) as usize;
        let mut p = 8 + u32_at(4);
        let n_ref = u32_at(p);
        p += 4;
        for _ in 0..n_ref {
            p += 4 + u32_at(p) + 4;
        }
        for _ in 0..n {
            p += 4 + u32_at(p);
        }
        let mut head = crate::bgzf::compress_all(&raw[..p], 1);
        head.truncate(head.len() - crate::bgzf::EOF_MARKER.len());
        let whole = [&head[..], &crate::bgzf::compress_all(&raw[p..], 1)[..]].concat();
        (whole, [&head[..], &crate::bgzf::EOF_MARKER[..]].concat())
    }

    /// Issue 39: a whole-file job by position reads through an index only
    /// if it places every placed record of the file: not one made for a
    /// prefix that ends among the placed records (reported, naming the
    /// file), but one whose prefix holds them all (ending among the
    /// unplaced records, which such a job does not read), as one of the
    /// whole file.
    #[test]
    fn a_whole_file_job_by_position_reads_through_an_index_that_places_every_record() {
        let dir = scratch("covering");
        let bam_path = dir.join("x.bam");
        let placed = 869 + 8 + 743 + 5 + 463 + 4 + 1163 + 12;
        for (n, covers) in [(1000, false), (0, false), (placed, true), (placed + 10, true), (placed + 28, true)] {
            let (whole, prefix) = split_small_bam(n);
            std::fs::write(&bam_path, &prefix).unwrap();
            let index = crate::index::build(&BamFile::open(&bam_path).unwrap(), crate::index::IndexFormat::Bai).unwrap();
            crate::index::write_index(&index, dir.join("x.bam.bai")).unwrap();
            std::fs::write(&bam_path, &whole).unwrap();
            age(&bam_path, 60);
            let bam = BamFile::open(&bam_path).unwrap();
            let kept = Kept::default();
            assert_eq!(covering_index(&bam, &kept).is_some(), covers, "prefix of {n} records");
            assert_eq!(index_covers(&bam, &find_index(&bam, &kept).unwrap().unwrap(), &kept).unwrap(), covers);
            let warnings = kept.warnings();
            if covers {
                assert!(warnings.is_empty(), "{warnings:?}");
            } else {
                let start = format!("{}: the index does not match the data file (the records it places end at ", bam_path.display());
                assert_eq!(warnings.len(), 2, "{warnings:?}");
                assert!(warnings.iter().all(|w| w.starts_with(&start) && w.ends_with("; reading the file sequentially")), "{warnings:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The spans of the references the index has records on must follow
    /// one another from the first record: one that has no records on a
    /// reference whose records lie between others' (as of a copy made
    /// before they were written) is found without reading a record. Its
    /// records may end inside the EOF marker (an index made for another
    /// encoding of the same records, as one of samtools' test files has),
    /// not at an offset that is no place in the file's blocks.
    #[test]
    fn an_index_that_leaves_a_reference_out_or_ends_off_the_blocks_does_not_cover() {
        use crate::index::{IndexFormat, Metadata, ReferenceIndex};
        let bam = BamFile::open(data("small.bam")).unwrap();
        let index = crate::index::build(&bam, IndexFormat::Bai).unwrap();
        let check = |index: &Index| check_placed_coverage(&bam, index).map_err(|e| e.to_string());
        assert_eq!(check(&index), Ok(()));
        let with = |tid: usize, r: ReferenceIndex| {
            let mut references = index.references().to_vec();
            references[tid] = r;
            Index::new(IndexFormat::Bai, references, index.n_no_coor())
        };
        let err = check(&with(1, ReferenceIndex::new(Vec::new(), Vec::new(), None))).unwrap_err();
        assert!(err.contains("(the records it places on chr4 begin at ") && err.ends_with(": it leaves records out)"), "{err}");
        let last = &index.references()[4];
        let m = *last.metadata().unwrap();
        let ending_at = |end: VirtualOffset| {
            let mut bins = last.bins().to_vec();
            for chunk in bins.iter_mut().flat_map(|b| b.chunks.iter_mut()).filter(|c| c.end == m.ref_end) {
                chunk.end = end;
            }
            with(4, ReferenceIndex::new(bins, last.linear_index().to_vec(), Some(Metadata { ref_end: end, ..m })))
        };
        let len = bam.bytes().len() as u64;
        assert_eq!(check(&ending_at(VirtualOffset::new(len - 10, 0).unwrap())), Ok(()));
        let off_the_blocks = VirtualOffset::new(m.ref_end.compressed() + 3, 0).unwrap();
        let err = check(&ending_at(off_the_blocks)).unwrap_err();
        assert!(err.ends_with(&format!("end at {off_the_blocks}, which is not a place in the file's blocks)")), "{err}");
    }
}
