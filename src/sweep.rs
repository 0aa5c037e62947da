//! `lockstep sweep`: one scenario over many consecutive seeds, on several threads, summed up
//! in memory that does not grow with the number of seeds; and `lockstep merge`: the summaries
//! of the shards of one sweep combined into the summary of the whole.
//!
//! Start at [`sweep`]. Threads run whole runs, never parts of one: each worker of the
//! [`pool`](crate::pool) takes chunks of seed positions from an atomic counter, runs each seed alone and sends a [`SeedOutcome`]
//! over a bounded channel to the calling thread, which folds it into a [`SweepSummary`] (and
//! shows it to an observer). Everything a summary holds is independent of the order of
//! arrival: counts and histograms add up, the failing seeds kept are the first by position in
//! the range, and the digest is a wrapping sum. So the number of threads and the sharding
//! change nothing in it, and [`merge`] of the shards' summaries gives the unsharded summary
//! bit for bit. It reads no clock: the binary measures wall-clock time around it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use lockstep_check::metrics::{Better, METRICS, Matter, Metric, metric};
use lockstep_check::{Property, Validity, acquire_waits_split_ns, leadership_failovers_ns};
use lockstep_reports::QuantilesMs;
pub use lockstep_reports::sweep::WallTime;
use lockstep_reports::sweep::{ShardsView, Spread, SweepRates, SweepView, range_text};
use lockstep_sim::Outcome;
use serde::{Deserialize, Serialize};

use crate::expect::{RateBound, rate_unmet};
use crate::run::{Mismatch, rerun_matches, run};
use crate::scenario::{Scenario, ScenarioError, parse};
use crate::stats::{Histogram, rate};
use crate::suite::{SeedFailure, VerdictCounts, seed_failure};
use lockstep_check::metrics::Metrics;

/// How many failing seeds (and nondeterministic seeds) a summary keeps in detail: the first
/// in the range. The rest are counted.
pub const KEPT_FAILURES: usize = 10;

/// The most shards a range may be cut into (`--shard I/N`, and a summary's `shard.count`), so
/// that the list of missing shards a summary prints stays small. Kubernetes allows an Indexed
/// Job as many completions.
pub const MAX_SHARDS: u64 = 100_000;

/// The `format` of a summary's JSON; `merge` reads only this one.
pub const FORMAT: &str = "lockstep-sweep/2";

/// A scenario file loaded for a sweep, with the hash of its text that keeps the shards of
/// different files from being merged.
#[derive(Clone, Debug)]
pub struct SweepTarget {
    /// The file, as given.
    pub path: PathBuf,
    /// The scenario.
    pub scenario: Scenario,
    /// [`text_hash`] of the file's text.
    pub text_hash: u64,
}

/// Reads and checks a scenario file, as [`crate::load`], and hashes its text; with `chaos`,
/// the file's system under that chaos profile instead of its own faults
/// ([`crate::scenario::with_chaos`]), whose text is the one hashed.
///
/// # Errors
/// As [`crate::load`].
pub fn load(path: &Path, chaos: Option<&str>) -> Result<SweepTarget, ScenarioError> {
    let text = crate::files::read_text(path, crate::files::Input::SCENARIO)
        .map_err(|e| ScenarioError::one(path, "", None, format!("cannot read the file: {e}")))?;
    // Under `--chaos` the sweep is of the variant: its text, its hash.
    let text = match chaos {
        Some(profile) => crate::scenario::with_chaos(&text, path, profile)?,
        None => text,
    };
    Ok(SweepTarget {
        path: path.to_path_buf(),
        scenario: parse(&text, path)?,
        text_hash: text_hash(&text),
    })
}

/// A 64-bit hash of a scenario file's text (FNV-1a, then a final mix): equal texts, equal
/// hashes, on every machine.
pub fn text_hash(text: &str) -> u64 {
    let fnv = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    mix(fnv ^ text.len() as u64)
}

/// splitmix64's finaliser: a bijection of `u64` that spreads every input bit over the output.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// One seed's term of the digest: a strong mix of its seed, trace hash and verdict. The digest
/// of a sweep is the wrapping sum of its seeds' terms, so it does not depend on the order the
/// seeds finished in, and two sweeps with the same per-seed results have the same digest.
pub fn digest_term(seed: u64, trace_hash: u64, judged: Validity) -> u64 {
    let verdict = match judged {
        Validity::Valid => 1,
        Validity::Unknown => 2,
        Validity::Invalid => 3,
    };
    mix(mix(mix(seed) ^ trace_hash) ^ verdict)
}

