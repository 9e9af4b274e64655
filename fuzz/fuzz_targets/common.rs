//! Shared by the BAM targets: touch every accessor of a validated record,
//! so a record that `RecordRef::new` accepts can never make a reader go out
//! of bounds, overflow or loop.
#![allow(dead_code)]

use fasthts::bam::RecordRef;
use fasthts::flagstat::FlagStat;
use fasthts::sort::SortOrder;

pub fn exercise_record(r: &RecordRef<'_>, previous: Option<&RecordRef<'_>>) -> u64 {
    let mut acc = 0u64;
    acc ^= r.ref_id() as u64 ^ r.pos() as u64 ^ u64::from(r.mapq()) ^ u64::from(r.bin()) ^ u64::from(r.flag());
    acc ^= r.mate_ref_id() as u64 ^ r.mate_pos() as u64 ^ r.template_len() as u64;
    acc ^= r.name().len() as u64;
    for cigar in [r.raw_cigar(), r.cigar()] {
        acc ^= cigar.len() as u64 ^ cigar.reference_len() as u64 ^ cigar.query_len() as u64;
        for (op, n) in cigar.iter() {
            acc ^= u64::from(op.letter()) ^ u64::from(n) ^ u64::from(op.consumes_query());
        }
        acc ^= cigar.to_string().len() as u64;
    }
    for i in 0..r.seq_len() {
        acc ^= u64::from(r.base(i));
    }
    acc ^= r.seq_raw().len() as u64 ^ r.qual().len() as u64;
    for field in r.aux().iter() {
        match field {
            Ok((tag, _value)) => acc ^= u64::from(tag[0]),
            Err(_) => break,
        }
    }
    acc ^= r.end_pos() as u64;
    let mut stats = FlagStat::default();
    stats.add(r);
    for order in [SortOrder::Coordinate, SortOrder::QueryName, SortOrder::Tag { tag: *b"RG", then_by_name: false }] {
        acc ^= order.key(r) as u64;
        if let Some(p) = previous {
            acc ^= order.compare(p, r) as u64;
        }
    }
    std::hint::black_box(acc)
}
