//! The summary of one run, as the JSON of `lockstep run --format json`.

use lockstep_check::{Property, Validity, Verdict};
use serde::Serialize;

use crate::format::ms;

/// Where a run came from, besides its verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSource {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file as given on the command line.
    pub file: String,
    /// The seed.
    pub seed: u64,
    /// The run's trace hash.
    pub trace_hash: u64,
    /// False when the run hit its event bound before its end.
    pub complete: bool,
    /// Events handled.
    pub events: u64,
    /// True time the run reached, in ns.
    pub end_ns: u64,
    /// What stopped the run before its end, other than its event bound: the outcome's name
    /// (`memory-budget`, `wall-budget`) and the reason in words.
    pub stopped: Option<(&'static str, String)>,
}

/// Acquire latency percentiles in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencyMs {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Longest.
    pub max: f64,
    /// Which of `p50`, `p99` and `max` are only lower bounds: a sample at or below it is a
    /// wait still open when its client crashed or the run ended. Left out when none is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub at_least: Vec<&'static str>,
}

/// Failover figures in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailoverMs {
    /// Faults that took away a holder.
    pub count: u64,
    /// Of those, how many were followed by a grant to another client.
    pub recovered: u64,
    /// Longest time from such a fault to the next grant, if any recovered.
    pub max: Option<f64>,
    /// Mean of those times.
    pub mean: Option<f64>,
}

/// Leadership metrics of a run (the checker's `leadership`), times in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeadershipMs {
    /// Grants with at least one accepted write.
    pub terms: u64,
    /// Time with two leaders' work accepted together.
    pub two_leaders_ms: f64,
    /// Leadership changes: from the last write of the earlier terms to the next term's first;
    /// null with fewer than two terms.
    pub failover_ms: Option<LatencyMs>,
    /// Accepted writes of a value already accepted.
    pub duplicate_items: u64,
    /// Values up to the highest accepted one never written.
    pub skipped_items: u64,
}

/// A job queue's figures in a run (the checker's `queue`), times in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueMs {
    /// Jobs enqueued.
    pub enqueued: u64,
    /// Jobs done at least once.
    pub done: u64,
    /// Jobs done again.
    pub done_twice: u64,
    /// Jobs never done while a later one was.
    pub lost: u64,
    /// Jobs left in the queue at the end.
    pub left: u64,
    /// Jobs done per simulated second.
    pub jobs_per_s: f64,
    /// Queue lag: enqueue to first dequeue; null when no job was dequeued.
    pub lag_ms: Option<LatencyMs>,
}

/// A scheduled job's figures in a run (the checker's `cron`), times in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CronMs {
    /// Ticks judged, from the first due to the last.
    pub ticks: u64,
    /// Ticks whose job ran.
    pub run: u64,
    /// Further runs of a tick already run.
    pub run_twice: u64,
    /// Ticks never run while a later one came due.
    pub missed: u64,
    /// From the due a tick's first run answered to its grant; null when none ran.
    pub lateness_ms: Option<LatencyMs>,
}

/// A read-write lock's figures in a run (the checker's `read_write`), times in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReadWriteMs {
    /// Readers' (shared) grants.
    pub readers: u64,
    /// Writers' (exclusive) grants.
    pub writers: u64,
    /// Writers' accepted writes per simulated second: the writer throughput.
    pub writes_per_s: f64,
    /// Readers' waits, request to grant; null without one.
    pub reader_wait_ms: Option<LatencyMs>,
    /// Writers' waits, request to grant; null without one.
    pub writer_wait_ms: Option<LatencyMs>,
    /// The longest reader wait, counting waits that ended without a grant.
    pub longest_reader_wait_ms: f64,
    /// The longest writer wait, counting waits that ended without a grant (a starved writer).
    pub longest_writer_wait_ms: f64,
}

/// Nested acquisitions in a run (the checker's `reentry`), times in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReentryMs {
    /// Nested acquisitions begun.
    pub nested: u64,
    /// Those that held the lock again.
    pub granted: u64,
    /// Their waits; null without one.
    pub wait_ms: Option<LatencyMs>,
    /// The longest nested wait, counting those never answered.
    pub longest_wait_ms: f64,
}

/// A family's named count about a run (for example ZooKeeper's watch notifications), shown
/// beside the verdict, and per another counter when it is a rate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Counter {
    /// What is counted.
    pub name: String,
    /// The count.
    pub value: u64,
    /// The counter this one is shown per, if any.
    pub per: Option<String>,
    /// `value` divided by the `per` counter's value; null without `per`, or when that is 0.
    pub ratio: Option<f64>,
}

