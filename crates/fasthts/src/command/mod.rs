//! The command layer: one function per job, with a typed options struct,
//! called alike by the `fasthts` command line and the Python package.
//!
//! Every decision a user can observe is taken once, here or by a library
//! function these call: which index is usable ([`find_index`]), when a
//! file is read through its index and when sequentially
//! ([`by_index_or_sequentially`]), which format an output name asks for
//! ([`crate::sort::OutputFormat::from_path`]), where an index is written
//! ([`crate::indexer::split_index_name`]), how a memory size is read
//! ([`parse_memory_size`]) and a region string
//! ([`crate::region::Region::parse`]). Front ends turn their arguments into
//! the options and present what comes back: results, errors, and what a job
//! reports on the way through a [`Report`] (warnings; a tool's own progress
//! text). Threads come from the options, as samtools' `-@`
//! (`fasthts_io::pool::with_threads`).
//!
//! ```
//! use fasthts::command::{self, FlagstatOptions, Warning};
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam");
//! let stats = command::flagstat_path(path.as_ref(), &FlagstatOptions::default(), &|w: Warning| eprintln!("warning: {w}"))?;
//! print!("{}", stats.to_default_text());
//! # Ok::<(), fasthts::Error>(())
//! ```

mod depth;
mod flagstat;
mod index;
mod quickcheck;
mod snp_pileup;
mod sort;
mod view;

pub use depth::{depth_file, depth_to};
pub use flagstat::{flagstat_gather, flagstat_path, flagstat_plan, flagstat_regions, FlagstatOptions, REGION_BYTES};
pub use index::{idxstats, index_file, index_format, index_target, IdxstatsOptions, IndexOptions};
pub use quickcheck::{quickcheck, QuickcheckFailure, QuickcheckOptions};
pub use snp_pileup::{snp_pileup, snp_pileup_block, snp_pileup_plan, write_snp_pileup, SnpPileupFileOptions};
pub use sort::{check_memory_per_thread, parse_tag, sort_file, sort_order, SortFileOptions, MIN_MEMORY_PER_THREAD};
pub use view::{view_file, HeaderMode, SkippedRegion, ViewOptions, VIEW_WINDOW_BASES};

pub use crate::report::{Report, Warning};

use crate::bam::BamFile;
use crate::bgzf::{Block, VirtualOffset};
use crate::index::Index;
use crate::input::Input;
use crate::region::{self, Indexed};
use crate::Error;
use fasthts_io::pool::{thread_count, with_threads};
use std::path::{Path, PathBuf};

/// Warns, as htslib does, when a BAM lacks its EOF marker.
fn warn_if_truncated(bam: &BamFile, report: &dyn Report) {
    if !bam.has_eof_marker() {
        report.warning(Warning::MissingEofMarker { path: bam.path().to_path_buf() });
    }
}

/// Warns, as htslib does, when a CRAM file lacks its EOF container.
fn warn_if_cram_truncated(cram: &crate::cram::CramReader, report: &dyn Report) {
    if cram.missing_eof_container() {
        report.warning(Warning::MissingEofMarker { path: cram.path().to_path_buf() });
    }
}

/// Warns, as for a file, when a BGZF stream read to its end lacked the EOF
/// marker (htslib cannot tell on a pipe; the stream reader can).
fn warn_if_stream_truncated(stream: &crate::bam::BamStream, report: &dyn Report) {
    if stream.missing_eof_marker() {
        report.warning(Warning::MissingEofMarker { path: stream.path().to_path_buf() });
    }
}

/// Reports the record warnings a SAM input met (htslib prints one for each
/// record as it reads it): those kept one by one
/// ([`crate::sam::MAX_KEPT_WARNINGS`]), then how many more.
fn report_sam_warnings<R: std::io::Read>(sam: &mut crate::sam::SamReader<R>, path: &Path, report: &dyn Report) {
    let kept = sam.take_warnings();
    let more = sam.warning_count().saturating_sub(kept.len() as u64);
    for warning in kept {
        report.warning(Warning::SamRecord { path: path.to_path_buf(), warning });
    }
    if more > 0 {
        report.warning(Warning::MoreSamRecords { path: path.to_path_buf(), count: more });
    }
}

