//! FASTA and FASTQ files read by name and position through a `.fai`
//! index, as htslib 1.16's `faidx.c` builds, reads and fetches: the one
//! index of the library, for `fasthts faidx`, Python's `FastaFile` and
//! any job needing a reference sequence.
//!
//! A plain file is memory-mapped; a BGZF one is read through its `.gzi`
//! (the compressed and uncompressed offset of each block). A missing
//! index is built and written beside the file (`.fai`, and `.gzi` for
//! BGZF), as `fai_load3(.., FAI_CREATE)` does; plain gzip cannot be
//! indexed and is refused as htslib refuses it.
//!
//! ```
//! use fasthts::faidx::{FastaFile, OpenOptions};
//! # let dir = std::env::temp_dir().join(format!("faidx-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let path = dir.join("ref.fa");
//! std::fs::write(&path, ">chr1 first\nACGTA\nCG\n>chr2\nTT\n")?;
//! let fasta = FastaFile::open(&path, &OpenOptions::default(), &mut |w| eprintln!("{w}"))?;
//! assert_eq!(std::fs::read(dir.join("ref.fa.fai"))?, b"chr1\t7\t12\t5\t6\nchr2\t2\t27\t2\t3\n");
//! assert_eq!(fasta.sequence(b"chr1", 3, 7)?, b"TACG");
//! assert_eq!(fasta.index().entries()[1].length, 2);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod data;
mod index;

pub use index::{DuplicateName, FaiEntry, FastaIndex, SequenceFormat};

use crate::output::TempOutput;
use crate::Error;
use data::{BlockCache, Bytes, Data, ReadFailure, Stream};
use fasthts_io::compression::Compression;
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where a file's indexes are: the names given, else `<file>.fai` and
/// `<file>.gzi` (htslib's defaults).
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The `.fai` (`--fai-idx`).
    pub fai: Option<PathBuf>,
    /// The `.gzi` of a BGZF file (`--gzi-idx`).
    pub gzi: Option<PathBuf>,
    /// Read as FASTQ (sequences and qualities; its `.fai` has five
    /// columns) rather than FASTA.
    pub format: Option<SequenceFormat>,
}

/// `path` with `suffix` appended to its name (`ref.fa` → `ref.fa.fai`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

impl OpenOptions {
    /// The `.fai` of `path` these options name.
    pub fn fai_path(&self, path: &Path) -> PathBuf {
        self.fai.clone().unwrap_or_else(|| with_suffix(path, ".fai"))
    }

    /// The `.gzi` of `path` these options name.
    pub fn gzi_path(&self, path: &Path) -> PathBuf {
        self.gzi.clone().unwrap_or_else(|| with_suffix(path, ".gzi"))
    }
}

/// The words for a file compressed with plain gzip, which cannot be read
/// by position (htslib's).
fn refuse_gzip(path: &Path) -> Error {
    Error::Message("cannot index files compressed with gzip, please use bgzip".into()).with_path(path)
}

/// Builds the index of the FASTA or FASTQ file `path` and writes it to
/// `options`' `.fai` (and for a BGZF file its `.gzi`), as `samtools
/// faidx FILE` (htslib's `fai_build3`): both complete or neither.
/// Duplicate names are told to `warn` (the first is kept).
pub fn write_index(path: &Path, options: &OpenOptions, warn: &mut dyn FnMut(&DuplicateName)) -> Result<FastaIndex, Error> {
    let bytes = Bytes::open(path)?;
    let (index, blocks) = build_from(&bytes, path, &options.fai_path(path), warn)?;
    // htslib writes the .gzi first.
    let mut outputs = Vec::new();
    if let Some(blocks) = blocks {
        outputs.push(write_whole(&options.gzi_path(path), &data::gzi_bytes(&blocks))?);
    }
    outputs.push(write_whole(&options.fai_path(path), &index.to_text())?);
    for output in outputs {
        output.commit()?;
    }
    Ok(index)
}

/// The (compressed, uncompressed) offset of each BGZF block holding data.
type BlockStarts = Vec<(u64, u64)>;

/// Indexes the bytes of `path`: the index, and for BGZF the blocks for
/// its `.gzi`. A refusal names the file and the `.fai` not built.
fn build_from(
    bytes: &Bytes,
    path: &Path,
    fai: &Path,
    warn: &mut dyn FnMut(&DuplicateName),
) -> Result<(FastaIndex, Option<BlockStarts>), Error> {
    let file = bytes.as_slice();
    let bgzf = match data::compression_of(file) {
        Compression::Gzip => return Err(refuse_gzip(path)),
        Compression::Bgzf => true,
        _ => false,
    };
    let mut stream = Stream::new(file, bgzf);
    let (index, duplicates) = build::build(&mut stream).map_err(|e| match e {
        Error::Message(why) => Error::Message(format!("{why}; could not build fai index {}", fai.display())).with_path(path),
        e => e.with_path(path),
    })?;
    duplicates.iter().for_each(&mut *warn);
    Ok((index, bgzf.then_some(stream.blocks)))
}

