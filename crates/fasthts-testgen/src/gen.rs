//! Template (read pair / single read) generation and SAM formatting.

use std::io::{self, Write};

use crate::aln::{
    choose_events, long_cigar_span, push_i64, push_num, push_u64, walk, walk_long_cigar, Aln, Clip,
    ErrorModel, Event, Kind, WalkSpec, OP_H, OP_S,
};
use crate::emit::{Emitter, SortKey};
use crate::genome::{reverse_complement_into, Genome, BASES};
use crate::rng::{splitmix64, Prob, Rng};

/// Everything that shapes the records (not the genome). See the CLI help
/// for the meaning of each field.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    pub read_len: (u32, u32),
    pub long_cigar_fraction: f64,
    pub huge_record_fraction: f64,
    pub unsorted: bool,
    pub no_mapped: bool,
    pub unmapped_fraction: f64,
    pub dup_fraction: f64,
    pub qcfail_fraction: f64,
    pub chimeric_fraction: f64,
    pub interchrom_fraction: f64,
    pub singleton_fraction: f64,
    pub single_end_fraction: f64,
    pub tag_fraction: f64,
    pub mismatch_rate: f64,
    /// Seed of the genome and of the sample's SNPs (`seed` unless a second
    /// sample of the same individual is wanted).
    pub genome_seed: u64,
    /// The `@PG CL:` text (canonical option string, not argv, so the output
    /// file name does not leak into the bytes).
    pub command_line: String,
}

/// The seed of [`crate::aln::ErrorModel::snp_alt`] for a genome seed:
/// every sample of one genome seed has the same SNPs.
pub fn sample_snp_seed(genome_seed: u64) -> u64 {
    splitmix64(genome_seed ^ 0x5A_4D_50)
}

/// Read groups written to the header. The last one holds long reads (the
/// long-CIGAR and huge records), `rg4` holds single-end short reads.
const READ_GROUPS: [(&str, &str, &str, &str, QualProfile); 5] = [
    (
        "rg1",
        "ILLUMINA",
        "lib1",
        "HFAKEDSXX.1",
        QualProfile::Binned,
    ),
    (
        "rg2",
        "ILLUMINA",
        "lib1",
        "HFAKEDSXX.2",
        QualProfile::FullRange,
    ),
    (
        "rg3",
        "ILLUMINA",
        "lib2",
        "HFAKEDSXX.3",
        QualProfile::Binned,
    ),
    (
        "rg4",
        "ILLUMINA",
        "lib3se",
        "HFAKEBBXX.1",
        QualProfile::FullRange,
    ),
    ("ont1", "ONT", "lib4ont", "PAK00001", QualProfile::LongRead),
];
const RG_SE: usize = 3;
const RG_LONG: usize = 4;

#[derive(Clone, Copy, Debug)]
enum QualProfile {
    /// NovaSeq-style 4-level binned qualities (F : , #).
    Binned,
    /// HiSeq-style full range declining along the read.
    FullRange,
    /// Low, noisy qualities of long reads.
    LongRead,
}

/// Geometry of the last proper pair, reused to make PCR/optical duplicates.
#[derive(Clone, Copy, Debug)]
struct PairGeom {
    tid: u32,
    left_pos: u32,
    right_pos: u32,
    left_len: u32,
    right_len: u32,
    left_read: u8,
    rg: usize,
}

/// How a read end should be clipped (owned version of [`Clip`]; the bases of
/// a `SoftGiven` clip come from `Gen::clipbuf`).
#[derive(Clone, Copy, Debug)]
enum ClipPlan {
    None,
    SoftRandom(u32),
    SoftGiven(u32),
    Hard(u32),
}

const NONE: usize = usize::MAX;

pub struct Gen<'g> {
    cfg: &'g Config,
    g: &'g Genome,
    rng: Rng,
    em: ErrorModel,
    /// Record pool: `pool[..n]` are the current template's records.
    pool: Vec<Aln>,
    n: usize,
    /// Pool index of the primary record of read 1 / read 2 (or the single read).
    prim: [usize; 2],
    paired: bool,
    proper: bool,
    qcfail: bool,
    dup: bool,
    rg: usize,
    name: Vec<u8>,
    events: Vec<(u32, Event)>,
    scratch: Vec<u8>,
    clipbuf: Vec<u8>,
    populated: Vec<u32>,
    last_pair: Option<PairGeom>,
    pub templates: u64,
    p_dup: Prob,
    p_qcfail: Prob,
    p_tag: Prob,
}

impl<'g> Gen<'g> {
    pub fn new(cfg: &'g Config, g: &'g Genome) -> Self {
        let populated = (0..g.refs.len() as u32)
            .filter(|&t| g.refs[t as usize].populated)
            .collect();
        Gen {
            cfg,
            g,
            rng: Rng::derive(cfg.seed, 0x4EAD),
            em: ErrorModel {
                mismatch: Prob::new(cfg.mismatch_rate),
                n_base: Prob::new(0.0005),
                snp_seed: sample_snp_seed(cfg.genome_seed),
            },
            pool: Vec::new(),
            n: 0,
            prim: [NONE; 2],
            paired: false,
            proper: false,
            qcfail: false,
            dup: false,
            rg: 0,
            name: Vec::new(),
            events: Vec::new(),
            scratch: Vec::new(),
            clipbuf: Vec::new(),
            populated,
            last_pair: None,
            templates: 0,
            p_dup: Prob::new(cfg.dup_fraction),
            p_qcfail: Prob::new(cfg.qcfail_fraction),
            p_tag: Prob::new(cfg.tag_fraction),
        }
    }

