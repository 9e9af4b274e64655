//! Errors about a named file.

use std::io;
use std::path::{Path, PathBuf};

/// An operating-system error about a file, read as `path: message`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path.display(), os_message(source))]
pub struct PathError {
    /// The file concerned (as the user named it where one was named).
    pub path: PathBuf,
    /// What went wrong.
    #[source]
    pub source: io::Error,
}

impl PathError {
    /// `source` about `path`.
    pub fn new(path: impl AsRef<Path>, source: io::Error) -> PathError {
        PathError { path: path.as_ref().to_path_buf(), source }
    }
}

impl From<PathError> for io::Error {
    /// Keeps the kind, with the path in the message.
    fn from(e: PathError) -> io::Error {
        io::Error::new(e.source.kind(), e.to_string())
    }
}

/// The text of an OS error without Rust's " (os error N)" suffix:
/// "No such file or directory (os error 2)" reads worse than the bare text.
pub fn os_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
