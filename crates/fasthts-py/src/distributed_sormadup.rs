//! The steps of `fasthts.dask.sormadup`, one function per task kind (see
//! `fasthts::command::distributed_sormadup`). Arguments are plain values
//! (paths, integers, a dict of markdup's options) so that dask can send
//! them to any worker; every function opens what it needs by path.

use crate::markdup::{marking_options, report};
use crate::ops::memory_arg;
use crate::run_detached;
use fasthts::bam::BamFile;
use fasthts::bgzf::VirtualOffset;
use fasthts::command::distributed_sormadup as dist;
use fasthts::command::MarkdupSummary;
use fasthts::fixmate::FixmateOptions;
use fasthts::markdup::{MarkdupOptions, MarkdupStats, Reach};
use fasthts::sort::distributed::{guess_entry, open_input, Split};
use fasthts::Error;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dask_sormadup_plan, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sormadup_collate, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sormadup_fixmate, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sormadup_fixmate_split, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sormadup_sort, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sormadup_mark, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sormadup_report, m)?)?;
    Ok(())
}

/// markdup's options as `fasthts.sormadup` takes them, in a dict (keyword
/// name to value) that travels to the workers.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Marking {
    remove_duplicates: bool,
    max_read_length: i64,
    mark_supplementary: bool,
    optical_distance: i64,
    clear_previous: bool,
    mode: String,
    include_fails: bool,
    no_multi_dup: bool,
    read_coords: Option<String>,
    coords_order: String,
    barcode_tag: Option<String>,
    barcode_name: bool,
    barcode_rgx: Option<String>,
    tag_originals: bool,
}

impl Marking {
    fn options(self) -> PyResult<MarkdupOptions> {
        marking_options(
            self.remove_duplicates,
            self.max_read_length,
            self.mark_supplementary,
            self.optical_distance,
            self.clear_previous,
            &self.mode,
            self.include_fails,
            self.no_multi_dup,
            self.read_coords,
            &self.coords_order,
            self.barcode_tag.as_deref(),
            self.barcode_name,
            self.barcode_rgx.as_deref(),
            self.tag_originals,
        )
    }
}

/// A split as it travels: `(input's position, start, end)`.
type SplitValue = (usize, u64, u64);

/// A reach as it travels: `(tid, end)`.
type ReachValue = (i32, i64);

fn reach_value(reach: Option<Reach>) -> Option<ReachValue> {
    reach.map(|r| (r.tid, r.end))
}

/// The counts of markdup's `-s` report as they travel, in
/// [`MarkdupStats`]' field order.
fn stats_values(s: &MarkdupStats) -> [u64; 12] {
    [
        s.read,
        s.written,
        s.excluded,
        s.examined,
        s.paired,
        s.single,
        s.duplicate_pair,
        s.duplicate_single,
        s.duplicate_pair_optical,
        s.duplicate_single_optical,
        s.duplicate_non_primary,
        s.duplicate_non_primary_optical,
    ]
}

fn stats_from(v: [u64; 12]) -> MarkdupStats {
    MarkdupStats {
        read: v[0],
        written: v[1],
        excluded: v[2],
        examined: v[3],
        paired: v[4],
        single: v[5],
        duplicate_pair: v[6],
        duplicate_single: v[7],
        duplicate_pair_optical: v[8],
        duplicate_single_optical: v[9],
        duplicate_non_primary: v[10],
        duplicate_non_primary_optical: v[11],
    }
}

/// Checks the inputs, the output and the options; returns the splits
/// `[(input's position, start, end)]` and whether the records are
/// collated (else the input is grouped by name and keeps its order).
#[pyfunction]
fn dask_sormadup_plan(
    py: Python<'_>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    pieces: usize,
    collate: bool,
    marking: Marking,
) -> PyResult<(Vec<SplitValue>, bool)> {
    let marking = marking.options()?;
    let planned = run_detached(py, |w| dist::plan(&inputs, &output, pieces, collate, &marking, w))?;
    Ok((planned.splits.into_iter().map(|(i, s)| (i, s.start, s.end)).collect(), planned.collate))
}

