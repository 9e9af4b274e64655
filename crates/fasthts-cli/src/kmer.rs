//! `fasthts kmer ...`: khmer's scripts with the same positional arguments,
//! options, defaults and output files.
//!
//! | subcommand       | khmer script              |
//! |------------------|---------------------------|
//! | `count`          | load-into-counting.py     |
//! | `abundance-dist` | abundance-dist.py         |
//! | `normalize`      | normalize-by-median.py    |
//! | `filter-abund`   | filter-abund.py           |
//! | `trim-low-abund` | trim-low-abund.py         |
//!
//! Usage errors exit 2 (as argparse does; unambiguous prefixes of long
//! options are accepted, as argparse does); khmer's own error conditions exit
//! 1 with khmer's message. Outputs are written under a temporary name and
//! renamed into place when complete.

use clap::{Args, Subcommand};
use fasthts_io::output::TempOutput;
use fasthts_kmer::primes::tablesize_from_float;
use fasthts_kmer::pyfmt::{json_str, py_repr};
use fasthts_kmer::scripts::{self, Diagnostics, TrimOptions, TrimStats};
use fasthts_kmer::seqio::Record;
use fasthts_kmer::Countgraph;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

const KHMER_VERSION: &str = "3.0.0a3";

/// khmer-compatible k-mer tools.
#[derive(Subcommand)]
pub enum KmerCommand {
    /// Count k-mers into a countgraph (.ct) = load-into-counting.py
    #[command(infer_long_args = true)]
    Count(CountArgs),
    /// Histogram of k-mer abundances = abundance-dist.py
    #[command(name = "abundance-dist", infer_long_args = true)]
    AbundanceDist(AbundArgs),
    /// Digital normalisation = normalize-by-median.py
    #[command(infer_long_args = true)]
    Normalize(NormArgs),
    /// Trim reads at low-abundance k-mers using a saved countgraph = filter-abund.py
    #[command(name = "filter-abund", infer_long_args = true)]
    FilterAbund(FilterArgs),
    /// Two-pass streaming abundance trimming = trim-low-abund.py
    #[command(name = "trim-low-abund", infer_long_args = true)]
    TrimLowAbund(TrimArgs),
}

impl KmerCommand {
    /// Run the subcommand.
    pub fn run(self) -> crate::CmdResult {
        match self {
            KmerCommand::Count(a) => run_count(a),
            KmerCommand::AbundanceDist(a) => run_abundance_dist(a),
            KmerCommand::Normalize(a) => run_normalize(a),
            KmerCommand::FilterAbund(a) => run_filter_abund(a),
            KmerCommand::TrimLowAbund(a) => run_trim(a),
        }
    }
}

/// khmer's `memory_setting`: a float, or a float with a decimal K/M/G/T
/// suffix (case-insensitive).
fn memory_setting(s: &str) -> Result<f64, String> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return Ok(v);
    }
    let err = || format!("cannot parse memory setting \"{s}\"");
    let (prefix, suffix) = s.split_at(s.len().saturating_sub(1));
    let mult = match suffix.to_ascii_uppercase().as_str() {
        "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return Err(err()),
    };
    prefix.trim().parse::<f64>().map(|v| v * mult).map_err(|_| err())
}

fn cutoff_range(s: &str) -> Result<u16, String> {
    let v: i64 = s.trim().parse().map_err(|_| format!("invalid int value: '{s}'"))?;
    if !(0..256).contains(&v) {
        // khmer's check_argument_range prints and exits 1 from the parser
        eprintln!("\n** ERROR: khmer only supports 0 <= cutoff < 256.\n");
        std::process::exit(1);
    }
    Ok(v as u16)
}

/// Table options shared by the graph-building commands (khmer_args).
#[derive(Args, Clone, Debug)]
pub struct GraphArgs {
    /// k-mer size to use
    #[arg(short = 'k', long = "ksize", default_value_t = 32)]
    ksize: u32,
    /// number of tables to use in k-mer countgraph
    #[arg(short = 'N', long = "n_tables", visible_alias = "n-tables", default_value_t = 4)]
    n_tables: usize,
    /// approximate number of unique kmers in the input set (not supported)
    #[arg(short = 'U', long = "unique-kmers", default_value_t = 0.0)]
    unique_kmers: f64,
    /// Override the automatic FP rate setting for the current script (with -U)
    #[arg(long = "fp-rate")]
    fp_rate: Option<f64>,
    /// upper bound on tablesize to use
    #[arg(short = 'x', long = "max-tablesize", default_value_t = 1e6, conflicts_with = "max_memory_usage")]
    max_tablesize: f64,
    /// maximum amount of memory to use for data structure (K/M/G/T suffixes, decimal)
    #[arg(short = 'M', long = "max-memory-usage", value_parser = memory_setting)]
    max_memory_usage: Option<f64>,
    /// Reduce memory usage by using a smaller counter (not supported)
    #[arg(long = "small-count")]
    small_count: bool,
    /// Allow 32 < k <= 64 (fasthts extension: 128-bit two-bit k-mers folded
    /// to a 64-bit hash; such tables are not readable by khmer)
    #[arg(long = "long-k")]
    long_k: bool,
}

impl GraphArgs {
    fn tablesize(&self) -> f64 {
        match self.max_memory_usage {
            Some(m) if m != 0.0 => m / self.n_tables as f64,
            _ => self.max_tablesize,
        }
    }

