//! The two verdicts, their merge order, names and the effect of an incomplete history.

use lockstep_check::{Property, Validity};

use crate::support::{C1, C2, history, verdict};

#[test]
fn merge_puts_invalid_above_unknown_above_valid() {
    use Validity::{Invalid, Unknown, Valid};
    let table = [
        (Valid, Valid, Valid),
        (Valid, Unknown, Unknown),
        (Valid, Invalid, Invalid),
        (Unknown, Valid, Unknown),
        (Unknown, Unknown, Unknown),
        (Unknown, Invalid, Invalid),
        (Invalid, Valid, Invalid),
        (Invalid, Unknown, Invalid),
        (Invalid, Invalid, Invalid),
    ];
    for (left, right, merged) in table {
        assert_eq!(left.merge(right), merged, "{left} merged with {right}");
    }
}

#[test]
fn validity_names_round_trip_and_others_are_refused() {
    for validity in [Validity::Valid, Validity::Unknown, Validity::Invalid] {
        assert_eq!(validity.to_string().parse::<Validity>(), Ok(validity));
    }
    assert_eq!(Validity::Invalid.to_string(), "invalid");
    let error = "Valid".parse::<Validity>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown verdict `Valid`: expected valid, unknown or invalid"
    );
}

#[test]
fn a_scenario_judges_resource_unless_it_says_otherwise() {
    assert_eq!(Property::default(), Property::Resource);
}

#[test]
fn incomplete_history_without_violations_is_unknown() {
    let history = history()
        .grant(0, C1, 1)
        .release(10, C1, 1)
        .incomplete()
        .end(20);
    let verdict = verdict(&history);
    assert_eq!(verdict.resource, Validity::Unknown);
    assert_eq!(verdict.mutual_exclusion, Validity::Unknown);
}

#[test]
fn a_violation_is_invalid_even_in_an_incomplete_history() {
    let history = history()
        .grant(0, C1, 1)
        .grant(10, C2, 1)
        .incomplete()
        .end(20);
    let verdict = verdict(&history);
    assert_eq!(verdict.mutual_exclusion, Validity::Invalid);
    assert_eq!(verdict.resource, Validity::Unknown);
    assert_eq!(verdict.get(Property::MutualExclusion), Validity::Invalid);
    assert_eq!(verdict.get(Property::Resource), Validity::Unknown);
}
