//! `example_limit` caps the examples kept, never the counts.

use lockstep_check::{History, Options};

use crate::support::{C1, C2, C3, history, op, verdict_with};

/// client-3's grant writes first; then five accepted ops of the two older grants are stale.
fn five_stale_ops() -> History {
    history()
        .grant(0, C1, 1)
        .grant(1, C2, 1)
        .grant(2, C3, 1)
        .write(3, C3, 1, 1, 0)
        .write(4, C1, 1, 1, 1)
        .write(5, C2, 1, 1, 2)
        .write(6, C1, 2, 1, 3)
        .write(7, C2, 2, 1, 4)
        .write(8, C1, 3, 1, 5)
        .end(10)
}

#[test]
fn examples_keep_the_first_findings_in_history_order_up_to_the_limit() {
    let options = Options {
        example_limit: 2,
        ..Options::default()
    };
    let verdict = verdict_with(&five_stale_ops(), &options);
    assert_eq!(verdict.stale_accepted.count, 5);
    let ops: Vec<_> = verdict
        .stale_accepted
        .examples
        .iter()
        .map(|stale| stale.op)
        .collect();
    assert_eq!(ops, vec![op(C1, 1), op(C2, 1)]);
    assert_eq!(verdict.double_holders.pairs, 3);
    assert_eq!(verdict.double_holders.examples.len(), 2);
}

#[test]
fn a_zero_limit_keeps_counts_but_no_examples() {
    let options = Options {
        example_limit: 0,
        ..Options::default()
    };
    let verdict = verdict_with(&five_stale_ops(), &options);
    assert_eq!(
        (
            verdict.stale_accepted.count,
            verdict.stale_accepted.examples.len()
        ),
        (5, 0)
    );
    assert_eq!(
        (
            verdict.double_holders.pairs,
            verdict.double_holders.examples.len()
        ),
        (3, 0)
    );
}

#[test]
fn the_default_limit_is_ten() {
    assert_eq!(Options::default().example_limit, 10);
}
