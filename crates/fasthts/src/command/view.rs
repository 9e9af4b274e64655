//! `view`: samtools view 1.16: records of a file or of regions, filtered,
//! as SAM or BAM (or counted). A whole file is read in file order (BAM
//! blocks inflated ahead on the pool, SAM lines formatted in parallel);
//! regions are read through the index in windows on all threads and
//! written in order.

use super::{find_index, load_index, verify_index, warn_if_stream_truncated, warn_if_truncated, with_threads, Report};
use crate::bam::{BamFile, Header, RecordRef};
use crate::depth::BedFilter;
use crate::index::Index;
use crate::input::{self, Input};
use crate::output::{Named, TempOutput};
use crate::region::{self, Region, RegionReader};
use crate::sort::{add_missing_sq_lines, add_pg_line, CramOutput, OutputFormat, RecordOutput};
use crate::view::{merge_intervals, Selection, TagEdit};
use crate::Error;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Compressed bytes per window when reading regions through the index.
const WINDOW_BYTES: u64 = 4 << 20;
/// Positions per window (at most), by default.
pub const VIEW_WINDOW_BASES: u64 = 1 << 22;

/// Which header samtools view prints with SAM output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeaderMode {
    /// Records only (the default for SAM; BAM always has its header).
    #[default]
    Records,
    /// Header and records (`-h`).
    WithHeader,
    /// The header only (`-H`).
    HeaderOnly,
}

/// samtools view's options.
#[derive(Clone, Debug)]
pub struct ViewOptions {
    /// Which records are selected.
    pub selection: Selection,
    /// Tags removed or kept in the records written.
    pub tags: TagEdit,
    /// Flags set on the selected records written (`--add-flags`).
    pub add_flags: u16,
    /// Flags cleared on the selected records written (`--remove-flags`).
    pub remove_flags: u16,
    /// Regions (samtools notation), in command-line order.
    pub regions: Vec<String>,
    /// samtools' `-M`: the regions (and the BED file) merged, each record
    /// once, in file order.
    pub multi_region: bool,
    /// BED intervals read as regions with `-M` (`-L` otherwise filters,
    /// through [`Selection::bed`]).
    pub bed_regions: Option<BedFilter>,
    /// The index to read regions through (`-X`); else the one beside the input.
    pub index: Option<PathBuf>,
    /// Print the number of selected records instead of them (`-c`).
    pub count: bool,
    /// Header with SAM output.
    pub header: HeaderMode,
    /// Output format.
    pub format: OutputFormat,
    /// BGZF level, 0 to 9 (`None`: 6).
    pub level: Option<u32>,
    /// The header is written even with SAM output and without `-h`
    /// (see [`crate::view::output_format`]).
    pub force_header: bool,
    /// Records not selected go here (`-U`), in this format, with the
    /// header forced or not.
    pub unselected: Option<(PathBuf, OutputFormat, bool)>,
    /// Index the BAM output as it is written (`--write-index`).
    pub write_index: bool,
    /// `(version, command line)` for the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Positions per parallel window at most (the output does not depend on it).
    pub window_bases: u64,
    /// How a CRAM output is written (`-C`, `-O cram`): the reference
    /// (`-T`/`--reference`), htslib's format options and level.
    pub cram_output: crate::cram::CramWriteOptions,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            selection: Selection::default(),
            tags: TagEdit::None,
            add_flags: 0,
            remove_flags: 0,
            regions: Vec::new(),
            multi_region: false,
            bed_regions: None,
            index: None,
            count: false,
            header: HeaderMode::Records,
            format: OutputFormat::Sam,
            force_header: false,
            level: None,
            unselected: None,
            write_index: false,
            program: None,
            threads: None,
            window_bases: VIEW_WINDOW_BASES,
            cram_output: Default::default(),
        }
    }
}

/// A warning samtools view prints and goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRegion(pub String);

/// One output being written: a temporary file renamed into place at the
/// end, or standard output.
struct Destination {
    temp: Option<TempOutput>,
    index_path: Option<PathBuf>,
    /// The `.crai` htslib writes beside a CRAM output, under a temporary name.
    cram_index: Option<TempOutput>,
}

type Sink = RecordOutput<'static, Box<dyn Write + Send>>;

