//! Each table operation against a naive oracle or against another path to
//! the same result (threads, partitions, sorted passes, merges).

use super::pass::INLINE_TABLES;
use super::*;
use crate::hash::{hash_kmer, hashes_into, Cleaning, KmerIter};
use fasthts_testgen::rng::Rng;
use std::collections::HashMap;

/// Naive oracle: khmer's add/get semantics with `%` and a HashMap.
struct Oracle {
    sizes: Vec<u64>,
    t: Vec<HashMap<u64, u8>>,
    big: HashMap<u64, u16>,
    order: Vec<u64>,
    occupied: u64,
    unique: u64,
    bigcount: bool,
}
impl Oracle {
    fn new(sizes: Vec<u64>, bigcount: bool) -> Self {
        let n = sizes.len();
        Oracle { sizes, t: vec![HashMap::new(); n], big: HashMap::new(), order: vec![], occupied: 0, unique: 0, bigcount }
    }
    fn add(&mut self, h: u64) {
        let mut full = 0;
        let mut new = false;
        for i in 0..self.sizes.len() {
            let c = self.t[i].entry(h % self.sizes[i]).or_insert(0);
            if *c == 0 {
                new = true;
                if i == 0 {
                    self.occupied += 1;
                }
            }
            if *c < 255 {
                *c += 1
            } else {
                full += 1
            }
        }
        if new {
            self.unique += 1;
        }
        if full == self.sizes.len() && self.bigcount {
            match self.big.get_mut(&h) {
                Some(v) => *v = (*v).saturating_add(1),
                None => {
                    self.big.insert(h, 256);
                    self.order.push(h);
                }
            }
        }
    }
    fn get(&self, h: u64) -> u16 {
        let m = (0..self.sizes.len()).map(|i| *self.t[i].get(&(h % self.sizes[i])).unwrap_or(&0)).min().unwrap();
        if m == 255 && self.bigcount {
            if let Some(&v) = self.big.get(&h) {
                return v;
            }
        }
        m as u16
    }
}

fn random_seqs(rng: &mut Rng, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = rng.below(60) as usize + if i % 7 == 0 { 0 } else { 10 };
            (0..len)
                .map(|_| {
                    let r = rng.below(100);
                    if r < 2 {
                        b'N'
                    } else if r < 4 {
                        b"acgt"[(r % 4) as usize]
                    } else if r < 60 {
                        b'A' // skew towards poly-A to reach saturation
                    } else {
                        b"ACGT"[(r % 4) as usize]
                    }
                })
                .collect()
        })
        .collect()
}

/// The hashes of every k-mer of `n` random sequences, in order.
fn random_hashes(seed: u64, n: usize, k: u32) -> Vec<u64> {
    let mut hs = Vec::new();
    for s in &random_seqs(&mut Rng::new(seed), n) {
        hashes_into(s, k, Cleaning::CppParser, &mut hs);
    }
    hs
}

/// An empty countgraph with bigcount on.
fn bigcount_graph(k: u32, x: u64, n_tables: usize) -> Countgraph {
    let mut g = Countgraph::new(k, x, n_tables).unwrap();
    g.set_use_bigcount(true);
    g
}

/// `a` and `b` hold the same tables, statistics and bigcount entries (in
/// file order), and some k-mer went past 255.
fn assert_same_graph(a: &mut Countgraph, b: &mut Countgraph) {
    for i in 0..a.n_tables() {
        assert!(a.table_bytes(i) == b.table_bytes(i), "table {i}");
    }
    assert_eq!(a.n_occupied(), b.n_occupied());
    assert_eq!(a.n_unique_kmers(), b.n_unique_kmers());
    assert_eq!(a.bigcounts_in_file_order(), b.bigcounts_in_file_order());
    assert!(a.n_bigcounts() > 0);
}

