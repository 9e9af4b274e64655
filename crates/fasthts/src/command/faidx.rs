//! `faidx`: samtools faidx (and fqidx): index a FASTA or FASTQ file, or
//! print regions of it, byte for byte as samtools 1.16.

use crate::faidx::{reverse_complement, DuplicateName, FaiEntry, FastaFile, OpenOptions, Part, SequenceFormat};
use crate::output::TempOutput;
use crate::region::notation::hts_parse_region;
use crate::Error;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// samtools faidx's default line width (`-n`).
pub const DEFAULT_LINE_WIDTH: usize = 60;

/// What `--mark-strand` appends to a region's name: `forward` without
/// `-i`, `reverse` with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StrandMarks {
    /// After the name of a forward sequence.
    pub forward: Vec<u8>,
    /// After the name of a reverse-complemented one.
    pub reverse: Vec<u8>,
}

impl Default for StrandMarks {
    /// `rc`: nothing on the forward strand, `/rc` on the reverse.
    fn default() -> StrandMarks {
        StrandMarks { forward: Vec::new(), reverse: b"/rc".to_vec() }
    }
}

impl StrandMarks {
    /// Reads `--mark-strand TYPE` as samtools does: `rc`, `no`, `sign`
    /// (`(+)`/`(-)`) or `custom,POS,NEG` (NEG is everything after the
    /// second comma; without it, empty).
    ///
    /// ```
    /// use fasthts::command::StrandMarks;
    /// assert_eq!(StrandMarks::parse("custom,+,-,x")?, StrandMarks { forward: b"+".to_vec(), reverse: b"-,x".to_vec() });
    /// assert!(StrandMarks::parse("minus").is_err());
    /// # Ok::<(), fasthts::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<StrandMarks, Error> {
        Ok(match text {
            "rc" => StrandMarks::default(),
            "no" => StrandMarks { forward: Vec::new(), reverse: Vec::new() },
            "sign" => StrandMarks { forward: b"(+)".to_vec(), reverse: b"(-)".to_vec() },
            _ => match text.strip_prefix("custom,") {
                Some(marks) => {
                    let (forward, reverse) = marks.split_once(',').unwrap_or((marks, ""));
                    StrandMarks { forward: forward.as_bytes().to_vec(), reverse: reverse.as_bytes().to_vec() }
                }
                None => return Err(Error::InvalidArgument(format!("unknown --mark-strand option \"{text}\""))),
            },
        })
    }
}

/// What `fasthts faidx` is asked to do.
#[derive(Clone, Debug)]
pub struct FaidxOptions {
    /// The index files (`--fai-idx`, `--gzi-idx`) and the format
    /// (`--fastq`: FASTQ records out, read through a five-column index).
    pub index: OpenOptions,
    /// Regions to print, in order (after those of `region_file`).
    pub regions: Vec<Vec<u8>>,
    /// A file of regions, one a line (`-r`).
    pub region_file: Option<PathBuf>,
    /// Bases per output line (`-n`).
    pub line_width: usize,
    /// Go on past a region whose sequence is not in the file (`-c`).
    pub keep_going: bool,
    /// Print the reverse complement (`-i`).
    pub reverse_complement: bool,
    /// The name suffixes (`--mark-strand`).
    pub strand_marks: StrandMarks,
}

impl Default for FaidxOptions {
    fn default() -> FaidxOptions {
        FaidxOptions {
            index: OpenOptions::default(),
            regions: Vec::new(),
            region_file: None,
            line_width: DEFAULT_LINE_WIDTH,
            keep_going: false,
            reverse_complement: false,
            strand_marks: StrandMarks::default(),
        }
    }
}

/// What samtools faidx warns about on the way, going on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaidxWarning {
    /// A name met again while indexing or reading the index: the first
    /// sequence of that name is the one used.
    DuplicateName(DuplicateName),
    /// No sequence for a region (unknown name, or no region htslib can
    /// read in the text), with `-c`: its name line is printed alone.
    NotFound {
        /// The region as given.
        region: String,
    },
    /// A region that holds no bases (it starts past its sequence's end).
    ZeroLength {
        /// The region as given.
        region: String,
    },
    /// A region ending past its sequence's end: the bases up to the end.
    Truncated {
        /// The region as given.
        region: String,
    },
}

