//! Sorting on many machines: the steps `fasthts.dask.sort` runs as tasks,
//! each on whichever worker a cluster gives it, with files on a shared
//! filesystem between them, or (no shared filesystem) with the shuffle's
//! chunks and the sorted parts as bytes the cluster moves
//! ([`ShuffleTo::Memory`], [`sort_part_in_memory`], [`create_output_with`],
//! [`place_bytes`]). Inputs may be remote (`http(s)://`, `s3://`, `gs://`):
//! each task fetches the ranges it reads ([`SortInput::fetch_split`]).
//!
//! 1. [`plan_splits`]: each input BAM is cut into splits at BGZF block
//!    starts, found by their headers (no record is read); a CRAM input
//!    ([`SortInput::Cram`]) at container starts, from the container headers
//!    (its splits' first records are known, not guessed).
//! 2. [`sample_records`] on every split: a few records from a few places,
//!    from which [`choose_boundaries`] picks the records that bound each
//!    output part's key range.
//! 3. [`shuffle_split`] on every split: its records, in file order, each
//!    appended to the shuffle file of the part that owns its key. Where a
//!    split's first record starts is a guess ([`guess_entry`]); every split
//!    reports where its records ended, and the caller checks that each split
//!    began exactly there (and runs it again from there if not), so the
//!    guess can cost time but never a record.
//! 4. [`sort_part`] on every part: the part's shuffle files, in input order,
//!    through the one-machine sort into a BAM of its own. Ties keep input
//!    order: within a part, records arrive in input order.
//! 5. [`create_output`], [`place_part`] (on the workers) and
//!    [`finish_output`]: the output is the first part's header blocks, every
//!    part's record blocks and the EOF block, byte for byte — BGZF blocks
//!    concatenate, so nothing is compressed twice, and each worker copies
//!    its own part into place.

use super::key::prepare_for_minimiser;
use super::{sort_records, Comparator, RunReader, SortOptions, SortOrder, SortStats};
use crate::bam::{BamFile, Header, RecordRef};
use crate::bgzf::{Block, BlockReader, VirtualOffset, EOF_MARKER};
use crate::cram::{Container, CramOptions, CramReader};
use crate::index::{Index, IndexBuilder, IndexFormat, IndexSegment};
use crate::Error;
use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The records of one input that start in its BGZF blocks from offset
/// `start` (a block's first byte) up to `end` (the next split's `start`,
/// or the end of the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// Compressed offset of the split's first block.
    pub start: u64,
    /// Compressed offset just past its last block.
    pub end: u64,
}

/// How far a search for a block start looks past the point it starts at:
/// a block is at most 64 KiB, so one starts within that.
const BLOCK_SEARCH: u64 = 1 << 16;

/// Opens an input of the distributed sort: a BGZF-compressed BAM file
/// (splits are found in the file by their block headers; a SAM or a stream
/// has none), with one error naming the path otherwise. A CRAM input is
/// opened with [`SortInput::open`].
pub fn open_input(path: &Path) -> Result<BamFile, Error> {
    match SortInput::open(path, None)? {
        SortInput::Bam(bam) => Ok(bam),
        SortInput::Cram(_) => Err(Error::Message("CRAM, where a BGZF-compressed BAM is needed".into()).with_path(path)),
    }
}

/// An input of the distributed sort, opened by every task that reads it.
pub enum SortInput {
    /// A BGZF-compressed BAM file, split at block starts.
    Bam(BamFile),
    /// A CRAM file, split at container starts and decoded by htslib as the
    /// one-machine sort decodes it ([`crate::input::open_with`]).
    Cram(CramInput),
}

/// A CRAM input: its header and its containers (from their headers).
pub struct CramInput {
    path: PathBuf,
    options: CramOptions,
    header: Header,
    containers: Vec<Container>,
    len: u64,
    missing_eof: bool,
}