fn open_destination(path: &Path) -> Result<(Destination, Box<dyn Write + Send>), Error> {
    if path.as_os_str() == "-" {
        let w = BufWriter::with_capacity(1 << 20, Named::new(io::stdout(), crate::output::stdout_name()));
        return Ok((Destination { temp: None, index_path: None, cram_index: None }, Box::new(w)));
    }
    let (temp, file) = TempOutput::create(path)?;
    let w = BufWriter::with_capacity(1 << 20, Named::new(crate::output::WritebackFile::new(file), temp.shown()));
    Ok((Destination { temp: Some(temp), index_path: None, cram_index: None }, Box::new(w)))
}

/// Opens the records' writer of one output: htslib's for CRAM (named
/// `data` in its file definition, `-` for standard output; its `.crai` to
/// `index_path` when indexed, samtools' `DATA.crai` unless `##idx##` named
/// one), fasthts' own for BAM and SAM.
#[allow(clippy::too_many_arguments)]
fn open_sink(
    header: &Header,
    format: OutputFormat,
    level: u32,
    index: Option<crate::index::IndexFormat>,
    sam_header: bool,
    spec: &Path,
    options: &ViewOptions,
    dest: &mut Destination,
    w: Box<dyn Write + Send>,
) -> Result<Sink, Error> {
    if format != OutputFormat::Cram {
        return RecordOutput::open(header, format, level, index, sam_header, w);
    }
    let (data, index_path, _) = crate::indexer::split_index_name(spec);
    if index.is_some() {
        let index_path =
            if spec.to_string_lossy().contains("##idx##") { index_path } else { PathBuf::from(format!("{}.crai", data.display())) };
        dest.cram_index = Some(TempOutput::create(&index_path)?.0);
        dest.index_path = None;
    }
    let name = if dest.temp.is_some() { data } else { PathBuf::from("-") };
    let cram = CramOutput { name, options: options.cram_output.clone(), index: dest.cram_index.as_ref().map(|t| t.path().to_path_buf()) };
    RecordOutput::open_cram(header, &cram, w)
}

