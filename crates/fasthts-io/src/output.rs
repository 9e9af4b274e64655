//! Outputs that appear complete or not at all.
//!
//! A regular file (or a new name) is written under a hidden temporary name
//! beside it, `.NAME.tmp.PID`, and renamed into place when complete; a
//! special file (a terminal, a pipe, a socket, `/dev/stdout`, `/dev/fd/N`)
//! is written directly: it cannot be renamed over, and nothing written
//! there could be mistaken for a finished file. A symbolic link is written
//! through: the temporary goes beside the file it points to and replaces
//! that file, so the link stays (see [`destination`]). Temporaries are
//! registered from their creation to their rename, so that a signal
//! handler can remove them ([`remove_in_progress`]), and hold an advisory
//! lock for as long as their process lives, so that a later run can tell a
//! temporary left by a killed process from one still being written
//! ([`remove_stale`]).

use crate::PathError;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Temporary files and directories that exist right now, so that a signal
/// handler can remove them before the process dies.
static IN_PROGRESS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The registry, locked whether or not a thread panicked holding it.
fn registry() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    IN_PROGRESS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Creates the file `path` (truncating one of that name) as a temporary
/// to remove if the process is interrupted (see [`remove_in_progress`]).
///
/// Created and registered under the registry's lock, so no temporary can
/// exist that the signal handler does not know of: registering first left
/// a window in which the handler found nothing to remove and the file
/// appeared just before the process exited; creating first left one in
/// which it was not registered yet.
///
/// The file is locked (`flock`) for as long as this process lives, so
/// that [`remove_stale`] in another process never removes it.
pub fn create_temporary(path: &Path) -> io::Result<File> {
    let mut registered = registry();
    let file = File::create(path)?;
    lock_for_life(&file);
    registered.push(path.to_path_buf());
    Ok(file)
}

/// [`create_temporary`] for a directory (`create_dir`: its parent must
/// exist, and an existing directory is an error), locked as long as the
/// process lives or until [`unregister_temporary`].
pub fn create_temporary_dir(path: &Path) -> io::Result<()> {
    let mut registered = registry();
    fs::create_dir(path)?;
    if let Ok(dir) = File::open(path) {
        lock_for_life(&dir);
        held_dir_locks().push((path.to_path_buf(), dir));
    }
    registered.push(path.to_path_buf());
    Ok(())
}

/// Open directories whose lock marks them as in use by this process.
static DIR_LOCKS: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

fn held_dir_locks() -> std::sync::MutexGuard<'static, Vec<(PathBuf, File)>> {
    DIR_LOCKS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes an exclusive advisory lock on `file` (released by the kernel when
/// the last descriptor closes, whatever ends the process). A file system
/// without locks loses only the second safeguard of [`remove_stale`].
fn lock_for_life(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function borrows; no memory involved.
    unsafe {
        libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB);
    }
}

/// True when nobody holds the lock of [`lock_for_life`] on `path`.
fn lock_is_free(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = File::open(path) else { return false };
    // SAFETY: as in lock_for_life; the lock is released when `file` closes.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// True unless `pid` certainly names no process (`kill(pid, 0)` fails with
/// ESRCH); a process of another user counts as alive.
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes the temporaries named `PREFIX<pid>SUFFIX` in `dir` that a
/// process killed before it could clean up (SIGKILL, SIGBUS, the OOM
/// killer) left behind: those whose PID names no process and whose lock
/// ([`create_temporary`], [`create_temporary_dir`]) nobody holds. Never
/// this process's own, never a live process's (a PID reused by another
/// process keeps its file; a process in another PID namespace still holds
/// its lock). Files and directories alike; failures are ignored (the
/// caller's own work goes on).
pub fn remove_stale(dir: &Path, prefix: &str, suffix: &str) {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(entries) = fs::read_dir(dir) else { return };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = name.strip_prefix(prefix).and_then(|rest| rest.strip_suffix(suffix)) else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if pid == me || process_exists(pid) {
            continue;
        }
        let path = entry.path();
        if !lock_is_free(&path) {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => {
                let _ = fs::remove_dir_all(&path);
            }
            Ok(_) => {
                let _ = fs::remove_file(&path);
            }
            Err(_) => {}
        }
    }
}

