//! CRAM concatenation as samtools 1.16's `cram_cat` does it, with the same
//! htslib calls in the same order (so the same bytes): every input must
//! have the first one's CRAM version; the header is `-h FILE`'s or the
//! first input's, with the `@RG` lines of later inputs that it lacks
//! added; containers are copied without being decoded, but for those of
//! an input with a single `@RG` line that is not the header's first,
//! whose compression header htslib rewrites so that the reads point at
//! that line's new number.
//!
//! Unlike samtools, a container htslib cannot copy or renumber is an
//! error (samtools goes on, losing what follows), and so is an input
//! without its EOF container.

use super::{c_path, ffi, quiet_htslib};
use crate::output::Named;
use crate::output::TempOutput;
use crate::Error;
use std::ffi::{c_char, c_int, CStr, CString};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[allow(non_camel_case_types)]
#[repr(C)]
struct cram_container {
    _private: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
struct cram_block {
    _private: [u8; 0],
}

/// `CRAM_OPT_VERSION` of `enum hts_fmt_option`.
const CRAM_OPT_VERSION: c_int = 6;

#[link(name = "hts")]
extern "C" {
    fn cram_major_vers(fd: *mut ffi::cram_fd) -> c_int;
    fn cram_minor_vers(fd: *mut ffi::cram_fd) -> c_int;
    fn cram_set_option(fd: *mut ffi::cram_fd, opt: c_int, ...) -> c_int;
    fn cram_read_container(fd: *mut ffi::cram_fd) -> *mut cram_container;
    fn cram_free_container(c: *mut cram_container);
    fn cram_container_is_empty(fd: *mut ffi::cram_fd) -> c_int;
    fn cram_container_get_landmarks(c: *mut cram_container, num_landmarks: *mut i32) -> *mut i32;
    fn cram_write_container(fd: *mut ffi::cram_fd, c: *mut cram_container) -> c_int;
    fn cram_read_block(fd: *mut ffi::cram_fd) -> *mut cram_block;
    fn cram_write_block(fd: *mut ffi::cram_fd, b: *mut cram_block) -> c_int;
    fn cram_free_block(b: *mut cram_block);
    fn cram_transcode_rg(
        input: *mut ffi::cram_fd,
        output: *mut ffi::cram_fd,
        c: *mut cram_container,
        nrg: c_int,
        in_rg: *mut c_int,
        out_rg: *mut c_int,
    ) -> c_int;
    fn cram_copy_slice(input: *mut ffi::cram_fd, output: *mut ffi::cram_fd, num_slice: i32) -> c_int;
    fn sam_hdr_dup(h: *const ffi::sam_hdr_t) -> *mut ffi::sam_hdr_t;
    fn sam_hdr_count_lines(h: *mut ffi::sam_hdr_t, kind: *const c_char) -> c_int;
    fn sam_hdr_line_name(h: *mut ffi::sam_hdr_t, kind: *const c_char, pos: c_int) -> *const c_char;
    fn sam_hdr_line_index(h: *mut ffi::sam_hdr_t, kind: *const c_char, key: *const c_char) -> c_int;
    fn sam_hdr_find_line_pos(h: *mut ffi::sam_hdr_t, kind: *const c_char, pos: c_int, ks: *mut ffi::kstring_t) -> c_int;
    fn sam_hdr_add_lines(h: *mut ffi::sam_hdr_t, lines: *const c_char, len: usize) -> c_int;
    fn sam_hdr_add_pg(h: *mut ffi::sam_hdr_t, name: *const c_char, ...) -> c_int;
}

/// A header owned here, destroyed on drop.
struct OwnedHeader(NonNull<ffi::sam_hdr_t>);

impl OwnedHeader {
    fn ptr(&self) -> *mut ffi::sam_hdr_t {
        self.0.as_ptr()
    }

    /// A copy (htslib's `sam_hdr_dup`).
    fn duplicate(&self) -> Result<OwnedHeader, Error> {
        // SAFETY: the header is valid; a NULL result is checked.
        NonNull::new(unsafe { sam_hdr_dup(self.ptr()) }).map(OwnedHeader).ok_or_else(|| Error::Message("header duplication failed".into()))
    }

