//! The network: latency, loss, duplication and partitions in drop and hold mode.

use lockstep_sim::{Distribution, Dur, Fault, LinkConfig, NodeId, PartitionMode, Shape};

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
fn a_drop_partition_loses_what_arrives_while_it_lasts() {
    let got = partitioned_run(PartitionMode::Drop);
    let notes: Vec<u32> = got.iter().map(|&(_, n)| n).collect();
    // Notes sent at 400, 500 and 600 ms arrive inside the partition.
    assert_eq!(notes, vec![0, 1, 2, 6, 7, 8, 9]);
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
    let mut w = world_with(cfg, vec![Probe::sender(1, 100, 10), Probe::default()]);
    w.run();
    // The split heals itself at 450 ms but the isolation still blocks until the heal.
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
    let mut w = world_with(cfg, vec![Probe::sender(1, 10, 10_000), Probe::default()]);
    w.run();
    let got = notes(&w, 1).len();
    // Expected 10,000 * 0.9 * 1.2 = 10,800.
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
    // The note sent at 300 ms takes 1.001 s and arrives after the later ones.
    assert_eq!(times, vec![101, 201, 401, 501, 1_301]);
    assert_eq!(notes(&w, 1), vec![0, 1, 3, 4, 2]);
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
