//! fasthts: a parallel engine for BAM files.
//!
//! BAM files are memory-mapped ([`bam::BamFile`]); BGZF blocks are found by
//! their headers and inflated with libdeflate on all threads ([`bgzf`]);
//! records are zero-copy views into the inflated bytes
//! ([`bam::RecordRef`]); the BAI/CSI index ([`index`]) cuts the genome into
//! regions that the rayon pool reads in parallel ([`region`]), with results
//! gathered in genome order. [`flagstat`] and [`index`] reproduce
//! `samtools flagstat`, `index` and `idxstats` byte for byte on top.
//! [`sam`] reads SAM text into BAM records and writes records back as SAM
//! text, byte for byte as htslib does. [`command`] is what the `fasthts`
//! command line and the Python package both call: one function per job
//! (flagstat, index, idxstats, sort, snp-pileup, quickcheck) with typed
//! options, where every decision a user can observe is taken once.
//!
//! # Count records per region, in parallel
//!
//! ```
//! use fasthts::bam::BamFile;
//! use fasthts::index::IndexFormat;
//! use fasthts::region::{self, Plan};
//!
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam");
//! let bam = BamFile::open(path)?;
//! // Any index works: read one with `Index::from_path`, or build it.
//! let index = fasthts::index::build(&bam, IndexFormat::Bai)?;
//! // Regions of ~64 kB of compressed data, tiling every reference, plus
//! // the unplaced reads at the end of the file.
//! let regions = region::plan(&bam, &index, Plan::BalancedBytes(64 << 10));
//! let counts = region::scatter(&bam, &index, &regions, |_region, records| {
//!     let (mut n, mut mapq30) = (0u64, 0u64);
//!     while let Some(r) = records.next_record()? {
//!         n += 1;
//!         mapq30 += u64::from(r.mapq() >= 30);
//!     }
//!     Ok((n, mapq30))
//! })?;
//! // Every record is seen exactly once, whatever the plan or thread count.
//! let total: u64 = counts.iter().map(|c| c.0).sum();
//! assert_eq!(total, fasthts::flagstat::count_sequential(&bam)?.0.iter().map(|c| c.total).sum::<u64>());
//! # Ok::<(), fasthts::Error>(())
//! ```
//!
//! A job that visits every record of its region, as this one does, can
//! hand a closure to [`region::RegionReader::for_each_record`] instead:
//! it walks each inflated batch in place, with only htslib's record checks
//! per record (what `flagstat` does).
//!
//! # Read every record in file order
//!
//! ```
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam");
//! let bam = fasthts::bam::BamFile::open(path)?;
//! let mut records = bam.records()?;
//! let mut longest = 0;
//! while let Some(r) = records.next_record()? {
//!     longest = longest.max(r.seq_len());
//! }
//! assert!(longest > 0);
//! # Ok::<(), fasthts::Error>(())
//! ```

pub mod alignment_file;
pub mod bam;
pub mod collate;
pub mod command;
pub mod cram;
pub mod coverage;
pub mod depth;
mod error;
pub mod faidx;
pub mod fixmate;
pub mod flagstat;
pub mod format;
pub mod gather;
pub mod index;
pub mod input;
mod khash_hash;
pub mod markdup;
pub mod merge;
pub mod mosdepth;
mod names;
pub mod pileup;
pub mod record_output;
pub mod region;
pub mod report;
pub mod sam;
pub mod sort;
pub mod stats;
#[cfg(test)]
mod test_support;
pub mod view;
pub mod whole_file;

pub use error::Error;
/// BGZF, from the I/O crate the library stands on.
pub use fasthts_io::bgzf;
/// Outputs that appear complete or not at all, from the I/O crate.
pub use fasthts_io::output;
