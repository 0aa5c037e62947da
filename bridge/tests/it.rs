//! The bridge under turmoil: agreement with the native engine on the catalogue's Redis
//! scenarios, determinism, the hosts over their protocols, and faults refused by name.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use lockstep_bridge::Recorder;
use lockstep_bridge::turmoil::{RedisLock, StorageConn, redis_host, run, storage_host};
use lockstep_bridge::{Plan, Runtime};
use lockstep_check::{Event, GrantId, NodeId, OpKind, OpOutcome};
use lockstep_models::storage::{RequestKind, StorageRequest, StorageResult};
use lockstep_models::{Storage, StorageMode};

use common::{BASE, catalogue, faults, write_scenario};

fn agree(file: &str, seeds: u64) {
    common::agree(file, seeds, Runtime::Turmoil, |plan, seed| {
        run(plan, seed).map(|r| (r.history, r.unfired))
    });
}

#[test]
fn k1_gc_pause_unfenced_is_invalid_under_turmoil_as_natively() {
    agree("k1-gc-pause-unfenced.toml", 100);
}

#[test]
fn k2_gc_pause_fenced_is_valid_for_the_resource_under_turmoil_as_natively() {
    agree("k2-gc-pause-fenced.toml", 100);
}

#[test]
fn k3_delayed_write_is_invalid_under_turmoil_as_natively() {
    agree("k3-delayed-write.toml", 100);
}

#[test]
fn k3_write_sent_in_the_delay_window_lands_15_s_later() {
    common::delayed_write_lands_late(Runtime::Turmoil, |plan, seed| {
        run(plan, seed).map(|r| r.history)
    });
}

#[test]
fn the_storage_host_accepts_and_rejects_as_natively_in_every_fencing_mode() {
    common::every_storage_mode(Runtime::Turmoil, |plan, seed| {
        run(plan, seed).map(|r| r.history)
    });
}

#[test]
fn naive_del_release_is_invalid_and_its_fix_valid_under_turmoil_as_natively() {
    agree("redis-naive-del-release.toml", 100);
    agree("redis-naive-del-release-fixed.toml", 100);
}

#[test]
fn a_seed_reproduces_its_history_and_another_seed_differs() {
    common::deterministic(Runtime::Turmoil, |plan, seed| {
        run(plan, seed).map(|r| r.history)
    });
}

#[test]
fn faults_turmoil_cannot_express_are_errors_naming_them() {
    let cases = [
        (
            "[[fault]]\nat_ms = 100\nterminate = { node = \"client-1\" }\n",
            "fault[0]: terminate client-1: a user's client has no SIGTERM handler",
        ),
        (
            "[[fault]]\nat_ms = 100\nclock_step = { node = \"redis\", delta_ms = 5_000 }\n",
            "fault[0]: clock fault on redis: turmoil has no per-host clock",
        ),
        (
            "[[fault]]\nat_ms = 100\npause = { node = \"redis\", for_ms = 5_000 }\n",
            "fault[0]: pause of redis at a time: turmoil cannot freeze a host",
        ),
        (
            "[[fault]]\non = { node = \"client-1\", mark = \"granted\" }\npause = { node = \"client-2\", for_ms = 5_000 }\n",
            "fault[0]: pause of client-2: turmoil cannot freeze a host",
        ),
        (
            "[[fault]]\nat_ms = 100\ncrash = { node = \"holder\" }\n",
            "fault[0]: aimed at the holder: the bridge's hosts do not say who plays a role",
        ),
        (
            // A group is one fault per node: the second names the same entry.
            "[[fault]]\nat_ms = 100\nclock_step = { node = \"clients\", delta_ms = 5_000 }\n",
            "fault[0]: clock fault on client-1",
        ),
    ];
    common::refused(Runtime::Turmoil, &cases);
    // The catalogue's own clock-step scenario is refused: its first fault, client-2's late
    // start, is a pause at a time, which turmoil cannot make either.
    let err = Plan::load(&catalogue("redis-server-clock-step.toml"), Runtime::Turmoil)
        .expect_err("refused");
    assert!(
        err.problem.contains("turmoil cannot freeze a host"),
        "{err}"
    );
}

