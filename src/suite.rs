//! `lockstep check`: every scenario under some paths, each over its seeds, against its
//! `[expect]`.
//!
//! Start at [`check_suite`]. It runs one seed after another and keeps, per scenario, counts and
//! the first [`KEPT_FAILURES`] failing seeds, so its memory does not grow with the number of
//! seeds. It reads no clock: the binary measures wall-clock time around it ([`WallTimes`]) and
//! passes it to the renderers, so everything else in a [`SuiteResult`] is the same on every
//! machine and every repetition.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_check::{Property, Validity};
use lockstep_reports::{Counter, RunReport, RunSource};
use lockstep_sim::Outcome;
use serde::{Deserialize, Serialize};
use tabled::builder::Builder;
use tabled::settings::Style;

use crate::Expect;
use crate::run::{Mismatch, RunResult, rerun_matches, run};
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

/// How many runs judged the scenario's property valid, invalid and unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictCounts {
    /// Runs judged valid.
    pub valid: u64,
    /// Runs judged invalid.
    pub invalid: u64,
    /// Runs judged unknown.
    pub unknown: u64,
}

impl VerdictCounts {
    /// Counts one run's verdict.
    pub fn add(&mut self, v: Validity) {
        match v {
            Validity::Valid => self.valid += 1,
            Validity::Invalid => self.invalid += 1,
            Validity::Unknown => self.unknown += 1,
        }
    }
}

/// One seed whose run did not meet the scenario's `[expect]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedFailure {
    /// The seed.
    pub seed: u64,
    /// The run's trace hash, as 16 hex digits.
    pub trace_hash: String,
    /// The verdict of the scenario's property.
    pub verdict: Validity,
    /// How the run falls short of `[expect]`.
    pub unmet: Vec<String>,
    /// Each violation of the run explained by the events involved.
    pub explanations: Vec<String>,
    /// The `lockstep run` command that reproduces the run.
    pub reproduce: String,
}

/// One scenario checked over its seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScenarioResult {
    /// The scenario's name.
    pub name: String,
    /// The file, as found under the paths given.
    pub file: String,
    /// True when every seed met `[expect]` (and there was at least one seed).
    pub ok: bool,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds whose run met `[expect]`.
    pub passed: u64,
    /// Seeds whose run did not.
    pub failed: u64,
    /// The property the scenario judges.
    pub property: Property,
    /// The verdict `[expect]` asks for; `None` (JSON `null`) for `verdict = "any"`.
    pub expected_verdict: Option<Validity>,
    /// The verdicts of the property over all seeds.
    pub verdict_counts: VerdictCounts,
    /// Runs cut short by `max_events`.
    pub exhausted: u64,
    /// Events handled, summed over the runs.
    pub events: u64,
    /// The first [`KEPT_FAILURES`] failing seeds, in the order they ran.
    pub failures: Vec<SeedFailure>,
    /// With `--check-determinism`, the seeds whose second run differed; absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub determinism: Option<DeterminismCheck>,
}

/// What the determinism check (every seed run twice) found in one scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeterminismCheck {
    /// Seeds whose two runs had different trace hashes.
    pub mismatched: u64,
    /// The first [`KEPT_FAILURES`] of them, in the order run.
    pub mismatches: Vec<Mismatch>,
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

/// Every scenario checked: the JSON of `lockstep check --format json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SuiteResult {
    /// True when every scenario's every seed met its `[expect]`.
    pub passed: bool,
    /// Runs, over all scenarios.
    pub runs: u64,
    /// Scenarios with at least one failing seed.
    pub failed_scenarios: u64,
    /// Each scenario, in the order checked.
    pub scenarios: Vec<ScenarioResult>,
}

impl SuiteResult {
    fn new(scenarios: Vec<ScenarioResult>) -> SuiteResult {
        SuiteResult {
            passed: scenarios.iter().all(|s| s.ok),
            runs: scenarios.iter().map(|s| s.seeds).sum(),
            failed_scenarios: scenarios.iter().filter(|s| !s.ok).count() as u64,
            scenarios,
        }
    }

    /// The result as one line of JSON.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a suite result always serialises")
    }
}

/// Wall-clock times of a check, measured by the binary around [`check_suite_observed`]. Runs
/// never read the host's clock; these are only for people and CI dashboards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WallTimes {
    /// The whole check.
    pub total: Duration,
    /// Each scenario, in the order of [`SuiteResult::scenarios`].
    pub scenarios: Vec<Duration>,
}

