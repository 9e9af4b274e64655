//! The algorithms of khmer's scripts, as library calls: counting
//! (load-into-counting), the abundance histogram (abundance-dist), digital
//! normalisation (normalize-by-median), abundance filtering (filter-abund)
//! and two-pass trimming (trim-low-abund). Each one reproduces the script's
//! exact semantics (see the spec); the command-line front ends only parse
//! options and write files.

use crate::hash::{hashes_into, Cleaning};
use crate::seqio::{OwnedRecord, Record, RecordBatch, SeqError, SeqReader};
use crate::table::{median_at_least_counts, median_of_counts, merge_partition_flags, trim_at_counts, Countgraph, Nodegraph, SortScratch};
use std::io::{self, Write};
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

/// Boxed error for the script drivers.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

// ---------------------------------------------------------------------------
// counting

/// What consuming one input file did.
#[derive(Debug, Default, Clone)]
pub struct ConsumeResult {
    /// Records read (including reads shorter than k).
    pub n_reads: u64,
    /// Bases read.
    pub n_bases: u64,
    /// K-mers added.
    pub n_kmers: u64,
    /// khmer's "Sequence is empty" condition: counting of this file stopped
    /// at that record (khmer's consuming thread dies; the script goes on).
    pub empty_sequence_at: Option<u64>,
}

fn first_empty(b: &RecordBatch) -> Option<usize> {
    b.iter().position(|r| r.seq.is_empty())
}

/// K-mers per counting batch: large enough that the sorted table update
/// ([`Countgraph::update_partition_sorted`]) touches each page of a
/// gigabyte table several times per batch, small enough that the batches
/// in flight (at most about 2 + 2 x threads) stay a small fraction of the
/// tables. Overridable for measurements with `FASTHTS_KMER_BATCH`.
const COUNT_BATCH_KMERS: usize = 1 << 20;

/// The canonical hashes of one batch of reads, in input order.
struct HashBatch {
    hashes: Vec<u64>,
    seq_no: u64,
    n_reads: u64,
    n_bases: u64,
}

