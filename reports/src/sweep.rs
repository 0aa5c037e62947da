//! The terminal text of `lockstep sweep` and `lockstep merge`: what was swept, the rates of
//! each verdict and violation with their 95% intervals, the liveness figures, the first
//! failing seeds with reproduce commands, and a summary line.
//!
//! It reads a [`SweepView`], plain data the `lockstep` package fills in from its sweep summary
//! (`lockstep::sweep::SweepSummary::view`). The summary itself (its histograms, its merge and
//! its JSON) stays there, and every figure shown here is computed there: this module formats
//! and never judges.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use lockstep_check::{Property, Validity};
use serde::Serialize;
use tabled::builder::Builder;
use tabled::settings::Style;

use crate::Rate;
use crate::format::{duration, interval, percent, plural, seconds, seeds_per_second};
use crate::suite::{
    Mismatch, RateBound, SeedFailure, expected_with_rate, write_failures, write_seeds,
};

/// A sweep's summary as its terminal text needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepView<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    /// The scenario file, as given.
    pub file: &'a str,
    /// The first seed of the range.
    pub from: u64,
    /// Seeds in the range.
    pub count: u64,
    /// The shards covered, when not every seed of the range.
    pub shards: Option<ShardsView<'a>>,
    /// The property the scenario judges.
    pub property: Property,
    /// The verdict `[expect]` asks for; `None` for `any`.
    pub expected_verdict: Option<Validity>,
    /// `[expect] invalid_rate`, when given.
    pub expected_invalid_rate: Option<RateBound>,
    /// What the runs together did not meet (`invalid_rate`), as sentences.
    pub unmet: Vec<String>,
    /// True when every seed ran twice and the trace hashes were compared.
    pub determinism_checked: bool,
    /// The sweep's digest.
    pub digest: u64,
    /// Seeds run.
    pub runs: u64,
    /// Runs that did not meet `[expect]`.
    pub failed: u64,
    /// The rates of each verdict and violation over the runs.
    pub rates: SweepRates,
    /// Every acquire latency of every run, in nanoseconds; `None` without grants.
    pub acquire_latency_ns: Option<Spread>,
    /// With a chaos profile, from each quiet tail's start to the next grant, in nanoseconds;
    /// `None` when no run had one.
    pub recovery_ns: Option<Spread>,
    /// Grants per run; `None` without runs.
    pub grants_per_run: Option<Spread>,
    /// Events handled, summed over the runs.
    pub events: u64,
    /// The first failing seeds by position in the range.
    pub failures: &'a [SeedFailure],
    /// With `verdict = "any"` (no run fails for its verdict): the first seeds judged invalid
    /// by position in the range; `rates.invalid` counts them all.
    pub invalid: &'a [SeedFailure],
    /// Seeds whose two runs differed (with the determinism check).
    pub nondeterministic: u64,
    /// The first of them by position in the range.
    pub mismatches: &'a [Mismatch],
}

/// Which shards of the range a summary covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardsView<'a> {
    /// How many shards the range is cut into.
    pub count: u64,
    /// The shards covered, from 1, in increasing order.
    pub included: &'a [u64],
    /// The shards not covered, in increasing order.
    pub missing: Vec<u64>,
}

/// The rates of a sweep's runs with their 95% Wilson intervals; each is `None` without runs.
/// Also the `rates` of a sweep summary's JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepRates {
    /// Runs that did not meet `[expect]`.
    pub failed: Option<Rate>,
    /// Runs judged valid.
    pub valid: Option<Rate>,
    /// Runs judged invalid.
    pub invalid: Option<Rate>,
    /// Runs judged unknown.
    pub unknown: Option<Rate>,
    /// Runs that ran out of events.
    pub exhausted: Option<Rate>,
    /// With a chaos profile: runs not granted within the liveness bound of the quiet tail.
    pub no_recovery: Option<Rate>,
    /// For each safety metric of the checker some run measured (docs/checker.md, Metrics):
    /// the runs whose value was above 0 (`double_holders`, `jobs_lost`, ...).
    #[serde(flatten)]
    pub metrics: BTreeMap<String, Option<Rate>>,
}

/// A sweep's values of one kind: nearest-rank percentiles, the maximum, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spread {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
    /// How many values.
    pub samples: u64,
}

/// The wall-clock figures of a sweep, measured by the binary; only the table shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallTime {
    /// The whole sweep.
    pub elapsed: Duration,
    /// Worker threads.
    pub jobs: usize,
}

