//! Whole-file operations as the CLI does them (flagstat, index, sort,
//! snp-pileup), and the per-task pieces the dask layer plans, runs and
//! gathers: each a call of the same `fasthts::command` function as the CLI.

use crate::regions::Region;
use crate::{paths, run_detached, threads_arg, to_py, FsPath};
use fasthts::command::{self, FlagstatOptions, IndexOptions, SnpPileupFileOptions, SortFileOptions};
use fasthts::flagstat::{Counts, FlagStat as LibFlagStat};
use fasthts::pileup::snp::{self, SnpPileupOptions};
use fasthts::record_output::OutputFormat;
use fasthts::region::Span;
use fasthts::sort::SortOrder;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};


pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FlagStat>()?;
    m.add_function(wrap_pyfunction!(flagstat_fn, m)?)?;
    m.add_function(wrap_pyfunction!(index, m)?)?;
    m.add_function(wrap_pyfunction!(sort_fn, m)?)?;
    m.add_function(wrap_pyfunction!(snp_pileup, m)?)?;
    m.add_function(wrap_pyfunction!(flagstat_plan, m)?)?;
    m.add_function(wrap_pyfunction!(flagstat_regions, m)?)?;
    m.add_function(wrap_pyfunction!(flagstat_gather, m)?)?;
    m.add_function(wrap_pyfunction!(snp_pileup_plan, m)?)?;
    m.add_function(wrap_pyfunction!(snp_pileup_block, m)?)?;
    m.add_function(wrap_pyfunction!(snp_block_entry_state, m)?)?;
    m.add_function(wrap_pyfunction!(write_csv, m)?)?;
    m.add("SNP_WALK_EXHAUSTED", snp::EXHAUSTED)?;
    Ok(())
}

/// Field names of one QC class, in samtools' JSON order.
const FIELDS: [&str; 16] = [
    "total",
    "primary",
    "secondary",
    "supplementary",
    "duplicates",
    "primary_duplicates",
    "mapped",
    "primary_mapped",
    "paired",
    "read1",
    "read2",
    "properly_paired",
    "both_mapped",
    "singletons",
    "mate_other_chr",
    "mate_other_chr_mapq5",
];

fn counts_to_vec(c: &Counts) -> [u64; 16] {
    [
        c.total,
        c.primary,
        c.secondary,
        c.supplementary,
        c.duplicates,
        c.primary_duplicates,
        c.mapped,
        c.primary_mapped,
        c.paired,
        c.read1,
        c.read2,
        c.properly_paired,
        c.both_mapped,
        c.singletons,
        c.mate_other_chr,
        c.mate_other_chr_mapq5,
    ]
}

fn counts_from(v: &[u64]) -> Counts {
    Counts {
        total: v[0],
        primary: v[1],
        secondary: v[2],
        supplementary: v[3],
        duplicates: v[4],
        primary_duplicates: v[5],
        mapped: v[6],
        primary_mapped: v[7],
        paired: v[8],
        read1: v[9],
        read2: v[10],
        properly_paired: v[11],
        both_mapped: v[12],
        singletons: v[13],
        mate_other_chr: v[14],
        mate_other_chr_mapq5: v[15],
    }
}

/// samtools flagstat's counters: QC-passed and QC-failed. `str()` / `text()`
/// is the CLI's output; `a + b` adds counts (results of parts of a file).
///
/// >>> s = flagstat("tests/data/small.bam")
/// >>> print(s.text().splitlines()[0])
/// 3125 + 170 in total (QC-passed reads + QC-failed reads)
/// >>> s.as_dict()["passed"]["mapped"], (s + s).as_dict()["passed"]["total"]
/// (3074, 6250)
#[pyclass(frozen, from_py_object, module = "fasthts._fasthts")]
#[derive(Clone)]
pub struct FlagStat {
    inner: LibFlagStat,
}

#[pymethods]
impl FlagStat {
    /// `FlagStat()` is all zeros; `FlagStat(values)` takes the 32 counters
    /// (16 QC-passed then 16 QC-failed, in `FlagStat.FIELDS` order).
    #[new]
    #[pyo3(signature = (values=None))]
    fn new(values: Option<Vec<u64>>) -> PyResult<Self> {
        let Some(v) = values else { return Ok(FlagStat { inner: LibFlagStat::default() }) };
        if v.len() != 32 {
            return Err(PyValueError::new_err(format!("FlagStat takes 32 counters, got {}", v.len())));
        }
        Ok(FlagStat { inner: LibFlagStat([counts_from(&v[..16]), counts_from(&v[16..])]) })
    }

