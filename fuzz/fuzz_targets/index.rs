//! BAI/CSI reader: `Index::from_bytes`, then the queries the region planner
//! and idxstats run on an accepted index, and a write/read round trip.
#![no_main]

use fasthts::index::Index;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(index) = Index::from_bytes(data) else { return };
    let n = index.references().len();
    for tid in 0..n.min(64) {
        for (beg, end) in [(0i64, 1i64), (0, 1 << 20), (1 << 14, 1 << 29), (0, i64::from(i32::MAX)), (5, 3)] {
            let _ = index.query(tid, beg, end);
        }
        let _ = index.start_offset(tid, 0);
        let _ = index.start_offset(tid, 1 << 28);
        let _ = index.reference_span(tid);
        let _ = index.checkpoints(tid);
        let _ = index.mapped_unmapped(tid);
    }
    let _ = index.query(n, 0, 1);
    let _ = index.unplaced_start();
    let refs: Vec<(String, u64)> = (0..n.min(64)).map(|i| (format!("r{i}"), 1000)).collect();
    let _ = fasthts::index::idxstats(&index, &refs);
    let again = Index::from_bytes(&index.to_bytes()).expect("an index we wrote must read back");
    assert_eq!(again, index);
});
