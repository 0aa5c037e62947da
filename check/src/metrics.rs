//! The figures of a [`Verdict`] as named metrics: one list, [`METRICS`], that every reader of
//! figures (`[expect]` bounds, sweep summaries, `report` rows, reviews, JSON and JUnit) reads
//! by key, so a figure is defined once here and once in docs/checker.md ("Metrics").
//!
//! A metric's value in one run is a `u64` in its [`Unit`], or `None` when the run did not
//! measure it (no job queue, no wait, no fault window). Adding a figure is one entry here and
//! its line in the docs; a test holds the two lists to each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::verdict::{Percentiles, Verdict};

/// What a metric's value counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// A number of things.
    Count,
    /// True time, in nanoseconds (a key ending `_ns`; `[expect]` bounds it in ms as `_ms`).
    Ns,
    /// A share, in parts per million (a key ending `_ppm`).
    Ppm,
}

/// Which way a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Less is better (a violation, a wait).
    Lower,
    /// More is better (work done).
    Higher,
    /// Neither: it describes the run (jobs enqueued, stale ops fencing rejected).
    Neither,
}

/// Whether a bound on a metric is a safety or a liveness matter: which kind of miss a run that
/// breaks it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Matter {
    /// The protected data or the exclusion was harmed.
    Safety,
    /// Progress: the lock or its work was slow or stopped.
    Liveness,
}

/// A named figure of a verdict.
#[derive(Clone, Copy)]
pub struct Metric {
    /// Its name in every output and in `[expect]` (a time's bound key ends `_ms`).
    pub key: &'static str,
    /// The section of the verdict it comes from: `safety`, `liveness`, `fault_window`,
    /// `leadership`, `queue`, `cron`, `read_write` or `reentry`.
    pub section: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
    /// Whether a bound on it is safety or liveness.
    pub matter: Matter,
    /// Whether summing it over runs means something (a count, a time): a sum over runs is
    /// shown only for these; a percentile or a maximum is not summed.
    pub additive: bool,
    /// What it is, in one line (the docs line says the same).
    pub about: &'static str,
    value: fn(&Verdict) -> Option<u64>,
}

impl std::fmt::Debug for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key)
    }
}

impl PartialEq for Metric {
    fn eq(&self, other: &Metric) -> bool {
        self.key == other.key
    }
}

impl Eq for Metric {}

impl Metric {
    /// Its value in `verdict`; `None` when the run did not measure it.
    pub fn of(&self, verdict: &Verdict) -> Option<u64> {
        (self.value)(verdict)
    }

    /// The key of a bound on it in `[expect]`: a time is bounded in milliseconds (`_ns`
    /// becomes `_ms`), anything else in its own unit.
    pub fn bound_key(&self) -> String {
        match self.key.strip_suffix("_ns") {
            Some(stem) => format!("{stem}_ms"),
            None => self.key.to_string(),
        }
    }

    /// Units of the metric per unit of its `[expect]` bound: 1,000,000 for a time.
    pub fn bound_scale(&self) -> u64 {
        match self.unit {
            Unit::Ns => 1_000_000,
            _ => 1,
        }
    }
}

/// The metric called `key`, if any.
pub fn metric(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key)
}

/// The metric whose `[expect]` bound key is `key` (`two_leaders_ms` for `two_leaders_ns`).
pub fn metric_bounded_as(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.bound_key() == key)
}

/// A value that means "never": a time after which something was to come and did not.
pub const NEVER: u64 = u64::MAX;

#[allow(
    clippy::too_many_arguments,
    reason = "one positional row per metric keeps the list a table to read"
)]
const fn m(
    key: &'static str,
    section: &'static str,
    unit: Unit,
    better: Better,
    matter: Matter,
    additive: bool,
    about: &'static str,
    value: fn(&Verdict) -> Option<u64>,
) -> Metric {
    Metric {
        key,
        section,
        unit,
        better,
        matter,
        additive,
        about,
        value,
    }
}

use Better::{Higher, Lower, Neither};
use Matter::{Liveness, Safety};
use Unit::{Count, Ns, Ppm};

fn p99(p: Option<Percentiles>) -> Option<u64> {
    p.map(|p| p.p99_ns)
}

fn max(p: Option<Percentiles>) -> Option<u64> {
    p.map(|p| p.max_ns)
}