impl SortInput {
    /// Opens the BAM or CRAM file at `path` (a CRAM's records decoded with
    /// the FASTA `reference`, else as htslib finds the reference, as
    /// `fasthts sort --reference` does), with one error naming the path for
    /// anything else (a SAM, a stream).
    pub fn open(path: &Path, reference: Option<&Path>) -> Result<SortInput, Error> {
        if let Some(url) = crate::input::remote_url(path) {
            // A remote BAM: its header and last bytes fetched now, the
            // ranges a task reads before it reads them.
            let (object, shown) = crate::input::open_remote(url)?;
            let mut head = vec![0u8; (object.len() as usize).min(crate::format::SNIFF_BYTES)];
            object.read_range(0, &mut head).map_err(|e| Error::from(e).with_path(&shown))?;
            let format = crate::format::recognise(&head);
            crate::input::check_supported(format, &shown)?;
            if format != crate::input::Format::Bam(fasthts_io::compression::Compression::Bgzf) {
                return Err(Error::Message(
                    "the distributed sort reads remote BGZF-compressed BAM files only (sort a remote CRAM or SAM on one machine)".into(),
                )
                .with_path(&shown));
            }
            return Ok(SortInput::Bam(BamFile::open_remote(&shown, object, &head)?));
        }
        let peeked = crate::input::peek(path)?;
        let format = peeked.format();
        crate::input::check_supported(format, path)?;
        let regular = peeked.is_regular_file() && path.as_os_str() != "-";
        if format == crate::input::Format::Cram && regular {
            let options = CramOptions { reference: reference.map(Path::to_path_buf), ..CramOptions::default() };
            let reader = CramReader::open(path, &options)?;
            let (header, missing_eof) = (reader.header().clone(), reader.missing_eof_container());
            let file = File::open(path).map_err(|e| Error::from(e).with_path(path))?;
            let len = file.metadata().map_err(|e| Error::from(e).with_path(path))?.len();
            // A cut-off container is damaged data, said as the one-machine sort says it.
            let containers = crate::cram::containers(&file).map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => Error::Message(e.to_string()).with_path(path),
                _ => Error::from(e).with_path(path),
            })?;
            return Ok(SortInput::Cram(CramInput { path: path.to_path_buf(), options, header, containers, len, missing_eof }));
        }
        if format != crate::input::Format::Bam(fasthts_io::compression::Compression::Bgzf) || !regular {
            return Err(Error::Message(
                "the distributed sort reads BGZF-compressed BAM or CRAM files (sort SAM or a stream on one machine)".into(),
            )
            .with_path(path));
        }
        Ok(SortInput::Bam(BamFile::open(path)?))
    }

    /// The input's header, as a BAM header.
    pub fn header(&self) -> &Header {
        match self {
            SortInput::Bam(bam) => bam.header(),
            SortInput::Cram(cram) => &cram.header,
        }
    }

    /// Whether the file lacks its end-of-file marker (BGZF's EOF block, or
    /// CRAM's EOF container): probably truncated.
    pub fn missing_eof_marker(&self) -> bool {
        match self {
            SortInput::Bam(bam) => !bam.has_eof_marker(),
            SortInput::Cram(cram) => cram.missing_eof,
        }
    }

    /// The input cut into about `pieces` splits of similar compressed size
    /// ([`plan_splits`] for a BAM; whole containers for a CRAM). Of a
    /// remote BAM, only the bytes where block starts are looked for are
    /// fetched.
    pub fn splits(&mut self, pieces: usize) -> Result<Vec<Split>, Error> {
        match self {
            SortInput::Bam(bam) => {
                if bam.is_remote() {
                    let targets = split_targets(bam, pieces);
                    bam.prefetch(&targets.iter().map(|&t| (t, t.saturating_add(SEARCH_FETCH))).collect::<Vec<_>>())?;
                }
                Ok(plan_splits(bam, pieces))
            }
            SortInput::Cram(cram) => Ok(cram.splits(pieces)),
        }
    }

    /// Fetches what reading `split` needs of a remote BAM (nothing for a
    /// local input): its bytes, and `past` bytes after it, where its last
    /// record may end.
    pub fn fetch_split(&mut self, split: Split, past: u64) -> Result<(), Error> {
        match self {
            SortInput::Bam(bam) if bam.is_remote() => bam.prefetch(&[(split.start, split.end.saturating_add(past))]),
            _ => Ok(()),
        }
    }

    /// Whether the input is remote and `past` bytes after `split` do not
    /// reach its end (a record that ran past them can be fetched further).
    fn can_fetch_past(&self, split: Split, past: u64) -> bool {
        matches!(self, SortInput::Bam(bam) if bam.is_remote() && split.end.saturating_add(past) < bam.bytes().len() as u64)
    }

    /// [`SortInput::shuffle_to`] of `split` from `entry` (`None`: guessed,
    /// [`SortInput::entry`]; `None` is returned when no guess holds),
    /// fetching the split first when the input is remote: with a margin
    /// after it, grown (and the split read again) while its last record
    /// runs past what was fetched.
    pub fn fetch_and_shuffle(
        &mut self,
        split: Split,
        entry: Option<VirtualOffset>,
        boundaries: &[Vec<u8>],
        cmp: &Comparator,
        to: ShuffleTo<'_>,
    ) -> Result<Option<ShuffleOutput>, Error> {
        let mut past = FETCH_PAST_SPLIT;
        loop {
            self.fetch_split(split, past)?;
            let entry = match entry {
                Some(entry) => entry,
                None => match self.entry(split)? {
                    Some(entry) => entry,
                    None => return Ok(None),
                },
            };
            match self.shuffle_to(split, entry, boundaries, cmp, to) {
                Err(_) if self.can_fetch_past(split, past) => past = past.saturating_mul(8),
                done => return done.map(Some),
            }
        }
    }

    /// Where `split`'s first record starts: [`guess_entry`] for a BAM; a
    /// CRAM split's first container, exactly.
    pub fn entry(&self, split: Split) -> Result<Option<VirtualOffset>, Error> {
        match self {
            SortInput::Bam(bam) => guess_entry(bam, split),
            SortInput::Cram(_) => Ok(Some(container_offset(split.start))),
        }
    }

    /// [`sample_records`] of either kind of input (of a remote BAM, the
    /// bytes at the places sampled are fetched first).
    pub fn sample(&mut self, split: Split, count: usize, cmp: &Comparator) -> Result<Vec<Vec<u8>>, Error> {
        match self {
            SortInput::Bam(bam) => {
                if bam.is_remote() {
                    let places = sample_targets(split);
                    bam.prefetch(&places.iter().map(|&t| (t, t.saturating_add(SAMPLE_FETCH))).collect::<Vec<_>>())?;
                }
                sample_records(bam, split, count, cmp)
            }
            SortInput::Cram(cram) => cram.sample(split, count, cmp),
        }
    }

    /// [`shuffle_split`] of either kind of input.
    pub fn shuffle(
        &self,
        split: Split,
        entry: VirtualOffset,
        boundaries: &[Vec<u8>],
        cmp: &Comparator,
        outputs: &[PathBuf],
    ) -> Result<Shuffled, Error> {
        self.shuffle_to(split, entry, boundaries, cmp, ShuffleTo::Files(outputs)).map(|(done, _)| done)
    }

    /// [`shuffle_split_to`] of either kind of input.
    pub fn shuffle_to(
        &self,
        split: Split,
        entry: VirtualOffset,
        boundaries: &[Vec<u8>],
        cmp: &Comparator,
        to: ShuffleTo<'_>,
    ) -> Result<ShuffleOutput, Error> {
        match self {
            SortInput::Bam(bam) => shuffle_split_to(bam, split, entry, boundaries, cmp, to),
            SortInput::Cram(cram) => cram.shuffle(split, entry, boundaries, cmp, to),
        }
    }
}

/// Bytes fetched at each place a block start is looked for: the search
/// ([`next_block_start`] looks up to 64 KiB on, then checks the three
/// blocks after the one it finds).
const SEARCH_FETCH: u64 = BLOCK_SEARCH + 4 * crate::bgzf::MAX_BLOCK_SIZE as u64;

/// Bytes fetched at each place [`sample_records`] reads from: the block
/// search, the bytes [`guess_entry`] inflates, and the few records read.
const SAMPLE_FETCH: u64 = 1 << 20;

/// Bytes fetched past a split's end at first (its last record may run
/// into the blocks after it); multiplied by 8 while a record runs further.
const FETCH_PAST_SPLIT: u64 = 4 * crate::bgzf::MAX_BLOCK_SIZE as u64;

/// Where [`plan_splits`] looks for the block starts of `pieces` splits of
/// `bam`'s records.
fn split_targets(bam: &BamFile, pieces: usize) -> Vec<u64> {
    let first = bam.first_record_offset().compressed();
    let end = records_end(bam);
    let pieces = pieces.max(1) as u64;
    (1..pieces).map(|k| first + end.saturating_sub(first) * k / pieces).collect()
}

/// Where [`sample_records`] looks for block starts in `split`.
fn sample_targets(split: Split) -> Vec<u64> {
    (0..SAMPLE_PLACES).map(|k| split.start + (split.end - split.start) * k / SAMPLE_PLACES).collect()
}

/// What a shuffle gives: its report, and with [`ShuffleTo::Memory`] the
/// parts' buffers (none with files).
pub type ShuffleOutput = (Shuffled, Vec<Vec<u8>>);

/// Where a shuffle sends each part's records.
#[derive(Clone, Copy, Debug)]
pub enum ShuffleTo<'a> {
    /// To one file per part (created, or emptied when the task runs
    /// again), on a filesystem the part's task can read.
    Files(&'a [PathBuf]),
    /// To one buffer per part (this many parts), returned: the cluster
    /// moves them to the part's task.
    Memory(usize),
}

/// A CRAM container's byte offset as the virtual offset a split's entry
/// and exit are given in.
fn container_offset(offset: u64) -> VirtualOffset {
    VirtualOffset::new(offset, 0).expect("a file offset")
}

