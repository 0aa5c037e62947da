//! Pause, crash and restart semantics, and faults triggered by marks.

use lockstep_sim::{
    ClockKind, Dur, Fault, NodeId, Outcome, ScheduledFault, Status, Time, Watchdog, When, World,
};

use crate::support::*;

#[test]
fn a_paused_node_handles_waiting_messages_and_timers_in_order_at_resume() {
    // n0 sends a note every 500 ms (zero latency); n1 pauses from 1.2 s to 3.2 s and has a
    // timer due at 2.2 s, between the notes sent at 2.0 s and 2.5 s.
    let mut cfg = config(1, 10, 2);
    cfg.faults.push(at_ms(
        1_200,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_secs(2)),
        },
    ));
    let receiver = Probe::with_timers(vec![(ClockKind::Mono, Dur::from_millis(2_200), 7)]);
    let mut w = world_with(cfg, vec![Probe::sender(1, 500, 8), receiver]);
    w.run();
    let recs = records(&w, 1);
    let order: Vec<(u64, String)> = recs
        .iter()
        .map(|(t, e)| match e {
            Ev::Got {
                msg: Msg::Note(n), ..
            } => (*t, format!("note {n}")),
            Ev::Fired { tag, .. } => (*t, format!("timer {tag}")),
            other => panic!("{other:?}"),
        })
        .collect();
    let expect = [
        (500, "note 0"),
        (1_000, "note 1"),
        (3_200, "note 2"),
        (3_200, "note 3"),
        (3_200, "timer 7"),
        (3_200, "note 4"),
        (3_200, "note 5"),
        (3_500, "note 6"),
        (4_000, "note 7"),
    ];
    let expect: Vec<(u64, String)> = expect.iter().map(|(t, s)| (*t, s.to_string())).collect();
    assert_eq!(order, expect);
}

#[test]
fn the_backlog_runs_before_messages_arriving_at_the_resume_instant() {
    // Notes every 100 ms over a 100 ms link; n1 is paused from 1.25 s to exactly 3.2 s, when
    // the note sent at 3.1 s arrives. The notes that waited must be handled first.
    let mut cfg = config(1, 10, 2);
    cfg.link = latency(const_ms(100));
    cfg.faults.push(at_ms(
        1_250,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_millis(1_950)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 40), Probe::default()]);
    w.run();
    assert_eq!(notes(&w, 1), (0..40).collect::<Vec<_>>());
}

#[test]
fn a_crash_during_the_backlog_loses_the_rest_of_it() {
    // n1 is paused with notes waiting; the first note handled after the resume reaches a mark
    // that crashes it: the remaining notes die with the process.
    let mut cfg = config(1, 10, 2);
    cfg.link = latency(const_ms(10));
    cfg.faults.push(at_ms(
        150,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_millis(500)),
        },
    ));
    let receiver = Probe {
        mark_on_note: Some(2),
        ..Probe::default()
    };
    cfg.faults.push(ScheduledFault {
        when: When::OnMark {
            node: NodeId(1),
            mark: "got-note".to_string(),
            occurrence: 1,
            before: None,
        },
        fault: Fault::Crash {
            node: NodeId(1),
            restart_after: None,
        },
        role: None,
    });
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 9), receiver]);
    w.run();
    // Note 0 arrives at 110 ms; notes 1..=5 arrive during the pause (210..510 ms) and wait;
    // at the resume note 2 crashes the node as it is handled, and 3..=5 are lost with it.
    assert_eq!(notes(&w, 1), vec![0, 1, 2]);
    assert_eq!(w.status(NodeId(1)), Status::Down);
}

