//! `fasthts.stats`: samtools stats through the library function the CLI
//! calls (`fasthts::command::stats_to`); `python/fasthts/_stats.py` reads
//! its text into tables.

use crate::{run_detached, threads_arg, FsPath};
use fasthts::command::{self, StatsOptions};
use fasthts::stats::StatsSettings;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(stats_text, m)?)?;
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

/// samtools stats' text of the file at `path` (and the lines samtools
/// prints on stderr), with samtools' options by their long names; see
/// `fasthts.stats`.
#[pyfunction]
#[pyo3(name = "_stats_text", signature = (
    path, regions=None, *, ref_seq=None, target_regions=None, coverage=None, remove_dups=false,
    required_flag=None, filtering_flag=None, gc_depth=None, insert_size=None, id=None, read_length=None,
    most_inserts=None, trim_quality=None, remove_overlaps=false, sparse=false, cov_threshold=None,
    reference=None, index=None, threads=None,
))]
#[allow(clippy::too_many_arguments)]
fn stats_text(
    py: Python<'_>,
    path: FsPath,
    regions: Option<Vec<String>>,
    ref_seq: Option<FsPath>,
    target_regions: Option<FsPath>,
    coverage: Option<(i32, i32, i32)>,
    remove_dups: bool,
    required_flag: Option<FlagArg>,
    filtering_flag: Option<FlagArg>,
    gc_depth: Option<f64>,
    insert_size: Option<i32>,
    id: Option<String>,
    read_length: Option<i32>,
    most_inserts: Option<f64>,
    trim_quality: Option<i32>,
    remove_overlaps: bool,
    sparse: bool,
    cov_threshold: Option<i32>,
    reference: Option<FsPath>,
    index: Option<FsPath>,
    threads: Option<i64>,
) -> PyResult<(String, Vec<String>)> {
    let mut settings = StatsSettings::default();
    if let Some(f) = required_flag {
        settings.require_flags = f.value()?;
    }
    if let Some(f) = filtering_flag {
        settings.filter_flags = f.value()?;
    }
    if remove_dups {
        settings.filter_flags |= fasthts::bam::flags::DUPLICATE;
    }
    if let Some((min, max, step)) = coverage {
        if step <= 0 {
            return Err(PyValueError::new_err(format!("coverage step must be above 0, not {step}")));
        }
        settings.coverage = (min, max, step);
    }
    if let Some(g) = gc_depth {
        // samtools reads a float and keeps an int.
        settings.gcd_bin_size = g as i32;
    }
    if let Some(cov) = cov_threshold {
        if !(0..i32::MAX).contains(&cov) {
            return Err(PyValueError::new_err(format!("Unsupported value for coverage threshold {cov}")));
        }
        settings.cov_threshold = cov;
    }
    settings.max_insert_size = insert_size.unwrap_or(settings.max_insert_size);
    settings.read_length = read_length.unwrap_or(settings.read_length);
    settings.main_bulk = most_inserts.map_or(settings.main_bulk, |m| m as f32);
    settings.trim_quality = trim_quality.unwrap_or(settings.trim_quality);
    settings.reference = ref_seq.map(|p| p.0);
    settings.remove_overlaps = remove_overlaps;
    settings.sparse = sparse;
    settings.group_id = id;
    let regions = regions.unwrap_or_default();
    let command_line = format!("stats {}", path.0.display());
    let options = StatsOptions {
        settings,
        targets: target_regions.map(|p| p.0),
        regions,
        index: index.map(|p| p.0),
        split_prefix: None,
        cram_reference: reference.map(|p| p.0),
        threads: threads_arg(threads)?,
        producer: format!("fasthts {}", env!("CARGO_PKG_VERSION")),
        command_line,
    };
    let (text, notes) = run_detached(py, |w| {
        let mut text = Vec::with_capacity(1 << 16);
        let notes = command::stats_to(&path.0, &options, &mut text, w).map_err(|failure| failure.error)?;
        Ok((text, notes.lines))
    })?;
    Ok((String::from_utf8_lossy(&text).into_owned(), notes))
}