/// The warnings due once an input has been read through: a BAM stream's
/// missing EOF marker, a SAM input's record warnings.
fn warn_after_reading(input: &mut Input, path: &Path, report: &dyn Report) {
    match input {
        Input::Stream(stream) => warn_if_stream_truncated(stream, report),
        Input::Sam(sam) => report_sam_warnings(sam, path, report),
        Input::Bam(_) | Input::Cram(_) => {}
    }
}

/// Reads samtools' memory sizes: a whole number of bytes with an optional
/// `K`, `M` or `G` (powers of 1024, either case), which may be followed by
/// `B` (`768M`, `2G`, `2g`, `2GB`, `5Mb`, `2000M`): what samtools' `-m`
/// takes with a meaning (it reads a number and looks at the next letter
/// only, so it reads `2GB` as `2G`, and `1.5G` as 1 byte). A refusal shows
/// the accepted forms.
///
/// ```
/// assert_eq!(fasthts::command::parse_memory_size("768M")?, 768 << 20);
/// assert_eq!(fasthts::command::parse_memory_size("2g")?, 2 << 30);
/// assert_eq!(fasthts::command::parse_memory_size("2GB")?, 2 << 30);
/// assert!(fasthts::command::parse_memory_size("12X").is_err());
/// # Ok::<(), fasthts::Error>(())
/// ```
pub fn parse_memory_size(text: &str) -> Result<usize, Error> {
    let s = text.trim();
    let invalid = || {
        Error::InvalidArgument(format!(
            "invalid memory size {s:?}: give a whole number of bytes, optionally with K, M or G (e.g. 768M, 2G, 2g, 2GB, 2000M)"
        ))
    };
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, suffix) = s.split_at(digits);
    let unit: usize = match suffix.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" => 1 << 10,
        "M" | "MB" => 1 << 20,
        "G" | "GB" => 1 << 30,
        _ => return Err(invalid()),
    };
    // Digits only: a sign or a fraction is refused rather than misread.
    let n: usize = match number.parse() {
        Ok(n) => n,
        Err(_) if number.is_empty() => return Err(invalid()),
        Err(_) => return Err(Error::InvalidArgument(format!("memory size {s:?} is too large"))),
    };
    n.checked_mul(unit).ok_or_else(|| Error::InvalidArgument(format!("memory size {s:?} is too large")))
}

/// What lies beside a BAM for an index (see [`locate_index`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexLocation {
    /// No index file.
    Missing,
    /// An index file older than the BAM: not to be used.
    Stale(PathBuf),
    /// An index file to use.
    Found(PathBuf),
}

/// The index file beside `bam_path` ([`crate::indexer::locate`]'s
/// names), unless it is older than the BAM: a BAM written again after it
/// was indexed has another layout, and htslib does not trust such an index.
pub fn locate_index(bam_path: &Path) -> IndexLocation {
    let Some(found) = crate::indexer::locate(bam_path) else { return IndexLocation::Missing };
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (modified(&found), modified(bam_path)) {
        (Some(index), Some(data)) if index < data => IndexLocation::Stale(found),
        _ => IndexLocation::Found(found),
    }
}

/// Reads the index at `path` for `bam`, refusing (with
/// [`Error::IndexMismatch`]) one whose number of references differs from
/// the BAM header's: htslib writes one entry per header reference, so such
/// an index was made for another file, and reading through it would skip
/// data silently.
pub fn load_index<F: Indexed + ?Sized>(bam: &F, path: &Path) -> Result<Index, Error> {
    let index = Index::from_path(path).map_err(|e| Error::from(e).with_path(path))?;
    let (in_index, in_header) = (index.references().len(), bam.header().references.len());
    if in_index != in_header {
        let what = format!("{in_index} references in the index, {in_header} in the header of {}", bam.path().display());
        return Err(Error::IndexMismatch(what).with_path(path));
    }
    Ok(index)
}

/// The index of `bam` if it has one beside it ([`locate_index`], then
/// [`load_index`]), its spans checked against the file
/// ([`verify_index`]). One older than the BAM is used with a warning, as
/// htslib does, after a closer check (each chunk must start at a BGZF
/// block of the file). An index that cannot be read, was made for another
/// file or points outside this one is an error
/// ([`Error::IndexMismatch`] for the last two).
pub fn find_index<F: Indexed + ?Sized>(bam: &F, report: &dyn Report) -> Result<Option<Index>, Error> {
    let Some((index, path, stale)) = find_unchecked_index(bam, report)? else { return Ok(None) };
    verify_index(bam, &index, stale).map_err(|e| e.with_path(&path))?;
    Ok(Some(index))
}

