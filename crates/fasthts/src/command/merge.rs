//! `merge`: samtools merge 1.16, sorted inputs (BAM, SAM, bgzipped SAM,
//! CRAM) merged into one output, whole or by region (`-R`, `-L`) through
//! their indexes, under the header samtools merges from theirs.
//!
//! Each input is read as it is by the other commands (a mapped BAM
//! inflated in batches on the pool, a stream inflated ahead, CRAM on
//! htslib's threads); one thread keeps samtools' heap of the inputs'
//! current records and hands the next to the output's writer, which
//! compresses on the pool.

use super::{output_with_index, thread_count, warn_after_reading, warn_if_cram_truncated, warn_if_truncated, with_threads, OutputWithIndex, Report, Warning};
use crate::bam::{Header, RecordRef};
use crate::cram::CramOptions;
use crate::input::{self, Input};
use crate::merge::{heap_adjust, heap_lt, heap_make, order_needs_reference_order, HeaderMerger, HeaderRules, Rand48, Slot, Translation};
use crate::output::{Named, TempOutput};
use crate::record_output::{CramOutput, OutputFormat, RecordOutput};
use crate::region::bed::BedFilter;
use crate::region::indexed::{IndexedFile, IndexedOptions, Records, Rule};
use crate::region::{Region, RegionSyntax};
use crate::sort::{Comparator, SortOrder};
use crate::Error;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// How to merge: samtools merge's options.
#[derive(Clone, Debug)]
pub struct MergeOptions {
    /// The order the inputs are sorted in (`-n`, `-t TAG`,
    /// `--template-coordinate`; by coordinate otherwise).
    pub order: SortOrder,
    /// What to write; `None`: what the output's name asks for.
    pub format: Option<OutputFormat>,
    /// BGZF compression level, 0 to 9 (`None`: the default).
    pub level: Option<u32>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Index the output as it is written (`--write-index`).
    pub write_index: bool,
    /// `(version, command line)` for the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
    /// `-h FILE`: the header whose lines come first.
    pub header: Option<PathBuf>,
    /// `-c`, `-p`: combine `@RG`/`@PG` lines with colliding IDs.
    pub rules: HeaderRules,
    /// `-r`: each record's `RG` set to its input's file name.
    pub read_groups_from_names: bool,
    /// `-s`: seed of the suffixes of renamed IDs.
    pub seed: i64,
    /// `-R`: only the records overlapping this region.
    pub region: Option<String>,
    /// `-L`: only the records overlapping these BED intervals.
    pub bed: Option<PathBuf>,
    /// `-X`: the index of each input, in input order.
    pub indexes: Option<Vec<PathBuf>>,
    /// `-f`: replace an existing output file.
    pub force: bool,
    /// The reference FASTA of CRAM inputs and output.
    pub reference: Option<PathBuf>,
    /// htslib's options for a CRAM output.
    pub cram_options: Vec<String>,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            order: SortOrder::Coordinate,
            format: None,
            level: None,
            threads: None,
            write_index: false,
            program: None,
            header: None,
            rules: HeaderRules::default(),
            read_groups_from_names: false,
            seed: 0,
            region: None,
            bed: None,
            indexes: None,
            force: false,
            reference: None,
            cram_options: Vec::new(),
        }
    }
}

/// samtools merge's refusal of an existing output without `-f`.
pub fn output_exists_message(output: &Path) -> String {
    format!("[bam_merge] File '{}' exists. Please apply '-f' to overwrite. Abort.", output.display())
}

/// Whether `output` is an existing regular file that `merge` without `-f`
/// refuses to replace.
pub fn output_exists(output: &Path) -> bool {
    output.as_os_str() != "-" && std::fs::metadata(output).is_ok_and(|m| m.is_file())
}

/// An input opened: whole, or with its index for `-R`/`-L`.
enum Opened {
    Whole(Input),
    Indexed(Box<IndexedFile>),
}

impl Opened {
    fn header(&self) -> &Header {
        match self {
            Opened::Whole(i) => i.header(),
            Opened::Indexed(f) => f.header(),
        }
    }
}

