//! One file's pileup, step for step as htslib 1.16's `bam_plp_*` (sam.c):
//! the read buffer, the `maxcnt` test on push, the column loop with its
//! jumps, `resolve_cigar2` and the mate-overlap quality adjustment
//! (`overlap_push` / `tweak_overlap_quality`). Written from reading
//! htslib, not copied.
//!
//! Nodes live in an arena and are recycled through a LIFO free list, as
//! htslib's memory pool recycles `lbnode_t`s; their byte buffers are reused,
//! so once the buffer has reached its working size no record allocates.

use super::PileupError;
use crate::bam::RecordRef;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

const CMATCH: u32 = 0;
const CINS: u32 = 1;
const CDEL: u32 = 2;
const CREF_SKIP: u32 = 3;
const CSOFT_CLIP: u32 = 4;
const CHARD_CLIP: u32 = 5;
const CPAD: u32 = 6;
const CEQUAL: u32 = 7;
const CDIFF: u32 = 8;

const FPAIRED: u16 = 0x1;
const FPROPER_PAIR: u16 = 0x2;
const FUNMAP: u16 = 0x4;
const FMUNMAP: u16 = 0x8;

#[inline]
fn is_match(op: u32) -> bool {
    op == CMATCH || op == CEQUAL || op == CDIFF
}

#[inline]
fn is_ref_op(op: u32) -> bool {
    is_match(op) || op == CDEL || op == CREF_SKIP
}

/// htslib's `cstate_t`: where a read's CIGAR walk stands.
#[derive(Clone, Copy, Debug, Default)]
struct CState {
    /// Index of the CIGAR operation being processed (-1: not started).
    k: i64,
    /// Reference coordinate of the start of operation `k`.
    x: i64,
    /// Query coordinate of the start of operation `k`.
    y: i64,
    /// Last reference position covered.
    end: i64,
    /// Last position resolved.
    last: i64,
}

/// A buffered read: a copy of the fields the pileup needs.
#[derive(Default, Debug)]
pub(crate) struct Node {
    pub(crate) tid: i32,
    pub(crate) beg: i64,
    pub(crate) end: i64,
    pub(crate) flag: u16,
    pub(crate) mapq: u8,
    pub(crate) mtid: i32,
    pub(crate) mpos: i64,
    pub(crate) isize: i32,
    pub(crate) l_qseq: i64,
    s: CState,
    /// Read name (no NUL).
    pub(crate) name: Vec<u8>,
    name_hash: u64,
    /// CIGAR as BAM's packed u32 words (`len << 4 | op`).
    cigar: Vec<u32>,
    /// 4-bit packed sequence.
    pub(crate) seq: Vec<u8>,
    /// Base qualities (mutable: overlap adjustment rewrites them).
    pub(crate) qual: Vec<u8>,
    /// The whole record, with the qualities as adjusted, when the pileup
    /// keeps records ([`PlpFile::keep_records`]). Shared with the columns
    /// a caller holds; the buffer is reused when nobody else holds it.
    pub(crate) rec: Option<Arc<Vec<u8>>>,
    /// Where the qualities start in `rec`.
    qual_off: usize,
}

impl Node {
    fn fill(&mut self, b: &RecordRef<'_>, keep_record: bool) {
        if keep_record {
            let bytes = b.as_bytes();
            match self.rec.as_mut().and_then(Arc::get_mut) {
                Some(v) => {
                    v.clear();
                    v.extend_from_slice(bytes);
                }
                None => self.rec = Some(Arc::new(bytes.to_vec())),
            }
            self.qual_off = b.aux_start() - b.seq_len();
        }
        self.tid = b.ref_id();
        self.beg = i64::from(b.pos());
        self.flag = b.flag();
        self.mapq = b.mapq();
        self.mtid = b.mate_ref_id();
        self.mpos = i64::from(b.mate_pos());
        self.isize = b.template_len();
        self.l_qseq = b.seq_len() as i64;
        self.name.clear();
        self.name.extend_from_slice(b.name());
        self.name_hash = name_key(&self.name);
        self.cigar.clear();
        let mut rlen = 0i64;
        for (op, len) in b.cigar().iter() {
            if op.consumes_reference() {
                rlen += i64::from(len);
            }
            self.cigar.push(len << 4 | u32::from(op.code()));
        }
        self.seq.clear();
        self.seq.extend_from_slice(b.seq_raw());
        self.qual.clear();
        self.qual.extend_from_slice(b.qual());
        // Raw reference length, not bam_endpos (which turns 0 into 1).
        self.end = self.beg + rlen;
        self.s = CState { k: -1, x: 0, y: 0, end: self.end - 1, last: -1 };
    }

