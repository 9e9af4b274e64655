//! Where the scripts' outputs go and what they are called: outputs of
//! reads (plain, gzip or bzip2; a file complete or absent, or standard
//! output), each input's own output named after it, the paired scripts'
//! outputs, files written in place as a script goes, and khmer's names
//! for outputs in its messages.

use super::error::Error;
use super::inputs::is_stdin;
use crate::pyfmt::py_os_error;
use fasthts_io::bgzf::BgzfWriter;
use fasthts_io::output::TempOutput;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The compression of the reads a script writes (`--gzip`, `--bzip`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Text as it is.
    #[default]
    Plain,
    /// gzip, written as BGZF: gzip members of 64 KB compressed on all
    /// cores (khmer's single gzip member decompresses to the same bytes;
    /// gzip, Python's gzip module and khmer's readers read both). On one
    /// core it took 21 s for the 100 MB of pairs of a 105 MB FASTQ that
    /// khmer takes 53 s for.
    Gzip,
    /// bzip2.
    Bzip2,
}

/// A stream of output bytes, compressed or not, behind a large buffer.
enum Sink {
    Plain(BufWriter<Box<dyn Write>>),
    Gzip(BgzfWriter<Box<dyn Write>>),
    Bzip(BufWriter<bzip2::write::BzEncoder<Box<dyn Write>>>),
}

const BUFFER: usize = 1 << 20;

/// An output of reads: a file written under a temporary name and renamed
/// into place by [`ReadOutput::commit`] (removed if dropped uncommitted,
/// or by the signal handler if the process is interrupted), or standard
/// output for `-` and `/dev/stdout`. Write errors name the output.
pub struct ReadOutput {
    // Declared first, dropped first: closed before an uncommitted
    // temporary is removed.
    sink: Option<Sink>,
    temp: Option<TempOutput>,
    path: String,
}

impl ReadOutput {
    /// Creates `path` (standard output for `None`, `-` and
    /// `/dev/stdout`); the error is the bare OS error (its caller names
    /// the file as its script does).
    pub fn open(path: Option<&str>, compression: Compression) -> io::Result<ReadOutput> {
        let (raw, temp): (Box<dyn Write>, Option<TempOutput>) = match path {
            None => (Box::new(io::stdout()), None),
            Some(p) if is_stdout(p) => (Box::new(io::stdout()), None),
            Some(p) => {
                let (temp, file) = TempOutput::create(Path::new(p)).map_err(|e| e.source)?;
                (Box::new(file), Some(temp))
            }
        };
        let sink = match compression {
            Compression::Gzip => Sink::Gzip(BgzfWriter::new(raw, fasthts_io::bgzf::DEFAULT_LEVEL)),
            Compression::Bzip2 => {
                Sink::Bzip(BufWriter::with_capacity(BUFFER, bzip2::write::BzEncoder::new(raw, bzip2::Compression::default())))
            }
            Compression::Plain => Sink::Plain(BufWriter::with_capacity(BUFFER, raw)),
        };
        // errors name the file stdout is (`/dev/full`), as everywhere in fasthts
        let name = match (path, &temp) {
            (Some(p), Some(_)) => p.to_string(),
            _ => fasthts_io::output::stdout_name().display().to_string(),
        };
        Ok(ReadOutput { sink: Some(sink), temp, path: name })
    }

    /// [`ReadOutput::open`] with the error as the read-handling scripts
    /// (interleave-reads, split-paired-reads, ...) word it: `ERROR: can't
    /// open 'x': [Errno 13] Permission denied: 'x'`.
    pub fn create(path: Option<&str>, compression: Compression) -> Result<ReadOutput, Error> {
        ReadOutput::open(path, compression).map_err(|e| {
            let p = path.unwrap_or("-");
            Error::refused(format!("ERROR: can't open '{p}': {}", py_os_error(p, &e)))
        })
    }

