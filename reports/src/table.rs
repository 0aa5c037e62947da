//! The terminal rendering of a run: the seed and trace hash first, the reproduce command, a
//! table of the verdict, and the explanations.

use std::fmt::Write as _;

use tabled::Table;
use tabled::builder::Builder;
use tabled::settings::peaker::Priority;
use tabled::settings::{Style, Width};

use crate::format::duration_ms;
use crate::run_report::{LatencyMs, RunReport};

impl RunReport {
    /// The report as text for a terminal.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "scenario   {}", self.scenario);
        let _ = writeln!(
            out,
            "seed       {}   trace {}   {} events, {}",
            self.seed, self.trace_hash, self.events, self.outcome
        );
        if let Some(why) = &self.stopped {
            let _ = writeln!(out, "stopped    {why}");
        }
        let _ = writeln!(out, "reproduce  {}", self.reproduce);
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", self.verdict_table());
        if !self.explanations.is_empty() {
            let _ = writeln!(out, "\nwhy:");
            for e in &self.explanations {
                let _ = writeln!(out, "  - {e}");
            }
        }
        let (drawn, own): (Vec<_>, Vec<_>) = self.unfired.iter().partition(|u| u.drawn());
        if !own.is_empty() || !drawn.is_empty() {
            let _ = writeln!(out, "\ndid not fire:");
            for u in own {
                let optional = if u.optional { " (optional)" } else { "" };
                let _ = writeln!(out, "  - {}{optional}: {}", u.fault, u.why());
            }
            if !drawn.is_empty() {
                let _ = writeln!(
                    out,
                    "  - {} of the faults the chaos profile placed on marks (optional)",
                    drawn.len()
                );
            }
        }
        let _ = writeln!(out);
        if self.expected {
            let _ = writeln!(
                out,
                "expectation met: {} is {}",
                self.property, self.verdict
            );
        } else {
            let _ = writeln!(out, "EXPECTATION NOT MET:");
            for u in &self.unmet {
                let _ = writeln!(out, "  - {u}");
            }
        }
        out
    }

    fn verdict_table(&self) -> String {
        let mut b = Builder::default();
        b.push_record(["", "result"]);
        b.push_record([
            format!("verdict ({})", self.property),
            self.verdict.to_string().to_uppercase(),
        ]);
        b.push_record(["resource".to_string(), self.resource.to_string()]);
        b.push_record([
            "mutual exclusion".to_string(),
            self.mutual_exclusion.to_string(),
        ]);
        let holders = if self.double_holders == 0 {
            "0".to_string()
        } else {
            format!(
                "{} pair(s), {} overlap, max {} at once",
                self.double_holders,
                duration_ms(self.overlap_ms),
                self.max_concurrent
            )
        };
        b.push_record(["double holders".to_string(), holders]);
        b.push_record([
            "stale ops accepted".to_string(),
            self.stale_accepted.to_string(),
        ]);
        b.push_record([
            "stale ops rejected".to_string(),
            self.stale_rejected.to_string(),
        ]);
        b.push_record(["lost updates".to_string(), self.lost_updates.to_string()]);
        b.push_record(["token order".to_string(), self.token_order.to_string()]);
        if let Some(q) = &self.queue {
            // A job queue's run has jobs, not grants: its figures replace the lock's.
            b.push_record([
                "jobs".to_string(),
                format!(
                    "{} enqueued, {} done ({:.1}/s), {} done twice, {} lost, {} left",
                    q.enqueued, q.done, q.jobs_per_s, q.done_twice, q.lost, q.left
                ),
            ]);
            let lag = latency_cell(q.lag_ms.as_ref());
            b.push_record(["queue lag".to_string(), lag]);
            for c in &self.counters {
                b.push_record([c.name.clone(), c.value.to_string()]);
            }
            let mut table = b.build();
            table.with(Style::rounded());
            return table.to_string();
        }
        if let Some(c) = &self.cron {
            b.push_record([
                "ticks".to_string(),
                format!(
                    "{} due, {} run, {} run twice, {} missed",
                    c.ticks, c.run, c.run_twice, c.missed
                ),
            ]);
            let lateness = latency_cell(c.lateness_ms.as_ref());
            b.push_record(["tick lateness".to_string(), lateness]);
        }
        if let Some(rw) = &self.read_write {
            b.push_record([
                "readers / writers".to_string(),
                format!(
                    "{} reader grants, {} writer grants ({:.2} writes/s)",
                    rw.readers, rw.writers, rw.writes_per_s
                ),
            ]);
            for (side, wait, longest) in [
                ("reader", &rw.reader_wait_ms, rw.longest_reader_wait_ms),
                ("writer", &rw.writer_wait_ms, rw.longest_writer_wait_ms),
            ] {
                let cell = format!(
                    "{}; longest {} (with waits never granted)",
                    latency_cell(wait.as_ref()),
                    duration_ms(longest)
                );
                b.push_record([format!("{side} wait"), cell]);
            }
        }
        if let Some(r) = &self.reentry {
            b.push_record([
                "nested acquisitions".to_string(),
                format!("{} taken again, {} granted", r.nested, r.granted),
            ]);
            b.push_record([
                "nested wait".to_string(),
                format!(
                    "{}; longest {} (with those never granted)",
                    latency_cell(r.wait_ms.as_ref()),
                    duration_ms(r.longest_wait_ms)
                ),
            ]);
        }
        b.push_record([
            "grants".to_string(),
            format!(
                "{} ({} completed, {} acquisitions given up)",
                self.grants, self.cs_completed, self.acquire_failures
            ),
        ]);
        let mut latency = latency_cell(self.acquire_latency_ms.as_ref());
        if self.acquire_censored > 0 {
            latency.push_str(&format!(
                "  ({} still waiting at a crash or the end)",
                self.acquire_censored
            ));
        }
        b.push_record(["acquire latency".to_string(), latency]);
        b.push_record(["unavailable".to_string(), duration_ms(self.unavailable_ms)]);
        let f = &self.failover_ms;
        let failover = match (f.count, f.max, f.mean) {
            (0, _, _) => "-".to_string(),
            (n, Some(max), Some(mean)) => {
                format!(
                    "{n} fault(s), {} recovered, max {}, mean {}",
                    f.recovered,
                    duration_ms(max),
                    duration_ms(mean)
                )
            }
            (n, _, _) => format!("{n} fault(s), none recovered"),
        };
        b.push_record(["failover".to_string(), failover]);
        let fairness = self.fairness.map_or("-".to_string(), |x| format!("{x:.2}"));
        b.push_record(["fairness (FIFO = 1.00)".to_string(), fairness]);
        if let Some(l) = &self.leadership {
            b.push_record(["leadership terms".to_string(), l.terms.to_string()]);
            b.push_record(["two leaders".to_string(), duration_ms(l.two_leaders_ms)]);
            let failover = latency_cell(l.failover_ms.as_ref());
            b.push_record(["leader failover".to_string(), failover]);
            b.push_record([
                "items done twice".to_string(),
                l.duplicate_items.to_string(),
            ]);
            b.push_record(["items skipped".to_string(), l.skipped_items.to_string()]);
        }
        for c in &self.counters {
            let value = match (&c.per, c.ratio) {
                (Some(per), Some(ratio)) => format!("{} ({ratio:.2} to {per})", c.value),
                _ => c.value.to_string(),
            };
            b.push_record([c.name.clone(), value]);
        }
        b.push_record([
            "storage".to_string(),
            format!(
                "value {} after {} accepted writes",
                self.final_value, self.accepted_writes
            ),
        ]);
        let mut table = b.build();
        table.with(Style::rounded());
        table.to_string()
    }
}

/// Fits `table` into `width` terminal columns, when given: the widest columns are wrapped
/// first, at word boundaries where they can be. The text stays whole, only on more lines.
pub(crate) fn fit(table: &mut Table, width: Option<usize>) {
    if let Some(width) = width {
        table.with(
            Width::wrap(width)
                .keep_words(true)
                .priority(Priority::max(true)),
        );
    }
}

/// `p50 5ms  p99 9ms  max 12ms`, or `-` without samples.
fn latency_cell(l: Option<&LatencyMs>) -> String {
    match l {
        Some(l) => {
            // A lower bound reads "≥".
            let bound = |name: &str| {
                if l.at_least.contains(&name) {
                    "≥"
                } else {
                    ""
                }
            };
            format!(
                "p50 {}{}  p99 {}{}  max {}{}",
                bound("p50"),
                duration_ms(l.p50),
                bound("p99"),
                duration_ms(l.p99),
                bound("max"),
                duration_ms(l.max)
            )
        }
        None => "-".to_string(),
    }
}
