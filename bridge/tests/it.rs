//! Agreement: the example client under turmoil reaches the verdict the native engine
//! reaches (the scenario's expectation) on the catalogue's Redis scenarios, seed by seed.

use std::path::PathBuf;

use lockstep_bridge::Plan;
use lockstep_bridge::turmoil::run;

fn catalogue(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/catalogue")
        .join(file)
}

/// Runs `file` natively and under turmoil for `seeds` seeds; both must meet the
/// scenario's expectation on every seed. Returns how many turmoil runs met it.
fn agree(file: &str, seeds: u64) {
    let (scenario, plan) = Plan::load(&catalogue(file)).expect("plannable");
    let mut misses = Vec::new();
    for seed in 1..=seeds {
        let native = lockstep::run(&scenario, seed, false);
        assert!(
            native.unmet.is_empty(),
            "{file} seed {seed} natively: {:?}",
            native.unmet
        );
        let ran = run(&plan, seed).expect("turmoil run");
        assert!(
            ran.unfired.is_empty(),
            "{file} seed {seed}: a mark trigger never fired"
        );
        let verdict = lockstep_check::check(&ran.history, &scenario.check_options)
            .expect("a well-formed history");
        let unmet = scenario.expect.unmet(&verdict, None);
        if !unmet.is_empty() || verdict.get(native.property) != native.judged {
            misses.push((seed, unmet));
        }
    }
    assert!(
        misses.is_empty(),
        "{file}: turmoil disagrees on {} seeds: {misses:?}",
        misses.len()
    );
}

#[test]
fn k1_probe() {
    agree("k1-gc-pause-unfenced.toml", 3);
}

#[test]
fn probe_print() {
    for f in [
        "k1-gc-pause-unfenced.toml",
        "k2-gc-pause-fenced.toml",
        "k3-delayed-write.toml",
        "redis-naive-del-release.toml",
        "redis-naive-del-release-fixed.toml",
    ] {
        let (scenario, plan) = Plan::load(&catalogue(f)).expect("plannable");
        let ran = run(&plan, 1).expect("run");
        let v = lockstep_check::check(&ran.history, &scenario.check_options).unwrap();
        eprintln!(
            "{f}: entries {} res {:?} dh {:?} stale {} rej {} lost {} unmet {:?} unfired {:?}",
            ran.history.entries.len(),
            v.resource,
            v.double_holders,
            v.stale_accepted.count,
            v.stale_rejected,
            v.lost_updates.count,
            scenario.expect.unmet(&v, None),
            ran.unfired
        );
    }
}
