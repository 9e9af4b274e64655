//! khmer's `trim_record` (khmer/trimming.py): how a read is cut at its
//! first low-abundance k-mer; shared by filter-abund and trim-low-abund.

use crate::hash::{hashes_into, Cleaning};
use crate::seqio::Record;
use crate::table::{median_at_least_counts, trim_at_counts, Countgraph};

/// The k-mer hashes and counts of one read: buffers reused from read to
/// read.
#[derive(Default)]
pub struct ReadScratch {
    pub(super) hashes: Vec<u64>,
    counts: Vec<u16>,
}

impl ReadScratch {
    /// The counts of `seq`'s k-mers in `graph` (the C++ parser's cleaning).
    pub(super) fn counts(&mut self, graph: &Countgraph, seq: &[u8]) -> &mut [u16] {
        self.hashes.clear();
        hashes_into(seq, graph.ksize(), Cleaning::CppParser, &mut self.hashes);
        self.counts.clear();
        graph.get_many(&self.hashes, &mut self.counts);
        &mut self.counts
    }
}

/// khmer's `trim_record`: what to do with `rec`.
pub fn trim_record(
    graph: &Countgraph,
    rec: &Record<'_>,
    cutoff: u16,
    variable_coverage: bool,
    normalize_to: u16,
    scratch: &mut ReadScratch,
) -> Trim {
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