/// [`find_index`] before [`verify_index`]: the index, its path, and
/// whether it is stale (to be checked block by block).
fn find_unchecked_index<F: Indexed + ?Sized>(bam: &F, report: &dyn Report) -> Result<Option<(Index, PathBuf, bool)>, Error> {
    let (path, stale) = match locate_index(bam.path()) {
        IndexLocation::Missing => return Ok(None),
        IndexLocation::Stale(index) => {
            report.warning(Warning::StaleIndex { index: index.clone(), data: bam.path().to_path_buf() });
            (index, true)
        }
        IndexLocation::Found(path) => (path, false),
    };
    let index = load_index(bam, &path)?;
    Ok(Some((index, path, stale)))
}

/// Checks the spans of `index` against `bam`: every offset it holds
/// (chunks, linear index, metadata) lies within the file, so reading
/// through it cannot silently stop short; with `thorough`, each chunk also
/// starts at a BGZF block of the file holding its offset. Fails with
/// [`Error::IndexMismatch`]. Costs no reading of the file unless
/// `thorough` (then one block header per chunk).
pub fn verify_index<F: Indexed + ?Sized>(bam: &F, index: &Index, thorough: bool) -> Result<(), Error> {
    let file = bam.bytes();
    let len = file.len() as u64;
    let names = &bam.header().references;
    for (tid, reference) in index.references().iter().enumerate() {
        let name = names.get(tid).map_or("?", |r| r.name.as_str());
        let outside = |what: &str, at: VirtualOffset| {
            Error::IndexMismatch(format!("{what} of {name} at {at} lies past the end of the file ({len} bytes)"))
        };
        for bin in reference.bins() {
            for chunk in &bin.chunks {
                if chunk.start.compressed() > len || chunk.end.compressed() > len {
                    return Err(outside("a chunk", chunk.start.max(chunk.end)));
                }
                if thorough && chunk.start < chunk.end {
                    let fits = Block::parse(file, chunk.start.compressed())
                        .is_ok_and(|b| u32::from(chunk.start.uncompressed()) <= b.uncompressed_size);
                    if !fits {
                        return Err(Error::IndexMismatch(format!("a chunk of {name} at {} is not the start of a record", chunk.start)));
                    }
                }
            }
        }
        if let Some(&at) = reference.linear_index().iter().find(|o| o.compressed() > len) {
            return Err(outside("the linear index", at));
        }
        if let Some(m) = reference.metadata() {
            if m.ref_beg.compressed() > len || m.ref_end.compressed() > len {
                return Err(outside("the span", m.ref_beg.max(m.ref_end)));
            }
        }
    }
    Ok(())
}

/// The sort order the header of `bam` declares (`@HD SO:`), if any.
fn declared_order(bam: &BamFile) -> Option<String> {
    let text = String::from_utf8_lossy(&bam.header().text);
    let hd = text.lines().find(|l| l.starts_with("@HD"))?;
    hd.split('\t').find_map(|f| f.strip_prefix("SO:")).map(str::to_owned)
}

/// The error for a BAM that is to be read through an index but is not
/// sorted by coordinate (what its header declares, else what indexing
/// found, `found`), or `None` when neither says so.
pub fn not_coordinate_sorted(bam: &BamFile, found: Option<&Error>) -> Option<Error> {
    let why = match declared_order(bam) {
        Some(order) if order != "coordinate" => format!("header says SO:{order}"),
        _ => {
            let unsorted = |e: &crate::index::IndexError| {
                use crate::index::IndexError::*;
                matches!(e, Unsorted { .. } | NotContinuous { .. } | NoCoorNotAtEnd { .. })
            };
            let mut e = found?;
            while let Error::WithPath { source, .. } = e {
                e = source;
            }
            match e {
                Error::Index(ix) if unsorted(ix) => ix.to_string(),
                _ => return None,
            }
        }
    };
    Some(Error::Message(format!("not coordinate-sorted ({why}); sort it by coordinate first (fasthts sort)")).with_path(bam.path()))
}

