//! fasthts: a parallel engine for BAM files.

pub mod bam;
pub mod bgzf;
mod error;
pub mod flagstat;
pub mod index;
pub mod indexer;
pub mod output;
pub mod region;

pub use error::Error;