    fn read_group_count(&self) -> c_int {
        // SAFETY: the header is valid and the type a C string.
        unsafe { sam_hdr_count_lines(self.ptr(), c"RG".as_ptr()) }
    }

    /// The ID of the `index`th `@RG` line (htslib's pointer into the header).
    fn read_group_name(&self, index: c_int) -> Option<&CStr> {
        // SAFETY: the header is valid; the name, if any, lives as long as
        // the header is not changed (it is not, while borrowed).
        let name = unsafe { sam_hdr_line_name(self.ptr(), c"RG".as_ptr(), index) };
        // SAFETY: a non-NULL name is a C string owned by the header.
        (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) })
    }

    /// The number of the `@RG` line with this ID (-1 when there is none).
    fn read_group_index(&self, name: &CStr) -> c_int {
        // SAFETY: the header is valid, both strings C strings.
        unsafe { sam_hdr_line_index(self.ptr(), c"RG".as_ptr(), name.as_ptr()) }
    }
}

impl Drop for OwnedHeader {
    fn drop(&mut self) {
        // SAFETY: owned here and not used afterwards.
        unsafe { ffi::sam_hdr_destroy(self.0.as_ptr()) };
    }
}

/// An input CRAM opened by htslib with its header read.
struct CramInput {
    fp: NonNull<ffi::htsFile>,
    header: OwnedHeader,
}

impl CramInput {
    /// Opens `path`, CRAM (as the caller has checked).
    fn open(path: &Path) -> Result<CramInput, Error> {
        if path.as_os_str() == "-" {
            return Err(Error::Message("CRAM cannot be concatenated from standard input (each input is read twice)".into()).with_path(path));
        }
        let name = c_path(path)?;
        // SAFETY: both arguments are C strings; NULL is checked.
        let fp = NonNull::new(unsafe { ffi::hts_open(name.as_ptr(), c"rc".as_ptr()) })
            .ok_or_else(|| Error::from(io::Error::last_os_error()).with_path(path))?;
        // SAFETY: `fp` is open; NULL is checked.
        let Some(header) = NonNull::new(unsafe { ffi::sam_hdr_read(fp.as_ptr()) }) else {
            // SAFETY: opened above, not used afterwards.
            unsafe { ffi::hts_close(fp.as_ptr()) };
            return Err(Error::Message("couldn't read the CRAM header".into()).with_path(path));
        };
        let input = CramInput { fp, header: OwnedHeader(header) };
        // SAFETY: `fp` is open.
        if unsafe { ffi::hts_check_EOF(input.fp.as_ptr()) } == 0 {
            return Err(Error::Message("truncated file: no CRAM EOF container at its end".into()).with_path(path));
        }
        Ok(input)
    }

    fn cram(&self) -> *mut ffi::cram_fd {
        // SAFETY: `fp` is an open CRAM file, whose `fp` union holds its cram_fd.
        unsafe { (*self.fp.as_ptr()).fp.cast() }
    }

    fn version(&self) -> (c_int, c_int) {
        // SAFETY: the cram_fd is open.
        unsafe { (cram_major_vers(self.cram()), cram_minor_vers(self.cram())) }
    }
}

impl Drop for CramInput {
    fn drop(&mut self) {
        // SAFETY: opened by `open`, not used afterwards.
        unsafe { ffi::hts_close(self.fp.as_ptr()) };
    }
}

/// Reads the header of `-h FILE` (any format htslib reads).
fn read_header_file(path: &Path) -> Result<OwnedHeader, Error> {
    let name = c_path(path)?;
    let failed = || Error::Message("fail to read the header".into()).with_path(path);
    // SAFETY: both arguments are C strings; NULL is checked.
    let fp = NonNull::new(unsafe { ffi::hts_open(name.as_ptr(), c"r".as_ptr()) }).ok_or_else(failed)?;
    // SAFETY: `fp` is open.
    let header = NonNull::new(unsafe { ffi::sam_hdr_read(fp.as_ptr()) });
    // SAFETY: opened above, not used afterwards.
    unsafe { ffi::hts_close(fp.as_ptr()) };
    header.map(OwnedHeader).ok_or_else(failed)
}