/// One shard of a range of seeds: the seeds at positions `i` (from 0) with
/// `i % count == index - 1`. Written `index/count`, from `1/count` to `count/count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub index: u64,
    /// How many shards the range is cut into.
    pub count: u64,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{text}`: expected I/N, shard I of N shards (as 2/4)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!("`{text}`: there must be at least 1 shard"));
        }
        if count > MAX_SHARDS {
            return Err(format!(
                "`{text}`: a range is cut into at most {MAX_SHARDS} shards"
            ));
        }
        if index == 0 || index > count {
            return Err(format!(
                "`{text}`: the shards are numbered from 1 to {count}"
            ));
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The whole range as one shard.
    const ALL: Shard = Shard { index: 1, count: 1 };

    /// How many of `total` positions fall in this shard.
    fn len_of(self, total: u64) -> u64 {
        let first = self.index - 1;
        if first >= total {
            0
        } else {
            (total - first).div_ceil(self.count)
        }
    }

    /// The position in the range of this shard's `k`-th seed.
    fn position(self, k: u64) -> u64 {
        (self.index - 1) + k * self.count
    }
}

/// What a sweep runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepConfig {
    /// The first seed of the range.
    pub from: u64,
    /// Seeds in the range (wrapping from `u64::MAX` to 0).
    pub count: u64,
    /// Only this shard of the range; `None` runs every seed.
    pub shard: Option<Shard>,
    /// Worker threads, at least 1. The summary does not depend on it.
    pub jobs: usize,
    /// Run every seed twice and compare the trace hashes.
    pub check_determinism: bool,
}

impl SweepConfig {
    /// How many seeds the sweep runs: the range's, or its shard's.
    pub fn runs(&self) -> u64 {
        self.shard.unwrap_or(Shard::ALL).len_of(self.count)
    }
}

/// What one seed's run gave, as the aggregating thread receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedOutcome {
    /// Position of the seed in the range, from 0.
    pub position: u64,
    /// The seed.
    pub seed: u64,
    /// The run's trace hash.
    pub trace_hash: u64,
    /// The verdict of the scenario's property.
    pub judged: Validity,
    /// True when the run met `[expect]`.
    pub expected: bool,
    /// True when the run hit `max_events` before its end.
    pub exhausted: bool,
    /// Events handled.
    pub events: u64,
    /// Whether the run ran out of events and missed its recovery bound.
    pub violations: Violations,
    /// The checker's metrics the run measured, with their values, in the checker's order.
    pub metrics: Vec<(&'static Metric, u64)>,
    /// Grants in the run.
    pub grants: u64,
    /// With a chaos profile, from the quiet tail's start to the next grant, if one came.
    pub recovery_ns: Option<u64>,
    /// Every acquire latency of the run, in nanoseconds.
    pub acquire_latencies_ns: Vec<u64>,
    /// The clients' time spent waiting for the lock, summed over them (a sweep map's
    /// `waiting`).
    pub waiting_ns: u64,
    /// True time with no critical section open while a client waited (a review's
    /// availability).
    pub unavailable_ns: u64,
    /// Critical sections that wrote and released (a sweep map's `throughput`).
    pub cs_completed: u64,
    /// With a chaos profile, the run's figures over its fault window (the checker's
    /// `Liveness::fault_window`), and the waits that began in it (its samples): what a
    /// review ranks designs by.
    pub fault_window: Option<(lockstep_check::FaultWindow, Vec<u64>)>,
    /// The run's true time, in nanoseconds.
    pub end_ns: u64,
    /// With leadership metrics: every leadership change's failover time, and whether two
    /// leaders' work was accepted together.
    pub leadership: Option<(Vec<u64>, bool)>,
    /// The failure in detail, when the run did not meet `[expect]` and might be among the
    /// first [`KEPT_FAILURES`] failing seeds; `None` otherwise.
    pub failure: Option<SeedFailure>,
    /// The run in detail, when `[expect]` asks for no verdict (`verdict = "any"`), the run
    /// was judged invalid and it might be among the first [`KEPT_FAILURES`] such seeds;
    /// `None` otherwise.
    pub invalid: Option<SeedFailure>,
    /// With the determinism check, the second run's difference, if any.
    pub mismatch: Option<Mismatch>,
}

/// What a run showed besides the checker's metrics, or in how many runs each occurred.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Violations {
    /// The run ran out of events (`max_events`): its verdict is at best unknown.
    pub exhausted: u64,
    /// With a chaos profile: no grant within its liveness bound of the quiet tail's start.
    pub no_recovery: u64,
}

impl Violations {
    fn add(&mut self, other: &Violations) {
        self.exhausted += other.exhausted;
        self.no_recovery += other.no_recovery;
    }
}

/// The seeds of a summary: `count` consecutive seeds from `from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRange {
    /// The first seed.
    pub from: u64,
    /// How many.
    pub count: u64,
}

/// Which shards of the range a summary covers, when not all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shards {
    /// How many shards the range is cut into.
    pub count: u64,
    /// The shards covered, from 1, in increasing order.
    pub included: Vec<u64>,
}

impl Shards {
    /// The shards not covered, in increasing order.
    pub fn missing(&self) -> Vec<u64> {
        // `included` is increasing (checked on reading), so a binary search keeps this
        // linear in `count`, which is at most `MAX_SHARDS`.
        (1..=self.count)
            .filter(|i| self.included.binary_search(i).is_err())
            .collect()
    }
}

