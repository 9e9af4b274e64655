//! The synthetic genome the reads are "sequenced" from.
//!
//! Layout of the header, in order:
//! - `chr1..chrN` (`--refs N`), lengths around `--ref-len`, decreasing like a
//!   human karyotype with some jitter. Every fourth of them (`chr3`, `chr7`,
//!   ...) never receives reads, so consumers see empty references between
//!   populated ones.
//! - `chrM` (16,569 bp, high depth as mitochondria are in real data),
//! - `chrUn_gen1`, `chrUn_gen2`: small unplaced contigs that never receive reads,
//! - `chrLong` with `--long-ref`: longer than 2^29, bases derived lazily from a
//!   hash of the position so that 600 Mbp cost no memory.
//!
//! Materialised references contain tandem repeats and copied segments. The
//! copies are recorded so that reads falling inside one can be reported with
//! MAPQ 0 and a secondary alignment at the other copy.

use crate::rng::{splitmix64, Rng};

pub const BASES: [u8; 4] = *b"ACGT";

/// One region that was copied elsewhere (or is such a copy): reads inside
/// `[start, start+len)` also align to `partner_tid:partner_pos + offset`,
/// provided the bases still agree (later copies may overwrite earlier ones,
/// so the generator re-checks the sequence before trusting this).
#[derive(Clone, Copy, Debug)]
pub struct RepeatIv {
    pub start: u32,
    pub len: u32,
    pub partner_tid: u32,
    pub partner_pos: u32,
}

pub struct RefSeq {
    pub name: String,
    pub len: u32,
    /// `None` for the lazily generated long reference.
    pub bases: Option<Vec<u8>>,
    pub lazy_seed: u64,
    /// Whether reads may be placed here. Empty references stay empty for all
    /// kinds of records (mates, supplementary and secondary alignments too).
    pub populated: bool,
    /// Relative share of the placed templates.
    pub weight: u64,
    /// Sorted by `start`.
    pub repeats: Vec<RepeatIv>,
}

pub struct Genome {
    pub refs: Vec<RefSeq>,
    /// The largest `len` among repeat intervals, to bound the backward scan
    /// in [`Genome::repeat_partner`].
    max_repeat_len: u32,
}

/// Length of the lazily generated long reference (> 2^29 = 536,870,912, so
/// BAI cannot index it and CSI is needed).
pub const DEFAULT_LONG_REF_LEN: u32 = 600_000_000;

impl Genome {
    pub fn build(seed: u64, n_refs: u32, ref_len: u32, long_ref_len: Option<u32>) -> Genome {
        let mut rng = Rng::derive(seed, 0x6E0E);
        let mut refs = Vec::new();
        for i in 0..n_refs {
            // Decrease from 1.5x to ~0.5x of ref_len across the karyotype, with
            // +-10% jitter, so lengths are varied but reproducible.
            let frac_num = 150 - (100 * i as u64) / n_refs.max(1) as u64; // percent
            let jitter = rng.range(90, 110);
            let len =
                ((ref_len as u64 * frac_num * jitter) / 10_000).clamp(1, i32::MAX as u64) as u32;
            refs.push(RefSeq {
                name: format!("chr{}", i + 1),
                len,
                bases: None,
                lazy_seed: 0,
                populated: i % 4 != 2,
                weight: len as u64,
                repeats: Vec::new(),
            });
        }
        refs.push(RefSeq {
            name: "chrM".into(),
            len: 16_569,
            bases: None,
            lazy_seed: 0,
            populated: true,
            // Mitochondria are present in many copies per cell: ~20x the depth.
            weight: 16_569 * 20,
            repeats: Vec::new(),
        });
        for k in 1..=2u32 {
            refs.push(RefSeq {
                name: format!("chrUn_gen{k}"),
                len: 2_000 + 1_000 * k,
                bases: None,
                lazy_seed: 0,
                populated: false,
                weight: 0,
                repeats: Vec::new(),
            });
        }

        // Random bases, then tandem repeats (low-complexity runs).
        for r in refs.iter_mut() {
            let mut b = vec![0u8; r.len as usize];
            fill_random(&mut rng, &mut b);
            add_tandem_repeats(&mut rng, &mut b);
            r.bases = Some(b);
        }

        // Copied segments between/within populated references. Copies only
        // involve populated references so empty ones stay truly empty.
        let populated: Vec<usize> = (0..refs.len()).filter(|&i| refs[i].populated).collect();
        let mut max_repeat_len = 0;
        if !populated.is_empty() {
            let total: u64 = populated.iter().map(|&i| refs[i].len as u64).sum();
            // About one copy event per 60 kb: roughly 5-10% of the genome ends
            // up in a two-copy repeat, so a few percent of reads are ambiguous.
            let n_copies = total / 60_000;
            for _ in 0..n_copies {
                let src_t = populated[rng.below(populated.len() as u64) as usize];
                let dst_t = populated[rng.below(populated.len() as u64) as usize];
                let len = rng.range(400, 6_000) as u32;
                let (sl, dl) = (refs[src_t].len, refs[dst_t].len);
                if sl <= len + 1 || dl <= len + 1 {
                    continue;
                }
                let sp = rng.below((sl - len) as u64) as u32;
                let dp = rng.below((dl - len) as u64) as u32;
                if src_t == dst_t && sp.abs_diff(dp) < len {
                    continue; // overlapping self-copy: not a clean two-copy repeat
                }
                let seg: Vec<u8> =
                    refs[src_t].bases.as_ref().unwrap()[sp as usize..(sp + len) as usize].to_vec();
                refs[dst_t].bases.as_mut().unwrap()[dp as usize..(dp + len) as usize]
                    .copy_from_slice(&seg);
                refs[src_t].repeats.push(RepeatIv {
                    start: sp,
                    len,
                    partner_tid: dst_t as u32,
                    partner_pos: dp,
                });
                refs[dst_t].repeats.push(RepeatIv {
                    start: dp,
                    len,
                    partner_tid: src_t as u32,
                    partner_pos: sp,
                });
                max_repeat_len = max_repeat_len.max(len);
            }
        }
        for r in refs.iter_mut() {
            r.repeats
                .sort_by_key(|iv| (iv.start, iv.partner_tid, iv.partner_pos));
        }

        if let Some(len) = long_ref_len {
            refs.push(RefSeq {
                name: "chrLong".into(),
                len,
                bases: None,
                lazy_seed: splitmix64(seed ^ 0x10_4C_0A_6E),
                populated: true,
                weight: 0, // gets a fixed share of templates; see plan_anchors
                repeats: Vec::new(),
            });
        }
        Genome {
            refs,
            max_repeat_len,
        }
    }

