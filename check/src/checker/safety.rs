//! The four safety checks: double holders, stale ops accepted, lost updates and token order.
//!
//! Each is one pass over the grant table or the storage ops, independent of the others, so a
//! check can be read (and changed) alone. None of them looks at faults: faults explain a
//! violation, they never make or excuse one.
//!
//! With many locks and resources (`Event::Pick`), double holders and token order are judged
//! per lock, stale ops and lost updates per resource: two holders of different locks at once,
//! or an op on one resource after a newer grant's op on another, harm nothing.

use std::collections::BTreeMap;

use crate::history::{Event, GrantId, History, OpId, OpKind, OpOutcome};
use crate::verdict::{DoubleHolders, Found, LostUpdate, Overlap, StaleOp, TokenInversion};

use super::grants::Grants;

/// Check 1: critical sections of different clients, of one lock, that overlap for a positive
/// time.
///
/// Per lock: the pairs are summed, and so is the time with two or more holders (of one lock);
/// the most at once is the most of one lock. The examples of all locks are in the order their
/// overlaps began.
pub(super) fn double_holders(grants: &Grants, limit: usize) -> DoubleHolders {
    if grants.one_lock {
        return double_holders_of(grants, 0..grants.list.len(), limit);
    }
    let mut by_lock: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (ordinal, grant) in grants.list.iter().enumerate() {
        by_lock.entry(grant.lock).or_default().push(ordinal);
    }
    let mut found = DoubleHolders::default();
    for ordinals in by_lock.into_values() {
        let one = double_holders_of(grants, ordinals, limit);
        found.pairs += one.pairs;
        found.overlap_ns += one.overlap_ns;
        found.max_concurrent = found.max_concurrent.max(one.max_concurrent);
        found.examples.extend(one.examples);
    }
    found
        .examples
        .sort_by_key(|o| (o.from_ns, grants.ordinal(o.second), grants.ordinal(o.first)));
    found.examples.truncate(limit);
    found
}

/// Check 1 over the grants `ordinals` (in grant order).
///
/// A sweep over the sections' ends and starts, with ends before starts at equal times so that
/// `[a, b)` and `[b, c)` do not overlap. A section's overlapping pairs are counted when it
/// opens, against every section still open then.
fn double_holders_of(
    grants: &Grants,
    ordinals: impl IntoIterator<Item = usize>,
    limit: usize,
) -> DoubleHolders {
    // Sorting `false` (an end) before `true` (a start) at equal times; then by ordinal, which
    // keeps starts in grant order. An empty section [t, t) holds for no time: it is left out,
    // and its end would otherwise sort before its own start.
    let mut edges: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * grants.list.len());
    for ordinal in ordinals {
        let grant = &grants.list[ordinal];
        if grant.to_ns > grant.from_ns {
            edges.push((grant.from_ns, true, ordinal));
            edges.push((grant.to_ns, false, ordinal));
        }
    }
    edges.sort_unstable();

    let mut found = DoubleHolders {
        max_concurrent: u32::from(!grants.list.is_empty()),
        ..DoubleHolders::default()
    };
    let mut open: Vec<usize> = Vec::new();
    let mut last_ns = 0;
    // Two or more sections open conflict unless every one is a reader's.
    let conflict = |open: &[usize]| {
        open.len() >= 2 && (!grants.any_shared || open.iter().any(|&o| !grants.list[o].shared))
    };
    for (time_ns, opens, ordinal) in edges {
        if conflict(&open) {
            found.overlap_ns += time_ns - last_ns;
        }
        last_ns = time_ns;
        if !opens {
            open.retain(|&other| other != ordinal);
            continue;
        }
        let grant = &grants.list[ordinal];
        for &other in &open {
            let other = &grants.list[other];
            if other.id.client == grant.id.client || (other.shared && grant.shared) {
                continue;
            }
            found.pairs += 1;
            if found.examples.len() < limit {
                let to_ns = other.to_ns.min(grant.to_ns);
                found.examples.push(Overlap {
                    first: other.id,
                    second: grant.id,
                    from_ns: time_ns,
                    to_ns,
                });
            }
        }
        open.push(ordinal);
        found.max_concurrent = found.max_concurrent.max(open.len() as u32);
    }
    found
}

/// What check 2 found.
#[derive(Debug)]
pub(super) struct Stale {
    pub(super) accepted: Found<StaleOp>,
    /// Every rejected op, stale or not: fencing refused it.
    pub(super) rejected: u64,
}

/// The accepted op of the latest grant (in service order) storage has accepted an op from.
#[derive(Clone, Copy, Debug)]
struct Newest {
    rank: usize,
    entry: usize,
    op: OpId,
    grant: GrantId,
}