/// Set by [`hold_committed_outputs`].
static HOLD_COMMITTED: AtomicBool = AtomicBool::new(false);

/// Makes [`commit_temporary`] keep each output it renames into place
/// registered until [`release_outputs`]: for a command line tool whose
/// outputs (a BAM and its index, a count table and its `.info`) should all
/// be there or, when it is interrupted, none of them.
pub fn hold_committed_outputs() {
    HOLD_COMMITTED.store(true, Ordering::SeqCst);
}

/// Renames the temporary `temp` to `target` under the registry's lock, so a
/// signal handler sees either the temporary or the renamed output (held
/// for removal with [`hold_committed_outputs`], else forgotten). On error
/// `temp` stays registered; the caller removes it.
pub fn commit_temporary(temp: &Path, target: &Path) -> io::Result<()> {
    let mut registered = registry();
    fs::rename(temp, target)?;
    registered.retain(|p| p != temp);
    if HOLD_COMMITTED.load(Ordering::SeqCst) && !registered.iter().any(|p| p == target) {
        registered.push(target.to_path_buf());
    }
    Ok(())
}

/// The run is complete: forgets every registered path, so a signal from
/// now on leaves the outputs in place.
pub fn release_outputs() {
    registry().clear();
}

/// Forgets `path` (it was removed).
pub fn unregister_temporary(path: &Path) {
    registry().retain(|p| p != path);
    held_dir_locks().retain(|(p, _)| p != path);
}

/// Set once [`remove_in_progress`] has started: the process is ending on
/// a signal.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Removes every registered temporary file and directory: for a handler
/// of SIGINT/SIGTERM, so an interrupted run leaves nothing behind.
///
/// The registry stays locked afterwards, so a thread that goes on working
/// until the process exits cannot create a new temporary that nobody would
/// remove: it waits in [`create_temporary`].
///
/// Safe to call from a thread that may hold the registry's lock itself (an
/// allocation failing inside [`create_temporary`]): the lock is tried for
/// a while rather than waited for.
pub fn remove_in_progress() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    if let Some(v) = lock_registry_briefly() {
        // Workers keep running meanwhile: one may create a file in a run
        // directory being removed (remove_dir_all then fails, not empty).
        // Passes repeat until one leaves nothing; once a directory is gone
        // nothing can be created in it, and no new temporary can appear
        // while the lock is held (create_temporary).
        for _ in 0..20 {
            let mut left = false;
            for p in v.iter() {
                if fs::remove_file(p).is_err() && fs::remove_dir_all(p).is_err() {
                    left |= fs::symlink_metadata(p).is_ok();
                }
            }
            if !left {
                break;
            }
        }
        std::mem::forget(v);
    }
}