    fn check(&self, force: bool, quiet: bool) -> Result<(), Exit> {
        if self.small_count {
            return Err(Exit::msg(1, "--small-count (nibble counters) is not supported by fasthts"));
        }
        if self.unique_kmers != 0.0 {
            return Err(Exit::msg(1, "-U/--unique-kmers automatic sizing is not supported by fasthts; give -x or -M"));
        }
        if self.n_tables > 20 {
            if !force {
                return Err(Exit::msg(1, "\n** ERROR: khmer only supports number of tables <= 20.\n"));
            } else if !quiet {
                eprintln!("\n*** Warning: Maximum recommended number of tables is 20, discarded by force nonetheless!\n");
            }
        }
        if self.ksize > 32 && !self.long_k {
            return Err(Exit::msg(1, "\n** ERROR: khmer only supports k-mer sizes <= 32.\n"));
        }
        if self.ksize > 64 {
            return Err(Exit::msg(1, "\n** ERROR: fasthts --long-k supports k-mer sizes <= 64.\n"));
        }
        if self.ksize == 0 {
            return Err(Exit::msg(1, "\n** ERROR: k-mer size must be at least 1.\n"));
        }
        if self.n_tables == 0 || self.n_tables > 255 {
            return Err(Exit::msg(1, "** ERROR: the number of tables must be between 1 and 255"));
        }
        Ok(())
    }

    fn report(&self, quiet: bool, loadgraph: bool) {
        let ts = self.tablesize();
        // khmer's log_warn is not silenced by -q
        let warn = ts == 1e6 && !loadgraph;
        if quiet {
            if warn {
                eprintln!("** WARNING: tablesize is default!\n** You probably want to increase this with -M/--max-memory-usage!\n** Please read the docs!\n");
            }
            return;
        }
        let maxmem = self.n_tables as f64 * ts;
        eprintln!("\nPARAMETERS:");
        eprintln!(" - kmer size =     {} \t\t(-k)", self.ksize);
        eprintln!(" - n tables =      {} \t\t(-N)", self.n_tables);
        eprintln!(" - max tablesize = {} \t(-x)", py_g2(ts));
        eprintln!(
            "Estimated memory usage is {:.1} Gb ({} bytes = {} bytes x {} entries / 1 entries per byte)",
            maxmem / 1e9,
            py_g2(maxmem),
            self.n_tables,
            py_g2(ts)
        );
        eprintln!("--------");
        if warn {
            eprintln!("** WARNING: tablesize is default!\n** You probably want to increase this with -M/--max-memory-usage!\n** Please read the docs!\n");
        }
    }

    fn create(&self) -> Result<Countgraph, Exit> {
        let x = tablesize_from_float(self.tablesize());
        Countgraph::new(self.ksize, x, self.n_tables).map_err(|e| Exit::msg(1, &e.to_string()))
    }
}

/// Python's `'{:5.2g}'` (roughly; used only in informational stderr text).
fn py_g2(x: f64) -> String {
    let s = format!("{:.1e}", x);
    let (m, e) = s.split_once('e').unwrap();
    let e: i32 = e.parse().unwrap();
    let v = if (-4..2).contains(&e) {
        let d = (1 - e).max(0) as usize;
        let t = format!("{:.*}", d, x);
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        }
    } else {
        let m = m.trim_end_matches('0').trim_end_matches('.');
        format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    };
    format!("{v:>5}")
}

/// An exit with a message and code (khmer's sys.exit paths).
#[derive(Debug)]
struct Exit {
    code: i32,
    msg: String,
}

impl Exit {
    fn msg(code: i32, m: &str) -> Self {
        Exit { code, msg: m.to_string() }
    }
}

fn exit_with(e: Exit) -> ! {
    if fasthts::output::interrupted() {
        // Ending on a signal (see main): its status, not this error.
        loop {
            std::thread::park();
        }
    }
    if !e.msg.is_empty() {
        eprintln!("{}", e.msg);
    }
    std::process::exit(e.code)
}

fn check_input_file(path: &str, force: bool) -> Result<(), Exit> {
    if path == "-" {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Err(_) => {
            if force {
                eprintln!("ERROR: Input file {path} does not exist");
                return Ok(());
            }
            Err(Exit::msg(
                1,
                &format!("ERROR: Input file {path} does not exist\nNOTE: This can be overridden using the --force argument\nExiting"),
            ))
        }
        Ok(m) => {
            use std::os::unix::fs::FileTypeExt;
            let ft = m.file_type();
            if ft.is_block_device() || ft.is_fifo() || ft.is_char_device() {
                return Ok(());
            }
            if m.len() == 0 {
                if force {
                    eprintln!("ERROR: Input file {path} is empty; exiting.");
                    return Ok(());
                }
                return Err(Exit::msg(
                    1,
                    &format!("ERROR: Input file {path} is empty; exiting.\nNOTE: This can be overridden using the --force argument"),
                ));
            }
            Ok(())
        }
    }
}

/// A progress line on a terminal (never on a pipe).
struct Progress {
    on: bool,
    start: Instant,
    last: std::sync::Mutex<Instant>,
}

impl Progress {
    fn new(quiet: bool) -> Self {
        let on = !quiet && crate::progress::on_terminal();
        Progress { on, start: Instant::now(), last: std::sync::Mutex::new(Instant::now()) }
    }
    fn update(&self, reads: u64, bases: u64) {
        if !self.on {
            return;
        }
        let mut last = self.last.lock().unwrap();
        if last.elapsed().as_millis() < 250 {
            return;
        }
        *last = Instant::now();
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        eprint!("\r\x1b[K{reads} reads, {:.1} Mbp, {:.1} Mbp/s", bases as f64 / 1e6, bases as f64 / 1e6 / secs);
    }
    fn done(&self) {
        if self.on {
            eprint!("\r\x1b[K");
        }
    }
}

