//! A design review (`lockstep review`): candidate lock designs for one job, each swept under
//! each class of fault alone, and the answer a reviewer asks for: which design to use, what
//! each costs, and under which faults each breaks.
//!
//! [`Review`] is plain data: counts of runs per (design, fault class) cell, filled in by the
//! `lockstep` package. Everything a page says follows from those counts: the matrix, the
//! chart, and the recommendation ([`Review::recommendation`]), which is derived from the
//! figures and never written by hand. It renders as a terminal text that fits 100 columns
//! ([`Review::table`]), as Markdown under GitHub's comment limit ([`Review::markdown`]), as one
//! self-contained HTML page ([`Review::html`]) and as JSON ([`Review::json`]). User-provided
//! text (the review's and designs' names, the job, file paths, explanations) reaches HTML and
//! Markdown only through [`escape`](crate::escape).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::escape::{html as esc, markdown as md, markdown_code};
use crate::format::{interval, percent, percent_at_a_glance, plural, trimmed};

/// The `format` of a review's JSON.
pub const FORMAT: &str = "lockstep-review/1";

/// GitHub refuses a comment over 65,536 characters: the Markdown stays under this.
pub const MARKDOWN_LIMIT: usize = 60_000;

/// Width of the terminal text.
const WIDTH: usize = 100;

/// A finished review: the designs, the fault classes, and a cell per pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Review {
    /// [`FORMAT`].
    pub format: String,
    /// The review's name.
    pub name: String,
    /// The job the lock guards, in the reviewer's words.
    pub job: String,
    /// The review file, as given.
    pub file: String,
    /// The seeds every cell ran.
    pub seeds: ReviewSeeds,
    /// What makes one safe design cheaper than another.
    pub cost: CostOrder,
    /// The review's workload: what every design's clients do, unless a design keeps its own
    /// (its [`DesignInfo::workload`] then says what it ran).
    pub workload: WorkloadInfo,
    /// The fault classes, in the order of the matrix's columns.
    pub classes: Vec<ClassInfo>,
    /// The designs, in the review file's order.
    pub designs: Vec<DesignInfo>,
    /// One cell per design and class, design by design (`cells[d * classes + c]`).
    pub cells: Vec<ReviewCell>,
    /// For each design that broke, its first violation under the class that broke it most
    /// (the earlier column on a tie).
    pub examples: Vec<Example>,
}

/// What makes one safe design cheaper than another (`[review] cost`): the figure of its worst
/// class compared first; the others break ties in [`CostOrder::figures`]' order, then the
/// review file's order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostOrder {
    /// The lowest acquire p99 first (the wait a client sees), then the highest availability,
    /// then the most critical sections completed per second.
    #[default]
    Latency,
    /// The highest availability first (the time someone held the lock), then the lowest
    /// acquire p99, then the most critical sections completed per second.
    Availability,
    /// The most critical sections completed per second first (the work done), then the
    /// lowest acquire p99, then the highest availability.
    Throughput,
}

/// A figure a design's cost is made of, each taken from the design's worst class for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// The highest acquire p99 of any class.
    AcquireP99,
    /// The lowest availability of any class.
    Availability,
    /// The fewest critical sections completed per second of any class.
    Sections,
}

impl CostOrder {
    /// The figures in the order they rank safe designs: the first decides, the next break
    /// ties.
    pub fn figures(self) -> [Figure; 3] {
        match self {
            CostOrder::Latency => [Figure::AcquireP99, Figure::Availability, Figure::Sections],
            CostOrder::Availability => [Figure::Availability, Figure::AcquireP99, Figure::Sections],
            CostOrder::Throughput => [Figure::Sections, Figure::AcquireP99, Figure::Availability],
        }
    }
}

impl Figure {
    /// Its name in sentences, with the way it ranks: `acquire p99 (lowest first)`.
    fn ranked(self) -> &'static str {
        match self {
            Figure::AcquireP99 => "acquire p99 (lowest first)",
            Figure::Availability => "availability (highest first)",
            Figure::Sections => "critical sections completed per second (most first)",
        }
    }

    /// How its worst class is chosen, in words.
    fn worst(self) -> &'static str {
        match self {
            Figure::AcquireP99 => "the highest acquire p99",
            Figure::Availability => "the lowest availability",
            Figure::Sections => "the fewest critical sections completed per second",
        }
    }
}

/// A workload: the loop its clients run, how many there are, and how long each thinks
/// between critical sections and works in one. A review gives every design the same one
/// unless a design keeps its own.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadInfo {
    /// The loop (`workload.kind`): `counter`, `leader`, ...
    pub kind: String,
    /// `workload.clients`.
    pub clients: u32,
    /// `workload.think_ms`; `None` for a loop whose clients do not think (a scheduled job's
    /// wait for its next tick).
    pub think_ms: Option<Spread>,
    /// `workload.work_ms`.
    pub work_ms: Spread,
}

/// A distribution of durations in milliseconds, as scenario files write it
/// (`{ uniform = [50, 200] }`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spread {
    /// Always this long.
    Constant(f64),
    /// Uniform between the two.
    Uniform([f64; 2]),
    /// `min` plus an exponential with mean `mean`.
    Exponential {
        /// The floor.
        min: f64,
        /// The exponential part's mean.
        mean: f64,
    },
    /// A Pareto tail from `min`, capped at `max`.
    Pareto {
        /// The scale and shortest value.
        min: f64,
        /// The tail index.
        alpha: f64,
        /// The cap.
        max: f64,
    },
}

impl Spread {
    /// In words: `50 ms to 200 ms`, `5 ms`, `1 ms + exponential of mean 10 ms`.
    pub fn words(&self) -> String {
        match *self {
            Spread::Constant(v) => amount(v),
            Spread::Uniform([lo, hi]) => format!("{} to {}", amount(lo), amount(hi)),
            Spread::Exponential { min, mean } => {
                format!("{} + exponential of mean {}", amount(min), amount(mean))
            }
            Spread::Pareto { min, alpha, max } => format!(
                "Pareto from {} (alpha {alpha}) up to {}",
                amount(min),
                amount(max)
            ),
        }
    }
}

/// The keys of a workload, in the order a difference is told.
pub const WORKLOAD_KEYS: [&str; 4] = ["kind", "clients", "think_ms", "work_ms"];

impl WorkloadInfo {
    /// The keys of [`WORKLOAD_KEYS`] whose values differ between `self` and `other`.
    pub fn differences(&self, other: &WorkloadInfo) -> Vec<&'static str> {
        WORKLOAD_KEYS
            .into_iter()
            .filter(|&k| match k {
                "kind" => self.kind != other.kind,
                "clients" => self.clients != other.clients,
                "think_ms" => self.think_ms != other.think_ms,
                _ => self.work_ms != other.work_ms,
            })
            .collect()
    }

    /// The value of `key` (one of [`WORKLOAD_KEYS`]) in words: `the leader loop`,
    /// `3 clients`, `think 1 s to 3 s`, `work 50 ms to 200 ms`, `no think`.
    fn said(&self, key: &str) -> String {
        match key {
            "kind" => format!("the {} loop", self.kind),
            "clients" => format!("{} client{}", self.clients, plural(self.clients)),
            "think_ms" => self
                .think_ms
                .map_or("no think".to_string(), |t| format!("think {}", t.words())),
            _ => format!("work {}", self.work_ms.words()),
        }
    }

    /// The whole workload in words: `2 clients of the counter loop, think 0 ms to 100 ms,
    /// work 50 ms to 200 ms`.
    pub fn words(&self) -> String {
        let mut s = format!("{} of the {} loop", self.said("clients"), self.kind);
        for key in ["think_ms", "work_ms"] {
            if key == "think_ms" && self.think_ms.is_none() {
                continue;
            }
            let _ = write!(s, ", {}", self.said(key));
        }
        s
    }

    /// What of `self` differs from `review`, in words (`think 1 s to 3 s, work 50 ms to 2
    /// s`); `None` when nothing does.
    pub fn difference_words(&self, review: &WorkloadInfo) -> Option<String> {
        let keys = self.differences(review);
        (!keys.is_empty()).then(|| {
            keys.iter()
                .map(|k| self.said(k))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

/// An exact amount of milliseconds for people: `0 ms`, `50 ms`, `0.5 ms`, `1 s`, `2.5 s`.
fn amount(v_ms: f64) -> String {
    let ns = (v_ms * 1e6).round().max(0.0) as u64;
    if ns >= 1_000_000_000 {
        trimmed(ns, 1_000_000_000, " s")
    } else {
        trimmed(ns, 1_000_000, " ms")
    }
}

/// The seeds of every cell: `count` from `from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewSeeds {
    /// The first seed.
    pub from: u64,
    /// How many.
    pub count: u64,
}

/// A fault class: one kind of the chaos profile alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassInfo {
    /// Its name in review files and commands (`pauses`).
    pub name: String,
    /// A column heading of at most 9 characters (`pause`).
    pub short: String,
    /// What it does, for people.
    pub title: String,
}

/// A candidate design.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DesignInfo {
    /// Its name in the review.
    pub name: String,
    /// The family's `kind`, as scenario files name it.
    pub family: String,
    /// The system with its key settings.
    pub system: String,
    /// The storage mode, or the service that keeps the resource.
    pub storage: String,
    /// The property judged (`resource`, `mutual-exclusion`).
    pub property: String,
    /// The scenario file it starts from.
    pub file: String,
    /// What its family offers against a holder that lost the lock, and what it uses: the
    /// facts the advice for it comes from.
    pub fencing: FencingSupport,
    /// The run its cells ran: the same for every design of a review.
    pub window: Window,
    /// The workload its cells ran: the review's, unless it keeps its own or its `set`
    /// changes it ([`Review::workload`]).
    pub workload: WorkloadInfo,
    /// Whether the review file gave it `keep_workload = true`: it runs its own file's
    /// workload rather than the review's.
    pub keep_workload: bool,
}

/// A chaos run's length and its fault window, in whole milliseconds of true time: faults from
/// `fault_start_ms` until the quiet tail, the last `quiet_tail_ms` of `duration_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    /// The run's length.
    pub duration_ms: u64,
    /// No fault before it.
    pub fault_start_ms: u64,
    /// No fault in force in the run's last this long.
    pub quiet_tail_ms: u64,
}

