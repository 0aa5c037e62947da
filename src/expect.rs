//! What a scenario expects of its runs, and whether a verdict meets it.

use std::fmt;

use lockstep_check::{Cron, Leadership, Property, Queue, Validity, Verdict};
use lockstep_reports::format::{interval, percent, plural};
pub use lockstep_reports::suite::{Miss, RateBound};
use lockstep_sim::{AppliedFault, Clocks, Dur};

use crate::scenario::Scenario;
use crate::timeline::wall_fall;

/// A count of the verdict a scenario can bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Overlapping pairs of critical sections.
    DoubleHolders,
    /// Stale operations storage accepted.
    StaleAccepted,
    /// Stale operations fencing rejected.
    StaleRejected,
    /// Lost updates.
    LostUpdates,
    /// Token-order inversions.
    TokenOrder,
    /// Grants.
    Grants,
    /// Leadership terms (grants with an accepted write).
    Terms,
    /// Time with two leaders' work accepted together; bounded in ms, measured in ns.
    TwoLeadersMs,
    /// The longest leadership change (0 with fewer than two terms); bounded in ms.
    FailoverMaxMs,
    /// The longest time from a fault that took a holder away to the next grant to a client
    /// it did not touch (the liveness failover; 0 when no fault took a holder, unbounded when
    /// one was never followed by such a grant); bounded in ms.
    HolderFailoverMaxMs,
    /// Work items done twice.
    DuplicateItems,
    /// Work items skipped.
    SkippedItems,
    /// Jobs done at least once (a job queue).
    JobsDone,
    /// Jobs done twice.
    JobsDoneTwice,
    /// Jobs lost: never done while a later job was.
    JobsLost,
    /// Jobs left in the queue at the end.
    JobsLeft,
    /// The queue lag's 99th percentile; bounded in ms, measured in ns.
    QueueLagP99Ms,
    /// Ticks whose job ran (a scheduled job).
    TicksRun,
    /// Further runs of a tick already run.
    TicksRunTwice,
    /// Ticks never run while a later one came due.
    TicksMissed,
    /// The 99th percentile of the ticks' lateness; bounded in ms, measured in ns.
    TickLatenessP99Ms,
    /// The most critical sections of one lock open at once (readers share).
    MaxConcurrent,
    /// The longest writer wait of a read-write lock, counting waits never granted; bounded in
    /// ms, measured in ns.
    LongestWriterWaitMs,
}

impl Count {
    /// The count in `verdict`.
    pub fn of(self, verdict: &Verdict) -> u64 {
        match self {
            Count::DoubleHolders => verdict.double_holders.pairs,
            Count::StaleAccepted => verdict.stale_accepted.count,
            Count::StaleRejected => verdict.stale_rejected,
            Count::LostUpdates => verdict.lost_updates.count,
            Count::TokenOrder => verdict.token_order.count,
            Count::Grants => verdict.liveness.grants,
            Count::Terms => leadership(verdict, |l| l.terms),
            Count::TwoLeadersMs => leadership(verdict, |l| l.two_leaders_ns),
            Count::FailoverMaxMs => leadership(verdict, |l| l.failover.map_or(0, |f| f.max_ns)),
            Count::HolderFailoverMaxMs => {
                let f = verdict.liveness.failover;
                if f.recovered < f.count {
                    NEVER
                } else {
                    f.max_ns.unwrap_or(0)
                }
            }
            Count::DuplicateItems => leadership(verdict, |l| l.duplicate_items.count),
            Count::SkippedItems => leadership(verdict, |l| l.skipped_items.count),
            Count::JobsDone => queue(verdict, |q| q.done),
            Count::JobsDoneTwice => queue(verdict, |q| q.done_twice.count),
            Count::JobsLost => queue(verdict, |q| q.lost.count),
            Count::JobsLeft => queue(verdict, |q| q.left),
            Count::QueueLagP99Ms => queue(verdict, |q| q.lag.map_or(0, |l| l.p99_ns)),
            Count::TicksRun => cron(verdict, |c| c.run),
            Count::TicksRunTwice => cron(verdict, |c| c.run_twice.count),
            Count::TicksMissed => cron(verdict, |c| c.missed.count),
            Count::TickLatenessP99Ms => cron(verdict, |c| c.lateness.map_or(0, |l| l.p99_ns)),
            Count::MaxConcurrent => u64::from(verdict.double_holders.max_concurrent),
            Count::LongestWriterWaitMs => verdict
                .read_write
                .as_ref()
                .map_or(0, |rw| rw.longest_writer_wait_ns),
        }
    }