#[test]
fn a_crash_cancels_the_restart_an_earlier_crash_scheduled() {
    // Crash at 1 s with a restart after 1 s; restarted by hand at 1.5 s; crashed for good at
    // 1.8 s. The restart due at 2 s belonged to the first crash and must not revive it.
    let mut cfg = config(1, 10, 1);
    cfg.faults.push(at_ms(
        1_000,
        Fault::Crash {
            node: NodeId(0),
            restart_after: Some(Dur::from_secs(1)),
        },
    ));
    cfg.faults
        .push(at_ms(1_500, Fault::Restart { node: NodeId(0) }));
    cfg.faults.push(at_ms(
        1_800,
        Fault::Crash {
            node: NodeId(0),
            restart_after: None,
        },
    ));
    let mut w = world_with(cfg, vec![Probe::default()]);
    w.run();
    assert_eq!(w.status(NodeId(0)), Status::Down);
    let restarts = records(&w, 0)
        .iter()
        .filter(|(_, e)| matches!(e, Ev::Restarted { .. }))
        .count();
    assert_eq!(restarts, 1);
}

#[test]
fn a_pause_during_a_pause_lasts_until_the_later_end() {
    let mut cfg = config(1, 10, 1);
    cfg.faults.push(at_ms(
        1_000,
        Fault::Pause {
            node: NodeId(0),
            duration: Some(Dur::from_secs(3)),
        },
    ));
    cfg.faults.push(at_ms(
        2_000,
        Fault::Pause {
            node: NodeId(0),
            duration: Some(Dur::from_secs(1)),
        },
    ));
    let mut w = world_with(
        cfg,
        vec![Probe::with_timers(vec![(
            ClockKind::Mono,
            Dur::from_millis(1_500),
            1,
        )])],
    );
    w.run_until(lockstep_sim::Time::from_millis(3_999));
    assert_eq!(w.status(NodeId(0)), Status::Paused);
    w.run();
    assert_eq!(fired_at_ns(&w, 0, 1), vec![4_000_000_000]);
}

#[test]
fn a_crash_drops_in_flight_messages_and_cancels_timers() {
    // n0 sends at 1.0 s, 1.1 s, ... with 100 ms latency. n1 crashes at 1.15 s and restarts at
    // 1.25 s: the notes sent at 1.1 s (in flight at the crash) and 1.2 s (sent while it was
    // down, arriving after the restart) are lost; 1.3 s onwards arrive.
    let mut cfg = config(1, 10, 2);
    cfg.link = latency(const_ms(100));
    cfg.faults.push(at_ms(
        1_150,
        Fault::Crash {
            node: NodeId(1),
            restart_after: Some(Dur::from_millis(100)),
        },
    ));
    let receiver = Probe::with_timers(vec![(ClockKind::Mono, Dur::from_secs(2), 9)]);
    let mut sender = Probe::sender(1, 100, 15);
    sender.send_every = Some(Dur::from_millis(100));
    let mut w = world_with(cfg, vec![sender, receiver]);
    w.run();
    let got = notes(&w, 1);
    // Sent at (k+1) * 100 ms, arriving 100 ms later.
    assert_eq!(got, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14]);
    assert!(
        fired_at_ns(&w, 1, 9).is_empty(),
        "the crash cancelled the timer"
    );
}

#[test]
fn a_restart_keeps_durable_state_and_loses_volatile_state() {
    let mut cfg = config(1, 10, 2);
    cfg.faults.push(at_ms(
        500,
        Fault::Crash {
            node: NodeId(0),
            restart_after: Some(Dur::from_secs(1)),
        },
    ));
    cfg.faults.push(at_ms(
        3_000,
        Fault::Crash {
            node: NodeId(0),
            restart_after: None,
        },
    ));
    cfg.faults
        .push(at_ms(4_000, Fault::Restart { node: NodeId(0) }));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 50), Probe::default()]);
    w.run();
    let restarts: Vec<(u64, Ev)> = records(&w, 0);
    assert_eq!(
        restarts,
        vec![
            (
                1_500,
                Ev::Restarted {
                    durable: 0,
                    volatile: 0
                }
            ),
            (
                4_000,
                Ev::Restarted {
                    durable: 1,
                    volatile: 0
                }
            ),
        ]
    );
    // The sender's volatile schedule died with it: only the notes before the crash arrived.
    assert_eq!(notes(&w, 1), vec![0, 1, 2, 3]);
}

