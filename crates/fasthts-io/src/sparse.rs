//! A remote object's bytes in memory of its length, holding only the
//! ranges fetched ([`SparseCopy::fetch`]); the rest reads as zeros, which
//! no BGZF block header matches. What a mapped BAM or bgzipped SAM read
//! by region is made of when it is a URL: the index says which ranges a
//! query reads, they are fetched (in parallel, on the current pool) before
//! it reads them, and the readers of mapped files read them unchanged.

use crate::remote::RemoteObject;
use memmap2::MmapMut;
use std::io;
use std::sync::Arc;

/// The largest request [`SparseCopy::fetch`] makes: a long range is
/// fetched in parts of this size, in parallel.
const PART_BYTES: u64 = 4 << 20;

/// The ranges of a remote object fetched so far, in memory of its length
/// (an anonymous map: pages never written take no memory).
pub struct SparseCopy {
    map: MmapMut,
    object: Arc<RemoteObject>,
    /// Fetched `[start, end)` ranges, sorted, disjoint.
    filled: Vec<(u64, u64)>,
}

impl SparseCopy {
    /// Memory for `object`, holding `known` as its first bytes (what was
    /// fetched already to recognise it: not fetched again).
    pub fn new(object: Arc<RemoteObject>, known: &[u8]) -> io::Result<SparseCopy> {
        let len = object.len();
        let mut map = memmap2::MmapOptions::new().len(len as usize).no_reserve_swap().map_anon()?;
        let known = &known[..known.len().min(len as usize)];
        map[..known.len()].copy_from_slice(known);
        let filled = if known.is_empty() { Vec::new() } else { vec![(0, known.len() as u64)] };
        Ok(SparseCopy { map, object, filled })
    }

    /// The object's bytes: those fetched, zeros elsewhere.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The object read.
    pub fn object(&self) -> &Arc<RemoteObject> {
        &self.object
    }

    /// How many of the object's first bytes have been fetched (its header).
    pub fn fetched_prefix(&self) -> u64 {
        self.filled.first().filter(|&&(s, _)| s == 0).map_or(0, |&(_, e)| e)
    }

    /// Whether `[start, end)` has been fetched.
    pub fn is_fetched(&self, start: u64, end: u64) -> bool {
        let end = end.min(self.map.len() as u64);
        start >= end || self.filled.iter().any(|&(s, e)| s <= start && end <= e)
    }

    /// Fetches the object's first bytes until `complete` says they hold
    /// what is wanted (a header), from 64 KiB growing fourfold, each
    /// time only what was not fetched yet; or the whole object.
    pub fn fetch_start_until(&mut self, complete: impl Fn(&[u8]) -> bool) -> io::Result<()> {
        let len = self.map.len() as u64;
        let mut prefix = 64u64 << 10;
        loop {
            self.fetch(&[(0, prefix)])?;
            if prefix >= len || complete(&self.map) {
                return Ok(());
            }
            prefix *= 4;
        }
    }

    /// Fetches what `ranges` hold that has not been fetched, on the
    /// current pool's threads.
    pub fn fetch(&mut self, ranges: &[(u64, u64)]) -> io::Result<()> {
        use rayon::prelude::*;
        let len = self.map.len() as u64;
        let mut wanted: Vec<(u64, u64)> = ranges.iter().map(|&(s, e)| (s.min(len), e.min(len))).filter(|(s, e)| s < e).collect();
        wanted.sort_unstable();
        // What is missing, in parts of at most PART_BYTES.
        let mut parts = Vec::new();
        let mut covered_to = 0u64;
        for (start, end) in wanted {
            let mut at = start.max(covered_to);
            covered_to = covered_to.max(end);
            for &(fs, fe) in &self.filled {
                if fe <= at || fs >= end {
                    continue;
                }
                if fs > at {
                    split_into(&mut parts, at, fs);
                }
                at = at.max(fe);
            }
            if at < end {
                split_into(&mut parts, at, end);
            }
        }
        if parts.is_empty() {
            return Ok(());
        }
        // Disjoint slices of the map, one per part.
        let mut slices = Vec::with_capacity(parts.len());
        let mut rest: &mut [u8] = &mut self.map;
        let mut rest_at = 0u64;
        for &(start, end) in &parts {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut((start - rest_at) as usize);
            let (part, tail) = tail.split_at_mut((end - start) as usize);
            slices.push((start, part));
            rest = tail;
            rest_at = end;
        }
        let object = &self.object;
        slices.into_par_iter().with_max_len(1).try_for_each(|(start, part)| object.read_range(start, part))?;
        self.filled.extend(parts);
        self.filled.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.filled.len());
        for &(s, e) in &self.filled {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.filled = merged;
        Ok(())
    }

    /// A new copy of the same object holding the ranges fetched at its
    /// start (the header) and at its end (the EOF marker), copied, not
    /// fetched again.
    pub fn copy_ends(&self) -> io::Result<SparseCopy> {
        let len = self.map.len() as u64;
        let mut map = memmap2::MmapOptions::new().len(len as usize).no_reserve_swap().map_anon()?;
        let filled: Vec<(u64, u64)> = self.filled.iter().copied().filter(|&(s, e)| s == 0 || e == len).collect();
        for &(s, e) in &filled {
            map[s as usize..e as usize].copy_from_slice(&self.map[s as usize..e as usize]);
        }
        Ok(SparseCopy { map, object: Arc::clone(&self.object), filled })
    }
}

/// `[start, end)` pushed onto `parts` in pieces of at most [`PART_BYTES`].
fn split_into(parts: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let mut at = start;
    while at < end {
        let next = (at + PART_BYTES).min(end);
        parts.push((at, next));
        at = next;
    }
}

/// One byte range at a time of a remote object, in a buffer reused for
/// the next range (fresh pages for each range were measured to cost a
/// third of a core in page faults): a thread reading a large object part
/// by part holds one part.
pub struct PartBuffer {
    buf: Vec<u8>,
    object: Arc<RemoteObject>,
    /// Where in the object the range held starts.
    start: u64,
}

impl PartBuffer {
    /// A buffer for parts of `object` (none of it fetched yet).
    pub fn new(object: Arc<RemoteObject>) -> PartBuffer {
        PartBuffer { buf: Vec::new(), object, start: 0 }
    }

    /// Fetches `[start, end)` (clipped to the object) in one request, in
    /// place of the range held before; what of it lies in `known`, the
    /// object's first bytes fetched already (its header), is copied from
    /// there instead.
    pub fn fetch(&mut self, start: u64, end: u64, known: &[u8]) -> io::Result<()> {
        let end = end.min(self.object.len());
        let start = start.min(end);
        self.start = start;
        // Overwritten whole below: only growth is zeroed.
        self.buf.resize((end - start) as usize, 0);
        let copied = (known.len() as u64).clamp(start, end);
        let (head, rest) = self.buf.split_at_mut((copied - start) as usize);
        if copied > start {
            head.copy_from_slice(&known[start as usize..copied as usize]);
        }
        self.object.read_range(copied, rest)
    }

    /// The range fetched last, and where in the object it starts.
    pub fn bytes(&self) -> (&[u8], u64) {
        (&self.buf, self.start)
    }
}
