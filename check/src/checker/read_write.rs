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
    let (mut reader_waits, mut writer_waits) = (Vec::new(), Vec::new());
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
                let shared = grants.list[grants.ordinal(*grant)].shared;
                match shared {
                    true => figures.readers += 1,
                    false => figures.writers += 1,
                }
                if let Some((from, _)) = pending.remove(&grant.client) {
                    match shared {
                        true => reader_waits.push(t - from),
                        false => writer_waits.push(t - from),
                    }
                    longest(shared, t - from, &mut figures);
                }
            }
            Event::AcquireFailed { client } => {
                if let Some((from, shared)) = pending.remove(client) {
                    longest(shared, t - from, &mut figures);
                }
            }
            Event::Fault(f) if f.kind == FaultKind::Crash => {
                for n in &f.nodes {
                    if let Some((from, shared)) = pending.remove(n) {
                        longest(shared, t - from, &mut figures);
                    }
                }
            }
            _ => {}
        }
    }
    for (_, (from, shared)) in pending {
        longest(shared, history.end_ns - from, &mut figures);
    }
    figures.reader_wait = percentiles(reader_waits);
    figures.writer_wait = percentiles(writer_waits);
    Some(figures)
}

/// Keeps `wait` if it is the longest of its side so far.
fn longest(shared: bool, wait: u64, f: &mut ReadWrite) {
    let slot = match shared {
        true => &mut f.longest_reader_wait_ns,
        false => &mut f.longest_writer_wait_ns,
    };
    *slot = (*slot).max(wait);
}
