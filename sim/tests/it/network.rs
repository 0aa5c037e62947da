//! The network: latency, loss, duplication and partitions in drop and hold mode.

use lockstep_sim::{Distribution, Dur, Fault, LinkConfig, NodeId, PartitionMode, Shape, World};

use crate::support::*;

fn isolate_receiver(mode: PartitionMode) -> Fault {
    Fault::Partition {
        shape: Shape::Isolate { node: NodeId(1) },
        mode,
        duration: Some(Dur::from_millis(300)),
    }
}

/// n0 sends notes 0..9 at 100, 200, ... 1000 ms over a 10 ms link; n1 is isolated from
/// 350 ms to 650 ms.
fn partitioned_run(mode: PartitionMode) -> Vec<(u64, u32)> {
    let mut cfg = config(3, 5, 2);
    cfg.link = latency(const_ms(10));
    cfg.faults.push(at_ms(350, isolate_receiver(mode)));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 10), Probe::default()]);
    w.run();
    records(&w, 1)
        .into_iter()
        .map(|(t, e)| match e {
            Ev::Got {
                msg: Msg::Note(n), ..
            } => (t, n),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_drop_partition_delays_a_connection_until_a_retransmission_gets_through() {
    let got = partitioned_run(PartitionMode::Drop);
    let notes: Vec<u32> = got.iter().map(|&(_, n)| n).collect();
    assert_eq!(notes, (0..10).collect::<Vec<_>>(), "TCP loses nothing");
    // Note 3, sent at 400 ms, meets the partition; RTO = 20 ms round trip + 200 ms: the
    // sender's tail loss probe at 620 ms and its first retransmission at 840 ms find the link
    // still cut (until 650 ms... the probe did; the retransmission gets through). Notes 4
    // and 5 wait behind note 3, and arrive with it one latency later.
    assert_eq!(&got[..3], &[(110, 0), (210, 1), (310, 2)]);
    let late: Vec<u64> = got[3..6].iter().map(|&(t, _)| t).collect();
    assert!(late.iter().all(|&t| t == late[0] && t > 650), "{got:?}");
}

/// A note sent at 1 s by n0 to n1, cut off by a drop partition from 0.5 s for `cut_ms`.
fn one_note_into_a_partition(cut_ms: u64, end_secs: u64) -> World<Probe> {
    let mut cfg = config(7, end_secs, 2);
    cfg.faults.push(at_ms(
        500,
        Fault::Partition {
            shape: Shape::Isolate { node: NodeId(1) },
            mode: PartitionMode::Drop,
            duration: Some(Dur::from_millis(cut_ms)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 1_000, 1), Probe::default()]);
    w.run();
    w
}

#[test]
fn a_write_into_a_10_s_partition_arrives_at_the_first_retransmission_after_the_heal() {
    // Sent at 1 s into a cut that heals at 10.5 s; on a link of no latency the RTO is
    // Linux's floor, 200 ms: the tail loss probe 1 RTO after the send, then retransmissions
    // at 2, 4, 8, 16, 32 and 64 RTOs (12.8 s), each timer rounded up by the kernel's timer
    // wheel: the one that gets through fires at 14.336 s, 13.336 s after the write (Linux 6.18
    // over loopback: 13.30-13.52 s, docs/conformance.md).
    let w = one_note_into_a_partition(10_000, 60);
    assert_eq!(records(&w, 1), vec![(14_336, got_note(0, 0))]);
    assert!(
        records(&w, 0).is_empty(),
        "the connection lives: {:?}",
        records(&w, 0)
    );
}

#[test]
fn a_30_minute_partition_aborts_the_connection_when_the_retries_run_out() {
    // tcp_retries2 = 15: aborted at the first firing at least 924.6 s after the send
    // (Linux's tcp_model_timeout): the intervals reach 120 s after 102.4 s, and with the
    // timer wheel's rounding that firing comes at 935.936 s.
    let w = one_note_into_a_partition(1_800_000, 2_000);
    assert!(
        notes(&w, 1).is_empty(),
        "the segment dies with the connection"
    );
    assert_eq!(records(&w, 0), vec![(935_936, Ev::Reset { peer: 1 })]);
}

#[test]
fn the_peer_of_an_aborted_connection_learns_at_its_next_segment_after_the_heal() {
    let mut cfg = config(7, 2_500, 2);
    cfg.faults.push(at_ms(
        500,
        Fault::Partition {
            shape: Shape::Isolate { node: NodeId(1) },
            mode: PartitionMode::Drop,
            duration: Some(Dur::from_secs(1_800)),
        },
    ));
    // n0 writes at 1 s and aborts at 935.9 s; n1 writes at 1000 s, retransmits every 120 s
    // once backed off, and gets through at its first retransmission after the heal at
    // 1800.5 s: n0's kernel no longer knows the connection and answers with a reset, which n1
    // learns at once.
    let mut w = world_with(
        cfg,
        vec![Probe::sender(1, 1_000, 1), Probe::sender(0, 1_000_000, 1)],
    );
    w.run();
    assert_eq!(records(&w, 0), vec![(935_936, Ev::Reset { peer: 1 })]);
    let learned = records(&w, 1);
    assert_eq!(learned.len(), 1, "{learned:?}");
    assert_eq!(learned[0].1, Ev::Reset { peer: 0 });
    assert!(
        (1_800_500..1_930_000).contains(&learned[0].0),
        "{learned:?}"
    );
}

#[test]
fn a_user_timeout_aborts_sooner() {
    let mut cfg = config(7, 60, 2);
    cfg.tcp.user_timeout = Some(Dur::from_secs(5));
    cfg.faults.push(at_ms(500, isolate_receiver_for(30_000)));
    let mut w = world_with(cfg, vec![Probe::sender(1, 1_000, 1), Probe::default()]);
    w.run();
    assert_eq!(records(&w, 0), vec![(6_000, Ev::Reset { peer: 1 })]);
    assert!(notes(&w, 1).is_empty());
}

fn isolate_receiver_for(ms: u64) -> Fault {
    Fault::Partition {
        shape: Shape::Isolate { node: NodeId(1) },
        mode: PartitionMode::Drop,
        duration: Some(Dur::from_millis(ms)),
    }
}

fn got_note(from: u32, n: u32) -> Ev {
    Ev::Got {
        from,
        msg: Msg::Note(n),
    }
}

#[test]
fn a_lossy_link_delays_but_delivers_every_message_in_order() {
    let mut cfg = config(11, 600, 2);
    cfg.link = LinkConfig {
        latency: Distribution::Uniform {
            lo: Dur::from_millis(1),
            hi: Dur::from_millis(50),
        },
        loss_ppm: 300_000,
        duplicate_ppm: 300_000,
    };
    let mut w = world_with(cfg, vec![Probe::sender(1, 20, 2_000), Probe::default()]);
    w.run();
    let got = records(&w, 1);
    let notes: Vec<u32> = got
        .iter()
        .map(|(_, e)| match e {
            Ev::Got {
                msg: Msg::Note(n), ..
            } => *n,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(notes, (0..2_000).collect::<Vec<_>>(), "all, once, in order");
    // Loss costs time: a note arrives later than its send plus the longest latency when a
    // retransmission was needed, and 30 % loss needs many.
    let late = got
        .iter()
        .zip(0u64..)
        .filter(|((t, _), i)| *t > 20 * (i + 1) + 50)
        .count();
    assert!(late > 500, "only {late} of 2,000 notes came late");
    assert!(records(&w, 0).is_empty(), "no connection was aborted");
}

#[test]
fn a_frozen_host_gets_its_bytes_at_the_first_retransmission_after_the_thaw() {
    let mut cfg = config(7, 60, 2);
    cfg.faults.push(at_ms(
        500,
        Fault::Freeze {
            node: NodeId(1),
            duration: Some(Dur::from_secs(10)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 1_000, 1), Probe::default()]);
    w.run();
    // As the 10 s partition: the thaw at 10.5 s, the retransmission at 14.336 s.
    assert_eq!(records(&w, 1), vec![(14_336, got_note(0, 0))]);
}

#[test]
fn a_paused_process_gets_its_bytes_at_the_resume() {
    let mut cfg = config(7, 60, 2);
    cfg.faults.push(at_ms(
        500,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_secs(10)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 1_000, 1), Probe::default()]);
    w.run();
    // Its kernel acknowledged the bytes at 1 s; the process reads them when it runs again.
    assert_eq!(records(&w, 1), vec![(10_500, got_note(0, 0))]);
}

#[test]
fn a_hold_partition_delivers_everything_in_order_after_the_heal() {
    let got = partitioned_run(PartitionMode::Hold);
    let notes: Vec<u32> = got.iter().map(|&(_, n)| n).collect();
    assert_eq!(notes, (0..10).collect::<Vec<_>>());
    // The held ones land one link latency after the heal at 650 ms.
    assert_eq!(&got[3..6], &[(660, 3), (660, 4), (660, 5)]);
}

#[test]
fn held_messages_keep_their_order_under_random_latency() {
    let mut cfg = config(5, 30, 2);
    cfg.link = latency(Distribution::Uniform {
        lo: Dur::from_millis(1),
        hi: Dur::from_millis(50),
    });
    cfg.faults.push(at_ms(
        100,
        Fault::Partition {
            shape: Shape::Isolate { node: NodeId(1) },
            mode: PartitionMode::Hold,
            duration: Some(Dur::from_secs(10)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 20, 400), Probe::default()]);
    w.run();
    let got = notes(&w, 1);
    assert_eq!(got.len(), 400, "nothing is lost in hold mode");
    // Every note from the fifth on was sent during the partition: all were held, and are
    // released in send order although their latencies differ.
    let held: Vec<u32> = got.iter().copied().filter(|&n| n >= 5).collect();
    assert_eq!(
        held,
        (5..400).collect::<Vec<_>>(),
        "held messages keep send order"
    );
}

#[test]
fn a_one_way_partition_blocks_one_direction_only() {
    let mut cfg = config(1, 5, 2);
    cfg.faults.push(at_ms(
        0,
        Fault::Partition {
            shape: Shape::OneWay {
                from: vec![NodeId(0)],
                to: vec![NodeId(1)],
            },
            mode: PartitionMode::Drop,
            duration: None,
        },
    ));
    let mut w = world_with(
        cfg,
        vec![Probe::sender(1, 100, 5), Probe::sender(0, 100, 5)],
    );
    w.run();
    assert!(notes(&w, 1).is_empty());
    assert_eq!(notes(&w, 0), vec![0, 1, 2, 3, 4]);
}

#[test]
fn heal_removes_every_partition_and_stacked_partitions_need_both_healed() {
    let mut cfg = config(1, 5, 2);
    let isolate = |mode| Fault::Partition {
        shape: Shape::Isolate { node: NodeId(1) },
        mode,
        duration: None,
    };
    cfg.faults.push(at_ms(150, isolate(PartitionMode::Drop)));
    cfg.faults.push(at_ms(
        150,
        Fault::Partition {
            shape: Shape::Split {
                groups: vec![vec![NodeId(0)], vec![NodeId(1)]],
            },
            mode: PartitionMode::Drop,
            duration: Some(Dur::from_millis(300)),
        },
    ));
    cfg.faults.push(at_ms(650, Fault::Heal));
    let mut w = world_with(cfg, vec![Probe::datagrams(1, 100, 10), Probe::default()]);
    w.run();
    // The split heals itself at 450 ms but the isolation still blocks until the heal: the
    // datagrams that meet it are lost.
    assert_eq!(notes(&w, 1), vec![0, 6, 7, 8, 9]);
}

#[test]
fn loss_and_duplication_follow_their_probabilities() {
    let mut cfg = config(9, 200, 2);
    cfg.link = LinkConfig {
        latency: const_ms(1),
        loss_ppm: 100_000,
        duplicate_ppm: 200_000,
    };
    let mut w = world_with(cfg, vec![Probe::datagrams(1, 10, 10_000), Probe::default()]);
    w.run();
    let got = notes(&w, 1).len();
    // Datagrams: expected 10,000 * 0.9 * 1.2 = 10,800.
    assert!((10_500..11_100).contains(&got), "{got} delivered");
}

#[test]
fn a_delay_fault_slows_only_its_links_for_its_duration() {
    let mut cfg = config(1, 5, 2);
    cfg.link = latency(const_ms(1));
    cfg.faults.push(at_ms(
        250,
        Fault::Delay {
            from: vec![NodeId(0)],
            to: vec![NodeId(1)],
            extra: Dur::from_millis(1_000),
            duration: Some(Dur::from_millis(100)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 5), Probe::default()]);
    w.run();
    let times: Vec<u64> = records(&w, 1).iter().map(|(t, _)| *t).collect();
    // The note sent at 300 ms takes 1.001 s, and on a TCP connection the later ones wait
    // behind it.
    assert_eq!(times, vec![101, 201, 1_301, 1_301, 1_301]);
    assert_eq!(notes(&w, 1), vec![0, 1, 2, 3, 4]);
}

#[test]
fn messages_sent_after_a_heal_do_not_overtake_the_released_ones() {
    // Hold partition from 100 ms to 2 s; n0 keeps sending every 10 ms until 4 s. A TCP
    // stream delivers what it buffered before anything sent later.
    let mut cfg = config(11, 30, 2);
    cfg.link = latency(Distribution::Uniform {
        lo: Dur::from_millis(1),
        hi: Dur::from_millis(50),
    });
    cfg.faults.push(at_ms(
        100,
        Fault::Partition {
            shape: Shape::Isolate { node: NodeId(1) },
            mode: PartitionMode::Hold,
            duration: Some(Dur::from_millis(1_900)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 10, 400), Probe::default()]);
    w.run();
    let got = notes(&w, 1);
    assert_eq!(got.len(), 400, "nothing is lost in hold mode");
    let pos = |n: u32| got.iter().position(|&m| m == n).expect("received");
    // Note k is sent at (k + 1) * 10 ms: 9..=194 surely arrived during the partition, 199 on
    // were sent after the heal.
    let last_held = (9..=194).map(pos).max().expect("held notes");
    let first_after = (199..400).map(pos).min().expect("later notes");
    assert!(
        last_held < first_after,
        "a note sent after the heal overtook a held one: {got:?}"
    );
}

fn degrade(from: u32, to: u32, loss_ppm: u32, duplicate_ppm: u32, ms: Option<u64>) -> Fault {
    Fault::Degrade {
        from: vec![NodeId(from)],
        to: vec![NodeId(to)],
        loss_ppm,
        duplicate_ppm,
        duration: ms.map(Dur::from_millis),
    }
}

/// How many of `notes` there are, and how many of them are repeats.
fn delivered_and_duplicated(notes: &[u32]) -> (usize, usize) {
    let mut distinct = notes.to_vec();
    distinct.sort();
    distinct.dedup();
    (notes.len(), notes.len() - distinct.len())
}

#[test]
fn a_degrade_loses_and_duplicates_about_its_share() {
    // 10,000 notes on a perfect link degraded for the whole run by 20% loss and 10%
    // duplication: about 8,000 arrive, about 800 of them twice.
    let mut cfg = config(9, 200, 2);
    cfg.link = latency(const_ms(1));
    cfg.faults
        .push(at_ms(0, degrade(0, 1, 200_000, 100_000, None)));
    let mut w = world_with(cfg, vec![Probe::datagrams(1, 10, 10_000), Probe::default()]);
    w.run();
    let (got, twice) = delivered_and_duplicated(&notes(&w, 1));
    let distinct = got - twice;
    assert!(
        (7_800..8_200).contains(&distinct),
        "{distinct} distinct notes"
    );
    assert!((720..880).contains(&twice), "{twice} duplicated");
    // The count is a function of the seed.
    assert_eq!((distinct, twice), (7_932, 798), "seed 9");
}

#[test]
fn a_degrade_combines_with_the_links_own_loss_as_independent_chances() {
    // The link loses 50% on its own and the degrade another 50%: 1 - 0.5 * 0.5 = 75% lost.
    let mut cfg = config(3, 200, 2);
    cfg.link = LinkConfig {
        latency: const_ms(1),
        loss_ppm: 500_000,
        duplicate_ppm: 0,
    };
    cfg.faults.push(at_ms(0, degrade(0, 1, 500_000, 0, None)));
    let mut w = world_with(cfg, vec![Probe::datagrams(1, 10, 10_000), Probe::default()]);
    w.run();
    let got = notes(&w, 1).len();
    assert!((2_350..2_650).contains(&got), "{got} delivered");
}

#[test]
fn overlapping_degrades_stack_and_each_ends_at_its_own_time() {
    // A note every ms (note k sent at k + 1 ms). Degrade A loses 50% from 1 s to 3 s, B 50%
    // from 2 s to 4 s: about half is lost in [1, 2) s, three quarters in [2, 3), half in
    // [3, 4), and nothing before or after.
    let mut cfg = config(5, 10, 2);
    cfg.link = latency(const_ms(1));
    cfg.faults
        .push(at_ms(1_000, degrade(0, 1, 500_000, 0, Some(2_000))));
    cfg.faults
        .push(at_ms(2_000, degrade(0, 1, 500_000, 0, Some(2_000))));
    let mut w = world_with(cfg, vec![Probe::datagrams(1, 1, 6_000), Probe::default()]);
    w.run();
    let got = notes(&w, 1);
    // Notes sent in [s, s + 1) seconds, by send time.
    let per_second: Vec<usize> = (0..6u32)
        .map(|s| {
            got.iter()
                .filter(|&&k| (s * 1_000..(s + 1) * 1_000).contains(&(k + 1)))
                .count()
        })
        .collect();
    // Exactly on time: the last undegraded note is sent at 999 ms, the first after at 4 s.
    assert_eq!(per_second[0], 999, "note 0 is sent at 1 ms");
    assert!(got.contains(&998) && got.contains(&3_999), "{got:?}");
    assert_eq!(per_second[4], 1_000);
    assert_eq!(per_second[5], 1_000);
    for (s, lo, hi) in [(1, 450, 550), (2, 200, 300), (3, 450, 550)] {
        let n = per_second[s];
        assert!((lo..hi).contains(&n), "second {s}: {n} of 1,000 arrived");
    }
    assert_eq!(&per_second[1..4], &[509, 262, 488], "seed 5");
    let log: Vec<(u64, bool, &str)> = w
        .fault_log()
        .iter()
        .map(|f| (f.time.as_nanos() / 1_000_000, f.ended, f.detail.as_str()))
        .collect();
    assert_eq!(
        log,
        vec![
            (
                1_000,
                false,
                "degrade {n0} -> {n1}: loss +50%, duplicate +0% for 2s"
            ),
            (
                2_000,
                false,
                "degrade {n0} -> {n1}: loss +50%, duplicate +0% for 2s"
            ),
            (3_000, true, "degrade {n0} -> {n1} ends"),
            (4_000, true, "degrade {n0} -> {n1} ends"),
        ]
    );
}

#[test]
fn a_full_loss_degrade_cuts_only_its_own_direction_for_its_duration() {
    // n1 echoes every note; n0 -> n1 loses everything from 100 ms for 200 ms, n1 -> n0 is
    // untouched. Notes sent at 100..=299 ms are lost, and only they.
    let mut cfg = config(1, 2, 2);
    cfg.link = latency(const_ms(1));
    cfg.faults
        .push(at_ms(100, degrade(0, 1, 1_000_000, 0, Some(200))));
    let echo = Probe {
        echo: true,
        ..Probe::default()
    };
    let mut w = world_with(cfg, vec![Probe::datagrams(1, 10, 50), echo]);
    w.run();
    let expect: Vec<u32> = (0..50).filter(|k| !(9..=28).contains(k)).collect();
    assert_eq!(notes(&w, 1), expect);
    let pongs = records(&w, 0)
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                Ev::Got {
                    msg: Msg::Pong(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(pongs, expect.len(), "every note that arrived was answered");
}

#[test]
fn a_degrade_on_other_links_draws_nothing_for_this_one() {
    // A lossy, duplicating n0 -> n1 link gives the same deliveries whether or not another
    // link (n2 -> n1, which carries nothing) is degraded: the degrade draws nothing extra.
    let run = |degraded: bool| {
        let mut cfg = config(4, 20, 3);
        cfg.link = LinkConfig {
            latency: Distribution::Uniform {
                lo: Dur::from_millis(1),
                hi: Dur::from_millis(20),
            },
            loss_ppm: 100_000,
            duplicate_ppm: 100_000,
        };
        if degraded {
            cfg.faults
                .push(at_ms(50, degrade(2, 1, 300_000, 300_000, Some(5_000))));
        }
        let probes = vec![
            Probe::sender(1, 5, 2_000),
            Probe::default(),
            Probe::default(),
        ];
        let mut w = world_with(cfg, probes);
        w.run();
        records(&w, 1)
    };
    let (plain, degraded) = (run(false), run(true));
    assert!(plain.len() > 1_500, "{} records", plain.len());
    assert_eq!(plain, degraded);
}

#[test]
fn a_short_freeze_inside_a_long_pause_thaws_the_host_at_its_own_end() {
    let mut cfg = config(7, 30, 2);
    cfg.trace = true;
    cfg.faults.push(at_ms(
        500,
        Fault::Pause {
            node: NodeId(1),
            duration: Some(Dur::from_secs(20)),
        },
    ));
    cfg.faults.push(at_ms(
        1_000,
        Fault::Freeze {
            node: NodeId(1),
            duration: Some(Dur::from_secs(2)),
        },
    ));
    let mut w = world_with(cfg, vec![Probe::sender(1, 1_500, 1), Probe::default()]);
    w.run();
    // Sent at 1.5 s into the frozen host: retransmitted at 1.7, 1.9, 2.3 s (still frozen)
    // and 3.1 s, after the thaw at 3 s, when its kernel takes the bytes and keeps them for the
    // process, which reads them at its resume at 20.5 s.
    let waits: Vec<u64> = w
        .trace()
        .expect("traced")
        .iter()
        .filter(|e| e.text.contains("waits for resume"))
        .map(|e| e.time.as_nanos() / 1_000_000)
        .collect();
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert!((3_000..3_200).contains(&waits[0]), "{waits:?}");
    assert_eq!(records(&w, 1), vec![(20_500, got_note(0, 0))]);
}
