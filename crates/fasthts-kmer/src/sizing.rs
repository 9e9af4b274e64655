//! khmer's estimates of a count-min table's size from the number of unique
//! k-mers (`khmer_args.estimate_optimal_with_K_and_M` and
//! `estimate_optimal_with_K_and_f`), computed as khmer computes them (the
//! same floating-point steps, so the same sizes): what `-U` does.

/// One estimate: tables, entries per table, total memory, and the
/// false-positive rate expected with them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub n_tables: u64,
    pub table_size: u64,
    pub memory: f64,
    pub fp_rate: f64,
}

/// The tables a memory ceiling `mem_cap` (bytes, one per entry) gives for
/// `unique_kmers` k-mers, and their false-positive rate.
pub fn for_memory(unique_kmers: f64, mem_cap: f64) -> Estimate {
    let n_tables = std::f64::consts::LN_2 * (mem_cap / unique_kmers);
    let n = (n_tables as u64).max(1);
    let table_size = (mem_cap / n as f64) as u64;
    let memory = (table_size * n) as f64;
    let fp_rate = (1.0 - (-unique_kmers / table_size as f64).exp()).powf(n as f64);
    Estimate { n_tables: n, table_size, memory, fp_rate }
}

/// The smallest tables for `unique_kmers` k-mers at false-positive rate
/// `fp_rate`.
pub fn for_fp_rate(unique_kmers: f64, fp_rate: f64) -> Estimate {
    // Python's math.log(x, base): log(x) / log(base)
    let n_tables = fp_rate.ln() / 0.5f64.ln();
    let n = (n_tables as u64).max(1);
    let table_size = (-unique_kmers / (1.0 - fp_rate.powf(1.0 / n as f64)).ln()) as u64;
    let memory = (table_size * n) as f64;
    let fp = (1.0 - (-unique_kmers / table_size as f64).exp()).powf(n as f64);
    Estimate { n_tables: n, table_size, memory, fp_rate: fp }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values khmer 3.0's functions give (run with Python 3.11).
    #[test]
    fn as_khmer_estimates() {
        let e = for_fp_rate(1e6, 0.1);
        assert_eq!((e.n_tables, e.table_size), (3, 1_602_775));
        let m = for_memory(1e6, 4e6);
        assert_eq!((m.n_tables, m.table_size), (2, 2_000_000));
        assert_eq!((e.memory, e.fp_rate), (4_808_325.0, 0.10000010610533881));
        assert_eq!((m.memory, m.fp_rate), (4_000_000.0, 0.15481812174617549));
    }
}
