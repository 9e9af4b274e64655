//! Integration tests of the library's public API (no binary involved): one
//! test binary, a module per area (`cargo test -p fasthts --test api`).
//! Test support (paths to `tests/data`, TempDir, samtools, Rng) comes from
//! fasthts-testgen.

mod pileup;
mod sam_write;
mod scatter;
