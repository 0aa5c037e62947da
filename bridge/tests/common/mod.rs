//! What the bridge's tests under each runtime share: the catalogue, the agreement check
//! against the native engine, scenario files written for a test, a history's faults.

use std::path::{Path, PathBuf};

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

/// A scenario file written for one test in Cargo's directory for test files
/// (`target/tmp`), removed when dropped, even when the test panics.
#[derive(Debug)]
pub(crate) struct TempFile(PathBuf);

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `text` to `name` (unique among the tests of one runtime) in `target/tmp`.
pub(crate) fn write_scenario(name: &str, text: &str) -> TempFile {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).expect("temp file");
    TempFile(path)
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

/// K3 under `runtime` (through `run`), seeds 1 to 20: client-1's write sent in the delay's
/// window lands at storage 15 s or more after the delay began, and no operation of that
/// grant lands in between: the delay is applied to that direction, not merely declared.
pub(crate) fn delayed_write_lands_late(
    runtime: Runtime,
    run: impl Fn(&Plan, u64) -> Result<History, String>,
) {
    let (_, plan) = Plan::load(&catalogue("k3-delayed-write.toml"), runtime).expect("plannable");
    let client1 = lockstep_check::NodeId(2);
    for seed in 1..=20 {
        let history = run(&plan, seed).expect("run");
        let at = |e: &lockstep_check::Entry| e.time_ns;
        let start = history
            .entries
            .iter()
            .find(|e| matches!(&e.event, Event::Fault(f) if f.detail.starts_with("delay +15000")))
            .map(at)
            .expect("the delay fired");
        let grant = history
            .entries
            .iter()
            .filter(|e| e.time_ns <= start)
            .rev()
            .find_map(|e| match e.event {
                Event::Grant { grant, .. } if grant.client == client1 => Some(grant),
                _ => None,
            })
            .expect("client-1 held the lock at its mark");
        let landed: Vec<u64> = history
            .entries
            .iter()
            .filter(|e| matches!(&e.event, Event::Storage(op) if op.grant == grant))
            .map(at)
            .filter(|t| *t > start)
            .collect();
        assert!(!landed.is_empty(), "seed {seed}: the delayed write landed");
        assert!(
            landed.iter().all(|t| *t >= start + 15_000_000_000),
            "seed {seed}: an operation of {grant:?} landed before the delay ran out: {landed:?} \
             (delay from {start})"
        );
    }
}

/// K1's pause under every storage mode the example client can drive (the file's own
/// unfenced storage, and `fenced-writes` and `fenced-all` with `INCR` tokens), natively and
/// under `runtime` (through `run`), seeds 1 to 30: the storage host accepts and rejects as
/// the native storage does (the resource's verdict, whether a stale op was accepted, whether
/// one was rejected), and each fenced mode rejects the paused holder's write on every seed.
pub(crate) fn every_storage_mode(
    runtime: Runtime,
    run: impl Fn(&Plan, u64) -> Result<History, String>,
) {
    let k1 = std::fs::read_to_string(catalogue("k1-gc-pause-unfenced.toml")).expect("K1");
    let (body, _) = k1.split_once("[expect]").expect("K1 has expectations");
    for (mode, fencing) in [
        ("unfenced", ""),
        ("fenced-writes", "fencing = \"incr\"\n"),
        ("fenced-all", "fencing = \"incr\"\n"),
    ] {
        let text = body
            .replace("mode = \"unfenced\"", &format!("mode = \"{mode}\""))
            .replace("ttl_ms = 10_000\n", &format!("ttl_ms = 10_000\n{fencing}"));
        let path = write_scenario(&format!("k1-{mode}-{}.toml", runtime.name()), &text);
        let (scenario, plan) = Plan::load(&path, runtime).expect("plannable");
        for seed in 1..=30 {
            let native = lockstep::run(&scenario, seed, false).verdict;
            let history = run(&plan, seed).expect("run");
            let bridged = lockstep_check::check(&history, &scenario.check_options)
                .expect("a well-formed history");
            let sums = |v: &lockstep_check::Verdict| {
                (v.resource, v.stale_accepted.count > 0, v.stale_rejected > 0)
            };
            assert_eq!(
                sums(&bridged),
                sums(&native),
                "{mode}, seed {seed}: (resource, stale accepted, stale rejected) under {} vs natively",
                runtime.name()
            );
            assert_eq!(
                bridged.stale_rejected > 0,
                mode != "unfenced",
                "{mode}, seed {seed}"
            );
        }
    }
}