    /// The SAM header text.
    pub fn header(&self) -> Vec<u8> {
        let mut h = Vec::new();
        let so = if self.cfg.unsorted {
            "unsorted"
        } else {
            "coordinate"
        };
        writeln!(h, "@HD\tVN:1.6\tSO:{so}").unwrap();
        for r in &self.g.refs {
            writeln!(h, "@SQ\tSN:{}\tLN:{}", r.name, r.len).unwrap();
        }
        for (id, pl, lb, pu, _) in READ_GROUPS {
            writeln!(
                h,
                "@RG\tID:{id}\tSM:synth1\tLB:{lb}\tPL:{pl}\tPU:{pu}\tCN:fasthts-testgen"
            )
            .unwrap();
        }
        writeln!(
            h,
            "@PG\tID:fasthts-testgen\tPN:fasthts-testgen\tVN:{}\tCL:{}",
            env!("CARGO_PKG_VERSION"),
            self.cfg.command_line
        )
        .unwrap();
        writeln!(
            h,
            "@CO\tSynthetic data from fasthts-testgen; not a real genome."
        )
        .unwrap();
        h
    }

    /// Generate all records: `n_templates` templates, placed on the
    /// populated references in coordinate order, then the unplaced ones.
    pub fn run<W: Write>(&mut self, n_templates: u64, em: &mut Emitter<W>) -> io::Result<()> {
        let (per_ref, n_unplaced) = self.plan(n_templates);
        let mut positions: Vec<u32> = Vec::new();
        for (tid, count) in per_ref {
            if count == 0 {
                continue;
            }
            self.anchor_positions(tid, count, &mut positions);
            let mut prev = None;
            for &anchor in &positions {
                let mut p = anchor;
                // Duplicates are made by re-using the previous pair's
                // geometry, which requires the same anchor position.
                let mut dup = false;
                if let Some(pp) = prev {
                    if self.rng.hit(self.p_dup) {
                        p = pp;
                        dup = true;
                    }
                }
                em.flush_before(tid, p)?;
                self.placed_template(tid, p, dup, em)?;
                prev = Some(p);
            }
        }
        for _ in 0..n_unplaced {
            self.unplaced_template(em)?;
        }
        Ok(())
    }

    /// Split the templates over references: (tid, count) in header order,
    /// plus the number of unplaced templates.
    fn plan(&mut self, n: u64) -> (Vec<(u32, u64)>, u64) {
        let cfg = self.cfg;
        if cfg.no_mapped || self.populated.is_empty() {
            return (Vec::new(), n);
        }
        let n_unplaced = if n >= 10 && cfg.unmapped_fraction > 0.0 {
            ((n as f64 * cfg.unmapped_fraction).round() as u64).clamp(1, n)
        } else {
            0
        };
        let mut n_placed = n - n_unplaced;
        let mut out = Vec::new();
        let long_tid = self
            .g
            .refs
            .iter()
            .position(|r| r.bases.is_none())
            .map(|t| t as u32);
        let mut n_long = 0;
        if long_tid.is_some() && n_placed >= 4 {
            n_long = (n_placed / 20).max(2);
            n_placed -= n_long;
        }
        let total_w: u128 = self
            .populated
            .iter()
            .map(|&t| self.g.refs[t as usize].weight as u128)
            .sum();
        // Cumulative rounding: counts sum exactly to n_placed.
        let mut cum: u128 = 0;
        for &t in &self.populated {
            let w = self.g.refs[t as usize].weight as u128;
            if Some(t) == long_tid {
                out.push((t, n_long));
                continue;
            }
            let before = (cum * n_placed as u128 + total_w / 2) / total_w.max(1);
            cum += w;
            let after = (cum * n_placed as u128 + total_w / 2) / total_w.max(1);
            out.push((t, (after - before) as u64));
        }
        (out, n_unplaced)
    }

    /// Sorted anchor positions for `count` templates on `tid`.
    fn anchor_positions(&mut self, tid: u32, count: u64, out: &mut Vec<u32>) {
        out.clear();
        let r = &self.g.refs[tid as usize];
        // Leave room for a fragment at the end of the reference.
        let margin = 2_000.min(r.len / 2);
        let hi = (r.len - margin).max(1) as u64;
        if r.bases.is_none() {
            // Long reference: half the reads just beyond 2^29 (which needs a
            // CSI index), the other half anywhere.
            let t = (1u64 << 29).min(hi.saturating_sub(2_000_000));
            for i in 0..count {
                let p = if i % 2 == 0 {
                    self.rng.range(t, (t + 2_000_000).min(hi - 1))
                } else {
                    self.rng.below(hi)
                };
                out.push(p as u32);
            }
        } else {
            for _ in 0..count {
                out.push(self.rng.below(hi) as u32);
            }
        }
        out.sort_unstable();
    }

    // ---------------------------------------------------------------- records

    /// Take the next pool record, reset.
    fn new_rec(&mut self) -> usize {
        if self.n == self.pool.len() {
            self.pool.push(Aln::default());
        }
        let i = self.n;
        self.n += 1;
        self.pool[i].reset();
        i
    }

