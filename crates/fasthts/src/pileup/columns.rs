//! Pileup columns as pysam's `AlignmentFile.pileup` gives them: one file,
//! its reads chosen by a "stepper" (pysam's read callbacks `all`,
//! `nofilter`, `samtools`), htslib's `bam_mplp_*` on them (depth cap,
//! mate-overlap adjustment), and for each column the reads with their
//! whole records (shared, not copied per column).
//!
//! Which reads are piled up where, as pysam does it:
//! - a region ([`Columns::indexed`] with one group): one pileup over the
//!   records the index query returns (every record overlapping it);
//!   `truncate` keeps only the columns inside it;
//! - no region, with an index: one fresh pileup per reference in turn;
//! - no region, no index ([`Columns::whole_file`]): one pileup over the
//!   whole file in file order.

use super::baq::{self, Realigner};
use super::{Pileup, PileupError, PileupOptions, ReadFilter, RecordSource};
use crate::bam::{edit, flags, RecordRef};
use crate::faidx::FastaFile;
use crate::region::indexed::{Cursor, IndexedFile, Rule};
use crate::region::Region;
use crate::whole_file::WholeFileCursor;
use std::collections::VecDeque;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::sync::Arc;

/// htslib's depth cap when none is set (`bam_plp_init`), which pysam's
/// `max_depth=0` leaves.
pub const HTSLIB_DEFAULT_MAX_DEPTH: i32 = 8000;

/// Which reads a pysam pileup uses (its `stepper`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stepper {
    /// Reads with none of `flag_filter`'s bits.
    All,
    /// Every read (htslib still drops unmapped ones).
    NoFilter,
    /// `flag_filter`, `flag_require`, `min_mapping_quality` and
    /// `ignore_orphans`; with a reference ([`Columns::with_reference`])
    /// also BAQ and cap-mapq.
    Samtools,
}

/// pysam's pileup options (its keyword arguments, its defaults).
#[derive(Clone, Debug)]
pub struct ColumnOptions {
    /// Which reads are used.
    pub stepper: Stepper,
    /// htslib's `maxcnt` (0: htslib's default, 8000).
    pub max_depth: i32,
    /// Apply htslib's mate-overlap quality adjustment.
    pub ignore_overlaps: bool,
    /// Reads with any of these flags are skipped (`all`, `samtools`).
    pub flag_filter: u32,
    /// Reads need one of these flags when nonzero (`samtools`).
    pub flag_require: u32,
    /// Paired reads not in a proper pair are skipped (`samtools`).
    pub ignore_orphans: bool,
    /// Reads with a lower mapping quality are skipped (`samtools`).
    pub min_mapping_quality: i64,
}

impl Default for ColumnOptions {
    /// pysam 0.24's defaults.
    fn default() -> Self {
        ColumnOptions {
            stepper: Stepper::Samtools,
            max_depth: 8000,
            ignore_overlaps: true,
            flag_filter: u32::from(flags::UNMAPPED | flags::SECONDARY | flags::QC_FAIL | flags::DUPLICATE),
            flag_require: 0,
            ignore_orphans: true,
            min_mapping_quality: 0,
        }
    }
}

impl ColumnOptions {
    /// Whether the stepper's flag tests pass `r` (the `samtools` stepper
    /// then reads the reference and adjusts the read before its other
    /// tests, [`ColumnOptions::keep_adjusted`]).
    #[inline]
    fn keep_flags(&self, r: &RecordRef<'_>) -> bool {
        let flag = u32::from(r.flag());
        match self.stepper {
            Stepper::NoFilter => true,
            Stepper::All => flag & self.flag_filter == 0,
            Stepper::Samtools => flag & self.flag_filter == 0 && (self.flag_require == 0 || flag & self.flag_require != 0),
        }
    }

