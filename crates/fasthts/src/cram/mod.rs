//! CRAM input, decoded by htslib (Debian's libhts, through the few C
//! functions in [`ffi`]): chosen over the pure-Rust noodles-cram by
//! measurement (BENCHMARKS.md, "CRAM: which implementation"), because
//! htslib decodes only the data series a job needs ("required fields")
//! and finds references as samtools does.
//!
//! [`CramReader`] hands out each record as a BAM record ([`RecordRef`]),
//! so every job that reads BAM records reads CRAM alike. The reference is
//! found as htslib finds it: the `reference` option (samtools' `-T`),
//! else `REF_PATH`/`REF_CACHE` by the `M5` of `@SQ`, else its `UR`; a
//! reference embedded in the file needs none. [`containers`] lists a CRAM
//! file's containers from their headers alone, which is how a job is cut
//! into parts that run on all cores ([`scatter`]).

pub mod cat;
mod container;
mod crai;
mod ffi;
pub mod region;
pub mod remote;

pub use region::{CramQuery, QueryPool};

pub use crai::{crai_path_for, write_crai, CraiOutcome, CramSource};

mod write;

pub use write::{CramWriteOptions, CramWriter};

use container::container_header;
use crate::bam::record::RecordDefect;
use crate::bam::{Header, RecordRef, Reference};
use crate::Error;
use std::ffi::{c_int, CStr, CString};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Once;
use std::thread::JoinHandle;

/// Which fields of each record a job needs decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fields {
    /// Everything: names, CIGAR, bases, qualities, tags (needs the
    /// reference, unless it is embedded).
    #[default]
    All,
    /// Flags, reference ids, positions, MAPQ and mate fields only: no
    /// reference is needed, and the records
    /// handed out have no name (`*`), CIGAR, bases, qualities or tags.
    Required,
    /// What samtools flagstat decodes (`SAM_FLAG | SAM_MAPQ | SAM_RNEXT`):
    /// flags, reference ids, MAPQ and the mates' reference ids, no
    /// positions. Read with [`CramReader::next_core`] (`next_record`
    /// hands out records without positions).
    Flagstat,
    /// What samtools idxstats decodes (`SAM_RNAME | SAM_FLAG`): flags and
    /// reference ids. Read as [`Fields::Flagstat`] is ([`Core`]'s MAPQ is
    /// 0 and its mate reference id -1).
    Idxstats,
    /// Reference ids, positions and CIGARs only (what the `.crai` of a
    /// multi-reference slice needs, as htslib's index builder decodes it:
    /// no reference is needed); `next_record` hands out their fixed
    /// fields as with `Required`.
    Extent,
    /// What Python's `BamFile.columns` reads: `Required`'s fields and the
    /// template length, CIGAR and bases (the read length is the bases'
    /// count, which htslib knows only by decoding them, so the reference
    /// is needed); no name (`?`), qualities or tags. Records are handed out
    /// whole, as with `All`.
    Columns,
    /// What samtools depth decodes (bam2depth.c): flags, reference ids,
    /// positions and CIGARs, and only as its options need them the names
    /// and mates (`-s`), MAPQ (`-Q`), bases (`-l`) and qualities (`-q`).
    /// Without bases no reference is needed. Records are handed out whole,
    /// with what was decoded.
    Depth {
        /// Names and mate fields (`-s`).
        mates: bool,
        /// Mapping qualities (`-Q`).
        mapq: bool,
        /// Bases (`-l`).
        bases: bool,
        /// Base qualities (`-q`).
        qualities: bool,
    },
}

impl Fields {
    /// Whether records are handed out with their variable fields (as
    /// decoded), not only the fixed ones.
    fn whole_records(self) -> bool {
        matches!(self, Fields::All | Fields::Columns | Fields::Depth { .. })
    }

    /// htslib's `CRAM_OPT_REQUIRED_FIELDS` for these fields (`None`:
    /// everything, htslib's default).
    fn required(self) -> Option<c_int> {
        use ffi::{SAM_CIGAR, SAM_FLAG, SAM_MAPQ, SAM_PNEXT, SAM_POS, SAM_QNAME, SAM_QUAL, SAM_RNAME, SAM_RNEXT, SAM_SEQ, SAM_TLEN};
        match self {
            Fields::All => None,
            Fields::Required => Some(SAM_FLAG | SAM_RNAME | SAM_POS | SAM_MAPQ | SAM_RNEXT | SAM_PNEXT),
            Fields::Flagstat => Some(SAM_FLAG | SAM_MAPQ | SAM_RNEXT),
            Fields::Idxstats => Some(SAM_RNAME | SAM_FLAG),
            Fields::Extent => Some(SAM_RNAME | SAM_POS | SAM_CIGAR),
            Fields::Columns => {
                Some(SAM_FLAG | SAM_RNAME | SAM_POS | SAM_MAPQ | SAM_CIGAR | SAM_RNEXT | SAM_PNEXT | SAM_TLEN | SAM_SEQ)
            }
            Fields::Depth { mates, mapq, bases, qualities } => {
                let when = |on: bool, bits: c_int| if on { bits } else { 0 };
                Some(
                    SAM_FLAG
                        | SAM_RNAME
                        | SAM_POS
                        | SAM_CIGAR
                        | when(mates, SAM_QNAME | SAM_RNEXT | SAM_PNEXT)
                        | when(mapq, SAM_MAPQ)
                        | when(bases, SAM_SEQ)
                        | when(qualities, SAM_QUAL),
                )
            }
        }
    }
}

