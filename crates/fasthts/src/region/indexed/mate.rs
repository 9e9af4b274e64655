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
///
/// In file order that query gives the records overlapping its first base
/// (they start at or before it), then those starting after it: read so,
/// the second part in windows growing from 64 kb, each fetched before it
/// is read when the file is remote ([`IndexedFile::with_queries_fetched`]),
/// so that a mate found near its position costs a range, not the rest of
/// the reference.
pub fn pysam_mate(file: Arc<IndexedFile>, name: &[u8], flag: u16, mate_tid: i32, mate_pos: i64) -> Result<Option<Vec<u8>>, Error> {
    let pair = flags::READ1 | flags::READ2;
    let want = (flag ^ pair) & pair;
    let first = mate_pos + 1;
    let mut query = (Region { ref_id: mate_tid, start: first, end: first + 1 }, Rule::Overlap);
    let mut width = 1i64 << 16;
    let mut file = file;
    loop {
        // A remote file shared with others is fetched into a copy, which
        // the next windows reuse (no cursor holds it between them).
        file = IndexedFile::with_queries_fetched(file, &[query])?;
        let mut cursor = Cursor::new(Arc::clone(&file), [query]);
        let mut found: Option<Vec<u8>> = None;
        loop {
            let n = cursor.fill(64, &mut |r: &RecordRef<'_>| {
                if found.is_none() && r.flag() & want != 0 && r.name() == name {
                    found = Some(r.as_bytes().to_vec());
                }
            })?;
            if found.is_some() {
                return Ok(found);
            }
            if n == 0 {
                break;
            }
        }
        drop(cursor);
        let start = query.0.end;
        if start >= PYSAM_MAX_POS {
            return Ok(None);
        }
        let end = start.saturating_add(width).min(PYSAM_MAX_POS);
        query = (Region { ref_id: mate_tid, start, end }, Rule::StartsIn);
        width = width.saturating_mul(2);
    }
}