/// Writes `bytes` to a temporary beside `path`, to be committed.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<TempOutput, Error> {
    let (temp, mut file) = TempOutput::create(path)?;
    file.write_all(bytes).and_then(|()| file.flush()).map_err(|e| Error::from(e).with_path(path))?;
    Ok(temp)
}

/// Which half of a FASTQ record a fetch reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The bases.
    Sequence,
    /// The qualities (FASTQ only).
    Quality,
}

/// Why a fetch gave no sequence.
#[derive(Debug)]
pub enum FetchError {
    /// The file ended before the bases the index promised, or its data
    /// are damaged: htslib's "Failed to retrieve block".
    Failed(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Failed(why) => write!(f, "failed to retrieve block: {why}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// A FASTA or FASTQ file opened with its index, for fetching sequences
/// by name and position. Fetches take `&self` and may run on several
/// threads at once.
pub struct FastaFile {
    path: PathBuf,
    index: FastaIndex,
    data: Data,
}

impl FastaFile {
    /// Opens `path` with its `.fai` (and `.gzi`), building and writing
    /// those that are missing as samtools faidx does (a BGZF file whose
    /// `.gzi` is missing gets both rebuilt). Duplicate names met while
    /// building or reading the index are told to `warn`.
    ///
    /// A URL ([`crate::input::remote_url`]) is read by the ranges each fetch
    /// needs, with the `.fai` (and `.gzi`) beside it or given (URLs or
    /// local files), which must exist: a remote file is not indexed.
    pub fn open(path: &Path, options: &OpenOptions, warn: &mut dyn FnMut(&DuplicateName)) -> Result<FastaFile, Error> {
        if let Some(url) = crate::input::remote_url(path) {
            return Self::open_remote(url, options, warn);
        }
        let format = options.format.unwrap_or(SequenceFormat::Fasta);
        let fai_path = options.fai_path(path);
        let gzi_path = options.gzi_path(path);
        let bytes = Bytes::open(path)?;
        let compression = data::compression_of(bytes.as_slice());
        if compression == Compression::Gzip {
            return Err(refuse_gzip(path));
        }
        let bgzf = compression == Compression::Bgzf;
        let fai_text = match std::fs::read(&fai_path) {
            Ok(text) if !bgzf || gzi_path.exists() => Some(text),
            Ok(_) => None,
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::from(e).with_path(&fai_path)),
        };
        let (index, gzi) = match fai_text {
            Some(text) => {
                let (index, duplicates) = FastaIndex::from_text(&text, format).map_err(|e| e.with_path(&fai_path))?;
                duplicates.iter().for_each(&mut *warn);
                let gzi = match bgzf {
                    true => Some(read_gzi_file(&gzi_path)?),
                    false => None,
                };
                (index, gzi)
            }
            None => {
                let written = write_index(path, options, warn)?;
                // Read back as a reader of `format` sees it (a FASTA
                // index refused for FASTQ).
                let (index, _) = FastaIndex::from_text(&written.to_text(), format).map_err(|e| e.with_path(&fai_path))?;
                let gzi = match bgzf {
                    true => Some(read_gzi_file(&gzi_path)?),
                    false => None,
                };
                (index, gzi)
            }
        };
        let data = match gzi {
            Some(gzi) => Data::Bgzf { file: bytes, gzi, id: data::next_file_id() },
            None => Data::Plain(bytes),
        };
        Ok(FastaFile { path: path.to_path_buf(), index, data })
    }

    /// [`FastaFile::open`] of a URL.
    fn open_remote(url: &str, options: &OpenOptions, warn: &mut dyn FnMut(&DuplicateName)) -> Result<FastaFile, Error> {
        let format = options.format.unwrap_or(SequenceFormat::Fasta);
        let (object, shown) = crate::input::open_remote(url)?;
        let mut head = vec![0u8; object.len().min(fasthts_io::compression::DETECT_BYTES as u64) as usize];
        object.read_range(0, &mut head).map_err(|e| Error::from(e).with_path(&shown))?;
        let compression = data::compression_of(&head);
        if compression == Compression::Gzip {
            return Err(refuse_gzip(&shown));
        }
        let fai_path = options.fai_path(Path::new(url));
        let fai_text = read_beside(&fai_path)?;
        let (index, duplicates) = FastaIndex::from_text(&fai_text, format).map_err(|e| e.with_path(fasthts_io::remote::shown_path(&fai_path)))?;
        duplicates.iter().for_each(&mut *warn);
        let gzi = match compression {
            Compression::Bgzf => {
                let gzi_path = options.gzi_path(Path::new(url));
                Some(data::read_gzi(&read_beside(&gzi_path)?).map_err(|e| e.with_path(fasthts_io::remote::shown_path(&gzi_path)))?)
            }
            _ => None,
        };
        Ok(FastaFile { path: shown, index, data: Data::Remote { object, gzi, id: data::next_file_id() } })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its index.
    pub fn index(&self) -> &FastaIndex {
        &self.index
    }

    /// Appends to `out` what htslib's `fai_retrieve` reads for the
    /// sequence `entry` from `beg` to `end` (0-based, end excluded; the
    /// caller has clamped them to the sequence as `fai_get_val` does):
    /// `end - beg` printable bytes from the position the index computes
    /// for `beg` (so a `beg` of -1, which samtools' region `chr:0-5`
    /// gives, starts at the header line's end and reads one base more).
    pub fn fetch_into(&self, entry: &FaiEntry, beg: i64, end: i64, part: Part, out: &mut Vec<u8>) -> Result<(), FetchError> {
        if entry.line_bases == 0 {
            // htslib divides by zero here (samtools dies of SIGFPE).
            return Err(FetchError::Failed("the index gives 0 bases per line".into()));
        }
        let offset = match part {
            Part::Sequence => entry.offset,
            Part::Quality => entry.qual_offset,
        };
        let (bases, width) = (i64::from(entry.line_bases), i64::from(entry.line_width));
        // C's division and remainder (towards zero), added to an unsigned
        // offset, as htslib computes the seek position.
        let at = offset.wrapping_add((beg / bases * width + beg % bases) as u64);
        let count = (end - beg).max(0) as u64;
        thread_local! {
            static BLOCK: std::cell::RefCell<BlockCache> = std::cell::RefCell::new(BlockCache::default());
        }
        BLOCK.with(|block| self.data.printable_from(at, count, out, &mut block.borrow_mut())).map_err(|e| match e {
            ReadFailure::EndOfFile => FetchError::Failed("unexpected end of file".into()),
            ReadFailure::Damaged(e) => FetchError::Failed(e.to_string()),
        })
    }

    /// The bases of the sequence `name` from `start` to `end` (0-based,
    /// end excluded), clamped to the sequence as htslib clamps them (an
    /// end past it is its end; a start past the end gives nothing).
    pub fn sequence(&self, name: &[u8], start: u64, end: u64) -> Result<Vec<u8>, Error> {
        self.fetch_clamped(name, start, end, Part::Sequence)
    }

    /// The qualities of the FASTQ record `name`, as [`FastaFile::sequence`].
    pub fn qualities(&self, name: &[u8], start: u64, end: u64) -> Result<Vec<u8>, Error> {
        self.fetch_clamped(name, start, end, Part::Quality)
    }

    fn fetch_clamped(&self, name: &[u8], start: u64, end: u64, part: Part) -> Result<Vec<u8>, Error> {
        let entry = self
            .index
            .get(name)
            .ok_or_else(|| Error::InvalidArgument(format!("sequence \"{}\" not present", String::from_utf8_lossy(name))))?;
        let end = end.min(entry.length);
        let start = start.min(end);
        let mut out = Vec::new();
        self.fetch_into(entry, start as i64, end as i64, part, &mut out)
            .map_err(|e| Error::Message(e.to_string()).with_path(&self.path))?;
        Ok(out)
    }
}

/// The bytes of an index file of a remote FASTA: a URL, fetched whole,
/// or a local file. Errors name it (a URL without credentials).
fn read_beside(path: &Path) -> Result<Vec<u8>, Error> {
    let Some(url) = crate::input::remote_url(path) else {
        return std::fs::read(path).map_err(|e| Error::from(e).with_path(path));
    };
    let (object, shown) = crate::input::open_remote(url)?;
    let mut bytes = vec![0u8; object.len() as usize];
    object.read_range(0, &mut bytes).map_err(|e| Error::from(e).with_path(&shown))?;
    Ok(bytes)
}

fn read_gzi_file(path: &Path) -> Result<Vec<(u64, u64)>, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::from(e).with_path(path))?;
    data::read_gzi(&bytes).map_err(|e| e.with_path(path))
}

/// samtools faidx's complement of each byte: IUPAC letters of either case
/// to their complements (U to A), everything else unchanged.
const COMPLEMENT: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = i as u8;
        i += 1;
    }
    let pairs: [(u8, u8); 14] = [
        (b'A', b'T'),
        (b'B', b'V'),
        (b'C', b'G'),
        (b'D', b'H'),
        (b'G', b'C'),
        (b'H', b'D'),
        (b'K', b'M'),
        (b'M', b'K'),
        (b'R', b'Y'),
        (b'T', b'A'),
        (b'U', b'A'),
        (b'V', b'B'),
        (b'Y', b'R'),
        (b'W', b'W'),
    ];
    let mut p = 0;
    while p < pairs.len() {
        let (from, to) = pairs[p];
        table[from as usize] = to;
        table[(from + 32) as usize] = to + 32;
        p += 1;
    }
    table
};

/// Reverses and complements `seq` in place, as samtools faidx `-i`.
pub fn reverse_complement(seq: &mut [u8]) {
    seq.reverse();
    for c in seq {
        *c = COMPLEMENT[*c as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complement_as_samtools() {
        let mut s = b"ACGTUNacgtunRYKMBVDHSWXrykmbvdhswx-*.".to_vec();
        reverse_complement(&mut s);
        assert_eq!(s, b".*-xwsdhbvkmryXWSDHBVKMRYnaacgtNAACGT");
    }
}
