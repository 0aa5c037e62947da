//! The catalogue: every scenario reaches its expectation, deterministically.

use lockstep::{load, run};

use crate::support::scenario_files;

#[test]
fn every_catalogue_scenario_reaches_its_expectation() {
    let mut failures = Vec::new();
    for path in scenario_files("scenarios/catalogue") {
        let loaded = load(&path).unwrap_or_else(|e| panic!("{e}"));
        let s = &loaded.scenario;
        let r = run(s, s.seed, false);
        if !r.expected() {
            failures.push(format!("{}: {}", path.display(), r.unmet.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "unmet expectations:\n{}",
        failures.join("\n")
    );
}

#[test]
fn a_catalogue_run_is_identical_when_repeated() {
    for path in scenario_files("scenarios/catalogue") {
        let s = load(&path).unwrap_or_else(|e| panic!("{e}")).scenario;
        for seed in [s.seed, 7, 1_000_003] {
            let (a, b) = (run(&s, seed, false), run(&s, seed, false));
            assert_eq!(a.trace_hash, b.trace_hash, "{} seed {seed}", path.display());
            assert_eq!(a.history, b.history, "{} seed {seed}", path.display());
        }
    }
}

/// K1's events and trace hash with seed 1. A change to any model, the world or the scenario
/// changes them: update them only for an intended change of behaviour, and say so in the commit
/// message. The README's sample output shows them too (a test in `tidy.rs` holds it to them).
pub(crate) const K1_GOLDEN_EVENTS: u64 = 4722;
pub(crate) const K1_GOLDEN_TRACE_HASH: &str = "3b237740bd446a55";

#[test]
fn k1_golden_trace_hash_is_pinned() {
    let s = load(&crate::support::root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml"))
        .expect("K1 loads")
        .scenario;
    let r = run(&s, 1, false);
    assert_eq!(
        (r.events, format!("{:016x}", r.trace_hash).as_str()),
        (K1_GOLDEN_EVENTS, K1_GOLDEN_TRACE_HASH)
    );
}

#[test]
fn a_watched_run_is_the_same_run_and_hears_the_time_as_it_goes() {
    // `lockstep run` draws its progress bar from the watch; watching changes nothing.
    let s = load(&crate::support::root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml"))
        .expect("K1 loads")
        .scenario;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let heard = std::sync::Arc::clone(&seen);
    let watch = std::sync::Arc::new(move |t: lockstep_sim::Time| {
        heard.lock().expect("not poisoned").push(t.as_nanos());
    });
    let r = lockstep::run::run_watched(&s, 1, false, watch);
    assert_eq!(
        (r.events, format!("{:016x}", r.trace_hash).as_str()),
        (K1_GOLDEN_EVENTS, K1_GOLDEN_TRACE_HASH)
    );
    let seen = seen.lock().expect("not poisoned");
    // Every CHECK_EVERY (1024) entries taken from the queue, from the first: at least one
    // look per 1024 events.
    assert!(seen.len() as u64 > K1_GOLDEN_EVENTS / 1024, "{seen:?}");
    assert!(seen.is_sorted(), "{seen:?}");
    assert!(seen.iter().all(|&t| t <= s.duration.as_nanos()), "{seen:?}");
    assert!(seen.last() > seen.first(), "{seen:?}");
}

#[test]
fn the_k1_violation_is_the_paused_clients_late_write() {
    let s = load(&crate::support::root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml"))
        .expect("K1 loads")
        .scenario;
    let r = run(&s, 1, false);
    let stale = &r.verdict.stale_accepted.examples[0];
    assert_eq!(r.history.name(stale.grant.client), "client-1");
    assert_eq!(
        stale.grant.seq, 1,
        "the first grant, held through the pause"
    );
    assert_ne!(stale.newer_grant.client, stale.grant.client);
}

#[test]
fn k1_gives_identical_trace_hashes_for_the_same_seed_over_200_seeds() {
    let s = load(&crate::support::root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml"))
        .expect("K1 loads")
        .scenario;
    let mut hashes = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let (a, b) = (run(&s, seed, false), run(&s, seed, false));
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert_eq!(a.verdict, b.verdict, "seed {seed}");
        hashes.insert(a.trace_hash);
    }
    assert_eq!(hashes.len(), 200, "every seed is a different run");
}

/// Runs every seed in `seeds` of a catalogue scenario and returns the seeds whose run misses
/// the scenario's expectation, with why.
fn misses(file: &str, seeds: std::ops::Range<u64>) -> Vec<String> {
    let s = load(&crate::support::root().join(file))
        .unwrap_or_else(|e| panic!("{e}"))
        .scenario;
    seeds
        .filter_map(|seed| {
            let r = run(&s, seed, false);
            (!r.expected()).then(|| format!("{file} seed {seed}: {}", r.unmet.join("; ")))
        })
        .collect()
}

#[test]
fn the_redis_persistence_and_replication_fixes_stay_valid_over_1000_seeds() {
    // Each fix's counterpart is invalid on its declared seed (the catalogue test above); the
    // fix must hold on every seed, not just its own.
    let mut failures = Vec::new();
    for file in [
        "scenarios/catalogue/k5-restart-aof-always.toml",
        "scenarios/catalogue/k5-delayed-restart.toml",
        "scenarios/catalogue/r1-async-failover-wait.toml",
    ] {
        failures.extend(misses(file, 0..1_000));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_zookeeper_fixes_stay_valid_over_1000_seeds_and_the_unsafe_ones_are_caught_on_100() {
    let mut failures = Vec::new();
    for file in [
        "scenarios/catalogue/j8-zk-client-pause-fenced.toml",
        "scenarios/catalogue/j8-zk-client-partition-stop-on-suspended.toml",
        "scenarios/catalogue/curator-604-session-checked-protection.toml",
    ] {
        failures.extend(misses(file, 1..1_001));
    }
    for file in [
        "scenarios/catalogue/j8-zk-client-pause.toml",
        "scenarios/catalogue/j8-zk-client-partition.toml",
        "scenarios/catalogue/curator-604-stale-node-after-reconnect.toml",
    ] {
        failures.extend(misses(file, 1..101));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_kubernetes_and_leader_fixes_stay_valid_over_1000_seeds_and_the_unsafe_ones_are_caught_on_200()
 {
    let mut failures = Vec::new();
    for file in [
        "scenarios/catalogue/k8s-j9-wall-step-observed-time.toml",
        "scenarios/catalogue/k8s-fabric8-7160-record.toml",
        "scenarios/catalogue/k8s-delayed-renew-response-within-margin.toml",
        "scenarios/catalogue/k8s-leader-cut-off-from-apiservers.toml",
        "scenarios/catalogue/k8s-clock-rate-skew-within-bound.toml",
        "scenarios/catalogue/k8s-control-plane-failover.toml",
        "scenarios/catalogue/k8s-leader-pause-exit-fenced.toml",
        "scenarios/catalogue/k8s-leader-pause-cancel-fenced.toml",
        "scenarios/catalogue/leader-pause-exit.toml",
        "scenarios/catalogue/leader-pause-ignore-fenced.toml",
    ] {
        failures.extend(misses(file, 1..1_001));
    }
    for file in [
        "scenarios/catalogue/k8s-j9-wall-step-renew-time.toml",
        "scenarios/catalogue/k8s-fabric8-7160-own-lease-duration.toml",
        "scenarios/catalogue/k8s-delayed-renew-response.toml",
        "scenarios/catalogue/k8s-clock-rate-skew.toml",
        "scenarios/catalogue/k8s-leader-pause-exit-unfenced.toml",
        "scenarios/catalogue/k8s-leader-pause-cancel-unfenced.toml",
        "scenarios/catalogue/leader-pause-cancel.toml",
    ] {
        failures.extend(misses(file, 1..201));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The run report of `file` with `clients` clients (the file's own count with `None`) and
/// seed `seed`: what `lockstep run` prints.
fn report(file: &str, clients: Option<u32>, seed: u64) -> lockstep_reports::RunReport {
    let path = crate::support::root().join(file);
    let mut text = std::fs::read_to_string(&path).expect("the scenario file");
    if let Some(n) = clients {
        let mut doc: toml_edit::DocumentMut = text.parse().expect("TOML");
        doc["workload"]["clients"] = toml_edit::value(i64::from(n));
        text = doc.to_string();
    }
    let s = lockstep::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    let r = run(&s, seed, false);
    assert!(r.expected(), "{file} seed {seed}: {:?}", r.unmet);
    lockstep::suite::run_report(file, &s.name, &r)
}

fn notifications_per_release(r: &lockstep_reports::RunReport) -> f64 {
    let c = r
        .counters
        .iter()
        .find(|c| c.name == "watch notifications")
        .expect("the ZooKeeper family counts watch notifications");
    assert_eq!(c.per.as_deref(), Some("lock releases"));
    let json = r.json();
    assert!(json.contains("\"watch notifications\""), "{json}");
    assert!(r.table().contains("watch notifications"), "{}", r.table());
    c.ratio.expect("there were releases")
}

#[test]
fn the_herd_effect_is_linear_in_the_waiters_and_the_predecessor_watch_constant() {
    let (pred, parent) = (
        "scenarios/catalogue/zk-herd-predecessor.toml",
        "scenarios/catalogue/zk-herd-parent.toml",
    );
    for seed in 1..=3 {
        let p5 = notifications_per_release(&report(pred, Some(5), seed));
        let p10 = notifications_per_release(&report(pred, None, seed));
        let h5 = notifications_per_release(&report(parent, Some(5), seed));
        let h10 = notifications_per_release(&report(parent, None, seed));
        eprintln!("seed {seed}: predecessor {p5:.2} / {p10:.2}, parent {h5:.2} / {h10:.2}");
        // One waiter wakes per release, whatever the number of clients.
        for p in [p5, p10] {
            assert!((0.9..=1.05).contains(&p), "seed {seed}: predecessor {p}");
        }
        // Every waiter wakes on every change of the children (releases and new waiters'
        // nodes): about twice the waiters per release, growing with them.
        assert!(h5 >= 4.0 && h10 >= 9.0, "seed {seed}: parent {h5} {h10}");
        assert!(
            h10 >= 1.8 * h5,
            "seed {seed}: parent {h5} -> {h10} is not linear"
        );
    }
}

#[test]
fn zookeepers_queue_grants_in_request_order_and_redis_retries_do_not() {
    for seed in 1..=3 {
        let zk = report("scenarios/catalogue/zk-herd-predecessor.toml", None, seed);
        let redis = report(
            "scenarios/catalogue/redis-fairness-10-clients.toml",
            None,
            seed,
        );
        let (z, r) = (
            zk.fairness.expect("grants"),
            redis.fairness.expect("grants"),
        );
        eprintln!("seed {seed}: fairness ZooKeeper {z:.2}, Redis {r:.2}");
        assert!(zk.table().contains("fairness"), "{}", zk.table());
        assert!(z >= 0.85, "seed {seed}: ZooKeeper fairness {z}");
        assert!(r <= 0.3, "seed {seed}: Redis fairness {r}");
    }
}
