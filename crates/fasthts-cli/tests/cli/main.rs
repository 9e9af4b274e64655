//! Integration tests of the `fasthts` binary: one test binary, a module per
//! area (`cargo test -p fasthts-cli --test cli`; one area:
//! `cargo test -p fasthts-cli --test cli -- sort::`). `common` has the
//! binary under test, the differential corpus and, re-exported, the
//! workspace's test support (fasthts_testgen::support); `harness` runs
//! commands under limits and measures them.

mod common;
mod harness;

mod bad_input;
mod bgzf_sam;
mod cat;
mod closed_pipes;
mod cram;
mod cram_regions;
mod cram_output;
mod cram_valgrind;
mod collate;
mod coverage;
mod depth;
mod faidx;
mod fastq;
mod fixmate;
mod inputs;
mod kmer_args;
mod kmer_onepass;
mod kmer_protocol;
mod kmer_reads;
mod kmer_vs_khmer;
mod large_positions;
mod long_cigars;
mod many_references;
mod markdup;
mod merge;
mod ref_aliases;
mod mosdepth;
mod robustness;
mod remote;
mod s3;
mod robustness_faults;
mod samtools_diff;
mod samtools_test_pl;
mod snp_pileup;
mod samgz_regions;
mod sormadup;
mod sort;
mod stats;
mod usage;
mod view;