#[test]
fn matches_oracle_single_and_shared() {
    for (k, x, n, bigcount) in [
        (5u32, 200u64, 3usize, true),
        (12, 1000, 4, true),
        (20, 100_000, 2, false),
        (32, 5000, 1, true),
        (40, 3000, 2, true),
        (6, 500, 10, true),
    ] {
        let mut rng = Rng::new(k as u64 * 977 + x);
        let seqs = random_seqs(&mut rng, 400);
        let mut g = Countgraph::new(k, x, n).unwrap();
        g.set_use_bigcount(bigcount);
        let g2 = {
            let mut g2 = Countgraph::new(k, x, n).unwrap();
            g2.set_use_bigcount(bigcount);
            g2
        };
        let mut o = Oracle::new(g.sizes().to_vec(), bigcount);
        for (si, s) in seqs.iter().enumerate() {
            g.consume(s, Cleaning::CppParser);
            let mut hs = Vec::new();
            hashes_into(s, k, Cleaning::CppParser, &mut hs);
            g2.consume_hashes_shared(&hs, si as u64);
            for &h in &hs {
                o.add(h);
            }
        }
        assert_eq!(g.n_occupied(), o.occupied);
        assert_eq!(g.n_unique_kmers(), o.unique);
        assert_eq!(g2.n_occupied(), o.occupied);
        assert_eq!(g2.n_unique_kmers(), o.unique);
        let mut exact: HashMap<u64, u64> = HashMap::new();
        for s in &seqs {
            for h in KmerIter::new(s, k, Cleaning::CppParser) {
                *exact.entry(h).or_default() += 1;
                assert_eq!(g.get(h), o.get(h));
                assert_eq!(g2.get(h), o.get(h));
            }
        }
        // never under-estimates (up to the saturation limit)
        let cap = if bigcount { 65535 } else { 255 };
        for (&h, &c) in &exact {
            assert!(g.get(h) as u64 >= c.min(cap), "under-estimate");
        }
        let want: Vec<(u64, u16)> =
            crate::stlmap::std_unordered_order(o.order.iter().copied()).into_iter().map(|h| (h, o.big[&h])).collect();
        assert_eq!(g.bigcounts_in_file_order(), want);
        assert_eq!(g2.bigcounts_in_file_order(), want);
        if bigcount && k == 5 {
            assert!(!want.is_empty(), "test should reach bigcount");
        }
    }
}

#[test]
fn saturation_without_bigcount() {
    let mut g = Countgraph::new(4, 100, 2).unwrap();
    let h = hash_kmer(b"ACGT").2;
    for _ in 0..1000 {
        g.consume_hashes(&[h], 0);
    }
    assert_eq!(g.get(h), 255);
    g.set_use_bigcount(true);
    for _ in 0..300 {
        g.add(h);
    }
    assert_eq!(g.get(h), 256 + 299);
}

#[test]
fn threads_give_identical_tables() {
    let mut rng = Rng::new(99);
    let seqs = random_seqs(&mut rng, 2000);
    let mut batches: Vec<Vec<u64>> = Vec::new();
    for c in seqs.chunks(50) {
        let mut v = Vec::new();
        for s in c {
            hashes_into(s, 7, Cleaning::CppParser, &mut v);
        }
        batches.push(v);
    }
    let mk = || bigcount_graph(7, 3000, 3);
    let mut a = mk();
    for (i, b) in batches.iter().enumerate() {
        a.consume_hashes(b, i as u64);
    }
    let b = mk();
    std::thread::scope(|s| {
        for t in 0..4 {
            let b = &b;
            let batches = &batches;
            s.spawn(move || {
                for (i, x) in batches.iter().enumerate() {
                    if i % 4 == t {
                        b.consume_hashes_shared(x, i as u64);
                    }
                }
            });
        }
    });
    let mut b = b;
    for i in 0..3 {
        assert_eq!(a.table_bytes(i), b.table_bytes(i));
    }
    assert_eq!(a.n_occupied(), b.n_occupied());
    let mut x = a.bigcounts_in_file_order();
    let mut y = b.bigcounts_in_file_order();
    x.sort();
    y.sort();
    assert_eq!(x.iter().map(|e| e.0).collect::<Vec<_>>(), y.iter().map(|e| e.0).collect::<Vec<_>>());
}

