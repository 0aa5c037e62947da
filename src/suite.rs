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

pub use lockstep_reports::suite::{
    DeterminismCheck, ScenarioResult, SeedFailure, SuiteResult, VerdictCounts, WallTimes,
};
use lockstep_reports::{Counter, RunReport, RunSource};
use lockstep_sim::Outcome;

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
        check_determinism: false,
    };
    check_suite_with(loaded, options, done)
}

/// [`check_suite_observed`] with every option of `lockstep check`.
pub fn check_suite_with(
    loaded: &[Loaded],
    options: CheckOptions,
    mut done: impl FnMut(&ScenarioResult),
) -> SuiteResult {
    let scenarios = loaded
        .iter()
        .map(|l| {
            let r = check_scenario_with(l, options);
            done(&r);
            r
        })
        .collect();
    SuiteResult::new(scenarios)
}

/// One scenario over its seeds (see [`check_suite`]).
pub fn check_scenario(loaded: &Loaded, seeds_override: Option<u64>) -> ScenarioResult {
    let options = CheckOptions {
        seeds: seeds_override,
        check_determinism: false,
    };
    check_scenario_with(loaded, options)
}

/// [`check_scenario`] with every option of `lockstep check`.
pub fn check_scenario_with(loaded: &Loaded, options: CheckOptions) -> ScenarioResult {
    let seeds_override = options.seeds;
    let s = &loaded.scenario;
    let file = loaded.path.display().to_string();
    // A declared list is borrowed, not copied: it may hold millions of seeds.
    let overridden;
    let seeds = match seeds_override {
        Some(_) => {
            overridden = seeds_of(s, seeds_override);
            &overridden
        }
        None => &s.seeds,
    };
    let mut result = ScenarioResult {
        name: s.name.clone(),
        file,
        ok: false,
        seeds: 0,
        passed: 0,
        failed: 0,
        property: s.expect.property,
        expected_verdict: s.expect.verdict,
        verdict_counts: VerdictCounts::default(),
        exhausted: 0,
        events: 0,
        failures: Vec::new(),
        determinism: options.check_determinism.then(DeterminismCheck::default),
    };
    for seed in seeds {
        let r = run(s, seed, false);
        if let Some(check) = &mut result.determinism {
            if let Err(mismatch) = rerun_matches(s, &r, false) {
                check.mismatched += 1;
                if check.mismatches.len() < KEPT_FAILURES {
                    check.mismatches.push(mismatch);
                }
            }
        }
        result.seeds += 1;
        result.events = result.events.saturating_add(r.events);
        result.verdict_counts.add(r.judged);
        if r.outcome != Outcome::Completed {
            result.exhausted += 1;
        }
        if r.expected() {
            result.passed += 1;
        } else {
            result.failed += 1;
            if result.failures.len() < KEPT_FAILURES {
                let report = run_report(&result.file, &s.name, &r);
                result.failures.push(SeedFailure {
                    seed,
                    trace_hash: report.trace_hash,
                    verdict: r.judged,
                    unmet: report.unmet,
                    explanations: report.explanations,
                    reproduce: report.reproduce,
                });
            }
        }
    }
    let deterministic = result
        .determinism
        .as_ref()
        .is_none_or(|d| d.mismatched == 0);
    result.ok = result.failed == 0 && deterministic && result.seeds > 0;
    result
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
    .with_counters(Counter::list(&result.counters))
}
