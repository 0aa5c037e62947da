//! Liveness metrics: acquire latency, unavailable time, failover, fairness and completed
//! critical sections.

use lockstep_check::{ExitReason, Failover, FaultKind, Percentiles};

use crate::support::{C1, C2, C3, history, ms, verdict};

#[test]
fn acquire_latency_is_request_to_grant_with_nearest_rank_percentiles() {
    let history = history()
        .request(0, C1)
        .request(0, C2)
        .request(0, C3)
        .grant(10, C1, 1)
        .release(20, C1, 1)
        .grant(20, C2, 1)
        .release(30, C2, 1)
        .grant(30, C3, 1)
        .release(40, C3, 1)
        .end(50);
    let latency = verdict(&history).liveness.acquire_latency;
    let expected = Percentiles {
        p50_ns: ms(20),
        p99_ns: ms(30),
        max_ns: ms(30),
        count: 3,
    };
    assert_eq!(latency, Some(expected));
}

#[test]
fn a_second_request_while_waiting_keeps_the_first() {
    let history = history()
        .request(0, C1)
        .request(5, C1)
        .grant(10, C1, 1)
        .end(20);
    let latency = verdict(&history)
        .liveness
        .acquire_latency
        .expect("one grant after a request");
    assert_eq!((latency.max_ns, latency.count), (ms(10), 1));
}

#[test]
fn a_wait_runs_across_failed_tries_to_the_grant() {
    // A client whose library gives up after 10 ms and whose loop asks again at 20 ms has waited
    // from its first request to its grant: its give-up policy does not cut the wait short.
    let history = history()
        .request(0, C1)
        .acquire_failed(10, C1)
        .request(20, C1)
        .acquire_failed(25, C1)
        .grant(30, C1, 1)
        .end(40);
    let liveness = verdict(&history).liveness;
    assert_eq!(
        liveness.acquire_failures, 2,
        "the give-ups are their own figure"
    );
    let latency = liveness.acquire_latency.expect("one wait");
    assert_eq!((latency.max_ns, latency.count), (ms(30), 1));
    assert_eq!(liveness.acquire_censored.count, 0);
    assert_eq!(liveness.unavailable_ns, ms(30));
}

#[test]
fn a_tick_given_up_ends_its_wait_without_a_sample() {
    // A scheduled job tries once per tick: a try that fails gives the tick up.
    let history = history()
        .due(0, C1, 1)
        .request(0, C1)
        .acquire_failed(10, C1)
        .due(50, C1, 2)
        .request(50, C1)
        .grant(55, C1, 1)
        .end(60);
    let liveness = verdict(&history).liveness;
    let latency = liveness.acquire_latency.expect("one wait");
    assert_eq!((latency.max_ns, latency.count), (ms(5), 1));
    assert_eq!(liveness.unavailable_ns, ms(15));
}

#[test]
fn a_wait_open_at_a_crash_or_the_end_is_censored_at_its_length() {
    let history = history()
        .request(0, C1)
        .request(0, C2)
        .grant(10, C1, 1)
        .release(20, C1, 1)
        .crash(30, C2)
        .request(40, C1)
        .end(100);
    let liveness = verdict(&history).liveness;
    let latency = liveness.acquire_latency.expect("three waits");
    // client-1's 10 ms, client-2's 30 ms to its crash, client-1's 60 ms to the end.
    assert_eq!(
        (latency.p50_ns, latency.max_ns, latency.count),
        (ms(30), ms(60), 3)
    );
    let c = liveness.acquire_censored;
    assert_eq!((c.count, c.shortest_ns), (2, Some(ms(30))));
    assert!(c.at_least(latency.p99_ns) && c.at_least(latency.p50_ns));
    assert!(
        !c.at_least(ms(10)),
        "a figure below every censored wait is exact"
    );
}

#[test]
fn unavailable_time_counts_waiting_only_while_nobody_holds_the_lock() {
    let history = history()
        .grant(0, C1, 1)
        .request(5, C2)
        .release(10, C1, 1)
        .grant(25, C2, 1)
        .release(30, C2, 1)
        .request(40, C1)
        .end(50);
    // [10, 25) while client-2 waited, then [40, 50) while client-1 waited until the end.
    assert_eq!(verdict(&history).liveness.unavailable_ns, ms(25));
}

