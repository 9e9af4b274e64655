//! BAM header parser and record stream: the input is an uncompressed BAM
//! stream (magic, header, records), wrapped in BGZF blocks, read as
//! `BamFile` does; records are decoded, exercised and fed to the index
//! builder.
#![no_main]

#[path = "common.rs"]
mod common;

use fasthts::bam::{Header, RecordReader};
use fasthts::bgzf::{compress_all, BlockReader, VirtualOffset};
use fasthts::index::{IndexBuilder, IndexFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Level 0 (stored blocks): the fuzzer's mutations go straight to the
    // BAM bytes and the wrapping costs little.
    let bgzf = compress_all(data, 0);
    let Ok(mut blocks) = BlockReader::with_batch_bytes(&bgzf, VirtualOffset::default(), 1) else { return };
    let Ok(header) = Header::read(&mut blocks) else { return };
    let _ = header.to_bytes();
    let n_ref = header.references.len();
    let first = blocks.virtual_offset();
    let formats = [IndexFormat::Bai, IndexFormat::Csi { min_shift: 14, depth: 6 }];
    let mut builders: Vec<Option<IndexBuilder>> = formats.iter().map(|&f| Some(IndexBuilder::new(f, n_ref, first))).collect();
    let mut records = RecordReader::new(blocks, n_ref);
    let mut previous: Option<Vec<u8>> = None;
    let mut n = 0;
    while let Ok(true) = records.advance() {
        let end = records.record_end();
        let r = records.current();
        let prev = previous.as_deref().and_then(|p| fasthts::bam::RecordRef::new(p, n_ref).ok());
        common::exercise_record(&r, prev.as_ref());
        for b in builders.iter_mut() {
            if let Some(builder) = b {
                let mapped = r.flag() & fasthts::bam::flags::UNMAPPED == 0;
                if builder.push(r.ref_id(), i64::from(r.pos()), r.end_pos(), end, mapped).is_err() {
                    *b = None;
                }
            }
        }
        previous = Some(r.as_bytes().to_vec());
        n += 1;
        if n > 10_000 {
            break;
        }
    }
    let end = records.record_end();
    for b in builders.into_iter().flatten() {
        if let Ok(index) = b.finish(end) {
            let _ = index.to_bytes();
        }
    }
});