/// Every metric, in the order outputs list them.
#[rustfmt::skip]
pub static METRICS: &[Metric] = &[
    // Safety: each makes a verdict invalid.
    m("double_holders", "safety", Count, Lower, Safety, true,
      "pairs of critical sections of different clients that overlapped",
      |v| Some(v.double_holders.pairs)),
    m("overlap_ns", "safety", Ns, Lower, Safety, true,
      "true time with two or more critical sections of one lock open",
      |v| Some(v.double_holders.overlap_ns)),
    m("max_concurrent", "safety", Count, Neither, Safety, false,
      "the most critical sections of one lock open at one instant (readers share)",
      |v| Some(u64::from(v.double_holders.max_concurrent))),
    m("stale_accepted", "safety", Count, Lower, Safety, true,
      "ops storage accepted from a grant after an op of a later grant",
      |v| Some(v.stale_accepted.count)),
    m("stale_rejected", "safety", Count, Neither, Safety, true,
      "stale ops storage rejected: fencing at work",
      |v| Some(v.stale_rejected)),
    m("lost_updates", "safety", Count, Lower, Safety, true,
      "accepted writes computed from a value storage no longer held",
      |v| Some(v.lost_updates.count)),
    m("token_order", "safety", Count, Lower, Safety, true,
      "grants whose fencing token was not above every earlier grant's",
      |v| Some(v.token_order.count)),
    // Liveness over the whole run.
    m("grants", "liveness", Count, Higher, Liveness, true,
      "grants of the lock",
      |v| Some(v.liveness.grants)),
    m("cs_completed", "liveness", Count, Higher, Liveness, true,
      "grants with an accepted write whose critical section was released",
      |v| Some(v.liveness.cs_completed)),
    m("accepted_writes", "liveness", Count, Higher, Liveness, true,
      "writes storage accepted",
      |v| Some(v.liveness.accepted_writes)),
    m("acquire_wait_p99_ns", "liveness", Ns, Lower, Liveness, false,
      "99th percentile of the waits for the lock (the one wait: want to grant)",
      |v| p99(v.liveness.acquire_latency)),
    m("acquire_wait_max_ns", "liveness", Ns, Lower, Liveness, false,
      "the longest wait for the lock, censored ones at their length so far",
      |v| max(v.liveness.acquire_latency)),
    m("acquire_censored", "liveness", Count, Neither, Liveness, true,
      "waits still open at their client's crash or the run's end",
      |v| Some(v.liveness.acquire_censored.count)),
    m("acquire_failures", "liveness", Count, Neither, Liveness, true,
      "tries given up (AcquireFailed): a client's give-up policy at work",
      |v| Some(v.liveness.acquire_failures)),
    m("unavailable_ns", "liveness", Ns, Lower, Liveness, true,
      "true time with no critical section open while a client waited",
      |v| Some(v.liveness.unavailable_ns)),
    m("run_ns", "liveness", Ns, Neither, Liveness, true,
      "the run's true time, from 0 to its end",
      |v| Some(v.liveness.end_ns)),
    m("fairness_ppm", "liveness", Ppm, Higher, Liveness, false,
      "share of grants given in request order",
      |v| v.liveness.fairness_ppm.map(u64::from)),
    m("holder_faults", "liveness", Count, Neither, Liveness, true,
      "crash, pause and partition faults that took a client inside its critical section",
      |v| Some(v.liveness.failover.count)),
    m("holder_faults_recovered", "liveness", Count, Higher, Liveness, true,
      "of those, the faults followed by a grant to a client the fault did not touch",
      |v| Some(v.liveness.failover.recovered)),
    m("holder_failover_sum_ns", "liveness", Ns, Lower, Liveness, true,
      "the times from each recovered fault to that grant, summed (their mean, rounded down, \
       times their count)",
      |v| {
          let f = v.liveness.failover;
          Some(f.mean_ns.map_or(0, |mean| mean.saturating_mul(f.recovered)))
      }),
    m("holder_failover_max_ns", "liveness", Ns, Lower, Liveness, false,
      "the longest time from such a fault to a grant to a client it did not touch (never \
       when one had none; 0 without such a fault)",
      |v| {
          let f = v.liveness.failover;
          Some(if f.recovered < f.count { NEVER } else { f.max_ns.unwrap_or(0) })
      }),
    m("recovery_ns", "liveness", Ns, Lower, Liveness, false,
      "from the quiet tail's start to the next grant (never when none came)",
      |v| v.liveness.recovery.map(|r| r.after_ns().unwrap_or(NEVER))),
    // The fault window: the costs a review and a comparison rank by.
    m("fault_window_ns", "fault_window", Ns, Neither, Liveness, true,
      "the fault window's length, from the first fault to the quiet tail",
      |v| v.liveness.fault_window.map(|w| w.to_ns.saturating_sub(w.from_ns))),
    m("fault_unavailable_ns", "fault_window", Ns, Lower, Liveness, true,
      "time in the fault window with no critical section open while a client waited",
      |v| v.liveness.fault_window.map(|w| w.unavailable_ns)),
    m("fault_unavailable_ppm", "fault_window", Ppm, Lower, Liveness, false,
      "the share of the fault window with no holder while a client waited",
      |v| v.liveness.fault_window.map(|w| {
          let len = w.to_ns.saturating_sub(w.from_ns);
          if len == 0 { 0 } else {
              (u128::from(w.unavailable_ns.min(len)) * 1_000_000 / u128::from(len)) as u64
          }
      })),
    m("fault_acquire_wait_p99_ns", "fault_window", Ns, Lower, Liveness, false,
      "99th percentile of the waits begun in the fault window, at their whole length",
      |v| v.liveness.fault_window.and_then(|w| p99(w.acquire_latency))),
    m("fault_acquire_wait_max_ns", "fault_window", Ns, Lower, Liveness, false,
      "the longest wait begun in the fault window",
      |v| v.liveness.fault_window.and_then(|w| max(w.acquire_latency))),
    m("fault_acquire_censored", "fault_window", Count, Neither, Liveness, true,
      "waits begun in the fault window still open at a crash or the run's end",
      |v| v.liveness.fault_window.map(|w| w.acquire_censored.count)),
    m("fault_cs_completed", "fault_window", Count, Higher, Liveness, true,
      "grants in the fault window whose critical sections completed",
      |v| v.liveness.fault_window.map(|w| w.cs_completed)),
    // Leadership.
    m("terms", "leadership", Count, Neither, Liveness, true,
      "leadership terms: grants with an accepted write",
      |v| v.leadership.as_ref().map(|l| l.terms)),
    m("two_leaders_ns", "leadership", Ns, Lower, Safety, true,
      "time with two leaders' work spans open together",
      |v| v.leadership.as_ref().map(|l| l.two_leaders_ns)),
    m("failover_max_ns", "leadership", Ns, Lower, Liveness, false,
      "the longest leadership change (0 with fewer than two terms)",
      |v| v.leadership.as_ref().map(|l| l.failover.map_or(0, |f| f.max_ns))),
    m("duplicate_items", "leadership", Count, Lower, Safety, true,
      "work items done twice",
      |v| v.leadership.as_ref().map(|l| l.duplicate_items.count)),
    m("skipped_items", "leadership", Count, Lower, Safety, true,
      "work items never done below the highest done",
      |v| v.leadership.as_ref().map(|l| l.skipped_items.count)),
    // Job queue.
    m("jobs_enqueued", "queue", Count, Neither, Liveness, true,
      "jobs enqueued",
      |v| v.queue.as_ref().map(|q| q.enqueued)),
    m("jobs_done", "queue", Count, Higher, Liveness, true,
      "jobs whose work finished at least once",
      |v| v.queue.as_ref().map(|q| q.done)),
    m("jobs_done_twice", "queue", Count, Lower, Safety, true,
      "finishes of a job already done",
      |v| v.queue.as_ref().map(|q| q.done_twice.count)),
    m("jobs_lost", "queue", Count, Lower, Safety, true,
      "jobs never done although a later job was",
      |v| v.queue.as_ref().map(|q| q.lost.count)),
    m("jobs_left", "queue", Count, Lower, Liveness, true,
      "jobs never done, enqueued after the last done: the backlog at the end",
      |v| v.queue.as_ref().map(|q| q.left)),
    m("queue_lag_p99_ns", "queue", Ns, Lower, Liveness, false,
      "99th percentile of the queue lag, enqueue to first dequeue",
      |v| v.queue.as_ref().and_then(|q| p99(q.lag))),
    // Scheduled jobs.
    m("ticks", "cron", Count, Neither, Liveness, true,
      "ticks judged, from the first due to the last",
      |v| v.cron.as_ref().map(|c| c.ticks)),
    m("ticks_run", "cron", Count, Higher, Liveness, true,
      "ticks whose job ran",
      |v| v.cron.as_ref().map(|c| c.run)),
    m("ticks_run_twice", "cron", Count, Lower, Safety, true,
      "further runs of a tick already run",
      |v| v.cron.as_ref().map(|c| c.run_twice.count)),
    m("ticks_missed", "cron", Count, Lower, Liveness, true,
      "ticks no grant ran although a later tick came due",
      |v| v.cron.as_ref().map(|c| c.missed.count)),
    m("tick_lateness_p99_ns", "cron", Ns, Lower, Liveness, false,
      "99th percentile of the lateness, a tick's due to its first run's grant",
      |v| v.cron.as_ref().and_then(|c| p99(c.lateness))),
    // Read-write locks.
    m("reader_grants", "read_write", Count, Higher, Liveness, true,
      "readers' (shared) grants",
      |v| v.read_write.as_ref().map(|r| r.readers)),
    m("writer_grants", "read_write", Count, Higher, Liveness, true,
      "writers' (exclusive) grants",
      |v| v.read_write.as_ref().map(|r| r.writers)),
    m("reader_wait_p99_ns", "read_write", Ns, Lower, Liveness, false,
      "99th percentile of the readers' waits, request to grant",
      |v| v.read_write.as_ref().and_then(|r| p99(r.reader_wait))),
    m("writer_wait_p99_ns", "read_write", Ns, Lower, Liveness, false,
      "99th percentile of the writers' waits, request to grant",
      |v| v.read_write.as_ref().and_then(|r| p99(r.writer_wait))),
    m("longest_reader_wait_ns", "read_write", Ns, Lower, Liveness, false,
      "the longest wait of a reader, counting waits never granted",
      |v| v.read_write.as_ref().map(|r| r.longest_reader_wait_ns)),
    m("longest_writer_wait_ns", "read_write", Ns, Lower, Liveness, false,
      "the longest wait of a writer, counting waits never granted",
      |v| v.read_write.as_ref().map(|r| r.longest_writer_wait_ns)),
    // Nested acquisitions.
    m("nested", "reentry", Count, Neither, Liveness, true,
      "nested acquisitions begun",
      |v| v.reentry.as_ref().map(|r| r.nested)),
    m("nested_granted", "reentry", Count, Higher, Liveness, true,
      "nested acquisitions that held the lock again",
      |v| v.reentry.as_ref().map(|r| r.granted)),
    m("longest_nested_wait_ns", "reentry", Ns, Lower, Liveness, false,
      "the longest nested wait, counting those never answered",
      |v| v.reentry.as_ref().map(|r| r.longest_wait_ns)),
];

