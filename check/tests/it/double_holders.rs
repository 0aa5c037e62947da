//! Check 1: critical sections of different clients that overlap in true time.

use lockstep_check::{ExitReason, Overlap, Validity};

use crate::support::{C1, C2, C3, grant, history, ms, verdict};

#[test]
fn sequential_holders_with_adjacent_sections_do_not_overlap() {
    let history = history()
        .grant(0, C1, 1)
        .release(10, C1, 1)
        .grant(10, C2, 1)
        .release(20, C2, 1)
        .end(30);
    let verdict = verdict(&history);
    assert_eq!(verdict.double_holders.pairs, 0);
    assert_eq!(verdict.double_holders.overlap_ns, 0);
    assert_eq!(verdict.double_holders.max_concurrent, 1);
    assert_eq!(verdict.mutual_exclusion, Validity::Valid);
}

#[test]
fn overlapping_sections_are_one_pair_with_their_overlap_interval() {
    let history = history()
        .grant(0, C1, 1)
        .grant(10, C2, 1)
        .release(15, C1, 1)
        .release(20, C2, 1)
        .end(30);
    let verdict = verdict(&history);
    let holders = &verdict.double_holders;
    assert_eq!(
        (holders.pairs, holders.overlap_ns, holders.max_concurrent),
        (1, ms(5), 2)
    );
    let expected = Overlap {
        first: grant(C1, 1),
        second: grant(C2, 1),
        from_ns: ms(10),
        to_ns: ms(15),
    };
    assert_eq!(holders.examples, vec![expected]);
    assert_eq!(verdict.mutual_exclusion, Validity::Invalid);
    assert_eq!(
        verdict.resource,
        Validity::Valid,
        "an overlap alone does not harm the resource"
    );
}

#[test]
fn paused_holder_stays_in_its_critical_section() {
    let history = history()
        .grant(0, C1, 1)
        .pause(5, C1)
        .grant(20, C2, 1)
        .resume(30, C1)
        .exit(35, C1, 1, ExitReason::Lost)
        .release(40, C2, 1)
        .end(50);
    let holders = verdict(&history).double_holders;
    assert_eq!(holders.pairs, 1);
    assert_eq!(holders.overlap_ns, ms(15));
    assert_eq!(
        (holders.examples[0].from_ns, holders.examples[0].to_ns),
        (ms(20), ms(35))
    );
}

#[test]
fn crash_of_the_holder_ends_its_critical_section_and_a_later_exit_is_ignored() {
    let history = history()
        .grant(0, C1, 1)
        .crash(5, C1)
        .grant(20, C2, 1)
        .exit(25, C1, 1, ExitReason::Crashed)
        .release(30, C2, 1)
        .end(40);
    let verdict = verdict(&history);
    assert_eq!(verdict.double_holders.pairs, 0);
    assert_eq!(verdict.double_holders.max_concurrent, 1);
    assert_eq!(verdict.mutual_exclusion, Validity::Valid);
}

#[test]
fn crash_of_another_process_does_not_end_the_holders_section() {
    let history = history()
        .grant(0, C1, 1)
        .crash(5, C3)
        .grant(20, C2, 1)
        .release(30, C2, 1)
        .end(40);
    assert_eq!(verdict(&history).double_holders.pairs, 1);
}

#[test]
fn three_holders_at_once_are_three_pairs() {
    let history = history()
        .grant(0, C1, 1)
        .grant(10, C2, 1)
        .grant(20, C3, 1)
        .release(30, C1, 1)
        .release(30, C2, 1)
        .release(40, C3, 1)
        .end(50);
    let holders = verdict(&history).double_holders;
    assert_eq!(holders.pairs, 3);
    assert_eq!(holders.max_concurrent, 3);
    // Two or more holders from 10 ms (client-2) until 30 ms (client-1 and client-2 leave).
    assert_eq!(holders.overlap_ns, ms(20));
    let pairs: Vec<_> = holders
        .examples
        .iter()
        .map(|overlap| (overlap.first, overlap.second))
        .collect();
    let expected =
        [(C1, C2), (C1, C3), (C2, C3)].map(|(first, second)| (grant(first, 1), grant(second, 1)));
    assert_eq!(pairs, expected);
}

#[test]
fn section_still_open_at_the_run_end_overlaps_until_the_end() {
    let history = history().grant(0, C1, 1).grant(50, C2, 1).end(80);
    let holders = verdict(&history).double_holders;
    assert_eq!(holders.overlap_ns, ms(30));
    assert_eq!(holders.examples[0].to_ns, ms(80));
}

#[test]
fn a_new_grant_to_the_same_client_ends_its_previous_section() {
    let history = history()
        .grant(0, C1, 1)
        .grant(10, C1, 2)
        .release(20, C1, 2)
        .end(30);
    let holders = verdict(&history).double_holders;
    assert_eq!(
        (holders.pairs, holders.overlap_ns, holders.max_concurrent),
        (0, 0, 1)
    );
}

#[test]
fn an_empty_section_overlaps_nothing() {
    let history = history()
        .grant(0, C1, 1)
        .grant(10, C2, 1)
        .release(10, C2, 1)
        .release(20, C1, 1)
        .end(30);
    assert_eq!(verdict(&history).double_holders.pairs, 0);
}

#[test]
fn no_grants_means_no_holder_at_any_time() {
    let history = history().request(0, C1).end(10);
    let holders = verdict(&history).double_holders;
    assert_eq!((holders.pairs, holders.max_concurrent), (0, 0));
}
