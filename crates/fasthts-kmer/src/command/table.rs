//! The table options of the scripts that make a countgraph (khmer_args:
//! `-k`, `-N`, `-x`, `-M`, `-U`, `--fp-rate`, `--small-count`) and
//! khmer's decisions from them: which are refused, how big each table
//! is, and when a table is too full to trust.

use super::error::Error;
use crate::primes::tablesize_from_float;
use crate::pyfmt::{py_g, py_repr};
use crate::sizing::{optimal_with_fp_rate, optimal_with_memory};
use crate::Countgraph;
use std::fmt;
use std::path::Path;

/// The largest table size (`-x`, and `-M`'s total) taken: 1e15 bytes.
/// Larger has no use, and near 2^63 the table's allocation overflows and
/// the prime search (trial division, as khmer's) takes hours.
pub const MAX_TABLE_BYTES: f64 = 1e15;

/// khmer's `memory_setting` (`-M`): a float, or a float with a decimal
/// K/M/G/T suffix (case-insensitive: `4G` is 4e9). The range is the
/// caller's to check (see [`MAX_TABLE_BYTES`]).
pub fn parse_memory_setting(s: &str) -> Option<f64> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return Some(v);
    }
    let (prefix, suffix) = s.split_at(s.len().saturating_sub(1));
    let mult = match suffix.to_ascii_uppercase().as_str() {
        "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    };
    prefix.trim().parse::<f64>().ok().map(|v| v * mult)
}

/// The table options of a script that makes a countgraph, as khmer's
/// `khmer_args` reads them; the default is khmer's.
#[derive(Clone, Debug, PartialEq)]
pub struct TableOptions {
    /// `-k`: the k-mer size (up to 32, as khmer; up to 64 with `long_k`).
    pub ksize: u32,
    /// `-N`: the number of tables (up to 20; more with `--force`; at most 255).
    pub n_tables: usize,
    /// `-U`: the number of distinct k-mers expected (0: not given).
    pub unique_kmers: f64,
    /// `--fp-rate`: the false-positive ceiling for `-U` (instead of the script's).
    pub fp_rate: Option<f64>,
    /// `-x`: the entries of each table.
    pub max_tablesize: f64,
    /// `-M`: the memory of all tables, in bytes (sets `-x` to it / N).
    pub max_memory_usage: Option<f64>,
    /// `--small-count`: 4-bit counters (khmer's SmallCountgraph).
    pub small_count: bool,
    /// `--long-k`: allow 32 < k <= 64 (a fasthts extension; khmer cannot
    /// read such tables).
    pub long_k: bool,
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions {
            ksize: 32,
            n_tables: 4,
            unique_kmers: 0.0,
            fp_rate: None,
            max_tablesize: 1e6,
            max_memory_usage: None,
            small_count: false,
            long_k: false,
        }
    }
}

/// What sizing a table has to say on the way (each `Display`s as khmer
/// prints it). khmer's "info" notes are silenced by `-q`, the others are
/// not (see [`TableNote::is_info`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TableNote {
    /// More than 20 tables, let through by `--force`.
    ManyTablesForced,
    /// `--fp-rate` replaces the script's false-positive ceiling.
    FpRateOverridden {
        /// The script's ceiling.
        default: f64,
        /// `--fp-rate`.
        given: f64,
    },
    /// With `-U` and `-M`, the estimated false-positive rate is above the
    /// ceiling (an error unless `--force`).
    FpRateAboveCeiling {
        /// The estimate.
        fp_rate: f64,
        /// The ceiling.
        max_fp: f64,
    },
    /// With `-U`, `-x` is smaller than the table the ceiling needs; it is
    /// kept.
    TableTooSmall {
        /// The entries the ceiling needs.
        recommended: f64,
        /// `-x`.
        current: f64,
        /// The estimated false-positive rate with `-x`.
        fp_rate: f64,
    },
    /// With `-U`, `-M` is set to the memory the ceiling needs (at least 1e6).
    CeilingSet {
        /// The memory, in bytes.
        ceiling: f64,
    },
}