    /// The `samtools` stepper's tests after BAQ and cap-mapq.
    #[inline]
    fn keep_adjusted(&self, r: &RecordRef<'_>) -> bool {
        if self.stepper != Stepper::Samtools {
            return true;
        }
        let flag = u32::from(r.flag());
        if i64::from(r.mapq()) < self.min_mapping_quality {
            return false;
        }
        let paired = u32::from(flags::PAIRED);
        let proper = u32::from(flags::PROPER_PAIR);
        !(self.ignore_orphans && flag & paired != 0 && flag & proper == 0)
    }

    fn pileup_options(&self) -> PileupOptions {
        // The stepper has chosen the reads; the engine only drops what
        // htslib's push drops (unmapped, unplaced).
        let filter = ReadFilter { skip_flags: 0, min_mapq: 0, skip_mapq_zero: false, proper_pairs_only: false };
        let max_depth = if self.max_depth == 0 { HTSLIB_DEFAULT_MAX_DEPTH } else { self.max_depth };
        PileupOptions { max_depth, overlaps: self.ignore_overlaps, filter }
    }
}

/// Where a pileup's records come from: index queries or a whole file.
enum Feed {
    Indexed(Cursor),
    Whole(WholeFileCursor),
}

/// Records per refill.
const BATCH: usize = 4096;

/// Records read from a feed: their bytes end to end, and where each ends.
#[derive(Default)]
struct Batch {
    arena: Vec<u8>,
    ends: Vec<usize>,
}

impl Feed {
    /// Refills `batch` with up to [`BATCH`] records; false once the feed
    /// has no more (the batch is then empty).
    fn fill(&mut self, batch: &mut Batch) -> Result<bool, PileupError> {
        batch.arena.clear();
        batch.ends.clear();
        let (arena, ends) = (&mut batch.arena, &mut batch.ends);
        let mut push = |r: &RecordRef<'_>| {
            arena.extend_from_slice(r.as_bytes());
            ends.push(arena.len());
        };
        let n = match self {
            Feed::Indexed(c) => c.fill(BATCH, &mut push)?,
            Feed::Whole(c) => {
                let n = c.fill(BATCH, &mut push);
                // SAM record warnings are not a pileup's to report.
                drop(c.take_warnings());
                n?
            }
        };
        Ok(n > 0)
    }
}

/// Batches filled by a feed on threads of its own while the pileup walks
/// the previous one (the inflation is then off the caller's thread).
struct Ahead {
    ready: Receiver<Result<Batch, PileupError>>,
    spare: Sender<Batch>,
}

/// Batches filled and waiting, besides the one being filled.
const AHEAD_DEPTH: usize = 2;

impl Ahead {
    /// Moves `feed` to a pool of `threads` threads (its inflation runs
    /// there), filling batches until the feed ends, fails, or the `Ahead`
    /// is dropped.
    fn start(mut feed: Feed, threads: usize) -> Ahead {
        let (ready_tx, ready) = sync_channel(AHEAD_DEPTH);
        let (spare, spare_rx) = channel::<Batch>();
        let produce = move || loop {
            let mut batch = spare_rx.try_recv().unwrap_or_default();
            let (sent, more) = match feed.fill(&mut batch) {
                Ok(more) => (ready_tx.send(Ok(batch)), more),
                Err(e) => (ready_tx.send(Err(e)), false),
            };
            // A send fails once the pileup is gone: nothing more to do.
            if sent.is_err() || !more {
                return;
            }
        };
        match fasthts_io::pool::pool_builder(threads.max(1)).build() {
            // The pool's threads end once the producer returns.
            Ok(pool) => pool.spawn(produce),
            Err(_) => drop(std::thread::spawn(produce)),
        }
        Ahead { ready, spare }
    }
}

/// Where [`Stepped`] gets its batches.
enum Supply {
    /// Read on the caller's thread (the first batch always is: a small
    /// query costs no thread).
    Inline(Feed),
    Ahead(Ahead),
    /// Nothing more to read.
    Ended,
}

