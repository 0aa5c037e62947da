//! One run: a scenario and a seed in, a judged history out.

use lockstep_check::{History, Property, Validity, Verdict, check};
use lockstep_models::Observation;
use lockstep_models::system::Ran;
use lockstep_sim::{AppliedFault, Clocks, Outcome, Record, Time, TraceEntry, WorldConfig};

/// A seed whose two runs differ (the reports crate's, as `check` and `sweep` report it).
pub use lockstep_reports::suite::Mismatch;

use crate::expect::RecoveryBound;
use crate::scenario::{Scenario, Schedule};

/// What one run produced.
#[derive(Debug)]
pub struct RunResult {
    /// The seed.
    pub seed: u64,
    /// The trace hash: equal for equal runs.
    pub trace_hash: u64,
    /// Whether the run reached its end or its event bound.
    pub outcome: Outcome,
    /// Events handled.
    pub events: u64,
    /// The history the checker judged.
    pub history: History,
    /// The checker's verdict.
    pub verdict: Verdict,
    /// The property the scenario judges.
    pub property: Property,
    /// The verdict of that property.
    pub judged: Validity,
    /// How the run falls short of the scenario's expectation; empty when it meets it.
    pub unmet: Vec<String>,
    /// The readable trace, when asked for.
    pub trace: Option<Vec<TraceEntry>>,
    /// The family's own counts, as `(name, value, per)` (`lockstep_models::family::Counter`).
    pub counters: Vec<(String, u64, Option<String>)>,
    /// The time this run allows from the faults stopping to the next grant, when its scenario
    /// expects recovery.
    pub recovery_bound: Option<RecoveryBound>,
}

impl RunResult {
    /// True when the run meets the scenario's expectation.
    pub fn expected(&self) -> bool {
        self.unmet.is_empty()
    }
}

/// Runs `scenario` with `seed`; `trace` keeps the readable trace.
///
/// # Panics
/// If the models record a history the checker rejects: that is a harness bug, not a verdict.
pub fn run(scenario: &Scenario, seed: u64, trace: bool) -> RunResult {
    run_schedule(scenario, seed, &scenario.schedule(seed), trace)
}

/// Runs `scenario` with `seed` under `schedule` instead of the schedule the scenario gives for
/// that seed: how `hunt` tries a smaller schedule. Everything else (the system, the network,
/// the clocks, every random stream) is as in [`run`].
///
/// # Panics
/// As [`run`].
pub fn run_schedule(scenario: &Scenario, seed: u64, schedule: &Schedule, trace: bool) -> RunResult {
    run_kept(scenario, seed, schedule, trace).result
}

/// A run together with what its world left beyond the history: what a timeline draws (the
/// fault log, every node's clocks at the start and at the end, the nodes' observations).
#[derive(Debug)]
pub struct KeptRun {
    /// The run, exactly as [`run_schedule`] gives it.
    pub result: RunResult,
    /// The faults the world applied, in order.
    pub fault_log: Vec<AppliedFault>,
    /// Each node's clocks before the run started, in node order.
    pub initial_clocks: Vec<Clocks>,
    /// Each node's clocks at the end, in node order.
    pub final_clocks: Vec<Clocks>,
    /// The nodes' observations, in order.
    pub observations: Vec<Record<Observation>>,
}

/// [`run_schedule`], keeping what the world left. Keeping it changes nothing, so the run (and
/// its trace hash) is the same as [`run_schedule`]'s.
///
/// # Panics
/// As [`run`].
pub fn run_kept(scenario: &Scenario, seed: u64, schedule: &Schedule, trace: bool) -> KeptRun {
    let end = Time::ZERO + schedule.duration;
    let mut config = WorldConfig::new(seed, end, scenario.clocks.clone());
    config.max_events = scenario.max_events;
    config.link = scenario.link.clone();
    config.links = scenario.links.clone();
    config.faults = schedule.faults.clone();
    config.trace = trace;
    let Ran {
        outcome,
        history,
        observations,
        counters,
        fault_log,
        initial_clocks,
        final_clocks,
        trace_hash,
        events,
        trace,
    } = scenario.system.run(config);
    let verdict = check(&history, &scenario.check_options).unwrap_or_else(|e| {
        panic!("harness bug: the models recorded a history the checker rejects: {e}")
    });
    let counters = counters
        .into_iter()
        .map(|c| (c.name.to_string(), c.value, c.per.map(str::to_string)))
        .collect();
    let judged = verdict.get(scenario.expect.property);
    let recovery_bound = scenario.expect.recovery.map(|liveness| {
        RecoveryBound::of(
            scenario,
            liveness,
            &fault_log,
            &initial_clocks,
            end.as_nanos(),
        )
    });
    let unmet = scenario.expect.unmet(&verdict, recovery_bound.as_ref());
    let result = RunResult {
        seed,
        trace_hash,
        outcome,
        events,
        history,
        verdict,
        property: scenario.expect.property,
        judged,
        unmet,
        trace,
        counters,
        recovery_bound,
    };
    KeptRun {
        result,
        fault_log,
        initial_clocks,
        final_clocks,
        observations,
    }
}

/// The determinism check (`--check-determinism`): runs `first`'s seed of `scenario` again,
/// with the same `trace` setting, and compares the trace hashes.
///
/// # Errors
/// The [`Mismatch`] when the two runs' trace hashes differ.
pub fn rerun_matches(scenario: &Scenario, first: &RunResult, trace: bool) -> Result<(), Mismatch> {
    let second = run(scenario, first.seed, trace);
    if second.trace_hash == first.trace_hash {
        Ok(())
    } else {
        Err(Mismatch {
            scenario: scenario.name.clone(),
            seed: first.seed,
            first_trace_hash: format!("{:016x}", first.trace_hash),
            second_trace_hash: format!("{:016x}", second.trace_hash),
        })
    }
}
