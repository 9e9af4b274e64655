//! `coverage`: samtools coverage, through the indexes in parallel windows
//! when every input is an indexed BAM (or, for a region, an indexed BAM or
//! bgzipped SAM); else in one pass over the inputs merged by position.
//! The windows' counts are sums, added per reference in any order, so the
//! table does not depend on the thread count; should htslib's pileup limit
//! (`-d`) drop a read in a window, which the window cannot judge alone,
//! the count is made again in one pass.

use super::depth::{overlapping, plan_windows_of, window_in_place, Source};
use super::inputs::{open_inputs, Inputs, InputsOptions};
use super::{with_threads, Report};
use crate::sam::Positions;
use crate::bam::RecordRef;
use crate::coverage::{
    write_histogram, write_table_line, Bounds, ContigCoverage, CountError, CoverageCounter, CoverageOptions, Selection, TABLE_HEADER,
};
use crate::input::{self, Input};
use crate::output::TempOutput;
use crate::region::indexed::{IndexedFile, Rule};
use crate::region::{Region, RegionReader, RegionSyntax};
use crate::Error;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What samtools coverage prints, as values: the references in the order
/// of its output, with their bounds and counts.
#[derive(Clone, Debug, Default)]
pub struct CoverageTable {
    /// Every reference of the first input: name and length.
    pub references: Vec<(String, i64)>,
    /// The rows printed, in order: reference id, bounds, counts.
    pub rows: Vec<(usize, Bounds, ContigCoverage)>,
}

impl CoverageTable {
    /// samtools coverage's output of this table (with `options`' header
    /// and histogram settings).
    pub fn write_text(&self, options: &CoverageOptions, out: &mut Vec<u8>) {
        match options.histogram {
            None => {
                if options.header {
                    out.extend_from_slice(TABLE_HEADER);
                }
                for (tid, bounds, counts) in &self.rows {
                    write_table_line(out, &self.references[*tid].0, *bounds, counts);
                }
            }
            Some(histogram) => {
                for (i, (tid, bounds, counts)) in self.rows.iter().enumerate() {
                    if i > 0 {
                        out.push(b'\n');
                    }
                    let (name, length) = &self.references[*tid];
                    write_histogram(out, name, *length, *bounds, counts, histogram);
                }
            }
        }
    }
}

/// samtools coverage of `inputs` written to `output` (complete or not at
/// all; a special file such as `/dev/stdout` directly).
pub fn coverage_file(inputs: &[PathBuf], output: &Path, options: &CoverageOptions, report: &dyn Report) -> Result<(), Error> {
    let table = coverage_table(inputs, options, report)?;
    let mut text = Vec::new();
    table.write_text(options, &mut text);
    let (temp, file) = TempOutput::create(output)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    w.write_all(&text).and_then(|()| w.flush()).map_err(|e| Error::from(e).with_path(output))?;
    drop(w);
    Ok(temp.commit()?)
}

/// samtools coverage of `inputs` written to `out`, byte for byte as
/// samtools coverage 1.16 prints it (nothing when it fails).
pub fn coverage_to(inputs: &[PathBuf], options: &CoverageOptions, out: &mut dyn Write, report: &dyn Report) -> Result<(), Error> {
    let table = coverage_table(inputs, options, report)?;
    let mut text = Vec::new();
    table.write_text(options, &mut text);
    out.write_all(&text)?;
    Ok(())
}

/// What `-r` asks for.
#[derive(Clone, Copy)]
enum Scope {
    /// Every reference (no `-r`).
    Whole,
    /// `-r .`: every record, every reference measured from 0 to 0 (as
    /// samtools does), no line for the references not reached.
    Dot,
    /// `-r '*'`: the unplaced reads, which have no coverage.
    Unplaced,
    /// One reference or part of one: reference, start, end as queried
    /// (`i64::MAX`: to the end) and the bounds measured.
    Region(i32, i64, i64, Bounds),
}