/// Every metric as a Markdown table, one row each: its key, the key of a bound on it in
/// `[expect]`, its unit, which way is better, what a bound on it is, and what it is. The
/// Metrics section of docs/checker.md is this table (a test holds them together), and
/// `lockstep metrics` prints it.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| key | `[expect]` bound | unit | better | a bound is | what it is |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    for m in METRICS {
        let unit = match m.unit {
            Unit::Count => "count",
            Unit::Ns => "ns (bound in ms)",
            Unit::Ppm => "ppm",
        };
        let better = match m.better {
            Better::Lower => "lower",
            Better::Higher => "higher",
            Better::Neither => "-",
        };
        let matter = match m.matter {
            Matter::Safety => "safety",
            Matter::Liveness => "liveness",
        };
        out.push_str(&format!(
            "| `{}` | `{}` | {unit} | {better} | {matter} | {}{} |\n",
            m.key,
            m.bound_key(),
            m.about,
            if m.additive {
                ""
            } else {
                " (not summed over runs)"
            },
        ));
    }
    out
}

/// One metric ([`METRICS`]) over many runs: exact counts,
/// merged by adding, so a sweep's shards and a report's runs give the same figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricTally {
    /// Runs that measured it.
    pub runs: u64,
    /// Of those, the runs whose value was above 0 (a "never" counts).
    pub nonzero: u64,
    /// Of those, the runs whose value was "never" (a time after which something was to come
    /// and did not: [`NEVER`]).
    pub never: u64,
    /// The sum of the other runs' values, at most 2^64 - 1.
    pub total: u64,
    /// The largest of the other runs' values.
    pub max: u64,
}

