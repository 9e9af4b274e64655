//! The outputs of reads of every k-mer script (plain, gzip or bzip2, to a
//! file written under a temporary name or to stdout), khmer's names for
//! them in messages, and Python's wording of OS errors; and what the
//! read-handling scripts (interleave-reads, split-paired-reads, ...) share.

use crate::Failure;
use clap::Args;
use fasthts_io::bgzf::BgzfWriter;
use fasthts_io::output::TempOutput;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// `--gzip`/`--bzip`: the compression of the reads written.
#[derive(Args, Debug, Clone, Copy, Default)]
pub(super) struct OutputCompression {
    #[arg(help = "Compress output using gzip", long_help = "Compress output using gzip (BGZF: gzip members compressed on all cores)", long = "gzip", conflicts_with = "bzip")]
    gzip: bool,
    #[arg(help = "Compress output using bzip2", long = "bzip")]
    bzip: bool,
}

/// A stream of output bytes, compressed or not, behind a large buffer.
/// gzip is written as BGZF: gzip members of 64 KB compressed on all cores
/// (khmer's single gzip member decompresses to the same bytes; gzip,
/// Python's gzip module and khmer's readers read both). On one core it took
/// 21 s for the 100 MB of pairs of a 105 MB FASTQ that khmer takes 53 s for.
enum Sink {
    Plain(BufWriter<Box<dyn Write>>),
    Gzip(BgzfWriter<Box<dyn Write>>),
    Bzip(BufWriter<bzip2::write::BzEncoder<Box<dyn Write>>>),
}

const BUFFER: usize = 1 << 20;

/// An output of reads: a file written under a temporary name and renamed
/// into place by [`ReadOutput::commit`] (removed if dropped uncommitted),
/// or stdout for `-` and `/dev/stdout`. Write errors name the output.
pub(super) struct ReadOutput {
    // Declared first, dropped first: closed before an uncommitted
    // temporary is removed.
    sink: Option<Sink>,
    temp: Option<TempOutput>,
    path: String,
}

impl ReadOutput {
    /// Creates `path` (stdout for `None`, `-` and `/dev/stdout`); the error
    /// as the read-handling scripts word it.
    pub(super) fn create(path: Option<&str>, compression: OutputCompression) -> Result<ReadOutput, Failure> {
        ReadOutput::open(path, compression).map_err(|e| {
            let p = path.unwrap_or("-");
            Failure::new(1, format!("ERROR: can't open '{p}': {}", python_os_error(p, &e)))
        })
    }

    /// [`ReadOutput::create`] with the bare OS error (its caller names the
    /// file as its khmer script does).
    pub(super) fn open(path: Option<&str>, compression: OutputCompression) -> io::Result<ReadOutput> {
        let (raw, temp): (Box<dyn Write>, Option<TempOutput>) = match path {
            None => (Box::new(io::stdout()), None),
            Some(p) if super::is_stdout(p) => (Box::new(io::stdout()), None),
            Some(p) => {
                // removed by the signal handler if interrupted
                let (temp, file) = TempOutput::create(Path::new(p)).map_err(|e| e.source)?;
                (Box::new(file), Some(temp))
            }
        };
        let sink = if compression.gzip {
            Sink::Gzip(BgzfWriter::new(raw, fasthts_io::bgzf::DEFAULT_LEVEL))
        } else if compression.bzip {
            Sink::Bzip(BufWriter::with_capacity(BUFFER, bzip2::write::BzEncoder::new(raw, bzip2::Compression::default())))
        } else {
            Sink::Plain(BufWriter::with_capacity(BUFFER, raw))
        };
        // errors name the file stdout is (`/dev/full`), as everywhere in fasthts
        let name = match (path, &temp) {
            (Some(p), Some(_)) => p.to_string(),
            _ => fasthts_io::output::stdout_name().display().to_string(),
        };
        Ok(ReadOutput { sink: Some(sink), temp, path: name })
    }

    /// Finishes the stream (a compressed one's trailer included) and puts
    /// the file in place.
    pub(super) fn commit(mut self) -> Result<(), Failure> {
        let fail = |e: io::Error| Failure::new(1, format!("{}: {e}", self.path));
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

/// khmer's `describe_file_handle` of an output: "block device" for stdout
/// and for block and character devices, else the path.
pub(super) fn describe_output(path: Option<&str>) -> String {
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
/// for stdout by default), else the path.
pub(super) fn output_name(path: Option<&str>) -> String {
    match path {
        None | Some("-") => "<stdout>".into(),
        Some(p) => p.into(),
    }
}

/// Python's text of an OS error on `path`: `[Errno 2] No such file or
/// directory: 'path'`.
pub(super) fn python_os_error(path: &str, e: &io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(errno) => {
            let strerror = text.strip_suffix(&format!(" (os error {errno})")).unwrap_or(&text);
            format!("[Errno {errno}] {strerror}: '{path}'")
        }
        None => text,
    }
}

/// Python's exception (class and text) for an OS error on `path`, as a
/// traceback's last line shows it.
pub(super) fn python_exception(path: &str, e: &io::Error) -> String {
    let class = match e.raw_os_error() {
        Some(libc::ENOENT) => "FileNotFoundError",
        Some(libc::EACCES | libc::EPERM) => "PermissionError",
        Some(libc::EISDIR) => "IsADirectoryError",
        Some(libc::ENOTDIR) => "NotADirectoryError",
        _ => "OSError",
    };
    format!("{class}: {}", python_os_error(path, e))
}

/// Opens input `path` for reading as Python's `open` would, to report a
/// missing or unreadable file as khmer's scripts do (their Python
/// exception); standard input always opens.
pub(super) fn check_readable(path: &str) -> Result<(), io::Error> {
    if path == "-" {
        return Ok(());
    }
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if meta.is_file() {
        std::fs::File::open(path)?;
        return Ok(());
    }
    // A FIFO (or another special file) is opened once, by its reader: an
    // open here and a close would end the writer's stream (or lose what it
    // had written) and leave the real open waiting for ever.
    let c_path = std::ffi::CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: access reads the NUL-terminated path and nothing else.
    if unsafe { libc::access(c_path.as_ptr(), libc::R_OK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One of the scripts' errors after reading started: its text, status 1
/// (an [`fasthts_kmer::scripts::UnpairedReads`] is worded by its caller).
pub(super) fn script_failure(e: fasthts_kmer::scripts::BoxError) -> Failure {
    Failure::new(1, e.to_string())
}

/// Refuses, before anything is written, an output that is one of the
/// inputs, however named (`fasthts_io::output::refuse_input_as_output`):
/// khmer would truncate the input before reading it.
pub(super) fn refuse_input_as_output<I: AsRef<str>, O: AsRef<str>>(inputs: &[I], outputs: &[O]) -> Result<(), Failure> {
    let inputs: Vec<&str> = inputs.iter().map(AsRef::as_ref).collect();
    let outputs: Vec<&str> = outputs.iter().map(AsRef::as_ref).collect();
    fasthts_io::output::refuse_input_as_output(&outputs, &inputs).map_err(|e| Failure::new(1, format!("ERROR: {e}")))
}
