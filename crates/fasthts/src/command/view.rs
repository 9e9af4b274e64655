//! `view`: samtools view 1.16: records of a file or of regions, filtered,
//! as SAM or BAM (or counted). A whole file is read in file order (BAM
//! blocks inflated ahead on the pool, SAM lines formatted in parallel);
//! regions are read through the index in windows on all threads and
//! written in order.

use super::{warn_after_reading, warn_if_truncated, with_threads, Report};
use crate::bam::{Header, RecordRef, Reference};
use crate::index::Index;
use crate::input::{self, Input};
use crate::output::{Named, TempOutput};
use crate::record_output::{CramOutput, OutputFormat, RecordOutput};
use crate::region::indexed::{IndexedFile, IndexedOptions};
use crate::region::{self, BedFilter, Region, RegionSyntax};
use crate::sam::RefNames;
use crate::sort::{add_missing_sq_lines, add_pg_line};
use crate::view::{merge_intervals, Selection, TagEdit, WidePositions};
use crate::Error;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Compressed bytes per window when reading regions through the index.
const WINDOW_BYTES: u64 = 4 << 20;
/// A BAM smaller than this is counted (`-c`) sequentially, not through
/// its index (see `count_by_index`).
const SMALL_FOR_INDEX: u64 = 64 << 20;
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
    /// Write the records not selected to the output as unmapped (`-p`;
    /// not with `-c`).
    pub unmap: bool,
    /// Collapse `B` CIGAR operations (`-B`), before the filters after `-e`.
    pub remove_b: bool,
    /// Reference names and lengths for a SAM input without `@SQ` lines
    /// (`-t`; see [`crate::view::open_with_references`]).
    pub references: Option<PathBuf>,
    /// samtools' `-P`: the regions read as with `-M`, and the mates of
    /// their selected paired records too, wherever they are (not with
    /// `-c`; `-U` gets no records, and flags are not changed).
    pub fetch_pairs: bool,
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
    /// The reference FASTA of a CRAM input (samtools' `-T`); `None`: as
    /// htslib finds it.
    pub reference: Option<PathBuf>,
    /// How a CRAM output is written (`-C`, `-O cram`): the reference
    /// (`-T`/`--reference`), htslib's format options and level.
    pub cram_output: crate::cram::CramWriteOptions,
}

impl ViewOptions {
    /// Whether every output is SAM text (or there is none, `-c`): a SAM
    /// input's positions past 2^31 are then kept, as samtools keeps them
    /// (a BAM or CRAM output refuses them).
    fn text_only_outputs(&self) -> bool {
        let text = |f: OutputFormat| matches!(f, OutputFormat::Sam | OutputFormat::SamGz);
        self.count || (text(self.format) && self.unselected.as_ref().map_or(true, |(_, f, _)| text(*f)))
    }
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
            unmap: false,
            remove_b: false,
            fetch_pairs: false,
            references: None,
            header: HeaderMode::Records,
            format: OutputFormat::Sam,
            force_header: false,
            level: None,
            unselected: None,
            write_index: false,
            program: None,
            threads: None,
            window_bases: VIEW_WINDOW_BASES,
            reference: None,
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
    /// A bgzipped SAM output's index: built from the file once written.
    sam_index: Option<crate::index::IndexFormat>,
    /// The `.crai` htslib writes beside a CRAM output, under a temporary name.
    cram_index: Option<TempOutput>,
}

type Sink = RecordOutput<'static, Box<dyn Write + Send>>;