/// Fixes the name groups of a split of a name-grouped input into the
/// parts' files (`fix` as [`dask_sormadup_fixmate`]'s); `first`: the
/// input's first split. Returns `(entry, exit or None, records)`, or
/// `None` when no entry could be guessed.
#[pyfunction]
#[pyo3(signature = (path, start, end, entry, first, fix, boundaries, outputs))]
#[allow(clippy::too_many_arguments)]
fn dask_sormadup_fixmate_split(
    py: Python<'_>,
    path: PathBuf,
    start: u64,
    end: u64,
    entry: Option<u64>,
    first: bool,
    fix: (bool, bool, bool),
    boundaries: Vec<Vec<u8>>,
    outputs: Vec<PathBuf>,
) -> PyResult<Option<(u64, Option<u64>, u64)>> {
    run_detached(py, |_| {
        let bam = open_input(&path)?;
        let split = Split { start, end };
        let Some(entry) = entry_or_guess(&bam, split, entry)? else { return Ok(None) };
        check_boundaries(&boundaries, bam.header().references.len())?;
        let done = dist::fixmate_split(&bam, split, entry, first, fix_options(fix), &boundaries, &outputs)?;
        Ok(Some((u64::from(done.entry), done.exit.map(u64::from), done.records)))
    })
}

/// fixmate's options from `(remove, no_pair_check, template_cigar)`.
fn fix_options(fix: (bool, bool, bool)) -> FixmateOptions {
    FixmateOptions { remove_reads: fix.0, proper_pair_check: !fix.1, template_cigar: fix.2, mate_score: true }
}

/// Where a split's first record is: `entry` (a raw virtual offset) when
/// the caller knows it, else guessed.
fn entry_or_guess(bam: &BamFile, split: Split, entry: Option<u64>) -> Result<Option<VirtualOffset>, Error> {
    match entry {
        Some(raw) => Ok(Some(VirtualOffset::from(raw))),
        None => guess_entry(bam, split),
    }
}

/// Boundaries come back from workers: checked before comparing.
fn check_boundaries(boundaries: &[Vec<u8>], n_ref: usize) -> Result<(), Error> {
    match boundaries.iter().any(|b| fasthts::bam::RecordRef::new(b, n_ref).is_err()) {
        true => Err(Error::Message("damaged part boundary from a worker".into())),
        false => Ok(()),
    }
}

/// Sends a split's records to their collate buckets' files. `entry`: where
/// its first record starts (raw virtual offset), or `None` to guess.
/// Returns `(entry, exit or None, records)`, or `None` when no entry could
/// be guessed.
#[pyfunction]
#[pyo3(signature = (path, start, end, entry, outputs))]
fn dask_sormadup_collate(
    py: Python<'_>,
    path: PathBuf,
    start: u64,
    end: u64,
    entry: Option<u64>,
    outputs: Vec<PathBuf>,
) -> PyResult<Option<(u64, Option<u64>, u64)>> {
    run_detached(py, |_| {
        let bam = open_input(&path)?;
        let split = Split { start, end };
        let Some(entry) = entry_or_guess(&bam, split, entry)? else { return Ok(None) };
        let done = dist::collate_split(&bam, split, entry, &outputs)?;
        Ok(Some((u64::from(done.entry), done.exit.map(u64::from), done.records)))
    })
}

/// Collates and fixes a run of buckets (each bucket's files in split
/// order) into the parts' files; `fix`: fixmate's `(remove, no_pair_check,
/// template_cigar)`. Returns the records written.
#[pyfunction]
fn dask_sormadup_fixmate(
    py: Python<'_>,
    header: PathBuf,
    buckets: Vec<Vec<PathBuf>>,
    last: bool,
    fix: (bool, bool, bool),
    boundaries: Vec<Vec<u8>>,
    outputs: Vec<PathBuf>,
) -> PyResult<u64> {
    run_detached(py, |_| {
        let first = open_input(&header)?;
        check_boundaries(&boundaries, first.header().references.len())?;
        dist::fixmate_buckets(first.header(), &buckets, last, fix_options(fix), &boundaries, &outputs)
    })
}

