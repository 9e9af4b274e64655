//! `depth`: samtools depth, through the indexes in parallel windows when
//! every input is an indexed BAM, or (for a region) an indexed BAM or
//! bgzipped SAM, and `-s` is not asked for; else in one pass over the
//! inputs in order.

use super::inputs::{open_inputs, Inputs, InputsOptions};
use super::{with_threads, Report};
use crate::bam::{RecordReader, RecordRef};
use crate::depth::{header_line, write_zero_rows, CountError, Counter, DepthColumns, DepthOptions, Piece, RowEncoding, RowText, Setup};
use crate::index::Index;
use crate::input::Input;
use crate::region::indexed::{IndexedFile, Records, Rule};
use crate::output::TempOutput;
use crate::region::{BedFilter, Region, RegionReader, RegionSyntax};
use crate::sam::{Positions, SamReader};
use crate::Error;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Compressed bytes per window when counting through the index (windows
/// are also cut at [`DepthOptions::window_bases`] positions).
const WINDOW_BYTES: u64 = 8 << 20;

/// samtools depth of `inputs` (BAM, SAM or CRAM files, `-` for standard
/// input; a region of a bgzipped SAM is read through its CSI or BAI)
/// written to `output` (complete or not at all; a special file such as
/// `/dev/stdout` directly).
pub fn depth_file(inputs: &[PathBuf], output: &Path, options: &DepthOptions, report: &dyn Report) -> Result<(), Error> {
    let (temp, file) = TempOutput::create(output)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    depth_to(inputs, options, &mut w, report).map_err(|e| match e {
        // A write error is about the output.
        Error::Io(e) => Error::Io(e).with_path(output),
        e => e,
    })?;
    w.flush().map_err(|e| Error::from(e).with_path(output))?;
    Ok(temp.commit()?)
}

/// samtools depth of `inputs` written to `out`, byte for byte as samtools
/// depth 1.16 prints it (see [`crate::depth`] for what counts).
pub fn depth_to(inputs: &[PathBuf], options: &DepthOptions, out: &mut (dyn Write + Send), report: &dyn Report) -> Result<(), Error> {
    depth_encoded(inputs, options, RowEncoding::Text, out, report, &mut |_| {})
}

/// samtools depth of `inputs` as columns: the rows [`depth_to`] prints
/// (without `-H`'s header line), with the reference names they number.
pub fn depth_columns(inputs: &[PathBuf], options: &DepthOptions, report: &dyn Report) -> Result<DepthColumns, Error> {
    let mut columns = DepthColumns::new(inputs.len());
    let mut references = Vec::new();
    let options = DepthOptions { header: false, ..options.clone() };
    depth_encoded(inputs, &options, RowEncoding::Binary, &mut columns, report, &mut |refs| {
        references = refs.iter().map(|r| r.name.clone()).collect();
    })?;
    columns.references = references;
    Ok(columns)
}

/// [`depth_to`] with its rows encoded as `encoding` says; `references`
/// hears of the first input's references before any row is written.
fn depth_encoded(
    inputs: &[PathBuf],
    options: &DepthOptions,
    encoding: RowEncoding,
    out: &mut (dyn Write + Send),
    report: &dyn Report,
    references: &mut (dyn FnMut(&[crate::bam::Reference]) + Send),
) -> Result<(), Error> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("depth needs at least one input".into()));
    }
    let bed = options.bed.as_deref().map(BedFilter::read).transpose()?;
    with_threads(options.threads, || {
        // A CRAM's records are decoded as far as samtools depth decodes
        // them: without bases (no -l) no reference is needed.
        let fields = crate::cram::Fields::Depth {
            mates: options.remove_overlaps,
            mapq: options.min_mapping_quality != 0,
            bases: options.min_read_length != 0,
            qualities: options.min_base_quality != 0,
        };
        let cram = crate::cram::CramOptions { reference: options.reference.clone(), fields, ..Default::default() };
        // A region is read through the one region engine (each input with
        // its index: with -X, the named one, which samtools loads only
        // for -r); a whole file as it comes. One bgzipped SAM is read with
        // its positions past BAM's 32 bits, as samtools depth reads them
        // (its region in one pass: the counter reads them, and the merge
        // of several inputs would not).
        let sam_positions = if inputs.len() == 1 { Positions::Wide } else { Positions::Bam };
        let open = InputsOptions {
            by_region: options.region.is_some(),
            indexes: options.indexes.as_deref(),
            cram: &cram,
            sam_positions,
            job: "depth",
        };
        let Inputs { mut files, opened } = open_inputs(inputs, &open, report)?;
        // A remote file's region is fetched before it is read.
        if let (Some(text), true) = (&options.region, files.iter().any(IndexedFile::is_remote)) {
            if let Some(regions) = Region::parse_samtools(text, files[0].ref_names(), RegionSyntax::Query) {
                for file in &mut files {
                    file.prefetch_regions(&regions)?;
                }
            }
        }
        let header = |i: usize| files.get(i).map_or_else(|| opened[i].header(), IndexedFile::header);
        let refs = &header(0).references;
        references(refs);
        let lengths: Vec<i64> = refs.iter().map(|r| i64::from(r.len)).collect();
        let region = match &options.region {
            // samtools depth reads -r with sam_itr_querys; `.` (the whole
            // file) gives it no rows, as `*` does.
            // A region is read through the inputs' indexes: `files` holds them.
            Some(text) => match Region::parse_samtools(text, files[0].ref_names(), RegionSyntax::Query).as_deref() {
                Some(&[region]) => Some(region),
                Some(_) => Some(Region::unplaced()),
                None => return Err(Error::InvalidArgument(format!("cannot parse region {text:?}"))),
            },
            None => None,
        };
        if options.header {
            out.write_all(&header_line(options.indexes.as_deref().unwrap_or(inputs)))?;
        }
        let setup = Setup {
            options: options.clone(),
            names: std::borrow::Cow::Borrowed(refs),
            lengths,
            bed,
            region: region.filter(|r| r.ref_id >= 0).map(|r| (r.ref_id, r.start.max(0), r.end)),
            n_files: inputs.len(),
            encoding,
        };
        if region.is_some_and(|r| r.ref_id < 0) {
            // Unplaced reads have no depth.
            return Ok(());
        }
        if region.is_some() {
            // A CRAM's region is read by htslib's iterator, in one pass;
            // so are the regions counted with -s (one pass merging the
            // inputs) and a bgzipped SAM's (its positions 64-bit). Else in
            // parallel windows.
            let wide = sam_positions == Positions::Wide && files[0].is_sam_gz();
            if options.remove_overlaps || files.iter().any(IndexedFile::is_cram) || wide {
                return region_pass(&setup, &files, inputs, out, wide);
            }
            return by_windows(&setup, &files, inputs, out);
        }
        // A whole-file count: through the indexes in parallel windows when
        // every input is a BAM whose index describes the whole file, else
        // in one pass. Either takes the inputs: the references are copied
        // off the first.
        let setup = Setup { names: std::borrow::Cow::Owned(setup.names.into_owned()), ..setup };
        let covering = |input: &Input| match input {
            Input::Bam(bam) if !options.remove_overlaps => super::covering_index(bam, report),
            _ => None,
        };
        let mut indexes = Vec::with_capacity(opened.len());
        for input in &opened {
            match covering(input) {
                Some(index) => indexes.push(index),
                None => break,
            }
        }
        if indexes.len() == opened.len() {
            let files: Vec<IndexedFile> = opened
                .into_iter()
                .zip(indexes)
                .map(|(input, index)| match input {
                    Input::Bam(bam) => IndexedFile::with_index(bam, index),
                    _ => unreachable!("only BAMs have covering indexes"),
                })
                .collect();
            return by_windows(&setup, &files, inputs, out);
        }
        one_pass_inputs(&setup, opened, inputs, out, report)
    })
}

