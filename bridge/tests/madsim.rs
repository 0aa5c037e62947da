//! The bridge under madsim (`RUSTFLAGS="--cfg madsim" cargo test -p lockstep-bridge
//! --features madsim --target-dir target/madsim`): agreement with the native engine on the
//! catalogue's Redis scenarios, determinism, pauses madsim can apply, and faults refused by
//! name.

mod common;

use lockstep_bridge::madsim::run;
use lockstep_bridge::{Plan, Runtime};
use lockstep_check::{Event, FaultKind, NodeId};

use common::{BASE, catalogue, faults, write_scenario};

fn agree(file: &str, seeds: u64) {
    common::agree(file, seeds, Runtime::Madsim, |plan, seed| {
        run(plan, seed).map(|r| (r.history, r.unfired))
    });
}

#[test]
fn k1_gc_pause_unfenced_is_invalid_under_madsim_as_natively() {
    agree("k1-gc-pause-unfenced.toml", 100);
}

#[test]
fn k2_gc_pause_fenced_is_valid_for_the_resource_under_madsim_as_natively() {
    agree("k2-gc-pause-fenced.toml", 100);
}

#[test]
fn k3_delayed_write_is_invalid_without_an_overlap_under_madsim_as_natively() {
    agree("k3-delayed-write.toml", 100);
}

#[test]
fn k3_write_sent_in_the_delay_window_lands_15_s_later() {
    common::delayed_write_lands_late(Runtime::Madsim, |plan, seed| {
        run(plan, seed).map(|r| r.history)
    });
}

#[test]
fn the_storage_host_accepts_and_rejects_as_natively_in_every_fencing_mode() {
    common::every_storage_mode(Runtime::Madsim, |plan, seed| {
        run(plan, seed).map(|r| r.history)
    });
}

#[test]
fn naive_del_release_is_invalid_and_its_fix_valid_under_madsim_as_natively() {
    agree("redis-naive-del-release.toml", 100);
    agree("redis-naive-del-release-fixed.toml", 100);
}

#[test]
fn a_seed_reproduces_its_history_and_another_seed_differs() {
    common::deterministic(Runtime::Madsim, |plan, seed| {
        run(plan, seed).map(|r| r.history)
    });
}

#[test]
fn faults_madsim_cannot_express_are_errors_naming_them() {
    let cases = [
        (
            "[[fault]]\nat_ms = 100\nterminate = { node = \"client-1\" }\n",
            "fault[0]: terminate client-1: a user's client has no SIGTERM handler",
        ),
        (
            "[[fault]]\nat_ms = 100\nclock_step = { node = \"redis\", delta_ms = 5_000 }\n",
            "fault[0]: clock fault on redis: madsim has one clock for every node",
        ),
        (
            "[[fault]]\nat_ms = 100\ndegrade = { from = \"client-1\", to = \"redis\", loss = 0.1 }\n",
            "fault[0]: degrade: loss and duplication on TCP cannot be expressed in madsim",
        ),
    ];
    common::refused(Runtime::Madsim, &cases);
    // The catalogue's clock-step scenario is refused the same way.
    let err = Plan::load(&catalogue("redis-server-clock-step.toml"), Runtime::Madsim)
        .expect_err("refused");
    assert!(err.problem.contains("no per-host clock"), "{err}");
    // A plan for turmoil is not run by madsim.
    let (_, plan) =
        Plan::load(&catalogue("k1-gc-pause-unfenced.toml"), Runtime::Turmoil).expect("plannable");
    let err = run(&plan, 1).expect_err("refused");
    assert!(err.contains("made for turmoil"), "{err}");
}

#[test]
fn a_pause_of_the_server_at_a_time_freezes_it() {
    let fault = r#"
[[fault]]
at_ms = 2_000
pause = { node = "redis", for_ms = 3_000 }
"#;
    let path = write_scenario("pause-redis.toml", &format!("{BASE}{fault}"));
    let (scenario, plan) = Plan::load(&path, Runtime::Madsim).expect("madsim can pause a server");
    let history = run(&plan, 5).expect("run").history;
    assert_eq!(
        faults(&history),
        [
            (2_000, "pause redis for 3000 ms".to_string()),
            (5_000, "resume redis".to_string())
        ]
    );
    let ms = |e: &lockstep_check::Entry| e.time_ns / 1_000_000;
    let issued = |from: u64, to: u64| {
        history
            .entries
            .iter()
            .filter(|e| (from..to).contains(&ms(e)) && matches!(e.event, Event::Issued { .. }))
            .count()
    };
    let requests_while_paused = history
        .entries
        .iter()
        .filter(|e| (2_000..5_000).contains(&ms(e)) && matches!(e.event, Event::Request { .. }))
        .count();
    assert!(issued(0, 2_000) > 0, "the server grants before its pause");
    assert!(requests_while_paused > 0, "clients ask while it is frozen");
    assert_eq!(issued(2_000, 5_000), 0, "a frozen server grants nothing");
    assert!(issued(5_000, 10_000) > 0, "and grants again once resumed");
    lockstep_check::check(&history, &scenario.check_options).expect("a well-formed history");
}

#[test]
fn crashes_restarts_and_one_way_held_partitions_run_and_are_recorded() {
    let faults_toml = r#"
[[fault]]
at_ms = 2_000
crash = { node = "client-1", restart_after_ms = 1_000 }

[[fault]]
at_ms = 5_000
partition = { from = ["redis"], to = ["client-2"], mode = "hold", for_ms = 2_000 }

[[fault]]
at_ms = 8_000
crash = { node = "redis", restart_after_ms = 500 }
"#;
    let path = write_scenario("crash-hold.toml", &format!("{BASE}{faults_toml}"));
    let (scenario, plan) =
        Plan::load(&path, Runtime::Madsim).expect("madsim holds one way (clog_link)");
    let history = run(&plan, 3).expect("run").history;
    let want = [
        (2_000, "crash client-1"),
        (3_000, "restart client-1"),
        (5_000, "partition client-2, redis (hold)"),
        (7_000, "heal"),
        (8_000, "crash redis"),
        (8_500, "restart redis"),
    ];
    let want: Vec<(u64, String)> = want.iter().map(|(t, d)| (*t, d.to_string())).collect();
    assert_eq!(faults(&history), want);
    // The restarted client works again, and so does the restarted server.
    let client1 = NodeId(2);
    assert!(history.entries.iter().any(|e| e.time_ns > 3_000_000_000
        && matches!(e.event, Event::Request { client } if client == client1)));
    assert!(
        history
            .entries
            .iter()
            .any(|e| e.time_ns > 8_500_000_000 && matches!(e.event, Event::Issued { .. }))
    );
    let crashed = history
        .entries
        .iter()
        .filter(|e| matches!(&e.event, Event::Fault(f) if f.kind == FaultKind::Crash))
        .count();
    assert_eq!(crashed, 2);
    lockstep_check::check(&history, &scenario.check_options).expect("a well-formed history");
}