/// How to read a CRAM input.
#[derive(Clone, Debug, Default)]
pub struct CramOptions {
    /// The reference FASTA (samtools' `-T`/`--reference`); `None`: as
    /// htslib finds it without one.
    pub reference: Option<PathBuf>,
    /// The fields decoded.
    pub fields: Fields,
    /// Threads htslib decodes with (its own pool; 0 or 1: the calling
    /// thread only).
    pub threads: usize,
}

/// htslib's own messages go to stderr and are not one line naming the
/// user's file: each failure is said here instead.
pub(crate) fn quiet_htslib() {
    static ONCE: Once = Once::new();
    // SAFETY: sets a global integer; no other htslib call is in flight
    // while `call_once` runs it.
    ONCE.call_once(|| {
        // SAFETY: as said above.
        unsafe { ffi::hts_set_log_level(ffi::HTS_LOG_OFF) };
        // Before any file is opened: htslib's table of schemes is read
        // unlocked once made (see `remote::add_scheme_handler`).
        remote::add_scheme_handler();
    });
}

/// Keeps glibc's malloc from handing htslib's per-slice buffers back to
/// the kernel after every container, only to fault them in afresh for the
/// next: flagstat of the bench CRAM took 57,000 page faults (a quarter of
/// its CPU time, in the kernel) with glibc's defaults and 4,500 with
/// these (BENCHMARKS.md, "CRAM: where the time goes"). The values are
/// where glibc's own sliding thresholds end up at most (an mmap threshold
/// of 32 MiB, trimming above twice that); setting them only skips the
/// sliding, which otherwise restarts in each thread's arena.
fn keep_freed_buffers() {
    static ONCE: Once = Once::new();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt with documented parameters; it takes malloc's lock.
    ONCE.call_once(|| unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    });
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    ONCE.call_once(|| {});
}

/// The fields of a record that flagstat and idxstats count, read from
/// htslib's record without building BAM bytes ([`CramReader::next_core`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Core {
    /// Reference id (-1: unplaced).
    pub ref_id: i32,
    /// FLAG.
    pub flag: u16,
    /// MAPQ.
    pub mapq: u8,
    /// The mate's reference id (-1: none).
    pub mate_ref_id: i32,
}

/// What is said of a CRAM file or stream whose definition or header
/// htslib cannot read.
const UNREADABLE: &str = "not a readable CRAM file (damaged or truncated header)";

fn c_path(path: &Path) -> Result<CString, Error> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Message("file name contains a NUL byte".into()).with_path(path))
}

/// A CRAM file or stream being read record by record.
pub struct CramReader {
    fp: NonNull<ffi::htsFile>,
    hdr: NonNull<ffi::sam_hdr_t>,
    record: NonNull<ffi::bam1_t>,
    header: Header,
    /// The name the user gave (errors name it).
    path: PathBuf,
    fields: Fields,
    /// The current record as BAM bytes (no `block_size`).
    buf: Vec<u8>,
    /// Records handed out so far.
    records_read: u64,
    /// The thread copying a stream into the socket htslib reads.
    feeder: Option<JoinHandle<io::Result<()>>>,
    /// A regular file (its containers can be listed again to name the
    /// contig of a failing one, and its end looked at).
    regular: bool,
    /// A regular file without the EOF container (htslib's check).
    missing_eof: bool,
    /// Decoded on htslib's own threads, which end a file whose last
    /// container is cut off as if it were complete (htslib 1.16; one
    /// thread says it is truncated): its end is then checked here.
    decoded_on_threads: bool,
}

// SAFETY: the htslib objects are owned by this reader alone and used by
// one thread at a time (`&mut self`); htslib keeps no thread-local state
// for them.
unsafe impl Send for CramReader {}

impl CramReader {
    /// Opens the CRAM file at `path` (a regular file) and reads its header.
    pub fn open(path: &Path, options: &CramOptions) -> Result<CramReader, Error> {
        quiet_htslib();
        let name = c_path(path)?;
        // SAFETY: both strings are NUL-terminated and outlive the call.
        let fp = unsafe { ffi::hts_open(name.as_ptr(), c"r".as_ptr()) };
        // The file was opened once already (its first bytes recognised):
        // what fails here is its content.
        let Some(fp) = NonNull::new(fp) else {
            if let Some(e) = remote::take_last_error() {
                return Err(Error::from(e).with_path(path));
            }
            return Err(Error::Message(UNREADABLE.into()).with_path(path));
        };
        // A remote object (`remote::Registered`) is no file to list again.
        let regular = !remote::is_registered_name(path);
        CramReader::start(fp, path, options, None, regular)
    }

