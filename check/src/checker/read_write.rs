//! Read-write lock metrics: a history whose clients take the lock shared (`Shared` events)
//! as readers, or exclusive as writers. The safety checks already know readers share (a pair
//! of readers is no double holder; a reader's op is stale only after a newer writer's); this
//! pass measures what a read-write lock costs each side: how long readers and writers wait,
//! and the longest wait of each, counting a wait still open when the run ends (a writer
//! starved by a stream of readers never gets its grant).
//!
//! The definitions are in `docs/checker.md`, section "Read-write locks".

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Event, FaultKind, History, NodeId};
use crate::verdict::ReadWrite;

use super::grants::Grants;
use super::liveness::percentiles;

/// The read-write figures of `history`, `None` when no grant is a reader's.
pub(super) fn measure(history: &History, grants: &Grants) -> Option<ReadWrite> {
    if !grants.any_shared {
        return None;
    }
    let mut figures = ReadWrite {
        readers: 0,
        writers: 0,
        reader_wait: None,
        writer_wait: None,
        longest_reader_wait_ns: 0,
        longest_writer_wait_ns: 0,
    };
    for g in &grants.list {
        match g.shared {
            true => figures.readers += 1,
            false => figures.writers += 1,
        }
    }
    let (mut reader_waits, mut writer_waits) = (Vec::new(), Vec::new());
    walk(history, |shared, wait, granted| {
        if granted {
            match shared {
                true => reader_waits.push(wait),
                false => writer_waits.push(wait),
            }
        }
        longest(shared, wait, &mut figures);
    });
    figures.reader_wait = percentiles(reader_waits);
    figures.writer_wait = percentiles(writer_waits);
    Some(figures)
}

/// Every granted wait of `history`'s readers and of its writers (`Request` to `Grant`), in
/// the order they ended: the samples of [`ReadWrite::reader_wait`] and
/// [`ReadWrite::writer_wait`], for pooling over runs. Both empty without `Shared` events.
pub fn read_write_waits_ns(history: &History) -> (Vec<u64>, Vec<u64>) {
    let shared = history
        .entries
        .iter()
        .any(|e| matches!(e.event, Event::Shared { .. }));
    let (mut readers, mut writers) = (Vec::new(), Vec::new());
    if shared {
        walk(history, |shared, wait, granted| match (granted, shared) {
            (true, true) => readers.push(wait),
            (true, false) => writers.push(wait),
            (false, _) => {}
        });
    }
    (readers, writers)
}

/// Calls `f(shared, wait, granted)` for every wait of `history` as it ends: a request's
/// `Grant`, or without a grant its client's give-up or crash, or the run's end. A request
/// is shared only right after a `Shared` of its client.
fn walk(history: &History, mut f: impl FnMut(bool, u64, bool)) {
    // Each client's open request: since when, and whether it is shared.
    let mut pending: BTreeMap<NodeId, (u64, bool)> = BTreeMap::new();
    let mut shared_next: BTreeSet<NodeId> = BTreeSet::new();
    for entry in &history.entries {
        let t = entry.time_ns;
        match &entry.event {
            Event::Shared { client } => {
                shared_next.insert(*client);
            }
            Event::Request { client } => {
                let shared = shared_next.remove(client);
                pending.entry(*client).or_insert((t, shared));
            }
            Event::Grant { grant, .. } => {
                if let Some((from, shared)) = pending.remove(&grant.client) {
                    f(shared, t - from, true);
                }
            }
            Event::AcquireFailed { client } => {
                if let Some((from, shared)) = pending.remove(client) {
                    f(shared, t - from, false);
                }
            }
            Event::Fault(fault) if fault.kind == FaultKind::Crash => {
                for n in &fault.nodes {
                    if let Some((from, shared)) = pending.remove(n) {
                        f(shared, t - from, false);
                    }
                }
            }
            _ => {}
        }
    }
    for (_, (from, shared)) in pending {
        f(shared, history.end_ns - from, false);
    }
}

/// Keeps `wait` if it is the longest of its side so far.
fn longest(shared: bool, wait: u64, f: &mut ReadWrite) {
    let slot = match shared {
        true => &mut f.longest_reader_wait_ns,
        false => &mut f.longest_writer_wait_ns,
    };
    *slot = (*slot).max(wait);
}
