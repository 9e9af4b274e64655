//! `markdup` and `sormadup` as the CLI runs them: the same
//! `fasthts::command` functions, with samtools markdup's options as
//! keyword arguments, returning its statistics as a dict.

use crate::ops::memory_arg;
use crate::{run_detached, threads_arg, to_py, warn_texts, FsPath};
use fasthts::command::{self, MarkdupFileOptions, MarkdupSummary, SormadupOptions, SortFileOptions};
use fasthts::fixmate::FixmateOptions;
use fasthts::markdup::{Barcodes, DuplicateMode, MarkdupOptions};
use fasthts::record_output::{cram_output_options, OutputFormat};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(markdup, m)?)?;
    m.add_function(wrap_pyfunction!(sormadup, m)?)?;
    Ok(())
}

/// markdup's marking options, from the keyword arguments both functions
/// share (named as samtools' long options, or as its usage describes the
/// short ones).
#[allow(clippy::too_many_arguments)]
pub(crate) fn marking_options(
    remove_duplicates: bool,
    max_read_length: i64,
    mark_supplementary: bool,
    optical_distance: i64,
    clear_previous: bool,
    mode: &str,
    include_fails: bool,
    no_multi_dup: bool,
    read_coords: Option<String>,
    coords_order: &str,
    barcode_tag: Option<&str>,
    barcode_name: bool,
    barcode_rgx: Option<&str>,
    tag_originals: bool,
) -> PyResult<MarkdupOptions> {
    Ok(MarkdupOptions {
        remove_duplicates,
        max_read_length,
        mark_supplementary,
        tag_originals,
        optical_distance,
        clear_previous,
        mode: DuplicateMode::from_letter(mode).map_err(to_py)?,
        include_fails,
        check_chains: !no_multi_dup,
        read_coords: read_coords.map(|r| (r, coords_order.to_string())),
        barcodes: Barcodes::from_options(barcode_tag, barcode_name, barcode_rgx).map_err(to_py)?,
    })
}

/// `format` as `-O` takes it: the format, its level and CRAM's options.
fn format_arg(format: Option<&str>) -> PyResult<(Option<OutputFormat>, Option<u32>, Vec<String>)> {
    let Some(spec) = format else { return Ok((None, None, Vec::new())) };
    let (format, level) = OutputFormat::parse_spec(spec).map_err(to_py)?;
    Ok((Some(format), level, cram_output_options(spec.split(',').skip(1))))
}

/// The run's warnings issued, its statistics written to `stats_file` as
/// `-f` writes them (`command` in its COMMAND line), and returned as a
/// dict keyed by samtools' names in lower case (`duplicate_pair`, ...).
pub(crate) fn report(py: Python<'_>, summary: &MarkdupSummary, stats_file: Option<&Path>, command: &str) -> PyResult<Py<PyDict>> {
    warn_texts(py, &summary.warnings)?;
    if let Some(path) = stats_file {
        let (text, warning) = summary.stats.text(command);
        warn_texts(py, &warning.into_iter().collect::<Vec<_>>())?;
        fasthts::output::write_atomically(path, |w| std::io::Write::write_all(w, text.as_bytes()))
            .map_err(|e| to_py(fasthts::Error::from(e)))?;
    }
    let dict = PyDict::new(py);
    for (name, value) in summary.stats.fields().0 {
        dict.set_item(name.to_ascii_lowercase().replace(' ', "_"), value)?;
    }
    Ok(dict.unbind())
}

/// How the call shows in the @PG line and the statistics' COMMAND line.
fn call_text(function: &str, input: &Path, output: &Path) -> String {
    format!("fasthts.{function}({:?}, {:?})", input.display().to_string(), output.display().to_string())
}

/// Marks duplicates in a coordinate-sorted file that went through
/// `samtools fixmate -m` (BAM, SAM or CRAM; "-" for standard input), as
/// `fasthts markdup` (samtools 1.16 markdup): the same records, the output
/// complete or absent. Returns the statistics of samtools' `-s` report as
/// a dict (`read`, `written`, ..., `estimated_library_size`); `stats_file`
/// also writes them as `-f` does. Options as samtools': `remove_duplicates`
/// `-r`, `max_read_length` `-l`, `mark_supplementary` `-S`,
/// `optical_distance` `-d`, `clear_previous` `-c`, `tag_originals` `-t`,
/// `mode` `--mode` ("t" or "s"), `temp_prefix` `-T`, `uncompressed` `-u`,
/// `format` `-O`, `level` the compression level, `no_pg` `--no-PG`,
/// `write_index` `--write-index`, and the long options by their names.
#[pyfunction]
#[pyo3(signature = (input, output, remove_duplicates=false, max_read_length=300, mark_supplementary=false, optical_distance=0, clear_previous=false, mode="t", include_fails=false, no_multi_dup=false, read_coords=None, coords_order="txy", barcode_tag=None, barcode_name=false, barcode_rgx=None, tag_originals=false, stats_file=None, temp_prefix=None, threads=None, level=None, format=None, uncompressed=false, no_pg=false, reference=None, write_index=false))]
#[allow(clippy::too_many_arguments)]
fn markdup(
    py: Python<'_>,
    input: FsPath,
    output: FsPath,
    remove_duplicates: bool,
    max_read_length: i64,
    mark_supplementary: bool,
    optical_distance: i64,
    clear_previous: bool,
    mode: &str,
    include_fails: bool,
    no_multi_dup: bool,
    read_coords: Option<String>,
    coords_order: &str,
    barcode_tag: Option<String>,
    barcode_name: bool,
    barcode_rgx: Option<String>,
    tag_originals: bool,
    stats_file: Option<FsPath>,
    temp_prefix: Option<FsPath>,
    threads: Option<i64>,
    level: Option<u32>,
    format: Option<String>,
    uncompressed: bool,
    no_pg: bool,
    reference: Option<FsPath>,
    write_index: bool,
) -> PyResult<Py<PyDict>> {
    let marking = marking_options(
        remove_duplicates,
        max_read_length,
        mark_supplementary,
        optical_distance,
        clear_previous,
        mode,
        include_fails,
        no_multi_dup,
        read_coords,
        coords_order,
        barcode_tag.as_deref(),
        barcode_name,
        barcode_rgx.as_deref(),
        tag_originals,
    )?;
    let (format, format_level, cram_options) = format_arg(format.as_deref())?;
    let command_text = call_text("markdup", &input, &output);
    let options = MarkdupFileOptions {
        marking,
        format,
        level: level.or(format_level),
        uncompressed,
        threads: threads_arg(threads)?,
        temp_prefix: temp_prefix.map(|p| p.0),
        program: (!no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), command_text.clone())),
        reference: reference.map(|p| p.0),
        cram_options,
        write_index,
    };
    let summary = run_detached(py, |w| command::markdup_file(&input, &output, &options, w))?;
    report(py, &summary, stats_file.as_deref(), &command_text)
}