/// A counting error, about the input `path`.
fn count_error(e: CountError, path: &Path) -> Error {
    Error::Message(e.to_string()).with_path(path)
}

/// The windows `(tid, start, end)` counted in parallel: each reference (or
/// the region) cut where the first input's index has `WINDOW_BYTES` of
/// compressed data, and at most `window_bases` apart, only below the
/// reference's length (so that the last window holds whatever lies past it).
fn plan_windows(setup: &Setup, index: &Index) -> Vec<(i32, i64, i64)> {
    plan_windows_of(setup.options.window_bases, setup.region, &setup.lengths, index)
}

/// [`plan_windows`] of references of `lengths` (or of `region`), windows
/// at most `window_bases` wide: what coverage counts in parallel too.
pub(super) fn plan_windows_of(window_bases: u64, region: Option<(i32, i64, i64)>, lengths: &[i64], index: &Index) -> Vec<(i32, i64, i64)> {
    let width = window_bases.clamp(1, i64::MAX as u64) as i64;
    let tids: Vec<i32> = match region {
        Some((tid, _, _)) => vec![tid],
        None => (0..lengths.len() as i32).collect(),
    };
    let mut windows = Vec::new();
    for tid in tids {
        let (lo, hi) = match region {
            Some((_, beg, end)) => (beg, end),
            None => (i64::MIN, i64::MAX),
        };
        let cut_below = hi.min(lengths[tid as usize]);
        let mut cuts = Vec::new();
        let mut last_offset = index.reference_span(tid as usize).map_or(0, |c| c.start.compressed());
        for (pos, offset) in index.checkpoints(tid as usize) {
            if pos > lo.max(0) && pos < cut_below && offset.compressed() >= last_offset + WINDOW_BYTES {
                cuts.push(pos);
                last_offset = offset.compressed();
            }
        }
        cuts.push(cut_below.max(lo.max(0)));
        let mut start = lo;
        let mut from = lo.max(0);
        for cut in cuts {
            let mut next = from + width;
            while next < cut {
                windows.push((tid, start, next));
                start = next;
                next += width;
            }
            from = cut;
            if cut < cut_below {
                windows.push((tid, start, cut));
                start = cut;
            }
        }
        windows.push((tid, start, hi));
    }
    windows
}

