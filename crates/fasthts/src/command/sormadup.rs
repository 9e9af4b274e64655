//! `sormadup`: an aligner's output (unsorted or grouped by name) to a
//! duplicate-marked, coordinate-sorted file in one process, the records
//! those of `samtools collate -O IN | samtools fixmate -m - - | samtools
//! sort - | samtools markdup - OUT`. Each stage is the library's own:
//! the records are dealt into samtools collate's buckets
//! ([`super::collate`]; skipped when the header says the input is grouped
//! by name, as one would skip collate), go through [`Fixmate`] bucket by
//! bucket into the sort's batches ([`crate::sort::sort_records_into`]),
//! and the sort's final merge feeds a [`Marker`] whose records are
//! written ([`super::markdup`]'s output, `-S`'s second pass included).
//! No intermediate file holds the whole data: collate's buckets and the
//! sort's runs spill only past the memory given.

use super::collate::{collate_header_text, collate_records};
use super::fixmate::{output_header, read_all, sort_order_of};
use super::markdup::{MarkdupSummary, MarkedOutput};
use super::sort::{check_memory_per_thread, SortFileOptions};
use super::{thread_count, warn_after_reading, warn_if_truncated, with_threads, Report};
use crate::bam::{Header, RecordRef};
use crate::cram::{CramOptions, CramWriteOptions};
use crate::fixmate::{Fixmate, FixmateOptions, MateRecord};
use crate::input::{self, Input};
use crate::markdup::{MarkdupOptions, Marker};
use crate::record_output::OutputFormat;
use crate::sort::{add_missing_sq_lines, add_pg_line, check_editable, set_sort_order, Push, SortOptions, SortOrder};
use crate::Error;
use std::path::{Path, PathBuf};

/// samtools collate's default number of buckets (`-n`): the order of
/// records that tie in the coordinate sort depends on it.
pub(super) const COLLATE_BUCKETS: u32 = 64;

/// `fasthts sormadup`'s options: each stage's own.
#[derive(Clone, Debug, Default)]
pub struct SormadupOptions {
    /// The sort's and the output's options (`-m`, `-@`, `-T`, `-O`, `-l`,
    /// `--write-index`, `--no-PG`, `--reference`); the order is always by
    /// coordinate, `order` and `engine` are not read. `-m` bounds the
    /// collate stage's buckets too (so at most about twice `-m` per
    /// thread is held).
    pub sort: SortFileOptions,
    /// fixmate's options (`mate_score` is always on: markdup needs `ms`).
    pub fix: FixmateOptions,
    /// markdup's options.
    pub marking: MarkdupOptions,
    /// Collate an input whose header says it is grouped by name too (its
    /// records are then those of the chain with collate, whatever the
    /// input; collate reorders the records of a name-sorted input, and
    /// the coordinate sort keeps ties in their input order).
    pub always_collate: bool,
}

/// Whether the header says the records are grouped by name: `@HD`
/// `SO:queryname` or `GO:query`.
pub(super) fn grouped_by_name(text: &[u8]) -> bool {
    if sort_order_of(text) == Some(b"queryname") {
        return true;
    }
    let first = text.split(|&c| c == b'\n').next().unwrap_or_default();
    first.starts_with(b"@HD\t") && first.split(|&c| c == b'\t').any(|f| f == b"GO:query")
}

/// The header the samtools chain ends with, less its @PG lines: collate's
/// `@HD` edit (unless skipped), the bare lines fixmate drops, sort's
/// `SO:coordinate`, and this run's @PG line (`program`).
pub(super) fn chain_header(header: &Header, collated: bool, program: &Option<(String, String)>) -> Header {
    let collated = match collated {
        true => Header { text: collate_header_text(&header.text), references: header.references.clone() },
        false => header.clone(),
    };
    let fixed = output_header(&collated, &None);
    let mut text = add_missing_sq_lines(&set_sort_order(&fixed.text, SortOrder::Coordinate), &header.references);
    if let Some((version, command_line)) = program {
        text = add_missing_sq_lines(&add_pg_line(&text, "fasthts", version, command_line), &header.references);
    }
    Header { text, references: header.references.clone() }
}

