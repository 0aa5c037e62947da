//! `lockstep report`: designs side by side. The library half builds a
//! [`Comparison`](lockstep_reports::Comparison) (the reports crate renders it) from scenario
//! files, each run over its seeds, and from the JSON summaries of `lockstep sweep`.
//!
//! Start at [`build`]. A scenario runs one seed after another, as `lockstep check` does, and
//! its row keeps sums, maxima and a fixed-size latency [`Histogram`], so memory does not grow
//! with the seeds; only the first [`KEPT_FAILING`] runs judged invalid are kept whole (their
//! histories, for timelines). A sweep's row takes what its summary has: verdict and violation
//! rates, latency and recovery; when its scenario file is still there, unchanged, its first
//! failing seeds are run again for their histories.
//!
//! [`describe`] names a lock system by its family and key settings (`redlock redsync ×5, ttl
//! 10s`); other reports can use it. Nothing here reads a clock: the same inputs give the same
//! report, byte for byte.

use std::path::{Path, PathBuf};

use lockstep_check::{
    Validity, acquire_latencies_ns, leadership_failovers_ns, nested_waits_ns, queue_lags_ns,
    read_write_waits_ns, tick_lateness_ns, time_waiting_ns,
};
use lockstep_models::family::Role;
use lockstep_models::observe::{ACQUIRE_REQUESTS, ACQUISITIONS};
pub use lockstep_models::system::SystemLabel;
use lockstep_reports::format::ms;
use lockstep_reports::sweepmap::Measure;
use lockstep_reports::{
    Comparison, CronStats, FORMAT, FailingSeed, HerdStats, KEPT_FAILING, KeysStats,
    LeadershipStats, QueueStats, Rates, ReadWriteStats, RecoveryStats, ReentryStats, Row, Source,
    Verdicts, Visuals,
};

use crate::run::{RunResult, run};
use crate::scenario::{Loaded, Scenario, ScenarioError, Schedule, Seeds};
use crate::stats::{Histogram, metric_rows, rate};
use crate::suite::{FindError, run_report, scenario_files, seeds_of};
use crate::sweep::{self, SweepSummary};
use lockstep_check::metrics::Metrics;

/// One input of a report.
#[derive(Clone, Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "a report has a few dozen inputs, held once; both variants are over a kilobyte"
)]
pub enum Input {
    /// A scenario file, to run over its seeds.
    Scenario(Loaded),
    /// The JSON summary of a sweep.
    Sweep(SweepInput),
}

/// A sweep's summary, with its scenario when the file it names could be read.
#[derive(Clone, Debug)]
pub struct SweepInput {
    /// The JSON file, as given.
    pub path: PathBuf,
    /// The summary.
    pub summary: SweepSummary,
    /// The scenario of `summary.file`, when it loads and has the summary's name.
    pub scenario: Option<Scenario>,
    /// True when that file's text is the one swept (same hash): its seeds can be run again.
    pub replayable: bool,
}

/// Why an input of a report cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A path names no scenario files.
    #[error(transparent)]
    Find(#[from] FindError),
    /// A scenario file is bad.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A `.json` file is not a sweep summary.
    #[error("{}: {error}", path.display())]
    Sweep {
        /// The file.
        path: PathBuf,
        /// Why.
        error: String,
    },
}

/// Reads the inputs named by `paths`, in order: a `.json` file is a sweep summary (`lockstep
/// sweep --format json`); any other file is a scenario, and a directory is searched for
/// scenario files as `lockstep check` does. Every problem is returned, not just the first.
///
/// # Errors
/// Each path that does not exist or names no scenarios, each bad scenario file, each JSON
/// file that is not a sweep summary.
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, Vec<InputError>> {
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for path in paths {
        if path.is_file() && path.extension().is_some_and(|e| e == "json") {
            match load_sweep(path) {
                Ok(s) => inputs.push(Input::Sweep(s)),
                Err(e) => errors.push(e),
            }
            continue;
        }
        let files = match scenario_files(std::slice::from_ref(path)) {
            Ok(f) => f,
            Err(e) => {
                errors.push(e.into());
                continue;
            }
        };
        for file in files {
            if seen.contains(&file) {
                continue;
            }
            seen.push(file.clone());
            match crate::load(&file) {
                Ok(l) => inputs.push(Input::Scenario(l)),
                Err(e) => errors.push(e.into()),
            }
        }
    }
    if errors.is_empty() {
        Ok(inputs)
    } else {
        Err(errors)
    }
}