/// The records of `scope` of a window's one mapped BAM, read from where
/// a query from `from` begins, in place with the thread's reader (`slot`,
/// reused across its windows; dropped when a read fails); `take` on each
/// until it fails, that error naming `path`. Nothing when the index has no
/// records there.
pub(super) fn window_in_place<'a, E: std::fmt::Display>(
    slot: &mut Option<RegionReader<'a>>,
    bam: &'a crate::bam::BamFile,
    index: &Index,
    scope: Region,
    from: i64,
    path: &Path,
    mut take: impl FnMut(&RecordRef<'_>) -> Result<(), E>,
) -> Result<(), Error> {
    let Some((start, following)) = crate::region::query_span(bam, index, scope, from) else { return Ok(()) };
    let reader = RegionReader::reuse(slot, bam, scope, start, following)?;
    let mut failed = None;
    let read = reader.for_each_record(|r| {
        if failed.is_none() {
            if let Err(e) = take(r) {
                failed = Some(e);
            }
        }
    });
    if read.is_err() {
        // A reader that failed is not read on.
        *slot = None;
    }
    read.map_err(|e| Error::from(e).with_path(bam.path()))?;
    match failed {
        Some(e) => Err(Error::Message(e.to_string()).with_path(path)),
        None => Ok(()),
    }
}

/// The scope of a query for the records of `tid` that overlap a window
/// ending at `end`: those that start before `end`, read from the index's
/// offset for the window's start, which lies before every read
/// overlapping it.
pub(super) fn overlapping(tid: i32, end: i64) -> Region {
    Region { ref_id: tid, start: i64::MIN, end }
}