    /// Finishes the stream (a compressed one's trailer included) and puts
    /// the file in place.
    pub fn commit(mut self) -> Result<(), Error> {
        let fail = |source: io::Error| Error::Output { path: self.path.clone(), source };
        let mut raw = match self.sink.take().expect("committed once") {
            Sink::Plain(w) => w.into_inner().map_err(|e| fail(e.into_error()))?,
            Sink::Gzip(w) => w.finish().map_err(fail)?,
            Sink::Bzip(w) => w.into_inner().map_err(|e| fail(e.into_error()))?.finish().map_err(fail)?,
        };
        raw.flush().map_err(fail)?;
        drop(raw);
        match self.temp.take() {
            Some(temp) => temp.commit().map_err(|e| fail(e.source)),
            None => Ok(()),
        }
    }

    fn named(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.path))
    }
}

impl Write for ReadOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = match self.sink.as_mut().expect("written before commit") {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
            Sink::Bzip(w) => w.write(buf),
        };
        r.map_err(|e| self.named(e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let r = match self.sink.as_mut().expect("written before commit") {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Gzip(w) => w.write_all(buf),
            Sink::Bzip(w) => w.write_all(buf),
        };
        r.map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = match self.sink.as_mut().expect("written before commit") {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
            Sink::Bzip(w) => w.flush(),
        };
        r.map_err(|e| self.named(e))
    }
}

/// Where normalize-by-median, filter-abund and trim-low-abund write the
/// reads of `input`: the one output `single` (`-o`), or the input's own,
/// named after it as khmer names it (`<file name>.<suffix>`, in the
/// current directory).
pub fn reads_output_path(single: Option<&str>, suffix: &str, input: &str) -> String {
    match single {
        Some(path) => path.to_string(),
        None => format!("{}.{suffix}", basename(input)),
    }
}

/// Every file of reads [`ReadOutputs`] writes for `inputs`: `single`, or
/// each input's own.
pub fn reads_output_paths<I: AsRef<str>>(single: Option<&str>, suffix: &str, inputs: &[I]) -> Vec<String> {
    match single {
        Some(path) => vec![path.to_string()],
        None => inputs.iter().map(|f| reads_output_path(None, suffix, f.as_ref())).collect(),
    }
}

/// The outputs of reads of normalize-by-median, filter-abund and
/// trim-low-abund: every input's to one file (`-o`), or each input's to
/// its own (see [`reads_output_path`]).
pub struct ReadOutputs {
    single: Option<(String, ReadOutput)>,
    suffix: &'static str,
    compression: Compression,
}

impl ReadOutputs {
    /// Opens the one output `single` now (khmer opens `-o` before it reads
    /// anything); each input's own is opened by [`ReadOutputs::own`]. The
    /// error is the bare OS error.
    pub fn new(single: Option<&str>, suffix: &'static str, compression: Compression) -> io::Result<ReadOutputs> {
        let single = single.map(|path| ReadOutput::open(Some(path), compression).map(|file| (path.to_string(), file))).transpose()?;
        Ok(ReadOutputs { single, suffix, compression })
    }

    /// Where `input`'s reads go.
    pub fn path(&self, input: &str) -> String {
        reads_output_path(self.single.as_ref().map(|(path, _)| path.as_str()), self.suffix, input)
    }

    /// `input`'s own output file, created now; `None` with `-o`.
    pub fn own(&self, input: &str) -> io::Result<Option<ReadOutput>> {
        match self.single {
            Some(_) => Ok(None),
            None => ReadOutput::open(Some(&self.path(input)), self.compression).map(Some),
        }
    }

    /// The writer of an input whose [`ReadOutputs::own`] file is `own`.
    pub fn writer<'a>(&'a mut self, own: &'a mut Option<ReadOutput>) -> &'a mut dyn Write {
        match (own, &mut self.single) {
            (Some(file), _) | (None, Some((_, file))) => file,
            (None, None) => unreachable!("an input without an output"),
        }
    }

    /// Commits the one output (each input's own is committed by its caller).
    pub fn commit(self) -> Result<(), Error> {
        self.single.map_or(Ok(()), |(_, file)| file.commit())
    }
}

