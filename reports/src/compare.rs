//! The comparison report of `lockstep report`: one [`Row`] per scenario (a lock family with its
//! settings, a storage mode and a property, over many seeds) and the [`FailingSeed`]s kept to
//! draw. Plain data, filled in by the `lockstep` package (`src/report.rs`) and rendered here as
//! a terminal table ([`Comparison::table`]), Markdown ([`Comparison::markdown`]), HTML
//! ([`Comparison::html`]) and JSON ([`Comparison::json`], specified in docs/report-format.md).
//!
//! Every figure is computed before it gets here (rates with their intervals, pooled
//! percentiles): this module formats and never judges.

use lockstep_check::{Event, FaultKind, History, Property, Validity};
use serde::{Deserialize, Serialize};
use tabled::builder::Builder;
use tabled::settings::Style;

use crate::format::{duration_ms, expected, ms, percent, plural, rate};

/// The `format` of the report's JSON.
pub const FORMAT: &str = "lockstep-report/1";

/// A whole comparison report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// [`FORMAT`].
    pub format: String,
    /// `--seeds N` when given: every scenario ran the `N` seeds from its `seed`.
    pub seeds_override: Option<u64>,
    /// One row per input, in the order given.
    pub rows: Vec<Row>,
    /// The failing seeds kept (at most [`KEPT_FAILING`] per row), in row order, then seed
    /// order.
    pub failing: Vec<FailingSeed>,
}

/// How many failing seeds a row keeps for its sections and timelines.
pub const KEPT_FAILING: usize = 3;

/// How many of a failing seed's faults the Markdown and HTML list (a chaos run may have
/// hundreds; the JSON has them all).
pub const KEPT_FAULTS: usize = 12;

/// Where a row's figures come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A scenario file, run over its seeds by `lockstep report`.
    Scenario,
    /// The JSON summary of `lockstep sweep` (or `merge`), read as it is.
    Sweep,
}

/// How many runs judged the property valid, invalid and unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdicts {
    /// Runs judged valid.
    pub valid: u64,
    /// Runs judged invalid.
    pub invalid: u64,
    /// Runs judged unknown.
    pub unknown: u64,
}

/// Runs that showed something, as a share of the runs with its 95% Wilson score interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Runs that showed it.
    pub seeds: u64,
    /// `seeds` divided by the row's runs.
    pub rate: f64,
    /// The 95% Wilson score interval of `rate`, `[low, high]`.
    pub ci95: (f64, f64),
}

/// The rates of a row; each is `None` when the row ran no seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Runs whose property was judged invalid.
    pub invalid: Option<Rate>,
    /// Runs that did not meet the scenario's `[expect]`.
    pub failed: Option<Rate>,
}

/// One metric of the checker over a row's runs (docs/checker.md, Metrics): read by its key,
/// so a metric the checker adds shows here with no change to this crate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    /// The metric's key (`lockstep_check::metric` gives its unit and which way is better).
    pub key: String,
    /// Runs that measured it.
    pub runs: u64,
    /// The runs whose value was above 0, as a share of `runs`; `None` without runs.
    pub nonzero: Option<Rate>,
    /// Runs whose value was "never" (a time after which something was to come and did not).
    pub never: u64,
    /// The sum over the other runs, in the metric's unit; `None` for a metric that does not
    /// add up (a percentile, a maximum).
    pub total: Option<u64>,
    /// The largest value of the other runs; `None` when every run measured 0 or never.
    pub max: Option<u64>,
}

/// Nearest-rank percentiles and the maximum, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantilesMs {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// Leadership metrics over all the runs of a row whose scenario measures them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LeadershipStats {
    /// Leadership terms, summed over the runs.
    pub terms: u64,
    /// Runs with two leaders' work accepted together.
    pub two_leaders_runs: u64,
    /// Time with two leaders' work accepted together, summed over the runs, in ms.
    pub two_leaders_ms: f64,
    /// Leadership changes (last write of the earlier terms to the next term's first), pooled
    /// over every change of every run; `None` without a change.
    pub failover_ms: Option<QuantilesMs>,
    /// Items done twice, summed over the runs.
    pub duplicate_items: u64,
    /// Items skipped, summed over the runs.
    pub skipped_items: u64,
}

