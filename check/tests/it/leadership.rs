//! Leadership metrics (`Options::leadership`): terms, two leaders' work accepted together,
//! failover between terms, items done twice and items skipped. Each is measured from accepted
//! writes alone; histories that must give 0 sit beside those that must not.

use lockstep_check::{
    DuplicateItem, ExitReason, History, Leadership, Options, Overlap, Percentiles, Validity,
    Verdict, leadership_failovers_ns,
};

use crate::support::{C1, C2, C3, grant, history, ms, op, verdict, verdict_with};

fn leadership_with(history: &History, initial_value: u64) -> Leadership {
    let options = Options {
        leadership: true,
        initial_value,
        ..Options::default()
    };
    verdict_with(history, &options)
        .leadership
        .expect("leadership is asked for")
}

fn leadership(history: &History) -> Leadership {
    leadership_with(history, 0)
}

fn explain(history: &History) -> Vec<String> {
    let options = Options {
        leadership: true,
        ..Options::default()
    };
    verdict_with(history, &options).explain(history)
}

/// client-1 leads and does items 1 and 2, releases; client-2 leads from 30 ms and does 3, 4.
fn clean_handover() -> History {
    history()
        .grant(0, C1, 1)
        .write(10, C1, 1, 1, 0)
        .write(20, C1, 2, 1, 1)
        .release(25, C1, 1)
        .grant(30, C2, 1)
        .write(40, C2, 1, 1, 2)
        .write(50, C2, 2, 1, 3)
        .release(55, C2, 1)
        .end(60)
}

#[test]
fn a_clean_handover_has_two_terms_one_failover_and_nothing_else() {
    let history = clean_handover();
    let found = leadership(&history);
    assert_eq!(found.terms, 2);
    assert_eq!((found.two_leaders_ns, found.two_leaders.count), (0, 0));
    let gap = ms(40) - ms(20);
    let expected = Percentiles {
        p50_ns: gap,
        p99_ns: gap,
        max_ns: gap,
        count: 1,
    };
    assert_eq!(found.failover, Some(expected));
    assert_eq!(found.duplicate_items.count, 0);
    assert_eq!(found.skipped_items.count, 0);
    assert!(explain(&history).is_empty(), "{:#?}", explain(&history));
}

#[test]
fn leadership_is_absent_unless_asked_for_and_never_changes_the_verdict() {
    let history = clean_handover();
    let plain = verdict(&history);
    assert_eq!(plain.leadership, None);
    let options = Options {
        leadership: true,
        ..Options::default()
    };
    let with = verdict_with(&history, &options);
    assert!(with.leadership.is_some());
    assert_eq!(
        Verdict {
            leadership: None,
            ..with
        },
        plain
    );
}

#[test]
fn grants_without_an_accepted_write_are_no_terms() {
    let history = history()
        .grant(0, C1, 1)
        .read(5, C1, 1, 1, 0)
        .release(6, C1, 1)
        .grant(10, C2, 1)
        .write(12, C2, 1, 1, 0)
        .rejected()
        .exit(13, C2, 1, ExitReason::Abandoned)
        .grant(20, C3, 1)
        .write(22, C3, 1, 1, 0)
        .release(23, C3, 1)
        .end(30);
    let found = leadership(&history);
    assert_eq!(found.terms, 1);
    assert_eq!(found.failover, None, "one term has no change");
    let none = leadership(&crate::support::history().grant(0, C1, 1).end(10));
    assert_eq!((none.terms, none.failover), (0, None));
}

/// client-1 writes at 10 ms, pauses, and its last write lands at 18 ms, while client-2, leader
/// from 12 ms, writes at 14 and 16 ms: their work spans [10, 18] and [14, 16] overlap 2 ms.
fn paused_leader_writes_late() -> History {
    history()
        .grant(0, C1, 1)
        .write(10, C1, 1, 1, 0)
        .grant(12, C2, 1)
        .write(14, C2, 1, 1, 1)
        .write(16, C2, 2, 1, 2)
        .write(18, C1, 2, 1, 3)
        .exit(19, C1, 1, ExitReason::Lost)
        .end(20)
}