/// Counts the windows in parallel and writes their rows in order.
fn by_windows(setup: &Setup, inputs: &[IndexedFile], paths: &[PathBuf], out: &mut (dyn Write + Send)) -> Result<(), Error> {
    fn index_of(input: &IndexedFile) -> &Index {
        input.index().expect("windows are read through a BAI or CSI")
    }
    let mut windows = plan_windows(setup, index_of(&inputs[0]));
    let options = &setup.options;
    if options.all_positions == 0 {
        // A reference without records in any index prints nothing without
        // -a: of a draft assembly's 600,000 contigs, most.
        windows.retain(|&(tid, _, _)| inputs.iter().any(|input| index_of(input).start_offset(tid as usize, 0).is_some()));
    }
    // With -a (whole file) an empty window is printed only if its
    // reference has reads elsewhere: known when gathering.
    let deferred = options.all_positions == 1 && setup.region.is_none();
    let mut gather = Gather { tid: -1, has_reads: false, pending: Vec::new(), rows: RowText::new(setup.encoding), zeros: Vec::new() };
    let mut appended = 0;
    // Each thread reads its windows of a single BAM through one reader
    // (see `RegionReader::reuse`): a draft assembly's contigs, a window
    // each, share blocks.
    crate::gather::fill_in_order_with(
        windows.len(),
        || None,
        |_| Piece::default(),
        |i, slot: &mut Option<RegionReader<'_>>, piece: &mut Piece| {
            let (tid, beg, end) = windows[i];
            let mut counter = Counter::new(setup, beg, end, true);
            counter.out = std::mem::take(&mut piece.text);
            counter.out.clear();
            let overlap_from = beg.max(0);
            if let Some((bam, index)) = inputs.first().filter(|_| inputs.len() == 1).and_then(IndexedFile::bam) {
                window_in_place(slot, bam, index, overlapping(tid, end), beg, &paths[0], |r| {
                    if r.end_pos() > overlap_from && setup.keeps(r) {
                        counter.add(0, r)?;
                    }
                    Ok::<(), CountError>(())
                })?;
            } else {
                let mut sources = Vec::with_capacity(inputs.len());
                for input in inputs {
                    sources.push(Source::Query { records: input.piece(overlapping(tid, end), beg)?, from: beg });
                }
                merge(setup, &mut counter, &mut sources, paths)?;
            }
            counter.finish_window();
            piece.had_reads = counter.had_reads;
            piece.text = std::mem::take(&mut counter.out);
            if !piece.had_reads && options.all_positions > 0 && !deferred {
                let len = setup.lengths[tid as usize];
                write_zero_rows(setup, tid, beg.max(0), end.min(len), &mut RowText::new(setup.encoding), &mut piece.text);
            }
            Ok::<(), Error>(())
        },
        |piece| {
            let (tid, beg, end) = windows[appended];
            appended += 1;
            Ok(gather.append(setup, deferred, tid, beg, end, piece, out)?)
        },
    )
}

/// The gathering side of [`by_windows`]: writes pieces in order, and with
/// `-a` the zero rows of empty windows of references that have reads.
struct Gather {
    tid: i32,
    has_reads: bool,
    /// Empty windows of `tid` before its first read.
    pending: Vec<(i64, i64)>,
    rows: RowText,
    zeros: Vec<u8>,
}

impl Gather {
    #[allow(clippy::too_many_arguments)]
    fn append(
        &mut self,
        setup: &Setup,
        deferred: bool,
        tid: i32,
        beg: i64,
        end: i64,
        piece: &Piece,
        out: &mut (dyn Write + Send),
    ) -> std::io::Result<()> {
        if !deferred {
            return out.write_all(&piece.text);
        }
        if tid != self.tid {
            self.tid = tid;
            self.has_reads = false;
            self.pending.clear();
        }
        let len = setup.lengths[tid as usize];
        if piece.had_reads {
            if !self.has_reads {
                self.has_reads = true;
                for (b, e) in std::mem::take(&mut self.pending) {
                    self.write_zeros(setup, tid, b, e, out)?;
                }
            }
            out.write_all(&piece.text)
        } else if self.has_reads {
            self.write_zeros(setup, tid, beg.max(0), end.min(len), out)
        } else {
            self.pending.push((beg.max(0), end.min(len)));
            Ok(())
        }
    }

