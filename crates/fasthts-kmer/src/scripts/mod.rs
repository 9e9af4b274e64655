//! The algorithms of khmer's scripts, as library calls: counting
//! (load-into-counting), the abundance histogram (abundance-dist), digital
//! normalisation (normalize-by-median), abundance filtering (filter-abund)
//! and two-pass trimming (trim-low-abund). Each one reproduces the script's
//! exact semantics (see the spec); the command-line front ends only parse
//! options and write files.
//!
//! One module per script; what several share: the paired reader
//! (`pairing`: normalize-by-median, trim-low-abund) and khmer's
//! `trim_record` (`trimming`: filter-abund, trim-low-abund). Everything
//! public is re-exported here, so callers name `scripts::…` only.

mod abundance_dist;
mod count;
mod filter_abund;
mod normalize;
mod pairing;
mod trim;
mod trimming;

pub use abundance_dist::{abundance_histogram, write_abundance_csv};
pub use count::{consume_reader, consume_seqfile, ConsumeResult};
pub use filter_abund::filter_abund_file;
pub use normalize::{normalize_file, Diagnostics};
pub use pairing::{check_is_pair, for_each_unit, BrokenPairedReader, Unit};
pub use trim::{trim_pass1, trim_pass2, TrimOptions, TrimStats};
pub use trimming::{trim_decision, trim_record, ReadScratch, Trim};

/// Boxed error for the script drivers.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
