//! What a Python iterator over records reads, batch by batch: region
//! queries of a file read through its index (`fasthts::region::indexed::
//! Cursor`), or a whole file from its first record
//! (`fasthts::whole_file::WholeFileCursor`). Both own what they read, so
//! a batch may be read on any thread (with the GIL released, or ahead of
//! the iterator on threads of its own).

use fasthts::bam::RecordRef;
use fasthts::region::indexed::Cursor;
use fasthts::whole_file::WholeFileCursor;
use std::collections::VecDeque;

/// Records read per GIL release.
pub(crate) const BATCH: usize = 4096;

/// The records an iterator reads.
pub(crate) enum Source {
    /// Region queries of a file read through its index, one after another.
    Indexed(Cursor),
    /// A whole file from its first record.
    Whole(WholeFileCursor),
}

/// Whether records may follow a fill of `batch_len` records (a fill reads
/// `BATCH` records unless its source ends).
pub(crate) fn may_continue(batch_len: usize) -> bool {
    batch_len >= BATCH
}

/// Records copied out of a source, one after another in `arena`.
#[derive(Default)]
pub(crate) struct Batch {
    arena: Vec<u8>,
    /// End of each record in `arena`.
    ends: Vec<usize>,
    /// Records already handed out.
    pub(crate) taken: usize,
}

impl Batch {
    pub(crate) fn clear(&mut self) {
        self.arena.clear();
        self.ends.clear();
        self.taken = 0;
    }

    fn push(&mut self, r: &RecordRef<'_>) {
        self.arena.extend_from_slice(r.as_bytes());
        self.ends.push(self.arena.len());
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The next record's bytes.
    pub(crate) fn take(&mut self) -> Option<&[u8]> {
        let i = self.taken;
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.taken += 1;
        Some(&self.arena[start..end])
    }
}

/// Refills `batch` from `source` (empty at the end); the text of each SAM
/// record warning met is added to `warnings`.
pub(crate) fn fill(source: &mut Source, batch: &mut Batch, warnings: &mut Vec<String>) -> Result<(), fasthts::Error> {
    batch.clear();
    read(source, &mut |r| batch.push(r), warnings)
}

/// The next records of `source` (none at its end), each its own buffer;
/// SAM record warnings met are added to `warnings`.
pub(crate) fn next_records(source: &mut Source, warnings: &mut Vec<String>) -> Result<VecDeque<Vec<u8>>, fasthts::Error> {
    let mut out = VecDeque::with_capacity(BATCH);
    read(source, &mut |r| out.push_back(r.as_bytes().to_vec()), warnings)?;
    Ok(out)
}

/// Calls `f` on the next `BATCH` records of `source` (fewer at its end).
fn read(source: &mut Source, f: &mut dyn FnMut(&RecordRef<'_>), warnings: &mut Vec<String>) -> Result<(), fasthts::Error> {
    match source {
        Source::Indexed(cursor) => {
            cursor.fill(BATCH, f)?;
        }
        Source::Whole(cursor) => {
            let read = cursor.fill(BATCH, f);
            warnings.extend(cursor.take_warnings().iter().map(ToString::to_string));
            read?;
        }
    }
    Ok(())
}
