//! Run files: sorted batches of raw BAM records on disk.
//!
//! A run is the records' bytes exactly as in BAM (`block_size` then the
//! record), uncompressed: sorting is bound by (de)compression, and a run is
//! written once and read once, so plain bytes through the page cache beat
//! BGZF (samtools' choice, at level 1) by a wide margin.
//!
//! Not LZ4 or zstd either, measured here on 100 MB of sorted BAM records (the
//! `lz4` and `zstd` tools, one core): `lz4 -1` compresses at 476 MB/s to
//! 50 % and decompresses at 1.3 GB/s, `zstd -1` at 290 MB/s to 36 % and
//! 740 MB/s. A `-m 64M` sort of the 300 MB shuffled bench BAM writes and
//! reads back about 870 MB of runs, which on this machine's disk never wait
//! for the device (the page cache holds them); LZ4 would add about 2.5
//! CPU-seconds to a sort of 5.7. A disk slow enough that writing the runs
//! takes longer than compressing them would call for LZ4.

use crate::Error;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The directory a sort of this process keeps its temporaries in (`kind`:
/// `runs`, `rocksdb`), as samtools reads `-T`: inside `prefix` when it is
/// an existing directory (`DIR/fasthts-sort.PID.runs`), else named after it
/// (`PREFIX.fasthts-sort.PID.runs`; the default prefix is the output's
/// name). Those a killed sort left there (its process gone, see
/// [`crate::output::remove_stale`]) are removed first.
pub fn temporary_dir(prefix: &Path, kind: &str) -> PathBuf {
    let (dir, stem) = if prefix.is_dir() {
        (prefix.to_path_buf(), "fasthts-sort.".to_string())
    } else {
        let name = prefix.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = prefix.parent().map(Path::to_path_buf).unwrap_or_default();
        (dir, format!("{name}.fasthts-sort."))
    };
    let suffix = format!(".{kind}");
    crate::output::remove_stale(&dir, &stem, &suffix);
    if prefix.is_dir() {
        prefix.join(format!("{stem}{}{suffix}", std::process::id()))
    } else {
        let mut name = prefix.as_os_str().to_owned();
        name.push(format!(".fasthts-sort.{}{suffix}", std::process::id()));
        PathBuf::from(name)
    }
}

/// A directory of run files, removed with its contents when dropped.
pub struct RunDir {
    path: PathBuf,
    next: usize,
}

impl RunDir {
    /// Creates a fresh directory for this process's runs where samtools'
    /// `-T` would put its temporaries ([`temporary_dir`]).
    pub fn create(prefix: &Path) -> Result<RunDir, Error> {
        let path = temporary_dir(prefix, "runs");
        // Not create_dir_all: a -T prefix in a missing directory is an error,
        // and nothing should be left behind but what Drop removes.
        crate::output::create_temporary_dir(&path).map_err(|e| Error::from(e).with_path(&path))?;
        Ok(RunDir { path, next: 0 })
    }

    /// Writes `records` (each `block_size` + data, already in order) as a new run.
    pub fn write_run<'a>(&mut self, records: impl Iterator<Item = &'a [u8]>) -> Result<PathBuf, Error> {
        let mut w = self.create_run()?;
        for r in records {
            w.put(r)?;
        }
        w.finish()
    }

    /// Starts a new run, to be filled record by record.
    pub fn create_run(&mut self) -> Result<RunWriter, Error> {
        let path = self.path.join(format!("{:06}.run", self.next));
        self.next += 1;
        let file = File::create(&path).map_err(|e| Error::from(e).with_path(&path))?;
        Ok(RunWriter { writer: BufWriter::with_capacity(1 << 20, file), path })
    }
}

/// A run being written.
pub struct RunWriter {
    writer: BufWriter<File>,
    path: PathBuf,
}

impl RunWriter {
    /// Appends whole records (each `block_size` + data), one or several.
    pub fn put(&mut self, records: &[u8]) -> Result<(), Error> {
        self.writer.write_all(records).map_err(|e| Error::from(e).with_path(&self.path))
    }

    /// Flushes the run and returns its path.
    pub fn finish(mut self) -> Result<PathBuf, Error> {
        self.writer.flush().map_err(|e| Error::from(e).with_path(&self.path))?;
        Ok(self.path)
    }
}

/// How many runs one merge may read at once: the open-file limit
/// (`getrlimit`), less room for the process's other files, at least 2.
pub fn max_fan_in() -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let soft = if ok { lim.rlim_cur.min(1 << 20) as usize } else { 1024 };
    soft.saturating_sub(32).max(2)
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.path).is_err() {
            // remove_dir_all needs a descriptor, and running out of them
            // (`ulimit -n`) may be why the sort is ending: close the
            // directory's lock, then unlink the runs by name, which needs
            // none.
            crate::output::unregister_temporary(&self.path);
            if std::fs::remove_dir_all(&self.path).is_err() {
                for n in 0..self.next {
                    let _ = std::fs::remove_file(self.path.join(format!("{n:06}.run")));
                }
                let _ = std::fs::remove_dir(&self.path);
            }
        }
        crate::output::unregister_temporary(&self.path);
    }
}

/// Reads a run back one record at a time into a reused buffer.
pub struct RunReader {
    reader: BufReader<File>,
    path: PathBuf,
    /// The current record, `block_size` prefix included.
    pub record: Vec<u8>,
}

impl RunReader {
    /// Opens a run file, reading it through a buffer of `buffer` bytes.
    pub fn open(path: &Path, buffer: usize) -> Result<RunReader, Error> {
        let file = File::open(path).map_err(|e| Error::from(e).with_path(path))?;
        Ok(RunReader { reader: BufReader::with_capacity(buffer, file), path: path.to_path_buf(), record: Vec::new() })
    }

    /// Loads the next record into `self.record`; false at the end.
    pub fn advance(&mut self) -> Result<bool, Error> {
        let mut size = [0u8; 4];
        match self.reader.read_exact(&mut size) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(Error::from(e).with_path(&self.path)),
        }
        let n = u32::from_le_bytes(size) as usize;
        self.record.clear();
        self.record.extend_from_slice(&size);
        self.record.resize(4 + n, 0);
        self.reader.read_exact(&mut self.record[4..]).map_err(|e| Error::from(e).with_path(&self.path))?;
        Ok(true)
    }
}
