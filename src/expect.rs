//! What a scenario expects of its runs, and whether a verdict meets it.

use std::fmt;

use lockstep_check::{Property, Validity, Verdict};
pub use lockstep_reports::suite::Miss;
use lockstep_sim::Dur;

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
        }
    }
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
    /// Bounds `min..=max` on counts.
    pub bounds: Vec<(Count, u64, Option<u64>)>,
    /// With a chaos profile: the lock is granted again within this long of the faults
    /// stopping (the start of the quiet tail).
    pub recovery: Option<Dur>,
}

impl Count {
    /// True for the counts of safety (all but grants).
    fn is_safety(self) -> bool {
        self != Count::Grants
    }
}

impl Expect {
    /// What kind of miss a run with `verdict` is (`exhausted` when it ran out of events or
    /// budget); `None` when it meets the expectation. A run cut short whose verdict is not the
    /// one expected is `unknown`; then any safety expectation missed is `safety`; the rest
    /// (grants, recovery) is `liveness`.
    pub fn miss(&self, verdict: &Verdict, exhausted: bool) -> Option<Miss> {
        if self.unmet(verdict).is_empty() {
            return None;
        }
        let got = verdict.get(self.property);
        let verdict_missed = self.verdict.is_some_and(|want| want != got);
        if exhausted || (verdict_missed && got == Validity::Unknown) {
            return Some(Miss::Unknown);
        }
        let bound_missed = self.bounds.iter().any(|&(count, min, max)| {
            let n = count.of(verdict);
            count.is_safety() && (n < min || max.is_some_and(|m| n > m))
        });
        Some(if verdict_missed || bound_missed {
            Miss::Safety
        } else {
            Miss::Liveness
        })
    }

    /// Every way `verdict` falls short of the expectation, as sentences; empty when it meets it.
    pub fn unmet(&self, verdict: &Verdict) -> Vec<String> {
        let mut unmet = Vec::new();
        let got = verdict.get(self.property);
        if let Some(want) = self.verdict.filter(|&want| want != got) {
            unmet.push(format!(
                "expected {} to be {want}, got {got}",
                self.property
            ));
        }
        for &(count, min, max) in &self.bounds {
            let n = count.of(verdict);
            match max {
                Some(max) if min == max && n != min => {
                    unmet.push(format!("expected {count} = {min}, got {n}"))
                }
                Some(max) if n > max => unmet.push(format!("expected {count} <= {max}, got {n}")),
                _ if n < min => unmet.push(format!("expected {count} >= {min}, got {n}")),
                _ => {}
            }
        }
        if let Some(bound) = self.recovery {
            match verdict.liveness.recovery.map(|r| r.after_ns()) {
                Some(Some(ns)) if ns <= bound.as_nanos() => {}
                Some(Some(ns)) => unmet.push(format!(
                    "expected a grant within {bound} of the faults stopping, got one after {}",
                    Dur::from_nanos(ns)
                )),
                _ => unmet.push(format!(
                    "expected a grant within {bound} of the faults stopping, got none"
                )),
            }
        }
        unmet
    }
}
