//! What the checker concludes about a history: the two verdicts, every finding behind them and
//! the liveness metrics.
//!
//! These are plain data, serialized as they are into reports (the field names are the JSON
//! names). They are computed only by [`check`](crate::check); nothing here judges a history.
//! Start with [`Verdict`]; [`Verdict::explain`] turns the findings into sentences.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::history::{GrantId, NodeId, OpId};

/// Which property a scenario judges; the run's verdict is [`Verdict::get`] of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Property {
    /// The protected data was not harmed: no stale op accepted, no lost update, no token order
    /// violation. What fencing can guarantee.
    #[default]
    Resource,
    /// No two holders acted at once, and the resource was not harmed. What side effects that
    /// cannot be fenced (an e-mail, a payment) need.
    MutualExclusion,
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Property::Resource => "resource",
            Property::MutualExclusion => "mutual-exclusion",
        })
    }
}

impl FromStr for Property {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "resource" => Ok(Property::Resource),
            "mutual-exclusion" => Ok(Property::MutualExclusion),
            _ => Err(ParseError {
                what: "property",
                text: text.to_owned(),
            }),
        }
    }
}

/// The verdict on one property.
///
/// The order of the variants is the merge order: `Valid < Unknown < Invalid`, so merging is
/// taking the maximum, and the default (`Valid`) is what merging no verdict at all gives.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Validity {
    /// The history is complete and shows no violation of the property.
    #[default]
    Valid,
    /// No violation, but the run hit its event or time bound before its planned end.
    Unknown,
    /// At least one violation of the property.
    Invalid,
}

impl Validity {
    /// Merges two verdicts, as for several runs of one scenario: invalid wins over unknown,
    /// which wins over valid.
    pub fn merge(self, other: Validity) -> Validity {
        self.max(other)
    }

    /// The verdict for a property that was `violated` or not, in a history that is `complete`
    /// or not: a violation is invalid even in an incomplete history, because what happened
    /// cannot be undone by what did not get to happen.
    pub(crate) fn judge(violated: bool, complete: bool) -> Validity {
        match (violated, complete) {
            (true, _) => Validity::Invalid,
            (false, false) => Validity::Unknown,
            (false, true) => Validity::Valid,
        }
    }
}

impl fmt::Display for Validity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Validity::Valid => "valid",
            Validity::Unknown => "unknown",
            Validity::Invalid => "invalid",
        })
    }
}

impl FromStr for Validity {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "valid" => Ok(Validity::Valid),
            "unknown" => Ok(Validity::Unknown),
            "invalid" => Ok(Validity::Invalid),
            _ => Err(ParseError {
                what: "verdict",
                text: text.to_owned(),
            }),
        }
    }
}

/// A [`Property`] or [`Validity`] name that is not one of the known names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What was being parsed: `property` or `verdict`.
    pub what: &'static str,
    /// The text that did not parse.
    pub text: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let expected = match self.what {
            "property" => "resource or mutual-exclusion",
            _ => "valid, unknown or invalid",
        };
        write!(
            f,
            "unknown {} `{}`: expected {}",
            self.what, self.text, expected
        )
    }
}

impl std::error::Error for ParseError {}

