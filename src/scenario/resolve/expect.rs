//! `[expect]`: what a run is expected to show, and what the checker must measure for it.

use lockstep_check::metrics::{Metric, Unit};
use lockstep_check::{Options, Property, Validity};
use lockstep_models::family::Tokens;
use lockstep_models::keys::{MAX_MS, out_of_range};
use lockstep_models::system::System;

use super::Resolver;
use crate::expect::{Expect, RateBound};
use crate::scenario::schema::{Bound, ExpectSection, PropertyName, RateSection, VerdictName};

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
    let invalid_rate = e
        .invalid_rate
        .and_then(|rate| invalid_rate(r, rate, e.verdict));
    Expect {
        property,
        // A rate of invalid seeds asks no verdict of one run.
        verdict: verdict.filter(|_| invalid_rate.is_none()),
        bounds,
        recovery: None,
        invalid_rate,
    }
}

/// `invalid_rate`: shares from 0 to 1, `at_least` at most `at_most`, at least one given, and
/// no per-run verdict but `any` beside it (one would hold every seed to it, which a rate
/// contradicts).
fn invalid_rate(
    r: &mut Resolver,
    rate: RateSection,
    verdict: Option<VerdictName>,
) -> Option<RateBound> {
    const PATH: &str = "expect.invalid_rate";
    let mut ok = true;
    if let Some(v) = verdict.filter(|&v| v != VerdictName::Any) {
        let v = match v {
            VerdictName::Valid => "valid",
            VerdictName::Invalid => "invalid",
            _ => "unknown",
        };
        r.problems.push(
            PATH,
            format!(
                "a rate of invalid seeds cannot go with verdict = \"{v}\", which every seed must \
                 meet; leave the verdict out or set it to \"any\""
            ),
        );
        ok = false;
    }
    for (key, share) in [("at_least", rate.at_least), ("at_most", rate.at_most)] {
        if let Some(share) = share.filter(|s| !(0.0..=1.0).contains(s)) {
            r.problems
                .push(format!("{PATH}.{key}"), out_of_range(share, 0, 1));
            ok = false;
        }
    }
    match (rate.at_least, rate.at_most) {
        (None, None) => {
            r.problems.push(PATH, "give at_least, at_most or both");
            ok = false;
        }
        (Some(l), Some(m)) if l > m => {
            let message = format!("at_least {l} is above at_most {m}: no rate can meet it");
            r.problems.push(PATH, message);
            ok = false;
        }
        _ => {}
    }
    ok.then_some(RateBound {
        at_least: rate.at_least.map(nine_places),
        at_most: rate.at_most.map(nine_places),
    })
}

/// A share rounded to 9 decimal places, far finer than any count of seeds resolves: so short
/// a number reads back from a sweep summary's JSON as the same `f64`, and a merge of shards
/// judges by the bound the whole sweep did.
fn nine_places(share: f64) -> f64 {
    (share * 1e9).round() / 1e9
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