    /// Reads a CRAM stream (a pipe, standard input; the bytes already
    /// read first, then the rest) as it arrives: a thread copies it into
    /// a socket htslib reads from.
    pub fn from_stream(path: &Path, stream: Box<dyn Read + Send>, options: &CramOptions) -> Result<CramReader, Error> {
        quiet_htslib();
        let mut fds = [0 as c_int; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
            return Err(Error::from(io::Error::last_os_error()).with_path(path));
        }
        // SAFETY: socketpair just made both descriptors, owned by nobody else.
        let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let feeder = std::thread::Builder::new()
            .name("cram-feeder".into())
            .spawn(move || feed(stream, theirs))
            .map_err(|e| Error::from(e).with_path(path))?;
        let name = c_path(path)?;
        let fd = ours.into_raw_fd();
        // SAFETY: `fd` is open and now owned by the hFILE (closed with it).
        let hfile = unsafe { ffi::hdopen(fd, c"r".as_ptr()) };
        if hfile.is_null() {
            // SAFETY: hdopen failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            let _ = feeder.join();
            return Err(Error::from(io::Error::last_os_error()).with_path(path));
        }
        // SAFETY: `hfile` is valid; hts_hopen takes it over when it succeeds.
        let fp = unsafe { ffi::hts_hopen(hfile, name.as_ptr(), c"r".as_ptr()) };
        let Some(fp) = NonNull::new(fp) else {
            // SAFETY: hts_hopen failed, so it left `hfile` open and ours to
            // close (as hts_open does then); nothing else holds it. Closing
            // it closes the socket, so the feeder's next write fails and it
            // ends: joined with the socket open, it waited forever on a
            // stream larger than the socket's buffer.
            unsafe { ffi::hclose_abruptly(hfile) };
            let feeder_error = feeder.join().ok().and_then(Result::err);
            return Err(match feeder_error {
                Some(e) => Error::from(e).with_path(path),
                None => Error::Message(UNREADABLE.into()).with_path(path),
            });
        };
        CramReader::start(fp, path, options, Some(feeder), false)
    }

    fn start(
        fp: NonNull<ffi::htsFile>,
        path: &Path,
        options: &CramOptions,
        feeder: Option<JoinHandle<io::Result<()>>>,
        regular: bool,
    ) -> Result<CramReader, Error> {
        // From here on, dropping `reader` closes what is open.
        let mut reader = CramReader {
            fp,
            hdr: NonNull::dangling(),
            // SAFETY: allocates an empty record (NULL on failure, checked below).
            record: NonNull::new(unsafe { ffi::bam_init1() }).ok_or_else(|| Error::Message("out of memory".into()))?,
            header: Header::default(),
            path: path.to_path_buf(),
            fields: options.fields,
            buf: Vec::with_capacity(1024),
            records_read: 0,
            feeder,
            regular,
            missing_eof: false,
            decoded_on_threads: false,
        };
        let mut header_read = false;
        let result = (|| {
            let fp = reader.fp.as_ptr();
            if let Some(reference) = &options.reference {
                let name = c_path(reference)?;
                // SAFETY: `fp` is open; htslib copies the name.
                if unsafe { ffi::hts_set_opt(fp, ffi::CRAM_OPT_REFERENCE, name.as_ptr()) } != 0 {
                    return Err(Error::Message("cannot read the reference FASTA (or its .fai)".into()).with_path(reference));
                }
            }
            if let Some(required) = options.fields.required() {
                if matches!(options.fields, Fields::Flagstat | Fields::Idxstats) {
                    keep_freed_buffers();
                }
                // SAFETY: `fp` is open; the options take one int.
                unsafe {
                    ffi::hts_set_opt(fp, ffi::CRAM_OPT_REQUIRED_FIELDS, required);
                    if options.fields != Fields::Extent {
                        ffi::hts_set_opt(fp, ffi::CRAM_OPT_DECODE_MD, 0 as c_int);
                    }
                }
            }
            if options.threads > 1 {
                // HTS_OPT_NTHREADS: htslib decodes slices on a pool of its own
                // (with the required fields too, as samtools depth -@ does).
                // SAFETY: `fp` is open; the option takes one int.
                unsafe { ffi::hts_set_opt(fp, 101, options.threads as c_int) };
                reader.decoded_on_threads = true;
            }
            // SAFETY: `fp` is open.
            let hdr = NonNull::new(unsafe { ffi::sam_hdr_read(fp) }).ok_or_else(|| reader.damaged(UNREADABLE))?;
            reader.hdr = hdr;
            header_read = true;
            reader.header = header_of(hdr).map_err(|e| Error::Message(e).with_path(path))?;
            // CRAM 4's EOF container is not the one `hts_check_EOF` knows:
            // htslib reads such files without a warning (only quickcheck,
            // which asks `hts_check_EOF` itself, says it is missing).
            if regular && cram_major(path).is_some_and(|major| major < 4) {
                // SAFETY: `fp` is open; htslib seeks to the end and back.
                reader.missing_eof = unsafe { ffi::hts_check_EOF(fp) } == 0;
            }
            Ok(())
        })();
        if !header_read {
            // Nothing to destroy for the header.
            reader.hdr = NonNull::dangling();
        }
        match result {
            Ok(()) => Ok(reader),
            Err(e) => {
                let e = reader.close_with(e, header_read);
                Err(e)
            }
        }
    }

    /// The reader, its errors naming `path` (the name the user gave for
    /// the file opened, such as `-` for `/dev/stdin`).
    pub fn named(mut self, path: &Path) -> CramReader {
        self.path = path.to_path_buf();
        self
    }