fn load_sweep(path: &Path) -> Result<SweepInput, InputError> {
    let bad = |error: String| InputError::Sweep {
        path: path.to_path_buf(),
        error,
    };
    let text = crate::files::read_text(path, crate::files::Input::SUMMARY)
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    let summary = SweepSummary::from_json(&text).map_err(bad)?;
    // The scenario the summary names, for its description and to replay failing seeds. A
    // sweep under `--chaos` hashed its variant's text, so it describes but does not replay.
    let (scenario, replayable) = match sweep::load(Path::new(&summary.file), None) {
        Ok(t) if t.scenario.name == summary.scenario => {
            (Some(t.scenario), t.text_hash == summary.scenario_hash)
        }
        _ => (None, false),
    };
    Ok(SweepInput {
        path: path.to_path_buf(),
        summary,
        scenario,
        replayable,
    })
}

/// The output formats of `lockstep report`, chosen by the extension of `--out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// `.html`: one self-contained page.
    Html,
    /// `.md`: Markdown for a pull-request comment.
    Markdown,
    /// `.json`: docs/report-format.md.
    Json,
}

impl ReportFormat {
    /// The format of an output file, from its extension.
    ///
    /// # Errors
    /// A sentence naming the file and the extensions understood.
    pub fn of(path: &Path) -> Result<ReportFormat, String> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("html") => Ok(ReportFormat::Html),
            Some("md") => Ok(ReportFormat::Markdown),
            Some("json") => Ok(ReportFormat::Json),
            _ => Err(format!(
                "{}: cannot tell the report's format: the file name must end in .html, .md or .json",
                path.display()
            )),
        }
    }
}

/// How [`build`] runs scenarios.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Run each scenario with this many seeds from its `seed` instead of the seeds it
    /// declares (`--seeds N`, as `lockstep check`).
    pub seeds: Option<u64>,
    /// Worker threads for the scenarios' runs (`--jobs`); 0 is 1. The report does not depend
    /// on it.
    pub jobs: usize,
}

/// A report: the comparison the renderers read, and for each failing seed kept what a
/// timeline needs beyond its history.
#[derive(Debug)]
pub struct Report {
    /// The comparison; its `failing` seeds hold their histories.
    pub comparison: Comparison,
    /// Parallel to `comparison.failing`: the scenario and the fault schedule of each.
    pub runs: Vec<FailingRun>,
}

/// A failing seed's scenario and fault schedule, for drawing its timeline (clocks, faults).
#[derive(Clone, Debug)]
pub struct FailingRun {
    /// The scenario (for a sweep's seed, as loaded from its file).
    pub scenario: Scenario,
    /// The seed.
    pub seed: u64,
    /// The faults the run was given and its duration ([`Scenario::schedule`]).
    pub schedule: Schedule,
}

impl Report {
    /// The report in `format`; `visuals` places timelines and sweep maps in the HTML.
    pub fn render(&self, format: ReportFormat, visuals: &Visuals) -> String {
        match format {
            ReportFormat::Html => self.comparison.html(visuals),
            ReportFormat::Markdown => self.comparison.markdown(),
            ReportFormat::Json => self.comparison.json(),
        }
    }
}

/// Builds the report of `inputs`, in order; `done` sees each row as it is finished (the
/// binary could show progress with it).
pub fn build(inputs: &[Input], options: ReportOptions, done: impl FnMut(&Row)) -> Report {
    build_observed(inputs, options, || {}, done)
}