/// samtools view of `input` (a BAM or SAM file, `-` for standard input)
/// to `output` (`-`: standard output; a file is complete or absent), as
/// samtools view 1.16 writes it. Returns the number of records selected.
/// Regions that name no reference are skipped, each reported through
/// `skipped` (samtools warns and goes on).
pub fn view_file(
    input: &Path,
    output: &Path,
    options: &ViewOptions,
    report: &dyn Report,
    skipped: &(dyn Fn(SkippedRegion) + Sync),
) -> Result<u64, Error> {
    if options.level.is_some_and(|l| l > 9) {
        return Err(Error::InvalidArgument("level must be between 0 and 9".into()));
    }
    let to_stdout = output.as_os_str() == "-";
    let (data, index_path, index_format) = crate::indexer::split_index_name(output);
    if options.write_index && !options.count {
        if !matches!(options.format, OutputFormat::Bam | OutputFormat::Cram) {
            return Err(Error::InvalidArgument("--write-index is only supported with BAM or CRAM output".into()));
        }
        if to_stdout {
            return Err(Error::InvalidArgument("--write-index needs an output file (-o)".into()));
        }
    }
    let mut written: Vec<&Path> = vec![&data];
    if options.write_index {
        written.push(&index_path);
    }
    if let Some((u, _, _)) = &options.unselected {
        written.push(u);
    }
    crate::output::refuse_input_as_output(&written, &[input])?;
    with_threads(options.threads, || {
        let mut opened = input::open(input)?;
        if let Input::Bam(bam) = &opened {
            warn_if_truncated(bam, report);
        }
        let header = opened.header().clone();
        let names: Vec<String> = header.references.iter().map(|r| r.name.clone()).collect();
        let out_header = match &options.program {
            Some((version, cl)) => {
                let text = add_missing_sq_lines(&add_pg_line(&header.text, "fasthts", version, cl), &header.references);
                Header { text, references: header.references.clone() }
            }
            None => header.clone(),
        };
        let level = options.level.unwrap_or(crate::bgzf::DEFAULT_LEVEL);
        let index_format = options.write_index.then_some(index_format);
        let mut outputs = Outputs { main: None, unselected: None, count: 0, destinations: Vec::new() };
        let sam_header = |forced: bool| options.header != HeaderMode::Records || options.write_index || forced;
        if !options.count {
            let (mut dest, w) = open_destination(&data)?;
            dest.index_path = index_format.map(|_| index_path.clone());
            let forced = sam_header(options.force_header);
            let sink = open_sink(&out_header, options.format, level, index_format, forced, output, options, &mut dest, w)?;
            outputs.main = Some((sink, options.format));
            outputs.destinations.push(dest);
            if let Some((path, format, forced)) = &options.unselected {
                let (u_data, u_index, u_format) = crate::indexer::split_index_name(path);
                let u_index_format =
                    (options.write_index && matches!(*format, OutputFormat::Bam | OutputFormat::Cram)).then_some(u_format);
                let (mut dest, w) = open_destination(&u_data)?;
                dest.index_path = u_index_format.map(|_| u_index);
                let sink = open_sink(&out_header, *format, level, u_index_format, sam_header(*forced), path, options, &mut dest, w)?;
                outputs.unselected = Some((sink, *format));
                outputs.destinations.push(dest);
            }
        }
        if options.header != HeaderMode::HeaderOnly {
            let indexed = !options.regions.is_empty() || options.multi_region || options.index.is_some();
            if indexed {
                let bam = match &opened {
                    Input::Bam(bam) => bam,
                    _ => {
                        return Err(Error::Message(
                            "random alignment retrieval only works for indexed BAM files (regions need a BAM file and its index)".into(),
                        )
                        .with_path(input))
                    }
                };
                let index = match &options.index {
                    Some(path) => {
                        let index = load_index(bam, path)?;
                        verify_index(bam, &index, false).map_err(|e| e.with_path(path))?;
                        Some(index)
                    }
                    None => find_index(bam, report)?,
                };
                let Some(index) = index else {
                    return Err(Error::Message("cannot load index (regions are read through the index: fasthts index it first)".into())
                        .with_path(input));
                };
                let pieces = plan_pieces(bam, &index, options, &names, skipped)?;
                by_pieces(bam, &index, &pieces, options, &names, &mut outputs)?;
            } else {
                whole_file(&mut opened, input, options, &names, &mut outputs)?;
                if let Input::Stream(stream) = &opened {
                    warn_if_stream_truncated(stream, report);
                }
            }
        }
        let count = outputs.count;
        let Outputs { main, unselected, destinations, .. } = outputs;
        let mut finished = Vec::new();
        for (sink, _) in [main, unselected].into_iter().flatten() {
            let (index, mut w) = sink.finish()?;
            w.flush()?;
            drop(w);
            finished.push(index);
        }
        if options.count {
            let (dest, mut w) = open_destination(&data)?;
            w.write_all(format!("{count}\n").as_bytes())?;
            w.flush()?;
            drop(w);
            if let Some(temp) = dest.temp {
                temp.commit()?;
            }
            return Ok(count);
        }
        for (dest, index) in destinations.into_iter().zip(finished) {
            if let Some(temp) = dest.temp {
                temp.commit()?;
            }
            if let Some(crai) = dest.cram_index {
                crai.commit()?;
            }
            if let (Some(index), Some(path)) = (index, dest.index_path) {
                crate::indexer::write_index(&index, &path)?;
            }
        }
        Ok(count)
    })
}

/// The outputs of one run and the count of selected records.
struct Outputs {
    main: Option<(Sink, OutputFormat)>,
    unselected: Option<(Sink, OutputFormat)>,
    count: u64,
    destinations: Vec<Destination>,
}

/// What one record becomes: selected (counted, and written with its tags
/// edited), or not (written to `-U` as it is).
struct Router<'a> {
    options: &'a ViewOptions,
    names: &'a [String],
    scratch: Vec<u8>,
}

impl Router<'_> {
    /// Whether `r` is selected; its bytes (`block_size` and data; tags and
    /// flags edited when selected) are put in `scratch` when its output is
    /// written (`selected_out`, `unselected_out`).
    fn route(&mut self, r: &RecordRef<'_>, selected_out: bool, unselected_out: bool) -> Result<bool, Error> {
        let selected = self.options.selection.keeps(r, self.names);
        self.scratch.clear();
        if (selected && selected_out) || (!selected && unselected_out) {
            if selected {
                self.options.tags.append(r, &mut self.scratch)?;
                let (add, remove) = (self.options.add_flags, self.options.remove_flags);
                if add != 0 || remove != 0 {
                    // FLAG: bytes 14..16 of the record, after block_size.
                    let at = 4 + 14;
                    let flag = (u16::from_le_bytes([self.scratch[at], self.scratch[at + 1]]) | add) & !remove;
                    self.scratch[at..at + 2].copy_from_slice(&flag.to_le_bytes());
                }
            } else {
                TagEdit::None.append(r, &mut self.scratch)?;
            }
        }
        Ok(selected)
    }
}