#[test]
fn partitioned_equals_serial() {
    let hs = random_hashes(4242, 1500, 6);
    for threads in [2usize, 3, 5] {
        let (mut a, mut b) = (bigcount_graph(6, 2000, 4), bigcount_graph(6, 2000, 4));
        for (ci, c) in hs.chunks(1000).enumerate() {
            a.consume_hashes(c, ci as u64);
            let mut parts: Vec<(Vec<u8>, u64)> = Vec::new();
            std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads)
                    .map(|t| {
                        let b = &b;
                        s.spawn(move || {
                            let mut f = vec![0u8; c.len()];
                            let o = b.update_partition(c, &b.partition_tables(t, threads), &mut f);
                            (f, o)
                        })
                    })
                    .collect();
                for h in hs {
                    parts.push(h.join().unwrap());
                }
            });
            let mut acc = parts[0].0.clone();
            for p in &parts[1..] {
                merge_partition_flags(&mut acc, &p.0);
            }
            let occ: u64 = parts.iter().map(|p| p.1).sum();
            b.apply_merged_flags(c, &acc, occ, (ci as u128) << 64);
        }
        assert_same_graph(&mut a, &mut b);
    }
}

#[test]
fn sorted_partition_equals_serial() {
    let hs = random_hashes(515, 1500, 6);
    for (threads, region_bits) in [(1usize, 0u32), (1, 4), (2, 3), (3, 20)] {
        let (mut a, mut b) = (bigcount_graph(6, 2000, 4), bigcount_graph(6, 2000, 4));
        let mut scratch: Vec<SortScratch> = (0..threads).map(|_| SortScratch::default()).collect();
        for (ci, c) in hs.chunks(1000).enumerate() {
            a.consume_hashes(c, ci as u64);
            let mut acc = Vec::new();
            let mut occ = 0;
            for (t, sc) in scratch.iter_mut().enumerate() {
                let mut f = vec![0u8; c.len()];
                occ += b.update_partition_sorted_with(c, &b.partition_tables(t, threads), &mut f, sc, 0, region_bits);
                if t == 0 {
                    acc = f;
                } else {
                    merge_partition_flags(&mut acc, &f);
                }
            }
            b.apply_merged_flags(c, &acc, occ, (ci as u128) << 64);
        }
        assert_same_graph(&mut a, &mut b);
    }
}

/// `n` random sequences and a small graph (k 7, 3 x 3000, bigcount on)
/// fed the first half of them: saturated bins, bigcount values and
/// absent k-mers among the second half's.
fn half_consumed_graph(seed: u64, n: usize) -> (Countgraph, Vec<Vec<u8>>) {
    let mut rng = Rng::new(seed);
    let seqs = random_seqs(&mut rng, n);
    let mut g = bigcount_graph(7, 3000, 3);
    for s in &seqs[..n / 2] {
        g.consume(s, Cleaning::CppParser);
    }
    (g, seqs)
}