/// [`build`], calling `ran` after each run of a scenario. Threads run whole runs, never parts
/// of one ([`crate::pool`]): the seeds of all the scenario inputs are one range of positions,
/// folded into their rows in position order, so the report is the same for any number of
/// `options.jobs`. A sweep's row is made from its summary afterwards, in its place.
pub fn build_observed(
    inputs: &[Input],
    options: ReportOptions,
    mut ran: impl FnMut(),
    mut done: impl FnMut(&Row),
) -> Report {
    let mut report = Report {
        comparison: Comparison {
            format: FORMAT.to_string(),
            seeds_override: options.seeds,
            rows: Vec::new(),
            failing: Vec::new(),
        },
        runs: Vec::new(),
    };
    // Each scenario input: its row's index, the input, its seeds.
    let scenarios: Vec<(usize, &Loaded, Seeds)> = inputs
        .iter()
        .enumerate()
        .filter_map(|(index, input)| match input {
            Input::Scenario(l) => Some((index, l, seeds_of(&l.scenario, options.seeds))),
            Input::Sweep(_) => None,
        })
        .collect();
    let mut starts = vec![0u64];
    for (_, _, seeds) in &scenarios {
        let last = *starts.last().expect("starts with 0");
        starts.push(last.saturating_add(seeds.len()));
    }
    let total = *starts.last().expect("starts with 0");
    let files: Vec<String> = scenarios
        .iter()
        .map(|(_, l, _)| l.path.display().to_string())
        .collect();
    let mut rows: Vec<(Tally, Vec<(FailingSeed, FailingRun)>)> =
        scenarios.iter().map(|_| Default::default()).collect();
    let which = |position: u64| starts.partition_point(|&st| st <= position) - 1;
    let work = |position: u64| {
        let i = which(position);
        let (_, l, seeds) = &scenarios[i];
        let seed = crate::suite::nth_seed(seeds, position - starts[i]);
        run(&l.scenario, seed, false)
    };
    crate::pool::run_ordered(options.jobs, total, work, |position, r| {
        let i = which(position);
        let (index, l, _) = &scenarios[i];
        let (tally, failing) = &mut rows[i];
        tally.add(&r);
        if r.judged == Validity::Invalid && failing.len() < KEPT_FAILING {
            failing.push(failing_seed(*index, &files[i], &l.scenario, r));
        }
        ran();
    });
    let mut rows = rows.into_iter();
    for (index, input) in inputs.iter().enumerate() {
        let (row, failing) = match input {
            Input::Scenario(l) => {
                let (tally, failing) = rows.next().expect("a row per scenario input");
                (tally.row(l), failing)
            }
            Input::Sweep(s) => sweep_row(s, index),
        };
        done(&row);
        report.comparison.rows.push(row);
        for (seed, run) in failing {
            report.comparison.failing.push(seed);
            report.runs.push(run);
        }
    }
    report
}

/// What a scenario's row adds up over its runs.
#[derive(Debug, Default)]
struct Tally {
    seeds: u64,
    met: u64,
    verdicts: Verdicts,
    failed: u64,
    /// The checker's metrics, by key (`Metrics`: the same tally a sweep keeps).
    metrics: Metrics,
    latency: Histogram,
    recovery_runs: u64,
    recovery_late: u64,
    recovery: Histogram,
    /// Leadership sums, from the first run that measured them.
    leadership: Option<LeadershipStats>,
    two_leaders_ns: u128,
    leader_failover: Histogram,
    /// Job queue sums, from the first run that enqueued jobs.
    queue: Option<QueueStats>,
    queue_lag: Histogram,
    /// Scheduled job sums, from the first run that had ticks.
    cron: Option<CronStats>,
    tick_lateness: Histogram,
    /// The clients' time waiting for a lock, summed over the runs.
    waiting_ns: u128,
    /// Read-write sums, from the first run with a reader's grant.
    read_write: Option<ReadWriteStats>,
    reader_wait: Histogram,
    writer_wait: Histogram,
    /// Accepted writes of the runs with read-write figures, and their time.
    rw_writes: u64,
    rw_run_ns: u128,
    /// Herd sums, from the first run that counted acquisitions.
    herd: Option<HerdStats>,
    /// Nested acquisition sums, from the first run that had one.
    reentry: Option<ReentryStats>,
    nested_wait: Histogram,
}

impl Tally {
    fn add(&mut self, r: &RunResult) {
        let v = &r.verdict;
        self.seeds += 1;
        if r.expected() {
            self.met += 1;
        } else {
            self.failed += 1;
        }
        match r.judged {
            Validity::Valid => self.verdicts.valid += 1,
            Validity::Invalid => self.verdicts.invalid += 1,
            Validity::Unknown => self.verdicts.unknown += 1,
        }
        self.metrics.add(v);
        for ns in acquire_latencies_ns(&r.history) {
            self.latency.add(ns);
        }
        self.add_leadership(r);
        self.add_queue(r);
        self.add_cron(r);
        self.add_read_write(r);
        self.add_herd(r);
        self.add_reentry(r);
        self.waiting_ns += u128::from(time_waiting_ns(&r.history));
        if let Some(rec) = v.liveness.recovery {
            self.recovery_runs += 1;
            if let Some(after) = rec.after_ns() {
                self.recovery.add(after);
            }
            let late = r
                .recovery_bound
                .as_ref()
                .is_some_and(|b| b.missed(rec.after_ns()));
            self.recovery_late += u64::from(late);
        }
    }