#[test]
fn a_crashed_client_stops_waiting() {
    let history = history().request(0, C2).crash(10, C2).end(100);
    assert_eq!(verdict(&history).liveness.unavailable_ns, ms(10));
}

#[test]
fn a_history_without_grants_has_only_censored_waits_and_no_fairness() {
    let liveness = verdict(&history().request(0, C1).end(10)).liveness;
    assert_eq!(
        (
            liveness.grants,
            liveness.acquire_latency.map(|l| (l.max_ns, l.count)),
            liveness.acquire_censored.count,
            liveness.fairness_ppm
        ),
        (0, Some((ms(10), 1)), 1, None)
    );
    let liveness = verdict(&history().end(10)).liveness;
    assert_eq!(liveness.acquire_latency, None);
}

#[test]
fn failover_after_a_holder_crash_is_timed_to_the_next_grant_to_another_client() {
    let history = history()
        .grant(0, C1, 1)
        .request(5, C2)
        .crash(10, C1)
        .grant(25, C2, 1)
        .release(30, C2, 1)
        .end(40);
    let failover = verdict(&history).liveness.failover;
    let expected = Failover {
        count: 1,
        recovered: 1,
        max_ns: Some(ms(15)),
        mean_ns: Some(ms(15)),
    };
    assert_eq!(failover, expected);
}

#[test]
fn failover_after_a_holder_is_told_to_stop_is_timed_from_the_signal_and_its_section_ends_there() {
    // SIGTERM at 10 ms: client-1 leaves at once and releases; client-2 holds 2 ms later; the
    // kill at 40 ms hits a client out of its critical section.
    let history = history()
        .grant(0, C1, 1)
        .request(5, C2)
        .fault(10, FaultKind::Terminate, &[C1])
        .exit(10, C1, 1, ExitReason::Terminated)
        .grant(12, C2, 1)
        .release(20, C2, 1)
        .crash(40, C1)
        .end(50);
    let v = verdict(&history);
    let expected = Failover {
        count: 1,
        recovered: 1,
        max_ns: Some(ms(2)),
        mean_ns: Some(ms(2)),
    };
    assert_eq!(v.liveness.failover, expected);
    assert_eq!(v.double_holders.pairs, 0);
    // The same history read back from its JSON Lines: the kind and the reason have names.
    let text = lockstep_check::jsonl::write(&history, &Default::default());
    assert!(text.contains("\"kind\":\"terminate\""), "{text}");
    assert!(text.contains("\"why\":\"terminated\""), "{text}");
    let back = lockstep_check::jsonl::parse(text.as_bytes()).expect("reads back");
    assert_eq!(back.history, history);
}

#[test]
fn failover_is_unrecovered_while_only_the_faulted_client_gets_the_lock() {
    let history = history()
        .grant(0, C1, 1)
        .pause(10, C1)
        .resume(20, C1)
        .exit(21, C1, 1, ExitReason::Lost)
        .grant(30, C1, 2)
        .end(40);
    let failover = verdict(&history).liveness.failover;
    assert_eq!(
        failover,
        Failover {
            count: 1,
            recovered: 0,
            max_ns: None,
            mean_ns: None
        }
    );
}

#[test]
fn faults_on_processes_outside_a_critical_section_are_not_failovers() {
    let history = history()
        .grant(0, C1, 1)
        .pause(5, C2)
        .fault(6, FaultKind::Partition, &[C3])
        .release(10, C1, 1)
        .crash(15, C1)
        .grant(20, C2, 1)
        .end(30);
    assert_eq!(verdict(&history).liveness.failover.count, 0);
}

#[test]
fn failover_mean_is_rounded_down_to_the_nanosecond() {
    let history = history()
        .grant(0, C1, 1)
        .fault(10, FaultKind::Partition, &[C1])
        .grant(20, C2, 1)
        .fault(30, FaultKind::Partition, &[C2])
        .grant(40, C1, 2)
        .fault(50, FaultKind::Partition, &[C1])
        .grant(61, C2, 2)
        .end(70);
    let failover = verdict(&history).liveness.failover;
    assert_eq!((failover.count, failover.recovered), (3, 3));
    assert_eq!(failover.max_ns, Some(ms(11)));
    assert_eq!(failover.mean_ns, Some(10_333_333), "31 ms / 3");
}

