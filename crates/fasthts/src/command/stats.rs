//! `stats`: samtools stats 1.16. The whole file (BAM, SAM, bgzipped SAM,
//! CRAM, a pipe) or the regions after it (through the index) are read in
//! file order; a BAM whose index describes it is counted reference by
//! reference on the pool and the parts summed, other inputs in one pass
//! while BGZF blocks are inflated ahead on the pool (see [`crate::stats`]
//! for when the parts' sum is what one pass gives).

use super::{warn_after_reading, warn_if_cram_truncated, warn_if_truncated, with_threads, Report};
use crate::bam::{Header, RecordRef};
use crate::cram::{CramOptions, Fields};
use crate::input::{self, Input};
use crate::output::TempOutput;
use crate::region::indexed::{IndexedFile, IndexedOptions, Rule};
use crate::region::{self, Plan, Region, RegionSyntax};
use crate::sam::RefNames;
use crate::stats::bytes::{RegionPart, StatsPart};
use crate::stats::reference::Fasta;
use crate::stats::text::{write_stats, Preamble};
use crate::stats::{Collector, PartSummary, Place, StatsError, StatsSettings, Targets};
use crate::Error;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// htslib's largest position (`HTS_POS_MAX`): a region "to the end".
const HTS_POS_MAX: i64 = (i32::MAX as i64) << 32 | i32::MAX as i64;

/// How to run stats: samtools stats' options.
#[derive(Clone, Debug, Default)]
pub struct StatsOptions {
    /// What stats counts.
    pub settings: StatsSettings,
    /// `-t`: a file of target regions (`chr from to`, 1-based, inclusive).
    pub targets: Option<PathBuf>,
    /// Regions after the file (read through its index).
    pub regions: Vec<String>,
    /// `-X`: the index to use for the regions.
    pub index: Option<PathBuf>,
    /// `-P`: prefix of `-S`'s files (default: the input's name).
    pub split_prefix: Option<String>,
    /// `--reference`: the reference of a CRAM input.
    pub cram_reference: Option<PathBuf>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// The first line's "(...)": what produced the file.
    pub producer: String,
    /// The command line the third line gives.
    pub command_line: String,
}

/// What a run said besides its output: samtools' messages on stderr.
#[derive(Debug, Default)]
pub struct StatsNotes {
    /// Lines samtools prints on stderr (unknown `-t` sequences, barcode problems).
    pub lines: Vec<String>,
}

fn stats_error(e: StatsError, path: &Path) -> Error {
    Error::Message(e.0).with_path(path)
}

/// samtools stats of the file at `path` (`-` for standard input), its text
/// written to `out` and, with `-S`, each tag value's to its own file
/// (complete or absent). Returns samtools' stderr messages.
pub fn stats_to(
    path: &Path,
    options: &StatsOptions,
    out: &mut (dyn Write + Send),
    report: &dyn Report,
) -> Result<StatsNotes, StatsFailure> {
    let mut decoding = false;
    with_threads(options.threads, || run(path, options, out, report, &mut decoding))
        .map_err(|error| StatsFailure { error, while_decoding: decoding })
}

/// Why stats stopped.
#[derive(Debug)]
pub struct StatsFailure {
    /// What went wrong (naming the file).
    pub error: Error,
    /// The input could not be decoded part way (samtools stops with status
    /// 254 then, having printed nothing; 1 for the other failures).
    pub while_decoding: bool,
}

impl std::fmt::Display for StatsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for StatsFailure {}

