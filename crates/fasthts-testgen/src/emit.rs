//! Output ordering.
//!
//! Templates are generated in order of their leftmost record (the "anchor"),
//! but a template also has records further right: the mate, supplementary
//! and secondary alignments, possibly on later references. Those wait in a
//! min-heap keyed exactly like `samtools sort` orders records
//! (tid as unsigned so unplaced reads go last, then POS, then the reverse
//! strand flag; ties keep insertion order, as samtools' merge sort is stable).
//! Before a template at (tid, pos) is generated, everything strictly before
//! (tid, pos) is written; nothing generated later can sort before it.
//!
//! In `--unsorted` mode records instead go through a random-replacement
//! reservoir, which scrambles the order within a window of records.
//!
//! Record text lives in pooled buffers, so steady-state generation does not
//! allocate per record.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

use crate::rng::Rng;

/// samtools coordinate sort key: (tid as u32, POS 1-based, is_reverse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SortKey {
    pub tid: u32,
    pub pos1: u32,
    pub rev: bool,
}

impl SortKey {
    pub fn new(tid: i32, pos0: u32, placed: bool, rev: bool) -> SortKey {
        if !placed || tid < 0 {
            // Unplaced: tid -1 cast to unsigned is the largest, POS 0.
            SortKey {
                tid: u32::MAX,
                pos1: 0,
                rev,
            }
        } else {
            SortKey {
                tid: tid as u32,
                pos1: pos0 + 1,
                rev,
            }
        }
    }
}

enum Mode {
    Sorted {
        /// (key, insertion sequence, slot)
        heap: BinaryHeap<Reverse<(SortKey, u64, u32)>>,
        last: Option<SortKey>,
    },
    Shuffled {
        window: Vec<u32>,
        cap: usize,
        rng: Rng,
    },
}

pub struct Emitter<W: Write> {
    out: W,
    mode: Mode,
    slots: Vec<Vec<u8>>,
    free: Vec<u32>,
    seq: u64,
    pub records: u64,
    pub bytes: u64,
}

impl<W: Write> Emitter<W> {
    pub fn new(out: W, shuffle: Option<(usize, Rng)>) -> Self {
        let mode = match shuffle {
            None => Mode::Sorted {
                heap: BinaryHeap::new(),
                last: None,
            },
            Some((cap, rng)) => Mode::Shuffled {
                window: Vec::with_capacity(cap),
                cap: cap.max(1),
                rng,
            },
        };
        Emitter {
            out,
            mode,
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            records: 0,
            bytes: 0,
        }
    }

    /// Write raw text (the header) directly.
    pub fn write_raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.bytes += b.len() as u64;
        self.out.write_all(b)
    }

    /// A cleared buffer to format one record line into; hand it back with
    /// [`Emitter::push`].
    pub fn take_buf(&mut self) -> (u32, Vec<u8>) {
        match self.free.pop() {
            Some(i) => {
                let mut b = std::mem::take(&mut self.slots[i as usize]);
                b.clear();
                (i, b)
            }
            None => {
                self.slots.push(Vec::new());
                ((self.slots.len() - 1) as u32, Vec::with_capacity(512))
            }
        }
    }

    pub fn push(&mut self, key: SortKey, slot: u32, buf: Vec<u8>) -> io::Result<()> {
        self.slots[slot as usize] = buf;
        self.seq += 1;
        match &mut self.mode {
            Mode::Sorted { heap, .. } => {
                heap.push(Reverse((key, self.seq, slot)));
                Ok(())
            }
            Mode::Shuffled { window, cap, rng } => {
                if window.len() < *cap {
                    window.push(slot);
                    return Ok(());
                }
                // Replace a random element of the full window and write it out.
                let j = rng.below(window.len() as u64) as usize;
                let victim = std::mem::replace(&mut window[j], slot);
                self.write_slot(victim)
            }
        }
    }

    /// Write every pending record sorting strictly before (tid, pos0).
    /// No-op when shuffling.
    pub fn flush_before(&mut self, tid: u32, pos0: u32) -> io::Result<()> {
        let limit = SortKey {
            tid,
            pos1: pos0 + 1,
            rev: false,
        };
        self.flush_while(|k| k < limit)
    }

    fn flush_while(&mut self, pred: impl Fn(SortKey) -> bool) -> io::Result<()> {
        loop {
            let slot = match &mut self.mode {
                Mode::Sorted { heap, last } => match heap.peek() {
                    Some(Reverse((k, _, _))) if pred(*k) => {
                        let Reverse((k, _, slot)) = heap.pop().unwrap();
                        // Hard guarantee of the exact-order promise: a bug in
                        // the anchor logic must not silently produce an
                        // unsorted file labelled SO:coordinate.
                        if let Some(l) = last {
                            assert!(
                                *l <= k,
                                "internal error: record order violated ({l:?} then {k:?})"
                            );
                        }
                        *last = Some(k);
                        slot
                    }
                    _ => return Ok(()),
                },
                Mode::Shuffled { .. } => return Ok(()),
            };
            self.write_slot(slot)?;
        }
    }

    fn write_slot(&mut self, slot: u32) -> io::Result<()> {
        let b = &self.slots[slot as usize];
        self.records += 1;
        self.bytes += b.len() as u64;
        self.out.write_all(b)?;
        self.free.push(slot);
        Ok(())
    }

    /// Write everything that is pending and flush the writer.
    pub fn finish(mut self) -> io::Result<(u64, u64)> {
        self.flush_while(|_| true)?;
        if let Mode::Shuffled { window, rng, .. } = &mut self.mode {
            let mut w = std::mem::take(window);
            rng.shuffle(&mut w);
            for slot in w {
                self.write_slot(slot)?;
            }
        }
        self.out.flush()?;
        Ok((self.records, self.bytes))
    }
}
