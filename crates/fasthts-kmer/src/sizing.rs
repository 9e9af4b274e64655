//! khmer's table-size arithmetic (`khmer_args.optimal_size`): the number
//! and size of tables for a number of distinct k-mers and either a memory
//! budget or a false-positive rate (what the scripts' `-U` sizes), and
//! unique-kmers' `--diagnostics` report of both. The arithmetic is Python's, step for step (floats, then
//! `int()`), so the numbers are khmer's.

/// khmer's `optimal_size` result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TableSizing {
    /// number of tables
    pub n_tables: u64,
    /// entries per table
    pub table_size: u64,
    /// n_tables × table_size
    pub mem_use: u128,
    /// expected false-positive rate
    pub fp_rate: f64,
}

/// Python's `ZeroDivisionError`, which khmer's sizing raises for 0 (or, with
/// a false-positive rate, very few) distinct k-mers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DivisionByZero;

impl std::fmt::Display for DivisionByZero {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("float division by zero")
    }
}
impl std::error::Error for DivisionByZero {}

fn expected_fp(num_kmers: u64, table_size: u64, n_tables: u64) -> Result<f64, DivisionByZero> {
    if table_size == 0 {
        return Err(DivisionByZero);
    }
    Ok((1.0 - (-(num_kmers as f64) / table_size as f64).exp()).powf(n_tables as f64))
}

/// `estimate_optimal_with_K_and_M`: tables for `num_kmers` in `mem_cap` bytes.
pub fn optimal_with_memory(num_kmers: u64, mem_cap: f64) -> Result<TableSizing, DivisionByZero> {
    if num_kmers == 0 {
        return Err(DivisionByZero);
    }
    let n_tables = (std::f64::consts::LN_2 * (mem_cap / num_kmers as f64)) as u64;
    let n_tables = n_tables.max(1);
    let table_size = (mem_cap / n_tables as f64) as u64;
    let fp_rate = expected_fp(num_kmers, table_size, n_tables)?;
    Ok(TableSizing { n_tables, table_size, mem_use: table_size as u128 * n_tables as u128, fp_rate })
}

/// `estimate_optimal_with_K_and_f`: tables for `num_kmers` at false-positive
/// rate `fp_rate`.
pub fn optimal_with_fp_rate(num_kmers: u64, fp_rate: f64) -> Result<TableSizing, DivisionByZero> {
    // math.log(f, 0.5) is log(f) / log(0.5)
    let n_tables = ((fp_rate.ln() / 0.5f64.ln()) as u64).max(1);
    let table_size = (-(num_kmers as f64) / (1.0 - fp_rate.powf(1.0 / n_tables as f64)).ln()) as u64;
    let fp = expected_fp(num_kmers, table_size, n_tables)?;
    Ok(TableSizing { n_tables, table_size, mem_use: table_size as u128 * n_tables as u128, fp_rate: fp })
}

/// Python's `'{:W e}'` of a number: six decimals, a signed exponent of at
/// least two digits, right-aligned in `width`.
fn py_exp(x: f64, width: usize) -> String {
    let s = format!("{x:.6e}");
    let (mantissa, exp) = s.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{:>width$}", format!("{mantissa}e{sign}{:02}", exp.abs()))
}

/// khmer's `graphsize_args_report(unique_kmers, fp_rate)`: the sizings for
/// false-positive rates 0.1–0.9 and for memory budgets of 1 to 5000 GB.
pub fn graphsize_args_report(unique_kmers: u64, fp_rate: f64) -> Result<String, DivisionByZero> {
    let mut lines = vec![
        String::new(),
        format!("number of unique k-mers: \t{unique_kmers}"),
        format!("false positive rate: \t{fp_rate:.3}"),
        String::new(),
        "If you have expected false positive rate to achieve:".into(),
        "expected_fp\tnumber_hashtable(Z)\tsize_hashtable(H)\texpected_memory_usage".into(),
    ];
    for tenths in 1..10 {
        let s = optimal_with_fp_rate(unique_kmers, tenths as f64 / 10.0)?;
        lines.push(format!("{:11.3}\t{:19}\t{}\t{}", s.fp_rate, s.n_tables, py_exp(s.table_size as f64, 17), py_exp(s.mem_use as f64, 21)));
    }
    lines.push(String::new());
    lines.push("If you have expected memory to use:".into());
    lines.push("expected_memory_usage\tnumber_hashtable(Z)\tsize_hashtable(H)\texpected_fp".into());
    for gb in [1u64, 5, 10, 20, 50, 100, 200, 300, 400, 500, 1000, 2000, 5000] {
        let s = optimal_with_memory(unique_kmers, (gb * 1_000_000_000) as f64)?;
        lines.push(format!("{}\t{:19}\t{}\t{:11.3}", py_exp(s.mem_use as f64, 21), s.n_tables, py_exp(s.table_size as f64, 17), s.fp_rate));
    }
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_exponent_format() {
        assert_eq!(py_exp(41.0, 17), "     4.100000e+01");
        assert_eq!(py_exp(986401700.0, 21), "         9.864017e+08");
        assert_eq!(py_exp(0.0, 5), "0.000000e+00");
    }

    #[test]
    fn report_rows_as_khmer() {
        // unique-kmers.py -R of 26 distinct 17-mers (khmer 3.0)
        let r = graphsize_args_report(26, 0.01).unwrap();
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[6], "      0.104\t                  3\t     4.100000e+01\t         1.230000e+02");
        assert_eq!(lines[18], "         9.864017e+08\t           26659506\t     3.700000e+01\t      0.000");
        assert_eq!(graphsize_args_report(0, 0.01), Err(DivisionByZero));
        assert_eq!(graphsize_args_report(1, 0.01), Err(DivisionByZero));
    }

    /// Values khmer 3.0's functions give (run with Python 3.11): what -U sizes.
    #[test]
    fn as_khmer_estimates() {
        let e = optimal_with_fp_rate(1_000_000, 0.1).unwrap();
        assert_eq!((e.n_tables, e.table_size, e.mem_use, e.fp_rate), (3, 1_602_775, 4_808_325, 0.10000010610533881));
        let m = optimal_with_memory(1_000_000, 4e6).unwrap();
        assert_eq!((m.n_tables, m.table_size, m.mem_use, m.fp_rate), (2, 2_000_000, 4_000_000, 0.15481812174617549));
    }
}
