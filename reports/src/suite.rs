//! The result of `lockstep check` as plain data, the JSON of `lockstep check --format json`,
//! and its terminal text: a table with one row per scenario, each failing scenario's first
//! failing seeds with reproduce commands, and a one-line summary.
//!
//! The `lockstep` package runs the scenarios and fills a [`SuiteResult`] in
//! (`lockstep::suite`); the binary measures the wall-clock times around the runs and hands them
//! to the renderers apart ([`WallTimes`]), so everything else is the same on every machine and
//! every repetition.

use std::fmt::Write as _;
use std::time::Duration;

use lockstep_check::metrics::Metrics;
use lockstep_check::{Property, Validity};
use serde::{Deserialize, Serialize};
use tabled::builder::Builder;
use tabled::settings::Style;

use crate::format::{expected, percent, plural, seconds};

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

/// `[expect] invalid_rate`: bounds on the share of a scenario's seeds whose property is judged
/// invalid, each a share from 0 to 1 (at least one given, `at_least` at most `at_most`). The
/// seeds together are judged against it, never one run (`lockstep::expect::rate_unmet`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateBound {
    /// The smallest share expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<f64>,
    /// The largest share expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<f64>,
}

// The shares are checked to lie in [0, 1] where a bound is made (a scenario's `[expect]`, a
// sweep summary read), so none is NaN and equality is total.
impl Eq for RateBound {}

impl std::fmt::Display for RateBound {
    /// `invalid_rate >= 1.0%`, `invalid_rate <= 50.0%`, `invalid_rate 1.0% to 50.0%`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.at_least, self.at_most) {
            (Some(l), Some(m)) => write!(f, "invalid_rate {} to {}", percent(l), percent(m)),
            (Some(l), None) => write!(f, "invalid_rate >= {}", percent(l)),
            (None, Some(m)) => write!(f, "invalid_rate <= {}", percent(m)),
            (None, None) => f.write_str("invalid_rate any"),
        }
    }
}

/// The property, the verdict `[expect]` asks for and its bound on the invalid rate, if any:
/// `resource any`, `resource any, invalid_rate >= 1.0%`.
pub fn expected_with_rate(
    property: Property,
    verdict: Option<Validity>,
    rate: Option<RateBound>,
) -> String {
    match rate {
        Some(r) => format!("{}, {r}", expected(property, verdict)),
        None => expected(property, verdict),
    }
}

/// What kind of miss a run that did not meet `[expect]` is, as TigerBeetle's simulator tells
/// them apart: the exit code stays 1 for each, and the JSON and JUnit say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Miss {
    /// The verdict, or a bound on a safety count (double holders, stale operations, lost
    /// updates, token order, two leaders, items done twice or skipped), is not what `[expect]`
    /// says.
    Safety,
    /// Only a liveness expectation is missed: a bound on grants, terms or failover, or recovery
    /// after the faults.
    Liveness,
    /// The run could not be judged: it ran out of events (or of its budget), and its verdict
    /// is unknown.
    Unknown,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Miss::Safety => "safety",
            Miss::Liveness => "liveness",
            Miss::Unknown => "unknown",
        })
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
    /// What kind of miss it is (absent in summaries written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<Miss>,
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
    /// True when every seed met `[expect]`, the seeds together met its `invalid_rate` (when
    /// given), and there was at least one seed.
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
    /// `[expect] invalid_rate`; absent from the JSON when the scenario sets none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_invalid_rate: Option<RateBound>,
    /// The verdicts of the property over all seeds.
    pub verdict_counts: VerdictCounts,
    /// What the seeds together did not meet (`invalid_rate`), as sentences; no seed fails for
    /// it. Absent from the JSON when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmet: Vec<String>,
    /// Runs cut short by `max_events`.
    pub exhausted: u64,
    /// Events handled, summed over the runs.
    pub events: u64,
    /// The first failing seeds (as many as the check keeps), in the order they ran.
    pub failures: Vec<SeedFailure>,
    /// With `--check-determinism`, the seeds whose second run differed; absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub determinism: Option<DeterminismCheck>,
    /// The checker's metrics over the seeds, by key, as a sweep summary keeps them.
    pub metrics: Metrics,
}