/// An output file written under a temporary name, renamed by `commit`
/// (removed if dropped uncommitted). `-`/`/dev/stdout` write to stdout.
struct OutFile {
    // Declared first, dropped first: the writer is closed before an
    // uncommitted temporary is removed.
    w: Option<Box<dyn Write>>,
    temp: Option<TempOutput>,
}

impl OutFile {
    fn create(path: &str, gzip: bool) -> io::Result<OutFile> {
        let (raw, temp): (Box<dyn Write>, Option<TempOutput>) = if path == "-" || path == "/dev/stdout" {
            (Box::new(io::stdout()), None)
        } else {
            // Removed by the signal handler if interrupted. The bare OS
            // error: the caller names the file as khmer does.
            let (temp, file) = TempOutput::create(Path::new(path)).map_err(|e| e.source)?;
            (Box::new(file), Some(temp))
        };
        let buf = BufWriter::with_capacity(1 << 20, raw);
        let w: Box<dyn Write> =
            if gzip { Box::new(flate2::write::GzEncoder::new(buf, flate2::Compression::default())) } else { Box::new(buf) };
        Ok(OutFile { temp, w: Some(w) })
    }

    fn writer(&mut self) -> &mut dyn Write {
        self.w.as_mut().expect("written before commit").as_mut()
    }

    fn commit(mut self) -> io::Result<()> {
        let mut w = self.w.take().expect("committed once");
        w.flush()?;
        drop(w); // finishes a gzip stream
        match self.temp.take() {
            Some(temp) => temp.commit().map_err(|e| e.source),
            None => Ok(()),
        }
    }
}

/// Saves `g` to `path` (atomically, see `Countgraph::save`; its temporary
/// file is known to the signal handler through the hooks `main` installs).
fn save_graph(g: &mut Countgraph, path: &str) -> io::Result<()> {
    g.save(Path::new(path))
}

/// [`save_graph`] for the last use of `g`: its memory is freed as the file
/// is written (see `Countgraph::save_and_free`).
fn save_graph_and_free(g: Countgraph, path: &str) -> io::Result<()> {
    g.save_and_free(Path::new(path))
}

fn basename(path: &str) -> String {
    Path::new(path).file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.to_string())
}

fn fp_error_block(fp: f64, max: f64) -> String {
    format!(
        "**\n** ERROR: the graph structure is too small for \n** this data set.  Increase data structure size\n** with --max_memory_usage/-M.\n**\n** Do not use these results!!\n**\n** (estimated false positive rate of {fp:.3}; max recommended {max:.3})\n**"
    )
}

// ---------------------------------------------------------------------------
// count

/// load-into-counting.py
#[derive(Args, Debug)]
pub struct CountArgs {
    #[command(flatten)]
    graph: GraphArgs,
    /// Number of simultaneous threads to execute
    #[arg(short = 'T', long = "threads", visible_short_alias = '@', default_value_t = 1)]
    threads: usize,
    /// The default behaviour is to count past 255 using bigcount. This flag turns bigcount off.
    #[arg(short = 'b', long = "no-bigcount")]
    no_bigcount: bool,
    /// What format should the machine readable run summary be in? (json or tsv)
    #[arg(short = 's', long = "summary-info", value_parser = ["json", "tsv"])]
    summary_info: Option<String>,
    /// Overwrite output file if it exists
    #[arg(short = 'f', long = "force")]
    force: bool,
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// The name of the file to write the k-mer countgraph to.
    output_countgraph_filename: String,
    /// The names of one or more FAST[AQ] input sequence files.
    #[arg(required = true)]
    input_sequence_filename: Vec<String>,
}

/// Creates an output written in place as the command goes (khmer's
/// `.info`, report and summary files), registered so that an interrupted
/// run leaves none of it (see `fasthts::output::hold_committed_outputs`).
fn create_in_place(path: &str) -> io::Result<File> {
    if fasthts_io::output::is_special_file(Path::new(path)) {
        File::create(path)
    } else {
        fasthts::output::create_temporary(Path::new(path))
    }
}

/// Appends to a file that exists: if an interrupted run's signal handler
/// has just removed it, it stays removed.
fn append_line(path: &str, line: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().append(true).open(path)?;
    f.write_all(line.as_bytes())
}

fn run_count(a: CountArgs) -> crate::CmdResult {
    let info = PathBuf::from(format!("{}.info", a.output_countgraph_filename));
    // The .info file is written as counting goes (as khmer does): it is
    // part of the output, so it goes when the count fails or is interrupted
    // (it stays registered with the signal handler until `main` is done).
    match count_inner(a) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&info);
            exit_with(e)
        }
    }
}

