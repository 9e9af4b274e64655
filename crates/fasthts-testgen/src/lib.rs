//! fasthts-testgen: a seeded generator of realistic SAM test data, and the
//! workspace's test support.
//!
//! The same seed and options always produce the same bytes, on any machine:
//! all randomness comes from our own xoshiro256** ([`rng`]), no floating-point
//! transcendental functions are used, and nothing depends on hash-map order,
//! threads or the environment. By default records are written in exactly the
//! order `samtools sort` would put them in, so `samtools view -b` yields a
//! sorted, indexable BAM without a sort step (see `emit`).
//!
//! The binary is [`cli`]; tests make the same data in their own process with
//! [`cli::sam`], draw random numbers from [`rng::Rng`] and find their
//! fixtures, temporary directories and reference tools through [`support`].

mod aln;
pub mod cli;
mod emit;
mod gen;
mod genome;
pub mod rng;
mod sites;
pub mod support;
