//! Whole-file operations as the CLI does them: flagstat, index, sort,
//! snp-pileup; and the per-task pieces the dask layer distributes.

use crate::bam::{region_arg, usable_index_path, Shared, REGION_BYTES};
use crate::{err, to_py, with_threads};
use fasthts::bam::BamFile as LibBam;
use fasthts::bgzf::{BgzfWriter, VirtualOffset, DEFAULT_LEVEL};
use fasthts::flagstat::{self, Counts, FlagStat as LibFlagStat};
use fasthts::index::{Index, IndexFormat, DEFAULT_MIN_SHIFT};
use fasthts::input::Input;
use fasthts::output::TempOutput;
use fasthts::pileup::snp::{self, SnpPileupOptions};
use fasthts::pileup::vcf::{self, VcfSummary};
use fasthts::region;
use fasthts::sort::{self, SortEngine, SortOptions, SortOrder};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FlagStat>()?;
    m.add_function(wrap_pyfunction!(flagstat_fn, m)?)?;
    m.add_function(wrap_pyfunction!(index, m)?)?;
    m.add_function(wrap_pyfunction!(sort_fn, m)?)?;
    m.add_function(wrap_pyfunction!(snp_pileup, m)?)?;
    m.add_function(wrap_pyfunction!(flagstat_regions, m)?)?;
    m.add_function(wrap_pyfunction!(check_coverage, m)?)?;
    m.add_function(wrap_pyfunction!(snp_pileup_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(snp_pileup_block, m)?)?;
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
#[pyclass(frozen, module = "fasthts._fasthts")]
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
fn flagstat_fn(py: Python<'_>, path: PathBuf, threads: Option<usize>) -> PyResult<FlagStat> {
    let inner = py
        .detach(|| {
            with_threads(threads, || -> Result<LibFlagStat, fasthts::Error> {
                let spool = std::env::temp_dir().join(format!("fasthts-flagstat.{}", std::process::id()));
                match fasthts::input::open(&path, &spool)? {
                    Input::Bam(bam, _spool) => count_bam(&bam),
                    Input::Sam(mut sam) => {
                        let mut stats = LibFlagStat::default();
                        sam.for_each_record(|r| {
                            stats.add(&r);
                            Ok::<(), fasthts::Error>(())
                        })?;
                        Ok(stats)
                    }
                }
            })
        })
        .map_err(to_py)?;
    Ok(FlagStat { inner })
}

/// As the CLI: by regions when the BAM has a usable index that describes
/// it, else sequentially (which reports the file's own errors).
fn count_bam(bam: &LibBam) -> Result<LibFlagStat, fasthts::Error> {
    if let Some(p) = usable_index_path(bam.path()) {
        if let Ok(ix) = Index::from_path(&p) {
            if let Ok(stats) = flagstat::count_indexed(bam, &ix, REGION_BYTES) {
                return Ok(stats);
            }
        }
    }
    flagstat::count_sequential(bam)
}

/// Indexes a coordinate-sorted BAM as `fasthts index` (samtools index):
/// BAI by default, CSI with `csi=True` or a `min_shift`. Writes `output`
/// (default: IN.bai / IN.csi beside the input) and returns its path.
#[pyfunction]
#[pyo3(signature = (path, output=None, csi=false, min_shift=None, threads=None))]
fn index(
    py: Python<'_>,
    path: PathBuf,
    output: Option<PathBuf>,
    csi: bool,
    min_shift: Option<i32>,
    threads: Option<usize>,
) -> PyResult<String> {
    let shift = min_shift.unwrap_or(DEFAULT_MIN_SHIFT as i32);
    let csi = (csi || min_shift.is_some()) && shift > 0;
    let format = if csi { IndexFormat::Csi { min_shift: shift as u32, depth: 0 } } else { IndexFormat::Bai };
    let target = output.unwrap_or_else(|| {
        let mut p = path.as_os_str().to_owned();
        p.push(if csi { ".csi" } else { ".bai" });
        PathBuf::from(p)
    });
    py.detach(|| {
        with_threads(threads, || -> Result<(), fasthts::Error> {
            let bam = LibBam::open(&path)?;
            let ix = fasthts::indexer::build(&bam, format)?;
            fasthts::indexer::write_index(&ix, &target)
        })
    })
    .map_err(to_py)?;
    Ok(target.display().to_string())
}

/// samtools' memory sizes: an int, or a string with K, M or G.
fn memory_arg(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(n) = v.extract::<usize>() {
        return Ok(n);
    }
    let s: String = v.extract()?;
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1usize << 10),
        Some((i, 'm' | 'M')) => (&s[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok().and_then(|n| n.checked_mul(mult)).ok_or_else(|| PyValueError::new_err(format!("invalid memory size {s:?}")))
}

/// Sorts a BAM or SAM file into `output` as `fasthts sort -o OUTPUT`
/// (samtools sort): by coordinate, by name (`by_name`), by a tag, by
/// template-coordinate (`template_coordinate`), or by coordinate with
/// unplaced reads clustered by minimiser (`minimiser`, `kmer`). The output
/// appears only when complete. `memory` is per thread, as `-m`. `format`:
/// "bam", "sam" or "sam.gz" (default: from the output's extension, as the
/// CLI). `fan_in`: the most runs merged at once (`--fan-in`).
#[pyfunction]
#[pyo3(name = "sort", signature = (input, output, by_name=false, tag=None, level=None, memory=None, threads=None, write_index=false, temp_prefix=None, no_pg=false, format=None, template_coordinate=false, minimiser=false, kmer=20, fan_in=None))]
#[allow(clippy::too_many_arguments)]
fn sort_fn(
    py: Python<'_>,
    input: PathBuf,
    output: PathBuf,
    by_name: bool,
    tag: Option<String>,
    level: Option<u32>,
    memory: Option<&Bound<'_, PyAny>>,
    threads: Option<usize>,
    write_index: bool,
    temp_prefix: Option<PathBuf>,
    no_pg: bool,
    format: Option<String>,
    template_coordinate: bool,
    minimiser: bool,
    kmer: i64,
    fan_in: Option<usize>,
) -> PyResult<()> {
    // As the CLI: the format given, else from the output's extension.
    let name = output.to_string_lossy().to_ascii_lowercase();
    let format = match format.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("bam") => sort::OutputFormat::Bam,
        Some("sam") => sort::OutputFormat::Sam,
        Some("sam.gz") => sort::OutputFormat::SamGz,
        Some(f) => return Err(PyValueError::new_err(format!("unknown output format {f:?}; use bam, sam or sam.gz"))),
        None if name.ends_with(".sam") => sort::OutputFormat::Sam,
        None if name.ends_with(".sam.gz") => sort::OutputFormat::SamGz,
        None => sort::OutputFormat::Bam,
    };
    if write_index && format != sort::OutputFormat::Bam {
        return Err(PyValueError::new_err("write_index is only supported with BAM output"));
    }
    let tag = match tag.as_deref().map(str::as_bytes) {
        None => None,
        Some([a, b]) => Some([*a, *b]),
        Some(_) => return Err(PyValueError::new_err("invalid tag: a tag has two characters")),
    };
    if level.is_some_and(|l| l > 9) {
        return Err(PyValueError::new_err("level must be between 0 and 9"));
    }
    // The CLI lets the last of -n, -M and --template-coordinate win; keyword
    // arguments have no order, so more than one is an error here.
    if usize::from(by_name) + usize::from(template_coordinate) + usize::from(minimiser) > 1 {
        return Err(PyValueError::new_err("by_name, template_coordinate and minimiser exclude each other"));
    }
    if tag.is_some() && (template_coordinate || minimiser) {
        return Err(PyValueError::new_err("tag cannot be combined with template_coordinate or minimiser"));
    }
    if fan_in.is_some_and(|n| n < 2) {
        return Err(PyValueError::new_err("fan_in must be at least 2"));
    }
    let per_thread = match memory {
        Some(m) => memory_arg(m)?,
        None => 768 << 20,
    };
    let n = threads.filter(|&n| n > 0).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let index = (write_index && !by_name && tag.is_none()).then_some(IndexFormat::Csi { min_shift: DEFAULT_MIN_SHIFT, depth: 0 });
    let opts = SortOptions {
        engine: SortEngine::Native,
        max_fan_in: fan_in,
        index,
        order: match tag {
            Some(tag) => SortOrder::Tag { tag, then_by_name: by_name },
            None if by_name => SortOrder::QueryName,
            None if template_coordinate => SortOrder::TemplateCoordinate,
            // As samtools' -K: clamped to 1..=31.
            None if minimiser => SortOrder::Minimiser { kmer: kmer.clamp(1, 31) as u8 },
            None => SortOrder::Coordinate,
        },
        memory: per_thread.saturating_mul(n),
        level: level.unwrap_or(DEFAULT_LEVEL),
        temp_prefix: temp_prefix.unwrap_or_else(|| output.clone()),
        program: (!no_pg).then(|| (env!("CARGO_PKG_VERSION").to_string(), format!("fasthts.sort({:?}, {:?})", input, output))),
        progress: None,
        format,
    };
    py.detach(|| {
        with_threads(Some(n), || -> Result<(), fasthts::Error> {
            let mut inp = fasthts::input::open(&input, &opts.temp_prefix)?;
            let (temp, file) = TempOutput::create(&output)?;
            let (stats, out) = sort::sort_input(&mut inp, &opts, BufWriter::with_capacity(1 << 20, file))?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            temp.commit()?;
            if let Some(ix) = stats.index {
                let mut p = output.as_os_str().to_owned();
                p.push(".csi");
                fasthts::indexer::write_index(&ix, PathBuf::from(p))?;
            }
            Ok(())
        })
    })
    .map_err(to_py)
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

/// The plan of a run over the VCF's used records `records` (its first
/// pass, checking every line) and the BAMs with their indexes, with the
/// CLI's messages.
fn snp_inputs(
    vcf: &std::path::Path,
    bams: &[PathBuf],
    opts: &SnpPileupOptions,
    records: std::ops::Range<u64>,
) -> Result<(VcfSummary, Vec<LibBam>, Vec<Index>), String> {
    if bams.is_empty() {
        return Err("snp_pileup needs at least one BAM".into());
    }
    let sites = vcf::scan_records(vcf, opts.region_size, records).map_err(|e| format!("Failed to read VCF file: {e}"))?;
    let mut libbams = Vec::with_capacity(bams.len());
    let mut indexes = Vec::with_capacity(bams.len());
    for p in bams {
        let bam = LibBam::open(p).map_err(|e| format!("Failed to read sequence file {} ({e})", p.display()))?;
        let Some(ip) = usable_index_path(p) else {
            return Err(format!(
                "{}: no index found (snp-pileup reads BAMs through their index; run `fasthts index {}` first)",
                p.display(),
                p.display()
            ));
        };
        let ix = Index::from_path(&ip).map_err(|e| fasthts::Error::from(e).with_path(&ip).to_string())?;
        libbams.push(bam);
        indexes.push(ix);
    }
    Ok((sites, libbams, indexes))
}

/// The output path (`.gz` added with gzip, as FACETS), refusing to overwrite.
fn snp_target(output: &std::path::Path, gzip: bool) -> Result<PathBuf, String> {
    let mut target = output.as_os_str().to_owned();
    if gzip && !output.to_string_lossy().ends_with(".gz") {
        target.push(".gz");
    }
    let target = PathBuf::from(target);
    if target.exists() {
        return Err(format!("Output file {} already exists!", output.display()));
    }
    Ok(target)
}

/// Writes `write`'s bytes to `target` atomically, BGZF-compressed (as the
/// CLI's `-g`) or plain.
fn write_output(
    target: &std::path::Path,
    gzip: bool,
    write: impl FnOnce(&mut (dyn Write + Send)) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
) -> Result<(), String> {
    let (temp, file) = TempOutput::create(target).map_err(|e| format!("Failed to open output file for writing: {e}"))?;
    let r = (|| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if gzip {
            let mut w = BgzfWriter::new(BufWriter::new(file), DEFAULT_LEVEL);
            write(&mut w)?;
            w.finish()?.flush()?;
        } else {
            let mut w = BufWriter::with_capacity(1 << 20, file);
            write(&mut w)?;
            w.flush()?;
        }
        Ok(())
    })();
    r.map_err(|e| e.to_string())?;
    temp.commit().map_err(|e| e.to_string())
}

/// FACETS snp-pileup: the allele counts of `bams` at the SNPs of `vcf`,
/// written to `output` (`.gz` added with `gzip=True`), byte-identical to
/// `fasthts snp-pileup` with the same options. The BAMs must be indexed.
/// Returns the number of rows written (header excluded).
#[pyfunction]
#[pyo3(signature = (vcf, output, bams, count_orphans=false, max_depth=4000, gzip=false, pseudo_snps=0, min_map_quality=0, min_base_quality=0, min_read_counts=Vec::new(), ignore_overlaps=false, threads=None))]
#[allow(clippy::too_many_arguments)]
fn snp_pileup(
    py: Python<'_>,
    vcf: PathBuf,
    output: PathBuf,
    bams: Vec<PathBuf>,
    count_orphans: bool,
    max_depth: i32,
    gzip: bool,
    pseudo_snps: i32,
    min_map_quality: i32,
    min_base_quality: i32,
    min_read_counts: Vec<i32>,
    ignore_overlaps: bool,
    threads: Option<usize>,
) -> PyResult<u64> {
    let opts = snp_options(count_orphans, max_depth, pseudo_snps, min_map_quality, min_base_quality, min_read_counts, ignore_overlaps);
    let result = py.detach(|| -> Result<u64, String> {
        let (summary, libbams, indexes) = snp_inputs(&vcf, &bams, &opts, 0..u64::MAX)?;
        let target = snp_target(&output, gzip)?;
        let mut rows = 0;
        write_output(&target, gzip, |w| {
            rows = with_threads(threads, || snp::run(&vcf, &summary, &libbams, &indexes, &opts, w))?.rows;
            Ok(())
        })?;
        Ok(rows)
    });
    result.map_err(err)
}

/// For `fasthts.dask.snp_pileup`: the VCF's used records (file order) cut
/// into about `parts` consecutive blocks `[(first, end, tid), ...]`,
/// cutting only where the contig changes; `tid` is the reference id of
/// the block's contig in `bam` (FACETS' matching; -1: none).
#[pyfunction]
fn snp_pileup_blocks(py: Python<'_>, vcf: PathBuf, bam: PathBuf, parts: usize) -> PyResult<Vec<(u64, u64, i32)>> {
    py.detach(|| -> Result<_, String> {
        let b = LibBam::open(&bam).map_err(|e| format!("Failed to read sequence file {} ({e})", bam.display()))?;
        let names: Vec<&str> = b.header().references.iter().map(|r| r.name.as_str()).collect();
        snp::plan_blocks(&vcf, &names, parts).map_err(|e| format!("Failed to read VCF file: {e}"))
    })
    .map_err(err)
}

/// One dask task of `fasthts.dask.snp_pileup`: the CSV rows (no header)
/// of the VCF's used records `first..end`, with FACETS' walk starting at `state`,
/// and the state it ends in (`snp::run_from`).
#[pyfunction]
#[pyo3(signature = (vcf, bams, first, end, state, count_orphans=false, max_depth=4000, pseudo_snps=0, min_map_quality=0, min_base_quality=0, min_read_counts=Vec::new(), ignore_overlaps=false, threads=None))]
#[allow(clippy::too_many_arguments)]
fn snp_pileup_block<'py>(
    py: Python<'py>,
    vcf: PathBuf,
    bams: Vec<PathBuf>,
    first: u64,
    end: u64,
    state: Option<(i32, i64)>,
    count_orphans: bool,
    max_depth: i32,
    pseudo_snps: i32,
    min_map_quality: i32,
    min_base_quality: i32,
    min_read_counts: Vec<i32>,
    ignore_overlaps: bool,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, pyo3::types::PyBytes>, Option<(i32, i64)>)> {
    let opts = snp_options(count_orphans, max_depth, pseudo_snps, min_map_quality, min_base_quality, min_read_counts, ignore_overlaps);
    let (text, state) = py
        .detach(|| -> Result<(Vec<u8>, Option<(i32, i64)>), String> {
            if first > end {
                return Err("record block out of range".into());
            }
            let (summary, libbams, indexes) = snp_inputs(&vcf, &bams, &opts, first..end)?;
            let mut out = Vec::new();
            let (_, end_state) =
                with_threads(threads, || snp::run_from(&vcf, &summary, &libbams, &indexes, &opts, &mut out, first..end, state))
                    .map_err(|e| e.to_string())?;
            let header = out.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
            Ok((out.split_off(header), end_state))
        })
        .map_err(err)?;
    Ok((pyo3::types::PyBytes::new(py, &text), state))
}