impl Counter {
    /// The counters of a run from `(name, value, per)`, with each ratio worked out from the
    /// counter it names.
    pub fn list(counts: &[(String, u64, Option<String>)]) -> Vec<Counter> {
        counts
            .iter()
            .map(|(name, value, per)| {
                let base = per
                    .as_ref()
                    .and_then(|p| counts.iter().find(|(n, _, _)| n == p))
                    .map(|(_, v, _)| *v);
                Counter {
                    name: name.clone(),
                    value: *value,
                    per: per.clone(),
                    ratio: base.filter(|&b| b > 0).map(|b| *value as f64 / b as f64),
                }
            })
            .collect()
    }
}

/// A fault that did not fire in the run: placed on a mark that was not reached, or aimed at
/// a role nobody played once it came due.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unfired {
    /// Which fault: `fault[i]` for the file's `i`-th `[[fault]]`, `chaos[k]` for the `k`-th
    /// fault the chaos profile drew, `schedule[i]` in a schedule of another origin (a shrink).
    pub fault: String,
    /// The node whose mark it waited for; null for a fault aimed at a role.
    pub node: Option<String>,
    /// The mark; null for a fault aimed at a role.
    pub mark: Option<String>,
    /// The occurrence it waited for (0 for a fault aimed at a role).
    pub occurrence: u32,
    /// How many times the node reached the mark in the run (0 for a fault aimed at a role).
    pub reached: u32,
    /// When the trigger lapsed (`before_ms`), if the run got that far; null otherwise.
    pub lapsed_ms: Option<f64>,
    /// The role it was aimed at, which no node played from `due_ms` to the end of the run;
    /// null for a mark's trigger that was not reached.
    pub role: Option<String>,
    /// When it came due, for a fault aimed at a role; null otherwise.
    pub due_ms: Option<f64>,
    /// True when the file lets it not fire (`optional = true`), and for the chaos profile's.
    pub optional: bool,
    /// Its place in the run's schedule, from 0.
    #[serde(skip)]
    pub index: usize,
}

impl Unfired {
    /// Why it did not fire, in a few words: `client-1 reached `granted` 3 times, not 5`.
    pub fn why(&self) -> String {
        if let Some(role) = &self.role {
            let due = self.due_ms.unwrap_or(0.0);
            return format!("no node was the {role} from {due} ms, when it came due, to the end");
        }
        let node = self.node.as_deref().unwrap_or("?");
        let mark = self.mark.as_deref().unwrap_or("?");
        let occurrence = self.occurrence;
        match (self.lapsed_ms, self.reached) {
            (Some(at), _) => {
                format!(
                    "it lapsed at {at} ms, before occurrence {occurrence} of `{mark}` on {node}"
                )
            }
            (None, 0) => format!("{node} never reached `{mark}`"),
            (None, 1) => format!("{node} reached `{mark}` once, not {occurrence} times"),
            (None, n) => format!("{node} reached `{mark}` {n} times, not {occurrence}"),
        }
    }

    /// The sentence `unmet` gives it: `fault[2] never fired: ...`.
    pub fn sentence(&self) -> String {
        format!("{} never fired: {}", self.fault, self.why())
    }

    /// True for a fault the chaos profile drew.
    pub fn drawn(&self) -> bool {
        self.fault.starts_with("chaos[")
    }
}