/// pysam's reference options of the `samtools` stepper (its `pileup`
/// keywords), applied to each read that passes the stepper's flag tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceOptions {
    /// Realign the read, lowering its qualities by the BAQ
    /// (`compute_baq`, pysam's default; extended BAQ as pysam asks htslib).
    pub compute_baq: bool,
    /// Realign even a read that carries a `BQ` tag (`redo_baq`).
    pub redo_baq: bool,
    /// Cap the mapping quality with htslib's `sam_cap_mapq` at this
    /// threshold when above 10; a read it refuses is skipped
    /// (`adjust_capq_threshold`, 0: off).
    pub adjust_capq_threshold: i32,
}

impl Default for ReferenceOptions {
    /// pysam's defaults.
    fn default() -> Self {
        ReferenceOptions { compute_baq: true, redo_baq: false, adjust_capq_threshold: 0 }
    }
}

/// The reference a `samtools` stepper reads reads against: the FASTA, the
/// sequence of the last read's reference id, and the scratch space of
/// adjusting reads.
struct Reference {
    fasta: Arc<FastaFile>,
    names: Arc<Vec<Vec<u8>>>,
    options: ReferenceOptions,
    /// `(tid, whole sequence)` of the last fetch.
    current: Option<(i32, Arc<Vec<u8>>)>,
    realigner: Realigner,
    /// The read being adjusted (BAQ, cap-mapq), reused from read to read.
    record: Vec<u8>,
}

impl Reference {
    /// The sequence of reference `tid`, fetched when it is not the last
    /// one's (pysam: once per change of reference id).
    fn fetch(&mut self, tid: i32) -> Result<(), PileupError> {
        if tid < 0 || self.current.as_ref().is_some_and(|(t, _)| *t == tid) {
            return Ok(());
        }
        let name = self.names.get(tid as usize).cloned().unwrap_or_default();
        match self.fasta.sequence(&name, 0, u64::MAX) {
            Ok(seq) => {
                self.current = Some((tid, Arc::new(seq)));
                Ok(())
            }
            // pysam tells every failure of faidx_fetch_seq this way.
            Err(_) => Err(PileupError::MissingReference { name, tid }),
        }
    }

    /// Copies `r` and adjusts the copy as pysam's stepper does; false
    /// when cap-mapq refuses it.
    fn adjust(&mut self, r: &RecordRef<'_>) -> Result<bool, PileupError> {
        self.fetch(r.ref_id())?;
        self.record.clear();
        self.record.extend_from_slice(r.as_bytes());
        let Some((_, seq)) = &self.current else { return Ok(true) };
        if self.options.compute_baq {
            let flag = baq::APPLY | baq::EXTEND | if self.options.redo_baq { baq::REDO } else { 0 };
            self.realigner.realign(&mut self.record, seq, flag);
        }
        if self.options.adjust_capq_threshold > 10 {
            let q = baq::cap_mapq(&self.record, seq, self.options.adjust_capq_threshold);
            if q < 0 {
                return Ok(false);
            }
            if i32::from(RecordRef::new_prevalidated(&self.record).mapq()) > q {
                edit::set_mapping_quality(&mut self.record, q as u8);
            }
        }
        Ok(true)
    }
}

/// What [`Columns::with_reference`] was given: the FASTA, the header's
/// reference names, the options.
struct ReferenceSetup {
    fasta: Arc<FastaFile>,
    names: Arc<Vec<Vec<u8>>>,
    options: ReferenceOptions,
}

/// A feed read a batch at a time, the stepper applied.
struct Stepped {
    supply: Supply,
    /// Threads reading ahead once a query proves longer than a batch
    /// (0: never; everything is read inline).
    read_ahead_threads: usize,
    options: ColumnOptions,
    batch: Batch,
    next: usize,
    cur: (usize, usize),
    /// With a reference: the current read is `reference.record`.
    reference: Option<Box<Reference>>,
}

impl Stepped {
    fn new(feed: Feed, options: ColumnOptions, read_ahead_threads: usize, reference: Option<Box<Reference>>) -> Self {
        Stepped { supply: Supply::Inline(feed), read_ahead_threads, options, batch: Batch::default(), next: 0, cur: (0, 0), reference }
    }

