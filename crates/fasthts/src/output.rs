//! Outputs that appear complete or not at all.

use crate::Error;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A temporary file beside its final path, removed on drop unless
/// [`TempOutput::commit`] renamed it into place.
pub struct TempOutput {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl TempOutput {
    /// Creates `.<name>.tmp.<pid>` next to `target`.
    pub fn create(target: &Path) -> Result<(TempOutput, File), Error> {
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = target.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
        let file = File::create(&temp).map_err(|e| Error::from(e).with_path(&temp))?;
        Ok((TempOutput { temp, target: target.to_path_buf(), committed: false }, file))
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// Renames the temporary file to the target.
    pub fn commit(mut self) -> Result<(), Error> {
        fs::rename(&self.temp, &self.target).map_err(|e| Error::from(e).with_path(&self.target))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// Writes `path` by calling `write` on a buffered temporary file, syncing
/// it, and renaming it into place; on any error nothing is left behind.
pub fn write_atomically(path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<(), Error> {
    let (temp, file) = TempOutput::create(path)?;
    let mut w = BufWriter::new(file);
    let done = write(&mut w)
        .and_then(|()| w.flush())
        .and_then(|()| w.get_ref().sync_all());
    done.map_err(|e| Error::from(e).with_path(path))?;
    temp.commit()
}