    /// The header, as a BAM header (text and references).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next record, as BAM bytes valid until the next call; `None`
    /// after the last record (the EOF container, or the end of a stream
    /// without one).
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, Error> {
        // SAFETY: all three are open and owned by this reader.
        let ret = unsafe { ffi::sam_read1(self.fp.as_ptr(), self.hdr.as_ptr(), self.record.as_ptr()) };
        if ret == -1 {
            self.check_end()?;
            return Ok(None);
        }
        if ret < -1 {
            return Err(self.decode_error());
        }
        // SAFETY: sam_read1 filled the record.
        let b = unsafe { self.record.as_ref() };
        let n_ref = self.header.references.len();
        let filled = fill_record(self.fields, b, &mut self.buf);
        let record_number = self.records_read + 1;
        filled
            .and_then(|()| RecordRef::new(&self.buf, n_ref).map_err(|d| d.to_string()))
            .map_err(|e| Error::Message(format!("CRAM record {record_number}: {e}")).with_path(&self.path))
            .map(|r| {
                self.records_read += 1;
                Some(r)
            })
    }

    /// The next record's [`Core`] fields (a reader opened with
    /// [`Fields::Flagstat`], [`Fields::Idxstats`] or more; not
    /// [`Fields::Extent`], which has no flags); `None` after the last
    /// record.
    pub fn next_core(&mut self) -> Result<Option<Core>, Error> {
        debug_assert!(self.fields != Fields::Extent);
        // SAFETY: all three are open and owned by this reader.
        let ret = unsafe { ffi::sam_read1(self.fp.as_ptr(), self.hdr.as_ptr(), self.record.as_ptr()) };
        if ret == -1 {
            self.check_end()?;
            return Ok(None);
        }
        if ret < -1 {
            return Err(self.decode_error());
        }
        // SAFETY: sam_read1 filled the record.
        let mut c = unsafe { self.record.as_ref().core };
        if self.fields == Fields::Idxstats {
            // Not decoded.
            (c.qual, c.mtid) = (0, -1);
        }
        let n_ref = self.header.references.len() as i32;
        // As RecordRef::new checks a BAM record's.
        let in_range = |tid: i32| (-1..n_ref).contains(&tid);
        let defect = match (in_range(c.tid), in_range(c.mtid)) {
            (true, true) => None,
            (false, _) => Some(RecordDefect::RefIdOutOfRange),
            (true, false) => Some(RecordDefect::MateRefIdOutOfRange),
        };
        if let Some(defect) = defect {
            let number = self.records_read + 1;
            return Err(Error::Message(format!("CRAM record {number}: {defect}")).with_path(&self.path));
        }
        self.records_read += 1;
        Ok(Some(Core { ref_id: c.tid, flag: c.flag, mapq: c.qual, mate_ref_id: c.mtid }))
    }

    /// Calls `f` on every record's [`Core`] fields, in file order (see
    /// [`CramReader::next_core`]).
    pub fn for_each_core(&mut self, mut f: impl FnMut(Core) -> Result<(), Error>) -> Result<(), Error> {
        while let Some(c) = self.next_core()? {
            f(c)?;
        }
        Ok(())
    }

    /// Calls `f` on every record, in file order.
    pub fn for_each_record<E: From<Error>>(&mut self, mut f: impl FnMut(&RecordRef<'_>) -> Result<(), E>) -> Result<(), E> {
        while let Some(record) = self.next_record()? {
            f(&record)?;
        }
        Ok(())
    }

    /// Whether the file lacks CRAM's EOF container (a regular file; a
    /// stream's end is not looked at, as in htslib).
    pub fn missing_eof_container(&self) -> bool {
        self.missing_eof
    }

    /// The name errors give the input.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records handed out so far.
    pub fn records_read(&self) -> u64 {
        self.records_read
    }

    /// Moves to the container at byte `offset` of the file (one of
    /// [`containers`]' offsets), before any record is read.
    pub fn seek_to_container(&mut self, offset: u64) -> Result<(), Error> {
        // SAFETY: `fp` is an open CRAM file, so `fp.cram` is its cram_fd.
        let fd = unsafe { (*self.fp.as_ptr()).fp } as *mut ffi::cram_fd;
        // SAFETY: `fd` is open; no container has been read yet.
        if unsafe { ffi::cram_seek(fd, offset as libc::off_t, libc::SEEK_SET) } != 0 {
            return Err(Error::Message(format!("cannot seek to the CRAM container at byte {offset}")).with_path(&self.path));
        }
        Ok(())
    }

    /// At the end htslib reported: on its threads, a file whose last
    /// container is cut off ends as if complete, so the containers are
    /// listed from their headers (a cut one is an error, as samtools
    /// says "truncated file" at one thread). Once per reader.
    fn check_end(&mut self) -> Result<(), Error> {
        if !(self.decoded_on_threads && self.regular) {
            return Ok(());
        }
        self.decoded_on_threads = false;
        match File::open(&self.path).and_then(|f| containers(&f)) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(self.damaged(&e.to_string())),
            _ => Ok(()),
        }
    }

