//! The steps of `fasthts.dask.sort` and `fasthts.dask.index`, one function per task kind (see
//! `fasthts::sort::distributed`). Arguments are plain values (paths or
//! URLs, integers, bytes, a tuple for the order) so that dask can send
//! them to any worker; every function opens what it needs by path or URL.

use crate::ops::{memory_arg, sort_order_arg};
use crate::run_detached;
use fasthts::bam::BamFile;
use fasthts::bgzf::VirtualOffset;
use fasthts::sort::distributed::{self as dist, ShuffleTo, SortInput, Split};
use fasthts::sort::{Comparator, SortOptions};
use fasthts::Error;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;
use std::path::PathBuf;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dask_input_size, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_plan, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_sample, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_boundaries, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_shuffle, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_shuffle_in_memory, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_part, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_part_in_memory, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_create, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_create_with, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_place, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_place_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_finish, m)?)?;
    m.add_function(wrap_pyfunction!(dask_sort_index_name, m)?)?;
    m.add_function(wrap_pyfunction!(dask_index_plan, m)?)?;
    m.add_function(wrap_pyfunction!(dask_index_split, m)?)?;
    m.add_function(wrap_pyfunction!(dask_index_join, m)?)?;
    Ok(())
}

/// The order as `fasthts.sort`'s keywords give it:
/// `(by_name, tag, template_coordinate, minimiser, kmer)`.
type OrderSpec = (bool, Option<String>, bool, bool, i64);

/// The comparator of `spec` under `header`'s header (the first input's).
fn comparator(spec: &OrderSpec, header: &SortInput) -> PyResult<Comparator> {
    let order = sort_order_arg(spec.0, spec.1.as_deref(), spec.2, spec.3, spec.4)?;
    Ok(Comparator::new(order, &header.header().text))
}

/// An input of the sort (BAM, or CRAM decoded with `reference`).
fn open(path: &std::path::Path, reference: &Option<PathBuf>) -> Result<SortInput, Error> {
    SortInput::open(path, reference.as_deref())
}

fn offset(raw: u64) -> VirtualOffset {
    VirtualOffset::from(raw)
}

/// Where a split's first record is: `entry` (a raw virtual offset) when
/// the caller knows it, else `guess()` ([`SortInput::entry`]).
fn entry_or_guess(
    entry: Option<u64>,
    guess: impl FnOnce() -> Result<Option<VirtualOffset>, Error>,
) -> Result<Option<VirtualOffset>, Error> {
    match entry {
        Some(raw) => Ok(Some(offset(raw))),
        None => guess(),
    }
}

/// `(remote, size)` of an input: whether it is a URL (opened, so that a
/// missing one is an error naming it), and its length in bytes (0 for a
/// local path that is not a regular file: the plan says what is wrong).
#[pyfunction]
fn dask_input_size(py: Python<'_>, path: PathBuf) -> PyResult<(bool, u64)> {
    run_detached(py, |_| match fasthts::input::remote_url(&path) {
        Some(url) => Ok((true, fasthts::input::open_remote(url)?.0.len())),
        None => Ok((false, std::fs::metadata(&path).ok().filter(|m| m.is_file()).map_or(0, |m| m.len()))),
    })
}

/// Checks the inputs and the output and returns the splits:
/// `[(input's position, start, end)]`. `reference`: the FASTA of CRAM
/// inputs (every task that reads records takes it too).
#[pyfunction]
#[pyo3(signature = (inputs, output, pieces, reference=None))]
fn dask_sort_plan(
    py: Python<'_>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    pieces: usize,
    reference: Option<PathBuf>,
) -> PyResult<Vec<(usize, u64, u64)>> {
    let splits = run_detached(py, |w| dist::plan(&inputs, &output, pieces, reference.as_deref(), w))?;
    Ok(splits.into_iter().map(|(i, s)| (i, s.start, s.end)).collect())
}

/// Up to `count` records of a split, prepared for the order, as bytes.
#[pyfunction]
#[pyo3(signature = (path, header, start, end, count, order, reference=None))]
#[allow(clippy::too_many_arguments)]
fn dask_sort_sample(
    py: Python<'_>,
    path: PathBuf,
    header: PathBuf,
    start: u64,
    end: u64,
    count: usize,
    order: OrderSpec,
    reference: Option<PathBuf>,
) -> PyResult<Vec<Py<PyBytes>>> {
    let first = run_detached(py, |_| open(&header, &reference))?;
    let cmp = comparator(&order, &first)?;
    let samples = run_detached(py, |_| open(&path, &reference)?.sample(Split { start, end }, count, &cmp))?;
    Ok(samples.iter().map(|s| PyBytes::new(py, s).unbind()).collect())
}