/// samtools' `cram_cat_check_hdr`: the inputs' common version, and the
/// header to write (`given`'s or the first input's, with the `@RG` lines
/// of the others it lacks).
fn merged_header(inputs: &[PathBuf], given: Option<OwnedHeader>) -> Result<(OwnedHeader, (c_int, c_int)), Error> {
    let mut merged = given;
    let mut version = None;
    for path in inputs {
        let input = CramInput::open(path)?;
        let v = input.version();
        if version.is_some_and(|known| known != v) {
            return Err(Error::Message("input files have differing CRAM version numbers".into()).with_path(path));
        }
        version = Some(v);
        let Some(new) = &merged else {
            merged = Some(input.header.duplicate()?);
            continue;
        };
        let old = &input.header;
        let count = old.read_group_count();
        for i in 0..count {
            let name = old.read_group_name(i).ok_or_else(|| Error::Message(format!("failed to read @RG line {i}")).with_path(path))?;
            if new.read_group_index(name) == -1 {
                let mut line = ffi::kstring_t { l: 0, m: 0, s: std::ptr::null_mut() };
                // SAFETY: both headers are valid; htslib fills the kstring,
                // which is freed below with free(), as it was allocated.
                let added = unsafe {
                    let found = sam_hdr_find_line_pos(old.ptr(), c"RG".as_ptr(), i, &mut line);
                    let added = found == 0 && !line.s.is_null() && sam_hdr_add_lines(new.ptr(), line.s, line.l) == 0;
                    libc::free(line.s.cast());
                    added
                };
                if !added {
                    let shown = name.to_string_lossy();
                    return Err(Error::Message(format!("failed to add @RG line 'ID:{shown}'")).with_path(path));
                }
            }
        }
        if count > 1 && new.read_group_count() == count {
            let same = (0..count).all(|i| matches!((old.read_group_name(i), new.read_group_name(i)), (Some(a), Some(b)) if a == b));
            if !same {
                return Err(Error::Message("same size @RG lists but differing order / contents".into()).with_path(path));
            }
        }
    }
    let merged = merged.ok_or_else(|| Error::InvalidArgument("no input files".into()))?;
    Ok((merged, version.expect("an input was read")))
}

/// An htslib output writing into a descriptor; closed on drop.
struct CramOutput {
    fp: NonNull<ffi::htsFile>,
}

impl CramOutput {
    fn cram(&self) -> *mut ffi::cram_fd {
        // SAFETY: `fp` is an open CRAM output, whose union holds its cram_fd.
        unsafe { (*self.fp.as_ptr()).fp.cast() }
    }

    /// Closes the output (htslib writes the last container and the EOF
    /// container); false when that failed.
    fn close(self) -> bool {
        let fp = self.fp;
        std::mem::forget(self);
        // SAFETY: open, and not used afterwards (`self` is forgotten).
        unsafe { ffi::hts_close(fp.as_ptr()) == 0 }
    }
}

impl Drop for CramOutput {
    fn drop(&mut self) {
        // SAFETY: open, and not used afterwards.
        unsafe { ffi::hts_close(self.fp.as_ptr()) };
    }
}

/// Where htslib's output goes: a socket whose other end a thread reads
/// and writes to the destination. htslib never sees the destination's
/// errors (a closed pipe, a full disk): htslib 1.16 recurses without end
/// in `cram_close` when its last write fails. The thread keeps reading
/// after an error, so that htslib finishes, and says it failed.
struct Drain {
    thread: std::thread::JoinHandle<io::Result<()>>,
    failed: Arc<AtomicBool>,
}