    /// An error reading the data, naming the user's path: a stream's own
    /// read error if that is what ended it.
    fn damaged(&mut self, what: &str) -> Error {
        // A remote file's range that could not be fetched, as it failed.
        if let Some(e) = remote::take_last_error() {
            return Error::from(e).with_path(&self.path);
        }
        if let Some(Err(e)) = self.feeder.take().map(|f| f.join().unwrap_or(Ok(()))) {
            return Error::from(e).with_path(&self.path);
        }
        Error::Message(what.to_string()).with_path(&self.path)
    }

    /// Why a record could not be decoded: the reference of its contig is
    /// missing or is not the one the file was made with, or the data is
    /// damaged (a cut-off stream, a bad block).
    fn decode_error(&mut self) -> Error {
        let number = self.records_read + 1;
        if !self.fields.whole_records() {
            return self.damaged(&format!("damaged or truncated CRAM data (record {number})"));
        }
        // The container holding the failing record, from the file's
        // container headers (a stream cannot be read again).
        let listed = if self.regular { Some(File::open(&self.path).and_then(|f| containers(&f))) } else { None };
        let container = match listed {
            Some(Err(e)) => return self.damaged(&format!("truncated or damaged CRAM data (record {number}): {e}")),
            Some(Ok(list)) => {
                let mut seen = 0;
                list.into_iter().find(|c| {
                    seen += c.records;
                    seen >= number
                })
            }
            None => None,
        };
        let Some(c) = container.filter(|c| c.ref_id >= 0 && (c.ref_id as usize) < self.header.references.len()) else {
            return self.damaged(&format!(
                "cannot decode CRAM record {number}: damaged data, or a reference sequence that is missing or does not match \
                 its @SQ M5 (give the FASTA with --reference, or set REF_PATH)"
            ));
        };
        let contig = &self.header.references[c.ref_id as usize].name;
        // SAFETY: `fp` is an open CRAM file; cram_get_ref only loads a sequence.
        let found = unsafe {
            let fd = (*self.fp.as_ptr()).fp as *mut ffi::cram_fd;
            !ffi::cram_get_ref(fd, c.ref_id, c.start.max(1), c.start.max(1) + c.span.max(1) - 1).is_null()
        };
        if found {
            self.damaged(&format!(
                "cannot decode the CRAM container at byte {}: the reference sequence of contig {contig} does not match the one \
                 the file was made with (MD5 mismatch), or the data is damaged",
                c.offset
            ))
        } else {
            self.damaged(&format!(
                "reference sequence of contig {contig} not found (give the FASTA with --reference, or set REF_PATH/REF_CACHE)"
            ))
        }
    }

    /// Closes everything, returning `e` (or the stream's own read error).
    fn close_with(mut self, e: Error, _header_read: bool) -> Error {
        self.shut();
        match self.feeder.take().map(|f| f.join().unwrap_or(Ok(()))) {
            Some(Err(io)) => Error::from(io).with_path(&self.path),
            _ => e,
        }
    }

    /// Closes the htslib objects (once).
    fn shut(&mut self) {
        // SAFETY: each pointer is owned here and freed once: dangling ones
        // (never opened) are skipped, and all are marked dangling after.
        unsafe {
            if self.hdr != NonNull::dangling() {
                ffi::sam_hdr_destroy(self.hdr.as_ptr());
                self.hdr = NonNull::dangling();
            }
            if self.record != NonNull::dangling() {
                ffi::bam_destroy1(self.record.as_ptr());
                self.record = NonNull::dangling();
            }
            if self.fp != NonNull::dangling() {
                ffi::hts_close(self.fp.as_ptr());
                self.fp = NonNull::dangling();
            }
        }
    }
}

impl Drop for CramReader {
    fn drop(&mut self) {
        self.shut();
        // The socket is closed, so the feeder's next write fails and it ends.
        if let Some(f) = self.feeder.take() {
            let _ = f.join();
        }
    }
}

/// Copies `stream` into the socket htslib reads, until its end or until
/// htslib stops reading (closes its end: the write fails, without a
/// SIGPIPE).
fn feed(mut stream: Box<dyn Read + Send>, socket: OwnedFd) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut sent = 0;
        while sent < n {
            // SAFETY: the socket is open; `buf[sent..n]` is initialised.
            let w = unsafe { libc::send(socket.as_raw_fd(), buf[sent..n].as_ptr().cast(), n - sent, libc::MSG_NOSIGNAL) };
            if w < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // htslib closed its end: it has read what it wanted.
                return Ok(());
            }
            sent += w as usize;
        }
    }
}

/// The BAM header of a CRAM header.
fn header_of(hdr: NonNull<ffi::sam_hdr_t>) -> Result<Header, String> {
    let h = hdr.as_ptr();
    // SAFETY: `h` is a header htslib read; the strings it returns live as long as it does.
    unsafe {
        let len = ffi::sam_hdr_length(h);
        let text = ffi::sam_hdr_str(h);
        let text = if text.is_null() { Vec::new() } else { std::slice::from_raw_parts(text.cast::<u8>(), len).to_vec() };
        let n = ffi::sam_hdr_nref(h).max(0);
        let mut references = Vec::with_capacity(n as usize);
        for tid in 0..n {
            let name = ffi::sam_hdr_tid2name(h, tid);
            let name = if name.is_null() { String::new() } else { CStr::from_ptr(name).to_string_lossy().into_owned() };
            let len = ffi::sam_hdr_tid2len(h, tid);
            let len = u32::try_from(len).map_err(|_| format!("reference {name} is longer than BAM can hold ({len})"))?;
            references.push(Reference { name, len });
        }
        Ok(Header { text, references })
    }
}