/// A job queue's figures over a scenario's runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueStats {
    /// Jobs enqueued, summed over the runs.
    pub enqueued: u64,
    /// Jobs done at least once, summed over the runs.
    pub done: u64,
    /// Throughput: jobs done per second of simulated time, over every run.
    pub jobs_per_s: f64,
    /// Jobs done twice, summed over the runs.
    pub done_twice: u64,
    /// Jobs lost, summed over the runs.
    pub lost: u64,
    /// Jobs left at the end, summed over the runs.
    pub left: u64,
    /// Queue lag (enqueue to first dequeue), pooled over every job of every run; `None`
    /// when no job was dequeued.
    pub lag_ms: Option<QuantilesMs>,
}

/// A scheduled job's figures over a scenario's runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CronStats {
    /// Ticks judged, summed over the runs.
    pub ticks: u64,
    /// Ticks whose job ran, summed over the runs.
    pub run: u64,
    /// Further runs of a tick already run, summed over the runs.
    pub run_twice: u64,
    /// Ticks missed, summed over the runs.
    pub missed: u64,
    /// Runs with a tick run twice.
    pub run_twice_runs: u64,
    /// Runs with a tick missed.
    pub missed_runs: u64,
    /// Lateness (from the due a tick's first run answered to its grant), pooled over every
    /// tick run of every run; `None` when none ran.
    pub lateness_ms: Option<QuantilesMs>,
}

/// The herd figure over a scenario's runs: acquisitions and the requests they took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HerdStats {
    /// Acquisitions the clients started, summed over the runs.
    pub acquisitions: u64,
    /// Requests the lock clients sent to take the lock, summed over the runs.
    pub requests: u64,
    /// Acquisitions given up, summed over the runs.
    pub given_up: u64,
}

/// Nested acquisitions over a scenario's runs (`[workload] reenter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReentryStats {
    /// Nested acquisitions begun, summed over the runs.
    pub nested: u64,
    /// Those granted, summed over the runs.
    pub granted: u64,
    /// Their waits, pooled over every run; `None` when none was granted.
    pub wait_ms: Option<QuantilesMs>,
    /// The longest nested wait of any run, counting those never answered.
    pub longest_wait_ms: f64,
}

/// A read-write lock's figures over a scenario's runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadWriteStats {
    /// Readers' (shared) grants, summed over the runs.
    pub readers: u64,
    /// Writers' (exclusive) grants, summed over the runs.
    pub writers: u64,
    /// Writer throughput: accepted writes per second of simulated time, over every run.
    pub writes_per_s: f64,
    /// Readers' waits (request to grant), pooled over every run; `None` without one.
    pub reader_wait_ms: Option<QuantilesMs>,
    /// Writers' waits, pooled over every run; `None` without one.
    pub writer_wait_ms: Option<QuantilesMs>,
    /// The longest writer wait of any run, counting waits that ended without a grant (a
    /// writer starved by readers).
    pub longest_writer_wait_ms: f64,
}

/// Many keys' figures over a scenario's runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KeysStats {
    /// Rows in storage.
    pub rows: u32,
    /// Locks over them.
    pub locks: u32,
    /// The share of the clients' time spent waiting for a lock (request to grant, give-up,
    /// crash or the run's end), over every run.
    pub waiting: f64,
}

/// Recovery after a chaos profile's faults stop.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryStats {
    /// Runs with a quiet tail.
    pub runs: u64,
    /// Runs whose lock was granted in the quiet tail.
    pub recovered: u64,
    /// Runs not granted within the scenario's `[chaos] liveness_ms` (0 without a bound).
    pub no_recovery: u64,
    /// From the quiet tail's start to the next grant, over the runs that had one.
    pub after_ms: Option<QuantilesMs>,
}