fn run(
    path: &Path,
    options: &StatsOptions,
    out: &mut (dyn Write + Send),
    report: &dyn Report,
    decoding: &mut bool,
) -> Result<StatsNotes, Error> {
    let settings = &options.settings;
    let mut notes = StatsNotes::default();
    let cram = CramOptions { reference: options.cram_reference.clone(), fields: Fields::All, ..CramOptions::default() };
    let fasta = open_reference(settings)?;
    // The file is opened once: through its index for regions, else as it comes.
    let mut indexed = None;
    let mut whole = None;
    if options.regions.is_empty() {
        let input = input::open_with(path, &cram)?;
        match &input {
            Input::Bam(bam) => warn_if_truncated(bam, report),
            Input::Cram(c) => warn_if_cram_truncated(c, report),
            _ => {}
        }
        whole = Some(input);
    } else {
        let file =
            IndexedFile::open(path, &IndexedOptions { index: options.index.clone(), cram: cram.clone(), ..Default::default() }, report)?;
        if (file.bam().is_some() || file.is_cram()) && file.missing_eof_marker()? {
            report.warning(super::Warning::MissingEofMarker { path: file.path().to_path_buf() });
        }
        indexed = Some(file);
    }
    let header: &Header = match (&whole, &indexed) {
        (Some(input), _) => input.header(),
        (_, Some(file)) => file.header(),
        _ => unreachable!("the file is open"),
    };
    let names: Vec<Vec<u8>> = header.references.iter().map(|r| r.name.as_bytes().to_vec()).collect();
    let lengths: Vec<u64> = (0..header.references.len()).map(|t| header.reference_len(t)).collect();
    let read_groups = settings.group_id.as_deref().map(|id| read_groups_of(header, id));
    // -t's and the regions' names are looked up as samtools looks them up
    // (`bam_name2id`: `@SQ SN:` names and `AN:` alternatives), in the
    // file's map, built once when first needed.
    let whole_names = std::cell::OnceCell::new();
    let ref_names = || indexed.as_ref().map_or_else(|| whole_names.get_or_init(|| RefNames::new(header)), IndexedFile::ref_names);
    let file_targets = match &options.targets {
        Some(t) => Some(read_targets(t, ref_names(), &lengths, &mut notes)?),
        None => None,
    };
    // The regions after the file restrict all reads' statistics when -t
    // does not (samtools' `replicate_regions`); -S's groups see only -t's.
    let mut query = Vec::new();
    let region_targets = if options.regions.is_empty() {
        None
    } else {
        let (by_tid, lists) = parse_regions(&options.regions, ref_names(), &mut notes)?;
        query = lists;
        if file_targets.is_none() {
            Some(by_tid)
        } else {
            None
        }
    };
    let split_targets = file_targets.clone();
    let targets = file_targets.or(region_targets.map(|(lists, slots)| Targets::new(lists, &lengths, slots, false)));
    check_counting_options(options)?;
    // A BAM whose index describes it is counted reference by reference in
    // parallel, when the parts' sum is what one pass gives (else in one pass).
    if let Some(Input::Bam(bam)) = &whole {
        if settings.split_tag.is_none() {
            if let Some(index) = super::covering_index(bam, report) {
                let parts = Parts { settings, names: &names, fasta: fasta.as_ref(), targets: &targets, read_groups: &read_groups };
                if let Some((mut all, mut lines)) = by_references(bam, &index, &parts)? {
                    notes.lines.append(&mut lines);
                    let preamble = Preamble { producer: &options.producer, command_line: &options.command_line, split_tag: None };
                    let mut text = Vec::with_capacity(1 << 16);
                    write_stats(&mut text, &mut all, settings, &preamble)?;
                    out.write_all(&text)?;
                    return Ok(notes);
                }
            }
        }
    }
    let mut collector = Collector::new(settings, &names, fasta.as_ref(), targets, split_targets, read_groups);
    let mut counting_failed = false;
    let mut counted = |r: &RecordRef<'_>, place: Place| {
        collector.add_placed(r, place).map_err(|e| {
            counting_failed = true;
            stats_error(e, path)
        })
    };
    if let Some(file) = &mut indexed {
        // A remote file's ranges for the queries below, fetched together.
        let queries: Vec<(Region, Rule)> = query
            .iter()
            .map(|(tid, intervals)| (Region { ref_id: *tid, start: intervals[0].0, end: intervals[intervals.len() - 1].1 }, Rule::Overlap))
            .collect();
        file.prefetch_queries(&queries)?;
    }
    let read = if let Some(mut input) = whole {
        read_whole(&mut input, path, &mut counted).inspect(|()| warn_after_reading(&mut input, path, report))
    } else if let Some(file) = &indexed {
        (|| {
            for (tid, intervals) in &query {
                let (first, last) = (intervals[0].0, intervals[intervals.len() - 1].1);
                let mut records = file.query(Region { ref_id: *tid, start: first, end: last }, Rule::Overlap)?;
                while let Some(r) = records.next_record()? {
                    // Records between the intervals are read, not counted.
                    let (pos, end) = (i64::from(r.pos()), r.end_pos());
                    let at = intervals.partition_point(|&(_, e)| e <= pos);
                    if intervals.get(at).is_some_and(|&(b, _)| end > b) {
                        counted(&r, Place::of(&r))?;
                    }
                }
            }
            Ok(())
        })()
    } else {
        Ok(())
    };
    if let Err(e) = read {
        *decoding = !counting_failed;
        return Err(e);
    }
    notes.lines.append(&mut collector.notes);
    let producer = &options.producer;
    let preamble = Preamble { producer, command_line: &options.command_line, split_tag: settings.split_tag };
    collector.all.finish(settings).map_err(|e| stats_error(e, path))?;
    let mut text = Vec::with_capacity(1 << 16);
    write_stats(&mut text, &mut collector.all, settings, &preamble)?;
    out.write_all(&text)?;
    for stats in &mut collector.split {
        stats.finish(settings).map_err(|e| stats_error(e, path))?;
        let mut name = options.split_prefix.clone().unwrap_or_else(|| path.display().to_string()).into_bytes();
        name.push(b'_');
        name.extend_from_slice(stats.split_name.as_deref().unwrap_or_default());
        name.extend_from_slice(b".bamstat");
        let target = PathBuf::from(String::from_utf8_lossy(&name).into_owned());
        let (temp, file) = TempOutput::create(&target)?;
        let mut w = BufWriter::new(file);
        write_stats(&mut w, stats, settings, &preamble).map_err(|e| Error::from(e).with_path(&target))?;
        w.flush().map_err(|e| Error::from(e).with_path(&target))?;
        drop(w);
        temp.commit()?;
    }
    Ok(notes)
}