/// From an aligner's output (unsorted or grouped by name; BAM, SAM or
/// CRAM; "-" for standard input) to a duplicate-marked, coordinate-sorted
/// file in one process, as `fasthts sormadup`: the records of samtools
/// collate, fixmate -m, sort and markdup. markdup's options and the
/// returned statistics as `markdup`'s; `memory` per thread as sort's `-m`
/// (an int, or a string with K, M or G); `write_index` as `--write-index`;
/// `collate` collates even an input whose header says it is grouped by
/// name; `fix_remove`, `fix_no_pair_check` and `fix_template_cigar` are
/// fixmate's `-r`, `-p` and `-c`.
#[pyfunction]
#[pyo3(signature = (input, output, remove_duplicates=false, max_read_length=300, mark_supplementary=false, optical_distance=0, clear_previous=false, mode="t", include_fails=false, no_multi_dup=false, read_coords=None, coords_order="txy", barcode_tag=None, barcode_name=false, barcode_rgx=None, tag_originals=false, stats_file=None, temp_prefix=None, threads=None, level=None, format=None, no_pg=false, reference=None, memory=None, write_index=false, collate=false, fix_remove=false, fix_no_pair_check=false, fix_template_cigar=false))]
#[allow(clippy::too_many_arguments)]
fn sormadup(
    py: Python<'_>,
    input: FsPath,
    output: FsPath,
    remove_duplicates: bool,
    max_read_length: i64,
    mark_supplementary: bool,
    optical_distance: i64,
    clear_previous: bool,
    mode: &str,
    include_fails: bool,
    no_multi_dup: bool,
    read_coords: Option<String>,
    coords_order: &str,
    barcode_tag: Option<String>,
    barcode_name: bool,
    barcode_rgx: Option<String>,
    tag_originals: bool,
    stats_file: Option<FsPath>,
    temp_prefix: Option<FsPath>,
    threads: Option<i64>,
    level: Option<u32>,
    format: Option<String>,
    no_pg: bool,
    reference: Option<FsPath>,
    memory: Option<&Bound<'_, PyAny>>,
    write_index: bool,
    collate: bool,
    fix_remove: bool,
    fix_no_pair_check: bool,
    fix_template_cigar: bool,
) -> PyResult<Py<PyDict>> {
    let marking = marking_options(
        remove_duplicates,
        max_read_length,
        mark_supplementary,
        optical_distance,
        clear_previous,
        mode,
        include_fails,
        no_multi_dup,
        read_coords,
        coords_order,
        barcode_tag.as_deref(),
        barcode_name,
        barcode_rgx.as_deref(),
        tag_originals,
    )?;
    let (format, format_level, cram_options) = format_arg(format.as_deref())?;
    let command_text = call_text("sormadup", &input, &output);
    let mut sort = SortFileOptions {
        format,
        level: level.or(format_level),
        threads: threads_arg(threads)?,
        write_index,
        temp_prefix: temp_prefix.map(|p| p.0),
        program: (!no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), command_text.clone())),
        reference: reference.map(|p| p.0),
        cram_options,
        ..SortFileOptions::default()
    };
    if let Some(m) = memory {
        sort.memory_per_thread = memory_arg(m)?;
    }
    let fix = FixmateOptions {
        remove_reads: fix_remove,
        proper_pair_check: !fix_no_pair_check,
        template_cigar: fix_template_cigar,
        mate_score: true,
    };
    let options = SormadupOptions { sort, fix, marking, always_collate: collate };
    let summary = run_detached(py, |w| command::sormadup_file(&input, &output, &options, w))?;
    let stats_file: Option<PathBuf> = stats_file.map(|p| p.0);
    report(py, &summary, stats_file.as_deref(), &command_text)
}
