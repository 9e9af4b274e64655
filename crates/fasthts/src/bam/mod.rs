//! BAM: header, zero-copy records, and memory-mapped files.

pub mod binning;
pub mod edit;
mod file;
mod header;
mod reader;
pub mod record;
mod scan;
mod stream;

pub use file::BamFile;
pub use header::{Header, Reference};
pub use reader::RecordReader;
pub use scan::{scan, RecordPlace};
pub use stream::BamStream;
pub use record::{flags, Aux, AuxValue, Cigar, CigarOp, RecordRef};

pub use crate::error::bam::BamError;