/// The outputs of split-paired-reads (first and second mates) or
/// extract-paired-reads (pairs and orphans), and the input they are read
/// from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairedOutputs {
    /// The input: `-` for standard input (`-`, `/dev/stdin`).
    pub input: String,
    /// The two outputs, in the order the script names them.
    pub paths: [String; 2],
    /// What the script's messages call them: the path, or `<stdout>`
    /// for a given `-` (see [`output_name`]).
    pub names: [String; 2],
}

/// split-paired-reads' outputs: `-1` and `-2`, else `<input's
/// name>.1` and `.2`, in `-d` (created if need be; `os.path.join`) when
/// given. Standard input needs both outputs named.
pub fn split_paired_outputs(infile: &str, dir: &str, first: Option<&str>, second: Option<&str>) -> Result<PairedOutputs, Error> {
    let join = |name: &str| if dir.ends_with('/') { format!("{dir}{name}") } else { format!("{dir}/{name}") };
    paired_outputs(infile, dir, [first, second], ["1", "2"], join)
}

/// extract-paired-reads' outputs: `-p` (pairs) and `-s` (orphans), else
/// `<input's name>.pe` and `.se`, in `-d` (created if need be; joined
/// with a `/`, as khmer joins them) when given. Standard input needs both
/// outputs named.
pub fn extract_paired_outputs(infile: &str, dir: &str, paired: Option<&str>, single: Option<&str>) -> Result<PairedOutputs, Error> {
    paired_outputs(infile, dir, [paired, single], ["pe", "se"], |name| format!("{dir}/{name}"))
}

fn paired_outputs(
    infile: &str,
    dir: &str,
    given: [Option<&str>; 2],
    suffixes: [&str; 2],
    join: impl Fn(&str) -> String,
) -> Result<PairedOutputs, Error> {
    let base = basename(infile);
    let mut defaults = suffixes.map(|s| format!("{base}.{s}"));
    let mut input = infile;
    if is_stdin(infile) {
        input = "-";
        if given.iter().any(Option::is_none) {
            return Err(Error::refused("Accepting input from stdin; output filenames must be provided."));
        }
    } else if !dir.is_empty() {
        std::fs::create_dir_all(dir).map_err(|e| Error::refused(format!("{dir}: {e}")))?;
        defaults = defaults.map(|name| join(&name));
    }
    let paths = [0, 1].map(|i| given[i].map_or_else(|| defaults[i].clone(), str::to_string));
    let names = [0, 1].map(|i| given[i].map_or_else(|| defaults[i].clone(), |p| output_name(Some(p))));
    Ok(PairedOutputs { input: input.to_string(), paths, names })
}

/// trim-low-abund's temporary directory for the reads of its second pass:
/// a new directory in `parent` (`-T`), named as khmer names it
/// (`tmp<pid><n>khmer`), registered as a temporary that an interrupted run
/// removes. The caller removes it (and unregisters it) when done.
pub fn trim_tempdir(parent: &str) -> io::Result<PathBuf> {
    for i in 0..1000u32 {
        let p = Path::new(parent).join(format!("tmp{}{}khmer", std::process::id(), i));
        match fasthts_io::output::create_temporary_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("cannot create temporary directory"))
}

/// The file in trim-low-abund's `tempdir` holding the reads of `input`
/// set aside for the second pass (`/` in the input's path made `-`).
pub fn trim_pass2_path(tempdir: &Path, input: &str) -> PathBuf {
    tempdir.join(format!("{}.pass2", input.replace('/', "-")))
}

/// abundance-dist's refusal to overwrite an existing histogram file
/// without `-s`/`--squash`: `Ok(true)` when an existing file is to be
/// overwritten (standard output never is).
pub fn check_histogram_output(out: &str, squash: bool) -> Result<bool, Error> {
    let exists = !is_stdout(out) && Path::new(out).exists();
    if exists && !squash {
        return Err(Error::refused(format!("ERROR: {out} exists; not squashing.")));
    }
    Ok(exists)
}