/// Every record of the input, in file order.
fn whole_file(input: &mut Input, path: &Path, options: &ViewOptions, names: &[String], outputs: &mut Outputs) -> Result<(), Error> {
    let mut router = Router { options, names, scratch: Vec::new() };
    let mut handle = |r: &RecordRef<'_>| -> Result<(), Error> {
        let selected = router.route(r, outputs.main.is_some(), outputs.unselected.is_some())?;
        if selected {
            outputs.count += 1;
            if let Some((sink, _)) = &mut outputs.main {
                sink.write_record(&router.scratch)?;
            }
        } else if let Some((sink, _)) = &mut outputs.unselected {
            sink.write_record(&router.scratch)?;
        }
        Ok(())
    };
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

/// A part of the work read on one thread: the records of `scope` (by
/// start position) that overlap `[overlap_from, ..)`, read from the index
/// offset for `offset_pos`.
#[derive(Clone, Copy, Debug)]
struct Piece {
    scope: Region,
    offset_pos: i64,
    overlap_from: i64,
}

/// Cut points inside `[lo, hi)` of reference `tid` (below its length
/// `len`): where the index has `WINDOW_BYTES` of data, and at most
/// `window_bases` apart.
fn cuts(index: &Index, tid: i32, lo: i64, hi: i64, len: i64, window_bases: u64) -> Vec<i64> {
    let hi = hi.min(len);
    let width = window_bases.clamp(1, i64::MAX as u64) as i64;
    let mut by_bytes = Vec::new();
    let mut last = None;
    for (pos, offset) in index.checkpoints(tid as usize) {
        let at = offset.compressed();
        if pos > lo.max(0) && pos < hi {
            if last.is_some_and(|l| at >= l + WINDOW_BYTES) {
                by_bytes.push(pos);
                last = Some(at);
            }
        }
        if last.is_none() || pos <= lo.max(0) {
            last = Some(at);
        }
    }
    let mut cuts = Vec::new();
    let mut from = lo.max(0);
    for cut in by_bytes.into_iter().chain(std::iter::once(hi)) {
        let mut next = from.saturating_add(width);
        while next < cut {
            cuts.push(next);
            next = next.saturating_add(width);
        }
        if cut < hi {
            cuts.push(cut);
        }
        from = cut;
    }
    cuts
}

/// The pieces of a region or interval: `[beg, end)` of `tid`, taking records
/// that start at `first_start` or later.
#[allow(clippy::too_many_arguments)]
fn region_pieces(index: &Index, tid: i32, len: i64, first_start: i64, beg: i64, end: i64, window_bases: u64, pieces: &mut Vec<Piece>) {
    if tid < 0 {
        pieces.push(Piece { scope: Region::unplaced(), offset_pos: 0, overlap_from: i64::MIN });
        return;
    }
    let mut start = first_start;
    let mut offset_pos = beg;
    for cut in cuts(index, tid, beg, end, len, window_bases) {
        pieces.push(Piece { scope: Region { ref_id: tid, start, end: cut }, offset_pos, overlap_from: beg });
        start = cut;
        offset_pos = cut;
    }
    pieces.push(Piece { scope: Region { ref_id: tid, start, end }, offset_pos, overlap_from: beg });
}

/// The pieces of the regions, in output order, and for each the region
/// it belongs to.
fn plan_pieces(
    bam: &BamFile,
    index: &Index,
    options: &ViewOptions,
    names: &[String],
    skipped: &(dyn Fn(SkippedRegion) + Sync),
) -> Result<Vec<Piece>, Error> {
    let ref_len = |tid: i32| usize::try_from(tid).ok().and_then(|t| bam.header().references.get(t)).map_or(0, |r| i64::from(r.len));
    let mut parsed = Vec::new();
    for text in &options.regions {
        match Region::parse(text, names) {
            Ok(r) if r.ref_id < 0 || r.start < r.end => parsed.push(r),
            Ok(_) => {}
            Err(_) => skipped(SkippedRegion(text.clone())),
        }
    }
    let mut pieces = Vec::new();
    if options.multi_region {
        let mut list: Vec<(i32, i64, i64)> = parsed.iter().map(|r| (r.ref_id, r.start, r.end)).collect();
        if let Some(bed) = &options.bed_regions {
            if !options.regions.is_empty() {
                return Err(Error::InvalidArgument("-M with both a BED file and regions is not supported; give one of them".into()));
            }
            for (tid, name) in names.iter().enumerate() {
                list.extend(bed.intervals(name).iter().map(|&(b, e)| (tid as i32, b, e)));
            }
        }
        if list.is_empty() && options.regions.is_empty() && options.bed_regions.is_none() {
            return Err(Error::InvalidArgument("no regions or BED file have been provided (-M reads regions)".into()));
        }
        for (tid, intervals) in merge_intervals(list) {
            let mut first_start = i64::MIN;
            for (beg, end) in intervals {
                region_pieces(index, tid, ref_len(tid), first_start, beg, end, options.window_bases, &mut pieces);
                first_start = end;
                if tid < 0 {
                    break;
                }
            }
        }
    } else {
        for r in parsed {
            region_pieces(index, r.ref_id, ref_len(r.ref_id), i64::MIN, r.start, r.end, options.window_bases, &mut pieces);
        }
    }
    Ok(pieces)
}

