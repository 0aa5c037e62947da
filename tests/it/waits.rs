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

/// A client's waits and critical sections, walked from a written history.
#[derive(Default)]
struct Walk {
    /// Each wait's length in ns, and whether it was still open at a crash or the end.
    waits: Vec<(u64, bool)>,
    /// `[from, to)` of every wait, and of every critical section.
    waiting: Vec<(u64, u64)>,
    sections: Vec<(u64, u64)>,
}

/// The waits and the unavailable time of the history `text` (as `run --history` writes it),
/// by a walk of its own: each client's want opens at its first `request` since its last
/// grant, start or crash and closes at its grant, a scheduled tick's failed try, its crash or
/// the end; a critical section runs from its grant to its exit, its client's crash, its
/// client's next grant or the end.
fn walk(text: &str) -> (Walk, u64) {
    use serde_json::Value as J;
    use std::collections::BTreeMap;
    let mut lines = text.lines();
    let header: J = serde_json::from_str(lines.next().expect("a header")).expect("JSON");
    let end = header["end_ns"].as_u64().expect("end_ns");
    let mut w = Walk::default();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    let mut tick: BTreeMap<String, bool> = BTreeMap::new();
    let mut open: BTreeMap<String, (u64, u64)> = BTreeMap::new(); // client -> (seq, from)
    for line in lines {
        let e: J = serde_json::from_str(line).expect("JSON");
        let t = e["time_ns"].as_u64().expect("time_ns");
        let client = e["client"].as_str().unwrap_or_default().to_string();
        match e["event"].as_str().expect("event") {
            "due" => {
                tick.insert(client, true);
            }
            "request" => {
                want.entry(client).or_insert(t);
            }
            "grant" => {
                let c = e["grant"]["client"].as_str().expect("client").to_string();
                let seq = e["grant"]["seq"].as_u64().expect("seq");
                if let Some(from) = want.remove(&c) {
                    w.waits.push((t - from, false));
                    w.waiting.push((from, t));
                }
                tick.remove(&c);
                if let Some((_, from)) = open.insert(c, (seq, t)) {
                    w.sections.push((from, t));
                }
            }
            // Only a scheduled tick's try ends the want.
            "acquire-failed" if tick.remove(&client).is_some() => {
                if let Some(from) = want.remove(&client) {
                    w.waiting.push((from, t));
                }
            }
            "exit" => {
                let c = e["grant"]["client"].as_str().expect("client").to_string();
                let seq = e["grant"]["seq"].as_u64().expect("seq");
                if open.get(&c).is_some_and(|&(s, _)| s == seq) {
                    let (_, from) = open.remove(&c).expect("open");
                    w.sections.push((from, t));
                }
            }
            "fault" if e["kind"] == "crash" => {
                for n in e["nodes"].as_array().expect("nodes") {
                    let n = n.as_str().expect("a name").to_string();
                    tick.remove(&n);
                    if let Some(from) = want.remove(&n) {
                        w.waits.push((t - from, true));
                        w.waiting.push((from, t));
                    }
                    if let Some((_, from)) = open.remove(&n) {
                        w.sections.push((from, t));
                    }
                }
            }
            _ => {}
        }
    }
    for (_, from) in want {
        w.waits.push((end - from, true));
        w.waiting.push((from, end));
    }
    for (_, (_, from)) in open {
        w.sections.push((from, end));
    }
    // Unavailable: every instant, in ns, some wait covers and no section does, found by
    // cutting the run at every edge.
    let mut cuts: Vec<u64> = w
        .waiting
        .iter()
        .chain(&w.sections)
        .flat_map(|&(a, b)| [a, b])
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let covered =
        |spans: &[(u64, u64)], a: u64, b: u64| spans.iter().any(|&(f, t)| f <= a && b <= t);
    let unavailable = cuts
        .windows(2)
        .filter(|p| covered(&w.waiting, p[0], p[1]) && !covered(&w.sections, p[0], p[1]))
        .map(|p| p[1] - p[0])
        .sum();
    (w, unavailable)
}

#[test]
fn waits_and_unavailability_recomputed_from_a_written_history_match_in_every_family() {
    use crate::support::{TempDir, lockstep, stdout};
    // The first catalogue scenario of each family.
    let mut seen: Vec<String> = Vec::new();
    let dir = TempDir::new("recompute");
    for file in scenario_files("scenarios/catalogue") {
        let s = lockstep::load(&file)
            .expect("a catalogue scenario")
            .scenario;
        let family = s.system.family_name().to_string();
        if seen.contains(&family) || s.system.workload().is_queue() {
            continue;
        }
        seen.push(family.clone());
        let history = dir.join(format!("{}.jsonl", seen.len()));
        let out = lockstep(&[
            "run",
            &file.display().to_string(),
            "--history",
            &history.display().to_string(),
            "--format",
            "json",
        ]);
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        let (w, unavailable_ns) = walk(&std::fs::read_to_string(&history).expect("history"));
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let ms = |ns: u64| ns as f64 / 1e6;
        assert_eq!(
            report["unavailable_ms"].as_f64(),
            Some(ms(unavailable_ns)),
            "{name} ({family}): unavailable"
        );
        let censored = w.waits.iter().filter(|(_, c)| *c).count() as u64;
        assert_eq!(
            report["acquire_censored"].as_u64(),
            Some(censored),
            "{name}"
        );
        let mut lengths: Vec<u64> = w.waits.iter().map(|&(ns, _)| ns).collect();
        lengths.sort_unstable();
        let rank = |p: usize| lengths[((p * lengths.len()).div_ceil(100)).max(1) - 1];
        let latency = &report["acquire_latency_ms"];
        if lengths.is_empty() {
            assert!(latency.is_null(), "{name}: {latency}");
            continue;
        }
        for (key, ns) in [("p50", rank(50)), ("p99", rank(99)), ("max", rank(100))] {
            assert_eq!(
                latency[key].as_f64(),
                Some(ms(ns)),
                "{name} ({family}): {key}"
            );
        }
        eprintln!(
            "{name} ({family}): {} waits ({censored} censored), p99 {} ms, unavailable {} ms",
            lengths.len(),
            ms(rank(99)),
            ms(unavailable_ns)
        );
    }
    seen.sort();
    assert_eq!(seen.len(), 7, "every family: {seen:?}");
}