/// A sweep's result, or the merge of several: everything `lockstep merge` needs, and the
/// JSON of `lockstep sweep --format json` (with the figures derived from it, see
/// [`SweepSummary::json`]). It holds no wall-clock time, so equal work gives equal bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// [`FORMAT`].
    pub format: String,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file as given on the command line (of the first input, after a merge).
    pub file: String,
    /// [`text_hash`] of the file (16 hex digits in JSON).
    #[serde(with = "hex64")]
    pub scenario_hash: u64,
    /// The property the scenario judges.
    pub property: Property,
    /// The verdict `[expect]` asks for; `None` (JSON `null`) for `verdict = "any"`.
    pub expected_verdict: Option<Validity>,
    /// `[expect] invalid_rate`, judged over the runs the summary holds (after a merge, all of
    /// them); absent when the scenario sets none, so other sweeps' JSON does not change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_invalid_rate: Option<RateBound>,
    /// The whole range of seeds, of which this summary covers `shard`.
    pub seeds: SeedRange,
    /// The shards covered; `None` when the summary covers every seed of the range.
    pub shard: Option<Shards>,
    /// True when every seed ran twice and the trace hashes were compared.
    pub determinism_checked: bool,
    /// Seeds run.
    pub runs: u64,
    /// Runs that met `[expect]`.
    pub passed: u64,
    /// Runs that did not.
    pub failed: u64,
    /// The verdicts of the property.
    pub verdict_counts: VerdictCounts,
    /// The runs that ran out of events or missed their recovery bound.
    pub violations: Violations,
    /// The checker's metrics over the runs, by key (docs/checker.md, Metrics): the runs that
    /// measured each, those above 0, its sum and its largest value.
    pub metrics: Metrics,
    /// Events handled, summed over the runs.
    pub events: u64,
    /// Every acquire latency of every run, in nanoseconds.
    pub acquire_latency_ns: Histogram,
    /// Grants per run.
    pub grants_per_run: Histogram,
    /// With a chaos profile: from the start of each run's quiet tail to its next grant, over
    /// the runs that had one.
    pub recovery_ns: Histogram,
    /// With leadership metrics (a leadership bound in `[expect]`): their aggregate; absent
    /// otherwise, so other sweeps' JSON does not change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leadership: Option<SweepLeadership>,
    /// The wrapping sum of [`digest_term`] over the runs (16 hex digits in JSON).
    #[serde(with = "hex64")]
    pub digest: u64,
    /// The first [`KEPT_FAILURES`] failing seeds by position in the range.
    pub failures: Vec<SeedFailure>,
    /// With `verdict = "any"`, which no run fails: the first [`KEPT_FAILURES`] runs judged
    /// invalid by position in the range (`verdict_counts.invalid` counts them all). Absent
    /// from the JSON when empty, so other sweeps' JSON does not change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<SeedFailure>,
    /// Seeds whose two runs differed (with the determinism check).
    pub nondeterministic: u64,
    /// The first [`KEPT_FAILURES`] of them by position in the range.
    pub mismatches: Vec<Mismatch>,
}

/// Leadership over a sweep's runs: independent of the order runs finish in, and merged by
/// adding, as the rest of a summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepLeadership {
    /// Every leadership change of every run (the checker's failover samples), in ns.
    pub failover_ns: Histogram,
    /// Runs with two leaders' work accepted together.
    pub two_leaders_runs: u64,
}

/// The figures derived from a summary's counts, for people and dashboards: rates with their
/// 95% Wilson intervals, and quantiles.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Derived {
    ok: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unmet: Vec<String>,
    missing_shards: Vec<u64>,
    rates: SweepRates,
    acquire_latency_ms: Option<QuantilesMs>,
    recovery_ms: Option<QuantilesMs>,
    grants: Option<Quantiles>,
}

/// Grants per run: the median, the 99th percentile and the maximum.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
struct Quantiles {
    p50: u64,
    p99: u64,
    max: u64,
}

impl Quantiles {
    fn of(h: &Histogram) -> Option<Quantiles> {
        Some(Quantiles {
            p50: h.quantile(500)?,
            p99: h.quantile(990)?,
            max: h.max()?,
        })
    }
}

/// A summary's JSON: the summary, then what is derived from it.
#[derive(Serialize)]
struct Json<'a> {
    #[serde(flatten)]
    summary: &'a SweepSummary,
    #[serde(flatten)]
    derived: Derived,
}

impl SweepSummary {
    /// An empty summary of `target` over `config`'s seeds.
    fn new(target: &SweepTarget, config: &SweepConfig) -> SweepSummary {
        let s = &target.scenario;
        SweepSummary {
            format: FORMAT.to_string(),
            scenario: s.name.clone(),
            file: target.path.display().to_string(),
            scenario_hash: target.text_hash,
            property: s.expect.property,
            expected_verdict: s.expect.verdict,
            expected_invalid_rate: s.expect.invalid_rate,
            seeds: SeedRange {
                from: config.from,
                count: config.count,
            },
            shard: config.shard.filter(|sh| sh.count > 1).map(|sh| Shards {
                count: sh.count,
                included: vec![sh.index],
            }),
            determinism_checked: config.check_determinism,
            runs: 0,
            passed: 0,
            failed: 0,
            verdict_counts: VerdictCounts::default(),
            violations: Violations::default(),
            metrics: Metrics::default(),
            events: 0,
            acquire_latency_ns: Histogram::new(),
            grants_per_run: Histogram::new(),
            recovery_ns: Histogram::new(),
            leadership: s.check_options.leadership.then(SweepLeadership::default),
            digest: 0,
            failures: Vec::new(),
            invalid: Vec::new(),
            nondeterministic: 0,
            mismatches: Vec::new(),
        }
    }

