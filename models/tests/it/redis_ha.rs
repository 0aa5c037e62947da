//! Redis persistence, replication and Sentinel (docs/families/redis.md): what survives each kind
//! of crash, the restart delay, a promoted replica's clock and Sentinel's timing.

use lockstep_check::{Validity, Verdict};
use lockstep_models::Node;
use lockstep_models::redis::persistence::SavePoint;
use lockstep_models::redis::{
    CrashLoses, LOCK_KEY, Persistence, Redis, RedisNode, RedisServer, Role, SentinelConfig,
    WaitConfig,
};
use lockstep_models::system::SystemSpec;
use lockstep_sim::{
    Distribution, Dur, Fault, NodeId, PartitionMode, ScheduledFault, Shape, Time, TraceKind, When,
    World,
};

use crate::support::*;

/// A primary with `replicas` replicas lagging 50-200 ms and, with `sentinels`, Sentinel
/// (down-after 2 s, failover timeout 10 s); clients think 0.5-1 s and work 8 s.
fn ha_spec(replicas: u32, sentinels: u32) -> SystemSpec<Redis> {
    let mut spec = redis_spec();
    spec.family.server.replication_lag = Distribution::Uniform {
        lo: ms(50),
        hi: ms(200),
    };
    spec.family.replicas = replicas;
    spec.family.sentinel = (sentinels > 0).then(|| {
        let config = SentinelConfig {
            servers: Vec::new(),
            sentinels: Vec::new(),
            quorum: 2,
            down_after: ms(2_000),
            failover_timeout: ms(10_000),
        };
        (sentinels, config)
    });
    spec.workload.think = Distribution::Uniform {
        lo: ms(500),
        hi: ms(1_000),
    };
    spec.workload.work = Distribution::Constant(ms(8_000));
    spec
}

/// Runs `spec` until `until_ms` with 1-5 ms links, the faults, wall-clock offsets and a trace.
fn world(
    spec: &SystemSpec<Redis>,
    seed: u64,
    until_ms: u64,
    offsets_ms: &[(&str, i64)],
    faults: Vec<ScheduledFault>,
) -> (World<Node<Redis>>, Verdict) {
    // Its end in milliseconds, where the shared builder takes whole seconds.
    let mut w = crate::support::world(spec, seed, 0, |cfg| {
        cfg.end = Time::from_millis(until_ms);
        for node in &mut cfg.nodes {
            if let Some((_, off)) = offsets_ms.iter().find(|(n, _)| *n == node.name) {
                node.wall_offset_ns = off * 1_000_000;
            }
        }
        cfg.faults = faults;
        cfg.trace = true;
    });
    let outcome = w.run();
    let verdict = verdict(&w, outcome);
    (w, verdict)
}

fn server(w: &World<Node<Redis>>, id: u32) -> &RedisServer {
    match w.process(NodeId(id)) {
        Node::Service(RedisNode::Server(s)) => s,
        other => panic!("node {id} is {other:?}"),
    }
}

#[test]
fn a_replica_stores_the_primarys_absolute_deadline_whatever_its_own_clock() {
    // redis-2's wall clock is 6 s ahead; it holds the primary's PXAT, not its own now + TTL.
    let spec = ha_spec(1, 0);
    let (w, _) = world(&spec, 3, 3_000, &[("redis-2", 6_000)], vec![]);
    let primary = server(&w, 0)
        .peek(LOCK_KEY)
        .expect("a client holds the lock");
    assert_eq!(server(&w, 1).peek(LOCK_KEY), Some(primary));
    assert_eq!(server(&w, 1).role(), Role::Replica { of: NodeId(0) });
}

