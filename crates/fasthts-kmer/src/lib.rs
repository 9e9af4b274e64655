//! khmer-compatible k-mer work (in progress).
