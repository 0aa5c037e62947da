//! Liveness metrics: how often and how fast the lock was granted, and how it recovered from
//! faults. They never change a verdict.
//!
//! Waiting is tracked per client from its `Request` to its next `Grant`; the waits feed the
//! acquire latency, the unavailable time and the fairness share.

use crate::history::{Event, ExitReason, FaultKind, History, NodeId};
use crate::verdict::{Censored, Failover, FaultWindow, Liveness, Percentiles, Recovery};

use super::grants::{CsEnd, Grants};
use super::safety::Replay;

/// All liveness metrics of a history.
pub(super) fn measure(
    history: &History,
    grants: &Grants,
    replay: &Replay,
    quiet_from_ns: Option<u64>,
    window: Option<(u64, u64)>,
) -> Liveness {
    let waits = waits(history);
    let grant_count = grants.list.len() as u64;
    let released = CsEnd::Exit(ExitReason::Released);
    let cs_completed = grants
        .list
        .iter()
        .zip(&replay.wrote)
        .filter(|(grant, wrote)| **wrote && grant.end == released)
        .count() as u64;
    // At most 1_000_000, since in-order grants are a subset of grants.
    let fairness_ppm = (grant_count > 0).then(|| (waits.in_order * 1_000_000 / grant_count) as u32);
    let (unavailable_ns, unavailable_in_ns) = unavailable(grants, &waits.waiting, window);
    let fault_window = window.map(|(from_ns, to_ns)| {
        fault_window(&waits, grants, replay, from_ns, to_ns, unavailable_in_ns)
    });
    Liveness {
        end_ns: history.end_ns,
        grants: grant_count,
        cs_completed,
        accepted_writes: replay.accepted_writes,
        final_value: replay.final_value,
        acquire_latency: percentiles(waits.latencies_ns),
        acquire_censored: waits.censored,
        acquire_failures: waits.failures,
        unavailable_ns,
        fault_window,
        failover: failover(history, grants),
        fairness_ppm,
        recovery: quiet_from_ns.map(|quiet_from_ns| recovery(history, quiet_from_ns)),
    }
}

/// The first grant at or after the faults stopped; for a job queue, the first dequeue.
fn recovery(history: &History, quiet_from_ns: u64) -> Recovery {
    let first_grant_ns = history
        .entries
        .iter()
        .filter(|e| e.time_ns >= quiet_from_ns)
        .find(|e| matches!(e.event, Event::Grant { .. } | Event::Dequeued { .. }))
        .map(|e| e.time_ns);
    Recovery {
        quiet_from_ns,
        first_grant_ns,
    }
}

/// Every wait for the lock of a history (see [`Liveness::acquire_latency`]), in nanoseconds,
/// censored ones at their length so far: exactly the samples behind it. A sweep pools them
/// over many runs.
pub fn acquire_latencies_ns(history: &History) -> Vec<u64> {
    waits(history).latencies_ns
}

/// The clients' time spent waiting for the lock, summed over the clients: every wait from the
/// `Request` that began it to its grant, a tick given up, its client's crash or the run's end.
pub fn time_waiting_ns(history: &History) -> u64 {
    acquire_waits_ns(history).1
}

/// [`acquire_latencies_ns`] and [`time_waiting_ns`] of `history` from one walk.
pub fn acquire_waits_ns(history: &History) -> (Vec<u64>, u64) {
    let (latencies_ns, waiting_ns, _) = acquire_waits_split_ns(history, None);
    (latencies_ns, waiting_ns)
}