impl Drain {
    /// Starts the thread writing to `to`; returns htslib's end of the socket.
    fn start(mut to: Box<dyn Write + Send>, shown: &Path) -> Result<(OwnedFd, Drain), Error> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
            return Err(Error::from(io::Error::last_os_error()).with_path(shown));
        }
        // SAFETY: socketpair just made both descriptors, owned by nobody else.
        let (htslib_end, ours) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let thread = std::thread::Builder::new()
            .name("cram-cat-drain".into())
            .spawn(move || {
                let mut from = std::fs::File::from(ours);
                let mut buf = vec![0u8; 1 << 20];
                let mut result = Ok(());
                loop {
                    let n = match from.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    if result.is_ok() {
                        result = to.write_all(&buf[..n]);
                        if result.is_err() {
                            flag.store(true, Ordering::Relaxed);
                        }
                    }
                }
                result.and_then(|()| to.flush())
            })
            .map_err(|e| Error::from(e).with_path(shown))?;
        Ok((htslib_end, Drain { thread, failed }))
    }

    /// Whether writing to the destination has failed.
    fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Waits for the thread (htslib's end closed) and gives its result.
    fn finish(self) -> io::Result<()> {
        self.thread.join().unwrap_or_else(|_| Err(io::Error::other("the CRAM drain thread failed")))
    }
}

/// Concatenates the CRAM files `inputs` into `output` (`-`: standard
/// output) as samtools 1.16's `cram_cat` (see the module's note); a file
/// output appears once complete.
pub fn cram_cat(inputs: &[PathBuf], output: &Path, header: Option<&Path>, program: Option<&(String, String)>) -> Result<(), Error> {
    quiet_htslib();
    let given = header.map(read_header_file).transpose()?;
    let (merged, (major, minor)) = merged_header(inputs, given)?;
    let (temp, file) = match output.as_os_str() == "-" {
        true => (None, None),
        false => {
            let (temp, file) = TempOutput::create(output)?;
            (Some(temp), Some(file))
        }
    };
    let shown = temp.as_ref().map_or_else(crate::output::stdout_name, |t| t.shown().to_path_buf());
    let synced = file.as_ref().map(|f| f.try_clone()).transpose().map_err(|e| Error::from(e).with_path(&shown))?;
    let destination: Box<dyn Write + Send> = match file {
        Some(file) => Box::new(Named::new(crate::output::WritebackFile::new(file), &shown)),
        None => Box::new(Named::new(io::stdout(), &shown)),
    };
    let (socket, drain) = Drain::start(destination, &shown)?;
    let written = write_output(socket, &drain, inputs, output, &merged, (major, minor), program);
    // The thread ends once htslib's end is closed (by now, whatever happened).
    let drained = drain.finish();
    match (written, drained) {
        (_, Err(e)) => return Err(Error::from(e)),
        (Err(e), Ok(())) => return Err(e),
        (Ok(()), Ok(())) => {}
    }
    if let (Some(temp), Some(file)) = (temp, synced) {
        crate::output::sync_if_file(&file).map_err(|e| Error::from(e).with_path(temp.shown()))?;
        temp.commit()?;
    }
    Ok(())
}

