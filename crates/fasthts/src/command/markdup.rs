//! `markdup`: samtools markdup from a file (or standard input) to a file
//! (or standard output). The marking is [`crate::markdup::Marker`]'s; this
//! reads the input in order, writes what it hands on, and with `-S` keeps
//! the records in a temporary file for the second pass that marks the
//! supplementary records of duplicates (which may come before their
//! primary).

use super::{warn_after_reading, warn_if_truncated, with_threads, Report};
use crate::bam::{Header, RecordRef};
use crate::input::{self, Input};
use crate::markdup::{MarkdupOptions, MarkdupStats, Marker};
use crate::output::{Named, TempOutput};
use crate::record_output::{CramOutput, OutputFormat, RecordOutput};
use crate::sort::{add_missing_sq_lines, add_pg_line};
use crate::Error;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// How to run samtools markdup on a file.
#[derive(Clone, Debug, Default)]
pub struct MarkdupFileOptions {
    /// What decides the marks.
    pub marking: MarkdupOptions,
    /// The output's format (`-O`); `None`: from its name, as samtools.
    pub format: Option<OutputFormat>,
    /// Compression level (`-O FORMAT,level=N`); `None`: the default.
    pub level: Option<u32>,
    /// `-u`: uncompressed BAM, where samtools' output name does not set
    /// the format (standard output, an unknown extension).
    pub uncompressed: bool,
    /// Worker threads (`-@`; all cores when `None`).
    pub threads: Option<usize>,
    /// Where `-S`'s temporary file goes (`-T`): a directory, or a prefix;
    /// `None`: beside the output.
    pub temp_prefix: Option<PathBuf>,
    /// `(version, command line)` for the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
    /// The reference of CRAM input and output (`--reference`).
    pub reference: Option<PathBuf>,
    /// htslib's options for a CRAM output.
    pub cram_options: Vec<String>,
    /// Index the BAM output as it is written (`--write-index`): `OUT.csi`,
    /// or the path after `##idx##` in `OUT##idx##INDEX`.
    pub write_index: bool,
}

/// What a run of markdup found: its counts and the warnings samtools
/// prints (without `[markdup] warning: `).
#[derive(Clone, Debug, Default)]
pub struct MarkdupSummary {
    /// The counts of samtools' `-s` report.
    pub stats: MarkdupStats,
    /// Warnings, in samtools' order.
    pub warnings: Vec<String>,
}

/// samtools' output mode: with `-u` a BAM is uncompressed unless the
/// output's name gives the format (samtools' `sam_open_mode` then resets
/// the mode it had set).
fn name_sets_format(path: &Path) -> bool {
    let name = path.to_string_lossy().to_ascii_lowercase();
    [".bam", ".cram", ".sam", ".sam.gz", ".sam.bgz", ".sam.bgzf"].iter().any(|e| name.ends_with(e))
}

/// Whether the header says the file is sorted by name (`@HD SO:queryname`).
fn sorted_by_name(text: &[u8]) -> bool {
    let Some(hd) = text.split(|&c| c == b'\n').find(|l| l.starts_with(b"@HD\t")) else { return false };
    hd.split(|&c| c == b'\t').any(|f| f == b"SO:queryname")
}

/// The temporary file of `-S`'s first pass, removed when dropped.
struct TempRecords {
    path: PathBuf,
}

impl TempRecords {
    /// samtools' naming: `-T`'s prefix (inside it when it is a directory),
    /// else `OUTPUT.` (`./` for standard output).
    fn create(prefix: Option<&Path>, output: &Path) -> Result<(TempRecords, File), Error> {
        let mut prefix = match prefix {
            Some(p) => p.as_os_str().to_owned(),
            None if output.as_os_str() == "-" => ".".into(),
            None => {
                let mut p = output.as_os_str().to_owned();
                p.push(".");
                p
            }
        };
        if Path::new(&prefix).is_dir() && !prefix.to_string_lossy().ends_with('/') {
            prefix.push("/");
        }
        prefix.push(format!("fasthts.{}.markdup.tmp", std::process::id()));
        let path = PathBuf::from(prefix);
        let file = crate::output::create_temporary(&path)
            .map_err(|e| Error::from(e).with_path(&path))
            .map_err(|e| Error::Message(format!("unable to open tmp file: {e}")))?;
        Ok((TempRecords { path }, file))
    }
}

