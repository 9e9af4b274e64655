//! A model of htslib's `khash` open-addressing table for `u32` keys, kept
//! only for its iteration order.
//!
//! samtools writes the bins of each reference in the order of its bin hash
//! table's buckets. That order depends on the table's size, its quadratic
//! probing, its in-place rehash and the deletions `compress_binning` makes, so
//! reproducing samtools' index byte for byte means replaying the same
//! operations on a table that behaves the same way. The hash of a `u32` key
//! is the key itself (`kh_int_hash_func`), buckets are a power of two, the
//! table grows when the occupied count (deleted buckets included) reaches
//! 77 % of the buckets, and a growth request on a table with many deleted
//! buckets rehashes at the same size instead.

/// Bucket state bits, as khash keeps them: bit 1 = empty, bit 0 = deleted.
const EMPTY: u8 = 0b10;
const DELETED: u8 = 0b01;
const LIVE: u8 = 0b00;

/// Load factor at which khash grows its table.
const UPPER: f64 = 0.77;

/// An open-addressing table with khash's behaviour.
#[derive(Debug, Clone)]
pub(crate) struct KHash<V> {
    n_buckets: u32,
    size: u32,
    n_occupied: u32,
    upper_bound: u32,
    flags: Vec<u8>,
    keys: Vec<u32>,
    vals: Vec<V>,
}

impl<V: Default> KHash<V> {
    /// An empty table with no buckets (khash's `kh_init`).
    pub(crate) fn new() -> Self {
        Self {
            n_buckets: 0,
            size: 0,
            n_occupied: 0,
            upper_bound: 0,
            flags: Vec::new(),
            keys: Vec::new(),
            vals: Vec::new(),
        }
    }

    /// Number of live keys (`kh_size`).
    pub(crate) fn len(&self) -> usize {
        self.size as usize
    }

    fn is_empty_at(&self, i: u32) -> bool {
        self.flags[i as usize] & EMPTY != 0
    }

    fn is_deleted_at(&self, i: u32) -> bool {
        self.flags[i as usize] & DELETED != 0
    }

    fn is_live_at(&self, i: u32) -> bool {
        self.flags[i as usize] == LIVE
    }

    /// Bucket holding `key`, if present (`kh_get`).
    pub(crate) fn get(&self, key: u32) -> Option<u32> {
        if self.n_buckets == 0 {
            return None;
        }
        let mask = self.n_buckets - 1;
        let mut i = key & mask;
        let last = i;
        let mut step = 0u32;
        while !self.is_empty_at(i) && (self.is_deleted_at(i) || self.keys[i as usize] != key) {
            step += 1;
            i = i.wrapping_add(step) & mask;
            if i == last {
                return None;
            }
        }
        if self.is_live_at(i) {
            Some(i)
        } else {
            None
        }
    }

    /// Inserts `key` if absent (`kh_put`); returns its bucket and whether it
    /// was absent. A new key's value is `V::default()`.
    pub(crate) fn put(&mut self, key: u32) -> (u32, bool) {
        if self.n_occupied >= self.upper_bound {
            if self.n_buckets > (self.size << 1) {
                self.resize(self.n_buckets - 1);
            } else {
                self.resize(self.n_buckets + 1);
            }
        }
        let mask = self.n_buckets - 1;
        let nb = self.n_buckets;
        let mut x = nb;
        let mut site = nb;
        let mut i = key & mask;
        if self.is_empty_at(i) {
            x = i;
        } else {
            let last = i;
            let mut step = 0u32;
            while !self.is_empty_at(i) && (self.is_deleted_at(i) || self.keys[i as usize] != key) {
                if self.is_deleted_at(i) {
                    site = i;
                }
                step += 1;
                i = i.wrapping_add(step) & mask;
                if i == last {
                    x = site;
                    break;
                }
            }
            if x == nb {
                x = if self.is_empty_at(i) && site != nb {
                    site
                } else {
                    i
                };
            }
        }
        let xi = x as usize;
        if self.is_empty_at(x) {
            self.keys[xi] = key;
            self.vals[xi] = V::default();
            self.flags[xi] = LIVE;
            self.size += 1;
            self.n_occupied += 1;
            (x, true)
        } else if self.is_deleted_at(x) {
            self.keys[xi] = key;
            self.vals[xi] = V::default();
            self.flags[xi] = LIVE;
            self.size += 1;
            (x, true)
        } else {
            (x, false)
        }
    }

    /// Marks a live bucket deleted (`kh_del`).
    pub(crate) fn del(&mut self, bucket: u32) {
        if bucket < self.n_buckets && self.is_live_at(bucket) {
            self.flags[bucket as usize] |= DELETED;
            self.size -= 1;
            self.vals[bucket as usize] = V::default();
        }
    }

