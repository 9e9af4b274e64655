//! load-into-counting: every k-mer of every read added to the countgraph
//! (khmer's `consume_seqfile`).

use crate::hash::{hashes_into, Cleaning};
use crate::seqio::{RecordBatch, SeqError, SeqReader};
use crate::table::{merge_partition_flags, Countgraph, SortScratch};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

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
/// tables. That is for 4 GB of tables; smaller tables take proportionally
/// fewer k-mers per batch (the same density of touches, and the batches
/// in flight within khmer's peak RSS plus 10 %), at least 64 Ki.
/// Overridable for measurements with `FASTHTS_KMER_BATCH`.
const COUNT_BATCH_KMERS: usize = 1 << 20;

/// K-mers per counting batch for `graph`: see [`COUNT_BATCH_KMERS`].
fn count_batch_kmers(graph: &Countgraph) -> usize {
    let scaled = graph.total_table_bytes() / 4096;
    (scaled.min(COUNT_BATCH_KMERS as u64) as usize).max(64 << 10)
}

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
    let batch_kmers = std::env::var("FASTHTS_KMER_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| count_batch_kmers(graph)).clamp(1, 8 << 20);
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
    // A cancelled call (Ctrl-C in the Python package) stops before the
    // next batch of hashes rather than after the batches in flight.
    let cancel = fasthts_io::cancel::current();
    let cancelled = || cancel.as_ref().is_some_and(fasthts_io::cancel::Token::is_cancelled);
    let cancelled_error = || SeqError { msg: "cancelled".to_string(), empty_sequence: false };
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
            if cancelled() {
                error = Some(cancelled_error());
                break;
            }
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
                        if cancelled() {
                            return;
                        }
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
                    if cancelled() {
                        return Some(cancelled_error());
                    }
                    match msg {
                        Ok(hb) => {
                            for w in &work_txs {
                                if w.send(hb.clone()).is_err() {
                                    // A worker stops early only when cancelled.
                                    return cancelled().then(cancelled_error);
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