impl Drop for TempRecords {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        crate::output::unregister_temporary(&self.path);
    }
}

type Sink = RecordOutput<'static, Box<dyn Write + Send>>;

/// The output of marked records: a file written under a temporary name
/// and renamed into place once complete (or standard output); with `-S`,
/// the records first go to a temporary file which [`MarkedOutput::finish`]
/// reads back through [`Marker::mark_other_record`] (the supplementary
/// records of duplicates may come before their primary).
pub(super) struct MarkedOutput {
    pub(super) sink: Sink,
    temp: Option<TempOutput>,
    first_pass: Option<(TempRecords, BufWriter<File>)>,
}

impl MarkedOutput {
    /// Opens `output` (`-`: standard output) in `format` and writes
    /// `header`; `index`: index a BAM output as it is written.
    pub(super) fn open(
        output: &Path,
        header: &Header,
        format: OutputFormat,
        level: u32,
        cram: crate::cram::CramWriteOptions,
        index: Option<crate::index::IndexFormat>,
    ) -> Result<MarkedOutput, Error> {
        let (temp, w): (Option<TempOutput>, Box<dyn Write + Send>) = if output.as_os_str() == "-" {
            (None, Box::new(BufWriter::with_capacity(1 << 20, Named::new(io::stdout(), crate::output::stdout_name()))))
        } else {
            let (temp, file) = TempOutput::create(output)?;
            let w = BufWriter::with_capacity(1 << 20, Named::new(crate::output::WritebackFile::new(file), temp.shown()));
            (Some(temp), Box::new(w))
        };
        let sink: Sink = if format == OutputFormat::Cram {
            let name = if temp.is_some() { output.to_path_buf() } else { PathBuf::from("-") };
            RecordOutput::open_cram(header, &CramOutput { name, options: cram, index: None }, w)?
        } else {
            RecordOutput::open(header, format, level, index, true, w)?
        };
        Ok(MarkedOutput { sink, temp, first_pass: None })
    }

    /// With `-S` (`marking.mark_supplementary`): the records go to a
    /// temporary file first (named from `temp_prefix`, else beside
    /// `output`), read back by [`MarkedOutput::finish`].
    pub(super) fn second_pass(
        mut self,
        marking: &MarkdupOptions,
        temp_prefix: Option<&Path>,
        output: &Path,
    ) -> Result<MarkedOutput, Error> {
        if marking.mark_supplementary {
            let (records, file) = TempRecords::create(temp_prefix, output)?;
            self.first_pass = Some((records, BufWriter::with_capacity(1 << 20, file)));
        }
        Ok(self)
    }

    /// Takes a record (`block_size` and data) the marker hands on.
    pub(super) fn emit(&mut self, data: &[u8]) -> Result<(), Error> {
        match &mut self.first_pass {
            Some((_, w)) => w.write_all(data).map_err(temp_error),
            None => self.sink.write_record(data),
        }
    }

    /// Ends the output: `-S`'s second pass, then the file renamed into
    /// place. Returns the index of a BAM output, if asked for.
    pub(super) fn finish(mut self, marker: &mut Marker) -> Result<Option<crate::index::Index>, Error> {
        if let Some((records, w)) = self.first_pass.take() {
            let file = w.into_inner().map_err(|e| temp_error(e.into_error()))?;
            drop(file);
            let mut reader = BufReader::with_capacity(1 << 20, File::open(&records.path).map_err(temp_error)?);
            let mut data = Vec::new();
            loop {
                let mut size = [0u8; 4];
                match reader.read_exact(&mut size) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(Error::Message(format!("failed to read tmp file: {e}"))),
                }
                data.clear();
                data.extend_from_slice(&size);
                data.resize(4 + u32::from_le_bytes(size) as usize, 0);
                reader.read_exact(&mut data[4..]).map_err(|e| Error::Message(format!("failed to read tmp file: {e}")))?;
                if marker.mark_other_record(&mut data)? {
                    self.sink.write_record(&data)?;
                }
            }
            drop(records);
        }
        let (index, mut w) = self.sink.finish()?;
        w.flush()?;
        drop(w);
        if let Some(temp) = self.temp {
            temp.commit()?;
        }
        Ok(index)
    }
}