    /// Copies the (adjusted) qualities into the kept record.
    fn sync_record_qual(&mut self) {
        if let Some(rec) = self.rec.as_mut() {
            let (off, n) = (self.qual_off, self.qual.len());
            if rec.get(off..off + n) != Some(&self.qual[..]) {
                Arc::make_mut(rec)[off..off + n].copy_from_slice(&self.qual);
            }
        }
    }

    /// The 4-bit base code at query position `i` (15, N, past the end).
    #[inline]
    pub(crate) fn base_code(&self, i: usize) -> u8 {
        match self.seq.get(i / 2) {
            Some(&b) => {
                if i % 2 == 0 {
                    b >> 4
                } else {
                    b & 0xf
                }
            }
            None => 15,
        }
    }
}

/// A 64-bit key for a read name, eight bytes at a time (every read's name
/// is hashed, so this is on the hot path); collisions are resolved by
/// comparing the names themselves.
fn name_key(name: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h: u64 = name.len() as u64;
    let mut chunks = name.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h ^ w).wrapping_mul(K);
        h ^= h >> 29;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K);
        h ^= h >> 29;
    }
    h.wrapping_mul(K) ^ (h >> 32)
}

/// htslib's `__ac_X31_hash_string` (over C `char`, signed on x86) followed
/// by `__ac_Wang_hash`.
pub(crate) fn htslib_name_hash(name: &[u8]) -> u32 {
    crate::khash_hash::wang_hash(crate::khash_hash::x31_hash(name))
}

/// One read at a pileup column (htslib's `bam_pileup1_t`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Entry {
    pub(crate) node: u32,
    pub(crate) qpos: i64,
    pub(crate) indel: i32,
    pub(crate) is_del: bool,
    pub(crate) is_refskip: bool,
    pub(crate) is_head: bool,
    pub(crate) is_tail: bool,
}

/// A hasher for keys that are already hashes (the names' FNV-1a keys).
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }
}

type KeyMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// Reads the overlap table maps to, by name. Keys are name hashes; the
/// (practically never used) `collided` map holds names whose hash is taken
/// by a different name.
#[derive(Default)]
struct Overlaps {
    by_hash: KeyMap<u32>,
    collided: HashMap<Vec<u8>, u32>,
}

impl Overlaps {
    fn get(&self, nodes: &[Node], name: &[u8], key: u64) -> Option<u32> {
        match self.by_hash.get(&key) {
            Some(&n) if nodes[n as usize].name == name => Some(n),
            _ if !self.collided.is_empty() => self.collided.get(name).copied(),
            _ => None,
        }
    }

    fn remove(&mut self, nodes: &[Node], name: &[u8], key: u64) {
        match self.by_hash.get(&key) {
            Some(&n) if nodes[n as usize].name == name => {
                self.by_hash.remove(&key);
            }
            _ if !self.collided.is_empty() => {
                self.collided.remove(name);
            }
            _ => {}
        }
    }

    fn insert(&mut self, nodes: &[Node], name: &[u8], key: u64, node: u32) {
        match self.by_hash.get(&key) {
            Some(&n) if nodes[n as usize].name != name => {
                self.collided.insert(name.to_vec(), node);
            }
            _ => {
                self.by_hash.insert(key, node);
            }
        }
    }
}

/// A buffered read's place in the list, with the fields the column scan
/// tests kept contiguous (the nodes themselves are large).
#[derive(Clone, Copy, Debug)]
struct Active {
    id: u32,
    tid: i32,
    beg: i64,
    end: i64,
}

/// `(a, b)` before `(c, d)` in genome order.
#[inline]
fn before(t: i32, p: i64, u: i32, q: i64) -> bool {
    t < u || (t == u && p < q)
}

