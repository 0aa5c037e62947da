//! Leadership metrics: a history read as leader election, one grant per leadership term,
//! the leader's accepted writes its work items (each writes `value + 1`, so each accepted
//! value names one item). Computed only with [`Options::leadership`](crate::Options); they
//! never change a verdict (two leaders acting already show as double holders, stale ops and
//! lost updates).
//!
//! The definitions are in `docs/checker.md`, section "Leadership metrics". The workload they
//! judge mirrors client-go's `tools/leaderelection/leaderelection.go`: `OnStartedLeading` runs
//! the leader's work until `OnStoppedLeading`, and nothing stops a deposed leader's in-flight
//! work but the storage.

use std::collections::BTreeMap;

use crate::history::{Event, GrantId, History, NodeId, OpKind, OpOutcome};
use crate::verdict::{DuplicateItem, Found, Leadership, Overlap};

use super::liveness::percentiles;

/// One term: a grant with at least one accepted write, and its work span.
#[derive(Clone, Copy, Debug)]
struct Term {
    grant: GrantId,
    /// True time of its first and last accepted write.
    first_ns: u64,
    last_ns: u64,
}

/// What one pass over the accepted writes finds.
struct Walk {
    /// Terms in the order of their first accepted write.
    terms: Vec<Term>,
    /// Each accepted value and the entry of its first accepted write.
    first_write: BTreeMap<u64, usize>,
    duplicate_items: Found<DuplicateItem>,
}

/// Follows the accepted writes through the history: terms, their spans, duplicate values.
fn walk(history: &History, limit: usize) -> Walk {
    let mut walk = Walk {
        terms: Vec::new(),
        first_write: BTreeMap::new(),
        duplicate_items: Found::default(),
    };
    let mut term_of: BTreeMap<GrantId, usize> = BTreeMap::new();
    for (entry, event) in history.entries.iter().enumerate() {
        let Event::Storage(op) = &event.event else {
            continue;
        };
        let OpKind::Write { value, .. } = op.kind else {
            continue;
        };
        if op.outcome == OpOutcome::Rejected {
            continue;
        }
        let time_ns = event.time_ns;
        match term_of.get(&op.grant) {
            Some(&term) => walk.terms[term].last_ns = time_ns,
            None => {
                term_of.insert(op.grant, walk.terms.len());
                walk.terms.push(Term {
                    grant: op.grant,
                    first_ns: time_ns,
                    last_ns: time_ns,
                });
            }
        }
        match walk.first_write.get(&value) {
            Some(&first_entry) => {
                let first_op = match &history.entries[first_entry].event {
                    Event::Storage(first) => first.op,
                    _ => unreachable!("first_write holds storage entries only"),
                };
                let finding = DuplicateItem {
                    value,
                    first_entry,
                    first_op,
                    entry,
                    op: op.op,
                    time_ns,
                };
                walk.duplicate_items.record(finding, limit);
            }
            None => {
                walk.first_write.insert(value, entry);
            }
        }
    }
    walk
}

/// All leadership metrics of a history the grant table has validated.
pub(super) fn measure(history: &History, initial_value: u64, limit: usize) -> Leadership {
    let walk = walk(history, limit);
    let (two_leaders_ns, two_leaders) = two_leaders(&walk.terms, limit);
    Leadership {
        terms: walk.terms.len() as u64,
        two_leaders_ns,
        two_leaders,
        failover: percentiles(failover_gaps(&walk.terms)),
        duplicate_items: walk.duplicate_items,
        skipped_items: skipped(&walk.first_write, initial_value, limit),
    }
}

/// Every leadership change's failover time in a history, in the order of the terms' first
/// writes: exactly the samples behind [`Leadership::failover`]. A report pools them over many
/// runs.
pub fn leadership_failovers_ns(history: &History) -> Vec<u64> {
    failover_gaps(&walk(history, 0).terms)
}

