//! `fixmate`: samtools 1.16's mate fixing of a name-grouped file, record
//! for record ([`crate::fixmate`]), read and written as BAM, SAM or CRAM.

use super::{warn_after_reading, warn_if_truncated, with_threads, Report};
use crate::bam::Header;
use crate::cram::{CramOptions, CramWriteOptions};
use crate::fixmate::{Fixmate, FixmateOptions};
use crate::input::{self, Input};
use crate::output::{Named, TempOutput};
use crate::record_output::{CramOutput, OutputFormat, RecordOutput};
use crate::sort::{add_missing_sq_lines, add_pg_line};
use crate::Error;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// What samtools fixmate says of a coordinate-sorted input, word for word
/// (its test suite compares it).
pub const FIXMATE_COORDINATE_SORTED: &str = "[bam_mating_core] ERROR: Coordinate sorted, require grouped/sorted by queryname.";

/// `fasthts fixmate`'s options.
#[derive(Clone, Debug, Default)]
pub struct FixmateFileOptions {
    /// What is done to the records.
    pub fix: FixmateOptions,
    /// Output format.
    pub format: OutputFormat,
    /// BGZF (or CRAM) level; `None`: the default.
    pub level: Option<u32>,
    /// `(version, command line)` of the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Reference FASTA of a CRAM input and output.
    pub reference: Option<PathBuf>,
    /// htslib's CRAM output options (`OPT=VAL`).
    pub cram_options: Vec<String>,
}

/// An output of records: a file written under a temporary name and renamed
/// into place once complete, or standard output.
pub(super) struct RecordsOut {
    sink: RecordOutput<'static, Box<dyn Write + Send>>,
    temp: Option<TempOutput>,
    /// SAM text keeps positions past 32 bits (see [`crate::fixmate::MateRecord::append_to`]).
    pub(super) wide: bool,
}

impl RecordsOut {
    /// Opens `path` (`-`: standard output) and writes `header` (always,
    /// SAM included, as samtools' commands other than view do).
    pub(super) fn open(
        path: &Path,
        header: &Header,
        format: OutputFormat,
        level: Option<u32>,
        cram: &CramWriteOptions,
    ) -> Result<RecordsOut, Error> {
        let (temp, w): (Option<TempOutput>, Box<dyn Write + Send>) = if path.as_os_str() == "-" {
            (None, Box::new(BufWriter::with_capacity(1 << 20, Named::new(io::stdout(), crate::output::stdout_name()))))
        } else {
            let (temp, file) = TempOutput::create(path)?;
            let w = BufWriter::with_capacity(1 << 20, Named::new(crate::output::WritebackFile::new(file), temp.shown()));
            (Some(temp), Box::new(w))
        };
        let mut sink = if format == OutputFormat::Cram {
            let name = if temp.is_some() { path.to_path_buf() } else { PathBuf::from("-") };
            let cram = CramOutput { name, options: CramWriteOptions { level, ..cram.clone() }, index: None };
            RecordOutput::open_cram(header, &cram, w)?
        } else {
            RecordOutput::open(header, format, level.unwrap_or(crate::bgzf::DEFAULT_LEVEL), None, true, w)?
        };
        let wide = matches!(format, OutputFormat::Sam | OutputFormat::SamGz);
        if wide {
            sink.keep_wide_positions();
        }
        Ok(RecordsOut { sink, temp, wide })
    }

    /// Writes one record (`block_size` and data).
    pub(super) fn write(&mut self, record: &[u8]) -> Result<(), Error> {
        self.sink.write_record(record)
    }

    /// Ends the output; a file is renamed into place.
    pub(super) fn finish(self) -> Result<(), Error> {
        let (_, mut w) = self.sink.finish()?;
        w.flush()?;
        drop(w);
        if let Some(temp) = self.temp {
            temp.commit()?;
        }
        Ok(())
    }
}