    /// True when every run met `[expect]`, the runs together met its `invalid_rate` and, with
    /// the determinism check, each ran the same twice. The exit code follows it.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.nondeterministic == 0 && self.unmet().is_empty()
    }

    /// What the runs together did not meet (`invalid_rate`), as sentences: judged on the
    /// counts the summary holds, so a merge judges the merged counts.
    pub fn unmet(&self) -> Vec<String> {
        self.expected_invalid_rate
            .and_then(|b| rate_unmet(&b, self.verdict_counts.invalid, self.runs))
            .into_iter()
            .collect()
    }

    /// Checks what a hand-edited or truncated file could get wrong, so that a merge of it is
    /// refused rather than wrong, and so that no number in it sizes an allocation or a loop:
    /// the shard count is at most [`MAX_SHARDS`], `runs` is exactly the number of seeds its
    /// shards hold, and every other count of runs is at most `runs`. Each error names its key.
    fn consistent(&self) -> Result<(), String> {
        crate::Seeds::range(self.seeds.from, self.seeds.count)
            .map_err(|e| format!("`seeds`: {e}"))?;
        if let Some(sh) = &self.shard {
            if !(2..=MAX_SHARDS).contains(&sh.count) {
                return Err(format!(
                    "`shard.count`: {} is out of range: expected 2 to {MAX_SHARDS} shards",
                    sh.count
                ));
            }
            let increasing = sh.included.windows(2).all(|w| w[0] < w[1]);
            let in_range = sh.included.iter().all(|i| (1..=sh.count).contains(i));
            if sh.included.is_empty() || !increasing || !in_range {
                return Err(format!(
                    "`shard.included`: must list shards from 1 to its count ({}) once each, in order",
                    sh.count
                ));
            }
        }
        // The shards are disjoint, so their seeds add up to at most `seeds.count`: no sum of
        // runs overflows, here or in a merge, and every count bounded by `runs` neither.
        let seeds: u64 = self
            .covered()
            .iter()
            .map(|&index| {
                Shard {
                    index,
                    count: self.shard_count(),
                }
                .len_of(self.seeds.count)
            })
            .sum();
        if self.runs != seeds {
            return Err(format!(
                "`runs`: {} runs, but its shards of `seeds` hold {seeds} seeds",
                self.runs
            ));
        }
        if let Some(b) = &self.expected_invalid_rate {
            rate_bound_consistent(b)?;
        }
        let c = &self.verdict_counts;
        let sum = |xs: &[u64]| xs.iter().map(|&x| u128::from(x)).sum::<u128>();
        if sum(&[self.passed, self.failed]) != u128::from(self.runs) {
            return Err("`passed`: with `failed`, it does not add up to `runs`".to_string());
        }
        if sum(&[c.valid, c.invalid, c.unknown]) != u128::from(self.runs) {
            return Err("`verdict_counts`: they do not add up to `runs`".to_string());
        }
        if self.grants_per_run.count() != self.runs {
            return Err("`grants_per_run`: it does not count every run".to_string());
        }
        let v = &self.violations;
        let at_most = |key: &str, n: u64, bound: (&str, u64)| {
            if n <= bound.1 {
                Ok(())
            } else {
                Err(format!(
                    "`{key}`: {n} is more than `{}` ({})",
                    bound.0, bound.1
                ))
            }
        };
        let runs = ("runs", self.runs);
        for (key, n) in [
            ("violations.exhausted", v.exhausted),
            ("violations.no_recovery", v.no_recovery),
            ("recovery_ns.count", self.recovery_ns.count()),
            ("nondeterministic", self.nondeterministic),
        ] {
            at_most(key, n, runs)?;
        }
        for (key, t) in &self.metrics.0 {
            if metric(key).is_none() {
                return Err(format!("`metrics.{key}`: not a metric of the checker"));
            }
            at_most(&format!("metrics.{key}.runs"), t.runs, runs)?;
            if !t.consistent() {
                return Err(format!(
                    "`metrics.{key}`: its counts cannot be one metric's over runs (more runs \
                     above 0 than runs, more never than above 0, or a sum without a largest value)"
                ));
            }
        }
        if let Some(l) = &self.leadership {
            at_most("leadership.two_leaders_runs", l.two_leaders_runs, runs)?;
        }
        if !self.determinism_checked && self.nondeterministic > 0 {
            return Err(format!(
                "`nondeterministic`: {} seeds, but `determinism_checked` is false",
                self.nondeterministic
            ));
        }
        let kept = KEPT_FAILURES as u64;
        let failures = self.failures.len() as u64;
        at_most("failures", failures, ("failed", self.failed))?;
        at_most("failures", failures, ("the kept failures", kept))?;
        let mismatches = self.mismatches.len() as u64;
        at_most(
            "mismatches",
            mismatches,
            ("nondeterministic", self.nondeterministic),
        )?;
        at_most("mismatches", mismatches, ("the kept mismatches", kept))?;
        let seeds = self.failures.iter().map(|f| ("failures", f.seed));
        let seeds = seeds.chain(self.mismatches.iter().map(|m| ("mismatches", m.seed)));
        for (key, seed) in seeds {
            if !self.covers(seed) {
                return Err(format!(
                    "`{key}`: seed {seed} is not among the seeds it covers"
                ));
            }
        }
        Ok(())
    }

    /// How many shards the range is cut into; 1 when the summary covers it all.
    fn shard_count(&self) -> u64 {
        self.shard.as_ref().map_or(1, |sh| sh.count)
    }

    /// The shards it covers; an unsharded summary covers shard 1 of 1.
    fn covered(&self) -> Vec<u64> {
        self.shard
            .as_ref()
            .map_or_else(|| vec![1], |sh| sh.included.clone())
    }

    /// True when `seed` is in the range and in a shard it covers.
    fn covers(&self, seed: u64) -> bool {
        let position = self.position(seed);
        position < self.seeds.count
            && self.shard.as_ref().is_none_or(|sh| {
                sh.included
                    .binary_search(&(position % sh.count + 1))
                    .is_ok()
            })
    }

    /// The position in the range of `seed`.
    fn position(&self, seed: u64) -> u64 {
        seed.wrapping_sub(self.seeds.from)
    }

    /// Folds one seed's outcome in.
    fn add(&mut self, o: &SeedOutcome) {
        self.runs += 1;
        if o.expected {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        self.verdict_counts.add(o.judged);
        self.violations.add(&o.violations);
        for &(m, value) in &o.metrics {
            self.metrics.add_value(m, value);
        }
        self.events = self.events.saturating_add(o.events);
        for &ns in &o.acquire_latencies_ns {
            self.acquire_latency_ns.add(ns);
        }
        self.grants_per_run.add(o.grants);
        if let Some(ns) = o.recovery_ns {
            self.recovery_ns.add(ns);
        }
        if let Some(((failovers, two_leaders), l)) =
            o.leadership.as_ref().zip(self.leadership.as_mut())
        {
            for &ns in failovers {
                l.failover_ns.add(ns);
            }
            l.two_leaders_runs += u64::from(*two_leaders);
        }
        self.digest = self
            .digest
            .wrapping_add(digest_term(o.seed, o.trace_hash, o.judged));
        if let Some(f) = &o.failure {
            self.failures.push(f.clone());
            self.keep_first_failures();
        }
        if let Some(f) = &o.invalid {
            self.invalid.push(f.clone());
            keep_first(&mut self.invalid, self.seeds.from);
        }
        if let Some(m) = &o.mismatch {
            self.nondeterministic += 1;
            self.mismatches.push(m.clone());
            self.keep_first_mismatches();
        }
    }

    fn keep_first_failures(&mut self) {
        keep_first(&mut self.failures, self.seeds.from);
    }

    fn keep_first_mismatches(&mut self) {
        let from = self.seeds.from;
        self.mismatches.sort_by_key(|m| m.seed.wrapping_sub(from));
        self.mismatches.truncate(KEPT_FAILURES);
    }

    /// The position past which a failing seed cannot be among the first kept: the last kept
    /// one's, once the list is full.
    fn failure_cutoff(&self) -> u64 {
        self.cutoff(&self.failures)
    }

    /// The position past which a seed cannot be among the first of `kept`: the last kept
    /// one's, once the list is full.
    fn cutoff(&self, kept: &[SeedFailure]) -> u64 {
        if kept.len() < KEPT_FAILURES {
            u64::MAX
        } else {
            kept.last().map_or(u64::MAX, |f| self.position(f.seed))
        }
    }

    fn rates(&self) -> SweepRates {
        let n = self.runs;
        let v = &self.violations;
        SweepRates {
            failed: rate(self.failed, n),
            valid: rate(self.verdict_counts.valid, n),
            invalid: rate(self.verdict_counts.invalid, n),
            unknown: rate(self.verdict_counts.unknown, n),
            exhausted: rate(v.exhausted, n),
            no_recovery: rate(v.no_recovery, n),
            metrics: METRICS
                .iter()
                .filter(|m| m.matter == Matter::Safety && m.better == Better::Lower)
                .filter_map(|m| {
                    let t = self.metrics.0.get(m.key)?;
                    Some((m.key.to_string(), rate(t.nonzero, n)))
                })
                .collect(),
        }
    }

    fn derived(&self) -> Derived {
        Derived {
            ok: self.ok(),
            unmet: self.unmet(),
            missing_shards: self.shard.as_ref().map(Shards::missing).unwrap_or_default(),
            rates: self.rates(),
            acquire_latency_ms: self.acquire_latency_ns.quantiles_ms(),
            recovery_ms: self.recovery_ns.quantiles_ms(),
            grants: Quantiles::of(&self.grants_per_run),
        }
    }

    /// The summary as one line of JSON (docs/report-format.md): the summary's fields, then
    /// `ok`, `missing_shards`, `rates`, `acquire_latency_ms` and `grants`, derived from them.
    pub fn json(&self) -> String {
        let json = Json {
            summary: self,
            derived: self.derived(),
        };
        serde_json::to_string(&json).expect("a sweep summary always serialises")
    }

    /// Reads a summary from the JSON of [`SweepSummary::json`]; the derived figures are
    /// ignored (they are computed again from the counts).
    ///
    /// # Errors
    /// The JSON does not parse, lacks a field, or is of another format.
    pub fn from_json(text: &str) -> Result<SweepSummary, String> {
        // What the file says is shown with its control characters escaped.
        Self::read_json(text).map_err(|e| crate::scenario::error::escaped(&e))
    }

    fn read_json(text: &str) -> Result<SweepSummary, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let s: SweepSummary = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| histogram_error(text).unwrap_or_else(|| json_error(&e)))?;
        de.end()
            .map_err(|e| format!("not the JSON of `lockstep sweep --format json`: {e}"))?;
        if s.format != FORMAT {
            return Err(format!("format `{}`, expected `{FORMAT}`", s.format));
        }
        s.consistent()?;
        Ok(s)
    }
}