/// One file's pileup with htslib 1.16's `bam_plp_*` results, computed from
/// the reads rather than column by column.
///
/// htslib asks for a read only when its column loop has caught up with the
/// last read added, so at every push its position is that read's start,
/// every column before it has been produced, and its buffer holds exactly
/// the kept reads that end at or after that position. That is all the
/// depth cap and the overlap table depend on, so both are reproduced at push
/// time (reads leave the buffer, and the overlap table, in order of their end
/// positions), and no work is done at columns nobody looks at: the
/// visited columns are the union of the kept reads' spans
/// ([`PlpFile::coverage`]), and a column's reads are collected on request
/// ([`PlpFile::column`]).
pub(crate) struct PlpFile {
    pub(crate) nodes: Vec<Node>,
    /// Free nodes.
    pool: Vec<u32>,
    /// Kept reads in insertion order (htslib's list), including some that
    /// have left htslib's buffer (`gone`) but may still cover a column the
    /// caller will ask for; those are recycled once behind `floor`.
    active: Vec<Active>,
    /// Whether node `i` has left htslib's buffer.
    gone: Vec<bool>,
    /// (reference, end, node) of the reads in htslib's buffer, sorted
    /// (reads have similar lengths, so insertion from the back is short).
    ends: VecDeque<(i32, i64, u32)>,
    /// htslib's `iter->tid` / `iter->pos` at the next push: the start of the
    /// last read added (`max_tid` / `max_pos`), (0, 0) at first.
    cur_tid: i32,
    cur_pos: i64,
    max_tid: i32,
    max_pos: i64,
    is_eof: bool,
    pub(crate) maxcnt: i32,
    overlaps: Option<Overlaps>,
    /// The lowest column the caller may still ask for.
    floor: (i32, i64),
    /// `active` is compacted when it grows past this (twice what the last
    /// compaction left, so compaction stays linear overall).
    compact_at: usize,
    /// How many of `active`'s first entries start at or before the last
    /// column asked for (`active` is in start order).
    started: usize,
    /// `(tid, end)` of the started reads not yet ended at the last column,
    /// sorted: their number is the column's `n_plp`, kept as the columns
    /// advance instead of counted over `active` at each one.
    open_ends: VecDeque<(i32, i64)>,
    /// Visited columns not yet consumed: the union of the kept reads'
    /// spans, as merged `(tid, beg, end)` intervals in order.
    pub(crate) coverage: VecDeque<(i32, i64, i64)>,
    /// The last column's reads (when resolved).
    pub(crate) plp: Vec<Entry>,
    /// The last column's number of reads (htslib `n_plp`).
    pub(crate) n_plp: usize,
    /// Largest node count seen when a read was pushed (for exactness checks).
    pub(crate) max_cnt_seen: i64,
    /// Reads dropped by the depth cap.
    pub(crate) dropped: u64,
    /// Keep a copy of each read's record in its node (`Node::rec`).
    pub(crate) keep_records: bool,
    /// The overlap adjustment of htslib 1.17 and later (deletions).
    pub(crate) overlap_catch_up: bool,
}

impl PlpFile {
    pub(crate) fn new(maxcnt: i32, overlaps: bool) -> Self {
        PlpFile {
            nodes: Vec::new(),
            pool: Vec::new(),
            active: Vec::new(),
            gone: Vec::new(),
            ends: VecDeque::new(),
            cur_tid: 0,
            cur_pos: 0,
            max_tid: -1,
            max_pos: -1,
            is_eof: false,
            maxcnt,
            overlaps: overlaps.then(Overlaps::default),
            floor: (-1, -1),
            compact_at: 64,
            started: 0,
            open_ends: VecDeque::new(),
            coverage: VecDeque::new(),
            plp: Vec::new(),
            n_plp: 0,
            max_cnt_seen: 0,
            dropped: 0,
            keep_records: false,
            overlap_catch_up: false,
        }
    }