/// What the determinism check (every seed run twice) found in one scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeterminismCheck {
    /// Seeds whose two runs had different trace hashes.
    pub mismatched: u64,
    /// The first of them (as many as the check keeps), in the order run.
    pub mismatches: Vec<Mismatch>,
}

/// A seed whose two runs differ: the harness is not deterministic for this scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The trace hash of the first run, as 16 hex digits.
    pub first_trace_hash: String,
    /// The trace hash of the second run.
    pub second_trace_hash: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not deterministic: scenario {} seed {}: trace hash {}, then {} on the same seed",
            self.scenario, self.seed, self.first_trace_hash, self.second_trace_hash
        )
    }
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
    /// The result of `scenarios`, in the order checked, with the totals they add up to.
    pub fn new(scenarios: Vec<ScenarioResult>) -> SuiteResult {
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

/// Wall-clock times of a check, measured by the binary around the runs. Runs never read the
/// host's clock; these are only for people and CI dashboards.
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

impl SuiteResult {
    /// The result as text for a terminal: a table with one row per scenario, each failing
    /// scenario's first failing seeds with reproduce commands, and a one-line summary.
    pub fn table(&self, times: &WallTimes) -> String {
        self.table_fitting(times, None)
    }

    /// [`SuiteResult::table`] with the table fitted into `width` columns, when given (a
    /// terminal's width); the lines below it are not cut.
    pub fn table_fitting(&self, times: &WallTimes, width: Option<usize>) -> String {
        let mut b = Builder::default();
        b.push_record([
            "scenario", "file", "seeds", "expected", "met", "result", "events", "time",
        ]);
        for (i, s) in self.scenarios.iter().enumerate() {
            b.push_record([
                s.name.clone(),
                s.file.clone(),
                s.seeds.to_string(),
                expected_with_rate(s.property, s.expected_verdict, s.expected_invalid_rate),
                format!("{}/{}", s.passed, s.seeds),
                if s.ok { "ok" } else { "FAIL" }.to_string(),
                s.events.to_string(),
                seconds(times.scenario(i)),
            ]);
        }
        let mut table = b.build();
        table.with(Style::rounded());
        crate::table::fit(&mut table, width);
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
            plural(n),
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
    /// One line: how many seeds fell short of `[expect]`, and the first sentence why; then
    /// what the seeds together did not meet (`invalid_rate`), which fails no seed of its own.
    pub fn failure_message(&self) -> String {
        if self.seeds == 0 {
            return "no seeds were run".to_string();
        }
        let together = self.unmet.join("; ");
        let first_mismatch = self.determinism.as_ref().and_then(|d| d.mismatches.first());
        let mut m =
            if let (0, Some(d), Some(first)) = (self.failed, &self.determinism, first_mismatch) {
                format!(
                    "{} of {} seed{} ran differently the second time; {first}",
                    d.mismatched,
                    self.seeds,
                    plural(self.seeds)
                )
            } else if self.failed == 0 && !together.is_empty() {
                return format!(
                    "every seed met [expect] on its own, but not the seeds together: {together}"
                );
            } else {
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
            };
        if !together.is_empty() {
            let _ = write!(m, "; and the seeds together: {together}");
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

/// The failing seeds kept, each with its unmet sentences and reproduce command, the first
/// one's violations explained, and how many more of the `failed` seeds were not kept: the
/// text of `check` and `sweep` alike.
pub(crate) fn write_failures(out: &mut String, failures: &[SeedFailure], failed: u64) {
    write_seeds(out, failures, failed, "failing");
}

/// The seeds `kept` of `all` that are `what` (`failing`, `invalid`): each with its trace,
/// verdict, what it did not meet, the first one's explanations and its reproduce command,
/// then how many more there are.
pub(crate) fn write_seeds(out: &mut String, kept: &[SeedFailure], all: u64, what: &str) {
    for (i, f) in kept.iter().enumerate() {
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
    let more = all.saturating_sub(kept.len() as u64);
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more {what} seed{}", plural(more));
    }
}