/// Sorts one part's fixed records into `output`; returns `(records,
/// reach)`. `memory` per thread as sort's `-m`.
#[pyfunction]
#[pyo3(signature = (header, fixed, output, memory=None, threads=None))]
fn dask_sormadup_sort(
    py: Python<'_>,
    header: PathBuf,
    fixed: Vec<PathBuf>,
    output: PathBuf,
    memory: Option<&Bound<'_, PyAny>>,
    threads: Option<usize>,
) -> PyResult<(u64, Option<ReachValue>)> {
    let memory_per_thread = match memory {
        Some(m) => memory_arg(m)?,
        None => fasthts::command::SortFileOptions::default().memory_per_thread,
    };
    let sorted = run_detached(py, |_| {
        fasthts::command::check_memory_per_thread(memory_per_thread)?;
        let first = open_input(&header)?;
        fasthts_io::pool::with_threads(threads, || {
            let memory = memory_per_thread.saturating_mul(fasthts_io::pool::thread_count(threads));
            dist::sort_fixed_part(first.header(), &fixed, memory, &output, &output)
        })
    })?;
    Ok((sorted.records, reach_value(sorted.reach)))
}

/// What a marking task reports: `(body_start, body_end, records, counts,
/// warnings)`.
type MarkedPart = (u64, u64, u64, Vec<u64>, Vec<String>);

/// Marks part `sorted[0]` (the parts after it in `sorted[1..]`, the
/// reaches of those before it in `before`) into the BAM `output` (whose
/// header is the chain's, with collate's edit when `collate`); returns
/// `(body_start, body_end, records, counts, warnings)`.
#[pyfunction]
#[pyo3(signature = (header, collate, sorted, before, first, marking, output, level=None, threads=None, program=None))]
#[allow(clippy::too_many_arguments)]
fn dask_sormadup_mark(
    py: Python<'_>,
    header: PathBuf,
    collate: bool,
    sorted: Vec<PathBuf>,
    before: Vec<Option<ReachValue>>,
    first: bool,
    marking: Marking,
    output: PathBuf,
    level: Option<u32>,
    threads: Option<usize>,
    program: Option<(String, String)>,
) -> PyResult<MarkedPart> {
    let marking = marking.options()?;
    if let Some(l) = level.filter(|&l| l > 9) {
        return Err(crate::to_py(Error::InvalidArgument(format!("level must be between 0 and 9, not {l}"))));
    }
    let before: Vec<Option<Reach>> = before.into_iter().map(|r| r.map(|(tid, end)| Reach { tid, end })).collect();
    let (part, summary) = run_detached(py, |_| {
        let input = open_input(&header)?;
        let out_header = dist::output_header_of(input.header(), collate, &program);
        let level = level.unwrap_or(fasthts::bgzf::DEFAULT_LEVEL);
        fasthts_io::pool::with_threads(threads, || dist::mark_parts(&out_header, &sorted, &before, first, &marking, level, &output))
    })?;
    Ok((part.body_start, part.body_end, part.records, stats_values(&summary.stats).to_vec(), summary.warnings))
}

/// The parts' counts summed and their warnings, reported as
/// `fasthts.sormadup` reports them (warnings issued, `stats_file` written
/// as `-f` writes it, a dict returned).
#[pyfunction]
#[pyo3(signature = (counts, warnings, command, stats_file=None))]
fn dask_sormadup_report(
    py: Python<'_>,
    counts: Vec<Vec<u64>>,
    warnings: Vec<String>,
    command: String,
    stats_file: Option<PathBuf>,
) -> PyResult<Py<PyDict>> {
    let mut sum = [0u64; 12];
    for part in &counts {
        for (total, value) in sum.iter_mut().zip(part) {
            *total += value;
        }
    }
    let summary = MarkdupSummary { stats: stats_from(sum), warnings };
    report(py, &summary, stats_file.as_deref(), &command)
}