#[test]
fn overlapping_work_spans_of_two_clients_are_two_leaders() {
    let history = paused_leader_writes_late();
    let found = leadership(&history);
    assert_eq!(found.two_leaders_ns, ms(2));
    assert_eq!(found.two_leaders.count, 1);
    let expected = Overlap {
        first: grant(C1, 1),
        second: grant(C2, 1),
        from_ns: ms(14),
        to_ns: ms(16),
    };
    assert_eq!(found.two_leaders.examples, vec![expected]);
    let zero = Percentiles {
        p50_ns: 0,
        p99_ns: 0,
        max_ns: 0,
        count: 1,
    };
    assert_eq!(
        found.failover,
        Some(zero),
        "overlapping terms change in no time"
    );
    let lines = explain(&history);
    let at = lines
        .iter()
        .position(|l| l.starts_with("work accepted"))
        .expect("a two-leaders summary");
    assert_eq!(
        lines[at..at + 2],
        [
            "work accepted from two leaders at once: 1 pair of terms, 0.002000s in total.",
            "2 leaders' work accepted together: client-1 (grant client-1#1, no token) and \
             client-2 (grant client-2#1, no token) from 0.014000s to 0.016000s."
        ]
    );
}

#[test]
fn three_overlapping_leaders_count_their_time_once_and_every_pair() {
    // Spans: client-1 [0, 30], client-2 [10, 20], client-3 [15, 25]: two or more from 10 to 25.
    let history = history()
        .grant(0, C1, 1)
        .write(0, C1, 1, 1, 0)
        .grant(5, C2, 1)
        .grant(5, C3, 1)
        .write(10, C2, 1, 1, 1)
        .write(15, C3, 1, 1, 2)
        .write(20, C2, 2, 1, 3)
        .write(25, C3, 2, 1, 4)
        .write(30, C1, 2, 1, 5)
        .end(40);
    let found = leadership(&history);
    assert_eq!(found.two_leaders_ns, ms(15));
    assert_eq!(found.two_leaders.count, 3);
}

#[test]
fn touching_spans_one_write_terms_and_one_clients_terms_are_not_two_leaders() {
    // client-1 [10, 20] and client-2 [20, 30] touch; client-3's one write at 25 is a point.
    let touching = history()
        .grant(0, C1, 1)
        .write(10, C1, 1, 1, 0)
        .write(20, C1, 2, 1, 1)
        .grant(20, C2, 1)
        .write(20, C2, 1, 1, 2)
        .grant(21, C3, 1)
        .write(25, C3, 1, 1, 3)
        .write(30, C2, 2, 1, 4)
        .end(40);
    let found = leadership(&touching);
    assert_eq!((found.two_leaders_ns, found.two_leaders.count), (0, 0));
    // client-1's first grant's write lands at 30 ms, inside its second term [20, 25].
    let same_client = history()
        .grant(0, C1, 1)
        .write(10, C1, 1, 1, 0)
        .grant(15, C1, 2)
        .write(20, C1, 2, 2, 1)
        .write(25, C1, 3, 2, 2)
        .write(30, C1, 4, 1, 3)
        .end(40);
    let found = leadership(&same_client);
    assert_eq!(found.terms, 2);
    assert_eq!((found.two_leaders_ns, found.two_leaders.count), (0, 0));
}