    fn write_zeros(&mut self, setup: &Setup, tid: i32, from: i64, to: i64, out: &mut (dyn Write + Send)) -> std::io::Result<()> {
        // In slices, so that a long empty stretch is not one huge buffer.
        let step = 1 << 16;
        let mut p = from;
        while p < to {
            let q = (p + step).min(to);
            self.zeros.clear();
            write_zero_rows(setup, tid, p, q, &mut self.rows, &mut self.zeros);
            out.write_all(&self.zeros)?;
            p = q;
        }
        Ok(())
    }
}

/// The region of `setup` read in one pass over every input (htslib's
/// iterator for a CRAM), the inputs merged by position. `wide`: the one
/// input is a bgzipped SAM read with [`Positions::Wide`].
fn region_pass(setup: &Setup, inputs: &[IndexedFile], paths: &[PathBuf], out: &mut (dyn Write + Send), wide: bool) -> Result<(), Error> {
    let Some((tid, beg, end)) = setup.region else { return Err(Error::InvalidArgument("no region to read".into())) };
    let mut counter = Counter::new(setup, beg, end, true);
    counter.wide_positions = wide;
    counter.spill_to(out);
    let mut sources = Vec::with_capacity(inputs.len());
    for input in inputs {
        let records = input.query(Region { ref_id: tid, start: beg, end }, Rule::Overlap)?;
        sources.push(Source::Query { records, from: i64::MIN });
    }
    let fed = merge(setup, &mut counter, &mut sources, paths);
    finish(counter, fed)
}

/// A stream of the records that count, for merging several inputs.
pub(super) enum Source<'a> {
    /// The records of a query of an indexed file that end past `from`.
    Query { records: Records<'a>, from: i64 },
    /// A whole BAM in file order.
    Bam { reader: RecordReader<'a>, path: &'a Path },
    /// A BAM read as it streams (a pipe, standard input; its errors name it).
    Stream { stream: &'a mut crate::bam::BamStream },
    /// CRAM, decoded by htslib (its errors name it).
    Cram { cram: &'a mut crate::cram::CramReader },
    /// A SAM stream, encoded in batches.
    Sam { sam: &'a mut SamReader<Box<dyn Read + Send>>, batch: Vec<u8>, at: usize, n_ref: usize, path: &'a Path },
}

impl Source<'_> {
    /// Copies the next record that counts (that `counts` keeps) into
    /// `head`; false at the end.
    pub(super) fn pull(&mut self, counts: &mut impl FnMut(&RecordRef<'_>) -> bool, head: &mut Vec<u8>) -> Result<bool, Error> {
        let mut keep = |r: &RecordRef<'_>, from: i64| {
            if r.end_pos() > from && counts(r) {
                head.clear();
                head.extend_from_slice(r.as_bytes());
                true
            } else {
                false
            }
        };
        match self {
            Source::Query { records, from } => loop {
                match records.next_record()? {
                    None => return Ok(false),
                    Some(r) => {
                        if keep(&r, *from) {
                            return Ok(true);
                        }
                    }
                }
            },
            Source::Bam { reader, path } => loop {
                match reader.next_record().map_err(|e| Error::from(e).with_path(&*path))? {
                    None => return Ok(false),
                    Some(r) => {
                        if keep(&r, i64::MIN) {
                            return Ok(true);
                        }
                    }
                }
            },
            Source::Stream { stream } => loop {
                match stream.next_record()? {
                    None => return Ok(false),
                    Some(r) => {
                        if keep(&r, i64::MIN) {
                            return Ok(true);
                        }
                    }
                }
            },
            Source::Cram { cram } => loop {
                match cram.next_record()? {
                    None => return Ok(false),
                    Some(r) => {
                        if keep(&r, i64::MIN) {
                            return Ok(true);
                        }
                    }
                }
            },
            Source::Sam { sam, batch, at, n_ref, path } => loop {
                if *at >= batch.len() {
                    batch.clear();
                    *at = 0;
                    if sam.next_batch(batch, 1 << 20).map_err(|e| Error::from(e).with_path(&*path))? == 0 {
                        return Ok(false);
                    }
                }
                let size = u32::from_le_bytes(batch[*at..*at + 4].try_into().expect("4 bytes")) as usize;
                let data = &batch[*at + 4..*at + 4 + size];
                *at += 4 + size;
                let r = RecordRef::new(data, *n_ref).map_err(|e| Error::Message(e.to_string()).with_path(&*path))?;
                if keep(&r, i64::MIN) {
                    return Ok(true);
                }
            },
        }
    }
}

/// Feeds `counter` the records of `sources` merged by position (the
/// first input first among equals).
fn merge(setup: &Setup, counter: &mut Counter<'_>, sources: &mut [Source<'_>], paths: &[PathBuf]) -> Result<(), Error> {
    let mut heads: Vec<Vec<u8>> = vec![Vec::new(); sources.len()];
    let mut live: Vec<bool> = Vec::with_capacity(sources.len());
    for (source, head) in sources.iter_mut().zip(heads.iter_mut()) {
        live.push(source.pull(&mut |r| setup.keeps(r), head)?);
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
        let Some((i, _)) = best else { return Ok(()) };
        counter.add(i, &RecordRef::new_prevalidated(&heads[i])).map_err(|e| count_error(e, &paths[i]))?;
        if let Some(e) = counter.sink_error.take() {
            return Err(e.into());
        }
        live[i] = sources[i].pull(&mut |r| setup.keeps(r), &mut heads[i])?;
    }
}