/// samtools coverage of `inputs` as values (see [`crate::coverage`] for
/// what counts).
pub fn coverage_table(inputs: &[PathBuf], options: &CoverageOptions, report: &dyn Report) -> Result<CoverageTable, Error> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("coverage needs at least one input".into()));
    }
    with_threads(options.threads, || {
        // What samtools coverage has htslib decode of a CRAM: no names or
        // tags; qualities only with -Q.
        let fields =
            crate::cram::Fields::Depth { mates: false, mapq: true, bases: true, qualities: options.min_base_quality != 0 };
        let cram = crate::cram::CramOptions { reference: options.reference.clone(), fields, ..Default::default() };
        // samtools loads an index for any -r, `.` and `*` too.
        let open = InputsOptions { by_region: options.region.is_some(), indexes: None, cram: &cram, sam_positions: Positions::Bam, job: "coverage" };
        let Inputs { mut files, mut opened } = open_inputs(inputs, &open, report)?;
        let header = |i: usize| files.get(i).map_or_else(|| opened[i].header(), IndexedFile::header);
        let refs = &header(0).references;
        let references: Vec<(String, i64)> = refs.iter().map(|r| (r.name.clone(), i64::from(r.len))).collect();
        let lengths: Vec<i64> = references.iter().map(|r| r.1).collect();
        let scope = match options.region.as_deref() {
            None => Scope::Whole,
            Some(".") => Scope::Dot,
            Some("*") => Scope::Unplaced,
            // A region is read through the inputs' indexes: `files` holds them.
            Some(text) => match Region::parse_samtools(text, files[0].ref_names(), RegionSyntax::Query).as_deref() {
                Some(&[r]) if r.ref_id >= 0 => {
                    let beg = r.start.max(0);
                    let end = if r.end == i64::MAX { lengths[r.ref_id as usize] } else { r.end };
                    Scope::Region(r.ref_id, beg, r.end, Bounds { beg, end })
                }
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "cannot parse region \"{text}\" (check its format and that the file has that reference)"
                    ))
                    .with_path(&inputs[0]))
                }
            },
        };
        if let Scope::Region(tid, beg, end, _) = scope {
            // A remote file's ranges for the region, fetched together.
            for file in &mut files {
                file.prefetch_queries(&[(Region { ref_id: tid, start: beg, end }, Rule::Overlap)])?;
            }
        }
        if matches!(scope, Scope::Dot) {
            // Its index found, `.` reads the whole files.
            files.clear();
            for path in inputs {
                opened.push(input::open_with(path, &cram)?);
            }
        }
        if matches!(scope, Scope::Dot) && options.histogram.is_some() {
            // samtools divides by the width of a reference measured 0 to 0.
            return Err(Error::InvalidArgument("the histogram of region \".\" is not defined (samtools fails on it)".into()));
        }
        let bounds_of = |tid: i32| match scope {
            Scope::Region(_, _, _, bounds) => bounds,
            Scope::Dot => Bounds { beg: 0, end: 0 },
            _ => Bounds { beg: 0, end: lengths[tid as usize] },
        };
        let mut counts: Vec<ContigCoverage> = vec![ContigCoverage::default(); references.len()];
        match scope {
            Scope::Unplaced => {}
            Scope::Region(tid, beg, end, _) => {
                let windows_possible = !files.iter().any(IndexedFile::is_cram);
                let counted = windows_possible
                    && by_windows(options, &bounds_of, &files, inputs, &lengths, Some((tid, beg, end)), &mut counts)?;
                if !counted {
                    counts = vec![ContigCoverage::default(); references.len()];
                    region_pass(options, &bounds_of, &files, inputs, (tid, beg, end), &mut counts)?;
                }
            }
            Scope::Whole | Scope::Dot => {
                let mut indexes = Vec::with_capacity(opened.len());
                for input in &opened {
                    match input {
                        Input::Bam(bam) => match super::covering_index(bam, report) {
                            Some(index) => indexes.push(index),
                            None => break,
                        },
                        _ => break,
                    }
                }
                let mut counted = false;
                if indexes.len() == opened.len() {
                    let files: Vec<IndexedFile> = opened
                        .into_iter()
                        .zip(indexes)
                        .map(|(input, index)| match input {
                            Input::Bam(bam) => IndexedFile::with_index(bam, index),
                            _ => unreachable!("only BAMs have covering indexes"),
                        })
                        .collect();
                    counted = by_windows(options, &bounds_of, &files, inputs, &lengths, None, &mut counts)?;
                    // Read again, in one pass, if the pileup limit dropped a read.
                    opened = Vec::new();
                    if !counted {
                        for path in inputs {
                            opened.push(input::open_with(path, &cram)?);
                        }
                    }
                }
                if !counted {
                    counts = vec![ContigCoverage::default(); references.len()];
                    one_pass(options, &bounds_of, opened, inputs, &mut counts, report)?;
                }
            }
        }
        // samtools' order: the references its pileup reached, then (the
        // whole file, as a table) the others.
        let mut rows = Vec::new();
        match scope {
            Scope::Unplaced => {}
            Scope::Region(tid, _, _, bounds) => rows.push((tid as usize, bounds, std::mem::take(&mut counts[tid as usize]))),
            Scope::Whole | Scope::Dot => {
                let reached: Vec<bool> = counts.iter().map(|c| c.piled).collect();
                for (tid, c) in counts.iter_mut().enumerate() {
                    if c.piled {
                        rows.push((tid, bounds_of(tid as i32), std::mem::take(c)));
                    }
                }
                if matches!(scope, Scope::Whole) && options.histogram.is_none() {
                    for (tid, c) in counts.iter_mut().enumerate() {
                        if !reached[tid] {
                            rows.push((tid, bounds_of(tid as i32), std::mem::take(c)));
                        }
                    }
                }
            }
        }
        Ok(CoverageTable { references, rows })
    })
}

