//! The command layer: one function per job, with a typed options struct,
//! called alike by the `fasthts` command line and the Python package.
//!
//! Every decision a user can observe is taken once, here or by a library
//! function these call: which index is usable ([`find_index`]), when a
//! file is read through its index and when sequentially
//! ([`by_index_or_sequentially`]), which format an output name asks for
//! ([`crate::record_output::OutputFormat::from_path`]), where an index is written
//! ([`crate::index::split_index_name`]), how a memory size is read
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

mod cat;
mod collate;
mod coverage;
mod depth;
pub mod distributed_sormadup;
mod faidx;
mod fastq;
mod fixmate;
mod flagstat;
mod index;
mod inputs;
mod markdup;
mod merge;
mod mosdepth;
mod quickcheck;
mod snp_pileup;
mod sormadup;
mod sort;
mod stats;
mod view;
mod view_arguments;

pub use cat::{cat_files, read_file_list, CatOptions};
pub use collate::{collate_file, CollateOptions, COLLATE_DEFAULT_MEMORY};
pub use coverage::{coverage_file, coverage_table, coverage_to, CoverageTable};
pub use depth::{depth_columns, depth_file, depth_to};
pub use fastq::{fastq_file, AuxSelection, FastqOptions, FastqSummary, FastxFormat};
pub use fixmate::{fixmate_file, FixmateFileOptions, FIXMATE_COORDINATE_SORTED};
pub use faidx::{faidx, FaidxOptions, FaidxWarning, StrandMarks, DEFAULT_LINE_WIDTH};
pub use flagstat::{flagstat_gather, flagstat_path, flagstat_plan, flagstat_regions, FlagstatOptions, REGION_BYTES};
pub use markdup::{markdup_file, MarkdupFileOptions, MarkdupSummary};
pub use index::{idxstats, index_file, index_format, index_splits, index_target, IdxstatsOptions, IndexOptions};
pub use mosdepth::{mosdepth, MosdepthRun};
pub use merge::{merge_files, output_exists, output_exists_message, MergeOptions};
pub use quickcheck::{quickcheck, QuickcheckFailure, QuickcheckOptions};
pub use snp_pileup::{snp_pileup, snp_pileup_block, snp_pileup_plan, write_snp_pileup, SnpPileupFileOptions};
pub use sormadup::{sormadup_file, SormadupOptions};
pub use sort::{check_memory_per_thread, parse_tag, sort_file, sort_order, SortFileOptions, MIN_MEMORY_PER_THREAD};
pub use stats::{stats_gather, stats_plan, stats_regions, stats_to, StatsFailure, StatsNotes, StatsOptions};
pub use view::{view_file, HeaderMode, SkippedRegion, ViewOptions, VIEW_WINDOW_BASES};
pub use view_arguments::{ViewArguments, ViewRun};

pub use crate::index::{
    build_index, by_index_or_sequentially, find_index, index_covers, load_index, locate_index, no_index_for_regions, not_coordinate_sorted,
    replace_if_not_covering, sam_not_indexable, verify_index, IndexLocation,
};
pub use crate::report::{Report, Warning};

use crate::bam::BamFile;
use crate::index::{covering_index, indexed_or_sequential, usable_index};
use crate::input::Input;
use crate::report::report_sam_warnings;
use crate::Error;
use fasthts_io::pool::{thread_count, with_threads};
use std::path::Path;

/// Where a written BAM or CRAM goes and, with `--write-index`, its index:
/// samtools sort's and merge's one rule. The data goes to the part of
/// `output` before `##idx##` and the index after it, else beside the data
/// (`.csi`, `.crai` for CRAM). `format` is `None` without `--write-index`,
/// or when the order is not by position (warned: `IndexNeedsPositionOrder`).
pub(crate) struct OutputWithIndex {
    pub data: std::path::PathBuf,
    pub index_path: std::path::PathBuf,
    pub format: Option<crate::index::IndexFormat>,
}

/// [`OutputWithIndex`] for `output` in `format`: an index only of BAM or
/// CRAM, only of a file (not `-`).
pub(crate) fn output_with_index(
    output: &Path,
    format: crate::record_output::OutputFormat,
    write_index: bool,
    position_order: bool,
    report: &dyn Report,
) -> Result<OutputWithIndex, Error> {
    use crate::record_output::OutputFormat;
    if write_index && !matches!(format, OutputFormat::Bam | OutputFormat::Cram) {
        return Err(Error::InvalidArgument("--write-index is only supported with BAM or CRAM output".into()));
    }
    let (data, mut index_path, index_format) = crate::index::split_index_name(output);
    if format == OutputFormat::Cram && !output.to_string_lossy().contains("##idx##") {
        // samtools' automatic index name for CRAM.
        index_path = crate::cram::crai_path_for(&data);
    }
    let mut index = None;
    if write_index {
        if !position_order {
            report.warning(Warning::IndexNeedsPositionOrder);
        } else if output.as_os_str() == "-" {
            return Err(Error::InvalidArgument("--write-index needs an output file (-o)".into()));
        } else {
            index = Some(index_format);
        }
    }
    Ok(OutputWithIndex { data, index_path, format: index })
}

/// Runs a whole-file job of the BAM at `path` by parts of the file
/// ([`crate::region::remote_parts::scatter`], on the current pool) when it
/// is a URL of a BGZF BAM with an index: the results in file order. `None`
/// when it is to be read as a stream instead: not a URL, not such a BAM,
/// or reading by parts failed with what the stream's reading reports (an
/// index that does not describe the file is reported first, as flagstat
/// reports a local one). A failed fetch is an error.
fn remote_by_parts<T, F>(path: &Path, report: &dyn Report, work: F) -> Result<Option<Vec<T>>, Error>
where
    T: Send,
    F: Fn(&mut crate::region::remote_parts::PartRecords<'_>) -> Result<T, crate::bam::BamError> + Sync,
{
    use crate::region::remote_parts;
    if crate::input::remote_url(path).is_none() {
        return Ok(None);
    }
    let Some((bam, index)) = flagstat::remote_bam(path)?.and_then(crate::region::indexed::IndexedFile::into_bam) else { return Ok(None) };
    let read = remote_parts::scatter(&bam, &index, remote_parts::PART_BYTES, work)?;
    let parts = indexed_or_sequential(&bam, read, report);
    if parts.is_some() {
        warn_if_truncated(&bam, report);
    }
    Ok(parts)
}

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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    pub(crate) use crate::test_support::{age, data, scratch, Kept};

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
}