/// Total true time with work spans of two or more clients open, and the pairs of terms of
/// different clients whose spans overlap for a positive time.
///
/// A sweep over the spans' ends and starts, ends first at equal times, so `[a, b]` and
/// `[b, c]` do not overlap; a span of one write (`[a, a]`) holds for no time and is left out.
fn two_leaders(terms: &[Term], limit: usize) -> (u64, Found<Overlap>) {
    let mut edges: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * terms.len());
    for (index, term) in terms.iter().enumerate() {
        if term.last_ns > term.first_ns {
            edges.push((term.first_ns, true, index));
            edges.push((term.last_ns, false, index));
        }
    }
    edges.sort_unstable();
    let mut pairs = Found::default();
    let mut open: Vec<usize> = Vec::new();
    // Open spans per client: time counts while two or more clients have one.
    let mut clients: BTreeMap<NodeId, u32> = BTreeMap::new();
    let (mut last_ns, mut total_ns) = (0u64, 0u64);
    for (time_ns, opens, index) in edges {
        if clients.len() >= 2 {
            total_ns += time_ns - last_ns;
        }
        last_ns = time_ns;
        let term = &terms[index];
        let client = term.grant.client;
        if !opens {
            open.retain(|&other| other != index);
            if let Some(count) = clients.get_mut(&client) {
                *count -= 1;
                if *count == 0 {
                    clients.remove(&client);
                }
            }
            continue;
        }
        for &other in &open {
            let other = &terms[other];
            if other.grant.client == client {
                continue;
            }
            let finding = Overlap {
                first: other.grant,
                second: term.grant,
                from_ns: time_ns,
                to_ns: other.last_ns.min(term.last_ns),
            };
            pairs.record(finding, limit);
        }
        open.push(index);
        *clients.entry(client).or_insert(0) += 1;
    }
    (total_ns, pairs)
}

/// For each term after the first (in the order of first writes), the time from the latest
/// last write of all earlier terms to its first write, 0 when it began before that.
fn failover_gaps(terms: &[Term]) -> Vec<u64> {
    let mut gaps = Vec::with_capacity(terms.len().saturating_sub(1));
    let mut latest_ns: Option<u64> = None;
    for term in terms {
        if let Some(latest_ns) = latest_ns {
            gaps.push(term.first_ns.saturating_sub(latest_ns));
        }
        latest_ns = Some(latest_ns.map_or(term.last_ns, |l| l.max(term.last_ns)));
    }
    gaps
}

/// Values in `(initial_value, highest accepted value]` that no accepted write wrote, the first
/// `limit` of them (ascending) as examples.
fn skipped(accepted: &BTreeMap<u64, usize>, initial_value: u64, limit: usize) -> Found<u64> {
    let mut found = Found::default();
    let mut next = initial_value.saturating_add(1);
    for &value in accepted.keys().filter(|&&v| v > initial_value) {
        // Values `next..value` are missing.
        let missing = value - next;
        for skipped in (next..value).take(limit.saturating_sub(found.examples.len())) {
            found.examples.push(skipped);
        }
        found.count += missing;
        next = value.saturating_add(1);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(values: &[u64]) -> BTreeMap<u64, usize> {
        values.iter().map(|&v| (v, 0)).collect()
    }

    #[test]
    fn skipped_counts_the_gaps_above_the_initial_value_and_keeps_the_first() {
        let found = skipped(&values(&[1, 3, 4, 9]), 0, 3);
        assert_eq!((found.count, found.examples), (5, vec![2, 5, 6]));
        // Values at or below the initial value, and none at all, skip nothing.
        assert_eq!(skipped(&values(&[2, 5, 7]), 5, 10).count, 1);
        assert_eq!(skipped(&values(&[]), 5, 10).count, 0);
        assert_eq!(skipped(&values(&[u64::MAX]), u64::MAX - 1, 10).count, 0);
    }
}