/// Fills `out` with the BAM bytes of `b` as a reader decoding `fields`
/// hands them out.
fn fill_record(fields: Fields, b: &ffi::bam1_t, out: &mut Vec<u8>) -> Result<(), String> {
    match fields {
        Fields::All | Fields::Columns | Fields::Depth { .. } => full_record(b, out),
        Fields::Required | Fields::Extent => core_record(b, out),
        Fields::Flagstat | Fields::Idxstats => unplaced_core_record(b, out),
    }
}

/// Fixed BAM fields of `b` into `out` (name `*`, nothing variable): a
/// record decoded with [`Fields::Required`].
fn core_record(b: &ffi::bam1_t, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    fixed_fields(b, 2, 0, 0, out)?;
    out.extend_from_slice(b"*\0");
    Ok(())
}

/// [`core_record`] of a record whose positions were not decoded
/// ([`Fields::Flagstat`], [`Fields::Idxstats`]): unplaced (-1), template
/// length 0.
fn unplaced_core_record(b: &ffi::bam1_t, out: &mut Vec<u8>) -> Result<(), String> {
    let core = ffi::bam1_core_t { pos: -1, mpos: -1, isize: 0, ..b.core };
    let unplaced = ffi::bam1_t { core, id: 0, data: std::ptr::null_mut(), l_data: 0, m_data: 0, mempolicy: 0 };
    core_record(&unplaced, out)
}

/// The 32 fixed bytes of a BAM record.
fn fixed_fields(b: &ffi::bam1_t, l_read_name: usize, n_cigar: u16, l_seq: i32, out: &mut Vec<u8>) -> Result<(), String> {
    let c = &b.core;
    let pos = i32::try_from(c.pos).map_err(|_| format!("position {} is beyond what BAM can hold", c.pos + 1))?;
    let mpos = i32::try_from(c.mpos).map_err(|_| format!("mate position {} is beyond what BAM can hold", c.mpos + 1))?;
    let tlen = i32::try_from(c.isize).map_err(|_| format!("template length {} is beyond what BAM can hold", c.isize))?;
    out.extend_from_slice(&c.tid.to_le_bytes());
    out.extend_from_slice(&pos.to_le_bytes());
    out.push(l_read_name as u8);
    out.push(c.qual);
    out.extend_from_slice(&c.bin.to_le_bytes());
    out.extend_from_slice(&n_cigar.to_le_bytes());
    out.extend_from_slice(&c.flag.to_le_bytes());
    out.extend_from_slice(&l_seq.to_le_bytes());
    out.extend_from_slice(&c.mtid.to_le_bytes());
    out.extend_from_slice(&mpos.to_le_bytes());
    out.extend_from_slice(&tlen.to_le_bytes());
    Ok(())
}

/// `b` as BAM record bytes into `out`, as htslib's `bam_write1` lays them
/// out: the read name without htslib's alignment padding, and a CIGAR of
/// more than 65,535 operations moved into a `CG:B:I` tag behind a
/// `<len>S<reflen>N` placeholder.
fn full_record(b: &ffi::bam1_t, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let c = &b.core;
    let data: &[u8] = if b.l_data <= 0 || b.data.is_null() {
        &[]
    } else {
        // SAFETY: htslib's record holds `l_data` bytes at `data`.
        unsafe { std::slice::from_raw_parts(b.data, b.l_data as usize) }
    };
    let l_qname = usize::from(c.l_qname);
    let name_len = l_qname.checked_sub(usize::from(c.l_extranul)).filter(|&n| n > 0 && n <= 255).ok_or("bad read name length")?;
    let l_seq = c.l_qseq.max(0) as usize;
    let cigar_bytes = 4 * c.n_cigar as usize;
    let variable = l_qname + cigar_bytes + l_seq.div_ceil(2) + l_seq;
    if variable > data.len() {
        return Err("decoded record is shorter than its fields".into());
    }
    let (name, rest) = data.split_at(l_qname);
    let (cigar, rest) = rest.split_at(cigar_bytes);
    if c.n_cigar <= u32::from(u16::MAX) {
        fixed_fields(b, name_len, c.n_cigar as u16, c.l_qseq, out)?;
        out.extend_from_slice(&name[..name_len - 1]);
        out.push(0);
        out.extend_from_slice(cigar);
        out.extend_from_slice(rest);
    } else {
        fixed_fields(b, name_len, 2, c.l_qseq, out)?;
        out.extend_from_slice(&name[..name_len - 1]);
        out.push(0);
        let ref_len: u32 = cigar
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .filter(|op| matches!(op & 0xf, 0 | 2 | 3 | 7 | 8))
            .map(|op| op >> 4)
            .sum();
        out.extend_from_slice(&((l_seq as u32) << 4 | 4).to_le_bytes());
        out.extend_from_slice(&(ref_len << 4 | 3).to_le_bytes());
        out.extend_from_slice(rest);
        out.extend_from_slice(b"CGBI");
        out.extend_from_slice(&c.n_cigar.to_le_bytes());
        out.extend_from_slice(cigar);
    }
    Ok(())
}

