//! One wait for every family: the application's wait for the lock runs from its request to its
//! grant across every try its client gives up (docs/checker.md, acquire latency), so a lock
//! service out of reach for 30 s is a wait of at least 30 s whatever the client's give-up
//! policy (PostgreSQL's socket timeout, Redlock's tries, Consul's blocking query).

use std::path::Path;

use lockstep_check::Event;
use toml::{Table, Value};

use crate::support::scenario_files;

/// How long the service is out of the clients' reach, from the start of the run.
const CUT_MS: u64 = 30_000;

/// `file`, a chaos scenario, as one without chaos: one client, cut off from every other node
/// for the first [`CUT_MS`], then 30 s more to get the lock.
fn cut_off(file: &Path) -> String {
    let text = std::fs::read_to_string(file).expect("a chaos scenario");
    let mut t: Table = toml::from_str(&text).expect("TOML");
    t.remove("chaos");
    let section = |t: &mut Table, name: &str| -> Table {
        t.get(name)
            .and_then(Value::as_table)
            .cloned()
            .unwrap_or_default()
    };
    let mut scenario = section(&mut t, "scenario");
    scenario.remove("seeds");
    scenario.insert("duration_ms".into(), Value::Integer(60_000));
    t.insert("scenario".into(), Value::Table(scenario));
    let mut workload = section(&mut t, "workload");
    workload.insert("clients".into(), Value::Integer(1));
    workload.insert("think_ms".into(), Value::Integer(0));
    t.insert("workload".into(), Value::Table(workload));
    let mut expect = Table::new();
    expect.insert("property".into(), "resource".into());
    expect.insert("verdict".into(), "any".into());
    t.insert("expect".into(), Value::Table(expect));
    let fault: Table = toml::from_str(&format!(
        "at_ms = 0\npartition = {{ isolate = \"client-1\", for_ms = {CUT_MS} }}\n"
    ))
    .expect("TOML");
    t.insert("fault".into(), Value::Array(vec![Value::Table(fault)]));
    toml::to_string(&t).expect("TOML")
}

#[test]
fn a_service_out_of_reach_for_30_s_is_a_wait_of_at_least_30_s_in_every_family() {
    let mut families = Vec::new();
    for file in scenario_files("scenarios/chaos") {
        let text = cut_off(&file);
        let s = lockstep::parse(&text, &file).expect("the cut-off file loads");
        if s.system.workload().is_queue() {
            continue; // A worker waits for jobs, not for a lock.
        }
        let r = lockstep::run(&s, 1, false);
        let first_request_ns = r
            .history
            .entries
            .iter()
            .find(|e| matches!(e.event, Event::Request { .. }))
            .map(|e| e.time_ns)
            .expect("the client asks for the lock");
        let latency = r.verdict.liveness.acquire_latency.expect("a wait");
        let failures = r.verdict.liveness.acquire_failures;
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        // The wait that began at the first request lasts at least to the heal.
        assert!(
            latency.max_ns >= CUT_MS * 1_000_000 - first_request_ns,
            "{name}: longest wait {} ms ({failures} tries given up), the service out of reach \
             from {} ms to {CUT_MS} ms",
            latency.max_ns / 1_000_000,
            first_request_ns / 1_000_000
        );
        eprintln!(
            "{name}: longest wait {} ms across {failures} tries given up",
            latency.max_ns / 1_000_000
        );
        families.push(s.system.family_name().to_string());
    }
    families.sort();
    families.dedup();
    assert_eq!(
        families,
        [
            "Consul",
            "Kubernetes Lease",
            "PostgreSQL",
            "Redis",
            "Redlock",
            "ZooKeeper",
            "etcd"
        ],
        "every family is tried"
    );
}
