//! `[expect] invalid_rate`: a bound on the share of a scenario's seeds whose property is
//! judged invalid, missed only when the rate's 95% Wilson interval lies wholly outside it. A
//! bound no rate can meet, or a per-run verdict beside it, is refused naming its key.

use std::path::Path;

use lockstep::expect::{RateBound, rate_unmet};
use lockstep::parse;

use crate::support::{CLEAN, errors_of};

/// CLEAN, valid on every seed, with `[expect]` lines.
fn with_expect(lines: &str) -> String {
    format!("{CLEAN}\n[expect]\n{lines}\n")
}

fn at_least(share: f64) -> RateBound {
    RateBound {
        at_least: Some(share),
        at_most: None,
    }
}

fn at_most(share: f64) -> RateBound {
    RateBound {
        at_least: None,
        at_most: Some(share),
    }
}

#[test]
fn a_rate_is_missed_only_when_its_95_percent_interval_lies_outside_the_bound() {
    // 0 of 1000 seeds: the interval is 0%-0.383%, which contradicts 1% and not 0.3%.
    assert_eq!(
        rate_unmet(&at_least(0.01), 0, 1000).as_deref(),
        Some("expected invalid_rate >= 1.0%, got 0 of 1000 seeds (0.0%, 95% interval 0.0%–0.383%)")
    );
    assert_eq!(rate_unmet(&at_least(0.003), 0, 1000), None);
    // 0 of 20 (0%-16.1%) does not contradict 10%, but does 20%.
    assert_eq!(rate_unmet(&at_least(0.1), 0, 20), None);
    assert!(rate_unmet(&at_least(0.2), 0, 20).is_some());
    // 20 of 20 (83.9%-100%) contradicts at most 50%, not at most 90%.
    assert_eq!(
        rate_unmet(&at_most(0.5), 20, 20).as_deref(),
        Some(
            "expected invalid_rate <= 50.0%, got 20 of 20 seeds (100.0%, 95% interval 83.9%–100.0%)"
        )
    );
    assert_eq!(rate_unmet(&at_most(0.9), 20, 20), None);
    // A range is missed on the side the interval leaves it by.
    let range = RateBound {
        at_least: Some(0.2),
        at_most: Some(0.3),
    };
    assert_eq!(rate_unmet(&range, 25, 100), None);
    let below = rate_unmet(&range, 5, 100).expect("5 of 100 is below 20%");
    assert!(
        below.starts_with("expected invalid_rate >= 20.0%, got 5 of 100 seeds"),
        "{below}"
    );
    let above = rate_unmet(&range, 60, 100).expect("60 of 100 is above 30%");
    assert!(
        above.starts_with("expected invalid_rate <= 30.0%, got 60 of 100 seeds"),
        "{above}"
    );
    // One seed proves little, and no seed nothing.
    assert_eq!(
        rate_unmet(&at_least(0.9), 0, 1).as_deref(),
        Some("expected invalid_rate >= 90.0%, got 0 of 1 seed (0.0%, 95% interval 0.0%–79.3%)")
    );
    assert_eq!(rate_unmet(&at_least(1.0), 0, 0), None);
}

#[test]
fn a_rate_asks_no_verdict_of_a_run() {
    let path = Path::new("rate.toml");
    for lines in [
        "invalid_rate = { at_most = 1 }",
        "verdict = \"any\"\ninvalid_rate = { at_most = 1 }",
    ] {
        let s = parse(&with_expect(lines), path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.expect.verdict, None, "{lines}");
        assert_eq!(s.expect.invalid_rate, Some(at_most(1.0)), "{lines}");
    }
    let s = parse(
        &with_expect("invalid_rate = { at_least = 0.0123456789012 }"),
        path,
    )
    .expect("loads");
    let rounded = at_least(0.012_345_679);
    assert_eq!(s.expect.invalid_rate, Some(rounded), "9 decimal places");
    let s = parse(&with_expect(""), path).expect("loads");
    assert_eq!(s.expect.invalid_rate, None);
    assert_eq!(s.expect.verdict, Some(lockstep_check::Validity::Valid));
}

#[test]
fn invalid_rates_no_rate_can_meet_are_errors_naming_the_key() {
    let cases = [
        (
            "invalid_rate = { at_least = -0.1 }",
            "expect.invalid_rate.at_least: -0.1 is out of range: expected 0 to 1",
        ),
        (
            "invalid_rate = { at_most = 1.5 }",
            "expect.invalid_rate.at_most: 1.5 is out of range: expected 0 to 1",
        ),
        (
            "invalid_rate = { at_least = nan }",
            "expect.invalid_rate.at_least: NaN is out of range: expected 0 to 1",
        ),
        (
            "invalid_rate = { at_least = 0.5, at_most = 0.1 }",
            "expect.invalid_rate: at_least 0.5 is above at_most 0.1: no rate can meet it",
        ),
        (
            "invalid_rate = {}",
            "expect.invalid_rate: give at_least, at_most or both",
        ),
        (
            "verdict = \"valid\"\ninvalid_rate = { at_least = 0.1 }",
            "expect.invalid_rate: a rate of invalid seeds cannot go with verdict = \"valid\"",
        ),
        (
            "verdict = \"invalid\"\ninvalid_rate = { at_least = 0.1 }",
            "expect.invalid_rate: a rate of invalid seeds cannot go with verdict = \"invalid\"",
        ),
        (
            "invalid_rate = { at_least = \"often\" }",
            "expect.invalid_rate.at_least",
        ),
        ("invalid_rate = { least = 0.1 }", "expect.invalid_rate"),
        ("invalid_rate = 0.1", "expect.invalid_rate"),
    ];
    for (i, (lines, expected)) in cases.iter().enumerate() {
        let lines_of = errors_of(&format!("rate-err-{i}"), &with_expect(lines));
        assert!(
            lines_of.iter().any(|l| l.contains(expected)),
            "`{lines}`: no `{expected}` in {lines_of:#?}"
        );
    }
}