/// A counting error, about the input `path`.
fn count_error(e: CountError, path: &Path) -> Error {
    Error::Message(e.to_string()).with_path(path)
}

/// The counts of one window.
#[derive(Default)]
struct WindowCounts {
    counts: ContigCoverage,
    dropped: bool,
}

/// Counts the windows of the references (or of `region`: reference,
/// start, end as queried) in parallel, adding them into `counts`. False
/// (and `counts` partly filled) when the pileup limit dropped a read: the
/// count must then be made in one pass.
#[allow(clippy::too_many_arguments)]
fn by_windows(
    options: &CoverageOptions,
    bounds_of: &(dyn Fn(i32) -> Bounds + Sync),
    inputs: &[IndexedFile],
    paths: &[PathBuf],
    lengths: &[i64],
    region: Option<(i32, i64, i64)>,
    counts: &mut [ContigCoverage],
) -> Result<bool, Error> {
    fn index_of(input: &IndexedFile) -> &crate::index::Index {
        input.index().expect("windows are read through a BAI or CSI")
    }
    let mut windows = plan_windows_of(options.window_bases, region, lengths, index_of(&inputs[0]));
    // A reference without records in any index has nothing to count.
    windows.retain(|&(tid, _, _)| inputs.iter().any(|input| index_of(input).start_offset(tid as usize, 0).is_some()));
    let selection = Selection::new(options);
    let region_start = region.map(|r| r.1);
    // One input's reads come in order: positions are settled as they pass
    // (gaps between reads skipped); several inputs are read one after another.
    let streaming = inputs.len() == 1;
    let mut appended = 0;
    let mut dropped = false;
    crate::gather::fill_in_order_with(
        windows.len(),
        || (None, Vec::new()),
        |_| WindowCounts::default(),
        |i, (slot, scratch): &mut (Option<RegionReader<'_>>, Vec<i32>), piece: &mut WindowCounts| {
            let (tid, beg, end) = windows[i];
            *piece = WindowCounts::default();
            let mut counter =
                CoverageCounter::new(bounds_of, options, inputs.len(), (beg, end), streaming).with_scratch(std::mem::take(scratch));
            // The first window of a region takes the records overlapping
            // its start (htslib's iterator); the others those starting in
            // them, and for the pileup limit the reads it holds at their
            // start (those reaching it, read from one base before).
            let first_of_region = region_start == Some(beg);
            let from = if first_of_region { beg } else { beg.saturating_sub(1) };
            let owned = |r: &RecordRef<'_>| {
                let pos = i64::from(r.pos());
                pos >= beg || (first_of_region && r.end_pos() > beg)
            };
            let take = |file: usize, r: &RecordRef<'_>, counter: &mut CoverageCounter<'_>, tally: &mut ContigCoverage| {
                let selected = selection.selects(r);
                let own = owned(r);
                if own {
                    tally.count_record(r, selected);
                }
                if selected && (own || !first_of_region) {
                    counter.add(file, r)?;
                }
                Ok::<(), CountError>(())
            };
            let mut tally = ContigCoverage::default();
            if let Some((bam, index)) = inputs.first().filter(|_| inputs.len() == 1).and_then(IndexedFile::bam) {
                window_in_place(slot, bam, index, overlapping(tid, end), from, &paths[0], |r| take(0, r, &mut counter, &mut tally))?;
            } else {
                for (file, input) in inputs.iter().enumerate() {
                    let mut records = input.piece(overlapping(tid, end), from)?;
                    while let Some(r) = records.next_record()? {
                        take(file, &r, &mut counter, &mut tally).map_err(|e| count_error(e, &paths[file]))?;
                    }
                }
            }
            counter.finish_reference();
            for (_, c) in &counter.finished {
                tally.merge(c);
            }
            piece.counts = tally;
            piece.dropped = counter.dropped();
            *scratch = counter.into_scratch();
            Ok::<(), Error>(())
        },
        |piece| {
            let (tid, _, _) = windows[appended];
            appended += 1;
            counts[tid as usize].merge(&piece.counts);
            dropped |= piece.dropped;
            Ok(())
        },
    )?;
    Ok(!dropped)
}

