//! `sort`: samtools sort from a file (or standard input) to a file (or
//! standard output), with its index if asked.

use super::{output_with_index, thread_count, warn_after_reading, warn_if_truncated, with_threads, OutputWithIndex, Report};
use crate::cram::CramOptions;
use crate::input::{self, Input};
use crate::output::{Named, TempOutput};
use crate::record_output::OutputFormat;
use crate::sort::{self, SortEngine, SortOptions, SortOrder, SortProgress};
use crate::Error;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The smallest memory per thread samtools sort accepts: less would mean
/// a run file every few records.
pub const MIN_MEMORY_PER_THREAD: usize = 1 << 20;

/// How to sort a file: samtools sort's options.
#[derive(Clone, Debug)]
pub struct SortFileOptions {
    /// The order (see [`sort_order`]).
    pub order: SortOrder,
    /// What to write; `None`: what the output's name asks for
    /// ([`OutputFormat::from_path`]).
    pub format: Option<OutputFormat>,
    /// BGZF compression level, 0 to 9 (`None`: the default, 6).
    pub level: Option<u32>,
    /// Memory for records per thread (`-m`), at least
    /// [`MIN_MEMORY_PER_THREAD`].
    pub memory_per_thread: usize,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Index the output as it is written (`--write-index`): BAM in a
    /// position order only, to a file.
    pub write_index: bool,
    /// Prefix of the temporary run files (`-T`); `None`: the output's
    /// path, or `fasthts-sort` when writing to standard output.
    pub temp_prefix: Option<PathBuf>,
    /// `(version, command line)` for the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
    /// Most runs merged at once (at least 2); `None`: from the open-file limit.
    pub max_fan_in: Option<usize>,
    /// How records are sorted.
    pub engine: SortEngine,
    /// Counters a progress display may read while the sort runs.
    pub progress: Option<Arc<SortProgress>>,
    /// The reference FASTA of a CRAM input and of a CRAM output (samtools'
    /// `--reference`); `None`: as htslib finds it ([`crate::cram`]).
    pub reference: Option<PathBuf>,
    /// htslib's format options for a CRAM output, `OPT=VAL` (samtools'
    /// `-O cram,OPT=VAL` and `--output-fmt-option`; see
    /// [`crate::record_output::cram_output_options`]).
    pub cram_options: Vec<String>,
}

impl Default for SortFileOptions {
    /// samtools sort's defaults: by coordinate, 768M per thread.
    fn default() -> Self {
        SortFileOptions {
            order: SortOrder::Coordinate,
            format: None,
            level: None,
            memory_per_thread: 768 << 20,
            threads: None,
            write_index: false,
            temp_prefix: None,
            program: None,
            max_fan_in: None,
            engine: SortEngine::Native,
            progress: None,
            reference: None,
            cram_options: Vec::new(),
        }
    }
}

/// The order samtools sort's options ask for: by the value of `tag` then
/// by name (`by_name`) or position; else by name; by template-coordinate;
/// by coordinate with unplaced reads clustered by minimisers of
/// `minimiser_kmer` bases (clamped to 1..=31, as samtools' `-K`); else by
/// coordinate.
pub fn sort_order(tag: Option<[u8; 2]>, by_name: bool, template_coordinate: bool, minimiser_kmer: Option<i64>) -> SortOrder {
    match (tag, minimiser_kmer) {
        (Some(tag), _) => SortOrder::Tag { tag, then_by_name: by_name },
        (None, _) if by_name => SortOrder::QueryName,
        (None, _) if template_coordinate => SortOrder::TemplateCoordinate,
        (None, Some(kmer)) => SortOrder::Minimiser { kmer: kmer.clamp(1, 31) as u8 },
        (None, None) => SortOrder::Coordinate,
    }
}

/// Reads a sort tag (`-t`): two characters.
pub fn parse_tag(text: &str) -> Result<[u8; 2], Error> {
    match text.as_bytes() {
        [a, b] => Ok([*a, *b]),
        _ => Err(Error::InvalidArgument(format!("invalid tag {text:?}: a tag has two characters"))),
    }
}

/// samtools' complaint about a too small `-m`, sizes shown as it shows them.
/// Refuses a `-m` below [`MIN_MEMORY_PER_THREAD`] with samtools' message.
pub fn check_memory_per_thread(bytes: usize) -> Result<(), Error> {
    if bytes < MIN_MEMORY_PER_THREAD {
        return Err(memory_too_small(bytes));
    }
    Ok(())
}

fn memory_too_small(bytes: usize) -> Error {
    let (mut n, mut suffix) = (bytes, "");
    for next in ["K", "M"] {
        if n > 9 << 10 {
            n >>= 10;
            suffix = next;
        }
    }
    Error::InvalidArgument(format!("-m setting ({n}{suffix} bytes) is less than the minimum required (1M)"))
}