/// A summary's `expected_invalid_rate` as a scenario's `[expect]` can give it: shares from 0 to
/// 1, at least one, `at_least` at most `at_most`.
fn rate_bound_consistent(b: &RateBound) -> Result<(), String> {
    for (key, share) in [("at_least", b.at_least), ("at_most", b.at_most)] {
        if let Some(share) = share.filter(|s| !(0.0..=1.0).contains(s)) {
            return Err(format!(
                "`expected_invalid_rate.{key}`: {share} is out of range: expected 0 to 1"
            ));
        }
    }
    match (b.at_least, b.at_most) {
        (None, None) => {
            Err("`expected_invalid_rate`: it gives neither at_least nor at_most".into())
        }
        (Some(l), Some(m)) if l > m => Err(format!(
            "`expected_invalid_rate`: at_least {l} is above at_most {m}"
        )),
        _ => Ok(()),
    }
}

/// A summary's JSON that does not read: a value of the wrong type or range, or a key missing
/// or unknown, named by its key path (`seeds.count`); text that is not JSON by the reader's
/// line and column.
fn json_error(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let inner = e.inner();
    let key = e.path().to_string();
    match inner.classify() {
        // A value of the wrong type or range, a key missing or unknown: named by its key,
        // the reader's own position left out.
        serde_json::error::Category::Data if key != "." => {
            let message = inner.to_string();
            let message = message
                .rfind(" at line ")
                .map_or(message.as_str(), |at| &message[..at]);
            format!("`{key}`: {}", json_plain(message))
        }
        _ => format!(
            "not the JSON of `lockstep sweep --format json`: {}",
            json_plain(&inner.to_string())
        ),
    }
}

