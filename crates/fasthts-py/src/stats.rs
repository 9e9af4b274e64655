//! `fasthts.stats`: samtools stats through the library function the CLI
//! calls (`fasthts::command::stats_to`); `python/fasthts/_stats.py` reads
//! its text into tables.

use crate::regions::Region;
use crate::{run_detached, threads_arg, FsPath};
use fasthts::command::{self, StatsOptions};
use fasthts::stats::bytes::StatsPart;
use fasthts::stats::StatsSettings;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(stats_text, m)?)?;
    m.add_function(wrap_pyfunction!(stats_plan, m)?)?;
    m.add_function(wrap_pyfunction!(stats_regions, m)?)?;
    m.add_function(wrap_pyfunction!(stats_gather, m)?)?;
    Ok(())
}

/// A flag option: a number or samtools' names (`"UNMAP,DUP"`).
#[derive(FromPyObject)]
enum FlagArg {
    Number(u16),
    Names(String),
}

impl FlagArg {
    fn value(&self) -> PyResult<u16> {
        match self {
            FlagArg::Number(n) => Ok(*n),
            FlagArg::Names(text) => fasthts::depth::parse_flags(text).map_err(crate::to_py),
        }
    }
}

/// The options of a stats run on the file at `path` from `fasthts.stats`'
/// keywords (samtools stats' long names; None: the default), as the
/// library takes them; the text's first lines name fasthts and
/// `stats PATH`. One reading for `fasthts.stats` and each step of
/// `fasthts.dask.stats`, so that they count and print alike.
fn stats_options(path: &FsPath, regions: Option<Vec<String>>, options: Option<&Bound<'_, PyDict>>) -> PyResult<StatsOptions> {
    let mut settings = StatsSettings::default();
    let (mut targets, mut index, mut cram_reference, mut threads) = (None, None, None, None);
    let mut remove_dups = false;
    for (key, value) in options.into_iter().flatten() {
        let key: String = key.extract()?;
        // None is an option's default (fasthts.stats passes every keyword).
        let path = || Ok::<_, PyErr>(value.extract::<Option<FsPath>>()?.map(|p| p.0));
        match key.as_str() {
            "ref_seq" => settings.reference = path()?,
            "target_regions" => targets = path()?,
            "reference" => cram_reference = path()?,
            "index" => index = path()?,
            "coverage" => {
                // Any sequence of three (fasthts.stats passes a tuple, a caller a list).
                if let Some(v) = value.extract::<Option<Vec<i32>>>()? {
                    let [min, max, step] = v[..] else {
                        return Err(PyValueError::new_err(format!("coverage must be (min, max, step), not {} numbers", v.len())));
                    };
                    if step <= 0 {
                        return Err(PyValueError::new_err(format!("coverage step must be above 0, not {step}")));
                    }
                    settings.coverage = (min, max, step);
                }
            }
            "remove_dups" => remove_dups = value.extract()?,
            "remove_overlaps" => settings.remove_overlaps = value.extract()?,
            "sparse" => settings.sparse = value.extract()?,
            "required_flag" => settings.require_flags = value.extract::<Option<FlagArg>>()?.map_or(Ok(0), |f| f.value())?,
            "filtering_flag" => settings.filter_flags = value.extract::<Option<FlagArg>>()?.map_or(Ok(0), |f| f.value())?,
            // samtools reads a float and keeps an int.
            "gc_depth" => settings.gcd_bin_size = value.extract::<Option<f64>>()?.map_or(settings.gcd_bin_size, |g| g as i32),
            "insert_size" => settings.max_insert_size = value.extract::<Option<i32>>()?.unwrap_or(settings.max_insert_size),
            "id" => settings.group_id = value.extract()?,
            "read_length" => settings.read_length = value.extract::<Option<i32>>()?.unwrap_or(settings.read_length),
            "most_inserts" => settings.main_bulk = value.extract::<Option<f64>>()?.map_or(settings.main_bulk, |m| m as f32),
            "trim_quality" => settings.trim_quality = value.extract::<Option<i32>>()?.unwrap_or(settings.trim_quality),
            "cov_threshold" => {
                if let Some(cov) = value.extract::<Option<i32>>()? {
                    if !(0..i32::MAX).contains(&cov) {
                        return Err(PyValueError::new_err(format!("Unsupported value for coverage threshold {cov}")));
                    }
                    settings.cov_threshold = cov;
                }
            }
            "threads" => threads = threads_arg(value.extract()?)?,
            _ => return Err(PyTypeError::new_err(format!("unexpected stats option {key:?}"))),
        }
    }
    if remove_dups {
        settings.filter_flags |= fasthts::bam::flags::DUPLICATE;
    }
    Ok(StatsOptions {
        settings,
        targets,
        regions: regions.unwrap_or_default(),
        index,
        split_prefix: None,
        cram_reference,
        threads,
        producer: format!("fasthts {}", env!("CARGO_PKG_VERSION")),
        command_line: format!("stats {}", path.0.display()),
    })
}

