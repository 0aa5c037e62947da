//! The workload registry: every kind declares the history events its clients record and the
//! verdict sections that measure it (`lockstep_models::Workload`), and a run of each kind's
//! scenario shows exactly that: its own events and measures present, every other kind's
//! absent. A kind is one file and one registry line; this test holds its declarations to
//! what its clients do.

use std::path::Path;

use lockstep::run;
use lockstep_check::jsonl::{Judging, write};
use lockstep_models::workload::{VisitWorkload, Workload, for_each_workload};

use crate::support::root;

/// One scenario of each kind, by its `workload.kind`.
const SCENARIOS: &[(&str, &str)] = &[
    ("counter", "scenarios/chaos/redis-unfenced.toml"),
    ("leader", "scenarios/failover/failover-etcd-3.toml"),
    ("queue", "scenarios/queue/pg-skip-locked-4-workers.toml"),
    ("cron", "scenarios/cron/redis-try.toml"),
    ("keys", "scenarios/keys/redis-rows-10.toml"),
    ("read-write", "scenarios/read-write/rw-etcd.toml"),
];

/// Each kind's name, records and measures.
fn declared() -> Vec<(
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
)> {
    struct List(
        Vec<(
            &'static str,
            &'static [&'static str],
            &'static [&'static str],
        )>,
    );
    impl VisitWorkload for List {
        fn visit<W: Workload>(&mut self) {
            self.0.push((W::KIND, W::RECORDS, W::MEASURES));
        }
    }
    let mut list = List(Vec::new());
    for_each_workload(&mut list);
    list.0
}

#[test]
fn every_kind_records_and_measures_what_it_declares_and_nothing_of_the_others() {
    let kinds = declared();
    assert_eq!(
        kinds.iter().map(|k| k.0).collect::<Vec<_>>(),
        SCENARIOS.iter().map(|s| s.0).collect::<Vec<_>>(),
        "a scenario for every kind of the registry, in its order"
    );
    for &(kind, file) in SCENARIOS {
        let path = root().join(file);
        let scenario = lockstep::load(&path).expect("loads").scenario;
        assert_eq!(scenario.system.workload().kind.kind(), kind, "{file}");
        let r = run(&scenario, 1, false);
        let judging = Judging::of(&scenario.check_options, scenario.expect.property);
        let text = write(&r.history, &judging);
        let events: Vec<String> = text
            .lines()
            .skip(1)
            .filter_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).ok()?;
                Some(v["event"].as_str()?.to_string())
            })
            .collect();
        let verdict = serde_json::to_value(&r.verdict).expect("verdict as JSON");
        for &(other, records, measures) in &kinds {
            let ours = other == kind;
            for event in records {
                assert_eq!(
                    events.iter().any(|e| e == event),
                    ours,
                    "{file} ({kind}): event `{event}` of kind {other}"
                );
            }
            for section in measures {
                let present = !verdict[section].is_null();
                assert_eq!(
                    present, ours,
                    "{file} ({kind}): verdict `{section}` of {other}"
                );
            }
        }
    }
}

#[test]
fn the_shared_keys_listed_for_errors_are_the_sections_typed_keys() {
    // An unknown key's error lists the shared keys and the kind's own: a shared key given
    // alone must load, so the list names no key the section does not take.
    let base = "[scenario]\nname = \"t\"\nduration_ms = 1_000\n\n[model]\nkind = \"redis\"\n\
                ttl_ms = 1_000\n\n[workload]\n";
    let err = lockstep::parse(&format!("{base}bogus = 1\n"), Path::new("t.toml"))
        .expect_err("an unknown key");
    let text = err.to_string();
    let listed = text
        .split("expected one of ")
        .nth(1)
        .expect("the keys are listed");
    for key in listed.split(", ").map(|k| k.trim().trim_matches('`')) {
        let value = match key {
            "kind" => "\"counter\"",
            "acquire" => "\"block\"",
            "check_validity_before_write" | "reenter" => "true",
            "watchdog" => "{ after_ms = 100 }",
            "per_client" => "{ client-1 = { start_ms = 10 } }",
            _ => "10",
        };
        let file = format!("{base}{key} = {value}\n");
        lockstep::parse(&file, Path::new("t.toml"))
            .unwrap_or_else(|e| panic!("`{key}` is listed but refused: {e}"));
    }
}

/// The run's count of `name` among its counters.
fn count(r: &lockstep::RunResult, name: &str) -> u64 {
    r.counters
        .iter()
        .find(|(n, _, _)| n == name)
        .map_or_else(|| panic!("no counter {name}"), |(_, v, _)| *v)
}

#[test]
fn a_try_gives_up_where_a_blocking_acquisition_waits_and_the_herd_is_counted() {
    let run_of = |file: &str| {
        let path = root().join("scenarios/herd").join(file);
        let scenario = lockstep::load(&path).expect("loads").scenario;
        run(&scenario, 1, false)
    };
    for family in ["redis", "etcd", "zk", "pg"] {
        let block = run_of(&format!("{family}-block.toml"));
        let tried = run_of(&format!("{family}-try.toml"));
        assert_eq!(
            block.verdict.liveness.acquire_failures, 0,
            "{family} blocks"
        );
        assert!(
            tried.verdict.liveness.acquire_failures > 0,
            "{family} tries and gives up"
        );
        // Every acquisition is granted or given up, but those still going at the run's end
        // (at most one per client).
        let ended = tried.verdict.liveness.grants + tried.verdict.liveness.acquire_failures;
        let started = count(&tried, "acquisitions");
        assert!(
            (ended..=ended + 50).contains(&started),
            "{family}: {started} acquisitions, {ended} ended"
        );
    }
    // SET NX once per try; a blocking Redis client retries, many times per grant under 50.
    let redis = run_of("redis-try.toml");
    assert_eq!(
        count(&redis, "acquire requests"),
        count(&redis, "acquisitions")
    );
    let redis = run_of("redis-block.toml");
    assert!(count(&redis, "acquire requests") > 5 * count(&redis, "acquisitions"));
    // Watching the parent wakes every waiter on every release: the herd.
    let per = |r: &lockstep::RunResult| {
        count(r, "acquire requests") as f64 / count(r, "acquisitions") as f64
    };
    let predecessor = per(&run_of("zk-block.toml"));
    let parent = per(&run_of("zk-block-parent.toml"));
    assert!(
        parent > 10.0 * predecessor,
        "{parent} against {predecessor}"
    );
}

