//! BGZF block reader: whole-buffer inflate, and the streaming reader from a
//! virtual offset taken from the input's last 8 bytes, in small batches.
#![no_main]

use fasthts::bgzf::{decompress_all, has_eof_marker, Block, BlockReader, VirtualOffset};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = has_eof_marker(data);
    let whole = decompress_all(data);
    let _ = Block::parse(data, 0);
    let start = match data.len().checked_sub(8) {
        Some(at) => VirtualOffset::from(u64::from_le_bytes(data[at..].try_into().unwrap())),
        None => VirtualOffset::default(),
    };
    for (start, batch) in [(VirtualOffset::default(), 1), (start, 3000)] {
        let Ok(mut reader) = BlockReader::with_batch_bytes(data, start, batch) else { continue };
        let mut read = 0usize;
        loop {
            match reader.fill(5000) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let take = n.min(5000);
                    let _ = reader.virtual_offset_at(take / 2);
                    reader.consume(take);
                    read += take;
                }
            }
        }
        // Reading from the start must agree with the whole-buffer inflate.
        if start == VirtualOffset::default() && batch == 1 {
            if let Ok(all) = &whole {
                assert_eq!(read, all.len());
            }
        }
    }
});