/// samtools' words, capitalised as it prints them: scripts (and samtools'
/// own test.pl) look for "Zero" and "Truncated".
impl std::fmt::Display for FaidxWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FaidxWarning::DuplicateName(d) => write!(f, "{d}"),
            FaidxWarning::NotFound { region } => write!(f, "failed to fetch sequence in {region}: reference not found"),
            FaidxWarning::ZeroLength { region } => write!(f, "Zero length sequence: {region}"),
            FaidxWarning::Truncated { region } => write!(f, "Truncated sequence: {region}"),
        }
    }
}

/// samtools faidx `path` [REGIONS]: without regions (and no `-r`), the
/// index is built and written (to `output` when given and no
/// `--fai-idx`, as samtools does), complete or not at all. With regions,
/// the index is read (built first if missing) and the regions are printed
/// to `output` (complete or not at all) or else to `stdout`.
///
/// As samtools, a region with no sequence stops the run with an error
/// after its name line (with [`FaidxOptions::keep_going`]: a warning,
/// and on); regions past a sequence's end give what there is, with a
/// warning.
pub fn faidx(
    path: &Path,
    options: &FaidxOptions,
    output: Option<&Path>,
    stdout: &mut dyn Write,
    warn: &mut dyn FnMut(FaidxWarning),
) -> Result<(), Error> {
    let mut duplicate = |d: &DuplicateName| warn(FaidxWarning::DuplicateName(d.clone()));
    if options.regions.is_empty() && options.region_file.is_none() {
        let mut index = options.index.clone();
        if index.fai.is_none() {
            index.fai = output.map(Path::to_path_buf);
        }
        crate::faidx::write_index(path, &index, &mut duplicate)?;
        return Ok(());
    }
    let fasta = FastaFile::open(path, &options.index, &mut duplicate)?;
    match output {
        Some(output) => {
            // samtools compares the names as given.
            if output.as_os_str() == path.as_os_str() {
                return Err(Error::InvalidArgument(format!("same input/output: {}", output.display())));
            }
            let (temp, file) = TempOutput::create(output)?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            print_regions(&fasta, options, &mut out, warn).map_err(|e| match e {
                Error::Io(e) => Error::Io(e).with_path(output),
                e => e,
            })?;
            out.flush().map_err(|e| Error::from(e).with_path(output))?;
            Ok(temp.commit()?)
        }
        None => {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout);
            let printed = print_regions(&fasta, options, &mut out, warn);
            // What was printed before a failing region goes out, as
            // samtools' does.
            let flushed = out.flush();
            printed?;
            Ok(flushed?)
        }
    }
}

/// Regions rendered together on the pool, up to this many...
const BATCH_REGIONS: usize = 4096;
/// ... or about this many bases: a whole chromosome goes alone.
const BATCH_BASES: u64 = 32 << 20;

/// The regions of `-r FILE` then those given, printed in order: each
/// batch of regions is fetched and formatted on the pool (a bgzipped
/// file's blocks inflated on all cores), then written in order, up to
/// the first that fails.
fn print_regions(fasta: &FastaFile, options: &FaidxOptions, out: &mut dyn Write, warn: &mut dyn FnMut(FaidxWarning)) -> Result<(), Error> {
    let mut batch = Batch { fasta, options, regions: Vec::new(), bases: 0 };
    if let Some(file) = &options.region_file {
        let opened = std::fs::File::open(file).map_err(|e| Error::from(e).with_path(file))?;
        let mut reader = BufReader::new(opened);
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).map_err(|e| Error::from(e).with_path(file))? == 0 {
                break;
            }
            // htslib's kgetline: the line's \n, and a \r before it, go.
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
            }
            // Read as a C string: a NUL ends it.
            let end = line.iter().position(|&c| c == 0).unwrap_or(line.len());
            batch.push(line[..end].to_vec(), out, warn)?;
        }
    }
    for region in &options.regions {
        batch.push(region.clone(), out, warn)?;
    }
    batch.flush(out, warn)
}

/// Regions waiting to be rendered.
struct Batch<'a> {
    fasta: &'a FastaFile,
    options: &'a FaidxOptions,
    regions: Vec<Vec<u8>>,
    bases: u64,
}