    /// Names of the 16 counters of each QC class.
    #[classattr]
    #[allow(non_snake_case)]
    fn FIELDS() -> Vec<&'static str> {
        FIELDS.to_vec()
    }

    /// The 32 counters (QC-passed, then QC-failed).
    fn values(&self) -> Vec<u64> {
        let mut v = counts_to_vec(&self.inner.0[0]).to_vec();
        v.extend(counts_to_vec(&self.inner.0[1]));
        v
    }

    /// The CLI's output in `format`: "default" (text), "json" or "tsv".
    #[pyo3(signature = (format="default"))]
    fn text(&self, format: &str) -> PyResult<String> {
        match format.to_ascii_lowercase().as_str() {
            "default" => Ok(self.inner.to_default_text()),
            "json" => Ok(self.inner.to_json()),
            "tsv" => Ok(self.inner.to_tsv()),
            _ => Err(PyValueError::new_err(format!("unknown format {format:?} (default, json or tsv)"))),
        }
    }

    /// `{"passed": {...}, "failed": {...}}`.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (key, c) in [("passed", &self.inner.0[0]), ("failed", &self.inner.0[1])] {
            let sub = PyDict::new(py);
            for (name, v) in FIELDS.iter().zip(counts_to_vec(c)) {
                sub.set_item(*name, v)?;
            }
            d.set_item(key, sub)?;
        }
        Ok(d)
    }

    fn __add__(&self, other: &Bound<'_, PyAny>) -> PyResult<FlagStat> {
        let o = other.cast::<FlagStat>().map_err(|_| PyTypeError::new_err("can only add a FlagStat"))?;
        let mut s = self.inner;
        s.merge(&o.get().inner);
        Ok(FlagStat { inner: s })
    }

    fn __radd__(&self, other: &Bound<'_, PyAny>) -> PyResult<FlagStat> {
        // sum() starts from 0.
        if other.extract::<i64>().is_ok_and(|v| v == 0) {
            return Ok(self.clone());
        }
        self.__add__(other)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<FlagStat>().is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __str__(&self) -> String {
        self.inner.to_default_text()
    }

    fn __repr__(&self) -> String {
        format!("FlagStat(total={}+{})", self.inner.0[0].total, self.inner.0[1].total)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let args = (slf.get().values(),);
        PyTuple::new(slf.py(), [slf.get_type().into_any(), args.into_pyobject(slf.py())?.into_any()])
    }
}

/// Flag statistics of a BAM or SAM file, equal to `fasthts flagstat`'s (and
/// samtools flagstat's): through the index on `threads` threads when the
/// BAM has a usable one, else sequentially.
#[pyfunction]
#[pyo3(name = "flagstat", signature = (path, threads=None))]
fn flagstat_fn(py: Python<'_>, path: FsPath, threads: Option<i64>) -> PyResult<FlagStat> {
    let options = FlagstatOptions { threads: threads_arg(threads)?, ..FlagstatOptions::default() };
    let inner = run_detached(py, |w| command::flagstat_path(&path, &options, w))?;
    Ok(FlagStat { inner })
}

/// Indexes a coordinate-sorted BAM as `fasthts index` (samtools index):
/// BAI by default, CSI with `csi=True` or a `min_shift`. Writes `output`
/// (default: IN.bai / IN.csi beside the input) and returns its path.
#[pyfunction]
#[pyo3(signature = (path, output=None, csi=false, min_shift=None, threads=None))]
fn index(
    py: Python<'_>,
    path: FsPath,
    output: Option<FsPath>,
    csi: bool,
    min_shift: Option<i32>,
    threads: Option<i64>,
) -> PyResult<String> {
    let options = IndexOptions { format: command::index_format(csi, min_shift), output: output.map(|p| p.0), threads: threads_arg(threads)? };
    let target = run_detached(py, |w| command::index_file(&path, &options, w))?;
    Ok(target.display().to_string())
}

/// samtools' memory sizes: an int, or a string with K, M or G.
pub(crate) fn memory_arg(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(n) = v.extract::<usize>() {
        return Ok(n);
    }
    command::parse_memory_size(&v.extract::<String>()?).map_err(to_py)
}