#[test]
fn batched_lookups_match_direct() {
    let (g, seqs) = half_consumed_graph(777, 600);
    let mut tracking = Nodegraph::with_sizes(g.sizes());
    let mut tracking2 = Nodegraph::with_sizes(g.sizes());
    let mut hist = vec![0u64; 65536];
    let mut hist2 = vec![0u64; 65536];
    for s in &seqs {
        let mut hs = Vec::new();
        hashes_into(s, 7, Cleaning::CppParser, &mut hs);
        let mut c = Vec::new();
        g.get_many(&hs, &mut c);
        let direct: Vec<u16> = hs.iter().map(|&h| g.get(h)).collect();
        assert_eq!(c, direct);
        for cut in [0u16, 1, 2, 5, 200, 300] {
            assert_eq!(median_at_least_counts(&c, cut), g.median_at_least(s, cut, Cleaning::CppParser));
            assert_eq!(g.median_at_least_hashes(&hs, cut), g.median_at_least(s, cut, Cleaning::CppParser));
            assert_eq!(g.trim_at_hashes(&hs, s.len(), cut), g.trim_at(s, cut, Cleaning::CppParser));
            assert_eq!(trim_at_counts(&c, 7, s.len(), cut), g.trim_at(s, cut, Cleaning::CppParser));
        }
        assert_eq!(median_of_counts(&mut c.clone()), g.median_count(s, Cleaning::CppParser));
        g.abundance_update(&mut tracking, &hs, &mut hist);
        for &h in &hs {
            if !tracking2.test_and_set(h) {
                hist2[g.get(h) as usize] += 1;
            }
        }
    }
    assert_eq!(hist, hist2);
    // the split (Bloom test here, counts elsewhere) gives the same
    let mut tracking3 = Nodegraph::with_sizes(g.sizes());
    let mut hist3 = vec![0u64; 65536];
    for s in &seqs {
        let mut hs = Vec::new();
        hashes_into(s, 7, Cleaning::CppParser, &mut hs);
        let mut seen = Vec::new();
        tracking3.test_and_set_many(&hs, &mut seen);
        let mut c = Vec::new();
        g.get_many(&hs, &mut c);
        for j in 0..hs.len() {
            if !seen[j] {
                hist3[c[j] as usize] += 1;
            }
        }
    }
    assert_eq!(hist, hist3);
    assert!(hist[256..].iter().sum::<u64>() > 0, "bigcount values reached");
}

/// More tables than a pass keeps on the stack: updates spill to the
/// heap, lookups take the per-k-mer path; results as with few tables.
#[test]
fn many_tables_match_direct() {
    let hs = random_hashes(31, 400, 6);
    let (first, second) = hs.split_at(hs.len() / 2);
    let graph = || bigcount_graph(6, 700, INLINE_TABLES + 2);
    let mut a = graph();
    a.consume_hashes(first, 0);
    let mut b = graph();
    let all: Vec<usize> = (0..b.n_tables()).collect();
    let mut flags = vec![0u8; first.len()];
    let occupied = b.update_partition(first, &all, &mut flags);
    b.apply_merged_flags(first, &flags, occupied, 0);
    assert_same_graph(&mut a, &mut b);
    let direct: Vec<u16> = second.iter().map(|&h| a.get(h)).collect();
    let mut counts = Vec::new();
    a.get_many(second, &mut counts);
    assert_eq!(counts, direct);
    counts.clear();
    a.for_each_count(second, |_, c| {
        counts.push(c);
        true
    });
    assert_eq!(counts, direct);
    let (mut partial, mut rest) = (Vec::new(), Vec::new());
    a.partial_mins(second, &all[..3], &mut partial);
    a.partial_mins(second, &all[3..], &mut rest);
    a.combine_partial_mins(second, &partial, &rest, &mut counts);
    assert_eq!(counts, direct);
    let (mut tracking, mut tracking2) = (Nodegraph::with_sizes(a.sizes()), Nodegraph::with_sizes(a.sizes()));
    let (mut hist, mut hist2) = (vec![0u64; 65536], vec![0u64; 65536]);
    a.abundance_update(&mut tracking, &hs, &mut hist);
    for &h in &hs {
        if !tracking2.test_and_set(h) {
            hist2[a.get(h) as usize] += 1;
        }
    }
    assert_eq!(hist, hist2);
}