/// samtools stats' text of the file at `path` (and the lines samtools
/// prints on stderr), with samtools' options by their long names; see
/// `fasthts.stats`.
#[pyfunction]
#[pyo3(name = "_stats_text", signature = (path, regions=None, **options))]
fn stats_text(
    py: Python<'_>,
    path: FsPath,
    regions: Option<Vec<String>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, Vec<String>)> {
    let options = stats_options(&path, regions, options)?;
    let (text, notes) = run_detached(py, |w| {
        let mut text = Vec::with_capacity(1 << 16);
        let notes = command::stats_to(&path.0, &options, &mut text, w).map_err(|failure| failure.error)?;
        Ok((text, notes.lines))
    })?;
    Ok((String::from_utf8_lossy(&text).into_owned(), notes))
}

/// The regions of a dask stats (`fasthts.dask.stats`): the references of
/// an indexed BAM (a file or URL) `fasthts.stats` would count one by one,
/// or None when it counts the file in one pass. The options are checked
/// as `fasthts.stats` checks them.
#[pyfunction]
#[pyo3(signature = (path, **options))]
fn stats_plan(py: Python<'_>, path: FsPath, options: Option<&Bound<'_, PyDict>>) -> PyResult<Option<Vec<Region>>> {
    let options = stats_options(&path, None, options)?;
    let Some(regions) = run_detached(py, |w| command::stats_plan(&path.0, &options, w))? else { return Ok(None) };
    let names = crate::bam::reference_names(py, &path.0)?;
    Ok(Some(regions.into_iter().map(|r| Region::from_lib(r, &names)).collect()))
}

/// One dask task of `fasthts.dask.stats`: the partial statistics of
/// `regions` (a run of the plan's) of the BAM at `path`, opened here, as
/// bytes (the library's form, read back by `stats_gather`).
#[pyfunction]
#[pyo3(signature = (path, regions, **options))]
fn stats_regions<'py>(
    py: Python<'py>,
    path: FsPath,
    regions: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let options = stats_options(&path, None, options)?;
    let regions = crate::bam::file_regions(py, &path.0, regions)?;
    let bytes = run_detached(py, |w| Ok(command::stats_regions(&path.0, &regions, &options, w)?.to_bytes(&options.settings)))?;
    Ok(PyBytes::new(py, &bytes))
}

/// The answer of a dask stats from its plan's `regions` and the tasks'
/// `parts` (`stats_regions`' bytes in plan order; None if a task failed):
/// `(text, notes)` as `_stats_text` gives them, or None when the file is to
/// be counted in one pass instead, as `fasthts.stats` decides. Parts that
/// are not this fasthts' (another version, other options, damaged) raise.
#[pyfunction]
#[pyo3(signature = (path, regions, parts, **options))]
fn stats_gather(
    py: Python<'_>,
    path: FsPath,
    regions: &Bound<'_, PyAny>,
    parts: Option<Vec<Vec<u8>>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<(String, Vec<String>)>> {
    let options = stats_options(&path, None, options)?;
    let regions = crate::bam::file_regions(py, &path.0, regions)?;
    let gathered = run_detached(py, |_| {
        let parts = match parts {
            Some(parts) => Ok(parts
                .iter()
                .map(|bytes| StatsPart::from_bytes(bytes, &options.settings).map_err(|e| fasthts::Error::Message(e.0).with_path(&path.0)))
                .collect::<Result<Vec<_>, _>>()?),
            None => Err(fasthts::Error::Message("a stats task failed".into())),
        };
        let mut text = Vec::with_capacity(1 << 16);
        Ok(command::stats_gather(&path.0, &regions, parts, &options, &mut text)?.map(|notes| (text, notes.lines)))
    })?;
    Ok(gathered.map(|(text, notes)| (String::from_utf8_lossy(&text).into_owned(), notes)))
}
