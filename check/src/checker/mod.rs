//! The checker: from a history to a [`Verdict`].
//!
//! It reads only the history, never the simulator or a model, and it decides with integers
//! only, so the same history always gives the same verdict. `docs/checker.md` states every
//! definition as implemented here.
//!
//! Start reading at [`check`]: it validates the history while building the grant table
//! ([`grants`]), then runs the safety checks ([`safety`]) and the liveness metrics
//! ([`liveness`]) and, when asked, the leadership metrics ([`leadership`]), and the job queue
//! metrics when the history has jobs ([`queue`]), each a separate pass over the table or the
//! history.

mod cron;
mod grants;
mod leadership;
mod liveness;
mod queue;
mod read_write;
mod reentry;
mod safety;

use std::collections::BTreeMap;
use std::fmt;

use crate::history::{Event, GrantId, History};
use crate::verdict::{Found, Validity, Verdict};

pub use cron::tick_lateness_ns;
use grants::Grants;
pub use leadership::leadership_failovers_ns;
pub use liveness::{
    acquire_latencies_ns, acquire_waits_ns, acquire_waits_split_ns, time_waiting_ns,
};
pub use queue::queue_lags_ns;
pub use read_write::read_write_waits_ns;
pub use reentry::nested_waits_ns;

/// What the checker needs to know beyond the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The lock family promises monotonic fencing tokens (etcd revisions, ZooKeeper czxids):
    /// check token order. Off for families whose tokens may go backwards (Redis `INCR` after
    /// a failover) or that have none.
    pub tokens_monotonic: bool,
    /// The storage value before the first write, for the lost-update replay.
    pub initial_value: u64,
    /// How many examples of each kind of finding to keep; counts are always exact.
    pub example_limit: usize,
    /// True time (ns) from which no fault is in force: the quiet tail of a chaos run. The
    /// checker then measures how long the lock took to be granted again
    /// ([`Liveness::recovery`](crate::Liveness)).
    pub quiet_from_ns: Option<u64>,
    /// True time (ns) of the first instant a fault may come: with `quiet_from_ns`, the fault
    /// window, whose figures the checker then measures
    /// ([`Liveness::fault_window`](crate::Liveness)).
    pub fault_from_ns: Option<u64>,
    /// Read the history as leader election (one term per grant, each accepted write a work
    /// item) and fill [`Verdict::leadership`](crate::Verdict); off, the verdict has none.
    pub leadership: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tokens_monotonic: false,
            initial_value: 0,
            example_limit: 10,
            quiet_from_ns: None,
            fault_from_ns: None,
            leadership: false,
        }
    }
}

/// A history the checker cannot judge: it breaks the rules of the history format, so it is an
/// operating error (a bad input file or a model that records wrongly), not a verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryError {
    /// Index in `history.entries` of the first entry found at fault, if one entry is.
    pub entry: Option<usize>,
    /// What is wrong, naming processes, grants and ops as explanations do.
    pub message: String,
}

impl HistoryError {
    /// An error about one entry.
    fn at(entry: usize, message: String) -> HistoryError {
        HistoryError {
            entry: Some(entry),
            message,
        }
    }
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entry {
            Some(entry) => write!(f, "entry {entry}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for HistoryError {}

/// Each grant's lock and resource, as the grant table links them (the `Pick` before the
/// request a grant answers); empty for a history without `Pick` events, or one the checker
/// cannot judge. The explanations name locks and resources from it.
pub(crate) fn grant_picks(history: &History) -> BTreeMap<GrantId, (u64, u64)> {
    let picks = history
        .entries
        .iter()
        .any(|e| matches!(e.event, Event::Pick { .. }));
    match (picks, Grants::build(history)) {
        (true, Ok(grants)) => grants
            .list
            .iter()
            .map(|g| (g.id, (g.lock, g.resource)))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// Judges a history.
///
/// # Errors
/// A [`HistoryError`] for the first entry that breaks the history format: entries out of
/// true-time order or after `history.end_ns`, a grant id granted twice or out of its client's
/// order 1, 2, 3, ..., an exit or storage op naming a grant with no earlier `Grant`, a second
/// exit of a grant, a storage op whose sender is not its grant's holder, a `Nest` outside a
/// critical section or a `Nested` with no `Nest` waiting, a crashed process's own event
/// before its restart, a job enqueued twice, dequeued before its enqueue or done by a worker
/// that had not dequeued it, or ticks 0 and 2^64 - 1 both due (every rule is in
/// `docs/checker.md`).
pub fn check(history: &History, options: &Options) -> Result<Verdict, HistoryError> {
    let grants = Grants::build(history)?;
    let limit = options.example_limit;

    let double_holders = safety::double_holders(&grants, limit);
    let stale = safety::stale_ops(history, &grants, limit);
    let replay = safety::replay_writes(history, &grants, options.initial_value, limit);
    let token_order = match options.tokens_monotonic {
        true => safety::token_order(&grants, limit),
        false => Found::default(),
    };

    let queue = queue::measure(history, limit)?;
    let cron = cron::measure(history, &grants, limit)?;
    let jobs_harmed = queue
        .as_ref()
        .is_some_and(|q| q.done_twice.count > 0 || q.lost.count > 0)
        || cron.as_ref().is_some_and(|c| c.run_twice.count > 0);
    let resource_harmed = stale.accepted.count > 0
        || replay.lost_updates.count > 0
        || token_order.count > 0
        || jobs_harmed;
    let overlapped = double_holders.pairs > 0;
    let window = options
        .fault_from_ns
        .zip(options.quiet_from_ns)
        .filter(|(from, to)| from < to);
    let liveness = liveness::measure(history, &grants, &replay, options.quiet_from_ns, window);
    let leadership = options
        .leadership
        .then(|| leadership::measure(history, options.initial_value, limit));

    Ok(Verdict {
        resource: Validity::judge(resource_harmed, history.complete),
        mutual_exclusion: Validity::judge(resource_harmed || overlapped, history.complete),
        double_holders,
        stale_accepted: stale.accepted,
        stale_rejected: stale.rejected,
        lost_updates: replay.lost_updates,
        token_order,
        liveness,
        leadership,
        queue,
        cron,
        read_write: read_write::measure(history, &grants),
        reentry: reentry::measure(history),
    })
}