/// One container of a CRAM file, from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Container {
    /// Byte offset of the container in the file.
    pub offset: u64,
    /// Its size in bytes, header included.
    pub size: u64,
    /// Reference id (-1: unplaced reads; -2: several references).
    pub ref_id: i32,
    /// First aligned position (1-based).
    pub start: i64,
    /// Aligned span.
    pub span: i64,
    /// Number of records.
    pub records: u64,
}

/// The version `(major, minor)` of the CRAM file at `path` (bytes 4 and 5
/// of its file definition), if it is one and can be read.
pub fn version(path: &Path) -> Option<(u8, u8)> {
    let mut definition = [0u8; 6];
    File::open(path).and_then(|mut f| f.read_exact(&mut definition)).ok()?;
    (&definition[..4] == b"CRAM").then_some((definition[4], definition[5]))
}

/// The major version of the CRAM file at `path`, if it can be read.
fn cram_major(path: &Path) -> Option<u8> {
    version(path).map(|(major, _)| major)
}

/// The containers of the CRAM file `file` that hold records, in file
/// order, read from their headers alone (the data is skipped): the
/// header container and the EOF container are left out. An error if the
/// file is not CRAM 2 or 3 or a container header is cut off.
pub fn containers(file: &File) -> io::Result<Vec<Container>> {
    let len = file.metadata()?.len();
    let mut r = BufReader::with_capacity(1 << 12, file);
    r.seek(SeekFrom::Start(0))?;
    let mut definition = [0u8; 26];
    r.read_exact(&mut definition)?;
    if &definition[..4] != b"CRAM" || !(2..=3).contains(&definition[4]) {
        // CRAM 1.x (which htslib reads too) is not cut into parts.
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not CRAM 2.x or 3.x"));
    }
    let major = definition[4];
    // The header container is skipped as htslib skips it (not always by
    // its stated length).
    let mut offset = crai::first_container_offset(file, len, major)?;
    let mut list = Vec::new();
    let mut first = false;
    // Fewer than 4 bytes after the last container are no container to
    // htslib, which reads a container's length word first: the file just
    // lacks its EOF container.
    while offset + 4 <= len {
        r.seek(SeekFrom::Start(offset))?;
        let cut = |e: io::Error| match e.kind() {
            io::ErrorKind::UnexpectedEof => io::Error::new(e.kind(), format!("truncated CRAM data: the container at byte {offset} is cut off")),
            io::ErrorKind::InvalidData => {
                io::Error::new(e.kind(), format!("damaged CRAM data: the container at byte {offset} has a damaged header ({e})"))
            }
            _ => e,
        };
        let header = container_header(&mut r, major).map_err(cut)?;
        let size = (header.header_len + header.length) as u64;
        if offset + size > len {
            return Err(cut(io::ErrorKind::UnexpectedEof.into()));
        }
        // The first container is the SAM header's.
        if !first && header.records > 0 {
            let (ref_id, start, span, records) = (header.ref_id, i64::from(header.start), i64::from(header.span), header.records as u64);
            list.push(Container { offset, size, ref_id, start, span, records });
        }
        first = false;
        offset += size;
    }
    Ok(list)
}

/// Compressed bytes per part of [`scatter`] for a job that decodes what
/// flagstat or idxstats count: a part costs one open (about 25 µs) and the
/// threads end together to within a part (about 2 ms of decoding here;
/// 8 MiB parts left one thread idle for up to 25 ms at the end).
pub const COUNTING_PART_BYTES: u64 = 1 << 20;

/// Runs `job` on parts of the CRAM file at `path` in parallel on the
/// current rayon pool, each part a run of whole containers of about
/// `part_bytes` read by a reader of its own, and returns the parts'
/// results in file order. Every record is read by exactly one part.
pub fn scatter<T: Send>(
    path: &Path,
    options: &CramOptions,
    part_bytes: u64,
    job: impl Fn(&mut Part<'_>) -> Result<T, Error> + Sync,
) -> Result<Vec<T>, Error> {
    use rayon::prelude::*;
    // The header first: a file htslib cannot read is said alike everywhere.
    drop(CramReader::open(path, options)?);
    if !cram_major(path).is_some_and(|major| (2..=3).contains(&major)) {
        // CRAM 1 and 4 (which htslib reads) are not cut into parts: one
        // reader, from the first record to the last.
        let mut reader = CramReader::open(path, options)?;
        return Ok(vec![job(&mut Part { reader: &mut reader, records: None, offset: 0 })?]);
    }
    let file = File::open(path).map_err(|e| Error::from(e).with_path(path))?;
    let list = containers(&file).map_err(|e| Error::from(e).with_path(path))?;
    let mut parts: Vec<(u64, u64)> = Vec::new(); // (offset, records)
    let mut bytes = 0;
    for c in &list {
        match parts.last_mut() {
            Some((_, n)) if bytes < part_bytes => *n += c.records,
            _ => {
                parts.push((c.offset, c.records));
                bytes = 0;
            }
        }
        bytes += c.size;
    }
    parts
        .par_iter()
        .map(|&(offset, records)| {
            let mut reader = CramReader::open(path, options)?;
            reader.seek_to_container(offset)?;
            job(&mut Part { reader: &mut reader, records: Some(records), offset })
        })
        .collect()
}

/// A run of whole containers of a CRAM file, read by a reader of its own
/// ([`scatter`]).
pub struct Part<'a> {
    reader: &'a mut CramReader,
    /// The records of the part's containers; `None`: every record to the
    /// end of the file (CRAM 1 and 4, read whole by one reader).
    records: Option<u64>,
    /// The byte offset of its first container.
    offset: u64,
}

