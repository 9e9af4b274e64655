//! Mapping positions in a buffer of inflated blocks back to virtual offsets.

use super::{Block, VirtualOffset};

#[derive(Clone, Copy, Debug)]
struct Span {
    offset: u64,
    /// Start in the buffer; negative for a block whose head was dropped
    /// from the buffer while its tail was kept.
    start: isize,
    len: usize,
}

impl Span {
    fn end(&self) -> isize {
        self.start + self.len as isize
    }
}

/// Which block each byte of an inflated buffer came from, so that buffer
/// positions can be turned into htslib-canonical virtual offsets.
#[derive(Clone, Debug)]
pub struct BlockMap {
    spans: Vec<Span>,
    /// Offset just past the last non-empty block added: the canonical
    /// position of the end of the buffered data.
    end_offset: u64,
}

impl BlockMap {
    /// An empty map whose end is at compressed offset `end_offset`.
    pub fn new(end_offset: u64) -> Self {
        BlockMap { spans: Vec::new(), end_offset }
    }

    /// Records that `block` (non-empty) was inflated at buffer position `start`.
    pub fn push(&mut self, block: &Block, start: isize) {
        debug_assert!(block.uncompressed_size > 0);
        self.spans.push(Span { offset: block.offset, start, len: block.uncompressed_size as usize });
        self.end_offset = block.next_offset();
    }

    /// Compressed offset just past the last block added.
    pub fn end_offset(&self) -> u64 {
        self.end_offset
    }

    /// Forgets all blocks; the end stays where it was.
    pub fn clear(&mut self) {
        self.spans.clear();
    }

    /// The virtual offset of buffer position `p`, in htslib's canonical form:
    /// a position at the end of a block is the start of the next block.
    pub fn virtual_offset(&self, p: usize) -> VirtualOffset {
        let p = p as isize;
        let i = self.spans.partition_point(|s| s.end() <= p);
        let (compressed, within) = match self.spans.get(i) {
            Some(s) if s.start <= p => (s.offset, (p - s.start) as u64),
            _ => (self.end_offset, 0),
        };
        VirtualOffset::from((compressed << 16) | within)
    }

    /// The buffer position of virtual offset `v`, if its block is in the
    /// map and that position is in the buffer (not before its start).
    pub fn position_of(&self, v: VirtualOffset) -> Option<usize> {
        let (compressed, within) = (v.compressed(), v.uncompressed() as usize);
        let i = self.spans.partition_point(|s| s.offset < compressed);
        let s = self.spans.get(i).filter(|s| s.offset == compressed && within <= s.len)?;
        usize::try_from(s.start + within as isize).ok()
    }

    /// Drops blocks that end at or before buffer position `from` and moves
    /// the rest by `delta` (after the buffer's bytes were moved likewise).
    pub fn keep_from(&mut self, from: usize, delta: isize) {
        let first = self.spans.partition_point(|s| s.end() <= from as isize);
        self.spans.drain(..first);
        self.shift(delta);
    }

    /// Moves every block by `delta` buffer positions.
    pub fn shift(&mut self, delta: isize) {
        for s in &mut self.spans {
            s.start += delta;
        }
    }

    /// Puts the blocks of `other` holding bytes at or after `from`, moved by
    /// `delta`, in front of this map's blocks (a carried-over tail).
    pub fn prepend_from(&mut self, other: &BlockMap, from: usize, delta: isize) {
        let first = other.spans.partition_point(|s| s.end() <= from as isize);
        self.spans.splice(0..0, other.spans[first..].iter().map(|s| Span { start: s.start + delta, ..*s }));
    }
}