    /// The leadership counts: a bound on one makes the checker measure leadership.
    pub const LEADERSHIP: [Count; 5] = [
        Count::Terms,
        Count::TwoLeadersMs,
        Count::FailoverMaxMs,
        Count::DuplicateItems,
        Count::SkippedItems,
    ];

    /// Nanoseconds per unit of the bound: the `*_ms` keys bound times measured in ns.
    fn unit_ns(self) -> u64 {
        match self {
            Count::TwoLeadersMs
            | Count::FailoverMaxMs
            | Count::HolderFailoverMaxMs
            | Count::QueueLagP99Ms
            | Count::TickLatenessP99Ms
            | Count::LongestWriterWaitMs => 1_000_000,
            _ => 1,
        }
    }

    /// The measured value as the expectation states it: a time for the `*_ms` keys.
    fn shown(self, n: u64) -> String {
        match self.unit_ns() {
            1 => n.to_string(),
            _ if n == NEVER => "no grant to another client after a fault took a holder".into(),
            _ => Dur::from_nanos(n).to_string(),
        }
    }

    /// Whether the value in `verdict` lies outside `min..=max` (in the key's unit).
    fn outside(self, verdict: &Verdict, min: u64, max: Option<u64>) -> bool {
        let (n, unit) = (self.of(verdict), self.unit_ns());
        n < min.saturating_mul(unit) || max.is_some_and(|m| n > m.saturating_mul(unit))
    }
}

/// The holder failover of a run in which a fault took a holder and no other client was
/// granted after it: above every bound.
const NEVER: u64 = u64::MAX;

/// A job queue value of `verdict`, 0 when the history has no jobs.
fn queue(verdict: &Verdict, value: impl Fn(&Queue) -> u64) -> u64 {
    verdict.queue.as_ref().map_or(0, value)
}

/// A scheduled job's value of `verdict`, 0 when the history has no ticks.
fn cron(verdict: &Verdict, value: impl Fn(&Cron) -> u64) -> u64 {
    verdict.cron.as_ref().map_or(0, value)
}

/// A leadership value of `verdict`, 0 when the checker measured none.
fn leadership(verdict: &Verdict, value: impl Fn(&Leadership) -> u64) -> u64 {
    verdict.leadership.as_ref().map_or(0, value)
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Count::DoubleHolders => "double_holders",
            Count::StaleAccepted => "stale_accepted",
            Count::StaleRejected => "stale_rejected",
            Count::LostUpdates => "lost_updates",
            Count::TokenOrder => "token_order",
            Count::Grants => "grants",
            Count::Terms => "terms",
            Count::TwoLeadersMs => "two_leaders_ms",
            Count::FailoverMaxMs => "failover_max_ms",
            Count::HolderFailoverMaxMs => "holder_failover_max_ms",
            Count::DuplicateItems => "duplicate_items",
            Count::SkippedItems => "skipped_items",
            Count::JobsDone => "jobs_done",
            Count::JobsDoneTwice => "jobs_done_twice",
            Count::JobsLost => "jobs_lost",
            Count::JobsLeft => "jobs_left",
            Count::QueueLagP99Ms => "queue_lag_p99_ms",
            Count::TicksRun => "ticks_run",
            Count::TicksRunTwice => "ticks_run_twice",
            Count::TicksMissed => "ticks_missed",
            Count::TickLatenessP99Ms => "tick_lateness_p99_ms",
            Count::MaxConcurrent => "max_concurrent",
            Count::LongestWriterWaitMs => "longest_writer_wait_ms",
        })
    }
}