    fn start_template(&mut self, paired: bool, rg: usize) {
        self.n = 0;
        self.prim = [NONE; 2];
        self.paired = paired;
        self.proper = false;
        self.dup = false;
        self.rg = rg;
        self.qcfail = self.rng.hit(self.p_qcfail);
        // Illumina-style read name; the last field is the template number,
        // which makes names unique.
        self.name.clear();
        let lane = 1 + self.rng.below(4);
        let tile = 1101 + self.rng.below(2) * 1000 + self.rng.below(78);
        let x = 1000 + self.rng.below(30_000);
        self.name.extend_from_slice(b"A00157:42:HFAKEDSXX:");
        push_u64(&mut self.name, lane);
        self.name.push(b':');
        push_u64(&mut self.name, tile);
        self.name.push(b':');
        push_u64(&mut self.name, x);
        self.name.push(b':');
        push_u64(&mut self.name, self.templates + 1);
        self.templates += 1;
    }

    fn read_len(&mut self) -> u32 {
        let (lo, hi) = self.cfg.read_len;
        self.rng.range(lo as u64, hi as u64) as u32
    }

    /// Align `qlen` query bases (plus clips) at `tid:pos`, filling record `i`
    /// with CIGAR/SEQ/QUAL/MD/NM. If the alignment would run past the end of
    /// the reference, events are dropped and then the overhang is soft-clipped
    /// (as aligners do at contig ends).
    #[allow(clippy::too_many_arguments)]
    fn map_read(
        &mut self,
        i: usize,
        tid: u32,
        pos: u32,
        rev: bool,
        mut qlen: u32,
        left: ClipPlan,
        mut right: ClipPlan,
        allow_events: bool,
    ) {
        let room = self.g.refs[tid as usize].len - pos;
        let mut span = if allow_events {
            choose_events(&mut self.rng, qlen, true, &mut self.events)
        } else {
            self.events.clear();
            qlen
        };
        if span > room {
            self.events.clear();
            span = qlen;
        }
        if span > room {
            let over = qlen - room;
            qlen = room;
            span = room;
            right = match right {
                ClipPlan::None => ClipPlan::SoftRandom(over),
                ClipPlan::SoftRandom(n) => ClipPlan::SoftRandom(n + over),
                other => other, // callers guarantee room for given/hard clips
            };
        }
        let eqx = self.rng.chance(0.01);
        let clipbuf = &self.clipbuf;
        let to_clip = |c: ClipPlan| match c {
            ClipPlan::None => Clip::None,
            ClipPlan::SoftRandom(n) => Clip::Soft(n, None),
            ClipPlan::SoftGiven(n) => Clip::Soft(n, Some(&clipbuf[..])),
            ClipPlan::Hard(n) => Clip::Hard(n),
        };
        let refw = self.g.window(tid as usize, pos, span, &mut self.scratch);
        let spec = WalkSpec {
            tid,
            pos,
            refw,
            qlen,
            events: &self.events,
            left: to_clip(left),
            right: to_clip(right),
            eqx,
        };
        let a = &mut self.pool[i];
        walk(&mut self.rng, &self.em, &spec, a);
        debug_assert_eq!(a.cigar_query_len(), a.seq.len() as u64);
        debug_assert_eq!(a.cigar_ref_len(), span as u64);
        a.mapped = true;
        a.tid = tid as i32;
        a.pos = pos;
        a.rev = rev;
        a.mapq = if self.rng.chance(0.9) {
            60
        } else {
            self.rng.range(1, 59) as u8
        };
        if self.rng.chance(0.5) {
            a.sub_score = Some((self.rng.below(a.score as u64 / 2 + 1)) as i32);
        }
        let profile = READ_GROUPS[self.rg].4;
        fill_qual(&mut self.rng, profile, a.seq.len(), rev, &mut a.qual);
        a.qual_star = self.rng.chance(0.01);
    }

    /// An unmapped read of `len` random bases placed at `tid:pos` (the mate's
    /// position) or unplaced (`tid` = -1).
    fn unmapped_read(&mut self, i: usize, tid: i32, pos: u32, len: u32) {
        let profile = READ_GROUPS[self.rg].4;
        let a = &mut self.pool[i];
        a.mapped = false;
        a.tid = tid;
        a.pos = pos;
        a.seq.clear();
        for _ in 0..len {
            a.seq.push(BASES[self.rng.below(4) as usize]);
        }
        fill_qual(&mut self.rng, profile, len as usize, false, &mut a.qual);
        a.qual_star = self.rng.chance(0.01);
    }

    /// After placing a primary: if it lies in a copied segment, it is
    /// ambiguous (MAPQ 0, XS = AS), and if the other copy sorts after the
    /// template's anchor we also emit a secondary alignment there.
    fn add_repeat_secondary(&mut self, i: usize, anchor: (u32, u32)) {
        let (tid, pos, span) = {
            let a = &self.pool[i];
            (a.tid as usize, a.pos, a.span)
        };
        let Some((pt, pp)) = self.g.repeat_partner(tid, pos, span) else {
            return;
        };
        {
            let a = &mut self.pool[i];
            a.mapq = 0;
            a.sub_score = Some(a.score);
        }
        if (pt, pp) <= anchor {
            return;
        }
        let j = self.new_rec();
        let (head, tail) = self.pool.split_at_mut(j);
        let s = &mut tail[0];
        s.copy_from(&head[i]);
        s.kind = Kind::Secondary;
        s.tid = pt as i32;
        s.pos = pp;
        s.mapq = 0;
        s.sa.clear();
        s.big_array = 0;
        // bwa prints secondary alignments without SEQ/QUAL.
        if self.rng.chance(0.5) {
            s.seq_star = true;
            s.qual_star = true;
        }
    }