/// Sorts the BAM or SAM file at `input` (`-`: standard input) into
/// `output` (`-`: standard output) as samtools sort does. The output is
/// written under a temporary name and renamed into place when complete.
/// With `write_index`, the index goes to `OUTPUT.csi` (`OUTPUT.crai` for
/// CRAM), or to the path after `##idx##` in `OUTPUT##idx##INDEX` (a BAI
/// when it ends in `.bai`; see [`crate::index::split_index_name`]).
/// CRAM is written by htslib, as samtools writes it (the same bytes).
pub fn sort_file(input: &Path, output: &Path, options: &SortFileOptions, report: &dyn Report) -> Result<(), Error> {
    if options.level.is_some_and(|l| l > 9) {
        return Err(Error::InvalidArgument("level must be between 0 and 9".into()));
    }
    if options.max_fan_in.is_some_and(|n| n < 2) {
        return Err(Error::InvalidArgument("fan_in must be at least 2".into()));
    }
    let format = match options.format {
        Some(format) => format,
        None => OutputFormat::from_path(output)?,
    };
    check_memory_per_thread(options.memory_per_thread)?;
    let OutputWithIndex { data, index_path, format: index } =
        output_with_index(output, format, options.write_index, options.order.is_positional(), report)?;
    let to_stdout = output.as_os_str() == "-";
    if format == OutputFormat::Cram {
        // Said before the sort rather than after it: htslib reads the
        // reference only when the output is opened.
        if let Some(reference) = options.reference.as_deref().filter(|r| !r.is_file()) {
            return Err(Error::Message("cannot read the reference FASTA (or its .fai)".into()).with_path(reference));
        }
    }
    // `sort -o x.bam x.bam` sorts in place, as samtools does: every record
    // is read before the output is written, and the output is renamed
    // over the input only once complete (the mapped input stays readable
    // until then). An index written over the input is refused.
    if index.is_some() {
        crate::output::refuse_input_as_output(&[&index_path], &[input])?;
    }
    let threads = thread_count(options.threads);
    let temp_prefix = match &options.temp_prefix {
        Some(prefix) => prefix.clone(),
        None if to_stdout => PathBuf::from("fasthts-sort"),
        None => data.clone(),
    };
    let sort_options = SortOptions {
        order: options.order,
        memory: options.memory_per_thread.saturating_mul(threads),
        level: options.level.unwrap_or(crate::bgzf::DEFAULT_LEVEL),
        temp_prefix,
        program: options.program.clone(),
        index,
        max_fan_in: options.max_fan_in,
        progress: options.progress.clone(),
        format,
        engine: options.engine,
        cram: None,
    };
    let mut sort_options = sort_options;
    // htslib writes the .crai itself: to a temporary name, renamed into
    // place once the CRAM is.
    let cram_index = match (format, index) {
        (OutputFormat::Cram, Some(_)) => Some(TempOutput::create(&index_path)?.0),
        _ => None,
    };
    if format == OutputFormat::Cram {
        sort_options.index = None;
        sort_options.cram = Some(crate::record_output::CramOutput {
            name: if to_stdout { PathBuf::from("-") } else { data.clone() },
            options: crate::cram::CramWriteOptions {
                reference: options.reference.clone(),
                options: options.cram_options.clone(),
                level: options.level,
            },
            index: cram_index.as_ref().map(|t| t.path().to_path_buf()),
        });
    }
    with_threads(Some(threads), || {
        // A stream's records go straight into the sort's batches: the
        // disk holds the output and the runs only.
        let input_path = input;
        let cram = CramOptions { reference: options.reference.clone(), threads, ..CramOptions::default() };
        let mut input = input::open_with(input, &cram)?;
        // samtools' check before any record is read: BAM's 32-bit
        // positions cannot hold a reference this long.
        let header = input.header();
        let cram_4 = options.cram_options.iter().any(|o| o.strip_prefix("version=").is_some_and(|v| v.starts_with('4')));
        let narrow = format == OutputFormat::Bam || (format == OutputFormat::Cram && !cram_4);
        if narrow && (0..header.references.len()).any(|i| header.reference_len(i) > i32::MAX as u64) {
            return Err(Error::Message("output format is not compatible with very large references".into()));
        }
        match &input {
            Input::Bam(bam) => warn_if_truncated(bam, report),
            Input::Cram(cram) => super::warn_if_cram_truncated(cram, report),
            _ => {}
        }
        if to_stdout {
            let stdout = BufWriter::with_capacity(1 << 20, Named::new(io::stdout().lock(), crate::output::stdout_name()));
            match sort::sort_input(&mut input, input_path, &sort_options, stdout) {
                // A reader that has seen enough (`| head`) is not an error.
                Err(Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
                r => {
                    r?;
                }
            }
            warn_after_reading(&mut input, input_path, report);
            io::stdout().flush().ok();
            return Ok(());
        }
        let (temp, file) = TempOutput::create(&data)?;
        let writer = BufWriter::with_capacity(1 << 20, Named::new(crate::output::WritebackFile::new(file), temp.shown()));
        let (stats, out) = sort::sort_input(&mut input, input_path, &sort_options, writer)?;
        warn_after_reading(&mut input, input_path, report);
        let file = out.into_inner().map_err(|e| e.into_error())?.into_inner().into_inner();
        crate::output::sync_if_file(&file).map_err(|e| Error::from(e).with_path(temp.shown()))?;
        temp.commit()?;
        if let Some(index) = stats.index {
            crate::index::write_index(&index, &index_path)?;
        }
        if let Some(index) = cram_index {
            index.commit()?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, scratch, Kept};
    use super::*;

    #[test]
    fn orders_as_samtools_options_ask() {
        let tag = Some(*b"RG");
        assert_eq!(sort_order(tag, true, false, None), SortOrder::Tag { tag: *b"RG", then_by_name: true });
        assert_eq!(sort_order(None, true, false, None), SortOrder::QueryName);
        assert_eq!(sort_order(None, false, true, None), SortOrder::TemplateCoordinate);
        assert_eq!(sort_order(None, false, false, Some(40)), SortOrder::Minimiser { kmer: 31 });
        assert_eq!(sort_order(None, false, false, Some(-4)), SortOrder::Minimiser { kmer: 1 });
        assert_eq!(sort_order(None, false, false, None), SortOrder::Coordinate);
        assert_eq!(parse_tag("RG").unwrap(), *b"RG");
        assert_eq!(parse_tag("RGX").unwrap_err().to_string(), "invalid tag \"RGX\": a tag has two characters");
    }

    #[test]
    fn refuses_what_samtools_refuses() {
        let dir = scratch("sort-refuses");
        let input = data("small.bam");
        let err = |output: &str, options: SortFileOptions| {
            sort_file(&input, &dir.join(output), &options, &Kept::default()).unwrap_err().to_string()
        };
        let index = SortFileOptions { write_index: true, ..Default::default() };
        assert_eq!(err("x.sam", index.clone()), "--write-index is only supported with BAM or CRAM output");
        let small = SortFileOptions { memory_per_thread: 1000, ..Default::default() };
        assert_eq!(err("x.bam", small), "-m setting (1000 bytes) is less than the minimum required (1M)");
        let small = SortFileOptions { memory_per_thread: 500 << 10, ..Default::default() };
        assert_eq!(err("x.bam", small), "-m setting (500K bytes) is less than the minimum required (1M)");
        let stdout = sort_file(&input, Path::new("-"), &index, &Kept::default()).unwrap_err().to_string();
        assert_eq!(stdout, "--write-index needs an output file (-o)");
        assert_eq!(err("x.bam", SortFileOptions { level: Some(10), ..Default::default() }), "level must be between 0 and 9");
        assert_eq!(err("x.bam", SortFileOptions { max_fan_in: Some(1), ..Default::default() }), "fan_in must be at least 2");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn output_names_choose_format_and_index() {
        let dir = scratch("sort-names");
        let input = data("small.bam");
        let kept = Kept::default();
        let options = SortFileOptions { write_index: true, threads: Some(2), ..Default::default() };
        sort_file(&input, &dir.join("a.bam"), &options, &kept).unwrap();
        let sorted = std::fs::read(dir.join("a.bam")).unwrap();
        let csi = crate::index::build(
            &crate::bam::BamFile::open(dir.join("a.bam")).unwrap(),
            crate::index::IndexFormat::Csi { min_shift: 14, depth: 0 },
        );
        assert_eq!(std::fs::read(dir.join("a.bam.csi")).unwrap(), csi.unwrap().to_bytes());
        // A name without a known extension is BAM; the index is named after `##idx##`.
        let named = PathBuf::from(format!("{}##idx##{}", dir.join("b.bgzf").display(), dir.join("b.bai").display()));
        sort_file(&input, &named, &options, &kept).unwrap();
        assert_eq!(std::fs::read(dir.join("b.bgzf")).unwrap(), sorted);
        let bai = crate::index::build(&crate::bam::BamFile::open(dir.join("a.bam")).unwrap(), crate::index::IndexFormat::Bai);
        assert_eq!(std::fs::read(dir.join("b.bai")).unwrap(), bai.unwrap().to_bytes());
        sort_file(&input, &dir.join("c.sam.bgzf"), &SortFileOptions::default(), &kept).unwrap();
        assert!(fasthts_io::compression::is_bgzf(&std::fs::read(dir.join("c.sam.bgzf")).unwrap()), "BGZF");
        let by_name = SortFileOptions { order: SortOrder::QueryName, ..options };
        sort_file(&input, &dir.join("n.bam"), &by_name, &kept).unwrap();
        assert!(!dir.join("n.bam.csi").exists());
        assert_eq!(kept.warnings(), ["ignoring --write-index as it only works for position sorted files"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