    fn add_leadership(&mut self, r: &RunResult) {
        let Some(l) = &r.verdict.leadership else {
            return;
        };
        let sums = self.leadership.get_or_insert_with(LeadershipStats::default);
        sums.terms += l.terms;
        sums.two_leaders_runs += u64::from(l.two_leaders_ns > 0);
        sums.duplicate_items += l.duplicate_items.count;
        sums.skipped_items += l.skipped_items.count;
        self.two_leaders_ns += u128::from(l.two_leaders_ns);
        for ns in leadership_failovers_ns(&r.history) {
            self.leader_failover.add(ns);
        }
    }

    fn add_queue(&mut self, r: &RunResult) {
        let Some(q) = &r.verdict.queue else {
            return;
        };
        let sums = self.queue.get_or_insert_with(QueueStats::default);
        sums.enqueued += q.enqueued;
        sums.done += q.done;
        sums.done_twice += q.done_twice.count;
        sums.lost += q.lost.count;
        sums.left += q.left;
        for ns in queue_lags_ns(&r.history) {
            self.queue_lag.add(ns);
        }
    }

    fn add_cron(&mut self, r: &RunResult) {
        let Some(c) = &r.verdict.cron else {
            return;
        };
        let sums = self.cron.get_or_insert_with(CronStats::default);
        sums.ticks += c.ticks;
        sums.run += c.run;
        sums.run_twice += c.run_twice.count;
        sums.missed += c.missed.count;
        sums.run_twice_runs += u64::from(c.run_twice.count > 0);
        sums.missed_runs += u64::from(c.missed.count > 0);
        for ns in tick_lateness_ns(&r.history) {
            self.tick_lateness.add(ns);
        }
    }

    fn add_herd(&mut self, r: &RunResult) {
        let count = |name: &str| {
            r.counters
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, v, _)| *v)
        };
        let Some(acquisitions) = count(ACQUISITIONS) else {
            return;
        };
        let sums = self.herd.get_or_insert_with(HerdStats::default);
        sums.acquisitions += acquisitions;
        sums.requests += count(ACQUIRE_REQUESTS).unwrap_or(0);
        sums.given_up += r.verdict.liveness.acquire_failures;
    }

    fn add_reentry(&mut self, r: &RunResult) {
        let Some(n) = &r.verdict.reentry else {
            return;
        };
        let sums = self.reentry.get_or_insert_with(ReentryStats::default);
        sums.nested += n.nested;
        sums.granted += n.granted;
        sums.longest_wait_ms = sums.longest_wait_ms.max(ms(n.longest_wait_ns));
        for ns in nested_waits_ns(&r.history) {
            self.nested_wait.add(ns);
        }
    }

    fn add_read_write(&mut self, r: &RunResult) {
        let Some(rw) = &r.verdict.read_write else {
            return;
        };
        let sums = self.read_write.get_or_insert_with(ReadWriteStats::default);
        sums.readers += rw.readers;
        sums.writers += rw.writers;
        sums.longest_writer_wait_ms = sums
            .longest_writer_wait_ms
            .max(ms(rw.longest_writer_wait_ns));
        self.rw_writes += r.verdict.liveness.accepted_writes;
        self.rw_run_ns += u128::from(r.history.end_ns);
        let (readers, writers) = read_write_waits_ns(&r.history);
        for ns in readers {
            self.reader_wait.add(ns);
        }
        for ns in writers {
            self.writer_wait.add(ns);
        }
    }

    fn row(self, loaded: &Loaded) -> Row {
        let s = &loaded.scenario;
        let run_ns = self.metrics.get("run_ns").total;
        let label = s.system.describe();
        let n = self.seeds;
        Row {
            scenario: s.name.clone(),
            file: loaded.path.display().to_string(),
            source: Source::Scenario,
            description: s.description.clone(),
            family: label.family.to_string(),
            system: label.system,
            storage: label.storage,
            property: s.expect.property,
            expected_verdict: s.expect.verdict,
            seeds: n,
            met: self.met,
            verdicts: self.verdicts,
            rates: Rates {
                invalid: rate(self.verdicts.invalid, n),
                failed: rate(self.failed, n),
            },
            metrics: metric_rows(&self.metrics),
            acquire_latency_ms: self.latency.quantiles_ms(),
            recovery: (self.recovery_runs > 0).then(|| RecoveryStats {
                runs: self.recovery_runs,
                recovered: self.recovery.count(),
                no_recovery: self.recovery_late,
                after_ms: self.recovery.quantiles_ms(),
            }),
            leadership: self.leadership.map(|l| LeadershipStats {
                two_leaders_ms: self.two_leaders_ns as f64 / 1e6,
                failover_ms: self.leader_failover.quantiles_ms(),
                ..l
            }),
            queue: self.queue.map(|q| QueueStats {
                jobs_per_s: if run_ns > 0 {
                    q.done as f64 / (run_ns as f64 / 1e9)
                } else {
                    0.0
                },
                lag_ms: self.queue_lag.quantiles_ms(),
                ..q
            }),
            cron: self.cron.map(|c| CronStats {
                lateness_ms: self.tick_lateness.quantiles_ms(),
                ..c
            }),
            herd: self.herd,
            reentry: self.reentry.map(|n| ReentryStats {
                wait_ms: self.nested_wait.quantiles_ms(),
                ..n
            }),
            read_write: self.read_write.map(|rw| ReadWriteStats {
                writes_per_s: if self.rw_run_ns > 0 {
                    self.rw_writes as f64 / (self.rw_run_ns as f64 / 1e9)
                } else {
                    0.0
                },
                reader_wait_ms: self.reader_wait.quantiles_ms(),
                writer_wait_ms: self.writer_wait.quantiles_ms(),
                ..rw
            }),
            keys: s.system.workload().keys().map(|k| KeysStats {
                rows: k.rows,
                locks: k.locks,
                waiting: if run_ns > 0 {
                    let clients = s.system.layout().with(|r| r == Role::Client).len();
                    self.waiting_ns as f64 / (run_ns as f64 * clients.max(1) as f64)
                } else {
                    0.0
                },
            }),
        }
    }
}

