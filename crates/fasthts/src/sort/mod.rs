//! `samtools sort`, in bounded memory: coordinate, queryname, tag,
//! template-coordinate and minimiser orders, from BAM or SAM input.
//!
//! Records are copied from the inflated input into one contiguous arena per
//! batch, with their sort keys extracted once; a full batch is sorted on
//! all threads (a stable sort, so ties keep input order as in samtools) and,
//! if more input follows, written as a run file of raw records in the
//! background while the next batch fills. Runs are merged in input order
//! (again keeping ties stable) into the parallel BGZF writer. When runs
//! reach the fan-in (the open-file limit, or [`SortOptions::max_fan_in`]),
//! the oldest ones are merged into one in the background while input is
//! still read (rocksort's compaction), so the final merge stays within it.

pub mod distributed;
mod header;
mod key;
#[cfg(feature = "rocksdb")]
mod rocksdb;
mod run;

pub use header::{add_missing_sq_lines, add_pg_line, as_htslib_rebuilds, check_editable, set_sort_order};
pub use key::{
    coordinate_key, minimiser, prepare_for_minimiser, record_coordinate_key, restore_minimiser_fields, strnum_cmp, Comparator, SortOrder,
};
pub use run::{max_fan_in, RunDir, RunReader, RunWriter};

use crate::bam::{BamFile, Header, RecordRef};
use crate::index::{Index, IndexFormat};
use crate::record_output::{record_at, CramOutput, OutputFormat, RecordOutput, PROGRESS_EVERY};
use crate::Error;
use rayon::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// How to sort.
#[derive(Clone, Debug)]
pub struct SortOptions {
    /// The order.
    pub order: SortOrder,
    /// Memory for record batches, in bytes, for all threads together
    /// (samtools' `-m` times its threads).
    pub memory: usize,
    /// BGZF level of the output on zlib's scale (samtools' `-l`).
    pub level: u32,
    /// Prefix for the run directory (samtools' `-T`).
    pub temp_prefix: PathBuf,
    /// `(version, command line)` for the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
    /// Build an index of the output while writing it (`--write-index`;
    /// coordinate order only).
    pub index: Option<IndexFormat>,
    /// Most runs merged at once; `None`: from the open-file limit. Runs
    /// beyond it are merged in the background while input is still read.
    pub max_fan_in: Option<usize>,
    /// Counters a progress display may read while the sort runs.
    pub progress: Option<std::sync::Arc<SortProgress>>,
    /// What to write: BAM, SAM text (plain or BGZF-compressed) or CRAM.
    pub format: OutputFormat,
    /// How to sort.
    pub engine: SortEngine,
    /// How to write a CRAM output (`None`: as [`CramOutput::default`]).
    pub cram: Option<CramOutput>,
}

impl SortOptions {
    /// A sort by `order` into a BGZF BAM, in `memory` bytes, at
    /// compression `level`, its temporary files named from `temp_prefix`:
    /// no `@PG` line, no index, no progress, the native engine.
    pub fn bam(order: SortOrder, memory: usize, level: u32, temp_prefix: PathBuf) -> SortOptions {
        SortOptions {
            order,
            memory,
            level,
            temp_prefix,
            program: None,
            index: None,
            max_fan_in: None,
            progress: None,
            format: OutputFormat::Bam,
            engine: SortEngine::Native,
            cram: None,
        }
    }
}

/// How records are sorted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortEngine {
    /// Batches sorted in memory, spilled as run files of raw records and
    /// merged (the default: see BENCHMARKS.md for the comparison).
    #[default]
    Native,
    /// Records put into an embedded RocksDB keyed by sort key, flushed and
    /// compacted by its background threads, read back in order (samtools
    /// rocksort's engine; needs the cargo feature `rocksdb`).
    RocksDb,
}

/// How far a sort has got, updated every few thousand records (relaxed
/// atomics: a display reads them from another thread).
#[derive(Debug, Default)]
pub struct SortProgress {
    /// Records read so far.
    pub records_read: AtomicU64,
    /// Run files written so far.
    pub runs_written: AtomicU64,
    /// Records written to the output so far (once the input is read).
    pub records_written: AtomicU64,
    /// Set when all input has been read.
    pub input_done: AtomicBool,
}

/// What a sort did.
#[derive(Debug, Default)]
pub struct SortStats {
    /// Records sorted.
    pub records: u64,
    /// Run files written (0: sorted in memory).
    pub runs: usize,
    /// Intermediate merges needed because runs outnumbered the fan-in (in
    /// the background while reading, or before the final merge).
    pub merge_passes: usize,
    /// Of `merge_passes`, those that ran while input was still being read.
    pub background_merges: usize,
    /// The index of the output, when asked for.
    pub index: Option<Index>,
}

/// Bytes of bookkeeping per record besides its own bytes.
const ENTRY_BYTES: usize = std::mem::size_of::<(u128, usize)>();

/// One batch of records: raw bytes back to back, and (key, offset) entries.
#[derive(Default)]
struct Arena {
    data: Vec<u8>,
    entries: Vec<(u128, usize)>,
}

