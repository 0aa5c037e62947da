//! One run: a scenario and a seed in, a judged history out.

use lockstep_check::{History, Property, Validity, Verdict, check};
use lockstep_models::Observation;
use lockstep_models::system::Ran;
use lockstep_reports::Unfired;
use lockstep_reports::format::ms;
use std::sync::Arc;

use lockstep_sim::{
    AppliedFault, Clocks, Dur, Interrupt, Outcome, Record, Time, TraceEntry, Unreached, WorldConfig,
};

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
    /// Whether the run reached its end, or what stopped it.
    pub outcome: Outcome,
    /// Why the run stopped before its end (events, memory or wall-clock budget), in words.
    pub stopped: Option<String>,
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
    /// What kind of miss the run is; `None` when it meets the expectation.
    pub miss: Option<crate::expect::Miss>,
    /// The readable trace, when asked for.
    pub trace: Option<Vec<TraceEntry>>,
    /// The family's own counts, as `(name, value, per)` (`lockstep_models::family::Counter`).
    pub counters: Vec<(String, u64, Option<String>)>,
    /// The faults placed on a mark that did not fire, in schedule order. Each of the file's
    /// that is not optional is also in `unmet`.
    pub unfired: Vec<Unfired>,
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
    // The schedule is moved into the world, not copied: a chaos profile's can be as large as
    // the memory budget allows.
    let schedule = scenario.schedule(seed);
    let own = schedule.faults.starts_with(&scenario.faults);
    run_owned(scenario, seed, schedule, own, trace, None).result
}

/// Where a run has got to, told to the host as it goes: called about every
/// [`lockstep_sim::CHECK_EVERY`] events with the true time reached. Nothing in the run reads
/// it, so a watched run is the same run (`lockstep run` draws its progress bar from it).
pub type Watch = Arc<dyn Fn(Time) + Send + Sync>;

/// [`run`], telling `watch` where the run has got to as it goes.
///
/// # Panics
/// As [`run`].
pub fn run_watched(scenario: &Scenario, seed: u64, trace: bool, watch: Watch) -> RunResult {
    let schedule = scenario.schedule(seed);
    let own = schedule.faults.starts_with(&scenario.faults);
    run_owned(scenario, seed, schedule, own, trace, Some(watch)).result
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
    let own = schedule.faults.starts_with(&scenario.faults);
    run_owned(scenario, seed, schedule.clone(), own, trace, None)
}