impl SweepView<'_> {
    /// The summary for a terminal: what was swept, the rates with their intervals, the
    /// liveness figures, the first failing seeds with reproduce commands, and a summary line.
    /// `wall` adds the time and the seeds per second (a merge has none).
    pub fn table(&self, wall: Option<WallTime>) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "scenario   {}  ({})", self.scenario, self.file);
        let _ = writeln!(
            out,
            "seeds      {}{}",
            range_text(self.from, self.count),
            self.shard_text()
        );
        let _ = writeln!(
            out,
            "expect     {}{}",
            expected_with_rate(
                self.property,
                self.expected_verdict,
                self.expected_invalid_rate
            ),
            if self.determinism_checked {
                ", every seed run twice"
            } else {
                ""
            }
        );
        if let Some(w) = wall {
            let _ = writeln!(
                out,
                "time       {} on {} thread{}, {}",
                seconds(w.elapsed),
                w.jobs,
                plural(w.jobs),
                seeds_per_second(self.runs, w.elapsed)
            );
        }
        let _ = writeln!(out, "digest     {:016x}\n", self.digest);
        out.push_str(&self.rates_table());
        out.push('\n');
        out.push_str(&self.liveness_table());
        out.push('\n');
        self.failures_text(&mut out);
        let _ = writeln!(out, "{}", self.summary_line());
        out
    }

    fn shard_text(&self) -> String {
        match &self.shards {
            None => String::new(),
            Some(sh) if sh.included.len() == 1 => {
                format!(", shard {}/{}: {} run", sh.included[0], sh.count, self.runs)
            }
            Some(sh) => format!(
                ", shards {} of {}: {} run (missing: {})",
                list(sh.included),
                sh.count,
                self.runs,
                list(&sh.missing)
            ),
        }
    }

    fn rates_table(&self) -> String {
        let mut b = Builder::default();
        b.push_record(["runs", "count", "rate", "95% interval (Wilson)"]);
        let r = &self.rates;
        let rows = [
            ("did not meet [expect]", r.failed),
            ("valid", r.valid),
            ("invalid", r.invalid),
            ("unknown", r.unknown),
        ];
        let metrics = lockstep_check::METRICS.iter().filter_map(|m| {
            let rate = r.metrics.get(m.key)?;
            Some((m.key.replace('_', " "), *rate))
        });
        let tail = [
            ("out of events", r.exhausted),
            ("no recovery", r.no_recovery),
        ];
        let rows = rows
            .into_iter()
            .map(|(name, rate)| (name.to_string(), rate))
            .chain(metrics)
            .chain(
                tail.into_iter()
                    .map(|(name, rate)| (name.to_string(), rate)),
            );
        for (name, rate) in rows {
            // Without runs there is no rate, and every count is 0.
            let k = rate.map_or(0, |r| r.seeds);
            let (rate, ci) = match rate {
                Some(r) => (percent(r.rate), interval(r.ci95)),
                None => ("-".to_string(), "-".to_string()),
            };
            b.push_record([name.to_string(), k.to_string(), rate, ci]);
        }
        let mut t = b.build();
        t.with(Style::rounded());
        format!("{t}\n")
    }

    fn liveness_table(&self) -> String {
        let mut b = Builder::default();
        b.push_record(["liveness", "p50", "p99", "max", "samples"]);
        let row = |name: &str, s: Option<Spread>, cell: &dyn Fn(u64) -> String| {
            let dash = || "-".to_string();
            [
                name.to_string(),
                s.map_or_else(dash, |s| cell(s.p50)),
                s.map_or_else(dash, |s| cell(s.p99)),
                s.map_or_else(dash, |s| cell(s.max)),
                s.map_or(0, |s| s.samples).to_string(),
            ]
        };
        b.push_record(row("acquire latency", self.acquire_latency_ns, &duration));
        if self.recovery_ns.is_some() {
            b.push_record(row("recovery after faults", self.recovery_ns, &duration));
        }
        b.push_record(row("grants per run", self.grants_per_run, &|n| {
            n.to_string()
        }));
        let mut t = b.build();
        t.with(Style::rounded());
        format!(
            "{t}\nevents     {} in {} run{}\n",
            self.events,
            self.runs,
            plural(self.runs)
        )
    }

    fn failures_text(&self, out: &mut String) {
        if !self.failures.is_empty() {
            let _ = writeln!(out, "first failing seeds:");
        }
        write_failures(out, self.failures, self.failed);
        if !self.invalid.is_empty() {
            let _ = writeln!(out, "first invalid seeds:");
            let invalid = self.rates.invalid.map_or(0, |r| r.seeds);
            write_seeds(out, self.invalid, invalid, "invalid");
        }
        for m in self.mismatches {
            let _ = writeln!(out, "{m}");
        }
        let more = self
            .nondeterministic
            .saturating_sub(self.mismatches.len() as u64);
        if more > 0 {
            let _ = writeln!(
                out,
                "  ... and {more} more nondeterministic seed{}",
                plural(more)
            );
        }
        if !self.failures.is_empty() || !self.invalid.is_empty() || !self.mismatches.is_empty() {
            out.push('\n');
        }
    }

    /// `1000 seeds: every run met [expect]`, or how many did not, what the runs together did
    /// not meet (`invalid_rate`), and how many ran differently twice.
    pub fn summary_line(&self) -> String {
        let n = self.runs;
        let head = format!("{n} seed{}", plural(n));
        let missing = match &self.shards {
            Some(sh) if sh.included.len() > 1 => {
                format!(" (shards {} missing)", list(&sh.missing))
            }
            _ => String::new(),
        };
        let mut line = if n == 0 {
            format!("{head}: no seed of the range falls in this shard")
        } else if self.failed == 0 {
            format!("{head}: every run met [expect]")
        } else {
            format!("{head}: {} did not meet [expect]", self.failed)
        };
        // `invalid_rate` is judged over the runs together: none of them fails for it.
        for u in &self.unmet {
            let _ = write!(line, "; not met by the runs together: {u}");
        }
        if self.nondeterministic > 0 {
            let _ = write!(line, "; {} not deterministic", self.nondeterministic);
        } else if self.determinism_checked && n > 0 {
            line.push_str("; each ran twice with the same trace hash");
        }
        line + &missing
    }
}

/// `1 to 1000 (1000 seeds)`: `count` seeds from `from` (wrapping past `u64::MAX`).
pub fn range_text(from: u64, count: u64) -> String {
    let last = from.wrapping_add(count.saturating_sub(1));
    format!("{from} to {last} ({count} seed{})", plural(count))
}

fn list(items: &[u64]) -> String {
    items
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