/// Where an input's records come from, one at a time.
enum Source<'a> {
    Bam(crate::bam::RecordReader<'a>, &'a Path),
    Stream(&'a mut crate::bam::BamStream),
    Sam {
        sam: &'a mut crate::sam::SamReader<Box<dyn io::Read + Send>>,
        arena: Vec<u8>,
        at: usize,
        path: &'a Path,
    },
    Cram(&'a mut crate::cram::CramReader),
    Query(Records<'a>),
    Bed {
        file: &'a IndexedFile,
        regions: std::vec::IntoIter<(Region, Vec<String>)>,
        current: Option<(Records<'a>, Vec<String>)>,
        bed: &'a BedFilter,
    },
    Empty,
}

/// Copies `r` (with its `block_size`) into `out`.
fn put(out: &mut Vec<u8>, r: &RecordRef<'_>) {
    let bytes = r.as_bytes();
    out.clear();
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

impl Source<'_> {
    /// Loads the next record into `out`; false at the end.
    fn next(&mut self, out: &mut Vec<u8>) -> Result<bool, Error> {
        match self {
            Source::Bam(reader, path) => {
                if !reader.advance().map_err(|e| Error::from(e).with_path(path))? {
                    return Ok(false);
                }
                put(out, &reader.current());
                Ok(true)
            }
            Source::Stream(stream) => match stream.next_record()? {
                Some(r) => {
                    put(out, &r);
                    Ok(true)
                }
                None => Ok(false),
            },
            Source::Cram(cram) => match cram.next_record()? {
                Some(r) => {
                    put(out, &r);
                    Ok(true)
                }
                None => Ok(false),
            },
            Source::Sam { sam, arena, at, path } => loop {
                if *at < arena.len() {
                    let n = u32::from_le_bytes(arena[*at..*at + 4].try_into().expect("4 bytes")) as usize;
                    out.clear();
                    out.extend_from_slice(&arena[*at..*at + 4 + n]);
                    *at += 4 + n;
                    return Ok(true);
                }
                arena.clear();
                *at = 0;
                let path: &Path = path;
                if sam.next_batch(arena, 1 << 20).map_err(|e| Error::from(e).with_path(path))? == 0 {
                    return Ok(false);
                }
            },
            Source::Query(records) => {
                if !records.advance()? {
                    return Ok(false);
                }
                put(out, &records.current());
                Ok(true)
            }
            Source::Bed { file, regions, current, bed } => loop {
                if let Some((records, names)) = current {
                    while records.advance()? {
                        let r = records.current();
                        if names.iter().any(|name| bed.overlaps(name, i64::from(r.pos()), r.end_pos())) {
                            put(out, &r);
                            return Ok(true);
                        }
                    }
                }
                match regions.next() {
                    Some((region, names)) => *current = Some((file.query(region, Rule::Overlap)?, names)),
                    None => return Ok(false),
                }
            },
            Source::Empty => Ok(false),
        }
    }
}

/// Merges `inputs` into `output` (`-`: standard output) as samtools merge
/// does. The output is written under a temporary name and renamed into
/// place when complete: a failed merge leaves nothing.
pub fn merge_files(inputs: &[PathBuf], output: &Path, options: &MergeOptions, report: &dyn Report) -> Result<(), Error> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("You must specify at least one (and usually two or more) input files".into()));
    }
    if options.region.is_some() && options.bed.is_some() {
        return Err(Error::InvalidArgument("You must specify either a BED file or a region".into()));
    }
    if options.level.is_some_and(|l| l > 9) {
        return Err(Error::InvalidArgument("level must be between 0 and 9".into()));
    }
    if let Some(indexes) = &options.indexes {
        if indexes.len() != inputs.len() {
            return Err(Error::InvalidArgument("Odd number of filenames detected! Each BAM file should have an index file".into()));
        }
    }
    if !options.force && output_exists(output) {
        return Err(Error::Message(output_exists_message(output)));
    }
    let format = match options.format {
        Some(format) => format,
        None => OutputFormat::from_path(output)?,
    };
    let OutputWithIndex { data, index_path, format: index } =
        output_with_index(output, format, options.write_index, options.order.is_positional(), report)?;
    let threads = thread_count(options.threads);
    with_threads(Some(threads), || merge_in_pool(inputs, output, &data, format, index, &index_path, options, threads, report))
}

