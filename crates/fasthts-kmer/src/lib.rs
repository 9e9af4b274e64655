//! khmer-compatible k-mer counting, digital normalisation and abundance
//! trimming.
//!
//! The behaviour follows khmer 3.0.0a3 exactly (see the project's
//! `khmer.md` specification), so tables can be exchanged with khmer and
//! outputs compared byte for byte:
//!
//! * [`hash`]: khmer's two-bit canonical hash (A=0, T=1, C=2, other=3;
//!   canonical = min(forward, reverse complement)), a rolling iterator, and
//!   each script's sequence cleaning folded into a byte → code table;
//! * [`primes`]: table sizes = the N largest odd primes below x;
//! * [`table::Countgraph`]: N tables of 8-bit saturating counters (count-min
//!   sketch), the bigcount map for counts above 255, and the `occupied` /
//!   `n_unique_kmers` statistics; [`table::Nodegraph`]: the presence Bloom
//!   filter abundance-dist uses;
//! * [`fastmod`]: the modulo by a prime table size without a hardware
//!   divide (precomputed reciprocal), bit-identical to `%`;
//! * [`ctfile`]: khmer's `.ct` format (and `.ct.gz`), with the bigcount
//!   entries in khmer's exact order ([`stlmap`] replays libstdc++'s
//!   `unordered_map`);
//! * [`seqio`]: FASTA/FASTQ input (plain, gzip, BGZF inflated in parallel,
//!   bzip2, stdin: [`fasthts_io::compression`]) parsed in
//!   batches without a copy per read, and khmer's record writer;
//! * [`split`]: record-aligned parts of a sequence file, for workers that
//!   count a part each;
//! * [`scripts`]: the algorithms of load-into-counting, abundance-dist,
//!   normalize-by-median, filter-abund and trim-low-abund;
//! * [`plot`]: the abundance histogram as SVG or PNG (an addition);
//! * [`command`]: what the scripts decide around their algorithms: the
//!   checks of their inputs and where their outputs go, with khmer's words.
//!
//! # Speed
//!
//! Counting is bound by memory latency (N random bins per k-mer in tables of
//! gigabytes). Table updates and lookups are issued in batches with the bins
//! of the next k-mers prefetched, so many cache misses are in flight at once;
//! in `consume_seqfile` each table's updates of a batch of 1 Mi k-mers are
//! first grouped by 64 KiB region (a stable counting sort) and applied in
//! address order, which cuts the TLB misses of gigabyte tables;
//! the tables use transparent huge pages; the bin is computed with two
//! multiplies instead of a division.
//!
//! # Threads and determinism
//!
//! * Counting (`consume_seqfile`) with T threads partitions the *tables*
//!   between threads: every thread applies every k-mer, in input order, to
//!   its own tables with plain stores, and per-k-mer flags ("a bin was
//!   empty", "all bins were full") are merged afterwards. The table bytes,
//!   `occupied`, `n_unique_kmers`, the bigcount values and the bigcount file
//!   order are therefore **identical to the single-thread result** at any
//!   thread count (khmer's own multi-threaded statistics race). An atomic,
//!   order-free API ([`Countgraph::consume_hashes_shared`]) is also there
//!   for callers that feed the table from many threads at once; its tables
//!   and `occupied` are exact, its `n_unique_kmers` and bigcount values can
//!   differ only when distinct k-mers share bins.
//! * filter-abund only reads the table: batches are filtered in parallel and
//!   written in input order.
//! * normalize-by-median and trim-low-abund update the table as they decide,
//!   so their decisions run in input order (reading and parsing run ahead
//!   on another thread); outputs equal khmer's.
//!
//! # k > 32
//!
//! khmer's countgraph stops at k = 32. As a documented extension, k up to 64
//! is supported: the same base codes rolled into 128-bit forward and
//! reverse-complement values, canonical = their minimum, folded to the
//! 64-bit table hash by [`hash::mix128`]. The CLI asks for `--long-k`; such
//! tables are written in the `.ct` layout but khmer cannot use them.

pub mod command;
pub mod ctfile;
pub mod fastmod;
pub mod hash;
pub mod hll;
pub mod plot;
pub mod primes;
pub mod pyfmt;
pub mod pyrandom;
pub mod scripts;
pub mod seqio;
pub mod sizing;
pub mod split;
pub mod stlmap;
pub mod table;

pub use hash::{Cleaning, KmerIter};
pub use table::{Countgraph, Nodegraph, SortScratch};
