//! The `[workload]` keys of the leader loop: what a counter refuses, what needs `cancel`, the
//! kinds and modes named when misspelt, ranges checked as every other key's.

use crate::support::{GOOD, errors_of, lockstep, stderr, temp_scenario};

fn with_workload(keys: &str) -> String {
    format!("{GOOD}\n[workload]\n{keys}\n")
}

/// The base file with a leader workload of `keys` (after `kind`), on a Redis lock renewed
/// until refused, which a leader needs.
fn with_leader(keys: &str) -> String {
    with_workload(&format!("kind = \"leader\"\n{keys}")).replace(
        "ttl_ms = 1_000",
        "ttl_ms = 1_000\nrenew = \"until-refused\"",
    )
}

/// The one error line of `keys`, which must end with `tail`.
fn one_error(test: &str, keys: &str, tail: &str) {
    let lines = errors_of(test, &with_workload(keys));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].ends_with(tail), "{}", lines[0]);
}

/// The one error line of the whole file `text`, which must end with `tail`.
fn sole_error(test: &str, text: &str, tail: &str) {
    let lines = errors_of(test, text);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].ends_with(tail), "{}", lines[0]);
}

/// A file of family `model` (its `[model]` lines) with `[workload]` keys `workload`.
fn of_family(model: &str, workload: &str) -> String {
    format!(
        "[scenario]\nname = \"t\"\nduration_ms = 10_000\n\n[model]\n{model}\n\n[workload]\n{workload}\n"
    )
}

#[test]
fn a_leader_workload_runs() {
    // Renewed until refused, so the leader's term is safe and the run valid (exit code 0).
    let text = with_leader(
        "task_every_ms = { uniform = [500, 1500] }\non_stopped_leading = \"cancel\"\nstop_delay_ms = 100",
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
    sole_error(
        "stop-delay-exit",
        &with_leader("stop_delay_ms = 500"),
        "workload.stop_delay_ms: applies only with `on_stopped_leading = \"cancel\"`",
    );
}

#[test]
fn an_unknown_kind_lists_the_kinds() {
    let lines = errors_of("kind", &with_workload("kind = \"follower\""));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(
            "workload.kind: unknown value `follower`, expected one of `counter`, `leader`, `queue`, `cron`, `keys`, `read-write`"
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
        &with_leader("task_every_ms = { uniform = [-5, 10] }"),
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
        &with_leader("on_stopped_leading = \"cancel\"\nstop_delay_ms = 1e20"),
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
    let leader = lockstep::parse(&with_leader(""), path).expect("loads");
    assert!(leader.system.workload().is_leader());
}

#[test]
fn a_leader_needs_a_grant_that_does_not_lapse_under_it() {
    // Plain Redis: the key expires under a leader that never renews it.
    one_error(
        "leader-unrenewed",
        "kind = \"leader\"",
        "workload.kind: \"leader\" keeps its grant for as long as it runs, and Redis as set \
         lets it lapse: its key expires ttl_ms after the grant, as nothing renews it: set \
         model.renew = true (renewed until refused) or \"watchdog\" (Redisson's)",
    );
    // Redlock extends its keys only when told to.
    sole_error(
        "leader-redlock",
        &of_family("kind = \"redlock\"\nttl_ms = 10_000", "kind = \"leader\""),
        "workload.kind: \"leader\" keeps its grant for as long as it runs, and Redlock as set \
         lets it lapse: its keys expire ttl_ms after the grant, as nothing extends them: set \
         model.renew = true (extended every ttl_ms / 3 while a quorum agrees)",
    );
    // The lock table's row is deleted by age alone.
    sole_error(
        "leader-pg-table",
        &of_family(
            "kind = \"postgres\"\nrecipe = \"table\"\ncleanup_ttl_ms = 30_000",
            "kind = \"leader\"",
        ),
        "workload.kind: \"leader\" keeps its grant for as long as it runs, and PostgreSQL as \
         set lets it lapse: the cleanup job deletes its row cleanup_ttl_ms after the grant, as \
         nothing refreshes acquired_at: use recipe = \"session\" or \"xact\", whose lock \
         lasts as long as its connection",
    );
    // Renewed or extended, or a session lock: it loads.
    let path = std::path::Path::new("t.toml");
    for (model, kind) in [
        ("kind = \"redis\"\nttl_ms = 10_000\nrenew = true", "leader"),
        (
            "kind = \"redis\"\nttl_ms = 10_000\nrenew = \"watchdog\"",
            "leader",
        ),
        (
            "kind = \"redlock\"\nttl_ms = 10_000\nrenew = true",
            "leader",
        ),
        ("kind = \"postgres\"", "leader"),
        // A counter's critical section ends on its own: a lapse is its failure to show.
        ("kind = \"redis\"\nttl_ms = 10_000", "counter"),
    ] {
        let text = of_family(model, &format!("kind = \"{kind}\""));
        if let Err(e) = lockstep::parse(&text, path) {
            panic!("{model} with {kind}: {e}");
        }
    }
}

#[test]
fn the_keys_of_many_keys_need_kind_keys() {
    let lines = errors_of(
        "rows-counter",
        &with_workload("rows = 10\nlocks = 2\nzipf = 1.0"),
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.ends_with("applies only to many keys: needs `kind = \"keys\"`"))
            .count(),
        3,
        "{lines:?}"
    );
}

#[test]
fn many_keys_take_at_most_a_lock_per_row() {
    one_error(
        "locks-above-rows",
        "kind = \"keys\"\nrows = 10\nlocks = 11",
        "workload.locks: must be between 1 (one lock for every row) and workload.rows (10, a lock \
         per row), not 11",
    );
    one_error(
        "rows-zero",
        "kind = \"keys\"\nrows = 0\nlocks = 1",
        "workload.rows: 0 is out of range: expected 1 to 10000",
    );
}

#[test]
fn many_keys_need_a_family_that_takes_many_locks() {
    sole_error(
        "keys-etcd",
        &of_family("kind = \"etcd\"\nttl_ms = 5_000", "kind = \"keys\""),
        "workload.kind: \"keys\" needs a lock client that takes many locks (see the families' \
         pages in docs/families/); etcd as set has none",
    );
}

#[test]
fn a_cron_job_needs_its_period_and_takes_no_think_time() {
    let lines = errors_of(
        "cron-bare",
        &with_workload("kind = \"cron\"\nthink_ms = 10"),
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].contains("workload.think_ms: a scheduled job does not think"),
        "{lines:?}"
    );
    assert!(
        lines[1].ends_with(
            "workload.period_ms: is required with `kind = \"cron\"`: the time between ticks, in ms"
        ),
        "{lines:?}"
    );
    one_error(
        "cron-keys-counter",
        "lock_at_least_ms = 10",
        "workload.lock_at_least_ms: applies only to a scheduled job: needs `kind = \"cron\"`",
    );
}

