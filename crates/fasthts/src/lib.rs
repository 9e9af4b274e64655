//! fasthts: a parallel engine for BAM files.

pub mod bgzf;