impl CramInput {
    /// Runs of whole containers of similar size, about `pieces` of them;
    /// each split ends where the next begins, the last at the file's end.
    fn splits(&self, pieces: usize) -> Vec<Split> {
        let Some(first) = self.containers.first() else { return Vec::new() };
        let last = self.containers.last().expect("not empty");
        let (from, to) = (first.offset, last.offset + last.size);
        let pieces = pieces.max(1) as u64;
        let mut starts = vec![first.offset];
        for c in &self.containers[1..] {
            let k = starts.len() as u64;
            if k < pieces && c.offset >= from + (to - from) * k / pieces {
                starts.push(c.offset);
            }
        }
        let ends = starts.iter().skip(1).copied().chain([self.len]);
        starts.iter().zip(ends).map(|(&start, end)| Split { start, end }).collect()
    }

    /// The containers that start in `split`.
    fn containers_of(&self, split: Split) -> &[Container] {
        let a = self.containers.partition_point(|c| c.offset < split.start);
        let b = self.containers.partition_point(|c| c.offset < split.end);
        &self.containers[a..b]
    }

    /// A reader of its own at the container at `offset`.
    fn reader_at(&self, offset: u64) -> Result<CramReader, Error> {
        let mut reader = CramReader::open(&self.path, &self.options)?;
        reader.seek_to_container(offset)?;
        Ok(reader)
    }

    /// Calls `f` on the `records` records from the container at `offset` on.
    fn read(&self, offset: u64, records: u64, mut f: impl FnMut(&RecordRef<'_>) -> Result<(), Error>) -> Result<(), Error> {
        let mut reader = self.reader_at(offset)?;
        while reader.records_read() < records {
            match reader.next_record()? {
                Some(r) => f(&r)?,
                None => {
                    return Err(Error::Message(format!(
                        "CRAM data ends before the records its container headers announce (container at byte {offset})"
                    ))
                    .with_path(&self.path))
                }
            }
        }
        Ok(())
    }

    /// Up to `count` records from a few containers spread over `split`
    /// (each opened reader decodes from its container on: few places keep
    /// the sample cheap).
    fn sample(&self, split: Split, count: usize, cmp: &Comparator) -> Result<Vec<Vec<u8>>, Error> {
        let containers = self.containers_of(split);
        let places = (SAMPLE_PLACES as usize).min(containers.len());
        let per_place = count.div_ceil(places.max(1));
        let mut samples = Vec::with_capacity(count);
        let mut scratch = Vec::new();
        for k in 0..places {
            let c = &containers[k * containers.len() / places];
            self.read(c.offset, c.records.min(per_place as u64), |r| {
                samples.push(prepare(cmp, r.as_bytes(), &mut scratch).to_vec());
                Ok(())
            })?;
        }
        samples.truncate(count);
        Ok(samples)
    }

    /// Every record of `split`'s containers to its part's shuffle file.
    fn shuffle(
        &self,
        split: Split,
        entry: VirtualOffset,
        boundaries: &[Vec<u8>],
        cmp: &Comparator,
        to: ShuffleTo<'_>,
    ) -> Result<ShuffleOutput, Error> {
        if entry != container_offset(split.start) {
            return Err(Error::Message(format!("no CRAM container starts at {entry:?}, the split's start")).with_path(&self.path));
        }
        let mut shuffler = Shuffler::create(to)?;
        let records = self.containers_of(split).iter().map(|c| c.records).sum();
        if records > 0 {
            self.read(split.start, records, |r| shuffler.push(r, boundaries, cmp))?;
        }
        let exit = (split.end < self.len).then(|| container_offset(split.end));
        let (records, chunks) = shuffler.finish()?;
        Ok((Shuffled { entry, exit, records }, chunks))
    }
}

/// Records sent, each in input order, to the shuffle file (or buffer) of
/// the part that owns it.
struct Shuffler<'a> {
    sinks: Vec<Sink>,
    outputs: &'a [PathBuf],
    scratch: Vec<u8>,
    records: u64,
}

/// One part's shuffle output.
enum Sink {
    File(BufWriter<File>),
    Memory(Vec<u8>),
}

impl<'a> Shuffler<'a> {
    /// Creates (or empties, when a task is run again) one file per part,
    /// or one buffer.
    fn create(to: ShuffleTo<'a>) -> Result<Shuffler<'a>, Error> {
        let (sinks, outputs) = match to {
            ShuffleTo::Files(outputs) => {
                let files = outputs
                    .iter()
                    .map(|p| {
                        File::create(p).map(|f| Sink::File(BufWriter::with_capacity(256 << 10, f))).map_err(|e| Error::from(e).with_path(p))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (files, outputs)
            }
            ShuffleTo::Memory(parts) => ((0..parts.max(1)).map(|_| Sink::Memory(Vec::new())).collect(), &[][..]),
        };
        Ok(Shuffler { sinks, outputs, scratch: Vec::new(), records: 0 })
    }

    /// Appends `r` (`block_size` and data) to its part's file or buffer.
    fn push(&mut self, r: &RecordRef<'_>, boundaries: &[Vec<u8>], cmp: &Comparator) -> Result<(), Error> {
        let p = if boundaries.is_empty() {
            0
        } else {
            part_of(&RecordRef::new_prevalidated(prepare(cmp, r.as_bytes(), &mut self.scratch)), boundaries, cmp)
        };
        let bytes = r.as_bytes();
        let size = (bytes.len() as u32).to_le_bytes();
        match &mut self.sinks[p] {
            Sink::File(out) => {
                out.write_all(&size).and_then(|()| out.write_all(bytes)).map_err(|e| Error::from(e).with_path(&self.outputs[p]))?
            }
            Sink::Memory(buffer) => {
                buffer.extend_from_slice(&size);
                buffer.extend_from_slice(bytes);
            }
        }
        self.records += 1;
        Ok(())
    }

    /// Flushes and syncs the files; the number of records sent, and the
    /// buffers (none for files).
    fn finish(self) -> Result<(u64, Vec<Vec<u8>>), Error> {
        let mut buffers = Vec::new();
        for (k, sink) in self.sinks.into_iter().enumerate() {
            match sink {
                Sink::File(f) => {
                    let p = &self.outputs[k];
                    f.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_data()).map_err(|e| Error::from(e).with_path(p))?
                }
                Sink::Memory(buffer) => buffers.push(buffer),
            }
        }
        Ok((self.records, buffers))
    }
}

/// Opens `inputs`, checks they can be sorted into `output` together, and
/// cuts each into about `pieces` splits: `(input's position, split)` in
/// input order. Several inputs are sorted as `samtools cat` would join
/// them: under the first one's header, so their reference lists (names
/// and lengths) must be the same. CRAM inputs are decoded with the FASTA
/// `reference` (see [`SortInput::open`]). The output is BAM: a name that
/// asks for SAM or CRAM (see [`super::OutputFormat::from_path`]) is refused
/// (a CRAM made of parts would not be the one-machine sort's bytes: its
/// containers and record counters run over the whole file). An input
/// without its end-of-file marker is reported, as the one-machine sort
/// reports it.
pub fn plan(
    inputs: &[PathBuf],
    output: &Path,
    pieces: usize,
    reference: Option<&Path>,
    report: &dyn crate::report::Report,
) -> Result<Vec<(usize, Split)>, Error> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument("no input to sort".into()));
    }
    let format = super::OutputFormat::from_path(output)?;
    if format != super::OutputFormat::Bam {
        return Err(Error::Message(format!(
            "the distributed sort writes BAM, not {}: sort to SAM or CRAM on one machine (fasthts sort), or name the output .bam",
            match format {
                super::OutputFormat::Cram => "CRAM",
                _ => "SAM",
            }
        ))
        .with_path(output));
    }
    crate::output::refuse_input_as_output(&[output], inputs)?;
    let mut splits = Vec::new();
    let mut first: Option<Header> = None;
    for (i, path) in inputs.iter().enumerate() {
        let mut input = SortInput::open(path, reference)?;
        if input.missing_eof_marker() {
            report.warning(crate::report::Warning::MissingEofMarker { path: path.clone() });
        }
        match &first {
            None => first = Some(input.header().clone()),
            Some(h) if h.references != input.header().references => {
                return Err(Error::Message(format!(
                    "its reference sequences differ from those of {}: inputs sorted together must have the same",
                    inputs[0].display()
                ))
                .with_path(path));
            }
            Some(_) => {}
        }
        splits.extend(input.splits(pieces)?.into_iter().map(|s| (i, s)));
    }
    Ok(splits)
}