/// One scenario × model × storage mode over its seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file, or the sweep's JSON file, as given.
    pub file: String,
    /// Where the figures come from.
    pub source: Source,
    /// The scenario's description (empty when unknown).
    pub description: String,
    /// `redis`, `redlock`, `etcd` or `zookeeper`; empty when unknown (a sweep whose scenario
    /// file could not be read).
    pub family: String,
    /// The family with its key settings, e.g. `redlock redsync ×5, ttl 10s`.
    pub system: String,
    /// The storage's fencing mode, or the guard of a resource kept in etcd.
    pub storage: String,
    /// The property judged.
    pub property: Property,
    /// The verdict `[expect]` asks for; `None` for `any`.
    pub expected_verdict: Option<Validity>,
    /// Runs.
    pub seeds: u64,
    /// Runs that met `[expect]`.
    pub met: u64,
    /// The verdicts of the property.
    pub verdicts: Verdicts,
    /// Rates over the runs.
    pub rates: Rates,
    /// The checker's metrics over the runs, in the checker's order (docs/checker.md,
    /// Metrics): the same for a scenario's runs and for a sweep summary of them.
    pub metrics: Vec<MetricRow>,
    /// Every wait for the lock of every run (want to grant); `None` without one.
    pub acquire_latency_ms: Option<QuantilesMs>,
    /// Recovery after chaos faults; `None` without a chaos profile.
    pub recovery: Option<RecoveryStats>,
    /// Leadership metrics; `None` when the scenario does not measure them, and for a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leadership: Option<LeadershipStats>,
    /// Job queue figures; `None` when the scenario's runs enqueued no job, and for a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueStats>,
    /// Scheduled job figures; `None` when the scenario's runs had no ticks, and for a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<CronStats>,
    /// Many keys' figures; `None` unless the scenario's clients work on many keys, and for a
    /// sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeysStats>,
    /// Read-write lock figures; `None` unless some grant was a reader's, and for a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_write: Option<ReadWriteStats>,
    /// The herd figure; `None` unless the scenario sets `[workload] acquire`, and for a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub herd: Option<HerdStats>,
    /// Nested acquisitions; `None` unless the scenario's clients took the lock again, and for
    /// a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reentry: Option<ReentryStats>,
}

/// A fault the world applied, for a failing seed's section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultEntry {
    /// True time, in ns.
    pub time_ns: u64,
    /// What happened.
    pub kind: FaultKind,
    /// The processes affected, by name.
    pub nodes: Vec<String>,
    /// The world's description of it.
    pub detail: String,
}

/// A seed whose property was judged invalid, kept with what a timeline needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailingSeed {
    /// The index in [`Comparison::rows`] of its row.
    pub row: usize,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file, as given.
    pub file: String,
    /// The seed.
    pub seed: u64,
    /// The trace hash, 16 hex digits.
    pub trace_hash: String,
    /// The verdict of the property (invalid).
    pub verdict: Validity,
    /// True when the run met the scenario's `[expect]` (a known-unsafe design caught).
    pub expected: bool,
    /// Each violation explained by the events involved.
    pub explanations: Vec<String>,
    /// `lockstep run FILE --seed N`.
    pub reproduce: String,
    /// The faults the world applied, in time order.
    pub faults: Vec<FaultEntry>,
    /// The judged history (not in the JSON: the reproduce command gives it back).
    #[serde(skip)]
    pub history: History,
}