/// Writes abundance-dist's histogram to `out` (`-` for standard output)
/// as khmer's CSV, complete or absent; refuses, as khmer does, one that
/// is zero everywhere (nothing was counted). An output that cannot be
/// created or written is an `io::Error` (written: naming the file).
pub fn write_histogram(hist: &[u64], no_zero: bool, out: &str) -> Result<(), crate::scripts::BoxError> {
    if hist[..65535].iter().all(|&n| n == 0) {
        return Err(Error::refused(
            "ERROR: abundance distribution is uniformly zero; nothing to report.\n\tPlease verify that the input files are valid.",
        )
        .into());
    }
    let mut of = ReadOutput::open(Some(out), Compression::Plain)?;
    crate::scripts::write_abundance_csv(hist, no_zero, &mut of)?;
    of.commit()?;
    Ok(())
}

/// khmer's `describe_file_handle` of an output: "block device" for
/// standard output and for block and character devices, else the path.
pub fn describe_output(path: Option<&str>) -> String {
    use std::os::unix::fs::FileTypeExt;
    match path {
        None | Some("-") => "block device".into(),
        Some(p) => match std::fs::metadata(p) {
            Ok(m) if m.file_type().is_block_device() || m.file_type().is_char_device() => "block device".into(),
            _ => p.into(),
        },
    }
}

/// The `name` Python gives an output file object: `<stdout>` for `-` (and
/// for standard output by default), else the path.
pub fn output_name(path: Option<&str>) -> String {
    match path {
        None | Some("-") => "<stdout>".into(),
        Some(p) => p.into(),
    }
}

/// Creates an output written in place as a script goes (khmer's `.info`,
/// report and summary files), registered so that an interrupted run
/// leaves none of it (see `fasthts_io::output::create_in_place`).
pub fn create_in_place(path: &str) -> io::Result<File> {
    fasthts_io::output::create_in_place(Path::new(path))
}

/// [`create_in_place`] with all of its text at once.
pub fn write_in_place(path: &str, text: &str) -> Result<(), Error> {
    create_in_place(path).and_then(|mut f| f.write_all(text.as_bytes())).map_err(|source| file_error(path, source))
}

/// Appends `line` to a file that exists: if an interrupted run's signal
/// handler has just removed it, it stays removed.
pub fn append_line(path: &str, line: &str) -> Result<(), Error> {
    let mut f = OpenOptions::new().append(true).open(path).map_err(|source| file_error(path, source))?;
    f.write_all(line.as_bytes()).map_err(|source| file_error(path, source))
}

/// An error of a file written in place.
pub fn file_error(path: &str, source: io::Error) -> Error {
    Error::File { path: path.to_string(), source }
}

/// Whether output `path` is standard output (`-`, `/dev/stdout`).
pub fn is_stdout(path: &str) -> bool {
    path == "-" || path == "/dev/stdout"
}

/// The file name of `path` (`os.path.basename`; the path itself when it
/// has none), after which khmer names the outputs of an input.
pub fn basename(path: &str) -> String {
    Path::new(path).file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.to_string())
}