impl Arena {
    fn push(&mut self, r: &RecordRef<'_>, cmp: &Comparator) {
        let bytes = r.as_bytes();
        let at = self.data.len();
        self.data.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.data.extend_from_slice(bytes);
        let stored = &mut self.data[at + 4..];
        if let SortOrder::Minimiser { kmer } = cmp.order() {
            prepare_for_minimiser(stored, kmer);
        }
        self.entries.push((cmp.key(&RecordRef::new_prevalidated(stored)), at));
    }

    fn footprint(&self) -> usize {
        self.data.len() + self.entries.len() * ENTRY_BYTES
    }

    fn sort(&mut self, cmp: &Comparator) {
        // Equal records stay in input order, as samtools keeps them: the
        // offsets grow in input order, so ending every comparison with them
        // makes an unstable sort (faster, and without a merge buffer of
        // half the entries) give the stable order.
        match cmp.order() {
            SortOrder::Coordinate | SortOrder::Minimiser { .. } => self.entries.par_sort_unstable(),
            SortOrder::Tag { .. } if self.entries.iter().any(|e| cmp.is_incomparable(&self.rec(e.1))) => {
                // NaN values: samtools' order is its algorithm's outcome.
                let data = &self.data;
                let rec = |off: usize| RecordRef::new_prevalidated(&record_at(data, off)[4..]);
                key::ks_mergesort(&mut self.entries, |a, b| cmp.compare(&rec(a.1), &rec(b.1)) == std::cmp::Ordering::Less);
            }
            SortOrder::QueryName | SortOrder::Tag { .. } | SortOrder::TemplateCoordinate => {
                let data = &self.data;
                let rec = |off: usize| RecordRef::new_prevalidated(&record_at(data, off)[4..]);
                self.entries.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| cmp.compare(&rec(a.1), &rec(b.1))).then(a.1.cmp(&b.1)));
            }
        }
    }

    fn record(&self, offset: usize) -> &[u8] {
        record_at(&self.data, offset)
    }

    fn rec(&self, offset: usize) -> RecordRef<'_> {
        RecordRef::new_prevalidated(&record_at(&self.data, offset)[4..])
    }

    /// Writes the records in sorted order to `run`, gathering them on all
    /// threads: the gather (a cache miss per record) is most of a spill,
    /// and a spill run on one thread left the others idle.
    fn write_sorted(&self, run: &mut RunWriter) -> Result<(), Error> {
        const PIECE: usize = 2048;
        let per_round = rayon::current_num_threads() * 2;
        let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); per_round];
        for round in self.entries.chunks(PIECE * per_round) {
            let n = round.len().div_ceil(PIECE);
            bufs[..n].par_iter_mut().zip(round.par_chunks(PIECE)).for_each(|(buf, entries)| {
                buf.clear();
                for record in self.records_of(entries) {
                    buf.extend_from_slice(record);
                }
            });
            for buf in &bufs[..n] {
                run.put(buf)?;
            }
        }
        Ok(())
    }

    fn sorted_records(&self) -> impl Iterator<Item = &[u8]> {
        self.records_of(&self.entries)
    }

    /// The records of `entries` (a run of this arena's entries), in order.
    fn records_of<'a>(&'a self, entries: &'a [(u128, usize)]) -> impl Iterator<Item = &'a [u8]> {
        entries.iter().enumerate().map(|(i, &(_, off))| {
            // Sorted order visits the arena at random: ask for a record a
            // few places ahead so that its cache misses overlap this one's.
            if let Some(&(_, ahead)) = entries.get(i + PREFETCH_AHEAD) {
                prefetch(&self.data, ahead);
            }
            self.record(off)
        })
    }

    fn clear(&mut self) {
        self.data.clear();
        self.entries.clear();
    }
}

/// How many records ahead of the one being copied the sorted gathers
/// prefetch.
const PREFETCH_AHEAD: usize = 8;

/// Hints that the first two cache lines of the record at `offset` of `data`
/// will be read soon.
#[inline(always)]
fn prefetch(data: &[u8], offset: usize) {
    #[cfg(target_arch = "x86_64")]
    if offset + 128 <= data.len() {
        // SAFETY: both addresses lie within `data`; prefetching never faults.
        unsafe {
            let p = data.as_ptr().add(offset) as *const i8;
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p);
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.add(64));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, offset);
}

/// Sorts `bam` into `out` (a BAM stream) as `samtools sort` does, and
/// returns `out` flushed.
pub fn sort_bam<W: Write>(bam: &BamFile, opts: &SortOptions, out: W) -> Result<(SortStats, W), Error> {
    sort_records(bam.header(), opts, out, |push| crate::bam::scan(bam, |r, _| push(r)).map(|_| ()))
}

type SpillResult = Result<(PathBuf, Arena), Error>;

/// The run files written so far, in input order, with their merge levels
/// (0: one sorted batch; a merge of runs of level `l` is of level `l + 1`).
#[derive(Default)]
struct Runs {
    paths: Vec<PathBuf>,
    levels: Vec<u32>,
}

