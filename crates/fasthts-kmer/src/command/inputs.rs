//! What the scripts check of their inputs before they read them, as khmer
//! checks it, and the refusals in khmer's words.

use super::error::Error;
use std::fmt;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// An input khmer's checks stop at: missing, or an empty regular file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputProblem {
    /// No such file (or one whose status cannot be read).
    Missing(String),
    /// A file of no bytes.
    Empty(String),
}

/// khmer's `check_input_files` message: `ERROR: Input file x does not
/// exist`, `ERROR: Input file x is empty; exiting.`
impl fmt::Display for InputProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputProblem::Missing(path) => write!(f, "ERROR: Input file {path} does not exist"),
            InputProblem::Empty(path) => write!(f, "ERROR: Input file {path} is empty; exiting."),
        }
    }
}

impl InputProblem {
    /// normalize-by-median's warning for it (khmer's
    /// `check_valid_file_exists`): `WARNING: Input file x not found`,
    /// `WARNING: Input file x is empty`.
    pub fn warning(&self) -> String {
        match self {
            InputProblem::Missing(path) => format!("WARNING: Input file {path} not found"),
            InputProblem::Empty(path) => format!("WARNING: Input file {path} is empty"),
        }
    }

    /// The refusal khmer's `check_input_files` ends the script with,
    /// without `--force`.
    fn refusal(&self) -> Error {
        let note = "NOTE: This can be overridden using the --force argument";
        match self {
            InputProblem::Missing(_) => Error::refused(format!("{self}\n{note}\nExiting")),
            InputProblem::Empty(_) => Error::refused(format!("{self}\n{note}")),
        }
    }
}

/// khmer's `check_input_files` on one file: standard input (`-`) and
/// block devices, FIFOs and character devices pass; otherwise a missing
/// file or one of no bytes is a problem.
pub fn input_problem(path: &str) -> Option<InputProblem> {
    if path == "-" {
        return None;
    }
    match std::fs::metadata(path) {
        Err(_) => Some(InputProblem::Missing(path.to_string())),
        Ok(m) => {
            let ft = m.file_type();
            let special = ft.is_block_device() || ft.is_fifo() || ft.is_char_device();
            (!special && m.len() == 0).then(|| InputProblem::Empty(path.to_string()))
        }
    }
}

/// khmer's `check_input_files` on each of `paths`, in order: without
/// `force`, the first problem ends the script (the error is khmer's);
/// with it, the problems are messages to print (all of them, in order)
/// and the script goes on.
pub fn check_input_files<P: AsRef<str>>(paths: &[P], force: bool) -> Result<Vec<InputProblem>, Error> {
    let mut forced = Vec::new();
    for problem in paths.iter().filter_map(|p| input_problem(p.as_ref())) {
        if !force {
            return Err(problem.refusal());
        }
        forced.push(problem);
    }
    Ok(forced)
}

/// normalize-by-median's look at its inputs (khmer's
/// `check_valid_file_exists`): each input that is missing or empty, up to
/// the first that is neither (where khmer stops looking); each is a
/// warning (see [`InputProblem::warning`]), and the script goes on (an
/// empty input is skipped, a missing one fails when its turn comes).
/// Unlike [`input_problem`], an empty character device is "empty".
pub fn missing_or_empty(inputs: &[impl AsRef<str>]) -> Vec<InputProblem> {
    let mut found = Vec::new();
    for f in inputs.iter().map(AsRef::as_ref).filter(|f| *f != "-") {
        match std::fs::metadata(f) {
            Ok(m) if m.len() > 0 || m.file_type().is_block_device() || m.file_type().is_fifo() => break,
            Ok(_) => found.push(InputProblem::Empty(f.to_string())),
            Err(_) => found.push(InputProblem::Missing(f.to_string())),
        }
    }
    found
}

/// Whether `path` names standard input (`-`, `/dev/stdin`).
pub fn is_stdin(path: &str) -> bool {
    path == "-" || path == "/dev/stdin"
}

/// khmer's refusal to name outputs after standard input: with standard
/// input among `inputs`, an `output` (`-o`, spelt `option` in the
/// message, as each script spells it) is needed.
pub fn require_output_for_stdin<I: AsRef<str>>(inputs: &[I], output: Option<&str>, option: &str) -> Result<(), Error> {
    match output {
        None if inputs.iter().any(|f| is_stdin(f.as_ref())) => {
            Err(Error::refused(format!("Accepting input from stdin; output filename must be provided with {option}.")))
        }
        _ => Ok(()),
    }
}

