//! The scripts' errors, worded as khmer words them.

use std::fmt;
use std::io;

/// A k-mer script's refusal or failure. `Display` gives the whole text as
/// khmer prints it (no program name before it); khmer exits with status 1
/// for each of them.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// One of khmer's own refusals (its `sys.exit(1)` paths), or one of
    /// fasthts' in the same voice: the whole text.
    Refused(String),
    /// An output that is one of the inputs, however named (khmer would
    /// truncate the input before reading it).
    InputAsOutput(fasthts_io::PathError),
    /// A file written in place as a script goes (`.info`, a report)
    /// could not be created or written: `path: <OS error>`.
    File {
        /// The file.
        path: String,
        /// What the system said.
        source: io::Error,
    },
    /// An output of reads could not be finished: `path: <error>`, the
    /// error as `io::Error` shows it.
    Output {
        /// The output (the file standard output is, for standard output).
        path: String,
        /// What went wrong.
        source: io::Error,
    },
}

impl Error {
    /// A refusal with this text.
    pub fn refused(text: impl Into<String>) -> Error {
        Error::Refused(text.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Refused(text) => f.write_str(text),
            Error::InputAsOutput(e) => write!(f, "{e}"),
            Error::File { path, source } => write!(f, "{path}: {}", fasthts_io::os_message(source)),
            Error::Output { path, source } => write!(f, "{path}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Refused(_) => None,
            Error::InputAsOutput(e) => Some(e),
            Error::File { source, .. } | Error::Output { source, .. } => Some(source),
        }
    }
}