/// What a design's family offers against a holder that lost the lock, and what the design
/// uses, as its family declares them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FencingSupport {
    /// The family's name in sentences (`PostgreSQL`).
    pub family_name: String,
    /// What the design's clients send as tokens.
    pub tokens: TokenKind,
    /// The storage node's mode (`unfenced`, `fenced-writes`, `fenced-all`, `cas-token`), or
    /// `None` when the family's service keeps the resource itself.
    pub storage_mode: Option<String>,
    /// The family's `model.fencing` values besides `none`.
    pub offers: Vec<FencingValue>,
    /// The `[storage]` keys of the family's own mode (`guard`): how its service checks a write
    /// to the resource it keeps.
    pub guard_keys: Vec<String>,
}

/// What a design's clients send as fencing tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenKind {
    /// No token.
    None,
    /// Numbers storage may compare by size.
    Ordered,
    /// Random values, for compare-and-set storage only.
    Random,
}

/// A value of a family's `model.fencing` key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FencingValue {
    /// The value, as scenario files write it (`incr`).
    pub name: String,
    /// What the token is (`the lock key's create revision`).
    pub what: String,
    /// Storage can compare it by size (fenced storage); otherwise it is a random value, for
    /// compare-and-set storage.
    pub ordered: bool,
}

/// One design under one fault class, over the review's seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReviewCell {
    /// Index into [`Review::designs`].
    pub design: usize,
    /// Index into [`Review::classes`].
    pub class: usize,
    /// Runs.
    pub runs: u64,
    /// Runs whose property was violated.
    pub invalid: u64,
    /// Runs the checker could not judge: they ended `unknown`, stopped by their event,
    /// memory or wall-clock bound before their end. A cell with any is never called safe.
    pub unknown: u64,
    /// The 95% Wilson interval of `invalid` over the runs judged (`runs - unknown`); `(0, 1)`
    /// when none was.
    pub ci95: (f64, f64),
    /// Runs with two holders at once.
    pub double_holders: u64,
    /// Runs where storage accepted a stale write.
    pub stale_accepted: u64,
    /// Runs that lost an update.
    pub lost_updates: u64,
    /// Runs whose fencing tokens went backwards in grant order.
    pub token_order: u64,
    /// Runs that granted no lock within the liveness bound after the faults stopped.
    pub no_recovery: u64,
    /// The 99th percentile of the waits that began in the runs' fault windows (the checker's
    /// fault window: from a request to its grant across every try given up), pooled over the
    /// runs, in ms; `None` without any.
    pub acquire_p99_ms: Option<f64>,
    /// One minus the share of the runs' fault windows with no holder while some client waited;
    /// `None` without runs.
    pub availability: Option<f64>,
    /// Critical sections granted in the runs' fault windows that completed (wrote and
    /// released: the checker's fault window `cs_completed`), per second of the windows, over
    /// the runs; `None` without runs.
    pub sections_per_s: Option<f64>,
    /// The first seed whose property was violated.
    pub first_invalid: Option<u64>,
    /// The cell's sweep digest, 16 hex digits: two reviews ran alike when they agree.
    pub digest: String,
}

/// The first violation of a design, explained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Example {
    /// Index into [`Review::designs`].
    pub design: usize,
    /// Index into [`Review::classes`].
    pub class: usize,
    /// The seed.
    pub seed: u64,
    /// Each violation of the run, explained by the events involved.
    pub explanations: Vec<String>,
    /// The command that replays the run.
    pub reproduce: String,
}

/// What the review may call a cell or a design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Every run was judged and none violated the property.
    Safe,
    /// A run violated the property.
    Violated,
    /// No run judged violated the property, but some ended `unknown` (or none ran): not
    /// enough data to call it safe.
    Unknown,
}

/// A design's figures over every class.
#[derive(Clone, Debug, PartialEq)]
pub struct DesignFigures {
    /// Runs over every class.
    pub runs: u64,
    /// Violations over every class.
    pub invalid: u64,
    /// Runs that ended `unknown` over every class: not judged.
    pub unknown: u64,
    /// The classes with a run that ended `unknown` or with no run, in column order.
    pub unjudged: Vec<usize>,
    /// The classes with a violation, in column order.
    pub broken: Vec<usize>,
    /// The class with the highest violation rate, if any broke it.
    pub worst: Option<usize>,
    /// The highest upper bound of a class's 95% interval.
    pub worst_ci_high: f64,
    /// The highest acquire p99 of any class, in ms.
    pub p99_ms: Option<f64>,
    /// The class of `p99_ms` (the earlier column on a tie).
    pub p99_class: Option<usize>,
    /// The lowest availability of any class.
    pub availability: Option<f64>,
    /// The class of `availability` (the earlier column on a tie).
    pub availability_class: Option<usize>,
    /// The fewest critical sections completed per second of any class.
    pub sections_per_s: Option<f64>,
    /// The class of `sections_per_s` (the earlier column on a tie).
    pub sections_class: Option<usize>,
    /// Runs with each kind of violation, over every class.
    pub double_holders: u64,
    /// See [`ReviewCell::stale_accepted`].
    pub stale_accepted: u64,
    /// See [`ReviewCell::lost_updates`].
    pub lost_updates: u64,
    /// See [`ReviewCell::token_order`].
    pub token_order: u64,
}

impl ReviewCell {
    /// The runs the checker judged: those that did not end `unknown`.
    pub fn judged(&self) -> u64 {
        self.runs.saturating_sub(self.unknown)
    }

    /// The share of its judged runs whose property was violated (0 without any).
    pub fn rate(&self) -> f64 {
        self.invalid as f64 / self.judged().max(1) as f64
    }

    /// Violated with any violation; else safe only when it ran and judged every run.
    pub fn standing(&self) -> Standing {
        if self.invalid > 0 {
            Standing::Violated
        } else if self.runs == 0 || self.unknown > 0 {
            Standing::Unknown
        } else {
            Standing::Safe
        }
    }
}

impl DesignFigures {
    /// The runs judged over every class.
    pub fn judged(&self) -> u64 {
        self.runs.saturating_sub(self.unknown)
    }

    /// The share of its judged runs, over every class, whose property was violated.
    pub fn rate(&self) -> f64 {
        self.invalid as f64 / self.judged().max(1) as f64
    }

    /// No violation in any class, and every class ran and judged every run.
    pub fn safe(&self) -> bool {
        self.standing() == Standing::Safe
    }

    /// Violated with any violation; else safe only when every class judged every run.
    pub fn standing(&self) -> Standing {
        if self.invalid > 0 {
            Standing::Violated
        } else if self.runs == 0 || !self.unjudged.is_empty() {
            Standing::Unknown
        } else {
            Standing::Safe
        }
    }
}

/// The worst value of a cell's figure `value` among `cells` (the highest when
/// `higher_is_worse`, else the lowest) and its cell's class; the earlier column on a tie.
fn worst_of(
    cells: &[&ReviewCell],
    value: impl Fn(&ReviewCell) -> Option<f64>,
    higher_is_worse: bool,
) -> Option<(f64, usize)> {
    let mut worst: Option<(f64, usize)> = None;
    for cell in cells {
        let Some(v) = value(cell) else { continue };
        let worse = worst.is_none_or(|(w, _)| if higher_is_worse { v > w } else { v < w });
        if worse {
            worst = Some((v, cell.class));
        }
    }
    worst
}

impl DesignFigures {
    /// A figure of its cost and the class it comes from.
    pub fn figure(&self, figure: Figure) -> (Option<f64>, Option<usize>) {
        match figure {
            Figure::AcquireP99 => (self.p99_ms, self.p99_class),
            Figure::Availability => (self.availability, self.availability_class),
            Figure::Sections => (self.sections_per_s, self.sections_class),
        }
    }
}

/// The safe designs the recommendation names beside the one it recommends.
const ALSO_SAFE: usize = 3;

/// A class's 95% upper bound under which a design with no violation is called safe without a
/// caution: 0.2%, about 2,000 seeds.
const SURE: f64 = 0.002;

/// Seeds with no violation that bound the rate's 95% Wilson interval under `rate`, rounded
/// up to a hundred: about 3.84 / rate.
fn seeds_for(rate: f64) -> u64 {
    let n = (1.96f64 * 1.96 / rate).ceil() as u64;
    n.div_ceil(100) * 100
}

/// The class names whose faults are clock faults.
const CLOCK_CLASSES: [&str; 2] = ["clock-steps", "drift-slew"];

impl Review {
    /// The cell of design `d` under class `c`.
    pub fn cell(&self, d: usize, c: usize) -> &ReviewCell {
        &self.cells[d * self.classes.len() + c]
    }

    /// The figures of design `d` over every class.
    pub fn figures(&self, d: usize) -> DesignFigures {
        let cells: Vec<&ReviewCell> = (0..self.classes.len()).map(|c| self.cell(d, c)).collect();
        let sum = |f: fn(&ReviewCell) -> u64| cells.iter().map(|c| f(c)).sum::<u64>();
        let broken: Vec<usize> = cells
            .iter()
            .filter(|c| c.invalid > 0)
            .map(|c| c.class)
            .collect();
        let worst = broken.iter().copied().max_by(|&a, &b| {
            cells[a]
                .rate()
                .total_cmp(&cells[b].rate())
                // The earlier column wins a tie.
                .then(b.cmp(&a))
        });
        // Each figure from its own worst class: they may differ.
        let p99 = worst_of(&cells, |c| c.acquire_p99_ms, true);
        let availability = worst_of(&cells, |c| c.availability, false);
        let sections = worst_of(&cells, |c| c.sections_per_s, false);
        DesignFigures {
            runs: sum(|c| c.runs),
            invalid: sum(|c| c.invalid),
            unknown: sum(|c| c.unknown),
            unjudged: cells
                .iter()
                .filter(|c| c.runs == 0 || c.unknown > 0)
                .map(|c| c.class)
                .collect(),
            broken,
            worst,
            worst_ci_high: cells.iter().map(|c| c.ci95.1).fold(0.0, f64::max),
            p99_ms: p99.map(|(v, _)| v),
            p99_class: p99.map(|(_, c)| c),
            availability: availability.map(|(v, _)| v),
            availability_class: availability.map(|(_, c)| c),
            sections_per_s: sections.map(|(v, _)| v),
            sections_class: sections.map(|(_, c)| c),
            double_holders: sum(|c| c.double_holders),
            stale_accepted: sum(|c| c.stale_accepted),
            lost_updates: sum(|c| c.lost_updates),
            token_order: sum(|c| c.token_order),
        }
    }