#[test]
fn a_crashed_node_ignores_pauses_and_a_paused_node_can_crash() {
    let mut cfg = config(1, 10, 2);
    cfg.faults.push(at_ms(
        1_000,
        Fault::Pause {
            node: NodeId(1),
            duration: None,
        },
    ));
    cfg.faults.push(at_ms(
        1_500,
        Fault::Crash {
            node: NodeId(1),
            restart_after: None,
        },
    ));
    cfg.faults.push(at_ms(
        2_000,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_secs(1)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 50), Probe::default()]);
    w.run();
    assert_eq!(w.status(NodeId(1)), Status::Down);
    // Notes that waited during the pause died with the crash.
    assert_eq!(notes(&w, 1).len(), 9);
    assert!(w.fault_log()[2].detail.contains("no effect"));
}

#[test]
fn a_fault_on_a_mark_lands_between_the_decision_and_the_action() {
    let mut cfg = config(1, 10, 2);
    cfg.faults.push(ScheduledFault {
        when: When::OnMark {
            node: NodeId(0),
            mark: "before-send".into(),
            occurrence: 3,
            before: None,
        },
        fault: Fault::Pause {
            node: NodeId(0),
            duration: Some(Dur::from_secs(2)),
        },
        role: None,
    });
    let mut sender = Probe::sender(1, 100, 5);
    sender.yield_before_send = true;
    let mut w = world_with(cfg, vec![sender, Probe::default()]);
    w.run();
    let times: Vec<u64> = records(&w, 1).iter().map(|(t, _)| *t).collect();
    // The third send decided at 300 ms happens only after the 2 s pause.
    assert_eq!(times, vec![100, 200, 2_300, 2_400, 2_500]);
}

#[test]
fn a_mark_trigger_lapses_at_its_before_time() {
    // The third mark comes at 300 ms: a trigger that lapses at 300 ms fires nothing, one
    // that lapses a nanosecond later fires.
    let run = |before_ms: u64, extra_ns: u64| {
        let mut cfg = config(1, 10, 2);
        cfg.faults.push(ScheduledFault {
            when: When::OnMark {
                node: NodeId(0),
                mark: "before-send".into(),
                occurrence: 3,
                before: Some(Time::from_millis(before_ms) + Dur::from_nanos(extra_ns)),
            },
            fault: Fault::Pause {
                node: NodeId(0),
                duration: Some(Dur::from_secs(2)),
            },
            role: None,
        });
        let mut sender = Probe::sender(1, 100, 5);
        sender.yield_before_send = true;
        let mut w = world_with(cfg, vec![sender, Probe::default()]);
        w.run();
        let times: Vec<u64> = records(&w, 1).iter().map(|(t, _)| *t).collect();
        (times, w.fault_log().len())
    };
    assert_eq!(run(300, 0), (vec![100, 200, 300, 400, 500], 0));
    assert_eq!(run(300, 1), (vec![100, 200, 2_300, 2_400, 2_500], 2));
}

#[test]
fn running_out_of_events_is_an_explicit_outcome() {
    let mut cfg = config(1, 10, 2);
    cfg.max_events = 5;
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 50), Probe::default()]);
    assert!(matches!(w.run(), Outcome::Exhausted { .. }));
    assert_eq!(w.events(), 5);
}