/// samtools collate, fixmate -m, sort and markdup of `input` (BAM, SAM or
/// CRAM; `-` for standard input) to `output` (`-`: standard output; a file
/// appears complete or not at all), in one process. Input whose header
/// says it is grouped by name (`SO:queryname`, `GO:query`) is not
/// collated (unless [`SormadupOptions::always_collate`]): its records are
/// then those of the chain without collate.
pub fn sormadup_file(input: &Path, output: &Path, options: &SormadupOptions, report: &dyn Report) -> Result<MarkdupSummary, Error> {
    let sort = &options.sort;
    if sort.level.is_some_and(|l| l > 9) {
        return Err(Error::InvalidArgument("level must be between 0 and 9".into()));
    }
    if sort.max_fan_in.is_some_and(|n| n < 2) {
        return Err(Error::InvalidArgument("fan_in must be at least 2".into()));
    }
    let format = match sort.format {
        Some(format) => format,
        None => OutputFormat::from_path(output)?,
    };
    check_memory_per_thread(sort.memory_per_thread)?;
    let to_stdout = output.as_os_str() == "-";
    let (data, index_path, index_format) = crate::index::split_index_name(output);
    let index = match sort.write_index {
        false => None,
        true if format != OutputFormat::Bam => {
            return Err(Error::InvalidArgument("--write-index is only supported with BAM output in sormadup".into()))
        }
        true if to_stdout => return Err(Error::InvalidArgument("--write-index needs an output file (-o)".into())),
        true => Some(index_format),
    };
    if !to_stdout {
        crate::output::refuse_input_as_output(&[&data], &[input])?;
    }
    if index.is_some() {
        crate::output::refuse_input_as_output(&[&index_path], &[input])?;
    }
    let threads = thread_count(sort.threads);
    let temp_prefix = match &sort.temp_prefix {
        Some(prefix) => prefix.clone(),
        None if to_stdout => PathBuf::from("fasthts-sormadup"),
        None => data.clone(),
    };
    let memory = sort.memory_per_thread.saturating_mul(threads);
    let mut sort_options = SortOptions::bam(SortOrder::Coordinate, memory, crate::bgzf::DEFAULT_LEVEL, temp_prefix.clone());
    sort_options.max_fan_in = sort.max_fan_in;
    let fix = FixmateOptions { mate_score: true, ..options.fix };
    let mut marker = Marker::new(&options.marking)?;
    with_threads(Some(threads), || {
        let cram = CramOptions { reference: sort.reference.clone(), threads, ..CramOptions::default() };
        let mut opened = input::open_with(input, &cram)?;
        match &opened {
            Input::Bam(bam) => warn_if_truncated(bam, report),
            Input::Cram(cram) => super::warn_if_cram_truncated(cram, report),
            _ => {}
        }
        let header = opened.header().clone();
        check_editable(&header)?;
        if (0..header.references.len()).any(|i| header.reference_len(i) > i32::MAX as u64) {
            return Err(Error::Message("output format is not compatible with very large references".into()));
        }
        let collate = options.always_collate || !grouped_by_name(&header.text);
        let out_header = chain_header(&header, collate, &sort.program);
        let reference_lens: Vec<i64> = (0..header.references.len()).map(|i| header.reference_len(i) as i64).collect();
        let mut fixmate = Fixmate::new(fix, reference_lens);
        let feed = |push: &mut Push<'_>| -> Result<(), Error> {
            // One buffer for the fixed record on its way into the sort.
            let mut encoded = Vec::new();
            let mut write = |r: &MateRecord| -> Result<(), Error> {
                encoded.clear();
                r.append_to(&mut encoded, false)?;
                push(&RecordRef::new_prevalidated(&encoded[4..]))
            };
            if collate {
                let read = |handle: &mut (dyn FnMut(&RecordRef<'_>) -> Result<(), Error> + Send)| read_all(&mut opened, input, handle);
                collate_records(read, COLLATE_BUCKETS, memory, &temp_prefix, &mut |record| fixmate.push(&record[4..], false, &mut write))?;
            } else {
                read_all(&mut opened, input, &mut |r| fixmate.push(r.as_bytes(), false, &mut write))?;
            }
            fixmate.finish(&mut write)
        };
        let level = sort.level.unwrap_or(crate::bgzf::DEFAULT_LEVEL);
        let write_options = CramWriteOptions { reference: sort.reference.clone(), options: sort.cram_options.clone(), level: sort.level };
        let marking = &options.marking;
        let marker = &mut marker;
        let consume = |produce: &mut crate::sort::Produce<'_>| -> Result<Option<crate::index::Index>, Error> {
            let name = if to_stdout { output } else { data.as_path() };
            let out = MarkedOutput::open(name, &out_header, format, level, write_options, index)?;
            let mut out = out.second_pass(marking, sort.temp_prefix.as_deref(), name)?;
            produce(&mut |record| marker.push(&RecordRef::new_prevalidated(&record[4..]), &mut |d| out.emit(d)))?;
            marker.finish(&mut |d| out.emit(d))?;
            out.finish(marker)
        };
        let (_, built) = crate::sort::sort_records_into(&header, &sort_options, false, feed, consume)?;
        warn_after_reading(&mut opened, input, report);
        if let Some(index) = built {
            crate::index::write_index(&index, &index_path)?;
        }
        Ok(MarkdupSummary { stats: *marker.stats(), warnings: marker.take_warnings() })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_headers() {
        assert!(grouped_by_name(b"@HD\tVN:1.6\tSO:queryname\n@SQ\tSN:c\tLN:5\n"));
        assert!(grouped_by_name(b"@HD\tVN:1.6\tSO:unsorted\tGO:query\n"));
        assert!(!grouped_by_name(b"@HD\tVN:1.6\tSO:coordinate\n"));
        assert!(!grouped_by_name(b"@SQ\tSN:c\tLN:5\n"));
        assert!(!grouped_by_name(b""));
    }
}
