//! One BGZF block: header parsing and checked inflate.
//!
//! A BGZF block is a gzip member whose FEXTRA field carries a `BC` subfield
//! with the member's total size, so blocks can be found by hopping from
//! header to header without inflating anything.

use super::BgzfError;
use libdeflater::{DecompressionError, Decompressor};

/// Fixed part of a gzip member header (ID1 ID2 CM FLG MTIME XFL OS XLEN).
const FIXED_HEADER_LEN: usize = 12;
/// CRC32 and ISIZE.
pub const FOOTER_LEN: usize = 8;
/// The header the writers put before each block's deflated data: the
/// fixed part and the one extra subfield, `BC` with the block's size.
pub const HEADER_LEN: usize = FIXED_HEADER_LEN + 6;
/// Largest size of a block, compressed or not.
pub const MAX_BLOCK_SIZE: usize = 1 << 16;
/// gzip FLG bit announcing an extra field.
const FEXTRA: u8 = 4;
/// gzip FLG bits reserved by RFC 1952, which must be zero (zlib, and so
/// htslib's format detection, refuses a member with any of them set).
const FLG_RESERVED: u8 = 0xe0;

/// The empty block htslib writes at the end of every BGZF file.
pub const EOF_MARKER: [u8; 28] = [
    0x1f, 0x8b, 0x08, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x06, 0x00, 0x42, 0x43, 0x02, 0x00, 0x1b, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// Where a block sits in the file and what its trailer promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Offset of the block's first byte in the file.
    pub offset: u64,
    /// Total size of the block on disk (header, deflate data, trailer).
    pub size: u32,
    /// Offset of the deflate data within the block.
    pub data_start: u32,
    /// Uncompressed size (ISIZE), at most 65536.
    pub uncompressed_size: u32,
    /// CRC32 of the uncompressed data.
    pub crc32: u32,
}

impl Block {
    /// Offset of the block that follows this one.
    pub fn next_offset(&self) -> u64 {
        self.offset + u64::from(self.size)
    }

    /// Parses the block starting at `offset` of `file` (the whole file), checking
    /// the gzip magic, the BC subfield and that the block lies inside the file.
    pub fn parse(file: &[u8], offset: u64) -> Result<Block, BgzfError> {
        let start = usize::try_from(offset).map_err(|_| BgzfError::Truncated { offset })?;
        let rest = file.get(start..).ok_or(BgzfError::Truncated { offset })?;
        let header = BlockHeader::parse(rest, offset)?;
        let size = header.size;
        let block = rest.get(..size).ok_or(BgzfError::Truncated { offset })?;
        let trailer = &block[size - FOOTER_LEN..];
        let crc32 = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let uncompressed_size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        if uncompressed_size as usize > MAX_BLOCK_SIZE {
            return Err(BgzfError::Corrupt { offset, reason: "uncompressed size over 64 KiB" });
        }
        Ok(Block { offset, size: size as u32, data_start: header.len as u32, uncompressed_size, crc32 })
    }

    /// The raw deflate stream of this block within `file`.
    fn deflate_data<'a>(&self, file: &'a [u8]) -> &'a [u8] {
        let start = self.offset as usize + self.data_start as usize;
        let end = self.offset as usize + self.size as usize - FOOTER_LEN;
        &file[start..end]
    }

    /// Inflates this block into `out`, which must be exactly
    /// `uncompressed_size` bytes long, and checks ISIZE and CRC32.
    pub fn inflate_into(&self, file: &[u8], decompressor: &mut Decompressor, out: &mut [u8]) -> Result<(), BgzfError> {
        debug_assert_eq!(out.len(), self.uncompressed_size as usize);
        let offset = self.offset;
        let n = match decompressor.deflate_decompress(self.deflate_data(file), out) {
            Ok(n) => n,
            Err(DecompressionError::BadData) => return Err(BgzfError::Corrupt { offset, reason: "invalid deflate data" }),
            Err(DecompressionError::InsufficientSpace) => return Err(BgzfError::Corrupt { offset, reason: "data longer than its ISIZE" }),
        };
        if n != out.len() {
            return Err(BgzfError::Corrupt { offset, reason: "data shorter than its ISIZE" });
        }
        if libdeflater::crc32(out) != self.crc32 {
            return Err(BgzfError::Corrupt { offset, reason: "CRC32 mismatch" });
        }
        crate::progress::count_inflated(self.size.into());
        Ok(())
    }
}

/// What a block's header says: enough to cut the block out of a stream
/// before any of its data is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Length of the header (fixed part and extra field).
    pub len: usize,
    /// Total size of the block (header, deflate data, trailer).
    pub size: usize,
}