/// `-r`'s reference, opened (samtools' words when it cannot be).
fn open_reference(settings: &StatsSettings) -> Result<Option<Fasta>, Error> {
    match &settings.reference {
        Some(fa) => Ok(Some(Fasta::open(fa).map_err(Error::Message)?)),
        None => Ok(None),
    }
}

/// The refusals of options that do not depend on the file.
fn check_counting_options(options: &StatsOptions) -> Result<(), Error> {
    let settings = &options.settings;
    // samtools allocates a negative number of bins and fails so.
    let (min, max, step) = settings.coverage;
    if step <= 0 || crate::stats::coverage_bin_count(min, max, step) <= 0 {
        return Err(Error::Message("Out of memory".into()));
    }
    if options.regions.is_empty() && settings.cov_threshold > 0 && options.targets.is_none() {
        return Err(Error::InvalidArgument("Coverage percentage calculation requires a list of target regions".into()));
    }
    Ok(())
}

/// What the parts of a whole file counted on their own share, from its
/// header and the options (read and checked in the order [`stats_to`]
/// reads and checks them; `-t`'s messages go to `notes`).
struct WholeFile {
    names: Vec<Vec<u8>>,
    read_groups: Option<Vec<Vec<u8>>>,
    targets: Option<Targets>,
}

impl WholeFile {
    fn new(header: &Header, options: &StatsOptions, notes: &mut StatsNotes) -> Result<WholeFile, Error> {
        let names: Vec<Vec<u8>> = header.references.iter().map(|r| r.name.as_bytes().to_vec()).collect();
        let lengths: Vec<u64> = (0..header.references.len()).map(|t| header.reference_len(t)).collect();
        let read_groups = options.settings.group_id.as_deref().map(|id| read_groups_of(header, id));
        let targets = match &options.targets {
            Some(t) => Some(read_targets(t, &RefNames::new(header), &lengths, notes)?),
            None => None,
        };
        check_counting_options(options)?;
        Ok(WholeFile { names, read_groups, targets })
    }

    fn parts<'a>(&'a self, settings: &'a StatsSettings, fasta: Option<&'a Fasta>) -> Parts<'a> {
        Parts { settings, names: &self.names, fasta, targets: &self.targets, read_groups: &self.read_groups }
    }
}

