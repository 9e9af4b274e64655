//! The inputs of a job that reads several alignment files position by
//! position (depth, coverage): each opened for its region, through its
//! index, or whole, with htslib's warning for a missing end-of-file
//! marker, and refused unless they name the same references.

use super::{warn_if_cram_truncated, warn_if_truncated, Report, Warning};
use crate::bam::Header;
use crate::cram::CramOptions;
use crate::input::{self, Input};
use crate::region::indexed::{IndexedFile, IndexedOptions};
use crate::sam::Positions;
use crate::Error;
use std::path::PathBuf;

/// How [`open_inputs`] opens the inputs.
pub(crate) struct InputsOptions<'a> {
    /// Read by region (samtools loads an index for any `-r`).
    pub by_region: bool,
    /// The index of each input (`-X`), else the one beside it.
    pub indexes: Option<&'a [PathBuf]>,
    pub cram: &'a CramOptions,
    /// How a bgzipped SAM read by region reads positions past 2^31.
    pub sam_positions: Positions,
    /// The job's name, in the refusal of inputs of other references.
    pub job: &'a str,
}

/// The inputs opened: all by region (`files`) or all whole (`opened`).
pub(crate) struct Inputs {
    pub files: Vec<IndexedFile>,
    pub opened: Vec<Input>,
}

impl Inputs {
    /// The header of input `i`.
    pub fn header(&self, i: usize) -> &Header {
        self.files.get(i).map_or_else(|| self.opened[i].header(), IndexedFile::header)
    }
}

/// Opens `paths` as `options` say. A whole CRAM is decoded on htslib's
/// threads (it is read in one pass, as samtools reads it with `-@`).
pub(crate) fn open_inputs(paths: &[PathBuf], options: &InputsOptions<'_>, report: &dyn Report) -> Result<Inputs, Error> {
    let mut inputs = Inputs { files: Vec::with_capacity(paths.len()), opened: Vec::with_capacity(paths.len()) };
    for (i, path) in paths.iter().enumerate() {
        if options.by_region {
            let index = options.indexes.map(|named| named[i].clone());
            let open = IndexedOptions { index, cram: options.cram.clone(), sam_positions: options.sam_positions, ..Default::default() };
            let file = IndexedFile::open(path, &open, report)?;
            // samtools warns of a BAM's or CRAM's missing marker as it opens them.
            if (file.bam().is_some() || file.is_cram()) && file.missing_eof_marker()? {
                report.warning(Warning::MissingEofMarker { path: file.path().to_path_buf() });
            }
            inputs.files.push(file);
        } else {
            let threads = rayon::current_num_threads();
            let input = input::open_with(path, &CramOptions { threads, ..options.cram.clone() })?;
            match &input {
                Input::Bam(bam) => warn_if_truncated(bam, report),
                Input::Cram(cram) => warn_if_cram_truncated(cram, report),
                _ => {}
            }
            inputs.opened.push(input);
        }
    }
    let refs = &inputs.header(0).references;
    for (i, path) in paths.iter().enumerate().skip(1) {
        let other = &inputs.header(i).references;
        if other.len() != refs.len() || other.iter().zip(refs).any(|(a, b)| a.name != b.name) {
            return Err(Error::InvalidArgument(format!(
                "its references differ from those of {} ({} needs inputs of one reference)",
                paths[0].display(),
                options.job
            ))
            .with_path(path));
        }
    }
    Ok(inputs)
}