/// Check 2: ops storage accepted from a grant after it had accepted an op of a later grant.
///
/// Later is in service order: a grant the service issued after another is the newer, even if
/// its reply overtook the other's. Reads count like writes: a stale read hands the old holder
/// data it may act on. An op of an older grant that lands before any op of a newer one is
/// fine: it is consistent with the older holder having finished first.
pub(super) fn stale_ops(history: &History, grants: &Grants, limit: usize) -> Stale {
    let mut stale = Stale {
        accepted: Found::default(),
        rejected: 0,
    };
    // The newest op, and the newest op of a writer's (not a reader's) grant: of the one
    // resource, or of each resource.
    let mut one: (Option<Newest>, Option<Newest>) = (None, None);
    let mut newest_of: BTreeMap<u64, (Option<Newest>, Option<Newest>)> = BTreeMap::new();
    for (entry, event) in history.entries.iter().enumerate() {
        let Event::Storage(op) = &event.event else {
            continue;
        };
        if op.outcome == OpOutcome::Rejected {
            stale.rejected += 1;
            continue;
        }
        let ordinal = grants.ordinal(op.grant);
        let rank = grants.rank(ordinal);
        let (newest, newest_writer) = match grants.one_resource {
            true => &mut one,
            false => newest_of.entry(grants.list[ordinal].resource).or_default(),
        };
        // A reader's op is stale only after a newer writer's: readers share the resource.
        let shared = grants.list[ordinal].shared;
        let against = if shared { *newest_writer } else { *newest };
        match against {
            Some(newer) if rank < newer.rank => {
                let finding = StaleOp {
                    entry,
                    op: op.op,
                    grant: op.grant,
                    newer_entry: newer.entry,
                    newer_op: newer.op,
                    newer_grant: newer.grant,
                    time_ns: event.time_ns,
                };
                stale.accepted.record(finding, limit);
            }
            _ => {
                let this = Some(Newest {
                    rank,
                    entry,
                    op: op.op,
                    grant: op.grant,
                });
                // The first op of each grant stands for it: a later op of the same grant
                // moves nothing.
                if newest.is_none_or(|n| rank > n.rank) {
                    *newest = this;
                }
                if !shared && newest_writer.is_none_or(|n| rank > n.rank) {
                    *newest_writer = this;
                }
            }
        }
    }
    stale
}

/// What the replay of accepted writes found (check 3 and two liveness metrics).
#[derive(Debug)]
pub(super) struct Replay {
    pub(super) lost_updates: Found<LostUpdate>,
    pub(super) accepted_writes: u64,
    pub(super) final_value: u64,
    /// Whether each grant, by ordinal, had at least one write accepted.
    pub(super) wrote: Vec<bool>,
}

/// Check 3: replays accepted writes from `initial_value`; a write whose base is not the
/// current value overwrote a write it never saw.
///
/// The value is replayed rather than taken from reads because a read may be rejected or
/// stale, while every accepted write is what storage really held next. Each resource is
/// replayed on its own, from `initial_value`; the final value is the sum of the resources'
/// last values (`initial_value` when none was written).
pub(super) fn replay_writes(
    history: &History,
    grants: &Grants,
    initial_value: u64,
    limit: usize,
) -> Replay {
    let mut replay = Replay {
        lost_updates: Found::default(),
        accepted_writes: 0,
        final_value: initial_value,
        wrote: vec![false; grants.list.len()],
    };
    // Each resource's value, with many resources.
    let mut values: BTreeMap<u64, u64> = BTreeMap::new();
    for (entry, event) in history.entries.iter().enumerate() {
        let Event::Storage(op) = &event.event else {
            continue;
        };
        let OpKind::Write { value, base } = op.kind else {
            continue;
        };
        if op.outcome == OpOutcome::Rejected {
            continue;
        }
        replay.accepted_writes += 1;
        let ordinal = grants.ordinal(op.grant);
        replay.wrote[ordinal] = true;
        let slot = match grants.one_resource {
            true => &mut replay.final_value,
            false => values
                .entry(grants.list[ordinal].resource)
                .or_insert(initial_value),
        };
        let current = *slot;
        if base != current {
            let finding = LostUpdate {
                entry,
                op: op.op,
                grant: op.grant,
                base,
                current,
                time_ns: event.time_ns,
            };
            replay.lost_updates.record(finding, limit);
        }
        *slot = value;
    }
    if !values.is_empty() {
        replay.final_value = values.values().sum();
    }
    replay
}

/// Check 4: in service order, a grant whose token is not above every earlier grant's token
/// (of the same lock).
///
/// Grants without a token are skipped: a family that promises monotonic tokens gives one to
/// every grant, and a missing one says nothing about order.
pub(super) fn token_order(grants: &Grants, limit: usize) -> Found<TokenInversion> {
    let mut found = Found::default();
    // Per lock: the highest token so far and the first grant that had it, the same over
    // writers' (exclusive) grants only, and the grant just before, with its token. A reader's
    // grant is ordered after the writers' only: readers share, so two of them may take their
    // tokens in either order.
    #[derive(Default)]
    struct Seen {
        any: Option<(u64, GrantId)>,
        writers: Option<(u64, GrantId)>,
        previous: Option<(u64, GrantId)>,
    }
    let mut one = Seen::default();
    let mut seen: BTreeMap<u64, Seen> = BTreeMap::new();
    for grant in grants.in_service_order() {
        let Some(token) = grant.token else { continue };
        let s = match grants.one_lock {
            true => &mut one,
            false => seen.entry(grant.lock).or_default(),
        };
        let bar = match grant.shared {
            true => s.writers,
            false => s.any,
        };
        // A client that takes the lock again with the token of its own grant just before,
        // the highest so far, re-entered an ownership the service never ended (etcd's Mutex
        // on the same session while its key survives an unlock that failed): the same epoch,
        // not an inversion. Its operations stay subject to the stale-op check.
        let reentry = s
            .previous
            .is_some_and(|(t, g)| t == token && g.client == grant.id.client)
            && bar.is_some_and(|(t, _)| t == token);
        match bar {
            _ if reentry => {}
            Some((earlier_token, earlier)) if token <= earlier_token => {
                let finding = TokenInversion {
                    earlier,
                    earlier_token,
                    later: grant.id,
                    later_token: token,
                    time_ns: grant.from_ns,
                };
                found.record(finding, limit);
            }
            _ => {
                if s.any.is_none_or(|(t, _)| token > t) {
                    s.any = Some((token, grant.id));
                }
                if !grant.shared {
                    s.writers = Some((token, grant.id));
                }
            }
        }
        s.previous = Some((token, grant.id));
    }
    found
}
