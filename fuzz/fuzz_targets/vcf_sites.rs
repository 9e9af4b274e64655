//! VCF site reader (snp-pileup's `Sites::parse`).
#![no_main]

use fasthts::pileup::vcf::Sites;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(sites) = Sites::parse(data) {
        for s in &sites.sites {
            assert!((s.contig as usize) < sites.contigs.len());
            assert!(s.pos >= -1);
        }
        assert!(sites.sites.len() as u64 <= sites.n_records);
    }
});
