//! Many locks and many resources (`Pick` events): critical sections conflict only with those
//! of the same lock, storage ops only with those on the same resource, and tokens are ordered
//! per lock. Every test pairs a history that must be flagged with one that must not.

use lockstep_check::{Overlap, Validity, check};

use crate::support::{C1, C2, C3, grant, history, ms, verdict};

/// client-1 and client-2 each hold a lock from 0 to 10 ms and write their resource: the two
/// sections overlap in time.
fn two_holders(lock_1: u64, row_1: u64, lock_2: u64, row_2: u64) -> lockstep_check::History {
    history()
        .pick(0, C1, lock_1, row_1)
        .request(0, C1)
        .pick(0, C2, lock_2, row_2)
        .request(0, C2)
        .grant(1, C1, 1)
        .grant(2, C2, 1)
        .read(3, C1, 1, 1, 0)
        .read(4, C2, 1, 1, 0)
        .write(8, C1, 2, 1, 0)
        .write(9, C2, 2, 1, 0)
        .release(10, C1, 1)
        .release(11, C2, 1)
        .end(20)
}

#[test]
fn overlapping_sections_on_two_rows_of_per_row_locks_are_not_a_violation() {
    let v = verdict(&two_holders(3, 3, 7, 7));
    assert_eq!(v.double_holders.pairs, 0);
    assert_eq!(v.double_holders.max_concurrent, 1);
    assert_eq!((v.stale_accepted.count, v.lost_updates.count), (0, 0));
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Valid)
    );
    // Each row counted from 0 to 1: the storage's total is 2 after 2 writes.
    assert_eq!((v.liveness.final_value, v.liveness.accepted_writes), (2, 2));
}

#[test]
fn overlapping_sections_on_one_row_are_a_violation_of_its_lock_and_its_data() {
    let v = verdict(&two_holders(3, 3, 3, 3));
    assert_eq!(v.double_holders.pairs, 1);
    assert_eq!(
        v.double_holders.examples,
        [Overlap {
            first: grant(C1, 1),
            second: grant(C2, 1),
            from_ns: ms(2),
            to_ns: ms(10),
        }]
    );
    // client-1's write after client-2's read of the same row, and client-2's write computed
    // from the 0 client-1 had already overwritten.
    assert_eq!(v.stale_accepted.count, 1);
    assert_eq!(v.lost_updates.count, 1);
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Invalid, Validity::Invalid)
    );
    // The sentences name the lock and the resource.
    let lines = v.explain(&two_holders(3, 3, 3, 3));
    assert!(
        lines.contains(
            &"2 holders at once of lock 3: client-1 (grant client-1#1, no token) and client-2 \
              (grant client-2#1, no token) from 0.002000s to 0.010000s."
                .to_owned()
        ),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("stale op accepted at 0.008000s on resource 3: ")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("lost update at 0.009000s on resource 3: ")),
        "{lines:?}"
    );
}

#[test]
fn two_holders_of_one_table_lock_on_two_of_its_rows_break_the_lock_but_not_the_data() {
    // Rows 3 and 4 of table 0: one lock, two resources.
    let v = verdict(&two_holders(0, 3, 0, 4));
    assert_eq!(v.double_holders.pairs, 1);
    assert_eq!((v.stale_accepted.count, v.lost_updates.count), (0, 0));
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Invalid)
    );
}

#[test]
fn overlaps_are_summed_over_locks_and_the_most_at_once_is_per_lock() {
    // Locks 1 and 2 each have two holders at once for 5 ms; never three of one lock.
    let h = history()
        .pick(0, C1, 1, 1)
        .request(0, C1)
        .pick(0, C2, 1, 1)
        .request(0, C2)
        .pick(0, C3, 2, 2)
        .request(0, C3)
        .grant(10, C1, 1)
        .grant(15, C2, 1)
        .grant(15, C3, 1)
        .release(20, C1, 1)
        .pick(20, C1, 2, 2)
        .request(20, C1)
        .grant(20, C1, 2)
        .release(25, C3, 1)
        .release(30, C2, 1)
        .release(30, C1, 2)
        .end(40);
    let v = verdict(&h);
    assert_eq!(v.double_holders.pairs, 2);
    assert_eq!(v.double_holders.overlap_ns, ms(5) + ms(5));
    assert_eq!(v.double_holders.max_concurrent, 2);
    let firsts: Vec<_> = v
        .double_holders
        .examples
        .iter()
        .map(|o| o.from_ns)
        .collect();
    assert_eq!(firsts, [ms(15), ms(20)], "in the order the overlaps began");
}