/// Everything the checker found in one history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Invalid if any stale op was accepted, any update was lost or a token went backwards.
    pub resource: Validity,
    /// Invalid if two holders overlapped, or if `resource` is invalid.
    pub mutual_exclusion: Validity,
    /// Critical sections of different clients that overlapped in true time.
    pub double_holders: DoubleHolders,
    /// Ops storage accepted from a grant after it had accepted an op of a later grant.
    pub stale_accepted: Found<StaleOp>,
    /// Ops storage rejected (fencing at work): not a violation.
    pub stale_rejected: u64,
    /// Accepted writes computed from a value that was no longer the storage's value.
    pub lost_updates: Found<LostUpdate>,
    /// Grants whose fencing token was not above every earlier grant's token (only checked
    /// when the family promises monotonic tokens).
    pub token_order: Found<TokenInversion>,
    /// Liveness metrics: never part of the two verdicts.
    pub liveness: Liveness,
    /// Leadership metrics, with [`Options::leadership`](crate::Options) only: never part of the
    /// two verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leadership: Option<Leadership>,
    /// Job queue metrics, when the history enqueued jobs: jobs done twice and jobs lost make
    /// both verdicts invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<Queue>,
    /// Scheduled job metrics, when clients ran a job on a schedule: a tick run twice makes
    /// both verdicts invalid; a tick missed is liveness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<Cron>,
    /// Read-write lock metrics, when some grant was a reader's: never part of the two
    /// verdicts (the safety checks already let readers share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_write: Option<ReadWrite>,
    /// Nested acquisitions, when a client took the lock it held again (`Nest` events): never
    /// part of the two verdicts (what a nested release does shows in the safety checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reentry: Option<Reentry>,
}

impl Verdict {
    /// The verdict on one property.
    pub fn get(&self, property: Property) -> Validity {
        match property {
            Property::Resource => self.resource,
            Property::MutualExclusion => self.mutual_exclusion,
        }
    }
}

/// Findings of one kind: the exact count and the first few, in history order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found<T> {
    /// How many there were.
    pub count: u64,
    /// The first `example_limit` of them, in history order.
    pub examples: Vec<T>,
}

impl<T> Default for Found<T> {
    fn default() -> Self {
        Found {
            count: 0,
            examples: Vec::new(),
        }
    }
}

impl<T> Found<T> {
    /// Counts one finding and keeps it as an example while fewer than `limit` are kept.
    pub(crate) fn record(&mut self, finding: T, limit: usize) {
        self.count += 1;
        if self.examples.len() < limit {
            self.examples.push(finding);
        }
    }
}

/// Overlapping critical sections of different clients.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoubleHolders {
    /// Pairs of critical sections of different clients, of one lock, that overlap for a
    /// positive time.
    pub pairs: u64,
    /// Total true time with two or more critical sections of one lock open, in nanoseconds,
    /// summed over the locks.
    pub overlap_ns: u64,
    /// The most critical sections of one lock open at one instant: 0 without grants, 1 when
    /// there were grants and no overlap.
    pub max_concurrent: u32,
    /// The first overlapping pairs, ordered by the later grant, then the earlier one.
    pub examples: Vec<Overlap>,
}

/// Two critical sections that overlapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overlap {
    /// The grant that came first.
    pub first: GrantId,
    /// The grant that came second, while `first` was still open.
    pub second: GrantId,
    /// True time at which the overlap began (the second grant).
    pub from_ns: u64,
    /// True time at which the overlap ended (the first of the two ends).
    pub to_ns: u64,
}

/// An op storage accepted from a grant after it had accepted an op from a later grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleOp {
    /// Index in `history.entries` of the accepted stale op.
    pub entry: usize,
    /// The stale op.
    pub op: OpId,
    /// The grant it was sent under.
    pub grant: GrantId,
    /// Index in `history.entries` of the accepted op that made this one stale: the first
    /// accepted op of the latest grant storage had seen.
    pub newer_entry: usize,
    /// That op.
    pub newer_op: OpId,
    /// Its grant, later in grant order than `grant`.
    pub newer_grant: GrantId,
    /// True time at which storage accepted the stale op.
    pub time_ns: u64,
}

/// An accepted write computed from a value that storage no longer held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostUpdate {
    /// Index in `history.entries` of the write.
    pub entry: usize,
    /// The write.
    pub op: OpId,
    /// The grant it was sent under.
    pub grant: GrantId,
    /// The value the write was computed from.
    pub base: u64,
    /// The value storage held when it accepted the write.
    pub current: u64,
    /// True time at which storage accepted the write.
    pub time_ns: u64,
}