/// htslib's part of [`cram_cat`]: the output opened on `socket`, the
/// header and every input's containers written, the output closed.
fn write_output(
    socket: OwnedFd,
    drain: &Drain,
    inputs: &[PathBuf],
    output: &Path,
    merged: &OwnedHeader,
    (major, minor): (c_int, c_int),
    program: Option<&(String, String)>,
) -> Result<(), Error> {
    let fd = socket.into_raw_fd();
    // SAFETY: `fd` is open and now owned by the hFILE (closed with it).
    let hfile = unsafe { ffi::hdopen(fd, c"w".as_ptr()) };
    if hfile.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: hdopen failed, so `fd` is still ours to close.
        unsafe { libc::close(fd) };
        return Err(Error::from(e).with_path(output));
    }
    // htslib writes the output's name into the file definition, as for samtools.
    let name = c_path(output)?;
    // SAFETY: `hfile` is valid; hts_hopen takes it over when it succeeds.
    let Some(fp) = NonNull::new(unsafe { ffi::hts_hopen(hfile, name.as_ptr(), c"wc".as_ptr()) }) else {
        // SAFETY: hts_hopen failed and left `hfile` ours to close.
        unsafe { ffi::hclose_abruptly(hfile) };
        return Err(Error::Message("htslib cannot start a CRAM output".into()).with_path(output));
    };
    let out = CramOutput { fp };
    let version = CString::new(format!("{major}.{minor}")).expect("digits");
    // SAFETY: the output is open; the option takes a C string.
    unsafe { cram_set_option(out.cram(), CRAM_OPT_VERSION, version.as_ptr()) };
    if let Some((program_version, command_line)) = program {
        let c = |s: &str| CString::new(s.replace('\0', " ")).expect("NULs replaced");
        let (v, cl) = (c(program_version), c(command_line));
        // SAFETY: the header is valid; the arguments are C strings ending
        // with NULL, as htslib's variadic list requires.
        let added = unsafe {
            sam_hdr_add_pg(
                merged.ptr(),
                c"fasthts".as_ptr(),
                c"VN".as_ptr(),
                v.as_ptr(),
                c"CL".as_ptr(),
                cl.as_ptr(),
                std::ptr::null::<c_char>(),
            )
        };
        if added != 0 {
            return Err(Error::Message("cannot add the @PG line".into()));
        }
    }
    // SAFETY: both are open.
    if unsafe { ffi::sam_hdr_write(out.fp.as_ptr(), merged.ptr()) } < 0 {
        return Err(Error::Message("couldn't write the header".into()).with_path(output));
    }
    for path in inputs {
        if drain.failed() {
            // The drain's error says what happened.
            return Ok(());
        }
        copy_containers(path, merged, &out, drain).map_err(|e| e.with_path(path))?;
    }
    if !out.close() {
        return Err(Error::Message("cannot finish the CRAM output".into()).with_path(output));
    }
    Ok(())
}

/// Copies the containers of one input (samtools' loop in `cram_cat`).
fn copy_containers(path: &Path, merged: &OwnedHeader, out: &CramOutput, drain: &Drain) -> Result<(), Error> {
    let input = CramInput::open(path)?;
    // Reads of an input with one read group point at its number in the
    // merged header; with several, they keep theirs.
    let new_rg = match input.header.read_group_count() {
        1 => {
            let name = input.header.read_group_name(0).ok_or_else(|| Error::Message("fail to find @RG line".into()))?;
            let index = merged.read_group_index(name);
            if index < 0 {
                return Err(Error::Message(format!("fail to find @RG line '{}' in the new header", name.to_string_lossy())));
            }
            index
        }
        _ => 0,
    };
    let (from, to) = (input.cram(), out.cram());
    loop {
        if drain.failed() {
            return Ok(());
        }
        // SAFETY: the input is open; NULL is the end (or an error).
        let container = unsafe { cram_read_container(from) };
        if container.is_null() {
            return Ok(());
        }
        // SAFETY: `container` was just read from `from`, both files are
        // open, and every block is freed after use; the container is freed
        // at the end of the turn.
        let copied = unsafe {
            if cram_container_is_empty(from) != 0 {
                let block = cram_read_block(from);
                if !block.is_null() {
                    cram_free_block(block);
                }
                !block.is_null()
            } else if new_rg != 0 {
                let (mut old, mut new) = (0, new_rg);
                cram_transcode_rg(from, to, container, 1, &mut old, &mut new) == 0
            } else {
                let mut slices = 0;
                let block = if cram_write_container(to, container) == 0 { cram_read_block(from) } else { std::ptr::null_mut() };
                let written = !block.is_null() && cram_write_block(to, block) == 0;
                if !block.is_null() {
                    cram_free_block(block);
                }
                cram_container_get_landmarks(container, &mut slices);
                written && cram_copy_slice(from, to, slices) == 0
            }
        };
        // SAFETY: read above, not used afterwards.
        unsafe { cram_free_container(container) };
        if !copied {
            return Err(Error::Message("cannot copy a CRAM container (damaged or truncated input)".into()));
        }
    }
}