#[test]
fn sorted_lookups_match_direct() {
    let (g, seqs) = half_consumed_graph(4242, 400);
    let mut all = Vec::new();
    for s in &seqs {
        hashes_into(s, 7, Cleaning::CppParser, &mut all);
    }
    let direct: Vec<u16> = all.iter().map(|&h| g.get(h)).collect();
    assert!(direct.iter().any(|&c| c > 255), "bigcount values reached");
    assert!(direct.contains(&0), "absent k-mers present");
    let mut scratch = SortScratch::default();
    for (min_bytes, region_bits) in [(0, 3), (0, 6), (u64::MAX, 16)] {
        // appended after what `out` already holds, like get_many
        let mut out = vec![9u16];
        g.get_many_sorted_with(&all, &mut out, &mut scratch, min_bytes, region_bits);
        assert_eq!(out[0], 9);
        assert_eq!(&out[1..], &direct[..], "min_bytes {min_bytes} region_bits {region_bits}");
    }
}

#[test]
fn median_and_trim() {
    let mut g = Countgraph::new(4, 1000, 2).unwrap();
    g.consume(b"AAAAAAAA", Cleaning::Raw);
    // AAAA has count 5; read AAAAAACGT: kmers AAAA x3 then AAAC, AACG, ACGT
    let s = b"AAAAAACGT";
    assert_eq!(g.trim_at(s, 2, Cleaning::Raw), 4 + 3 - 1);
    assert!(g.median_at_least(s, 2, Cleaning::Raw)); // 3 of 6 k-mers >= 2, ceil(6/2) = 3
    assert!(!g.median_at_least(b"AAAACGTCC", 2, Cleaning::Raw));
    assert_eq!(g.median_count(s, Cleaning::Raw), 5);
}

#[test]
fn merge_of_parts_equals_one_graph_fed_both() {
    let mut rng = Rng::new(7);
    let hashes: Vec<u64> = (0..20000).map(|_| rng.below(5000)).collect();
    let (a_part, b_part) = hashes.split_at(12000);
    let mut whole = Countgraph::new(11, 1000, 3).unwrap();
    whole.consume_hashes(&hashes, 0);
    let mut a = Countgraph::new(11, 1000, 3).unwrap();
    a.consume_hashes(a_part, 0);
    let mut b = Countgraph::new(11, 1000, 3).unwrap();
    b.consume_hashes(b_part, 0);
    a.merge_from(&b).unwrap();
    for (i, t) in whole.tables.iter_mut().enumerate() {
        assert_eq!(t.as_bytes(), a.tables[i].as_bytes(), "table {i}");
    }
    assert_eq!(a.n_occupied(), whole.n_occupied());
    assert_eq!(a.n_unique_kmers(), 0);
    assert_eq!(a.merge_from(&Countgraph::new(11, 2000, 3).unwrap()), Err(TableError::Incompatible));
}

#[test]
fn merge_sums_bigcounts_of_either_part() {
    let h = hash_kmer(b"ACGT").2;
    let graph = |n: usize| {
        let g = bigcount_graph(4, 100, 2);
        for _ in 0..n {
            g.add(h);
        }
        g
    };
    let mut a = graph(300);
    a.merge_from(&graph(100)).unwrap();
    assert_eq!(a.get(h), 400);
    let mut c = graph(200);
    c.merge_from(&graph(200)).unwrap();
    assert_eq!(c.get(h), 255, "past 255 only in the sum: saturated, no entry");
    let mut d = graph(60000);
    d.merge_from(&graph(60000)).unwrap();
    assert_eq!(d.get(h), MAX_BIGCOUNT);
}

