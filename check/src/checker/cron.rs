//! Scheduled job metrics: a history whose clients run a job on a schedule (`Due` events).
//! Each tick's job must run exactly once: a tick run twice (two grants of two ticks' worth
//! of work: a node whose clock ran ahead, a lock released before a slower node tried) harms
//! the resource as a stale write does, so it makes both verdicts invalid; a tick missed (due,
//! and no grant ran it, while a later tick came due) is liveness.
//!
//! The definitions are in `docs/checker.md`, section "Scheduled jobs". A grant runs the tick
//! of its client's last `Due` before the `Request` it answers; it *ran* the job when storage
//! accepted one of its writes (the job's effect), so a job cut short by a crash, or whose
//! write fencing refused, did not run.

use std::collections::BTreeMap;

use crate::history::{Event, GrantId, History, NodeId, OpKind, OpOutcome};
use crate::verdict::{Cron, Found, RunTwice};

use super::HistoryError;
use super::grants::Grants;
use super::liveness::percentiles;

/// One tick's life in the history.
#[derive(Clone, Debug, Default)]
struct Tick {
    /// The grants that ran it, in the order their first write was accepted: the grant, its
    /// time and the time of the `Due` it answered.
    runs: Vec<(GrantId, u64, u64)>,
}

/// Every run tick's lateness in `history` (from the `Due` its first run answered to that
/// run's grant), in tick order: the samples of [`Cron::lateness`], for pooling over runs.
/// None for a history without ticks or one the checker cannot judge.
pub fn tick_lateness_ns(history: &History) -> Vec<u64> {
    let due = history
        .entries
        .iter()
        .any(|e| matches!(e.event, Event::Due { .. }));
    match due {
        true => tally(history, 0).map_or_else(|_| Vec::new(), |(_, lateness)| lateness),
        false => Vec::new(),
    }
}

/// The scheduled job's metrics of `history` (whose grant table says whether it has `Due`
/// events), `None` without them.
///
/// # Errors
/// A [`HistoryError`] for a grant in a history with `Due` events whose client had no tick
/// due when it requested the lock.
pub(super) fn measure(
    history: &History,
    grants: &Grants,
    limit: usize,
) -> Result<Option<Cron>, HistoryError> {
    match grants.any_due {
        true => tally(history, limit).map(|(cron, _)| cron),
        false => Ok(None),
    }
}

/// The metrics and the lateness samples of a history with `Due` events.
fn tally(history: &History, limit: usize) -> Result<(Option<Cron>, Vec<u64>), HistoryError> {
    let mut ticks: BTreeMap<u64, Tick> = BTreeMap::new();
    // Each client's last tick due, and the tick its open request is for, with the time it
    // came due.
    let mut due: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
    let mut requested: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
    // Each grant's tick, time, and its tick's due time.
    let mut granted: BTreeMap<GrantId, (u64, u64, u64)> = BTreeMap::new();
    let mut run_twice = Found::default();
    for (entry, e) in history.entries.iter().enumerate() {
        match e.event {
            Event::Due { tick, client } => {
                ticks.entry(tick).or_default();
                due.insert(client, (tick, e.time_ns));
            }
            Event::Request { client } => {
                if let Some(&due) = due.get(&client) {
                    requested.insert(client, due);
                }
            }
            Event::Grant { grant, .. } => {
                let Some((tick, due_ns)) = requested.remove(&grant.client) else {
                    return Err(HistoryError::at(
                        entry,
                        format!(
                            "{} was granted the lock with no tick of its schedule due",
                            history.name(grant.client)
                        ),
                    ));
                };
                granted.insert(grant, (tick, e.time_ns, due_ns));
            }
            Event::Storage(op)
                if op.outcome == OpOutcome::Accepted && matches!(op.kind, OpKind::Write { .. }) =>
            {
                let Some(&(tick, grant_ns, due_ns)) = granted.get(&op.grant) else {
                    continue;
                };
                let t = ticks.entry(tick).or_default();
                if t.runs.iter().any(|(g, ..)| *g == op.grant) {
                    continue; // A second write of the same run.
                }
                if let Some(&(first, first_ns, _)) = t.runs.first() {
                    run_twice.record(
                        RunTwice {
                            tick,
                            first,
                            first_ns,
                            second: op.grant,
                            second_ns: grant_ns,
                            entry,
                        },
                        limit,
                    );
                }
                t.runs.push((op.grant, grant_ns, due_ns));
            }
            _ => {}
        }
    }
    let (Some(&first), Some(&last)) = (ticks.keys().next(), ticks.keys().next_back()) else {
        return Ok((None, Vec::new()));
    };
    let mut missed = Found::default();
    let mut run = 0;
    let mut lateness = Vec::new();
    for tick in first..=last {
        match ticks.get(&tick).and_then(|t| t.runs.first()) {
            Some(&(_, grant_ns, due_ns)) => {
                run += 1;
                lateness.push(grant_ns.saturating_sub(due_ns));
            }
            // The last tick due may still be running, or about to, when the run ends.
            None if tick < last => missed.record(tick, limit),
            None => {}
        }
    }
    let cron = Cron {
        ticks: last - first + 1,
        run,
        run_twice,
        missed,
        lateness: percentiles(lateness.clone()),
    };
    Ok((Some(cron), lateness))
}