/// The region read in one pass over every input (htslib's iterator for a
/// CRAM), the inputs merged by position.
fn region_pass(
    options: &CoverageOptions,
    bounds_of: &(dyn Fn(i32) -> Bounds + Sync),
    inputs: &[IndexedFile],
    paths: &[PathBuf],
    (tid, beg, end): (i32, i64, i64),
    counts: &mut [ContigCoverage],
) -> Result<(), Error> {
    let mut sources = Vec::with_capacity(inputs.len());
    for input in inputs {
        let records = input.query(Region { ref_id: tid, start: beg, end }, Rule::Overlap)?;
        sources.push(Source::Query { records, from: i64::MIN });
    }
    merge(options, bounds_of, &mut sources, paths, counts)
}

/// Whether the pileup takes `r` at all (placed and mapped).
#[inline]
fn pileup_may_take(r: &RecordRef<'_>) -> bool {
    r.ref_id() >= 0 && r.flag() & crate::bam::flags::UNMAPPED == 0
}

/// Counts the records of `sources` merged by position (the first input
/// first among equals), each record placed on a reference tallied.
fn merge(
    options: &CoverageOptions,
    bounds_of: &(dyn Fn(i32) -> Bounds + Sync),
    sources: &mut [Source<'_>],
    paths: &[PathBuf],
    counts: &mut [ContigCoverage],
) -> Result<(), Error> {
    let selection = Selection::new(options);
    let mut counter = CoverageCounter::new(bounds_of, options, sources.len(), (i64::MIN, i64::MAX), true);
    let n_refs = counts.len();
    let mut keep = |r: &RecordRef<'_>| {
        let selected = selection.selects(r);
        let tid = r.ref_id();
        if tid >= 0 && (tid as usize) < n_refs {
            counts[tid as usize].count_record(r, selected);
        }
        selected && pileup_may_take(r)
    };
    let mut heads: Vec<Vec<u8>> = vec![Vec::new(); sources.len()];
    let mut live: Vec<bool> = Vec::with_capacity(sources.len());
    for (source, head) in sources.iter_mut().zip(heads.iter_mut()) {
        live.push(source.pull(&mut keep, head)?);
    }
    loop {
        let mut best: Option<(usize, (i32, i32))> = None;
        for (i, head) in heads.iter().enumerate() {
            if !live[i] {
                continue;
            }
            let r = RecordRef::new_prevalidated(head);
            let key = (r.ref_id(), r.pos());
            if best.map_or(true, |(_, k)| key < k) {
                best = Some((i, key));
            }
        }
        let Some((i, _)) = best else { break };
        counter.add(i, &RecordRef::new_prevalidated(&heads[i])).map_err(|e| count_error(e, &paths[i]))?;
        live[i] = sources[i].pull(&mut keep, &mut heads[i])?;
    }
    counter.finish_reference();
    for (tid, c) in &counter.finished {
        counts[*tid as usize].merge(c);
    }
    Ok(())
}