/// The boundary records of `parts` parts, chosen from the samples.
#[pyfunction]
#[pyo3(signature = (header, samples, parts, order, reference=None))]
fn dask_sort_boundaries(
    py: Python<'_>,
    header: PathBuf,
    samples: Vec<Vec<u8>>,
    parts: usize,
    order: OrderSpec,
    reference: Option<PathBuf>,
) -> PyResult<Vec<Py<PyBytes>>> {
    let first = run_detached(py, |_| open(&header, &reference))?;
    let cmp = comparator(&order, &first)?;
    let n_ref = first.header().references.len();
    // Samples come back from workers: check them before comparing.
    let samples: Vec<Vec<u8>> = samples.into_iter().filter(|s| fasthts::bam::RecordRef::new(s, n_ref).is_ok()).collect();
    let boundaries = py.detach(|| dist::choose_boundaries(samples, parts, &cmp));
    Ok(boundaries.iter().map(|b| PyBytes::new(py, b).unbind()).collect())
}

/// Sends a split's records to the parts' shuffle files. `entry`: where its
/// first record starts (raw virtual offset), or `None` to guess. Returns
/// `(entry, exit or None, records)`, or `None` when no entry could be
/// guessed.
#[pyfunction]
#[pyo3(signature = (path, header, start, end, entry, boundaries, order, outputs, reference=None))]
#[allow(clippy::too_many_arguments)]
fn dask_sort_shuffle(
    py: Python<'_>,
    path: PathBuf,
    header: PathBuf,
    start: u64,
    end: u64,
    entry: Option<u64>,
    boundaries: Vec<Vec<u8>>,
    order: OrderSpec,
    outputs: Vec<PathBuf>,
    reference: Option<PathBuf>,
) -> PyResult<Option<ShuffleReport>> {
    let done = shuffle(py, &path, &header, Split { start, end }, entry, &boundaries, &order, ShuffleTo::Files(&outputs), &reference)?;
    Ok(done.map(|(report, _)| report))
}

/// `(entry, exit or None, records)` of a shuffled split (raw virtual offsets).
type ShuffleReport = (u64, Option<u64>, u64);

/// [`dask_sort_shuffle`] into one buffer per part (`parts` of them),
/// returned with the report: `(report, [chunk of part 0, ...])`.
#[pyfunction]
#[pyo3(signature = (path, header, start, end, entry, boundaries, order, parts, reference=None))]
#[allow(clippy::too_many_arguments)]
fn dask_sort_shuffle_in_memory(
    py: Python<'_>,
    path: PathBuf,
    header: PathBuf,
    start: u64,
    end: u64,
    entry: Option<u64>,
    boundaries: Vec<Vec<u8>>,
    order: OrderSpec,
    parts: usize,
    reference: Option<PathBuf>,
) -> PyResult<Option<(ShuffleReport, Vec<Py<PyBytes>>)>> {
    let done = shuffle(py, &path, &header, Split { start, end }, entry, &boundaries, &order, ShuffleTo::Memory(parts), &reference)?;
    Ok(done.map(|(report, chunks)| (report, chunks.iter().map(|c| PyBytes::new(py, c).unbind()).collect())))
}

/// A split shuffled `to` files or buffers ([`SortInput::fetch_and_shuffle`]).
#[allow(clippy::too_many_arguments)]
fn shuffle(
    py: Python<'_>,
    path: &std::path::Path,
    header: &std::path::Path,
    split: Split,
    entry: Option<u64>,
    boundaries: &[Vec<u8>],
    order: &OrderSpec,
    to: ShuffleTo<'_>,
    reference: &Option<PathBuf>,
) -> PyResult<Option<(ShuffleReport, Vec<Vec<u8>>)>> {
    let first = run_detached(py, |_| open(header, reference))?;
    let cmp = comparator(order, &first)?;
    run_detached(py, |_| {
        let mut input = open(path, reference)?;
        let done = input.fetch_and_shuffle(split, entry.map(offset), boundaries, &cmp, to)?;
        Ok(done.map(|(done, chunks)| ((u64::from(done.entry), done.exit.map(u64::from), done.records), chunks)))
    })
}

/// The sort options of a part on its worker, from the Python arguments.
fn part_options(
    order: &OrderSpec,
    first: &SortInput,
    level: Option<u32>,
    memory: Option<&Bound<'_, PyAny>>,
    threads: Option<usize>,
    program: Option<(String, String)>,
    output: PathBuf,
) -> PyResult<SortOptions> {
    let cmp = comparator(order, first)?;
    let memory_per_thread = match memory {
        Some(m) => memory_arg(m)?,
        None => fasthts::command::SortFileOptions::default().memory_per_thread,
    };
    if let Some(l) = level.filter(|&l| l > 9) {
        return Err(crate::to_py(Error::InvalidArgument(format!("level must be between 0 and 9, not {l}"))));
    }
    fasthts::command::check_memory_per_thread(memory_per_thread).map_err(crate::to_py)?;
    let memory = memory_per_thread.saturating_mul(fasthts_io::pool::thread_count(threads));
    let level = level.unwrap_or(fasthts::bgzf::DEFAULT_LEVEL);
    Ok(SortOptions { program, ..SortOptions::bam(cmp.order(), memory, level, output) })
}