/// The registry, once its lock could be taken within about a second.
fn lock_registry_briefly() -> Option<std::sync::MutexGuard<'static, Vec<PathBuf>>> {
    for _ in 0..1000 {
        match IN_PROGRESS.try_lock() {
            Ok(v) => return Some(v),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
    None
}

/// True once [`remove_in_progress`] has run: errors seen after that (files
/// vanishing under a worker) are consequences of the interruption, and
/// the process should end as the signal says rather than report them.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// A temporary file beside its final path, removed on drop unless
/// [`TempOutput::commit`] renamed it into place.
pub struct TempOutput {
    temp: PathBuf,
    /// The file the temporary replaces (a symbolic link's target).
    target: PathBuf,
    /// The output as the user named it, for messages.
    shown: PathBuf,
    committed: bool,
}

impl TempOutput {
    /// Creates `.<name>.tmp.<pid>` next to `target` (next to the file a
    /// symbolic link points to), after removing those left there by killed
    /// processes ([`remove_stale`]); a special file ([`is_special_file`])
    /// is opened and written directly instead. Errors name `target`.
    pub fn create(target: &Path) -> Result<(TempOutput, File), PathError> {
        let real = match destination(target) {
            Destination::Direct => {
                let file = open_direct(target).map_err(|e| PathError::new(target, e))?;
                let output =
                    TempOutput { temp: target.to_path_buf(), target: target.to_path_buf(), shown: target.to_path_buf(), committed: true };
                return Ok((output, file));
            }
            Destination::Replace(real) => real,
        };
        let temp = temporary_name(&real);
        if let Some(name) = real.file_name().and_then(|n| n.to_str()) {
            remove_stale(real.parent().unwrap_or(Path::new(".")), &format!(".{name}.tmp."), "");
        }
        let file = create_temporary(&temp).map_err(|e| PathError::new(target, e))?;
        Ok((TempOutput { temp, target: real, shown: target.to_path_buf(), committed: false }, file))
    }

    /// The temporary file's path (the target's, for a special file).
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// The output as the user named it: the path for messages.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// Renames the temporary file to the target.
    pub fn commit(mut self) -> Result<(), PathError> {
        if self.committed {
            return Ok(());
        }
        commit_temporary(&self.temp, &self.target).map_err(|e| PathError::new(&self.shown, e))?;
        self.committed = true;
        Ok(())
    }

    /// Commits when `written` succeeded; otherwise (or when the rename
    /// fails) the temporary is removed and the error returned.
    pub fn finish(self, written: io::Result<()>) -> Result<(), PathError> {
        let shown = self.shown.clone();
        written.map_err(|e| PathError::new(&shown, e))?;
        self.commit()
    }
}

/// The hidden name an output is written under: `.NAME.tmp.PID` beside it.
pub fn temporary_name(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.tmp.{}", std::process::id()))
}

/// How an output path is written.
#[derive(Debug, PartialEq, Eq)]
pub enum Destination {
    /// Opened and written in place: a device, a pipe, a socket, a
    /// directory (whose open fails with a clear error), or a name of a
    /// file descriptor.
    Direct,
    /// Written under a temporary name that then replaces this regular file
    /// (or new name): the path itself, or the file its chain of symbolic
    /// links ends at, so the links stay and point at the new file (as
    /// samtools, which opens the path, writes through them).
    Replace(PathBuf),
}

/// Where and how `path` is written (see [`Destination`]). Names of file
/// descriptors (`/dev/stdout`, `/dev/std*`, `/dev/fd/N`, anything under
/// `/proc`, or a link to one) are written directly even when the
/// descriptor is a regular file: renaming over such a name would replace
/// the link, not write the descriptor.
pub fn destination(path: &Path) -> Destination {
    let mut current = path.to_path_buf();
    // Linux's own limit on links followed in one lookup.
    for _ in 0..40 {
        if names_descriptor(&current) {
            return Destination::Direct;
        }
        match fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => match fs::read_link(&current) {
                Ok(next) => {
                    current = match current.parent() {
                        Some(dir) if next.is_relative() => dir.join(next),
                        _ => next,
                    }
                }
                Err(_) => return Destination::Direct,
            },
            Ok(m) if m.is_file() => return Destination::Replace(current),
            Ok(_) => return Destination::Direct,
            // A new name (or a dangling link's target, created as samtools would).
            Err(_) => return Destination::Replace(current),
        }
    }
    // A loop of links: opening the path reports it.
    Destination::Direct
}

/// True for an output that is written directly rather than through a
/// temporary ([`Destination::Direct`]).
pub fn is_special_file(path: &Path) -> bool {
    destination(path) == Destination::Direct
}

fn names_descriptor(path: &Path) -> bool {
    ["/dev/stdout", "/dev/stderr", "/dev/stdin"].iter().any(|d| path == Path::new(d))
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/")
}

/// The descriptor number a path like `/dev/stdout` or `/dev/fd/3` names.
fn descriptor_number(path: &Path) -> Option<i32> {
    match path.to_str()? {
        "/dev/stdin" => Some(0),
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        p => p.strip_prefix("/dev/fd/").or_else(|| p.strip_prefix("/proc/self/fd/"))?.parse().ok(),
    }
}

/// Opens a special file for writing. A name of one of this process's
/// descriptors (`/dev/stdout`, `/dev/fd/N`) writes a duplicate of that
/// descriptor: it shares the descriptor's offset, so the command's own
/// messages on stdout follow its output instead of overwriting it, a file
/// opened for appending (`>>`) is appended to rather than truncated, and
/// a socket (which cannot be opened by name) works. Anything else is
/// opened by name and truncated, as samtools' `fopen(.., "w")` does.
fn open_direct(path: &Path) -> io::Result<File> {
    if let Some(fd) = descriptor_number(path) {
        use std::os::fd::FromRawFd;
        // SAFETY: dup of a descriptor number the user named; a closed one
        // fails with EBADF.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if copy >= 0 {
            // SAFETY: `copy` is a new descriptor owned by nobody else.
            return Ok(unsafe { File::from_raw_fd(copy) });
        }
    }
    fs::OpenOptions::new().write(true).truncate(true).open(path)
}