impl Runs {
    fn push(&mut self, path: PathBuf) {
        self.paths.push(path);
        self.levels.push(0);
    }

    /// Where `fan_in` consecutive runs of one level start, the lowest such
    /// level first: merging equals (tiering) moves each record through
    /// about log_fan_in(runs) merges, where always merging the oldest
    /// runs would merge the first records again and again.
    fn group_to_merge(&self, fan_in: usize) -> Option<usize> {
        let mut best: Option<(u32, usize)> = None;
        let mut at = 0;
        while at + fan_in <= self.levels.len() {
            let level = self.levels[at];
            match self.levels[at..at + fan_in].iter().position(|&l| l != level) {
                Some(other) => at += other,
                None => {
                    if best.map_or(true, |(lowest, _)| level < lowest) {
                        best = Some((level, at));
                    }
                    at += fan_in;
                }
            }
        }
        best.map(|(_, at)| at)
    }

    /// Puts `merged` in place of the `n` runs from `at` that it merged.
    fn replace(&mut self, at: usize, n: usize, merged: PathBuf) {
        let level = self.levels[at..at + n].iter().max().map_or(0, |l| l + 1);
        self.paths.splice(at..at + n, [merged]);
        self.levels.splice(at..at + n, [level]);
    }
}

/// Runs being merged into one in the background while input is read.
struct Compaction {
    at: usize,
    runs: usize,
    done: std::sync::mpsc::Receiver<Result<PathBuf, Error>>,
}

impl Compaction {
    /// Starts merging `fan_in` consecutive runs of one level, if there are
    /// such, into a new run of `dir`. Consecutive, so the merged run takes
    /// their place without changing the order of ties.
    fn start<'s>(
        scope: &rayon::Scope<'s>,
        dir: &mut RunDir,
        runs: &Runs,
        fan_in: usize,
        cmp: &'s Comparator,
        memory: usize,
    ) -> Result<Option<Compaction>, Error> {
        let Some(at) = runs.group_to_merge(fan_in) else {
            return Ok(None);
        };
        let group = runs.paths[at..at + fan_in].to_vec();
        let out = dir.create_run()?;
        let (tx, done) = std::sync::mpsc::sync_channel(1);
        scope.spawn(move |_| {
            let _ = tx.send(merge_into_run(&group, out, cmp, memory));
        });
        Ok(Some(Compaction { at, runs: fan_in, done }))
    }

    /// If the compaction in `slot` has finished, puts its run in place of
    /// the runs it merged and empties the slot.
    fn collect_finished(slot: &mut Option<Compaction>, runs: &mut Runs, stats: &mut SortStats) -> Result<(), Error> {
        let merged = match slot.as_ref().map(|c| c.done.try_recv()) {
            None | Some(Err(std::sync::mpsc::TryRecvError::Empty)) => return Ok(()),
            Some(Ok(merged)) => merged,
            // The job always answers; it can only have panicked, which the
            // scope passes on.
            Some(Err(std::sync::mpsc::TryRecvError::Disconnected)) => Err(Error::Message("background merge of runs failed".into())),
        };
        slot.take().expect("checked above").finish(merged, runs, stats)
    }

    /// Waits for the compaction in `slot`, if any (running pool work
    /// meanwhile), and puts its run in place.
    fn wait(slot: &mut Option<Compaction>, runs: &mut Runs, stats: &mut SortStats) -> Result<(), Error> {
        match slot.take() {
            Some(c) => {
                let merged = fasthts_io::pool::recv_helping(&c.done);
                c.finish(merged, runs, stats)
            }
            None => Ok(()),
        }
    }

    fn finish(self, merged: Result<PathBuf, Error>, runs: &mut Runs, stats: &mut SortStats) -> Result<(), Error> {
        runs.replace(self.at, self.runs, merged?);
        stats.merge_passes += 1;
        stats.background_merges += 1;
        Ok(())
    }
}

/// Waits for the background spill to answer, running pool work meanwhile:
/// with one thread, the spill task itself runs here (a blocking receive
/// would deadlock).
fn wait_for_spill(rx: &std::sync::Mutex<&mut std::sync::mpsc::Receiver<SpillResult>>) -> SpillResult {
    // The lock is held while queued jobs run here: those are inflate, spill
    // and compaction jobs, which never push records, so never take it.
    fasthts_io::pool::recv_helping(&rx.lock().expect("not poisoned"))
}