    fn alloc(&mut self) -> u32 {
        match self.pool.pop() {
            Some(n) => n,
            None => {
                self.nodes.push(Node::default());
                self.gone.push(false);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn overlap_remove_record(&mut self, b: &RecordRef<'_>) {
        if let Some(o) = self.overlaps.as_mut() {
            let name = b.name();
            o.remove(&self.nodes, name, name_key(name));
        }
    }

    /// Reads that htslib's column loop has removed by now (every column
    /// before `(cur_tid, cur_pos)` produced): they leave the overlap table.
    fn retire(&mut self) {
        while let Some(&(tid, end, id)) = self.ends.front() {
            if !(tid < self.cur_tid || (tid == self.cur_tid && end < self.cur_pos)) {
                break;
            }
            self.ends.pop_front();
            self.gone[id as usize] = true;
            if let Some(o) = self.overlaps.as_mut() {
                let n = &self.nodes[id as usize];
                o.remove(&self.nodes, &n.name, n.name_hash);
            }
        }
    }

    /// Recycles gone reads that cannot cover `floor` or anything after it.
    fn compact(&mut self) {
        let (ft, fp) = self.floor;
        let mut w = 0;
        let started = self.started;
        for r in 0..self.active.len() {
            let a = self.active[r];
            if self.gone[a.id as usize] && before(a.tid, a.end - 1, ft, fp) {
                self.pool.push(a.id);
                if r < started {
                    self.started -= 1;
                }
                continue;
            }
            self.active[w] = a;
            w += 1;
        }
        self.active.truncate(w);
        self.compact_at = (2 * self.active.len()).max(64);
    }

    /// Columns before `(tid, pos)` will not be asked for.
    pub(crate) fn raise_floor(&mut self, tid: i32, pos: i64) {
        if before(self.floor.0, self.floor.1, tid, pos) {
            self.floor = (tid, pos);
        }
    }

    /// The file's reads have all been pushed.
    pub(crate) fn is_eof(&self) -> bool {
        self.is_eof
    }

    /// `bam_plp_push(iter, b)`; `None` marks the end of input.
    pub(crate) fn push(&mut self, b: Option<&RecordRef<'_>>) -> Result<(), PileupError> {
        let Some(b) = b else {
            self.is_eof = true;
            return Ok(());
        };
        if b.ref_id() < 0 || b.flag() & FUNMAP != 0 {
            self.overlap_remove_record(b);
            return Ok(());
        }
        self.retire();
        let cnt = self.ends.len() as i64 + 1;
        self.max_cnt_seen = self.max_cnt_seen.max(cnt);
        if self.cur_tid == b.ref_id() && self.cur_pos == i64::from(b.pos()) && cnt > i64::from(self.maxcnt) {
            self.overlap_remove_record(b);
            self.dropped += 1;
            return Ok(());
        }
        let t = self.alloc();
        self.nodes[t as usize].fill(b, self.keep_records);
        self.gone[t as usize] = false;
        let (tid, beg, end) = {
            let n = &self.nodes[t as usize];
            (n.tid, n.beg, n.end)
        };
        if tid < self.max_tid {
            self.pool.push(t);
            return Err(PileupError::Unsorted { tid, pos: beg, what: "references out of order" });
        }
        if tid == self.max_tid && beg < self.max_pos {
            self.pool.push(t);
            return Err(PileupError::Unsorted { tid, pos: beg, what: "reads out of order" });
        }
        let kept = end > self.cur_pos || tid > self.cur_tid;
        self.max_tid = tid;
        self.max_pos = beg;
        self.cur_tid = tid;
        self.cur_pos = beg;
        if !kept {
            self.pool.push(t);
            return Ok(());
        }
        self.overlap_push(t)?;
        self.active.push(Active { id: t, tid, beg, end });
        let mut at = self.ends.len();
        while at > 0 && (tid, end) < (self.ends[at - 1].0, self.ends[at - 1].1) {
            at -= 1;
        }
        self.ends.insert(at, (tid, end, t));
        if end > beg {
            match self.coverage.back_mut() {
                Some(last) if last.0 == tid && beg <= last.2 => last.2 = last.2.max(end),
                _ => self.coverage.push_back((tid, beg, end)),
            }
        }
        if self.active.len() > self.compact_at {
            self.compact();
        }
        Ok(())
    }

    /// htslib's `overlap_push`.
    fn overlap_push(&mut self, node: u32) -> Result<(), PileupError> {
        let Some(o) = self.overlaps.as_mut() else { return Ok(()) };
        let n = &self.nodes[node as usize];
        if n.flag & FMUNMAP != 0 || n.flag & FPROPER_PAIR == 0 {
            return Ok(());
        }
        if (n.mtid >= 0 && n.tid != n.mtid) || (i64::from(n.isize).abs() >= 2 * n.l_qseq && n.mpos >= n.end) {
            return Ok(());
        }
        match o.get(&self.nodes, &n.name, n.name_hash) {
            None => {
                if n.mpos >= n.beg || (n.flag & FPAIRED != 0 && n.mpos == -1) {
                    o.insert(&self.nodes, &n.name, n.name_hash, node);
                }
                Ok(())
            }
            Some(a) => {
                let key = n.name_hash;
                // Remove first (by name), then adjust, as htslib does.
                let name = std::mem::take(&mut self.nodes[node as usize].name);
                o.remove(&self.nodes, &name, key);
                self.nodes[node as usize].name = name;
                let r = tweak_overlap_quality(&mut self.nodes, a, node, self.overlap_catch_up);
                if self.keep_records {
                    self.nodes[a as usize].sync_record_qual();
                    self.nodes[node as usize].sync_record_qual();
                }
                r
            }
        }
    }

    /// Whether the reads pushed so far settle column `(tid, pos)`: a later
    /// read starts after it, or there are no more reads.
    #[inline]
    pub(crate) fn settled(&self, tid: i32, pos: i64) -> bool {
        self.is_eof || before(tid, pos, self.max_tid, self.max_pos)
    }

    /// The first visited column at or after `(tid, pos)` that the reads
    /// pushed so far prove, dropping coverage before it; `None` when more
    /// reads are needed (or there are none: see [`PlpFile::is_eof`]).
    pub(crate) fn first_covered(&mut self, tid: i32, pos: i64) -> Option<(i32, i64)> {
        if before(self.floor.0, self.floor.1, tid, pos) {
            self.floor = (tid, pos);
        }
        while let Some(&(t, _, e)) = self.coverage.front() {
            if before(t, e - 1, tid, pos) {
                self.coverage.pop_front();
            } else {
                break;
            }
        }
        // Later reads start at or after the last one, which is at or after
        // the start of every interval: an interval found is final.
        let &(t, s, _) = self.coverage.front()?;
        Some(if t == tid { (t, s.max(pos)) } else { (t, s) })
    }

    /// Moves the coverage before `(tid, end)` to `out` (an interval that
    /// straddles it is split).
    pub(crate) fn take_coverage_before(&mut self, tid: i32, end: i64, out: &mut Vec<(i32, i64, i64)>) {
        while let Some(&mut (t, s, e)) = self.coverage.front_mut() {
            if !before(t, s, tid, end) {
                break;
            }
            if t == tid && e > end {
                out.push((t, s, end));
                if let Some(f) = self.coverage.front_mut() {
                    f.1 = end;
                }
                break;
            }
            out.push((t, s, e));
            self.coverage.pop_front();
        }
        if before(self.floor.0, self.floor.1, tid, end) {
            self.floor = (tid, end);
        }
    }

    /// Collects column `(tid, pos)` (which must be settled, and not before
    /// an earlier request): `n_plp` and, when `resolve`, the reads in
    /// htslib's order. Returns `n_plp`.
    pub(crate) fn column(&mut self, tid: i32, pos: i64, resolve: bool) -> Result<usize, PileupError> {
        self.floor = (tid, pos);
        self.plp.clear();
        // Reads covering the column: those started by it and not ended.
        while let Some(a) = self.active.get(self.started) {
            if before(tid, pos, a.tid, a.beg) {
                break;
            }
            // Reads have similar lengths: the place is near the back.
            let key = (a.tid, a.end);
            let mut at = self.open_ends.len();
            while at > 0 && key < self.open_ends[at - 1] {
                at -= 1;
            }
            self.open_ends.insert(at, key);
            self.started += 1;
        }
        while let Some(&(t, end)) = self.open_ends.front() {
            if !(t < tid || (t == tid && end <= pos)) {
                break;
            }
            self.open_ends.pop_front();
        }
        self.n_plp = self.open_ends.len();
        if !resolve {
            // `active` is compacted by `push` as it grows.
            return Ok(self.n_plp);
        }
        let started = self.started;
        let mut w = 0;
        for r in 0..self.active.len() {
            let a = self.active[r];
            if a.tid == tid && a.beg <= pos && pos < a.end {
                let e = resolve_cigar2(&mut self.nodes[a.id as usize], a.id, pos)?;
                self.plp.push(e);
            } else if self.gone[a.id as usize] && before(a.tid, a.end - 1, tid, pos) {
                self.pool.push(a.id);
                if r < started {
                    self.started -= 1;
                }
                continue;
            }
            self.active[w] = a;
            w += 1;
        }
        self.active.truncate(w);
        debug_assert_eq!(self.plp.len(), self.n_plp);
        Ok(self.n_plp)
    }
}

/// htslib's `resolve_cigar2`.
fn resolve_cigar2(n: &mut Node, id: u32, pos: i64) -> Result<Entry, PileupError> {
    let cig = &n.cigar;
    let nc = cig.len() as i64;
    let op_at = |k: i64| cig[k as usize] & 0xf;
    let len_at = |k: i64| i64::from(cig[k as usize] >> 4);
    let s = &mut n.s;
    let beg = n.beg;
    let bad = || PileupError::BadCigar { tid: n.tid, pos: n.beg };
    // The first operation at or after `k` that consumes the reference
    // (`nc` if none); the insertions and soft clips passed add to `y`.
    let next_ref_op = |mut k: i64, y: &mut i64| {
        while k < nc && !is_ref_op(op_at(k)) {
            if matches!(op_at(k), CINS | CSOFT_CLIP) {
                *y += len_at(k);
            }
            k += 1;
        }
        k
    };
    let first = s.k == -1;
    if first {
        if nc == 1 {
            if is_match(op_at(0)) {
                s.k = 0;
                s.x = n.beg;
                s.y = 0;
            } else {
                return Err(bad());
            }
        } else {
            s.x = n.beg;
            s.y = 0;
            let k = next_ref_op(0, &mut s.y);
            if k >= nc {
                return Err(bad());
            }
            s.k = k;
        }
    }
    // htslib resolves every column and steps at most one operation each
    // time; columns may be skipped here, so then step until the operation
    // covering `pos` (the state htslib would have reached).
    if !first || pos > beg {
        let consecutive = !first && pos == s.last + 1;
        while pos - s.x >= len_at(s.k) {
            let l = len_at(s.k);
            if s.k + 1 >= nc {
                return Err(bad());
            }
            let op = op_at(s.k + 1);
            if is_ref_op(op) {
                if is_match(op_at(s.k)) {
                    s.y += l;
                }
                s.x += l;
                s.k += 1;
            } else {
                if is_match(op_at(s.k)) {
                    s.y += l;
                }
                s.x += l;
                s.k = next_ref_op(s.k + 1, &mut s.y);
            }
            if s.k >= nc {
                return Err(bad());
            }
            if consecutive {
                break;
            }
        }
    }
    s.last = pos;
    let op = op_at(s.k);
    let l = len_at(s.k);
    let mut e = Entry { node: id, ..Entry::default() };
    if s.x + l - 1 == pos && s.k + 1 < nc {
        let op2 = op_at(s.k + 1);
        let l2 = len_at(s.k + 1);
        if op2 == CDEL {
            e.indel = -(l2 as i32);
        } else if op2 == CINS {
            e.indel = l2 as i32;
        } else if op2 == CPAD && s.k + 2 < nc {
            let mut l3 = 0i64;
            let mut k = s.k + 2;
            while k < nc {
                let o = op_at(k);
                let ll = len_at(k);
                if o == CINS {
                    l3 += ll;
                } else if o == CDEL || is_match(o) || o == CREF_SKIP {
                    break;
                }
                k += 1;
            }
            if l3 > 0 {
                e.indel = l3 as i32;
            }
        }
    }
    if is_match(op) {
        e.qpos = s.y + (pos - s.x);
    } else if op == CDEL || op == CREF_SKIP {
        e.is_del = true;
        e.qpos = s.y;
        e.is_refskip = op == CREF_SKIP;
    }
    e.is_head = pos == n.beg;
    e.is_tail = pos == s.end;
    Ok(e)
}

/// Cursor over a CIGAR for `cigar_iref2iseq_set` / `_next`.
struct IrefCursor {
    k: usize,
    icig: i64,
    iseq: i64,
    iref: i64,
}

/// `cigar_iref2iseq_set`: returns 0 (CMATCH) on success, -1 when not
/// covered, -2 on an unexpected operation.
fn iref_set(cig: &[u32], c: &mut IrefCursor) -> i32 {
    let mut pos = c.iref;
    if pos < 0 {
        return -1;
    }
    c.icig = 0;
    c.iseq = 0;
    c.iref = 0;
    while c.k < cig.len() {
        let op = cig[c.k] & 0xf;
        let n = i64::from(cig[c.k] >> 4);
        if op == CSOFT_CLIP {
            c.k += 1;
            c.iseq += n;
            c.icig = 0;
            continue;
        }
        if op == CHARD_CLIP || op == CPAD {
            c.k += 1;
            c.icig = 0;
            continue;
        }
        if is_match(op) {
            pos -= n;
            if pos < 0 {
                c.icig = n + pos;
                c.iseq += c.icig;
                c.iref += c.icig;
                return 0;
            }
            c.k += 1;
            c.iseq += n;
            c.icig = 0;
            c.iref += n;
            continue;
        }
        if op == CINS {
            c.k += 1;
            c.iseq += n;
            c.icig = 0;
            continue;
        }
        if op == CDEL || op == CREF_SKIP {
            pos -= n;
            if pos < 0 {
                pos = 0;
            }
            c.k += 1;
            c.icig = 0;
            c.iref += n;
            continue;
        }
        return -2;
    }
    c.iseq = -1;
    -1
}

/// `cigar_iref2iseq_next`.
fn iref_next(cig: &[u32], c: &mut IrefCursor) -> i32 {
    while c.k < cig.len() {
        let op = cig[c.k] & 0xf;
        let n = i64::from(cig[c.k] >> 4);
        if is_match(op) {
            if c.icig >= n - 1 {
                c.icig = -1;
                c.k += 1;
                continue;
            }
            c.iseq += 1;
            c.icig += 1;
            c.iref += 1;
            return 0;
        }
        if op == CDEL || op == CREF_SKIP {
            c.k += 1;
            c.iref += n;
            c.icig = -1;
            continue;
        }
        if op == CINS || op == CSOFT_CLIP {
            c.k += 1;
            c.iseq += n;
            c.icig = -1;
            continue;
        }
        if op == CHARD_CLIP || op == CPAD {
            c.k += 1;
            c.icig = -1;
            continue;
        }
        return -2;
    }
    c.iseq = -1;
    c.iref = -1;
    -1
}

/// htslib's `tweak_overlap_quality(a, b)`: `a` is the earlier mate.
/// `catch_up`: htslib 1.17's and later's handling of a deletion in one
/// read where the other has bases (1.16 skips those positions).
fn tweak_overlap_quality(nodes: &mut [Node], a_id: u32, b_id: u32, catch_up: bool) -> Result<(), PileupError> {
    if a_id == b_id {
        return Ok(());
    }
    let (a, b) = if a_id < b_id {
        let (lo, hi) = nodes.split_at_mut(b_id as usize);
        (&mut lo[a_id as usize], &mut hi[0])
    } else {
        let (lo, hi) = nodes.split_at_mut(a_id as usize);
        (&mut hi[0], &mut lo[b_id as usize])
    };
    let err = || PileupError::BadCigar { tid: b.tid, pos: b.beg };
    let mut iref = b.beg;
    let mut ac = IrefCursor { k: 0, icig: 0, iseq: 0, iref: iref - a.beg };
    let mut bc = IrefCursor { k: 0, icig: 0, iseq: 0, iref: iref - b.beg };
    let mut a_ret = iref_set(&a.cigar, &mut ac);
    if a_ret < 0 {
        return if a_ret < -1 { Err(err()) } else { Ok(()) };
    }
    let mut b_ret = iref_set(&b.cigar, &mut bc);
    if b_ret < 0 {
        return if b_ret < -1 { Err(err()) } else { Ok(()) };
    }
    let (amul, bmul): (u32, u32) = if htslib_name_hash(&a.name) & 1 != 0 { (1, 0) } else { (0, 1) };
    loop {
        while a_ret >= 0 && ac.iref >= 0 && ac.iref < iref - a.beg {
            a_ret = iref_next(&a.cigar, &mut ac);
        }
        if a_ret < 0 {
            return if a_ret < -1 { Err(err()) } else { Ok(()) };
        }
        // 1.16 moves `iref` on to `a` before stepping `b`; later versions
        // step both to the same `iref` first.
        if !catch_up && iref < ac.iref + a.beg {
            iref = ac.iref + a.beg;
        }
        while b_ret >= 0 && bc.iref >= 0 && bc.iref < iref - b.beg {
            b_ret = iref_next(&b.cigar, &mut bc);
        }
        if b_ret < 0 {
            return if b_ret < -1 { Err(err()) } else { Ok(()) };
        }
        if catch_up && iref < ac.iref + a.beg {
            iref = ac.iref + a.beg;
        }
        if iref < bc.iref + b.beg {
            iref = bc.iref + b.beg;
        }
        iref += 1;
        if ac.iref + a.beg != bc.iref + b.beg {
            if !catch_up {
                continue;
            }
            // htslib 1.17 on: a deletion in one read moves the other on to
            // its position, amending the other's qualities on the way.
            let prev_is_del = |cig: &[u32], k: usize| k > 0 && cig[k - 1] & 0xf == CDEL;
            let amend = |q: &mut [u8], i: i64, keep: u32| {
                if let Some(v) = usize::try_from(i).ok().and_then(|i| q.get_mut(i)) {
                    *v = if keep != 0 { (f64::from(*v) * 0.8) as u8 } else { 0 };
                }
            };
            if ac.iref + a.beg < bc.iref + b.beg && prev_is_del(&b.cigar, bc.k) {
                loop {
                    amend(&mut a.qual, ac.iseq, amul);
                    a_ret = iref_next(&a.cigar, &mut ac);
                    if a_ret < 0 {
                        return if a_ret < -1 { Err(err()) } else { Ok(()) };
                    }
                    if ac.iref + a.beg >= bc.iref + b.beg {
                        break;
                    }
                }
            } else if prev_is_del(&a.cigar, ac.k) {
                loop {
                    amend(&mut b.qual, bc.iseq, bmul);
                    b_ret = iref_next(&b.cigar, &mut bc);
                    if b_ret < 0 {
                        return if b_ret < -1 { Err(err()) } else { Ok(()) };
                    }
                    if bc.iref + b.beg >= ac.iref + a.beg {
                        break;
                    }
                }
            } else {
                continue;
            }
        }
        if ac.iseq > a.l_qseq || bc.iseq > b.l_qseq {
            return Err(err());
        }
        let (ai, bi) = (ac.iseq as usize, bc.iseq as usize);
        // htslib would touch memory past the qualities here (SEQ `*`);
        // there is nothing to adjust.
        if ai >= a.qual.len() || bi >= b.qual.len() {
            continue;
        }
        let (qa, qb) = (a.qual[ai], b.qual[bi]);
        if a.base_code(ai) == b.base_code(bi) {
            let q = (u32::from(qa) + u32::from(qb)).min(200);
            a.qual[ai] = (amul * q) as u8;
            b.qual[bi] = (bmul * q) as u8;
        } else if qa > qb {
            a.qual[ai] = (0.8 * f64::from(qa)) as u8;
            b.qual[bi] = 0;
        } else if qa < qb {
            b.qual[bi] = (0.8 * f64::from(qb)) as u8;
            a.qual[ai] = 0;
        } else {
            a.qual[ai] = (f64::from(amul) * 0.8 * f64::from(qa)) as u8;
            b.qual[bi] = (f64::from(bmul) * 0.8 * f64::from(qb)) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_hash_matches_htslib_formula() {
        // X31 of "a" is 97; Wang hash computed by hand from htslib's code.
        let mut key: u32 = 97;
        key = key.wrapping_add(!(key << 15));
        key ^= key >> 10;
        key = key.wrapping_add(key << 3);
        key ^= key >> 6;
        key = key.wrapping_add(!(key << 11));
        key ^= key >> 16;
        assert_eq!(htslib_name_hash(b"a"), key);
        assert_eq!(htslib_name_hash(b""), {
            let mut k: u32 = 0;
            k = k.wrapping_add(!(k << 15));
            k ^= k >> 10;
            k = k.wrapping_add(k << 3);
            k ^= k >> 6;
            k = k.wrapping_add(!(k << 11));
            k ^= k >> 16;
            k
        });
    }
}