/// normalize-by-median's refusal of two inputs of the same file name
/// (their `.keep` outputs would be one file), without `-o`.
pub fn refuse_duplicate_basenames<I: AsRef<str>>(inputs: &[I]) -> Result<(), Error> {
    let mut seen = Vec::new();
    for name in inputs.iter().map(|f| basename(f.as_ref())) {
        if seen.contains(&name) {
            return Err(Error::refused("ERROR: Duplicate filename--Cannot handle this!\n** Exiting!"));
        }
        seen.push(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_named_after_inputs() {
        assert_eq!(basename("a/b/x.fq.gz"), "x.fq.gz");
        assert_eq!(basename("x.fq"), "x.fq");
        assert!(refuse_duplicate_basenames(&["a/x.fa", "b/y.fa"]).is_ok());
        assert!(refuse_duplicate_basenames(&["a/x.fa", "b/x.fa"]).is_err());
        assert_eq!(reads_output_path(None, "keep", "d/x.fq"), "x.fq.keep");
        assert_eq!(reads_output_path(Some("-"), "keep", "d/x.fq"), "-");
        assert_eq!(reads_output_paths(None, "keep", &["a/x.fq", "y.fq"]), ["x.fq.keep", "y.fq.keep"]);
        assert_eq!(reads_output_paths(Some("o.fq"), "keep", &["a/x.fq", "y.fq"]), ["o.fq"]);
    }

    #[test]
    fn paired_outputs_as_khmer_names_them() {
        let split = split_paired_outputs("d/x.fq", "", None, Some("-")).unwrap();
        assert_eq!(split.input, "d/x.fq");
        assert_eq!(split.paths, ["x.fq.1", "-"]);
        assert_eq!(split.names, ["x.fq.1", "<stdout>"]);
        let extract = extract_paired_outputs("/dev/stdin", "", Some("p"), Some("s")).unwrap();
        assert_eq!((extract.input.as_str(), extract.paths.clone()), ("-", ["p".to_string(), "s".to_string()]));
        let refused = extract_paired_outputs("-", "", Some("p"), None).unwrap_err();
        assert_eq!(refused.to_string(), "Accepting input from stdin; output filenames must be provided.");
        let dir = fasthts_testgen::support::TempDir::new("kmer-paired");
        let out = dir.path("out/");
        let out = out.to_str().unwrap();
        assert_eq!(split_paired_outputs("x.fq", out, None, None).unwrap().paths, [format!("{out}x.fq.1"), format!("{out}x.fq.2")]);
        assert_eq!(extract_paired_outputs("x.fq", out, None, None).unwrap().paths, [format!("{out}/x.fq.pe"), format!("{out}/x.fq.se")]);
        assert!(std::path::Path::new(out).is_dir());
    }

    #[test]
    fn histograms() {
        let dir = fasthts_testgen::support::TempDir::new("kmer-hist");
        let out = dir.path("h.csv");
        let out = out.to_str().unwrap();
        let mut hist = vec![0u64; 65536];
        assert!(!check_histogram_output(out, false).unwrap());
        assert!(write_histogram(&hist, false, out).unwrap_err().to_string().starts_with("ERROR: abundance distribution is uniformly zero"));
        assert!(!Path::new(out).exists());
        hist[1] = 2;
        write_histogram(&hist, true, out).unwrap();
        assert_eq!(std::fs::read_to_string(out).unwrap(), "abundance,count,cumulative,cumulative_fraction\r\n1,2,2,1.0\r\n");
        assert_eq!(check_histogram_output(out, false).unwrap_err().to_string(), format!("ERROR: {out} exists; not squashing."));
        assert!(check_histogram_output(out, true).unwrap());
        assert!(!check_histogram_output("-", false).unwrap());
    }

    #[test]
    fn trim_temporaries() {
        let dir = fasthts_testgen::support::TempDir::new("kmer-trim");
        let parent = dir.0.to_str().unwrap();
        let (a, b) = (trim_tempdir(parent).unwrap(), trim_tempdir(parent).unwrap());
        assert!(a.is_dir() && b.is_dir() && a != b);
        assert!(a.file_name().unwrap().to_str().unwrap().ends_with("khmer"));
        assert_eq!(trim_pass2_path(&a, "d/x.fq"), a.join("d-x.fq.pass2"));
        for d in [a, b] {
            std::fs::remove_dir(&d).unwrap();
            fasthts_io::output::unregister_temporary(&d);
        }
    }

    #[test]
    fn compressed_outputs_are_complete_or_absent() {
        let dir = fasthts_testgen::support::TempDir::new("kmer-outputs");
        for (compression, magic) in [(Compression::Plain, &b">a"[..]), (Compression::Gzip, b"\x1f\x8b"), (Compression::Bzip2, b"BZh")] {
            let path = dir.path(&format!("out-{compression:?}"));
            let p = path.to_str().unwrap();
            let mut out = ReadOutput::open(Some(p), compression).unwrap();
            out.write_all(b">a\nACGT\n").unwrap();
            drop(out);
            assert!(!path.exists(), "an output dropped uncommitted is not left");
            let mut out = ReadOutput::open(Some(p), compression).unwrap();
            out.write_all(b">a\nACGT\n").unwrap();
            out.commit().unwrap();
            assert!(std::fs::read(&path).unwrap().starts_with(magic));
        }
    }
}