impl Batch<'_> {
    fn push(&mut self, region: Vec<u8>, out: &mut dyn Write, warn: &mut dyn FnMut(FaidxWarning)) -> Result<(), Error> {
        self.bases += locate(self.fasta, &region).map_or(0, |l| (l.end - l.beg) as u64);
        self.regions.push(region);
        if self.regions.len() >= BATCH_REGIONS || self.bases >= BATCH_BASES {
            self.flush(out, warn)?;
        }
        Ok(())
    }

    /// Renders the waiting regions on the pool and writes them in order;
    /// the first failure ends the run after its name line.
    fn flush(&mut self, out: &mut dyn Write, warn: &mut dyn FnMut(FaidxWarning)) -> Result<(), Error> {
        use rayon::prelude::*;
        let (fasta, options) = (self.fasta, self.options);
        // Each worker reuses one buffer for the bases it fetches.
        let rendered: Vec<Rendered> =
            self.regions.par_iter().map_init(Vec::new, |sequence, region| render(fasta, options, region, sequence)).collect();
        self.regions.clear();
        self.bases = 0;
        for r in rendered {
            out.write_all(&r.text)?;
            r.warnings.into_iter().for_each(&mut *warn);
            if let Some(e) = r.error {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// One region as samtools prints it: its text, the warnings on the way,
/// and the error that ends the run after the text (its name line).
struct Rendered {
    text: Vec<u8>,
    warnings: Vec<FaidxWarning>,
    error: Option<Error>,
}

/// Where a region lies: its sequence, the span fetched (clamped to the
/// sequence) and the span as the text gave it (for the truncation check).
struct Located<'a> {
    entry: &'a FaiEntry,
    beg: i64,
    end: i64,
    asked: (i64, i64),
}

/// The sequence and span `region` names in `fasta`, as samtools faidx
/// reads it (`fai_get_val`); None where it names none.
fn locate<'a>(fasta: &'a FastaFile, region: &[u8]) -> Option<Located<'a>> {
    let index = fasta.index();
    let (id, beg, end) = hts_parse_region(region, |name| index.id(name).map(|i| i as i32))?;
    let entry = &index.entries()[id as usize];
    let len = entry.length;
    // htslib compares the signed positions with the unsigned length:
    // a start of -1 (`chr:0-5`) is past any end.
    let mut fetch_beg = if beg as u64 >= len { len as i64 } else { beg };
    let fetch_end = if end as u64 >= len { len as i64 } else { end };
    if fetch_beg > fetch_end {
        fetch_beg = fetch_end;
    }
    Some(Located { entry, beg: fetch_beg, end: fetch_end, asked: (beg, end) })
}

/// samtools' `write_output` for one region.
fn render(fasta: &FastaFile, options: &FaidxOptions, region: &[u8], sequence: &mut Vec<u8>) -> Rendered {
    let fastq = options.index.format == Some(SequenceFormat::Fastq);
    let mut r = Rendered { text: Vec::new(), warnings: Vec::new(), error: None };
    r.text.push(if fastq { b'@' } else { b'>' });
    r.text.extend_from_slice(region);
    let marks = &options.strand_marks;
    r.text.extend_from_slice(if options.reverse_complement { &marks.reverse } else { &marks.forward });
    r.text.push(b'\n');
    let located = locate(fasta, region);
    let parts: &[Part] = if fastq { &[Part::Sequence, Part::Quality] } else { &[Part::Sequence] };
    let shown = || String::from_utf8_lossy(region).into_owned();
    for &part in parts {
        if part == Part::Quality {
            r.text.extend_from_slice(b"+\n");
        }
        let Some(located) = &located else {
            if options.keep_going {
                r.warnings.push(FaidxWarning::NotFound { region: shown() });
                continue;
            }
            let e = Error::Message(format!("failed to fetch sequence in {}: reference not found", shown()));
            r.error = Some(e.with_path(fasta.path()));
            return r;
        };
        sequence.clear();
        if let Err(e) = fasta.fetch_into(located.entry, located.beg, located.end, part, sequence) {
            r.error = Some(Error::Message(format!("failed to fetch sequence in {}: {e}", shown())).with_path(fasta.path()));
            return r;
        }
        if options.reverse_complement {
            match part {
                Part::Sequence => reverse_complement(sequence),
                Part::Quality => sequence.reverse(),
            }
        }
        let (asked_beg, asked_end) = located.asked;
        if sequence.is_empty() {
            r.warnings.push(FaidxWarning::ZeroLength { region: shown() });
        } else if asked_end < i64::from(i32::MAX) && sequence.len() as i64 != asked_end - asked_beg {
            r.warnings.push(FaidxWarning::Truncated { region: shown() });
        }
        r.text.reserve(sequence.len() + sequence.len() / options.line_width + 1);
        for line in sequence.chunks(options.line_width) {
            r.text.extend_from_slice(line);
            r.text.push(b'\n');
        }
    }
    r
}