    /// The sequence of the reference the last read was checked against
    /// (pysam's column's `reference_sequence`).
    fn reference_sequence(&self) -> Option<&Arc<Vec<u8>>> {
        self.reference.as_ref().and_then(|r| r.current.as_ref()).map(|(_, seq)| seq)
    }

    /// The next batch into `self.batch`; false at the end.
    fn refill(&mut self) -> Result<bool, PileupError> {
        self.next = 0;
        match std::mem::replace(&mut self.supply, Supply::Ended) {
            Supply::Inline(mut feed) => {
                let more = feed.fill(&mut self.batch)?;
                if more {
                    // A full batch says more may follow: read the rest ahead.
                    self.supply = if self.batch.ends.len() >= BATCH && self.read_ahead_threads > 0 {
                        Supply::Ahead(Ahead::start(feed, self.read_ahead_threads))
                    } else {
                        Supply::Inline(feed)
                    };
                }
                Ok(more)
            }
            Supply::Ahead(ahead) => {
                let used = std::mem::take(&mut self.batch);
                let _ = ahead.spare.send(used);
                match ahead.ready.recv() {
                    Ok(Ok(batch)) if !batch.ends.is_empty() => {
                        self.batch = batch;
                        self.supply = Supply::Ahead(ahead);
                        Ok(true)
                    }
                    Ok(Ok(_)) | Err(_) => Ok(false),
                    Ok(Err(e)) => Err(e),
                }
            }
            Supply::Ended => {
                self.batch.ends.clear();
                Ok(false)
            }
        }
    }
}

impl RecordSource for Stepped {
    fn advance(&mut self) -> Result<bool, PileupError> {
        loop {
            if self.next == self.batch.ends.len() && !self.refill()? {
                return Ok(false);
            }
            let start = if self.next == 0 { 0 } else { self.batch.ends[self.next - 1] };
            let end = self.batch.ends[self.next];
            self.next += 1;
            let r = RecordRef::new_prevalidated(&self.batch.arena[start..end]);
            if !self.options.keep_flags(&r) {
                continue;
            }
            if let Some(reference) = self.reference.as_mut() {
                if reference.adjust(&r)? && self.options.keep_adjusted(&RecordRef::new_prevalidated(&reference.record)) {
                    return Ok(true);
                }
                continue;
            }
            if self.options.keep_adjusted(&r) {
                self.cur = (start, end);
                return Ok(true);
            }
        }
    }

    fn current(&self) -> RecordRef<'_> {
        // Records were validated when the cursor read them (an adjusted
        // copy keeps a valid layout: qualities changed, a tag appended
        // or removed whole).
        match &self.reference {
            Some(reference) => RecordRef::new_prevalidated(&reference.record),
            None => RecordRef::new_prevalidated(&self.batch.arena[self.cur.0..self.cur.1]),
        }
    }
}

/// One read at a column (pysam's `bam_pileup1_t`).
#[derive(Clone, Debug)]
pub struct ColumnRead {
    record: Arc<Vec<u8>>,
    /// Query position (of the next base for a deletion or ref-skip).
    pub qpos: i64,
    /// Insertion (positive) or deletion (negative) length after this position.
    pub indel: i32,
    /// In a deletion or ref-skip here.
    pub is_del: bool,
    /// In a ref-skip here.
    pub is_refskip: bool,
    /// First aligned position of the read.
    pub is_head: bool,
    /// Last aligned position of the read.
    pub is_tail: bool,
}

