//! pysam's `AlignmentFile.mate(read)` lookup: its index query and its test.

use super::{Cursor, IndexedFile, Rule};
use crate::bam::{flags, RecordRef};
use crate::region::Region;
use crate::Error;
use std::sync::Arc;

/// The end pysam gives a query without a stop (its `MAX_POS`, 2^31 - 1).
const PYSAM_MAX_POS: i64 = (1 << 31) - 1;

/// The record pysam 0.24's `mate()` returns for a read named `name` with
/// flag `flag` whose mate is at `(mate_tid, mate_pos)`, or `None` ("mate
/// not found"). pysam queries the records overlapping `[mate_pos + 1,
/// 2^31 - 1)` of the mate's reference (its `fetch(mpos, mpos + 1,
/// tid=mtid)` reads `mpos` as the contig and `mpos + 1` as the start) and
/// takes the first with that name and the other one of READ1 / READ2 set.
/// The caller checks that the read is paired, its mate mapped and the
/// reference valid (pysam's errors).
pub fn pysam_mate(file: Arc<IndexedFile>, name: &[u8], flag: u16, mate_tid: i32, mate_pos: i64) -> Result<Option<Vec<u8>>, Error> {
    let pair = flags::READ1 | flags::READ2;
    let want = (flag ^ pair) & pair;
    let region = Region { ref_id: mate_tid, start: mate_pos + 1, end: PYSAM_MAX_POS };
    let mut cursor = Cursor::new(file, [(region, Rule::Overlap)]);
    let mut found: Option<Vec<u8>> = None;
    loop {
        let n = cursor.fill(64, &mut |r: &RecordRef<'_>| {
            if found.is_none() && r.flag() & want != 0 && r.name() == name {
                found = Some(r.as_bytes().to_vec());
            }
        })?;
        if found.is_some() || n == 0 {
            return Ok(found);
        }
    }
}