/// The plan of a stats run in parts on several machines
/// ([`stats_regions`] on groups of its regions, then [`stats_gather`]):
/// the references (and the unplaced records) of the indexed BAM at `path`
/// (a file or a URL), in file order, when [`stats_to`] would count it so:
/// no regions after the file, no `-S`, and an index that describes the
/// file. `None` when the file is to be counted in one pass instead (SAM,
/// CRAM, a pipe, no usable index). The options are checked here as
/// `stats_to` checks them, with its errors.
pub fn stats_plan(path: &Path, options: &StatsOptions, report: &dyn Report) -> Result<Option<Vec<Region>>, Error> {
    // A stream is counted once, as it arrives (and not opened here: a FIFO
    // would give its data to this look and none to the count).
    if !options.regions.is_empty()
        || options.settings.split_tag.is_some()
        || path.as_os_str() == "-"
        || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
    {
        return Ok(None);
    }
    with_threads(options.threads, || {
        open_reference(&options.settings)?;
        let (bam, index) = if input::remote_url(path).is_some() {
            match super::flagstat::remote_bam(path)?.and_then(IndexedFile::into_bam) {
                Some(opened) => opened,
                None => return Ok(None),
            }
        } else {
            let cram = CramOptions { reference: options.cram_reference.clone(), fields: Fields::All, ..CramOptions::default() };
            let Input::Bam(bam) = input::open_with(path, &cram)? else { return Ok(None) };
            warn_if_truncated(&bam, report);
            let Some(index) = super::covering_index(&bam, report) else { return Ok(None) };
            (bam, index)
        };
        WholeFile::new(bam.header(), options, &mut StatsNotes::default())?;
        Ok(Some(region::plan(&bam, &index, Plan::Windows(u64::MAX))))
    })
}

/// One part of a planned stats run: the statistics of `regions` (whole
/// references of [`stats_plan`]'s, consecutive) of the BAM at `path`, each
/// counted on its own on the pool and summed, with what
/// [`stats_gather`] needs to know the sum exact. Only the ranges of
/// `regions` are fetched of a URL. `-r`'s and `-t`'s files are read here,
/// by their paths.
pub fn stats_regions(path: &Path, regions: &[Region], options: &StatsOptions, report: &dyn Report) -> Result<StatsPart, Error> {
    with_threads(options.threads, || {
        let fasta = open_reference(&options.settings)?;
        let no_index = || Error::Message("no usable index for a planned stats".into()).with_path(path);
        let (local, remote);
        let (bam, index) = if input::remote_url(path).is_some() {
            let mut file = super::flagstat::remote_bam(path)?.ok_or_else(no_index)?;
            file.prefetch_regions(regions)?;
            remote = file;
            remote.bam().ok_or_else(no_index)?
        } else {
            let bam = crate::bam::BamFile::open(path)?;
            let index = super::find_index(&bam, report)?.ok_or_else(no_index)?;
            local = (bam, index);
            (&local.0, &local.1)
        };
        let whole = WholeFile::new(bam.header(), options, &mut StatsNotes::default())?;
        Ok(match count_parts(bam, index, regions, &whole.parts(&options.settings, fasta.as_ref()))? {
            Some((stats, regions)) => StatsPart { stats: Some(stats), regions },
            None => StatsPart { stats: None, regions: Vec::new() },
        })
    })
}