/// A serde message about JSON in plain words: JSON's names for what was expected, never a
/// Rust type's (`expected u64`: a whole number ≥ 0; `expected struct Histogram`: an object).
fn json_plain(message: &str) -> String {
    let mut m = message
        .replace("unknown variant", "unknown value")
        .replace("expected u64", "expected a whole number ≥ 0")
        .replace("expected u32", "expected a whole number ≥ 0")
        .replace("expected usize", "expected a whole number ≥ 0")
        .replace("expected i64", "expected a whole number")
        .replace("expected f64", "expected a number")
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected an object")
        .replace("expected a boolean", "expected true or false");
    for (kind, word) in [
        ("expected struct ", "expected an object"),
        ("expected enum ", "expected a name in quotes"),
        ("expected a tuple of size ", "expected an array of "),
    ] {
        while let Some(at) = m.find(kind) {
            let rest = &m[at + kind.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            // A tuple's size is kept: `an array of 2 values`.
            let said = if kind.ends_with("size ") {
                format!("{word}{} values", &rest[..end])
            } else {
                word.to_string()
            };
            m = format!("{}{said}{}", &m[..at], &rest[end..]);
        }
    }
    m
}

/// The first histogram of a summary's JSON that does not read, with its key: a histogram's
/// counts are what a hand-made file gets wrong.
fn histogram_error(text: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    [
        "acquire_latency_ns",
        "grants_per_run",
        "recovery_ns",
        "leadership/failover_ns",
    ]
    .into_iter()
    .find_map(|key| {
        let value = json.pointer(&format!("/{key}"))?;
        let e = Histogram::deserialize(value).err()?;
        Some(format!(
            "`{}`: {}",
            key.replace('/', "."),
            json_plain(&e.to_string())
        ))
    })
}

/// Runs `target`'s scenario over the seeds of `config` on `config.jobs` threads and sums the
/// runs up; `observe` sees each seed's outcome, on the calling thread, in the order they
/// finish (the binary drives its progress bar with it).
///
/// The summary is the same for any number of jobs and equals the [`merge`] of the summaries of
/// the shards of the same range.
///
/// # Panics
/// If a run panics (a harness bug, see [`run`](crate::run())): the panic is propagated once
/// the other workers have stopped.
pub fn sweep(
    target: &SweepTarget,
    config: &SweepConfig,
    mut observe: impl FnMut(&SeedOutcome),
) -> SweepSummary {
    let mut summary = SweepSummary::new(target, config);
    let shard = config.shard.unwrap_or(Shard::ALL);
    let total = shard.len_of(config.count);
    // Failing seeds at or past this position cannot be among the first kept, so workers
    // need not explain them. It only decreases; a stale read just explains one seed too many.
    // Likewise for the invalid seeds kept under `verdict = "any"`.
    let cutoff = AtomicU64::new(u64::MAX);
    let invalid_cutoff = AtomicU64::new(u64::MAX);
    let file = summary.file.clone();
    let work = Work {
        target,
        config,
        file: &file,
        cutoff: &cutoff,
        invalid_cutoff: &invalid_cutoff,
    };
    crate::pool::run(
        config.jobs,
        total,
        |k| work.seed(shard.position(k)),
        |_, outcome| {
            summary.add(&outcome);
            cutoff.store(summary.failure_cutoff(), Ordering::Relaxed);
            invalid_cutoff.store(summary.cutoff(&summary.invalid), Ordering::Relaxed);
            observe(&outcome);
        },
    );
    summary
}

/// What every worker shares.
struct Work<'a> {
    target: &'a SweepTarget,
    config: &'a SweepConfig,
    file: &'a str,
    cutoff: &'a AtomicU64,
    invalid_cutoff: &'a AtomicU64,
}

impl Work<'_> {
    /// Runs the seed at `position` of the range.
    fn seed(&self, position: u64) -> SeedOutcome {
        let scenario = &self.target.scenario;
        let seed = self.config.from.wrapping_add(position);
        let r = run(scenario, seed, false);
        let mismatch = if self.config.check_determinism {
            rerun_matches(scenario, &r, false).err()
        } else {
            None
        };
        let explain = !r.expected() && position < self.cutoff.load(Ordering::Relaxed);
        let failure = explain.then(|| seed_failure(self.file, &scenario.name, &r));
        // With no verdict expected, an invalid run fails nothing: it is kept apart.
        let invalid = (scenario.expect.verdict.is_none()
            && r.judged == Validity::Invalid
            && position < self.invalid_cutoff.load(Ordering::Relaxed))
        .then(|| {
            failure
                .clone()
                .unwrap_or_else(|| seed_failure(self.file, &scenario.name, &r))
        });
        let v = &r.verdict;
        let exhausted = r.outcome != Outcome::Completed;
        let window = v.liveness.fault_window.map(|w| (w.from_ns, w.to_ns));
        let (acquire_latencies_ns, waiting_ns, begun_ns) =
            acquire_waits_split_ns(&r.history, window);
        SeedOutcome {
            position,
            seed,
            trace_hash: r.trace_hash,
            judged: r.judged,
            expected: r.expected(),
            exhausted,
            events: r.events,
            violations: Violations {
                exhausted: u64::from(exhausted),
                no_recovery: u64::from(
                    r.recovery_bound
                        .as_ref()
                        .is_some_and(|b| b.missed(v.liveness.recovery.and_then(|r| r.after_ns()))),
                ),
            },
            metrics: lockstep_check::metrics::values(v).collect(),
            grants: v.liveness.grants,
            recovery_ns: v.liveness.recovery.and_then(|r| r.after_ns()),
            acquire_latencies_ns,
            waiting_ns,
            unavailable_ns: v.liveness.unavailable_ns,
            cs_completed: v.liveness.cs_completed,
            fault_window: v.liveness.fault_window.map(|w| (w, begun_ns)),
            end_ns: r.history.end_ns,
            leadership: v
                .leadership
                .as_ref()
                .map(|l| (leadership_failovers_ns(&r.history), l.two_leaders_ns > 0)),
            failure,
            invalid,
            mismatch,
        }
    }
}