impl BlockHeader {
    /// Length of the fixed part of a header, which says how long the rest is
    /// ([`BlockHeader::extra_len`]).
    pub const FIXED_LEN: usize = FIXED_HEADER_LEN;

    /// Length of the extra field announced by a header's fixed part
    /// (`fixed` holds at least [`BlockHeader::FIXED_LEN`] bytes).
    pub fn extra_len(fixed: &[u8]) -> usize {
        usize::from(u16::from_le_bytes([fixed[10], fixed[11]]))
    }

    /// Parses the header at the start of `head`, the block's bytes from
    /// compressed offset `offset` on (at least its header; more is ignored).
    pub fn parse(head: &[u8], offset: u64) -> Result<BlockHeader, BgzfError> {
        if head.len() < FIXED_HEADER_LEN {
            return Err(if head.len() >= 2 && head[..2] != [0x1f, 0x8b] {
                BgzfError::NotBgzf { offset }
            } else {
                BgzfError::Truncated { offset }
            });
        }
        if head[0] != 0x1f || head[1] != 0x8b || head[2] != 8 || head[3] & FEXTRA == 0 || head[3] & FLG_RESERVED != 0 {
            return Err(BgzfError::NotBgzf { offset });
        }
        let xlen = Self::extra_len(head);
        let extra = head.get(FIXED_HEADER_LEN..FIXED_HEADER_LEN + xlen).ok_or(BgzfError::Truncated { offset })?;
        let bsize = find_bc_subfield(extra).ok_or(BgzfError::NotBgzf { offset })?;
        let size = usize::from(bsize) + 1;
        let len = FIXED_HEADER_LEN + xlen;
        if size < len + FOOTER_LEN {
            return Err(BgzfError::Corrupt { offset, reason: "block size smaller than its header" });
        }
        Ok(BlockHeader { len, size })
    }
}

/// Finds the `BC` subfield in a gzip extra field and returns BSIZE.
fn find_bc_subfield(mut extra: &[u8]) -> Option<u16> {
    while extra.len() >= 4 {
        let (si1, si2) = (extra[0], extra[1]);
        let slen = usize::from(u16::from_le_bytes([extra[2], extra[3]]));
        let payload = extra.get(4..4 + slen)?;
        if si1 == b'B' && si2 == b'C' && slen == 2 {
            return Some(u16::from_le_bytes([payload[0], payload[1]]));
        }
        extra = &extra[4 + slen..];
    }
    None
}

/// True when `file` ends with the BGZF EOF marker block.
pub fn has_eof_marker(file: &[u8]) -> bool {
    file.ends_with(&EOF_MARKER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eof_marker_parses_as_empty_block() {
        let b = Block::parse(&EOF_MARKER, 0).unwrap();
        assert_eq!(b.size, 28);
        assert_eq!(b.uncompressed_size, 0);
        assert_eq!(b.next_offset(), 28);
        let mut d = Decompressor::new();
        b.inflate_into(&EOF_MARKER, &mut d, &mut []).unwrap();
    }

    #[test]
    fn truncated_and_foreign_inputs_are_errors() {
        assert!(matches!(Block::parse(&EOF_MARKER[..20], 0), Err(BgzfError::Truncated { offset: 0 })));
        assert!(matches!(Block::parse(&EOF_MARKER[..5], 0), Err(BgzfError::Truncated { offset: 0 })));
        assert!(matches!(Block::parse(b"BAM\x01 not gzip at all", 0), Err(BgzfError::NotBgzf { offset: 0 })));
        assert!(matches!(Block::parse(&EOF_MARKER, 28), Err(BgzfError::Truncated { offset: 28 })));
        // Plain gzip (no FEXTRA) is not BGZF.
        let mut plain = EOF_MARKER;
        plain[3] = 0;
        assert!(matches!(Block::parse(&plain, 0), Err(BgzfError::NotBgzf { .. })));
    }

    #[test]
    fn reserved_flag_bits_are_refused() {
        for bit in [0x20, 0x40, 0x80] {
            let mut bad = EOF_MARKER;
            bad[3] |= bit;
            assert!(matches!(Block::parse(&bad, 0), Err(BgzfError::NotBgzf { offset: 0 })), "FLG bit {bit:#x}");
        }
        // FTEXT (bit 0) is only a hint and stays accepted.
        let mut text = EOF_MARKER;
        text[3] |= 1;
        assert!(Block::parse(&text, 0).is_ok());
    }

    #[test]
    fn flipped_crc_is_detected() {
        let mut bad = EOF_MARKER;
        bad[20] ^= 1;
        let b = Block::parse(&bad, 0).unwrap();
        let mut d = Decompressor::new();
        assert!(matches!(b.inflate_into(&bad, &mut d, &mut []), Err(BgzfError::Corrupt { reason: "CRC32 mismatch", .. })));
    }
}
