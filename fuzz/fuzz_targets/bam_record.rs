//! BAM record decoder: `RecordRef::new` on arbitrary bytes (the first byte
//! is the header's reference count), then every accessor of an accepted
//! record.
#![no_main]

#[path = "common.rs"]
mod common;

use fasthts::bam::RecordRef;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n_ref, rest)) = data.split_first() else { return };
    if let Ok(r) = RecordRef::new(rest, usize::from(n_ref)) {
        common::exercise_record(&r, None);
    }
});
