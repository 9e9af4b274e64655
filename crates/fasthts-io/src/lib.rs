//! The floor every fasthts crate stands on: one implementation of each
//! piece of I/O.
//!
//! * [`bgzf`]: BGZF blocks (parse, checked inflate, deflate), virtual
//!   offsets, the memory-mapped parallel readers (batches inflated on all
//!   threads, or ahead on the pool while the caller reads), a streaming
//!   reader over any [`std::io::Read`] that inflates ahead on threads of its
//!   own, and the parallel ordered writer;
//! * [`compression`]: what a stream's first bytes say it is (plain, gzip,
//!   BGZF, bzip2) and opening a path or stream decompressed by content;
//! * [`output`]: outputs that appear complete or not at all (a temporary
//!   name renamed into place, special files written directly) and the
//!   registry a signal handler cleans;
//! * [`pool`]: waiting for work handed to the rayon pool without
//!   deadlocking it;
//! * [`memory`]: `madvise` on mapped files and large buffers;
//! * [`progress`]: how much BGZF input has been inflated, for progress bars;
//! * [`remote`]: objects behind `http://` and `https://` URLs, and in
//!   object stores (`s3://`, `gs://`: `object_store` maps them to HTTP
//!   requests as htslib does, signing S3's), read by byte ranges (retried,
//!   checked to be of one version) or as a stream fetched ahead.

pub mod bgzf;
pub mod cancel;
pub mod compression;
mod error;
pub mod memory;
mod object_store;
pub mod output;
pub mod pool;
pub mod progress;
pub mod remote;
pub mod sparse;

pub use error::{os_message, PathError};
