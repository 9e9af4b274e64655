//! `fasthts.depth`: samtools depth (`fasthts::command::depth_columns`,
//! the CLI's rows as columns) as numpy arrays.

use crate::{run_detached, threads_arg, FsPath};
use fasthts::command;
use fasthts::depth::{exclude_flags, DepthOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(depth, m)?)?;
    Ok(())
}

fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain integers, viewed as their bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// samtools depth of `paths` (as `fasthts depth`): `(references, tid,
/// pos, depth)` with `tid` (int32), 0-based `pos` (int64) and `depth`
/// (uint32, one per file per row) as native-endian bytes for numpy.
#[pyfunction]
#[pyo3(name = "_depth", signature = (paths, region=None, bed=None, all_positions=0, min_base_quality=0, min_mapping_quality=0, min_read_length=0, include_flags=Vec::new(), exclude_flags=Vec::new(), count_deletions=false, remove_overlaps=false, threads=None))]
#[allow(clippy::too_many_arguments)]
fn depth<'py>(
    py: Python<'py>,
    paths: Vec<FsPath>,
    region: Option<String>,
    bed: Option<FsPath>,
    all_positions: u8,
    min_base_quality: i32,
    min_mapping_quality: i32,
    min_read_length: i64,
    include_flags: Vec<String>,
    exclude_flags: Vec<String>,
    count_deletions: bool,
    remove_overlaps: bool,
    threads: Option<i64>,
) -> PyResult<(Vec<String>, Bound<'py, PyByteArray>, Bound<'py, PyByteArray>, Bound<'py, PyByteArray>)> {
    let inputs = crate::paths(paths);
    if inputs.iter().any(|p| p.as_os_str() == "-") {
        return Err(PyValueError::new_err("fasthts.depth reads files by name, not standard input (-)"));
    }
    let options = DepthOptions {
        exclude_flags: self::exclude_flags(&include_flags, &exclude_flags).map_err(crate::to_py)?,
        min_base_quality,
        min_mapping_quality,
        min_read_length,
        count_deletions,
        all_positions: all_positions.min(2),
        remove_overlaps,
        header: false,
        region,
        bed: bed.map(|p| p.0),
        threads: threads_arg(threads)?,
        ..DepthOptions::default()
    };
    let rows = run_detached(py, |w| command::depth_columns(&inputs, &options, w))?;
    Ok((
        rows.references,
        PyByteArray::new(py, bytes_of(&rows.tid)),
        PyByteArray::new(py, bytes_of(&rows.pos)),
        PyByteArray::new(py, bytes_of(&rows.depth)),
    ))
}