/// One piece's output: selected and unselected records (SAM text or
/// BAM records, as each output wants) and the count.
#[derive(Default)]
struct Filled {
    selected: Vec<u8>,
    unselected: Vec<u8>,
    count: u64,
}

/// Appends `record` (`block_size` and data) to `out` as `format` wants it
/// from a piece: SAM text, or the record.
fn encode(record: &[u8], format: Option<OutputFormat>, refs: &[crate::bam::Reference], out: &mut Vec<u8>) -> Result<(), Error> {
    match format {
        None => Ok(()),
        Some(OutputFormat::Bam | OutputFormat::Cram) => {
            out.extend_from_slice(record);
            Ok(())
        }
        Some(_) => crate::sam::format_record(&RecordRef::new_prevalidated(&record[4..]), refs, out),
    }
}

/// Reads the pieces on all threads and writes them in order.
fn by_pieces(
    bam: &BamFile,
    index: &Index,
    pieces: &[Piece],
    options: &ViewOptions,
    names: &[String],
    outputs: &mut Outputs,
) -> Result<(), Error> {
    let refs = &bam.header().references;
    let main_format = outputs.main.as_ref().map(|(_, f)| *f);
    let unselected_format = outputs.unselected.as_ref().map(|(_, f)| *f);
    let mut write_error: Option<Error> = None;
    crate::gather::fill_in_order(
        pieces.len(),
        |_| Filled::default(),
        |i, filled: &mut Filled| {
            filled.selected.clear();
            filled.unselected.clear();
            filled.count = 0;
            let piece = pieces[i];
            let tid = piece.scope.ref_id;
            let start = region::start_offset(bam, index, tid, piece.offset_pos);
            let Some(start) = start else { return Ok(()) };
            let following =
                region::following_start(bam, index, Region { ref_id: tid, start: piece.offset_pos.max(0), end: piece.scope.end });
            let mut reader = RegionReader::new(bam, piece.scope, start, following)?;
            let mut router = Router { options, names, scratch: Vec::new() };
            let mut failed = None;
            reader
                .for_each_record(|r| {
                    if failed.is_some() || r.end_pos() <= piece.overlap_from {
                        return;
                    }
                    let result = router.route(r, main_format.is_some(), unselected_format.is_some()).and_then(|selected| {
                        if selected {
                            filled.count += 1;
                            encode(&router.scratch, main_format, refs, &mut filled.selected)
                        } else {
                            encode(&router.scratch, unselected_format, refs, &mut filled.unselected)
                        }
                    });
                    if let Err(e) = result {
                        failed = Some(e);
                    }
                })
                .map_err(|e| Error::from(e).with_path(bam.path()))?;
            match failed {
                Some(e) => Err(e),
                None => Ok(()),
            }
        },
        |filled| {
            if write_error.is_some() {
                return;
            }
            outputs.count += filled.count;
            let result =
                write_piece(&mut outputs.main, &filled.selected).and_then(|()| write_piece(&mut outputs.unselected, &filled.unselected));
            if let Err(e) = result {
                write_error = Some(e);
            }
        },
    )?;
    match write_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Writes a piece's bytes to `output`: SAM text as it is, BAM records one
/// by one (so that an index can be built as they are written).
fn write_piece(output: &mut Option<(Sink, OutputFormat)>, bytes: &[u8]) -> Result<(), Error> {
    let Some((sink, format)) = output else { return Ok(()) };
    if !matches!(*format, OutputFormat::Bam | OutputFormat::Cram) {
        return sink.write_text(bytes);
    }
    let mut at = 0;
    while at + 4 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        sink.write_record(&bytes[at..at + 4 + len])?;
        at += 4 + len;
    }
    Ok(())
}