/// The header samtools writes: the input's, with its @PG line (unless
/// `program` is `None`) and an @SQ line for each reference the text lacks;
/// lines with a type and nothing else (a bare `@CO`) are dropped, as
/// htslib's header parser skips them.
pub(super) fn output_header(header: &Header, program: &Option<(String, String)>) -> Header {
    let mut text = Vec::with_capacity(header.text.len());
    for line in header.text.split_inclusive(|&c| c == b'\n') {
        let bare = line.strip_suffix(b"\n").unwrap_or(line);
        if !(bare.len() == 3 && bare[0] == b'@') {
            text.extend_from_slice(line);
        }
    }
    let text = match program {
        Some((version, command_line)) => add_pg_line(&text, "fasthts", version, command_line),
        None => text,
    };
    Header { text: add_missing_sq_lines(&text, &header.references), references: header.references.clone() }
}

/// The value of the @HD line's SO tag, if any.
pub(super) fn sort_order_of(text: &[u8]) -> Option<&[u8]> {
    let first = text.split(|&c| c == b'\n').next()?;
    if !first.starts_with(b"@HD\t") {
        return None;
    }
    first.split(|&c| c == b'\t').skip(1).find_map(|f| f.strip_prefix(b"SO:"))
}

/// samtools fixmate of `input` (BAM, SAM or CRAM; `-` for standard input)
/// to `output` (`-`: standard output; a file appears complete or not at
/// all). A coordinate-sorted input is refused with
/// [`FIXMATE_COORDINATE_SORTED`].
pub fn fixmate_file(input: &Path, output: &Path, options: &FixmateFileOptions, report: &dyn Report) -> Result<(), Error> {
    if options.level.is_some_and(|l| l > 9) {
        return Err(Error::InvalidArgument("level must be between 0 and 9".into()));
    }
    if output.as_os_str() != "-" {
        crate::output::refuse_input_as_output(&[output], &[input])?;
    }
    with_threads(options.threads, || {
        let threads = rayon::current_num_threads();
        let cram = CramOptions { reference: options.reference.clone(), threads, ..CramOptions::default() };
        let mut opened = input::open_with(input, &cram)?;
        if sort_order_of(&opened.header().text) == Some(b"coordinate") {
            return Err(Error::Message(FIXMATE_COORDINATE_SORTED.into()));
        }
        if let Input::Bam(bam) = &opened {
            warn_if_truncated(bam, report);
        }
        let header = opened.header();
        let reference_lens: Vec<i64> = (0..header.references.len()).map(|i| header.reference_len(i) as i64).collect();
        let out_header = output_header(header, &options.program);
        let write_options = CramWriteOptions { reference: options.reference.clone(), options: options.cram_options.clone(), level: None };
        let mut out = RecordsOut::open(output, &out_header, options.format, options.level, &write_options)?;
        // SAM text out of SAM text keeps positions past 32 bits.
        let wide = out.wide && matches!(opened, Input::Sam(_));
        if let (Input::Sam(sam), true) = (&mut opened, wide) {
            sam.set_positions(crate::sam::Positions::Wide);
        }
        let mut fixmate = Fixmate::new(options.fix, reference_lens);
        let mut encoded = Vec::new();
        let wide_out = out.wide;
        let mut write = |r: &crate::fixmate::MateRecord| -> Result<(), Error> {
            encoded.clear();
            r.append_to(&mut encoded, wide_out)?;
            out.write(&encoded)
        };
        let mut handle = |r: &crate::bam::RecordRef<'_>| fixmate.push(r.as_bytes(), wide, &mut write);
        read_all(&mut opened, input, &mut handle)?;
        fixmate.finish(&mut write)?;
        warn_after_reading(&mut opened, input, report);
        out.finish()
    })
}

/// Calls `handle` on every record of `input` (opened from `path`), in
/// file order, up to the first error.
pub(super) fn read_all(
    input: &mut Input,
    path: &Path,
    handle: &mut (dyn FnMut(&crate::bam::RecordRef<'_>) -> Result<(), Error> + Send),
) -> Result<(), Error> {
    match input {
        Input::Bam(bam) => crate::bam::scan(bam, |r, _| handle(r)).map(|_| ()),
        Input::Stream(stream) => stream.for_each_record(handle),
        Input::Cram(cram) => cram.for_each_record(handle),
        Input::Sam(sam) => sam.for_each_record(|r| handle(&r)).map_err(|e| match e {
            Error::Sam(e) => Error::Sam(e).with_path(path),
            e => e,
        }),
    }
}
