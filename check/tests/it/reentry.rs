//! Nested acquisitions (`Nest`, `Nested`): a holder takes its lock again. The figures are the
//! nested waits, the longest counting one never answered; the safety checks judge what the
//! nested release did to the lock (a re-entry without a count frees it under the outer
//! holder: the next holder's section overlaps).

use lockstep_check::{ExitReason, Percentiles, Validity};

use crate::support::{C1, C2, history, ms, verdict};

#[test]
fn a_counted_reentry_waits_nothing_and_keeps_the_lock() {
    // client-1 takes the lock again at once, twice over two sections; client-2 waits its
    // turn, after client-1's outer release.
    let h = history()
        .request(0, C1)
        .request(0, C2)
        .grant(1, C1, 1)
        .read(2, C1, 1, 1, 0)
        .nest(3, C1)
        .nested(3, C1)
        .write(8, C1, 2, 1, 0)
        .release(9, C1, 1)
        .grant(10, C2, 1)
        .read(11, C2, 1, 1, 1)
        .nest(12, C2)
        .nested(14, C2)
        .write(18, C2, 2, 1, 1)
        .release(19, C2, 1)
        .end(20);
    let v = verdict(&h);
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Valid)
    );
    let r = v.reentry.expect("nested acquisitions");
    assert_eq!((r.nested, r.granted), (2, 2));
    assert_eq!(
        r.wait,
        Some(Percentiles {
            p50_ns: 0,
            p99_ns: ms(2),
            max_ns: ms(2),
            count: 2
        })
    );
    assert_eq!(r.longest_wait_ns, ms(2));
}

#[test]
fn a_reentry_without_a_count_frees_the_lock_under_the_outer_holder() {
    // client-1's nested unlock deletes the lock at 6 ms: client-2 is granted at 7 ms while
    // client-1's outer section still works (until 12 ms): two holders, and client-1's write
    // overwrites client-2's.
    let h = history()
        .request(0, C1)
        .request(0, C2)
        .grant(1, C1, 1)
        .read(2, C1, 1, 1, 0)
        .nest(3, C1)
        .nested(4, C1)
        .grant(7, C2, 1)
        .read(8, C2, 1, 1, 0)
        .write(9, C2, 2, 1, 0)
        .write(11, C1, 2, 1, 0)
        .release(12, C1, 1)
        .release(13, C2, 1)
        .end(20);
    let v = verdict(&h);
    assert_eq!(v.double_holders.pairs, 1);
    assert_eq!(v.double_holders.overlap_ns, ms(5));
    assert_eq!(v.lost_updates.count, 1);
    assert_eq!(v.mutual_exclusion, Validity::Invalid);
    assert_eq!(v.reentry.expect("nested").granted, 1);
}

#[test]
fn a_lock_waiting_for_itself_shows_its_longest_wait_unanswered() {
    // client-1 asks again at 3 ms and is never answered: it gives up at 5 s, abandoned; a
    // second section's nested call is still waiting when the run ends at 9 s.
    let h = history()
        .request(0, C1)
        .grant(1, C1, 1)
        .read(2, C1, 1, 1, 0)
        .nest(3, C1)
        .exit(5_000, C1, 1, ExitReason::Abandoned)
        .request(5_100, C1)
        .grant(5_101, C1, 2)
        .read(5_102, C1, 2, 2, 0)
        .nest(5_103, C1)
        .end(9_000);
    let v = verdict(&h);
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Valid)
    );
    let r = v.reentry.expect("nested");
    assert_eq!((r.nested, r.granted, r.wait), (2, 0, None));
    assert_eq!(r.longest_wait_ns, ms(9_000 - 5_103).max(ms(5_000 - 3)));
}

#[test]
fn a_history_without_nested_acquisitions_has_no_reentry_figures() {
    let h = history()
        .request(0, C1)
        .grant(1, C1, 1)
        .release(2, C1, 1)
        .end(3);
    assert_eq!(verdict(&h).reentry, None);
}