impl ColumnRead {
    /// The record (qualities as the overlap adjustment left them when the
    /// column was made).
    #[inline]
    pub fn record(&self) -> RecordRef<'_> {
        // The bytes are a record a cursor validated.
        RecordRef::new_prevalidated(&self.record)
    }

    /// The record's bytes (without `block_size`).
    pub fn record_bytes(&self) -> &[u8] {
        &self.record
    }

    /// The base quality pysam's filters see: the quality at `qpos`, 0
    /// past the end of the sequence (255 when the record has none).
    #[inline]
    pub fn qual(&self) -> u8 {
        let r = self.record();
        usize::try_from(self.qpos).ok().and_then(|q| r.qual().get(q).copied()).unwrap_or(0)
    }

    /// The 4-bit code of the base at query position `i` (15, N, past the end).
    #[inline]
    pub fn base_code_at(&self, i: i64) -> u8 {
        let r = self.record();
        let Ok(i) = usize::try_from(i) else { return 15 };
        match r.seq_raw().get(i / 2) {
            Some(&b) if i < r.seq_len() => {
                if i % 2 == 0 {
                    b >> 4
                } else {
                    b & 0xf
                }
            }
            _ => 15,
        }
    }

    /// The 4-bit code pysam shows for the `j`-th inserted base after this
    /// position (`j` from 1): htslib's `bam_seqi` at `qpos + j` unchecked,
    /// so past the sequence it reads on into the record's following bytes
    /// (15, N, past the record).
    pub fn inserted_base_code(&self, j: i64) -> u8 {
        let r = self.record();
        let seq_start = r.aux_start() - r.seq_len() - r.seq_len().div_ceil(2);
        let Ok(i) = usize::try_from(self.qpos + j) else { return 15 };
        match self.record.get(seq_start + i / 2) {
            Some(&b) if i % 2 == 0 => b >> 4,
            Some(&b) => b & 0xf,
            None => 15,
        }
    }

    /// Whether the read is below `min_base_quality` here (pysam's
    /// `pileup_base_qual_skip`: such reads are left out of a column's
    /// lists, not of its `nsegments`).
    #[inline]
    pub fn below(&self, min_base_quality: i64) -> bool {
        i64::from(self.qual()) < min_base_quality
    }
}

/// pysam's pileup iterators. See the [module documentation](self).
pub struct Columns {
    file: Option<Arc<IndexedFile>>,
    /// Query groups not yet started (each its own pileup).
    groups: VecDeque<Vec<(Region, Rule)>>,
    whole: Option<WholeFileCursor>,
    pileup: Option<Pileup<Stepped>>,
    options: ColumnOptions,
    /// `truncate`: only columns in `[start, stop)`, the iteration ends at `stop`.
    window: Option<(i32, i64, i64)>,
    /// The next column to look for in the current pileup.
    from: (i32, i64),
    done: bool,
    /// Threads reading a long query's records ahead (0: none).
    read_ahead_threads: usize,
    /// The `samtools` stepper's reference.
    reference: Option<ReferenceSetup>,
}

impl Columns {
    /// Columns of `file` read through its index: each group of queries
    /// (records overlapping their regions, in turn) is one pileup, the
    /// groups in turn (pysam: one group for a region, one per reference
    /// without). `truncate`: `(tid, start, stop)` of pysam's region.
    pub fn indexed(file: Arc<IndexedFile>, groups: Vec<Vec<Region>>, options: ColumnOptions, truncate: Option<(i32, i64, i64)>) -> Self {
        let groups = groups.into_iter().map(|g| g.into_iter().map(|r| (r, Rule::Overlap)).collect()).collect();
        Columns {
            file: Some(file),
            groups,
            whole: None,
            pileup: None,
            options,
            window: truncate,
            from: (0, 0),
            done: false,
            read_ahead_threads: 0,
            reference: None,
        }
    }

    /// Columns of a whole file read in file order, one pileup.
    pub fn whole_file(cursor: WholeFileCursor, options: ColumnOptions) -> Self {
        Columns {
            file: None,
            groups: VecDeque::new(),
            whole: Some(cursor),
            pileup: None,
            options,
            window: None,
            from: (0, 0),
            done: false,
            read_ahead_threads: 0,
            reference: None,
        }
    }

    /// Reads each query's records past its first batch on `threads`
    /// threads of their own, ahead of the pileup (BGZF inflation then
    /// runs beside the caller's walk of the columns). The columns are the
    /// same; a query of fewer records than a batch costs no thread.
    pub fn reading_ahead(mut self, threads: usize) -> Self {
        self.read_ahead_threads = threads;
        self
    }

