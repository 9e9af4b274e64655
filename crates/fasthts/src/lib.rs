//! fasthts: a parallel engine for BAM files.

pub mod bam;
pub mod bgzf;
mod error;
pub mod flagstat;

pub use error::Error;