impl MetricTally {
    /// Counts one run's value.
    pub fn add(&mut self, value: u64) {
        self.runs += 1;
        self.nonzero += u64::from(value > 0);
        if value == NEVER {
            self.never += 1;
        } else {
            self.total = self.total.saturating_add(value);
            self.max = self.max.max(value);
        }
    }

    /// Adds `other`'s runs; `None`, and nothing changed, when a count would pass 2^64 - 1.
    #[must_use]
    pub fn merge(&mut self, other: &MetricTally) -> Option<()> {
        let merged = MetricTally {
            runs: self.runs.checked_add(other.runs)?,
            nonzero: self.nonzero.checked_add(other.nonzero)?,
            never: self.never.checked_add(other.never)?,
            total: self.total.saturating_add(other.total),
            max: self.max.max(other.max),
        };
        *self = merged;
        Some(())
    }

    /// Whether its counts can be one metric's over runs: no more runs above 0 than runs, no
    /// more "never" than those, a largest value above 0 exactly when some run other than a
    /// "never" was above 0, and a sum of 0 exactly when that largest value is.
    pub fn consistent(&self) -> bool {
        self.nonzero <= self.runs
            && self.never <= self.nonzero
            && (self.nonzero > self.never) == (self.max > 0)
            && (self.total == 0) == (self.max == 0)
    }
}