/// A failing seed kept whole: its section's data and its timeline's.
fn failing_seed(
    row: usize,
    file: &str,
    scenario: &Scenario,
    r: RunResult,
) -> (FailingSeed, FailingRun) {
    let report = run_report(file, &scenario.name, &r);
    let seed = FailingSeed {
        row,
        scenario: scenario.name.clone(),
        file: file.to_string(),
        seed: r.seed,
        trace_hash: report.trace_hash,
        verdict: r.judged,
        expected: r.expected(),
        explanations: report.explanations,
        reproduce: report.reproduce,
        faults: FailingSeed::faults_of(&r.history),
        history: r.history,
    };
    let run = FailingRun {
        scenario: scenario.clone(),
        seed: seed.seed,
        schedule: scenario.schedule(seed.seed),
    };
    (seed, run)
}

/// The row of a scenario run over its seeds (or `seeds` seeds from its `seed`), and its first
/// [`KEPT_FAILING`] runs judged invalid.
pub fn scenario_row(
    loaded: &Loaded,
    seeds: Option<u64>,
    index: usize,
) -> (Row, Vec<(FailingSeed, FailingRun)>) {
    let s = &loaded.scenario;
    let file = loaded.path.display().to_string();
    // A declared list is borrowed, not copied: it may hold millions of seeds.
    let overridden;
    let list = match seeds {
        Some(_) => {
            overridden = seeds_of(s, seeds);
            &overridden
        }
        None => &s.seeds,
    };
    let mut tally = Tally::default();
    let mut failing = Vec::new();
    for seed in list {
        let r = run(s, seed, false);
        tally.add(&r);
        if r.judged == Validity::Invalid && failing.len() < KEPT_FAILING {
            failing.push(failing_seed(index, &file, s, r));
        }
    }
    (tally.row(loaded), failing)
}

