//! khmer's saved countgraph (`.ct`, "OXLI" format version 4), plain or gzip.
//!
//! Layout (little-endian): `"OXLI"`, version 4, type 1 (counting), use_bigcount
//! (u8), k (u32), N (u8), occupied (u64); per table: size (u64) and that many
//! counter bytes; then `n_big` (u64) and `n_big` × (hash u64, count u16).
//! Gzip is chosen by the file name: last `.`-suffix exactly `gz`.
//! Files are written to a temporary name and renamed into place.

use crate::table::{ByteTable, Countgraph, SharedMap};
use fasthts_io::output::{self, Destination, TempOutput};
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// File signature.
pub const MAGIC: &[u8; 4] = b"OXLI";
/// Format version khmer 3.0 writes and accepts.
pub const VERSION: u8 = 4;
/// Table type for a counting table (ByteStorage).
pub const TYPE_COUNTING: u8 = 1;
/// Table type for a SmallCountgraph (NibbleStorage).
pub const TYPE_SMALLCOUNT: u8 = 7;

/// Errors reading a `.ct` file.
#[derive(Debug)]
pub enum CtError {
    /// I/O error (including a truncated file).
    Io(io::Error),
    /// Not an OXLI file.
    BadMagic,
    /// Version other than 4.
    BadVersion(u8),
    /// Not a counting table.
    BadType(u8),
    /// Header values that cannot be used (k out of range, no tables).
    BadHeader(String),
}

impl std::fmt::Display for CtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CtError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                write!(f, "truncated countgraph file")
            }
            CtError::Io(e) => write!(f, "{e}"),
            CtError::BadMagic => write!(f, "Does not start with signature for a oxli file"),
            CtError::BadVersion(v) => {
                write!(f, "Incorrect file format version {v} while reading k-mer count file; expected {VERSION}")
            }
            CtError::BadType(t) => write!(f, "Incorrect file format type {t} while reading k-mer count file; expected {TYPE_COUNTING}"),
            CtError::BadHeader(s) => write!(f, "{s}"),
        }
    }
}
impl std::error::Error for CtError {}
impl From<io::Error> for CtError {
    fn from(e: io::Error) -> Self {
        CtError::Io(e)
    }
}

/// khmer's rule: gzip iff the last `.`-separated suffix is exactly `gz`.
pub fn is_gz_name(path: &Path) -> bool {
    let s = path.to_string_lossy();
    match s.rfind('.') {
        Some(i) => &s[i + 1..] == "gz",
        None => false,
    }
}

/// Writes `f(writer)` to `path` through a temporary file renamed into place
/// ([`fasthts_io::output::write_atomically_unsynced`]: khmer's outputs are
/// not synced either). Paths that are not regular files (`/dev/stdout`,
/// pipes) are written directly.
pub fn write_atomically<F>(path: &Path, f: F) -> io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    // The error stays the bare OS error: the CLI prints khmer's message
    // around it.
    output::write_atomically_unsynced(path, |w| f(w)).map_err(|e| e.source)
}

/// A `.ct` file being made whose tables are the countgraph's memory
/// ([`Countgraph::map_tables_to`]): a temporary beside the target,
/// `.NAME.tmp.PID.table`, registered for removal on a signal and removed
/// on drop unless renamed into place.
pub(crate) struct MappedCt {
    map: Arc<SharedMap>,
    /// Opened for reading and writing (the mapping needs both).
    file: File,
    /// The descriptor that holds the temporary's lock for life (see
    /// `fasthts_io::output::create_temporary`).
    _locked: File,
    temp: PathBuf,
    /// The file the temporary replaces (a symbolic link's target).
    target: PathBuf,
    /// Length of the header and tables; the bigcount section follows.
    tables_end: u64,
    committed: bool,
}