/// Creates an output that is written in place as a command goes (khmer's
/// `.info` and report files): a special file opened directly, else the
/// file (a symbolic link's target) created and registered as a temporary
/// until the command releases it (see [`hold_committed_outputs`]).
pub fn create_in_place(path: &Path) -> io::Result<File> {
    match destination(path) {
        Destination::Direct => open_direct(path),
        Destination::Replace(real) => create_temporary(&real),
    }
}

/// What to call standard output in a message: the file it is
/// (`/dev/full`, `out.txt`) when it is one, else `standard output`.
pub fn stdout_name() -> PathBuf {
    match fs::read_link("/proc/self/fd/1") {
        Ok(p) if p.is_absolute() => p,
        _ => PathBuf::from("standard output"),
    }
}

/// A writer whose errors name the file written (`out.bam: No space left
/// on device`), keeping their kind (a closed pipe stays `BrokenPipe`).
pub struct Named<W> {
    inner: W,
    name: PathBuf,
}

impl<W: Write> Named<W> {
    /// `inner`, whose errors will name `name`.
    pub fn new(inner: W, name: impl Into<PathBuf>) -> Named<W> {
        Named { inner, name: name.into() }
    }

    /// The writer.
    pub fn into_inner(self) -> W {
        self.inner
    }

    fn name_error(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), PathError::new(&self.name, e))
    }
}

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.name_error(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.name_error(e))
    }
}

/// Refuses to write any of `outputs` when it is one of `inputs` (the same
/// device and inode, however named: a link, `/dev/stdout` pointing at it,
/// `-o a.bam a.bam`): one error naming both, before anything is written.
/// Only regular files are compared (a terminal may well be both stdin and
/// stdout); `-` and paths that do not exist are skipped.
pub fn refuse_input_as_output<O: AsRef<Path>, I: AsRef<Path>>(outputs: &[O], inputs: &[I]) -> Result<(), PathError> {
    use std::os::unix::fs::MetadataExt;
    let identity = |p: &Path| -> Option<(u64, u64)> {
        if p.as_os_str() == "-" {
            return None;
        }
        fs::metadata(p).ok().filter(|m| m.is_file()).map(|m| (m.dev(), m.ino()))
    };
    let inputs: Vec<(&Path, (u64, u64))> = inputs.iter().filter_map(|i| identity(i.as_ref()).map(|id| (i.as_ref(), id))).collect();
    for output in outputs {
        let output = output.as_ref();
        let Some(id) = identity(output) else { continue };
        if let Some((input, _)) = inputs.iter().find(|(_, i)| *i == id) {
            let why = format!("output is the same file as input {}", input.display());
            return Err(PathError::new(output, io::Error::new(io::ErrorKind::InvalidInput, why)));
        }
    }
    Ok(())
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.temp);
            unregister_temporary(&self.temp);
        }
    }
}

/// Flushes a written file to the disk before it is renamed into place
/// (pipes and devices, written directly, have nothing to sync).
pub fn sync_if_file(file: &File) -> io::Result<()> {
    if file.metadata()?.is_file() {
        file.sync_all()
    } else {
        Ok(())
    }
}

