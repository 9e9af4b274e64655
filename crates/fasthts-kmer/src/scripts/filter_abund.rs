//! filter-abund: reads trimmed against a saved countgraph, which is only
//! read, so batches are filtered in parallel and written in input order.

use super::trimming::{trim_decision, Trim};
use super::BoxError;
use crate::hash::{hashes_into, Cleaning};
use crate::seqio::RecordBatch;
use crate::table::{Countgraph, SortScratch};
use std::io::Write;
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;

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
/// leave the cache (measured: BENCHMARKS.md, "Tuning constants").
/// Smaller tables are touched as densely by proportionally smaller
/// batches, and the batches in flight (reader queue plus each thread's
/// lookup arrays) then stay within khmer's peak RSS plus 10 %: see
/// [`filter_batch_bytes`].
const FILTER_BATCH_BYTES: usize = 4 << 20;

/// FASTQ bytes per filter-abund batch for `graph`: [`FILTER_BATCH_BYTES`]
/// at 4 GB of tables, proportionally less for smaller ones (at least
/// 256 KB, where per-batch costs start to show).
fn filter_batch_bytes(graph: &Countgraph) -> usize {
    let scaled = graph.total_table_bytes() / 1000;
    (scaled.min(FILTER_BATCH_BYTES as u64) as usize).max(256 << 10)
}

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
    let rx = crate::seqio::spawn_reader_batched(path, threads * 2 + 2, filter_batch_bytes(graph));
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
