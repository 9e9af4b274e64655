//! The count-min sketch (khmer's `Countgraph` with `ByteStorage`) and the
//! presence Bloom filter (`Nodegraph`, used by abundance-dist).
//!
//! # Concurrency and determinism
//!
//! The N tables of u8 counters are shared by all threads. Updates come in two
//! modes:
//! * **exclusive** (`&mut self`, one thread): plain loads and stores, no
//!   `lock` prefix;
//! * **shared** (`&self`, many threads): each bin is incremented with a
//!   compare-and-swap loop that stops at 255, so a counter never wraps (khmer's unguarded race can wrap
//!   a bin to 0; we do not copy that). Each bin therefore receives exactly
//!   `min(255, adds)` increments whatever the interleaving, and the **tables
//!   are identical at any thread count**.
//!
//! Statistics: `occupied` counts 0→1 transitions of table 0; the old value
//! returned by the atomic tells exactly one add, so it is exact at any thread
//! count. `n_unique_kmers` (+1 when *any* bin of the add was 0) and the
//! bigcount values depend on the order of adds only when distinct k-mers share
//! bins; at one thread they equal khmer's exactly, at several threads they can
//! differ in those collision cases (as khmer's own values do).
//!
//! Bigcount *order*: each bigcount entry remembers the position (in input
//! order: batch number, k-mer index) of the add that created it; at save time
//! entries are replayed in that order into an emulated libstdc++
//! `unordered_map` ([`crate::stlmap`]). So the file order is deterministic and
//! equal to khmer's single-thread order at any thread count.

mod bigcount;
mod countgraph;
mod memory;
mod nodegraph;
mod partition;
mod pass;
mod sorted;
#[cfg(test)]
mod tests;

pub use countgraph::{median_at_least_counts, median_of_counts, trim_at_counts, Countgraph};
pub use nodegraph::Nodegraph;
pub use partition::merge_partition_flags;
pub use sorted::SortScratch;

pub(crate) use countgraph::table_bytes_for;
pub(crate) use memory::{ByteTable, SharedMap};

use crate::hash::MAX_K_EXT;

/// Saturation value of the 8-bit counters.
pub const MAX_COUNT: u8 = 255;

/// Saturation value of the bigcount map.
pub const MAX_BIGCOUNT: u16 = 65535;

/// Errors from building a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableError {
    /// k outside 1..=32.
    BadK(u32),
    /// Not enough primes below the size.
    NoPrimes {
        /// tables asked for
        n: usize,
        /// size limit
        x: u64,
    },
    /// Zero tables.
    NoTables,
    /// Graphs of different k or table sizes cannot be merged.
    Incompatible,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::BadK(k) => write!(f, "k-mer size must be between 1 and {MAX_K_EXT}, got {k}"),
            TableError::NoPrimes { n, x } => write!(f, "unable to find {n} prime numbers < {x}"),
            TableError::NoTables => write!(f, "the number of tables must be at least 1"),
            TableError::Incompatible => write!(f, "cannot merge countgraphs of different k or table sizes"),
        }
    }
}
impl std::error::Error for TableError {}
