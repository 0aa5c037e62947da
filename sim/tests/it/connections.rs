//! Every link is a TCP connection: a crash resets the dead process's connections, a message
//! to a crashed or restarted process is refused, and a pause or a partition stays silence.

use lockstep_sim::{Dur, Fault, NodeId, PartitionMode, Shape};

use crate::support::*;

/// Times (ms) at which `node` learned of a reset from `peer`.
fn resets(w: &lockstep_sim::World<Probe>, node: u32, peer: u32) -> Vec<u64> {
    records(w, node)
        .into_iter()
        .filter(|(_, e)| *e == Ev::Reset { peer })
        .map(|(t, _)| t)
        .collect()
}

fn crash(node: u32, restart_after_ms: Option<u64>) -> Fault {
    Fault::Crash {
        node: NodeId(node),
        restart_after: restart_after_ms.map(Dur::from_millis),
    }
}

#[test]
fn a_crash_resets_the_peers_it_talked_to_one_latency_later_and_refuses_what_follows() {
    // n0 sends n1 a note every 100 ms from 100 ms (5 ms links); n2 never talks to n1.
    // n1 crashes at 1,000 ms for good: n0 hears at 1,005 ms, and each note it sends from then
    // (1,000 ms, the crash's instant, 1,100 ms, 1,200 ms) is refused: a reset one round trip
    // after the send.
    let mut cfg = config(1, 2, 3);
    cfg.link = latency(const_ms(5));
    cfg.faults.push(at_ms(1_000, crash(1, None)));
    let probes = vec![
        Probe::sender(1, 100, 12),
        Probe::default(),
        Probe::default(),
    ];
    let mut w = world_with(cfg, probes);
    w.run();
    assert_eq!(resets(&w, 0, 1), vec![1_005, 1_010, 1_110, 1_210]);
    assert!(resets(&w, 2, 1).is_empty(), "n2 had no connection to n1");
    assert!(records(&w, 1).iter().all(|(t, _)| *t < 1_000));
}

#[test]
fn a_pause_and_a_drop_partition_reset_nothing() {
    // n1 is paused from 1,000 ms for 500 ms: n0's notes wait, nothing is reset.
    let mut cfg = config(1, 3, 2);
    cfg.link = latency(const_ms(5));
    cfg.faults.push(at_ms(
        1_000,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_millis(500)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 20), Probe::default()]);
    w.run();
    assert!(resets(&w, 0, 1).is_empty());
    assert_eq!(notes(&w, 1), (0..20).collect::<Vec<_>>());

    // n1 is cut off (drop) from 900 ms to 1,500 ms and crashes at 1,000 ms, restarting at
    // 2,000 ms: the crash's reset never reaches n0. n0 retransmits the notes sent into the
    // cut (RTO 210 ms: 10 ms round trip + 200 ms, doubling) until one gets through after the
    // heal, at 1,765 ms: they reach n1's host while n1 is down and are refused, as are the
    // notes sent after.
    let mut cfg = config(1, 3, 2);
    cfg.link = latency(const_ms(5));
    cfg.faults.push(at_ms(
        900,
        Fault::Partition {
            shape: Shape::Isolate { node: NodeId(1) },
            mode: PartitionMode::Drop,
            duration: Some(Dur::from_millis(600)),
        },
    ));
    cfg.faults.push(at_ms(1_000, crash(1, Some(1_000))));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 25), Probe::default()]);
    w.run();
    assert_eq!(
        resets(&w, 0, 1),
        vec![
            1_770, 1_770, 1_770, 1_770, 1_770, 1_770, 1_770, 1_770, 1_770, 1_810, 1_910
        ],
        "only notes that reached n1's host while it was down are refused"
    );
}

#[test]
fn a_note_meant_for_the_process_before_a_restart_is_refused_and_later_ones_arrive() {
    // 100 ms links: the note sent at 1,000 ms is in flight when n1 crashes at 1,050 ms and
    // restarts at 1,080 ms; it reaches the new process, which never had that connection.
    let mut cfg = config(1, 3, 2);
    cfg.link = latency(const_ms(100));
    cfg.faults.push(at_ms(1_050, crash(1, Some(30))));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 15), Probe::default()]);
    w.run();
    // The crash's own reset at 1,150 ms, then the refusal of the 1,000 ms note (arrived at
    // 1,100 ms) at 1,200 ms.
    assert_eq!(resets(&w, 0, 1), vec![1_150, 1_200]);
    let got = notes(&w, 1);
    assert!(got.contains(&10) && !got.contains(&9), "{got:?}");
}

#[test]
fn a_reset_waits_for_the_heal_on_a_hold_link_and_for_the_resume_at_a_paused_peer() {
    // n1 is cut off in hold mode from 900 ms to 1,500 ms and crashes at 1,000 ms: its reset
    // reaches n0 after the heal. n0 itself is paused from 1,400 ms to 2,000 ms, so it learns
    // at its resume.
    let mut cfg = config(1, 3, 2);
    cfg.link = latency(const_ms(5));
    cfg.faults.push(at_ms(
        900,
        Fault::Partition {
            shape: Shape::Isolate { node: NodeId(1) },
            mode: PartitionMode::Hold,
            duration: Some(Dur::from_millis(600)),
        },
    ));
    cfg.faults.push(at_ms(1_000, crash(1, None)));
    cfg.faults.push(at_ms(
        1_400,
        Fault::Pause {
            node: NodeId(0),
            duration: Some(Dur::from_millis(600)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 8), Probe::default()]);
    w.run();
    assert_eq!(resets(&w, 0, 1), vec![2_000]);
}