/// The offset of the first BGZF block that starts at or after `from`: a
/// block header whose block is followed by another block header (or the
/// end of the file), twice over, so that compressed bytes that merely look
/// like a header are passed by. `None` if there is none before the end.
pub fn next_block_start(file: &[u8], from: u64) -> Option<u64> {
    let len = file.len() as u64;
    let is_chain = |p: u64| -> bool {
        let mut at = p;
        for _ in 0..3 {
            if at == len {
                return true;
            }
            match Block::parse(file, at) {
                Ok(b) => at = b.next_offset(),
                Err(_) => return false,
            }
        }
        true
    };
    let last = len.min(from.saturating_add(BLOCK_SEARCH + 1));
    (from..last).find(|&p| fasthts_io::compression::is_bgzf(&file[p as usize..]) && is_chain(p))
}

/// Where `bam`'s record blocks end: the EOF marker holds no records.
fn records_end(bam: &BamFile) -> u64 {
    let len = bam.bytes().len() as u64;
    if bam.has_eof_marker() {
        len - EOF_MARKER.len() as u64
    } else {
        len
    }
}

/// Cuts `bam` into about `pieces` splits of similar compressed size, at
/// block starts; the first begins at the block of the first record. An
/// empty file (header only) has no splits.
pub fn plan_splits(bam: &BamFile, pieces: usize) -> Vec<Split> {
    let file = bam.bytes();
    let first = bam.first_record_offset().compressed();
    let end = records_end(bam);
    if first >= end {
        return Vec::new();
    }
    let mut starts = vec![first];
    for target in split_targets(bam, pieces) {
        if let Some(p) = next_block_start(file, target) {
            if p > *starts.last().expect("not empty") && p < end {
                starts.push(p);
            }
        }
    }
    let ends = starts.iter().skip(1).copied().chain([file.len() as u64]);
    starts.iter().zip(ends).map(|(&start, end)| Split { start, end }).collect()
}

/// `offset` with a record boundary at a block's end written as the next
/// block's start (the form [`guess_entry`] gives), so offsets of the same
/// point compare equal.
pub fn at_block_start(bam: &BamFile, offset: VirtualOffset) -> VirtualOffset {
    match Block::parse(bam.bytes(), offset.compressed()) {
        Ok(b) if u32::from(offset.uncompressed()) == b.uncompressed_size => VirtualOffset::new(b.next_offset(), 0).unwrap_or(offset),
        _ => offset,
    }
}

/// Bytes inflated to test where records start: the split's first block and
/// enough after it for the records that begin in it.
const GUESS_BYTES: usize = 3 << 16;

/// Where the first record starting in `split`'s first block is, as far as
/// the bytes tell: the first offset in the block from which complete,
/// valid records (htslib's checks) follow one another to past the block's
/// end. The first split starts at the file's first record. `None` when no
/// offset passes (a record longer than the bytes tested, or none starting
/// in the block): the split must then start where the previous one ended.
pub fn guess_entry(bam: &BamFile, split: Split) -> Result<Option<VirtualOffset>, Error> {
    let first = bam.first_record_offset();
    if split.start <= first.compressed() {
        return Ok(Some(first));
    }
    let wrap = |e: crate::bgzf::BgzfError| Error::from(e).with_path(bam.path());
    let block = Block::parse(bam.bytes(), split.start).map_err(wrap)?;
    let start = VirtualOffset::new(split.start, 0).expect("a file offset");
    let mut blocks = BlockReader::with_batch_bytes(bam.bytes(), start, GUESS_BYTES).map_err(wrap)?;
    blocks.set_parallel(false);
    blocks.fill(GUESS_BYTES).map_err(wrap)?;
    let loaded = blocks.available();
    let block_len = block.uncompressed_size as usize;
    let n_ref = bam.header().references.len();
    let chains_past_block = |from: usize| -> bool {
        let mut at = from;
        while at < block_len {
            let Some(size) = loaded.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize) else {
                return false;
            };
            match loaded.get(at + 4..at + 4 + size) {
                Some(data) if RecordRef::new(data, n_ref).is_ok() => at += 4 + size,
                _ => return false,
            }
        }
        true
    };
    Ok((0..block_len).find(|&u| chains_past_block(u)).map(|u| VirtualOffset::new(split.start, u as u16).expect("within a block")))
}

/// The order's total comparison of two records (both prepared as the sort
/// prepares them: see [`prepare`]).
fn order(cmp: &Comparator, a: &RecordRef<'_>, b: &RecordRef<'_>) -> Ordering {
    cmp.key(a).cmp(&cmp.key(b)).then_with(|| cmp.compare(a, b))
}

/// `record` as the sort sees it, in `scratch`: minimiser order carries the
/// hash in some fields.
fn prepare<'s>(cmp: &Comparator, record: &[u8], scratch: &'s mut Vec<u8>) -> &'s [u8] {
    scratch.clear();
    scratch.extend_from_slice(record);
    if let SortOrder::Minimiser { kmer } = cmp.order() {
        prepare_for_minimiser(scratch, kmer);
    }
    scratch
}

/// Places in a split that [`sample_records`] reads from.
const SAMPLE_PLACES: u64 = 8;

