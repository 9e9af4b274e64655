//! `BamFile` on a CRAM file: what is read without an index, decoded by
//! htslib (`fasthts::cram`): its plan of regions and its whole-file
//! columns, cut at container boundaries read from the containers' headers,
//! so they run on all threads with or without a `.crai`. Regions are read
//! through the file's index as a BAM's are (`crate::regions`).

use crate::columns::Columns;
use fasthts::bam::Header;
use fasthts::command::{Report, Warning};
use fasthts::cram::{self, Container, CramOptions, CramReader, Fields};
use fasthts::region::{Plan, Region as LibRegion};
use fasthts::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A CRAM file opened by `BamFile`.
pub(crate) struct CramFile {
    path: PathBuf,
    /// The FASTA given (`reference=`); None: as htslib finds it.
    reference: Option<PathBuf>,
    header: Header,
    missing_eof: bool,
    /// The containers, listed on first use.
    containers: Mutex<Option<Arc<Vec<Container>>>>,
}

impl CramFile {
    /// Opens the CRAM file at `path` and reads its header.
    pub(crate) fn open(path: &Path, reference: Option<PathBuf>) -> Result<CramFile, Error> {
        let options = CramOptions { reference: reference.clone(), ..CramOptions::default() };
        let reader = CramReader::open(path, &options)?;
        Ok(CramFile {
            path: path.to_path_buf(),
            reference,
            header: reader.header().clone(),
            missing_eof: reader.missing_eof_container(),
            containers: Mutex::new(None),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// As for a BAM: a file without CRAM's EOF container is warned about.
    pub(crate) fn warn_if_truncated(&self, report: &dyn Report) {
        if self.missing_eof {
            report.warning(Warning::MissingEofMarker { path: self.path.clone() });
        }
    }

    fn options(&self, fields: Fields) -> CramOptions {
        CramOptions { reference: self.reference.clone(), fields, threads: 0 }
    }

    fn containers(&self) -> Result<Arc<Vec<Container>>, Error> {
        let mut slot = self.containers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let file = std::fs::File::open(&self.path).map_err(|e| Error::from(e).with_path(&self.path))?;
        let list = Arc::new(cram::containers(&file).map_err(|e| Error::from(e).with_path(&self.path))?);
        *slot = Some(list.clone());
        Ok(list)
    }

    /// Regions tiling every reference with records, then the unplaced
    /// records, as `BamFile.plan` on a BAM: cut where a container of about
    /// `Plan::BalancedBytes` bytes begins, or every `Plan::Windows` bases.
    /// Container headers do not say which references a multi-reference
    /// container holds: a file with one plans every reference, those
    /// without containers of their own as one region each.
    pub(crate) fn plan(&self, plan: Plan) -> Result<Vec<LibRegion>, Error> {
        let list = self.containers()?;
        let multi = list.iter().any(|c| c.ref_id == -2);
        let mut regions = Vec::new();
        for (tid, reference) in self.header.references.iter().enumerate() {
            let own: Vec<&Container> = list.iter().filter(|c| c.ref_id == tid as i32).collect();
            if own.is_empty() && !multi {
                continue;
            }
            let mut cuts: Vec<i64> = Vec::new();
            match plan {
                Plan::Windows(width) => {
                    let width = width.clamp(1, i64::MAX as u64) as i64;
                    cuts.extend((1..).map(|i| i * width).take_while(|&p| p < i64::from(reference.len)));
                }
                Plan::BalancedBytes(target) => {
                    let mut bytes = 0;
                    for c in &own {
                        // A container's start (1-based) is its first record's position.
                        let at = c.start - 1;
                        if bytes >= target && at > cuts.last().copied().unwrap_or(0) {
                            cuts.push(at);
                            bytes = 0;
                        }
                        bytes += c.size;
                    }
                }
            }
            let mut start = i64::MIN;
            for c in cuts {
                regions.push(LibRegion { ref_id: tid as i32, start, end: c });
                start = c;
            }
            regions.push(LibRegion { ref_id: tid as i32, start, end: i64::MAX });
        }
        regions.push(LibRegion::unplaced());
        Ok(regions)
    }

    /// Every record's columns, in file order, read in runs of containers
    /// on the current pool (no index needed).
    pub(crate) fn whole_file_columns(&self) -> Result<Columns, Error> {
        let parts = cram::scatter(&self.path, &self.options(Fields::Columns), fasthts::command::REGION_BYTES, |part| {
            let mut c = Columns::with_capacity(0);
            part.for_each_record(|r| c.push(r))?;
            Ok(c)
        })?;
        Ok(Columns::concat(parts))
    }
}