/// The error of a region query on SAM text that no index can describe
/// (plain or gzip-compressed SAM, a pipe, standard input): only a bgzipped
/// SAM file is read by region, through its CSI or BAI. `view`'s wording,
/// for the Python package's readers too.
pub fn sam_not_indexable(path: &Path) -> Error {
    Error::Message(
        "random alignment retrieval only works for indexed SAM.gz, BAM or CRAM files (a bgzipped SAM file is read through its index; plain or gzip SAM, pipes and standard input cannot be: bgzip it to a file, then fasthts index it)".into(),
    )
    .with_path(path)
}

/// The error of a region query on a file (a bgzipped SAM) that has no
/// index beside it and was given none; `view`'s wording.
pub fn no_index_for_regions(path: &Path) -> Error {
    Error::Message("cannot load index (regions are read through the index: fasthts index it first)".into()).with_path(path)
}

/// An index of `bam` made in memory, for a reader given no index file
/// (Python's `BamFile`); a BAM not sorted by coordinate is said to be so
/// ([`not_coordinate_sorted`]).
pub fn build_index(bam: &BamFile) -> Result<Index, Error> {
    if let Some(e) = not_coordinate_sorted(bam, None) {
        return Err(e);
    }
    crate::indexer::build(bam, crate::index::IndexFormat::Bai).map_err(|e| not_coordinate_sorted(bam, Some(&e)).unwrap_or(e))
}

/// The index a whole-file job (flagstat, `view -c`) of `bam` reads
/// through, if any. The index is only a way to read in parallel: one that
/// cannot be read or was made for another file means reading sequentially;
/// one that points outside the file ([`verify_index`]) too, and that is
/// reported, as a failed coverage check is.
pub(crate) fn usable_index(bam: &BamFile, report: &dyn Report) -> Option<Index> {
    let (index, _, stale) = find_unchecked_index(bam, report).unwrap_or(None)?;
    match verify_index(bam, &index, stale) {
        Ok(()) => Some(index),
        Err(e) => {
            report.warning(Warning::ReadingSequentially { path: bam.path().to_path_buf(), reason: e.to_string() });
            None
        }
    }
}

