//! Check 2: storage accepted an op from a grant after it had accepted an op of a later grant.

use lockstep_check::{StaleOp, Validity};

use crate::support::{C1, C2, C3, grant, history, ms, op, verdict};

#[test]
fn write_of_an_older_grant_after_a_newer_grants_write_is_one_stale_op() {
    let history = history()
        .grant(0, C1, 1)
        .release(10, C1, 1)
        .grant(20, C2, 1)
        .write(25, C2, 1, 1, 0)
        .write(30, C1, 1, 1, 1)
        .release(35, C2, 1)
        .end(40);
    let verdict = verdict(&history);
    let expected = StaleOp {
        entry: 4,
        op: op(C1, 1),
        grant: grant(C1, 1),
        newer_entry: 3,
        newer_op: op(C2, 1),
        newer_grant: grant(C2, 1),
        time_ns: ms(30),
    };
    assert_eq!(verdict.stale_accepted.count, 1);
    assert_eq!(verdict.stale_accepted.examples, vec![expected]);
    assert_eq!(verdict.resource, Validity::Invalid);
    assert_eq!(
        verdict.mutual_exclusion,
        Validity::Invalid,
        "a harmed resource breaks both"
    );
}

#[test]
fn older_grants_op_landing_before_any_newer_op_is_not_stale() {
    // client-1's write was delayed past its release, but storage saw it before anything of
    // client-2: consistent with client-1 having finished first.
    let history = history()
        .grant(0, C1, 1)
        .release(10, C1, 1)
        .grant(20, C2, 1)
        .write(22, C1, 1, 1, 0)
        .read(25, C2, 1, 1, 1)
        .write(26, C2, 2, 1, 1)
        .release(30, C2, 1)
        .end(40);
    let verdict = verdict(&history);
    assert_eq!(verdict.stale_accepted.count, 0);
    assert_eq!(verdict.resource, Validity::Valid);
    assert_eq!(verdict.mutual_exclusion, Validity::Valid);
}

#[test]
fn accepted_stale_read_counts_as_a_stale_op() {
    let history = history()
        .grant(0, C1, 1)
        .grant(20, C2, 1)
        .write(25, C2, 1, 1, 0)
        .read(30, C1, 1, 1, 1)
        .end(40);
    let verdict = verdict(&history);
    assert_eq!(verdict.stale_accepted.count, 1);
    assert_eq!(verdict.resource, Validity::Invalid);
}

#[test]
fn rejected_ops_count_only_as_stale_rejected() {
    let history = history()
        .grant_token(0, C1, 1, 33)
        .grant_token(20, C2, 1, 34)
        .write(25, C2, 1, 1, 0)
        .token(34)
        .write(30, C1, 1, 1, 0)
        .token(33)
        .rejected()
        .read(31, C1, 2, 1, 1)
        .token(33)
        .rejected()
        .end(40);
    let verdict = verdict(&history);
    assert_eq!(verdict.stale_accepted.count, 0);
    assert_eq!(verdict.stale_rejected, 2);
    assert_eq!(verdict.resource, Validity::Valid);
}

#[test]
fn every_stale_op_counts_against_the_first_op_of_the_newest_grant() {
    let history = history()
        .grant(0, C1, 1)
        .grant(10, C2, 1)
        .grant(20, C3, 1)
        .read(25, C3, 1, 1, 0)
        .write(26, C3, 2, 1, 0)
        .write(27, C2, 1, 1, 0)
        .write(28, C1, 1, 1, 0)
        .end(40);
    let stale = verdict(&history).stale_accepted;
    assert_eq!(stale.count, 2);
    let culprits: Vec<_> = stale
        .examples
        .iter()
        .map(|found| (found.op, found.newer_op))
        .collect();
    assert_eq!(
        culprits,
        vec![(op(C2, 1), op(C3, 1)), (op(C1, 1), op(C3, 1))]
    );
}

#[test]
fn ops_of_the_newest_grant_are_never_stale_among_themselves() {
    let history = history()
        .grant(0, C1, 1)
        .read(1, C1, 1, 1, 0)
        .write(2, C1, 2, 1, 0)
        .write(3, C1, 3, 1, 1)
        .release(4, C1, 1)
        .end(10);
    assert_eq!(verdict(&history).stale_accepted.count, 0);
}