    /// The designs with no violation in any class, cheapest first by [`Review::cost`]: the
    /// lowest worst-case acquire p99 and the highest worst-case availability, in its order,
    /// then review order.
    pub fn safe_by_cost(&self) -> Vec<usize> {
        let figures: Vec<DesignFigures> =
            (0..self.designs.len()).map(|d| self.figures(d)).collect();
        let mut safe: Vec<usize> = (0..self.designs.len())
            .filter(|&d| figures[d].safe())
            .collect();
        safe.sort_by(|&a, &b| {
            let (fa, fb) = (&figures[a], &figures[b]);
            self.cost
                .figures()
                .into_iter()
                .map(|figure| {
                    // A figure a design lacks ranks it last.
                    let (va, vb) = (fa.figure(figure).0, fb.figure(figure).0);
                    match figure {
                        Figure::AcquireP99 => va
                            .unwrap_or(f64::INFINITY)
                            .total_cmp(&vb.unwrap_or(f64::INFINITY)),
                        Figure::Availability | Figure::Sections => {
                            vb.unwrap_or(-1.0).total_cmp(&va.unwrap_or(-1.0))
                        }
                    }
                })
                .fold(std::cmp::Ordering::Equal, std::cmp::Ordering::then)
                .then(a.cmp(&b))
        });
        safe
    }

    /// Each design's place among the safe designs by cost (1 the cheapest), `None` for a
    /// design that is not safe.
    pub fn ranks(&self) -> Vec<Option<usize>> {
        let mut ranks = vec![None; self.designs.len()];
        for (i, d) in self.safe_by_cost().into_iter().enumerate() {
            ranks[d] = Some(i + 1);
        }
        ranks
    }

    /// What of design `d`'s workload differs from the review's, in words; `None` when it ran
    /// the review's.
    pub fn own_workload(&self, d: usize) -> Option<String> {
        self.designs[d].workload.difference_words(&self.workload)
    }

    /// How the cost ranks designs across classes, in words: the sentence each output gives
    /// beside its cost table.
    pub fn ranking_words(&self) -> String {
        let [first, second, third] = self.cost.figures();
        format!(
            "A design's cost is three figures, each from the class where it is worst, named \
             beside it (the classes may differ): {}, {} and {} of any class, each over the \
             fault window. The safe designs are ranked by {}, then {}, then {}, then the review \
             file's order (cost = \"{}\").",
            Figure::AcquireP99.worst(),
            Figure::Availability.worst(),
            Figure::Sections.worst(),
            first.ranked(),
            second.ranked(),
            third.ranked(),
            match self.cost {
                CostOrder::Latency => "latency",
                CostOrder::Availability => "availability",
                CostOrder::Throughput => "throughput",
            }
        )
    }

    /// The recommendation, sentence by sentence, derived from the figures alone: the cheapest
    /// design with no violation under any class (and the other safe ones, dearer), or the
    /// least bad when none is safe; then, for each design that broke, where and what it would
    /// need.
    pub fn recommendation(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.designs.is_empty() || self.classes.is_empty() {
            out.push("The review has no design or no fault class to judge.".to_string());
            return out;
        }
        let n = self.seeds.count;
        let k = self.classes.len();
        let safe = self.safe_by_cost();
        let name = |d: usize| format!("\u{201c}{}\u{201d}", self.designs[d].name);
        if let Some(&best) = safe.first() {
            let f = self.figures(best);
            out.push(format!(
                "Use {}: no violation under any of the {k} fault class{} over {n} seed{} each \
                 (at most {} of runs per class, at 95% confidence); {}.",
                name(best),
                if k == 1 { "" } else { "es" },
                plural(n),
                percent(f.worst_ci_high),
                self.cost_words(&f)
            ));
            if f.worst_ci_high > SURE {
                out.push(format!(
                    "{n} seed{} per class cannot rule out a rate up to {}: run about {} seeds \
                     per cell (--seeds) to bound it under {} before deciding.",
                    plural(n),
                    percent(f.worst_ci_high),
                    seeds_for(SURE),
                    percent(SURE)
                ));
            }
            let dearer: Vec<String> = safe[1..]
                .iter()
                .take(ALSO_SAFE)
                .map(|&d| format!("{} ({})", name(d), self.cost_words(&self.figures(d))))
                .collect();
            if !dearer.is_empty() {
                let more = safe.len() - 1 - dearer.len();
                out.push(format!(
                    "Also safe, at a higher cost: {}{}.",
                    dearer.join("; "),
                    if more > 0 {
                        format!("; and {more} more (see the cost table)")
                    } else {
                        String::new()
                    }
                ));
            }
        } else {
            // Only a design whose every run was judged is named: a rate over some of its runs
            // says nothing of the others.
            let some_unknown =
                (0..self.designs.len()).any(|d| self.figures(d).standing() == Standing::Unknown);
            let least = (0..self.designs.len())
                .filter(|&d| self.figures(d).unjudged.is_empty())
                .min_by(|&a, &b| {
                    let (fa, fb) = (self.figures(a), self.figures(b));
                    fa.rate()
                        .total_cmp(&fb.rate())
                        .then(fa.broken.len().cmp(&fb.broken.len()))
                        .then(a.cmp(&b))
                });
            let none = if some_unknown {
                "No design is known to be safe under every fault class."
            } else {
                "No design is safe under every fault class."
            };
            match least {
                Some(least) => {
                    let f = self.figures(least);
                    out.push(format!(
                        "{none} The least bad is {}: violated in {} of its runs, under {}.",
                        name(least),
                        percent(f.rate()),
                        self.class_list(&f.broken)
                    ));
                }
                None => out.push(format!(
                    "{none} None can be recommended: every design has runs that ended unknown, \
                     which were not judged."
                )),
            }
        }
        // Costs are measured alike only under one workload: say which designs ran another.
        let own: Vec<String> = (0..self.designs.len())
            .filter_map(|d| self.own_workload(d).map(|w| format!("{} ({w})", name(d))))
            .collect();
        if !own.is_empty() {
            out.push(format!(
                "Every design ran the review's workload ({}) but {}: {} costs are not measured \
                 as the others' are.",
                self.workload.words(),
                list(&own),
                if own.len() == 1 { "its" } else { "their" }
            ));
        }
        for d in 0..self.designs.len() {
            let f = self.figures(d);
            if f.safe() {
                continue;
            }
            let Some(worst) = f.worst else {
                out.push(self.unknown_sentence(d, &f));
                continue;
            };
            let cell = self.cell(d, worst);
            let mut s = format!(
                "{} breaks under {} ({} of seeds",
                name(d),
                self.classes[worst].title,
                percent(cell.rate()),
            );
            let others: Vec<usize> = f.broken.iter().copied().filter(|&c| c != worst).collect();
            if others.is_empty() {
                s.push_str(") and no other class");
            } else {
                let _ = write!(s, "), also under {}", self.class_list(&others));
            }
            s.push_str(". ");
            s.push_str(&self.remedy(d, &f, &safe));
            if f.unknown > 0 {
                let _ = write!(
                    s,
                    " {} of its {} runs ended unknown and were not judged ({}).",
                    f.unknown,
                    f.runs,
                    self.unknown_list(d, &f.unjudged)
                );
            }
            out.push(s);
        }
        out
    }

    /// Why design `d`, with no violation, is not called safe: the runs that ended unknown, or
    /// none at all.
    fn unknown_sentence(&self, d: usize, f: &DesignFigures) -> String {
        let name = &self.designs[d].name;
        if f.runs == 0 {
            return format!("\u{201c}{name}\u{201d} ran no seed: it is unknown, not safe.");
        }
        let judged = match f.judged() {
            0 => String::new(),
            n => format!("; the {n} it judged had no violation"),
        };
        format!(
            "\u{201c}{name}\u{201d} is unknown, not safe: {} of its {} runs ended unknown ({}), \
             stopped by their event, memory or wall-clock bound before their end \
             (scenario.max_events, scenario.memory_budget_mb, scenario.wall_budget_ms), so the \
             checker could not judge them{judged}.",
            f.unknown,
            f.runs,
            self.unknown_list(d, &f.unjudged),
        )
    }

