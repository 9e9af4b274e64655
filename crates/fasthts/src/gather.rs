//! Ordered gather: pieces of work done in parallel, their results consumed
//! in piece order as soon as the pieces before them are done.
//!
//! ```
//! // Squares of 0..100, computed in parallel, appended in order.
//! let mut out = Vec::new();
//! fasthts::gather::fill_in_order(
//!     100,
//!     |_| Vec::new(),
//!     |i, buffer: &mut Vec<u64>| {
//!         buffer.clear(); // a reused buffer holds an earlier piece
//!         buffer.push(i as u64 * i as u64);
//!         Ok::<(), String>(())
//!     },
//!     |buffer| {
//!         out.extend_from_slice(buffer);
//!         Ok(())
//!     },
//! )?;
//! assert_eq!(out, (0..100u64).map(|i| i * i).collect::<Vec<_>>());
//! # Ok::<(), String>(())
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Fills a buffer for each piece `0..n` on the threads of the current rayon
/// pool and hands the filled buffers to `append` in piece order, each as
/// soon as every piece before it has been appended.
///
/// Threads take pieces in order and fill a buffer of their own, which after
/// its append is given to the next piece a thread takes: only the
/// consumer's output is large fresh memory (page faults on fresh per-piece
/// buffers cost the Python package's column reads ~5 % of their CPU time),
/// and each append copies from a buffer still in cache. `new_buffer(i)`
/// makes a buffer when no used one is free; `fill(i, buffer)` gets either a
/// new one or one that held an earlier piece, which it should clear.
///
/// If pieces fail, the error of the first failing piece in piece order is
/// returned, whatever the thread count (pieces are taken in order, so when
/// one fails every earlier one has been taken and its error is seen); no
/// piece is taken after a failure. A failing `append` (an output whose
/// reader has gone, `| head`) is such a failure of its piece: the work
/// stops as soon as the pieces being filled are done, not at the end.
pub fn fill_in_order<B, E>(
    n: usize,
    new_buffer: impl Fn(usize) -> B + Sync,
    fill: impl Fn(usize, &mut B) -> Result<(), E> + Sync,
    append: impl FnMut(&B) -> Result<(), E> + Send,
) -> Result<(), E>
where
    B: Send,
    E: Send,
{
    fill_in_order_with(n, || (), new_buffer, |i, (), b| fill(i, b), append)
}

/// As [`fill_in_order`], each thread keeping a state of its own, made by
/// `new_state()` when it starts, for the pieces it fills: the reader of the
/// last region it read, say, which the next region it takes (often in the
/// same BGZF block, when the pieces are a draft assembly's small contigs)
/// reads on from instead of inflating the block again.
pub fn fill_in_order_with<S, B, E>(
    n: usize,
    new_state: impl Fn() -> S + Sync,
    new_buffer: impl Fn(usize) -> B + Sync,
    fill: impl Fn(usize, &mut S, &mut B) -> Result<(), E> + Sync,
    append: impl FnMut(&B) -> Result<(), E> + Send,
) -> Result<(), E>
where
    B: Send,
    E: Send,
{
    struct Gather<B, E, A> {
        append: A,
        /// The next piece to append.
        next: usize,
        /// Pieces filled but waiting for an earlier one.
        waiting: BTreeMap<usize, B>,
        /// Appended buffers, free for the next pieces.
        spare: Vec<B>,
        /// The first failing piece, in piece order.
        error: Option<(usize, E)>,
    }
    let taken = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let state = Mutex::new(Gather { append, next: 0, waiting: BTreeMap::new(), spare: Vec::new(), error: None });
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    rayon::scope(|s| {
        for _ in 0..rayon::current_num_threads().min(n) {
            s.spawn(|_| {
                let mut state = new_state();
                let mut buffer: Option<B> = None;
                loop {
                    let i = taken.fetch_add(1, Ordering::Relaxed);
                    if i >= n || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let mut b = buffer.take().unwrap_or_else(|| new_buffer(i));
                    let result = fill(i, &mut state, &mut b);
                    let mut guard = lock();
                    let g = &mut *guard;
                    if let Err(e) = result {
                        failed.store(true, Ordering::Relaxed);
                        if g.error.as_ref().map_or(true, |(j, _)| i < *j) {
                            g.error = Some((i, e));
                        }
                        break;
                    }
                    g.waiting.insert(i, b);
                    while let Some(b) = g.waiting.remove(&g.next) {
                        let appended = (g.append)(&b);
                        g.spare.push(b);
                        if let Err(e) = appended {
                            // Every earlier piece was appended: this is the
                            // first failure in piece order.
                            failed.store(true, Ordering::Relaxed);
                            g.error = Some((g.next, e));
                            g.waiting.clear();
                            break;
                        }
                        g.next += 1;
                    }
                    if g.error.is_some() {
                        break;
                    }
                    buffer = g.spare.pop();
                }
            });
        }
    });
    let g = state.into_inner().unwrap_or_else(|p| p.into_inner());
    match g.error {
        Some((_, e)) => Err(e),
        None => {
            debug_assert_eq!(g.next, n);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap()
    }

    #[test]
    fn appends_in_piece_order_at_any_thread_count() {
        for threads in [1, 2, 4, 8] {
            let mut out = Vec::new();
            let made = AtomicUsize::new(0);
            pool(threads)
                .install(|| {
                    fill_in_order(
                        200,
                        |_| {
                            made.fetch_add(1, Ordering::Relaxed);
                            Vec::new()
                        },
                        |i, b: &mut Vec<usize>| {
                            b.clear();
                            // Uneven work, so that pieces finish out of order.
                            std::thread::sleep(std::time::Duration::from_micros((i * 7919 % 13) as u64 * 20));
                            b.extend([i, i]);
                            Ok::<(), ()>(())
                        },
                        |b| {
                            out.extend_from_slice(b);
                            Ok(())
                        },
                    )
                })
                .unwrap();
            assert_eq!(out, (0..200).flat_map(|i| [i, i]).collect::<Vec<_>>(), "{threads} threads");
            // Buffers are reused: far fewer are made than there are pieces.
            assert!(made.load(Ordering::Relaxed) < 200, "{threads} threads");
        }
    }

    #[test]
    fn reports_the_first_failing_piece_at_any_thread_count() {
        for threads in [1, 2, 4, 8] {
            let result = pool(threads)
                .install(|| fill_in_order(100, |_| (), |i, _| if i == 37 || i == 60 || i == 99 { Err(i) } else { Ok(()) }, |_| Ok(())));
            assert_eq!(result, Err(37), "{threads} threads");
        }
    }

    #[test]
    fn a_failing_append_stops_the_work_at_any_thread_count() {
        for threads in [1, 2, 4] {
            let filled = AtomicUsize::new(0);
            let mut appended = 0;
            let result = pool(threads).install(|| {
                fill_in_order(
                    10_000,
                    |_| (),
                    |_, _| {
                        filled.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    },
                    |_| {
                        appended += 1;
                        if appended == 5 { Err("closed") } else { Ok(()) }
                    },
                )
            });
            assert_eq!(result, Err("closed"), "{threads} threads");
            assert_eq!(appended, 5, "{threads} threads: appends after the failure");
            // Only the pieces already taken are filled after it.
            assert!(filled.load(Ordering::Relaxed) <= 5 + 2 * threads, "{threads} threads: {} filled", filled.load(Ordering::Relaxed));
        }
    }

    #[test]
    fn no_pieces_is_nothing_to_do() {
        let result = fill_in_order(0, |_| (), |_, _| Err::<(), ()>(()), |_| unreachable!());
        assert_eq!(result, Ok(()));
    }
}
