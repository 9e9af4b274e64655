//! The command layer of the k-mer scripts: what each script decides before,
//! around and after its algorithm (`crate::scripts`), in one place, so
//! that the `fasthts kmer` command line and the Python package cannot
//! disagree. Front ends turn their arguments into these options and print
//! what comes back.
//!
//! * inputs: khmer's checks of the inputs (missing or empty files and
//!   `--force`, readable as Python opens them, a FIFO where a script reads
//!   its input twice, standard input without a named output, an output
//!   that is an input), with khmer's words ([`check_input_files`],
//!   [`check_readable`]);
//! * outputs: where the reads go and what the outputs are called (each
//!   input's own, the paired scripts', sample-reads-randomly's, the
//!   histogram), as files complete or absent or on standard output,
//!   plain, gzip or bzip2 ([`ReadOutput`], [`ReadOutputs`]);
//! * tables: the table options (`-k`, `-N`, `-x`, `-M`, `-U`) checked and
//!   turned into a countgraph as khmer sizes it ([`TableOptions`], what
//!   khmer says on the way as [`TableNote`]s), and when a table is too
//!   full to trust ([`fp_rate_too_high`]);
//! * summaries: load-into-counting's `.info` and the `--summary-info`
//!   files of load-into-counting and trim-low-abund ([`CountSummary`],
//!   [`trim_summary_text`]);
//! * sample-reads-randomly's generator seed and sample files
//!   ([`sample_generator`], [`sample_outputs`]).
//!
//! Refusals are an [`Error`] whose text is khmer's (khmer exits 1 for
//! each).

mod error;
mod inputs;
mod outputs;
mod sample_reads;
mod summary;
mod table;

pub use error::Error;
pub use inputs::{
    check_input_files, check_readable, input_problem, is_stdin, missing_or_empty, refuse_fifo_read_twice, refuse_input_as_output,
    refuse_repeated_inputs, refuse_unopenable_sequences, require_output_for_stdin, InputProblem,
};
pub use outputs::{
    append_line, basename, check_histogram_output, create_in_place, describe_output, extract_paired_outputs, file_error, is_stdout,
    output_name, reads_output_path, reads_output_paths, refuse_duplicate_basenames, split_paired_outputs, trim_pass2_path, trim_tempdir,
    write_histogram, write_in_place, Compression, PairedOutputs, ReadOutput, ReadOutputs,
};
pub use sample_reads::{sample_generator, sample_outputs, SampleOutputs};
pub use summary::{count_info_path, trim_summary_path, trim_summary_text, CountSummary, SummaryFormat};
pub use table::{fp_rate_too_high, parse_memory_setting, TableNote, TableOptions, MAX_TABLE_BYTES};