/// Sorts a BAM or SAM file into `output` as `fasthts sort -o OUTPUT`
/// (samtools sort): by coordinate, by name (`by_name`), by a tag, by
/// template-coordinate (`template_coordinate`), or by coordinate with
/// unplaced reads clustered by minimiser (`minimiser`, `kmer`). The output
/// appears only when complete. `memory` is per thread, as `-m`. `format`:
/// "bam", "sam" or "sam.gz", with options as `-O` (default: from the
/// output's name, as the CLI: `.sam`, `.sam.gz`/`.bgz`/`.bgzf`, else BAM).
/// `write_index`: as `--write-index` (`OUTPUT##idx##INDEX` names the
/// index). `fan_in`: the most runs merged at once (`--fan-in`).
#[pyfunction]
#[pyo3(name = "sort", signature = (input, output, by_name=false, tag=None, level=None, memory=None, threads=None, write_index=false, temp_prefix=None, no_pg=false, format=None, template_coordinate=false, minimiser=false, kmer=20, fan_in=None))]
#[allow(clippy::too_many_arguments)]
fn sort_fn(
    py: Python<'_>,
    input: FsPath,
    output: FsPath,
    by_name: bool,
    tag: Option<String>,
    level: Option<u32>,
    memory: Option<&Bound<'_, PyAny>>,
    threads: Option<i64>,
    write_index: bool,
    temp_prefix: Option<FsPath>,
    no_pg: bool,
    format: Option<String>,
    template_coordinate: bool,
    minimiser: bool,
    kmer: i64,
    fan_in: Option<usize>,
) -> PyResult<()> {
    let (format, format_level) = match format.as_deref().map(OutputFormat::parse_spec).transpose().map_err(to_py)? {
        Some((format, level)) => (Some(format), level),
        None => (None, None),
    };
    let mut options = SortFileOptions {
        order: sort_order_arg(by_name, tag.as_deref(), template_coordinate, minimiser, kmer)?,
        format,
        level: level.or(format_level),
        threads: threads_arg(threads)?,
        write_index,
        temp_prefix: temp_prefix.map(|p| p.0),
        program: (!no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), format!("fasthts.sort({:?}, {:?})", input.0, output.0))),
        max_fan_in: fan_in,
        ..SortFileOptions::default()
    };
    if let Some(m) = memory {
        options.memory_per_thread = memory_arg(m)?;
    }
    run_detached(py, |w| command::sort_file(&input, &output, &options, w))
}

/// The sort order the keyword arguments of `sort` (and `dask.sort`) ask for.
pub(crate) fn sort_order_arg(by_name: bool, tag: Option<&str>, template_coordinate: bool, minimiser: bool, kmer: i64) -> PyResult<SortOrder> {
    let tag = tag.map(command::parse_tag).transpose().map_err(to_py)?;
    // The CLI lets the last of -n, -M and --template-coordinate win; keyword
    // arguments have no order, so more than one is an error here.
    if usize::from(by_name) + usize::from(template_coordinate) + usize::from(minimiser) > 1 {
        return Err(PyValueError::new_err("by_name, template_coordinate and minimiser exclude each other"));
    }
    if tag.is_some() && (template_coordinate || minimiser) {
        return Err(PyValueError::new_err("tag cannot be combined with template_coordinate or minimiser"));
    }
    Ok(command::sort_order(tag, by_name, template_coordinate, minimiser.then_some(kmer)))
}

/// snp-pileup's options, FACETS' defaults, from the Python arguments.
#[allow(clippy::too_many_arguments)]
fn snp_options(
    count_orphans: bool,
    max_depth: i32,
    pseudo_snps: i32,
    min_map_quality: i32,
    min_base_quality: i32,
    min_read_counts: Vec<i32>,
    ignore_overlaps: bool,
) -> SnpPileupOptions {
    SnpPileupOptions {
        count_orphans,
        max_depth,
        ignore_overlaps,
        min_map_quality,
        min_base_quality,
        pseudo_snps,
        min_read_counts,
        ..SnpPileupOptions::default()
    }
}