/// The text of a planned stats run from its plan's `regions` and the
/// parts ([`stats_regions`] results in plan order; an error if any
/// failed), written to `out` as [`stats_to`] writes it, with its messages;
/// `None` (nothing written) when the file is to be counted in one pass
/// instead, as `stats_to` decides: a part ruled the sum out or failed, the
/// parts' spans do not cover the file exactly (the index does not describe
/// it), or their counts would not add up to one pass's.
pub fn stats_gather(
    path: &Path,
    regions: &[Region],
    parts: Result<Vec<StatsPart>, Error>,
    options: &StatsOptions,
    out: &mut dyn Write,
) -> Result<Option<StatsNotes>, Error> {
    let bam = match input::remote_url(path) {
        Some(_) => {
            let no_index = || crate::index::no_index_for_regions(path);
            let (mut bam, _) = super::flagstat::remote_bam(path)?.and_then(IndexedFile::into_bam).ok_or_else(no_index)?;
            // What follows the last region, which the coverage check reads.
            let last =
                parts.as_ref().ok().and_then(|p| p.iter().flat_map(|part| part.regions.last()).last().map(|r| r.span.1.compressed()));
            bam.prefetch(&[(last.unwrap_or(0), u64::MAX)])?;
            bam
        }
        None => crate::bam::BamFile::open(path)?,
    };
    let mut notes = StatsNotes::default();
    WholeFile::new(bam.header(), options, &mut notes)?;
    let Ok(parts) = parts else { return Ok(None) };
    let mut all: Option<crate::stats::Stats> = None;
    let mut counted = Vec::with_capacity(regions.len());
    for part in parts {
        let Some(stats) = part.stats else { return Ok(None) };
        match all.as_mut() {
            Some(all) => all.merge(&stats),
            None => all = Some(stats),
        }
        counted.extend(part.regions);
    }
    let Some(mut all) = all else { return Ok(None) };
    if counted.len() != regions.len()
        || region::check_coverage(&bam, regions.iter().zip(counted.iter().map(|part| part.span))).is_err()
        || !sums_exactly(counted.iter().map(|part| &part.summary))
    {
        return Ok(None);
    }
    notes.lines.extend(counted.into_iter().flat_map(|part| part.notes));
    let preamble = Preamble { producer: &options.producer, command_line: &options.command_line, split_tag: None };
    let mut text = Vec::with_capacity(1 << 16);
    write_stats(&mut text, &mut all, &options.settings, &preamble)?;
    out.write_all(&text)?;
    Ok(Some(notes))
}

/// What each part of a file counted on its own shares.
struct Parts<'a> {
    settings: &'a StatsSettings,
    names: &'a [Vec<u8>],
    fasta: Option<&'a Fasta>,
    targets: &'a Option<Targets>,
    read_groups: &'a Option<Vec<Vec<u8>>>,
}

/// The statistics of `bam` counted reference by reference on the pool
/// (the unplaced records last) and summed, with the parts' messages in
/// file order; `None` when the sum would not be what one pass over the
/// file gives ([`count_parts`], [`sums_exactly`]) or a part failed (one
/// pass then reports the first failure as samtools does).
fn by_references(
    bam: &crate::bam::BamFile,
    index: &crate::index::Index,
    parts: &Parts<'_>,
) -> Result<Option<(crate::stats::Stats, Vec<String>)>, Error> {
    let regions = region::plan(bam, index, Plan::Windows(u64::MAX));
    // The index did not describe the file after all, or a part ruled the
    // sum out: one pass.
    let Ok(Some((all, counted))) = count_parts(bam, index, &regions, parts) else { return Ok(None) };
    if region::check_coverage(bam, regions.iter().zip(counted.iter().map(|part| part.span))).is_err() {
        return Ok(None);
    }
    if !sums_exactly(counted.iter().map(|part| &part.summary)) {
        return Ok(None);
    }
    let notes = counted.into_iter().flat_map(|part| part.notes).collect();
    Ok(Some((all, notes)))
}