    /// Maybe turn primary `i` (already mapped with `qlen` aligned bases)
    /// into a chimeric read: re-map it with a soft clip and add a
    /// supplementary record (hard-clipped, SA:Z on both) further right.
    fn maybe_chimeric(&mut self, i: usize, anchor: (u32, u32)) -> bool {
        if !self.rng.chance(self.cfg.chimeric_fraction) {
            return false;
        }
        let (tid, pos, rev, total) = {
            let a = &self.pool[i];
            (a.tid as u32, a.pos, a.rev, a.seq.len() as u32)
        };
        if total < 60 {
            return false;
        }
        let k = self.rng.range(30, (total - 30) as u64) as u32; // primary part
        let c = total - k; // supplementary part
                           // Location of the supplementary: same chromosome downstream, or a
                           // later populated chromosome (it must sort after the anchor).
        let (st, sp) = match self.pick_downstream(tid, anchor.1.max(pos), c + 50) {
            Some(x) => x,
            None => return false,
        };
        let srev = self.rng.chance(0.5);
        let clip_right = self.rng.chance(0.5); // primary: kM cS, else cS kM
        // A primary part longer than what is left of the reference would be
        // clipped by map_read, which cannot add to a given clip: no chimera
        // (long reads near the end of a short reference).
        if clip_right && k > self.g.refs[tid as usize].len - pos {
            return false;
        }
        let flip = srev != rev;
        // The supplementary's hard clip sits on the side where the primary
        // part is, in the supplementary's own orientation.
        let (sl, sr) = if clip_right != flip {
            (ClipPlan::Hard(k), ClipPlan::None)
        } else {
            (ClipPlan::None, ClipPlan::Hard(k))
        };
        let j = self.new_rec();
        self.pool[j].read = self.pool[i].read;
        self.pool[j].kind = Kind::Supplementary;
        self.map_read(j, st, sp, srev, c, sl, sr, false);
        // The primary's soft-clipped bases are the supplementary's bases, in
        // the primary's orientation.
        if flip {
            let mut tmp = std::mem::take(&mut self.clipbuf);
            reverse_complement_into(&self.pool[j].seq, &mut tmp);
            self.clipbuf = tmp;
        } else {
            self.clipbuf.clear();
            self.clipbuf.extend_from_slice(&self.pool[j].seq);
        }
        let (pl, pr) = if clip_right {
            (ClipPlan::None, ClipPlan::SoftGiven(c))
        } else {
            (ClipPlan::SoftGiven(c), ClipPlan::None)
        };
        let read = self.pool[i].read;
        self.pool[i].reset();
        self.pool[i].read = read;
        self.map_read(i, tid, pos, rev, k, pl, pr, true);
        // Supplementary QUAL = the matching slice of the primary's QUAL.
        let (head, tail) = self.pool.split_at_mut(j);
        let (p, s) = (&mut head[i], &mut tail[0]);
        let range = if clip_right {
            k as usize..total as usize
        } else {
            0..c as usize
        };
        s.qual.clear();
        s.qual.extend_from_slice(&p.qual[range]);
        if flip {
            s.qual.reverse();
        }
        s.qual_star = p.qual_star;
        s.mapq = self.rng.range(0, 60) as u8;
        s.sub_score = None;
        write_sa(&mut p.sa, self.g, s);
        write_sa(&mut s.sa, self.g, p);
        true
    }

    /// A random position at least `need` bases before the end, on `tid`
    /// after `after` or on a later populated reference.
    fn pick_downstream(&mut self, tid: u32, after: u32, need: u32) -> Option<(u32, u32)> {
        let later: Vec<u32> = self
            .populated
            .iter()
            .copied()
            .filter(|&t| t > tid)
            .collect();
        let len = self.g.refs[tid as usize].len;
        let same_ok = len > after + 1_000 + need;
        if same_ok && (later.is_empty() || self.rng.chance(0.5)) {
            let lo = after as u64 + 1_000;
            let hi = (after as u64 + 2_000_000).min((len - need) as u64);
            return Some((tid, self.rng.range(lo, hi) as u32));
        }
        if later.is_empty() {
            return None;
        }
        let t = later[self.rng.below(later.len() as u64) as usize];
        let l = self.g.refs[t as usize].len;
        if l <= need {
            return None;
        }
        Some((t, self.rng.below((l - need) as u64) as u32))
    }

    /// Random short soft clip (adapter / low quality end) on ~5% of reads.
    fn adapter_clip(&mut self) -> u32 {
        if self.rng.chance(0.05) {
            self.rng.range(1, 30) as u32
        } else {
            0
        }
    }

