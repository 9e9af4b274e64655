//! `depth`: samtools depth, through the indexes in parallel windows when
//! every input is an indexed BAM, or (for a region) an indexed BAM or
//! bgzipped SAM, and `-s` is not asked for; else in one pass over the
//! inputs in order.

use super::{find_index, warn_if_truncated, with_threads, Report};
use crate::bam::{BamFile, RecordReader, RecordRef};
use crate::depth::{header_line, write_zero_rows, CountError, Counter, DepthOptions, Piece, RowText, Setup};
use crate::index::Index;
use crate::input::{self, Input};
use crate::output::TempOutput;
use crate::region::sam::{SamGzFile, SamRegionReader};
use crate::region::{BedFilter, Region, RegionReader, RegionSyntax};
use crate::sam::SamReader;
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
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("depth needs at least one input".into()));
    }
    let bed = options.bed.as_deref().map(BedFilter::read).transpose()?;
    with_threads(options.threads, || {
        let mut opened = Vec::with_capacity(inputs.len());
        for path in inputs {
            let cram = crate::cram::CramOptions { reference: options.reference.clone(), ..Default::default() };
            let input = input::open_with(path, &cram)?;
            match &input {
                Input::Bam(bam) => warn_if_truncated(bam, report),
                Input::Cram(cram) => super::warn_if_cram_truncated(cram, report),
                _ => {}
            }
            opened.push(input);
        }
        let refs = &opened[0].header().references;
        for (input, path) in opened.iter().zip(inputs).skip(1) {
            let other = &input.header().references;
            if other.len() != refs.len() || other.iter().zip(refs).any(|(a, b)| a.name != b.name) {
                return Err(Error::InvalidArgument(format!(
                    "its references differ from those of {} (depth needs inputs of one reference)",
                    inputs[0].display()
                ))
                .with_path(path));
            }
        }
        let lengths: Vec<i64> = refs.iter().map(|r| i64::from(r.len)).collect();
        let region = match &options.region {
            // samtools depth reads -r with sam_itr_querys; `.` (the whole
            // file) gives it no rows, as `*` does.
            Some(text) => match Region::parse_samtools_with(
                text,
                refs.len(),
                |name| refs.iter().position(|r| r.name.as_bytes() == name).map(|i| i as i32),
                RegionSyntax::Query,
            )
            .as_deref()
            {
                Some(&[region]) => Some(region),
                Some(_) => Some(Region::unplaced()),
                None => return Err(Error::InvalidArgument(format!("cannot parse region {text:?}"))),
            },
            None => None,
        };
        // A region is read through the indexes; without one, they speed up
        // a whole-file count.
        let mut indexes: Vec<Option<Index>> = Vec::with_capacity(opened.len());
        // A CRAM's region is read by htslib's iterator on its .crai (with
        // -X, the named one).
        let mut cram_queries: Vec<Option<crate::cram::CramQuery>> = Vec::with_capacity(opened.len());
        let mut sam_files: Vec<Option<SamGzFile>> = Vec::with_capacity(opened.len());
        for (i, (input, path)) in opened.iter().zip(inputs).enumerate() {
            let cram_query = match input {
                Input::Cram(_) if region.is_some() => {
                    let cram = crate::cram::CramOptions { reference: options.reference.clone(), ..Default::default() };
                    let named = options.indexes.as_ref().map(|named| named[i].as_path());
                    crate::cram::CramQuery::open(path, &cram, named)?
                }
                _ => None,
            };
            let index = match input {
                // -X: samtools loads the named index only for -r.
                Input::Bam(bam) if region.is_some() && options.indexes.is_some() => {
                    let named = &options.indexes.as_ref().expect("checked")[i];
                    let index = super::load_index(bam, named)?;
                    super::verify_index(bam, &index, false).map_err(|e| e.with_path(named))?;
                    Some(index)
                }
                Input::Bam(_) if options.indexes.is_some() => None,
                Input::Bam(bam) if region.is_some() => find_index(bam, report)?,
                // A whole-file count: through an index only if it
                // describes the whole file, else sequentially.
                Input::Bam(bam) => super::covering_index(bam, report),
                _ => None,
            };
            // A bgzipped SAM's region is read through its CSI or BAI.
            let (index, sam_file) = match input {
                Input::Sam(_) if region.is_some() => match SamGzFile::open_for_regions(path)? {
                    Some(sam) => {
                        let index = match &options.indexes {
                            Some(named) => {
                                let index = super::load_index(&sam, &named[i])?;
                                super::verify_index(&sam, &index, false).map_err(|e| e.with_path(&named[i]))?;
                                Some(index)
                            }
                            None => find_index(&sam, report)?,
                        };
                        (index, Some(sam))
                    }
                    None => (None, None),
                },
                _ => (index, None),
            };
            sam_files.push(sam_file);
            let queried = cram_query.is_some();
            cram_queries.push(cram_query);
            if region.is_some() && index.is_none() && !queried {
                return Err(Error::Message(
                    "cannot load index (depth -r reads a BAM, CRAM or bgzipped SAM through its index: fasthts index it first)".into(),
                )
                .with_path(path));
            }
            indexes.push(index);
        }
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
        };
        if region.is_some_and(|r| r.ref_id < 0) {
            // Unplaced reads have no depth.
            return Ok(());
        }
        // Indexed BAMs and bgzipped SAMs (the latter for a region) are
        // counted in parallel windows.
        let windowed: Vec<Option<Windowed<'_>>> = opened
            .iter()
            .zip(&indexes)
            .zip(&sam_files)
            .map(|((input, index), sam)| match (input, index, sam) {
                (Input::Bam(bam), Some(index), _) => Some(Windowed::Bam(bam, index)),
                (_, Some(index), Some(sam)) => Some(Windowed::SamGz(sam, index)),
                _ => None,
            })
            .collect();
        if cram_queries.iter().any(Option::is_some) || (sam_files.iter().any(Option::is_some) && options.remove_overlaps) {
            let sources = windowed.iter().zip(cram_queries).map(|(windowed, query)| match (windowed, query) {
                (Some(windowed), _) => RegionInput::Indexed(*windowed),
                (None, Some(query)) => RegionInput::Cram(query),
                (None, None) => unreachable!("every input of a region has an index"),
            });
            return region_pass(&setup, sources.collect(), inputs, out);
        }
        let windowed: Option<Vec<Windowed<'_>>> = windowed.into_iter().collect();
        match windowed {
            Some(windowed) if !options.remove_overlaps => by_windows(&setup, &windowed, inputs, out),
            Some(windowed) => {
                let bams = windowed
                    .into_iter()
                    .map(|w| match w {
                        Windowed::Bam(bam, index) => (bam, Some(index)),
                        Windowed::SamGz(..) => unreachable!("-s over a bgzipped SAM is a region pass"),
                    })
                    .collect();
                one_pass(&setup, bams, inputs, out)
            }
            None => {
                // Reading takes the inputs: the references are copied off
                // the first.
                let Setup { options, names, lengths, bed, region, n_files } = setup;
                let setup = Setup { options, names: std::borrow::Cow::Owned(names.into_owned()), lengths, bed, region, n_files };
                let mut sources = Vec::with_capacity(opened.len());
                for input in opened {
                    sources.push(input);
                }
                one_pass_inputs(&setup, sources, inputs, out, report)
            }
        }
    })
}