/// R1 with two replicas and WAIT 1, redis-1 crashing at client-1's grant; both replicas'
/// wall clocks `offset_ms` ahead.
fn failover_with_wait(seed: u64, offset_ms: i64) -> (World<Node<Redis>>, Verdict) {
    let mut spec = ha_spec(2, 3);
    spec.family.client.wait = Some(WaitConfig {
        replicas: 1,
        timeout: ms(1_000),
    });
    let client_1 = NodeId(7); // redis-1..3, sentinel-1..3, storage, client-1
    let crash = Fault::Crash {
        node: NodeId(0),
        restart_after: None,
    };
    let faults = vec![on_mark(client_1, "granted", crash)];
    let offsets = [("redis-2", offset_ms), ("redis-3", offset_ms)];
    world(&spec, seed, 40_000, &offsets, faults)
}

fn promoted(w: &World<Node<Redis>>) -> usize {
    (1..=2)
        .filter(|&i| server(w, i).role() == Role::Master)
        .count()
}

#[test]
fn a_promoted_replica_with_its_clock_ahead_expires_the_lock_early() {
    for seed in 1..=5 {
        // The control: WAIT put the key on a replica, and equal clocks keep it safe.
        let (w, v) = failover_with_wait(seed, 0);
        assert_eq!(promoted(&w), 1, "seed {seed}");
        assert_eq!(v.mutual_exclusion, Validity::Valid, "seed {seed}: {v:?}");
        // Replicas' clocks 6 s ahead: the promoted one judges the primary's deadline on its
        // own clock, the key expires 6 s early, and client-2 acquires while client-1 still
        // works.
        let (w, v) = failover_with_wait(seed, 6_000);
        assert_eq!(promoted(&w), 1, "seed {seed}");
        assert!(v.double_holders.pairs >= 1, "seed {seed}: {v:?}");
    }
}

/// One client, a 5 s section; the server crashes at the first grant and restarts 100 ms
/// later. Returns the server's lock key 500 ms into the run, after the restart.
fn key_after_crash(persistence: Persistence, loses: CrashLoses) -> Option<(u64, Option<i64>)> {
    let mut spec = redis_spec();
    spec.clients = 1;
    spec.workload.work = Distribution::Constant(Dur::from_secs(5));
    spec.family.server.persistence = persistence;
    spec.family.server.crash_loses = loses;
    let crash = Fault::Crash {
        node: REDIS,
        restart_after: Some(ms(100)),
    };
    // The first grant comes within 0.2 s: within the startup second, where `aof_last_fsync`
    // starts, so everysec has not fsynced it.
    let (w, _) = world(
        &spec,
        1,
        500,
        &[],
        vec![on_mark(CLIENT_1, "granted", crash)],
    );
    server(&w, 0).peek(LOCK_KEY)
}

#[test]
fn a_power_loss_with_aof_everysec_loses_the_writes_since_the_last_fsync_and_always_loses_none() {
    use CrashLoses::{Power, Process};
    assert_eq!(key_after_crash(Persistence::AofEverysec, Power), None);
    assert!(
        key_after_crash(Persistence::AofEverysec, Process).is_some(),
        "the page cache survives a process crash"
    );
    assert!(key_after_crash(Persistence::AofAlways, Power).is_some());
    assert_eq!(key_after_crash(Persistence::None, Process), None);
}

/// One client with `appendfsync everysec`, thinking `think_ms` before each 5 s section; the
/// machine loses power at `crash` and is back 100 ms later. Whether the lock key is there at
/// `until_ms`.
fn everysec_key_after_power_loss(think_ms: u64, crash: When, until_ms: u64) -> bool {
    let mut spec = redis_spec();
    spec.clients = 1;
    spec.workload.think = Distribution::Constant(ms(think_ms));
    spec.workload.work = Distribution::Constant(Dur::from_secs(5));
    spec.family.server.persistence = Persistence::AofEverysec;
    spec.family.server.crash_loses = CrashLoses::Power;
    let fault = Fault::Crash {
        node: REDIS,
        restart_after: Some(ms(100)),
    };
    let faults = vec![ScheduledFault {
        when: crash,
        fault,
        role: None,
    }];
    let (w, _) = world(&spec, 1, until_ms, &[], faults);
    server(&w, 0).peek(LOCK_KEY).is_some()
}