/// A grant whose fencing token was not above the highest token of the grants before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInversion {
    /// The earlier grant that holds the highest token so far (the first with it).
    pub earlier: GrantId,
    /// Its token.
    pub earlier_token: u64,
    /// The later grant.
    pub later: GrantId,
    /// Its token, at most `earlier_token`.
    pub later_token: u64,
    /// True time of the later grant.
    pub time_ns: u64,
}

/// Liveness metrics. They never change a verdict; scenarios may set bounds on them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Liveness {
    /// The history's end (true time, ns): the length of the run the figures cover.
    #[serde(default)]
    pub end_ns: u64,
    /// Number of grants.
    pub grants: u64,
    /// Grants with at least one accepted write whose critical section ended with
    /// `Exit { Released }`.
    pub cs_completed: u64,
    /// Writes storage accepted.
    pub accepted_writes: u64,
    /// The storage value after replaying the accepted writes from the initial value.
    pub final_value: u64,
    /// Each wait for the lock: from the `Request` that began it (a client's first since its
    /// last grant, its start or its crash) to its `Grant`, across every failed try and
    /// re-request in between, whatever the client's give-up policy; a wait for a scheduled
    /// tick ends when its try fails. A wait still open at its client's crash or at the run's
    /// end is counted at its length so far ([`Liveness::acquire_censored`]). `None` without
    /// any wait.
    pub acquire_latency: Option<Percentiles>,
    /// The waits of `acquire_latency` still open at their client's crash or the run's end:
    /// lower bounds, so a figure at or above the shortest of them is "at least".
    #[serde(default)]
    pub acquire_censored: Censored,
    /// Tries given up (`AcquireFailed` events): a client's give-up policy at work.
    pub acquire_failures: u64,
    /// Total true time with no critical section open while a client was waiting, in
    /// nanoseconds.
    pub unavailable_ns: u64,
    /// How the lock recovered from faults that took away a holder.
    pub failover: Failover,
    /// Share of grants given in request order, in parts per million; `None` without grants.
    pub fairness_ppm: Option<u32>,
    /// The figures of the fault window, from [`Options::fault_from_ns`](crate::Options) to
    /// the quiet tail; `None` without both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_window: Option<FaultWindow>,
    /// How soon the lock was granted once the faults stopped; `None` when the run has no
    /// quiet tail ([`Options::quiet_from_ns`](crate::Options)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
}

/// The quiet tail of a chaos run: from `quiet_from_ns` no fault is in force, and a live lock
/// is granted again soon.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// When the faults stopped (true time, ns).
    pub quiet_from_ns: u64,
    /// The first grant at or after it, if any.
    pub first_grant_ns: Option<u64>,
}

impl Recovery {
    /// From the faults stopping to the first grant; `None` when no grant came.
    pub fn after_ns(&self) -> Option<u64> {
        self.first_grant_ns.map(|g| g - self.quiet_from_ns)
    }
}

/// A run's figures over its fault window (docs/checker.md, fault window): the waits that began
/// in it, the time in it with no holder while a client waited, and the critical sections
/// granted in it that completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultWindow {
    /// Its start (true time, ns): the first instant a fault may come.
    pub from_ns: u64,
    /// Its end: the quiet tail's start.
    pub to_ns: u64,
    /// The waits (as [`Liveness::acquire_latency`]) that began in the window, at their whole
    /// length even past its end; `None` without one.
    pub acquire_latency: Option<Percentiles>,
    /// The censored waits among them.
    pub acquire_censored: Censored,
    /// True time in the window with no critical section open while a client waited.
    pub unavailable_ns: u64,
    /// Grants in the window whose critical sections completed (as
    /// [`Liveness::cs_completed`]).
    pub cs_completed: u64,
}

impl FaultWindow {
    /// The share of the window with no holder while some client waited, from 0 to 1.
    pub fn unavailable_share(&self) -> f64 {
        let len = self.to_ns.saturating_sub(self.from_ns);
        if len == 0 {
            0.0
        } else {
            self.unavailable_ns.min(len) as f64 / len as f64
        }
    }
}