    fn placed_template<W: Write>(
        &mut self,
        tid: u32,
        p: u32,
        dup: bool,
        em: &mut Emitter<W>,
    ) -> io::Result<()> {
        // One draw picks the template type; the fractions are stacked on
        // the 64-bit range so each type gets exactly its share.
        let x = self.rng.next_u64();
        let lc = Prob::new(self.cfg.long_cigar_fraction).0;
        let hr = Prob::new(self.cfg.huge_record_fraction).0;
        let se = Prob::new(self.cfg.single_end_fraction).0;
        let anchor = (tid, p);
        let done = if dup {
            false
        } else if x < lc {
            self.long_cigar_read(tid, p)
        } else if x - lc < hr {
            self.huge_read(tid, p)
        } else if x - lc - hr < se {
            self.single_end_read(tid, p);
            true
        } else {
            false
        };
        if !done {
            self.pair(tid, p, dup, anchor);
        }
        self.write_template(em)
    }

    fn single_end_read(&mut self, tid: u32, p: u32) {
        self.start_template(false, RG_SE);
        let i = self.new_rec();
        self.prim[0] = i;
        self.pool[i].read = 2;
        let len = self.read_len();
        let rev = self.rng.chance(0.5);
        let clip = self.adapter_clip();
        let right = if clip > 0 && len > clip + 40 {
            ClipPlan::SoftRandom(clip)
        } else {
            ClipPlan::None
        };
        let q = len
            - if let ClipPlan::SoftRandom(c) = right {
                c
            } else {
                0
            };
        self.map_read(i, tid, p, rev, q, ClipPlan::None, right, true);
        if !self.maybe_chimeric(i, (tid, p)) {
            self.add_repeat_secondary(i, (tid, p));
        }
    }

    /// A long read whose CIGAR has more than 65,535 operations.
    fn long_cigar_read(&mut self, tid: u32, p: u32) -> bool {
        let units = self.rng.range(16_400, 17_500) as u32;
        let flank = 50;
        let span = long_cigar_span(units, flank);
        if self.g.refs[tid as usize].len - p < span {
            return false;
        }
        self.start_template(false, RG_LONG);
        let i = self.new_rec();
        self.prim[0] = i;
        let rev = self.rng.chance(0.5);
        let refw = self.g.window(tid as usize, p, span, &mut self.scratch);
        let a = &mut self.pool[i];
        walk_long_cigar(&mut self.rng, refw, units, flank, a);
        a.read = 2;
        a.mapped = true;
        a.tid = tid as i32;
        a.pos = p;
        a.rev = rev;
        a.mapq = self.rng.range(1, 60) as u8;
        fill_qual(
            &mut self.rng,
            QualProfile::LongRead,
            a.seq.len(),
            rev,
            &mut a.qual,
        );
        true
    }

    /// A record larger than 64 kB: a long read with a 4096-element B:I tag.
    fn huge_read(&mut self, tid: u32, p: u32) -> bool {
        let len = self.rng.range(45_000, 70_000) as u32;
        if self.g.refs[tid as usize].len - p < len + 1_000 {
            // Not enough reference: a pair whose first read carries a big
            // B-array tag instead (still > 64 kB in BAM).
            self.pair(tid, p, false, (tid, p));
            if let Some(i) = self.prim.iter().copied().find(|&i| i != NONE) {
                self.pool[i].big_array = 20_000;
            }
            return true;
        }
        self.start_template(false, RG_LONG);
        let i = self.new_rec();
        self.prim[0] = i;
        self.pool[i].read = 2;
        let rev = self.rng.chance(0.5);
        self.map_read(i, tid, p, rev, len, ClipPlan::None, ClipPlan::None, true);
        let a = &mut self.pool[i];
        a.qual_star = false;
        a.big_array = 4_096;
        true
    }

