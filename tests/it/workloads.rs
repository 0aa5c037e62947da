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
            "check_validity_before_write" => "true",
            "watchdog" => "{ after_ms = 100 }",
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