fn open_destination(path: &Path) -> Result<(Destination, Box<dyn Write + Send>), Error> {
    if path.as_os_str() == "-" {
        let w = BufWriter::with_capacity(1 << 20, Named::new(io::stdout(), crate::output::stdout_name()));
        return Ok((Destination { temp: None, index_path: None, sam_index: None, cram_index: None }, Box::new(w)));
    }
    let (temp, file) = TempOutput::create(path)?;
    let w = BufWriter::with_capacity(1 << 20, Named::new(crate::output::WritebackFile::new(file), temp.shown()));
    Ok((Destination { temp: Some(temp), index_path: None, sam_index: None, cram_index: None }, Box::new(w)))
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
    let (data, index_path, _) = crate::index::split_index_name(spec);
    if index.is_some() {
        let index_path =
            if spec.to_string_lossy().contains("##idx##") { index_path } else { crate::cram::crai_path_for(&data) };
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
    let (data, index_path, index_format) = crate::index::split_index_name(output);
    if options.write_index && !options.count {
        if !options.format.can_be_indexed() {
            return Err(Error::InvalidArgument("--write-index is only supported with BAM, CRAM or bgzipped SAM output".into()));
        }
        if to_stdout {
            return Err(Error::InvalidArgument("--write-index needs an output file (-o)".into()));
        }
    }
    // A bgzipped SAM is indexed from the file once written: it must be one
    // that can be read back.
    let sam_outputs = [(&data, options.format)].into_iter().chain(options.unselected.iter().map(|(p, f, _)| (p, *f)));
    for (path, format) in sam_outputs {
        if options.write_index && !options.count && format == OutputFormat::SamGz && std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(Error::Message("--write-index of a bgzipped SAM needs a regular output file".into()).with_path(path));
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
        let cram_options = crate::cram::CramOptions { reference: options.reference.clone(), ..Default::default() };
        // Regions are read through the one region engine, which opens the
        // file with its index (refusing an input that has none); a whole
        // file is read as it comes.
        let indexed = options.header != HeaderMode::HeaderOnly
            && (!options.regions.is_empty() || options.multi_region || options.fetch_pairs || options.index.is_some());
        let mut regions_of = None;
        let mut opened = match &options.references {
            Some(list) => Some(crate::view::open_with_references(input, list, &cram_options)?),
            None if indexed => None,
            None => Some(input::open_with(input, &cram_options)?),
        };
        if indexed {
            // samtools keeps a bgzipped SAM's positions past 2^31 in SAM
            // outputs (a BAM or CRAM output refuses them), as for a whole file.
            let sam_positions = if options.text_only_outputs() { crate::sam::Positions::Wide } else { crate::sam::Positions::Bam };
            let open = IndexedOptions { index: options.index.clone(), cram: cram_options.clone(), sam_positions, ..Default::default() };
            let file = IndexedFile::open(input, &open, report)?;
            if let Some((bam, _)) = file.bam() {
                warn_if_truncated(bam, report);
            }
            regions_of = Some(file);
        } else if let Some(Input::Bam(bam)) = &opened {
            warn_if_truncated(bam, report);
        }
        let mut text = header_of(&opened, &regions_of).text.clone();
        if let Some(groups) = &options.selection.read_groups {
            text = crate::view::keep_read_group_lines(&text, groups);
        }
        let selection = options.selection.for_header(&text);
        // The references of a SAM, CRAM or streamed input are copied, as
        // reading it takes the input mutably; a BAM's are read in place
        // (copying a draft assembly's 600,000 names took as long as
        // counting its records).
        let copied: Option<Vec<Reference>> =
            matches!(opened, Some(ref input) if !matches!(input, Input::Bam(_))).then(|| header_of(&opened, &regions_of).references.clone());
        // The header written (none with -c: its @PG editing and copy of
        // every reference would be wasted).
        let out_header = || {
            let references = copied.as_deref().unwrap_or(&header_of(&opened, &regions_of).references);
            let text = match &options.program {
                Some((version, cl)) => add_missing_sq_lines(&add_pg_line(&text, "fasthts", version, cl), references),
                None => text.clone(),
            };
            Header { text, references: references.to_vec() }
        };
        let level = options.level.unwrap_or(crate::bgzf::DEFAULT_LEVEL);
        let index_format = options.write_index.then_some(index_format);
        let mut outputs = Outputs { main: None, unselected: None, count: 0, destinations: Vec::new() };
        let sam_header = |forced: bool| options.header != HeaderMode::Records || options.write_index || forced;
        if !options.count {
            let out_header = out_header();
            let (mut dest, w) = open_destination(&data)?;
            dest.index_path = index_format.map(|_| index_path.clone());
            dest.sam_index = index_format.filter(|_| options.format == OutputFormat::SamGz);
            let forced = sam_header(options.force_header);
            let sink = open_sink(&out_header, options.format, level, index_format, forced, output, options, &mut dest, w)?;
            outputs.main = Some((sink, options.format));
            outputs.destinations.push(dest);
            if let Some((path, format, forced)) = &options.unselected {
                let (u_data, u_index, u_format) = crate::index::split_index_name(path);
                let u_index_format = (options.write_index && format.can_be_indexed()).then_some(u_format);
                let (mut dest, w) = open_destination(&u_data)?;
                dest.index_path = u_index_format.map(|_| u_index);
                dest.sam_index = u_index_format.filter(|_| *format == OutputFormat::SamGz);
                let sink = open_sink(&out_header, *format, level, u_index_format, sam_header(*forced), path, options, &mut dest, w)?;
                outputs.unselected = Some((sink, *format));
                outputs.destinations.push(dest);
            }
        }
        let planned = match &regions_of {
            Some(file) => {
                let references = copied.as_deref().unwrap_or(&file.header().references);
                Some(plan_pieces(&file.header().references, file.index(), options, references, file.ref_names(), skipped)?)
            }
            None => None,
        };
        if let (Some(file), Some((pieces, _))) = (regions_of.as_mut(), &planned) {
            // A remote file's pieces are fetched first, all at once.
            let spans: Vec<(Region, i64)> = pieces.iter().map(|p| (p.scope, p.offset_pos)).collect();
            file.prefetch_pieces(&spans)?;
        }
        if let (Some(file), Some((pieces, merged))) = (&regions_of, planned) {
            let references = copied.as_deref().unwrap_or(&header_of(&opened, &regions_of).references);
            let file_references = &file.header().references;
            read_regions(file, file_references, &pieces, &merged, options, &selection, references, &mut outputs)?;
        } else if options.header != HeaderMode::HeaderOnly {
            let mut opened = opened.take().expect("a whole file is opened as an input");
            let references = copied.as_deref().unwrap_or(&opened.header().references);
            if let Some(counted) = count_by_index(&opened, options, &selection, references, &outputs)? {
                outputs.count += counted;
            } else {
                whole_file(&mut opened, input, options, &selection, copied.as_deref(), &mut outputs)?;
                warn_after_reading(&mut opened, input, report);
            }
        }
        if let Some(expr) = &selection.expr {
            // Before the outputs are finished: a file is then not written.
            if let Some(why) = expr.fatal() {
                return Err(Error::InvalidArgument(format!("-e {:?}: {why}", expr.text())));
            }
            if let Some((count, reason)) = expr.failures() {
                report.warning(super::Warning::ExpressionFailed { count, reason });
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
            // A bgzipped SAM is indexed from the file written (its records'
            // virtual offsets are known once its blocks are), before it is
            // renamed into place.
            let index = match (dest.sam_index, &dest.temp) {
                (Some(format), Some(temp)) => {
                    let file = std::fs::File::open(temp.path()).map_err(|e| Error::from(e).with_path(temp.shown()))?;
                    // SAFETY: the temporary file is this process' own, fully
                    // written and closed above; nothing changes it while mapped.
                    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).with_path(temp.shown()))?;
                    Some(crate::index::build_sam(&map, temp.shown(), format)?)
                }
                _ => index,
            };
            if let Some(temp) = dest.temp {
                temp.commit()?;
            }
            if let Some(crai) = dest.cram_index {
                crai.commit()?;
            }
            if let (Some(index), Some(path)) = (index, dest.index_path) {
                crate::index::write_index(&index, &path)?;
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

/// What samtools view does with one record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Selected: counted and written to the output.
    Selected,
    /// Not selected, written to the output made unmapped (`-p`).
    Unmapped,
    /// Not selected: written to `-U` if there is one.
    Unselected,
}

/// What one record becomes: selected (counted, and written with its tags
/// edited), or not (written to `-U` as it is, or unmapped with `-p`).
struct Router<'a> {
    options: &'a ViewOptions,
    selection: &'a Selection,
    names: &'a [Reference],
    scratch: Vec<u8>,
    /// The record with its `B` operations collapsed (`-B`).
    collapsed: Vec<u8>,
    /// The records may end with 64-bit positions (a SAM input read with
    /// [`crate::sam::Positions::Wide`], for SAM outputs only).
    wide_input: bool,
}

impl<'a> Router<'a> {
    fn new(options: &'a ViewOptions, selection: &'a Selection, names: &'a [Reference]) -> Self {
        Router { options, selection, names, scratch: Vec::new(), collapsed: Vec::new(), wide_input: false }
    }

    /// Whether samtools' `process_aln` selects `r` (`-B` applied first).
    fn selects(&mut self, r: &RecordRef<'_>) -> bool {
        let Router { options, selection, names, collapsed, wide_input, .. } = self;
        let (core, wide) = split_wide(r, *wide_input);
        let r = core.as_ref().unwrap_or(r);
        if !selection.passes_expr(r, names, wide) {
            return false;
        }
        let edited =
            (options.remove_b && crate::view::remove_backward(r.as_bytes(), collapsed)).then(|| RecordRef::new_prevalidated(collapsed));
        selection.keeps_after_expr(edited.as_ref().unwrap_or(r), names, wide)
    }

    /// What becomes of `r`; its bytes (`block_size` and data; tags and
    /// flags edited when selected) are put in `scratch` when its output is
    /// written (`selected_out`, `unselected_out`).
    fn route(&mut self, r: &RecordRef<'_>, selected_out: bool, unselected_out: bool) -> Result<Route, Error> {
        let Router { options, selection, names, scratch, collapsed, wide_input } = self;
        // A record past 2^31: filtered on its 32-bit part, written with
        // its 64-bit positions put back.
        let (core, wide) = split_wide(r, *wide_input);
        let bytes = r.as_bytes();
        let wide_field = &bytes[core.as_ref().map_or(bytes.len(), |c| c.as_bytes().len())..];
        let r = core.as_ref().unwrap_or(r);
        // samtools runs -e on the record as read, then -B edits it for the
        // other filters and the outputs.
        let passes_expr = selection.passes_expr(r, names, wide);
        let edited = (options.remove_b && passes_expr && crate::view::remove_backward(r.as_bytes(), collapsed))
            .then(|| RecordRef::new_prevalidated(collapsed));
        let r = edited.as_ref().unwrap_or(r);
        let route = if passes_expr && selection.keeps_after_expr(r, names, wide) {
            Route::Selected
        } else if options.unmap && !options.count {
            Route::Unmapped
        } else {
            Route::Unselected
        };
        scratch.clear();
        match route {
            Route::Selected if selected_out => {
                options.tags.append(r, scratch)?;
                let (add, remove) = (options.add_flags, options.remove_flags);
                if add != 0 || remove != 0 {
                    // FLAG: bytes 14..16 of the record, after block_size.
                    let at = 4 + 14;
                    let flag = (u16::from_le_bytes([scratch[at], scratch[at + 1]]) | add) & !remove;
                    scratch[at..at + 2].copy_from_slice(&flag.to_le_bytes());
                }
            }
            Route::Unmapped if selected_out => crate::view::unmap_record(r, scratch),
            Route::Unselected if unselected_out => TagEdit::None.append(r, scratch)?,
            _ => {}
        }
        if !wide_field.is_empty() && !scratch.is_empty() {
            scratch.extend_from_slice(wide_field);
            let end = scratch.len();
            if route == Route::Unmapped {
                // Made unmapped: TLEN 0, as in the 32-bit field.
                scratch[end - 8..].fill(0);
                if crate::sam::wide_positions_len(&scratch[4..]) == 0 {
                    scratch.truncate(end - wide_field.len());
                }
            }
            let len = (scratch.len() - 4) as u32;
            scratch[..4].copy_from_slice(&len.to_le_bytes());
        }
        Ok(route)
    }
}

/// `-c` of a whole BAM (of [`SMALL_FOR_INDEX`] bytes or more) with a
/// usable index (and nothing written, not even `-U`): its records counted
/// in byte ranges cut by the index and read
/// on all threads, as flagstat reads (the sequential scan runs one walker
/// behind the inflating threads, and measured slower and less steady).
/// `None` when the file is to be read sequentially: no usable index, or
/// one that turns out not to describe the file, or a damaged record (the
/// sequential reading then says what samtools says). samtools does not look
/// at the index here, so neither do its warnings show.
fn count_by_index(
    opened: &Input,
    options: &ViewOptions,
    selection: &Selection,
    names: &[Reference],
    outputs: &Outputs,
) -> Result<Option<u64>, Error> {
    let Input::Bam(bam) = opened else { return Ok(None) };
    if !options.count || outputs.main.is_some() || outputs.unselected.is_some() {
        return Ok(None);
    }
    // A small file is counted as fast sequentially (measured alike at
    // 34 MB), and its index need not be loaded: a draft assembly's index
    // of 300,000 references took longer to load and free than its records
    // to count.
    if (bam.bytes().len() as u64) < SMALL_FOR_INDEX {
        return Ok(None);
    }
    let Some(index) = super::usable_index(bam, &|_: super::Warning| {}) else { return Ok(None) };
    let plan = region::Plan::BalancedBytes(super::flagstat::REGION_BYTES);
    let parts = region::scatter_all(bam, &index, plan, |_, records| {
        let mut router = Router::new(options, selection, names);
        let (mut selected, mut failed) = (0u64, None);
        records.for_each_record(|r| match router.route(r, false, false) {
            Ok(route) => selected += u64::from(route == Route::Selected),
            Err(e) => failed = failed.take().or(Some(e)),
        })?;
        Ok(failed.map_or(Ok(selected), Err))
    });
    let Ok(parts) = parts else { return Ok(None) };
    let mut total = 0;
    for part in parts {
        total += part?;
    }
    Ok(Some(total))
}

/// Every record of the input, in file order.
fn whole_file(
    input: &mut Input,
    path: &Path,
    options: &ViewOptions,
    selection: &Selection,
    copied: Option<&[Reference]>,
    outputs: &mut Outputs,
) -> Result<(), Error> {
    // SAM text is formatted behind the reading (see `RecordOutput`): a
    // reading error is reported after the formatting errors of the records
    // read before it.
    // (An output's own error, a formatting one among them, comes first.)
    let mut output_failed = false;
    let formatted_first = |outputs: &mut Outputs, e: Error, output_failed: bool| {
        if !output_failed {
            for (sink, _) in [&mut outputs.main, &mut outputs.unselected].into_iter().flatten() {
                sink.write_formatted()?;
            }
        }
        Err(e)
    };
    if let Input::Bam(bam) = &*input {
        // A BAM's references are read in place (see `view_file`).
        let mut router = Router::new(options, selection, &bam.header().references);
        return match crate::bam::scan(bam, |r, _| route_one(&mut router, outputs, r, &mut output_failed)) {
            Ok(_) => Ok(()),
            Err(e) => formatted_first(outputs, e, output_failed),
        };
    }
    let names = copied.expect("the references of an input other than a BAM are copied");
    let mut router = Router::new(options, selection, names);
    // samtools keeps a SAM input's positions past 2^31 in SAM outputs
    // (a BAM or CRAM output refuses them).
    if let (Input::Sam(sam), true) = (&mut *input, options.text_only_outputs()) {
        sam.set_positions(crate::sam::Positions::Wide);
        router.wide_input = true;
        for (sink, _) in [&mut outputs.main, &mut outputs.unselected].into_iter().flatten() {
            sink.keep_wide_positions();
        }
    }
    let mut handle = |r: &RecordRef<'_>| route_one(&mut router, outputs, r, &mut output_failed);
    let read = match input {
        Input::Bam(_) => unreachable!("a BAM is read above"),
        Input::Stream(stream) => stream.for_each_record(handle),
        Input::Cram(cram) => cram.for_each_record(handle),
        Input::Sam(sam) => sam.for_each_record(|r| handle(&r)).map_err(|e| match e {
            Error::Sam(e) => Error::Sam(e).with_path(path),
            e => e,
        }),
    };
    read.or_else(|e| formatted_first(outputs, e, output_failed))
}

/// A record that ends with 64-bit positions (`wide_input`: it may) as its
/// BAM part and those positions; `(None, None)` for any other record.
fn split_wide<'r>(r: &RecordRef<'r>, wide_input: bool) -> (Option<RecordRef<'r>>, Option<WidePositions>) {
    let bytes = r.as_bytes();
    let wide_len = if wide_input { crate::sam::wide_positions_len(bytes) } else { 0 };
    if wide_len == 0 {
        return (None, None);
    }
    let (pos, mate_pos, template_len) = crate::sam::wide_positions(bytes);
    (Some(RecordRef::new_prevalidated(&bytes[..bytes.len() - wide_len])), Some(WidePositions { pos, mate_pos, template_len }))
}

/// Routes one record of a whole file, and writes it where it goes;
/// `output_failed` is set when the error is the output's.
fn route_one(router: &mut Router<'_>, outputs: &mut Outputs, r: &RecordRef<'_>, output_failed: &mut bool) -> Result<(), Error> {
    let route = router.route(r, outputs.main.is_some(), outputs.unselected.is_some())?;
    if route == Route::Selected {
        outputs.count += 1;
    }
    let sink = if route == Route::Unselected { &mut outputs.unselected } else { &mut outputs.main };
    if let Some((sink, _)) = sink {
        if !router.scratch.is_empty() {
            sink.write_record(&router.scratch).inspect_err(|_| *output_failed = true)?;
        }
    }
    Ok(())
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
fn cuts(index: Option<&Index>, tid: i32, lo: i64, hi: i64, len: i64, window_bases: u64) -> Vec<i64> {
    let hi = hi.min(len);
    let width = window_bases.clamp(1, i64::MAX as u64) as i64;
    let mut by_bytes = Vec::new();
    let mut last = None;
    for (pos, offset) in index.into_iter().flat_map(|index| index.checkpoints(tid as usize)) {
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
fn region_pieces(
    index: Option<&Index>,
    tid: i32,
    len: i64,
    first_start: i64,
    beg: i64,
    end: i64,
    window_bases: u64,
    pieces: &mut Vec<Piece>,
) {
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

/// Merged intervals per reference, as [`merge_intervals`] gives them.
type Intervals = Vec<(i32, Vec<(i64, i64)>)>;

/// The pieces of the regions, in output order, and with `-M` the merged
/// intervals they read. Region and (with `-M`) BED names are looked up in
/// `ref_names` (`@SQ SN:` names and `AN:` alternatives): samtools resolves
/// both with htslib's `bam_name2id`.
fn plan_pieces(
    references: &[crate::bam::Reference],
    index: Option<&Index>,
    options: &ViewOptions,
    names: &[Reference],
    ref_names: &RefNames,
    skipped: &(dyn Fn(SkippedRegion) + Sync),
) -> Result<(Vec<Piece>, Intervals), Error> {
    let ref_len = |tid: i32| usize::try_from(tid).ok().and_then(|t| references.get(t)).map_or(0, |r| i64::from(r.len));
    let mut parsed = Vec::new();
    // With -M and a BED file, samtools intersects the regions with the
    // BED intervals (bedidx's bed_filter) and says nothing of a region the
    // BED file does not name.
    let intersect = options.multi_region && options.bed_regions.is_some() && !options.regions.is_empty();
    let syntax = if options.multi_region { RegionSyntax::MultiRegion } else { RegionSyntax::Query };
    for text in &options.regions {
        match Region::parse_samtools(text, ref_names, syntax) {
            Some(regions) => parsed.extend(regions),
            None if intersect => {}
            None => skipped(SkippedRegion(text.clone())),
        }
    }
    let mut pieces = Vec::new();
    if options.multi_region {
        let mut list: Vec<(i32, i64, i64)> = Vec::new();
        match &options.bed_regions {
            Some(bed) if intersect => {
                let named = bed_ids(bed, ref_names);
                for (tid, regions) in merge_intervals(parsed.iter().map(|r| (r.ref_id, r.start, r.end)).collect()) {
                    let from = named.partition_point(|(t, _)| *t < tid);
                    for (_, name) in named[from..].iter().take_while(|(t, _)| *t == tid) {
                        let targets = bed.intervals(name);
                        let points = bed.points(name);
                        for &(beg, end) in &regions {
                            let from = targets.partition_point(|&(_, e)| e <= beg);
                            list.extend(targets[from..].iter().take_while(|&&(b, _)| b < end).map(|&(b, e)| (tid, b.max(beg), e.min(end))));
                            // bed_filter keeps a zero-length interval strictly inside.
                            let from = points.partition_point(|&p| p <= beg);
                            list.extend(points[from..].iter().take_while(|&&p| p < end).map(|&p| (tid, p, p)));
                        }
                    }
                }
                if list.is_empty() {
                    return Err(Error::InvalidArgument("region list is empty (no region overlaps the BED file)".into()));
                }
            }
            Some(bed) => {
                for (tid, name) in bed_ids(bed, ref_names) {
                    list.extend(bed.intervals(name).iter().map(|&(b, e)| (tid, b, e)));
                    list.extend(bed.points(name).iter().map(|&p| (tid, p, p)));
                }
            }
            None => list.extend(parsed.iter().map(|r| (r.ref_id, r.start, r.end))),
        }
        if list.is_empty() && options.regions.is_empty() && options.bed_regions.is_none() {
            return Err(Error::InvalidArgument("no regions or BED file have been provided (-M reads regions)".into()));
        }
        let merged = merge_intervals(list);
        if let Some(index) = index {
            refuse_empty_intervals(index, &merged, names)?;
        }
        pieces = multi_region_pieces(references, index, &merged, options.window_bases);
        return Ok((pieces, merged));
    }
    for r in parsed {
        region_pieces(index, r.ref_id, ref_len(r.ref_id), i64::MIN, r.start, r.end, options.window_bases, &mut pieces);
    }
    Ok((pieces, Vec::new()))
}

/// The BED file's names with the ids `ref_names` gives them, by id: an
/// unknown name is left out, as htslib's region list leaves it.
fn bed_ids<'b>(bed: &'b BedFilter, ref_names: &RefNames) -> Vec<(i32, &'b str)> {
    let mut named: Vec<(i32, &str)> = bed.names().into_iter().filter_map(|n| Some((ref_names.id(n.as_bytes())?, n))).collect();
    named.sort_unstable();
    named
}

/// htslib's multi-region iterator over a BAI or CSI (not a CRAI) cannot
/// take a zero-length interval (a BED line `chr1 1000 1000` that touches
/// no other) on a reference with records: samtools view -M (and -P,
/// --region-file) fails; without -M, -L selects the reads that straddle it.
fn refuse_empty_intervals(index: &Index, merged: &[(i32, Vec<(i64, i64)>)], names: &[Reference]) -> Result<(), Error> {
    for (tid, intervals) in merged {
        let Some(reference) = usize::try_from(*tid).ok().and_then(|t| index.references().get(t)) else { continue };
        if reference.bins().is_empty() && reference.metadata().is_none() {
            continue;
        }
        if let Some(&(p, _)) = intervals.iter().find(|(b, e)| b == e) {
            return Err(Error::Message(format!(
                "the multi-region iterator cannot read the zero-length interval {}:{p}-{p} (samtools 1.16 fails on it too: \"Iterator could not be created\"); without -M, -L selects the reads that straddle it",
                names[*tid as usize].name
            )));
        }
    }
    Ok(())
}

/// The pieces of samtools' multi-region iterator over `merged` intervals
/// (from [`merge_intervals`]): each record once, in file order.
fn multi_region_pieces(
    references: &[crate::bam::Reference],
    index: Option<&Index>,
    merged: &[(i32, Vec<(i64, i64)>)],
    window_bases: u64,
) -> Vec<Piece> {
    let ref_len = |tid: i32| usize::try_from(tid).ok().and_then(|t| references.get(t)).map_or(0, |r| i64::from(r.len));
    let mut pieces = Vec::new();
    for (tid, intervals) in merged {
        let mut first_start = i64::MIN;
        for &(beg, end) in intervals {
            region_pieces(index, *tid, ref_len(*tid), first_start, beg, end, window_bases, &mut pieces);
            first_start = end;
            if *tid < 0 {
                break;
            }
        }
    }
    pieces
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
/// from a piece: SAM text, or the record. With `wide_line` (scratch), the
/// record may end with 64-bit positions ([`crate::sam::Positions::Wide`]).
fn encode(
    record: &[u8],
    format: Option<OutputFormat>,
    refs: &[crate::bam::Reference],
    out: &mut Vec<u8>,
    wide_line: Option<&mut Vec<u8>>,
) -> Result<(), Error> {
    match (format, wide_line) {
        (None, _) => Ok(()),
        (Some(OutputFormat::Bam | OutputFormat::Cram), _) => {
            out.extend_from_slice(record);
            Ok(())
        }
        (Some(_), Some(line)) => crate::sam::format_wide_record(&record[4..], refs, out, line),
        (Some(_), None) => crate::sam::format_record(&RecordRef::new_prevalidated(&record[4..]), refs, out),
    }
}

/// The header of the input opened (the file read by region, unless the
/// header comes from elsewhere: `-t`).
fn header_of<'a>(opened: &'a Option<Input>, regions_of: &'a Option<IndexedFile>) -> &'a Header {
    match (opened, regions_of) {
        (Some(input), _) => input.header(),
        (None, Some(file)) => file.header(),
        (None, None) => unreachable!("an input is opened"),
    }
}

/// Calls `f` on the records of `piece.scope` (by start position) that a
/// query from `piece.offset_pos` finds, in file order.
fn read_piece(file: &IndexedFile, piece: &Piece, f: &mut dyn FnMut(&RecordRef<'_>)) -> Result<(), Error> {
    file.piece(piece.scope, piece.offset_pos)?.for_each_record(|r| f(r))
}

/// Reads the pieces on all threads and writes them in order; records
/// `gate` refuses are left out (not even written to `-U`).
#[allow(clippy::too_many_arguments)]
fn by_pieces(
    file: &IndexedFile,
    refs: &[crate::bam::Reference],
    pieces: &[Piece],
    options: &ViewOptions,
    selection: &Selection,
    names: &[Reference],
    gate: Option<&(dyn Fn(&RecordRef<'_>) -> bool + Sync)>,
    outputs: &mut Outputs,
) -> Result<(), Error> {
    let main_format = outputs.main.as_ref().map(|(_, f)| *f);
    let unselected_format = outputs.unselected.as_ref().map(|(_, f)| *f);
    let wide = file.has_wide_positions();
    let end_of = |r: &RecordRef<'_>| if wide { crate::sam::wide_span(r).1 } else { r.end_pos() };
    crate::gather::fill_in_order(
        pieces.len(),
        |_| Filled::default(),
        |i, filled: &mut Filled| {
            filled.selected.clear();
            filled.unselected.clear();
            filled.count = 0;
            let piece = pieces[i];
            let mut router = Router::new(options, selection, names);
            router.wide_input = wide;
            let mut failed = None;
            let mut line = Vec::new();
            read_piece(file, &piece, &mut |r| {
                if failed.is_some() || end_of(r) <= piece.overlap_from || gate.is_some_and(|keep| !keep(r)) {
                    return;
                }
                let result = router.route(r, main_format.is_some(), unselected_format.is_some()).and_then(|route| match route {
                    Route::Selected | Route::Unmapped => {
                        filled.count += u64::from(route == Route::Selected);
                        encode(&router.scratch, main_format, refs, &mut filled.selected, wide.then_some(&mut line))
                    }
                    Route::Unselected => encode(&router.scratch, unselected_format, refs, &mut filled.unselected, wide.then_some(&mut line)),
                });
                if let Err(e) = result {
                    failed = Some(e);
                }
            })?;
            match failed {
                Some(e) => Err(e),
                None => Ok(()),
            }
        },
        |filled| {
            outputs.count += filled.count;
            write_piece(&mut outputs.main, &filled.selected).and_then(|()| write_piece(&mut outputs.unselected, &filled.unselected))
        },
    )
}

/// Whether `[beg, end)` overlaps one of the `merged` intervals of `tid`
/// (samtools' `bed_overlap`: strictly, so `beg == end` needs an interval
/// around it).
fn overlaps_merged(merged: &[(i32, Vec<(i64, i64)>)], tid: i32, beg: i64, end: i64) -> bool {
    if tid < 0 {
        return false;
    }
    // `merged` is in reference order (the unplaced last): found by
    // bisection, as this runs for every record.
    let at = merged.partition_point(|&(t, _)| t >= 0 && t < tid);
    let Some((_, intervals)) = merged.get(at).filter(|(t, _)| *t == tid) else { return false };
    let k = intervals.partition_point(|&(_, e)| e <= beg);
    intervals.get(k).is_some_and(|&(b, _)| b < end)
}

/// Reads the planned pieces of the regions: with `-P`, the selected
/// pairs' mates too ([`fetch_pairs`]).
#[allow(clippy::too_many_arguments)]
fn read_regions(
    file: &IndexedFile,
    refs: &[crate::bam::Reference],
    pieces: &[Piece],
    merged: &[(i32, Vec<(i64, i64)>)],
    options: &ViewOptions,
    selection: &Selection,
    names: &[Reference],
    outputs: &mut Outputs,
) -> Result<(), Error> {
    if options.fetch_pairs {
        fetch_pairs(file, refs, pieces, merged, options, selection, names, outputs)
    } else {
        by_pieces(file, refs, pieces, options, selection, names, None, outputs)
    }
}

/// samtools view `-P` (its `fetch_pairs_collect_mates`): a first pass
/// over the regions collects the names and positions of the selected
/// paired records whose mate lies outside them; a second pass reads the
/// regions and those positions (and the unplaced records, if a mate is
/// unmapped) and writes each selected record that is in the regions or
/// has a collected name.
#[allow(clippy::too_many_arguments)]
fn fetch_pairs(
    file: &IndexedFile,
    refs: &[crate::bam::Reference],
    pieces: &[Piece],
    merged: &[(i32, Vec<(i64, i64)>)],
    options: &ViewOptions,
    selection: &Selection,
    names: &[Reference],
    outputs: &mut Outputs,
) -> Result<(), Error> {
    #[derive(Default)]
    struct Mates {
        names: Vec<Vec<u8>>,
        positions: Vec<(i32, i64)>,
        unplaced: bool,
    }
    let wide = file.has_wide_positions();
    let span_of = |r: &RecordRef<'_>| if wide { crate::sam::wide_span(r) } else { (i64::from(r.pos()), r.end_pos()) };
    let mut mate_names: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let mut list: Vec<(i32, i64, i64)> =
        merged.iter().flat_map(|(tid, intervals)| intervals.iter().map(move |&(b, e)| (*tid, b, e))).collect();
    let mut unplaced = false;
    crate::gather::fill_in_order(
        pieces.len(),
        |_| Mates::default(),
        |i, mates: &mut Mates| {
            *mates = Mates::default();
            let piece = pieces[i];
            let mut router = Router::new(options, selection, names);
            router.wide_input = wide;
            read_piece(file, &piece, &mut |r| {
                if span_of(r).1 <= piece.overlap_from || r.flag() & crate::bam::flags::PAIRED == 0 {
                    return;
                }
                let mpos = if wide { crate::sam::wide_positions(r.as_bytes()).1 } else { i64::from(r.mate_pos()) };
                let mtid = r.mate_ref_id();
                if mtid >= 0 && overlaps_merged(merged, mtid, mpos, mpos) {
                    return;
                }
                if !router.selects(r) {
                    return;
                }
                mates.names.push(r.name().to_vec());
                if mtid < 0 || r.flag() & crate::bam::flags::MATE_UNMAPPED != 0 {
                    mates.unplaced = true;
                }
                if mtid >= 0 {
                    mates.positions.push((mtid, mpos));
                }
            })
        },
        |mates| {
            mate_names.extend(mates.names.iter().cloned());
            list.extend(mates.positions.iter().map(|&(t, p)| (t, p, p + 1)));
            unplaced |= mates.unplaced;
            Ok(())
        },
    )?;
    if unplaced {
        list.push((-1, 0, i64::MAX));
    }
    let with_mates = merge_intervals(list);
    let pieces = multi_region_pieces(refs, file.index(), &with_mates, options.window_bases);
    let gate = |r: &RecordRef<'_>| {
        let (beg, end) = span_of(r);
        overlaps_merged(merged, r.ref_id(), beg, end) || mate_names.contains(r.name())
    };
    // samtools writes these records without --add-flags/--remove-flags,
    // -p or -U.
    let second = ViewOptions { add_flags: 0, remove_flags: 0, unmap: false, ..options.clone() };
    let unselected = outputs.unselected.take();
    let result = by_pieces(file, refs, &pieces, &second, selection, names, Some(&gate), outputs);
    outputs.unselected = unselected;
    result
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
