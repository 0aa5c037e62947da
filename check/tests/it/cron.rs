//! Scheduled job metrics: ticks run, run twice and missed, and their lateness, from the `Due`
//! events and the grants that answer them. A tick run twice makes both verdicts invalid even
//! when the two runs never overlap; a tick missed is liveness only.

use lockstep_check::{Percentiles, RunTwice, Validity, check};

use crate::support::{C1, C2, C3, grant, history, ms, verdict};

#[test]
fn a_history_without_ticks_has_no_cron_figures() {
    let h = history().grant(0, C1, 1).release(10, C1, 1).end(20);
    assert_eq!(verdict(&h).cron, None);
}

#[test]
fn each_tick_run_once_is_valid_with_its_lateness() {
    // Ticks 1 and 2: every client finds each due; one wins, the others fail at once.
    let h = history()
        .due(1000, C1, 1)
        .request(1000, C1)
        .due(1001, C2, 1)
        .request(1001, C2)
        .grant(1003, C1, 1)
        .acquire_failed(1004, C2)
        .write(1010, C1, 1, 1, 0)
        .release(1011, C1, 1)
        .due(2000, C2, 2)
        .request(2000, C2)
        .due(2002, C1, 2)
        .request(2002, C1)
        .grant(2007, C2, 1)
        .acquire_failed(2008, C1)
        .write(2010, C2, 1, 1, 1)
        .release(2011, C2, 1)
        .end(2500);
    let v = verdict(&h);
    let c = v.cron.as_ref().expect("ticks");
    assert_eq!(
        (c.ticks, c.run, c.run_twice.count, c.missed.count),
        (2, 2, 0, 0)
    );
    assert_eq!(
        c.lateness,
        Some(Percentiles {
            p50_ns: ms(3),
            p99_ns: ms(7),
            max_ns: ms(7),
            count: 2
        })
    );
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Valid)
    );
}

#[test]
fn a_tick_run_again_after_the_first_run_released_is_invalid_without_any_overlap() {
    // client-1's clock runs 30 ms ahead: it finds tick 2 due first, runs it and releases
    // before client-2 finds the same tick due and wins the free lock.
    let h = history()
        .due(1970, C1, 2)
        .request(1970, C1)
        .grant(1971, C1, 1)
        .write(1980, C1, 1, 1, 0)
        .release(1981, C1, 1)
        .due(2000, C2, 2)
        .request(2000, C2)
        .grant(2001, C2, 1)
        .write(2010, C2, 1, 1, 1)
        .release(2011, C2, 1)
        .end(2500);
    let v = verdict(&h);
    assert_eq!(v.double_holders.pairs, 0, "the two runs never overlap");
    let c = v.cron.as_ref().expect("ticks");
    assert_eq!((c.ticks, c.run), (1, 1));
    assert_eq!(
        c.run_twice.examples,
        [RunTwice {
            tick: 2,
            first: grant(C1, 1),
            first_ns: ms(1971),
            second: grant(C2, 1),
            second_ns: ms(2001),
            entry: 8,
        }]
    );
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Invalid, Validity::Invalid)
    );
    let lines = v.explain(&h);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tick 2 run twice: by client-1#1 granted at 1.971")),
        "{lines:?}"
    );
}

#[test]
fn a_blocked_client_granted_after_the_next_tick_came_due_runs_the_tick_it_asked_for() {
    // client-2 blocks on tick 1 behind client-1, finds tick 2 due while still waiting (and
    // skips it), and is then granted: its run is tick 1's second, and tick 2 is not run.
    let h = history()
        .due(1000, C1, 1)
        .request(1000, C1)
        .due(1000, C2, 1)
        .request(1000, C2)
        .grant(1001, C1, 1)
        .write(1900, C1, 1, 1, 0)
        .due(2000, C2, 2)
        .release(2100, C1, 1)
        .grant(2101, C2, 1)
        .write(2200, C2, 1, 1, 1)
        .release(2201, C2, 1)
        .due(3000, C3, 3)
        .end(3500);
    let v = verdict(&h);
    let c = v.cron.as_ref().expect("ticks");
    assert_eq!(c.run_twice.count, 1);
    assert_eq!(c.run_twice.examples[0].tick, 1);
    assert_eq!(
        (c.ticks, c.run, c.missed.examples.as_slice()),
        (3, 1, &[2][..])
    );
}