    /// A read pair anchored at `tid:p` (its leftmost record).
    fn pair(&mut self, tid: u32, p: u32, dup: bool, anchor: (u32, u32)) {
        let reuse = match self.last_pair {
            Some(g) if dup && g.tid == tid && g.left_pos == p => Some(g),
            _ => None,
        };
        let rg = match reuse {
            Some(g) => g.rg,
            None => self.rng.below(3) as usize,
        };
        self.start_template(true, rg);
        let r1 = self.new_rec();
        let r2 = self.new_rec();
        self.pool[r1].read = 0;
        self.pool[r2].read = 1;
        self.prim = [r1, r2];
        let room = self.g.refs[tid as usize].len - p;

        if let Some(g) = reuse {
            // Duplicate of the previous pair: same positions, fresh errors.
            self.dup = true;
            let (li, ri) = if g.left_read == 0 { (r1, r2) } else { (r2, r1) };
            self.map_read(
                li,
                tid,
                g.left_pos,
                false,
                g.left_len,
                ClipPlan::None,
                ClipPlan::None,
                true,
            );
            self.map_read(
                ri,
                tid,
                g.right_pos,
                true,
                g.right_len,
                ClipPlan::None,
                ClipPlan::None,
                true,
            );
            self.proper = true;
            for i in [r1, r2] {
                self.add_repeat_secondary(i, anchor);
            }
            return;
        }

        let (len_a, len_b) = (self.read_len(), self.read_len());
        // Which read is leftmost.
        let left_read = self.rng.below(2) as u8;
        let (li, ri) = if left_read == 0 { (r1, r2) } else { (r2, r1) };
        let frag = (self
            .rng
            .approx_normal(350, 60)
            .max(len_a.max(len_b) as i64 + 10) as u32)
            .min(room.saturating_sub(1))
            .max(len_a.max(len_b));
        // Reads longer than what is left of a short reference (chrM) would
        // place the mate past its end: at its last base, its overhang
        // soft-clipped by map_read, as an aligner clips at a contig end.
        let right_pos = (p + frag - len_b.min(frag)).min(p + room.saturating_sub(1));

        // Decide the kind of pair.
        let x = self.rng.next_u64();
        let mut acc = 0u64;
        let mut take = |f: f64| {
            let t = Prob::new(f).0;
            let hit = x >= acc && x - acc < t;
            acc = acc.saturating_add(t);
            hit
        };
        let singleton = take(self.cfg.singleton_fraction);
        let interchrom = take(self.cfg.interchrom_fraction);
        let far = take(0.005);
        let same_strand = take(0.005);

        // Leftmost read: always mapped at the anchor.
        let clip = self.adapter_clip();
        let lplan = if clip > 0 && len_a > clip + 40 {
            ClipPlan::SoftRandom(clip)
        } else {
            ClipPlan::None
        };
        let lq = len_a
            - if let ClipPlan::SoftRandom(c) = lplan {
                c
            } else {
                0
            };
        let lrev = same_strand && self.rng.chance(0.5);
        self.map_read(li, tid, p, lrev, lq, lplan, ClipPlan::None, true);

        if singleton {
            // Mate unmapped, placed at this read's position (as bwa does).
            self.unmapped_read(ri, tid as i32, p, len_b);
            if !self.maybe_chimeric(li, anchor) {
                self.add_repeat_secondary(li, anchor);
            }
            return;
        }

        let mut placed = None;
        if interchrom {
            placed = self.pick_downstream_other_chr(tid, len_b + 10);
        } else if far && room > 20_000 {
            let d = self
                .rng
                .range(5_000, 2_000_000)
                .min(room as u64 - len_b as u64 - 10) as u32;
            placed = Some((tid, p + d.max(frag)));
        }
        let (rt, rp, rrev, proper) = match placed {
            Some((t, q)) => (t, q, self.rng.chance(0.5), false),
            None => (
                tid,
                right_pos,
                if same_strand { lrev } else { true },
                !same_strand,
            ),
        };
        let clip = self.adapter_clip();
        let rplan = if clip > 0 && len_b > clip + 40 {
            ClipPlan::SoftRandom(clip)
        } else {
            ClipPlan::None
        };
        let rq = len_b
            - if let ClipPlan::SoftRandom(c) = rplan {
                c
            } else {
                0
            };
        self.map_read(ri, rt, rp, rrev, rq, ClipPlan::None, rplan, true);
        self.proper = proper;
        if proper && rt == tid {
            self.last_pair = Some(PairGeom {
                tid,
                left_pos: p,
                right_pos: rp,
                left_len: lq,
                right_len: rq,
                left_read,
                rg,
            });
        }
        for i in [li, ri] {
            if !self.maybe_chimeric(i, anchor) {
                self.add_repeat_secondary(i, anchor);
            }
        }
    }

    fn pick_downstream_other_chr(&mut self, tid: u32, need: u32) -> Option<(u32, u32)> {
        let later: Vec<u32> = self
            .populated
            .iter()
            .copied()
            .filter(|&t| t > tid && self.g.refs[t as usize].len > need + 1)
            .collect();
        if later.is_empty() {
            return None;
        }
        let t = later[self.rng.below(later.len() as u64) as usize];
        let l = self.g.refs[t as usize].len;
        Some((t, self.rng.below((l - need) as u64) as u32))
    }

    fn unplaced_template<W: Write>(&mut self, em: &mut Emitter<W>) -> io::Result<()> {
        if self.rng.chance(0.1) {
            // Unmapped single-end read.
            self.start_template(false, RG_SE);
            let i = self.new_rec();
            self.prim[0] = i;
            self.pool[i].read = 2;
            let len = self.read_len();
            self.unmapped_read(i, -1, 0, len);
        } else {
            let rg = self.rng.below(3) as usize;
            self.start_template(true, rg);
            for read in 0..2u8 {
                let i = self.new_rec();
                self.prim[read as usize] = i;
                self.pool[i].read = read;
                let len = self.read_len();
                self.unmapped_read(i, -1, 0, len);
            }
        }
        self.write_template(em)
    }

    // ------------------------------------------------------------- formatting

    fn write_template<W: Write>(&mut self, em: &mut Emitter<W>) -> io::Result<()> {
        for k in 0..self.n {
            let (slot, mut buf) = em.take_buf();
            let key = self.format(k, &mut buf);
            em.push(key, slot, buf)?;
        }
        Ok(())
    }