impl Part<'_> {
    /// Calls `f` on each record of the part, in file order.
    pub fn for_each_record(&mut self, mut f: impl FnMut(&RecordRef<'_>)) -> Result<(), Error> {
        while self.wants_more() {
            match self.reader.next_record()? {
                Some(r) => f(&r),
                None if self.records.is_none() => break,
                None => return Err(self.cut_short()),
            }
        }
        Ok(())
    }

    /// Calls `f` on each record's [`Core`] fields, in file order (see
    /// [`CramReader::next_core`]): what flagstat and idxstats count,
    /// without building BAM bytes; stops at `f`'s first error.
    pub fn for_each_core(&mut self, mut f: impl FnMut(Core) -> Result<(), Error>) -> Result<(), Error> {
        while self.wants_more() {
            match self.reader.next_core()? {
                Some(c) => f(c)?,
                None if self.records.is_none() => break,
                None => return Err(self.cut_short()),
            }
        }
        Ok(())
    }

    fn wants_more(&self) -> bool {
        self.records.is_none_or(|records| self.reader.records_read() < records)
    }

    fn cut_short(&self) -> Error {
        Error::Message(format!("CRAM data ends before the records its container headers announce (container at byte {})", self.offset))
            .with_path(self.reader.path())
    }
}

/// What samtools quickcheck learns from htslib about a CRAM file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CramCheck {
    /// The number of references, if the header could be read.
    pub references: Option<usize>,
    /// `hts_check_EOF`: 1 present, 0 missing, 2 not seekable, <0 error.
    pub eof: i32,
    /// Whether the file closed cleanly.
    pub closed: bool,
}

/// samtools quickcheck's look at the CRAM file at `path` (or stream): open,
/// read the header, check the EOF container, close. `None` when it cannot
/// be opened.
pub fn check(path: &Path, stream: Option<Box<dyn Read + Send>>) -> Option<CramCheck> {
    quiet_htslib();
    let mut feeder = None;
    let fp = match stream {
        None => {
            let name = c_path(path).ok()?;
            // SAFETY: NUL-terminated strings that outlive the call.
            unsafe { ffi::hts_open(name.as_ptr(), c"r".as_ptr()) }
        }
        Some(stream) => {
            let mut fds = [0 as c_int; 2];
            // SAFETY: `fds` has room for two descriptors.
            if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
                return None;
            }
            // SAFETY: socketpair made them; nobody else owns them.
            let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let name = c_path(path).ok()?;
            feeder = Some(std::thread::spawn(move || feed(stream, theirs)));
            let fd = ours.into_raw_fd();
            // SAFETY: `fd` is open; the hFILE owns it from here.
            let hfile = unsafe { ffi::hdopen(fd, c"r".as_ptr()) };
            if hfile.is_null() {
                // SAFETY: not taken over.
                unsafe { libc::close(fd) };
                std::ptr::null_mut()
            } else {
                // SAFETY: `hfile` is valid; hts_hopen takes it over when it succeeds.
                let fp = unsafe { ffi::hts_hopen(hfile, name.as_ptr(), c"r".as_ptr()) };
                if fp.is_null() {
                    // SAFETY: hts_hopen failed and left `hfile` open, ours
                    // to close; closing it ends the feeder (joined below).
                    unsafe { ffi::hclose_abruptly(hfile) };
                }
                fp
            }
        }
    };
    let result = NonNull::new(fp).map(|fp| {
        // SAFETY: `fp` is open; the header is destroyed before closing.
        unsafe {
            let hdr = ffi::sam_hdr_read(fp.as_ptr());
            let references = (!hdr.is_null()).then(|| ffi::sam_hdr_nref(hdr).max(0) as usize);
            if !hdr.is_null() {
                ffi::sam_hdr_destroy(hdr);
            }
            let eof = ffi::hts_check_EOF(fp.as_ptr());
            let closed = ffi::hts_close(fp.as_ptr()) >= 0;
            CramCheck { references, eof, closed }
        }
    });
    if let Some(f) = feeder {
        let _ = f.join();
    }
    result
}

/// Writes the `.crai` index of the CRAM file at `path` to `out` with
/// htslib's own index builder, so its bytes are `samtools index`'s.
pub fn build_index(path: &Path, out: &Path, threads: usize) -> Result<(), Error> {
    quiet_htslib();
    let name = c_path(path)?;
    let index = c_path(out)?;
    // SAFETY: NUL-terminated strings that outlive the call.
    let ret = unsafe { ffi::sam_index_build3(name.as_ptr(), index.as_ptr(), 0, threads.max(1) as c_int) };
    match ret {
        0 => Ok(()),
        -2 => Err(Error::Message(UNREADABLE.into()).with_path(path)),
        -4 => Err(Error::Message("cannot write the index".into()).with_path(out)),
        _ => Err(Error::Message("cannot index: damaged or truncated CRAM data".into()).with_path(path)),
    }
}
