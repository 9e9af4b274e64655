//! samtools stats' coverage ring buffer, kept as samtools keeps it: a
//! window of per-position depths starting at the last read's position,
//! flushed into the coverage histogram as reads move on. Its quirks are
//! part of the output (a flush at a reference change or at the end leaves
//! the window's last slot; growing the window copies bytes where samtools
//! means ints), so they are reproduced here, slot for slot.

/// The coverage histogram's bins (`-c min,max,step`, adjusted as samtools
/// adjusts them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoverageBins {
    pub min: i32,
    pub max: i32,
    pub step: i32,
    /// Number of bins: below `min`, the steps, above `max`.
    pub count: usize,
}

impl CoverageBins {
    /// samtools' adjustment of `-c min,max,step`: a step wider than the
    /// range is cut to it, and `max` moved to the end of its last step.
    pub fn new(min: i32, max: i32, step: i32) -> CoverageBins {
        let mut step = step;
        if i64::from(step) > i64::from(max) - i64::from(min) + 1 {
            step = max.wrapping_sub(min);
            if step <= 0 {
                step = 1;
            }
        }
        let count = (3 + (max.wrapping_sub(min)) / step).max(1) as usize;
        let max = min.wrapping_add(((max.wrapping_sub(min)) / step + 1).wrapping_mul(step)).wrapping_sub(1);
        CoverageBins { min, max, step, count }
    }

    /// The bin of `depth` (samtools' `coverage_idx`).
    #[inline]
    fn index(&self, depth: i32) -> usize {
        if depth < self.min {
            0
        } else if depth > self.max {
            self.count - 1
        } else {
            (1 + (depth - self.min) / self.step) as usize
        }
    }
}

/// The ring of depths.
pub(crate) struct RingBuffer {
    /// Position of the slot at `start`.
    pos: i64,
    start: i32,
    slots: Vec<i32>,
}

/// Why a read could not be added (samtools exits with these words).
#[derive(Debug)]
pub(crate) enum RingError {
    TooLong { len: i64, size: usize },
    NotSorted { from: i64, after: i64 },
    Descending { pos: i64, after: i64 },
}

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingError::TooLong { len, size } => {
                write!(f, "The read length too big ({len}), please increase the buffer length (currently {size})")
            }
            RingError::NotSorted { from, after } => write!(f, "The reads are not sorted ({from} comes after {after})."),
            RingError::Descending { pos, after } => write!(f, "Expected coordinates in ascending order, got {pos} after {after}"),
        }
    }
}

impl RingBuffer {
    pub fn new(size: usize) -> RingBuffer {
        RingBuffer { pos: 0, start: 0, slots: vec![0; size] }
    }

    fn size(&self) -> i32 {
        self.slots.len() as i32
    }

    /// Slot of position `pos` (samtools' `round_buffer_lidx2ridx`).
    #[inline]
    fn slot(&self, pos: i64) -> i32 {
        let size = i64::from(self.size());
        ((i64::from(self.start) + (pos - self.pos) % size) % size) as i32
    }

    /// Counts the depths of positions before `pos` into `hist` and moves
    /// the window to start at `pos`; `None` flushes the window (all but
    /// its last slot, as samtools does) and restarts it.
    pub fn flush(&mut self, pos: Option<i64>, bins: &CoverageBins, hist: &mut [u64]) -> Result<(), RingError> {
        let new_pos = pos.unwrap_or(-1);
        if new_pos == self.pos {
            return Ok(());
        }
        let size = i64::from(self.size());
        let mut pos = new_pos;
        if pos == -1 || pos - self.pos >= size {
            pos = self.pos + size - 1;
        }
        if pos < self.pos {
            return Err(RingError::Descending { pos, after: self.pos });
        }
        let mut from = self.start;
        let to = self.slot(pos - 1);
        let mut count = |slot: &mut i32| {
            if *slot != 0 {
                hist[bins.index(*slot)] += 1;
                *slot = 0;
            }
        };
        if from > to {
            self.slots[from as usize..].iter_mut().for_each(&mut count);
            from = 0;
        }
        if from <= to {
            self.slots[from as usize..=to as usize].iter_mut().for_each(&mut count);
        }
        self.start = if new_pos == -1 { 0 } else { self.slot(pos) };
        self.pos = new_pos;
        Ok(())
    }

    /// Whether any position still holds a depth.
    pub fn holds_depth(&self) -> bool {
        self.slots.iter().any(|&s| s != 0)
    }

    /// Adds one to the depth of positions `[from, to)`.
    pub fn insert(&mut self, from: i64, to: i64) -> Result<(), RingError> {
        if to - from > i64::from(self.size()) {
            return Err(RingError::TooLong { len: to - from, size: self.slots.len() });
        }
        if from < self.pos {
            return Err(RingError::NotSorted { from, after: self.pos });
        }
        let mut first = self.slot(from) as usize;
        let last = self.slot(to) as usize;
        if first > last {
            self.slots[first..].iter_mut().for_each(|s| *s += 1);
            first = 0;
        }
        if first < last {
            self.slots[first..last].iter_mut().for_each(|s| *s += 1);
        }
        Ok(())
    }

    /// Grows the window to `size` slots as samtools' `realloc_buffers`
    /// does: it copies `size - start` *bytes* from `start` on, then (when
    /// `start > 1`) `start` bytes from the beginning to int slot
    /// `size - start`, so a grown window keeps only part of its depths.
    pub fn grow(&mut self, size: usize) {
        let old: Vec<u8> = self.slots.iter().flat_map(|s| s.to_le_bytes()).collect();
        let mut new = vec![0u8; size * 4];
        let start = self.start as usize;
        let n = self.slots.len() - start;
        let copy = |new: &mut [u8], at: usize, from: usize, len: usize| {
            let len = len.min(new.len().saturating_sub(at));
            new[at..at + len].copy_from_slice(&old[from..from + len]);
        };
        copy(&mut new, 0, start * 4, n);
        if start > 1 {
            copy(&mut new, n * 4, 0, start);
        }
        self.slots = new.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        self.start = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_are_counted_as_the_window_moves_on() {
        let bins = CoverageBins::new(1, 1000, 1);
        let mut hist = vec![0; bins.count];
        let mut ring = RingBuffer::new(20);
        ring.flush(None, &bins, &mut hist).unwrap();
        ring.flush(Some(5), &bins, &mut hist).unwrap();
        ring.insert(5, 10).unwrap();
        ring.flush(Some(7), &bins, &mut hist).unwrap();
        ring.insert(7, 12).unwrap();
        ring.flush(None, &bins, &mut hist).unwrap();
        // 5,6: 1; 7,8,9: 2; 10,11: 1.
        assert_eq!(hist[1], 4);
        assert_eq!(hist[2], 3);
    }

    #[test]
    fn bins_are_adjusted_as_samtools_adjusts_them() {
        let b = CoverageBins::new(1, 1000, 1);
        assert_eq!((b.count, b.max), (1002, 1000));
        let b = CoverageBins::new(10, 100, 7);
        assert_eq!((b.count, b.max), (15, 100));
    }
}