fn count_inner(a: CountArgs) -> Result<(), Exit> {
    let q = a.quiet;
    a.graph.check(a.force, q)?;
    a.graph.report(q, false);
    let base = a.output_countgraph_filename.clone();
    for f in &a.input_sequence_filename {
        check_input_file(f, a.force)?;
    }
    let info = format!("{base}.info");
    if !q {
        eprintln!("Saving k-mer countgraph to {base}");
        eprintln!("Loading kmers from sequences in {}", py_list(&a.input_sequence_filename));
    }
    create_in_place(&info)
        .and_then(|mut f| f.write_all(format!("khmer version: {KHMER_VERSION}\n").as_bytes()))
        .map_err(|e| Exit::msg(1, &format!("{info}: {e}")))?;
    if !q {
        eprintln!("making countgraph");
    }
    let mut g = a.graph.create()?;
    g.set_use_bigcount(!a.no_bigcount);
    let threads = a.threads.max(1);
    let mut total_reads = 0u64;
    let progress = Progress::new(q);
    let t0 = Instant::now();
    let mut total_bases = 0u64;
    for (index, f) in a.input_sequence_filename.iter().enumerate() {
        if !q {
            eprintln!("consuming input {f}");
        }
        let cb = |r: u64, b: u64| progress.update(total_reads + r, total_bases + b);
        let r = match scripts::consume_seqfile(&mut g, f, threads, Some(&cb)) {
            Ok(r) => r,
            Err(e) => {
                // bad input: no partial outputs
                progress.done();
                let _ = std::fs::remove_file(&info);
                return Err(Exit::msg(1, &format!("fasthts kmer count: {e}")));
            }
        };
        progress.done();
        if let Some(at) = r.empty_sequence_at {
            // khmer: the consuming thread dies with this exception; the
            // reads before it stay counted and the script goes on.
            eprintln!("Exception in thread (consume_seqfile): {f}: record {}: Sequence is empty", at + 1);
        }
        if index > 0 && index % 10 == 0 {
            if !q {
                eprintln!("mid-save {base}");
            }
            save_graph(&mut g, &base).map_err(|e| Exit::msg(1, &format!("{base}: {e}")))?;
        }
        append_line(&info, &format!("through {f}\n")).map_err(|e| Exit::msg(1, &e.to_string()))?;
        total_reads += r.n_reads;
        total_bases += r.n_bases;
    }
    let count_secs = t0.elapsed().as_secs_f64();
    let n_kmers = g.n_unique_kmers();
    if !q {
        eprintln!("Total number of unique k-mers: {n_kmers}");
    }
    append_line(&info, &format!("Total number of unique k-mers: {n_kmers}\n")).map_err(|e| Exit::msg(1, &e.to_string()))?;
    if !q {
        eprintln!("saving {base}");
    }
    let t_save = Instant::now();
    let fp = g.fp_rate();
    save_graph_and_free(g, &base).map_err(|e| Exit::msg(1, &format!("{base}: {e}")))?;
    let save_secs = t_save.elapsed().as_secs_f64();
    if fp > 0.2 {
        eprintln!("{}", fp_error_block(fp, 0.2));
        if !a.force {
            std::process::exit(1);
        }
    }
    append_line(&info, &format!("fp rate estimated to be {fp:1.3}\n\n")).map_err(|e| Exit::msg(1, &e.to_string()))?;
    if let Some(fmt) = &a.summary_info {
        let fmt = fmt.to_lowercase();
        let mr_file = format!("{base}.info.{fmt}");
        if !q {
            eprintln!("Writing summmary info to {mr_file}");
        }
        let text = if fmt == "json" {
            let files: Vec<String> = a.input_sequence_filename.iter().map(|f| json_str(f)).collect();
            format!(
                "{{\"ht_name\": {}, \"fpr\": {}, \"num_kmers\": {}, \"files\": [{}], \"mrinfo_version\": \"0.2.0\", \"num_reads\": {}}}\n",
                json_str(&basename(&base)),
                py_repr(fp),
                n_kmers,
                files.join(", "),
                total_reads
            )
        } else {
            format!(
                "ht_name\tfpr\tnum_kmers\tnum_reads\tfiles\n{}\t{:1.3}\t{}\t{}\t{}\n",
                basename(&base),
                fp,
                n_kmers,
                total_reads,
                a.input_sequence_filename.join(";")
            )
        };
        create_in_place(&mr_file)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| Exit::msg(1, &format!("{mr_file}: {e}")))?;
    }
    if !q {
        eprintln!("fp rate estimated to be {fp:1.3}");
        eprintln!(
            "counted {total_reads} reads, {total_bases} bp in {count_secs:.2} s ({:.1} Mbp/s); saved in {save_secs:.2} s",
            total_bases as f64 / 1e6 / count_secs.max(1e-9)
        );
        eprintln!("DONE.");
        eprintln!("wrote to: {info}");
    }
    Ok(())
}

fn py_list(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", items.join(", "))
}

// ---------------------------------------------------------------------------
// abundance-dist

/// abundance-dist.py
#[derive(Args, Debug)]
pub struct AbundArgs {
    /// Do not output zero-count bins
    #[arg(short = 'z', long = "no-zero")]
    no_zero: bool,
    /// Overwrite existing output_histogram_filename
    #[arg(short = 's', long = "squash")]
    squash: bool,
    /// Do not count k-mers past 255
    #[arg(short = 'b', long = "no-bigcount")]
    no_bigcount: bool,
    /// Continue even if specified input files do not exist or are empty.
    #[arg(short = 'f', long = "force")]
    force: bool,
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// Threads: 2 or more look up counts on a second thread while the
    /// order-dependent Bloom test runs in input order (same histogram)
    #[arg(short = 'T', long = "threads", visible_short_alias = '@', default_value_t = 1)]
    threads: usize,
    /// Also draw the histogram (log-scaled axes) to FILE.png or FILE.svg (fasthts addition)
    #[arg(long = "plot")]
    plot: Option<String>,
    /// The name of the input k-mer countgraph file.
    input_count_graph_filename: String,
    /// The name of the input FAST[AQ] sequence file.
    input_sequence_filename: String,
    /// The columns are: (1) k-mer abundance, (2) k-mer count, (3) cumulative count, (4) fraction of total distinct k-mers.
    output_histogram_filename: String,
}