/// Counts each of `regions` (whole references of a plan, numbered in file
/// order for the GC-depth bins) on its own, on the pool, and sums them:
/// the sum and each region's summary, messages and span, in the order of
/// `regions`. `None` when a region ruled the sum out as it counted (reads
/// out of order, a read of 300 cycles or more: this is seen as soon as it
/// is met, and the other regions stop their counts) or failed; an error
/// when the file could not be read.
/// Each region is added to the sum as it ends (sums do not depend on the
/// order; GC-depth bins keep theirs), so memory holds one region per thread.
fn count_parts(
    bam: &crate::bam::BamFile,
    index: &crate::index::Index,
    regions: &[Region],
    parts: &Parts<'_>,
) -> Result<Option<(crate::stats::Stats, Vec<RegionPart>)>, Error> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    let sum: Mutex<Option<crate::stats::Stats>> = Mutex::new(None);
    let give_up = AtomicBool::new(false);
    let counted = region::scatter_with_spans(bam, index, regions, |region, records| {
        let mut collector =
            Collector::new(parts.settings, parts.names, parts.fasta, parts.targets.clone(), None, parts.read_groups.clone());
        // Parts numbered from 1 in file order (the unplaced records last).
        collector.all.set_part(if region.ref_id < 0 { u64::from(u32::MAX) } else { region.ref_id as u64 + 1 });
        let mut failed = None;
        records.for_each_record(|r| {
            // Once a part has ruled the sum out, the others stop counting
            // (their blocks are still read, for the index check).
            if failed.is_none() && !give_up.load(Ordering::Relaxed) {
                failed = collector.add(r).err();
                if failed.is_some() || collector.all.rules_out_parts() {
                    give_up.store(true, Ordering::Relaxed);
                }
            }
        })?;
        if give_up.load(Ordering::Relaxed) {
            return Ok(Err(crate::stats::StatsError("counted in one pass".into())));
        }
        let (mut stats, notes) = collector.into_all();
        let summary = match failed {
            Some(e) => Err(e),
            None => stats.end_part(parts.settings),
        };
        if summary.is_ok() {
            let mut sum = sum.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match sum.as_mut() {
                Some(all) => all.merge(&stats),
                None => *sum = Some(stats),
            }
        }
        Ok(summary.map(|summary| (summary, notes)))
    })?;
    if give_up.into_inner() {
        return Ok(None);
    }
    let mut summed = Vec::with_capacity(counted.len());
    for (result, span) in counted {
        match result {
            Ok((summary, notes)) => summed.push(RegionPart { summary, notes, span }),
            Err(_) => return Ok(None),
        }
    }
    Ok(sum.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner).map(|all| (all, summed)))
}

/// Whether the sum of parts that each counted a reference (in file order)
/// is what one pass over the file gives ([`crate::stats::PartSummary`]):
/// each part's reads in order, barcodes in one part at most, and no part
/// followed by one that saw records having grown its arrays or left a
/// depth in its coverage window (samtools carries both into the next
/// reference).
fn sums_exactly<'a>(summaries: impl Iterator<Item = &'a PartSummary> + Clone) -> bool {
    let last_seen = summaries.clone().enumerate().filter(|(_, s)| s.seen).map(|(i, _)| i).last();
    let with_barcodes = summaries.clone().filter(|summary| summary.barcodes).count();
    summaries.enumerate().all(|(i, summary)| {
        let followed = last_seen.is_some_and(|last| i < last);
        summary.sorted && with_barcodes <= 1 && !(followed && (summary.grew || summary.left_depth))
    })
}

