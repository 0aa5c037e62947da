//! The worker pool of every command that runs many seeds (`sweep`, `check`, `report`):
//! threads run whole runs, never parts of one.
//!
//! [`run`] starts scoped workers (`std::thread::scope`) that take chunks of positions
//! `0..total` from an atomic counter, compute each position alone and send the result over a
//! bounded channel to the calling thread, which receives them in the order they finish.
//! [`run_ordered`] hands them on in position order instead (a small reorder buffer), so that
//! whatever the caller folds them into, even a float sum, is the same for any number of
//! workers. Neither reads a clock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Runs `work` for every position of `0..total` on `jobs` worker threads (at least 1) and
/// calls `receive` on the calling thread with each result as it arrives, in any order.
///
/// # Panics
/// If `work` panics: the panic is propagated once the other workers have stopped.
pub fn run<T: Send>(
    jobs: usize,
    total: u64,
    work: impl Fn(u64) -> T + Sync,
    mut receive: impl FnMut(u64, T),
) {
    let jobs = jobs.max(1);
    // Small chunks keep the threads busy to the end; large ones keep the counter cold.
    let chunk = (total / (jobs as u64 * 16)).clamp(1, 64);
    let next = AtomicU64::new(0);
    let work = &work;
    let next = &next;
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<(u64, T)>(jobs * 64);
        for _ in 0..jobs {
            let tx = tx.clone();
            scope.spawn(move || {
                loop {
                    let start = next.fetch_add(chunk, Ordering::Relaxed);
                    if start >= total {
                        return;
                    }
                    for k in start..(start + chunk).min(total) {
                        // The receiver is gone only when the caller panicked.
                        if tx.send((k, work(k))).is_err() {
                            return;
                        }
                    }
                }
            });
        }
        drop(tx);
        for (k, t) in rx {
            receive(k, t);
        }
    });
}

/// [`run`], with `receive` called in position order (0, 1, 2, ...): results that arrive
/// early wait in a buffer until those before them have arrived.
///
/// # Panics
/// As [`run`].
pub fn run_ordered<T: Send>(
    jobs: usize,
    total: u64,
    work: impl Fn(u64) -> T + Sync,
    mut receive: impl FnMut(u64, T),
) {
    let mut waiting: BTreeMap<u64, T> = BTreeMap::new();
    let mut next = 0u64;
    run(jobs, total, work, |k, t| {
        waiting.insert(k, t);
        while let Some(t) = waiting.remove(&next) {
            receive(next, t);
            next += 1;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{run, run_ordered};

    #[test]
    fn every_position_is_computed_once_and_ordered_receives_them_in_order() {
        for jobs in [1, 2, 3, 8] {
            let mut seen = Vec::new();
            run(jobs, 1000, |k| k * 3, |k, t| seen.push((k, t)));
            seen.sort_unstable();
            assert_eq!(seen, (0..1000).map(|k| (k, k * 3)).collect::<Vec<_>>());
            let mut ordered = Vec::new();
            run_ordered(jobs, 1000, |k| k * 3, |k, t| ordered.push((k, t)));
            assert_eq!(ordered, (0..1000).map(|k| (k, k * 3)).collect::<Vec<_>>());
        }
        let mut none = 0;
        run_ordered(4, 0, |k| k, |_, _| none += 1);
        assert_eq!(none, 0);
    }
}