fn temp_error(e: io::Error) -> Error {
    Error::Message(format!("writing temp output failed: {e}"))
}

/// samtools markdup of `input` (a coordinate-sorted BAM, SAM or CRAM that
/// went through `samtools fixmate -m`; `-` for standard input) to `output`
/// (`-`: standard output; a file is complete or absent).
pub fn markdup_file(input: &Path, output: &Path, options: &MarkdupFileOptions, report: &dyn Report) -> Result<MarkdupSummary, Error> {
    let format = match options.format {
        Some(f) => f,
        None => OutputFormat::from_path(output)?,
    };
    // Sort's rule: the part before `##idx##` is the output. The output is
    // in position order (markdup's input must be).
    let super::OutputWithIndex { data, index_path, format: index } = super::output_with_index(output, format, options.write_index, true, report)?;
    if index.is_some() && format == OutputFormat::Cram {
        return Err(Error::InvalidArgument("--write-index is not supported with CRAM output in fasthts markdup yet".into()));
    }
    let output = data.as_path();
    let mut outputs = vec![output];
    if index.is_some() {
        outputs.push(&index_path);
    }
    crate::output::refuse_input_as_output(&outputs, &[input])?;
    let mut marker = Marker::new(&options.marking)?;
    with_threads(options.threads, || {
        let cram_input = crate::cram::CramOptions { reference: options.reference.clone(), ..Default::default() };
        let mut opened = input::open_with(input, &cram_input)?;
        if let Input::Bam(bam) = &opened {
            warn_if_truncated(bam, report);
        }
        let header = opened.header();
        if sorted_by_name(&header.text) {
            return Err(Error::Message("queryname sorted, must be sorted by coordinate".into()).with_path(input));
        }
        let text = match &options.program {
            Some((version, cl)) => add_missing_sq_lines(&add_pg_line(&header.text, "fasthts", version, cl), &header.references),
            None => header.text.clone(),
        };
        let out_header = Header { text, references: header.references.clone() };
        let level = options.level.unwrap_or(if options.uncompressed && !name_sets_format(output) { 0 } else { crate::bgzf::DEFAULT_LEVEL });
        let cram = crate::cram::CramWriteOptions {
            reference: options.reference.clone(),
            options: options.cram_options.clone(),
            level: options.level,
        };
        let mut out = MarkedOutput::open(output, &out_header, format, level, cram, index)?.second_pass(
            &options.marking,
            options.temp_prefix.as_deref(),
            output,
        )?;
        // samtools keeps a SAM input's positions past 2^31 in a SAM output
        // (a BAM or CRAM output refuses them).
        if let (Input::Sam(sam), OutputFormat::Sam | OutputFormat::SamGz) = (&mut opened, format) {
            sam.set_positions(crate::sam::Positions::Wide);
            out.sink.keep_wide_positions();
            marker.keep_wide_positions();
        }
        {
            let mut emit = |data: &[u8]| out.emit(data);
            let in_path = |e: Error| match e {
                Error::Message(_) => e.with_path(input),
                e => e,
            };
            let mut handle = |r: &RecordRef<'_>| marker.push(r, &mut emit).map_err(in_path);
            match &mut opened {
                Input::Bam(bam) => crate::bam::scan(bam, |r, _| handle(r)).map(|_| ())?,
                Input::Stream(stream) => stream.for_each_record(handle)?,
                Input::Cram(cram) => cram.for_each_record(handle)?,
                Input::Sam(sam) => sam.for_each_record(|r| handle(&r)).map_err(|e| match e {
                    Error::Sam(e) => Error::Sam(e).with_path(input),
                    e => e,
                })?,
            }
            marker.finish(&mut emit).map_err(in_path)?;
        }
        warn_after_reading(&mut opened, input, report);
        if let Some(index) = out.finish(&mut marker)? {
            crate::index::write_index(&index, &index_path)?;
        }
        Ok(MarkdupSummary { stats: *marker.stats(), warnings: marker.take_warnings() })
    })
}
