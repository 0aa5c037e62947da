//! Bounds: every numeric key of a scenario file has a range the loader checks and states in
//! its error, no accepted value overflows time or allocates without bound (a chaos schedule
//! over a huge run is bounded by the run's events), and a run over its memory or wall-clock
//! budget ends `unknown` with the reason.

use std::path::Path;
use std::time::Duration;

use lockstep::{parse, run};
use lockstep_check::Validity;

/// A scenario file from sections: `[scenario]` and `[model]` (Redis unless `model` names a
/// kind) get a base, and each `(section, line)` is added to its section (`[[clock]]` and
/// `[[fault]]` sections are given whole, with their header, under the section `""`).
fn file(lines: &[(&str, &str)]) -> String {
    let mut sections: Vec<(String, Vec<String>)> = vec![
        (
            "scenario".into(),
            vec!["name = \"b\"".into(), "duration_ms = 60_000".into()],
        ),
        ("model".into(), vec![]),
    ];
    let mut tables = Vec::new();
    for &(section, line) in lines {
        if section.is_empty() {
            tables.push(line.to_string());
            continue;
        }
        let key = line.split('=').next().unwrap_or("").trim();
        let i = match sections.iter().position(|(s, _)| s == section) {
            Some(i) => i,
            None => {
                sections.push((section.to_string(), Vec::new()));
                sections.len() - 1
            }
        };
        let body = &mut sections[i].1;
        body.retain(|l| l.split('=').next().unwrap_or("").trim() != key);
        body.push(line.to_string());
    }
    let model = &mut sections[1].1;
    if !model.iter().any(|l| l.starts_with("kind")) {
        model.insert(0, "kind = \"redis\"".into());
    }
    if !model.iter().any(|l| l.starts_with("ttl_ms")) {
        model.push("ttl_ms = 10_000".into());
    }
    let mut text = String::new();
    for (s, body) in sections {
        text.push_str(&format!("[{s}]\n{}\n\n", body.join("\n")));
    }
    for t in tables {
        text.push_str(&t);
        text.push_str("\n\n");
    }
    text
}

const FILE: &str = "bounds-test.toml";