/// Writes `path` by calling `write` on a buffered temporary file, syncing
/// it, and renaming it into place; on any error nothing is left behind.
pub fn write_atomically(path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<(), PathError> {
    write_through_temporary(path, true, write)
}

/// [`write_atomically`] without the sync before the rename: for outputs
/// whose tools of reference do not sync them either (khmer's tables,
/// gigabytes whose sync would cost seconds).
pub fn write_atomically_unsynced(path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<(), PathError> {
    write_through_temporary(path, false, write)
}

fn write_through_temporary(path: &Path, sync: bool, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<(), PathError> {
    let (temp, file) = TempOutput::create(path)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let done = write(&mut w).and_then(|()| w.flush()).and_then(|()| if sync { sync_if_file(w.get_ref()) } else { Ok(()) });
    drop(w);
    temp.finish(done)
}

/// A file written front to back whose written data is handed to the disk
/// as it goes (`sync_file_range`, every `WRITEBACK_STEP` bytes) and made
/// durable as it goes (`fdatasync` on a thread of its own, every
/// `SYNC_STEP` bytes), so that the `fsync` before the rename only waits for
/// the last stretch. The disk works while the program computes
/// (measured: BENCHMARKS.md, "Tuning constants").
pub struct WritebackFile {
    file: File,
    written: u64,
    handed: u64,
    synced: u64,
    /// Wakes the thread that syncs the file's data; `None` if no thread.
    syncer: Option<std::sync::mpsc::SyncSender<()>>,
}

/// Bytes written between two requests for writeback.
const WRITEBACK_STEP: u64 = 8 << 20;

/// Bytes written between two background syncs.
const SYNC_STEP: u64 = 64 << 20;

impl WritebackFile {
    /// Wraps `file`, positioned at its start.
    pub fn new(file: File) -> WritebackFile {
        // The thread holds its own handle; it ends when the sender is
        // dropped (after finishing a sync in progress, if any).
        let syncer = file.try_clone().ok().and_then(|handle| {
            let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
            let sync = move || {
                while woken.recv().is_ok() {
                    let _ = handle.sync_data();
                }
            };
            std::thread::Builder::new().name("fasthts-sync".into()).spawn(sync).ok().map(|_| wake)
        });
        WritebackFile { file, written: 0, handed: 0, synced: 0, syncer }
    }

    /// The file.
    pub fn into_inner(self) -> File {
        self.file
    }
}

impl Write for WritebackFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.handed >= WRITEBACK_STEP {
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: a plain system call on an open descriptor, over
                // bytes of the file already written. Only a request: a
                // file system that refuses it (or a pipe) loses nothing,
                // the fsync still makes the data durable.
                unsafe {
                    libc::sync_file_range(
                        self.file.as_raw_fd(),
                        self.handed as libc::off64_t,
                        (self.written - self.handed) as libc::off64_t,
                        libc::SYNC_FILE_RANGE_WRITE,
                    );
                }
            }
            self.handed = self.written;
        }
        if self.written - self.synced >= SYNC_STEP {
            if let Some(wake) = &self.syncer {
                // A sync still running takes this one's place.
                let _ = wake.try_send(());
            }
            self.synced = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(path: &Path) -> bool {
        registry().iter().any(|p| p == path)
    }

    #[test]
    fn descriptor_names_and_devices_are_written_directly_regular_files_are_not() {
        // `/dev/stdout` is special even when the shell points it at a regular
        // file: renaming a temporary over it would replace the link.
        for p in ["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/1", "/dev/null"] {
            assert!(is_special_file(Path::new(p)), "{p}");
        }
        let dir = std::env::temp_dir();
        assert!(!is_special_file(&dir.join(format!("fasthts-new-output-{}", std::process::id()))));
        assert_eq!(temporary_name(Path::new("d/x.bam")), Path::new(&format!("d/.x.bam.tmp.{}", std::process::id())));
    }

    #[test]
    fn a_temporary_is_registered_from_its_creation_to_its_rename() {
        let dir = std::env::temp_dir().join(format!("fasthts-output-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (temp, target) = (dir.join(".out.tmp"), dir.join("out"));
        let mut file = create_temporary(&temp).unwrap();
        assert!(registered(&temp));
        file.write_all(b"done").unwrap();
        commit_temporary(&temp, &target).unwrap();
        assert!(!registered(&temp) && !temp.exists());
        assert_eq!(fs::read(&target).unwrap(), b"done");
        // Without hold_committed_outputs (only the CLI calls it), the output
        // is forgotten once renamed.
        assert!(!registered(&target));
        // A rename that fails leaves the temporary registered: the caller
        // removes it.
        let (lost, nowhere) = (dir.join(".lost.tmp"), dir.join("no-such-dir").join("out"));
        create_temporary(&lost).unwrap();
        assert!(commit_temporary(&lost, &nowhere).is_err());
        assert!(registered(&lost) && lost.exists());
        fs::remove_file(&lost).unwrap();
        unregister_temporary(&lost);
        // A directory, and one that exists already: an error, not registered twice.
        let runs = dir.join("runs");
        create_temporary_dir(&runs).unwrap();
        assert!(registered(&runs));
        assert!(create_temporary_dir(&runs).is_err());
        assert_eq!(registry().iter().filter(|p| **p == runs).count(), 1);
        fs::remove_dir(&runs).unwrap();
        unregister_temporary(&runs);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A PID that names no process: a child that has been waited for.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn symbolic_links_are_written_through_to_their_target() {
        let dir = std::env::temp_dir().join(format!("fasthts-links-{}", std::process::id()));
        fs::create_dir_all(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink("sub/real", dir.join("rel")).unwrap();
        std::os::unix::fs::symlink(dir.join("rel"), dir.join("chain")).unwrap();
        assert_eq!(destination(&dir.join("chain")), Destination::Replace(dir.join("sub/real")), "dangling: its target is created");
        write_atomically(&dir.join("chain"), |w| w.write_all(b"one")).unwrap();
        assert!(fs::symlink_metadata(dir.join("chain")).unwrap().file_type().is_symlink());
        assert!(fs::symlink_metadata(dir.join("rel")).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(dir.join("sub/real")).unwrap(), b"one");
        std::os::unix::fs::symlink("/dev/stdout", dir.join("out")).unwrap();
        assert_eq!(destination(&dir.join("out")), Destination::Direct);
        std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
        assert_eq!(destination(&dir.join("loop")), Destination::Direct);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_temporaries_of_dead_processes_are_removed_and_no_others() {
        let dir = std::env::temp_dir().join(format!("fasthts-stale-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let dead = dead_pid();
        let me = std::process::id();
        // PID 1 is alive (and another user's, when not root).
        for pid in [dead, 1, me] {
            fs::write(dir.join(format!(".x.bam.tmp.{pid}")), b"").unwrap();
        }
        fs::create_dir(dir.join(format!("x.bam.fasthts-sort.{dead}.runs"))).unwrap();
        fs::write(dir.join(format!("x.bam.fasthts-sort.{dead}.runs/000000.run")), b"r").unwrap();
        fs::write(dir.join(format!(".y.bam.tmp.{dead}")), b"").unwrap();
        // A dead PID whose file is locked (a process in another PID
        // namespace, still running): kept.
        let locked = dir.join(format!(".x.bam.tmp.{}", dead + 1_000_000));
        let held = File::create(&locked).unwrap();
        lock_for_life(&held);
        remove_stale(&dir, ".x.bam.tmp.", "");
        remove_stale(&dir, "x.bam.fasthts-sort.", ".runs");
        let mut left: Vec<String> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        let mut want = vec![
            format!(".x.bam.tmp.1"),
            format!(".x.bam.tmp.{me}"),
            format!(".x.bam.tmp.{}", dead + 1_000_000),
            format!(".y.bam.tmp.{dead}"),
        ];
        want.sort();
        assert_eq!(left, want);
        drop(held);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_naming_both() {
        let dir = std::env::temp_dir().join(format!("fasthts-same-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        fs::write(&a, b"a").unwrap();
        fs::write(&b, b"b").unwrap();
        std::os::unix::fs::symlink(&a, dir.join("l")).unwrap();
        fs::hard_link(&a, dir.join("h")).unwrap();
        assert!(refuse_input_as_output(&[&b, &dir.join("new")], &[&a]).is_ok());
        for alias in [a.clone(), dir.join("l"), dir.join("h")] {
            let e = refuse_input_as_output(&[&b, &alias], &[&a]).unwrap_err().to_string();
            assert_eq!(e, format!("{}: output is the same file as input {}", alias.display(), a.display()));
        }
        assert!(refuse_input_as_output(&["-"], &["-"]).is_ok());
        assert!(refuse_input_as_output(&["/dev/null"], &["/dev/null"]).is_ok(), "devices are not compared");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_of_a_named_writer_name_the_file_and_keep_their_kind() {
        let mut w = Named::new(File::open("/dev/null").unwrap(), "out.bam");
        let e = w.write_all(b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::from(io::Error::from_raw_os_error(libc::EBADF).kind()));
        assert_eq!(e.to_string(), "out.bam: Bad file descriptor");
    }
}