/// One judged run. Field by field in docs/report-format.md.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file.
    pub file: String,
    /// The seed.
    pub seed: u64,
    /// The trace hash, as 16 hex digits.
    pub trace_hash: String,
    /// `completed`; `exhausted` when the event bound cut the run short, `memory-budget` or
    /// `wall-budget` when a budget did.
    pub outcome: &'static str,
    /// Why the run stopped before its end, in words, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Events handled.
    pub events: u64,
    /// Simulated true time, in ms.
    pub simulated_ms: f64,
    /// The property the scenario judges.
    pub property: Property,
    /// The verdict of that property.
    pub verdict: Validity,
    /// Sub-verdict: was the protected data harmed?
    pub resource: Validity,
    /// Sub-verdict: did two holders act at once?
    pub mutual_exclusion: Validity,
    /// True when the run meets the scenario's `[expect]`.
    pub expected: bool,
    /// How the run falls short of `[expect]`; empty when `expected`.
    pub unmet: Vec<String>,
    /// What kind of miss it is: `safety`, `liveness` or `unknown`; `null` when `expected`.
    pub miss: Option<crate::suite::Miss>,
    /// Overlapping pairs of critical sections.
    pub double_holders: u64,
    /// Total true time with two or more holders, in ms.
    pub overlap_ms: f64,
    /// Most holders at one instant.
    pub max_concurrent: u32,
    /// Stale operations storage accepted.
    pub stale_accepted: u64,
    /// Stale operations fencing rejected.
    pub stale_rejected: u64,
    /// Writes that overwrote a write they never saw.
    pub lost_updates: u64,
    /// Token-order inversions (checked only for families that promise order).
    pub token_order: u64,
    /// Grants.
    pub grants: u64,
    /// Critical sections that wrote and released.
    pub cs_completed: u64,
    /// Acquisitions given up.
    pub acquire_failures: u64,
    /// Accepted writes.
    pub accepted_writes: u64,
    /// Storage's value at the end, replayed from the history.
    pub final_value: u64,
    /// Each wait for the lock, from the request that began it to its grant across every try
    /// given up; a wait still open at a crash or the end at its length so far.
    pub acquire_latency_ms: Option<LatencyMs>,
    /// The waits of `acquire_latency_ms` still open when their client crashed or the run
    /// ended.
    pub acquire_censored: u64,
    /// True time with no holder while a client waited, in ms.
    pub unavailable_ms: f64,
    /// Failover after faults that took away a holder.
    pub failover_ms: FailoverMs,
    /// Share of grants in request order (1.0 is FIFO).
    pub fairness: Option<f64>,
    /// Leadership metrics, only when the scenario measures them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leadership: Option<LeadershipMs>,
    /// A job queue's figures, only when the run enqueued jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueMs>,
    /// A scheduled job's figures, only when its clients ran one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<CronMs>,
    /// A read-write lock's figures, only when some grant was a reader's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_write: Option<ReadWriteMs>,
    /// Nested acquisitions, only when a client took the lock it held again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reentry: Option<ReentryMs>,
    /// The family's own counts (empty for families that keep none).
    pub counters: Vec<Counter>,
    /// The faults placed on a mark that did not fire, in schedule order.
    pub unfired: Vec<Unfired>,
    /// Every violation explained by the events involved.
    pub explanations: Vec<String>,
    /// A command that reproduces this run bit for bit.
    pub reproduce: String,
    /// The full verdict, for tools that want every detail.
    pub details: Verdict,
    /// The run's events, one line each, when asked for with `--trace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<String>>,
}