fn grant(occurrence: u32) -> When {
    When::OnMark {
        node: CLIENT_1,
        mark: "granted".into(),
        occurrence,
        before: None,
    }
}

#[test]
fn everysec_fsyncs_a_write_at_once_when_the_last_fsync_is_a_second_old() {
    // `aof_last_fsync` starts at the startup second: a SET 0.6 s in waits, one 1.2 s in is
    // fsynced right after its write.
    assert!(!everysec_key_after_power_loss(600, grant(1), 1_000));
    assert!(everysec_key_after_power_loss(1_200, grant(1), 1_600));
    // The release 5 s later is fsynced at once; a SET 0.6 s after it waits and is lost, one
    // 1.2 s after it is fsynced at once.
    assert!(!everysec_key_after_power_loss(600, grant(2), 6_500));
    assert!(everysec_key_after_power_loss(1_200, grant(2), 7_800));
}

#[test]
fn everysec_fsyncs_waiting_writes_once_their_second_is_up() {
    // The SET 0.6 s in waits for the end of the startup second, then is fsynced though
    // nothing else is written.
    let at = |ms_: u64| When::At(Time::from_millis(ms_));
    assert!(!everysec_key_after_power_loss(600, at(990), 1_200));
    assert!(everysec_key_after_power_loss(600, at(1_010), 1_200));
}

#[test]
fn rdb_restores_the_last_snapshot_only() {
    let rdb = || Persistence::Rdb {
        save: vec![SavePoint {
            seconds: 1,
            changes: 1,
        }],
    };
    // Crashed at once: no snapshot yet.
    assert_eq!(key_after_crash(rdb(), CrashLoses::Process), None);
    // Crashed at 3 s: the snapshot of about 2 s (more than 1 s after the start) has the key.
    let mut spec = redis_spec();
    spec.clients = 1;
    spec.workload.work = Distribution::Constant(Dur::from_secs(5));
    spec.family.server.persistence = rdb();
    let crash = Fault::Crash {
        node: REDIS,
        restart_after: Some(ms(100)),
    };
    let (w, _) = world(&spec, 1, 3_500, &[], vec![at(3_000, crash)]);
    assert!(server(&w, 0).peek(LOCK_KEY).is_some());
}

#[test]
fn a_restart_delay_keeps_the_server_silent_until_it_passes() {
    let mut spec = redis_spec();
    spec.family.server.restart_delay = ms(3_000);
    let crash = Fault::Crash {
        node: REDIS,
        restart_after: Some(ms(100)),
    };
    let (w, _) = world(&spec, 1, 8_000, &[], vec![at(1_000, crash)]);
    let replies: Vec<Time> = w
        .trace()
        .expect("traced")
        .iter()
        .filter(|e| e.kind == TraceKind::Deliver && e.text.starts_with("redis -> "))
        .map(|e| e.time)
        .collect();
    let between = |lo: u64, hi: u64| {
        replies
            .iter()
            .filter(|&&t| Time::from_millis(lo) < t && t < Time::from_millis(hi))
            .count()
    };
    assert!(between(0, 1_000) > 0, "it answers before the crash");
    assert_eq!(
        between(1_000, 4_100),
        0,
        "silent while down and for 3 s after"
    );
    assert!(between(4_110, 8_000) > 0, "it answers again");
}