#[test]
fn fifo_grants_are_fully_fair() {
    let history = history()
        .request(0, C1)
        .request(1, C2)
        .grant(2, C1, 1)
        .release(3, C1, 1)
        .grant(3, C2, 1)
        .end(10);
    assert_eq!(verdict(&history).liveness.fairness_ppm, Some(1_000_000));
}

#[test]
fn a_grant_to_a_later_requester_is_out_of_order() {
    let history = history()
        .request(0, C1)
        .request(1, C2)
        .grant(2, C2, 1)
        .release(3, C2, 1)
        .grant(3, C1, 1)
        .end(10);
    assert_eq!(verdict(&history).liveness.fairness_ppm, Some(500_000));
}

#[test]
fn completed_sections_wrote_and_released() {
    let history = history()
        .grant(0, C1, 1)
        .write(1, C1, 1, 1, 0)
        .release(2, C1, 1)
        .grant(3, C2, 1)
        .write(4, C2, 1, 1, 1)
        .exit(5, C2, 1, ExitReason::Lost)
        .grant(6, C3, 1)
        .release(7, C3, 1)
        .grant(8, C1, 2)
        .write(9, C1, 2, 2, 2)
        .crash(10, C1)
        .fault(11, FaultKind::Restart, &[C1])
        .release(12, C1, 2)
        .end(20);
    let liveness = verdict(&history).liveness;
    assert_eq!(liveness.grants, 4);
    assert_eq!(
        liveness.cs_completed, 1,
        "only client-1's first grant wrote and released: its second ended at the crash"
    );
}

#[test]
fn recovery_is_measured_from_the_quiet_tail_to_the_first_grant_at_or_after_it() {
    let h = history()
        .grant(0, C1, 1)
        .release(10, C1, 1)
        .grant(20, C2, 1)
        .release(30, C2, 1)
        .grant(45, C1, 2)
        .end(100);
    let with_tail = |ms_from: u64| {
        let options = lockstep_check::Options {
            quiet_from_ns: Some(ms(ms_from)),
            ..lockstep_check::Options::default()
        };
        lockstep_check::check(&h, &options)
            .expect("valid history")
            .liveness
            .recovery
            .expect("measured")
    };
    assert_eq!(with_tail(20).after_ns(), Some(0));
    assert_eq!(with_tail(21).after_ns(), Some(ms(24)));
    let never = with_tail(46);
    assert_eq!((never.quiet_from_ns, never.after_ns()), (ms(46), None));
    // Without a quiet tail nothing is measured.
    assert_eq!(verdict(&h).liveness.recovery, None);
}

#[test]
fn the_fault_window_counts_the_waits_begun_in_it_and_the_time_inside_it() {
    use lockstep_check::Options;
    // docs/checker.md's worked example, with a fault window from 10 s to 30 s.
    let history = history()
        .request(0, C1)
        .acquire_failed(5_000, C1)
        .request(5_010, C1)
        .request(20_000, C2)
        .grant(31_000, C1, 1)
        .release(32_000, C1, 1)
        .end(40_000);
    let whole = verdict(&history).liveness;
    let l = whole.acquire_latency.expect("two waits");
    assert_eq!((l.p50_ns, l.max_ns, l.count), (ms(20_000), ms(31_000), 2));
    assert_eq!(whole.acquire_censored.shortest_ns, Some(ms(20_000)));
    assert_eq!(whole.fault_window, None, "no window without both times");
    let options = Options {
        fault_from_ns: Some(ms(10_000)),
        quiet_from_ns: Some(ms(30_000)),
        ..Options::default()
    };
    let w = crate::support::verdict_with(&history, &options)
        .liveness
        .fault_window
        .expect("a window");
    let l = w.acquire_latency.expect("client-2's wait began in it");
    assert_eq!((l.max_ns, l.count), (ms(20_000), 1));
    assert_eq!(w.acquire_censored.count, 1);
    assert_eq!(w.unavailable_ns, ms(20_000));
    assert_eq!(w.unavailable_share(), 1.0);
    assert_eq!(
        w.cs_completed, 0,
        "the one section was granted after the window"
    );
}