impl RunReport {
    /// The report of a run of `source` judged by `verdict` for `property`.
    pub fn new(
        source: RunSource,
        property: Property,
        verdict: Verdict,
        unmet: Vec<String>,
        explanations: Vec<String>,
    ) -> RunReport {
        let l = &verdict.liveness;
        let reproduce = format!(
            "lockstep run {} --seed {}",
            shell_quote(&source.file),
            source.seed
        );
        RunReport {
            scenario: source.scenario,
            file: source.file,
            seed: source.seed,
            trace_hash: format!("{:016x}", source.trace_hash),
            outcome: match &source.stopped {
                Some((name, _)) => name,
                None if source.complete => "completed",
                None => "exhausted",
            },
            stopped: source.stopped.as_ref().map(|(_, why)| why.clone()),
            events: source.events,
            simulated_ms: ms(source.end_ns),
            property,
            verdict: verdict.get(property),
            resource: verdict.resource,
            mutual_exclusion: verdict.mutual_exclusion,
            expected: unmet.is_empty(),
            unmet,
            miss: None,
            double_holders: verdict.double_holders.pairs,
            overlap_ms: ms(verdict.double_holders.overlap_ns),
            max_concurrent: verdict.double_holders.max_concurrent,
            stale_accepted: verdict.stale_accepted.count,
            stale_rejected: verdict.stale_rejected,
            lost_updates: verdict.lost_updates.count,
            token_order: verdict.token_order.count,
            grants: l.grants,
            cs_completed: l.cs_completed,
            acquire_failures: l.acquire_failures,
            accepted_writes: l.accepted_writes,
            final_value: l.final_value,
            acquire_latency_ms: l.acquire_latency.as_ref().map(|p| LatencyMs {
                p50: ms(p.p50_ns),
                p99: ms(p.p99_ns),
                max: ms(p.max_ns),
                at_least: [("p50", p.p50_ns), ("p99", p.p99_ns), ("max", p.max_ns)]
                    .into_iter()
                    .filter(|&(_, ns)| l.acquire_censored.at_least(ns))
                    .map(|(name, _)| name)
                    .collect(),
            }),
            acquire_censored: l.acquire_censored.count,
            unavailable_ms: ms(l.unavailable_ns),
            failover_ms: FailoverMs {
                count: l.failover.count,
                recovered: l.failover.recovered,
                max: l.failover.max_ns.map(ms),
                mean: l.failover.mean_ns.map(ms),
            },
            fairness: l.fairness_ppm.map(|p| f64::from(p) / 1e6),
            leadership: verdict.leadership.as_ref().map(|l| LeadershipMs {
                terms: l.terms,
                two_leaders_ms: ms(l.two_leaders_ns),
                failover_ms: l.failover.as_ref().map(|p| LatencyMs {
                    p50: ms(p.p50_ns),
                    p99: ms(p.p99_ns),
                    max: ms(p.max_ns),
                    at_least: Vec::new(),
                }),
                duplicate_items: l.duplicate_items.count,
                skipped_items: l.skipped_items.count,
            }),
            queue: verdict.queue.as_ref().map(|q| QueueMs {
                enqueued: q.enqueued,
                done: q.done,
                done_twice: q.done_twice.count,
                lost: q.lost.count,
                left: q.left,
                jobs_per_s: if source.end_ns == 0 {
                    0.0
                } else {
                    q.done as f64 * 1e9 / source.end_ns as f64
                },
                lag_ms: q.lag.as_ref().map(|p| LatencyMs {
                    p50: ms(p.p50_ns),
                    p99: ms(p.p99_ns),
                    max: ms(p.max_ns),
                    at_least: Vec::new(),
                }),
            }),
            cron: verdict.cron.as_ref().map(|c| CronMs {
                ticks: c.ticks,
                run: c.run,
                run_twice: c.run_twice.count,
                missed: c.missed.count,
                lateness_ms: c.lateness.as_ref().map(|p| LatencyMs {
                    p50: ms(p.p50_ns),
                    p99: ms(p.p99_ns),
                    max: ms(p.max_ns),
                    at_least: Vec::new(),
                }),
            }),
            read_write: verdict.read_write.as_ref().map(|rw| {
                let latency = |p: &lockstep_check::verdict::Percentiles| LatencyMs {
                    p50: ms(p.p50_ns),
                    p99: ms(p.p99_ns),
                    max: ms(p.max_ns),
                    at_least: Vec::new(),
                };
                ReadWriteMs {
                    readers: rw.readers,
                    writers: rw.writers,
                    writes_per_s: if source.end_ns == 0 {
                        0.0
                    } else {
                        verdict.liveness.accepted_writes as f64 * 1e9 / source.end_ns as f64
                    },
                    reader_wait_ms: rw.reader_wait.as_ref().map(latency),
                    writer_wait_ms: rw.writer_wait.as_ref().map(latency),
                    longest_reader_wait_ms: ms(rw.longest_reader_wait_ns),
                    longest_writer_wait_ms: ms(rw.longest_writer_wait_ns),
                }
            }),
            reentry: verdict.reentry.as_ref().map(|r| ReentryMs {
                nested: r.nested,
                granted: r.granted,
                wait_ms: r.wait.as_ref().map(|p| LatencyMs {
                    p50: ms(p.p50_ns),
                    p99: ms(p.p99_ns),
                    max: ms(p.max_ns),
                    at_least: Vec::new(),
                }),
                longest_wait_ms: ms(r.longest_wait_ns),
            }),
            counters: Vec::new(),
            unfired: Vec::new(),
            explanations,
            reproduce,
            details: verdict,
            trace: None,
        }
    }

    /// The same report with the kind of its miss ([`crate::suite::Miss`]).
    pub fn with_miss(self, miss: Option<crate::suite::Miss>) -> RunReport {
        RunReport { miss, ..self }
    }

    /// The same report with the family's counters.
    pub fn with_counters(self, counters: Vec<Counter>) -> RunReport {
        RunReport { counters, ..self }
    }

    /// The same report with the faults placed on a mark that did not fire.
    pub fn with_unfired(self, unfired: Vec<Unfired>) -> RunReport {
        RunReport { unfired, ..self }
    }

    /// The report as one line of JSON.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a report always serialises")
    }
}

/// Quotes `s` for a POSIX shell when it needs quoting.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::{Counter, shell_quote};

    #[test]
    fn a_counter_per_another_is_divided_by_it() {
        let c = Counter::list(&[
            ("releases".into(), 8, None),
            ("notifications".into(), 72, Some("releases".into())),
            ("idle".into(), 3, Some("nothing".into())),
        ]);
        assert_eq!(c[0].ratio, None);
        assert_eq!(c[1].ratio, Some(9.0));
        assert_eq!(c[2].ratio, None);
    }

    #[test]
    fn paths_are_quoted_only_when_needed() {
        assert_eq!(
            shell_quote("scenarios/catalogue/k1.toml"),
            "scenarios/catalogue/k1.toml"
        );
        assert_eq!(
            shell_quote("my scenarios/k1.toml"),
            "'my scenarios/k1.toml'"
        );
        assert_eq!(shell_quote("it's.toml"), r"'it'\''s.toml'");
    }
}
