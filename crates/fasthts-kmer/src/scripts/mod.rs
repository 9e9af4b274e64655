//! The algorithms of khmer's scripts, as library calls: counting
//! (load-into-counting), the abundance histogram (abundance-dist), digital
//! normalisation (normalize-by-median), abundance filtering (filter-abund)
//! and two-pass trimming (trim-low-abund). Each one reproduces the script's
//! exact semantics (see the spec); the command-line front ends only parse
//! options and write files.
//!
//! The read-handling scripts of khmer's protocols are here too:
//! interleave-reads, split-paired-reads, extract-paired-reads,
//! extract-long-sequences, fastq-to-fasta, readstats and
//! sample-reads-randomly; and count-median (per-read count statistics).
//!
//! One module per script; what several share: the paired readers
//! (`pairing`: khmer's `check_is_pair` and `broken_paired_reader`, over
//! screed's records for normalize-by-median and trim-low-abund, over the C++
//! parser's for split/extract-paired-reads and sample-reads-randomly) and khmer's
//! `trim_record` (`trimming`: filter-abund, trim-low-abund). Everything
//! public is re-exported here, so callers name `scripts::…` only.

mod abundance_dist;
mod count;
mod count_median;
mod extract_long;
mod extract_paired;
mod fastq_to_fasta;
mod filter_abund;
mod interleave;
mod normalize;
mod pairing;
mod readstats;
mod sample_reads;
mod split_paired;
mod trim;
mod trimming;

pub use abundance_dist::{abundance_histogram, write_abundance_csv};
pub use count::{consume_reader, consume_seqfile, ConsumeResult};
pub use count_median::{count_median_file, median_average_stddev};
pub use extract_long::extract_long_sequences;
pub use extract_paired::extract_paired_reads;
pub use fastq_to_fasta::fastq_to_fasta;
pub use filter_abund::filter_abund_file;
pub use interleave::interleave_reads;
pub use normalize::{normalize_file, Diagnostics, NormalizeOptions};
pub use pairing::{
    check_is_left, check_is_pair, check_is_pair_records, check_is_right, for_each_read_unit, for_each_unit, screed_check_after,
    screed_record, screed_view, BrokenPairedReader, ReadUnit, Unit, UnpairedReads,
};
pub use readstats::{average_length, format_read_stats, read_stats, FileStats};
pub use sample_reads::{Reservoirs, SampleOptions, SampleProgress, SampledUnit};
pub use split_paired::{split_paired_reads, SplitCounts};
pub use trim::{trim_pass1, trim_pass2, TrimOptions, TrimStats};
pub use trimming::{trim_decision, trim_record, ReadScratch, Trim};

/// Boxed error for the script drivers.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