/// snp-pileup's options from keyword arguments named as `snp_pileup`'s
/// (those not given keep FACETS' defaults); any other name is a TypeError.
fn snp_options_from(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<SnpPileupOptions> {
    let mut o = SnpPileupOptions::default();
    for (key, value) in kwargs.into_iter().flatten() {
        let key: String = key.extract()?;
        match key.as_str() {
            "count_orphans" => o.count_orphans = value.extract()?,
            "max_depth" => o.max_depth = value.extract()?,
            "pseudo_snps" => o.pseudo_snps = value.extract()?,
            "min_map_quality" => o.min_map_quality = value.extract()?,
            "min_base_quality" => o.min_base_quality = value.extract()?,
            "min_read_counts" => o.min_read_counts = value.extract()?,
            "ignore_overlaps" => o.ignore_overlaps = value.extract()?,
            _ => return Err(PyTypeError::new_err(format!("unexpected snp-pileup option {key:?}"))),
        }
    }
    Ok(o)
}

/// FACETS snp-pileup: the allele counts of `bams` at the SNPs of `vcf`,
/// written to `output` (`.gz` added with `gzip=True`), byte-identical to
/// `fasthts snp-pileup` with the same options. BAMs and CRAMs without an
/// index are indexed in memory; `reference`: the FASTA of CRAM inputs
/// (`--reference`; None: as htslib finds it). Returns the number of rows
/// written (header excluded).
#[pyfunction]
#[pyo3(signature = (vcf, output, bams, count_orphans=false, max_depth=4000, gzip=false, pseudo_snps=0, min_map_quality=0, min_base_quality=0, min_read_counts=Vec::new(), ignore_overlaps=false, threads=None, reference=None))]
#[allow(clippy::too_many_arguments)]
fn snp_pileup(
    py: Python<'_>,
    vcf: FsPath,
    output: FsPath,
    bams: Vec<FsPath>,
    count_orphans: bool,
    max_depth: i32,
    gzip: bool,
    pseudo_snps: i32,
    min_map_quality: i32,
    min_base_quality: i32,
    min_read_counts: Vec<i32>,
    ignore_overlaps: bool,
    threads: Option<i64>,
    reference: Option<FsPath>,
) -> PyResult<u64> {
    let bams = paths(bams);
    let pileup = snp_options(count_orphans, max_depth, pseudo_snps, min_map_quality, min_base_quality, min_read_counts, ignore_overlaps);
    let reference = reference.map(|r| r.0);
    let options = SnpPileupFileOptions { pileup, gzip, threads: threads_arg(threads)?, reference, ..SnpPileupFileOptions::default() };
    let stats = run_detached(py, |w| command::snp_pileup(&vcf, &output, &bams, &options, w))?;
    Ok(stats.rows)
}

/// For `fasthts.dask.snp_pileup`: `snp_pileup`'s checks (the VCF, the BAMs
/// and their indexes, the output not there yet), then the VCF's used
/// records (file order) cut into about `parts` consecutive blocks
/// `[(first, end, tid), ...]`, cutting only where the contig changes;
/// `tid` is the reference id of the block's contig in the first BAM
/// (FACETS' matching; -1: none).
#[pyfunction]
#[pyo3(signature = (vcf, output, bams, parts, gzip=false, reference=None))]
fn snp_pileup_plan(
    py: Python<'_>,
    vcf: FsPath,
    output: FsPath,
    bams: Vec<FsPath>,
    parts: usize,
    gzip: bool,
    reference: Option<FsPath>,
) -> PyResult<Vec<(u64, u64, i32)>> {
    let bams = paths(bams);
    let options = SnpPileupFileOptions { gzip, reference: reference.map(|r| r.0), ..SnpPileupFileOptions::default() };
    run_detached(py, |w| command::snp_pileup_plan(&vcf, &output, &bams, parts, &options, w))
}

/// One dask task of `fasthts.dask.snp_pileup`: the CSV rows (no header)
/// of the VCF's used records `first..end`, with FACETS' walk starting at
/// `state`, and the state it ends in. `options`: `snp_pileup`'s.
#[pyfunction]
#[pyo3(signature = (vcf, bams, first, end, state, threads=None, reference=None, **options))]
#[allow(clippy::too_many_arguments)]
fn snp_pileup_block<'py>(
    py: Python<'py>,
    vcf: FsPath,
    bams: Vec<FsPath>,
    first: u64,
    end: u64,
    state: Option<(i32, i64)>,
    threads: Option<i64>,
    reference: Option<FsPath>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyBytes>, Option<(i32, i64)>)> {
    let bams = paths(bams);
    let options = SnpPileupFileOptions {
        pileup: snp_options_from(options)?,
        threads: threads_arg(threads)?,
        reference: reference.map(|r| r.0),
        ..SnpPileupFileOptions::default()
    };
    let (rows, state) = run_detached(py, |w| command::snp_pileup_block(&vcf, &bams, first..end, state, &options, w))?;
    Ok((PyBytes::new(py, &rows), state))
}

