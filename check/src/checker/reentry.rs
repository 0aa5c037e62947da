//! Nested acquisitions: a client inside a critical section takes the lock it holds again
//! (`Nest`, then `Nested` when granted). The safety checks judge what the nested release did
//! to the lock (a lock re-entered without a count is free once the nested call releases it,
//! and the next holder's critical section overlaps the outer one's); this pass measures the
//! nested waits: at once for a re-entrant lock, the rest of the lease for one that waits for
//! itself to expire, unanswered for one that never frees.
//!
//! The definitions are in `docs/checker.md`, section "Nested acquisitions".

use std::collections::BTreeMap;

use crate::history::{Event, FaultKind, History, NodeId};
use crate::verdict::Reentry;

use super::liveness::percentiles;

/// The nested-acquisition figures of `history`, `None` without a `Nest` event.
pub(super) fn measure(history: &History) -> Option<Reentry> {
    let mut figures = Reentry {
        nested: 0,
        granted: 0,
        wait: None,
        longest_wait_ns: 0,
    };
    let mut waits = Vec::new();
    walk(history, |wait, granted| {
        figures.nested += 1;
        figures.longest_wait_ns = figures.longest_wait_ns.max(wait);
        if granted {
            figures.granted += 1;
            waits.push(wait);
        }
    });
    if figures.nested == 0 {
        return None;
    }
    figures.wait = percentiles(waits);
    Some(figures)
}

/// Every granted nested wait of `history` (`Nest` to `Nested`), in the order they ended: the
/// samples of [`Reentry::wait`], for pooling over runs. Empty without `Nest` events.
pub fn nested_waits_ns(history: &History) -> Vec<u64> {
    let mut waits = Vec::new();
    walk(history, |wait, granted| {
        if granted {
            waits.push(wait);
        }
    });
    waits
}

/// Calls `f(wait, granted)` for every nested acquisition of `history` as it ends: its
/// `Nested`, or unanswered its grant's `Exit`, its client's crash or the run's end.
fn walk(history: &History, mut f: impl FnMut(u64, bool)) {
    // Each client's open nested acquisition: since when.
    let mut pending: BTreeMap<NodeId, u64> = BTreeMap::new();
    for entry in &history.entries {
        let t = entry.time_ns;
        match &entry.event {
            Event::Nest { client } => {
                pending.insert(*client, t);
            }
            Event::Nested { client } => {
                if let Some(from) = pending.remove(client) {
                    f(t - from, true);
                }
            }
            Event::Exit { grant, .. } => {
                if let Some(from) = pending.remove(&grant.client) {
                    f(t - from, false);
                }
            }
            Event::Fault(fault) if fault.kind == FaultKind::Crash => {
                for n in &fault.nodes {
                    if let Some(from) = pending.remove(n) {
                        f(t - from, false);
                    }
                }
            }
            _ => {}
        }
    }
    for (_, from) in pending {
        f(history.end_ns - from, false);
    }
}