/// Up to `count` records of `split`, from a few places spread over it,
/// each prepared for `cmp`'s order: what [`choose_boundaries`] chooses
/// from. A place whose first record cannot be found is left out (the
/// sample only balances the parts; it never decides where a record goes
/// wrongly).
pub fn sample_records(bam: &BamFile, split: Split, count: usize, cmp: &Comparator) -> Result<Vec<Vec<u8>>, Error> {
    let mut places: Vec<u64> =
        sample_targets(split).into_iter().filter_map(|t| next_block_start(bam.bytes(), t)).filter(|&s| s < split.end).collect();
    places.dedup();
    let per_place = count.div_ceil(places.len().max(1));
    let mut samples = Vec::with_capacity(count);
    let mut scratch = Vec::new();
    for start in places {
        let Some(entry) = guess_entry(bam, Split { start, end: split.end })? else { continue };
        let mut records = bam.records_from(entry)?;
        records.set_parallel(false);
        for _ in 0..per_place {
            match records.next_record() {
                Ok(Some(r)) => samples.push(prepare(cmp, r.as_bytes(), &mut scratch).to_vec()),
                // A guess that went wrong further on: what was read is kept.
                _ => break,
            }
        }
    }
    samples.truncate(count);
    Ok(samples)
}

/// The records (prepared, as [`sample_records`] gives them) that bound the
/// key ranges of `parts` output parts, chosen at even quantiles of the
/// samples: a record goes to the part after the last boundary not greater
/// than it ([`part_of`]). Fewer boundaries when samples repeat.
pub fn choose_boundaries(mut samples: Vec<Vec<u8>>, parts: usize, cmp: &Comparator) -> Vec<Vec<u8>> {
    fn rec(b: &[u8]) -> RecordRef<'_> {
        RecordRef::new_prevalidated(b)
    }
    samples.sort_by(|a, b| order(cmp, &rec(a), &rec(b)));
    let mut boundaries: Vec<Vec<u8>> = Vec::new();
    for k in 1..parts.max(1) {
        let candidate = &samples.get(samples.len() * k / parts).cloned();
        if let Some(c) = candidate {
            if boundaries.last().map_or(true, |last| order(cmp, &rec(last), &rec(c)) == Ordering::Less) {
                boundaries.push(c.clone());
            }
        }
    }
    boundaries
}

/// The part that owns `record` (prepared): records equal under the order
/// go to the same part, so ties stay in input order within it.
pub fn part_of(record: &RecordRef<'_>, boundaries: &[Vec<u8>], cmp: &Comparator) -> usize {
    boundaries.partition_point(|b| order(cmp, &RecordRef::new_prevalidated(b), record) != Ordering::Greater)
}

/// What [`shuffle_split`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shuffled {
    /// Where the split's first record started (block-start form).
    pub entry: VirtualOffset,
    /// Where the first record after the split starts (block-start form), or
    /// `None` when the split's records ran to the end of the file.
    pub exit: Option<VirtualOffset>,
    /// Records read.
    pub records: u64,
}

/// Appends each record of `split`, from `entry` on, to `outputs[p]` where
/// `p` is the part that owns it (see [`part_of`]), in file order. The
/// files are created (or emptied, when the task is run again) first, one
/// per part, each a run of raw records (`block_size` and data).
pub fn shuffle_split(
    bam: &BamFile,
    split: Split,
    entry: VirtualOffset,
    boundaries: &[Vec<u8>],
    cmp: &Comparator,
    outputs: &[PathBuf],
) -> Result<Shuffled, Error> {
    shuffle_split_to(bam, split, entry, boundaries, cmp, ShuffleTo::Files(outputs)).map(|(done, _)| done)
}

/// [`shuffle_split`] to files or to buffers ([`ShuffleTo`]); the buffers
/// (one per part, each a run of raw records) are returned.
pub fn shuffle_split_to(
    bam: &BamFile,
    split: Split,
    entry: VirtualOffset,
    boundaries: &[Vec<u8>],
    cmp: &Comparator,
    to: ShuffleTo<'_>,
) -> Result<ShuffleOutput, Error> {
    let mut shuffler = Shuffler::create(to)?;
    let entry = at_block_start(bam, entry);
    let mut records = bam.records_from(entry)?;
    records.set_soft_limit(split.end);
    let exit = loop {
        if !records.advance()? {
            break None;
        }
        let start = at_block_start(bam, records.record_start());
        if start.compressed() >= split.end {
            break Some(start);
        }
        shuffler.push(&records.current(), boundaries, cmp)?;
    };
    let (records, chunks) = shuffler.finish()?;
    Ok((Shuffled { entry, exit, records }, chunks))
}

/// The index segment of `split`'s records, from `entry` on (see
/// [`IndexSegment`]), and where the next split's first record starts
/// (`None` at the end of the file, with where reading stopped).
pub fn index_split(bam: &BamFile, split: Split, entry: VirtualOffset, format: IndexFormat) -> Result<(IndexSegment, Exit), Error> {
    let format = crate::index::format_for(bam.header(), format);
    let entry = at_block_start(bam, entry);
    let mut segment = IndexSegment::new(format, bam.header().references.len(), entry);
    let mut records = bam.records_from(entry)?;
    records.set_soft_limit(split.end);
    let wrap = |e: crate::index::IndexError| Error::from(e).with_path(bam.path());
    let exit = loop {
        if !records.advance()? {
            break Exit::End(records.record_start());
        }
        let start = at_block_start(bam, records.record_start());
        if start.compressed() >= split.end {
            break Exit::Next(start);
        }
        let r = records.current();
        let mapped = r.flag() & crate::bam::flags::UNMAPPED == 0;
        segment.push(r.ref_id(), i64::from(r.pos()), r.end_pos(), records.record_end(), mapped).map_err(wrap)?;
    };
    Ok((segment, exit))
}

/// Where a split's records ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The next split's first record starts here (block-start form).
    Next(VirtualOffset),
    /// The file ended; reading stopped here (what an index calls the end).
    End(VirtualOffset),
}

/// The index of `bam` from the segments of its splits, in file order, the
/// last ending the file at `end`: byte for byte what one pass builds.
pub fn join_index(bam: &BamFile, format: IndexFormat, segments: Vec<IndexSegment>, end: VirtualOffset) -> Result<Index, Error> {
    let format = crate::index::format_for(bam.header(), format);
    let wrap = |e: crate::index::IndexError| Error::from(e).with_path(bam.path());
    let mut builder = IndexBuilder::new(format, bam.header().references.len(), bam.first_record_offset());
    for segment in segments {
        builder.append(segment).map_err(wrap)?;
    }
    builder.finish(end).map_err(wrap)
}

/// Where a part's records lie in its BAM: the output takes bytes
/// `body_start..body_end` of each part (and the header blocks of one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// Offset of the first block after the header's.
    pub body_start: u64,
    /// Offset of the EOF marker block.
    pub body_end: u64,
    /// Records in the part.
    pub records: u64,
}