/// Sorts an opened input, BAM, SAM or CRAM (see [`crate::input::open`]);
/// errors in a SAM input name `path`.
pub fn sort_input<W: Write>(input: &mut crate::input::Input, path: &Path, opts: &SortOptions, out: W) -> Result<(SortStats, W), Error> {
    match input {
        crate::input::Input::Bam(bam) => sort_bam(bam, opts, out),
        crate::input::Input::Stream(stream) => {
            let header = stream.header().clone();
            sort_records(&header, opts, out, |push| stream.for_each_record(|r| push(r)))
        }
        crate::input::Input::Sam(sam) => {
            let header = sam.header().clone();
            // Positions past BAM's 32 bits are kept 64-bit in SAM output,
            // as samtools does: always under references longer than BAM
            // can place (only SAM output gets here with them, and
            // sort_records_with refuses what cannot keep them); under
            // short ones where this sort can keep them (else a record
            // past 2^31 is refused as BAM refuses it).
            let long_reference = (0..header.references.len()).any(|i| header.reference_len(i) > i32::MAX as u64);
            let wide = long_reference || keeps_wide_positions(opts);
            if wide {
                sam.set_positions(crate::sam::Positions::Wide);
            }
            sort_records_with(&header, opts, out, wide, |push| {
                // The sort's own errors (writing runs, the output) name their files.
                let mut sorting_failed = false;
                sam.for_each_record(|r| push(&r).inspect_err(|_| sorting_failed = true))
                    .map_err(|e: Error| if sorting_failed { e } else { e.with_path(path) })
            })
        }
        crate::input::Input::Cram(cram) => {
            let header = cram.header().clone();
            sort_records(&header, opts, out, |push| cram.for_each_record(|r| push(r)))
        }
    }
}

/// Whether this sort can keep 64-bit positions
/// ([`crate::sam::Positions::Wide`]): coordinate, name and tag orders to
/// SAM with the native engine.
fn keeps_wide_positions(opts: &SortOptions) -> bool {
    !matches!(opts.order, SortOrder::TemplateCoordinate | SortOrder::Minimiser { .. })
        && opts.engine != SortEngine::RocksDb
        && matches!(opts.format, OutputFormat::Sam | OutputFormat::SamGz)
}

/// A sink for records, handed to the input side of [`sort_records`].
pub type Push<'p> = dyn FnMut(&RecordRef<'_>) -> Result<(), Error> + Send + 'p;