/// An indexed BAM or bgzipped SAM: counted in parallel windows, or read
/// over the region in one pass ([`RegionInput`]).
#[derive(Clone, Copy)]
enum Windowed<'a> {
    Bam(&'a BamFile, &'a Index),
    SamGz(&'a SamGzFile, &'a Index),
}

impl<'a> Windowed<'a> {
    fn index(&self) -> &'a Index {
        match self {
            Windowed::Bam(_, index) | Windowed::SamGz(_, index) => index,
        }
    }

    /// Its records overlapping `[beg, end)` of `tid`.
    fn overlap(&self, tid: i32, beg: i64, end: i64) -> Result<Source<'a>, Error> {
        Ok(match *self {
            Windowed::Bam(bam, index) => {
                Source::Overlap { reader: RegionReader::query(bam, index, overlapping(tid, end), beg)?, from: beg, path: bam.path() }
            }
            Windowed::SamGz(sam, index) => {
                Source::SamOverlap { reader: SamRegionReader::query(sam, index, overlapping(tid, end), beg)?, from: beg }
            }
        })
    }
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
    let width = setup.options.window_bases.clamp(1, i64::MAX as u64) as i64;
    let tids: Vec<i32> = match setup.region {
        Some((tid, _, _)) => vec![tid],
        None => (0..setup.names.len() as i32).collect(),
    };
    let mut windows = Vec::new();
    for tid in tids {
        let (lo, hi) = match setup.region {
            Some((_, beg, end)) => (beg, end),
            None => (i64::MIN, i64::MAX),
        };
        let cut_below = hi.min(setup.lengths[tid as usize]);
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

/// The scope of a query for the records of `tid` that overlap a window
/// ending at `end`: those that start before `end`, read from the index's
/// offset for the window's start, which lies before every read
/// overlapping it.
fn overlapping(tid: i32, end: i64) -> Region {
    Region { ref_id: tid, start: i64::MIN, end }
}

/// Counts the windows in parallel and writes their rows in order.
fn by_windows(setup: &Setup, inputs: &[Windowed<'_>], paths: &[PathBuf], out: &mut (dyn Write + Send)) -> Result<(), Error> {
    let mut windows = plan_windows(setup, inputs[0].index());
    let options = &setup.options;
    if options.all_positions == 0 {
        // A reference without records in any index prints nothing without
        // -a: of a draft assembly's 600,000 contigs, most.
        windows.retain(|&(tid, _, _)| inputs.iter().any(|input| input.index().start_offset(tid as usize, 0).is_some()));
    }
    // With -a (whole file) an empty window is printed only if its
    // reference has reads elsewhere: known when gathering.
    let deferred = options.all_positions == 1 && setup.region.is_none();
    let mut gather = Gather { tid: -1, has_reads: false, pending: Vec::new(), rows: RowText::default(), zeros: Vec::new() };
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
            if let [Windowed::Bam(bam, index)] = inputs {
                let scope = overlapping(tid, end);
                // No span: the index has no records there.
                if let Some((start, following)) = crate::region::query_span(*bam, index, scope, beg) {
                    let reader = RegionReader::reuse(slot, bam, scope, start, following)?;
                    let mut failed = None;
                    let read = reader.for_each_record(|r| {
                        if failed.is_none() && r.end_pos() > overlap_from && setup.keeps(r) {
                            if let Err(e) = counter.add(0, r) {
                                failed = Some(e);
                            }
                        }
                    });
                    if read.is_err() {
                        // A reader that failed is not read on.
                        *slot = None;
                    }
                    read.map_err(|e| Error::from(e).with_path(bam.path()))?;
                    if let Some(e) = failed {
                        return Err(count_error(e, &paths[0]));
                    }
                }
            } else {
                let mut sources = Vec::with_capacity(inputs.len());
                for input in inputs {
                    sources.push(input.overlap(tid, beg, end)?);
                }
                merge(setup, &mut counter, &mut sources, paths)?;
            }
            counter.finish_window();
            piece.had_reads = counter.had_reads;
            piece.text = std::mem::take(&mut counter.out);
            if !piece.had_reads && options.all_positions > 0 && !deferred {
                let len = setup.lengths[tid as usize];
                write_zero_rows(setup, tid, beg.max(0), end.min(len), &mut RowText::default(), &mut piece.text);
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

/// An input of a region read in one pass: an indexed BAM or bgzipped
/// SAM, or a CRAM queried through its .crai.
enum RegionInput<'a> {
    Indexed(Windowed<'a>),
    Cram(crate::cram::CramQuery),
}

/// The region of `setup` over inputs some of which are CRAM: one pass,
/// the inputs merged by position.
fn region_pass(setup: &Setup, inputs: Vec<RegionInput<'_>>, paths: &[PathBuf], out: &mut (dyn Write + Send)) -> Result<(), Error> {
    let Some((tid, beg, end)) = setup.region else { return Err(Error::InvalidArgument("no region to read".into())) };
    let mut counter = Counter::new(setup, beg, end, true);
    counter.spill_to(out);
    let mut sources = Vec::with_capacity(inputs.len());
    for input in inputs {
        sources.push(match input {
            RegionInput::Indexed(windowed) => windowed.overlap(tid, beg, end)?,
            RegionInput::Cram(mut query) => {
                query.query(tid, beg, end)?;
                Source::CramRegion { query }
            }
        });
    }
    let fed = merge(setup, &mut counter, &mut sources, paths);
    finish(counter, fed)
}

/// A stream of the records that count, for merging several inputs.
enum Source<'a> {
    /// A CRAM region, read by htslib's iterator.
    CramRegion { query: crate::cram::CramQuery },
    /// Records of a window overlapping `[from, ..)`.
    Overlap { reader: RegionReader<'a>, from: i64, path: &'a Path },
    /// Records of a bgzipped SAM's region overlapping `[from, ..)` (its
    /// errors name it).
    SamOverlap { reader: SamRegionReader<'a>, from: i64 },
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
    /// Copies the next record that counts into `head`; false at the end.
    fn pull(&mut self, setup: &Setup, head: &mut Vec<u8>) -> Result<bool, Error> {
        let mut keep = |r: &RecordRef<'_>, from: i64| {
            if r.end_pos() > from && setup.keeps(r) {
                head.clear();
                head.extend_from_slice(r.as_bytes());
                true
            } else {
                false
            }
        };
        match self {
            Source::Overlap { reader, from, path } => loop {
                match reader.next_record().map_err(|e| Error::from(e).with_path(&*path))? {
                    None => return Ok(false),
                    Some(r) => {
                        if keep(&r, *from) {
                            return Ok(true);
                        }
                    }
                }
            },
            Source::SamOverlap { reader, from } => loop {
                match reader.next_record()? {
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
            Source::CramRegion { query } => loop {
                match query.next_record()? {
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
        live.push(source.pull(setup, head)?);
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
        live[i] = sources[i].pull(setup, &mut heads[i])?;
    }
}

/// One pass over indexed BAMs in order (`-s`), through the region's
/// records when there is one.
fn one_pass(setup: &Setup, bams: Vec<(&BamFile, Option<&Index>)>, paths: &[PathBuf], out: &mut (dyn Write + Send)) -> Result<(), Error> {
    let (beg, end) = setup.region.map_or((i64::MIN, i64::MAX), |(_, b, e)| (b, e));
    let mut counter = Counter::new(setup, beg, end, setup.region.is_some());
    counter.spill_to(out);
    let mut sources = Vec::with_capacity(bams.len());
    for (bam, index) in &bams {
        sources.push(match (setup.region, index) {
            (Some((tid, b, e)), Some(index)) => {
                Source::Overlap { reader: RegionReader::query(bam, index, overlapping(tid, e), b)?, from: b, path: bam.path() }
            }
            _ => Source::Bam { reader: bam.records()?, path: bam.path() },
        });
    }
    let fed = merge(setup, &mut counter, &mut sources, paths);
    finish(counter, fed)
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