#[test]
fn a_primary_inside_its_restart_delay_serves_no_replica() {
    // redis-1 (no persistence) crashes at 1 s and restarts 100 ms later with an empty
    // keyspace and a 3 s restart delay. Its replica's acknowledgements and a reconnection
    // would otherwise get a reset and then a full resync of the empty dataset from a server
    // that accepts no connection: the replica keeps client-1's key until redis-1 opens.
    let mut spec = ha_spec(1, 0);
    spec.family.server.restart_delay = ms(3_000);
    let crash = Fault::Crash {
        node: NodeId(0),
        restart_after: Some(ms(100)),
    };
    let (w, _) = world(&spec, 1, 4_050, &[], vec![at(1_000, crash)]);
    assert_eq!(server(&w, 0).peek(LOCK_KEY), None, "redis-1 lost its keys");
    assert!(
        server(&w, 1).peek(LOCK_KEY).is_some(),
        "redis-2 still has client-1's key"
    );
    let from_redis_1 = w
        .trace()
        .expect("traced")
        .iter()
        .filter(|e| e.kind == TraceKind::Deliver && e.text.starts_with("redis-1 -> redis-2"))
        .filter(|e| Time::from_millis(1_100) < e.time)
        .count();
    assert_eq!(
        from_redis_1, 0,
        "nothing from redis-1 to redis-2 while it is closed"
    );
}

/// Three servers and three sentinels; redis-1 and redis-2 are cut off from the rest from 3 s
/// to 23 s, and the sentinels promote redis-3. Their REPLICAOF to redis-2, sent into the cut,
/// waits in TCP's retransmission. Returns when redis-1 and redis-2 first receive `REPLICAOF
/// redis-3` after the heal, when a sentinel first hears redis-1 again (its links are back at
/// their first retransmission after the heal, not at the heal), and the run.
fn reconfiguration_after_heal(
    extra: Vec<ScheduledFault>,
) -> (Time, Time, Time, World<Node<Redis>>) {
    let spec = ha_spec(2, 3);
    let split = Fault::Partition {
        shape: Shape::Split {
            groups: vec![
                vec![NodeId(0), NodeId(1)],
                vec![NodeId(2), NodeId(3), NodeId(4), NodeId(5)],
            ],
        },
        mode: PartitionMode::Drop,
        duration: Some(ms(20_000)),
    };
    let mut faults = vec![at(3_000, split)];
    faults.extend(extra);
    let (w, _) = world(&spec, 1, 60_000, &[], faults);
    let first = |to: &str| {
        let pat = format!("-> {to}: Service(Sentinel(ReplicaOf {{ primary: Some(NodeId(2)) }}))");
        w.trace()
            .expect("traced")
            .iter()
            .find(|e| {
                e.kind == TraceKind::Deliver
                    && e.time > Time::from_millis(23_000)
                    && e.text.contains(&pat)
            })
            .map(|e| e.time)
            .unwrap_or_else(|| panic!("{to} is never sent REPLICAOF redis-3"))
    };
    let (r1, r2) = (first("redis-1"), first("redis-2"));
    let heard = w
        .trace()
        .expect("traced")
        .iter()
        .find(|e| {
            e.kind == TraceKind::Deliver
                && e.time > Time::from_millis(23_000)
                && e.text.starts_with("redis-1 -> sentinel")
        })
        .map(|e| e.time)
        .expect("the sentinels hear redis-1 again");
    (r1, r2, heard, w)
}

#[test]
fn sentinel_converts_an_old_primary_after_8_s_and_fixes_a_replica_after_the_failover_timeout() {
    let (r1, r2, heard, w) = reconfiguration_after_heal(vec![]);
    // The links are back at their first retransmission after the heal: several seconds
    // after it, as the cut lasted 20 s.
    assert!(
        Time::from_millis(23_000) < heard && heard < Time::from_millis(36_000),
        "heard at {heard:?}"
    );
    // redis-1 reports itself primary from then on: +convert-to-slave 8 s later.
    let after = r1.as_nanos().saturating_sub(heard.as_nanos());
    assert!(
        (8_000_000_000..9_500_000_000).contains(&after),
        "redis-1 at {r1:?}, heard at {heard:?}"
    );
    // The REPLICAOF sent to redis-2 during the cut is not lost: TCP delivers it at the
    // sentinel's first retransmission after the heal, before any +fix-slave-config.
    assert!(
        Time::from_millis(23_000) < r2 && r2 < r1,
        "redis-2 at {r2:?}, redis-1 at {r1:?}"
    );
    for i in 0..=1 {
        assert_eq!(server(&w, i).role(), Role::Replica { of: NodeId(2) });
    }
}