/// The figures of a fault window `[from_ns, to_ns)` (a chaos run's faults, between its start
/// and its quiet tail) from the walk `waits` and the window's `unavailable_ns`: what the
/// clients met while faults came, without the time before and after, which every design of a
/// review spends alike but which would dilute its figures in proportion to how often it grants
/// when healthy.
fn fault_window(
    waits: &Waits,
    grants: &Grants,
    replay: &Replay,
    from_ns: u64,
    to_ns: u64,
    unavailable_ns: u64,
) -> FaultWindow {
    let mut censored = Censored::default();
    let mut began = Vec::new();
    for (i, (&ns, &at)) in waits.latencies_ns.iter().zip(&waits.began_ns).enumerate() {
        if (from_ns..to_ns).contains(&at) {
            began.push(ns);
            if waits.censored_at.contains(&i) {
                censored.add(ns);
            }
        }
    }
    let released = CsEnd::Exit(ExitReason::Released);
    let cs_completed = grants
        .list
        .iter()
        .zip(&replay.wrote)
        .filter(|(grant, wrote)| {
            **wrote && grant.end == released && (from_ns..to_ns).contains(&grant.from_ns)
        })
        .count() as u64;
    FaultWindow {
        from_ns,
        to_ns,
        acquire_latency: percentiles(began),
        acquire_censored: censored,
        unavailable_ns,
        cs_completed,
    }
}

/// [`acquire_waits_ns`] of `history`, and the waits among them that began in `window`
/// (`[from_ns, to_ns)`, the samples behind [`FaultWindow::acquire_latency`]), from one walk.
pub fn acquire_waits_split_ns(
    history: &History,
    window: Option<(u64, u64)>,
) -> (Vec<u64>, u64, Vec<u64>) {
    let waits = waits(history);
    let waiting = waits.waiting.iter().map(|(from, to)| to - from).sum();
    let begun = window.map_or_else(Vec::new, |(from_ns, to_ns)| {
        waits
            .latencies_ns
            .iter()
            .zip(&waits.began_ns)
            .filter(|&(_, at)| (from_ns..to_ns).contains(at))
            .map(|(&ns, _)| ns)
            .collect()
    });
    (waits.latencies_ns, waiting, begun)
}

/// What the walk over requests and grants found.
#[derive(Debug, Default)]
struct Waits {
    /// Each wait's length: from the request that began it to its grant, or, censored, to its
    /// client's crash or the run's end.
    latencies_ns: Vec<u64>,
    /// When each of `latencies_ns` began, in the same order.
    began_ns: Vec<u64>,
    /// The censored waits among them: how many, and the shortest.
    censored: Censored,
    /// The places in `latencies_ns` of the censored waits.
    censored_at: Vec<usize>,
    failures: u64,
    /// Each wait as `[from_ns, to_ns)`, ended by a grant, a tick given up, a crash or the
    /// run's end.
    waiting: Vec<(u64, u64)>,
    /// Grants that went to the client that had waited longest.
    in_order: u64,
}

