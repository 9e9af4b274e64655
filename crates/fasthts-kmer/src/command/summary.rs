//! The machine-readable run summaries (`--summary-info json|tsv`) of
//! load-into-counting and trim-low-abund: where they go and their text.

use super::outputs::{basename, is_stdout};
use crate::pyfmt::{json_str, py_repr};
use crate::scripts::TrimStats;

/// The format of a run summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryFormat {
    /// One JSON object, as Python's `json.dump` writes it.
    Json,
    /// A header and a row of tab-separated values.
    Tsv,
}

impl SummaryFormat {
    /// The format named `json` or `tsv` (khmer's option values).
    pub fn from_name(name: &str) -> Option<SummaryFormat> {
        match name {
            "json" => Some(SummaryFormat::Json),
            "tsv" => Some(SummaryFormat::Tsv),
            _ => None,
        }
    }

    /// Its name, the summary file's last extension.
    pub fn name(self) -> &'static str {
        match self {
            SummaryFormat::Json => "json",
            SummaryFormat::Tsv => "tsv",
        }
    }
}

/// load-into-counting's `.info` file beside the countgraph it writes
/// (`<countgraph>.info`), written as counting goes.
pub fn count_info_path(countgraph: &str) -> String {
    format!("{countgraph}.info")
}

/// What load-into-counting's summary says.
#[derive(Clone, Debug)]
pub struct CountSummary<'a> {
    /// The countgraph written.
    pub countgraph: &'a str,
    /// Its estimated false-positive rate.
    pub fp_rate: f64,
    /// Its number of distinct k-mers.
    pub n_kmers: u64,
    /// The reads counted.
    pub n_reads: u64,
    /// The inputs.
    pub files: &'a [String],
}

impl CountSummary<'_> {
    /// The summary file: `<countgraph>.info.<format>`.
    pub fn path(&self, format: SummaryFormat) -> String {
        format!("{}.{}", count_info_path(self.countgraph), format.name())
    }

    /// Its text, as khmer writes it.
    pub fn text(&self, format: SummaryFormat) -> String {
        let name = basename(self.countgraph);
        match format {
            SummaryFormat::Json => {
                let files: Vec<String> = self.files.iter().map(|f| json_str(f)).collect();
                format!(
                    "{{\"ht_name\": {}, \"fpr\": {}, \"num_kmers\": {}, \"files\": [{}], \"mrinfo_version\": \"0.2.0\", \"num_reads\": {}}}\n",
                    json_str(&name),
                    py_repr(self.fp_rate),
                    self.n_kmers,
                    files.join(", "),
                    self.n_reads
                )
            }
            SummaryFormat::Tsv => format!(
                "ht_name\tfpr\tnum_kmers\tnum_reads\tfiles\n{name}\t{:1.3}\t{}\t{}\t{}\n",
                self.fp_rate,
                self.n_kmers,
                self.n_reads,
                self.files.join(";")
            ),
        }
    }
}

/// trim-low-abund's summary file: `<-o>.info.<format>`, or without `-o`
/// (or with standard output) `trim-low-abund-<UTC time>.info.<format>`.
pub fn trim_summary_path(output: Option<&str>, format: SummaryFormat) -> String {
    let base = match output {
        Some(o) if !is_stdout(o) => o.to_string(),
        _ => format!("trim-low-abund-{}", utc_timestamp()),
    };
    format!("{base}.info.{}", format.name())
}

/// trim-low-abund's summary: the false-positive rate and the read and
/// base counts, as JSON or as a header and a row of tab-separated values
/// (`\r\n` line ends: Python's csv module).
pub fn trim_summary_text(format: SummaryFormat, fp_rate: f64, s: &TrimStats) -> String {
    let counts = [
        ("reads", s.n_reads),
        ("basepairs", s.n_bp),
        ("reads_written", s.written_reads),
        ("basepairs_written", s.written_bp),
        ("reads_skipped", s.n_skipped),
        ("basepairs_skipped", s.bp_skipped),
        ("reads_removed", s.n_reads - s.written_reads),
        ("reads_trimmed", s.trimmed_reads),
        ("basepairs_removed_or_trimmed", s.n_bp - s.written_bp),
    ];
    let fields: Vec<(&str, String)> = std::iter::once(("fpr", py_repr(fp_rate))).chain(counts.map(|(k, n)| (k, n.to_string()))).collect();
    match format {
        SummaryFormat::Json => {
            let items: Vec<String> = fields.iter().map(|(k, v)| format!("{}: {v}", json_str(k))).collect();
            format!("{{{}}}\n", items.join(", "))
        }
        SummaryFormat::Tsv => {
            let (keys, values): (Vec<&str>, Vec<&str>) = fields.iter().map(|(k, v)| (*k, v.as_str())).unzip();
            format!("{}\r\n{}\r\n", keys.join("\t"), values.join("\t"))
        }
    }
}

/// `time.strftime("%Y-%m-%dT%H:%M:%S")` (UTC; our machines run in UTC).
fn utc_timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    civil_time(secs)
}

/// Seconds since 1970 as `YYYY-MM-DDTHH:MM:SS` (H. Hinnant's civil from days).
fn civil_time(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_summaries() {
        let files = ["a.fa".to_string(), "b \"x\".fa".to_string()];
        let s = CountSummary { countgraph: "d/t.ct", fp_rate: 0.25, n_kmers: 7, n_reads: 3, files: &files };
        assert_eq!(s.path(SummaryFormat::Json), "d/t.ct.info.json");
        assert_eq!(
            s.text(SummaryFormat::Json),
            "{\"ht_name\": \"t.ct\", \"fpr\": 0.25, \"num_kmers\": 7, \"files\": [\"a.fa\", \"b \\\"x\\\".fa\"], \"mrinfo_version\": \"0.2.0\", \"num_reads\": 3}\n"
        );
        assert_eq!(s.text(SummaryFormat::Tsv), "ht_name\tfpr\tnum_kmers\tnum_reads\tfiles\nt.ct\t0.250\t7\t3\ta.fa;b \"x\".fa\n");
    }

    #[test]
    fn trim_summaries() {
        assert_eq!(trim_summary_path(Some("o.fq"), SummaryFormat::Tsv), "o.fq.info.tsv");
        let stamped = trim_summary_path(Some("-"), SummaryFormat::Json);
        assert!(stamped.starts_with("trim-low-abund-20") && stamped.ends_with(".info.json"), "{stamped}");
        let s = TrimStats { n_reads: 4, n_bp: 40, written_reads: 3, written_bp: 25, ..TrimStats::default() };
        let tsv = trim_summary_text(SummaryFormat::Tsv, 0.5, &s);
        assert!(tsv.starts_with("fpr\treads\tbasepairs\t") && tsv.ends_with("\r\n0.5\t4\t40\t3\t25\t0\t0\t1\t0\t15\r\n"), "{tsv:?}");
        assert_eq!(civil_time(0), "1970-01-01T00:00:00");
        assert_eq!(civil_time(951_782_400 + 3661), "2000-02-29T01:01:01");
    }
}
