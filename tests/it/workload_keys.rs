//! The `[workload]` keys of the leader loop: what a counter refuses, what needs `cancel`, the
//! kinds and modes named when misspelt, ranges checked as every other key's.

use crate::support::{GOOD, errors_of, lockstep, stderr, temp_scenario};

fn with_workload(keys: &str) -> String {
    format!("{GOOD}\n[workload]\n{keys}\n")
}

/// The one error line of `keys`, which must end with `tail`.
fn one_error(test: &str, keys: &str, tail: &str) {
    let lines = errors_of(test, &with_workload(keys));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].ends_with(tail), "{}", lines[0]);
}

#[test]
fn a_leader_workload_runs() {
    // Renewed until refused, so the leader's term is safe and the run valid (exit code 0).
    let text = with_workload(
        "kind = \"leader\"\ntask_every_ms = { uniform = [500, 1500] }\non_stopped_leading = \"cancel\"\nstop_delay_ms = 100",
    );
    let text = text.replace(
        "ttl_ms = 1_000",
        "ttl_ms = 1_000\nrenew = \"until-refused\"",
    );
    let path = temp_scenario("leader-runs", &text);
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn task_every_ms_needs_a_leader() {
    one_error(
        "task-every-counter",
        "task_every_ms = 500",
        "workload.task_every_ms: applies only to a leader workload: needs `kind = \"leader\"`",
    );
}

#[test]
fn on_stopped_leading_needs_a_leader() {
    one_error(
        "stopped-counter",
        "kind = \"counter\"\non_stopped_leading = \"exit\"",
        "workload.on_stopped_leading: applies only to a leader workload: needs `kind = \"leader\"`",
    );
}

#[test]
fn stop_delay_ms_needs_a_leader() {
    one_error(
        "stop-delay-counter",
        "stop_delay_ms = 500",
        "workload.stop_delay_ms: applies only to a leader workload: needs `kind = \"leader\"`",
    );
}

#[test]
fn stop_delay_ms_needs_cancel() {
    one_error(
        "stop-delay-exit",
        "kind = \"leader\"\nstop_delay_ms = 500",
        "workload.stop_delay_ms: applies only with `on_stopped_leading = \"cancel\"`",
    );
}

#[test]
fn an_unknown_kind_lists_the_kinds() {
    let lines = errors_of("kind", &with_workload("kind = \"follower\""));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(
            "workload.kind: unknown value `follower`, expected one of `counter`, `leader`, `queue`"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn an_unknown_mode_lists_the_modes() {
    let lines = errors_of(
        "mode",
        &with_workload("kind = \"leader\"\non_stopped_leading = \"panic\""),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("workload.on_stopped_leading: unknown value `panic`, expected one of `exit`, `cancel`, `ignore`"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_negative_task_period_is_out_of_range() {
    let lines = errors_of(
        "task-range",
        &with_workload("kind = \"leader\"\ntask_every_ms = { uniform = [-5, 10] }"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("workload.task_every_ms.uniform[0]: "),
        "{}",
        lines[0]
    );
}

#[test]
fn a_stop_delay_out_of_range_is_named() {
    let lines = errors_of(
        "stop-range",
        &with_workload("kind = \"leader\"\non_stopped_leading = \"cancel\"\nstop_delay_ms = 1e20"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("workload.stop_delay_ms: "),
        "{}",
        lines[0]
    );
}

#[test]
fn the_loaded_system_says_whether_its_clients_lead() {
    let path = std::path::Path::new("t.toml");
    let counter = lockstep::parse(GOOD, path).expect("loads");
    assert!(!counter.system.workload().is_leader());
    let leader = lockstep::parse(&with_workload("kind = \"leader\""), path).expect("loads");
    assert!(leader.system.workload().is_leader());
}