/// Follows each client's wait through the history: from the `Request` that begins it (the
/// first since the client's last grant, start or crash) to its `Grant`, across every try that
/// failed (`AcquireFailed`) and every `Request` that tried again in between. A wait for a
/// scheduled tick (a `Request` after a `Due`) ends when its try fails: the job gave the tick
/// up. A wait still open at its client's crash or at the run's end is censored: kept at its
/// length so far, a lower bound.
fn waits(history: &History) -> Waits {
    let mut waits = Waits::default();
    // Each client's open wait: when it began; a second request keeps the first, since the
    // client has been waiting since then.
    let mut pending = Pending::default();
    // The clients whose next request (and so their open wait) is for a scheduled tick.
    let mut ticking: Vec<NodeId> = Vec::new();
    let censor = |waits: &mut Waits, from_ns: u64, to_ns: u64| {
        waits.censored_at.push(waits.latencies_ns.len());
        waits.latencies_ns.push(to_ns - from_ns);
        waits.began_ns.push(from_ns);
        waits.censored.add(to_ns - from_ns);
        waits.waiting.push((from_ns, to_ns));
    };
    for entry in &history.entries {
        let time_ns = entry.time_ns;
        match &entry.event {
            Event::Due { client, .. } if !ticking.contains(client) => ticking.push(*client),
            Event::Request { client } => pending.request(*client, time_ns),
            Event::Grant { grant, .. } => {
                ticking.retain(|c| *c != grant.client);
                // A grant without a pending request counts as requested at the grant: it is
                // in order only if nobody else was waiting before it.
                let requested_ns = pending.get(grant.client).unwrap_or(time_ns);
                let earliest_ns = pending.earliest().unwrap_or(time_ns);
                if requested_ns <= earliest_ns {
                    waits.in_order += 1;
                }
                if let Some(from_ns) = pending.remove(grant.client) {
                    waits.latencies_ns.push(time_ns - from_ns);
                    waits.began_ns.push(from_ns);
                    waits.waiting.push((from_ns, time_ns));
                }
            }
            Event::AcquireFailed { client } => {
                waits.failures += 1;
                // Only a tick's try ends the wait: any other client tries again.
                if let Some(at) = ticking.iter().position(|c| c == client) {
                    ticking.swap_remove(at);
                    if let Some(from_ns) = pending.remove(*client) {
                        waits.waiting.push((from_ns, time_ns));
                    }
                }
            }
            // A crashed client is no longer waiting: its request died with it.
            Event::Fault(fault) if fault.kind == FaultKind::Crash => {
                for &node in &fault.nodes {
                    ticking.retain(|c| *c != node);
                    if let Some(from_ns) = pending.remove(node) {
                        censor(&mut waits, from_ns, time_ns);
                    }
                }
            }
            _ => {}
        }
    }
    for &(_, from_ns) in &pending.0 {
        censor(&mut waits, from_ns, history.end_ns);
    }
    waits
}

/// The clients waiting, each with the time of its pending request, sorted by client: a few
/// at a time, so a sorted vector (a binary search, a short shift) rather than a tree; this
/// walk runs on every run of a sweep.
#[derive(Debug, Default)]
struct Pending(Vec<(NodeId, u64)>);

impl Pending {
    /// `client` asks at `time_ns`, unless it is already waiting.
    fn request(&mut self, client: NodeId, time_ns: u64) {
        if let Err(at) = self.0.binary_search_by_key(&client, |&(c, _)| c) {
            self.0.insert(at, (client, time_ns));
        }
    }

    fn get(&self, client: NodeId) -> Option<u64> {
        let at = self.0.binary_search_by_key(&client, |&(c, _)| c).ok()?;
        Some(self.0[at].1)
    }

    /// The earliest pending request.
    fn earliest(&self) -> Option<u64> {
        self.0.iter().map(|&(_, from_ns)| from_ns).min()
    }

    fn remove(&mut self, client: NodeId) -> Option<u64> {
        let at = self.0.binary_search_by_key(&client, |&(c, _)| c).ok()?;
        Some(self.0.remove(at).1)
    }
}

/// Total true time with no critical section open while at least one client waited, and the
/// part of it inside `window` (`[from_ns, to_ns)`; 0 without one).
///
/// A sweep over both kinds of interval. The order of edges at equal times does not matter
/// here: the time between two edges at the same instant is zero.
fn unavailable(grants: &Grants, waiting: &[(u64, u64)], window: Option<(u64, u64)>) -> (u64, u64) {
    let (from_ns, to_ns) = window.unwrap_or((0, 0));
    // (time, change in open sections, change in waiting clients)
    let mut edges: Vec<(u64, i64, i64)> =
        Vec::with_capacity(2 * (grants.list.len() + waiting.len()));
    for grant in &grants.list {
        edges.push((grant.from_ns, 1, 0));
        edges.push((grant.to_ns, -1, 0));
    }
    for &(from_ns, to_ns) in waiting {
        edges.push((from_ns, 0, 1));
        edges.push((to_ns, 0, -1));
    }
    // By time alone: edges at one instant add nothing between them, in any order.
    edges.sort_unstable_by_key(|&(time_ns, _, _)| time_ns);
    let (mut open, mut waiters, mut last_ns) = (0i64, 0i64, 0u64);
    let (mut total_ns, mut inside_ns) = (0u64, 0u64);
    for (time_ns, open_change, waiting_change) in edges {
        if open <= 0 && waiters > 0 {
            total_ns += time_ns - last_ns;
            // The part of `[last_ns, time_ns)` inside the window.
            inside_ns += time_ns.min(to_ns).saturating_sub(last_ns.max(from_ns));
        }
        last_ns = time_ns;
        open += open_change;
        waiters += waiting_change;
    }
    (total_ns, inside_ns)
}

