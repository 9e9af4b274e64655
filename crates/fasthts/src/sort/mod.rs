//! `samtools sort`: coordinate order, in bounded memory.
//!
//! Records are copied from the inflated input into one contiguous arena per
//! batch, with their sort keys extracted once; a full batch is sorted on
//! all threads (a stable sort, so ties keep input order as in samtools) and,
//! if more input follows, written as a run file of raw records. Runs are
//! merged in input order (again keeping ties stable) into the parallel BGZF
//! writer. What is implemented so far: coordinate order from BAM input.

mod header;
mod key;
mod run;

pub use header::{add_pg_line, set_sort_order};
pub use key::{coordinate_key, record_coordinate_key};
pub use run::{RunDir, RunReader};

use crate::bam::{BamFile, Header, RecordRef};
use crate::bgzf::BgzfWriter;
use crate::Error;
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;
use std::path::PathBuf;

/// How to sort.
#[derive(Clone, Debug)]
pub struct SortOptions {
    /// Memory for record batches, in bytes, for all threads together
    /// (samtools' `-m` times its threads).
    pub memory: usize,
    /// BGZF level of the output on zlib's scale (samtools' `-l`).
    pub level: u32,
    /// Prefix for the run directory (samtools' `-T`).
    pub temp_prefix: PathBuf,
    /// `(version, command line)` for the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
}

/// What a sort did, for reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortStats {
    /// Records sorted.
    pub records: u64,
    /// Run files written (0: sorted in memory).
    pub runs: usize,
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
    fn push(&mut self, r: &RecordRef<'_>) {
        let bytes = r.as_bytes();
        self.entries.push((record_coordinate_key(r), self.data.len()));
        self.data.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.data.extend_from_slice(bytes);
    }

    fn footprint(&self) -> usize {
        self.data.len() + self.entries.len() * ENTRY_BYTES
    }

    fn sort(&mut self) {
        // Stable: equal keys stay in input order, as samtools keeps them.
        self.entries.par_sort_by_key(|e| e.0);
    }

    fn record(&self, offset: usize) -> &[u8] {
        let n = u32::from_le_bytes(self.data[offset..offset + 4].try_into().expect("4 bytes")) as usize;
        &self.data[offset..offset + 4 + n]
    }

    fn sorted_records(&self) -> impl Iterator<Item = &[u8]> {
        self.entries.iter().map(|&(_, off)| self.record(off))
    }

    fn clear(&mut self) {
        self.data.clear();
        self.entries.clear();
    }
}

/// Sorts `bam` by coordinate into `out` (a BAM stream), as `samtools sort`,
/// and returns `out` flushed.
pub fn sort_coordinate<W: Write>(bam: &BamFile, opts: &SortOptions, out: W) -> Result<(SortStats, W), Error> {
    let mut arena = Arena::default();
    let mut runs: Option<RunDir> = None;
    let mut run_paths = Vec::new();
    let mut stats = SortStats::default();
    let limit = opts.memory.max(1 << 20);
    crate::bam::scan(bam, |r, _| {
        arena.push(r);
        stats.records += 1;
        if arena.footprint() >= limit {
            arena.sort();
            let dir = match &mut runs {
                Some(d) => d,
                None => runs.insert(RunDir::create(&opts.temp_prefix)?),
            };
            run_paths.push(dir.write_run(arena.sorted_records())?);
            arena.clear();
        }
        Ok(())
    })?;
    arena.sort();
    stats.runs = run_paths.len();

    let mut text = set_sort_order(&bam.header().text, "coordinate");
    if let Some((version, cl)) = &opts.program {
        text = add_pg_line(&text, "fasthts", version, cl);
    }
    let header = Header { text, references: bam.header().references.clone() };
    let mut w = BgzfWriter::new(out, opts.level);
    w.write_all(&header.to_bytes())?;
    w.end_block()?;
    if run_paths.is_empty() {
        for r in arena.sorted_records() {
            w.write_all(r)?;
        }
    } else {
        merge(&run_paths, &arena, &mut w)?;
    }
    let out = w.finish()?;
    drop(runs);
    Ok((stats, out))
}

/// K-way merge of the runs (in input order) and the last in-memory batch,
/// ties broken by source order so the sort stays stable.
fn merge<W: Write>(run_paths: &[PathBuf], last: &Arena, w: &mut BgzfWriter<W>) -> Result<(), Error> {
    let mut readers = run_paths.iter().map(|p| RunReader::open(p)).collect::<Result<Vec<_>, _>>()?;
    let key_of = |rec: &[u8]| record_coordinate_key(&RecordRef::new_prevalidated(&rec[4..]));
    let mut heap = BinaryHeap::with_capacity(readers.len() + 1);
    for (i, r) in readers.iter_mut().enumerate() {
        if r.advance()? {
            heap.push(Reverse((key_of(&r.record), i)));
        }
    }
    let mem = readers.len();
    let mut mem_next = 0usize;
    if let Some(&(k, _)) = last.entries.first() {
        heap.push(Reverse((k, mem)));
    }
    while let Some(Reverse((_, src))) = heap.pop() {
        if src == mem {
            let (_, off) = last.entries[mem_next];
            w.write_all(last.record(off))?;
            mem_next += 1;
            if let Some(&(k, _)) = last.entries.get(mem_next) {
                heap.push(Reverse((k, mem)));
            }
        } else {
            let r = &mut readers[src];
            w.write_all(&r.record)?;
            if r.advance()? {
                heap.push(Reverse((key_of(&r.record), src)));
            }
        }
    }
    Ok(())
}