/// The checker's metrics over many runs, by key: every metric some run measured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Metrics(pub BTreeMap<String, MetricTally>);

impl Metrics {
    /// Counts the metrics of one run's verdict.
    pub fn add(&mut self, verdict: &Verdict) {
        for (m, value) in values(verdict) {
            self.add_value(m, value);
        }
    }

    /// Counts one run's `value` of `metric`.
    pub fn add_value(&mut self, metric: &Metric, value: u64) {
        self.0.entry(metric.key.to_string()).or_default().add(value);
    }

    /// Adds `other`'s runs; `None` when a count would pass 2^64 - 1 (then `self` may be
    /// partly merged: the caller drops it).
    #[must_use]
    pub fn merge(&mut self, other: &Metrics) -> Option<()> {
        for (key, tally) in &other.0 {
            self.0.entry(key.clone()).or_default().merge(tally)?;
        }
        Some(())
    }

    /// The tally of `key`; an empty one when no run measured it.
    pub fn get(&self, key: &str) -> MetricTally {
        self.0.get(key).copied().unwrap_or_default()
    }

    /// Runs whose value of `key` was above 0.
    pub fn runs_with(&self, key: &str) -> u64 {
        self.get(key).nonzero
    }
}

/// The metrics a run measured, with their values, in the order of [`METRICS`].
pub fn values(verdict: &Verdict) -> impl Iterator<Item = (&'static Metric, u64)> + '_ {
    METRICS.iter().filter_map(|m| m.of(verdict).map(|v| (m, v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_carry_their_unit() {
        for (i, a) in METRICS.iter().enumerate() {
            assert!(
                METRICS[i + 1..].iter().all(|b| b.key != a.key),
                "{} twice",
                a.key
            );
            assert_eq!(a.key.ends_with("_ns"), a.unit == Ns, "{}", a.key);
            assert_eq!(a.key.ends_with("_ppm"), a.unit == Ppm, "{}", a.key);
        }
        assert_eq!(
            metric_bounded_as("two_leaders_ms"),
            metric("two_leaders_ns")
        );
        assert_eq!(
            metric("two_leaders_ns").unwrap().bound_key(),
            "two_leaders_ms"
        );
        assert_eq!(metric("grants").unwrap().bound_key(), "grants");
    }

    #[test]
    fn the_docs_list_every_metric_as_the_code_defines_it() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/checker.md");
        let docs = std::fs::read_to_string(path).expect("docs/checker.md");
        let section = docs
            .split("\n## Metrics\n")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .expect("docs/checker.md has a Metrics section");
        assert!(
            section.contains(&markdown_table()),
            "docs/checker.md's Metrics table is not `lockstep metrics`: paste its output"
        );
    }
}
