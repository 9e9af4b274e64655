//! Outputs that appear complete or not at all.
//!
//! A regular file (or a new name) is written under a hidden temporary name
//! beside it, `.NAME.tmp.PID`, and renamed into place when complete; a
//! special file (a terminal, a pipe, `/dev/stdout`) is written directly:
//! it cannot be renamed over, and nothing written there could be mistaken
//! for a finished file. Temporaries are registered from their creation to
//! their rename, so that a signal handler can remove them
//! ([`remove_in_progress`]).

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
pub fn create_temporary(path: &Path) -> io::Result<File> {
    let mut registered = registry();
    let file = File::create(path)?;
    registered.push(path.to_path_buf());
    Ok(file)
}

/// [`create_temporary`] for a directory (`create_dir`: its parent must
/// exist, and an existing directory is an error).
pub fn create_temporary_dir(path: &Path) -> io::Result<()> {
    let mut registered = registry();
    fs::create_dir(path)?;
    registered.push(path.to_path_buf());
    Ok(())
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
    target: PathBuf,
    committed: bool,
}

impl TempOutput {
    /// Creates `.<name>.tmp.<pid>` next to `target`; a special file
    /// ([`is_special_file`]) is opened and written directly instead.
    pub fn create(target: &Path) -> Result<(TempOutput, File), PathError> {
        if is_special_file(target) {
            let file = fs::OpenOptions::new().write(true).truncate(true).open(target).map_err(|e| PathError::new(target, e))?;
            return Ok((TempOutput { temp: target.to_path_buf(), target: target.to_path_buf(), committed: true }, file));
        }
        let temp = temporary_name(target);
        let file = create_temporary(&temp).map_err(|e| PathError::new(&temp, e))?;
        Ok((TempOutput { temp, target: target.to_path_buf(), committed: false }, file))
    }

    /// The temporary file's path (the target's, for a special file).
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// Renames the temporary file to the target.
    pub fn commit(mut self) -> Result<(), PathError> {
        if self.committed {
            return Ok(());
        }
        commit_temporary(&self.temp, &self.target).map_err(|e| PathError::new(&self.target, e))?;
        self.committed = true;
        Ok(())
    }

    /// Commits when `written` succeeded; otherwise (or when the rename
    /// fails) the temporary is removed and the error returned.
    pub fn finish(self, written: io::Result<()>) -> Result<(), PathError> {
        let target = self.target.clone();
        written.map_err(|e| PathError::new(&target, e))?;
        self.commit()
    }
}

/// The hidden name an output is written under: `.NAME.tmp.PID` beside it.
pub fn temporary_name(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.tmp.{}", std::process::id()))
}

/// True for an output that is written directly rather than through a
/// temporary: a path that exists and is not a regular file (a terminal, a
/// pipe, a device), or one that names a file descriptor (`/dev/stdout`,
/// `/dev/fd/N`, `/proc/self/fd/N`, even when the descriptor is a regular
/// file: renaming over such a name would replace the link, not write the
/// descriptor).
pub fn is_special_file(path: &Path) -> bool {
    let names_descriptor = ["/dev/stdout", "/dev/stderr", "/dev/stdin"].iter().any(|d| path == Path::new(d))
        || path.starts_with("/dev/fd/")
        || path.starts_with("/proc/self/fd/");
    names_descriptor || fs::metadata(path).is_ok_and(|m| !m.is_file())
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
/// the last stretch. The disk works while the program computes: a sort's
/// 300 MB output left a 0.35 s `fsync` with both cores idle, 0.06-0.17 s
/// with the writeback requests alone (ext4 in ordered mode: the final
/// commit still waited for the data written since the last one).
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
}
