//! The files an index describes: a BAM, or a bgzipped SAM.

use crate::bam::BamFile;
use crate::bgzf::VirtualOffset;
use crate::Error;
use std::ops::ControlFlow;
use std::path::Path;

/// A file read through a BAI or CSI index: a BAM, or a bgzipped SAM
/// ([`crate::region::sam::SamGzFile`]). Where a region starts and what follows it are
/// decided from the index the same way for both.
pub trait Indexed {
    /// The path the file was opened from (errors name it).
    fn path(&self) -> &Path;
    /// The header (references in the order the index numbers them).
    fn header(&self) -> &crate::bam::Header;
    /// The whole compressed file.
    fn bytes(&self) -> &[u8];
    /// Virtual offset of the first record.
    fn first_record_offset(&self) -> VirtualOffset;
    /// The first record at or after `from` (a record start) that has a
    /// reference: its virtual offset and reference id; `None` when only
    /// records without one (unmapped, unplaced) follow, to the end of the
    /// file. Read from the file, not the index (see
    /// [`check_placed_coverage`](super::check_placed_coverage)).
    fn first_placed_from(&self, from: VirtualOffset) -> Result<Option<(VirtualOffset, i32)>, Error>;
}

impl<T: Indexed + ?Sized> Indexed for &T {
    fn path(&self) -> &Path {
        (**self).path()
    }
    fn header(&self) -> &crate::bam::Header {
        (**self).header()
    }
    fn bytes(&self) -> &[u8] {
        (**self).bytes()
    }
    fn first_record_offset(&self) -> VirtualOffset {
        (**self).first_record_offset()
    }
    fn first_placed_from(&self, from: VirtualOffset) -> Result<Option<(VirtualOffset, i32)>, Error> {
        (**self).first_placed_from(from)
    }
}

impl Indexed for BamFile {
    fn path(&self) -> &Path {
        BamFile::path(self)
    }
    fn header(&self) -> &crate::bam::Header {
        BamFile::header(self)
    }
    fn bytes(&self) -> &[u8] {
        BamFile::bytes(self)
    }
    fn first_record_offset(&self) -> VirtualOffset {
        BamFile::first_record_offset(self)
    }
    fn first_placed_from(&self, from: VirtualOffset) -> Result<Option<(VirtualOffset, i32)>, Error> {
        let mut records = self.records_from(from)?;
        let flow = records
            .walk(|r| if r.ref_id() >= 0 { ControlFlow::Break(r.ref_id()) } else { ControlFlow::Continue(()) })
            .map_err(|e| Error::from(e).with_path(self.path()))?;
        Ok(match flow {
            ControlFlow::Break(ref_id) => Some((records.record_start(), ref_id)),
            ControlFlow::Continue(()) => None,
        })
    }
}