#[allow(clippy::too_many_arguments)]
fn merge_in_pool(
    inputs: &[PathBuf],
    output: &Path,
    data: &Path,
    format: OutputFormat,
    index: Option<crate::index::IndexFormat>,
    index_path: &Path,
    options: &MergeOptions,
    threads: usize,
    report: &dyn Report,
) -> Result<(), Error> {
    let verbatim = |text: String| report.warning(Warning::Verbatim { text });
    let cram = CramOptions { reference: options.reference.clone(), threads, ..CramOptions::default() };
    let mut rand = Rand48::new(options.seed);
    let mut merger = HeaderMerger::new();
    if let Some(path) = &options.header {
        let given = input::open_with(path, &cram)?;
        merger.add(given.header(), &options.rules, true, None, &mut rand, &mut |w| verbatim(w));
    }
    let by_index = options.region.is_some() || options.bed.is_some();
    let read_groups: Vec<Vec<u8>> = inputs.iter().map(|p| crate::merge::read_group_of_name(&p.to_string_lossy())).collect();
    let mut opened: Vec<Opened> = Vec::with_capacity(inputs.len());
    let mut translations: Vec<Translation> = Vec::with_capacity(inputs.len());
    for (i, path) in inputs.iter().enumerate() {
        let one = if by_index {
            let open = IndexedOptions { index: options.indexes.as_ref().map(|x| x[i].clone()), cram: cram.clone(), ..Default::default() };
            let file = IndexedFile::open(path, &open, report)?;
            if (file.bam().is_some() || file.is_cram()) && file.missing_eof_marker()? {
                report.warning(Warning::MissingEofMarker { path: file.path().to_path_buf() });
            }
            Opened::Indexed(Box::new(file))
        } else {
            // A BAM file is mapped and inflated a batch at a time on the
            // pool (a stream inflated ahead on threads of its own sizes its
            // buffer by a record's block_size before reading it, which a
            // damaged file can make gigabytes).
            let input = input::open_with(path, &cram)?;
            match &input {
                Input::Bam(bam) => warn_if_truncated(bam, report),
                Input::Cram(c) => warn_if_cram_truncated(c, report),
                _ => {}
            }
            Opened::Whole(input)
        };
        let rg = options.read_groups_from_names.then(|| read_groups[i].as_slice());
        let t = merger.add(one.header(), &options.rules, true, rg, &mut rand, &mut |w| verbatim(w));
        if t.lost_coord_sort && order_needs_reference_order(options.order) {
            verbatim(format!("[bam_merge_core] Order of targets in file {} caused coordinate sort to be lost", path.display()));
        }
        translations.push(t);
        opened.push(one);
    }
    if !merger.has_hd() {
        verbatim("[W::bam_merge_core2] No @HD tag found.".into());
    }
    let mut header = merger.finish();
    let region = match &options.region {
        // samtools' sam_parse_region: a name or an `AN:` alias of the
        // output header, `{name}` quoting, `chr:0-15` from the start;
        // `*` and `.` refused.
        Some(text) => {
            let names = crate::sam::RefNames::new(&header);
            match Region::parse_samtools(text, &names, RegionSyntax::Query).as_deref() {
                Some(&[r]) if r.ref_id >= 0 => Some(r),
                _ => {
                    return Err(Error::Message(format!("[bam_merge_core2] Badly formatted region or unknown reference name: \"{text}\"")))
                }
            }
        }
        None => None,
    };
    let bed = options.bed.as_deref().map(BedFilter::read).transpose()?;
    // 64-bit positions are kept from SAM text to SAM text, as samtools does.
    let wide = matches!(format, OutputFormat::Sam | OutputFormat::SamGz)
        && !by_index
        && opened.iter().all(|o| matches!(o, Opened::Whole(Input::Sam(_))));
    let narrow = format == OutputFormat::Bam
        || (format == OutputFormat::Cram
            && !options.cram_options.iter().any(|o| o.strip_prefix("version=").is_some_and(|v| v.starts_with('4'))));
    if narrow && (0..header.references.len()).any(|i| header.reference_len(i) > i32::MAX as u64) {
        return Err(Error::Message("output format is not compatible with very large references".into()));
    }
    let mut sources: Vec<Source<'_>> = Vec::with_capacity(opened.len());
    for (i, one) in opened.iter_mut().enumerate() {
        let path = inputs[i].as_path();
        let source = match one {
            Opened::Whole(Input::Bam(bam)) => Source::Bam(bam.records()?, path),
            Opened::Whole(Input::Stream(s)) => Source::Stream(s),
            Opened::Whole(Input::Cram(c)) => Source::Cram(c),
            Opened::Whole(Input::Sam(sam)) => {
                if wide {
                    sam.set_positions(crate::sam::Positions::Wide);
                }
                Source::Sam { sam, arena: Vec::new(), at: 0, path }
            }
            Opened::Indexed(file) => {
                let file: &IndexedFile = file;
                if let Some(region) = region {
                    // The region's reference in this input's numbering, if it has it.
                    let tid = translations[i].tid.iter().position(|&t| t == region.ref_id).map(|t| t as i32);
                    match tid {
                        Some(tid) => Source::Query(file.query(Region { ref_id: tid, ..region }, Rule::Overlap)?),
                        None => Source::Empty,
                    }
                } else {
                    let bed = bed.as_ref().expect("a region or a BED file");
                    let aliases = alternative_names(&file.header().text);
                    let known: std::collections::HashSet<&str> = file
                        .header()
                        .references
                        .iter()
                        .map(|r| r.name.as_str())
                        .chain(aliases.values().flatten().map(String::as_str))
                        .collect();
                    for name in bed.names() {
                        if !known.contains(name) {
                            verbatim(format!("[W::hts_itr_regions] Region '{name}' specifies an unknown reference name. Continue anyway"));
                        }
                    }
                    let regions: Vec<(Region, Vec<String>)> = file
                        .header()
                        .references
                        .iter()
                        .enumerate()
                        .filter_map(|(tid, r)| {
                            // A BED line names a reference or one of its AN aliases, as htslib looks names up.
                            let mut names = vec![r.name.clone()];
                            names.extend(aliases.get(&r.name).into_iter().flatten().cloned());
                            names.retain(|n| !bed.intervals(n).is_empty() || !bed.points(n).is_empty());
                            let beg = names
                                .iter()
                                .flat_map(|n| bed.intervals(n).iter().map(|x| x.0).chain(bed.points(n).iter().copied()))
                                .min()?;
                            let end = names
                                .iter()
                                .flat_map(|n| bed.intervals(n).iter().map(|x| x.1).chain(bed.points(n).iter().map(|p| p + 1)))
                                .max()?;
                            Some((Region { ref_id: tid as i32, start: beg, end }, names))
                        })
                        .collect();
                    Source::Bed { file, regions: regions.into_iter(), current: None, bed }
                }
            }
        };
        sources.push(source);
    }
    let cmp = Comparator::new(options.order, &header.text);
    let cmp = if wide { cmp.with_wide_positions() } else { cmp };
    let check = |record: &[u8]| cmp.check(&RecordRef::new_prevalidated(&record[4..])).map_err(Error::Message);
    // The first record of each input.
    let mut heap: Vec<Slot> = Vec::with_capacity(sources.len());
    let mut idx = 0u64;
    for (i, source) in sources.iter_mut().enumerate() {
        let mut slot = Slot { input: i, record: Vec::new(), compared_as: None, live: false, idx: 0 };
        if source.next(&mut slot.record)? {
            crate::merge::translate(&mut slot.record, &mut translations[i], wide, &mut |w| verbatim(w));
            check(&slot.record)?;
            slot.live = true;
            slot.idx = idx;
            idx += 1;
        }
        heap.push(slot);
    }
    if options.order == SortOrder::TemplateCoordinate && heap.first().is_some_and(|s| s.live) {
        // samtools 1.16 keys every input's first record by the first input's.
        let first = heap[0].record.clone();
        for slot in heap.iter_mut().skip(1) {
            slot.compared_as = Some(first.clone());
        }
    }
    if let Some((version, cl)) = &options.program {
        header.text = crate::sort::add_pg_line(&header.text, "fasthts", version, cl);
    }
    let lt = |a: &Slot, b: &Slot| heap_lt(a, b, &cmp);
    heap_make(&mut heap, &lt);
    let produce = |output: &mut dyn FnMut(&[u8]) -> Result<(), Error>| -> Result<(), Error> {
        let mut heap = heap;
        let mut sources = sources;
        let mut translations = translations;
        while heap[0].live {
            let top = &mut heap[0];
            let i = top.input;
            if options.read_groups_from_names {
                crate::merge::set_read_group(&mut top.record, &read_groups[i], wide);
            }
            output(&top.record)?;
            if sources[i].next(&mut top.record)? {
                crate::merge::translate(&mut top.record, &mut translations[i], wide, &mut |w| verbatim(w));
                check(&top.record)?;
                top.idx = idx;
                idx += 1;
                top.compared_as = None;
            } else {
                top.live = false;
            }
            heap_adjust(&mut heap, 0, &lt);
        }
        Ok(())
    };
    let cram_index = match (format, index) {
        (OutputFormat::Cram, Some(_)) => Some(TempOutput::create(index_path)?.0),
        _ => None,
    };
    let cram_output = (format == OutputFormat::Cram).then(|| CramOutput {
        name: if output.as_os_str() == "-" { PathBuf::from("-") } else { data.to_path_buf() },
        options: crate::cram::CramWriteOptions {
            reference: options.reference.clone(),
            options: options.cram_options.clone(),
            level: options.level,
        },
        index: cram_index.as_ref().map(|t| t.path().to_path_buf()),
    });
    let level = options.level.unwrap_or(crate::bgzf::DEFAULT_LEVEL);
    let write = |out: &mut dyn Write| -> Result<Option<crate::index::Index>, Error> {
        let mut output = match &cram_output {
            Some(cram) => RecordOutput::open_cram(&header, cram, out)?,
            None => RecordOutput::open(&header, format, level, index.filter(|_| format == OutputFormat::Bam), true, out)?,
        };
        if wide {
            output.keep_wide_positions();
        }
        let produced = produce(&mut |r| output.write_record(r));
        if let Err(e) = produced {
            let _ = output.write_formatted();
            return Err(e);
        }
        Ok(output.finish()?.0)
    };
    if output.as_os_str() == "-" {
        let mut stdout = BufWriter::with_capacity(1 << 20, Named::new(io::stdout().lock(), crate::output::stdout_name()));
        match write(&mut stdout) {
            Err(Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
            r => {
                r?;
            }
        }
        match stdout.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            r => r?,
        }
        after_reading(&mut opened, inputs, report);
        return Ok(());
    }
    let (temp, file) = TempOutput::create(data)?;
    let mut writer = BufWriter::with_capacity(1 << 20, Named::new(crate::output::WritebackFile::new(file), temp.shown()));
    let built = write(&mut writer)?;
    after_reading(&mut opened, inputs, report);
    let file = writer.into_inner().map_err(|e| e.into_error())?.into_inner().into_inner();
    crate::output::sync_if_file(&file).map_err(|e| Error::from(e).with_path(temp.shown()))?;
    temp.commit()?;
    if let Some(built) = built {
        crate::index::write_index(&built, index_path)?;
    }
    if let Some(index) = cram_index {
        index.commit()?;
    }
    Ok(())
}

/// The warnings due once the inputs are read (a stream's missing EOF
/// marker, SAM record warnings).
fn after_reading(opened: &mut [Opened], inputs: &[PathBuf], report: &dyn Report) {
    for (one, path) in opened.iter_mut().zip(inputs) {
        if let Opened::Whole(input) = one {
            warn_after_reading(input, path, report);
        }
    }
}

/// The `AN:` alternative names of each `@SQ` line's reference.
fn alternative_names(text: &[u8]) -> std::collections::HashMap<String, Vec<String>> {
    let mut names = std::collections::HashMap::new();
    for line in text.split(|&c| c == b'\n').filter(|l| l.starts_with(b"@SQ\t")) {
        let field =
            |key: &[u8]| line.split(|&c| c == b'\t').find_map(|f| f.strip_prefix(key)).map(|v| String::from_utf8_lossy(v).into_owned());
        if let (Some(sn), Some(an)) = (field(b"SN:"), field(b"AN:")) {
            names.insert(sn, an.split(',').map(str::to_string).collect());
        }
    }
    names
}