/// Calls `f` on every record of `input` in file order, with its positions.
fn read_whole(input: &mut Input, path: &Path, f: &mut (dyn FnMut(&RecordRef<'_>, Place) -> Result<(), Error> + Send)) -> Result<(), Error> {
    match input {
        Input::Bam(bam) => crate::bam::scan(bam, |r, _| f(r, Place::of(r))).map(|_| ()),
        Input::Stream(stream) => stream.for_each_record(|r| f(r, Place::of(r))),
        Input::Cram(cram) => cram.for_each_record(|r| f(r, Place::of(r))),
        Input::Sam(sam) => {
            // Positions past 2^31 are counted, as samtools counts them.
            sam.set_positions(crate::sam::Positions::Wide);
            sam.for_each_record(|r| {
                let bytes = r.as_bytes();
                let (pos, mate_pos, template_len) = crate::sam::wide_positions(bytes);
                let core = RecordRef::new_prevalidated(&bytes[..bytes.len() - crate::sam::wide_positions_len(bytes)]);
                f(&core, Place { pos, mate_pos, template_len })
            })
        }
        .map_err(|e| match e {
            Error::Sam(e) => Error::Sam(e).with_path(path),
            e => e,
        }),
    }
}

/// `-I`: the read groups whose ID, or else whose sample (SM), is `id`.
fn read_groups_of(header: &Header, id: &str) -> Vec<Vec<u8>> {
    let mut groups = Vec::new();
    for line in header.text.split(|&c| c == b'\n') {
        let Some(fields) = line.strip_prefix(b"@RG\t") else { continue };
        let field =
            |key: &[u8]| fields.split(|&c| c == b'\t').find_map(|f| f.strip_prefix(key)).map(|v| v.strip_suffix(b"\r").unwrap_or(v));
        let Some(rg) = field(b"ID:") else { continue };
        if rg == id.as_bytes() || field(b"SM:").is_some_and(|sm| sm == id.as_bytes()) {
            groups.push(rg.to_vec());
        }
    }
    groups
}

/// Reads `-t`'s file as samtools' `init_regions`: `name from to` per line
/// (`#` lines skipped), names not in the header warned about once.
fn read_targets(path: &Path, names: &RefNames, lengths: &[u64], notes: &mut StatsNotes) -> Result<Targets, Error> {
    let text = std::fs::read(path).map_err(|e| Error::Message(fasthts_io::os_message(&e)).with_path(path))?;
    let mut by_tid: Vec<Vec<(i64, i64)>> = Vec::new();
    let (mut slots, mut longest) = (0usize, 0usize);
    let mut warned = false;
    let mut prev: Option<(usize, i64)> = None;
    let mut lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
    if text.ends_with(b"\n") || text.is_empty() {
        lines.pop();
    }
    for line in lines {
        if line.first() == Some(&b'#') {
            continue;
        }
        let shown = String::from_utf8_lossy(line);
        let Some(space) = line.iter().position(|c| c.is_ascii_whitespace() || *c == 0x0b) else {
            return Err(Error::Message(format!("Could not parse the file: {} [{shown}]", path.display())));
        };
        let name = &line[..space];
        let Some(tid) = names.id(name).and_then(|t| usize::try_from(t).ok()) else {
            if !warned {
                notes.lines.push(format!(
                    "Warning: Some sequences not present in the BAM, e.g. \"{}\". This message is printed only once.",
                    String::from_utf8_lossy(name)
                ));
            }
            warned = true;
            continue;
        };
        if tid >= slots {
            slots = tid + 100;
            by_tid.resize(slots, Vec::new());
        }
        let rest = &line[space + 1..];
        let Some((beg, end)) = scan_two_longs(rest) else {
            return Err(Error::Message(format!("Could not parse the region [{}]", String::from_utf8_lossy(rest))));
        };
        let first = match prev {
            Some((t, p)) if t == tid => p,
            _ => beg,
        };
        prev = Some((tid, first));
        if first > beg {
            return Err(Error::Message(format!(
                "The positions are not in chromosomal order ({}:{beg} comes after {first})",
                String::from_utf8_lossy(name)
            )));
        }
        by_tid[tid].push((beg, end));
        longest = longest.max(by_tid[tid].len());
    }
    if by_tid.is_empty() {
        return Err(Error::Message("Unable to map the -t sequences to the BAM sequences.".into()));
    }
    let _ = slots;
    let lengths_to = |lists: &mut Vec<Vec<(i64, i64)>>| {
        for list in lists.iter_mut() {
            for iv in list.iter_mut() {
                if iv.1 >= HTS_POS_MAX {
                    iv.1 = i64::MAX;
                }
            }
        }
    };
    lengths_to(&mut by_tid);
    Ok(Targets::new(by_tid, lengths, longest, true))
}

/// C's `sscanf(s, "%ld %ld")`: two integers, each after optional white space.
fn scan_two_longs(s: &[u8]) -> Option<(i64, i64)> {
    fn long(s: &[u8]) -> Option<(i64, &[u8])> {
        let s = &s[s.iter().take_while(|c| c.is_ascii_whitespace() || **c == 0x0b).count()..];
        let sign_len = usize::from(matches!(s.first(), Some(b'+' | b'-')));
        let digits = s[sign_len..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let text = std::str::from_utf8(&s[..sign_len + digits]).ok()?;
        // strtol saturates.
        let v = text.parse::<i64>().unwrap_or(if s[0] == b'-' { i64::MIN } else { i64::MAX });
        Some((v, &s[sign_len + digits..]))
    }
    let (a, rest) = long(s)?;
    let (b, _) = long(rest)?;
    Some((a, b))
}

/// The regions after the file as htslib's multi-region iterator takes them:
/// each parsed (unknown names skipped with htslib's warning), grouped by
/// reference, sorted and merged (touching intervals too). Returns samtools'
/// targets (1-based inclusive, by reference id, and its array's size) and
/// the 0-based half-open intervals to read, by reference in id order.
#[allow(clippy::type_complexity)]
fn parse_regions(
    texts: &[String],
    names: &RefNames,
    notes: &mut StatsNotes,
) -> Result<((Vec<Vec<(i64, i64)>>, usize), Vec<(i32, Vec<(i64, i64)>)>), Error> {
    let mut by_tid: std::collections::BTreeMap<i32, Vec<(i64, i64)>> = std::collections::BTreeMap::new();
    let mut placeless = 0;
    for text in texts {
        if text == "." || text == "*" {
            placeless = 1;
            continue;
        }
        match Region::parse_samtools(text, names, RegionSyntax::Query).as_deref() {
            Some(&[r]) if r.ref_id >= 0 => by_tid.entry(r.ref_id).or_default().push((r.start.max(0), r.end)),
            _ => notes.lines.push(format!("[W::hts_reglist_create] Region '{text}' specifies an unknown reference name. Continue anyway")),
        }
    }
    if by_tid.is_empty() && placeless == 0 {
        return Err(Error::Message("Multi-region iterator could not be created".into()));
    }
    let mut read = Vec::new();
    let mut slots = by_tid.len() + placeless;
    let mut targets: Vec<Vec<(i64, i64)>> = Vec::new();
    for (&tid, list) in &mut by_tid {
        list.sort();
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for &(b, e) in list.iter() {
            match merged.last_mut() {
                Some(last) if last.1 >= b => last.1 = last.1.max(e),
                _ => merged.push((b, e)),
            }
        }
        if tid as usize >= slots {
            slots = tid as usize + 10;
        }
        if targets.len() < slots {
            targets.resize(slots, Vec::new());
        }
        targets[tid as usize] = merged.iter().map(|&(b, e)| (b + 1, if e >= HTS_POS_MAX { i64::MAX } else { e })).collect();
        read.push((tid, merged));
    }
    targets.resize(slots.max(targets.len()), Vec::new());
    Ok(((targets, slots), read))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, Kept};
    use super::*;

    /// The whole-file text of `path` with `settings` summed from parts
    /// (`None` when the parts' sum is refused), and counted in one pass.
    fn in_parts_and_one_pass(path: &Path, settings: &StatsSettings) -> (Option<Vec<u8>>, Vec<u8>) {
        let bam = crate::bam::BamFile::open(path).unwrap();
        let names: Vec<Vec<u8>> = bam.header().references.iter().map(|r| r.name.as_bytes().to_vec()).collect();
        let preamble = Preamble { producer: "test", command_line: "stats", split_tag: None };
        let text = |stats: &mut crate::stats::Stats| {
            let mut text = Vec::new();
            write_stats(&mut text, stats, settings, &preamble).unwrap();
            text
        };
        let index = crate::index::covering_index(&bam, &Kept::default()).expect("an index beside the file");
        let parts = Parts { settings, names: &names, fasta: None, targets: &None, read_groups: &None };
        let summed = by_references(&bam, &index, &parts).unwrap().map(|(mut stats, _)| text(&mut stats));
        let mut collector = Collector::new(settings, &names, None, None, None, None);
        crate::bam::scan(&bam, |r, _| {
            collector.add(r).unwrap();
            Ok(())
        })
        .unwrap();
        let (mut all, _) = collector.into_all();
        all.finish(settings).unwrap();
        (summed, text(&mut all))
    }

    #[test]
    fn an_indexed_bam_is_summed_from_its_references_to_one_pass_bytes() {
        for settings in [StatsSettings::default(), StatsSettings { remove_overlaps: true, ..StatsSettings::default() }] {
            let (summed, one_pass) = in_parts_and_one_pass(&data("small.bam"), &settings);
            let summed = summed.expect("small.bam is sorted, of short reads: summed from parts");
            assert_eq!(String::from_utf8_lossy(&summed), String::from_utf8_lossy(&one_pass));
        }
    }
}
