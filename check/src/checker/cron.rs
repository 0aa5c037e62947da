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
/// due when it requested the lock, or for ticks 0 and 2^64 - 1 both due (2^64 ticks to
/// judge, one more than `Cron::ticks` holds).
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
    // The smallest and the largest tick due so far.
    let mut span: Option<(u64, u64)> = None;
    for (entry, e) in history.entries.iter().enumerate() {
        match e.event {
            Event::Due { tick, client } => {
                let (low, high) = span.map_or((tick, tick), |(l, h)| (l.min(tick), h.max(tick)));
                if (low, high) == (0, u64::MAX) {
                    return Err(HistoryError::at(
                        entry,
                        format!(
                            "ticks 0 and {} both came due: the 2^64 ticks from one to the \
                             other, all judged, are more than a count holds",
                            u64::MAX
                        ),
                    ));
                }
                span = Some((low, high));
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
    // Only the ticks some client found due are visited: the ticks between two of them, due
    // on no client, are missed and counted by arithmetic (a wall clock that jumped a billion
    // periods must not cost a billion steps).
    let mut next = first;
    for (&tick, t) in &ticks {
        miss_between(&mut missed, next, tick, limit);
        match t.runs.first() {
            Some(&(_, grant_ns, due_ns)) => {
                run += 1;
                lateness.push(grant_ns.saturating_sub(due_ns));
            }
            // The last tick due may still be running, or about to, when the run ends.
            None if tick < last => missed.record(tick, limit),
            None => {}
        }
        next = tick.saturating_add(1);
    }
    let cron = Cron {
        // No overflow: `tally`'s walk refused a span of all 2^64 ticks.
        ticks: last - first + 1,
        run,
        run_twice,
        missed,
        lateness: percentiles(lateness.clone()),
    };
    Ok((Some(cron), lateness))
}

/// Counts the ticks `from..to` (none due on any client) as missed, keeping the first of them
/// as examples while fewer than `limit` are kept.
fn miss_between(missed: &mut Found<u64>, from: u64, to: u64, limit: usize) {
    let gap = to.saturating_sub(from);
    let room = limit.saturating_sub(missed.examples.len());
    let keep = gap.min(u64::try_from(room).unwrap_or(u64::MAX));
    missed.examples.extend(from..from + keep);
    missed.count += gap;
}