/// Faults that took away a holder, and the time from each to the next grant to a client the
/// fault did not touch.
///
/// Only holders are visible in a history, so a fault on a lock server (the service's leader)
/// that no holder shared is not counted.
fn failover(history: &History, grants: &Grants) -> Failover {
    let mut result = Failover::default();
    // Faults not yet followed by a grant to an untouched client: (fault time, fault nodes).
    let mut open_faults: Vec<(u64, &[NodeId])> = Vec::new();
    let mut recovery_ns: Vec<u64> = Vec::new();
    for (index, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::Fault(fault)
                if matches!(
                    fault.kind,
                    FaultKind::Crash
                        | FaultKind::Terminate
                        | FaultKind::Pause
                        | FaultKind::Partition
                ) =>
            {
                let took_holder = fault
                    .nodes
                    .iter()
                    .any(|&node| grants.open_before(node, index).is_some());
                if took_holder {
                    result.count += 1;
                    open_faults.push((entry.time_ns, &fault.nodes));
                }
            }
            Event::Grant { grant, .. } => open_faults.retain(|&(fault_ns, nodes)| {
                let recovered = !nodes.contains(&grant.client);
                if recovered {
                    recovery_ns.push(entry.time_ns - fault_ns);
                }
                !recovered
            }),
            _ => {}
        }
    }
    result.recovered = recovery_ns.len() as u64;
    result.max_ns = recovery_ns.iter().copied().max();
    let total_ns: u128 = recovery_ns.iter().map(|&ns| u128::from(ns)).sum();
    // The mean of u64 values is at most their maximum, so it fits back into u64.
    result.mean_ns =
        (result.recovered > 0).then(|| (total_ns / u128::from(result.recovered)) as u64);
    result
}

/// Nearest-rank p50, p99 and max of `values`; `None` when there are none.
pub(super) fn percentiles(mut values: Vec<u64>) -> Option<Percentiles> {
    values.sort_unstable();
    let max_ns = *values.last()?;
    Some(Percentiles {
        p50_ns: nearest_rank(&values, 50),
        p99_ns: nearest_rank(&values, 99),
        max_ns,
        count: values.len() as u64,
    })
}

/// The nearest-rank `percent`-th percentile of non-empty sorted `values`: the smallest value
/// with at least `percent`% of the values at or below it.
fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_takes_the_smallest_value_covering_the_percent() {
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&hundred, 50), 50);
        assert_eq!(nearest_rank(&hundred, 99), 99);
        assert_eq!(nearest_rank(&[7], 50), 7);
        assert_eq!(nearest_rank(&[7], 99), 7);
        // 50% of 3 values is 1.5 values: the rank rounds up to the 2nd.
        assert_eq!(nearest_rank(&[1, 2, 3], 50), 2);
        assert_eq!(nearest_rank(&[1, 2, 3], 99), 3);
    }

    #[test]
    fn percentiles_sort_their_input_and_are_none_when_empty() {
        assert_eq!(percentiles(Vec::new()), None);
        let found = percentiles(vec![30, 10, 20, 40]).expect("four values");
        assert_eq!(
            found,
            Percentiles {
                p50_ns: 20,
                p99_ns: 40,
                max_ns: 40,
                count: 4
            }
        );
    }
}
