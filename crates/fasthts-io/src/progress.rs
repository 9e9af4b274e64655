//! How far the BGZF input of a job has got, for a front end's progress bar:
//! the compressed bytes of every block inflated so far in this process, by
//! any reader (mapped or streaming). One relaxed atomic add per block (a
//! block is up to 64 KiB of input and tens of microseconds of inflating),
//! so counting costs nothing measurable whether or not a bar is shown.

use std::sync::atomic::{AtomicU64, Ordering};

static INFLATED: AtomicU64 = AtomicU64::new(0);

/// Adds a block of `compressed_bytes` to the count.
#[inline]
pub(crate) fn count_inflated(compressed_bytes: u64) {
    INFLATED.fetch_add(compressed_bytes, Ordering::Relaxed);
}

/// Compressed bytes of all the BGZF blocks inflated so far in this process.
pub fn inflated_bytes() -> u64 {
    INFLATED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn inflating_a_block_counts_its_compressed_size() {
        let data = crate::bgzf::compress_all(&[7u8; 1000], 6);
        let before = super::inflated_bytes();
        let block = crate::bgzf::Block::parse(&data, 0).unwrap();
        let mut out = vec![0u8; 1000];
        block.inflate_into(&data, &mut libdeflater::Decompressor::new(), &mut out).unwrap();
        assert!(super::inflated_bytes() >= before + u64::from(block.size));
    }
}
