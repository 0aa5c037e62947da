//! Check 3: an accepted write computed from a value storage no longer held.

use lockstep_check::{LostUpdate, Options, Validity};

use crate::support::{C1, C2, grant, history, ms, op, verdict, verdict_with};

#[test]
fn sequential_increments_lose_nothing_and_final_value_counts_them() {
    let history = history()
        .grant(0, C1, 1)
        .read(1, C1, 1, 1, 0)
        .write(2, C1, 2, 1, 0)
        .release(3, C1, 1)
        .grant(4, C2, 1)
        .read(5, C2, 1, 1, 1)
        .write(6, C2, 2, 1, 1)
        .release(7, C2, 1)
        .end(10);
    let verdict = verdict(&history);
    assert_eq!(verdict.lost_updates.count, 0);
    assert_eq!(
        (
            verdict.liveness.accepted_writes,
            verdict.liveness.final_value
        ),
        (2, 2)
    );
    assert_eq!(verdict.resource, Validity::Valid);
}

#[test]
fn write_from_a_value_overwritten_since_is_a_lost_update() {
    // Both clients read 0; client-2's write lands first, so client-1's increment is lost.
    let history = history()
        .grant(0, C1, 1)
        .read(1, C1, 1, 1, 0)
        .release(2, C1, 1)
        .grant(3, C2, 1)
        .read(4, C2, 1, 1, 0)
        .write(5, C2, 2, 1, 0)
        .release(6, C2, 1)
        .write(7, C1, 2, 1, 0)
        .end(10);
    let verdict = verdict(&history);
    let expected = LostUpdate {
        entry: 7,
        op: op(C1, 2),
        grant: grant(C1, 1),
        base: 0,
        current: 1,
        time_ns: ms(7),
    };
    assert_eq!(verdict.lost_updates.count, 1);
    assert_eq!(verdict.lost_updates.examples, vec![expected]);
    assert_eq!(
        verdict.liveness.final_value, 1,
        "two accepted increments left the value at 1"
    );
    assert_eq!(verdict.liveness.accepted_writes, 2);
    assert_eq!(verdict.resource, Validity::Invalid);
}

#[test]
fn replay_starts_from_the_initial_value() {
    let history = history()
        .grant(0, C1, 1)
        .write(1, C1, 1, 1, 5)
        .release(2, C1, 1)
        .end(10);
    let from_five = Options {
        initial_value: 5,
        ..Options::default()
    };
    assert_eq!(verdict_with(&history, &from_five).lost_updates.count, 0);
    assert_eq!(verdict_with(&history, &from_five).liveness.final_value, 6);
    let from_zero = verdict(&history).lost_updates;
    assert_eq!(
        (
            from_zero.count,
            from_zero.examples[0].base,
            from_zero.examples[0].current
        ),
        (1, 5, 0)
    );
}

#[test]
fn rejected_writes_do_not_change_the_value() {
    let history = history()
        .grant(0, C1, 1)
        .write(1, C1, 1, 1, 0)
        .release(2, C1, 1)
        .grant(3, C2, 1)
        .write(4, C2, 1, 1, 1)
        .rejected()
        .write(5, C2, 2, 1, 1)
        .release(6, C2, 1)
        .end(10);
    let verdict = verdict(&history);
    assert_eq!(verdict.lost_updates.count, 0);
    assert_eq!(
        (
            verdict.liveness.accepted_writes,
            verdict.liveness.final_value
        ),
        (2, 2)
    );
}
