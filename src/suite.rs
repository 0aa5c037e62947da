//! `lockstep check`: every scenario under some paths, each over its seeds, against its
//! `[expect]`.
//!
//! Start at [`check_suite`]. It runs one seed after another and keeps, per scenario, counts and
//! the first [`KEPT_FAILURES`] failing seeds, so its memory does not grow with the number of
//! seeds. It reads no clock: the binary measures wall-clock time around it ([`WallTimes`]) and
//! passes it to the renderers, so everything else in a [`SuiteResult`] is the same on every
//! machine and every repetition. The result's types and their terminal text are the reports
//! crate's (`lockstep_reports::suite`), re-exported here.

use std::io;
use std::path::{Path, PathBuf};

use lockstep_check::metrics::{Metric, Metrics, values};
pub use lockstep_reports::suite::{
    DeterminismCheck, Mismatch, ScenarioResult, SeedFailure, SuiteResult, VerdictCounts, WallTimes,
};
use lockstep_reports::{Counter, RunReport, RunSource};
use lockstep_sim::Outcome;

use crate::expect::rate_unmet;
use crate::run::{RunResult, rerun_matches, run};
use crate::scenario::{Loaded, Seeds};

/// How many failing seeds a scenario's result keeps, with their sentences and reproduce
/// commands; the rest are counted.
pub const KEPT_FAILURES: usize = 5;

/// Why the paths given to `lockstep check` name no scenario files.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// The path does not exist.
    #[error("{}: no such file or directory", .0.display())]
    Missing(PathBuf),
    /// The path, or a directory under it, cannot be read.
    #[error("{}: cannot read: {error}", path.display())]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// A directory holds no `*.toml` file, at any depth.
    #[error("{}: no scenario files (*.toml) in this directory", .0.display())]
    Empty(PathBuf),
}

/// The scenario files named by `paths`: a file as it is, a directory walked recursively for
/// `*.toml` files, sorted by path. Paths keep their order on the command line; a file named
/// twice is checked once. Symbolic links to directories are not followed (no cycles).
///
/// # Errors
/// The first path that does not exist, cannot be read, or is a directory without scenarios.
pub fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, FindError> {
    let mut files: Vec<PathBuf> = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => FindError::Missing(path.clone()),
            _ => FindError::Unreadable {
                path: path.clone(),
                error: e,
            },
        })?;
        let found = if meta.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            if found.is_empty() {
                return Err(FindError::Empty(path.clone()));
            }
            found.sort();
            found
        } else {
            vec![path.clone()]
        };
        for f in found {
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    Ok(files)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), FindError> {
    let unreadable = |error| FindError::Unreadable {
        path: dir.to_path_buf(),
        error,
    };
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(unreadable)?;
        if kind.is_dir() {
            walk(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "toml")
            && (kind.is_file() || path.is_file())
        {
            found.push(path);
        }
    }
    Ok(())
}

/// How `lockstep check` runs the scenarios.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Run each scenario with this many seeds from its `seed` instead of the seeds it
    /// declares (`--seeds N`).
    pub seeds: Option<u64>,
    /// Run every seed twice and compare the trace hashes (`--check-determinism`).
    pub check_determinism: bool,
    /// Worker threads (`--jobs`); 0 is 1. The result does not depend on it.
    pub jobs: usize,
}

/// The seeds a check runs `scenario` with: the `count` seeds from its `seed` when
/// `seeds_override` is `Some(count)`, else the seeds it declares.
pub fn seeds_of(scenario: &crate::Scenario, seeds_override: Option<u64>) -> Seeds {
    match seeds_override {
        Some(count) => Seeds::Range {
            from: scenario.seed,
            count,
        },
        None => scenario.seeds.clone(),
    }
}

/// The `k`-th seed (from 0) of `seeds`, `count` seeds from `from` when overridden.
pub(crate) fn nth_seed(seeds: &Seeds, k: u64) -> u64 {
    match seeds {
        Seeds::List(v) => v[usize::try_from(k).expect("a listed seed's index fits memory")],
        Seeds::Range { from, .. } => from.wrapping_add(k),
    }
}

/// Runs every loaded scenario over its seeds (or `seeds_override` seeds from its `seed`, as
/// `lockstep check --seeds N`) and compares each run with its `[expect]`.
pub fn check_suite(loaded: &[Loaded], seeds_override: Option<u64>) -> SuiteResult {
    check_suite_observed(loaded, seeds_override, |_| {})
}