/// [`run_kept`] of a schedule given to the world, telling `watch`, if any, where the run has
/// got to; `own` when it is the scenario's own, whose faults start with the file's
/// `[[fault]]` list.
fn run_owned(
    scenario: &Scenario,
    seed: u64,
    schedule: Schedule,
    own: bool,
    trace: bool,
    watch: Option<Watch>,
) -> KeptRun {
    let end = Time::ZERO + schedule.duration;
    let mut config = WorldConfig::new(seed, end, scenario.clocks.clone());
    config.max_events = scenario.max_events;
    config.memory_budget = scenario.memory_budget;
    config.interrupt = Some(wall_deadline(scenario.wall_budget, watch));
    config.link = scenario.link.clone();
    config.links = scenario.links.clone();
    config.tcp = scenario.tcp;
    config.faults = schedule.faults;
    config.trace = trace;
    let Ran {
        outcome,
        history,
        observations,
        counters,
        fault_log,
        unfired,
        initial_clocks,
        final_clocks,
        trace_hash,
        events,
        trace,
    } = scenario.system.run(config);
    let unfired = unfired_of(scenario, own, &history.names, unfired);
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
    let mut unmet = scenario.expect.unmet(&verdict, recovery_bound.as_ref());
    unmet.extend(
        unfired
            .iter()
            .filter(|u| !u.optional)
            .map(Unfired::sentence),
    );
    // A trigger of the file that did not fire means the run did not test what the file
    // placed: it cannot be judged (`unknown`) unless the verdict already missed.
    let miss = scenario
        .expect
        .miss(
            &verdict,
            recovery_bound.as_ref(),
            outcome != Outcome::Completed,
        )
        .or_else(|| (!unmet.is_empty()).then_some(crate::expect::Miss::Unknown));
    let result = RunResult {
        seed,
        trace_hash,
        outcome,
        stopped: stopped(scenario, outcome),
        events,
        history,
        verdict,
        property: scenario.expect.property,
        judged,
        unmet,
        miss,
        trace,
        counters,
        unfired,
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

/// The unfired triggers of a run, named for the scenario: its schedule starts with the file's
/// `[[fault]]` list when it is the scenario's own (`own`), followed by what the chaos profile
/// drew (always optional); any other schedule (a shrink's) names its faults by place.
fn unfired_of(
    scenario: &Scenario,
    own: bool,
    names: &[String],
    unfired: Vec<lockstep_sim::Unfired>,
) -> Vec<Unfired> {
    let n = scenario.faults.len();
    unfired
        .into_iter()
        .map(|u| {
            let (fault, optional) = match (own, u.index.checked_sub(n)) {
                (true, None) => (
                    format!("fault[{}]", scenario.origin[u.index]),
                    scenario.optional[u.index],
                ),
                (true, Some(k)) => (format!("chaos[{k}]"), true),
                (false, _) => (format!("schedule[{}]", u.index), true),
            };
            let none = Unfired {
                fault,
                node: None,
                mark: None,
                occurrence: 0,
                reached: 0,
                lapsed_ms: None,
                role: None,
                due_ms: None,
                optional,
                index: u.index,
            };
            match u.why {
                Unreached::Mark {
                    node,
                    mark,
                    occurrence,
                    reached,
                    lapsed,
                } => Unfired {
                    node: Some(names[node.index()].clone()),
                    mark: Some(mark),
                    occurrence,
                    reached,
                    lapsed_ms: lapsed.map(|t| ms(t.as_nanos())),
                    ..none
                },
                Unreached::Role { role, since } => Unfired {
                    role: Some(role),
                    due_ms: Some(ms(since.as_nanos())),
                    ..none
                },
            }
        })
        .collect()
}

/// The host's side of the wall-clock budget: an [`Interrupt`] that says stop once `budget`
/// has passed since the run started, and tells `watch` the true time reached. The world asks
/// it between events and never lets it change an event, so a run it does not stop is the same
/// run as without it.
fn wall_deadline(budget: Dur, watch: Option<Watch>) -> Interrupt {
    #[allow(
        clippy::disallowed_methods,
        reason = "the wall-clock budget of a run is read by the host between events, never by the run; a run it stops ends unknown and is reported as not reproducible"
    )]
    let start = std::time::Instant::now();
    let budget = std::time::Duration::from_nanos(budget.as_nanos());
    Interrupt(Arc::new(move |now| {
        if let Some(watch) = &watch {
            watch(now);
        }
        start.elapsed() >= budget
    }))
}

/// Why a run stopped before its end, in words, or `None` when it reached it.
pub fn stopped(scenario: &Scenario, outcome: Outcome) -> Option<String> {
    match outcome {
        Outcome::Completed => None,
        Outcome::Exhausted { at } => Some(format!(
            "ran out of events at {at} of true time (scenario.max_events = {})",
            scenario.max_events
        )),
        Outcome::OverMemory { at, bytes } => Some(format!(
            "over its memory budget at {at} of true time: about {} MB held (scenario.memory_budget_mb = {})",
            bytes >> 20,
            scenario.memory_budget >> 20
        )),
        Outcome::Interrupted { at } => Some(format!(
            "over its wall-clock budget of {} (scenario.wall_budget_ms) at {at} of true time; where a run stops on wall time is not reproducible by seed",
            scenario.wall_budget
        )),
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