fn run_abundance_dist(a: AbundArgs) -> crate::CmdResult {
    let q = a.quiet;
    for f in [&a.input_count_graph_filename, &a.input_sequence_filename] {
        if let Err(e) = check_input_file(f, false) {
            exit_with(e);
        }
    }
    if !q {
        eprintln!("Loading counting graph from {}", a.input_count_graph_filename);
    }
    let mut g = Countgraph::load(Path::new(&a.input_count_graph_filename)).map_err(|e| format!("{}: {e}", a.input_count_graph_filename))?;
    if !g.use_bigcount() && !a.no_bigcount && !q {
        eprintln!("WARNING: The loaded graph has bigcount DISABLED while bigcount reporting is ENABLED--counts higher than 255 will not be reported.");
    }
    g.set_use_bigcount(!a.no_bigcount);
    let out = &a.output_histogram_filename;
    let to_stdout = out == "-" || out == "/dev/stdout";
    if !q {
        eprintln!("K: {}", g.ksize());
        eprintln!("outputting to {out}");
    }
    if !to_stdout && Path::new(out).exists() {
        if !a.squash {
            exit_with(Exit::msg(1, &format!("ERROR: {out} exists; not squashing.")));
        }
        if !q {
            eprintln!("** squashing existing file {out}");
        }
    }
    if !q {
        eprintln!("preparing hist...");
    }
    let hist = scripts::abundance_histogram(&g, &a.input_sequence_filename, a.threads.max(1))?;
    let total: u64 = hist[..65535].iter().sum();
    if total == 0 {
        exit_with(Exit::msg(
            1,
            "ERROR: abundance distribution is uniformly zero; nothing to report.\n\tPlease verify that the input files are valid.",
        ));
    }
    let mut of = OutFile::create(out, false)?;
    scripts::write_abundance_csv(&hist, a.no_zero, of.writer())?;
    of.commit()?;
    if let Some(p) = &a.plot {
        fasthts_kmer::plot::write_plot(&hist, p)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// normalize

/// normalize-by-median.py
#[derive(Args, Debug)]
pub struct NormArgs {
    #[command(flatten)]
    graph: GraphArgs,
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// when the median k-mer coverage level is above this number the read is not kept.
    #[arg(short = 'C', long = "cutoff", default_value = "20", value_parser = cutoff_range)]
    cutoff: u16,
    /// require that all sequences be properly paired
    #[arg(short = 'p', long = "paired")]
    paired: bool,
    /// treat all sequences as single-ended/unpaired
    #[arg(long = "force_single")]
    force_single: bool,
    /// include a file of unpaired reads to which -p/--paired does not apply.
    #[arg(short = 'u', long = "unpaired-reads")]
    unpaired_reads: Option<String>,
    /// save the k-mer countgraph to disk after all reads are loaded.
    #[arg(short = 's', long = "savegraph")]
    savegraph: Option<String>,
    /// write progress report to report_filename
    #[arg(short = 'R', long = "report")]
    report: Option<String>,
    /// report progress every report_frequency reads
    #[arg(long = "report-frequency", default_value_t = 100000)]
    report_frequency: u64,
    /// continue past file reading errors
    #[arg(short = 'f', long = "force")]
    force: bool,
    /// only output a single file with the specified filename; "-" = STDOUT
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// load a precomputed k-mer graph from disk
    #[arg(short = 'l', long = "loadgraph")]
    loadgraph: Option<String>,
    /// Compress output using gzip
    #[arg(long = "gzip", conflicts_with = "bzip")]
    gzip: bool,
    /// Compress output using bzip2 (not supported)
    #[arg(long = "bzip")]
    bzip: bool,
    /// Threads (decisions are order-dependent and made in input order; with 2
    /// or more, two threads share the tables out between them and look up
    /// and update each read's k-mers in lockstep; output equals khmer's)
    #[arg(short = 'T', long = "threads", visible_short_alias = '@', default_value_t = 1)]
    threads: usize,
    /// Input FAST[AQ] sequence filename.
    #[arg(required = true)]
    input_filenames: Vec<String>,
}

fn run_normalize(a: NormArgs) -> crate::CmdResult {
    let q = a.quiet;
    if a.bzip {
        exit_with(Exit::msg(1, "--bzip output is not supported by fasthts; use --gzip"));
    }
    if a.paired && a.force_single {
        exit_with(Exit::msg(1, "ERROR: force_single and require_paired cannot both be set!"));
    }
    a.graph.report(q, a.loadgraph.is_some());
    let mut basenames = Vec::new();
    if a.output.is_none() {
        for f in &a.input_filenames {
            let b = basename(f);
            if basenames.contains(&b) {
                exit_with(Exit::msg(1, "ERROR: Duplicate filename--Cannot handle this!\n** Exiting!"));
            }
            basenames.push(b);
        }
    }
    for f in &a.input_filenames {
        if let Err(e) = check_input_file(f, false) {
            exit_with(e);
        }
    }
    let mut g = match &a.loadgraph {
        Some(l) => {
            if !q {
                eprintln!("loading k-mer countgraph from {l}");
            }
            Countgraph::load(Path::new(l)).map_err(|e| format!("{l}: {e}"))?
        }
        None => {
            if let Err(e) = a.graph.check(a.force, q) {
                exit_with(e);
            }
            if !q {
                eprintln!("making countgraph");
            }
            match a.graph.create() {
                Ok(g) => g,
                Err(e) => exit_with(e),
            }
        }
    };
    let report: Option<Box<dyn Write + Send>> = match &a.report {
        Some(r) => Some(Box::new(BufWriter::new(create_in_place(r).map_err(|e| format!("{r}: {e}"))?))),
        None => None,
    };
    let mut diag = Diagnostics::new(report, a.report_frequency)?;
    let mut files: Vec<(String, bool)> = a.input_filenames.iter().map(|f| (f.clone(), a.paired)).collect();
    if let Some(u) = &a.unpaired_reads {
        files.push((u.clone(), false));
    }
    let mut single = match &a.output {
        Some(o) => Some(OutFile::create(o, a.gzip)?),
        None => {
            if a.input_filenames.iter().any(|f| f == "-" || f == "/dev/stdin") {
                exit_with(Exit::msg(1, "Accepting input from stdin; output filename must be provided with '-o'."));
            }
            None
        }
    };
    let mut corrupt = Vec::new();
    for (f, require_paired) in &files {
        let mut own = match &single {
            Some(_) => None,
            None => Some(OutFile::create(&format!("{}.keep", basename(f)), a.gzip)?),
        };
        let w: &mut dyn Write = match (&mut own, &mut single) {
            (Some(o), _) => o.writer(),
            (None, Some(s)) => s.writer(),
            _ => unreachable!(),
        };
        let start = diag.total;
        let res = scripts::normalize_file(&mut g, a.cutoff, f, *require_paired, a.force_single, w, &mut diag, a.threads.max(1));
        match res {
            Ok(()) => {
                if !q {
                    if diag.total == start {
                        eprintln!("SKIPPED empty file {f}");
                    } else {
                        eprintln!(
                            "DONE with {f}; kept {} of {} or {:.1}%",
                            diag.kept,
                            diag.total,
                            100.0 * diag.kept as f64 / diag.total as f64
                        );
                    }
                }
                if let Some(o) = own {
                    o.commit()?;
                    if !q {
                        eprintln!("output in {}.keep", basename(f));
                    }
                }
            }
            Err(e) => {
                eprintln!("** ERROR: {e}");
                eprintln!("** Failed on {f}: ");
                drop(own);
                if !a.force {
                    eprintln!("** Exiting!");
                    drop(single); // no partial output (khmer leaves it)
                    std::process::exit(1);
                }
                eprintln!("*** Skipping error file, moving on...");
                corrupt.push(f.clone());
            }
        }
    }
    diag.finish()?;
    if let Some(s) = single {
        s.commit()?;
    }
    if !q {
        eprintln!("Total number of unique k-mers: {}", g.n_unique_kmers());
    }
    let fp = g.fp_rate();
    if let Some(s) = &a.savegraph {
        if !q {
            eprintln!("...saving to {s}");
        }
        save_graph_and_free(g, s).map_err(|e| format!("{s}: {e}"))?;
    }
    if fp > 0.8 {
        eprintln!("{}", fp_error_block(fp, 0.8));
        std::process::exit(1);
    }
    if !q {
        eprintln!("fp rate estimated to be {fp:1.3}");
    }
    if a.force && !corrupt.is_empty() {
        eprintln!("** WARNING: Finished with errors!\n** I/O Errors occurred in the following files:\n\t{}", corrupt.join(" "));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// filter-abund

/// filter-abund.py
#[derive(Args, Debug)]
pub struct FilterArgs {
    /// Number of simultaneous threads to execute (khmer ignores it; here
    /// batches are filtered in parallel and written in input order)
    #[arg(short = 'T', long = "threads", visible_short_alias = '@', default_value_t = 1)]
    threads: usize,
    /// Trim at k-mers below this abundance.
    #[arg(short = 'C', long = "cutoff", default_value = "2", value_parser = cutoff_range)]
    cutoff: u16,
    /// Only trim low-abundance k-mers from sequences that have high coverage.
    #[arg(short = 'V', long = "variable-coverage")]
    variable_coverage: bool,
    /// Base the variable-coverage cutoff on this median k-mer abundance.
    #[arg(short = 'Z', long = "normalize-to", default_value_t = 20)]
    normalize_to: u16,
    /// Output the trimmed sequences into a single file with the given filename instead of creating a new file for each input file.
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// Overwrite output file if it exists
    #[arg(short = 'f', long = "force")]
    force: bool,
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// Compress output using gzip
    #[arg(long = "gzip", conflicts_with = "bzip")]
    gzip: bool,
    /// Compress output using bzip2 (not supported)
    #[arg(long = "bzip")]
    bzip: bool,
    input_graph: String,
    #[arg(required = true)]
    input_filename: Vec<String>,
}

fn run_filter_abund(a: FilterArgs) -> crate::CmdResult {
    let q = a.quiet;
    if a.bzip {
        exit_with(Exit::msg(1, "--bzip output is not supported by fasthts; use --gzip"));
    }
    if a.input_filename.iter().any(|f| f == "-" || f == "/dev/stdin") && a.output.is_none() {
        exit_with(Exit::msg(1, "Accepting input from stdin; output filename must be provided with -o."));
    }
    for f in &a.input_filename {
        if let Err(e) = check_input_file(f, a.force) {
            exit_with(e);
        }
    }
    if !q {
        eprintln!("loading countgraph: {}", a.input_graph);
    }
    let g = Countgraph::load(Path::new(&a.input_graph)).map_err(|e| format!("{}: {e}", a.input_graph))?;
    if !q {
        eprintln!("K: {}", g.ksize());
    }
    let mut single = match &a.output {
        Some(o) => Some(OutFile::create(o, a.gzip)?),
        None => None,
    };
    for f in &a.input_filename {
        if !q {
            eprintln!("filtering {f}");
        }
        let outname = format!("{}.abundfilt", basename(f));
        let mut own = match &single {
            Some(_) => None,
            None => Some(OutFile::create(&outname, a.gzip)?),
        };
        let w: &mut dyn Write = match (&mut own, &mut single) {
            (Some(o), _) => o.writer(),
            (None, Some(s)) => s.writer(),
            _ => unreachable!(),
        };
        scripts::filter_abund_file(&g, f, a.cutoff, a.variable_coverage, a.normalize_to, w, a.threads.max(1))?;
        if let Some(o) = own {
            o.commit()?;
        }
        if !q {
            eprintln!("output in {}", a.output.as_deref().unwrap_or(&outname));
        }
    }
    if let Some(s) = single {
        s.commit()?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// trim-low-abund

/// trim-low-abund.py
#[derive(Args, Debug)]
pub struct TrimArgs {
    #[command(flatten)]
    graph: GraphArgs,
    /// remove k-mers below this abundance
    #[arg(short = 'C', long = "cutoff", default_value_t = 2)]
    cutoff: u16,
    /// trim reads when entire read above this coverage
    #[arg(short = 'Z', long = "trim-at-coverage", alias = "normalize-to", default_value_t = 20)]
    trim_at_coverage: u16,
    /// only output a single file with the specified filename
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
    /// Only trim low-abundance k-mers from sequences that have high coverage.
    #[arg(short = 'V', long = "variable-coverage")]
    variable_coverage: bool,
    /// load a precomputed k-mer graph from disk
    #[arg(short = 'l', long = "loadgraph")]
    loadgraph: Option<String>,
    /// save the k-mer countgraph to disk after all reads are loaded.
    #[arg(short = 's', long = "savegraph")]
    savegraph: Option<String>,
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
    /// What format should the machine readable run summary be in?
    #[arg(long = "summary-info", value_parser = ["json", "tsv"])]
    summary_info: Option<String>,
    #[arg(long = "force")]
    force: bool,
    /// treat all reads as if they were singletons
    #[arg(long = "ignore-pairs")]
    ignore_pairs: bool,
    /// Set location of temporary directory for second pass
    #[arg(short = 'T', long = "tempdir", default_value = "./")]
    tempdir: String,
    /// Threads (the trimming is order-dependent; computed in input order)
    #[arg(short = '@', long = "threads", default_value_t = 1)]
    threads: usize,
    /// Eliminate high-coverage reads altogether (digital normalization).
    #[arg(long = "diginorm")]
    diginorm: bool,
    /// Coverage at which to normalize reads (with --diginorm)
    #[arg(long = "diginorm-coverage", default_value_t = 20)]
    diginorm_coverage: u16,
    /// Do not do a second pass across the low coverage data
    #[arg(long = "single-pass")]
    single_pass: bool,
    /// Compress output using gzip
    #[arg(long = "gzip", conflicts_with = "bzip")]
    gzip: bool,
    /// Compress output using bzip2 (not supported)
    #[arg(long = "bzip")]
    bzip: bool,
    #[arg(required = true)]
    input_filenames: Vec<String>,
}

fn run_trim(a: TrimArgs) -> crate::CmdResult {
    let q = a.quiet;
    let mut uniq = a.input_filenames.clone();
    uniq.sort();
    uniq.dedup();
    if uniq.len() != a.input_filenames.len() {
        exit_with(Exit::msg(1, "Error: Cannot input the same filename multiple times."));
    }
    if a.trim_at_coverage != 20 && !a.variable_coverage {
        exit_with(Exit::msg(1, "Error: --trim-at-coverage/-Z given, but --variable-coverage/-V not specified."));
    }
    if a.diginorm_coverage != 20 && !a.diginorm {
        exit_with(Exit::msg(1, "Error: --diginorm-coverage given, but --diginorm not specified."));
    }
    if a.diginorm && a.single_pass {
        exit_with(Exit::msg(
            1,
            "Error: --diginorm and --single-pass are incompatible!\nYou probably want to use normalize-by-median.py instead.",
        ));
    }
    if a.bzip {
        exit_with(Exit::msg(1, "--bzip output is not supported by fasthts; use --gzip"));
    }
    a.graph.report(q, a.loadgraph.is_some());
    for f in &a.input_filenames {
        if let Err(e) = check_input_file(f, a.force) {
            exit_with(e);
        }
    }
    if a.input_filenames.iter().any(|f| f == "-" || f == "/dev/stdin") && a.output.is_none() {
        exit_with(Exit::msg(1, "Accepting input from stdin; output filename must be provided with -o."));
    }
    let mut g = match &a.loadgraph {
        Some(l) => Countgraph::load(Path::new(l)).map_err(|e| format!("{l}: {e}"))?,
        None => {
            if let Err(e) = a.graph.check(a.force, q) {
                exit_with(e);
            }
            match a.graph.create() {
                Ok(g) => g,
                Err(e) => exit_with(e),
            }
        }
    };
    let tempdir = make_tempdir(&a.tempdir)?;
    let result = trim_with_tempdir(&a, &mut g, &tempdir);
    let _ = std::fs::remove_dir_all(&tempdir);
    fasthts::output::unregister_temporary(&tempdir);
    let stats = result?;
    let fp = g.fp_rate();
    if let Some(s) = &a.savegraph {
        save_graph_and_free(g, s).map_err(|e| format!("{s}: {e}"))?;
    }
    if !q && stats.n_reads > 0 {
        eprintln!("read {} reads, {} bp", stats.n_reads, stats.n_bp);
        eprintln!("wrote {} reads, {} bp", stats.written_reads, stats.written_bp);
        eprintln!("removed {} reads and trimmed {} reads", stats.n_reads - stats.written_reads, stats.trimmed_reads);
    }
    if fp > 0.8 {
        eprintln!("{}", fp_error_block(fp, 0.8));
        if !a.force {
            std::process::exit(1);
        }
    }
    if !q {
        eprintln!("fp rate estimated to be {fp:1.3}");
    }
    if let Some(fmt) = &a.summary_info {
        let base = match a.output.as_deref() {
            Some(o) if o != "-" && o != "/dev/stdout" => o.to_string(),
            _ => format!("trim-low-abund-{}", utc_timestamp()),
        };
        let vals: [(&str, String); 10] = [
            ("fpr", py_repr(fp)),
            ("reads", stats.n_reads.to_string()),
            ("basepairs", stats.n_bp.to_string()),
            ("reads_written", stats.written_reads.to_string()),
            ("basepairs_written", stats.written_bp.to_string()),
            ("reads_skipped", stats.n_skipped.to_string()),
            ("basepairs_skipped", stats.bp_skipped.to_string()),
            ("reads_removed", (stats.n_reads - stats.written_reads).to_string()),
            ("reads_trimmed", stats.trimmed_reads.to_string()),
            ("basepairs_removed_or_trimmed", (stats.n_bp - stats.written_bp).to_string()),
        ];
        let fmt = fmt.to_lowercase();
        let path = format!("{base}.info.{fmt}");
        let text = if fmt == "json" {
            let items: Vec<String> = vals.iter().map(|(k, v)| format!("{}: {v}", json_str(k))).collect();
            format!("{{{}}}\n", items.join(", "))
        } else {
            let keys: Vec<&str> = vals.iter().map(|(k, _)| *k).collect();
            let vs: Vec<&str> = vals.iter().map(|(_, v)| v.as_str()).collect();
            format!("{}\r\n{}\r\n", keys.join("\t"), vs.join("\t"))
        };
        create_in_place(&path).and_then(|mut f| f.write_all(text.as_bytes())).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// `time.strftime("%Y-%m-%dT%H:%M:%S")` (UTC; our machines run in UTC).
fn utc_timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // civil from days (H. Hinnant)
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

/// A new directory in `parent` (named as khmer names it), registered as a
/// temporary for the signal handler.
fn make_tempdir(parent: &str) -> io::Result<PathBuf> {
    for i in 0..1000u32 {
        let p = Path::new(parent).join(format!("tmp{}{}khmer", std::process::id(), i));
        match fasthts::output::create_temporary_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("cannot create temporary directory"))
}

fn trim_with_tempdir(a: &TrimArgs, g: &mut Countgraph, tempdir: &Path) -> Result<TrimStats, Box<dyn std::error::Error + Send + Sync>> {
    let opt = TrimOptions {
        cutoff: a.cutoff,
        trim_at_coverage: a.trim_at_coverage,
        variable_coverage: a.variable_coverage,
        diginorm: if a.diginorm { Some(a.diginorm_coverage) } else { None },
        ignore_pairs: a.ignore_pairs,
        single_pass: a.single_pass,
    };
    let mut stats = TrimStats::default();
    let mut single = match &a.output {
        Some(o) => Some(OutFile::create(o, a.gzip)?),
        None => None,
    };
    // per input: (pass2 file, own output)
    let mut pass2: Vec<(String, Option<OutFile>)> = Vec::new();
    for f in &a.input_filenames {
        let p2 = tempdir.join(format!("{}.pass2", f.replace('/', "-")));
        let p2s = p2.to_string_lossy().into_owned();
        let mut saver = BufWriter::new(File::create(&p2)?);
        let mut own = match &single {
            Some(_) => None,
            None => Some(OutFile::create(&format!("{}.abundtrim", basename(f)), a.gzip)?),
        };
        {
            let w: &mut dyn Write = match (&mut own, &mut single) {
                (Some(o), _) => o.writer(),
                (None, Some(s)) => s.writer(),
                _ => unreachable!(),
            };
            let mut emit = |r: Record<'_>| r.write(w);
            scripts::trim_pass1(g, f, &opt, &mut saver, &mut stats, &mut emit)?;
        }
        saver.flush()?;
        pass2.push((p2s, own));
    }
    let after_pass1 = stats.clone();
    if opt.single_pass {
        for (p, _) in &pass2 {
            let _ = std::fs::remove_file(p);
        }
    } else {
        for (p, own) in pass2.iter_mut() {
            let w: &mut dyn Write = match (own, &mut single) {
                (Some(o), _) => o.writer(),
                (None, Some(s)) => s.writer(),
                _ => unreachable!(),
            };
            let mut emit = |r: Record<'_>| r.write(w);
            scripts::trim_pass2(g, p, &opt, &mut stats, &mut emit)?;
            let _ = std::fs::remove_file(&*p);
        }
    }
    for (_, own) in pass2 {
        if let Some(o) = own {
            o.commit()?;
        }
    }
    if let Some(s) = single {
        s.commit()?;
    }
    Ok(TrimStats::summary(&after_pass1, &stats))
}