/// Writes snp-pileup's output from its rows: the header for `n_files`
/// BAMs, then `chunks`, to `output` (`.gz` added and BGZF with `gzip`, as
/// the CLI), atomically; refuses to overwrite.
#[pyfunction]
fn write_csv(py: Python<'_>, output: PathBuf, n_files: usize, chunks: Vec<Vec<u8>>, gzip: bool) -> PyResult<()> {
    py.detach(|| -> Result<(), String> {
        let target = snp_target(&output, gzip)?;
        write_output(&target, gzip, |w| {
            w.write_all(snp::header(n_files).as_bytes())?;
            for c in &chunks {
                w.write_all(c)?;
            }
            Ok(())
        })
    })
    .map_err(err)
}

/// One dask task of `fasthts.dask.flagstat`: the flag statistics of the
/// records starting in `regions` of the BAM at `path` (opened here, by
/// path), and each region's span `(first, stop)` as virtual offsets, for
/// the coverage check.
#[pyfunction]
#[pyo3(signature = (path, regions, threads=None))]
fn flagstat_regions(
    py: Python<'_>,
    path: PathBuf,
    regions: &Bound<'_, PyAny>,
    threads: Option<usize>,
) -> PyResult<(FlagStat, Vec<(u64, u64)>)> {
    let sh = py.detach(|| Shared::open(&path, None)).map_err(to_py)?;
    let names: Vec<String> = sh.bam.header().references.iter().map(|r| r.name.clone()).collect();
    let mut rs = Vec::new();
    for r in regions.try_iter()? {
        rs.push(region_arg(&names, &r?)?);
    }
    let (stats, spans) = py
        .detach(|| {
            with_threads(threads, || -> Result<_, fasthts::Error> {
                let ix = sh.index()?;
                let parts = region::scatter_with_spans(&sh.bam, &ix, &rs, |_, rd| {
                    let mut s = LibFlagStat::default();
                    while let Some(r) = rd.next_record()? {
                        s.add(&r);
                    }
                    Ok(s)
                })?;
                let mut total = LibFlagStat::default();
                let mut spans = Vec::with_capacity(parts.len());
                for (s, (a, b)) in parts {
                    total.merge(&s);
                    spans.push((u64::from(a), u64::from(b)));
                }
                Ok((total, spans))
            })
        })
        .map_err(to_py)?;
    Ok((FlagStat { inner: stats }, spans))
}

/// Checks that region spans (in plan order, from `flagstat_regions`) cover
/// the BAM exactly, as `region::scatter_all` does; raises
/// `fasthts.Error` ("the index does not match the data file ...") if not.
#[pyfunction]
fn check_coverage(py: Python<'_>, path: PathBuf, spans: Vec<(u64, u64)>) -> PyResult<()> {
    py.detach(|| -> Result<(), fasthts::Error> {
        let bam = LibBam::open(&path)?;
        let mut expected = bam.first_record_offset();
        for (first, stop) in spans {
            let first = VirtualOffset::from(first);
            if first != expected {
                return Err(fasthts::Error::IndexMismatch(format!("a region starts at {first}, expected {expected}")));
            }
            expected = VirtualOffset::from(stop);
        }
        let mut tail = bam.records_from(expected)?;
        if tail.advance().map_err(|e| fasthts::Error::from(e).with_path(bam.path()))? {
            return Err(fasthts::Error::IndexMismatch(format!("records after {expected} belong to no region")));
        }
        Ok(())
    })
    .map_err(to_py)
}