#[test]
fn a_tick_whose_winner_crashed_before_its_write_is_missed_but_safe() {
    // client-1 wins tick 1 and crashes mid-job; the others tried once and gave up. Tick 2
    // runs. The last tick (3) has not run yet when the history ends: not missed.
    let h = history()
        .due(1000, C1, 1)
        .request(1000, C1)
        .due(1000, C2, 1)
        .request(1000, C2)
        .grant(1001, C1, 1)
        .acquire_failed(1002, C2)
        .crash(1500, C1)
        .due(2000, C2, 2)
        .request(2000, C2)
        .grant(2001, C2, 1)
        .write(2010, C2, 1, 1, 0)
        .release(2011, C2, 1)
        .due(3000, C2, 3)
        .request(3000, C2)
        .end(3001);
    let v = verdict(&h);
    let c = v.cron.as_ref().expect("ticks");
    assert_eq!((c.ticks, c.run, c.run_twice.count), (3, 1, 0));
    assert_eq!(c.missed.examples, [1]);
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Valid)
    );
    let lines = v.explain(&h);
    assert!(
        lines.contains(&"tick 1 never ran, though a later tick came due.".to_owned()),
        "{lines:?}"
    );
}

#[test]
fn a_run_whose_write_fencing_refused_did_not_run_the_job() {
    let h = history()
        .due(1000, C1, 1)
        .request(1000, C1)
        .grant_token(1001, C1, 1, 7)
        .write(1010, C1, 1, 1, 0)
        .token(7)
        .due(1970, C2, 2)
        .request(1970, C2)
        .grant_token(1971, C2, 1, 9)
        .write(1980, C2, 1, 1, 1)
        .token(9)
        .due(2000, C1, 2)
        .request(2000, C1)
        .grant_token(2001, C1, 2, 8)
        .write(2010, C1, 2, 2, 1)
        .token(8)
        .rejected()
        .due(3000, C3, 3)
        .end(3001);
    let v = verdict(&h);
    let c = v.cron.as_ref().expect("ticks");
    assert_eq!(
        (c.ticks, c.run, c.run_twice.count, c.missed.count),
        (3, 2, 0, 0)
    );
}

#[test]
fn a_grant_with_no_tick_due_is_a_history_error() {
    let h = history()
        .due(1000, C1, 1)
        .request(1000, C1)
        .grant(1001, C1, 1)
        .release(1002, C1, 1)
        .request(1003, C2)
        .grant(1004, C2, 1)
        .end(2000);
    let error = check(&h, &Default::default()).unwrap_err();
    assert_eq!(error.entry, Some(5));
    assert!(
        error
            .message
            .contains("client-2 was granted the lock with no tick of its schedule due"),
        "{error}"
    );
}

#[test]
fn due_events_read_back_from_json_lines() {
    let h = history()
        .due(1000, C1, 1)
        .request(1000, C1)
        .grant(1001, C1, 1)
        .end(2000);
    let text = lockstep_check::jsonl::write(&h, &Default::default());
    assert!(
        text.contains(
            "{\"time_ns\":1000000000,\"event\":\"due\",\"tick\":1,\"client\":\"client-1\"}"
        ),
        "{text}"
    );
    let back = lockstep_check::jsonl::parse(text.as_bytes()).expect("reads back");
    assert_eq!(back.history, h);
}

#[test]
fn a_gap_of_a_million_billion_ticks_is_counted_not_walked() {
    // client-1's wall clock jumps 10^15 periods between two ticks it runs: the ticks in
    // between are missed, the smallest of them the examples, at once (a walk over them would
    // not end).
    let h = history()
        .due(1000, C1, 5)
        .request(1000, C1)
        .grant(1001, C1, 1)
        .write(1002, C1, 1, 1, 0)
        .release(1003, C1, 1)
        .due(2000, C1, 1_000_000_000_000_005)
        .request(2000, C1)
        .grant(2001, C1, 2)
        .write(2002, C1, 2, 2, 1)
        .release(2003, C1, 2)
        .due(3000, C1, 1_000_000_000_000_006)
        .end(4000);
    let c = verdict(&h).cron.expect("ticks");
    assert_eq!(
        (c.ticks, c.run, c.run_twice.count),
        (1_000_000_000_000_002, 2, 0)
    );
    assert_eq!(
        c.missed.count, 999_999_999_999_999,
        "every tick between, not the last"
    );
    assert_eq!(c.missed.examples, (6..16).collect::<Vec<u64>>());
}

#[test]
fn ticks_spanning_every_value_are_refused_at_once() {
    // Tick 2^64 - 1 then tick 0: 2^64 ticks to judge, one more than a count holds.
    let h = history().due(1, C1, u64::MAX).due(2, C1, 0).end(3);
    let error = check(&h, &Default::default()).unwrap_err();
    assert_eq!(error.entry, Some(1));
    assert!(
        error
            .message
            .contains("ticks 0 and 18446744073709551615 both came due"),
        "{error}"
    );
    // One fewer is judged: every tick but the last is missed.
    let h = history().due(1, C1, u64::MAX - 1).due(2, C1, 0).end(3);
    let c = verdict(&h).cron.expect("ticks");
    assert_eq!(
        (c.ticks, c.run, c.missed.count),
        (u64::MAX, 0, u64::MAX - 1)
    );
    assert_eq!(c.missed.examples, (0..10).collect::<Vec<u64>>());
}