    /// Format record `k` of the current template as one SAM line.
    fn format(&mut self, k: usize, b: &mut Vec<u8>) -> SortKey {
        let a = &self.pool[k];
        let mate = if self.paired && a.read < 2 {
            Some(&self.pool[self.prim[1 - a.read as usize]])
        } else {
            None
        };
        let mut flag: u32 = 0;
        if let Some(m) = mate {
            flag |= 0x1;
            flag |= if a.read == 0 { 0x40 } else { 0x80 };
            if !m.mapped {
                flag |= 0x8;
            }
            if m.mapped && m.rev {
                flag |= 0x20;
            }
            if self.proper && a.mapped && m.mapped && a.kind != Kind::Secondary {
                flag |= 0x2;
            }
        }
        if !a.mapped {
            flag |= 0x4;
        } else if a.rev {
            flag |= 0x10;
        }
        match a.kind {
            Kind::Primary => {}
            Kind::Secondary => flag |= 0x100,
            Kind::Supplementary => flag |= 0x800,
        }
        if self.qcfail {
            flag |= 0x200;
        }
        if self.dup {
            flag |= 0x400;
        }
        let refs = &self.g.refs;

        b.extend_from_slice(&self.name);
        b.push(b'\t');
        push_num(b, flag);
        b.push(b'\t');
        if a.tid >= 0 {
            b.extend_from_slice(refs[a.tid as usize].name.as_bytes());
            b.push(b'\t');
            push_num(b, a.pos + 1);
        } else {
            b.extend_from_slice(b"*\t0");
        }
        b.push(b'\t');
        push_num(b, if a.mapped { a.mapq as u32 } else { 0 });
        b.push(b'\t');
        if a.mapped {
            for &(n, op) in &a.cigar {
                push_num(b, n);
                b.push(op);
            }
        } else {
            b.push(b'*');
        }
        b.push(b'\t');
        // RNEXT, PNEXT, TLEN
        match mate {
            Some(m) if m.tid >= 0 => {
                if m.tid == a.tid {
                    b.push(b'=');
                } else {
                    b.extend_from_slice(refs[m.tid as usize].name.as_bytes());
                }
                b.push(b'\t');
                push_num(b, m.pos + 1);
                b.push(b'\t');
                let tlen = if a.kind == Kind::Primary && a.mapped && m.mapped && a.tid == m.tid {
                    tlen(a, m)
                } else {
                    0
                };
                push_i64(b, tlen);
            }
            _ => b.extend_from_slice(b"*\t0\t0"),
        }
        b.push(b'\t');
        if a.seq_star {
            b.extend_from_slice(b"*\t*");
        } else {
            b.extend_from_slice(&a.seq);
            b.push(b'\t');
            if a.qual_star {
                b.push(b'*');
            } else {
                b.extend_from_slice(&a.qual);
            }
        }

        // Tags.
        if !a.mapped {
            // samtools fixmate gives unmapped reads their mapped mate's CIGAR and MAPQ too.
            if let Some(m) = mate {
                if m.mapped && a.kind == Kind::Primary {
                    push_mate_tags(b, m);
                }
            }
        }
        if a.mapped {
            b.extend_from_slice(b"\tNM:i:");
            push_num(b, a.nm);
            b.extend_from_slice(b"\tMD:Z:");
            b.extend_from_slice(&a.md);
            if let Some(m) = mate {
                if m.mapped && a.kind == Kind::Primary {
                    push_mate_tags(b, m);
                }
            }
            b.extend_from_slice(b"\tAS:i:");
            push_i64(b, a.score as i64);
            if let Some(xs) = a.sub_score {
                b.extend_from_slice(b"\tXS:i:");
                push_i64(b, xs as i64);
            }
            if !a.sa.is_empty() {
                b.extend_from_slice(b"\tSA:Z:");
                b.extend_from_slice(&a.sa);
            }
        }
        b.extend_from_slice(b"\tRG:Z:");
        b.extend_from_slice(READ_GROUPS[self.rg].0.as_bytes());
        let big = a.big_array;
        let key = SortKey::new(a.tid, a.pos, a.tid >= 0, flag & 0x10 != 0);
        extra_tags(&mut self.rng, self.p_tag, b);
        if big > 0 {
            b.extend_from_slice(b"\tZB:B:I");
            for _ in 0..big {
                b.push(b',');
                push_u64(b, self.rng.next_u64() >> 32);
            }
        }
        b.push(b'\n');
        key
    }
}

/// Template length as `samtools fixmate` (and, up to +-1, bwa) computes it:
/// the distance between the two reads' 5' ends (end of the alignment for
/// reverse-strand reads), positive for the read whose 5' end is leftmost.
/// This differs from the spec's "leftmost to rightmost mapped base" only for
/// odd pairs (same strand, or a read reaching past its mate), and matching
/// samtools means `samtools fixmate` leaves our mate fields unchanged.
fn tlen(a: &Aln, m: &Aln) -> i64 {
    let five = |x: &Aln| {
        if x.rev {
            x.pos as i64 + x.span as i64
        } else {
            x.pos as i64
        }
    };
    five(m) - five(a)
}

/// MC:Z (mate CIGAR) and MQ:i (mate MAPQ), as `samtools fixmate` adds them.
fn push_mate_tags(b: &mut Vec<u8>, m: &Aln) {
    b.extend_from_slice(b"\tMC:Z:");
    for &(n, op) in &m.cigar {
        push_num(b, n);
        b.push(op);
    }
    b.extend_from_slice(b"\tMQ:i:");
    push_num(b, m.mapq as u32);
}

/// `rname,pos,strand,CIGAR,mapQ,NM;` describing `o` (hard clips shown as
/// soft clips, as bwa writes them).
fn write_sa(out: &mut Vec<u8>, g: &Genome, o: &Aln) {
    out.clear();
    out.extend_from_slice(g.refs[o.tid as usize].name.as_bytes());
    out.push(b',');
    push_num(out, o.pos + 1);
    out.push(b',');
    out.push(if o.rev { b'-' } else { b'+' });
    out.push(b',');
    for &(n, op) in &o.cigar {
        push_num(out, n);
        out.push(if op == OP_H { OP_S } else { op });
    }
    out.push(b',');
    push_num(out, o.mapq as u32);
    out.push(b',');
    push_num(out, o.nm);
    out.push(b';');
}