/// The censored samples of a set of durations: each a lower bound (a wait still open when
/// its client crashed or the run ended).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Censored {
    /// How many.
    pub count: u64,
    /// The shortest, in nanoseconds; `None` when there are none.
    pub shortest_ns: Option<u64>,
}

impl Censored {
    /// Counts a censored sample of `ns`.
    pub fn add(&mut self, ns: u64) {
        self.count += 1;
        self.shortest_ns = Some(self.shortest_ns.map_or(ns, |s| s.min(ns)));
    }

    /// Whether a figure of `ns` taken from the samples (a percentile, the maximum) is only a
    /// lower bound: some censored sample is at or below it, and its true length may put the
    /// figure higher.
    pub fn at_least(&self, ns: u64) -> bool {
        self.shortest_ns.is_some_and(|s| s <= ns)
    }
}

/// Nearest-rank percentiles of a set of durations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median, in nanoseconds.
    pub p50_ns: u64,
    /// 99th percentile, in nanoseconds.
    pub p99_ns: u64,
    /// Maximum, in nanoseconds.
    pub max_ns: u64,
    /// Number of samples.
    pub count: u64,
}

/// Faults that took away a holder, and how long the lock took to go to someone else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failover {
    /// Crash, terminate, pause and partition faults whose nodes included a client inside its
    /// critical section.
    pub count: u64,
    /// Of those, the ones followed by a grant to a client outside the fault's nodes.
    pub recovered: u64,
    /// Longest time from such a fault to that grant, in nanoseconds; `None` if none recovered.
    pub max_ns: Option<u64>,
    /// Mean of those times, rounded down, in nanoseconds; `None` if none recovered.
    pub mean_ns: Option<u64>,
}

/// The history read as leader election: each grant with an accepted write is a leadership
/// term, each accepted write's value a work item. Never part of the two verdicts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leadership {
    /// Grants with at least one accepted write.
    pub terms: u64,
    /// Total true time with the work spans (first to last accepted write) of terms of two or
    /// more clients open together, in nanoseconds.
    pub two_leaders_ns: u64,
    /// Pairs of terms of different clients whose work spans overlap for a positive time; each
    /// example's `from_ns`/`to_ns` is the overlap of the two spans.
    pub two_leaders: Found<Overlap>,
    /// Over leadership changes: the gap from the latest last accepted write of all earlier
    /// terms to each later term's first accepted write (0 when they overlap); `None` with
    /// fewer than two terms.
    pub failover: Option<Percentiles>,
    /// Accepted writes of a value already accepted: an item done twice.
    pub duplicate_items: Found<DuplicateItem>,
    /// Values between the initial value (excluded) and the highest accepted value that no
    /// accepted write wrote: items never done. Examples are the smallest such values.
    pub skipped_items: Found<u64>,
}

/// An accepted write of a value an earlier accepted write already wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DuplicateItem {
    /// The value written twice.
    pub value: u64,
    /// Index in `history.entries` of the first accepted write of `value`.
    pub first_entry: usize,
    /// That write.
    pub first_op: OpId,
    /// Index in `history.entries` of this write.
    pub entry: usize,
    /// This write.
    pub op: OpId,
    /// True time at which storage accepted this write.
    pub time_ns: u64,
}

/// A job queue read from the history's `Enqueued`, `Dequeued` and `Done` events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queue {
    /// Jobs enqueued.
    pub enqueued: u64,
    /// Jobs whose work finished at least once.
    pub done: u64,
    /// Each `Done` of a job already done: its work happened twice.
    pub done_twice: Found<DoneTwice>,
    /// Jobs never done although a job enqueued after them was: left behind. Examples are the
    /// smallest job numbers.
    pub lost: Found<u64>,
    /// Jobs never done, enqueued after the last job that was: the backlog at the end.
    pub left: u64,
    /// Queue lag: from each job's enqueue to its first dequeue; `None` when none was dequeued.
    pub lag: Option<Percentiles>,
}