impl TableNote {
    /// Whether khmer prints it as information (not with `-q`) rather
    /// than as a warning or error (always).
    pub fn is_info(&self) -> bool {
        matches!(self, TableNote::ManyTablesForced | TableNote::FpRateOverridden { .. } | TableNote::CeilingSet { .. })
    }
}

impl fmt::Display for TableNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableNote::ManyTablesForced => {
                write!(f, "\n*** Warning: Maximum recommended number of tables is 20, discarded by force nonetheless!\n")
            }
            TableNote::FpRateOverridden { default, given } => {
                write!(f, "*** INFO: Overriding default fp {} with new fp: {}", py_repr(*default), py_repr(*given))
            }
            TableNote::FpRateAboveCeiling { fp_rate, max_fp } => write!(
                f,
                "\n*** ERROR: The given restrictions yield an estimate false positive rate of {},\n*** which is above the recommended false positive ceiling of {}!",
                py_repr(*fp_rate),
                py_repr(*max_fp)
            ),
            TableNote::TableTooSmall { recommended, current, fp_rate } => write!(
                f,
                "\n*** Warning: The given tablesize is too small!\n*** Recommended tablesize is: {:>5} bytes\n*** Current is: {:>5} bytes\n*** Estimated FP rate with current config is: {}\n",
                py_g(*recommended),
                py_g(*current),
                py_repr(*fp_rate)
            ),
            TableNote::CeilingSet { ceiling } => {
                write!(f, "*** INFO: set memory ceiling automatically.\n*** Ceiling is: {:>3} bytes\n", py_g(*ceiling))
            }
        }
    }
}

impl TableOptions {
    /// The entries per table the options ask for: `-M` / N, else `-x`.
    pub fn tablesize(&self) -> f64 {
        match self.max_memory_usage {
            Some(m) if m != 0.0 => m / self.n_tables as f64,
            _ => self.max_tablesize,
        }
    }

    /// The entries per table of the graph made: with `-M`, 2 per byte for
    /// `--small-count` (khmer's `calculate_graphsize` of a smallcountgraph).
    pub fn graph_tablesize(&self) -> f64 {
        match self.max_memory_usage {
            Some(m) if m != 0.0 && self.small_count => 2.0 * m / self.n_tables as f64,
            _ => self.tablesize(),
        }
    }

    /// khmer's checks of `-k` and `-N` (more than 20 tables need
    /// `force`), and fasthts' bounds (k from 1, up to 64 with `long_k`;
    /// 1 to 255 tables).
    pub fn check(&self, force: bool, note: &mut dyn FnMut(TableNote)) -> Result<(), Error> {
        if self.n_tables > 20 {
            if !force {
                return Err(Error::refused("\n** ERROR: khmer only supports number of tables <= 20.\n"));
            }
            note(TableNote::ManyTablesForced);
        }
        if self.ksize > 32 && !self.long_k {
            return Err(Error::refused(
                "\n** ERROR: khmer only supports k-mer sizes <= 32.\n** (fasthts takes 32 < k <= 64 with --long-k; khmer cannot read such tables)\n",
            ));
        }
        if self.ksize > 64 {
            return Err(Error::refused("\n** ERROR: fasthts --long-k supports k-mer sizes <= 64.\n"));
        }
        if self.ksize == 0 {
            return Err(Error::refused("\n** ERROR: k-mer size must be at least 1.\n"));
        }
        if self.n_tables == 0 || self.n_tables > 255 {
            return Err(Error::refused("** ERROR: the number of tables must be between 1 and 255"));
        }
        Ok(())
    }