impl FailingSeed {
    /// The faults of `history`, with node names.
    pub fn faults_of(history: &History) -> Vec<FaultEntry> {
        history
            .entries
            .iter()
            .filter_map(|e| match &e.event {
                Event::Fault(f) => Some(FaultEntry {
                    time_ns: e.time_ns,
                    kind: f.kind,
                    nodes: f.nodes.iter().map(|&n| history.name(n)).collect(),
                    detail: f.detail.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// A stable anchor for the section: `seed-<row>-<seed>`.
    pub fn anchor(&self) -> String {
        format!("seed-{}-{}", self.row, self.seed)
    }
}

/// What the HTML page draws besides the tables, rendered elsewhere (the timelines and sweep
/// maps are SVG from their own modules): the page only places them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Visuals {
    /// For each [`Comparison::failing`] seed, in order, its timeline as an inline `<svg>`
    /// element, or `None` (the section then says so). Missing entries count as `None`.
    pub timelines: Vec<Option<String>>,
    /// Sweep maps: a title (plain text, escaped by the page) and an inline `<svg>` element.
    pub sweep_maps: Vec<(String, String)>,
}

impl Comparison {
    /// The report as pretty-printed JSON (docs/report-format.md), with a final newline.
    pub fn json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serialises");
        s.push('\n');
        s
    }

    /// Reads the JSON of [`Comparison::json`] (histories are not in it and come back empty).
    ///
    /// # Errors
    /// The text is not such JSON, or of another format.
    pub fn from_json(text: &str) -> Result<Comparison, String> {
        let c: Comparison = serde_json::from_str(text)
            .map_err(|e| format!("not the JSON of `lockstep report`: {e}"))?;
        if c.format != FORMAT {
            return Err(format!("format `{}`, expected `{FORMAT}`", c.format));
        }
        Ok(c)
    }

    /// Runs over every row.
    pub fn runs(&self) -> u64 {
        self.rows.iter().map(|r| r.seeds).sum()
    }

    /// The failing seeds of row `row`.
    pub fn failing_of(&self, row: usize) -> impl Iterator<Item = &FailingSeed> {
        self.failing.iter().filter(move |f| f.row == row)
    }

    /// The comparison as a terminal table, with one line of totals.
    pub fn table(&self) -> String {
        self.table_fitting(None)
    }

    /// [`Comparison::table`] fitted into `width` columns, when given (a terminal's width).
    pub fn table_fitting(&self, width: Option<usize>) -> String {
        let mut b = Builder::default();
        b.push_record(self.columns().iter().map(|(name, _)| name.to_string()));
        for row in &self.rows {
            b.push_record(self.cells(row));
        }
        let mut table = b.build();
        table.with(Style::rounded());
        crate::table::fit(&mut table, width);
        format!("{table}\n{}\n", self.summary_line())
    }

    /// `52 rows, 260 runs, 40 failing seeds kept`.
    pub fn summary_line(&self) -> String {
        let rows = self.rows.len();
        let runs = self.runs();
        let failing = self.failing.len();
        format!(
            "{rows} row{}, {runs} run{}, {failing} failing seed{} kept",
            plural(rows),
            plural(runs),
            plural(failing)
        )
    }
}

impl Comparison {
    /// True when some row has leadership metrics: every rendering then adds their columns.
    fn has_leadership(&self) -> bool {
        self.rows.iter().any(|r| r.leadership.is_some())
    }

    /// True when some row has job queue figures: every rendering then adds their columns.
    fn has_queue(&self) -> bool {
        self.rows.iter().any(|r| r.queue.is_some())
    }

    /// True when some row has scheduled job figures: every rendering then adds their columns.
    fn has_cron(&self) -> bool {
        self.rows.iter().any(|r| r.cron.is_some())
    }

    /// True when some row has many keys' figures: every rendering then adds their columns.
    fn has_keys(&self) -> bool {
        self.rows.iter().any(|r| r.keys.is_some())
    }

    /// True when some row has the herd figure: every rendering then adds its columns.
    fn has_herd(&self) -> bool {
        self.rows.iter().any(|r| r.herd.is_some())
    }

    /// True when some row has nested acquisitions: every rendering then adds their columns.
    fn has_reentry(&self) -> bool {
        self.rows.iter().any(|r| r.reentry.is_some())
    }

    /// True when some row has read-write figures: every rendering then adds their columns.
    fn has_read_write(&self) -> bool {
        self.rows.iter().any(|r| r.read_write.is_some())
    }

    /// The columns of this report's table: [`COLUMNS`], and [`LEADERSHIP_COLUMNS`] when some
    /// row has leadership metrics.
    pub(crate) fn columns(&self) -> Vec<(&'static str, &'static str)> {
        let mut columns = COLUMNS.to_vec();
        if self.has_leadership() {
            columns.extend(LEADERSHIP_COLUMNS);
        }
        if self.has_queue() {
            columns.extend(QUEUE_COLUMNS);
        }
        if self.has_cron() {
            columns.extend(CRON_COLUMNS);
        }
        if self.has_keys() {
            columns.extend(KEYS_COLUMNS);
        }
        if self.has_read_write() {
            columns.extend(READ_WRITE_COLUMNS);
        }
        if self.has_herd() {
            columns.extend(HERD_COLUMNS);
        }
        if self.has_reentry() {
            columns.extend(REENTRY_COLUMNS);
        }
        columns
    }

    /// The cells of `row` in [`Comparison::columns`] order.
    pub(crate) fn cells(&self, row: &Row) -> Vec<String> {
        let mut cells = cells(row);
        if self.has_leadership() {
            cells.extend(leadership_cells(row.leadership));
        }
        if self.has_queue() {
            cells.extend(queue_cells(row.queue));
        }
        if self.has_cron() {
            cells.extend(cron_cells(row.cron));
        }
        if self.has_keys() {
            cells.extend(keys_cells(row.keys));
        }
        if self.has_read_write() {
            cells.extend(read_write_cells(row.read_write));
        }
        if self.has_herd() {
            cells.extend(herd_cells(row.herd));
        }
        if self.has_reentry() {
            cells.extend(reentry_cells(row.reentry));
        }
        cells
    }
}

/// The columns added when some row has leadership metrics.
pub(crate) const LEADERSHIP_COLUMNS: [(&str, &str); 5] = [
    (
        "terms",
        "Leadership terms (grants with an accepted write), summed over the runs.",
    ),
    (
        "two leaders",
        "Runs with two leaders' work accepted together, and that time summed over the runs.",
    ),
    (
        "leader failover p50/p99/max",
        "From the last write of the earlier terms to the next term's first write, pooled over every change of every run.",
    ),
    ("duplicates", "Work items done twice, summed over the runs."),
    ("skipped", "Work items never done, summed over the runs."),
];

/// The columns added when some row has job queue figures.
pub(crate) const QUEUE_COLUMNS: [(&str, &str); 5] = [
    (
        "jobs done",
        "Jobs done at least once, of those enqueued, summed over the runs.",
    ),
    (
        "jobs/s",
        "Throughput: jobs done per second of simulated time, over every run.",
    ),
    (
        "done twice / lost",
        "Jobs done twice, and jobs never done while later ones were, summed over the runs.",
    ),
    (
        "left",
        "Jobs still queued at the end, summed over the runs.",
    ),
    (
        "queue lag p50/p99",
        "From each job's enqueue to its first dequeue, pooled over every job of every run.",
    ),
];

/// The columns added when some row has scheduled job figures.
pub(crate) const CRON_COLUMNS: [(&str, &str); 3] = [
    (
        "ticks run",
        "Ticks whose job ran, of those due, summed over the runs.",
    ),
    (
        "run twice / missed",
        "Runs with a tick run twice, and runs with a tick missed (never run while a later one came due), of the runs.",
    ),
    (
        "tick lateness p50/p99",
        "From the due a tick's first run answered, on its runner's schedule, to that run's grant, pooled over every tick run of every run.",
    ),
];

/// The columns added when some row has many keys' figures.
pub(crate) const KEYS_COLUMNS: [(&str, &str); 2] = [
    (
        "rows / locks",
        "Rows in storage, and the locks over them (1: one lock for all; as many as rows: a lock per row).",
    ),
    (
        "waiting",
        "Share of the clients' time spent waiting for a lock (request to grant or give-up), over every run.",
    ),
];

/// The columns added when some row has the herd figure.
pub(crate) const HERD_COLUMNS: [(&str, &str); 2] = [
    (
        "requests / acquisition",
        "The thundering herd: requests the lock clients sent to take the lock (SET NX, puts and looks, creates and listings, lock calls) per acquisition started, over every run.",
    ),
    (
        "given up",
        "Acquisitions that gave up (a try that found the lock held, a wait that timed out), of those started, summed over the runs.",
    ),
];

/// A row's herd cells, dashes without the figure.
fn herd_cells(h: Option<HerdStats>) -> Vec<String> {
    let Some(h) = h else {
        return vec!["-".to_string(); HERD_COLUMNS.len()];
    };
    let per = match h.acquisitions {
        0 => "-".to_string(),
        n => format!("{:.2}", h.requests as f64 / n as f64),
    };
    vec![per, format!("{} / {}", h.given_up, h.acquisitions)]
}

/// The columns added when some row has nested acquisitions.
pub(crate) const REENTRY_COLUMNS: [(&str, &str); 3] = [
    (
        "taken again",
        "Nested acquisitions granted, of those begun (a holder taking its lock again), summed over the runs.",
    ),
    (
        "nested wait p50/p99",
        "Waits of the nested acquisitions granted, pooled over every run: none for a re-entrant lock, the rest of the lease for one that waits for itself.",
    ),
    (
        "longest nested wait",
        "The longest nested wait of any run, counting those never answered.",
    ),
];

/// A row's nested acquisition cells, dashes without any.
fn reentry_cells(r: Option<ReentryStats>) -> Vec<String> {
    let Some(r) = r else {
        return vec!["-".to_string(); REENTRY_COLUMNS.len()];
    };
    vec![
        format!("{} / {}", r.granted, r.nested),
        r.wait_ms.map_or("-".to_string(), |l| {
            format!("{} / {}", duration_ms(l.p50), duration_ms(l.p99))
        }),
        duration_ms(r.longest_wait_ms),
    ]
}

/// The columns added when some row has read-write figures.
pub(crate) const READ_WRITE_COLUMNS: [(&str, &str); 5] = [
    (
        "readers / writers",
        "Readers' (shared) and writers' (exclusive) grants, summed over the runs.",
    ),
    (
        "writes/s",
        "Writer throughput: accepted writes per second of simulated time, over every run.",
    ),
    (
        "reader wait p50/p99",
        "Readers' waits from request to grant, pooled over every run.",
    ),
    (
        "writer wait p50/p99",
        "Writers' waits from request to grant, pooled over every run.",
    ),
    (
        "longest writer wait",
        "The longest writer wait of any run, counting waits never granted: a writer starved by readers.",
    ),
];

/// A row's read-write cells, dashes without read-write figures.
fn read_write_cells(rw: Option<ReadWriteStats>) -> Vec<String> {
    let Some(rw) = rw else {
        return vec!["-".to_string(); READ_WRITE_COLUMNS.len()];
    };
    let wait = |q: Option<QuantilesMs>| {
        q.map_or("-".to_string(), |l| {
            format!("{} / {}", duration_ms(l.p50), duration_ms(l.p99))
        })
    };
    vec![
        format!("{} / {}", rw.readers, rw.writers),
        per_second(rw.writes_per_s),
        wait(rw.reader_wait_ms),
        wait(rw.writer_wait_ms),
        duration_ms(rw.longest_writer_wait_ms),
    ]
}

/// A row's many keys cells, dashes without keys.
fn keys_cells(k: Option<KeysStats>) -> Vec<String> {
    let Some(k) = k else {
        return vec!["-".to_string(); KEYS_COLUMNS.len()];
    };
    vec![format!("{} / {}", k.rows, k.locks), percent(k.waiting)]
}

/// A row's scheduled job cells, dashes without ticks.
fn cron_cells(c: Option<CronStats>) -> Vec<String> {
    let Some(c) = c else {
        return vec!["-".to_string(); CRON_COLUMNS.len()];
    };
    vec![
        format!("{} / {}", c.run, c.ticks),
        format!("{} / {}", c.run_twice_runs, c.missed_runs),
        c.lateness_ms.map_or("-".to_string(), |l| {
            format!("{} / {}", duration_ms(l.p50), duration_ms(l.p99))
        }),
    ]
}

/// A row's job queue cells, dashes without a queue.
fn queue_cells(q: Option<QueueStats>) -> Vec<String> {
    let Some(q) = q else {
        return vec!["-".to_string(); QUEUE_COLUMNS.len()];
    };
    vec![
        format!("{} / {}", q.done, q.enqueued),
        per_second(q.jobs_per_s),
        format!("{} / {}", q.done_twice, q.lost),
        q.left.to_string(),
        q.lag_ms.map_or("-".to_string(), |l| {
            format!("{} / {}", duration_ms(l.p50), duration_ms(l.p99))
        }),
    ]
}

/// A row's leadership cells, dashes without leadership metrics.
fn leadership_cells(l: Option<LeadershipStats>) -> Vec<String> {
    let Some(l) = l else {
        return vec!["-".to_string(); LEADERSHIP_COLUMNS.len()];
    };
    let two_leaders = match l.two_leaders_runs {
        0 => "0".to_string(),
        runs => format!("{runs} runs, {}", duration_ms(l.two_leaders_ms)),
    };
    let failover = l.failover_ms.map_or("-".to_string(), |q| {
        format!(
            "{} / {} / {}",
            duration_ms(q.p50),
            duration_ms(q.p99),
            duration_ms(q.max)
        )
    });
    vec![
        l.terms.to_string(),
        two_leaders,
        failover,
        l.duplicate_items.to_string(),
        l.skipped_items.to_string(),
    ]
}

/// The columns every rendering shows, with what each means (the HTML page's header titles
/// and the Markdown legend).
pub(crate) const COLUMNS: [(&str, &str); 15] = [
    ("scenario", "The scenario's name."),
    ("system", "The lock family with its key settings."),
    ("storage", "The storage's fencing mode."),
    (
        "expected",
        "The property judged and the verdict [expect] asks for.",
    ),
    ("seeds", "Runs, and how many met [expect]."),
    ("verdicts", "Runs judged valid / invalid / unknown."),
    (
        "invalid rate",
        "Share of runs judged invalid, with its 95% Wilson interval.",
    ),
    (
        "double holders",
        "Runs with two holders at once; pairs, total and longest overlap in one run, most at once.",
    ),
    (
        "stale ops",
        "Stale operations storage accepted / fencing rejected, summed over the runs.",
    ),
    ("lost updates", "Lost updates, summed over the runs."),
    (
        "availability",
        "1 - unavailable: the share of the runs' fault windows (of the whole runs without chaos), \
         summed over the runs, in which no client waited without a holder.",
    ),
    (
        "acquire p50/p99",
        "Waits for the lock (first request to grant, across give-ups), pooled over every wait \
         of every run.",
    ),
    (
        "grants/s",
        "Throughput: grants per second of simulated time, over every run.",
    ),
    (
        "failover",
        "Faults that took away a holder: recovered, mean and longest time to the next grant.",
    ),
    (
        "recovery",
        "Chaos runs: granted again after the faults stopped, p50/max time to that grant.",
    ),
];

/// The cells of a row, as plain text, in [`COLUMNS`] order.
pub(crate) fn cells(r: &Row) -> Vec<String> {
    let system = if r.source == Source::Sweep {
        format!("{} (sweep)", or_dash(&r.system))
    } else {
        or_dash(&r.system)
    };
    vec![
        r.scenario.clone(),
        system,
        or_dash(&r.storage),
        expected(r.property, r.expected_verdict),
        format!("{} ({} met)", r.seeds, r.met),
        format!(
            "{}/{}/{}",
            r.verdicts.valid, r.verdicts.invalid, r.verdicts.unknown
        ),
        rate(r.rates.invalid),
        holders_text(r),
        format!(
            "{} / {}",
            r.total("stale_accepted"),
            r.total("stale_rejected")
        ),
        r.total("lost_updates").to_string(),
        r.availability().map_or("-".to_string(), percent),
        r.acquire_latency_ms.map_or("-".to_string(), |q| {
            format!("{} / {}", duration_ms(q.p50), duration_ms(q.p99))
        }),
        r.grants_per_s().map_or("-".to_string(), per_second),
        failover_text(r),
        recovery_text(r.recovery),
    ]
}

impl Row {
    /// The row's figures of metric `key`, if some run measured it.
    pub fn metric(&self, key: &str) -> Option<&MetricRow> {
        self.metrics.iter().find(|m| m.key == key)
    }

    /// The sum of metric `key` over the runs; 0 when no run measured it.
    pub fn total(&self, key: &str) -> u64 {
        self.metric(key).and_then(|m| m.total).unwrap_or(0)
    }

    /// The runs whose metric `key` was above 0.
    pub fn runs_with(&self, key: &str) -> u64 {
        self.metric(key)
            .and_then(|m| m.nonzero)
            .map_or(0, |r| r.seeds)
    }

    /// The largest value of metric `key` in one run; 0 when none was above 0.
    pub fn max(&self, key: &str) -> u64 {
        self.metric(key).and_then(|m| m.max).unwrap_or(0)
    }

    /// 1 - the unavailable share of the runs' time: of their fault windows when they had them
    /// (`fault_unavailable_ns` over `fault_window_ns`), else of the whole runs; `None` without
    /// time.
    pub fn availability(&self) -> Option<f64> {
        let (unavailable, of) = match self.metric("fault_window_ns") {
            Some(_) => ("fault_unavailable_ns", "fault_window_ns"),
            None => ("unavailable_ns", "run_ns"),
        };
        let len = self.total(of);
        (len > 0).then(|| 1.0 - self.total(unavailable).min(len) as f64 / len as f64)
    }

    /// Grants per second of simulated time, over every run; `None` without time.
    pub fn grants_per_s(&self) -> Option<f64> {
        let run_ns = self.total("run_ns");
        (run_ns > 0).then(|| self.total("grants") as f64 / (run_ns as f64 / 1e9))
    }
}

/// A rate per second, with three significant digits.
fn per_second(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn or_dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_string()
    } else {
        s.to_string()
    }
}

fn holders_text(r: &Row) -> String {
    let (runs, pairs) = (r.runs_with("double_holders"), r.total("double_holders"));
    if pairs == 0 {
        return "0".to_string();
    }
    format!(
        "{runs} runs: {pairs} pairs, {} total, {} max, {} at once",
        duration_ms(ms(r.total("overlap_ns"))),
        duration_ms(ms(r.max("overlap_ns"))),
        r.max("max_concurrent")
    )
}

fn failover_text(r: &Row) -> String {
    let (faults, recovered) = (r.total("holder_faults"), r.total("holder_faults_recovered"));
    if faults == 0 {
        return "-".to_string();
    }
    if recovered == 0 {
        return format!("0/{faults} recovered");
    }
    let mean = r.total("holder_failover_sum_ns") as f64 / recovered as f64 / 1e6;
    format!(
        "{recovered}/{faults} recovered, mean {}, max {}",
        duration_ms(mean),
        duration_ms(ms(r.max("holder_failover_max_ns")))
    )
}

fn recovery_text(r: Option<RecoveryStats>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) => {
            let mut s = format!("{}/{} recovered", r.recovered, r.runs);
            if let Some(q) = r.after_ms {
                s.push_str(&format!(
                    ", p50 {}, max {}",
                    duration_ms(q.p50),
                    duration_ms(q.max)
                ));
            }
            if r.no_recovery > 0 {
                s.push_str(&format!(", {} too late", r.no_recovery));
            }
            s
        }
    }
}