/// Whether `index` describes all of `file` for a whole-file job that reads
/// the placed records by position through it (depth without a region,
/// snp-pileup, the Python package's plans and pysam-style `fetch()`), which
/// has no coverage check of its own ([`region::check_coverage`] is for jobs
/// that read every record region by region, as flagstat): every record
/// with a reference lies where the index places records
/// ([`region::check_placed_coverage`]). One that does not (made for a
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
/// the one replaced: for a BAM, [`build_index`]), and the failed check is
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
/// ([`region::check_placed_coverage`]), or `None` when it does.
fn not_covering<F: Indexed + ?Sized>(file: &F, index: &Index) -> Result<Option<Warning>, Error> {
    match region::check_placed_coverage(file, index) {
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
fn indexed_or_sequential<T>(bam: &BamFile, indexed: Result<T, Error>, report: &dyn Report) -> Option<T> {
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
pub(crate) mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A report that keeps what it is told.
    #[derive(Default)]
    pub(crate) struct Kept {
        pub(crate) warnings: Mutex<Vec<Warning>>,
        pub(crate) messages: Mutex<String>,
    }

    impl Report for Kept {
        fn warning(&self, warning: Warning) {
            self.warnings.lock().unwrap().push(warning);
        }
        fn message(&self, text: &str) {
            self.messages.lock().unwrap().push_str(text);
        }
    }

    impl Kept {
        pub(crate) fn warnings(&self) -> Vec<String> {
            self.warnings.lock().unwrap().iter().map(|w| w.to_string()).collect()
        }
    }

    /// A file of the repository's tests/data.
    pub(crate) fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(name)
    }

    /// A fresh directory for one test.
    pub(crate) fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fasthts-command-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Sets the modification time of `path` `seconds` into the past.
    pub(crate) fn age(path: &Path, seconds: u64) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(seconds)).unwrap();
    }

    #[test]
    fn memory_sizes_as_samtools_reads_them() {
        assert_eq!(parse_memory_size("768M").unwrap(), 768 << 20);
        assert_eq!(parse_memory_size(" 1k ").unwrap(), 1024);
        assert_eq!(parse_memory_size("5").unwrap(), 5);
        assert_eq!(parse_memory_size("3G").unwrap(), 3 << 30);
        for (text, bytes) in [("2GB", 2usize << 30), ("2g", 2 << 30), ("2000M", 2000 << 20), ("5Mb", 5 << 20), ("7kb", 7 << 10), ("9B", 9)] {
            assert_eq!(parse_memory_size(text).unwrap(), bytes, "{text}");
        }
        for refused in ["1.5G", "M", "", "-5M", "+5M", "5 M", "5T", "5MiB", "0x10M", "nan", "inf"] {
            let message = parse_memory_size(refused).unwrap_err().to_string();
            assert!(message.starts_with(&format!("invalid memory size {refused:?}: ")), "{message}");
            assert!(message.contains("768M, 2G, 2g, 2GB, 2000M"), "{message}");
        }
        assert_eq!(parse_memory_size("99999999999999999999999").unwrap_err().to_string(), "memory size \"99999999999999999999999\" is too large");
        let huge = format!("{}G", usize::MAX / 2);
        assert_eq!(parse_memory_size(&huge).unwrap_err().to_string(), format!("memory size {huge:?} is too large"));
        assert!(matches!(parse_memory_size("x"), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn index_lookup_skips_stale_and_refuses_foreign_indexes() {
        let dir = scratch("lookup");
        let bam_path = dir.join("a.bam");
        std::fs::copy(data("small.bam"), &bam_path).unwrap();
        let bam = BamFile::open(&bam_path).unwrap();
        let kept = Kept::default();
        assert_eq!(locate_index(&bam_path), IndexLocation::Missing);
        assert!(find_index(&bam, &kept).unwrap().is_none());

        // An index of this file, newer than it: used.
        let bai = dir.join("a.bam.bai");
        std::fs::copy(data("small.bam.bai"), &bai).unwrap();
        assert_eq!(locate_index(&bam_path), IndexLocation::Found(bai.clone()));
        assert!(find_index(&bam, &kept).unwrap().is_some());
        assert!(kept.warnings().is_empty());

        // Older than the BAM: reported, checked block by block, and used.
        age(&bai, 3600);
        assert!(find_index(&bam, &kept).unwrap().is_some());
        assert_eq!(kept.warnings(), [format!("the index file {} is older than the data file {}", bai.display(), bam_path.display())]);
        // Stale and made for another layout: its chunks do not start at blocks.
        let other = dir.join("other.bam");
        crate::command::sort_file(&bam_path, &other, &crate::command::SortFileOptions { level: Some(1), memory_per_thread: 1 << 20, threads: Some(1), ..Default::default() }, &kept).unwrap();
        crate::indexer::write_index(&crate::indexer::build(&BamFile::open(&other).unwrap(), crate::index::IndexFormat::Bai).unwrap(), &bai).unwrap();
        let index = load_index(&bam, &bai).unwrap();
        let err = verify_index(&bam, &index, true).unwrap_err().to_string();
        assert!(err.contains("is not the start of a record") || err.contains("past the end of the file"), "{err}");
        age(&bai, 3600);
        assert!(find_index(&bam, &kept).is_err());
        std::fs::remove_file(&bai).unwrap();

        // Made for a file with another number of references: an error.
        std::fs::copy(data("long_ref.bam.csi"), dir.join("a.bam.csi")).unwrap();
        let err = find_index(&bam, &kept).unwrap_err();
        let n_refs = bam.header().references.len();
        assert!(err.to_string().ends_with(&format!("references in the index, {n_refs} in the header of {})", bam_path.display())), "{err}");
        assert!(matches!(err, Error::WithPath { ref source, .. } if matches!(**source, Error::IndexMismatch(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
            let index = crate::indexer::build(&BamFile::open(&bam_path).unwrap(), crate::index::IndexFormat::Bai).unwrap();
            crate::indexer::write_index(&index, dir.join("x.bam.bai")).unwrap();
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
        let index = crate::indexer::build(&bam, IndexFormat::Bai).unwrap();
        let check = |index: &Index| region::check_placed_coverage(&bam, index).map_err(|e| e.to_string());
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