    /// The options of the table saved in `path` (`--loadgraph`): its k,
    /// number of tables and size, read from its header, as khmer reads it
    /// before it reports the parameters (and fails on any table it cannot
    /// read, an empty or missing file too).
    pub fn of_saved_table(&self, path: &str) -> Result<TableOptions, Error> {
        let (k, n, size) = Countgraph::peek_info(Path::new(path))
            .map_err(|e| Error::refused(format!("** ERROR: Count graph file '{path}' is corrupt ({e})")))?;
        Ok(TableOptions { ksize: k, n_tables: n, max_tablesize: size as f64, ..self.clone() })
    }

    /// khmer's `create_countgraph` (a SmallCountgraph with
    /// `--small-count`): the table, sized by `-x`, `-M`, or with `-U` by
    /// khmer's `_check_fp_rate` for the scripts' false-positive ceiling of
    /// 0.1 (or `--fp-rate`).
    pub fn create(&self, force: bool, note: &mut dyn FnMut(TableNote)) -> Result<Countgraph, Error> {
        self.create_scaled(1.0, force, note)
    }

    /// [`TableOptions::create`] with khmer's `multiplier`
    /// (abundance-dist-single: the share of `-M` the countgraph gets
    /// beside its tracking Bloom filter): with `-M`, each table gets
    /// `multiplier` × `-M` / N entries (`-x` is taken as it is); `-M` as
    /// `-U` sets it, too (khmer sizes first, then scales).
    pub fn create_scaled(&self, multiplier: f64, force: bool, note: &mut dyn FnMut(TableNote)) -> Result<Countgraph, Error> {
        let sized = self.sized_for_unique_kmers(0.1, force, note)?;
        match sized.max_memory_usage {
            Some(m) if m != 0.0 => sized.create_sized(multiplier * sized.graph_tablesize()),
            _ => sized.create_sized(sized.graph_tablesize()),
        }
    }

    /// A Countgraph (a SmallCountgraph with `--small-count`) of `size`
    /// entries per table (made a whole number as khmer does).
    pub fn create_sized(&self, size: f64) -> Result<Countgraph, Error> {
        let x = tablesize_from_float(size);
        let made = if self.small_count {
            Countgraph::new_small(self.ksize, x, self.n_tables)
        } else {
            Countgraph::new(self.ksize, x, self.n_tables)
        };
        made.map_err(|e| Error::refused(e.to_string()))
    }

    /// khmer's `_check_fp_rate`. With `-U` and `-M`: refuses (unless
    /// `force`) a memory ceiling whose estimated false-positive rate is
    /// above `max_fp`; the sizes stay `-M`'s. With `-U` alone: `-M` is set
    /// to the memory khmer's estimate needs for `max_fp` (at least 1e6),
    /// unless `-x` is smaller than the table that needs, which is only
    /// warned about. The number of tables stays `-N`'s, as khmer's.
    pub fn sized_for_unique_kmers(&self, max_fp: f64, force: bool, note: &mut dyn FnMut(TableNote)) -> Result<TableOptions, Error> {
        let mut sized = self.clone();
        let unique = self.unique_kmers;
        if unique == 0.0 {
            return Ok(sized);
        }
        let mut max_fp = max_fp;
        if let Some(fp) = self.fp_rate.filter(|&f| f != 0.0) {
            note(TableNote::FpRateOverridden { default: max_fp, given: fp });
            max_fp = fp;
        }
        match self.max_memory_usage.filter(|&m| m != 0.0) {
            Some(m) => {
                // (A table of 0 entries: khmer divides by zero; refused here.)
                let fp_rate = optimal_with_memory(unique as u64, m).map_or(1.0, |e| e.fp_rate);
                if fp_rate > max_fp {
                    note(TableNote::FpRateAboveCeiling { fp_rate, max_fp });
                    if !force {
                        return Err(Error::refused("NOTE: This can be overridden using the --force argument\n*** Aborting...!"));
                    }
                }
            }
            None => {
                let estimate =
                    optimal_with_fp_rate(unique as u64, max_fp).map_err(|e| Error::refused(format!("ZeroDivisionError: {e}")))?;
                if self.max_tablesize != 0.0 && self.max_tablesize < estimate.table_size as f64 {
                    let fp_rate = optimal_with_memory(unique as u64, self.max_tablesize).map_or(1.0, |e| e.fp_rate);
                    note(TableNote::TableTooSmall { recommended: estimate.table_size as f64, current: self.max_tablesize, fp_rate });
                } else {
                    let memory = estimate.mem_use as f64;
                    let ceiling = if memory < 1e6 { 1e6 } else { memory };
                    sized.max_memory_usage = Some(ceiling);
                    note(TableNote::CeilingSet { ceiling });
                }
            }
        }
        Ok(sized)
    }
}