    /// Reference bases `[pos, pos+len)` of `tid`. Borrowed for materialised
    /// references; computed into `scratch` for the lazy one.
    pub fn window<'a>(
        &'a self,
        tid: usize,
        pos: u32,
        len: u32,
        scratch: &'a mut Vec<u8>,
    ) -> &'a [u8] {
        let r = &self.refs[tid];
        debug_assert!(
            pos as u64 + len as u64 <= r.len as u64,
            "window past end of {}",
            r.name
        );
        match &r.bases {
            Some(b) => &b[pos as usize..(pos + len) as usize],
            None => {
                scratch.clear();
                scratch.extend((pos..pos + len).map(|i| lazy_base(r.lazy_seed, i)));
                &scratch[..]
            }
        }
    }

    /// Writes every reference as FASTA, 60 bases a line (the lazy one
    /// computed a line at a time).
    pub fn write_fasta<W: std::io::Write>(&self, mut out: W) -> std::io::Result<()> {
        const LINE: u32 = 60;
        let mut scratch = Vec::with_capacity(LINE as usize);
        for (tid, r) in self.refs.iter().enumerate() {
            writeln!(out, ">{}", r.name)?;
            let mut pos = 0;
            while pos < r.len {
                let n = LINE.min(r.len - pos);
                out.write_all(self.window(tid, pos, n, &mut scratch))?;
                out.write_all(b"\n")?;
                pos += n;
            }
        }
        out.flush()
    }

    /// If `[pos, pos+len)` of `tid` lies inside a copied segment whose other
    /// copy still has identical bases, return the other copy's (tid, pos).
    pub fn repeat_partner(&self, tid: usize, pos: u32, len: u32) -> Option<(u32, u32)> {
        let r = &self.refs[tid];
        let bases = r.bases.as_ref()?;
        // Intervals are sorted by start; candidates start in
        // [pos - max_repeat_len, pos]. Scan backwards from the last start <= pos.
        let idx = r.repeats.partition_point(|iv| iv.start <= pos);
        for iv in r.repeats[..idx].iter().rev() {
            if iv.start + self.max_repeat_len < pos {
                break;
            }
            if pos + len <= iv.start + iv.len {
                let off = pos - iv.start;
                let pt = iv.partner_tid as usize;
                let pp = iv.partner_pos + off;
                let pb = self.refs[pt].bases.as_ref()?;
                let a = &bases[pos as usize..(pos + len) as usize];
                let b = &pb[pp as usize..(pp + len) as usize];
                if a == b {
                    return Some((iv.partner_tid, pp));
                }
            }
        }
        None
    }
}

/// Base of the lazily generated reference at `pos`: 2 bits of a hash of the
/// 32-base block, so any window can be produced without storing anything.
#[inline]
pub fn lazy_base(seed: u64, pos: u32) -> u8 {
    let h = splitmix64(seed ^ (pos as u64 >> 5));
    BASES[((h >> (2 * (pos & 31))) & 3) as usize]
}

fn fill_random(rng: &mut Rng, b: &mut [u8]) {
    // 32 bases per 64-bit draw.
    for chunk in b.chunks_mut(32) {
        let mut x = rng.next_u64();
        for c in chunk {
            *c = BASES[(x & 3) as usize];
            x >>= 2;
        }
    }
}

fn add_tandem_repeats(rng: &mut Rng, b: &mut [u8]) {
    // About one microsatellite / short tandem repeat per 20 kb.
    let n = b.len() / 20_000;
    for _ in 0..n {
        let unit_len = rng.range(1, 6) as usize;
        let copies = rng.range(5, 60) as usize;
        let total = unit_len * copies;
        if total + 1 >= b.len() {
            continue;
        }
        let start = rng.below((b.len() - total) as u64) as usize;
        let mut unit = [0u8; 6];
        for u in unit.iter_mut().take(unit_len) {
            *u = BASES[rng.below(4) as usize];
        }
        for i in 0..total {
            b[start + i] = unit[i % unit_len];
        }
    }
}

/// Complement of an uppercase IUPAC-free base (N stays N).
#[inline]
pub fn complement(b: u8) -> u8 {
    match b {
        b'A' => b'T',
        b'C' => b'G',
        b'G' => b'C',
        b'T' => b'A',
        _ => b'N',
    }
}

pub fn reverse_complement_into(src: &[u8], dst: &mut Vec<u8>) {
    dst.clear();
    dst.extend(src.iter().rev().map(|&b| complement(b)));
}