/// Base qualities (Phred+33) in read orientation, stored reversed for
/// reverse-strand reads as SAM requires.
fn fill_qual(rng: &mut Rng, profile: QualProfile, len: usize, rev: bool, q: &mut Vec<u8>) {
    q.clear();
    let mut bits = 0u64;
    let mut left = 0;
    for i in 0..len {
        if left == 0 {
            bits = rng.next_u64();
            left = 8;
        }
        let r = (bits & 0xFF) as u32;
        bits >>= 8;
        left -= 1;
        let c = match profile {
            QualProfile::Binned => match r {
                0..=229 => b'F',
                230..=244 => b':',
                245..=252 => b',',
                _ => b'#',
            },
            QualProfile::FullRange => {
                // 40 at the start, dropping ~12 along the read, plus noise.
                let decline = (i * 12 / len.max(1)) as u32;
                let q = 41u32.saturating_sub(decline).saturating_sub(r % 9).max(2);
                b'!' + q as u8
            }
            QualProfile::LongRead => b'!' + (3 + r % 28) as u8,
        };
        q.push(c);
    }
    if rev {
        q.reverse();
    }
}

/// Occasional extra tags covering every SAM tag type and every BAM integer
/// width: A, i (c/C/s/S/i/I ranges), f, Z (with spaces), H, and B arrays of
/// subtypes c, C, s, S, i, I, f.
fn extra_tags(rng: &mut Rng, p: Prob, b: &mut Vec<u8>) {
    if p.0 == 0 {
        return;
    }
    // A few specific tags, each independently present.
    if rng.hit(p) {
        b.extend_from_slice(b"\tXT:A:");
        b.push([b'U', b'R', b'M'][rng.below(3) as usize]);
    }
    let ints: [(&[u8], i64, i64); 7] = [
        (b"\tXC:i:", 0, 255),                       // C
        (b"\tXc:i:", -128, -1),                     // c
        (b"\tXs:i:", -32_768, -129),                // s
        (b"\tXU:i:", 256, 65_535),                  // S
        (b"\tXi:i:", -2_147_483_648, -32_769),      // i (negative)
        (b"\tXP:i:", 65_536, 2_147_483_647),        // i (positive)
        (b"\tXI:i:", 2_147_483_648, 4_294_967_295), // I
    ];
    for (tag, lo, hi) in ints {
        if rng.hit(p) {
            b.extend_from_slice(tag);
            push_i64(b, lo + rng.below((hi - lo + 1) as u64) as i64);
        }
    }
    if rng.hit(p) {
        b.extend_from_slice(b"\tXF:f:");
        push_float(rng, b);
    }
    if rng.hit(p) {
        b.extend_from_slice(b"\tXZ:Z:synthetic read; lane ");
        push_u64(b, 1 + rng.below(8));
        b.extend_from_slice(b" (tile=1101) ok!");
    }
    if rng.hit(p) {
        b.extend_from_slice(b"\tXH:H:");
        for _ in 0..rng.range(1, 8) {
            let v = rng.below(256) as usize;
            b.push(b"0123456789ABCDEF"[v >> 4]);
            b.push(b"0123456789ABCDEF"[v & 15]);
        }
    }
    let arrays: [(&[u8], i64, i64); 6] = [
        (b"\tZc:B:c", -128, 127),
        (b"\tZC:B:C", 0, 255),
        (b"\tZs:B:s", -32_768, 32_767),
        (b"\tZS:B:S", 0, 65_535),
        (b"\tZi:B:i", -2_147_483_648, 2_147_483_647),
        (b"\tZI:B:I", 0, 4_294_967_295),
    ];
    for (tag, lo, hi) in arrays {
        if rng.hit(p) {
            b.extend_from_slice(tag);
            for _ in 0..rng.range(1, 12) {
                b.push(b',');
                push_i64(b, lo + rng.below((hi - lo + 1) as u64) as i64);
            }
        }
    }
    if rng.hit(p) {
        b.extend_from_slice(b"\tZf:B:f");
        for _ in 0..rng.range(1, 8) {
            b.push(b',');
            push_float(rng, b);
        }
    }
}

/// A float written as a decimal with at most 6 significant digits and a
/// magnitude in [1e-4, 1e6). Such text survives the float32 round trip and
/// is printed back identically by samtools (`%g`), so SAM -> BAM -> SAM is
/// lossless, and the text is the same on every platform.
fn push_float(rng: &mut Rng, b: &mut Vec<u8>) {
    let m = rng.range(1, 999_999);
    let digits = m.ilog10() + 1;
    // value = m / 10^d; keep the decimal exponent (digits-1-d) >= -4.
    let d = rng.below((digits + 4).min(6) as u64 + 1) as u32;
    if rng.below(2) == 1 {
        b.push(b'-');
    }
    let pow = 10u64.pow(d);
    push_u64(b, m / pow);
    let mut frac = m % pow;
    if frac != 0 {
        // Fraction with leading zeros, trailing zeros stripped (as %g does).
        let mut width = d;
        while frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        b.push(b'.');
        let fd = frac.ilog10() + 1;
        for _ in fd..width {
            b.push(b'0');
        }
        push_u64(b, frac);
    }
}