/// Why summaries cannot be merged. Each names the inputs (as given to [`merge`]).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no summaries to merge")]
    Empty,
    /// Two inputs are sweeps of different scenarios (names or file texts differ).
    #[error(
        "{a} and {b} are sweeps of different scenarios: `{a_name}` (file hash {a_hash:016x}) and `{b_name}` (file hash {b_hash:016x})"
    )]
    DifferentScenarios {
        /// The first input.
        a: String,
        /// Its scenario's name, its control characters escaped.
        a_name: String,
        /// Its file hash.
        a_hash: u64,
        /// The other input.
        b: String,
        /// Its scenario's name, its control characters escaped.
        b_name: String,
        /// Its file hash.
        b_hash: u64,
    },
    /// Two inputs cover different ranges of seeds.
    #[error("{a} and {b} sweep different seeds: {a_seeds} and {b_seeds}")]
    DifferentSeeds {
        /// The first input.
        a: String,
        /// Its seeds.
        a_seeds: String,
        /// The other input.
        b: String,
        /// Its seeds.
        b_seeds: String,
    },
    /// Two inputs cut the range into different numbers of shards.
    #[error("{a} and {b} cut the seeds into different numbers of shards: {a_count} and {b_count}")]
    DifferentShardCounts {
        /// The first input.
        a: String,
        /// Its shard count.
        a_count: u64,
        /// The other input.
        b: String,
        /// Its shard count.
        b_count: u64,
    },
    /// Two inputs cover the same seeds.
    #[error("{a} and {b} overlap: both cover {what}")]
    Overlap {
        /// The first input.
        a: String,
        /// The other input.
        b: String,
        /// What both cover.
        what: String,
    },
    /// An unsharded summary (every seed of the range) given with another.
    #[error("{whole} covers every seed of the range, so {other} overlaps it")]
    Whole {
        /// The unsharded input.
        whole: String,
        /// Another input.
        other: String,
    },
    /// A sum of samples would pass 2^64 - 1 (only hand-made inputs get there: no sum of runs
    /// can, since merged shards are disjoint).
    #[error("{input}: `{key}`: the merged count would pass 2^64 - 1")]
    Overflow {
        /// The input whose counts would overflow the sum.
        input: String,
        /// The key of the count.
        key: &'static str,
    },
    /// One input checked determinism and another did not.
    #[error("{a} ran every seed twice (--check-determinism) and {b} did not")]
    DifferentDeterminism {
        /// The input that checked.
        a: String,
        /// The input that did not.
        b: String,
    },
}

/// Merges the summaries of shards of one sweep, each given with a name for errors (its file):
/// the summary of the seeds they cover together. The shards of a whole range merge to the
/// unsharded sweep's summary, byte for byte; a subset merges to a summary whose `shard` lists
/// what is covered (and its JSON, what is missing). The first input's `file` is kept.
///
/// # Errors
/// A [`MergeError`]: inputs of different scenarios (name or file hash), seed ranges, shard
/// counts or determinism settings, or two inputs that cover the same shard.
pub fn merge(inputs: &[(String, SweepSummary)]) -> Result<SweepSummary, MergeError> {
    let ((first_name, first), rest) = inputs.split_first().ok_or(MergeError::Empty)?;
    let mut merged = first.clone();
    // Which input covered each shard so far, to name both in an overlap.
    let mut owner: BTreeMap<u64, &str> = first
        .covered()
        .into_iter()
        .map(|i| (i, first_name.as_str()))
        .collect();
    for (name, s) in rest {
        compatible(first_name, first, name, s)?;
        for i in s.covered() {
            if let Some(other) = owner.insert(i, name) {
                return Err(MergeError::Overlap {
                    a: other.to_string(),
                    b: name.clone(),
                    what: format!("shard {i}/{}", s.shard_count()),
                });
            }
        }
        merged.absorb(s).map_err(|key| MergeError::Overflow {
            input: name.clone(),
            key,
        })?;
    }
    if let Some(sh) = &mut merged.shard {
        sh.included = owner.into_keys().collect();
        if sh.included.len() as u64 == sh.count {
            merged.shard = None;
        }
    }
    Ok(merged)
}

fn compatible(a: &str, sa: &SweepSummary, b: &str, sb: &SweepSummary) -> Result<(), MergeError> {
    if sa.scenario != sb.scenario || sa.scenario_hash != sb.scenario_hash {
        return Err(MergeError::DifferentScenarios {
            a: a.to_string(),
            a_name: crate::scenario::error::escaped(&sa.scenario),
            a_hash: sa.scenario_hash,
            b: b.to_string(),
            b_name: crate::scenario::error::escaped(&sb.scenario),
            b_hash: sb.scenario_hash,
        });
    }
    if sa.seeds != sb.seeds {
        return Err(MergeError::DifferentSeeds {
            a: a.to_string(),
            a_seeds: range_text(sa.seeds.from, sa.seeds.count),
            b: b.to_string(),
            b_seeds: range_text(sb.seeds.from, sb.seeds.count),
        });
    }
    let count = SweepSummary::shard_count;
    if count(sa) != count(sb) && sa.shard.is_some() && sb.shard.is_some() {
        return Err(MergeError::DifferentShardCounts {
            a: a.to_string(),
            a_count: count(sa),
            b: b.to_string(),
            b_count: count(sb),
        });
    }
    if sa.shard.is_none() || sb.shard.is_none() {
        let (whole, other) = if sa.shard.is_none() { (a, b) } else { (b, a) };
        return Err(MergeError::Whole {
            whole: whole.to_string(),
            other: other.to_string(),
        });
    }
    if sa.determinism_checked != sb.determinism_checked {
        let (checked, unchecked) = if sa.determinism_checked {
            (a, b)
        } else {
            (b, a)
        };
        return Err(MergeError::DifferentDeterminism {
            a: checked.to_string(),
            b: unchecked.to_string(),
        });
    }
    Ok(())
}