#[test]
fn a_terminated_process_runs_its_shutdown_at_once_and_is_killed_when_its_grace_ends() {
    // Node 0 is told to stop at 1 s with 2 s of grace; node 1 is paused at 0.5 s for 5 s and
    // told to stop at 1 s with 1 s of grace; node 2 is down when it is told.
    let mut cfg = config(3, 10, 3);
    let terminate = |node, grace_ms| Fault::Terminate {
        node: NodeId(node),
        grace: Dur::from_millis(grace_ms),
    };
    cfg.faults.push(at_ms(1_000, terminate(0, 2_000)));
    cfg.faults.push(at_ms(
        500,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_secs(5)),
        },
    ));
    cfg.faults.push(at_ms(1_000, terminate(1, 1_000)));
    cfg.faults.push(at_ms(
        200,
        Fault::Crash {
            node: NodeId(2),
            restart_after: None,
        },
    ));
    cfg.faults.push(at_ms(1_000, terminate(2, 1_000)));
    let mut w = world_with(cfg, vec![Probe::default(); 3]);
    let terminated = |w: &World<Probe>, node| {
        records(w, node)
            .iter()
            .filter(|(_, e)| matches!(e, Ev::Terminated))
            .map(|(t, _)| *t)
            .collect::<Vec<u64>>()
    };
    w.run_until(Time::from_millis(2_999));
    assert_eq!(terminated(&w, 0), vec![1_000]);
    assert_eq!(w.status(NodeId(0)), Status::Up);
    // Paused, node 1 ran no shutdown; its grace ended at 2 s: it was killed, paused.
    assert!(terminated(&w, 1).is_empty());
    assert_eq!(w.status(NodeId(1)), Status::Down);
    assert!(terminated(&w, 2).is_empty());
    w.run_until(Time::from_millis(3_001));
    assert_eq!(w.status(NodeId(0)), Status::Down);
    let log: Vec<String> = w.fault_log().iter().map(|f| f.detail.clone()).collect();
    assert!(
        log.iter()
            .any(|d| d.contains("terminate n2: no effect, it is down")),
        "{log:?}"
    );
    assert!(
        log.iter()
            .any(|d| d.contains("paused, it runs no shutdown")),
        "{log:?}"
    );
}

#[test]
fn a_watchdog_kills_a_node_paused_past_its_limit_counting_from_when_it_stopped() {
    // Watchdog 1 s, restart after 2 s. n0: paused 3 s at 1 s (killed at 2 s, back at 4 s).
    // n1: paused 0.5 s twice, 0.1 s apart (never killed). n2: paused 0.6 s at 1 s and again
    // for 0.6 s at 1.5 s, still paused: one stall from 1 s, killed at 2 s. n3: no watchdog.
    let mut cfg = config(5, 10, 4);
    for n in 0..3 {
        cfg.nodes[n].watchdog = Some(Watchdog {
            after: Dur::from_secs(1),
            restart_after: Some(Dur::from_secs(2)),
        });
    }
    let pause = |at, node, ms| {
        at_ms(
            at,
            Fault::Pause {
                node: NodeId(node),
                duration: Some(Dur::from_millis(ms)),
            },
        )
    };
    cfg.faults.extend([
        pause(1_000, 0, 3_000),
        pause(1_000, 1, 500),
        pause(1_600, 1, 500),
        pause(1_000, 2, 600),
        pause(1_500, 2, 600),
        pause(1_000, 3, 3_000),
    ]);
    let mut w = world_with(cfg, vec![Probe::default(); 4]);
    w.run();
    let crashes: Vec<(u64, u32)> = w
        .fault_log()
        .iter()
        .filter_map(|f| match f.fault {
            Fault::Crash { node, .. } => Some((f.time.as_nanos() / 1_000_000, node.0)),
            _ => None,
        })
        .collect();
    assert_eq!(crashes, vec![(2_000, 0), (2_000, 2)]);
    let restarts = |node| {
        records(&w, node)
            .iter()
            .filter(|(_, e)| matches!(e, Ev::Restarted { .. }))
            .map(|(t, _)| *t)
            .collect::<Vec<u64>>()
    };
    assert_eq!(restarts(0), vec![4_000]);
    assert_eq!(restarts(1), Vec::<u64>::new());
    assert_eq!(w.status(NodeId(3)), Status::Up);
}