#[test]
fn plans_translate_partitions_and_mark_faults() {
    let (_, plan) = Plan::load(&catalogue("redis-naive-del-release.toml"), Runtime::Turmoil)
        .expect("plannable");
    assert_eq!(plan.timed.len(), 1);
    assert!(plan.lock.release_del);
    assert_eq!(plan.on_mark.len(), 1);
    assert_eq!(plan.on_mark[0].mark, "work-done");
    let (_, k3) =
        Plan::load(&catalogue("k3-delayed-write.toml"), Runtime::Turmoil).expect("plannable");
    assert!(
        k3.on_mark[0].what.is_err(),
        "a delay at a mark goes to the driver"
    );
}

/// Runs `client` as the only turmoil client against a storage host in `mode` and a Redis
/// host; returns the recorded history's entries.
fn with_hosts<F, Fut>(mode: StorageMode, client: F) -> Vec<lockstep_check::Entry>
where
    F: FnOnce(Recorder) -> Fut,
    Fut: std::future::Future<Output = turmoil::Result> + 'static,
{
    let mut sim = turmoil::Builder::new().rng_seed(1).build();
    let recorder = Recorder::new(|| turmoil::sim_elapsed().map(|d| d.as_nanos() as u64));
    for name in ["redis", "client-1", "storage"] {
        recorder.register(name);
    }
    let r = recorder.clone();
    sim.host("redis", move || redis_host(r.clone()));
    let storage = Rc::new(RefCell::new(Storage::new(mode)));
    let r = recorder.clone();
    sim.host("storage", move || storage_host(storage.clone(), r.clone()));
    sim.client("client-1", client(recorder.clone()));
    sim.run().expect("the client's assertions hold");
    recorder.history(0, true).entries
}

fn req(seq: u32, token: Option<u64>, kind: RequestKind) -> StorageRequest {
    let client = NodeId(1);
    StorageRequest {
        op: lockstep_check::OpId { client, seq },
        grant: GrantId { client, seq: 1 },
        token,
        kind,
    }
}

#[test]
fn the_storage_host_fences_in_every_mode_and_records_where_ops_land() {
    let write = |value| RequestKind::Write {
        value,
        base: value - 1,
    };
    // Per mode: a write with token 5, then a write with token 3, then a read with token 3.
    let cases = [
        (StorageMode::Unfenced, [true, true, true]),
        (StorageMode::FencedWrites, [true, false, true]),
        (StorageMode::FencedAll, [true, false, false]),
    ];
    for (mode, want) in cases {
        let entries = with_hosts(mode, move |_| async move {
            let mut s = StorageConn::new("storage");
            let t = Duration::from_secs(1);
            let got = [
                s.op(req(1, Some(5), write(1)), t).await,
                s.op(req(2, Some(3), write(2)), t).await,
                s.op(req(3, Some(3), RequestKind::Read), t).await,
            ];
            let accepted: Vec<bool> = got
                .iter()
                .map(|r| !matches!(r, Some(StorageResult::Rejected) | None))
                .collect();
            assert_eq!(accepted, want, "{mode:?}");
            Ok(())
        });
        let outcomes: Vec<bool> = entries
            .iter()
            .filter_map(|e| match &e.event {
                Event::Storage(op) => Some(op.outcome == OpOutcome::Accepted),
                _ => None,
            })
            .collect();
        assert_eq!(outcomes, want, "{mode:?} recorded");
    }
    // Compare-and-set: a write needs the last claim's token.
    let entries = with_hosts(StorageMode::CasToken, |_| async {
        let mut s = StorageConn::new("storage");
        let t = Duration::from_secs(1);
        assert_eq!(
            s.op(req(1, Some(9), RequestKind::Claim), t).await,
            Some(StorageResult::Claimed)
        );
        assert_eq!(
            s.op(req(2, Some(8), RequestKind::Write { value: 1, base: 0 }), t)
                .await,
            Some(StorageResult::Rejected)
        );
        assert_eq!(
            s.op(req(3, Some(9), RequestKind::Write { value: 1, base: 0 }), t)
                .await,
            Some(StorageResult::Written)
        );
        assert_eq!(
            s.op(req(4, Some(8), RequestKind::Read), t).await,
            Some(StorageResult::Read(1))
        );
        Ok(())
    });
    let kinds: Vec<OpKind> = entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Storage(op) => Some(op.kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds.len(), 4);
    assert_eq!(kinds[3], OpKind::Read { value: 1 });
}

