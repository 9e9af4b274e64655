//! BGZF: block discovery, parallel inflate and parallel deflate.

mod virtual_offset;

pub use virtual_offset::{VirtualOffset, MAX_COMPRESSED_OFFSET};