/// Sorts one part's shuffle files into the BAM `output`; returns
/// `(body_start, body_end, records)`.
#[pyfunction]
#[pyo3(signature = (header, shuffled, order, output, level=None, memory=None, threads=None, program=None, reference=None))]
#[allow(clippy::too_many_arguments)]
fn dask_sort_part(
    py: Python<'_>,
    header: PathBuf,
    shuffled: Vec<PathBuf>,
    order: OrderSpec,
    output: PathBuf,
    level: Option<u32>,
    memory: Option<&Bound<'_, PyAny>>,
    threads: Option<usize>,
    program: Option<(String, String)>,
    reference: Option<PathBuf>,
) -> PyResult<(u64, u64, u64)> {
    let first = run_detached(py, |_| open(&header, &reference))?;
    let opts = part_options(&order, &first, level, memory, threads, program, output.clone())?;
    let part =
        run_detached(py, |_| fasthts_io::pool::with_threads(threads, || dist::sort_part(first.header(), &shuffled, &opts, &output)))?;
    Ok((part.body_start, part.body_end, part.records))
}

/// Sorts one part's shuffle chunks (bytes, in input order) in memory;
/// returns `(header_blocks, body, records, index_segment)`: the part's
/// header blocks and its record blocks as bytes, and with `index` (`True`:
/// CSI, `False`: BAI) the index segment of its records, at their offsets
/// in the part (`dask_index_join` shifts them to where the body lies in
/// the output).
#[pyfunction]
#[pyo3(signature = (header, shuffled, order, level=None, memory=None, threads=None, program=None, reference=None, index=None))]
#[allow(clippy::too_many_arguments)]
fn dask_sort_part_in_memory(
    py: Python<'_>,
    header: PathBuf,
    shuffled: Vec<PyBackedBytes>,
    order: OrderSpec,
    level: Option<u32>,
    memory: Option<&Bound<'_, PyAny>>,
    threads: Option<usize>,
    program: Option<(String, String)>,
    reference: Option<PathBuf>,
    index: Option<bool>,
) -> PyResult<PartBytes> {
    let first = run_detached(py, |_| open(&header, &reference))?;
    let name = PathBuf::from("sorted part");
    let opts = part_options(&order, &first, level, memory, threads, program, name.clone())?;
    let chunks: Vec<&[u8]> = shuffled.iter().map(|c| c.as_ref()).collect();
    let (layout, bytes, segment) = run_detached(py, |_| {
        let (layout, part) = fasthts_io::pool::with_threads(threads, || dist::sort_part_in_memory(first.header(), &chunks, &opts, &name))?;
        let segment = match index {
            Some(csi) => Some(dist::part_index_segment(&part, layout, fasthts::command::index_format(csi, None))?.to_bytes()),
            None => None,
        };
        Ok((layout, part.into_vec().expect("a part sorted in memory"), segment))
    })?;
    let (start, end) = (layout.body_start as usize, layout.body_end as usize);
    Ok((
        PyBytes::new(py, &bytes[..start]).unbind(),
        PyBytes::new(py, &bytes[start..end]).unbind(),
        layout.records,
        segment.map(|s| PyBytes::new(py, &s).unbind()),
    ))
}

/// What [`dask_sort_part_in_memory`] gives back.
type PartBytes = (Py<PyBytes>, Py<PyBytes>, u64, Option<Py<PyBytes>>);

/// Creates the output (temporary name) with the header blocks of
/// `header_part` and room for `body_len` bytes of parts and the EOF block.
#[pyfunction]
fn dask_sort_create(py: Python<'_>, output: PathBuf, header_part: PathBuf, body_start: u64, body_len: u64) -> PyResult<()> {
    run_detached(py, |_| dist::create_output(&output, &header_part, body_start, body_len))
}

/// Creates the output (temporary name) with `header_blocks` and room for
/// `body_len` bytes of parts and the EOF block.
#[pyfunction]
fn dask_sort_create_with(py: Python<'_>, output: PathBuf, header_blocks: PyBackedBytes, body_len: u64) -> PyResult<()> {
    run_detached(py, |_| dist::create_output_with(&output, &header_blocks, body_len))
}

/// Writes a part's record blocks into the output at `at` (on the client).
#[pyfunction]
fn dask_sort_place_bytes(py: Python<'_>, body: PyBackedBytes, output: PathBuf, at: u64) -> PyResult<()> {
    run_detached(py, |_| dist::place_bytes(&body, &output, at))
}

