//! What a scenario expects of its runs, and whether a verdict meets it.

use lockstep_check::metrics::{Matter, Metric, NEVER, Unit};
use lockstep_check::{Property, Validity, Verdict};
use lockstep_reports::format::{interval, percent, plural};
pub use lockstep_reports::suite::{Miss, RateBound};
use lockstep_sim::{AppliedFault, Clocks, Dur, Fault, PartitionMode, TcpConfig, Time};

use crate::scenario::Scenario;
use crate::timeline::wall_fall;

/// A bound of `[expect]` on a metric: the metric, and `min..=max` in its bound's unit (ms for
/// a time).
pub type MetricBound = (&'static Metric, u64, Option<u64>);

/// The value of `metric` in `verdict` as a bound reads it: 0 when the run did not measure it
/// (no job queue, no wait).
fn value(metric: &Metric, verdict: &Verdict) -> u64 {
    metric.of(verdict).unwrap_or(0)
}

/// The measured value as the expectation states it: a time for a time's bound, `never` for a
/// time that never came.
fn shown(metric: &Metric, n: u64) -> String {
    match metric.unit {
        Unit::Ns if n == NEVER => "never".into(),
        Unit::Ns => Dur::from_nanos(n).to_string(),
        _ => n.to_string(),
    }
}

/// Whether the value of `metric` in `verdict` lies outside `min..=max` (in the bound's unit).
fn outside(metric: &Metric, verdict: &Verdict, min: u64, max: Option<u64>) -> bool {
    let (n, unit) = (value(metric, verdict), metric.bound_scale());
    n < min.saturating_mul(unit) || max.is_some_and(|m| n > m.saturating_mul(unit))
}

/// A scenario's `[expect]`: the property judged, its expected verdict, and bounds on counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    /// The property the run's verdict is taken from.
    pub property: Property,
    /// The verdict the scenario expects (`valid` when the file does not say; `None` for
    /// `verdict = "any"`, when only the bounds matter).
    pub verdict: Option<Validity>,
    /// Bounds `min..=max` on metrics, in the bound key's unit (ms for a time).
    pub bounds: Vec<MetricBound>,
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
    /// backward ones; a strobe over by then counts nothing). And TCP is slow to come back: a
    /// connection stalled by a cut, a frozen host or a lossy link gets through only at its
    /// sender's first retransmission after the fault ends ([`tcp_catch_up`]), so the bound
    /// also allows the longest such wait past the faults' stop.
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
        let catch_up = Dur::from_nanos(tcp_catch_up(log, quiet_ns));
        let mut bound = liveness;
        let mut why = Vec::new();
        if let Some((fall, node)) = fallen.filter(|&(fall, _)| fall > 0) {
            let fall = Dur::from_nanos(fall);
            let name = scenario
                .clocks
                .get(node.index())
                .map_or("?", |c| c.name.as_str());
            bound = bound.saturating_add(fall);
            why.push(format!(
                "{fall}: the wall clock of {name}, on which {} times grants out, fell that far \
                 from its highest reading before the faults stopped",
                scenario.system.family_name()
            ));
        }
        if catch_up > Dur::ZERO {
            bound = bound.saturating_add(catch_up);
            why.push(format!(
                "{catch_up}: a connection stalled by the last cut, freeze or lossy link gets \
                 through only at its sender's next retransmission"
            ));
        }
        if why.is_empty() {
            return plain;
        }
        RecoveryBound {
            bound,
            past_end: past_end(bound),
            why: Some(format!("liveness {liveness} + {}", why.join(" + "))),
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

/// How long past the faults' stop (`quiet_ns`) a TCP connection stalled by one of the faults
/// in `log` may still wait for its sender's retransmission. A segment stalled from `s` within
/// a drop-mode cut, a freeze or a degrade lasting from `p` to `h` is retransmitted at RTO
/// multiples doubling from its send, so the first retransmission at or after `h` comes at most
/// `h - s` (at most `TCP_RTO_MAX`) plus an RTO after `h`, late by the kernel's timer wheel:
/// at most `min(h - p, RTO_MAX) + RTO_MIN` and a wheel granule, past `h` (RTTs are small
/// beside that; a link slower than a fraction of a second would add its own).
pub fn tcp_catch_up(log: &[AppliedFault], quiet_ns: u64) -> u64 {
    let mut worst = 0u64;
    for (i, f) in log.iter().enumerate() {
        let length = match &f.fault {
            Fault::Partition {
                mode: PartitionMode::Drop,
                duration,
                ..
            }
            | Fault::Freeze { duration, .. }
            | Fault::Degrade { duration, .. } => *duration,
            _ => continue,
        };
        if f.ended {
            continue;
        }
        let start = f.time.as_nanos();
        // An open fault ends at the next heal-all or resume, or never.
        let end = match length {
            Some(d) => start.saturating_add(d.as_nanos()),
            None => match log[i + 1..].iter().find(|g| {
                matches!(g.fault, Fault::Heal | Fault::Resume { .. })
                    && g.nodes.iter().any(|n| f.nodes.contains(n))
            }) {
                Some(g) => g.time.as_nanos(),
                None => continue,
            },
        };
        let wait = Dur::from_nanos(end.saturating_sub(start))
            .min(TcpConfig::RTO_MAX)
            .saturating_add(TcpConfig::RTO_MIN);
        let at = TcpConfig::timer_wheel(Time::from_nanos(end), wait).as_nanos();
        worst = worst.max(at.saturating_sub(quiet_ns));
    }
    worst
}

impl Expect {
    /// Whether a bound asks for leadership metrics.
    pub fn bounds_leadership(&self) -> bool {
        self.bounds.iter().any(|(m, ..)| m.section == "leadership")
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
            .any(|&(m, min, max)| m.matter == Matter::Safety && outside(m, verdict, min, max));
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
        for &(m, min, max) in &self.bounds {
            if !outside(m, verdict, min, max) {
                continue;
            }
            let n = shown(m, value(m, verdict));
            let count = m.bound_key();
            match max {
                Some(max) if min == max => unmet.push(format!("expected {count} = {min}, got {n}")),
                Some(max) if !outside(m, verdict, 0, Some(max)) => {
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
