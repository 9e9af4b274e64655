//! BGZF virtual file offsets.

use std::fmt;

/// A position in a BGZF file: the compressed offset of a block and an offset
/// into that block's uncompressed data.
///
/// ```text
/// 63                                16 15              0
/// +------------------------------------+----------------+
/// | compressed offset of the block     | offset in block|
/// +------------------------------------+----------------+
/// ```
///
/// Ordering of virtual offsets is file order, as the BAI and CSI formats
/// require.
///
/// ```
/// use fasthts_io::bgzf::VirtualOffset;
/// let v = VirtualOffset::new(1234, 56).unwrap();
/// assert_eq!(v.compressed(), 1234);
/// assert_eq!(v.uncompressed(), 56);
/// assert_eq!(u64::from(v), (1234 << 16) | 56);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VirtualOffset(u64);

/// Largest compressed offset a virtual offset can hold (48 bits).
pub const MAX_COMPRESSED_OFFSET: u64 = (1 << 48) - 1;

impl VirtualOffset {
    /// Builds a virtual offset; `None` when `compressed` needs more than 48
    /// bits.
    pub fn new(compressed: u64, uncompressed: u16) -> Option<Self> {
        (compressed <= MAX_COMPRESSED_OFFSET).then_some(Self((compressed << 16) | u64::from(uncompressed)))
    }

    /// Compressed offset of the BGZF block.
    pub fn compressed(self) -> u64 {
        self.0 >> 16
    }

    /// Offset within the block's uncompressed data.
    pub fn uncompressed(self) -> u16 {
        self.0 as u16
    }
}

impl From<u64> for VirtualOffset {
    fn from(raw: u64) -> Self {
        Self(raw)
    }
}

impl From<VirtualOffset> for u64 {
    fn from(v: VirtualOffset) -> Self {
        v.0
    }
}

impl fmt::Display for VirtualOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.compressed(), self.uncompressed())
    }
}