    /// Reads each read against `fasta` as pysam's `samtools` stepper does
    /// given a `fastafile` (no effect with another stepper): the sequence
    /// of its reference (named as `names`, the header's, says) is fetched
    /// when the reference id changes, a name the FASTA lacks ending the
    /// iteration with [`PileupError::MissingReference`]; then BAQ and
    /// cap-mapq as `options` say, before the mapping-quality and orphan
    /// tests. [`Columns::reference_sequence`] gives the sequence.
    pub fn with_reference(mut self, fasta: Arc<FastaFile>, names: Vec<Vec<u8>>, options: ReferenceOptions) -> Self {
        if self.options.stepper == Stepper::Samtools {
            self.reference = Some(ReferenceSetup { fasta, names: Arc::new(names), options });
        }
        self
    }

    /// The sequence that pysam's current column holds as its reference:
    /// that of the last read the stepper checked (which, reading a whole
    /// file, may already be the next reference's).
    pub fn reference_sequence(&self) -> Option<Arc<Vec<u8>>> {
        self.pileup.as_ref().and_then(|p| p.source(0).reference_sequence().cloned())
    }

    /// Starts the next pileup; false when there is none.
    fn start_next(&mut self) -> bool {
        let feed = if let Some(c) = self.whole.take() {
            Feed::Whole(c)
        } else if let (Some(file), Some(group)) = (&self.file, self.groups.pop_front()) {
            Feed::Indexed(Cursor::new(file.clone(), group))
        } else {
            return false;
        };
        // Each pileup starts with no sequence, as each of pysam's iterators.
        let reference = self.reference.as_ref().map(|setup| {
            Box::new(Reference {
                fasta: setup.fasta.clone(),
                names: setup.names.clone(),
                options: setup.options,
                current: None,
                realigner: Realigner::new(),
                record: Vec::new(),
            })
        });
        let source = Stepped::new(feed, self.options.clone(), self.read_ahead_threads, reference);
        self.pileup = Some(Pileup::new(vec![source], &self.options.pileup_options()).keep_records().overlaps_as_htslib_1_17());
        self.from = match self.window {
            Some((tid, start, _)) => (tid, start.max(0)),
            None => (0, 0),
        };
        true
    }

    /// Moves to the next column: `(tid, pos, number of reads)`, `None`
    /// at the end. Its reads are collected on request
    /// ([`Columns::current_reads`]), while it is current.
    pub fn advance(&mut self) -> Result<Option<(i32, i64, usize)>, PileupError> {
        while !self.done {
            let Some(pileup) = self.pileup.as_mut() else {
                if !self.start_next() {
                    self.done = true;
                }
                continue;
            };
            let Some((tid, pos)) = pileup.next_covered(self.from.0, self.from.1)? else {
                self.pileup = None;
                continue;
            };
            if let Some((_, _, stop)) = self.window {
                if pos >= stop {
                    self.done = true;
                    self.pileup = None;
                    break;
                }
            }
            pileup.goto_depth(tid, pos)?;
            self.from = (tid, pos + 1);
            return Ok(Some((tid, pos, pileup.depth(0))));
        }
        Ok(None)
    }

    /// Appends the current column's reads to `out`, in htslib's order.
    pub fn current_reads(&mut self, out: &mut Vec<ColumnRead>) -> Result<(), PileupError> {
        let Some(pileup) = self.pileup.as_mut() else { return Ok(()) };
        pileup.resolve_current()?;
        for r in pileup.reads(0) {
            let record = r.record().expect("the pileup keeps records").clone();
            out.push(ColumnRead {
                record,
                qpos: r.qpos() as i64,
                indel: r.indel(),
                is_del: r.is_del(),
                is_refskip: r.is_refskip(),
                is_head: r.is_head(),
                is_tail: r.is_tail(),
            });
        }
        Ok(())
    }
}