/// khmer's check of a table's estimated false-positive rate `fp` against
/// a script's ceiling `max` (0.2 where it counts, 0.8 where it
/// normalises or trims): above it, the block khmer prints ("the graph
/// structure is too small ... Do not use these results!!"), an error or
/// (with some scripts' `--force`) a warning.
pub fn fp_rate_too_high(fp: f64, max: f64) -> Option<Error> {
    (fp > max).then(|| {
        Error::refused(format!(
            "**\n** ERROR: the graph structure is too small for \n** this data set.  Increase data structure size\n** with --max_memory_usage/-M.\n**\n** Do not use these results!!\n**\n** (estimated false positive rate of {fp:.3}; max recommended {max:.3})\n**"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_settings() {
        assert_eq!(parse_memory_setting("4G"), Some(4e9));
        assert_eq!(parse_memory_setting(" 2.5m"), Some(2.5e6));
        assert_eq!(parse_memory_setting("1e6"), Some(1e6));
        assert_eq!(parse_memory_setting("4X"), None);
        assert_eq!(parse_memory_setting(""), None);
    }

    #[test]
    fn sizes_from_the_options() {
        let o = TableOptions { max_memory_usage: Some(4e6), ..TableOptions::default() };
        assert_eq!(o.tablesize(), 1e6);
        assert_eq!(TableOptions { small_count: true, ..o.clone() }.graph_tablesize(), 2e6);
        assert_eq!(TableOptions::default().tablesize(), 1e6);
        let mut notes = Vec::new();
        let forced = TableOptions { n_tables: 21, ..TableOptions::default() };
        assert!(forced.check(false, &mut |n| notes.push(n)).is_err());
        assert!(forced.check(true, &mut |n| notes.push(n)).is_ok());
        assert_eq!(notes, [TableNote::ManyTablesForced]);
        assert!(TableOptions { ksize: 33, ..TableOptions::default() }.check(true, &mut |_| {}).is_err());
        assert!(TableOptions { ksize: 33, long_k: true, ..TableOptions::default() }.check(true, &mut |_| {}).is_ok());
    }

    #[test]
    fn unique_kmers_set_the_memory() {
        let mut notes = Vec::new();
        let o = TableOptions { unique_kmers: 1e6, max_tablesize: 0.0, ..TableOptions::default() };
        let sized = o.sized_for_unique_kmers(0.1, false, &mut |n| notes.push(n)).unwrap();
        let ceiling = sized.max_memory_usage.unwrap();
        assert!(ceiling > 1e6);
        assert_eq!(notes, [TableNote::CeilingSet { ceiling }]);
        assert!(notes[0].is_info());
        let tight = TableOptions { unique_kmers: 1e9, max_memory_usage: Some(1e6), ..TableOptions::default() };
        let refused = tight.sized_for_unique_kmers(0.1, false, &mut |_| {}).unwrap_err();
        assert_eq!(refused.to_string(), "NOTE: This can be overridden using the --force argument\n*** Aborting...!");
        assert!(tight.sized_for_unique_kmers(0.1, true, &mut |_| {}).is_ok());
    }

    #[test]
    fn too_full_a_table() {
        assert!(fp_rate_too_high(0.2, 0.2).is_none());
        let block = fp_rate_too_high(0.25, 0.2).unwrap().to_string();
        assert!(block.ends_with("(estimated false positive rate of 0.250; max recommended 0.200)\n**"), "{block}");
    }
}
