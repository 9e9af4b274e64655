//! `fasthts.depth`: samtools depth (`fasthts::command::depth_to`, the
//! CLI's function) as numpy arrays instead of text.

use crate::{run_detached, threads_arg, FsPath};
use fasthts::command;
use fasthts::depth::{exclude_flags, DepthOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use std::collections::HashMap;
use std::io::{self, Write};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(depth, m)?)?;
    Ok(())
}

/// Takes the rows `depth_to` writes (`CHROM\tPOS\tDEPTH...\n`) apart into
/// columns as they come, keeping only an unfinished line.
struct Rows {
    tid_of: HashMap<Vec<u8>, i32>,
    n_files: usize,
    tid: Vec<i32>,
    pos: Vec<i64>,
    depth: Vec<u32>,
    partial: Vec<u8>,
}

impl Rows {
    fn row(&mut self, line: &[u8]) -> io::Result<()> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("unexpected depth row {:?}", String::from_utf8_lossy(line)));
        let mut fields = line.split(|&c| c == b'\t');
        let chrom = fields.next().ok_or_else(bad)?;
        let tid = *self.tid_of.get(chrom).ok_or_else(bad)?;
        let number = |f: Option<&[u8]>| -> io::Result<u64> {
            std::str::from_utf8(f.ok_or_else(bad)?).ok().and_then(|t| t.parse().ok()).ok_or_else(bad)
        };
        let pos = number(fields.next())?;
        self.tid.push(tid);
        self.pos.push(pos as i64 - 1);
        for _ in 0..self.n_files {
            self.depth.push(u32::try_from(number(fields.next())?).map_err(|_| bad())?);
        }
        Ok(())
    }
}

impl Write for Rows {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|&c| c == b'\n') {
            if self.partial.is_empty() {
                self.row(&rest[..end])?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.row(&line)?;
            }
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
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
    let rows = run_detached(py, |w| {
        let names: Vec<String> = match inputs.first() {
            Some(first) => fasthts::input::open(first)?.header().references.iter().map(|r| r.name.clone()).collect(),
            None => Vec::new(),
        };
        let tid_of = names.iter().enumerate().map(|(i, n)| (n.as_bytes().to_vec(), i as i32)).collect();
        let mut rows = Rows { tid_of, n_files: inputs.len(), tid: Vec::new(), pos: Vec::new(), depth: Vec::new(), partial: Vec::new() };
        command::depth_to(&inputs, &options, &mut rows, w)?;
        Ok((names, rows))
    })?;
    let (names, rows) = rows;
    Ok((
        names,
        PyByteArray::new(py, bytes_of(&rows.tid)),
        PyByteArray::new(py, bytes_of(&rows.pos)),
        PyByteArray::new(py, bytes_of(&rows.depth)),
    ))
}