/// The row of a sweep's summary, and its first [`KEPT_FAILING`] seeds judged invalid, run
/// again, when its scenario file is unchanged.
pub fn sweep_row(input: &SweepInput, index: usize) -> (Row, Vec<(FailingSeed, FailingRun)>) {
    let s = &input.summary;
    let n = s.runs;
    let v = &s.violations;
    let label = input.scenario.as_ref().map(|sc| sc.system.describe());
    let chaos = input.scenario.as_ref().is_some_and(|sc| sc.chaos.is_some());
    let row = Row {
        scenario: s.scenario.clone(),
        file: input.path.display().to_string(),
        source: Source::Sweep,
        description: input
            .scenario
            .as_ref()
            .map_or_else(String::new, |sc| sc.description.clone()),
        family: label.as_ref().map_or("", |l| l.family).to_string(),
        system: label
            .as_ref()
            .map_or_else(String::new, |l| l.system.clone()),
        storage: label.map_or_else(String::new, |l| l.storage),
        property: s.property,
        expected_verdict: s.expected_verdict,
        seeds: n,
        met: s.passed,
        verdicts: Verdicts {
            valid: s.verdict_counts.valid,
            invalid: s.verdict_counts.invalid,
            unknown: s.verdict_counts.unknown,
        },
        rates: Rates {
            invalid: rate(s.verdict_counts.invalid, n),
            failed: rate(s.failed, n),
        },
        metrics: metric_rows(&s.metrics),
        acquire_latency_ms: s.acquire_latency_ns.quantiles_ms(),
        recovery: (chaos || s.recovery_ns.count() > 0 || v.no_recovery > 0).then(|| {
            RecoveryStats {
                runs: n,
                recovered: s.recovery_ns.count(),
                no_recovery: v.no_recovery,
                after_ms: s.recovery_ns.quantiles_ms(),
            }
        }),
        leadership: None,
        queue: None,
        cron: None,
        keys: None,
        read_write: None,
        herd: None,
        reentry: None,
    };
    let mut failing = Vec::new();
    if let (Some(scenario), true) = (&input.scenario, input.replayable) {
        for seed in invalid_seeds(s, scenario) {
            failing.push(failing_seed(index, &s.file, scenario, seed));
        }
    }
    (row, failing)
}

/// How many seeds of a sweep's range [`sweep_row`] runs again at most to find its first runs
/// judged invalid, when its `failures` (the runs that missed `[expect]`) do not name them: a
/// scenario that expects `invalid` fails no seed that is invalid.
pub const MAX_REPLAYED: u64 = 1_000;

/// The first [`KEPT_FAILING`] runs of `summary`'s seeds judged invalid: its failures that
/// were, else the first found among the first [`MAX_REPLAYED`] seeds it covers.
fn invalid_seeds(summary: &SweepSummary, scenario: &Scenario) -> Vec<RunResult> {
    let want = (summary.verdict_counts.invalid).min(KEPT_FAILING as u64) as usize;
    let mut found: Vec<RunResult> = Vec::new();
    let listed = summary
        .failures
        .iter()
        .filter(|f| f.verdict == Validity::Invalid);
    for f in listed.take(want) {
        found.push(run(scenario, f.seed, false));
    }
    if found.len() == want {
        return found;
    }
    found.clear();
    let covered = |position: u64| {
        summary.shard.as_ref().is_none_or(|sh| {
            sh.included
                .binary_search(&(position % sh.count + 1))
                .is_ok()
        })
    };
    let positions = (0..summary.seeds.count.min(MAX_REPLAYED)).filter(|&p| covered(p));
    for position in positions {
        let r = run(scenario, summary.seeds.from.wrapping_add(position), false);
        if r.judged == Validity::Invalid {
            found.push(r);
            if found.len() == want {
                break;
            }
        }
    }
    found
}

/// The pictures of a report's HTML page: the timeline of every failing run kept (replayed
/// under its own schedule) and the sweep map of every scenario input with a `[sweep]` block
/// (its grid run on `jobs` threads).
///
/// # Errors
/// A sweep map's grid that does not load (the scenario file changed since it was read).
pub fn visuals(inputs: &[Input], report: &Report, jobs: usize) -> Result<Visuals, ScenarioError> {
    let timelines = report
        .runs
        .iter()
        .map(|r| {
            let (_, t) = crate::timeline::of_schedule(&r.scenario, r.seed, &r.schedule);
            Some(lockstep_reports::timeline::svg(&t))
        })
        .collect();
    let mut sweep_maps = Vec::new();
    for input in inputs {
        if let Input::Scenario(loaded) = input {
            if loaded.scenario.sweep.is_some() {
                let mut map = crate::sweepmap::run(loaded, jobs)?;
                let title = format!("{} ({})", loaded.scenario.name, loaded.path.display());
                if map.measure.is_violations() {
                    sweep_maps.push((title, lockstep_reports::sweepmap::svg(&map)));
                } else {
                    // A measured map's runs measured every figure: one drawing each, the
                    // file's own measure first.
                    let own = map.measure;
                    let measures = std::iter::once(own).chain(
                        Measure::ALL
                            .into_iter()
                            .filter(|&m| m != own && !m.is_violations()),
                    );
                    for m in measures {
                        map.measure = m;
                        let title = format!("{title}: {}", m.name());
                        sweep_maps.push((title, lockstep_reports::sweepmap::svg(&map)));
                    }
                }
            }
        }
    }
    Ok(Visuals {
        timelines,
        sweep_maps,
    })
}