impl SweepSummary {
    /// Adds the counts of `other`, a summary of other seeds of the same range.
    ///
    /// # Errors
    /// The key of a histogram whose count would overflow. Counts of runs cannot: each is at
    /// most `runs` ([`SweepSummary::consistent`]), and the runs of disjoint shards of the
    /// range add up to at most its seeds.
    fn absorb(&mut self, other: &SweepSummary) -> Result<(), &'static str> {
        self.acquire_latency_ns
            .merge(&other.acquire_latency_ns)
            .ok_or("acquire_latency_ns.count")?;
        self.grants_per_run
            .merge(&other.grants_per_run)
            .ok_or("grants_per_run.count")?;
        self.recovery_ns
            .merge(&other.recovery_ns)
            .ok_or("recovery_ns.count")?;
        match (&mut self.leadership, &other.leadership) {
            (Some(mine), Some(theirs)) => {
                mine.failover_ns
                    .merge(&theirs.failover_ns)
                    .ok_or("leadership.failover_ns.count")?;
                mine.two_leaders_runs += theirs.two_leaders_runs;
            }
            (None, Some(theirs)) => self.leadership = Some(theirs.clone()),
            _ => {}
        }
        self.runs += other.runs;
        self.passed += other.passed;
        self.failed += other.failed;
        self.verdict_counts.valid += other.verdict_counts.valid;
        self.verdict_counts.invalid += other.verdict_counts.invalid;
        self.verdict_counts.unknown += other.verdict_counts.unknown;
        self.violations.add(&other.violations);
        self.metrics
            .merge(&other.metrics)
            .ok_or("metrics: a count would pass 2^64 - 1")?;
        self.events = self.events.saturating_add(other.events);
        self.digest = self.digest.wrapping_add(other.digest);
        self.failures.extend(other.failures.iter().cloned());
        self.keep_first_failures();
        self.invalid.extend(other.invalid.iter().cloned());
        keep_first(&mut self.invalid, self.seeds.from);
        self.nondeterministic += other.nondeterministic;
        self.mismatches.extend(other.mismatches.iter().cloned());
        self.keep_first_mismatches();
        Ok(())
    }
}

impl SweepSummary {
    /// The summary as the reports crate's terminal text reads it
    /// ([`lockstep_reports::sweep::SweepView::table`]).
    pub fn view(&self) -> SweepView<'_> {
        let spread = |h: &Histogram| {
            Some(Spread {
                p50: h.quantile(500)?,
                p99: h.quantile(990)?,
                max: h.max()?,
                samples: h.count(),
            })
        };
        SweepView {
            scenario: &self.scenario,
            file: &self.file,
            from: self.seeds.from,
            count: self.seeds.count,
            shards: self.shard.as_ref().map(|sh| ShardsView {
                count: sh.count,
                included: &sh.included,
                missing: sh.missing(),
            }),
            property: self.property,
            expected_verdict: self.expected_verdict,
            expected_invalid_rate: self.expected_invalid_rate,
            unmet: self.unmet(),
            determinism_checked: self.determinism_checked,
            digest: self.digest,
            runs: self.runs,
            failed: self.failed,
            rates: self.rates(),
            acquire_latency_ns: spread(&self.acquire_latency_ns),
            recovery_ns: spread(&self.recovery_ns),
            grants_per_run: spread(&self.grants_per_run),
            events: self.events,
            failures: &self.failures,
            invalid: &self.invalid,
            nondeterministic: self.nondeterministic,
            mismatches: &self.mismatches,
        }
    }
}

/// Keeps the first [`KEPT_FAILURES`] of `seeds` by position in the range from `from`.
fn keep_first(seeds: &mut Vec<SeedFailure>, from: u64) {
    seeds.sort_by_key(|f| f.seed.wrapping_sub(from));
    seeds.truncate(KEPT_FAILURES);
}

/// A `u64` as 16 lowercase hex digits in JSON, as trace hashes are.
mod hex64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:016x}"))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() != 16 {
            return Err(serde::de::Error::custom(format!(
                "`{text}`: expected 16 hex digits"
            )));
        }
        u64::from_str_radix(&text, 16).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition_the_positions() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1/0", "0/0", "1", "a/4", "1/4/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        for total in [0, 1, 3, 4, 10, 11] {
            let mut seen = Vec::new();
            for index in 1..=4 {
                let sh = Shard { index, count: 4 };
                for k in 0..sh.len_of(total) {
                    let p = sh.position(k);
                    assert_eq!(p % 4, index - 1);
                    seen.push(p);
                }
            }
            seen.sort_unstable();
            assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{total} positions");
        }
    }

    #[test]
    fn the_digest_is_order_independent_and_sensitive_to_each_field() {
        let terms = [
            digest_term(1, 0xabc, Validity::Valid),
            digest_term(2, 0xdef, Validity::Invalid),
            digest_term(3, 0x123, Validity::Unknown),
        ];
        let forward = terms.iter().fold(0u64, |d, t| d.wrapping_add(*t));
        let backward = terms.iter().rev().fold(0u64, |d, t| d.wrapping_add(*t));
        assert_eq!(forward, backward);
        let base = digest_term(1, 0xabc, Validity::Valid);
        assert_ne!(base, digest_term(2, 0xabc, Validity::Valid));
        assert_ne!(base, digest_term(1, 0xabd, Validity::Valid));
        assert_ne!(base, digest_term(1, 0xabc, Validity::Invalid));
        assert_ne!(text_hash("a = 1"), text_hash("a = 2"));
    }
}