#[test]
fn a_nested_acquisition_is_counted_refused_uncounted_or_waits_for_itself() {
    let run_of = |file: &str| {
        let path = root().join("scenarios/reentry").join(file);
        let scenario = lockstep::load(&path).expect("loads").scenario;
        run(&scenario, 1, false)
    };
    let figures = |r: &lockstep::RunResult| r.verdict.reentry.clone().expect("nested figures");
    // Counted: every nested call granted, Curator's without a round trip, PostgreSQL's with
    // one; the lock stays held, every section writes.
    for (file, most_ms) in [("zk.toml", 0), ("pg.toml", 20)] {
        let r = run_of(file);
        let f = figures(&r);
        assert!(f.nested > 50 && f.granted == f.nested, "{file}: {f:?}");
        assert!(f.longest_wait_ns <= most_ms * 1_000_000, "{file}: {f:?}");
        assert_eq!(r.verdict.double_holders.pairs, 0, "{file}");
        assert!(
            r.verdict.liveness.cs_completed + 1 >= r.verdict.liveness.grants,
            "{file}"
        );
    }
    // Re-entered without a count (etcd): granted in one round trip, and the nested unlock
    // frees the lock under the outer holder: two holders, and updates lost.
    let etcd = run_of("etcd.toml");
    let f = figures(&etcd);
    assert!(
        f.granted == f.nested && f.longest_wait_ns < 50_000_000,
        "{f:?}"
    );
    assert!(etcd.verdict.double_holders.pairs > 0 && etcd.verdict.lost_updates.count > 0);
    // Refused by the client (Consul's ErrLockHeld), or a try on the own key (redis-py):
    // never granted, nothing written, the lock safe.
    for file in ["consul.toml", "redis-try.toml"] {
        let r = run_of(file);
        let f = figures(&r);
        assert!(f.nested > 50 && f.granted == 0, "{file}: {f:?}");
        assert_eq!(r.verdict.liveness.accepted_writes, 0, "{file}");
        assert_eq!(r.verdict.double_holders.pairs, 0, "{file}");
    }
    // Not re-entrant, blocking (redis-py): the nested call waits for the client's own key to
    // expire (TTL 10 s), while the outer section stays open: others get in.
    let redis = run_of("redis.toml");
    let f = figures(&redis);
    let wait = f.wait.expect("some nested call granted");
    assert!(wait.p50_ns >= 5_000_000_000, "{f:?}");
    assert!(redis.verdict.double_holders.pairs > 0);
    // The report names what a nested call does.
    let path = root().join("scenarios/reentry/etcd.toml");
    let s = lockstep::load(&path).expect("loads").scenario;
    assert!(
        s.system.describe().system.contains("without a count"),
        "{:?}",
        s.system.describe()
    );
}

#[test]
fn a_holder_told_to_stop_inside_its_nested_call_unlocks_both_holds() {
    // PostgreSQL counts the nested lock: a holder that only released the outer hold would
    // keep the lock (count 1) until its session ended, and the other client would wait.
    // Told to stop inside the nested section (`read-done` comes before the nested call is
    // granted; its grant ends the section at once), it unlocks the nested hold first.
    let file = root().join("scenarios/shutdown/postgres-terminate.toml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "work_ms = { uniform = [2_000, 3_000] }",
        "work_ms = { uniform = [2_000, 3_000] }\nreenter = true",
    );
    assert!(text.contains("reenter = true"));
    let scenario = lockstep::parse(&text, &file).expect("loads");
    for seed in 1..=3 {
        let r = run(&scenario, seed, false);
        assert!(
            r.expected(),
            "seed {seed}: {:?}",
            r.verdict.liveness.failover
        );
        let nested = r.verdict.reentry.clone().expect("nested figures");
        assert!(nested.nested >= 1, "seed {seed}");
    }
}

#[test]
fn a_session_lost_around_a_nested_lock_ends_the_section_without_a_panic() {
    // etcd, a try-lock: client-1's session expires while it holds the lock (partitioned for
    // 15 s, TTL 5 s), with or without its nested Mutex; its next tries must start afresh.
    let text = r#"[scenario]
name = "nested-session-lost"
duration_ms = 120_000

[model]
kind = "etcd"
ttl_ms = 5_000

[workload]
clients = 2
reenter = true
acquire = "try"
think_ms = { uniform = [100, 300] }
work_ms = { uniform = [20_000, 21_000] }

[[fault]]
at_ms = 3_000
partition = { groups = ["client-1", "servers"], for_ms = 15_000 }

[expect]
verdict = "any"
"#;
    let scenario = lockstep::parse(text, Path::new("t.toml")).expect("loads");
    for seed in 1..=6 {
        let r = run(&scenario, seed, false);
        assert!(r.verdict.reentry.is_some(), "seed {seed}");
        assert!(
            r.verdict.liveness.grants > 1,
            "seed {seed}: the lock goes on being granted"
        );
    }
}