#[test]
fn the_redis_host_serves_the_go_lock_over_resp_with_expiry_on_its_clock() {
    let entries = with_hosts(StorageMode::Unfenced, |_| async {
        let ttl = Duration::from_millis(1_000);
        let mut a = RedisLock::new("redis", ttl, Duration::from_millis(500));
        let mut b = RedisLock::new("redis", ttl, Duration::from_millis(500));
        assert!(a.try_acquire(11).await, "a free key is taken");
        assert!(!b.try_acquire(22).await, "a held key is not");
        assert!(a.renew().await, "the holder renews");
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(!b.try_acquire(22).await, "renewed: still held 700 ms later");
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(
            b.try_acquire(22).await,
            "expired on the host's clock after its TTL"
        );
        assert!(
            !a.renew().await,
            "the old holder cannot renew another's key"
        );
        assert!(!a.release().await, "nor delete it by script");
        assert_eq!(b.token().await, Some(1));
        assert_eq!(b.token().await, Some(2));
        assert!(a.try_acquire(33).await.eq(&false));
        assert!(b.release().await, "the holder deletes its own key");
        assert!(a.try_acquire(33).await);
        assert!(
            b.release_by_del().await,
            "a plain DEL deletes whoever's key"
        );
        Ok(())
    });
    let issued: Vec<u64> = entries
        .iter()
        .filter_map(|e| match e.event {
            Event::Issued {
                client: NodeId(1),
                ticket,
            } => Some(ticket),
            _ => None,
        })
        .collect();
    assert_eq!(
        issued,
        [11, 22, 33],
        "every SET NX that took the key, by its value"
    );
}

#[test]
fn crashes_restarts_and_held_partitions_run_and_are_recorded() {
    let faults_toml = r#"
[[fault]]
at_ms = 2_000
crash = { node = "client-1", restart_after_ms = 1_000 }

[[fault]]
at_ms = 5_000
partition = { groups = [["client-2"], ["redis", "storage"]], mode = "hold", for_ms = 2_000 }

[[fault]]
at_ms = 8_000
crash = { node = "redis", restart_after_ms = 500 }
"#;
    let path = write_scenario("crash-hold.toml", &format!("{BASE}{faults_toml}"));
    let (scenario, plan) = Plan::load(&path, Runtime::Turmoil).expect("plannable");
    let history = run(&plan, 3).expect("run").history;
    let faults = faults(&history);
    let want = [
        (2_000, "crash client-1"),
        (3_000, "restart client-1"),
        (5_000, "partition client-2, redis, storage (hold)"),
        (7_000, "heal"),
        (8_000, "crash redis"),
        (8_500, "restart redis"),
    ];
    let want: Vec<(u64, String)> = want.iter().map(|(t, d)| (*t, d.to_string())).collect();
    assert_eq!(faults, want);
    // The restarted client works again: it requests the lock after its restart.
    let client1 = NodeId(2);
    assert!(history.entries.iter().any(|e| e.time_ns > 3_000_000_000
        && matches!(e.event, Event::Request { client } if client == client1)));
    lockstep_check::check(&history, &scenario.check_options).expect("a well-formed history");
}

const CHAOS: &str = r#"
[scenario]
name = "bridge-chaos"
duration_ms = 60_000
[model]
kind = "redis"
ttl_ms = 2_000
[workload]
clients = 3
[storage]
mode = "unfenced"
[chaos]
profile = "default"
"#;

