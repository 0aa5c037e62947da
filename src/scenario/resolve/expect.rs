//! `[expect]`: what a run is expected to show, and what the checker must measure for it.

use lockstep_check::metrics::{Metric, Unit};
use lockstep_check::{Options, Property, Validity};
use lockstep_models::family::Tokens;
use lockstep_models::keys::{MAX_MS, out_of_range};
use lockstep_models::system::System;

use super::Resolver;
use crate::expect::Expect;
use crate::scenario::schema::{Bound, ExpectSection, PropertyName, VerdictName};

pub(super) fn expect(r: &mut Resolver, e: &ExpectSection) -> Expect {
    let property = match e.property {
        PropertyName::Resource => Property::Resource,
        PropertyName::MutualExclusion => Property::MutualExclusion,
    };
    let verdict = match e.verdict {
        None | Some(VerdictName::Valid) => Some(Validity::Valid),
        Some(VerdictName::Invalid) => Some(Validity::Invalid),
        Some(VerdictName::Unknown) => Some(Validity::Unknown),
        Some(VerdictName::Any) => None,
    };
    let bounds = e
        .bounds
        .iter()
        .filter_map(|&(m, b)| bound(r, m, b).map(|b| (m, b.min, b.max)))
        .collect();
    Expect {
        property,
        verdict,
        bounds,
        recovery: None,
    }
}

/// A bound that some value can meet: `min` at most `max`, and a time within the run's range.
fn bound(r: &mut Resolver, metric: &Metric, b: Bound) -> Option<Bound> {
    let path = format!("expect.{}", metric.bound_key());
    if let Some(max) = b.max.filter(|&max| max < b.min) {
        r.problems.push(
            path,
            format!("min {} is above max {max}: no run can meet it", b.min),
        );
        return None;
    }
    let is_ms = metric.unit == Unit::Ns;
    let largest = b.max.unwrap_or(b.min);
    if is_ms && largest as f64 > MAX_MS {
        let message = format!("{} ms", out_of_range(largest, 0, MAX_MS));
        r.problems.push(path, message);
        return None;
    }
    Some(b)
}

/// What the checker must know and measure for runs of a scenario: the one place that decides
/// the [`Options`] of its checks. Leadership metrics are on when the workload's kind says it
/// is measured by them (the leader loop), or when `[expect]` bounds one of them; the other
/// kinds' measures (`queue`, `cron`, `read_write`) follow from the events their clients
/// record.
pub(super) fn check_options(
    system: &dyn System,
    quiet_from_ns: Option<u64>,
    fault_from_ns: Option<u64>,
    expect: &Expect,
) -> Options {
    Options {
        tokens_monotonic: system.tokens() == Tokens::Ordered { monotonic: true },
        quiet_from_ns,
        fault_from_ns,
        leadership: system.workload().kind.measures().contains(&"leadership")
            || expect.bounds_leadership(),
        ..Options::default()
    }
}
