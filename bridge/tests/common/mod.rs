//! What the bridge's tests under each runtime share: the catalogue, the agreement check
//! against the native engine, scenario files written for a test, a history's faults.

use std::path::PathBuf;

use lockstep_bridge::{Plan, Runtime};
use lockstep_check::{Event, History};

pub(crate) fn catalogue(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/catalogue")
        .join(file)
}

/// Runs `file` natively and under `runtime` (through `run`: the history and the mark
/// triggers that never fired) for seeds 1..=`seeds`: on every seed both meet the
/// scenario's expectation and judge its property alike.
pub(crate) fn agree(
    file: &str,
    seeds: u64,
    runtime: Runtime,
    run: impl Fn(&Plan, u64) -> Result<(History, Vec<usize>), String>,
) {
    let (scenario, plan) = Plan::load(&catalogue(file), runtime).expect("plannable");
    let mut misses = Vec::new();
    for seed in 1..=seeds {
        let native = lockstep::run(&scenario, seed, false);
        assert!(
            native.unmet.is_empty(),
            "{file} seed {seed} natively: {:?}",
            native.unmet
        );
        let (history, unfired) = run(&plan, seed).expect("a run");
        assert!(
            unfired.is_empty(),
            "{file} seed {seed}: a mark trigger never fired"
        );
        let verdict = lockstep_check::check(&history, &scenario.check_options)
            .expect("a well-formed history");
        let unmet = scenario.expect.unmet(&verdict, None);
        if !unmet.is_empty() || verdict.get(native.property) != native.judged {
            misses.push((seed, unmet));
        }
    }
    assert!(
        misses.is_empty(),
        "{file}: {} disagrees on {} seeds: {misses:?}",
        runtime.name(),
        misses.len()
    );
}

/// K1 under `runtime` (through `run`): seed 7 twice gives one history, in time order, with
/// the layout's names; seed 8 another.
pub(crate) fn deterministic(runtime: Runtime, run: impl Fn(&Plan, u64) -> Result<History, String>) {
    let (_, plan) =
        Plan::load(&catalogue("k1-gc-pause-unfenced.toml"), runtime).expect("plannable");
    let a = run(&plan, 7).expect("run");
    let b = run(&plan, 7).expect("run");
    let c = run(&plan, 8).expect("run");
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.entries.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert_eq!(a.names, ["redis", "storage", "client-1", "client-2"]);
}

pub(crate) fn write_scenario(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).expect("temp file");
    path
}

/// A scenario of 10 s, two clients, a TTL of 1 s and unfenced storage, to add faults to.
pub(crate) const BASE: &str = r#"
[scenario]
name = "bridge-refusal"
duration_ms = 10_000
[model]
kind = "redis"
ttl_ms = 1_000
[workload]
clients = 2
[storage]
mode = "unfenced"
"#;

/// Each `(fault, problem)`: [`BASE`] with the fault is refused under `runtime`, with an
/// error naming the file and starting with the problem.
pub(crate) fn refused(runtime: Runtime, cases: &[(&str, &str)]) {
    for (i, (fault, want)) in cases.iter().enumerate() {
        let name = format!("refusal-{}-{i}.toml", runtime.name());
        let path = write_scenario(&name, &format!("{BASE}{fault}"));
        let err = Plan::load(&path, runtime).expect_err("refused");
        assert!(err.problem.starts_with(want), "{err}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }
}

/// The fault entries of a history: (ms, detail).
pub(crate) fn faults(history: &History) -> Vec<(u64, String)> {
    history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Fault(f) => Some((e.time_ns / 1_000_000, f.detail.clone())),
            _ => None,
        })
        .collect()
}