/// A job whose work finished a second time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneTwice {
    /// The job.
    pub job: u64,
    /// The worker that finished it first.
    pub first_client: NodeId,
    /// When it did (true time, ns).
    pub first_ns: u64,
    /// The worker that finished it again.
    pub client: NodeId,
    /// When it did.
    pub time_ns: u64,
    /// Index in `history.entries` of this `Done`.
    pub entry: usize,
}

/// A scheduled job read from the history's `Due` events and the grants that answer them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cron {
    /// Ticks judged: from the first tick due to the last, on any client.
    pub ticks: u64,
    /// Ticks whose job ran (a grant for the tick had a write accepted).
    pub run: u64,
    /// Each further grant that ran a tick already run.
    pub run_twice: Found<RunTwice>,
    /// Ticks no grant ran although a later tick came due. Examples are the smallest ticks.
    pub missed: Found<u64>,
    /// Lateness: from the `Due` a tick's first run answered (on its runner's own schedule) to
    /// that run's grant.
    pub lateness: Option<Percentiles>,
}

/// What a read-write lock cost its readers and its writers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadWrite {
    /// Readers' grants (shared).
    pub readers: u64,
    /// Writers' grants (exclusive).
    pub writers: u64,
    /// Readers' waits from request to grant; `None` without one.
    pub reader_wait: Option<Percentiles>,
    /// Writers' waits from request to grant; `None` without one.
    pub writer_wait: Option<Percentiles>,
    /// The longest wait of a reader, counting waits that ended without a grant (a give-up, a
    /// crash, the run's end).
    pub longest_reader_wait_ns: u64,
    /// The longest wait of a writer, counted likewise: a writer starved by readers shows here.
    pub longest_writer_wait_ns: u64,
}

/// What taking a held lock again cost: a re-entrant lock grants it at once, a lock that is not
/// waits for itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reentry {
    /// Nested acquisitions begun (`Nest`).
    pub nested: u64,
    /// Of those, the ones that held the lock again (`Nested`).
    pub granted: u64,
    /// Their waits from `Nest` to `Nested`; `None` without one.
    pub wait: Option<Percentiles>,
    /// The longest nested wait, counting those that ended unanswered (the critical section
    /// gave up, the client crashed, the run ended): a lock waiting for itself shows here.
    pub longest_wait_ns: u64,
}

/// A tick whose job ran again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTwice {
    /// The tick.
    pub tick: u64,
    /// The grant that ran it first.
    pub first: GrantId,
    /// When that grant was granted (true time, ns).
    pub first_ns: u64,
    /// The grant that ran it again.
    pub second: GrantId,
    /// When that grant was granted.
    pub second_ns: u64,
    /// Index in `history.entries` of the second run's first accepted write.
    pub entry: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_puts_a_violation_above_an_incomplete_history() {
        assert_eq!(Validity::judge(true, false), Validity::Invalid);
        assert_eq!(Validity::judge(true, true), Validity::Invalid);
        assert_eq!(Validity::judge(false, false), Validity::Unknown);
        assert_eq!(Validity::judge(false, true), Validity::Valid);
    }

    #[test]
    fn found_counts_everything_but_keeps_only_limit_examples() {
        let mut found = Found::default();
        for finding in 0..5 {
            found.record(finding, 2);
        }
        assert_eq!(
            found,
            Found {
                count: 5,
                examples: vec![0, 1]
            }
        );
    }

    #[test]
    fn property_names_round_trip() {
        for property in [Property::Resource, Property::MutualExclusion] {
            assert_eq!(property.to_string().parse::<Property>(), Ok(property));
        }
        let error = "exclusion".parse::<Property>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown property `exclusion`: expected resource or mutual-exclusion"
        );
    }
}
