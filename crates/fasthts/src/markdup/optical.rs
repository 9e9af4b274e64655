//! Optical duplicates among the duplicates of one original read
//! (samtools markdup's `check_duplicate_chain`).
//!
//! samtools sorts the duplicates by x, then compares every pair within the
//! optical distance in x, marking the lower-scoring read of each close
//! pair (same tile, y within the distance) an optical duplicate. In a deep
//! region, where thousands of duplicates of one read lie on a tile, that
//! is quadratic.
//!
//! What it computes is a set: a read ends up optical when it was already,
//! or when some close read beats it (marking the loser of a pair does not
//! depend on the pair's marks, and a pair of two marked reads, which
//! samtools skips, could mark nothing new). So here each unmarked read
//! looks through its x-window for one close read that beats it and stops
//! at the first: in a cluster of n reads the best read scans all n, the
//! others stop after a few (about n/rank), so the work is near n log n
//! where samtools' is n². Pairs are still taken in samtools' orientation
//! (the read earlier in its x order is "current"), which decides the two
//! asymmetric details: whose tile span is compared, and which of two
//! reads of equal score and equal name loses.

use super::read_names::Coordinates;
use super::record::strncmp_equal;

/// One duplicate of the chain, as `check_chain_against_original` left it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ChainEntry {
    /// The read's slot in the marker's buffer.
    pub slot: u32,
    /// Its name's place in the chain's name arena.
    pub name: (usize, usize),
    pub coords: Coordinates,
    /// Already an optical duplicate.
    pub optical: bool,
    pub score: i64,
    pub mate_score: i64,
    pub paired: bool,
    pub qc_fail: bool,
}

/// Whether the later read of a close pair (`current` before `check` in x
/// order) is the duplicate, by samtools' rules: a single read loses to a
/// pair, a QC failure to a pass, then the lower score (with the mate's),
/// then the later name.
fn check_loses(current: &ChainEntry, check: &ChainEntry, current_name: &[u8], check_name: &[u8]) -> bool {
    if current.paired != check.paired {
        return !check.paired;
    }
    let (current_score, mut check_score) = if current.qc_fail != check.qc_fail {
        if current.qc_fail {
            (0, 1)
        } else {
            (1, 0)
        }
    } else if current.paired {
        (current.score + current.mate_score, check.score + check.mate_score)
    } else {
        (current.score, check.score)
    };
    if current_score == check_score {
        if check_name < current_name {
            check_score += 1;
        } else {
            check_score -= 1;
        }
    }
    current_score > check_score
}

/// Whether `current` (earlier in x order) and `check` are close: y within
/// `distance` and the same tile by `current`'s span (x is checked by the
/// caller).
fn close(current: &ChainEntry, check: &ChainEntry, current_name: &[u8], check_name: &[u8], distance: i64) -> bool {
    if (current.coords.y - check.coords.y).abs() > distance {
        return false;
    }
    let span = current.coords.end.saturating_sub(current.coords.beg);
    let a = &current_name[current.coords.beg.min(current_name.len())..];
    let b = &check_name[check.coords.beg.min(check_name.len())..];
    strncmp_equal(a, b, span)
}

/// Sorts `chain` by x (stably, as glibc's merge sort in samtools' qsort)
/// and sets `newly_optical` for each read that becomes an optical
/// duplicate (returns their indices into the sorted chain, in order).
pub(super) fn find_optical(chain: &mut [ChainEntry], names: &[u8], distance: i64, newly_optical: &mut Vec<usize>) {
    chain.sort_by_key(|e| e.coords.x);
    newly_optical.clear();
    let name = |e: &ChainEntry| &names[e.name.0..e.name.1];
    for k in 0..chain.len() {
        let me = &chain[k];
        if me.optical {
            continue;
        }
        let my_name = name(me);
        let mut beaten = false;
        for other in chain[..k].iter().rev() {
            if me.coords.x - other.coords.x > distance {
                break;
            }
            let other_name = name(other);
            if close(other, me, other_name, my_name, distance) && check_loses(other, me, other_name, my_name) {
                beaten = true;
                break;
            }
        }
        if !beaten {
            for other in &chain[k + 1..] {
                if other.coords.x - me.coords.x > distance {
                    break;
                }
                let other_name = name(other);
                if close(me, other, my_name, other_name, distance) && !check_loses(me, other, my_name, other_name) {
                    beaten = true;
                    break;
                }
            }
        }
        if beaten {
            newly_optical.push(k);
        }
    }
    for &k in newly_optical.iter() {
        chain[k].optical = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// samtools' pairwise loop, for comparison.
    fn quadratic(chain: &mut [ChainEntry], names: &[u8], distance: i64) -> Vec<bool> {
        chain.sort_by_key(|e| e.coords.x);
        let name = |e: &ChainEntry| names[e.name.0..e.name.1].to_vec();
        for i in 0..chain.len() {
            for j in i + 1..chain.len() {
                if chain[j].coords.x - chain[i].coords.x > distance {
                    break;
                }
                if chain[i].optical && chain[j].optical {
                    continue;
                }
                let (a, b) = (name(&chain[i]), name(&chain[j]));
                if !close(&chain[i], &chain[j], &a, &b, distance) {
                    continue;
                }
                if check_loses(&chain[i], &chain[j], &a, &b) {
                    chain[j].optical = true;
                } else {
                    chain[i].optical = true;
                }
            }
        }
        chain.iter().map(|e| e.optical).collect()
    }

    #[test]
    fn same_marks_as_the_pairwise_loop() {
        let mut rng = fasthts_testgen::rng::Rng::new(7);
        for round in 0..200 {
            let n = 1 + (rng.next_u64() % 60) as usize;
            let mut names = Vec::new();
            let mut chain = Vec::new();
            for i in 0..n {
                let tile = rng.next_u64() % 2;
                let start = names.len();
                names.extend_from_slice(format!("m:{tile}:{}", rng.next_u64() % 7 + i as u64 % 3).as_bytes());
                chain.push(ChainEntry {
                    slot: i as u32,
                    name: (start, names.len()),
                    coords: Coordinates { x: (rng.next_u64() % 400) as i64, y: (rng.next_u64() % 400) as i64, beg: 0, end: 4 },
                    optical: rng.next_u64() % 5 == 0,
                    score: (rng.next_u64() % 4) as i64,
                    mate_score: (rng.next_u64() % 3) as i64,
                    paired: rng.next_u64() % 4 != 0,
                    qc_fail: rng.next_u64() % 6 == 0,
                });
            }
            let mut ours = chain.clone();
            let mut newly = Vec::new();
            find_optical(&mut ours, &names, 100, &mut newly);
            let theirs = quadratic(&mut chain, &names, 100);
            assert_eq!(ours.iter().map(|e| e.optical).collect::<Vec<_>>(), theirs, "round {round}");
        }
    }
}