/// Sorts the records that `feed` pushes (from any source: a BAM scan, a SAM
/// parser) into `out` as a BAM stream with `header`, as `samtools sort`
/// does, and returns `out` flushed.
pub fn sort_records<W, F>(header: &Header, opts: &SortOptions, out: W, feed: F) -> Result<(SortStats, W), Error>
where
    W: Write,
    F: FnOnce(&mut Push<'_>) -> Result<(), Error> + Send,
{
    sort_records_with(header, opts, out, false, feed)
}

/// [`sort_records`]; `wide`: the records end with 64-bit positions
/// ([`crate::sam::Positions::Wide`]), which the comparison reads and the
/// SAM output prints (coordinate, name and tag orders, native engine).
fn sort_records_with<W, F>(header: &Header, opts: &SortOptions, out: W, wide: bool, feed: F) -> Result<(SortStats, W), Error>
where
    W: Write,
    F: FnOnce(&mut Push<'_>) -> Result<(), Error> + Send,
{
    check_editable(header)?;
    if wide && !keeps_wide_positions(opts) {
        return Err(Error::Message(
            "positions past 2^31 (references longer than BAM can hold) are sorted by coordinate, name or tag, \
             to SAM, with the native engine only"
                .into(),
        ));
    }
    if opts.engine == SortEngine::RocksDb {
        #[cfg(feature = "rocksdb")]
        return rocksdb::sort_records(header, opts, out, feed);
        #[cfg(not(feature = "rocksdb"))]
        return Err(Error::Message("this fasthts was built without the rocksdb engine (cargo feature \"rocksdb\")".into()));
    }
    let (mut stats, (index, out)) = sort_records_into(header, opts, wide, feed, |produce| write_output(header, opts, out, wide, produce))?;
    stats.index = index;
    Ok((stats, out))
}

/// The records of a sort, in order, handed out once: called with a `put`,
/// it calls `put` on each record (`block_size` and data) in turn.
pub type Produce<'p> = dyn FnMut(&mut dyn FnMut(&[u8]) -> Result<(), Error>) -> Result<(), Error> + 'p;

/// The native engine's sort of the records `feed` pushes, whose sorted
/// records go to `consume` instead of an output file: `consume` gets a
/// [`Produce`] to call once, during which the last batch and the runs are
/// merged (a stage between the sort and the writer, as markdup in
/// `sormadup`, sees the records as the final merge yields them). `wide`
/// as in [`sort_records_with`]; `opts.format`, `level`, `program`,
/// `index` and `cram` are `consume`'s business, not read here.
pub fn sort_records_into<F, R>(
    header: &Header,
    opts: &SortOptions,
    wide: bool,
    feed: F,
    consume: impl FnOnce(&mut Produce<'_>) -> Result<R, Error>,
) -> Result<(SortStats, R), Error>
where
    F: FnOnce(&mut Push<'_>) -> Result<(), Error> + Send,
{
    let order = opts.order;
    let cmp = Comparator::new(order, &header.text);
    let cmp = if wide { cmp.with_wide_positions() } else { cmp };
    let cmp = &cmp;
    let progress = opts.progress.as_deref();
    let mut arena = Arena::default();
    let mut runs: Option<RunDir> = None;
    let mut runs_written = Runs::default();
    let mut stats = SortStats::default();
    let fan_in = opts.max_fan_in.unwrap_or_else(max_fan_in).max(2);
    let mut compaction: Option<Compaction> = None;
    // Two arenas share the memory: one filling while the other, full, is
    // sorted and written as a run in the background.
    let limit = (opts.memory / 2).max(1 << 20);
    let (done_tx, mut done_rx) = std::sync::mpsc::sync_channel::<SpillResult>(1);
    let mut in_flight = false;
    let fed = rayon::scope(|scope| -> Result<(), Error> {
        // The feed may run on any pool thread; the receiver is not Sync.
        let rx = std::sync::Mutex::new(&mut done_rx);
        let fed = feed(&mut |r: &RecordRef<'_>| {
            cmp.check(r).map_err(Error::Message)?;
            arena.push(r, cmp);
            stats.records += 1;
            if stats.records % PROGRESS_EVERY == 0 {
                if let Some(p) = progress {
                    p.records_read.store(stats.records, Relaxed);
                }
            }
            if arena.footprint() >= limit {
                // Runs must stay in input order: take the previous spill's
                // result (and its arena, for reuse) before starting the next.
                let spare = if in_flight {
                    // Answered, even if with an error: nothing is in flight
                    // any more (the final wait below would never end).
                    in_flight = false;
                    let (path, mut spent) = wait_for_spill(&rx)?;
                    runs_written.push(path);
                    stats.runs += 1;
                    if let Some(p) = progress {
                        p.runs_written.store(stats.runs as u64, Relaxed);
                    }
                    spent.clear();
                    spent
                } else {
                    Arena::default()
                };
                let mut full = std::mem::replace(&mut arena, spare);
                let dir = match &mut runs {
                    Some(d) => d,
                    None => runs.insert(RunDir::create(&opts.temp_prefix)?),
                };
                // One compaction at a time: a finished one's run takes its
                // place before the next starts.
                Compaction::collect_finished(&mut compaction, &mut runs_written, &mut stats)?;
                if compaction.is_none() {
                    compaction = Compaction::start(scope, dir, &runs_written, fan_in, cmp, opts.memory)?;
                }
                let mut run = dir.create_run()?;
                let done = done_tx.clone();
                in_flight = true;
                scope.spawn(move |_| {
                    full.sort(cmp);
                    let written = full.write_sorted(&mut run).and_then(|()| run.finish());
                    let _ = done.send(written.map(|path| (path, full)));
                });
            }
            Ok(())
        });
        if in_flight {
            let (path, _) = wait_for_spill(&rx)?;
            runs_written.push(path);
            stats.runs += 1;
        }
        Compaction::wait(&mut compaction, &mut runs_written, &mut stats)?;
        fed
    });
    fed?;
    if let Some(p) = progress {
        p.records_read.store(stats.records, Relaxed);
        p.runs_written.store(stats.runs as u64, Relaxed);
        p.input_done.store(true, Relaxed);
    }
    arena.sort(cmp);

    let mut run_paths = Some(runs_written.paths);
    let mut produce = |put: &mut dyn FnMut(&[u8]) -> Result<(), Error>| -> Result<(), Error> {
        let Some(mut run_paths) = run_paths.take() else {
            return Err(Error::Message("a sort's records were asked for twice".into()));
        };
        if run_paths.is_empty() {
            return arena.sorted_records().try_for_each(put);
        }
        // More runs than files may be open (with the last batch): merge the
        // newest runs, the smallest, just enough of them, into one first
        // (consecutive, so ties keep input order).
        let dir = runs.as_mut().expect("runs were written");
        while run_paths.len() + 1 > fan_in {
            let n = (run_paths.len() + 2 - fan_in).min(fan_in);
            let group: Vec<PathBuf> = run_paths.drain(run_paths.len() - n..).collect();
            run_paths.push(merge_into_run(&group, dir.create_run()?, cmp, opts.memory)?);
            stats.merge_passes += 1;
        }
        merge(&run_paths, Some(&arena), cmp, opts.memory, put)
    };
    let consumed = consume(&mut produce)?;
    drop(runs);
    drop_in_background(arena);
    Ok((stats, consumed))
}

/// Writes the records `produce` puts, in order, to `out` as `opts` asks
/// (BAM or SAM, index or not) under `header` edited as samtools edits it,
/// and returns the index, if asked for, and `out` flushed; `wide`: the
/// records end with 64-bit positions (SAM output only).
fn write_output<W: Write>(
    header: &Header,
    opts: &SortOptions,
    out: W,
    wide: bool,
    produce: &mut Produce<'_>,
) -> Result<(Option<Index>, W), Error> {
    let order = opts.order;
    let progress = opts.progress.as_deref();
    let mut text = add_missing_sq_lines(&set_sort_order(&header.text, order), &header.references);
    if let Some((version, cl)) = &opts.program {
        text = add_pg_line(&text, "fasthts", version, cl);
    }
    let header = Header { text, references: header.references.clone() };
    let index = opts.index.filter(|_| order.is_positional());
    let mut output = if opts.format == OutputFormat::Cram {
        let cram = opts.cram.clone().unwrap_or_default();
        let cram = CramOutput { index: cram.index.filter(|_| order.is_positional()), ..cram };
        RecordOutput::open_cram(&header, &cram, out)?
    } else {
        RecordOutput::open(&header, opts.format, opts.level, index, true, out)?
    };
    if matches!(order, SortOrder::Minimiser { .. }) {
        output.edit_records(restore_minimiser_fields);
    }
    if wide {
        output.keep_wide_positions();
    }
    output.count_written(progress.map(|p| &p.records_written));
    produce(&mut |r| output.write_record(r))?;
    output.finish()
}

/// Frees `value` on a thread of its own: giving back a sort's arena (a
/// gigabyte at the default `-m`) takes about 60 ms that the caller, which
/// syncs the output to the disk next, would otherwise wait for with both
/// cores idle.
fn drop_in_background<T: Send + 'static>(value: T) {
    // When no thread can be started, spawn drops the closure, and so the
    // value, before returning the error.
    let _ = std::thread::Builder::new().name("fasthts-free".into()).spawn(move || drop(value));
}

/// Merges the runs of `group` (consecutive, in input order) into `out`,
/// removes them, and returns the new run's path.
fn merge_into_run(group: &[PathBuf], mut out: RunWriter, cmp: &Comparator, memory: usize) -> Result<PathBuf, Error> {
    merge(group, None, cmp, memory, &mut |r| out.put(r))?;
    let merged = out.finish()?;
    for p in group {
        let _ = std::fs::remove_file(p);
    }
    Ok(merged)
}

/// K-way merge of the runs (in input order) and the last in-memory batch,
/// ties broken by source order so the sort stays stable.
fn merge(
    run_paths: &[PathBuf],
    last: Option<&Arena>,
    cmp: &Comparator,
    memory: usize,
    put: &mut dyn FnMut(&[u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    let empty = Arena::default();
    let last = last.unwrap_or(&empty);
    // Read buffers share a quarter of the memory budget (the last arena may
    // hold half of it), between 64 KiB and 1 MiB each.
    let buffer = (memory / 4 / run_paths.len().max(1)).clamp(64 << 10, 1 << 20);
    let mut readers = run_paths.iter().map(|p| RunReader::open(p, buffer)).collect::<Result<Vec<_>, _>>()?;
    let mem = readers.len();
    let mut mem_next = 0usize;
    // The current record of each source; `None` once exhausted.
    let mut live: Vec<bool> = Vec::with_capacity(mem + 1);
    for r in readers.iter_mut() {
        live.push(r.advance()?);
    }
    live.push(!last.entries.is_empty());
    fn current<'a>(readers: &'a [RunReader], last: &'a Arena, mem_next: usize, cmp: &Comparator, src: usize) -> (u128, &'a [u8]) {
        if src == readers.len() {
            let (k, off) = last.entries[mem_next];
            (k, last.record(off))
        } else {
            let rec = &readers[src].record;
            (cmp.key(&RecordRef::new_prevalidated(&rec[4..])), rec.as_slice())
        }
    }
    let less = |readers: &[RunReader], mem_next: usize, a: usize, b: usize| -> bool {
        let (ka, ra) = current(readers, last, mem_next, cmp, a);
        let (kb, rb) = current(readers, last, mem_next, cmp, b);
        let by_record =
            ka.cmp(&kb).then_with(|| cmp.compare(&RecordRef::new_prevalidated(&ra[4..]), &RecordRef::new_prevalidated(&rb[4..])));
        by_record.then(a.cmp(&b)) == std::cmp::Ordering::Less
    };
    let mut heap = MergeHeap::default();
    for (src, &alive) in live.iter().enumerate() {
        if alive {
            heap.push(src, |a, b| less(&readers, mem_next, a, b));
        }
    }
    while let Some(src) = heap.peek() {
        let more = if src == mem {
            let (_, off) = last.entries[mem_next];
            put(last.record(off))?;
            mem_next += 1;
            mem_next < last.entries.len()
        } else {
            put(&readers[src].record)?;
            readers[src].advance()?
        };
        if more {
            heap.replace_top(|a, b| less(&readers, mem_next, a, b));
        } else {
            heap.pop(|a, b| less(&readers, mem_next, a, b));
        }
    }
    Ok(())
}

/// A binary min-heap of source indices ordered by a caller-given
/// comparison, which may look at each source's current record (so the heap
/// holds no copies of records).
#[derive(Default)]
struct MergeHeap {
    items: Vec<usize>,
}

impl MergeHeap {
    fn peek(&self) -> Option<usize> {
        self.items.first().copied()
    }

    fn push(&mut self, src: usize, less: impl Fn(usize, usize) -> bool) {
        self.items.push(src);
        let mut i = self.items.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !less(self.items[i], self.items[parent]) {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    /// Restores order after the top source moved to its next record.
    fn replace_top(&mut self, less: impl Fn(usize, usize) -> bool) {
        self.sift_down(0, &less);
    }

    /// Removes the top source (exhausted).
    fn pop(&mut self, less: impl Fn(usize, usize) -> bool) {
        let last = self.items.pop();
        if !self.items.is_empty() {
            self.items[0] = last.expect("non-empty");
            self.sift_down(0, &less);
        }
    }

    fn sift_down(&mut self, mut i: usize, less: &impl Fn(usize, usize) -> bool) {
        let n = self.items.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && less(self.items[l], self.items[m]) {
                m = l;
            }
            if r < n && less(self.items[r], self.items[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.items.swap(i, m);
            i = m;
        }
    }
}

#[cfg(test)]
mod tests {
    //! Property tests: random record sets, sorted in memory and through
    //! many run files, come out in the order of a plain reference
    //! comparator, ties in input order.
    use super::*;
    use crate::bam::record::tests::encode;
    use crate::bam::Reference;
    use fasthts_testgen::rng::Rng;
    use std::cmp::Ordering;

    /// A random record: few distinct coordinates and names so that ties are
    /// common; names without leading zeros (where samtools' order has quirks).
    fn random_record(rng: &mut Rng) -> Vec<u8> {
        let tid = rng.below(4) as i32 - 1;
        let pos = if tid < 0 && rng.below(2) == 0 { -1 } else { rng.below(50) as i32 };
        let flag = [0u16, 16, 64, 128, 64 | 16, 4][rng.below(6) as usize];
        let name = format!("r{}:{}x{}", 1 + rng.below(30), rng.below(3), 1 + rng.below(200));
        let mut aux = Vec::new();
        if rng.below(4) != 0 {
            aux.extend_from_slice(b"XTi");
            aux.extend_from_slice(&(rng.below(5) as i32 - 2).to_le_bytes());
        }
        encode(&name, flag, tid, pos, 30, &[(0, 4)], "ACGT", &aux)
    }

    /// Natural order of names made of letters and digit runs without
    /// leading zeros: digit runs compare as numbers.
    fn natural(a: &[u8], b: &[u8]) -> Ordering {
        fn tokens(s: &[u8]) -> Vec<(bool, &[u8])> {
            s.chunk_by(|x, y| x.is_ascii_digit() == y.is_ascii_digit()).map(|t| (t[0].is_ascii_digit(), t)).collect()
        }
        let (ta, tb) = (tokens(a), tokens(b));
        for (x, y) in ta.iter().zip(&tb) {
            let o = match (x, y) {
                ((true, x), (true, y)) => x.len().cmp(&y.len()).then(x.cmp(y)),
                ((_, x), (_, y)) => x.cmp(y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        ta.len().cmp(&tb.len())
    }

    fn reference_order(order: SortOrder, a: &RecordRef<'_>, b: &RecordRef<'_>) -> Ordering {
        let coordinate = |r: &RecordRef<'_>| (r.ref_id() as u32, (i64::from(r.pos()) + 1) as u64, r.flag() & 16);
        let name = |r: &RecordRef<'_>| (r.name().to_vec(), r.flag() & 0xc0);
        let by_name = || natural(a.name(), b.name()).then((name(a).1).cmp(&name(b).1));
        match order {
            SortOrder::Coordinate => coordinate(a).cmp(&coordinate(b)),
            SortOrder::QueryName => by_name(),
            SortOrder::Tag { tag, then_by_name } => {
                let value = |r: &RecordRef<'_>| match r.aux().find(tag) {
                    Some(crate::bam::AuxValue::Int(i)) => Some(i),
                    _ => None,
                };
                value(a).cmp(&value(b)).then_with(|| if then_by_name { by_name() } else { coordinate(a).cmp(&coordinate(b)) })
            }
            _ => unreachable!("not generated"),
        }
    }

    /// The records of a BAM stream, as raw bytes without length prefixes.
    fn records_of(bam: &[u8]) -> Vec<Vec<u8>> {
        let data = crate::bgzf::decompress_all(bam).expect("valid BGZF");
        let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let mut at = 8 + u32_at(4);
        let n_ref = u32_at(at);
        at += 4;
        for _ in 0..n_ref {
            at += 4 + u32_at(at) + 4;
        }
        let mut out = Vec::new();
        while at < data.len() {
            let n = u32_at(at);
            out.push(data[at + 4..at + 4 + n].to_vec());
            at += 4 + n;
        }
        out
    }

    #[test]
    fn runs_of_one_level_are_merged_lowest_level_first() {
        let mut runs = Runs::default();
        for i in 0..3 {
            runs.push(PathBuf::from(format!("r{i}")));
        }
        assert_eq!(runs.group_to_merge(4), None);
        runs.push(PathBuf::from("r3"));
        assert_eq!(runs.group_to_merge(4), Some(0));
        runs.replace(0, 4, PathBuf::from("m0"));
        assert_eq!((runs.paths.len(), runs.levels.as_slice()), (1, &[1][..]));
        // Level 1, then three level-0 runs: only a full group of one level merges.
        for i in 4..7 {
            runs.push(PathBuf::from(format!("r{i}")));
        }
        assert_eq!(runs.group_to_merge(4), None);
        runs.push(PathBuf::from("r7"));
        assert_eq!(runs.group_to_merge(4), Some(1));
        runs.replace(1, 4, PathBuf::from("m1"));
        assert_eq!(runs.paths, [PathBuf::from("m0"), PathBuf::from("m1")]);
        assert_eq!(runs.levels, [1, 1]);
        // Two full groups: the lower level goes first.
        let mut runs = Runs { paths: (0..4).map(|i| PathBuf::from(format!("p{i}"))).collect(), levels: vec![2, 2, 0, 0] };
        assert_eq!(runs.group_to_merge(2), Some(2));
        runs.replace(2, 2, PathBuf::from("q"));
        assert_eq!(runs.levels, [2, 2, 1]);
        assert_eq!(runs.group_to_merge(2), Some(0));
    }

    #[test]
    fn random_records_sort_as_the_reference_comparator_says_stably() {
        let references: Vec<Reference> = (0..3).map(|i| Reference { name: format!("c{i}"), len: 1000 }).collect();
        let header = Header { text: b"@HD\tVN:1.6\n".to_vec(), references };
        let dir = std::env::temp_dir().join(format!("fasthts-sort-props-{}", std::process::id()));
        let orders = [
            SortOrder::Coordinate,
            SortOrder::QueryName,
            SortOrder::Tag { tag: *b"XT", then_by_name: false },
            SortOrder::Tag { tag: *b"XT", then_by_name: true },
        ];
        for seed in 1..=3u64 {
            let mut rng = Rng::new(seed * 0x9e37_79b9_7f4a_7c15);
            // Seed 3 makes enough runs for merges in the background.
            let n = [300, 40_000, 160_000][seed as usize - 1];
            let input: Vec<Vec<u8>> = (0..n).map(|_| random_record(&mut rng)).collect();
            let engines: &[SortEngine] =
                if cfg!(feature = "rocksdb") { &[SortEngine::Native, SortEngine::RocksDb] } else { &[SortEngine::Native] };
            for (order, &engine) in orders.into_iter().flat_map(|o| engines.iter().map(move |e| (o, e))) {
                let mut expected: Vec<&Vec<u8>> = input.iter().collect();
                expected.sort_by(|a, b| reference_order(order, &RecordRef::new_prevalidated(a), &RecordRef::new_prevalidated(b)));
                let opts = SortOptions {
                    order,
                    // The floor of 1 MiB per arena: 40k records make several runs.
                    memory: 1,
                    level: 1,
                    temp_prefix: dir.join("t"),
                    program: None,
                    index: None,
                    max_fan_in: Some(3),
                    progress: None,
                    format: OutputFormat::Bam,
                    engine,
                    cram: None,
                };
                std::fs::create_dir_all(&dir).unwrap();
                let feed = |push: &mut Push<'_>| input.iter().try_for_each(|r| push(&RecordRef::new_prevalidated(r)));
                let (stats, out) = sort_records(&header, &opts, Vec::new(), feed).unwrap();
                assert_eq!(stats.records, n);
                if engine == SortEngine::Native {
                    assert!(n < 1000 || stats.runs > 1, "{order:?}: expected run files");
                    assert!(n < 100_000 || stats.background_merges > 0, "{order:?}: runs {}, no background merge", stats.runs);
                }
                let got = records_of(&out);
                assert!(got.iter().eq(expected.iter().copied()), "seed {seed} {order:?} {engine:?}: order differs from the reference");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_run_that_cannot_be_written_is_an_error_not_a_hang() {
        let dir = std::env::temp_dir().join(format!("fasthts-sort-runfail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = Header {
            text: b"@HD\tVN:1.6\n@SQ\tSN:c1\tLN:1000000\n".to_vec(),
            references: vec![Reference { name: "c1".into(), len: 1_000_000 }],
        };
        let opts = SortOptions::bam(SortOrder::Coordinate, 2 << 20, 1, dir.join("t"));
        let (tx, rx) = std::sync::mpsc::channel();
        let runs = dir.clone();
        std::thread::spawn(move || {
            let result = sort_records(&header, &opts, Vec::new(), |push| {
                for i in 0..100_000 {
                    // The run directory vanishes (as on a full or failing
                    // disk) once the first run is being written: the next
                    // run cannot be created.
                    if i == 8_000 {
                        std::fs::remove_dir_all(&runs).unwrap();
                    }
                    let rec = encode(&format!("r{i}"), 0, 0, (i * 7919 % 100_000) as i32, 60, &[(0, 100)], &"A".repeat(100), &[]);
                    push(&RecordRef::new(&rec, 1).unwrap())?;
                }
                Ok(())
            });
            let _ = tx.send(result.map(|_| ()));
        });
        let result = rx.recv_timeout(std::time::Duration::from_secs(120)).expect("sort hung after a run failed");
        assert!(result.is_err());
    }
}