/// A scenario's `[expect]`: the property judged, its expected verdict, and bounds on counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    /// The property the run's verdict is taken from.
    pub property: Property,
    /// The verdict the scenario expects (`valid` when the file does not say; `None` for
    /// `verdict = "any"`, when only the bounds matter).
    pub verdict: Option<Validity>,
    /// Bounds `min..=max` on counts, in the key's unit (ms for the `*_ms` keys).
    pub bounds: Vec<(Count, u64, Option<u64>)>,
    /// With a chaos profile: the lock is granted again within this long of the faults
    /// stopping (the start of the quiet tail), the profile's liveness, plus what the faults
    /// of each run add to it ([`RecoveryBound`]).
    pub recovery: Option<Dur>,
    /// Bounds on the share of the seeds whose property is invalid (`invalid_rate`), judged
    /// over the seeds together by `check` and `sweep` ([`rate_unmet`]), never per run.
    pub invalid_rate: Option<RateBound>,
}

/// How `invalid` runs judged invalid of `runs` fall short of `bound`, as a sentence; `None`
/// when they meet it, or when no run is there to judge. The evidence must contradict the bound
/// at 95%: the rate's 95% Wilson score interval ([`crate::stats::wilson`]) lies wholly below
/// `at_least` or wholly above `at_most`. Every check and sweep, and the merge of a sweep's
/// shards, judges its counts with this function.
pub fn rate_unmet(bound: &RateBound, invalid: u64, runs: u64) -> Option<String> {
    let got = crate::stats::rate(invalid, runs)?;
    let (low, high) = got.ci95;
    let (op, share) = match (bound.at_least, bound.at_most) {
        (Some(at_least), _) if high < at_least => (">=", at_least),
        (_, Some(at_most)) if low > at_most => ("<=", at_most),
        _ => return None,
    };
    Some(format!(
        "expected invalid_rate {op} {}, got {invalid} of {runs} seed{} ({}, 95% interval {})",
        percent(share),
        plural(runs),
        percent(got.rate),
        interval(got.ci95)
    ))
}

/// The time one chaos run allows from the faults stopping to the next grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryBound {
    /// The bound.
    pub bound: Dur,
    /// Why it is longer than the profile's liveness, as a phrase; `None` when it is the
    /// liveness.
    pub why: Option<String>,
    /// The bound reaches past the end of the run: a run with no grant in its quiet tail
    /// ended before it could miss it.
    pub past_end: bool,
}

impl RecoveryBound {
    /// The bound of a run of `scenario` whose recovery must come within `liveness`, from the
    /// faults the run applied (`log`), its nodes' clocks at the start, and its end.
    ///
    /// A family whose grants time out on the wall clocks of some of its nodes
    /// (`System::expiry_wall_clocks`: a Redis key's deadline on its server's wall clock) keeps
    /// a grant longer when such a clock falls: a deadline set at the clock's highest reading
    /// before the quiet tail lies that much further away once it has fallen. So the bound is
    /// the liveness plus the largest fall of one of those clocks, from its highest offset
    /// before the tail to its lowest after (forward steps before the tail count against the
    /// backward ones; a strobe over by then counts nothing).
    pub fn of(
        scenario: &Scenario,
        liveness: Dur,
        log: &[AppliedFault],
        initial: &[Clocks],
        end_ns: u64,
    ) -> RecoveryBound {
        let Some(quiet_ns) = scenario.chaos.as_ref().map(|c| c.quiet_from.as_nanos()) else {
            return RecoveryBound {
                bound: liveness,
                why: None,
                past_end: false,
            };
        };
        let past_end = |bound: Dur| quiet_ns.saturating_add(bound.as_nanos()) > end_ns;
        let plain = RecoveryBound {
            bound: liveness,
            why: None,
            past_end: past_end(liveness),
        };
        let fallen = scenario
            .system
            .expiry_wall_clocks()
            .into_iter()
            .filter_map(|n| {
                let clocks = initial.get(n.index())?;
                Some((wall_fall(n, clocks, log, quiet_ns, end_ns), n))
            })
            .max_by_key(|&(fall, n)| (fall, std::cmp::Reverse(n)));
        match fallen {
            Some((fall, node)) if fall > 0 => {
                let fall = Dur::from_nanos(fall);
                let name = scenario
                    .clocks
                    .get(node.index())
                    .map_or("?", |c| c.name.as_str());
                let bound = liveness.saturating_add(fall);
                RecoveryBound {
                    bound,
                    past_end: past_end(bound),
                    why: Some(format!(
                        "liveness {liveness} + {fall}: the wall clock of {name}, on which {} \
                         times grants out, fell that far from its highest reading before the \
                         faults stopped",
                        scenario.system.family_name()
                    )),
                }
            }
            _ => plain,
        }
    }