/// Opens input `path` for reading as Python's `open` would, to report a
/// missing or unreadable file as khmer's scripts do (their Python
/// exception: see [`crate::pyfmt::py_exception`]); standard input (`-`)
/// always opens. A directory is `EISDIR`.
pub fn check_readable(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    if path.as_os_str() == "-" {
        return Ok(());
    }
    // A URL opens when the object is there (HTTP 404: NotFound).
    if let Some(url) = path.to_str().filter(|p| fasthts_io::remote::is_url(p)) {
        return fasthts_io::remote::RemoteObject::open(url).map(drop);
    }
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if meta.is_file() {
        std::fs::File::open(path)?;
        return Ok(());
    }
    // A FIFO (or another special file) is opened once, by its reader: an
    // open here and a close would end the writer's stream (or lose what it
    // had written) and leave the real open waiting for ever.
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: access reads the NUL-terminated path and nothing else.
    if unsafe { libc::access(c_path.as_ptr(), libc::R_OK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// khmer's sequence parser's refusal of an input it cannot open (a
/// missing file, a directory), as its `OSError` shows it (unique-kmers).
pub fn refuse_unopenable_sequences(path: &str) -> Result<(), Error> {
    if !crate::seqio::input_exists(path) || std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(Error::refused(format!("OSError: File {path} contains badly formatted sequence or does not exist.")));
    }
    Ok(())
}

/// The scripts that read their input twice (count, then filter or
/// histogram: the `-single` ones) refuse a named FIFO, which can be read
/// once: khmer opens it again for the second pass and waits for ever for
/// a writer. (A pipe on standard input gives an empty second pass, as
/// khmer's does.) `script` names the script in the message.
pub fn refuse_fifo_read_twice(path: &str, script: &str) -> Result<(), Error> {
    if path != "-" && std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
        return Err(Error::refused(format!(
            "ERROR: {path} is a FIFO, and {script} reads its input twice (to count, then to use the counts): give it a file"
        )));
    }
    Ok(())
}

/// Refuses, before anything is written, an output that is one of the
/// inputs, however named (see `fasthts_io::output::refuse_input_as_output`).
pub fn refuse_input_as_output<O: AsRef<str>, I: AsRef<str>>(outputs: &[O], inputs: &[I]) -> Result<(), Error> {
    let outputs: Vec<&str> = outputs.iter().map(AsRef::as_ref).collect();
    let inputs: Vec<&str> = inputs.iter().map(AsRef::as_ref).collect();
    fasthts_io::output::refuse_input_as_output(&outputs, &inputs).map_err(Error::InputAsOutput)
}

/// trim-low-abund's refusal of an input given twice.
pub fn refuse_repeated_inputs(inputs: &[String]) -> Result<(), Error> {
    let mut unique = inputs.to_vec();
    unique.sort();
    unique.dedup();
    if unique.len() != inputs.len() {
        return Err(Error::refused("Error: Cannot input the same filename multiple times."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn khmer_words_for_missing_and_empty_inputs() {
        let dir = fasthts_testgen::support::TempDir::new("kmer-inputs");
        let empty = dir.path("empty.fa");
        std::fs::write(&empty, b"").unwrap();
        let full = dir.path("full.fa");
        std::fs::write(&full, b">a\nACGT\n").unwrap();
        let (empty, full) = (empty.to_str().unwrap(), full.to_str().unwrap());
        let missing = dir.path("missing.fa");
        let missing = missing.to_str().unwrap();
        assert_eq!(input_problem(full), None);
        assert_eq!(input_problem("-"), None);
        assert_eq!(input_problem("/dev/null"), None, "a character device passes");
        let refused = check_input_files(&[full, missing], false).unwrap_err().to_string();
        assert_eq!(
            refused,
            format!("ERROR: Input file {missing} does not exist\nNOTE: This can be overridden using the --force argument\nExiting")
        );
        let refused = check_input_files(&[empty], false).unwrap_err().to_string();
        assert_eq!(
            refused,
            format!("ERROR: Input file {empty} is empty; exiting.\nNOTE: This can be overridden using the --force argument")
        );
        let forced = check_input_files(&[missing, full, empty], true).unwrap();
        assert_eq!(forced, [InputProblem::Missing(missing.into()), InputProblem::Empty(empty.into())]);
        // normalize-by-median stops looking at the first good input
        let warned = missing_or_empty(&[empty, missing, full, empty]);
        assert_eq!(
            warned.iter().map(InputProblem::warning).collect::<Vec<_>>(),
            [format!("WARNING: Input file {empty} is empty"), format!("WARNING: Input file {missing} not found")]
        );
        assert_eq!(missing_or_empty(&["/dev/null"]), [InputProblem::Empty("/dev/null".into())]);
    }

    #[test]
    fn readable_inputs() {
        let dir = fasthts_testgen::support::TempDir::new("kmer-readable");
        assert!(check_readable("-").is_ok());
        assert_eq!(check_readable(&dir.0).unwrap_err().raw_os_error(), Some(libc::EISDIR));
        assert_eq!(check_readable(dir.path("no")).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(check_readable("/dev/null").is_ok());
        assert!(refuse_unopenable_sequences("-").is_ok());
        let e = refuse_unopenable_sequences(dir.0.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.starts_with("OSError: File ") && e.ends_with(" contains badly formatted sequence or does not exist."));
    }

    #[test]
    fn stdin_needs_a_named_output() {
        assert!(require_output_for_stdin(&["a.fa"], None, "-o").is_ok());
        assert!(require_output_for_stdin(&["-"], Some("x"), "-o").is_ok());
        let e = require_output_for_stdin(&["a.fa", "/dev/stdin"], None, "'-o'").unwrap_err();
        assert_eq!(e.to_string(), "Accepting input from stdin; output filename must be provided with '-o'.");
    }

    #[test]
    fn repeated_inputs() {
        assert!(refuse_repeated_inputs(&["a/x.fa".into(), "b/x.fa".into()]).is_ok());
        assert!(refuse_repeated_inputs(&["x.fa".into(), "x.fa".into()]).is_err());
    }
}