/// One pass over inputs without usable indexes (or SAM, CRAM, pipes): a
/// single input as it comes, several merged by position.
fn one_pass(
    options: &CoverageOptions,
    bounds_of: &(dyn Fn(i32) -> Bounds + Sync),
    mut inputs: Vec<Input>,
    paths: &[PathBuf],
    counts: &mut [ContigCoverage],
    report: &dyn Report,
) -> Result<(), Error> {
    if inputs.len() == 1 {
        let selection = Selection::new(options);
        let mut counter = CoverageCounter::new(bounds_of, options, 1, (i64::MIN, i64::MAX), true);
        let n_refs = counts.len();
        let path = &paths[0];
        let mut take = |r: &RecordRef<'_>| -> Result<(), Error> {
            let selected = selection.selects(r);
            let tid = r.ref_id();
            if tid >= 0 && (tid as usize) < n_refs {
                counts[tid as usize].count_record(r, selected);
            }
            if selected && pileup_may_take(r) {
                counter.add(0, r).map_err(|e| count_error(e, path))?;
            }
            Ok(())
        };
        match &mut inputs[0] {
            Input::Bam(bam) => crate::bam::scan(bam, |r, _| take(r)).map(|_| ())?,
            Input::Stream(stream) => stream.for_each_record(|r| take(r))?,
            Input::Cram(cram) => cram.for_each_record(|r| take(r))?,
            Input::Sam(sam) => sam
                .for_each_record(|r| take(&r))
                .map_err(|e| match e {
                    Error::Sam(e) => Error::Sam(e).with_path(path),
                    e => e,
                })?,
        }
        counter.finish_reference();
        for (tid, c) in &counter.finished {
            counts[*tid as usize].merge(c);
        }
    } else {
        let mut sources = Vec::with_capacity(inputs.len());
        for (input, path) in inputs.iter_mut().zip(paths) {
            sources.push(match input {
                Input::Bam(bam) => Source::Bam { reader: bam.records()?, path: path.as_path() },
                Input::Stream(stream) => Source::Stream { stream },
                Input::Cram(cram) => Source::Cram { cram },
                Input::Sam(sam) => {
                    let n_ref = sam.header().references.len();
                    Source::Sam { sam, batch: Vec::new(), at: 0, n_ref, path: path.as_path() }
                }
            });
        }
        merge(options, bounds_of, &mut sources, paths, counts)?;
    }
    for (input, path) in inputs.iter_mut().zip(paths) {
        super::warn_after_reading(input, path, report);
    }
    Ok(())
}
