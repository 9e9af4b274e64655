//! htslib's khash hash functions, where samtools' output depends on them:
//! the name hash of `samtools view --subsample` and of the pileup's
//! mate-overlap tie-break.

/// khash's `__ac_X31_hash_string` over a C string (`char` is signed on
/// x86; the string ends at its first NUL).
pub(crate) fn x31_hash(name: &[u8]) -> u32 {
    let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
    let Some((&first, rest)) = name.split_first() else { return 0 };
    let mut h = first as i8 as i32 as u32;
    for &c in rest {
        h = (h << 5).wrapping_sub(h).wrapping_add(c as i8 as i32 as u32);
    }
    h
}

/// khash's `__ac_Wang_hash`.
pub(crate) fn wang_hash(mut key: u32) -> u32 {
    key = key.wrapping_add(!(key << 15));
    key ^= key >> 10;
    key = key.wrapping_add(key << 3);
    key ^= key >> 6;
    key = key.wrapping_add(!(key << 11));
    key ^= key >> 16;
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x31_and_wang_as_khash() {
        assert_eq!(x31_hash(b"a"), 97);
        assert_eq!(x31_hash(b"ab"), 97 * 31 + 98);
        assert_eq!(x31_hash(b"ab\0c"), x31_hash(b"ab"));
        assert_eq!(x31_hash(b""), 0);
        assert_eq!(wang_hash(0), wang_hash(0));
    }
}