#[test]
fn writers_need_a_read_write_lock_and_a_writer_among_the_clients() {
    one_error(
        "writers-counter",
        "writers = 1",
        "workload.writers: applies only to a read-write lock: needs `kind = \"read-write\"`",
    );
    one_error(
        "writers-above-clients",
        "kind = \"read-write\"\nclients = 3\nwriters = 4",
        "workload.writers: must be between 1 and workload.clients (3): the first clients write \
         and the others read, not 4",
    );
    one_error(
        "writers-zero",
        "kind = \"read-write\"\nclients = 3\nwriters = 0",
        "workload.writers: must be between 1 and workload.clients (3): the first clients write \
         and the others read, not 0",
    );
}

#[test]
fn a_read_write_lock_needs_a_family_that_has_one() {
    sole_error(
        "rw-k8s",
        &of_family(
            "kind = \"kubernetes\"\nttl_ms = 15_000",
            "kind = \"read-write\"",
        ),
        "workload.kind: \"read-write\" needs a lock client with a read-write lock (see the \
         families' pages in docs/families/); Kubernetes Lease as set has none",
    );
    // Redisson's lock is modelled on a single instance only.
    let replicated = GOOD.replace("ttl_ms = 1_000", "ttl_ms = 1_000\nreplicas = 2");
    let lines = errors_of(
        "rw-redis-replicas",
        &format!("{replicated}\n[workload]\nkind = \"read-write\"\n"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("Redis as set has none"), "{lines:?}");
}

#[test]
fn readers_cannot_share_a_cas_token_resource() {
    let text =
        format!("{GOOD}\n[workload]\nkind = \"read-write\"\n\n[storage]\nmode = \"cas-token\"\n");
    let lines = errors_of("rw-cas", &text);
    // Redis's tokens are not for compare-and-set either; the readers' problem is the second.
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[1].ends_with(
            "storage.mode: \"cas-token\" lets one claimant in at a time, so the holders of \
             \"read-write\" could not share: use \"unfenced\" or \"fenced-writes\""
        ),
        "{}",
        lines[1]
    );
}

#[test]
fn a_try_needs_a_family_with_a_try_form() {
    sole_error(
        "try-k8s",
        &of_family(
            "kind = \"kubernetes\"\nttl_ms = 15_000",
            "kind = \"leader\"\nacquire = \"try\"",
        ),
        "workload.acquire: \"try\" needs a lock client with a try form (see the families' \
         pages in docs/families/); Kubernetes Lease as set has none",
    );
    one_error(
        "acquire-bad",
        "acquire = \"maybe\"",
        "workload.acquire: unknown value `maybe`, expected `block` or `try`",
    );
    // Redis's try is one SET NX: the family's description says so.
    let path = std::path::Path::new("t.toml");
    let s = lockstep::parse(&with_workload("acquire = \"try\""), path).expect("loads");
    assert!(
        s.system.describe().system.contains("try"),
        "{:?}",
        s.system.describe()
    );
}

#[test]
fn a_nested_acquisition_needs_a_family_that_can_take_its_lock_again() {
    sole_error(
        "reenter-k8s",
        &of_family("kind = \"kubernetes\"\nttl_ms = 15_000", "reenter = true"),
        "workload.reenter: needs a lock client that can take its lock again (see the \
         families' pages in docs/families/); Kubernetes Lease as set cannot",
    );
    // Redisson's renewing lock counts re-entries in a hash: not modelled.
    sole_error(
        "reenter-redisson",
        &of_family(
            "kind = \"redis\"\nttl_ms = 10_000\nrenew = \"watchdog\"",
            "reenter = true",
        ),
        "workload.reenter: needs a lock client that can take its lock again (see the \
         families' pages in docs/families/); Redis as set cannot",
    );
    // Only a critical section of the counter or keys loop has a nested call.
    sole_error(
        "reenter-leader",
        &of_family(
            "kind = \"etcd\"\nttl_ms = 10_000\nrecipe = \"election\"",
            "kind = \"leader\"\nreenter = true",
        ),
        "workload.reenter: a nested acquisition takes the lock again inside the critical \
         section of the counter or keys loop; \"leader\" has no such section",
    );
    one_error(
        "reenter-bad",
        "reenter = \"yes\"",
        "workload.reenter: invalid type: string \"yes\", expected true or false",
    );
}