    /// `pause 3 of 3, crash 1 of 3`: the unknown runs of design `d` in `classes`, by the
    /// matrix's column headings.
    fn short_unknown_list(&self, d: usize, classes: &[usize]) -> String {
        classes
            .iter()
            .map(|&c| {
                let cell = self.cell(d, c);
                format!(
                    "{} {} of {}",
                    self.classes[c].short, cell.unknown, cell.runs
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `process pauses: 3 of 3, crashes: 1 of 3`: the unknown runs of design `d` in `classes`.
    fn unknown_list(&self, d: usize, classes: &[usize]) -> String {
        classes
            .iter()
            .map(|&c| {
                let cell = self.cell(d, c);
                format!(
                    "{}: {} of {}",
                    self.classes[c].title, cell.unknown, cell.runs
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What an unsafe design would need, from the kinds of its violations and the classes
    /// that broke it.
    fn remedy(&self, d: usize, f: &DesignFigures, safe: &[usize]) -> String {
        let same_family_safe = safe
            .iter()
            .find(|&&s| self.designs[s].family == self.designs[d].family)
            .map(|&s| {
                format!(
                    " Of its family, \u{201c}{}\u{201d} stays safe.",
                    self.designs[s].name
                )
            });
        let fx = &self.designs[d].fencing;
        let mut s = if f.stale_accepted > 0 || f.lost_updates > 0 {
            let mut s = format!("Stale writes reached the data{}", stale_remedy(fx, f));
            if let Some(t) = &same_family_safe {
                s.push_str(t);
            }
            s
        } else if f.token_order > 0 {
            "Its fencing tokens went backwards in grant order: a token must come from a counter \
             that survives the faults that broke it."
                .to_string()
        } else if f.double_holders > 0 {
            match fx.tokens {
                TokenKind::None => "Two clients held the lock at once: without fencing, any \
                                    effect outside the storage can happen twice."
                    .to_string(),
                TokenKind::Ordered | TokenKind::Random => "Two clients held the lock at once: \
                    its tokens guard the storage, but any effect outside it can happen twice."
                    .to_string(),
            }
        } else {
            "Its runs were judged invalid.".to_string()
        };
        let clock_only = !f.broken.is_empty()
            && f.broken
                .iter()
                .all(|&c| CLOCK_CLASSES.contains(&self.classes[c].name.as_str()));
        if clock_only {
            s.push_str(
                " Only clock faults break it: its safety rests on clocks measuring the lease.",
            );
        }
        s
    }

    /// A design's cost in words, each figure with the class it comes from, the figure that
    /// ranks it first first: `acquire p99 5.0 s under process pauses, available 64.7% of the
    /// time under partitions delivered at the heal and 1.23 critical sections completed per second
    /// under crashes and restarts, each in its worst class`; a class that is the worst for
    /// every figure is named once.
    fn cost_words(&self, f: &DesignFigures) -> String {
        let figures = self.cost.figures();
        let classes: Vec<Option<usize>> = figures.iter().map(|&x| f.figure(x).1).collect();
        // One class for every figure is named once.
        let one = classes
            .iter()
            .all(|&c| c.is_some() && c == classes[0])
            .then_some(classes[0])
            .flatten();
        let words: Vec<String> = figures
            .into_iter()
            .map(|figure| {
                let (value, class) = f.figure(figure);
                let class = class.filter(|_| one.is_none());
                let value = match (figure, value) {
                    (Figure::AcquireP99, v) => {
                        format!("acquire p99 {}", figure_value(figure, v))
                    }
                    (Figure::Availability, v) => {
                        format!("available {} of the time", figure_value(figure, v))
                    }
                    (Figure::Sections, Some(v)) => {
                        format!("{} critical sections completed per second", per_second(v))
                    }
                    (Figure::Sections, None) => {
                        "critical sections completed per second -".to_string()
                    }
                };
                match class {
                    Some(c) => format!("{value} under {}", self.classes[c].title),
                    None => value,
                }
            })
            .collect();
        match one {
            Some(c) => format!(
                "{}, {} and {}, all in its worst class ({})",
                words[0], words[1], words[2], self.classes[c].title
            ),
            None => format!(
                "{}, {} and {}, each in its worst class",
                words[0], words[1], words[2]
            ),
        }
    }

    /// A figure of design figures `f` for a table, with the short name of its class:
    /// `5.0 s (part-hold)`.
    fn figure_cell(&self, f: &DesignFigures, figure: Figure) -> String {
        let (value, class) = f.figure(figure);
        match class {
            Some(c) => format!(
                "{} ({})",
                figure_value(figure, value),
                self.classes[c].short
            ),
            None => figure_value(figure, value),
        }
    }

    fn class_list(&self, classes: &[usize]) -> String {
        let names: Vec<String> = classes
            .iter()
            .map(|&c| self.classes[c].title.clone())
            .collect();
        if names.is_empty() {
            "no class".to_string()
        } else {
            list(&names)
        }
    }

    fn summary_line(&self) -> String {
        let mut line = self.cells_line();
        if let Some(w) = self.window_words() {
            let _ = write!(line, "; {w}");
        }
        let _ = write!(line, "; {}", self.workload_line());
        line
    }

    /// The review's workload, in words, and whether every design ran it.
    fn workload_line(&self) -> String {
        let own = (0..self.designs.len())
            .filter(|&d| self.own_workload(d).is_some())
            .count();
        if own == 0 {
            format!("every design's workload: {}", self.workload.words())
        } else {
            format!(
                "the review's workload: {} ({own} design{} ran {}: said beside {})",
                self.workload.words(),
                plural(own),
                if own == 1 { "its own" } else { "their own" },
                if own == 1 { "its name" } else { "their names" }
            )
        }
    }

    /// The designs as the cost tables list them: the safe ones by rank, then the others in
    /// the review file's order; each with its rank.
    fn cost_rows(&self) -> Vec<(usize, Option<usize>)> {
        let ranks = self.ranks();
        let mut rows: Vec<(usize, Option<usize>)> = self
            .safe_by_cost()
            .into_iter()
            .map(|d| (d, ranks[d]))
            .collect();
        rows.extend(
            (0..self.designs.len())
                .filter(|&d| ranks[d].is_none())
                .map(|d| (d, None)),
        );
        rows
    }

    /// How many designs, classes and seeds.
    fn cells_line(&self) -> String {
        format!(
            "{} design{} × {} fault class{}, {} seed{} per cell (from seed {})",
            self.designs.len(),
            plural(self.designs.len()),
            self.classes.len(),
            if self.classes.len() == 1 { "" } else { "es" },
            self.seeds.count,
            plural(self.seeds.count),
            self.seeds.from
        )
    }

    /// The run every design's cells ran (`lockstep review` makes them alike), in words;
    /// `None` if the designs' runs differ.
    fn window_words(&self) -> Option<String> {
        let w = self.designs.first()?.window;
        self.designs.iter().all(|d| d.window == w).then(|| {
            format!(
                "every run {}: faults from {} to {}, then a quiet tail of {}",
                ms(w.duration_ms as f64),
                ms(w.fault_start_ms as f64),
                ms(w.duration_ms.saturating_sub(w.quiet_tail_ms) as f64),
                ms(w.quiet_tail_ms as f64)
            )
        })
    }

    /// The command that writes the HTML page: the review's file and seeds, whether they came
    /// from the file or from `--seeds`.
    fn page_command(&self) -> String {
        format!(
            "lockstep review {} --seeds {} --out review.html",
            shell_word(&self.file),
            self.seeds.count
        )
    }

    /// The review as JSON: the data, then the recommendation derived from it.
    pub fn json(&self) -> String {
        /// A design's cost: each figure of its worst class, with that class's name.
        #[derive(Serialize)]
        struct Cost<'a> {
            rank: Option<usize>,
            acquire_p99_ms: Option<f64>,
            acquire_p99_class: Option<&'a str>,
            availability: Option<f64>,
            availability_class: Option<&'a str>,
            sections_per_s: Option<f64>,
            sections_per_s_class: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            review: &'a Review,
            standing: Vec<Standing>,
            costs: Vec<Cost<'a>>,
            ranking: String,
            workload_differs: Vec<Vec<&'static str>>,
            recommendation: Vec<String>,
        }
        let ranks = self.ranks();
        let class = |c: Option<usize>| c.map(|c| self.classes[c].name.as_str());
        serde_json::to_string_pretty(&Json {
            review: self,
            standing: (0..self.designs.len())
                .map(|d| self.figures(d).standing())
                .collect(),
            costs: (0..self.designs.len())
                .map(|d| {
                    let f = self.figures(d);
                    Cost {
                        rank: ranks[d],
                        acquire_p99_ms: f.p99_ms,
                        acquire_p99_class: class(f.p99_class),
                        availability: f.availability,
                        availability_class: class(f.availability_class),
                        sections_per_s: f.sections_per_s,
                        sections_per_s_class: class(f.sections_class),
                    }
                })
                .collect(),
            ranking: self.ranking_words(),
            workload_differs: self
                .designs
                .iter()
                .map(|d| d.workload.differences(&self.workload))
                .collect(),
            recommendation: self.recommendation(),
        })
        .expect("a review serialises")
    }

    /// The review as terminal text within 100 columns: the matrix, the recommendation, and
    /// the commands to the rest.
    pub fn table(&self) -> String {
        // Names and the job come from the user: no control character reaches the terminal.
        let mut out = String::new();
        let _ = writeln!(out, "design review  {}", one_line(&self.name, WIDTH - 15));
        if !self.job.is_empty() {
            let _ = writeln!(out, "job            {}", one_line(&self.job, WIDTH - 15));
        }
        // On two lines, to fit the terminal.
        let _ = writeln!(out, "{}", self.cells_line());
        if let Some(w) = self.window_words() {
            let _ = writeln!(out, "{w}");
        }
        for line in wrap(&self.workload_line(), WIDTH) {
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
        out.push_str("violation rate by fault class (seeds whose property was violated)\n");
        let name_width = (WIDTH - 1).saturating_sub(self.classes.len() * 10);
        let name_width = name_width.clamp(12, 30);
        let _ = write!(out, "{:<name_width$}", "design");
        for c in &self.classes {
            let _ = write!(out, " {:>9}", c.short);
        }
        out.push('\n');
        for (d, design) in self.designs.iter().enumerate() {
            let label = format!("{}. {}", d + 1, design.name);
            // A design that ran its own workload is marked, and told beneath.
            let label = if self.own_workload(d).is_some() {
                format!("{}*", one_line(&label, name_width - 2))
            } else {
                one_line(&label, name_width - 1)
            };
            let _ = write!(out, "{label:<name_width$}");
            for c in 0..self.classes.len() {
                let _ = write!(out, " {:>9}", glance(self.cell(d, c)));
            }
            out.push('\n');
        }
        let unjudged: Vec<String> = (0..self.designs.len())
            .filter_map(|d| {
                let f = self.figures(d);
                (f.unknown > 0).then(|| {
                    format!(
                        "{}. {}: {}",
                        d + 1,
                        one_line(&self.designs[d].name, 40),
                        self.short_unknown_list(d, &f.unjudged)
                    )
                })
            })
            .collect();
        if !unjudged.is_empty() {
            out.push_str(
                "? runs that ended unknown, not judged (a cell with any is never called safe):\n",
            );
            for u in unjudged {
                for line in wrap(&u, WIDTH - 2) {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
        let own: Vec<String> = (0..self.designs.len())
            .filter_map(|d| {
                self.own_workload(d)
                    .map(|w| format!("{}. {}: {w}", d + 1, one_line(&self.designs[d].name, 40)))
            })
            .collect();
        if !own.is_empty() {
            out.push_str("* ran its own workload, not the review's:\n");
            for o in own {
                for line in wrap(&o, WIDTH - 2) {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
        self.table_costs(&mut out);
        out.push_str("\nrecommendation\n");
        for s in self.recommendation() {
            for (i, line) in wrap(&s, WIDTH - 2).iter().enumerate() {
                let _ = writeln!(out, "{} {line}", if i == 0 { "-" } else { " " });
            }
        }
        if !self.examples.is_empty() {
            out.push_str("\nfirst violation of each design that broke\n");
            for e in &self.examples {
                let _ = writeln!(
                    out,
                    "{}. {} under {}, seed {}:",
                    e.design + 1,
                    one_line(&self.designs[e.design].name, 40),
                    self.classes[e.class].name,
                    e.seed
                );
                // A command of two steps on two lines, as a shell takes it (`&&` ends the first),
                // so that it fits the width.
                let steps: Vec<&str> = e.reproduce.split(" && ").collect();
                for (i, step) in steps.iter().enumerate() {
                    let indent = if i == 0 { "   " } else { "     " };
                    let and = if i + 1 < steps.len() { " &&" } else { "" };
                    let _ = writeln!(out, "{indent}{step}{and}");
                }
            }
        }
        let _ = writeln!(
            out,
            "\nthe page, with the chart, timelines and every figure:\n  {}",
            self.page_command()
        );
        out
    }

    /// The terminal's cost table: each design's figures in its worst classes, the safe ones
    /// by rank first, and how they rank.
    fn table_costs(&self, out: &mut String) {
        const NAME: usize = 25;
        out.push_str(
            "\ncost: each figure in the design's worst class for it (that class in brackets)\n",
        );
        let _ = writeln!(
            out,
            "{:>4} {:<NAME$} {:>8} {:>19} {:>19} {:>19}",
            "rank", "design", "violated", "acquire p99", "available", "sections/s"
        );
        for (d, rank) in self.cost_rows() {
            let f = self.figures(d);
            let violated = if f.runs > 0 && f.judged() == 0 {
                "unknown".to_string()
            } else if f.unknown > 0 {
                format!("{}?", percent(f.rate()))
            } else {
                percent(f.rate())
            };
            let _ = writeln!(
                out,
                "{:>4} {:<NAME$} {violated:>8} {:>19} {:>19} {:>19}",
                rank.map_or("-".to_string(), |r| r.to_string()),
                one_line(&format!("{}. {}", d + 1, self.designs[d].name), NAME),
                self.figure_cell(&f, Figure::AcquireP99),
                self.figure_cell(&f, Figure::Availability),
                self.figure_cell(&f, Figure::Sections),
            );
        }
        for line in wrap(&self.ranking_words(), WIDTH) {
            let _ = writeln!(out, "{line}");
        }
    }

    /// A design's name in Markdown, numbered, with what of its workload differs from the
    /// review's.
    fn md_name(&self, d: usize) -> String {
        let mut name = format!("{}. {}", d + 1, md(&self.designs[d].name));
        if let Some(w) = self.own_workload(d) {
            let _ = write!(name, " (own workload: {})", md(&w));
        }
        name
    }

    /// The review as Markdown (a pull-request comment): the recommendation, the matrix, the
    /// costs, the first violations and the details, kept under [`MARKDOWN_LIMIT`] characters.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Design review: {}\n", md(&self.name));
        if !self.job.is_empty() {
            let _ = writeln!(out, "**Job:** {}\n", md(&self.job));
        }
        let _ = writeln!(out, "{}.\n", md(&self.summary_line()));
        out.push_str("## Recommendation\n\n");
        // One line per sentence: a wrapped line could begin with a user's `-` or `1.` and
        // start a list of its own.
        for s in self.recommendation() {
            let _ = writeln!(out, "- {}", md(&s));
        }
        out.push_str("\n## Violation rate by fault class\n\n");
        let legend: Vec<String> = self
            .classes
            .iter()
            .map(|c| format!("{}: {}", md(&c.short), md(&c.title)))
            .collect();
        // The classes' own text (never the user's): safe to wrap.
        for line in wrap(&legend.join("; "), WIDTH) {
            let _ = writeln!(out, "{line}");
        }
        out.push_str("\n| design |");
        for c in &self.classes {
            let _ = write!(out, " {} |", md(&c.short));
        }
        out.push_str("\n|---|");
        for _ in &self.classes {
            out.push_str("---:|");
        }
        out.push('\n');
        for d in 0..self.designs.len() {
            let _ = write!(out, "| {} |", self.md_name(d));
            for c in 0..self.classes.len() {
                let cell = self.cell(d, c);
                let mark = match cell.standing() {
                    Standing::Violated => "🟥 ",
                    Standing::Unknown => "❔ ",
                    Standing::Safe => "",
                };
                let note = unknown_note(cell).map_or(String::new(), |n| format!(", {n}"));
                let _ = write!(out, " {mark}{}{} |", md(&label(cell)), md(&note));
            }
            out.push('\n');
        }
        let _ = writeln!(out, "\n## Cost\n\n{}\n", md(&self.ranking_words()));
        out.push_str(
            "| rank | design | violated | acquire p99 (worst class) | available (worst class) \
             | sections/s (worst class) |\n|---:|---|---:|---:|---:|---:|\n",
        );
        for (d, rank) in self.cost_rows() {
            let f = self.figures(d);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                rank.map_or("–".to_string(), |r| r.to_string()),
                self.md_name(d),
                md(&violated(&f)),
                md(&self.figure_cell(&f, Figure::AcquireP99)),
                md(&self.figure_cell(&f, Figure::Availability)),
                md(&self.figure_cell(&f, Figure::Sections)),
            );
        }
        let mut tail = String::new();
        if !self.examples.is_empty() {
            tail.push_str("\n## First violations\n");
            for e in &self.examples {
                let _ = writeln!(
                    tail,
                    "\n**{}. {}** under {}, seed {}:\n",
                    e.design + 1,
                    md(&self.designs[e.design].name),
                    md(&self.classes[e.class].title),
                    e.seed
                );
                for x in e.explanations.iter().take(2) {
                    let _ = writeln!(tail, "- {}", md(x));
                }
                let _ = writeln!(tail, "\n{}", markdown_code(&e.reproduce));
            }
        }
        tail.push_str("\n## Details by family\n\n| design | family | system | storage | property | runs | unknown | violated | double holders | stale writes | lost updates | no recovery |\n|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for d in self.by_family() {
            let design = &self.designs[d];
            let f = self.figures(d);
            let no_recovery: u64 = (0..self.classes.len())
                .map(|c| self.cell(d, c).no_recovery)
                .sum();
            let _ = writeln!(
                tail,
                "| {}. {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                d + 1,
                md(&design.name),
                md(&design.family),
                md(&design.system),
                md(&design.storage),
                md(&design.property),
                f.runs,
                f.unknown,
                f.invalid,
                f.double_holders,
                f.stale_accepted,
                f.lost_updates,
                no_recovery
            );
        }
        let footer = format!(
            "\nThe page, with the chart, timelines and every figure: {}\n",
            markdown_code(&self.page_command())
        );
        if out.len() + tail.len() + footer.len() <= MARKDOWN_LIMIT {
            out.push_str(&tail);
        } else {
            out.push_str("\n(The first violations and details are left out to fit a comment.)\n");
        }
        out.push_str(&footer);
        out
    }

    /// The designs grouped by family (first appearance order), review order within.
    fn by_family(&self) -> Vec<usize> {
        let mut families: Vec<&str> = Vec::new();
        for d in &self.designs {
            if !families.contains(&d.family.as_str()) {
                families.push(&d.family);
            }
        }
        families
            .iter()
            .flat_map(|fam| {
                (0..self.designs.len()).filter(move |&d| self.designs[d].family == *fam)
            })
            .collect()
    }

    /// The review as one self-contained HTML page (inline CSS and SVG, no script), with the
    /// timeline SVG of each example of `timelines` (parallel to [`Review::examples`]) placed
    /// beside its explanation.
    pub fn html(&self, timelines: &[Option<String>]) -> String {
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
        let _ = writeln!(out, "<title>Design review: {}</title>", esc(&self.name));
        let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
        let _ = writeln!(out, "<h1>Design review: {}</h1>", esc(&self.name));
        if !self.job.is_empty() {
            let _ = writeln!(out, "<p class=\"job\"><b>Job:</b> {}</p>", esc(&self.job));
        }
        let _ = writeln!(
            out,
            "<p class=\"summary\">{}. Review file <code>{}</code>.</p>",
            esc(&self.summary_line()),
            esc(&self.file)
        );
        out.push_str("<section id=\"recommendation\">\n<h2>Recommendation</h2>\n<ul>\n");
        for s in self.recommendation() {
            let _ = writeln!(out, "<li>{}</li>", esc(&s));
        }
        out.push_str("</ul>\n</section>\n");
        self.html_matrix(&mut out);
        out.push_str("<section id=\"cost\">\n<h2>Safety against cost</h2>\n");
        out.push_str(
            "<p class=\"meta\">One point per design: the share of its runs violated over every \
             class, against its worst class's acquire p99 (left) and lowest availability \
             (right). Safe designs sit on the bottom line; the cheapest are to the left, and \
             to the right.</p>\n",
        );
        out.push_str(&self.chart_svg());
        self.html_costs(&mut out);
        out.push_str("</section>\n");
        self.html_examples(&mut out, timelines);
        self.html_details(&mut out);
        out.push_str("</body>\n</html>\n");
        out
    }

    /// A design's name in HTML, numbered, with what of its workload differs from the
    /// review's beneath.
    fn html_name(&self, d: usize) -> String {
        let mut name = format!("{}. {}", d + 1, esc(&self.designs[d].name));
        if let Some(w) = self.own_workload(d) {
            let _ = write!(
                name,
                "<div class=\"workload\">own workload: {}</div>",
                esc(&w)
            );
        }
        name
    }

    /// The cost table: each design's figures in its worst classes, the safe ones by rank.
    fn html_costs(&self, out: &mut String) {
        let _ = writeln!(out, "<p class=\"meta\">{}</p>", esc(&self.ranking_words()));
        out.push_str(
            "<table class=\"costs\">\n<thead>\n<tr><th>rank</th><th>design</th><th>violated</th>\
             <th>acquire p99 (worst class)</th><th>available (worst class)</th>\
             <th>sections/s (worst class)</th></tr>\n</thead>\n<tbody>\n",
        );
        for (d, rank) in self.cost_rows() {
            let f = self.figures(d);
            let _ = write!(
                out,
                "<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>",
                rank.map_or("–".to_string(), |r| r.to_string()),
                self.html_name(d),
                esc(&violated(&f))
            );
            for figure in [Figure::AcquireP99, Figure::Availability, Figure::Sections] {
                let (_, class) = f.figure(figure);
                let _ = write!(
                    out,
                    "<td class=\"num\"{}>{}</td>",
                    class.map_or(String::new(), |c| format!(
                        " title=\"{}\"",
                        esc(&self.classes[c].title)
                    )),
                    esc(&self.figure_cell(&f, figure))
                );
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
    }

    fn html_matrix(&self, out: &mut String) {
        out.push_str("<section id=\"matrix\">\n<h2>Violation rate by fault class</h2>\n");
        out.push_str(
            "<p class=\"meta\">The share of the seeds judged whose property was violated, with \
             its 95% Wilson interval beneath. A run that ended unknown (stopped by its event, \
             memory or wall-clock bound) is not judged: a cell with any is counted beneath, \
             yellow when nothing judged was violated, and never called safe.</p>\n",
        );
        out.push_str("<table class=\"matrix\">\n<thead>\n<tr><th>design</th>");
        for c in &self.classes {
            let _ = write!(out, "<th title=\"{}\">{}</th>", esc(&c.name), esc(&c.title));
        }
        out.push_str("</tr>\n</thead>\n<tbody>\n");
        for (d, design) in self.designs.iter().enumerate() {
            let _ = write!(
                out,
                "<tr><td class=\"design\">{}<div class=\"file\">{}</div></td>",
                self.html_name(d),
                esc(&design.system)
            );
            for c in 0..self.classes.len() {
                let cell = self.cell(d, c);
                let note = unknown_note(cell);
                let _ = write!(
                    out,
                    "<td class=\"rate\" style=\"background:{}\" title=\"{} of {} runs judged violated{}\">{}\
                     <div class=\"ci\">{}</div>",
                    colour(cell),
                    cell.invalid,
                    cell.judged(),
                    note.as_ref()
                        .map_or(String::new(), |n| format!("; {n}, not judged")),
                    esc(&label(cell)),
                    if cell.judged() > 0 {
                        esc(&interval(cell.ci95))
                    } else {
                        "–".to_string()
                    }
                );
                if let Some(n) = note {
                    let _ = write!(out, "<div class=\"unknown\">{}</div>", esc(&n));
                }
                out.push_str("</td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n</section>\n");
    }

    fn html_examples(&self, out: &mut String, timelines: &[Option<String>]) {
        if self.examples.is_empty() {
            return;
        }
        out.push_str(
            "<section id=\"examples\">\n<h2>First violation of each design that broke</h2>\n",
        );
        for (i, e) in self.examples.iter().enumerate() {
            let _ = writeln!(
                out,
                "<section class=\"example\" id=\"design-{}\">\n<h3>{}. {} under {}, seed {}</h3>",
                e.design + 1,
                e.design + 1,
                esc(&self.designs[e.design].name),
                esc(&self.classes[e.class].title),
                e.seed
            );
            out.push_str("<ul>\n");
            for x in &e.explanations {
                let _ = writeln!(out, "<li>{}</li>", esc(x));
            }
            out.push_str("</ul>\n");
            let _ = writeln!(
                out,
                "<p class=\"meta\">Replay: <code>{}</code></p>",
                esc(&e.reproduce)
            );
            if let Some(Some(svg)) = timelines.get(i) {
                let _ = writeln!(out, "<div class=\"timeline\">{svg}</div>");
            }
            out.push_str("</section>\n");
        }
        out.push_str("</section>\n");
    }

    fn html_details(&self, out: &mut String) {
        out.push_str("<section id=\"details\">\n<h2>Details by family</h2>\n");
        out.push_str(
            "<table class=\"details\">\n<thead>\n<tr><th>design</th><th>family</th><th>system</th>\
             <th>storage</th><th>property</th><th>runs</th><th>unknown</th><th>violated</th><th>double holders</th>\
             <th>stale writes</th><th>lost updates</th><th>no recovery</th><th>file</th></tr>\n\
             </thead>\n<tbody>\n",
        );
        for d in self.by_family() {
            let design = &self.designs[d];
            let f = self.figures(d);
            let no_recovery: u64 = (0..self.classes.len())
                .map(|c| self.cell(d, c).no_recovery)
                .sum();
            let _ = writeln!(
                out,
                "<tr><td>{}. {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"file\">{}</td></tr>",
                d + 1,
                esc(&design.name),
                esc(&design.family),
                esc(&design.system),
                esc(&design.storage),
                esc(&design.property),
                f.runs,
                f.unknown,
                f.invalid,
                f.double_holders,
                f.stale_accepted,
                f.lost_updates,
                no_recovery,
                esc(&design.file)
            );
        }
        out.push_str("</tbody>\n</table>\n</section>\n");
    }

    /// Two scatter plots side by side, one point per design (numbered as in the matrix):
    /// the share of runs violated against the worst acquire p99 (log scale) and against the
    /// lowest availability.
    pub fn chart_svg(&self) -> String {
        const W: f64 = 340.0;
        const H: f64 = 220.0;
        const L: f64 = 48.0;
        const B: f64 = 34.0;
        let figures: Vec<DesignFigures> =
            (0..self.designs.len()).map(|d| self.figures(d)).collect();
        let top = figures
            .iter()
            .map(DesignFigures::rate)
            .fold(0.0, f64::max)
            .max(0.01);
        let y = |r: f64| 10.0 + (H - B - 10.0) * (1.0 - r / top);
        let p99s: Vec<f64> = figures.iter().filter_map(|f| f.p99_ms).collect();
        // Without any acquisition the axis still spans a decade, with no point on it.
        let lo = p99s.iter().copied().fold(f64::INFINITY, f64::min);
        let lo = if lo.is_finite() { lo.max(0.01) } else { 1.0 };
        let hi = p99s.iter().copied().fold(0.0, f64::max).max(lo * 2.0);
        let (llo, lhi) = (
            lo.log10().floor(),
            hi.log10().ceil().max(lo.log10().floor() + 1.0),
        );
        let x_p99 = |v: f64| L + (W - L - 12.0) * ((v.max(lo).log10() - llo) / (lhi - llo));
        let amin = figures
            .iter()
            .filter_map(|f| f.availability)
            .fold(1.0, f64::min)
            .min(0.9);
        let amin = (amin * 10.0).floor() / 10.0;
        let x_av = |v: f64| L + (W - L - 12.0) * ((v - amin) / (1.0 - amin).max(1e-9));
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{H}\" \
             viewBox=\"0 0 {} {H}\" role=\"img\" aria-label=\"violation rate against acquire \
             p99 and availability, one point per design\">",
            2.0 * W + 20.0,
            2.0 * W + 20.0
        );
        for (panel, dx) in [(0, 0.0), (1, W + 20.0)] {
            let _ = write!(out, "<g transform=\"translate({dx},0)\">");
            let _ = write!(
                out,
                "<line x1=\"{L}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#57606a\"/>\
                 <line x1=\"{L}\" y1=\"10\" x2=\"{L}\" y2=\"{}\" stroke=\"#57606a\"/>",
                H - B,
                W - 12.0,
                H - B,
                H - B
            );
            for t in [0.0, top / 2.0, top] {
                let _ = write!(
                    out,
                    "<text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
                    L - 4.0,
                    y(t) + 3.0,
                    esc(&percent(t))
                );
            }
            let label = if panel == 0 {
                let mut e = llo;
                while e <= lhi {
                    let v = 10f64.powf(e);
                    let _ = write!(
                        out,
                        "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                        x_p99(v),
                        H - B + 13.0,
                        esc(&ms(v))
                    );
                    e += 1.0;
                }
                "acquire p99, worst class (log scale)"
            } else {
                for v in [amin, (amin + 1.0) / 2.0, 1.0] {
                    let _ = write!(
                        out,
                        "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                        x_av(v),
                        H - B + 13.0,
                        esc(&percent(v))
                    );
                }
                "available, worst class"
            };
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{label}</text>\
                 <text x=\"12\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" \
                 transform=\"rotate(-90 12 {:.1})\">violated</text>",
                (L + W - 12.0) / 2.0,
                H - 4.0,
                (H - B) / 2.0,
                (H - B) / 2.0
            );
            for (d, f) in figures.iter().enumerate() {
                let x = if panel == 0 {
                    f.p99_ms.map(x_p99)
                } else {
                    f.availability.map(x_av)
                };
                let Some(x) = x else { continue };
                let r = f.rate();
                let (fill, state) = match f.standing() {
                    Standing::Safe => ("#2da44e", format!("{} violated", percent(r))),
                    Standing::Violated => ("#cf222e", format!("{} violated", percent(r))),
                    Standing::Unknown => (
                        "#bf8700",
                        format!("unknown, {} of {} runs not judged", f.unknown, f.runs),
                    ),
                };
                let state = format!(
                    "{state}; acquire p99 {}; available {}",
                    self.figure_cell(f, Figure::AcquireP99),
                    self.figure_cell(f, Figure::Availability)
                );
                let _ = write!(
                    out,
                    "<g class=\"point\"><title>{}. {}: {}</title>\
                     <circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"8\" fill=\"{fill}\" fill-opacity=\"0.8\"/>\
                     <text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#fff\" \
                     text-anchor=\"middle\">{}</text></g>",
                    d + 1,
                    esc(&self.designs[d].name),
                    esc(&state),
                    y(r),
                    y(r) + 3.5,
                    d + 1
                );
            }
            out.push_str("</g>");
        }
        out.push_str("</svg>\n");
        out
    }
}

/// What a design whose stale writes reached the data would need, from what its family offers
/// and what it uses: the rest of the sentence after "Stale writes reached the data".
fn stale_remedy(fx: &FencingSupport, f: &DesignFigures) -> String {
    let family = &fx.family_name;
    let ordered: Vec<String> = fx
        .offers
        .iter()
        .filter(|v| v.ordered)
        .map(|v| format!("{} (model.fencing = \"{}\")", v.what, v.name))
        .collect();
    let random: Vec<String> = fx
        .offers
        .iter()
        .filter(|v| !v.ordered)
        .map(|v| format!("{} (model.fencing = \"{}\")", v.what, v.name))
        .collect();
    let Some(mode) = &fx.storage_mode else {
        // The family's service keeps the resource: the check is its write's own.
        let mut s = format!(
            " {family} keeps itself: its write did not check that the writer still held the lock"
        );
        match fx.guard_keys.as_slice() {
            [] => s.push('.'),
            keys => {
                let _ = write!(
                    s,
                    "; the [storage] key{} {} set{} that check.",
                    plural(keys.len()),
                    keys.join(", "),
                    if keys.len() == 1 { "s" } else { "" }
                );
            }
        }
        if fx.offers.is_empty() {
            let _ = write!(
                s,
                " {family} gives no fencing token for another storage to check."
            );
        }
        return s;
    };
    match (mode.as_str(), fx.tokens) {
        ("unfenced", TokenKind::None) if !ordered.is_empty() => format!(
            ": it needs fencing tokens that the storage checks, so a holder that lost the lock \
             cannot write. {family} gives {}, for [storage] mode = \"fenced-all\".",
            ordered.join(" or ")
        ),
        ("unfenced", TokenKind::None) if !random.is_empty() => format!(
            ": it needs a token that the storage checks, so a holder that lost the lock cannot \
             write. {family} gives {}, which [storage] mode = \"cas-token\" checks.",
            random.join(" or ")
        ),
        ("unfenced", TokenKind::None) => format!(
            ": {family} gives no fencing token, so no storage can refuse a holder that lost the \
             lock."
        ),
        ("unfenced", TokenKind::Ordered) => ": its clients send fencing tokens, but the storage \
            does not check them; [storage] mode = \"fenced-all\" would."
            .to_string(),
        ("unfenced", TokenKind::Random) => ": its clients send a token, but the storage does \
            not check it; [storage] mode = \"cas-token\" would."
            .to_string(),
        ("fenced-writes", _) if f.stale_accepted == 0 => ": the storage checks tokens on \
            writes only, so a stale read led to a lost update; [storage] mode = \"fenced-all\" \
            checks reads too."
            .to_string(),
        (mode, _) => format!(
            " although the storage checks tokens (mode = \"{mode}\"): a holder that lost the \
             lock still wrote."
        ),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A figure's value for a table: `5.0 s`, `64.7%`, `1.23/s`; `-` without one.
fn figure_value(figure: Figure, value: Option<f64>) -> String {
    match (figure, value) {
        (_, None) => "-".to_string(),
        (Figure::AcquireP99, Some(v)) => ms(v),
        (Figure::Availability, Some(v)) => percent(v),
        (Figure::Sections, Some(v)) => format!("{}/s", per_second(v)),
    }
}

/// A rate per second with three significant digits: `0.523`, `12.3`, `140`.
fn per_second(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Milliseconds for people: `0.42 ms`, `12.3 ms`, `2.5 s`.
fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.1} s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} ms")
    } else if v >= 1.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.2} ms")
    }
}

/// A cell's colour: green when safe, yellow when unknown, from light to deep red with the
/// rate when violated.
fn colour(cell: &ReviewCell) -> &'static str {
    match (cell.standing(), cell.rate()) {
        (Standing::Safe, _) => "#dafbe1",
        (Standing::Unknown, _) => "#fff8c5",
        (_, r) if r < 0.01 => "#ffebe9",
        (_, r) if r < 0.05 => "#ffcecb",
        (_, r) if r < 0.2 => "#ff8182",
        _ => "#fa4549",
    }
}

/// A cell's share of judged runs violated, at a glance: `unknown` when none was judged, `–`
/// without runs.
fn label(cell: &ReviewCell) -> String {
    if cell.runs > 0 && cell.judged() == 0 {
        "unknown".to_string()
    } else {
        percent_at_a_glance(cell.invalid, cell.judged())
    }
}

/// A cell in the terminal's matrix: its [`label`], with `?` when some of its runs ended
/// unknown.
fn glance(cell: &ReviewCell) -> String {
    let l = label(cell);
    if cell.unknown > 0 && cell.judged() > 0 {
        format!("{l}?")
    } else {
        l
    }
}

/// `3 of 40 runs unknown`, for a cell with runs that ended unknown.
fn unknown_note(cell: &ReviewCell) -> Option<String> {
    (cell.unknown > 0).then(|| format!("{} of {} runs unknown", cell.unknown, cell.runs))
}

/// A design's share of judged runs violated, with its unknown runs: `1.8%`, `0.0%, 3 of 120
/// runs unknown`, `unknown` when none was judged.
fn violated(f: &DesignFigures) -> String {
    if f.runs > 0 && f.judged() == 0 {
        return "unknown".to_string();
    }
    let p = percent(f.rate());
    if f.unknown > 0 {
        format!("{p}, {} of {} runs unknown", f.unknown, f.runs)
    } else {
        p
    }
}

/// The text on one line, cut to `width` characters with an ellipsis.
fn one_line(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= width {
        flat
    } else {
        let cut: String = flat.chars().take(width.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Words of `text` in lines of at most `width` characters (a longer word keeps its line).
/// Control characters become spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A path as one shell word: as it is when plain, else in single quotes.
pub fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+,:=@".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

const STYLE: &str = "
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em; color: #1d2329; background: #fff; max-width: 80em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
code { font-family: ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace; font-size: 0.92em; }
.summary, .meta, .file { color: #57606a; }
.file { font-size: 0.8em; }
#recommendation li { margin: 0.3em 0; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #d0d7de; padding: 0.3em 0.5em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.rate, td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.rate { min-width: 5em; font-weight: 600; }
td.rate .ci, td.rate .unknown { font-weight: 400; font-size: 0.75em; color: #57606a; }
.workload { font-size: 0.8em; color: #9a6700; }
section.example { border: 1px solid #d0d7de; border-radius: 6px; padding: 0.5em 1em 1em; margin: 1em 0; }
.timeline { overflow-x: auto; margin-top: 0.5em; }
";

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, title: &str) -> ClassInfo {
        ClassInfo {
            name: name.into(),
            short: name.chars().take(9).collect(),
            title: title.into(),
        }
    }

    fn design(name: &str, family: &str) -> DesignInfo {
        DesignInfo {
            name: name.into(),
            family: family.into(),
            system: format!("{family} system"),
            storage: "unfenced".into(),
            property: "resource".into(),
            file: format!("scenarios/{family}.toml"),
            fencing: FencingSupport {
                family_name: family.to_uppercase(),
                tokens: TokenKind::None,
                storage_mode: Some("unfenced".into()),
                offers: vec![FencingValue {
                    name: "seq".into(),
                    what: "a sequence number".into(),
                    ordered: true,
                }],
                guard_keys: vec![],
            },
            window: Window {
                duration_ms: 60_000,
                fault_start_ms: 1_000,
                quiet_tail_ms: 21_000,
            },
            workload: workload(),
            keep_workload: false,
        }
    }

    fn workload() -> WorkloadInfo {
        WorkloadInfo {
            kind: "counter".into(),
            clients: 2,
            think_ms: Some(Spread::Uniform([0.0, 100.0])),
            work_ms: Spread::Uniform([50.0, 200.0]),
        }
    }

    /// Two classes; `invalid[d][c]` and `p99[d]` per design.
    fn review(invalid: &[[u64; 2]], p99: &[f64], stale: bool) -> Review {
        let designs = vec![
            design("Lock A <unfenced>", "alpha"),
            design("Lock A + fence", "alpha"),
            design("Lock B", "beta"),
        ];
        let mut cells = Vec::new();
        for (d, row) in invalid.iter().enumerate() {
            for (c, &k) in row.iter().enumerate() {
                cells.push(ReviewCell {
                    design: d,
                    class: c,
                    runs: 100,
                    invalid: k,
                    unknown: 0,
                    ci95: (0.0, if k == 0 { 0.037 } else { 0.2 }),
                    double_holders: k,
                    stale_accepted: if stale { k } else { 0 },
                    lost_updates: 0,
                    token_order: 0,
                    no_recovery: 0,
                    acquire_p99_ms: Some(p99[d]),
                    availability: Some(0.99 - d as f64 * 0.01),
                    sections_per_s: Some(2.0 + d as f64),
                    first_invalid: (k > 0).then_some(7),
                    digest: "0".repeat(16),
                });
            }
        }
        Review {
            format: FORMAT.into(),
            name: "ledger & <jobs>".into(),
            job: "one writer at a time".into(),
            file: "reviews/ledger review.toml".into(),
            seeds: ReviewSeeds {
                from: 1,
                count: 100,
            },
            cost: CostOrder::Latency,
            workload: workload(),
            classes: vec![
                class("pauses", "process pauses"),
                class("clock-steps", "clock steps"),
            ],
            designs,
            cells,
            examples: vec![],
        }
    }

    #[test]
    fn the_recommendation_follows_the_figures() {
        // Both fenced designs safe: the cheaper (lower p99) is recommended.
        let r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 9.0, 5.0], true);
        let rec = r.recommendation();
        assert!(rec[0].starts_with("Use “Lock B”"), "{rec:?}");
        assert!(rec[2].contains("“Lock A + fence”"), "{rec:?}");
        assert!(
            rec[3].starts_with("“Lock A <unfenced>” breaks under process pauses (12.0%"),
            "{rec:?}"
        );
        assert!(rec[3].contains("fencing tokens"), "{rec:?}");
        assert!(
            rec[3].contains("Of its family, “Lock A + fence” stays safe"),
            "{rec:?}"
        );
        // One design's figures change: B now breaks under clock steps, so A's fence
        // is the one to use, and B's sentence says only clocks broke it.
        let r = review(&[[12, 0], [0, 0], [0, 3]], &[3.0, 9.0, 5.0], false);
        let rec = r.recommendation();
        assert!(rec[0].starts_with("Use “Lock A + fence”"), "{rec:?}");
        let b = rec.iter().find(|s| s.starts_with("“Lock B”")).expect("b");
        assert!(b.contains("Only clock faults break it"), "{b}");
        assert!(b.contains("held the lock at once"), "{b}");
        // Nothing safe: the least bad is named.
        let r = review(&[[12, 1], [0, 2], [0, 3]], &[3.0, 9.0, 5.0], true);
        assert!(
            r.recommendation()[0].starts_with(
                "No design is safe under every fault class. The least bad is “Lock A + fence”"
            ),
            "{:?}",
            r.recommendation()
        );
    }

    #[test]
    fn the_cost_order_decides_between_safe_designs() {
        // Both fenced designs are safe: B has the lower p99 (5 against 9 ms), A's fence the
        // higher availability (98% against 97%).
        let mut r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 9.0, 5.0], true);
        assert_eq!(r.safe_by_cost(), [2, 1]);
        assert!(
            r.recommendation()[0].ends_with(
                "acquire p99 5.0 ms, available 97.0% of the time and 4.00 critical sections \
                 completed per second, all in its worst class (process pauses)."
            ),
            "{:?}",
            r.recommendation()
        );
        r.cost = CostOrder::Availability;
        assert_eq!(r.safe_by_cost(), [1, 2]);
        let rec = r.recommendation();
        assert!(rec[0].starts_with("Use “Lock A + fence”"), "{rec:?}");
        assert!(
            rec[0].ends_with(
                "available 98.0% of the time, acquire p99 9.0 ms and 3.00 critical sections \
                 completed per second, all in its worst class (process pauses)."
            ),
            "{rec:?}"
        );
        assert!(
            rec[2].starts_with("Also safe, at a higher cost: “Lock B”"),
            "{rec:?}"
        );
        // Equal on the first figure, the second decides.
        let mut r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 5.0, 5.0], true);
        assert_eq!(
            r.safe_by_cost(),
            [1, 2],
            "the same p99: A's fence is more available"
        );
        r.cost = CostOrder::Availability;
        for cell in &mut r.cells {
            cell.availability = Some(0.99);
        }
        r.cells[4].acquire_p99_ms = Some(4.0);
        r.cells[5].acquire_p99_ms = Some(4.0);
        assert_eq!(
            r.safe_by_cost(),
            [2, 1],
            "the same availability: B waits less"
        );
        let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(json["cost"], "availability");
        // By throughput: B completes more sections per second (4 against 3).
        r.cost = CostOrder::Throughput;
        assert_eq!(r.safe_by_cost(), [2, 1]);
        r.cells[5].sections_per_s = Some(1.0);
        assert_eq!(r.safe_by_cost(), [1, 2], "B's worst class completes fewer");
        assert!(
            r.ranking_words().contains(
                "ranked by critical sections completed per second (most first), then acquire \
                 p99 (lowest first), then availability (highest first)"
            ),
            "{}",
            r.ranking_words()
        );
    }

    #[test]
    fn each_cost_names_the_class_it_comes_from() {
        // B waits longest under clock steps, is least available under pauses and completes
        // the fewest sections under clock steps: three figures, two classes.
        let mut r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 9.0, 5.0], true);
        r.cells[4].availability = Some(0.5);
        r.cells[5].acquire_p99_ms = Some(40.0);
        r.cells[5].sections_per_s = Some(0.25);
        let f = r.figures(2);
        assert_eq!((f.p99_ms, f.p99_class), (Some(40.0), Some(1)));
        assert_eq!((f.availability, f.availability_class), (Some(0.5), Some(0)));
        assert_eq!((f.sections_per_s, f.sections_class), (Some(0.25), Some(1)));
        let rec = r.recommendation();
        assert!(
            rec[0].ends_with(
                "acquire p99 9.0 ms, available 98.0% of the time and 3.00 critical sections \
                 completed per second, all in its worst class (process pauses)."
            ),
            "{rec:?}"
        );
        assert!(
            rec[2].contains(
                "“Lock B” (acquire p99 40 ms under clock steps, available 50.0% of the time \
                 under process pauses and 0.250 critical sections completed per second under \
                 clock steps, each in its worst class)"
            ),
            "{rec:?}"
        );
        let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        let cost = &json["costs"][2];
        assert_eq!(cost["acquire_p99_ms"], 40.0);
        assert_eq!(cost["acquire_p99_class"], "clock-steps");
        assert_eq!(cost["availability"], 0.5);
        assert_eq!(cost["availability_class"], "pauses");
        assert_eq!(cost["sections_per_s_class"], "clock-steps");
        assert_eq!(cost["rank"], 2);
        assert_eq!(json["costs"][0]["rank"], serde_json::Value::Null);
        assert_eq!(json["cells"][5]["sections_per_s"], 0.25);
        let md = r.markdown();
        assert!(
            md.contains("| 2 | 3. Lock B | 0.0% | 40 ms (clock-ste) | 50.0% (pauses) | 0.250/s (clock-ste) |"),
            "{md}"
        );
        assert!(
            md.contains("The safe designs are ranked by acquire p99"),
            "{md}"
        );
        let table = r.table();
        assert!(
            table.lines().any(|l| l.starts_with("   2 3. Lock B")
                && l.contains("40 ms (clock-ste)")
                && l.contains("50.0% (pauses)")),
            "{table}"
        );
        let html = r.html(&[]);
        assert!(
            html.contains("<td class=\"num\" title=\"clock steps\">40 ms (clock-ste)</td>"),
            "{html}"
        );
    }

    #[test]
    fn a_design_with_its_own_workload_says_so_beside_its_name() {
        let mut r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 9.0, 5.0], true);
        assert_eq!(r.own_workload(2), None);
        r.designs[2].workload.think_ms = Some(Spread::Uniform([1000.0, 3000.0]));
        r.designs[2].workload.clients = 3;
        let own = r.own_workload(2).expect("B's workload differs");
        assert_eq!(own, "3 clients, think 1 s to 3 s");
        let rec = r.recommendation();
        assert!(
            rec.iter().any(|s| s
                == "Every design ran the review's workload (2 clients of the counter loop, \
                    think 0 ms to 100 ms, work 50 ms to 200 ms) but “Lock B” (3 clients, think \
                    1 s to 3 s): its costs are not measured as the others' are."),
            "{rec:?}"
        );
        let md = r.markdown();
        assert!(
            md.contains("| 3. Lock B (own workload: 3 clients, think 1 s to 3 s) |"),
            "{md}"
        );
        assert!(
            md.contains("the review's workload: 2 clients of the counter loop"),
            "{md}"
        );
        let table = r.table();
        assert!(
            table.lines().any(|l| l.starts_with("3. Lock B*")),
            "{table}"
        );
        assert!(
            table.contains("* ran its own workload, not the review's:\n  3. Lock B: 3 clients, think 1 s to 3 s\n"),
            "{table}"
        );
        let html = r.html(&[]);
        assert!(
            html.contains(
                "3. Lock B<div class=\"workload\">own workload: 3 clients, think 1 s to 3 s</div>"
            ),
            "{html}"
        );
        let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(
            json["workload_differs"],
            serde_json::json!([[], [], ["clients", "think_ms"]])
        );
        assert_eq!(
            json["designs"][2]["workload"]["think_ms"]["uniform"],
            serde_json::json!([1000.0, 3000.0])
        );
        assert_eq!(json["workload"]["clients"], 2);
    }

    #[test]
    fn every_output_escapes_user_text_and_fits() {
        let r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 9.0, 5.0], true);
        let html = r.html(&[]);
        assert!(!html.contains("<unfenced>"), "raw name in the page");
        assert!(html.contains("Lock A &lt;unfenced&gt;"));
        assert!(html.contains("ledger &amp; &lt;jobs&gt;"));
        assert!(html.contains("<svg class=\"chart\""));
        assert!(html.contains("id=\"matrix\""));
        let md = r.markdown();
        assert!(!md.contains("<unfenced>"), "{md}");
        assert!(md.len() < MARKDOWN_LIMIT);
        let table = r.table();
        for line in table.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
        assert!(
            table.contains("'reviews/ledger review.toml' --seeds 100 --out review.html"),
            "{table}"
        );
        let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(
            json["recommendation"][0].as_str().unwrap(),
            r.recommendation()[0]
        );
    }

    #[test]
    fn a_design_with_unknown_runs_is_never_called_safe() {
        // B (the cheapest) has no violation, but under clock steps 30 of its 100 runs ended
        // unknown; A's fence judged every run.
        let mut r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 9.0, 5.0], true);
        r.cells[5].unknown = 30;
        r.cells[5].ci95 = (0.0, 0.052);
        assert_eq!(r.cells[5].standing(), Standing::Unknown);
        assert_eq!(r.figures(2).standing(), Standing::Unknown);
        assert_eq!(r.safe_by_cost(), [1]);
        let rec = r.recommendation();
        assert!(rec[0].starts_with("Use “Lock A + fence”"), "{rec:?}");
        let b = rec.iter().find(|s| s.starts_with("“Lock B”")).expect("b");
        assert!(
            b.starts_with(
                "“Lock B” is unknown, not safe: 30 of its 200 runs ended unknown (clock steps: \
                 30 of 100)"
            ),
            "{b}"
        );
        assert!(!rec.iter().any(|s| s.contains("Also safe")), "{rec:?}");
        // Every output says how many runs were unknown.
        let table = r.table();
        assert!(table.contains("3. Lock B"), "{table}");
        assert!(table.contains("0%?"), "{table}");
        assert!(table.contains("3. Lock B: clock-ste 30 of 100"), "{table}");
        let md = r.markdown();
        assert!(md.contains("❔ 0%, 30 of 100 runs unknown"), "{md}");
        let html = r.html(&[]);
        assert!(html.contains("<div class=\"unknown\">30 of 100 runs unknown</div>"));
        let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(json["cells"][5]["unknown"], 30);
        assert_eq!(
            json["standing"],
            serde_json::json!(["violated", "safe", "unknown"])
        );
        // With every run of B unknown, the cell says so rather than 0%.
        r.cells[5].unknown = 100;
        assert!(r.table().contains("unknown"), "{}", r.table());
        assert!(r.markdown().contains("❔ unknown, 100 of 100 runs unknown"));
        // A violated design with unknown runs is never named the least bad: only designs
        // whose every run was judged are.
        let mut r = review(&[[12, 1], [0, 2], [0, 3]], &[3.0, 9.0, 5.0], true);
        r.cells[2].unknown = 50;
        r.cells[3].unknown = 50;
        let rec = r.recommendation();
        assert!(
            rec[0].starts_with(
                "No design is safe under every fault class. The least bad is “Lock B”"
            ),
            "{rec:?}"
        );
        assert!(
            rec.iter().any(
                |s| s.starts_with("“Lock A + fence” breaks under clock steps")
                    && s.contains("100 of its 200 runs ended unknown and were not judged")
            ),
            "{rec:?}"
        );
        for cell in &mut r.cells {
            cell.unknown = 10;
        }
        assert!(
            r.recommendation()[0].contains("None can be recommended"),
            "{:?}",
            r.recommendation()
        );
    }

    #[test]
    fn the_caution_names_the_seeds_that_bound_the_rate() {
        assert_eq!(seeds_for(SURE), 2000);
        let r = review(&[[12, 0], [0, 0], [0, 0]], &[3.0, 9.0, 5.0], true);
        assert!(
            r.recommendation()[1].starts_with(
                "100 seeds per class cannot rule out a rate up to 3.7%: run about 2000 seeds"
            ),
            "{:?}",
            r.recommendation()
        );
    }

    #[test]
    fn wrap_keeps_words_within_the_width() {
        let lines = wrap("aa bb cc dddddd e", 5);
        assert_eq!(lines, ["aa bb", "cc", "dddddd", "e"]);
    }
}