/// Add every k-mer of every read of `path` (C++ parser cleaning) to the
/// graph (load-into-counting's `consume_seqfile`).
///
/// A reader thread parses and hashes ahead. With one counting thread the
/// updates are plain stores with prefetching. With several, the tables are
/// partitioned between the threads (thread t owns tables t, t+T, ...): each
/// thread applies every k-mer to its own tables in input order, without
/// atomics, and reports per-k-mer flags that are merged afterwards. So the
/// result, including `n_unique_kmers` and the bigcount map, is **identical
/// to the single-thread result** at any thread count (khmer's own
/// multi-thread statistics race). More threads than tables leave the extra
/// threads idle.
pub fn consume_seqfile(
    graph: &mut Countgraph,
    path: &str,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Result<ConsumeResult, SeqError> {
    consume_reader(graph, SeqReader::open(path)?, threads, progress)
}

/// [`consume_seqfile`] over an opened reader (e.g. one part of a file, for
/// the Python package's distributed counting).
pub fn consume_reader(
    graph: &mut Countgraph,
    mut reader: SeqReader,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Result<ConsumeResult, SeqError> {
    let workers = threads.max(1).min(graph.n_tables());
    // Few batches in flight: each holds COUNT_BATCH_KMERS hashes (8 bytes each).
    let (tx, rx) = sync_channel::<Result<Arc<HashBatch>, SeqError>>(1);
    let empty_at: Arc<Mutex<Option<u64>>> = Arc::new(Mutex::new(None));
    let empty_at2 = empty_at.clone();
    let k = graph.ksize();
    let batch_kmers = std::env::var("FASTHTS_KMER_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(COUNT_BATCH_KMERS).clamp(1, 8 << 20);
    let reader_thread = std::thread::spawn(move || {
        let mut seq_no = 0u64;
        // room for one more read batch past the target
        let new_batch = |seq_no| HashBatch { hashes: Vec::with_capacity(batch_kmers + (1 << 20)), seq_no, n_reads: 0, n_bases: 0 };
        let mut hb = new_batch(seq_no);
        loop {
            let (last, err) = match reader.next_batch() {
                Ok(Some(mut b)) => {
                    let stop = first_empty(&b);
                    if let Some(i) = stop {
                        *empty_at2.lock().unwrap() = Some(b.first_record + i as u64);
                        b.truncate(i);
                    }
                    for r in b.iter() {
                        hashes_into(r.seq, k, Cleaning::CppParser, &mut hb.hashes);
                    }
                    hb.n_reads += b.len() as u64;
                    hb.n_bases += b.bases();
                    (stop.is_some(), None)
                }
                Ok(None) => (true, None),
                Err(e) => (true, Some(e)),
            };
            if hb.hashes.len() >= batch_kmers || (last && hb.n_reads > 0) {
                seq_no += 1;
                let full = std::mem::replace(&mut hb, new_batch(seq_no));
                if tx.send(Ok(Arc::new(full))).is_err() {
                    return;
                }
            }
            if last {
                if let Some(e) = err {
                    let _ = tx.send(Err(e));
                }
                return;
            }
        }
    });
    let base = graph.reserve_order(0);
    let mut total = ConsumeResult::default();
    let mut n_batches = 0u64;
    let mut error = None;
    let mut account = |hb: &HashBatch, total: &mut ConsumeResult| {
        total.n_reads += hb.n_reads;
        total.n_bases += hb.n_bases;
        total.n_kmers += hb.hashes.len() as u64;
        n_batches = n_batches.max(hb.seq_no + 1);
        if let Some(p) = progress {
            p(total.n_reads, total.n_bases);
        }
    };
    if workers == 1 {
        let g: &Countgraph = graph;
        let all: Vec<usize> = (0..g.n_tables()).collect();
        let mut scratch = SortScratch::default();
        let mut flags = Vec::new();
        for msg in rx {
            match msg {
                Ok(hb) => {
                    flags.resize(hb.hashes.len(), 0);
                    let occ = g.update_partition_sorted(&hb.hashes, &all, &mut flags, &mut scratch);
                    g.apply_merged_flags(&hb.hashes, &flags, occ, ((base + hb.seq_no) as u128) << 64);
                    account(&hb, &mut total);
                }
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
    } else {
        let g: &Countgraph = graph;
        let (done_tx, done_rx) = sync_channel::<(Arc<HashBatch>, Vec<u8>, u64)>(workers);
        let mut work_txs = Vec::new();
        std::thread::scope(|s| {
            for t in 0..workers {
                let (wtx, wrx) = sync_channel::<Arc<HashBatch>>(1);
                work_txs.push(wtx);
                let done_tx = done_tx.clone();
                let tables = g.partition_tables(t, workers);
                s.spawn(move || {
                    let mut scratch = SortScratch::default();
                    for hb in wrx {
                        let mut flags = vec![0u8; hb.hashes.len()];
                        let occ = g.update_partition_sorted(&hb.hashes, &tables, &mut flags, &mut scratch);
                        if done_tx.send((hb, flags, occ)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(done_tx);
            // distributor: hand every batch to every worker
            let dist = s.spawn(move || {
                for msg in rx {
                    match msg {
                        Ok(hb) => {
                            for w in &work_txs {
                                if w.send(hb.clone()).is_err() {
                                    return None;
                                }
                            }
                        }
                        Err(e) => return Some(e),
                    }
                }
                None
            });
            // merger: combine the partitions' flags per batch
            let mut pending: std::collections::HashMap<u64, (usize, Vec<u8>, u64)> = std::collections::HashMap::new();
            for (hb, flags, occ) in done_rx {
                let e = pending.entry(hb.seq_no).or_insert_with(|| (0, Vec::new(), 0));
                if e.0 == 0 {
                    e.1 = flags;
                } else {
                    merge_partition_flags(&mut e.1, &flags);
                }
                e.0 += 1;
                e.2 += occ;
                if e.0 == workers {
                    let (_, merged, occ) = pending.remove(&hb.seq_no).unwrap();
                    g.apply_merged_flags(&hb.hashes, &merged, occ, ((base + hb.seq_no) as u128) << 64);
                    account(&hb, &mut total);
                }
            }
            error = dist.join().unwrap();
        });
    }
    let _ = reader_thread.join();
    graph.reserve_order(n_batches);
    if let Some(e) = error {
        return Err(e);
    }
    total.empty_sequence_at = *empty_at.lock().unwrap();
    Ok(total)
}

// ---------------------------------------------------------------------------
// abundance-dist

/// abundance-dist's histogram: for each k-mer of each read (C++ cleaning) in
/// order, skip it if a Bloom filter with the graph's table sizes says
/// "seen", else mark it and count `hist[graph.get(h)]`. Index 0..=65535.
///
/// With `threads` ≥ 2 the count lookups of a batch run on a second thread
/// while this one does the (order-dependent) Bloom tests; the histogram is
/// the same.
pub fn abundance_histogram(graph: &Countgraph, path: &str, threads: usize) -> Result<Vec<u64>, SeqError> {
    let mut tracking = Nodegraph::with_sizes(graph.sizes());
    let mut hist = vec![0u64; 65536];
    let rx = crate::seqio::spawn_reader(path, 4);
    let k = graph.ksize();
    let mut hashes = Vec::new();
    let mut seen = Vec::new();
    for msg in rx {
        let b = msg?;
        hashes.clear();
        for (i, r) in b.iter().enumerate() {
            if r.seq.is_empty() {
                // the k-mers before the bad record still count (as in khmer,
                // which fails at this point)
                return Err(SeqError {
                    msg: format!("{path}: record {}: Sequence is empty", b.first_record + i as u64 + 1),
                    empty_sequence: true,
                });
            }
            hashes_into(r.seq, k, Cleaning::CppParser, &mut hashes);
        }
        if threads <= 1 {
            graph.abundance_update(&mut tracking, &hashes, &mut hist);
        } else {
            seen.clear();
            let hs = &hashes;
            let counts = std::thread::scope(|s| {
                let h = s.spawn(|| {
                    let mut c = Vec::with_capacity(hs.len());
                    graph.get_many(hs, &mut c);
                    c
                });
                tracking.test_and_set_many(hs, &mut seen);
                h.join().unwrap()
            });
            for (&sn, &c) in seen.iter().zip(&counts) {
                if !sn {
                    hist[c as usize] += 1;
                }
            }
        }
    }
    Ok(hist)
}

/// Write abundance-dist's CSV (Python `csv.writer`, `\r\n` line ends).
/// Returns false (writing only the header) when the histogram is empty, which
/// khmer treats as an error.
pub fn write_abundance_csv<W: Write + ?Sized>(hist: &[u64], no_zero: bool, w: &mut W) -> io::Result<bool> {
    // khmer passes bins 0..65534 only (a count of 65535 is dropped)
    let hist = &hist[..hist.len().min(65535)];
    let total: u64 = hist.iter().sum();
    w.write_all(b"abundance,count,cumulative,cumulative_fraction\r\n")?;
    if total == 0 {
        return Ok(false);
    }
    let mut cumulative = 0u64;
    for (a, &count) in hist.iter().enumerate() {
        if count == 0 && no_zero {
            continue;
        }
        cumulative += count;
        let frac = crate::pyfmt::py_round_repr(cumulative as f64 / total as f64, 3);
        writeln!(w, "{a},{count},{cumulative},{frac}\r")?;
        if cumulative == total {
            break;
        }
    }
    Ok(true)
}

// ---------------------------------------------------------------------------
// pairing (khmer.utils.broken_paired_reader + check_is_pair)

fn split_left_right(name: &[u8]) -> (&[u8], &[u8]) {
    match name.iter().position(|&c| c == b' ' || c == b'\t') {
        Some(i) => (&name[..i], &name[i + 1..]),
        None => (name, &name[name.len()..]),
    }
}

fn before_first_slash(s: &[u8]) -> &[u8] {
    match s.iter().position(|&c| c == b'/') {
        Some(i) => &s[..i],
        None => s,
    }
}

/// khmer's `check_is_pair`. Errors when exactly one record has a quality.
pub fn check_is_pair(a: &OwnedRecord, b: &OwnedRecord) -> Result<bool, String> {
    if a.qual.is_some() != b.qual.is_some() {
        return Err("both records must be same type (FASTA or FASTQ)".into());
    }
    let (l1, r1) = split_left_right(&a.name);
    let (l2, r2) = split_left_right(&b.name);
    if l1.ends_with(b"/1") && l2.ends_with(b"/2") {
        let s1 = before_first_slash(l1);
        let s2 = before_first_slash(l2);
        Ok(!s1.is_empty() && s1 == s2)
    } else if l1 == l2 && r1.starts_with(b"1:") && r2.starts_with(b"2:") {
        Ok(true)
    } else if l1 == l2 && r1.ends_with(b"/1") && r2.ends_with(b"/2") {
        let s1 = before_first_slash(r1);
        let s2 = before_first_slash(r2);
        Ok(!s1.is_empty() && s1 == s2)
    } else {
        Ok(false)
    }
}

/// A unit from the paired reader.
#[derive(Debug)]
pub enum Unit {
    /// One read.
    Single(OwnedRecord),
    /// Two reads of a pair.
    Pair([OwnedRecord; 2]),
}

impl Unit {
    /// The reads of the unit.
    pub fn reads(&self) -> &[OwnedRecord] {
        match self {
            Unit::Single(a) => std::slice::from_ref(a),
            Unit::Pair(pair) => pair,
        }
    }

    /// Gives the unit's records back to `spare`, for reuse.
    fn recycle(self, spare: &mut Vec<OwnedRecord>) {
        match self {
            Unit::Single(a) => spare.push(a),
            Unit::Pair(pair) => spare.extend(pair),
        }
    }
}

/// khmer's `broken_paired_reader` as a push-style state machine.
/// Records whose sequence is empty are "falsy" in Python and never become
/// `prev` (they are dropped).
pub struct BrokenPairedReader {
    min_length: usize,
    force_single: bool,
    require_paired: bool,
    prev: Option<OwnedRecord>,
}

impl BrokenPairedReader {
    /// New reader state.
    pub fn new(min_length: usize, force_single: bool, require_paired: bool) -> Self {
        BrokenPairedReader { min_length, force_single, require_paired, prev: None }
    }

    /// Feed the next record; yields at most one unit.
    pub fn push(&mut self, rec: OwnedRecord) -> Result<Option<Unit>, String> {
        let mut out = None;
        let mut record = Some(rec);
        if let Some(prev) = self.prev.take().filter(|p| !p.seq.is_empty()) {
            let cur = record.as_ref().unwrap();
            let is_pair = if self.force_single { false } else { check_is_pair(&prev, cur)? };
            if is_pair {
                if prev.seq.len() < self.min_length || cur.seq.len() < self.min_length {
                    if self.require_paired {
                        record = None;
                    }
                } else {
                    out = Some(Unit::Pair([prev, record.take().unwrap()]));
                }
            } else {
                if self.require_paired {
                    return Err("Unpaired reads when require_paired is set!".into());
                }
                if prev.seq.len() >= self.min_length {
                    out = Some(Unit::Single(prev));
                }
            }
        } else if self.force_single {
            // (Python still evaluates check_is_pair first; with force_single
            // it can raise for mixed FASTA/FASTQ: handled above.)
        }
        self.prev = record;
        Ok(out)
    }

    /// End of input.
    pub fn finish(&mut self) -> Result<Option<Unit>, String> {
        match self.prev.take().filter(|p| !p.seq.is_empty()) {
            Some(prev) => {
                if self.require_paired {
                    return Err("Unpaired reads when require_paired is set!".into());
                }
                if prev.seq.len() >= self.min_length {
                    Ok(Some(Unit::Single(prev)))
                } else {
                    Ok(None)
                }
            }
            None => Ok(None),
        }
    }
}

/// Read all units of a file through the paired reader, calling `f` on each.
///
/// The records are copied out of the reader's batches into a few
/// [`OwnedRecord`]s that are reused from unit to unit: no allocation per
/// read once they have grown to the longest read.
pub fn for_each_unit(
    path: &str,
    min_length: usize,
    force_single: bool,
    require_paired: bool,
    screed_names: bool,
    allow_empty: bool,
    mut f: impl FnMut(&Unit) -> Result<(), BoxError>,
) -> Result<(), BoxError> {
    let rx = crate::seqio::spawn_reader(path, 4);
    let mut pr = BrokenPairedReader::new(min_length, force_single, require_paired);
    let mut spare: Vec<OwnedRecord> = Vec::new();
    for msg in rx {
        let b = msg?;
        for (i, r) in b.iter().enumerate() {
            if !allow_empty && r.seq.is_empty() {
                return Err(format!("{path}: record {}: Sequence is empty", b.first_record + i as u64 + 1).into());
            }
            if screed_names && r.seq.is_empty() && r.qual.is_some() {
                // screed does not consume the (empty) quality line of such a
                // record and then fails on the next line
                return Err(
                    format!("Bad FASTQ format: no '@' at beginning of line ({path}: record {})", b.first_record + i as u64 + 1).into()
                );
            }
            let mut rec = spare.pop().unwrap_or_default();
            // screed strips the header line
            rec.set_from(&if screed_names { Record { name: r.name.trim_ascii(), ..r } } else { r });
            if let Some(u) = pr.push(rec)? {
                f(&u)?;
                u.recycle(&mut spare);
            }
        }
    }
    if let Some(u) = pr.finish()? {
        f(&u)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// normalize-by-median

/// Running totals and the `-R` report of normalize-by-median.
pub struct Diagnostics {
    /// Reads seen (after the min-length filter).
    pub total: u64,
    /// Reads kept.
    pub kept: u64,
    report_frequency: u64,
    next_report_at: u64,
    last_report_at: u64,
    report: Option<Box<dyn Write + Send>>,
}

impl Diagnostics {
    /// New counters; writes the report header when a report is given.
    pub fn new(report: Option<Box<dyn Write + Send>>, frequency: u64) -> io::Result<Self> {
        let mut d =
            Diagnostics { total: 0, kept: 0, report_frequency: frequency, next_report_at: frequency, last_report_at: frequency, report };
        if let Some(r) = d.report.as_mut() {
            r.write_all(b"total,kept,f_kept\n")?;
        }
        Ok(d)
    }

    fn line(&mut self) -> io::Result<()> {
        let (t, k) = (self.total, self.kept);
        if let Some(r) = self.report.as_mut() {
            let f = crate::pyfmt::py_general(k as f64 / t as f64, 4);
            writeln!(r, "{t},{k},{f}")?;
            r.flush()?;
        }
        Ok(())
    }

    fn after_unit(&mut self) -> io::Result<()> {
        if self.total >= self.next_report_at {
            self.next_report_at += self.report_frequency;
            self.last_report_at = self.total;
            self.line()?;
        }
        Ok(())
    }

    fn end_file(&mut self) -> io::Result<()> {
        if self.report.is_some() && self.total != self.last_report_at {
            if self.total == 0 {
                return Err(io::Error::other("division by zero in report (empty first input)"));
            }
            self.line()?;
        }
        Ok(())
    }

    /// Flush the report.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(r) = self.report.as_mut() {
            r.flush()?;
        }
        Ok(())
    }
}

/// Digital normalisation of one input file (normalize-by-median's inner
/// loop): a unit is dropped iff every read in it has median ≥ cutoff;
/// otherwise its reads are written and then consumed.
#[allow(clippy::too_many_arguments)]
pub fn normalize_file(
    graph: &mut Countgraph,
    cutoff: u16,
    path: &str,
    require_paired: bool,
    force_single: bool,
    out: &mut dyn Write,
    diag: &mut Diagnostics,
    threads: usize,
) -> Result<(), BoxError> {
    let k = graph.ksize() as usize;
    if threads >= 2 && graph.n_tables() >= 2 {
        return normalize_split(graph, cutoff, path, require_paired, force_single, out, diag);
    }
    let mut hashes = Vec::new();
    for_each_unit(path, k, force_single, require_paired, true, true, |u| {
        let reads = u.reads();
        diag.total += reads.len() as u64;
        let all_high = reads.iter().all(|r| {
            hashes.clear();
            hashes_into(&r.seq, k as u32, Cleaning::Screed, &mut hashes);
            graph.median_at_least_hashes(&hashes, cutoff)
        });
        if !all_high {
            for r in reads {
                r.write(out)?;
                hashes.clear();
                hashes_into(&r.seq, k as u32, Cleaning::Screed, &mut hashes);
                let order = graph.reserve_order(1);
                graph.consume_hashes(&hashes, order);
                diag.kept += 1;
            }
        }
        diag.after_unit()?;
        Ok(())
    })?;
    diag.end_file()?;
    Ok(())
}

/// What the two threads of [`normalize_split`] exchange. `step` orders
/// them: for unit `u`, 3u+1 = its hashes are in `hashes`; 3u+2 = the helper
/// has put its partial minimums in `partial` (and its update flags of the
/// previous kept unit in `flags`); 3u+3 = `keep` holds the decision.
/// `u64::MAX` = no more units.
struct SplitShared {
    step: AtomicU64,
    aborted: AtomicBool,
    /// The helper thread left the lockstep by panicking.
    helper_failed: AtomicBool,
    keep: AtomicBool,
    hashes: Mutex<Vec<u64>>,
    partial: Mutex<Vec<u8>>,
    flags: Mutex<Vec<u8>>,
}

/// Waits until `step` reaches `target` and returns it, or returns
/// `u64::MAX` at once when `peer_failed` is set (the other thread gave up).
fn wait_step(step: &AtomicU64, target: u64, peer_failed: &AtomicBool) -> u64 {
    let mut spins = 0u32;
    loop {
        let v = step.load(Acquire);
        if v >= target {
            return v;
        }
        if peer_failed.load(Acquire) {
            return u64::MAX;
        }
        // A unit takes ~15 µs, so the other thread is nearly always about to
        // answer: spin, and yield only after a long wait (the reader thread
        // needs a core now and then). Yielding after 256 spins cost 11 s of
        // a 54 s run (500 Mbp, 4 x 1e9), spinning to 65536 ran it in 43 s.
        if spins < 1 << 16 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Ends the other thread's waits when one side of [`normalize_split`]
/// unwinds: without it a panic on either side left the other spinning for
/// ever, and the thread scope waiting for it, instead of the panic
/// surfacing.
struct LeaveOnPanic<'a> {
    shared: &'a SplitShared,
    helper: bool,
}

impl Drop for LeaveOnPanic<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        if self.helper {
            self.shared.helper_failed.store(true, Release);
        } else {
            self.shared.aborted.store(true, Release);
            self.shared.step.store(u64::MAX, Release);
        }
    }
}

/// The last kept unit of [`normalize_split`] on the deciding thread: its
/// statistics and bigcount hits wait for the helper's flags of that unit.
#[derive(Default)]
struct PendingUnit {
    hashes: Vec<u64>,
    flags: Vec<u8>,
    /// (table 0's 0 → 1 transitions, order number) when a unit is pending
    stats: Option<(u64, u64)>,
}

impl PendingUnit {
    fn apply(&mut self, graph: &Countgraph, helper_flags: &[u8]) {
        if let Some((occupied, order)) = self.stats.take() {
            merge_partition_flags(&mut self.flags, helper_flags);
            graph.apply_merged_flags(&self.hashes, &self.flags, occupied, (order as u128) << 64);
        }
    }
}

/// normalize-by-median with the tables split between two threads (this one
/// owns tables 0, 2, …, a helper 1, 3, …), in lockstep unit by unit: both
/// look up their share of the unit's k-mers at once, this thread combines
/// the minimums and decides, and both update their own tables if the unit
/// is kept. Each decision sees exactly the counts of every earlier unit, so
/// the output equals the single-thread run; the gain is twice the cache
/// misses in flight (the job is bound by random access to the tables).
#[allow(clippy::too_many_arguments)]
fn normalize_split(
    graph: &Countgraph,
    cutoff: u16,
    path: &str,
    require_paired: bool,
    force_single: bool,
    out: &mut dyn Write,
    diag: &mut Diagnostics,
) -> Result<(), BoxError> {
    let k = graph.ksize() as usize;
    let mine = graph.partition_tables(0, 2);
    let theirs = graph.partition_tables(1, 2);
    let shared = SplitShared {
        step: AtomicU64::new(0),
        aborted: AtomicBool::new(false),
        helper_failed: AtomicBool::new(false),
        keep: AtomicBool::new(false),
        hashes: Mutex::new(Vec::new()),
        partial: Mutex::new(Vec::new()),
        flags: Mutex::new(Vec::new()),
    };
    let mut pending = PendingUnit::default();
    std::thread::scope(|s| -> Result<(), BoxError> {
        let sh = &shared;
        let theirs = &theirs;
        let pending = &mut pending;
        s.spawn(move || {
            let _leave = LeaveOnPanic { shared: sh, helper: true };
            let (mut hashes, mut partial, mut flags) = (Vec::new(), Vec::new(), Vec::new());
            let mut base = 0u64;
            loop {
                if wait_step(&sh.step, base + 1, &sh.aborted) == u64::MAX {
                    return;
                }
                hashes.clear();
                hashes.extend_from_slice(&sh.hashes.lock().unwrap());
                graph.partial_mins(&hashes, theirs, &mut partial);
                std::mem::swap(&mut *sh.partial.lock().unwrap(), &mut partial);
                sh.step.store(base + 2, Release);
                wait_step(&sh.step, base + 3, &sh.aborted);
                if sh.aborted.load(Acquire) {
                    return;
                }
                if sh.keep.load(Acquire) {
                    flags.clear();
                    flags.resize(hashes.len(), 0);
                    graph.update_partition(&hashes, theirs, &mut flags);
                    std::mem::swap(&mut *sh.flags.lock().unwrap(), &mut flags);
                }
                base += 3;
            }
        });
        // this thread: parse, decide, write, update tables 0, 2, …
        let mut hashes: Vec<u64> = Vec::new();
        let mut ends: Vec<usize> = Vec::new();
        let (mut partial, mut counts) = (Vec::new(), Vec::new());
        let mut base = 0u64;
        let _leave = LeaveOnPanic { shared: sh, helper: false };
        let res = for_each_unit(path, k, force_single, require_paired, true, true, |u| {
            let reads = u.reads();
            diag.total += reads.len() as u64;
            hashes.clear();
            ends.clear();
            for r in reads {
                hashes_into(&r.seq, k as u32, Cleaning::Screed, &mut hashes);
                ends.push(hashes.len());
            }
            {
                let mut h = sh.hashes.lock().unwrap();
                h.clear();
                h.extend_from_slice(&hashes);
            }
            sh.step.store(base + 1, Release);
            graph.partial_mins(&hashes, &mine, &mut partial);
            if wait_step(&sh.step, base + 2, &sh.helper_failed) == u64::MAX {
                return Err("normalize: the table thread failed".into());
            }
            pending.apply(graph, &sh.flags.lock().unwrap());
            graph.combine_partial_mins(&hashes, &partial, &sh.partial.lock().unwrap(), &mut counts);
            let mut start = 0;
            let all_high = ends.iter().all(|&end| {
                let high = median_at_least_counts(&counts[start..end], cutoff);
                start = end;
                high
            });
            sh.keep.store(!all_high, Release);
            sh.step.store(base + 3, Release);
            base += 3;
            if !all_high {
                for r in reads {
                    r.write(out)?;
                    diag.kept += 1;
                }
                // one order number per read, as the single-thread path
                // reserves them; the unit's hashes are consumed as one run
                let order = graph.reserve_order(reads.len() as u64);
                pending.flags.clear();
                pending.flags.resize(hashes.len(), 0);
                let occupied = graph.update_partition(&hashes, &mine, &mut pending.flags);
                // the unit's hashes move to `pending`; its old buffer is
                // refilled by the next unit
                std::mem::swap(&mut hashes, &mut pending.hashes);
                pending.stats = Some((occupied, order));
            }
            diag.after_unit()?;
            Ok(())
        });
        if res.is_err() {
            sh.aborted.store(true, Release);
        }
        sh.step.store(u64::MAX, Release);
        res
    })?;
    // the helper has finished (scope joined): its flags of the last kept
    // unit are in place
    pending.apply(graph, &shared.flags.lock().unwrap());
    diag.end_file()?;
    Ok(())
}

// ---------------------------------------------------------------------------
// filter-abund / trim-low-abund

/// The k-mer hashes and counts of one read: buffers reused from read to
/// read.
#[derive(Default)]
pub struct ReadScratch {
    hashes: Vec<u64>,
    counts: Vec<u16>,
}

impl ReadScratch {
    /// The counts of `seq`'s k-mers in `graph` (the C++ parser's cleaning).
    fn counts(&mut self, graph: &Countgraph, seq: &[u8]) -> &mut [u16] {
        self.hashes.clear();
        hashes_into(seq, graph.ksize(), Cleaning::CppParser, &mut self.hashes);
        self.counts.clear();
        graph.get_many(&self.hashes, &mut self.counts);
        &mut self.counts
    }
}

/// khmer's `trim_record`: what to do with `rec`.
pub fn trim_record(graph: &Countgraph, rec: &Record<'_>, cutoff: u16, variable_coverage: bool, normalize_to: u16, scratch: &mut ReadScratch) -> Trim {
    let counts = scratch.counts(graph, rec.seq);
    trim_decision(graph.ksize() as usize, rec.seq.len(), counts, cutoff, variable_coverage, normalize_to)
}

/// What `trim_record` does to a read, from its k-mer counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// output unchanged
    Keep,
    /// drop
    Drop,
    /// output the first `n` bases
    Cut(usize),
}

/// `trim_record`'s decision from the counts of the read's k-mers.
pub fn trim_decision(k: usize, len: usize, counts: &[u16], cutoff: u16, variable_coverage: bool, normalize_to: u16) -> Trim {
    if variable_coverage && !median_at_least_counts(counts, normalize_to) {
        return Trim::Keep;
    }
    let t = trim_at_counts(counts, k, len, cutoff);
    if t < k {
        Trim::Drop
    } else if t == len {
        Trim::Keep
    } else {
        Trim::Cut(t)
    }
}

/// Buffers of [`filter_batch`], reused from batch to batch.
#[derive(Default)]
struct FilterScratch {
    hashes: Vec<u64>,
    /// end of each read's hashes in `hashes` (reads shorter than k have none)
    ends: Vec<usize>,
    counts: Vec<u16>,
    sort: SortScratch,
}

/// filter-abund on one batch: the counts of every k-mer of the batch are
/// looked up at once (in table order, see `Countgraph::get_many_sorted`),
/// then each read is decided from its counts as khmer's `trim_record` does.
fn filter_batch(
    graph: &Countgraph,
    b: &RecordBatch,
    path: &str,
    cutoff: u16,
    vc: bool,
    z: u16,
    scratch: &mut FilterScratch,
) -> Result<Vec<u8>, BoxError> {
    let k = graph.ksize() as usize;
    let FilterScratch { hashes, ends, counts, sort } = scratch;
    hashes.clear();
    ends.clear();
    for (i, r) in b.iter().enumerate() {
        if r.seq.is_empty() {
            return Err(format!("{path}: record {}: Sequence is empty", b.first_record + i as u64 + 1).into());
        }
        if r.seq.len() >= k {
            hashes_into(r.seq, k as u32, Cleaning::CppParser, hashes);
        }
        ends.push(hashes.len());
    }
    counts.clear();
    graph.get_many_sorted(hashes, counts, sort);
    let mut out = Vec::with_capacity(b.bases() as usize * 2 + 1024);
    let mut start = 0;
    for (r, &end) in b.iter().zip(ends.iter()) {
        let c = &counts[start..end];
        start = end;
        if r.seq.len() < k {
            continue;
        }
        match trim_decision(k, r.seq.len(), c, cutoff, vc, z) {
            Trim::Keep => crate::seqio::write_record(&mut out, r.name, r.seq, r.qual)?,
            Trim::Drop => {}
            Trim::Cut(t) => crate::seqio::write_record(&mut out, r.name, &r.seq[..t], r.qual.map(|q| &q[..t]))?,
        }
    }
    Ok(out)
}

/// Input per filter-abund batch. The batch's k-mers are looked up in
/// table order, so larger batches touch the tables more densely; past
/// ~4 MB of FASTQ (~1.7 M k-mers of 150 bp reads) the per-batch arrays
/// leave the cache. 500 Mbp, 4 x 1e9 tables, -T 2, quiet machine: 1 MB
/// 32.4 s, 2 MB 33.6 s, 4 MB 27.2–30.5 s, 8 MB 37.9 s, 16 MB 37.9 s wall.
const FILTER_BATCH_BYTES: usize = 4 << 20;

/// filter-abund on one input file. The graph is only read, so batches of
/// reads are filtered by `threads` threads and written in input order
/// (output identical at any thread count).
pub fn filter_abund_file(
    graph: &Countgraph,
    path: &str,
    cutoff: u16,
    variable_coverage: bool,
    normalize_to: u16,
    out: &mut dyn Write,
    threads: usize,
) -> Result<(), BoxError> {
    let rx = crate::seqio::spawn_reader_batched(path, threads * 2 + 2, FILTER_BATCH_BYTES);
    if threads <= 1 {
        let mut scratch = FilterScratch::default();
        for msg in rx {
            let b = msg?;
            out.write_all(&filter_batch(graph, &b, path, cutoff, variable_coverage, normalize_to, &mut scratch)?)?;
        }
        return Ok(());
    }
    let rx = Mutex::new(rx);
    let (done_tx, done_rx) = sync_channel::<(u64, Result<Vec<u8>, BoxError>)>(threads * 2);
    std::thread::scope(|s| -> Result<(), BoxError> {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let rx = &rx;
            let mut scratch = FilterScratch::default();
            s.spawn(move || loop {
                let msg = rx.lock().unwrap().recv();
                let (seq, res) = match msg {
                    Ok(Ok(b)) => (b.seq_no, filter_batch(graph, &b, path, cutoff, variable_coverage, normalize_to, &mut scratch)),
                    Ok(Err(e)) => (u64::MAX, Err(e.into())),
                    Err(_) => return,
                };
                let stop = res.is_err();
                if done_tx.send((seq, res)).is_err() || stop {
                    return;
                }
            });
        }
        drop(done_tx);
        let mut pending = std::collections::BTreeMap::new();
        let mut next = 0u64;
        let mut err: Option<BoxError> = None;
        for (seq, res) in done_rx {
            match res {
                Ok(v) => {
                    pending.insert(seq, v);
                }
                Err(e) => {
                    // an error in batch `seq` only matters once every batch
                    // before it is written; keep the earliest
                    if err.is_none() {
                        err = Some(e);
                    }
                    break;
                }
            }
            while let Some(v) = pending.remove(&next) {
                out.write_all(&v)?;
                next += 1;
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })
}

/// Options of trim-low-abund.
#[derive(Clone, Debug)]
pub struct TrimOptions {
    /// `-C`
    pub cutoff: u16,
    /// `-Z`
    pub trim_at_coverage: u16,
    /// `-V`
    pub variable_coverage: bool,
    /// `--diginorm` coverage, if on
    pub diginorm: Option<u16>,
    /// `--ignore-pairs`
    pub ignore_pairs: bool,
    /// `--single-pass`
    pub single_pass: bool,
}

/// Counters of trim-low-abund.
#[derive(Default, Debug, Clone)]
pub struct TrimStats {
    /// reads read
    pub n_reads: u64,
    /// bases read
    pub n_bp: u64,
    /// reads trimmed or dropped by trimming
    pub trimmed_reads: u64,
    /// reads saved for pass 2
    pub n_saved: u64,
    /// reads written
    pub written_reads: u64,
    /// bases written
    pub written_bp: u64,
    /// reads emitted untrimmed by pass 2 (`-V`, low coverage)
    pub n_skipped: u64,
    /// khmer adds 1 per skipped *read* here (a khmer quirk)
    pub bp_skipped: u64,
}

impl TrimStats {
    /// The counters trim-low-abund's summary reports: khmer takes
    /// reads/bases read and the skip counters right after pass 1, the
    /// written and trimmed counters after pass 2.
    pub fn summary(after_pass1: &TrimStats, end: &TrimStats) -> TrimStats {
        TrimStats {
            n_reads: after_pass1.n_reads,
            n_bp: after_pass1.n_bp,
            n_skipped: after_pass1.n_skipped,
            bp_skipped: after_pass1.bp_skipped,
            ..end.clone()
        }
    }
}

/// Trims `r` at k-mers below `cutoff`, emits what is left (if anything)
/// and counts it in `stats`.
fn trim_and_emit(
    graph: &Countgraph,
    r: &OwnedRecord,
    cutoff: u16,
    stats: &mut TrimStats,
    scratch: &mut ReadScratch,
    emit: &mut dyn FnMut(Record<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let r = r.as_record();
    let decision = trim_record(graph, &r, cutoff, false, 0, scratch);
    if decision != Trim::Keep {
        stats.trimmed_reads += 1;
    }
    let kept = match decision {
        Trim::Keep => Some(r),
        Trim::Drop => None,
        Trim::Cut(t) => Some(r.truncated(t)),
    };
    if let Some(t) = kept {
        emit(t)?;
        stats.written_reads += 1;
        stats.written_bp += t.seq.len() as u64;
    }
    Ok(())
}

/// trim-low-abund pass 1 over one file: emit (via `emit`) trimmed reads of
/// high-coverage units, consume and save (to `saver`) the others.
pub fn trim_pass1(
    graph: &mut Countgraph,
    path: &str,
    opt: &TrimOptions,
    saver: &mut dyn Write,
    stats: &mut TrimStats,
    emit: &mut dyn FnMut(Record<'_>) -> io::Result<()>,
) -> Result<(), BoxError> {
    let k = graph.ksize() as usize;
    let mut scratch = ReadScratch::default();
    for_each_unit(path, k, opt.ignore_pairs, false, false, false, |u| {
        let reads = u.reads();
        stats.n_reads += reads.len() as u64;
        stats.n_bp += reads.iter().map(|r| r.seq.len() as u64).sum::<u64>();
        let min_cov = reads.iter().map(|r| median_of_counts(scratch.counts(graph, &r.seq))).min().unwrap();
        if let Some(d) = opt.diginorm {
            if min_cov >= d {
                return Ok(());
            }
        }
        if min_cov >= opt.trim_at_coverage {
            for r in reads {
                trim_and_emit(graph, r, opt.cutoff, stats, &mut scratch, emit)?;
            }
        } else {
            for r in reads {
                let hashes = &mut scratch.hashes;
                hashes.clear();
                hashes_into(&r.seq, k as u32, Cleaning::CppParser, hashes);
                let order = graph.reserve_order(1);
                graph.consume_hashes(hashes, order);
                r.write(saver)?;
                stats.n_saved += 1;
            }
        }
        Ok(())
    })
}

/// trim-low-abund pass 2 over one saved file.
pub fn trim_pass2(
    graph: &Countgraph,
    pass2_path: &str,
    opt: &TrimOptions,
    stats: &mut TrimStats,
    emit: &mut dyn FnMut(Record<'_>) -> io::Result<()>,
) -> Result<(), BoxError> {
    let k = graph.ksize() as usize;
    let mut scratch = ReadScratch::default();
    for_each_unit(pass2_path, k, true, false, false, false, |u| {
        let reads = u.reads();
        stats.n_reads += reads.len() as u64;
        stats.n_bp += reads.iter().map(|r| r.seq.len() as u64).sum::<u64>();
        let trim = !opt.variable_coverage || reads.iter().all(|r| graph.median_at_least(&r.seq, opt.trim_at_coverage, Cleaning::CppParser));
        for r in reads {
            if trim {
                trim_and_emit(graph, r, opt.cutoff, stats, &mut scratch, emit)?;
            } else {
                stats.n_skipped += 1;
                stats.bp_skipped += 1;
                emit(r.as_record())?;
                stats.written_reads += 1;
                stats.written_bp += r.seq.len() as u64;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic on the deciding thread of the split normalize (here: its
    /// output writer) reaches the caller; it used to leave the table
    /// thread spinning and the call hanging for ever.
    #[test]
    fn split_normalize_panic_does_not_hang() {
        struct PanickingWriter;
        impl Write for PanickingWriter {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                panic!("writer failed");
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let dir = std::env::temp_dir().join(format!("fasthts-split-panic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fa = dir.join("r.fa");
        std::fs::write(&fa, ">a\nACGTACGGTTACGATCGATCGGATCGATTTACG\n>b\nTTGACGATCGGCTAGCTAGCATCGATCGGGAC\n").unwrap();
        let path = fa.to_str().unwrap().to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut g = Countgraph::new(20, 100_000, 4).unwrap();
                let mut diag = Diagnostics::new(None, 0).unwrap();
                normalize_file(&mut g, 20, &path, false, false, &mut PanickingWriter, &mut diag, 2)
            }));
            let _ = tx.send(outcome.is_err());
        });
        let panicked = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("split normalize hung after a panic");
        assert!(panicked);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn rec(name: &str, seq: &str, q: bool) -> OwnedRecord {
        OwnedRecord { name: name.into(), seq: seq.into(), qual: if q { Some(vec![b'I'; seq.len()]) } else { None } }
    }

    #[test]
    fn pairing_rules() {
        assert!(check_is_pair(&rec("a/1", "", true), &rec("a/2", "", true)).unwrap());
        assert!(!check_is_pair(&rec("a/1", "", true), &rec("b/2", "", true)).unwrap());
        assert!(!check_is_pair(&rec("/1", "", true), &rec("/2", "", true)).unwrap());
        assert!(check_is_pair(&rec("x 1:N:0", "", true), &rec("x 2:N:0", "", true)).unwrap());
        assert!(check_is_pair(&rec("SRR1 a/1", "", true), &rec("SRR1 a/2", "", true)).unwrap());
        assert!(check_is_pair(&rec("a/1", "", true), &rec("a/2", "", false)).is_err());
    }

    #[test]
    fn broken_pairs() {
        let mut pr = BrokenPairedReader::new(3, false, false);
        let mut units = Vec::new();
        for r in [
            rec("a/1", "ACGT", false),
            rec("a/2", "ACGT", false),
            rec("b", "ACGT", false),
            rec("c/1", "AC", false),
            rec("c/2", "ACGT", false),
        ] {
            if let Some(u) = pr.push(r).unwrap() {
                units.push(u);
            }
        }
        if let Some(u) = pr.finish().unwrap() {
            units.push(u);
        }
        assert_eq!(units.len(), 3);
        assert!(matches!(&units[0], Unit::Pair(..)));
        assert!(matches!(&units[1], Unit::Single(r) if r.name == b"b"));
        assert!(matches!(&units[2], Unit::Single(r) if r.name == b"c/2"));
    }

    #[test]
    fn csv_format() {
        let mut h = vec![0u64; 65536];
        h[1] = 3;
        h[2] = 1;
        let mut v = Vec::new();
        write_abundance_csv(&h, false, &mut v).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "abundance,count,cumulative,cumulative_fraction\r\n0,0,0,0.0\r\n1,3,3,0.75\r\n2,1,4,1.0\r\n"
        );
        let mut v = Vec::new();
        write_abundance_csv(&h, true, &mut v).unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), "abundance,count,cumulative,cumulative_fraction\r\n1,3,3,0.75\r\n2,1,4,1.0\r\n");
    }
}