#[test]
fn failover_is_measured_from_the_latest_write_of_all_earlier_terms() {
    // client-1 [0, 50]; client-2 [10, 20] overlaps it (gap 0); client-3 starts at 60: its gap
    // is from client-1's write at 50 (10 ms), not client-2's at 20; client-1 again at 90 (30 ms).
    let history = history()
        .grant(0, C1, 1)
        .write(0, C1, 1, 1, 0)
        .grant(5, C2, 1)
        .write(10, C2, 1, 1, 1)
        .write(20, C2, 2, 1, 2)
        .write(50, C1, 2, 1, 3)
        .grant(55, C3, 1)
        .write(60, C3, 1, 1, 4)
        .release(61, C3, 1)
        .grant(80, C1, 2)
        .write(90, C1, 3, 2, 5)
        .end(100);
    let found = leadership(&history);
    assert_eq!(found.terms, 4);
    let expected = Percentiles {
        p50_ns: ms(10),
        p99_ns: ms(30),
        max_ns: ms(30),
        count: 3,
    };
    assert_eq!(found.failover, Some(expected));
    // The samples behind the percentiles, as a report pools them.
    assert_eq!(leadership_failovers_ns(&history), vec![0, ms(10), ms(30)]);
}

#[test]
fn an_item_written_twice_is_a_duplicate_naming_both_writes() {
    // client-2 read 1 before client-1's write of 2 landed, and writes 2 again.
    let history = history()
        .grant(0, C1, 1)
        .write(10, C1, 1, 1, 0)
        .write(12, C1, 2, 1, 1)
        .grant(14, C2, 1)
        .write(16, C2, 1, 1, 1)
        .write(18, C2, 2, 1, 1)
        .end(20);
    let found = leadership(&history);
    assert_eq!(
        found.duplicate_items.count, 2,
        "the third write of 2 counts again"
    );
    let expected = DuplicateItem {
        value: 2,
        first_entry: 2,
        first_op: op(C1, 2),
        entry: 4,
        op: op(C2, 1),
        time_ns: ms(16),
    };
    assert_eq!(found.duplicate_items.examples[0], expected);
    assert_eq!(found.skipped_items.count, 0);
    let lines = explain(&history);
    assert!(
        lines.contains(
            &"item 2 done twice at 0.016000s: client-2's write of 2 (op client-2#1, grant \
              client-2#1, no token) after client-1's write of 2 (op client-1#2, grant \
              client-1#1, no token)."
                .to_owned()
        ),
        "{lines:#?}"
    );
    // Rejected writes of a value already accepted are no duplicate.
    let fenced = crate::support::history()
        .grant(0, C1, 1)
        .write(10, C1, 1, 1, 0)
        .grant(14, C2, 1)
        .write(16, C2, 1, 1, 0)
        .rejected()
        .end(20);
    assert_eq!(leadership(&fenced).duplicate_items.count, 0);
}

#[test]
fn values_above_the_initial_value_never_written_are_skipped() {
    // From 5: items 6 and 9 done, 7 and 8 skipped; a write of 3 (at or below 5) skips nothing.
    let history = history()
        .grant(0, C1, 1)
        .write(10, C1, 1, 1, 5)
        .write(12, C1, 2, 1, 8)
        .write(14, C1, 3, 1, 2)
        .end(20);
    let found = leadership_with(&history, 5);
    assert_eq!(found.skipped_items.count, 2);
    assert_eq!(found.skipped_items.examples, vec![7, 8]);
    assert_eq!(found.duplicate_items.count, 0);
    let lines = explain(&history);
    // explain() checks from 0: values 1, 2, 4, 5, 7, 8 are missing below 9.
    assert_eq!(
        lines.last().map(String::as_str),
        Some(
            "6 items skipped: no accepted write of 1, 2, 4, 5, 7, 8, below the highest value accepted."
        )
    );
    assert_eq!(leadership(&clean_handover()).skipped_items.count, 0);
}

#[test]
fn two_leaders_are_no_violation_by_themselves() {
    let history = paused_leader_writes_late();
    let options = Options {
        leadership: true,
        ..Options::default()
    };
    let with = verdict_with(&history, &options);
    // Their accepted writes follow each other's values, so nothing here is a lost update;
    // the overlap of critical sections makes mutual exclusion invalid, as without leadership.
    assert_eq!(with.resource, verdict(&history).resource);
    assert_eq!(with.mutual_exclusion, Validity::Invalid);
}