/// For `fasthts.dask.snp_pileup`: the state to run a block whose first
/// contig is reference `block_tid` from, when FACETS' walk enters it at
/// `state` (None: as if it started the file).
#[pyfunction]
fn snp_block_entry_state(state: Option<(i32, i64)>, block_tid: i32) -> Option<(i32, i64)> {
    snp::block_entry_state(state, block_tid)
}

/// Writes snp-pileup's output from its rows: the header for `n_files`
/// BAMs, then `chunks`, to `output` (`.gz` added and BGZF with `gzip`, as
/// the CLI), atomically; refuses to overwrite.
#[pyfunction]
fn write_csv(py: Python<'_>, output: FsPath, n_files: usize, chunks: Vec<Vec<u8>>, gzip: bool) -> PyResult<()> {
    run_detached(py, |_| command::write_snp_pileup(&output, gzip, n_files, &chunks))
}

/// The regions of a dask flagstat: those `flagstat` reads through the
/// index, of about `region_bytes` compressed bytes each, or None when it
/// reads the file sequentially (no usable index, SAM).
#[pyfunction]
#[pyo3(signature = (path, region_bytes=None))]
fn flagstat_plan(py: Python<'_>, path: FsPath, region_bytes: Option<u64>) -> PyResult<Option<Vec<Region>>> {
    let options = FlagstatOptions { region_bytes: region_bytes.unwrap_or(command::REGION_BYTES), ..FlagstatOptions::default() };
    let regions = run_detached(py, |w| command::flagstat_plan(&path, &options, w))?;
    let Some(regions) = regions else { return Ok(None) };
    let names = crate::bam::reference_names(py, &path)?;
    Ok(Some(regions.into_iter().map(|r| Region::from_lib(r, &names)).collect()))
}

/// One dask task of `fasthts.dask.flagstat`: the flag statistics of the
/// records starting in `regions` of the BAM at `path` (opened here, by
/// path), and each region's span `(first, stop)` as virtual offsets.
#[pyfunction]
#[pyo3(signature = (path, regions, threads=None))]
fn flagstat_regions(
    py: Python<'_>,
    path: FsPath,
    regions: &Bound<'_, PyAny>,
    threads: Option<i64>,
) -> PyResult<(FlagStat, Vec<(u64, u64)>)> {
    let regions = crate::bam::file_regions(py, &path, regions)?;
    let options = FlagstatOptions { threads: threads_arg(threads)?, ..FlagstatOptions::default() };
    let (inner, spans) = run_detached(py, |w| command::flagstat_regions(&path, &regions, &options, w))?;
    Ok((FlagStat { inner }, spans.into_iter().map(|(a, b)| (u64::from(a), u64::from(b))).collect()))
}

/// The answer of a dask flagstat from its plan's `regions` and the tasks'
/// `parts` (`flagstat_regions` results in plan order; None if a task
/// failed), or None when the file is to be counted sequentially instead,
/// as `flagstat` decides (the tasks failed, or their spans do not cover
/// the file: the index does not describe it).
#[pyfunction]
fn flagstat_gather(
    py: Python<'_>,
    path: FsPath,
    regions: &Bound<'_, PyAny>,
    parts: Option<Vec<(FlagStat, Vec<(u64, u64)>)>>,
) -> PyResult<Option<FlagStat>> {
    let regions = crate::bam::file_regions(py, &path, regions)?;
    let parts: Result<Vec<(LibFlagStat, Vec<Span>)>, fasthts::Error> = match parts {
        Some(parts) => {
            Ok(parts.into_iter().map(|(s, spans)| (s.inner, spans.into_iter().map(|(a, b)| (a.into(), b.into())).collect())).collect())
        }
        None => Err(fasthts::Error::Message("a flagstat task failed".into())),
    };
    let gathered = run_detached(py, |w| command::flagstat_gather(&path, &regions, parts, w))?;
    Ok(gathered.map(|inner| FlagStat { inner }))
}