#[test]
fn a_chaos_profile_turmoil_cannot_express_is_refused_naming_the_key_that_turns_it_off() {
    let steps = [
        ("", "chaos.weights.clock: "),
        ("weights = { clock = 0 }\n", "chaos.weights.network: "),
        (
            "weights = { clock = 0, network = 0 }\n",
            "chaos.weights.pause: ",
        ),
        (
            "weights = { clock = 0, network = 0 }\non_mark = 1\n",
            "chaos.freeze: ",
        ),
        (
            "weights = { clock = 0, network = 0, pause = 0 }\nhold = 0.3\n",
            "chaos.hold: ",
        ),
    ];
    for (i, (keys, want)) in steps.iter().enumerate() {
        let path = write_scenario(
            &format!("chaos-refusal-{i}.toml"),
            &format!("{CHAOS}{keys}"),
        );
        let err = Plan::load(&path, Runtime::Turmoil).expect_err("refused");
        assert!(err.problem.starts_with(want), "{err}");
    }
    // Every pause at a client's own mark is a sleep there: expressible.
    let path = write_scenario(
        "chaos-on-mark-pauses.toml",
        &format!(
            "{CHAOS}weights = {{ clock = 0, network = 0 }}\non_mark = 1\nfreeze = 0\nhold = 0\n"
        ),
    );
    let (_, plan) = Plan::load(&path, Runtime::Turmoil).expect("plannable");
    let seeded = plan.at_seed(1).expect("seed 1");
    assert!(seeded.timed.is_empty(), "every fault waits for a mark");
    assert!(seeded.on_mark.iter().all(|t| t.optional));
    assert!(
        seeded.on_mark.iter().any(|t| t.what.is_ok()),
        "a client's sleep"
    );
}

/// The seeds' drawn schedules, played under turmoil: every timed fault the profile drew is
/// applied and recorded at its time, every marked one fires or is reported unfired, random
/// partition shapes are resolved into cuts, and a seed replays its history.
#[test]
fn a_chaos_profile_is_drawn_per_seed_and_played_at_its_times() {
    let path = write_scenario(
        "chaos-played.toml",
        &format!("{CHAOS}weights = {{ clock = 0, network = 0, pause = 0 }}\nhold = 0\n"),
    );
    let (scenario, plan) = Plan::load(&path, Runtime::Turmoil).expect("plannable");
    assert!(plan.timed.is_empty() && plan.on_mark.is_empty());
    let mut random_shapes = 0;
    let mut fired_on_marks = 0;
    for seed in 1..=20 {
        let drawn = scenario.schedule(seed).faults;
        let seeded = plan.at_seed(seed).expect("plannable seed");
        assert_eq!(seeded.timed.len() + seeded.on_mark.len(), drawn.len());
        for sf in &drawn {
            if let lockstep_sim::fault::Fault::Partition { shape, .. } = &sf.fault {
                random_shapes += usize::from(!matches!(
                    shape,
                    lockstep_sim::net::Shape::Isolate { .. }
                        | lockstep_sim::net::Shape::Split { .. }
                        | lockstep_sim::net::Shape::OneWay { .. }
                ));
            }
        }
        let ran = run(&plan, seed).expect("turmoil run");
        let recorded: Vec<(u64, String)> = ran
            .history
            .entries
            .iter()
            .filter_map(|e| match &e.event {
                Event::Fault(f) => Some((e.time_ns, f.detail.clone())),
                _ => None,
            })
            .collect();
        for (at, effect) in &seeded.timed {
            let tick = Duration::from_millis(1).as_nanos() as u64;
            assert!(
                recorded
                    .iter()
                    .any(|(t, d)| *d == effect.detail && t.abs_diff(at.as_nanos()) <= tick),
                "seed {seed}: `{}` at {} ns not recorded: {recorded:?}",
                effect.detail,
                at.as_nanos()
            );
        }
        fired_on_marks += seeded.on_mark.len() - ran.unfired.len();
        for i in 0..seeded.on_mark.len() {
            if let (false, Err(effect)) = (ran.unfired.contains(&i), &seeded.on_mark[i].what) {
                assert!(
                    recorded.iter().any(|(_, d)| *d == effect.detail),
                    "seed {seed}: a fired mark trigger's `{}` not recorded",
                    effect.detail
                );
            }
        }
        lockstep_check::check(&ran.history, &scenario.check_options)
            .expect("a well-formed history");
        if seed == 1 {
            assert_eq!(ran.history, run(&plan, 1).expect("again").history);
        }
    }
    assert!(random_shapes > 0, "20 seeds drew no random partition shape");
    assert!(fired_on_marks > 0, "20 seeds fired no marked fault");
}