impl WallTimes {
    /// The time of scenario `i`, zero when not measured.
    pub fn scenario(&self, i: usize) -> Duration {
        self.scenarios.get(i).copied().unwrap_or_default()
    }
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

impl SuiteResult {
    /// The result as text for a terminal: a table with one row per scenario, each failing
    /// scenario's first failing seeds with reproduce commands, and a one-line summary.
    pub fn table(&self, times: &WallTimes) -> String {
        let mut b = Builder::default();
        b.push_record([
            "scenario", "file", "seeds", "expected", "met", "result", "events", "time",
        ]);
        for (i, s) in self.scenarios.iter().enumerate() {
            b.push_record([
                s.name.clone(),
                s.file.clone(),
                s.seeds.to_string(),
                format!(
                    "{} {}",
                    s.property,
                    Expect::verdict_name(s.expected_verdict)
                ),
                format!("{}/{}", s.passed, s.seeds),
                if s.ok { "ok" } else { "FAIL" }.to_string(),
                s.events.to_string(),
                seconds(times.scenario(i)),
            ]);
        }
        let mut table = b.build();
        table.with(Style::rounded());
        let mut out = format!("{table}\n");
        for s in self.scenarios.iter().filter(|s| !s.ok) {
            let _ = writeln!(out, "\n{}", s.failure_text());
        }
        let _ = writeln!(out, "\n{}", self.summary_line());
        out
    }

    /// `7 scenarios, 7000 runs: all expectations hold`, or how many scenarios failed.
    pub fn summary_line(&self) -> String {
        let n = self.scenarios.len();
        let head = format!(
            "{n} scenario{}, {} run{}",
            plural(n as u64),
            self.runs,
            plural(self.runs)
        );
        let twice = self.scenarios.iter().any(|s| s.determinism.is_some());
        if self.passed && twice {
            format!("{head}: all expectations hold, every seed ran twice alike")
        } else if self.passed {
            format!("{head}: all expectations hold")
        } else {
            let f = self.failed_scenarios;
            format!("{head}: {f} scenario{} failed", plural(f))
        }
    }
}

impl ScenarioResult {
    /// One line: how many seeds fell short of `[expect]`, and the first sentence why.
    pub fn failure_message(&self) -> String {
        if self.seeds == 0 {
            return "no seeds were run".to_string();
        }
        let first_mismatch = self.determinism.as_ref().and_then(|d| d.mismatches.first());
        if let (0, Some(d), Some(first)) = (self.failed, &self.determinism, first_mismatch) {
            return format!(
                "{} of {} seed{} ran differently the second time; {first}",
                d.mismatched,
                self.seeds,
                plural(self.seeds)
            );
        }
        let mut m = format!(
            "{} of {} seed{} did not meet [expect]",
            self.failed,
            self.seeds,
            plural(self.seeds)
        );
        if let Some(f) = self.failures.first() {
            let why = f.unmet.first().map_or("", String::as_str);
            let _ = write!(m, "; seed {}: {why}", f.seed);
        }
        m
    }

    /// The failing seeds kept, each with its unmet sentences and reproduce command, and the
    /// first one's violations explained (the others' are one reproduce command away).
    pub fn failure_text(&self) -> String {
        let mut out = format!(
            "FAIL {} ({}): {}\n",
            self.name,
            self.file,
            self.failure_message()
        );
        write_failures(&mut out, &self.failures, self.failed);
        if let Some(d) = &self.determinism {
            for m in &d.mismatches {
                let _ = writeln!(out, "  {m}");
            }
            let more = d.mismatched.saturating_sub(d.mismatches.len() as u64);
            if more > 0 {
                let _ = writeln!(
                    out,
                    "  ... and {more} more nondeterministic seed{}",
                    plural(more)
                );
            }
        }
        out.truncate(out.trim_end().len());
        out
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `0.42s`.
fn seconds(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

/// The failing seeds kept, each with its unmet sentences and reproduce command, the first
/// one's violations explained, and how many more of the `failed` seeds were not kept: the
/// text of `check` and `sweep` alike.
pub(crate) fn write_failures(out: &mut String, failures: &[SeedFailure], failed: u64) {
    for (i, f) in failures.iter().enumerate() {
        let _ = writeln!(
            out,
            "  seed {}  trace {}  verdict {}",
            f.seed, f.trace_hash, f.verdict
        );
        for u in &f.unmet {
            let _ = writeln!(out, "    - {u}");
        }
        if i == 0 {
            for e in &f.explanations {
                let _ = writeln!(out, "    why: {e}");
            }
        }
        let _ = writeln!(out, "    reproduce: {}", f.reproduce);
    }
    let more = failed.saturating_sub(failures.len() as u64);
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more failing seed{}", plural(more));
    }
}