    /// True when a run whose first grant in the quiet tail came `after_ns` after its start
    /// (`None`: no grant) missed the bound.
    pub fn missed(&self, after_ns: Option<u64>) -> bool {
        match after_ns {
            Some(ns) => ns > self.bound.as_nanos(),
            None => !self.past_end,
        }
    }
}

impl Count {
    /// True for the counts of safety: all but grants, terms and failovers (two leaders' work,
    /// items done twice or skipped harm the work as a lost update does).
    fn is_safety(self) -> bool {
        !matches!(
            self,
            Count::Grants | Count::Terms | Count::FailoverMaxMs | Count::HolderFailoverMaxMs
        )
    }
}

impl Expect {
    /// Whether a bound asks for leadership metrics.
    pub fn bounds_leadership(&self) -> bool {
        self.bounds
            .iter()
            .any(|(count, ..)| Count::LEADERSHIP.contains(count))
    }

    /// What kind of miss a run with `verdict` is (`exhausted` when it ran out of events or
    /// budget); `None` when it meets the expectation. A run cut short whose verdict is not the
    /// one expected is `unknown`; then any safety expectation missed is `safety`; the rest
    /// (grants, recovery) is `liveness`.
    pub fn miss(
        &self,
        verdict: &Verdict,
        recovery: Option<&RecoveryBound>,
        exhausted: bool,
    ) -> Option<Miss> {
        if self.unmet(verdict, recovery).is_empty() {
            return None;
        }
        let got = verdict.get(self.property);
        let verdict_missed = self.verdict.is_some_and(|want| want != got);
        if exhausted || (verdict_missed && got == Validity::Unknown) {
            return Some(Miss::Unknown);
        }
        let bound_missed = self
            .bounds
            .iter()
            .any(|&(count, min, max)| count.is_safety() && count.outside(verdict, min, max));
        Some(if verdict_missed || bound_missed {
            Miss::Safety
        } else {
            Miss::Liveness
        })
    }

    /// Every way `verdict` falls short of the expectation, as sentences; empty when it meets it.
    /// `recovery` is the run's recovery bound, when the scenario expects recovery.
    pub fn unmet(&self, verdict: &Verdict, recovery: Option<&RecoveryBound>) -> Vec<String> {
        let mut unmet = Vec::new();
        let got = verdict.get(self.property);
        if let Some(want) = self.verdict.filter(|&want| want != got) {
            unmet.push(format!(
                "expected {} to be {want}, got {got}",
                self.property
            ));
        }
        for &(count, min, max) in &self.bounds {
            if !count.outside(verdict, min, max) {
                continue;
            }
            let n = count.shown(count.of(verdict));
            match max {
                Some(max) if min == max => unmet.push(format!("expected {count} = {min}, got {n}")),
                Some(max) if !count.outside(verdict, 0, Some(max)) => {
                    unmet.push(format!("expected {count} >= {min}, got {n}"))
                }
                Some(max) => unmet.push(format!("expected {count} <= {max}, got {n}")),
                None => unmet.push(format!("expected {count} >= {min}, got {n}")),
            }
        }
        if let Some(rb @ RecoveryBound { bound, why, .. }) = recovery {
            let why = why.as_ref().map_or(String::new(), |w| format!(" ({w})"));
            let after = verdict.liveness.recovery.and_then(|r| r.after_ns());
            match after {
                _ if !rb.missed(after) => {}
                Some(ns) => unmet.push(format!(
                    "expected a grant within {bound} of the faults stopping{why}, got one after {}",
                    Dur::from_nanos(ns)
                )),
                _ => unmet.push(format!(
                    "expected a grant within {bound} of the faults stopping{why}, got none"
                )),
            }
        }
        unmet
    }
}