/// Copies bytes `from_..to` of a part into the output at `at`.
#[pyfunction]
fn dask_sort_place(py: Python<'_>, part: PathBuf, from_: u64, to: u64, output: PathBuf, at: u64) -> PyResult<()> {
    run_detached(py, |_| dist::place_part(&part, from_, to, &output, at))
}

/// Syncs the assembled output.
#[pyfunction]
fn dask_sort_finish(py: Python<'_>, output: PathBuf) -> PyResult<()> {
    run_detached(py, |_| dist::finish_output(&output))
}

/// What `--write-index` makes of an output name, as the CLI reads it:
/// `(data, index, csi)` (`OUTPUT##idx##INDEX`, or `OUTPUT.csi`).
#[pyfunction]
fn dask_sort_index_name(output: PathBuf) -> (PathBuf, PathBuf, bool) {
    let (data, index, format) = fasthts::index::split_index_name(&output);
    (data, index, format != fasthts::index::IndexFormat::Bai)
}

/// Checks `path` and `output` for `dask.index` and returns the splits
/// `[(start, end)]` and where the index goes; `None` for a CRAM
/// (`fasthts::command::index_splits`).
#[pyfunction]
#[pyo3(signature = (path, pieces, output=None, csi=false, min_shift=None))]
fn dask_index_plan(
    py: Python<'_>,
    path: PathBuf,
    pieces: usize,
    output: Option<PathBuf>,
    csi: bool,
    min_shift: Option<i32>,
) -> PyResult<Option<(Vec<(u64, u64)>, PathBuf)>> {
    if let Some(url) = fasthts::input::remote_url(&path) {
        // Every task reads the BAM by path, and the index goes beside it.
        return Err(crate::to_py(
            Error::Message("the cluster's index reads a local BAM (one the workers share): index a copy of this remote file".into())
                .with_path(fasthts_io::remote::display_url(url)),
        ));
    }
    let options = fasthts::command::IndexOptions { format: fasthts::command::index_format(csi, min_shift), output, threads: None };
    let plan = run_detached(py, |_| fasthts::command::index_splits(&path, pieces, &options))?;
    Ok(plan.map(|(splits, target)| (splits.into_iter().map(|s| (s.start, s.end)).collect(), target)))
}

/// The index segment of a split's records from `entry` (raw virtual offset;
/// `None`: guess): `(entry, ended, exit, segment)` where `exit` is the next
/// split's first record, or with `ended` where reading stopped at the end;
/// `None` when no entry could be guessed.
#[pyfunction]
#[pyo3(signature = (path, start, end, entry, csi=false, min_shift=None))]
fn dask_index_split(
    py: Python<'_>,
    path: PathBuf,
    start: u64,
    end: u64,
    entry: Option<u64>,
    csi: bool,
    min_shift: Option<i32>,
) -> PyResult<Option<(u64, bool, u64, Py<PyBytes>)>> {
    let format = fasthts::command::index_format(csi, min_shift);
    let done = run_detached(py, |_| {
        let bam = BamFile::open(&path)?;
        let split = Split { start, end };
        let Some(entry) = entry_or_guess(entry, || dist::guess_entry(&bam, split))? else { return Ok(None) };
        let (segment, exit) = dist::index_split(&bam, split, entry, format)?;
        let (ended, exit) = match exit {
            dist::Exit::Next(at) => (false, at),
            dist::Exit::End(at) => (true, at),
        };
        Ok(Some((u64::from(dist::at_block_start(&bam, entry)), ended, u64::from(exit), segment.to_bytes())))
    })?;
    Ok(done.map(|(entry, ended, exit, bytes)| (entry, ended, exit, PyBytes::new(py, &bytes).unbind())))
}

/// Joins segments (each with the bytes to shift its offsets by) into the
/// index of `path`, whose reading ends at `end`, and writes it to `output`.
#[pyfunction]
#[pyo3(signature = (path, segments, end, output, csi=false, min_shift=None))]
fn dask_index_join(
    py: Python<'_>,
    path: PathBuf,
    segments: Vec<(Vec<u8>, u64)>,
    end: u64,
    output: PathBuf,
    csi: bool,
    min_shift: Option<i32>,
) -> PyResult<()> {
    let format = fasthts::command::index_format(csi, min_shift);
    run_detached(py, |_| {
        let bam = BamFile::open(&path)?;
        let mut joined = Vec::with_capacity(segments.len());
        for (bytes, shift) in segments {
            let mut segment = fasthts::index::IndexSegment::from_bytes(&bytes)
                .ok_or_else(|| Error::Message("damaged index segment from a worker".into()).with_path(&path))?;
            segment.shift(shift);
            joined.push(segment);
        }
        let index = dist::join_index(&bam, format, joined, offset(end))?;
        fasthts::index::write_index(&index, &output)
    })
}