impl MappedCt {
    /// The temporary for `target` (a regular file or new name), as long as
    /// the header and tables of `sizes`, its space allocated, mapped; and
    /// the tables in the mapping (zeros).
    fn create(target: &Path, sizes: &[u64]) -> io::Result<(MappedCt, Vec<ByteTable>)> {
        let mut temp = output::temporary_name(target).into_os_string();
        temp.push(".table");
        let temp = PathBuf::from(temp);
        // created (and locked) as a registered temporary, then opened for
        // reading too, which a shared writable mapping needs
        let created = output::create_temporary(&temp)?;
        let mut m = MappedCt {
            map: Arc::new(SharedMap::empty()),
            file: created.try_clone()?,
            _locked: created,
            temp,
            target: target.to_path_buf(),
            tables_end: 0,
            committed: false,
        };
        m.file = std::fs::OpenOptions::new().read(true).write(true).open(&m.temp)?;
        m.tables_end = 20 + sizes.iter().map(|s| 8 + s).sum::<u64>();
        let len = usize::try_from(m.tables_end).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        // The blocks are reserved now: a full disk is an error here (and
        // the table goes to the heap) rather than a SIGBUS while counting.
        allocate(&m.file, m.tables_end)?;
        m.map = SharedMap::new(&m.file, len)?;
        let mut tables = Vec::with_capacity(sizes.len());
        let mut off = 20usize;
        for &size in sizes {
            m.map.write_at(off, &size.to_le_bytes());
            tables.push(ByteTable::in_map(&m.map, off + 8, size as usize));
            off += 8 + size as usize;
        }
        Ok((m, tables))
    }
}

impl Drop for MappedCt {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
            output::unregister_temporary(&self.temp);
        }
    }
}

/// Whether `bytes` of dirty file pages stay well below the amount at which
/// the kernel starts writing dirty pages back in the background
/// (`vm.dirty_background_bytes`, or `vm.dirty_background_ratio` percent of
/// the available memory): half of it, leaving room for the run's other
/// outputs. Above it the flusher would write the table out while it is
/// being counted, and every page written would fault and be dirtied again
/// at its next update (and past `vm.dirty_ratio` the counting would be
/// throttled to the disk's speed); not measured, so not done.
pub(crate) fn below_writeback(bytes: u64) -> bool {
    let read = |name: &str| std::fs::read_to_string(format!("/proc/sys/vm/{name}")).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let threshold = match read("dirty_background_bytes") {
        Some(b) if b > 0 => b,
        _ => {
            let Some(ratio) = read("dirty_background_ratio") else { return false };
            let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemAvailable:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            });
            let Some(kib) = available else { return false };
            kib * 1024 / 100 * ratio
        }
    };
    bytes <= threshold / 2
}