/// Sorts the records of `shuffled` (one part's shuffle files, in input
/// order) into the BAM `output` under `header`, as [`sort_records`] does
/// (`opts.index` is not used: parts are indexed together), and says where
/// its records lie.
pub fn sort_part(header: &Header, shuffled: &[PathBuf], opts: &SortOptions, output: &Path) -> Result<Part, Error> {
    let n_ref = header.references.len();
    let file = File::create(output).map_err(|e| Error::from(e).with_path(output))?;
    let feed = |push: &mut super::Push<'_>| -> Result<(), Error> {
        for path in shuffled {
            let mut run = RunReader::open(path, 1 << 20)?;
            while run.advance()? {
                let r = RecordRef::new(&run.record[4..], n_ref)
                    .map_err(|defect| Error::Message(format!("invalid record in shuffle file: {defect}")).with_path(path))?;
                push(&r)?;
            }
        }
        Ok(())
    };
    let (records, out) = sort_part_records(header, opts, BufWriter::with_capacity(1 << 20, file), feed)?;
    let file = out.into_inner().map_err(|e| Error::from(e.into_error()).with_path(output))?;
    file.sync_data().map_err(|e| Error::from(e).with_path(output))?;
    part_layout(&BamFile::open(output)?, records)
}

/// [`sort_part`] of shuffle chunks held in memory ([`ShuffleTo::Memory`]'s
/// buffers, in input order) into a BAM in memory ([`BamFile::from_vec`]:
/// [`part_index_segment`] reads it, [`BamFile::into_vec`] gives its
/// bytes), returned with where its records lie. `name` names the part in
/// messages.
pub fn sort_part_in_memory(header: &Header, shuffled: &[&[u8]], opts: &SortOptions, name: &Path) -> Result<(Part, BamFile), Error> {
    let n_ref = header.references.len();
    let feed = |push: &mut super::Push<'_>| -> Result<(), Error> {
        for chunk in shuffled {
            let mut at = 0usize;
            while at < chunk.len() {
                let damaged = || Error::Message("damaged shuffle chunk from a worker".into()).with_path(name);
                let size = chunk.get(at..at + 4).ok_or_else(damaged)?;
                let size = u32::from_le_bytes(size.try_into().expect("4 bytes")) as usize;
                let data = chunk.get(at + 4..at + 4 + size).ok_or_else(damaged)?;
                let r = RecordRef::new(data, n_ref)
                    .map_err(|defect| Error::Message(format!("invalid record in shuffle chunk: {defect}")).with_path(name))?;
                push(&r)?;
                at += 4 + size;
            }
        }
        Ok(())
    };
    let (records, bytes) = sort_part_records(header, opts, Vec::new(), feed)?;
    let part = BamFile::from_vec(name, bytes)?;
    let layout = part_layout(&part, records)?;
    Ok((layout, part))
}

/// The one-machine sort of what `feed` pushes, as a part (BAM, no index).
fn sort_part_records<W: Write + Send>(
    header: &Header,
    opts: &SortOptions,
    out: W,
    feed: impl FnOnce(&mut super::Push<'_>) -> Result<(), Error> + Send,
) -> Result<(u64, W), Error> {
    let opts = SortOptions { index: None, format: super::OutputFormat::Bam, ..opts.clone() };
    let (SortStats { records, .. }, out) = sort_records(header, &opts, out, feed)?;
    Ok((records, out))
}

/// Where the `records` records of the part BAM `part` lie (its header
/// must end with a block, and an EOF block must end it).
pub fn part_layout(part: &BamFile, records: u64) -> Result<Part, Error> {
    let body_start = at_block_start(part, part.first_record_offset());
    if body_start.uncompressed() != 0 || !part.has_eof_marker() {
        return Err(Error::Message("sorted part does not end its header with a block".into()).with_path(part.path()));
    }
    let body_end = part.bytes().len() as u64 - EOF_MARKER.len() as u64;
    Ok(Part { body_start: body_start.compressed().min(body_end), body_end, records })
}

/// The index segment of a sorted part's records (for
/// [`join_index`], its offsets shifted to where the part lies in the
/// output).
pub fn part_index_segment(part: &BamFile, layout: Part, format: IndexFormat) -> Result<IndexSegment, Error> {
    let entry = VirtualOffset::new(layout.body_start, 0).expect("a file offset");
    let split = Split { start: layout.body_start, end: u64::MAX };
    index_split(part, split, entry, format).map(|(segment, _)| segment)
}

/// Creates `output` (a temporary name: [`finish_output`] completes it)
/// with `header_part`'s header blocks (bytes `..body_start`), sized for
/// `body_len` bytes of parts after them and the EOF block.
pub fn create_output(output: &Path, header_part: &Path, body_start: u64, body_len: u64) -> Result<(), Error> {
    let mut src = File::open(header_part).map_err(|e| Error::from(e).with_path(header_part))?;
    let mut header_blocks = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut src, body_start), &mut header_blocks)
        .map_err(|e| Error::from(e).with_path(header_part))?;
    if header_blocks.len() as u64 != body_start {
        return Err(Error::Message("part is shorter than its header".into()).with_path(header_part));
    }
    create_output_with(output, &header_blocks, body_len)
}

/// [`create_output`] from the header blocks themselves.
pub fn create_output_with(output: &Path, header_blocks: &[u8], body_len: u64) -> Result<(), Error> {
    let mut out = File::create(output).map_err(|e| Error::from(e).with_path(output))?;
    out.write_all(header_blocks).map_err(|e| Error::from(e).with_path(output))?;
    let total = header_blocks.len() as u64 + body_len + EOF_MARKER.len() as u64;
    out.set_len(total).map_err(|e| Error::from(e).with_path(output))?;
    out.seek(SeekFrom::Start(total - EOF_MARKER.len() as u64)).map_err(|e| Error::from(e).with_path(output))?;
    out.write_all(&EOF_MARKER).map_err(|e| Error::from(e).with_path(output))?;
    Ok(())
}

/// Writes `bytes` (a part's record blocks) into `output` at offset `at`
/// ([`finish_output`] syncs them).
pub fn place_bytes(bytes: &[u8], output: &Path, at: u64) -> Result<(), Error> {
    use std::os::unix::fs::FileExt;
    let out = std::fs::OpenOptions::new().write(true).open(output).map_err(|e| Error::from(e).with_path(output))?;
    out.write_all_at(bytes, at).map_err(|e| Error::from(e).with_path(output))
}

