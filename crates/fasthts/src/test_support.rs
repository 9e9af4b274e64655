//! What the unit tests of several modules share: a report that keeps what
//! it is told, the repository's test files, scratch directories.

use crate::report::{Report, Warning};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A report that keeps what it is told.
#[derive(Default)]
pub(crate) struct Kept {
    pub(crate) warnings: Mutex<Vec<Warning>>,
    pub(crate) messages: Mutex<String>,
}

impl Report for Kept {
    fn warning(&self, warning: Warning) {
        self.warnings.lock().unwrap().push(warning);
    }
    fn message(&self, text: &str) {
        self.messages.lock().unwrap().push_str(text);
    }
}

impl Kept {
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap().iter().map(|w| w.to_string()).collect()
    }
}

/// A file of the repository's tests/data.
pub(crate) fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(name)
}

/// A fresh directory for one test.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fasthts-command-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Sets the modification time of `path` `seconds` into the past.
pub(crate) fn age(path: &Path, seconds: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(seconds)).unwrap();
}