/// The error lines for `text`, which must not load.
fn errors(text: &str) -> Vec<String> {
    match parse(text, Path::new(FILE)) {
        Ok(_) => panic!("loaded, but should not:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_string).collect(),
    }
}

/// Every numeric key, just over (or under) its range: `(section, line, key path, what the
/// error must say about the range)`.
const OUT_OF_RANGE: &[(&str, &str, &str, &[&str])] = &[
    // [scenario]
    (
        "scenario",
        "duration_ms = 2e10",
        "scenario.duration_ms",
        &["0", "10000000000"],
    ),
    (
        "scenario",
        "duration_ms = -1",
        "scenario.duration_ms",
        &["non-negative"],
    ),
    (
        "scenario",
        "max_events = 0",
        "scenario.max_events",
        &["1", "1000000000"],
    ),
    (
        "scenario",
        "max_events = 1_000_000_001",
        "scenario.max_events",
        &["1", "1000000000"],
    ),
    (
        "scenario",
        "seeds = { from = 1, count = 0 }",
        "scenario.seeds.count",
        &["1", "10000000"],
    ),
    (
        "scenario",
        "seeds = { from = 1, count = 10_000_001 }",
        "scenario.seeds.count",
        &["1", "10000000"],
    ),
    (
        "scenario",
        "memory_budget_mb = 0",
        "scenario.memory_budget_mb",
        &["1", "1048576"],
    ),
    (
        "scenario",
        "memory_budget_mb = 1_048_577",
        "scenario.memory_budget_mb",
        &["1", "1048576"],
    ),
    (
        "scenario",
        "wall_budget_ms = 0",
        "scenario.wall_budget_ms",
        &["greater than 0"],
    ),
    (
        "scenario",
        "wall_budget_ms = 2e10",
        "scenario.wall_budget_ms",
        &["10000000000"],
    ),
    // [workload]
    (
        "workload",
        "clients = 0",
        "workload.clients",
        &["1", "1000"],
    ),
    (
        "workload",
        "clients = 1001",
        "workload.clients",
        &["1", "1000"],
    ),
    (
        "workload",
        "think_ms = 2e10",
        "workload.think_ms",
        &["10000000000"],
    ),
    (
        "workload",
        "work_ms = { uniform = [1, 2e10] }",
        "workload.work_ms.uniform[1]",
        &["10000000000"],
    ),
    (
        "workload",
        "storage_timeout_ms = 2e10",
        "workload.storage_timeout_ms",
        &["10000000000"],
    ),
    // [network]
    (
        "network",
        "latency_ms = { exponential = { min = 1, mean = 2e10 } }",
        "network.latency_ms.exponential.mean",
        &["10000000000"],
    ),
    ("network", "loss = 1.5", "network.loss", &["0", "1"]),
    (
        "network",
        "duplicate = -0.5",
        "network.duplicate",
        &["0", "1"],
    ),
    // [[clock]]
    (
        "",
        "[[clock]]\nnode = \"redis\"\ndrift_ppm = 2_000_000_000",
        "clock[0].drift_ppm",
        &["±"],
    ),
    (
        "",
        "[[clock]]\nnode = \"redis\"\noffset_ms = 2e10",
        "clock[0].offset_ms",
        &["10000000000"],
    ),
    // [[fault]]
    (
        "",
        "[[fault]]\nat_ms = 2e10\nheal = true",
        "fault[0].at_ms",
        &["10000000000"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\npause = { node = \"redis\", for_ms = 2e10 }",
        "fault[0].pause.for_ms",
        &["10000000000"],
    ),
    (
        "",
        "[[fault]]\non = { node = \"redis\", mark = \"m\", occurrence = 0 }\npause = { node = \"redis\", for_ms = 1 }",
        "fault[0].on.occurrence",
        &["1", "1000000000"],
    ),
    (
        "",
        "[[fault]]\non = { node = \"redis\", mark = \"m\", occurrence = 1_000_000_001 }\npause = { node = \"redis\", for_ms = 1 }",
        "fault[0].on.occurrence",
        &["1", "1000000000"],
    ),
    (
        "",
        "[[fault]]\non = { node = \"redis\", mark = \"m\", before_ms = 2e10 }\npause = { node = \"redis\", for_ms = 1 }",
        "fault[0].on.before_ms",
        &["10000000000"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\ncrash = { node = \"redis\", restart_after_ms = 2e10 }",
        "fault[0].crash.restart_after_ms",
        &["10000000000"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\nterminate = { node = \"redis\", grace_ms = 2e10 }",
        "fault[0].terminate.grace_ms",
        &["10000000000"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\nclock_step = { node = \"redis\", delta_ms = -2e10 }",
        "fault[0].clock_step.delta_ms",
        &["10000000000"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\nclock_slew = { node = \"redis\", delta_ms = 1, rate_ppm = 0 }",
        "fault[0].clock_slew.rate_ppm",
        &["1", "between"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\nclock_drift = { node = \"redis\", drift_ppm = -2_000_000_000 }",
        "fault[0].clock_drift.drift_ppm",
        &["±"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\ndelay = { from = \"all\", to = \"all\", extra_ms = 2e10 }",
        "fault[0].delay.extra_ms",
        &["10000000000"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\ndegrade = { from = \"all\", to = \"all\", loss = 2 }",
        "fault[0].degrade.loss",
        &["0", "1"],
    ),
    (
        "",
        "[[fault]]\nat_ms = 1\nclock_strobe = { node = \"redis\", delta_ms = 1, period_ms = 2e10, for_ms = 1 }",
        "fault[0].clock_strobe.period_ms",
        &["10000000000"],
    ),
    // [chaos]
    (
        "chaos",
        "faults_per_minute = 1e-9",
        "chaos.faults_per_minute",
        &["out of range", "0.001", "10000"],
    ),
    (
        "chaos",
        "faults_per_minute = 10_001",
        "chaos.faults_per_minute",
        &["out of range", "0.001", "10000"],
    ),
    (
        "chaos",
        "start_ms = 2e10",
        "chaos.start_ms",
        &["10000000000"],
    ),
    (
        "chaos",
        "liveness_ms = 2e10",
        "chaos.liveness_ms",
        &["10000000000"],
    ),
    (
        "chaos",
        "quiet_tail_ms = 2e10",
        "chaos.quiet_tail_ms",
        &["10000000000"],
    ),
    ("chaos", "on_mark = 1.5", "chaos.on_mark", &["0", "1"]),
    (
        "chaos",
        "max_occurrence = 0",
        "chaos.max_occurrence",
        &["1", "1000000"],
    ),
    (
        "chaos",
        "max_occurrence = 1_000_001",
        "chaos.max_occurrence",
        &["1", "1000000"],
    ),
    (
        "chaos",
        "weights = { pause = 1_000_001 }",
        "chaos.weights.pause",
        &["0", "1000000"],
    ),
    (
        "chaos",
        "weights = { partition = 1_000_001 }",
        "chaos.weights.partition",
        &["0", "1000000"],
    ),
    (
        "chaos",
        "weights = { crash = 1_000_001 }",
        "chaos.weights.crash",
        &["0", "1000000"],
    ),
    (
        "chaos",
        "weights = { clock = 1_000_001 }",
        "chaos.weights.clock",
        &["0", "1000000"],
    ),
    (
        "chaos",
        "weights = { network = 1_000_001 }",
        "chaos.weights.network",
        &["0", "1000000"],
    ),
    (
        "chaos",
        "pause_ms = { pareto = { min = 1, alpha = 0.5, max = 2e10 } }",
        "chaos.pause_ms.pareto.max",
        &["10000000000"],
    ),
    (
        "chaos",
        "partition_ms = 2e10",
        "chaos.partition_ms",
        &["10000000000"],
    ),
    ("chaos", "hold = 2", "chaos.hold", &["0", "1"]),
    (
        "chaos",
        "restart_ms = 2e10",
        "chaos.restart_ms",
        &["10000000000"],
    ),
    (
        "chaos",
        "max_step_ms = 2e10",
        "chaos.max_step_ms",
        &["10000000000"],
    ),
    (
        "chaos",
        "max_drift_ppm = -1",
        "chaos.max_drift_ppm",
        &["0", "between"],
    ),
    (
        "chaos",
        "slew_rate_ppm = 0",
        "chaos.slew_rate_ppm",
        &["1", "between"],
    ),
    (
        "chaos",
        "delay_ms = 2e10",
        "chaos.delay_ms",
        &["10000000000"],
    ),
    (
        "chaos",
        "slow_for_ms = 2e10",
        "chaos.slow_for_ms",
        &["10000000000"],
    ),
    ("chaos", "max_loss = 2", "chaos.max_loss", &["0", "1"]),
    (
        "chaos",
        "max_duplicate = 2",
        "chaos.max_duplicate",
        &["0", "1"],
    ),
    // Redis
    ("model", "ttl_ms = 2e10", "model.ttl_ms", &["10000000000"]),
    (
        "model",
        "request_timeout_ms = 2e10",
        "model.request_timeout_ms",
        &["10000000000"],
    ),
    (
        "model",
        "retry_delay_ms = 2e10",
        "model.retry_delay_ms",
        &["10000000000"],
    ),
    (
        "model",
        "acquire_tries = 1_000_001",
        "model.acquire_tries",
        &["0", "1000000"],
    ),
    (
        "model",
        "drift_factor = 1",
        "model.drift_factor",
        &["0", "1"],
    ),
    (
        "model",
        "persistence = \"rdb\"\nsave = [[1e8, 1]]",
        "model.save[0][0]",
        &["0", "10000000"],
    ),
    (
        "model",
        "persistence = \"rdb\"\nsave = [[1, 2e12]]",
        "model.save[0][1]",
        &["1", "1000000000000"],
    ),
    (
        "model",
        "restart_delay_ms = 2e10",
        "model.restart_delay_ms",
        &["10000000000"],
    ),
    ("model", "replicas = 17", "model.replicas", &["0", "16"]),
    (
        "model",
        "replicas = 1\nreplication_lag_ms = 2e10",
        "model.replication_lag_ms",
        &["10000000000"],
    ),
    (
        "model",
        "replicas = 1\nsentinels = 16",
        "model.sentinels",
        &["0", "15"],
    ),
    (
        "model",
        "replicas = 1\nsentinels = 3\nsentinel_quorum = 4",
        "model.sentinel_quorum",
        &["1", "3"],
    ),
    (
        "model",
        "replicas = 1\ndown_after_ms = 2e10",
        "model.down_after_ms",
        &["10000000000"],
    ),
    (
        "model",
        "replicas = 1\nfailover_timeout_ms = 2e10",
        "model.failover_timeout_ms",
        &["10000000000"],
    ),
    (
        "model",
        "replicas = 1\nwait_replicas = 2",
        "model.wait_replicas",
        &["cannot exceed model.replicas (1)"],
    ),
    (
        "model",
        "replicas = 1\nwait_replicas = 1\nwait_timeout_ms = 2e10",
        "model.wait_timeout_ms",
        &["10000000000"],
    ),
    // Redlock
    (
        "model",
        "kind = \"redlock\"\ninstances = 100",
        "model.instances",
        &["1", "99"],
    ),
    (
        "model",
        "kind = \"redlock\"\nacquire_tries = 0",
        "model.acquire_tries",
        &["1", "1000000"],
    ),
    (
        "model",
        "kind = \"redlock\"\nacquire_tries = 1_000_001",
        "model.acquire_tries",
        &["1", "1000000"],
    ),
    (
        "model",
        "kind = \"redlock\"\nretry_delay_ms = 2e10",
        "model.retry_delay_ms",
        &["10000000000"],
    ),
    (
        "model",
        "kind = \"redlock\"\nrequest_timeout_ms = 2e10",
        "model.request_timeout_ms",
        &["10000000000"],
    ),
    // etcd
    (
        "model",
        "kind = \"etcd\"\nmembers = 10",
        "model.members",
        &["1", "9"],
    ),
    (
        "model",
        "kind = \"etcd\"\ntick_ms = 2e10",
        "model.tick_ms",
        &["10000000000"],
    ),
    (
        "model",
        "kind = \"etcd\"\nelection_ms = 2e10",
        "model.election_ms",
        &["10000000000"],
    ),
    (
        "model",
        "kind = \"etcd\"\ncheckpoint_ms = 2e10",
        "model.checkpoint_ms",
        &["10000000000"],
    ),
    (
        "model",
        "kind = \"etcd\"\nrequest_timeout_ms = 2e10",
        "model.request_timeout_ms",
        &["10000000000"],
    ),
    // ZooKeeper
    (
        "model",
        "kind = \"zookeeper\"\nmembers = 10",
        "model.members",
        &["1", "9"],
    ),
    (
        "model",
        "kind = \"zookeeper\"\ntick_ms = 2e10",
        "model.tick_ms",
        &["10000000000"],
    ),
    (
        "model",
        "kind = \"zookeeper\"\nsync_limit = 101",
        "model.sync_limit",
        &["1", "100"],
    ),
    (
        "model",
        "kind = \"zookeeper\"\nmin_session_timeout_ms = 2e10",
        "model.min_session_timeout_ms",
        &["10000000000"],
    ),
    (
        "model",
        "kind = \"zookeeper\"\nmax_session_timeout_ms = 2e10",
        "model.max_session_timeout_ms",
        &["10000000000"],
    ),
    // [sweep]
    (
        "sweep",
        "seeds = 0\nx = { key = \"model.ttl_ms\", values = [1000] }",
        "sweep.seeds",
        &["1", "100000"],
    ),
];

#[test]
fn every_numeric_key_out_of_its_range_is_an_error_naming_file_key_and_range() {
    let mut failures = Vec::new();
    for &(section, line, path, says) in OUT_OF_RANGE {
        let text = file(&[(section, line)]);
        let lines = match parse(&text, Path::new(FILE)) {
            Ok(_) => {
                failures.push(format!("{path}: `{line}` loaded"));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let hit = lines.lines().find(|l| {
            l.starts_with(FILE)
                && l.contains(&format!(": {path}: "))
                && says.iter().all(|s| l.contains(s))
        });
        if hit.is_none() {
            failures.push(format!("{path}: `{line}` gave:\n  {lines}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn faults_per_minute_states_its_range_in_the_words_of_the_issue() {
    let lines = errors(&file(&[("chaos", "faults_per_minute = 1e-9")]));
    assert_eq!(
        lines,
        [format!(
            "{FILE}: chaos.faults_per_minute: 0.000000001 is out of range: expected 0.001 to 10000"
        )]
    );
}

/// Accepted extremes, each run for one seed under a small event bound: no panic, whatever
/// the verdict.
const EXTREMES: &[&[(&str, &str)]] = &[
    &[
        ("scenario", "duration_ms = 1e10"),
        ("chaos", "faults_per_minute = 0.001"),
    ],
    &[
        ("scenario", "duration_ms = 1e10"),
        ("chaos", "faults_per_minute = 10_000"),
        ("chaos", "on_mark = 0"),
    ],
    &[
        ("scenario", "duration_ms = 1e10"),
        ("chaos", "faults_per_minute = 10_000"),
        ("chaos", "start_ms = 0"),
        ("chaos", "pause_ms = 1e10"),
        ("chaos", "partition_ms = 1e10"),
        ("chaos", "restart_ms = 1e10"),
        ("chaos", "max_step_ms = 1e10"),
        ("chaos", "delay_ms = 1e10"),
        ("chaos", "slow_for_ms = 1e10"),
        ("chaos", "max_drift_ppm = 250_000"),
        ("chaos", "slew_rate_ppm = 1"),
        ("chaos", "max_occurrence = 1_000_000"),
        (
            "chaos",
            "weights = { pause = 1_000_000, partition = 1_000_000, crash = 1_000_000, clock = 1_000_000, network = 1_000_000 }",
        ),
        ("chaos", "max_loss = 1"),
        ("chaos", "max_duplicate = 1"),
        ("chaos", "on_mark = 0.5"),
        ("chaos", "hold = 1"),
    ],
    &[
        ("scenario", "duration_ms = 1e10"),
        ("model", "ttl_ms = 1e10"),
        ("model", "request_timeout_ms = 1e10"),
        ("model", "retry_delay_ms = 1e10"),
        ("model", "restart_delay_ms = 1e10"),
        ("model", "replicas = 16"),
        ("model", "sentinels = 15"),
        ("model", "down_after_ms = 1e10"),
        ("model", "failover_timeout_ms = 1e10"),
        ("model", "replication_lag_ms = 1e10"),
        ("model", "wait_replicas = 16"),
        ("model", "wait_timeout_ms = 1e10"),
        ("model", "acquire_tries = 1_000_000"),
        ("workload", "clients = 1000"),
        ("workload", "think_ms = 1e10"),
        ("workload", "work_ms = 1e10"),
        ("workload", "storage_timeout_ms = 1e10"),
        ("network", "latency_ms = 1e10"),
        (
            "",
            "[[clock]]\nnode = \"redis-7\"\ndrift_ppm = 250_000\noffset_ms = 1e10",
        ),
        (
            "",
            "[[clock]]\nnode = \"redis-1\"\ndrift_ppm = -250_000\noffset_ms = -1e10",
        ),
        (
            "",
            "[[fault]]\nat_ms = 1e10\nclock_step = { node = \"redis-1\", delta_ms = -1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 1e10\nclock_slew = { node = \"redis-2\", delta_ms = 1e10, rate_ppm = 1 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 1e10\npause = { node = \"redis-3\", for_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 1e10\ncrash = { node = \"redis-4\", restart_after_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 1e10\ndelay = { from = \"all\", to = \"all\", extra_ms = 1e10, for_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 1e10\nclock_strobe = { node = \"redis-5\", delta_ms = 1e10, period_ms = 1e10, for_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\non = { node = \"client-1\", mark = \"granted\", occurrence = 20_000, before_ms = 1e10 }\npause = { node = \"client-1\", for_ms = 1e10 }",
        ),
    ],
    &[
        ("scenario", "duration_ms = 1e10"),
        ("model", "replicas = 2"),
        (
            "",
            "[[clock]]\nnode = \"redis-1\"\ndrift_ppm = 250_000\noffset_ms = 1e10",
        ),
        (
            "",
            "[[fault]]\nat_ms = 1\nclock_step = { node = \"redis-1\", delta_ms = -1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 2\nclock_slew = { node = \"redis-2\", delta_ms = 1e10, rate_ppm = 1 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 3\nclock_slew = { node = \"redis-3\", delta_ms = -1e10, rate_ppm = 250_000 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 4\npause = { node = \"redis-3\", for_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 5\ncrash = { node = \"sentinel-1\", restart_after_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 6\ndelay = { from = \"all\", to = \"all\", extra_ms = 1e10, for_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 7\nclock_strobe = { node = \"redis-1\", delta_ms = -1e10, period_ms = 1e5, for_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 8\nclock_drift = { node = \"redis-2\", drift_ppm = -250_000 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 9\npartition = { isolate = \"redis-2\", mode = \"hold\", for_ms = 1e10 }",
        ),
        (
            "",
            "[[fault]]\nat_ms = 10\ndegrade = { from = \"all\", to = \"all\", loss = 1, duplicate = 1, for_ms = 1e10 }",
        ),
    ],
    &[
        ("scenario", "duration_ms = 1e10"),
        ("model", "kind = \"zookeeper\""),
        ("model", "members = 9"),
        ("model", "tick_ms = 1e9"),
        ("model", "sync_limit = 100"),
        ("model", "max_session_timeout_ms = 1e10"),
        ("model", "ttl_ms = 2e9"),
        ("chaos", "faults_per_minute = 10_000"),
    ],
    &[
        ("scenario", "duration_ms = 1e10"),
        ("model", "kind = \"etcd\""),
        ("model", "members = 9"),
        ("model", "tick_ms = 1e9"),
        ("model", "election_ms = 1e10"),
        ("model", "checkpoint_ms = 1e10"),
        ("model", "request_timeout_ms = 1e10"),
        ("model", "ttl_ms = 1e10"),
    ],
    &[
        ("scenario", "duration_ms = 1e10"),
        ("model", "kind = \"redlock\""),
        ("model", "instances = 99"),
        ("model", "acquire_tries = 1_000_000"),
        ("model", "retry_delay_ms = 1e10"),
        ("model", "ttl_ms = 1e9"),
        ("chaos", "faults_per_minute = 10_000"),
    ],
];

#[test]
fn accepted_extremes_run_without_panic() {
    for (i, lines) in EXTREMES.iter().enumerate() {
        let mut lines = lines.to_vec();
        lines.push(("scenario", "max_events = 20_000"));
        let text = file(&lines);
        let s = parse(&text, Path::new(FILE)).unwrap_or_else(|e| panic!("extreme {i}: {e}"));
        let r = run(&s, 1, false);
        assert!(r.events <= 20_000, "extreme {i}: {} events", r.events);
    }
}

#[test]
fn a_huge_run_draws_a_chaos_schedule_bounded_by_its_events() {
    for duration in ["1e7", "1e10"] {
        let text = file(&[
            ("scenario", &format!("duration_ms = {duration}")),
            ("scenario", "max_events = 100_000"),
            ("chaos", "faults_per_minute = 10_000"),
        ]);
        let s = parse(&text, Path::new(FILE)).unwrap_or_else(|e| panic!("{e}"));
        // Unbounded, 1e10 ms would be 1.7 billion faults (hundreds of GB).
        #[allow(
            clippy::disallowed_methods,
            reason = "the test times how long drawing a schedule takes; no run reads it"
        )]
        let start = std::time::Instant::now();
        let faults = s.schedule(1).faults.len();
        assert!(
            (1..=100_000).contains(&faults),
            "{duration} ms: {faults} faults"
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{duration} ms: {:?}",
            start.elapsed()
        );
        assert_eq!(s.schedule(1), s.schedule(1));
    }
}

#[test]
fn a_run_over_its_memory_budget_ends_unknown_with_the_reason() {
    let text = file(&[
        ("scenario", "duration_ms = 3_600_000"),
        ("scenario", "memory_budget_mb = 1"),
        ("workload", "clients = 50"),
    ]);
    let s = parse(&text, Path::new(FILE)).unwrap_or_else(|e| panic!("{e}"));
    let a = run(&s, 1, false);
    assert_eq!(a.judged, Validity::Unknown);
    let reason = a.stopped.as_deref().unwrap_or("");
    assert!(reason.contains("memory budget"), "{reason:?}");
    assert!(a.events < 1_000_000, "{} events", a.events);
    // Deterministic: the same seed stops at the same event.
    let b = run(&s, 1, false);
    assert_eq!((a.events, a.trace_hash), (b.events, b.trace_hash));
}

#[test]
fn a_run_over_its_wall_budget_ends_unknown_saying_it_is_not_reproducible() {
    let text = file(&[
        ("scenario", "duration_ms = 36_000_000"),
        ("scenario", "wall_budget_ms = 1"),
        ("workload", "clients = 200"),
    ]);
    let s = parse(&text, Path::new(FILE)).unwrap_or_else(|e| panic!("{e}"));
    #[allow(
        clippy::disallowed_methods,
        reason = "the test bounds how long a run on its wall-clock budget takes; no run reads it"
    )]
    let start = std::time::Instant::now();
    let r = run(&s, 1, false);
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_eq!(r.judged, Validity::Unknown);
    let reason = r.stopped.as_deref().unwrap_or("");
    assert!(reason.contains("wall-clock budget"), "{reason:?}");
    assert!(reason.contains("not reproducible"), "{reason:?}");
}

#[test]
fn the_run_command_says_why_a_run_stopped() {
    let text = file(&[
        ("scenario", "duration_ms = 3_600_000"),
        ("scenario", "memory_budget_mb = 1"),
        ("workload", "clients = 50"),
    ]);
    let path = crate::support::temp_scenario("memory-budget", &text);
    let out = crate::support::lockstep(&["run", path.to_str().expect("utf-8")]);
    let text = crate::support::stdout(&out);
    assert!(text.contains("memory budget"), "{text}");
    let json =
        crate::support::lockstep(&["run", path.to_str().expect("utf-8"), "--format", "json"]);
    let json = crate::support::stdout(&json);
    assert!(
        json.contains("\"outcome\": \"memory-budget\"")
            || json.contains("\"outcome\":\"memory-budget\""),
        "{json}"
    );
}

/// Runs the `lockstep` binary with `args` from the repository root: its exit code, its
/// stdout, and its peak resident memory in KiB (`wait4`'s `ru_maxrss`, the child's alone).
#[cfg(target_os = "linux")]
#[allow(
    clippy::zombie_processes,
    reason = "the child is waited for by `wait4`, which std's `Child` does not know of"
)]
fn peak_kib(args: &[&str]) -> (Option<i32>, String, u64) {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .current_dir(crate::support::root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the lockstep binary runs");
    let mut out = String::new();
    let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let mut status = 0;
    // SAFETY: `rusage` is plain data that `wait4` fills; the child is ours and not yet
    // waited for (`child` is never waited on after this).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let peak = u64::try_from(usage.ru_maxrss).expect("a size");
    (code, out, peak)
}

/// The extreme files of issue 40, each with a small budget so that it is quick: a chaos
/// profile of 10,000 faults a minute over 1e10 ms (drawn up front, the schedule had been
/// counted at a quarter of what it takes), and a Kubernetes Lease run for 1e10 ms (the etcd
/// members' logs and key history had not been counted at all).
#[cfg(target_os = "linux")]
#[test]
fn the_memory_budget_bounds_the_peak_memory_of_a_run() {
    let chaos = file(&[
        ("scenario", "duration_ms = 1e10"),
        ("scenario", "memory_budget_mb = 128"),
        ("chaos", "faults_per_minute = 10_000"),
    ]);
    let lease = file(&[
        ("scenario", "duration_ms = 1e10"),
        ("scenario", "max_events = 1_000_000_000"),
        ("scenario", "memory_budget_mb = 32"),
        ("model", "kind = \"kubernetes\""),
        ("model", "ttl_ms = 15_000"),
        ("workload", "clients = 2"),
        ("workload", "think_ms = { uniform = [1_000, 3_000] }"),
    ]);
    for (name, text, budget_mb) in [("chaos", chaos, 128), ("lease", lease, 32)] {
        let path = crate::support::temp_scenario(&format!("memory-peak-{name}"), &text);
        let (code, out, peak) =
            peak_kib(&["run", path.to_str().expect("utf-8"), "--format", "json"]);
        let _ = std::fs::remove_dir_all(path.parent().expect("its directory"));
        let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(code, Some(1), "{name}: unknown, not the verdict expected");
        assert_eq!(json["outcome"], "memory-budget", "{name}");
        // Before, the chaos file peaked at 466 MB and the Lease run at 271 MB.
        let limit = (budget_mb + 200) << 10;
        assert!(
            peak < limit,
            "{name}: peak {} MB, budget {budget_mb} MB",
            peak >> 10
        );
    }
}

#[test]
fn a_cron_run_whose_wall_clock_jumps_ten_billion_periods_finishes_at_once() {
    // One client's wall clock steps 1e10 ms ahead on a 1 ms schedule: like robfig/cron and
    // Spring, it runs the tick it slept for and computes the next from its reading, so the
    // 1e10 ticks jumped over are missed, not run, and judging them costs no step per tick.
    let text = file(&[
        ("scenario", "duration_ms = 10_000"),
        ("scenario", "wall_budget_ms = 2_000"),
        ("model", "acquire_tries = 1"),
        ("workload", "kind = \"cron\""),
        ("workload", "clients = 3"),
        ("workload", "period_ms = 1"),
        ("workload", "work_ms = 0"),
        (
            "",
            "[[fault]]\nat_ms = 1_000\nclock_step = { node = \"client-1\", delta_ms = 1e10 }",
        ),
    ]);
    let path = crate::support::temp_scenario("cron-jump", &text);
    let out = crate::support::lockstep_within(
        &["run", path.to_str().expect("utf-8"), "--format", "json"],
        Duration::from_secs(20),
    );
    let _ = std::fs::remove_dir_all(path.parent().expect("its directory"));
    // Before, the check after the run walked every tick between two due ones: 1e10 steps,
    // which the run's wall-clock budget (polled between the world's events) never saw.
    let out = out.expect("the run finishes at once");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::support::stderr(&out)
    );
    let json: serde_json::Value =
        serde_json::from_str(&crate::support::stdout(&out)).expect("JSON");
    assert_eq!(json["outcome"], "completed");
    let cron = &json["cron"];
    let (missed, run) = (cron["missed"].as_u64(), cron["run"].as_u64());
    assert!(missed > Some(9_999_990_000), "{cron}");
    assert!(run < Some(20_000), "{cron}");
}