/// Copies bytes `from..to` of `part` into `output` at offset `at` (the
/// kernel copies, without the bytes passing through this process where
/// the filesystem allows), and syncs them.
pub fn place_part(part: &Path, from: u64, to: u64, output: &Path, at: u64) -> Result<(), Error> {
    use std::io::Read;
    let mut src = File::open(part).map_err(|e| Error::from(e).with_path(part))?;
    src.seek(SeekFrom::Start(from)).map_err(|e| Error::from(e).with_path(part))?;
    let mut out = std::fs::OpenOptions::new().write(true).open(output).map_err(|e| Error::from(e).with_path(output))?;
    out.seek(SeekFrom::Start(at)).map_err(|e| Error::from(e).with_path(output))?;
    let copied = std::io::copy(&mut Read::take(&mut src, to - from), &mut out).map_err(|e| Error::from(e).with_path(output))?;
    if copied != to - from {
        return Err(Error::Message("part is shorter than planned".into()).with_path(part));
    }
    out.sync_data().map_err(|e| Error::from(e).with_path(output))
}

/// Syncs the assembled `output` (its header and EOF blocks; the parts
/// synced their own bytes).
pub fn finish_output(output: &Path) -> Result<(), Error> {
    let out = File::options().write(true).open(output).map_err(|e| Error::from(e).with_path(output))?;
    out.sync_all().map_err(|e| Error::from(e).with_path(output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort::{sort_bam, SortEngine};

    fn small() -> BamFile {
        BamFile::open(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/small.bam")).unwrap()
    }

    /// small.bam sorted by name through fasthts' own writer, whose blocks
    /// end every 0xff00 bytes, inside records (htslib's start with one).
    fn records_across_blocks() -> BamFile {
        let opts = SortOptions {
            order: SortOrder::QueryName,
            memory: 64 << 20,
            level: 1,
            temp_prefix: std::env::temp_dir().join("fasthts-distributed-test"),
            program: None,
            index: None,
            max_fan_in: None,
            progress: None,
            format: crate::record_output::OutputFormat::Bam,
            engine: SortEngine::Native,
            cram: None,
        };
        let (_, bytes) = sort_bam(&small(), &opts, Vec::new()).unwrap();
        BamFile::from_vec("by-name.bam", bytes).unwrap()
    }

    /// Every record's start, in the block-start form.
    fn record_starts(bam: &BamFile) -> Vec<VirtualOffset> {
        let mut records = bam.records().unwrap();
        let mut starts = Vec::new();
        while records.advance().unwrap() {
            starts.push(at_block_start(bam, records.record_start()));
        }
        starts
    }

    fn blocks(bam: &BamFile) -> Vec<Block> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < bam.bytes().len() as u64 {
            let b = Block::parse(bam.bytes(), at).unwrap();
            at = b.next_offset();
            out.push(b);
        }
        out
    }

    #[test]
    fn entries_guessed_are_each_blocks_first_record() {
        for bam in [small(), records_across_blocks()] {
            let starts = record_starts(&bam);
            let mut inside = 0;
            for block in blocks(&bam) {
                let split = Split { start: block.offset, end: block.next_offset() };
                let first = starts.iter().find(|s| s.compressed() == block.offset && split.start >= bam.first_record_offset().compressed());
                let guessed = guess_entry(&bam, split).unwrap();
                if let Some(&first) = first {
                    assert_eq!(guessed, Some(first), "block at {}", block.offset);
                    inside += usize::from(first.uncompressed() > 0);
                }
            }
            assert!(bam.path() == Path::new("by-name.bam") && inside > 10 || bam.path() != Path::new("by-name.bam"));
        }
    }

    #[test]
    fn block_starts_are_found_from_anywhere() {
        let bam = records_across_blocks();
        let blocks = blocks(&bam);
        for w in blocks.windows(2) {
            for from in [w[0].offset, w[0].offset + 1, w[1].offset - 1, w[1].offset] {
                let want = if from == w[0].offset { w[0].offset } else { w[1].offset };
                assert_eq!(next_block_start(bam.bytes(), from), Some(want));
            }
        }
        let splits = plan_splits(&bam, 7);
        assert_eq!(splits.len(), 7);
        assert_eq!(splits[0].start, bam.first_record_offset().compressed());
        assert_eq!(splits.last().unwrap().end, bam.bytes().len() as u64);
        assert!(splits.windows(2).all(|w| w[0].end == w[1].start && blocks.iter().any(|b| b.offset == w[1].start)));
    }

    /// An index joined from the segments of any cut into splits, after a
    /// trip through bytes, is the one-pass index, byte for byte.
    #[test]
    fn joined_index_segments_equal_the_one_pass_index() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
        for name in ["small.bam", "long_ref.bam", "huge_record.bam", "long_cigar.bam", "unmapped_only.bam", "refs_without_reads.bam"] {
            let bam = BamFile::open(data.join(name)).unwrap();
            for format in [IndexFormat::Bai, IndexFormat::Csi { min_shift: 14, depth: 0 }, IndexFormat::Csi { min_shift: 9, depth: 0 }] {
                let Ok(whole) = crate::index::build(&bam, format) else { continue };
                let want = whole.to_raw_bytes();
                for pieces in [1, 2, 3, 7, 40] {
                    let mut segments = Vec::new();
                    let mut entry = bam.first_record_offset();
                    let mut end = None;
                    for split in plan_splits(&bam, pieces) {
                        let (segment, exit) = index_split(&bam, split, entry, format).unwrap();
                        segments.push(IndexSegment::from_bytes(&segment.to_bytes()).unwrap());
                        match exit {
                            Exit::Next(next) => entry = next,
                            Exit::End(at) => end = Some(at),
                        }
                    }
                    let end = end.unwrap_or_else(|| bam.first_record_offset());
                    let joined = join_index(&bam, format, segments, end).unwrap();
                    let got = joined.to_raw_bytes();
                    assert!(got == want, "{name} {format:?} in {pieces} pieces");
                }
            }
        }
    }

    /// Splits shuffled into parts by sampled boundaries hold every record
    /// once, each part in input order and within its key range; each split
    /// ends where the next begins.
    /// Appends the records of each part's run file (`files[p]`, sort keys
    /// dropped) to `parts[p]`.
    fn read_runs(files: &[PathBuf], parts: &mut [Vec<Vec<u8>>]) {
        for (p, f) in files.iter().enumerate() {
            let mut run = RunReader::open(f, 1 << 16).unwrap();
            while run.advance().unwrap() {
                parts[p].push(run.record[4..].to_vec());
            }
        }
    }

    /// The parts hold every record of `all` once between them, each part in
    /// input order (a subsequence of `all`) and in its key range.
    fn assert_parts_partition(parts: &[Vec<Vec<u8>>], all: &[Vec<u8>], boundaries: &[Vec<u8>], cmp: &Comparator, what: &str) {
        assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), all.len());
        let mut scratch = Vec::new();
        for (p, records) in parts.iter().enumerate() {
            let mut it = all.iter();
            assert!(records.iter().all(|r| it.any(|a| a == r)), "part {p} in input order{what}");
            for r in records {
                let prepared = prepare(cmp, r, &mut scratch).to_vec();
                assert_eq!(part_of(&RecordRef::new_prevalidated(&prepared), boundaries, cmp), p, "part {p}{what}");
            }
        }
    }

    #[test]
    fn shuffled_parts_partition_the_records_in_input_order() {
        let dir = std::env::temp_dir().join(format!("fasthts-distributed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bam = records_across_blocks();
        for order in [SortOrder::Coordinate, SortOrder::QueryName, SortOrder::Minimiser { kmer: 12 }] {
            let cmp = Comparator::new(order, &bam.header().text);
            let splits = plan_splits(&bam, 5);
            let samples: Vec<Vec<u8>> = splits.iter().flat_map(|&s| sample_records(&bam, s, 40, &cmp).unwrap()).collect();
            assert!(samples.len() > 100);
            let boundaries = choose_boundaries(samples, 4, &cmp);
            assert_eq!(boundaries.len(), 3);
            let mut parts: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 4];
            let mut exit = None;
            for (j, &split) in splits.iter().enumerate() {
                let files: Vec<PathBuf> = (0..4).map(|p| dir.join(format!("s{j}p{p}"))).collect();
                let entry = if j == 0 { bam.first_record_offset() } else { exit.expect("records go on") };
                assert_eq!(guess_entry(&bam, split).unwrap(), Some(entry));
                let done = shuffle_split(&bam, split, entry, &boundaries, &cmp, &files).unwrap();
                // In memory: the same runs, the same report.
                let (in_memory, chunks) = shuffle_split_to(&bam, split, entry, &boundaries, &cmp, ShuffleTo::Memory(4)).unwrap();
                assert_eq!(in_memory, done);
                let runs: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
                assert_eq!(chunks, runs);
                exit = done.exit;
                read_runs(&files, &mut parts);
            }
            assert_eq!(exit, None);
            let all: Vec<Vec<u8>> = {
                let mut records = bam.records().unwrap();
                let mut v = Vec::new();
                while let Some(r) = records.next_record().unwrap() {
                    v.push(r.as_bytes().to_vec());
                }
                v
            };
            assert_parts_partition(&parts, &all, &boundaries, &cmp, "");
            assert!(parts.iter().all(|records| !records.is_empty()));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A part sorted from its chunks in memory is the part sorted from its
    /// shuffle files, byte for byte, and its index segment is the one
    /// built from the file.
    #[test]
    fn parts_sorted_in_memory_equal_parts_sorted_from_files() {
        let dir = std::env::temp_dir().join(format!("fasthts-distributed-memory-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bam = records_across_blocks();
        let cmp = Comparator::new(SortOrder::Coordinate, &bam.header().text);
        let split = Split { start: bam.first_record_offset().compressed(), end: bam.bytes().len() as u64 };
        let files: Vec<PathBuf> = (0..2).map(|p| dir.join(format!("p{p}"))).collect();
        let boundaries = choose_boundaries(sample_records(&bam, split, 100, &cmp).unwrap(), 2, &cmp);
        let entry = bam.first_record_offset();
        shuffle_split(&bam, split, entry, &boundaries, &cmp, &files).unwrap();
        let (_, chunks) = shuffle_split_to(&bam, split, entry, &boundaries, &cmp, ShuffleTo::Memory(2)).unwrap();
        let opts = SortOptions::bam(SortOrder::Coordinate, 64 << 20, 1, dir.join("tmp"));
        for p in 0..2 {
            let output = dir.join(format!("part{p}.bam"));
            let from_file = sort_part(bam.header(), &files[p..=p], &opts, &output).unwrap();
            let (in_memory, part) = sort_part_in_memory(bam.header(), &[&chunks[p]], &opts, Path::new("part")).unwrap();
            assert_eq!(in_memory, from_file);
            assert!(in_memory.records > 0);
            let format = IndexFormat::Csi { min_shift: 14, depth: 5 };
            let segment = part_index_segment(&part, in_memory, format).unwrap().to_bytes();
            assert_eq!(part.into_vec().unwrap(), std::fs::read(&output).unwrap());
            let on_disk = BamFile::open(&output).unwrap();
            assert_eq!(segment, part_index_segment(&on_disk, from_file, format).unwrap().to_bytes());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A CRAM of the golden normal.bam in small containers (samtools),
    /// decoded with its reference: split at containers, sampled and
    /// shuffled, its parts hold every record once, each in input order
    /// and in its key range, and each split ends where the next begins.
    #[test]
    fn cram_splits_shuffle_every_record_once_in_input_order() {
        use std::process::Command;
        let Some(dir) = fasthts_testgen::support::with_samtools("distributed-cram") else { return };
        let golden = fasthts_testgen::support::golden_snp_pileup();
        let (fasta, cram) = (golden.join("ref.fa"), dir.path("n.cram"));
        let out = Command::new("samtools")
            .args(["view", "-C", "--output-fmt-option", "seqs_per_slice=1000", "-T"])
            .args([fasta.as_os_str(), "-o".as_ref(), cram.as_os_str(), golden.join("normal.bam").as_os_str()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut input = SortInput::open(&cram, Some(&fasta)).unwrap();
        let all: Vec<Vec<u8>> = {
            let mut reader = CramReader::open(&cram, &CramOptions { reference: Some(fasta.clone()), ..CramOptions::default() }).unwrap();
            let mut v = Vec::new();
            reader
                .for_each_record(|r| {
                    v.push(r.as_bytes().to_vec());
                    Ok::<_, Error>(())
                })
                .unwrap();
            v
        };
        assert_eq!(all.len(), 49410);
        let cmp = Comparator::new(SortOrder::Coordinate, &input.header().text);
        let len = std::fs::metadata(&cram).unwrap().len();
        for pieces in [1, 3, 7] {
            let splits = input.splits(pieces).unwrap();
            assert_eq!(splits.len(), pieces);
            assert_eq!(splits.last().unwrap().end, len);
            assert!(splits.windows(2).all(|w| w[0].end == w[1].start));
            let samples: Vec<Vec<u8>> = splits.iter().flat_map(|&s| input.sample(s, 60, &cmp).unwrap()).collect();
            let boundaries = choose_boundaries(samples, 3, &cmp);
            assert_eq!(boundaries.len(), 2);
            let mut parts: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 3];
            let mut exit = None;
            for (j, &split) in splits.iter().enumerate() {
                let files: Vec<PathBuf> = (0..3).map(|p| dir.path(&format!("s{j}p{p}"))).collect();
                let entry = input.entry(split).unwrap().unwrap();
                assert!(j == 0 || Some(entry) == exit);
                let done = input.shuffle(split, entry, &boundaries, &cmp, &files).unwrap();
                exit = done.exit;
                read_runs(&files, &mut parts);
            }
            assert_eq!(exit, None);
            assert_parts_partition(&parts, &all, &boundaries, &cmp, &format!(" ({pieces} pieces)"));
        }
        // A split's first record is its first container's: no other entry is taken.
        let split = input.splits(3).unwrap()[1];
        let wrong = VirtualOffset::new(split.start, 1).unwrap();
        assert!(input.shuffle(split, wrong, &[], &cmp, &[dir.path("x")]).is_err());
    }
}