/// Reserves the first `len` bytes of `file` on the disk (the file grows to
/// that length).
fn allocate(file: &File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: fallocate on the caller's open descriptor; no memory involved.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A table's address and length, sent to the save threads.
#[derive(Clone, Copy)]
struct TableBytes(*const u8, usize);
// SAFETY: the save threads only read the table (and release parts of it
// that no thread reads again) while `&mut Countgraph` excludes writers.
unsafe impl Send for TableBytes {}
unsafe impl Sync for TableBytes {}

impl Countgraph {
    /// Places the tables of a new, empty countgraph in the file it will be
    /// saved to (the `.ct`'s temporary, mapped shared): the counts reach
    /// the page cache as they are made, and saving (with
    /// [`Countgraph::save_and_free`] to `path`) writes the header and
    /// bigcounts and renames the file, with no copy of the tables. On this
    /// project's machine the copy cost as much again as the zeroing of the
    /// table's fresh memory (see BENCHMARKS.md, "k-mer tables: fixed costs").
    ///
    /// Returns false, leaving the tables where they were, unless the graph
    /// is new and empty, a byte countgraph, small enough that the kernel
    /// leaves its dirty pages alone until the save ([`below_writeback`]),
    /// and `path` a regular file (or new name) not ending in `.gz` whose
    /// temporary could be created and allocated: a pipe or `/dev/stdout`
    /// cannot be mapped, a gzip is compressed at the end, and a failure
    /// here (a full disk, a file system without `fallocate`) is left for
    /// the save to report.
    /// The bytes saved are the same either way. Setting the environment
    /// variable `FASTHTS_NO_TABLE_MAP` turns this off (to measure it).
    pub fn map_tables_to(&mut self, path: &Path) -> bool {
        let Destination::Replace(target) = output::destination(path) else { return false };
        // What killed runs left, of either kind, whether or not this run
        // maps: a mapped run's save never creates a `TempOutput`, which
        // would remove the plain ones.
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dir = target.parent().unwrap_or(Path::new("."));
        for suffix in ["", ".table"] {
            output::remove_stale(dir, &format!(".{name}.tmp."), suffix);
        }
        if std::env::var_os("FASTHTS_NO_TABLE_MAP").is_some() {
            return false;
        }
        if !self.fresh || self.is_small() || self.n_occupied() != 0 || self.mapped.is_some() || is_gz_name(path) {
            return false;
        }
        if !below_writeback(self.total_table_bytes()) {
            return false;
        }
        match MappedCt::create(&target, self.sizes()) {
            Ok((mapped, tables)) => {
                self.tables = tables;
                self.mapped = Some(mapped);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether the tables are in their output file ([`Countgraph::map_tables_to`]).
    pub fn tables_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// Completes the mapped `.ct`: header, bigcount section, rename.
    fn finish_mapped(&mut self, mut m: MappedCt) -> io::Result<()> {
        m.map.write_at(0, &self.ct_header());
        let tail = self.ct_bigcounts();
        // unmapped once no table refers to it
        self.tables.clear();
        m.map = Arc::new(SharedMap::empty());
        use std::os::unix::fs::FileExt;
        m.file.write_all_at(&tail, m.tables_end)?;
        output::commit_temporary(&m.temp, &m.target)?;
        m.committed = true;
        Ok(())
    }

    /// Serialise in khmer's format to any writer (uncompressed bytes).
    pub fn write_ct<W: Write + ?Sized>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(&self.ct_header())?;
        for i in 0..self.n_tables() {
            let size = self.sizes()[i];
            w.write_all(&size.to_le_bytes())?;
            w.write_all(self.table_bytes(i))?;
        }
        w.write_all(&self.ct_bigcounts())
    }

    /// The file's 20 header bytes (what [`parse_header`] reads back).
    fn ct_header(&self) -> [u8; 20] {
        let mut hdr = [0u8; 20];
        hdr[..4].copy_from_slice(MAGIC);
        hdr[4] = VERSION;
        hdr[5] = TYPE_COUNTING;
        hdr[6] = self.use_bigcount() as u8;
        hdr[7..11].copy_from_slice(&self.ksize().to_le_bytes());
        hdr[11] = self.n_tables() as u8;
        hdr[12..].copy_from_slice(&self.n_occupied().to_le_bytes());
        hdr
    }

    /// The file's last section: the number of bigcount entries (u64), then
    /// each entry's hash (u64) and count (u16), in khmer's order.
    fn ct_bigcounts(&self) -> Vec<u8> {
        let big = self.bigcounts_in_file_order();
        let mut tail = Vec::with_capacity(8 + 10 * big.len());
        tail.extend_from_slice(&(big.len() as u64).to_le_bytes());
        for (h, c) in big {
            tail.extend_from_slice(&h.to_le_bytes());
            tail.extend_from_slice(&c.to_le_bytes());
        }
        tail
    }

    /// Save to `path` (gzip if the name ends in `.gz`), atomically.
    ///
    /// Uncompressed saves to a regular file write the tables in parallel
    /// (positional writes at their known offsets): copying gigabytes into
    /// the page cache is CPU work that otherwise takes as long as counting.
    pub fn save(&mut self, path: &Path) -> io::Result<()> {
        self.save_releasing(path, false)
    }

    /// [`Countgraph::save`] for a graph that is not needed afterwards: each
    /// part of a table is given back to the kernel as soon as it has been
    /// written, so the page cache receiving the file reuses that memory
    /// instead of claiming gigabytes of fresh pages (on a VM whose host
    /// reclaims free memory, fresh pages cost more than the copy itself:
    /// BENCHMARKS.md, "Tuning constants").
    pub fn save_and_free(mut self, path: &Path) -> io::Result<()> {
        self.save_releasing(path, true)
    }

    fn save_releasing(&mut self, path: &Path, release: bool) -> io::Result<()> {
        if release {
            if let Some(m) = self.mapped.take() {
                if output::destination(path) == Destination::Replace(m.target.clone()) {
                    return self.finish_mapped(m);
                }
                // saved elsewhere: written from the mapping as from the
                // heap; the temporary goes with the graph
                self.mapped = Some(m);
            }
        }
        if self.is_small() {
            // khmer writes a SmallCountgraph uncompressed, whatever its name
            return write_atomically(path, |w| self.write_small_ct(w));
        }
        let gz = is_gz_name(path);
        if !gz && !output::is_special_file(path) {
            let (temp, file) = TempOutput::create(path).map_err(|e| e.source)?;
            let written = self.save_parallel(file, release);
            return temp.finish(written).map_err(|e| e.source);
        }
        write_atomically(path, |w| {
            if gz {
                // Level 1: the content inside the gzip is what must match
                // khmer; its tables are mostly zeros, which level 1 already
                // squeezes well, at a fraction of level 6's time.
                let mut enc = flate2::write::GzEncoder::new(w, flate2::Compression::new(1));
                self.write_ct(&mut enc)?;
                enc.finish()?;
                Ok(())
            } else {
                self.write_ct(w)
            }
        })
    }

    /// Writes the tables at their offsets on all threads; with `release`,
    /// frees each written part of a table (the graph must not be read
    /// afterwards).
    fn save_parallel(&mut self, f: File, release: bool) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        f.write_all_at(&self.ct_header(), 0)?;
        let sizes = self.sizes().to_vec();
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut off = 20u64;
        for &s in &sizes {
            offsets.push(off);
            off += 8 + s;
        }
        f.write_all_at(&self.ct_bigcounts(), off)?;
        let threads = fasthts_io::pool::thread_count(None).min(sizes.len()).max(1);
        let n = sizes.len();
        // Raw views: with `release`, written parts are freed while the rest
        // is still being written, so no slice may span a whole table.
        let tables: Vec<TableBytes> = (0..n).map(|i| TableBytes(self.table_ptr(i), sizes[i] as usize)).collect();
        let f = &f;
        let results: Vec<io::Result<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let tables = &tables;
                    let offsets = &offsets;
                    let sizes = &sizes;
                    s.spawn(move || -> io::Result<()> {
                        for i in (t..n).step_by(threads) {
                            f.write_all_at(&sizes[i].to_le_bytes(), offsets[i])?;
                            // chunked so one huge write does not hold one
                            // thread while others idle
                            let mut pos = 0usize;
                            let TableBytes(ptr, len) = tables[i];
                            while pos < len {
                                let e = (pos + (64 << 20)).min(len);
                                // SAFETY: `ptr..ptr + len` is table i, which
                                // `&mut self` keeps alive and unwritten;
                                // `pos..e` has not been released.
                                let chunk = unsafe { std::slice::from_raw_parts(ptr.add(pos), e - pos) };
                                f.write_all_at(chunk, offsets[i] + 8 + pos as u64)?;
                                if release {
                                    // SAFETY: the graph is being consumed and
                                    // this chunk is never read again.
                                    unsafe { fasthts_io::memory::release_huge_pages(chunk.as_ptr(), chunk.len()) };
                                }
                                pos = e;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in results {
            r?;
        }
        Ok(())
    }

    /// Serialise a SmallCountgraph in khmer's format: `"OXLI"`, version 4,
    /// type 7, k (u32), N (u8), occupied (u64); per table its size (u64) and
    /// `size / 2 + 1` bytes of nibbles (no bigcount section).
    pub fn write_small_ct<W: Write + ?Sized>(&mut self, w: &mut W) -> io::Result<()> {
        let mut hdr = Vec::with_capacity(19);
        hdr.extend_from_slice(MAGIC);
        hdr.extend_from_slice(&[VERSION, TYPE_SMALLCOUNT]);
        hdr.extend_from_slice(&self.ksize().to_le_bytes());
        hdr.push(self.n_tables() as u8);
        hdr.extend_from_slice(&self.n_occupied().to_le_bytes());
        w.write_all(&hdr)?;
        for i in 0..self.n_tables() {
            w.write_all(&self.sizes()[i].to_le_bytes())?;
            w.write_all(self.table_bytes(i))?;
        }
        Ok(())
    }

    /// Load a SmallCountgraph saved by khmer (or [`Countgraph::save`] of a
    /// small graph): khmer's `SmallCountgraph.load`, uncompressed only.
    pub fn load_small(path: &Path) -> Result<Countgraph, CtError> {
        let mut r = BufReader::with_capacity(1 << 20, File::open(path)?);
        let mut hdr = [0u8; 19];
        read_exact_or_magic(&mut r, &mut hdr)?;
        if hdr[4] != VERSION {
            return Err(CtError::BadVersion(hdr[4]));
        }
        if hdr[5] != TYPE_SMALLCOUNT {
            return Err(CtError::BadType(hdr[5]));
        }
        let k = u32::from_le_bytes(hdr[6..10].try_into().unwrap());
        let n = usize::from(hdr[10]);
        let occupied = u64::from_le_bytes(hdr[11..19].try_into().unwrap());
        check_k_and_n(k, n)?;
        let mut sizes = Vec::with_capacity(n);
        let mut tables = Vec::with_capacity(n);
        for _ in 0..n {
            let mut b = [0u8; 8];
            r.read_exact(&mut b)?;
            let size = u64::from_le_bytes(b);
            if size == 0 || size > (1u64 << 40) {
                return Err(CtError::BadHeader(format!("implausible table size {size} in countgraph file")));
            }
            let len = crate::table::table_bytes_for(size, true);
            let mut bytes = Vec::new();
            bytes
                .try_reserve_exact(len as usize)
                .map_err(|_| CtError::BadHeader(format!("table of {len} bytes does not fit in memory")))?;
            r.by_ref().take(len).read_to_end(&mut bytes)?;
            if (bytes.len() as u64) < len {
                return Err(CtError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated")));
            }
            sizes.push(size);
            tables.push(ByteTable::from_vec(bytes));
        }
        let mut g = Countgraph::from_tables_of(k, sizes, tables, true);
        g.set_occupied(occupied);
        Ok(g)
    }

    /// Read khmer's format from any reader (uncompressed bytes).
    pub fn read_ct<R: Read + ?Sized>(r: &mut R) -> Result<Countgraph, CtError> {
        let mut hdr = [0u8; 20];
        read_exact_or_magic(r, &mut hdr)?;
        let CtHeader { use_bigcount, k, n, occupied } = parse_header(&hdr)?;
        let mut sizes = Vec::with_capacity(n);
        let mut tables = Vec::with_capacity(n);
        for _ in 0..n {
            let mut b = [0u8; 8];
            r.read_exact(&mut b)?;
            let size = u64::from_le_bytes(b);
            if size == 0 || size > (1u64 << 40) {
                return Err(CtError::BadHeader(format!("implausible table size {size} in countgraph file")));
            }
            // The stream's length is unknown: grow the table with the bytes
            // actually read, so a corrupt size fails at the end of the data
            // instead of allocating what it claims up front.
            let mut bytes = Vec::new();
            while (bytes.len() as u64) < size {
                let start = bytes.len();
                let step = (size - start as u64).min(TABLE_READ_STEP) as usize;
                bytes.try_reserve(step).map_err(|_| CtError::BadHeader(format!("table of {size} bytes does not fit in memory")))?;
                bytes.resize(start + step, 0);
                r.read_exact(&mut bytes[start..])?;
            }
            sizes.push(size);
            tables.push(ByteTable::from_vec(bytes));
        }
        let mut g = Countgraph::from_tables(k, sizes, tables);
        g.set_use_bigcount(use_bigcount);
        g.set_occupied(occupied);
        let mut b = [0u8; 8];
        r.read_exact(&mut b)?;
        let n_big = u64::from_le_bytes(b);
        let mut e = [0u8; 10];
        for _ in 0..n_big {
            r.read_exact(&mut e)?;
            let h = u64::from_le_bytes(e[0..8].try_into().unwrap());
            let c = u16::from_le_bytes(e[8..10].try_into().unwrap());
            g.load_bigcount(h, c);
        }
        Ok(g)
    }

    /// What khmer's `extract_countgraph_info` reads from a saved table's
    /// header: (k, number of tables, size of the first table); gzip if the
    /// name ends in `.gz`, as [`Countgraph::load`].
    pub fn peek_info(path: &Path) -> Result<(u32, usize, u64), CtError> {
        let f = File::open(path)?;
        let mut r: Box<dyn Read> = if is_gz_name(path) { Box::new(flate2::read::MultiGzDecoder::new(f)) } else { Box::new(f) };
        let mut hdr = [0u8; 20];
        // A SmallCountgraph's header (type 7) is one byte shorter: no bigcount flag.
        read_exact_or_magic(&mut r, &mut hdr[..19])?;
        let (k, n) = if hdr[4] == VERSION && hdr[5] == TYPE_SMALLCOUNT {
            let k = u32::from_le_bytes(hdr[6..10].try_into().expect("4 bytes"));
            let n = usize::from(hdr[10]);
            check_k_and_n(k, n)?;
            (k, n)
        } else {
            r.read_exact(&mut hdr[19..])?;
            let CtHeader { k, n, .. } = parse_header(&hdr)?;
            (k, n)
        };
        let mut b = [0u8; 8];
        r.read_exact(&mut b)?;
        Ok((k, n, u64::from_le_bytes(b)))
    }

    /// Load from `path` (gzip if the name ends in `.gz`). An uncompressed
    /// regular file is read with the tables loaded in parallel (positional
    /// reads at their offsets).
    pub fn load(path: &Path) -> Result<Countgraph, CtError> {
        let f = File::open(path)?;
        if is_gz_name(path) {
            let r = BufReader::with_capacity(1 << 20, f);
            let mut d = flate2::read::MultiGzDecoder::new(r);
            return Self::read_ct(&mut d);
        }
        if f.metadata().map(|m| m.is_file()).unwrap_or(false) {
            return Self::load_parallel(&f);
        }
        let mut r = BufReader::with_capacity(1 << 20, f);
        Self::read_ct(&mut r)
    }

    fn load_parallel(f: &File) -> Result<Countgraph, CtError> {
        use std::os::unix::fs::FileExt;
        let file_len = f.metadata()?.len();
        let mut hdr = [0u8; 20];
        {
            let mut r = f;
            read_exact_or_magic(&mut r, &mut hdr)?;
        }
        let CtHeader { use_bigcount, k, n, occupied } = parse_header(&hdr)?;
        let truncated = || CtError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated"));
        let mut sizes = Vec::with_capacity(n);
        let mut offsets = Vec::with_capacity(n);
        let mut off = 20u64;
        for _ in 0..n {
            let mut b = [0u8; 8];
            f.read_exact_at(&mut b, off)?;
            let size = u64::from_le_bytes(b);
            if size == 0 || size > (1u64 << 40) {
                return Err(CtError::BadHeader(format!("implausible table size {size} in countgraph file")));
            }
            if off + 8 + size > file_len {
                return Err(truncated());
            }
            offsets.push(off + 8);
            sizes.push(size);
            off += 8 + size;
        }
        let mut tables: Vec<ByteTable> = sizes.iter().map(|&s| ByteTable::zeroed(s as usize)).collect();
        let threads = fasthts_io::pool::thread_count(None);
        // split the tables into ~64 MB pieces shared out between threads
        let mut pieces: Vec<(u64, &mut [u8])> = Vec::new();
        for (t, &o) in tables.iter_mut().zip(&offsets) {
            let mut pos = 0u64;
            for chunk in t.as_bytes_mut().chunks_mut(64 << 20) {
                let len = chunk.len() as u64;
                pieces.push((o + pos, chunk));
                pos += len;
            }
        }
        let mut per: Vec<Vec<(u64, &mut [u8])>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, p) in pieces.into_iter().enumerate() {
            per[i % threads].push(p);
        }
        let results: Vec<io::Result<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = per
                .into_iter()
                .map(|list| {
                    s.spawn(move || -> io::Result<()> {
                        for (o, buf) in list {
                            f.read_exact_at(buf, o)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in results {
            r?;
        }
        let mut g = Countgraph::from_tables(k, sizes, tables);
        g.set_use_bigcount(use_bigcount);
        g.set_occupied(occupied);
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, off)?;
        let n_big = u64::from_le_bytes(b);
        if off + 8 + n_big.saturating_mul(10) > file_len {
            return Err(truncated());
        }
        let mut big = vec![0u8; (n_big * 10) as usize];
        f.read_exact_at(&mut big, off + 8)?;
        for e in big.chunks_exact(10) {
            let h = u64::from_le_bytes(e[0..8].try_into().unwrap());
            let c = u16::from_le_bytes(e[8..10].try_into().unwrap());
            g.load_bigcount(h, c);
        }
        Ok(g)
    }
}

fn read_exact_or_magic<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> Result<(), CtError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    if got < 4 || &buf[0..4] != MAGIC {
        return Err(CtError::BadMagic);
    }
    if got < buf.len() {
        return Err(CtError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated header")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Cleaning;

    #[test]
    fn roundtrip_plain_and_gz() {
        let mut g = Countgraph::new(6, 1000, 3).unwrap();
        g.set_use_bigcount(true);
        for _ in 0..300 {
            g.consume(b"AAAAAAAACGTTGCA", Cleaning::CppParser);
        }
        let dir = std::env::temp_dir().join(format!("fasthts-ct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = Vec::new();
        g.write_ct(&mut bytes).unwrap();
        let total: u64 = g.sizes().iter().map(|s| s + 8).sum();
        assert_eq!(bytes.len() as u64, 20 + total + 8 + 10 * g.n_bigcounts() as u64);
        for name in ["a.ct", "a.ct.gz"] {
            let p = dir.join(name);
            g.save(&p).unwrap();
            let mut h = Countgraph::load(&p).unwrap();
            let mut b2 = Vec::new();
            h.write_ct(&mut b2).unwrap();
            // tables identical; the bigcount section holds the same entries
            // (re-inserting in file order gives libstdc++ a different
            // iteration order, as it does khmer)
            let nb = 10 * g.n_bigcounts();
            assert!(bytes.len() == b2.len() && bytes[..bytes.len() - nb] == b2[..b2.len() - nb], "{name}");
            let mut x: Vec<&[u8]> = bytes[bytes.len() - nb..].chunks(10).collect();
            let mut y: Vec<&[u8]> = b2[b2.len() - nb..].chunks(10).collect();
            x.sort();
            y.sort();
            assert!(x == y, "{name}");
            assert_eq!(h.n_unique_kmers(), 0);
        }
        // errors
        let p = dir.join("bad.ct");
        let mut v = bytes.clone();
        v[4] = 3;
        std::fs::write(&p, &v).unwrap();
        assert!(matches!(Countgraph::load(&p), Err(CtError::BadVersion(3))));
        std::fs::write(&p, &bytes[..bytes.len() - 5]).unwrap();
        assert!(matches!(Countgraph::load(&p), Err(CtError::Io(_))));
        std::fs::write(&p, b"hello world, not a table").unwrap();
        assert!(matches!(Countgraph::load(&p), Err(CtError::BadMagic)));
        std::fs::write(&p, b"").unwrap();
        assert!(matches!(Countgraph::load(&p), Err(CtError::BadMagic)));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stream_with_absurd_table_size_fails_without_allocating_it() {
        let mut g = Countgraph::new(6, 1000, 2).unwrap();
        g.consume(b"AAAAAAAACGTTGCA", Cleaning::CppParser);
        let mut bytes = Vec::new();
        g.write_ct(&mut bytes).unwrap();
        // The first table claims 512 GiB (it used to be allocated up front:
        // an abort, not an error).
        bytes[20..28].copy_from_slice(&(1u64 << 39).to_le_bytes());
        assert!(matches!(Countgraph::read_ct(&mut &bytes[..]), Err(CtError::Io(_))));
        // Intact streams still read back, tables and all.
        let mut good = Vec::new();
        g.write_ct(&mut good).unwrap();
        let mut h = Countgraph::read_ct(&mut &good[..]).unwrap();
        let mut again = Vec::new();
        h.write_ct(&mut again).unwrap();
        assert_eq!(again, good);
    }

    #[test]
    fn save_and_free_writes_the_same_file_as_write_ct() {
        // Tables over the 64 MiB write chunk, so parts are freed while later
        // parts are still to be written.
        let mut g = Countgraph::new(21, 70_000_000, 2).unwrap();
        g.set_use_bigcount(true);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let seq: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b"ACGT"[(x >> 32) as usize & 3]
            })
            .collect();
        g.consume(&seq, Cleaning::CppParser);
        for _ in 0..300 {
            g.consume(&seq[..40], Cleaning::CppParser);
        }
        let mut expected = Vec::new();
        g.write_ct(&mut expected).unwrap();
        let dir = std::env::temp_dir().join(format!("fasthts-ct-free-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("freed.ct");
        g.save_and_free(&p).unwrap();
        assert!(std::fs::read(&p).unwrap() == expected, "saved file differs from write_ct's bytes");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn gz_rule() {
        assert!(is_gz_name(Path::new("x.ct.gz")));
        assert!(!is_gz_name(Path::new("x.ct")));
        assert!(!is_gz_name(Path::new("x.tgz")));
        assert!(!is_gz_name(Path::new("x.GZ")));
    }
}

/// A header's k and table count, checked.
fn check_k_and_n(k: u32, n: usize) -> Result<(), CtError> {
    if k == 0 || k > crate::hash::MAX_K_EXT {
        return Err(CtError::BadHeader(format!("k-mer size {k} in countgraph file is not supported (1..=64)")));
    }
    if n == 0 {
        return Err(CtError::BadHeader("countgraph file has no tables".into()));
    }
    Ok(())
}

/// Bytes of a table read from a stream per step.
const TABLE_READ_STEP: u64 = 64 << 20;

/// The fixed 20-byte `.ct` header, checked.
struct CtHeader {
    use_bigcount: bool,
    k: u32,
    n: usize,
    occupied: u64,
}

/// Checks magic, version and type and reads k, the table count and the
/// occupied count (shared by the stream and the file loaders).
fn parse_header(hdr: &[u8; 20]) -> Result<CtHeader, CtError> {
    if &hdr[0..4] != MAGIC {
        return Err(CtError::BadMagic);
    }
    if hdr[4] != VERSION {
        return Err(CtError::BadVersion(hdr[4]));
    }
    if hdr[5] != TYPE_COUNTING {
        return Err(CtError::BadType(hdr[5]));
    }
    let k = u32::from_le_bytes([hdr[7], hdr[8], hdr[9], hdr[10]]);
    let n = usize::from(hdr[11]);
    check_k_and_n(k, n)?;
    let occupied = u64::from_le_bytes([hdr[12], hdr[13], hdr[14], hdr[15], hdr[16], hdr[17], hdr[18], hdr[19]]);
    Ok(CtHeader { use_bigcount: hdr[6] != 0, k, n, occupied })
}