/// Ends a one-pass count: the rows after the last read, and the first
/// write error if writing failed. When reading failed (`fed`), the rows
/// printed so far are written, as samtools has printed them, and the error
/// returned.
fn finish(mut counter: Counter<'_>, fed: Result<(), Error>) -> Result<(), Error> {
    if let Err(e) = fed {
        counter.spill(true);
        return Err(e);
    }
    counter.finish();
    match counter.sink_error.take() {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// One pass over inputs without usable indexes (or SAM, or pipes), in
/// order: a single BAM or SAM is read as a stream with its blocks or text
/// decoded on the pool; several are merged by position.
fn one_pass_inputs(
    setup: &Setup,
    mut inputs: Vec<Input>,
    paths: &[PathBuf],
    out: &mut (dyn Write + Send),
    report: &dyn Report,
) -> Result<(), Error> {
    let mut counter = Counter::new(setup, i64::MIN, i64::MAX, false);
    counter.spill_to(out);
    let wrote = |counter: &mut Counter<'_>| match counter.sink_error.take() {
        Some(e) => Err(Error::from(e)),
        None => Ok(()),
    };
    let fed = if inputs.len() == 1 {
        let path = &paths[0];
        match &mut inputs[0] {
            Input::Bam(bam) => crate::bam::scan(bam, |r, _| {
                if setup.keeps(r) {
                    counter.add(0, r).map_err(|e| count_error(e, path))?;
                    wrote(&mut counter)?;
                }
                Ok(())
            })
            .map(|_| ()),
            Input::Stream(stream) => stream.for_each_record(|r| {
                if setup.keeps(r) {
                    counter.add(0, r).map_err(|e| count_error(e, path))?;
                    wrote(&mut counter)?;
                }
                Ok::<(), Error>(())
            }),
            Input::Cram(cram) => cram.for_each_record(|r| {
                if setup.keeps(r) {
                    counter.add(0, r).map_err(|e| count_error(e, path))?;
                    wrote(&mut counter)?;
                }
                Ok::<(), Error>(())
            }),
            Input::Sam(sam) => {
                // Positions past 2^31 are read, as samtools depth reads them.
                sam.set_positions(crate::sam::Positions::Wide);
                counter.wide_positions = true;
                sam.for_each_record(|r| {
                    if setup.keeps(&r) {
                        counter.add(0, &r).map_err(|e| count_error(e, path))?;
                        wrote(&mut counter)?;
                    }
                    Ok::<(), Error>(())
                })
                .map_err(|e| match e {
                    Error::Sam(e) => Error::Sam(e).with_path(path),
                    e => e,
                })
            }
        }
    } else {
        let mut sources = Vec::with_capacity(inputs.len());
        for (input, path) in inputs.iter_mut().zip(paths) {
            sources.push(match input {
                Input::Bam(bam) => Source::Bam { reader: bam.records()?, path: path.as_path() },
                Input::Stream(stream) => Source::Stream { stream: &mut **stream },
                Input::Cram(cram) => Source::Cram { cram: &mut **cram },
                Input::Sam(sam) => {
                    let n_ref = sam.header().references.len();
                    Source::Sam { sam: &mut **sam, batch: Vec::new(), at: 0, n_ref, path: path.as_path() }
                }
            });
        }
        merge(setup, &mut counter, &mut sources, paths)
    };
    if fed.is_ok() {
        for (input, path) in inputs.iter_mut().zip(paths) {
            super::warn_after_reading(input, path, report);
        }
    }
    finish(counter, fed)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, scratch, Kept};
    use super::*;

    fn depth(inputs: &[PathBuf], options: &DepthOptions) -> Vec<u8> {
        let mut out = Vec::new();
        depth_to(inputs, options, &mut out, &Kept::default()).unwrap();
        out
    }

    #[test]
    fn windows_at_any_size_and_thread_count_equal_one_pass() {
        let dir = scratch("depth");
        let bare = dir.join("bare.bam");
        std::fs::copy(data("small.bam"), &bare).unwrap();
        for all_positions in [0, 1, 2] {
            let base = DepthOptions { all_positions, count_deletions: all_positions == 1, ..Default::default() };
            let one_pass = depth(&[bare.clone()], &base);
            assert!(one_pass.len() > 100_000);
            for (threads, window_bases) in [(1, 1 << 20), (2, 1000), (3, 777)] {
                let options = DepthOptions { threads: Some(threads), window_bases, ..base.clone() };
                assert!(
                    depth(&[data("small.bam")], &options) == one_pass,
                    "-a x{all_positions}, {threads} threads, windows of {window_bases}"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The columns are the text's rows, whatever the options.
    #[test]
    fn columns_are_the_rows_of_the_text() {
        let small = data("small.bam");
        let cases = [
            (vec![small.clone()], DepthOptions::default()),
            (vec![small.clone()], DepthOptions { all_positions: 2, window_bases: 777, threads: Some(2), ..Default::default() }),
            (vec![small.clone(), small.clone()], DepthOptions { all_positions: 1, ..Default::default() }),
            (vec![small.clone()], DepthOptions { region: Some("chr1:1,000-60,000".into()), remove_overlaps: true, ..Default::default() }),
        ];
        for (inputs, options) in cases {
            let text = String::from_utf8(depth(&inputs, &options)).unwrap();
            let columns = depth_columns(&inputs, &options, &Kept::default()).unwrap();
            let n = inputs.len();
            let mut rows = Vec::new();
            for (i, (&tid, &pos)) in columns.tid.iter().zip(&columns.pos).enumerate() {
                let depths: Vec<String> = columns.depth[i * n..(i + 1) * n].iter().map(u32::to_string).collect();
                rows.push(format!("{}\t{}\t{}\n", columns.references[tid as usize], pos + 1, depths.join("\t")));
            }
            assert!(text.len() > 10_000, "{options:?}: too few rows to compare");
            assert!(rows.concat() == text, "{options:?}");
        }
    }

    #[test]
    fn a_region_needs_an_index_and_names_the_file() {
        let dir = scratch("depth-region");
        let bare = dir.join("bare.bam");
        std::fs::copy(data("small.bam"), &bare).unwrap();
        let options = DepthOptions { region: Some("chr1:1-100".into()), ..Default::default() };
        let err = depth_to(&[bare.clone()], &options, &mut Vec::new(), &Kept::default()).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: cannot load index", bare.display())), "{err}");
        let out = dir.join("out.tsv");
        assert!(depth_file(&[bare], &out, &options, &Kept::default()).is_err());
        assert!(!out.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