/// [`check_suite`], calling `done` after each scenario (the binary times them with it).
pub fn check_suite_observed(
    loaded: &[Loaded],
    seeds_override: Option<u64>,
    done: impl FnMut(&ScenarioResult),
) -> SuiteResult {
    let options = CheckOptions {
        seeds: seeds_override,
        ..CheckOptions::default()
    };
    check_suite_with(loaded, options, done)
}

/// [`check_suite_observed`] with every option of `lockstep check`.
pub fn check_suite_with(
    loaded: &[Loaded],
    options: CheckOptions,
    mut done: impl FnMut(&ScenarioResult),
) -> SuiteResult {
    check_suite_progress(loaded, options, |p| {
        if let Progress::Scenario(r) = p {
            done(r);
        }
    })
}

/// What [`check_suite_progress`] tells its observer, on the calling thread, in the order of
/// the scenarios and their seeds.
#[derive(Debug)]
pub enum Progress<'a> {
    /// A seed ran; `true` when it met `[expect]`.
    Seed(bool),
    /// A scenario's every seed ran.
    Scenario(&'a ScenarioResult),
}

/// [`check_suite_with`] telling `observe` of each seed and each scenario. Threads run whole
/// runs, never parts of one ([`crate::pool`]): the seeds of all the scenarios are one range of
/// positions, scenario after scenario, and each run's outcome is folded in position order, so
/// the result is the same for any number of `jobs`.
pub fn check_suite_progress(
    loaded: &[Loaded],
    options: CheckOptions,
    mut observe: impl FnMut(Progress<'_>),
) -> SuiteResult {
    let seeds: Vec<Seeds> = loaded
        .iter()
        .map(|l| seeds_of(&l.scenario, options.seeds))
        .collect();
    // `starts[i]` is the position of scenario i's first seed; the last entry is the total.
    let mut starts = vec![0u64];
    for s in &seeds {
        let last = *starts.last().expect("starts with 0");
        starts.push(last.saturating_add(s.len()));
    }
    let total = *starts.last().expect("starts with 0");
    let files: Vec<String> = loaded
        .iter()
        .map(|l| l.path.display().to_string())
        .collect();
    let mut results: Vec<ScenarioResult> = Vec::with_capacity(loaded.len());
    let mut finished = 0;
    // Starts every scenario whose first seed is at or before `position` and finishes every
    // one whose seeds all come before it (a scenario without seeds is started and finished).
    let mut advance = |results: &mut Vec<ScenarioResult>,
                       observe: &mut dyn FnMut(Progress<'_>),
                       position: u64| {
        loop {
            while finished < results.len() && starts[finished + 1] <= position {
                let r: &mut ScenarioResult = &mut results[finished];
                r.finish();
                observe(Progress::Scenario(r));
                finished += 1;
            }
            let i = results.len();
            if i < loaded.len() && starts[i] <= position {
                results.push(empty_result(&loaded[i], &files[i], options));
            } else {
                return;
            }
        }
    };
    let work = |position: u64| {
        let i = starts.partition_point(|&st| st <= position) - 1;
        let seed = nth_seed(&seeds[i], position - starts[i]);
        seed_run(
            &loaded[i].scenario,
            &files[i],
            seed,
            options.check_determinism,
        )
    };
    crate::pool::run_ordered(options.jobs, total, work, |position, r| {
        advance(&mut results, &mut observe, position);
        let expected = r.expected;
        // The scenario holding `position` is the last one started.
        results.last_mut().expect("a scenario is started").add(r);
        observe(Progress::Seed(expected));
    });
    advance(&mut results, &mut observe, u64::MAX);
    SuiteResult::new(results)
}

/// A scenario's result before any seed ran.
fn empty_result(loaded: &Loaded, file: &str, options: CheckOptions) -> ScenarioResult {
    let s = &loaded.scenario;
    ScenarioResult {
        name: s.name.clone(),
        file: file.to_string(),
        ok: false,
        seeds: 0,
        passed: 0,
        failed: 0,
        property: s.expect.property,
        expected_verdict: s.expect.verdict,
        expected_invalid_rate: s.expect.invalid_rate,
        verdict_counts: VerdictCounts::default(),
        unmet: Vec::new(),
        exhausted: 0,
        events: 0,
        failures: Vec::new(),
        determinism: options.check_determinism.then(DeterminismCheck::default),
        metrics: Metrics::default(),
    }
}

/// One seed's run, as a check keeps it.
#[derive(Debug)]
struct SeedRun {
    seed: u64,
    events: u64,
    judged: lockstep_check::Validity,
    exhausted: bool,
    expected: bool,
    /// When the run did not meet `[expect]`.
    failure: Option<SeedFailure>,
    /// With the determinism check, the second run's difference, if any.
    mismatch: Option<Mismatch>,
    /// The checker's metrics the run measured.
    metrics: Vec<(&'static Metric, u64)>,
}

fn seed_run(s: &crate::Scenario, file: &str, seed: u64, check_determinism: bool) -> SeedRun {
    let r = run(s, seed, false);
    let mismatch = if check_determinism {
        rerun_matches(s, &r, false).err()
    } else {
        None
    };
    let failure = (!r.expected()).then(|| seed_failure(file, &s.name, &r));
    SeedRun {
        seed,
        events: r.events,
        judged: r.judged,
        exhausted: r.outcome != Outcome::Completed,
        expected: r.expected(),
        failure,
        mismatch,
        metrics: values(&r.verdict).collect(),
    }
}

/// Folding a scenario's seeds in, in their order.
trait Fold {
    fn add(&mut self, r: SeedRun);
    fn finish(&mut self);
}

impl Fold for ScenarioResult {
    fn add(&mut self, r: SeedRun) {
        debug_assert!(r.failure.is_none() || !r.expected, "seed {}", r.seed);
        if let Some(check) = &mut self.determinism {
            if let Some(mismatch) = r.mismatch {
                check.mismatched += 1;
                if check.mismatches.len() < KEPT_FAILURES {
                    check.mismatches.push(mismatch);
                }
            }
        }
        self.seeds += 1;
        for &(m, value) in &r.metrics {
            self.metrics.add_value(m, value);
        }
        self.events = self.events.saturating_add(r.events);
        self.verdict_counts.add(r.judged);
        if r.exhausted {
            self.exhausted += 1;
        }
        if r.expected {
            self.passed += 1;
        } else {
            self.failed += 1;
            if let Some(f) = r.failure.filter(|_| self.failures.len() < KEPT_FAILURES) {
                self.failures.push(f);
            }
        }
    }

    fn finish(&mut self) {
        let deterministic = self.determinism.as_ref().is_none_or(|d| d.mismatched == 0);
        // What the seeds together must meet, and no seed fails alone.
        self.unmet = self
            .expected_invalid_rate
            .and_then(|b| rate_unmet(&b, self.verdict_counts.invalid, self.seeds))
            .into_iter()
            .collect();
        self.ok = self.failed == 0 && deterministic && self.seeds > 0 && self.unmet.is_empty();
    }
}

/// One scenario over its seeds (see [`check_suite`]).
pub fn check_scenario(loaded: &Loaded, seeds_override: Option<u64>) -> ScenarioResult {
    let options = CheckOptions {
        seeds: seeds_override,
        ..CheckOptions::default()
    };
    check_scenario_with(loaded, options)
}

/// [`check_scenario`] with every option of `lockstep check`.
pub fn check_scenario_with(loaded: &Loaded, options: CheckOptions) -> ScenarioResult {
    let file = loaded.path.display().to_string();
    let mut result = empty_result(loaded, &file, options);
    for seed in &seeds_of(&loaded.scenario, options.seeds) {
        result.add(seed_run(
            &loaded.scenario,
            &file,
            seed,
            options.check_determinism,
        ));
    }
    result.finish();
    result
}

/// A failing seed as `check` and `sweep` list it, from the run's report.
pub(crate) fn seed_failure(file: &str, name: &str, r: &RunResult) -> SeedFailure {
    let report = run_report(file, name, r);
    SeedFailure {
        seed: r.seed,
        trace_hash: report.trace_hash,
        verdict: r.judged,
        unmet: report.unmet,
        class: report.miss,
        explanations: report.explanations,
        reproduce: report.reproduce,
    }
}

/// The report of one run of the scenario `name` from `file`, as `lockstep run` prints it.
/// `check` takes its reproduce command and explanations from here too, so both commands say
/// the same thing about the same run.
pub fn run_report(file: &str, name: &str, result: &RunResult) -> RunReport {
    let source = RunSource {
        scenario: name.to_string(),
        file: file.to_string(),
        seed: result.seed,
        trace_hash: result.trace_hash,
        complete: result.outcome == Outcome::Completed,
        events: result.events,
        end_ns: result.history.end_ns,
        stopped: match result.outcome {
            Outcome::OverMemory { .. } => Some("memory-budget"),
            Outcome::Interrupted { .. } => Some("wall-budget"),
            Outcome::Completed | Outcome::Exhausted { .. } => None,
        }
        .zip(result.stopped.clone()),
    };
    let explanations = result.verdict.explain(&result.history);
    RunReport::new(
        source,
        result.property,
        result.verdict.clone(),
        result.unmet.clone(),
        explanations,
    )
    .with_miss(result.miss)
    .with_counters(Counter::list(&result.counters))
    .with_unfired(result.unfired.clone())
}