    /// khash's `kh_resize`, including its in-place "kick-out" rehash.
    fn resize(&mut self, requested: u32) {
        let mut new_n = requested.max(1).next_power_of_two();
        if new_n < 4 {
            new_n = 4;
        }
        if self.size >= (f64::from(new_n) * UPPER + 0.5) as u32 {
            return; // requested size too small: khash leaves the table alone
        }
        let mut new_flags = vec![EMPTY; new_n as usize];
        if self.n_buckets < new_n {
            self.keys.resize(new_n as usize, 0);
            self.vals.resize_with(new_n as usize, V::default);
        }
        let old_n = self.n_buckets;
        let new_mask = new_n - 1;
        for j in 0..old_n {
            if self.flags[j as usize] != LIVE {
                continue;
            }
            let mut key = self.keys[j as usize];
            let mut val = std::mem::take(&mut self.vals[j as usize]);
            self.flags[j as usize] |= DELETED;
            loop {
                let mut i = key & new_mask;
                let mut step = 0u32;
                while new_flags[i as usize] & EMPTY == 0 {
                    step += 1;
                    i = i.wrapping_add(step) & new_mask;
                }
                new_flags[i as usize] &= !EMPTY;
                if i < old_n && self.flags[i as usize] == LIVE {
                    // Kick out the element not yet moved and carry it on.
                    std::mem::swap(&mut self.keys[i as usize], &mut key);
                    std::mem::swap(&mut self.vals[i as usize], &mut val);
                    self.flags[i as usize] |= DELETED;
                } else {
                    self.keys[i as usize] = key;
                    self.vals[i as usize] = val;
                    break;
                }
            }
        }
        if old_n > new_n {
            self.keys.truncate(new_n as usize);
            self.vals.truncate(new_n as usize);
        }
        self.flags = new_flags;
        self.n_buckets = new_n;
        self.n_occupied = self.size;
        self.upper_bound = (f64::from(new_n) * UPPER + 0.5) as u32;
    }

    /// Number of buckets (`kh_end`).
    pub(crate) fn buckets(&self) -> u32 {
        self.n_buckets
    }

    /// The key of a live bucket, `None` for an empty or deleted one
    /// (`kh_exist` + `kh_key`).
    pub(crate) fn key_at(&self, bucket: u32) -> Option<u32> {
        (bucket < self.n_buckets && self.is_live_at(bucket)).then(|| self.keys[bucket as usize])
    }

    /// The value of a bucket (`kh_val`).
    #[cfg(test)]
    pub(crate) fn val(&self, bucket: u32) -> &V {
        &self.vals[bucket as usize]
    }

    /// The value of a bucket, mutably.
    pub(crate) fn val_mut(&mut self, bucket: u32) -> &mut V {
        &mut self.vals[bucket as usize]
    }

    /// Live keys in bucket order, as `kh_begin..kh_end` visits them.
    #[cfg(test)]
    pub(crate) fn keys_in_order(&self) -> Vec<u32> {
        (0..self.n_buckets).filter_map(|b| self.key_at(b)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_keys_iterate_in_order_and_grow() {
        let mut h: KHash<u32> = KHash::new();
        for k in [5u32, 1, 3] {
            let (b, absent) = h.put(k);
            assert!(absent);
            *h.val_mut(b) = k * 10;
        }
        // 4 buckets: 5 -> 1, 1 collides and probes to 2, 3 -> 3.
        assert_eq!(h.keys_in_order(), vec![5, 1, 3]);
        assert_eq!(h.get(1), Some(2));
        // khash checks the load before looking: with 3 occupied of upper
        // bound 3 even a put of a present key grows the table to 8 buckets
        // (rehashed in place), where 1 now sits in bucket 1.
        assert_eq!(h.put(1), (1, false));
        assert_eq!(h.buckets(), 8);
        h.put(4680);
        assert_eq!(h.keys_in_order(), vec![4680, 1, 3, 5]);
        for k in [5u32, 1, 3] {
            assert_eq!(*h.val(h.get(k).unwrap()), k * 10);
        }
        assert_eq!(h.get(4680).map(|b| *h.val(b)), Some(0));
        assert!(h.get(2).is_none());
    }

    #[test]
    fn deletion_then_insertion_reuses_slots() {
        let mut h: KHash<u32> = KHash::new();
        for k in 0..6u32 {
            h.put(k * 8); // all collide in 8 buckets
        }
        let b = h.get(16).unwrap();
        h.del(b);
        assert_eq!(h.len(), 5);
        assert!(h.get(16).is_none());
        for k in 0..6u32 {
            if k != 2 {
                assert!(h.get(k * 8).is_some(), "{k}");
            }
        }
        // The table is at its load limit, so this insertion grows it to 16.
        let (b2, absent) = h.put(16);
        assert!(absent);
        assert_eq!(h.buckets(), 16);
        assert_eq!(h.get(16), Some(b2));
        assert_eq!(h.len(), 6);
    }
}