#[test]
fn a_stale_op_is_judged_against_newer_grants_of_its_own_resource_only() {
    // client-1 (older grant) writes row 5 after client-2 (newer grant) wrote row 6: fine.
    // Then client-3, granted after both, reads row 5, and client-1's late second write to
    // row 5 lands after it: stale.
    let h = history()
        .pick(0, C1, 5, 5)
        .request(0, C1)
        .grant(1, C1, 1)
        .pick(2, C2, 6, 6)
        .request(2, C2)
        .grant(3, C2, 1)
        .write(4, C2, 1, 1, 0)
        .write(5, C1, 1, 1, 0)
        .release(6, C2, 1)
        .pick(7, C3, 5, 5)
        .request(7, C3)
        .grant(8, C3, 1)
        .read(9, C3, 1, 1, 1)
        .write(10, C1, 2, 1, 1)
        .end(20);
    let v = verdict(&h);
    assert_eq!(v.stale_accepted.count, 1);
    let stale = v.stale_accepted.examples[0];
    assert_eq!(
        (stale.grant, stale.newer_grant),
        (grant(C1, 1), grant(C3, 1))
    );
    assert_eq!(
        v.double_holders.pairs, 1,
        "client-1 and client-3 share lock 5"
    );
}

#[test]
fn lost_updates_are_replayed_per_resource() {
    // Each row goes 0 -> 1 -> 2; row 2's second write is computed from 0 again: lost.
    let h = history()
        .pick(0, C1, 1, 1)
        .request(0, C1)
        .grant(1, C1, 1)
        .write(2, C1, 1, 1, 0)
        .release(3, C1, 1)
        .pick(4, C2, 2, 2)
        .request(4, C2)
        .grant(5, C2, 1)
        .write(6, C2, 1, 1, 0)
        .release(7, C2, 1)
        .pick(8, C1, 1, 1)
        .request(8, C1)
        .grant(9, C1, 2)
        .write(10, C1, 2, 2, 1)
        .release(11, C1, 2)
        .pick(12, C2, 2, 2)
        .request(12, C2)
        .grant(13, C2, 2)
        .write(14, C2, 2, 2, 0)
        .release(15, C2, 2)
        .end(20);
    let v = verdict(&h);
    assert_eq!(v.lost_updates.count, 1);
    let lost = v.lost_updates.examples[0];
    assert_eq!((lost.grant, lost.base, lost.current), (grant(C2, 2), 0, 1));
    assert_eq!(v.liveness.final_value, 2 + 1);
}

#[test]
fn tokens_are_ordered_per_lock() {
    // Lock 1 hands out 5 then 6; lock 2 hands out 3: below lock 1's, and not an inversion.
    let fenced = |second_lock_2: u64| {
        history()
            .pick(0, C1, 1, 1)
            .request(0, C1)
            .grant_token(1, C1, 1, 5)
            .release(2, C1, 1)
            .pick(3, C2, 2, 2)
            .request(3, C2)
            .grant_token(4, C2, 1, 3)
            .release(5, C2, 1)
            .pick(6, C1, 1, 1)
            .request(6, C1)
            .grant_token(7, C1, 2, 6)
            .release(8, C1, 2)
            .pick(9, C3, 2, 2)
            .request(9, C3)
            .grant_token(10, C3, 1, second_lock_2)
            .release(11, C3, 1)
            .end(20)
    };
    let options = lockstep_check::Options {
        tokens_monotonic: true,
        ..Default::default()
    };
    let v = check(&fenced(4), &options).expect("judged");
    assert_eq!(v.token_order.count, 0);
    let v = check(&fenced(2), &options).expect("judged");
    assert_eq!(v.token_order.count, 1);
    let inversion = v.token_order.examples[0];
    assert_eq!(
        (inversion.earlier, inversion.later),
        (grant(C2, 1), grant(C3, 1))
    );
}

#[test]
fn a_grant_whose_client_picked_nothing_is_of_lock_zero() {
    // client-2 never picks: it holds lock 0, which client-1's pick of lock 0 shares.
    let h = history()
        .pick(0, C1, 0, 0)
        .request(0, C1)
        .request(0, C2)
        .grant(1, C1, 1)
        .grant(2, C2, 1)
        .release(5, C1, 1)
        .release(6, C2, 1)
        .end(10);
    assert_eq!(verdict(&h).double_holders.pairs, 1);
    let apart = history()
        .pick(0, C1, 1, 1)
        .request(0, C1)
        .request(0, C2)
        .grant(1, C1, 1)
        .grant(2, C2, 1)
        .release(5, C1, 1)
        .release(6, C2, 1)
        .end(10);
    assert_eq!(verdict(&apart).double_holders.pairs, 0);
}

#[test]
fn pick_events_read_back_from_json_lines() {
    let h = two_holders(3, 3, 7, 9);
    let text = lockstep_check::jsonl::write(&h, &Default::default());
    assert!(
        text.contains(
            "{\"time_ns\":0,\"event\":\"pick\",\"client\":\"client-1\",\"lock\":3,\"resource\":3}"
        ),
        "{text}"
    );
    let back = lockstep_check::jsonl::parse(text.as_bytes()).expect("reads back");
    assert_eq!(back.history, h);
}