#[test]
fn sentinel_reconfigures_no_server_that_went_down_within_the_wait() {
    // redis-1 is cut off again from 31 s to 34 s, after the sentinels heard it again (about
    // 29 s), long enough for them to see it down (SDOWN): its conversion, due about 8 s after
    // they heard it, waits: it comes more than the cut's 3 s later than without it.
    let again = Fault::Partition {
        shape: Shape::Isolate { node: NodeId(0) },
        mode: PartitionMode::Drop,
        duration: Some(ms(3_000)),
    };
    let (plain, _, heard, _) = reconfiguration_after_heal(vec![]);
    assert!(heard < Time::from_millis(31_000), "{heard:?}");
    let (r1, _, _, _) = reconfiguration_after_heal(vec![at(31_000, again)]);
    assert!(
        r1.as_nanos() > plain.as_nanos() + 3_000_000_000,
        "redis-1 at {r1:?}, without the second cut at {plain:?}"
    );
}

/// When a sentinel first starts a failover (`+try-failover`) after `fault` hits the primary
/// of a primary, two replicas and three sentinels (quorum 2, down-after 5 s) at 10 s: seconds
/// after the fault, to 5 ms.
fn failover_starts_after(fault: Fault, seed: u64) -> f64 {
    let mut spec = ha_spec(2, 3);
    if let Some((_, config)) = &mut spec.family.sentinel {
        config.down_after = ms(5_000);
    }
    let faults = vec![at(10_000, fault)];
    let mut w = crate::support::world(&spec, seed, 0, |cfg| {
        cfg.end = Time::from_millis(30_000);
        cfg.faults = faults;
    });
    let sentinels = [NodeId(3), NodeId(4), NodeId(5)];
    let mut t = 10_000;
    while t < 30_000 {
        w.run_until(Time::from_millis(t));
        let started = sentinels.iter().any(|&s| match w.process(s) {
            Node::Service(RedisNode::Sentinel(s)) => s.failing_over(),
            other => panic!("{s:?} is {other:?}"),
        });
        if started {
            return (t - 10_000) as f64 / 1e3;
        }
        t += 5;
    }
    panic!("seed {seed}: no failover within 20 s");
}

/// Real Sentinel (redis-server 7.0, down-after 5 s) starts a failover 5.16 s after the
/// primary is killed (mean of 12) and 5.64 s after it is stopped (SIGSTOP): a kill closes its
/// connections, the sentinel reconnects within a tick and pings at once, and that refused
/// ping's time (`act_ping_time`) starts the down-after clock; a stopped primary answers
/// nothing, and the clock starts at the first ping it left unanswered, up to a second after.
#[test]
fn sentinel_fails_over_sooner_after_a_kill_than_after_a_pause_as_the_real_one_does() {
    let crash = Fault::Crash {
        node: NodeId(0),
        restart_after: None,
    };
    let pause = Fault::Pause {
        node: NodeId(0),
        duration: Some(ms(60_000)),
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let kills: Vec<f64> = (1..=20)
        .map(|s| failover_starts_after(crash.clone(), s))
        .collect();
    let pauses: Vec<f64> = (1..=20)
        .map(|s| failover_starts_after(pause.clone(), s))
        .collect();
    let (k, p) = (mean(&kills), mean(&pauses));
    eprintln!("kill: mean {k:.3} s {kills:?}\npause: mean {p:.3} s {pauses:?}");
    assert!(
        (k - 5.16).abs() / 5.16 < 0.05,
        "after a kill: mean {k:.3} s, real 5.16 s"
    );
    assert!(
        (p - 5.64).abs() / 5.64 < 0.05,
        "after a pause: mean {p:.3} s, real 5.64 s"
    );
    assert!(kills.iter().all(|&x| (5.0..5.5).contains(&x)), "{kills:?}");
}
