//! BGZF: block discovery, parallel inflate and parallel deflate.
//!
//! A BGZF file is a series of gzip members ("blocks") of at most 64 KiB, each
//! announcing its own size, so a memory-mapped file can be cut into blocks by
//! reading headers alone and the blocks inflated independently on all cores
//! ([`BlockReader`]), or inflated ahead on the pool while a caller reads
//! it through ([`inflate_ahead`]); a stream is cut block by block as it
//! arrives ([`StreamReader`]). Every block is parsed by [`Block::parse`] (or
//! [`BlockHeader::parse`] before its data has arrived) and inflated by
//! [`Block::inflate_into`].

mod ahead;
mod block;
mod block_map;
mod reader;
mod stream;
mod system_deflate;
mod system_zlib;
mod virtual_offset;
mod writer;

pub use ahead::{inflate_ahead, AheadBatch, AheadEnd, AheadError};
pub use block::{has_eof_marker, Block, BlockHeader, EOF_MARKER, MAX_BLOCK_SIZE};
pub use block_map::BlockMap;
pub use reader::inflate_blocks_here;
pub use reader::{decompress_all, inflate_blocks, BlockReader, DEFAULT_BATCH_BYTES};
pub use stream::StreamReader;
pub use system_deflate::{compress_all_as_htslib, have_system_libdeflate};
pub use system_zlib::have_system_zlib;
pub use virtual_offset::{VirtualOffset, MAX_COMPRESSED_OFFSET};
pub use writer::{compress_all, compress_block, htslib_libdeflate_level, libdeflate_level, BgzfWriter, BLOCK_DATA_SIZE, DEFAULT_LEVEL};

/// What can be wrong with BGZF data. Offsets are compressed file offsets of
/// the block concerned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BgzfError {
    /// The bytes at `offset` are not a BGZF block header.
    #[error("not BGZF data at offset {offset} (bad block header)")]
    NotBgzf {
        /// Offset of the bad header.
        offset: u64,
    },
    /// The file ends inside the block starting at `offset`.
    #[error("truncated BGZF block at offset {offset}")]
    Truncated {
        /// Offset of the incomplete block.
        offset: u64,
    },
    /// The block at `offset` is damaged.
    #[error("corrupt BGZF block at offset {offset}: {reason}")]
    Corrupt {
        /// Offset of the damaged block.
        offset: u64,
        /// What check failed.
        reason: &'static str,
    },
}

impl BgzfError {
    /// Compressed offset of the block the error is about.
    pub fn offset(&self) -> u64 {
        match *self {
            BgzfError::NotBgzf { offset } | BgzfError::Truncated { offset } | BgzfError::Corrupt { offset, .. } => offset,
        }
    }
}