/// SmallCountgraph: every path (single and shared adds, partitions, sorted
/// passes, lookups, save and load) agrees with a 4-bit oracle.
#[test]
fn small_countgraph_matches_oracle_on_every_path() {
    let hs = random_hashes(77, 1500, 6);
    let sizes = crate::primes::get_n_primes_near_x(3, 2000).unwrap();
    // the oracle: khmer's NibbleStorage, counters stop at 15
    let mut counts: Vec<HashMap<u64, u8>> = vec![HashMap::new(); 3];
    let (mut occupied, mut unique) = (0u64, 0u64);
    for &h in &hs {
        let mut new = false;
        for (i, t) in counts.iter_mut().enumerate() {
            let c = t.entry(h % sizes[i]).or_insert(0);
            if *c == 0 {
                new = true;
                occupied += (i == 0) as u64;
            }
            *c = (*c + 1).min(15);
        }
        unique += new as u64;
    }
    let oracle_get = |h: u64| (0..3).map(|i| *counts[i].get(&(h % sizes[i])).unwrap_or(&0)).min().unwrap() as u16;
    let mut single = Countgraph::new_small(6, 2000, 3).unwrap();
    single.set_use_bigcount(true); // a SmallCountgraph has no bigcount
    assert!(!single.use_bigcount() && single.is_small());
    assert_eq!(single.table_len(0), sizes[0] / 2 + 1);
    let shared = Countgraph::new_small(6, 2000, 3).unwrap();
    let mut sorted = Countgraph::new_small(6, 2000, 3).unwrap();
    let mut scratch: Vec<SortScratch> = (0..2).map(|_| SortScratch::default()).collect();
    for (ci, c) in hs.chunks(700).enumerate() {
        single.consume_hashes(c, ci as u64);
        shared.consume_hashes_shared(c, ci as u64);
        let mut acc = Vec::new();
        let mut occ = 0;
        for (t, sc) in scratch.iter_mut().enumerate() {
            let mut f = vec![0u8; c.len()];
            occ += sorted.update_partition_sorted_with(c, &sorted.partition_tables(t, 2), &mut f, sc, 0, 3);
            if t == 0 {
                acc = f;
            } else {
                merge_partition_flags(&mut acc, &f);
            }
        }
        sorted.apply_merged_flags(c, &acc, occ, (ci as u128) << 64);
    }
    let mut shared = shared;
    for g in [&mut single, &mut shared, &mut sorted] {
        assert_eq!((g.n_occupied(), g.n_unique_kmers()), (occupied, unique));
        let mut direct: Vec<u16> = hs.iter().map(|&h| g.get(h)).collect();
        let want: Vec<u16> = hs.iter().map(|&h| oracle_get(h)).collect();
        assert_eq!(direct, want);
        assert!(want.contains(&15));
        direct.clear();
        g.get_many_sorted_with(&hs, &mut direct, &mut SortScratch::default(), 0, 3);
        assert_eq!(direct, want);
        direct.clear();
        g.get_many(&hs, &mut direct);
        assert_eq!(direct, want);
    }
    for i in 0..3 {
        assert!(single.table_bytes(i) == shared.table_bytes(i) && single.table_bytes(i) == sorted.table_bytes(i));
    }
    // the first counter of a byte is its high half
    let h0 = (0..).find(|&h: &u64| h % sizes[0] == 0).unwrap();
    let mut one = Countgraph::new_small(6, 2000, 3).unwrap();
    one.consume_hashes(&[h0], 0);
    assert_eq!(one.table_bytes(0)[0], 0x10);
    // save and load: the same bytes
    let dir = std::env::temp_dir().join(format!("fasthts-small-ct-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.ct");
    single.save(&path).unwrap();
    let mut loaded = Countgraph::load_small(&path).unwrap();
    assert!(loaded.is_small());
    assert_eq!((loaded.n_occupied(), loaded.sizes()), (occupied, &sizes[..]));
    for i in 0..3 {
        assert!(loaded.table_bytes(i) == single.table_bytes(i));
    }
    assert!(Countgraph::load(&path).is_err(), "a Countgraph does not load a SmallCountgraph (as in khmer)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tables placed in their output file (`map_tables_to`) save the same
/// bytes as tables on the heap, bigcounts included; the mapped temporary
/// is the only file while counting, and goes when the graph is dropped
/// unsaved or saved elsewhere. Graphs that cannot be mapped (not new, a
/// SmallCountgraph, a gzip name, a special file) keep their tables.
#[test]
fn mapped_tables_save_the_heap_bytes() {
    let dir = std::env::temp_dir().join(format!("fasthts-mapped-ct-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    let mut rng = Rng::new(0x6d61_7070);
    // few distinct hashes many times each (bigcount entries), and many once
    let hs: Vec<u64> = (0..200_000).map(|i| if i % 2 == 0 { rng.below(300) } else { rng.below(u64::MAX) }).collect();
    let count = |g: &mut Countgraph| {
        g.set_use_bigcount(true);
        for (i, c) in hs.chunks(10_000).enumerate() {
            g.consume_hashes(c, i as u64);
        }
    };
    let heap_path = dir.join("heap.ct");
    let mut heap = Countgraph::new(7, 5000, 3).unwrap();
    count(&mut heap);
    assert!(heap.n_bigcounts() > 0);
    heap.save(&heap_path).unwrap();

    let path = dir.join("mapped.ct");
    let mut g = Countgraph::new(7, 5000, 3).unwrap();
    assert!(g.map_tables_to(&path) && g.tables_mapped());
    assert_eq!(listing(), [format!(".mapped.ct.tmp.{}.table", std::process::id()), "heap.ct".to_string()]);
    count(&mut g);
    g.save_and_free(&path).unwrap();
    assert!(std::fs::read(&path).unwrap() == std::fs::read(&heap_path).unwrap(), "mapped .ct differs from the heap's");
    assert_eq!(listing(), ["heap.ct", "mapped.ct"]);

    // saved elsewhere: the same bytes there, and the temporary goes
    let mut g = Countgraph::new(7, 5000, 3).unwrap();
    assert!(g.map_tables_to(&dir.join("other.ct")));
    count(&mut g);
    g.save_and_free(&dir.join("elsewhere.ct")).unwrap();
    assert!(std::fs::read(dir.join("elsewhere.ct")).unwrap() == std::fs::read(&heap_path).unwrap());
    // dropped unsaved: nothing left
    let mut g = Countgraph::new(7, 5000, 3).unwrap();
    assert!(g.map_tables_to(&dir.join("dropped.ct")));
    count(&mut g);
    drop(g);
    assert_eq!(listing(), ["elsewhere.ct", "heap.ct", "mapped.ct"]);

    // not mapped: counted already, loaded, small, gzip, a special file
    let mut used = Countgraph::new(7, 5000, 3).unwrap();
    used.consume_hashes(&hs[..10], 0);
    assert!(!used.map_tables_to(&dir.join("x.ct")));
    let mut loaded = Countgraph::load(&heap_path).unwrap();
    assert!(!loaded.map_tables_to(&dir.join("x.ct")));
    assert!(!Countgraph::new_small(7, 5000, 3).unwrap().map_tables_to(&dir.join("x.ct")));
    assert!(!Countgraph::new(7, 5000, 3).unwrap().map_tables_to(&dir.join("x.ct.gz")));
    assert!(!Countgraph::new(7, 5000, 3).unwrap().map_tables_to(std::path::Path::new("/dev/null")));
    assert_eq!(listing(), ["elsewhere.ct", "heap.ct", "mapped.ct"]);

    // temporaries left by a killed process (no such PID, no lock) go,
    // mapped or plain
    let stale = [".table", ""].map(|suffix| dir.join(format!(".mapped.ct.tmp.{}{suffix}", u32::MAX - 1)));
    for s in &stale {
        std::fs::write(s, b"left").unwrap();
    }
    let mut g = Countgraph::new(7, 5000, 3).unwrap();
    assert!(g.map_tables_to(&path));
    assert!(stale.iter().all(|s| !s.exists()));
    drop(g);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tables of a few MB are mapped on any machine this runs on; terabytes
/// never are (the kernel would write them back while they are counted).
#[test]
fn mapped_only_below_the_writeback_threshold() {
    assert!(crate::ctfile::below_writeback(8 << 20));
    assert!(!crate::ctfile::below_writeback(1 << 44));
}
