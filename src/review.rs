//! Design reviews (`lockstep review`): candidate lock designs for one job, each swept under
//! each class of fault of the chaos profile alone, so the page can say "breaks under pauses,
//! not under partitions", and which design to use.
//!
//! A review file names the job, the designs (each a scenario file, with key overrides) and
//! the fault classes; [`load`] builds and checks every cell's scenario before anything runs,
//! and [`run`] sweeps each over the same seeds. A cell is the design's text with the review's
//! workload ([`WORKLOAD_KEYS`]: `[review] workload`, else the first design's; unless the design
//! keeps its own), then the job's and the design's keys set (`set`, as `[sweep]` axes set
//! theirs, but a key the file lacks is added), given the default chaos profile when it has
//! none (its own `[[fault]]` list is then dropped, as `sweep --chaos` does), and then the
//! class's weights: every fault kind but the class's off (`chaos.weights`), partitions that
//! drop or hold (`chaos.hold`), clock steps apart from drift and slews (`chaos.clock_kinds`).
//! The figures are
//! [`lockstep_reports::review::Review`], which renders the page and derives the
//! recommendation.
//!
//! ```toml
//! [review]
//! name = "ledger compaction"
//! job = "one compaction at a time over the ledger table"
//! seeds = 500                          # per cell (default 200)
//! classes = ["pauses", "crashes"]      # default: every class
//! workload = { clients = 2, think_ms = { uniform = [0, 100] } }   # every design's
//! set = { "model.ttl_ms" = 10_000 }    # applied to every design
//!
//! [[design]]
//! name = "Redis, unfenced"
//! scenario = "../scenarios/chaos/redis-unfenced.toml"   # relative to the review file
//!
//! [[design]]
//! name = "Redis + INCR fencing"
//! scenario = "../scenarios/chaos/redis-incr-atomic-fenced.toml"
//! keep_workload = true                 # its own file's workload, shown beside its name
//! set = { "model.ttl_ms" = 5_000 }
//! ```

use std::fmt::{self, Write as _};
use std::path::{Component, Path, PathBuf};

use lockstep_check::Validity;
use lockstep_models::Role;
use lockstep_models::StorageMode;
use lockstep_models::family::Tokens;
use lockstep_models::workload::{Counter, Workload as _};
use lockstep_reports::review::{
    ClassInfo, CostOrder, DesignInfo, Example, FORMAT, FencingSupport, FencingValue, Review,
    ReviewCell, ReviewSeeds, Spread, TokenKind, Window, WorkloadInfo, shell_word,
};
use lockstep_sim::Distribution;
use serde::Deserialize;
use toml_edit::{DocumentMut, InlineTable, Item, Table};

use crate::scenario::error::{escaped, plain, shown, toml_key};
use crate::scenario::{Problem, Scenario, ScenarioError, parse, with_chaos};
use crate::stats::wilson;
use crate::sweep::{SweepConfig, SweepTarget, sweep, text_hash};
use crate::sweepmap::{MAX_MAP_SEEDS, Value, parse_key_path, set_key};

/// Seeds per cell when the review file does not say.
pub const DEFAULT_REVIEW_SEEDS: u64 = 200;

/// The most designs a review may hold.
pub const MAX_DESIGNS: usize = 50;

/// A class of faults: one kind of the chaos profile alone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaultClass {
    /// Its name in review files and commands.
    pub name: &'static str,
    /// A column heading of at most 9 characters.
    pub short: &'static str,
    /// What it does, for people.
    pub title: &'static str,
    /// `chaos.weights`: partition, pause, crash, clock, network.
    weights: [u32; 5],
    /// `chaos.hold`, when the class sets it.
    hold: Option<f64>,
    /// `chaos.clock_kinds`: step, slew, strobe, drift, when the class sets them.
    clock_kinds: Option<[u32; 4]>,
}

/// Every fault class, in the matrix's order.
pub const CLASSES: [FaultClass; 7] = [
    FaultClass {
        name: "pauses",
        short: "pause",
        title: "process pauses and host freezes",
        weights: [0, 1, 0, 0, 0],
        hold: None,
        clock_kinds: None,
    },
    FaultClass {
        name: "partitions-drop",
        short: "part-drop",
        title: "partitions (TCP retransmits)",
        weights: [1, 0, 0, 0, 0],
        hold: Some(0.0),
        clock_kinds: None,
    },
    FaultClass {
        name: "partitions-hold",
        short: "part-hold",
        title: "partitions delivered at the heal",
        weights: [1, 0, 0, 0, 0],
        hold: Some(1.0),
        clock_kinds: None,
    },
    FaultClass {
        name: "crashes",
        short: "crash",
        title: "crashes and restarts",
        weights: [0, 0, 1, 0, 0],
        hold: None,
        clock_kinds: None,
    },
    FaultClass {
        name: "clock-steps",
        short: "clk-step",
        title: "wall-clock steps",
        weights: [0, 0, 0, 1, 0],
        hold: None,
        clock_kinds: Some([2, 0, 1, 0]),
    },
    FaultClass {
        name: "drift-slew",
        short: "drift",
        title: "clock drift and slews",
        weights: [0, 0, 0, 1, 0],
        hold: None,
        clock_kinds: Some([0, 1, 0, 1]),
    },
    FaultClass {
        name: "slow-links",
        short: "slow-link",
        title: "slow and lossy links",
        weights: [0, 0, 0, 0, 1],
        hold: None,
        clock_kinds: None,
    },
];

impl FaultClass {
    /// The class named `name`.
    pub fn named(name: &str) -> Option<&'static FaultClass> {
        CLASSES.iter().find(|c| c.name == name)
    }

    /// `text` (a scenario with a `[chaos]` section) with only this class's faults on.
    fn apply(&self, text: &str) -> Result<String, String> {
        let mut doc: DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| e.message().to_string())?;
        let chaos = doc
            .get_mut("chaos")
            .and_then(Item::as_table_like_mut)
            .ok_or("`chaos` is not a table")?;
        let mut weights = InlineTable::new();
        for (key, w) in ["partition", "pause", "crash", "clock", "network"]
            .into_iter()
            .zip(self.weights)
        {
            weights.insert(key, i64::from(w).into());
        }
        chaos.insert("weights", toml_edit::value(weights));
        if let Some(hold) = self.hold {
            chaos.insert("hold", toml_edit::value(hold));
        }
        if let Some(kinds) = self.clock_kinds {
            let mut t = InlineTable::new();
            for (key, w) in ["step", "slew", "strobe", "drift"].into_iter().zip(kinds) {
                t.insert(key, i64::from(w).into());
            }
            chaos.insert("clock_kinds", toml_edit::value(t));
        }
        Ok(doc.to_string())
    }

    fn info(&self) -> ClassInfo {
        ClassInfo {
            name: self.name.to_string(),
            short: self.short.to_string(),
            title: self.title.to_string(),
        }
    }
}

/// The review file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewFile {
    review: ReviewSection,
    #[serde(default)]
    design: Vec<DesignSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewSection {
    name: String,
    #[serde(default)]
    job: String,
    seeds: Option<u64>,
    #[serde(default = "one")]
    from: u64,
    classes: Option<Vec<String>>,
    #[serde(default)]
    cost: CostOrder,
    /// The workload every design runs: `clients`, `think_ms`, `work_ms`.
    workload: Option<toml::Table>,
    #[serde(default)]
    set: toml::Table,
}

fn one() -> u64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DesignSection {
    name: String,
    scenario: PathBuf,
    /// Run the file's own workload rather than the review's.
    #[serde(default)]
    keep_workload: bool,
    #[serde(default)]
    set: toml::Table,
}

/// The `[workload]` keys that make a review's workload: what every design's clients do,
/// unless a design keeps its own. The loop (`kind`) is the first design's, and a design must
/// run it; a loop's own keys and the others (`acquire`, `storage_timeout_ms`, ...) are each
/// design's (a review sets them for all in `review.set`).
pub const WORKLOAD_KEYS: [&str; 3] = ["clients", "think_ms", "work_ms"];

/// A checked review: every cell's scenario, ready to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The review file, as given.
    pub path: PathBuf,
    /// `review.name`.
    pub name: String,
    /// `review.job`.
    pub job: String,
    /// The first seed of every cell.
    pub from: u64,
    /// Seeds per cell.
    pub seeds: u64,
    /// The classes, in column order.
    pub classes: Vec<&'static FaultClass>,
    /// `review.cost`: what makes one safe design cheaper than another.
    pub cost: CostOrder,
    /// The review's workload, as the first design's file runs it with the review's keys
    /// (`review.workload`, then `review.set`).
    pub workload: WorkloadInfo,
    /// The designs, in the file's order.
    pub designs: Vec<PlannedDesign>,
}

/// A design and its cells, one per class.
#[derive(Clone, Debug)]
pub struct PlannedDesign {
    /// Its name.
    pub name: String,
    /// Its scenario file, as found from the review file.
    pub file: PathBuf,
    /// `keep_workload`: its cells run its file's workload, not the review's.
    pub keep_workload: bool,
    /// Per class (in column order): the cell's text and scenario.
    pub cells: Vec<(String, Scenario)>,
}

/// Everything wrong with a review file: each problem once, with its key path in the review
/// file (`design[2].set."model.ttl_ms"`, `review.classes[1]`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ReviewError {
    /// The review file.
    pub file: PathBuf,
    /// The problems, in the file's order; never empty. A message is already fit for a
    /// terminal: paths whole, values cut short, control characters escaped.
    pub problems: Vec<Problem>,
}

impl fmt::Display for ReviewError {
    /// One line per problem: `file[:line]: key.path: message`. Paths (the file's, the key's,
    /// a scenario file's in the message) are never cut; only their control characters are
    /// escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = escaped(&self.file.display().to_string());
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{file}")?;
            if let Some(line) = p.line {
                write!(f, ":{line}")?;
            }
            if !p.path.is_empty() {
                write!(f, ": {}", escaped(&p.path))?;
            }
            write!(f, ": {}", p.message)?;
        }
        Ok(())
    }
}

impl From<ScenarioError> for ReviewError {
    /// The loader's problems of the review file itself (its syntax, its types).
    fn from(e: ScenarioError) -> ReviewError {
        ReviewError {
            file: e.file,
            problems: e
                .problems
                .into_iter()
                .map(|p| Problem {
                    message: said(&p.message),
                    ..p
                })
                .collect(),
        }
    }
}

/// A message of the loader or of the user, fit for a terminal: in the file's words, values
/// cut short, control characters escaped.
fn said(message: &str) -> String {
    shown(&plain(message))
}

/// A path in a message: whole, its control characters escaped.
fn path_said(path: &Path) -> String {
    escaped(&path.display().to_string())
}

/// A problem met in a design's cells, before it is reported: whose key it is, what is wrong,
/// and under which classes.
struct Met {
    /// The key path in the review file that owns it.
    at: String,
    /// What is wrong, fit for a terminal.
    message: String,
    /// The classes (indices into the review's) whose cell showed it.
    classes: Vec<usize>,
}

fn meet(met: &mut Vec<Met>, at: String, message: String, class: usize) {
    match met.iter_mut().find(|m| m.at == at && m.message == message) {
        Some(m) => {
            if !m.classes.contains(&class) {
                m.classes.push(class);
            }
        }
        None => met.push(Met {
            at,
            message,
            classes: vec![class],
        }),
    }
}

/// `design[0]`, `design[0] and design[2]`, `design[0], design[1] and design[3]`.
fn design_list(designs: &[usize]) -> String {
    let names: Vec<String> = designs.iter().map(|d| format!("design[{d}]")).collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Reads and checks a review file and builds every cell; `seeds` overrides its seeds per
/// cell.
///
/// # Errors
/// A [`ReviewError`] naming the review file and, once each, the key path of every problem:
/// the file, a design's scenario file or a key it sets, a key the review sets for every
/// design, or a cell that does not load.
pub fn load(path: &Path, seeds: Option<u64>) -> Result<Plan, ReviewError> {
    let text = crate::files::read_text(path, crate::files::Input::REVIEW).map_err(|e| {
        ReviewError::from(ScenarioError::one(
            path,
            "",
            None,
            format!("cannot read the file: {e}"),
        ))
    })?;
    let file: ReviewFile =
        crate::scenario::deserialize(toml::Deserializer::parse(&text), &text, path)?;
    let mut problems = Vec::new();
    let problem = |problems: &mut Vec<Problem>, at: String, message: String| {
        problems.push(Problem {
            path: at,
            line: None,
            message,
        });
    };
    let r = &file.review;
    let seeds = seeds.or(r.seeds).unwrap_or(DEFAULT_REVIEW_SEEDS);
    if !(1..=MAX_MAP_SEEDS).contains(&seeds) {
        problem(
            &mut problems,
            "review.seeds".into(),
            format!("must be from 1 to {MAX_MAP_SEEDS}, not {seeds}"),
        );
    }
    if let Some(why) = name_problem(&r.name) {
        problem(&mut problems, "review.name".into(), why.into());
    }
    let classes: Vec<&'static FaultClass> = match &r.classes {
        None => CLASSES.iter().collect(),
        Some(names) => {
            let mut found = Vec::new();
            for (i, n) in names.iter().enumerate() {
                match FaultClass::named(n) {
                    Some(c) if found.contains(&c) => {
                        problem(
                            &mut problems,
                            format!("review.classes[{i}]"),
                            format!("`{}` is named twice", said(n)),
                        );
                    }
                    Some(c) => found.push(c),
                    None => problem(
                        &mut problems,
                        format!("review.classes[{i}]"),
                        format!(
                            "no fault class named `{}` (classes: {})",
                            said(n),
                            CLASSES.map(|c| c.name).join(", ")
                        ),
                    ),
                }
            }
            if names.is_empty() {
                problem(
                    &mut problems,
                    "review.classes".into(),
                    "names no class".into(),
                );
            }
            found
        }
    };
    if file.design.is_empty() {
        problem(
            &mut problems,
            "design".into(),
            "the review has no design: add [[design]] entries with a name and a scenario file"
                .into(),
        );
    }
    if file.design.len() > MAX_DESIGNS {
        problem(
            &mut problems,
            "design".into(),
            format!("at most {MAX_DESIGNS} designs, not {}", file.design.len()),
        );
    }
    let job_set = settings(&r.set, "review.set", &mut |at, m| {
        problem(&mut problems, at, m)
    });
    // The review's workload: its own table's keys, else the first design's (read below).
    let mut workload: Option<Vec<Given>> = r
        .workload
        .as_ref()
        .map(|table| review_workload(table, &mut |at, m| problem(&mut problems, at, m)));
    let explicit = workload.is_some();
    // The first design's file with the review's workload and `set`: the review's workload
    // as it runs, and its loop.
    let mut review_text: Option<(String, PathBuf)> = None;
    let mut review_kind: Option<String> = None;
    // The problems of the review's own `set` keys, met in the designs' cells: each reported
    // once, at its key, naming the designs it was met in, before the designs' own.
    let mut shared: Vec<(Met, Vec<usize>)> = Vec::new();
    let review_end = problems.len();
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut designs = Vec::new();
    for (i, d) in file.design.iter().enumerate() {
        if let Some(why) = name_problem(&d.name) {
            problem(&mut problems, format!("design[{i}].name"), why.into());
        } else if let Some(j) = file.design[..i]
            .iter()
            .position(|e| e.name.trim() == d.name.trim())
        {
            problem(
                &mut problems,
                format!("design[{i}].name"),
                format!("`{}` is the name of design[{j}] too", said(&d.name)),
            );
        }
        let set = settings(&d.set, &format!("design[{i}].set"), &mut |at, m| {
            problem(&mut problems, at, m);
        });
        let scenario_path = tidy(&dir.join(&d.scenario));
        let base = match crate::files::read_text(&scenario_path, crate::files::Input::SCENARIO) {
            Ok(t) => t,
            Err(e) => {
                problem(
                    &mut problems,
                    format!("design[{i}].scenario"),
                    format!(
                        "cannot read {}: {}",
                        path_said(&scenario_path),
                        said(&e.to_string())
                    ),
                );
                continue;
            }
        };
        if let Err(e) = base.parse::<DocumentMut>() {
            let line = e.span().map(|s| base[..s.start].matches('\n').count() + 1);
            problem(
                &mut problems,
                format!("design[{i}].scenario"),
                format!(
                    "{}{}: {}",
                    path_said(&scenario_path),
                    line.map_or(String::new(), |l| format!(":{l}")),
                    said(e.message())
                ),
            );
            continue;
        }
        let given = workload.get_or_insert_with(|| first_workload(&base));
        if i == 0 {
            let mut t = apply_workload(&base, given).unwrap_or_else(|_| base.clone());
            for (_, key, value) in &job_set {
                t = set_value(&t, key, value).unwrap_or(t);
            }
            review_kind = kind_of(&t);
            review_text = Some((t, scenario_path.clone()));
        }
        // A design runs the review's loop, or keeps its own workload, or chose another loop
        // in its `set`.
        let runs_review = !d.keep_workload;
        if runs_review && !set.iter().any(|(_, key, _)| covers(key, "workload.kind")) {
            let mut t = base.clone();
            for (_, key, value) in job_set.iter().chain(&set) {
                t = set_value(&t, key, value).unwrap_or(t);
            }
            if let (Some(kind), Some(review)) = (kind_of(&t), &review_kind) {
                if kind != *review {
                    problem(
                        &mut problems,
                        format!("design[{i}].scenario"),
                        format!(
                            "{}: workload.kind: runs the `{}` loop, not the review's `{}` (the \
                             first design's): every design runs the review's workload; give \
                             this design `keep_workload = true` to run its own",
                            path_said(&scenario_path),
                            said(&kind),
                            said(review)
                        ),
                    );
                    continue;
                }
            }
        }
        // Every problem is met at most once per class; a key set by both the review and the
        // design is the design's (set last), and `set` keys come after the review's workload.
        let mut met: Vec<Met> = Vec::new();
        let mut text = base;
        if runs_review {
            // A key of the review's workload is a value: what cannot take it is the design's
            // file (a `workload` that is not a table).
            if let Err(why) = apply_workload(&text, given).map(|t| text = t) {
                meet(
                    &mut met,
                    format!("design[{i}].scenario"),
                    format!("{}: {}", path_said(&scenario_path), said(&why)),
                    usize::MAX,
                );
            }
        }
        for (key_at, key, value) in job_set.iter().chain(&set) {
            // A key that cannot be set is left out, so that the cells still show the other
            // problems.
            match set_value(&text, key, value) {
                Ok(t) => text = t,
                Err(why) => meet(&mut met, key_at.clone(), said(&why), usize::MAX),
            }
        }
        // The keys that own a problem the loader finds at or under them, the last set last:
        // the review's workload (its own table's keys), then the review's and the design's
        // `set`.
        let owners: Vec<(&str, &str)> = given
            .iter()
            .filter(|_| runs_review)
            .filter_map(|g| g.at.as_deref().map(|at| (at, g.key.as_str())))
            .chain(
                job_set
                    .iter()
                    .chain(&set)
                    .map(|(at, key, _)| (at.as_str(), key.as_str())),
            )
            .collect();
        let mut cells = Vec::new();
        let has_chaos = text
            .parse::<DocumentMut>()
            .is_ok_and(|doc| doc.contains_key("chaos"));
        let mut chaos_ok = true;
        if !has_chaos {
            match with_chaos(&text, &scenario_path, "default") {
                Ok(t) => text = t,
                Err(e) => {
                    chaos_ok = false;
                    for p in e.problems {
                        meet(
                            &mut met,
                            format!("design[{i}].scenario"),
                            in_scenario(&scenario_path, &p),
                            usize::MAX,
                        );
                    }
                }
            }
        }
        if chaos_ok {
            for (c, class) in classes.iter().enumerate() {
                let cell = class
                    .apply(&text)
                    .map_err(|why| {
                        vec![Problem {
                            path: String::new(),
                            line: None,
                            message: why,
                        }]
                    })
                    .and_then(|t| match parse(&t, &scenario_path) {
                        Ok(s) => Ok((t, s)),
                        Err(e) => Err(e.problems),
                    });
                match cell {
                    Ok(cell) => cells.push(cell),
                    Err(found) => {
                        for p in found {
                            // The key the review or the design set that the problem is about,
                            // if any: the last one set wins.
                            let owner = owners.iter().rev().find(|(_, key)| covers(key, &p.path));
                            let (at, message) = match owner {
                                Some((key_at, key)) if *key == p.path => {
                                    (key_at.to_string(), said(&p.message))
                                }
                                Some((key_at, _)) => (
                                    key_at.to_string(),
                                    format!("{}: {}", escaped(&p.path), said(&p.message)),
                                ),
                                None if runs_review && covers("workload", &p.path) => (
                                    format!("design[{i}].scenario"),
                                    format!(
                                        "{} (with the review's workload: `keep_workload = \
                                         true` runs the design's own)",
                                        in_scenario(&scenario_path, &p)
                                    ),
                                ),
                                None => (
                                    format!("design[{i}].scenario"),
                                    in_scenario(&scenario_path, &p),
                                ),
                            };
                            meet(&mut met, at, message, c);
                        }
                    }
                }
            }
        }
        let failed = !met.is_empty();
        for mut m in met {
            // A problem met under some classes only says which.
            if !m.classes.contains(&usize::MAX) && m.classes.len() < classes.len() {
                m.classes.sort_unstable();
                let names: Vec<&str> = m.classes.iter().map(|&c| classes[c].name).collect();
                let _ = write!(m.message, " (under {})", names.join(", "));
            }
            if m.at.starts_with("review.") {
                match shared
                    .iter_mut()
                    .find(|(s, _)| s.at == m.at && s.message == m.message)
                {
                    Some((_, designs)) => designs.push(i),
                    None => shared.push((m, vec![i])),
                }
            } else {
                problem(&mut problems, m.at, m.message);
            }
        }
        if cells.len() == classes.len() && !failed {
            designs.push(PlannedDesign {
                name: d.name.clone(),
                file: scenario_path,
                keep_workload: d.keep_workload,
                cells,
            });
        }
    }
    let shared = shared.into_iter().map(|(m, in_designs)| {
        let which = if in_designs.len() == file.design.len() && in_designs.len() > 1 {
            "every design".to_string()
        } else {
            design_list(&in_designs)
        };
        Problem {
            path: m.at,
            line: None,
            message: format!("{} (in {which})", m.message),
        }
    });
    problems.splice(review_end..review_end, shared);
    if problems.is_empty() {
        if let Err(message) = equal_window(&mut designs) {
            problem(&mut problems, "review".into(), message);
        }
    }
    // The review's workload, as the loader reads it from the first design's file with the
    // review's keys.
    let mut workload_info = None;
    if problems.is_empty() {
        if let Some((text, file)) = &review_text {
            match parse(text, file) {
                Ok(s) => workload_info = Some(workload_of(&s)),
                Err(e) => {
                    for p in e.problems {
                        problem(
                            &mut problems,
                            if explicit {
                                "review.workload".to_string()
                            } else {
                                "design[0].scenario".to_string()
                            },
                            format!(
                                "the review's workload on the first design's file (before its \
                                 own set): {}",
                                in_scenario(file, &p)
                            ),
                        );
                    }
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(ReviewError {
            file: path.to_path_buf(),
            problems,
        });
    }
    let Some(workload) = workload_info else {
        unreachable!("a review with no problem has a first design whose workload loaded")
    };
    Ok(Plan {
        path: path.to_path_buf(),
        name: r.name.clone(),
        job: r.job.clone(),
        from: r.from,
        seeds,
        classes,
        cost: r.cost,
        workload,
        designs,
    })
}

/// A key of the review's workload, as every design that runs it gets it.
#[derive(Clone, Debug)]
struct Given {
    /// Its key path in the review file (`review.workload.think_ms`) when the review's own
    /// table gives it; `None` when it is the first design's.
    at: Option<String>,
    /// Its key path in a scenario file: `workload.think_ms`.
    key: String,
    /// Its value; `None`: the loader's default (the key is taken out of a design's file).
    value: Option<toml_edit::Value>,
}

/// The review's own workload table (`[review.workload]`): each of [`WORKLOAD_KEYS`], as it
/// gives it or the loader's default. Any other key is a problem.
fn review_workload(table: &toml::Table, problem: &mut impl FnMut(String, String)) -> Vec<Given> {
    // The TOML reader hands a date given for the whole table as a table of its own key.
    if table.contains_key("$__toml_private_datetime") {
        problem(
            "review.workload".into(),
            "a date or time is not a value this key takes: it takes a table of [workload] keys \
             (clients, think_ms, work_ms)"
                .into(),
        );
        return Vec::new();
    }
    for key in table.keys() {
        if !WORKLOAD_KEYS.contains(&key.as_str()) {
            problem(
                format!("review.workload.{}", toml_key(key)),
                format!(
                    "not a key of a review's workload ({}); the loop and the other [workload] \
                     keys are each design's own (set one for every design in review.set)",
                    WORKLOAD_KEYS.join(", ")
                ),
            );
        }
    }
    WORKLOAD_KEYS
        .iter()
        .map(|key| Given {
            at: Some(format!("review.workload.{key}")),
            key: format!("workload.{key}"),
            value: table.get(*key).and_then(|v| match v {
                toml::Value::Datetime(_) => {
                    problem(
                        format!("review.workload.{key}"),
                        "a date or time is not a value this key takes".into(),
                    );
                    None
                }
                v => v.to_string().parse::<toml_edit::Value>().ok(),
            }),
        })
        .collect()
}

/// The workload of the first design's file `text`: its [`WORKLOAD_KEYS`] as written, or the
/// loader's default for a key it does not give.
fn first_workload(text: &str) -> Vec<Given> {
    let doc = text.parse::<DocumentMut>().ok();
    let section = doc
        .as_ref()
        .and_then(|d| d.get("workload"))
        .and_then(Item::as_table_like);
    WORKLOAD_KEYS
        .iter()
        .map(|key| Given {
            at: None,
            key: format!("workload.{key}"),
            value: section
                .and_then(|t| t.get(key))
                .and_then(|item| item.clone().into_value().ok())
                .map(|mut v| {
                    v.decor_mut().clear();
                    v
                }),
        })
        .collect()
}

/// `text` with the review's workload `given`.
fn apply_workload(text: &str, given: &[Given]) -> Result<String, String> {
    let mut text = text.to_string();
    for g in given {
        text = put(&text, &g.key, g.value.clone())?;
    }
    Ok(text)
}

/// The loop `text`'s `[workload]` names (`workload.kind`, the counter loop when it names
/// none); `None` when it is not a string, which the loader refuses.
fn kind_of(text: &str) -> Option<String> {
    let doc = text.parse::<DocumentMut>().ok()?;
    match doc.get("workload") {
        None => Some(Counter::KIND.to_string()),
        Some(w) => match w.as_table_like()?.get("kind") {
            None => Some(Counter::KIND.to_string()),
            Some(k) => k.as_str().map(str::to_string),
        },
    }
}

/// The workload cell `s` runs, as a review's page tells it.
fn workload_of(s: &Scenario) -> WorkloadInfo {
    let w = s.system.workload();
    WorkloadInfo {
        kind: w.kind.kind().to_string(),
        clients: s.system.layout().with(|r| r == Role::Client).len() as u32,
        // A scheduled job waits for its tick: it takes no think time.
        think_ms: (!w.is_cron()).then(|| spread(&w.think)),
        work_ms: spread(&w.work),
    }
}

/// A distribution of durations in milliseconds.
fn spread(d: &Distribution) -> Spread {
    let ms = |d: lockstep_sim::Dur| d.as_nanos() as f64 / 1e6;
    match *d {
        Distribution::Constant(v) => Spread::Constant(ms(v)),
        Distribution::Uniform { lo, hi } => Spread::Uniform([ms(lo), ms(hi)]),
        Distribution::Exponential { min, mean } => Spread::Exponential {
            min: ms(min),
            mean: ms(mean),
        },
        Distribution::Pareto {
            min,
            alpha_milli,
            max,
        } => Spread::Pareto {
            min: ms(min),
            alpha: f64::from(alpha_milli) / 1000.0,
            max: ms(max),
        },
    }
}

/// The run length and fault window of cell `s`.
fn window_of(s: &Scenario) -> Window {
    let chaos = s.chaos.as_ref();
    let ms = |ns: u64| ns.div_ceil(1_000_000);
    let duration_ns = s.duration.as_nanos();
    Window {
        duration_ms: ms(duration_ns),
        fault_start_ms: ms(chaos.map_or(0, |c| c.start.as_nanos())),
        quiet_tail_ms: ms(chaos.map_or(0, |c| duration_ns - c.quiet_from.as_nanos())),
    }
}

/// Gives every cell of every design the same run: the longest run, the latest fault start and
/// the longest quiet tail of any cell, so that every design meets faults over the same window
/// and recovers over the same tail (a design's own tail, derived from its TTL, would give
/// each another share of fault-free time). Each is at least the design's own, so a design's
/// recovery bound still fits in its tail.
fn equal_window(designs: &mut [PlannedDesign]) -> Result<(), String> {
    let all = || {
        designs
            .iter()
            .flat_map(|d| d.cells.iter().map(|(_, s)| window_of(s)))
    };
    let Some(w) = all().reduce(|a, b| Window {
        duration_ms: a.duration_ms.max(b.duration_ms),
        fault_start_ms: a.fault_start_ms.max(b.fault_start_ms),
        quiet_tail_ms: a.quiet_tail_ms.max(b.quiet_tail_ms),
    }) else {
        return Ok(());
    };
    // The longest tail beside the latest start may leave the longest run no fault window:
    // lengthen the run to keep the shortest window any design had.
    let window_ms = |w: &Window| {
        w.duration_ms
            .saturating_sub(w.fault_start_ms)
            .saturating_sub(w.quiet_tail_ms)
    };
    let least = all().map(|w| window_ms(&w)).min().unwrap_or(0);
    let w = Window {
        duration_ms: w
            .duration_ms
            .max(w.fault_start_ms + w.quiet_tail_ms + least),
        ..w
    };
    for d in designs.iter_mut() {
        for (text, scenario) in &mut d.cells {
            if window_of(scenario) == w {
                continue;
            }
            let mut t = text.clone();
            for (key, v) in [
                ("scenario.duration_ms", w.duration_ms),
                ("chaos.start_ms", w.fault_start_ms),
                ("chaos.quiet_tail_ms", w.quiet_tail_ms),
            ] {
                let v = i64::try_from(v).map_err(|_| format!("{key} {v} is too large"))?;
                t = set_value(&t, key, &Value::Integer(v))?;
            }
            let s = parse(&t, &d.file).map_err(|e| {
                format!(
                    "{} with every design's run ({} ms, faults from {} ms, a quiet tail of {} \
                     ms): {e}",
                    d.name, w.duration_ms, w.fault_start_ms, w.quiet_tail_ms
                )
            })?;
            *text = t;
            *scenario = s;
        }
    }
    Ok(())
}

/// What is wrong with a review's or design's name, if anything: it names the review on every
/// page and a design in every command and sentence.
fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("must not be empty")
    } else if name.trim().is_empty() {
        Some("must not be only whitespace")
    } else {
        None
    }
}

/// Whether the key path `set` (as a `set` table writes it) is the key at `found` (as the
/// loader names it), or a table around it, or a key inside it.
fn covers(set: &str, found: &str) -> bool {
    let inside = |outer: &str, inner: &str| {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    !found.is_empty() && (set == found || inside(set, found) || inside(found, set))
}

/// A problem of a design's scenario file, as the review ran it: the file whole, then the key
/// and what is wrong.
fn in_scenario(file: &Path, p: &Problem) -> String {
    if p.path.is_empty() {
        format!("{}: {}", path_said(file), said(&p.message))
    } else {
        format!(
            "{}: {}: {}",
            path_said(file),
            escaped(&p.path),
            said(&p.message)
        )
    }
}

/// The `set` table's keys and values, each with the key path that names it in errors
/// (`design[0].set."model.ttl_ms"`).
fn settings(
    set: &toml::Table,
    at: &str,
    problem: &mut impl FnMut(String, String),
) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    // The TOML reader hands a date given for the whole table as a table of its own key.
    if set.contains_key("$__toml_private_datetime") {
        problem(
            at.to_string(),
            "a date or time is not a value this key takes: it takes a table of key paths and \
             values"
                .into(),
        );
        return out;
    }
    for (key, value) in set {
        let key_at = format!("{at}.{}", toml_key(key));
        let v = match value {
            toml::Value::Integer(i) => Value::Integer(*i),
            toml::Value::Float(f) => Value::Float(*f),
            toml::Value::Boolean(b) => Value::Bool(*b),
            toml::Value::String(s) => Value::String(s.clone()),
            _ => {
                problem(key_at, "must be a number, a boolean or a string".into());
                continue;
            }
        };
        if let Err(why) = parse_key_path(key) {
            problem(key_at, said(&why));
            continue;
        }
        out.push((key_at, key.clone(), v));
    }
    out
}

/// `text` with the key at `key` set to `value`. Without an index in the path, tables and the
/// key are added when the file lacks them (the loader then checks they are keys it knows);
/// with one, the array entry must exist.
fn set_value(text: &str, key: &str, value: &Value) -> Result<String, String> {
    let path = parse_key_path(key)?;
    if path.iter().any(|s| s.index.is_some()) {
        return set_key(text, &path, value);
    }
    edit(text, key, |table, last| {
        if table.get(last).is_some_and(|i| i.is_table_like()) {
            return Err(format!("`{key}` is a table, not a value"));
        }
        table.insert(last, toml_edit::value(value.toml()));
        Ok(())
    })
}

/// `text` with the key at `key` (no index) set to `value`, whatever it was (a distribution's
/// table too), or taken out when `value` is `None`, so that the loader's default applies: a
/// key of the review's workload, set as [`set_value`] sets a key.
fn put(text: &str, key: &str, value: Option<toml_edit::Value>) -> Result<String, String> {
    edit(text, key, |table, last| {
        match value {
            Some(v) => {
                table.insert(last, Item::Value(v));
            }
            None => {
                table.remove(last);
            }
        }
        Ok(())
    })
}

/// `text` with `change` made to the table that holds the key at `key` (a path without an
/// index), given that table and the key's last part; the tables on the way are added when
/// the file lacks them.
fn edit(
    text: &str,
    key: &str,
    change: impl FnOnce(&mut dyn toml_edit::TableLike, &str) -> Result<(), String>,
) -> Result<String, String> {
    let path = parse_key_path(key)?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.message().to_string())?;
    let (last, tables) = path.split_last().ok_or("an empty key")?;
    let mut table = doc.as_table_mut() as &mut dyn toml_edit::TableLike;
    let mut walked = String::new();
    for seg in tables {
        if seg.index.is_some() {
            return Err(format!("`{key}` names an array entry"));
        }
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(&seg.key);
        if !table.contains_key(&seg.key) {
            let mut t = Table::new();
            t.set_implicit(true);
            table.insert(&seg.key, Item::Table(t));
        }
        table = table
            .get_mut(&seg.key)
            .and_then(Item::as_table_like_mut)
            .ok_or_else(|| format!("`{walked}` is not a table"))?;
    }
    change(table, &last.key)?;
    Ok(doc.to_string())
}

/// `path` without `.` and with `dir/..` pairs folded, so a review's files read as the
/// repository's (`reviews/../scenarios/chaos/redis-unfenced.toml` is
/// `scenarios/chaos/redis-unfenced.toml`).
fn tidy(path: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out.iter().collect()
}

/// The cell of design `design` (1-based index, or its name) under class `class`: its
/// scenario text, as `lockstep review FILE --scenario DESIGN/CLASS` prints it.
///
/// # Errors
/// The design or the class is not in the review, in words.
pub fn cell_text<'p>(plan: &'p Plan, design: &str, class: &str) -> Result<&'p str, String> {
    let d = match design.parse::<usize>() {
        Ok(n) if (1..=plan.designs.len()).contains(&n) => n - 1,
        Ok(n) => {
            return Err(format!(
                "the review has designs 1 to {}, not {n}",
                plan.designs.len()
            ));
        }
        Err(_) => plan
            .designs
            .iter()
            .position(|d| d.name == design)
            .ok_or_else(|| format!("the review has no design named `{design}`"))?,
    };
    let c = plan
        .classes
        .iter()
        .position(|c| c.name == class)
        .ok_or_else(|| {
            format!(
                "the review has no fault class `{class}` (its classes: {})",
                plan.classes
                    .iter()
                    .map(|c| c.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
    Ok(&plan.designs[d].cells[c].0)
}

/// Runs every cell of `plan` over its seeds on `jobs` threads, and explains each broken
/// design's first violation under the class that broke it most. The review is the same for any number of jobs. `observe` is
/// called after each cell with the cells done and the cells in all.
///
/// # Panics
/// If a run panics (a harness bug, see [`run`](crate::run())).
pub fn run(plan: &Plan, jobs: usize, mut observe: impl FnMut(usize, usize)) -> Review {
    let config = SweepConfig {
        from: plan.from,
        count: plan.seeds,
        shard: None,
        jobs: jobs.max(1),
        check_determinism: false,
    };
    let total = plan.designs.len() * plan.classes.len();
    let mut cells = Vec::with_capacity(total);
    for (d, design) in plan.designs.iter().enumerate() {
        for (c, (text, scenario)) in design.cells.iter().enumerate() {
            let target = SweepTarget {
                path: design.file.clone(),
                scenario: scenario.clone(),
                text_hash: text_hash(text),
            };
            // The costs are measured over each run's fault window (the same for every design:
            // `equal_window`): the waits begun in it, pooled; the time and the sections of the
            // checker's metrics, read by key from the sweep's tally.
            let mut waits = crate::stats::Histogram::new();
            let mut first: Option<(u64, u64)> = None;
            let s = sweep(&target, &config, |o| {
                let begun = match &o.fault_window {
                    Some((_, begun)) => begun,
                    None => &o.acquire_latencies_ns,
                };
                for &ns in begun {
                    waits.add(ns);
                }
                if o.judged == Validity::Invalid && first.is_none_or(|(p, _)| o.position < p) {
                    first = Some((o.position, o.seed));
                }
            });
            let [unavailable_ns, run_ns, sections] = if s.metrics.0.contains_key("fault_window_ns")
            {
                [
                    "fault_unavailable_ns",
                    "fault_window_ns",
                    "fault_cs_completed",
                ]
            } else {
                ["unavailable_ns", "run_ns", "cs_completed"]
            }
            .map(|key| s.metrics.get(key).total);
            let (invalid, unknown) = (s.verdict_counts.invalid, s.verdict_counts.unknown);
            cells.push(ReviewCell {
                design: d,
                class: c,
                runs: s.runs,
                invalid,
                unknown,
                // A run that ended unknown says nothing of the rate: the interval is over the
                // runs judged.
                ci95: wilson(invalid, s.runs.saturating_sub(unknown)).unwrap_or((0.0, 1.0)),
                double_holders: s.metrics.runs_with("double_holders"),
                stale_accepted: s.metrics.runs_with("stale_accepted"),
                lost_updates: s.metrics.runs_with("lost_updates"),
                token_order: s.metrics.runs_with("token_order"),
                no_recovery: s.violations.no_recovery,
                acquire_p99_ms: waits.quantile(990).map(|ns| ns as f64 / 1e6),
                availability: (run_ns > 0)
                    .then(|| 1.0 - unavailable_ns.min(run_ns) as f64 / run_ns as f64),
                sections_per_s: (run_ns > 0).then(|| sections as f64 * 1e9 / run_ns as f64),
                first_invalid: first.map(|(_, seed)| seed),
                digest: format!("{:016x}", s.digest),
            });
            observe(cells.len(), total);
        }
    }
    let file = plan.path.display().to_string();
    let mut examples = Vec::new();
    for (d, design) in plan.designs.iter().enumerate() {
        // The class that broke it most (the recommendation's), the earlier column on a tie:
        // every cell ran the same seeds, so the most violations is the highest rate.
        let row = &cells[d * plan.classes.len()..(d + 1) * plan.classes.len()];
        let Some((c, seed)) = row
            .iter()
            .enumerate()
            .filter_map(|(c, cell)| cell.first_invalid.map(|s| (c, s, cell.invalid)))
            .max_by(|a, b| a.2.cmp(&b.2).then(b.0.cmp(&a.0)))
            .map(|(c, s, _)| (c, s))
        else {
            continue;
        };
        let scenario = &design.cells[c].1;
        let r = crate::run(scenario, seed, false);
        let report =
            crate::suite::run_report(&design.file.display().to_string(), &scenario.name, &r);
        examples.push(Example {
            design: d,
            class: c,
            seed,
            explanations: report.explanations,
            reproduce: replay(&file, d, plan.classes[c].name, seed),
        });
    }
    Review {
        format: FORMAT.to_string(),
        name: plan.name.clone(),
        job: plan.job.clone(),
        file,
        seeds: ReviewSeeds {
            from: plan.from,
            count: plan.seeds,
        },
        cost: plan.cost,
        workload: plan.workload.clone(),
        classes: plan.classes.iter().map(|c| c.info()).collect(),
        designs: plan
            .designs
            .iter()
            .map(|d| {
                let s = &d.cells[0].1;
                let label = s.system.describe();
                let fencing = fencing_support(s, &label.storage);
                DesignInfo {
                    name: d.name.clone(),
                    family: label.family.to_string(),
                    system: label.system,
                    storage: label.storage,
                    property: s.expect.property.to_string(),
                    file: d.file.display().to_string(),
                    fencing,
                    window: window_of(s),
                    workload: workload_of(s),
                    keep_workload: d.keep_workload,
                }
            })
            .collect(),
        cells,
        examples,
    }
}

/// The command that replays seed `seed` of design `d` (0-based) under class `class`: the
/// cell's scenario written to a file by `review --scenario`, then run. The file is what the
/// run names in its own reproduce line, so that line runs too (a scenario piped to `run -`
/// could not be named again).
pub fn replay(review_file: &str, d: usize, class: &str, seed: u64) -> String {
    let cell = format!("review-{}-{class}.toml", d + 1);
    format!(
        "lockstep review {} --scenario {}/{class} > {cell} && lockstep run {cell} --seed {seed}",
        shell_word(review_file),
        d + 1,
    )
}

/// What the family of scenario `s` offers against a holder that lost the lock, and what `s`
/// uses, as the family declares them (`Family::FENCING`, `Family::tokens`, its resource
/// mode's keys); `storage` is its label's storage: a storage node's mode, else the
/// service's own.
fn fencing_support(s: &Scenario, storage: &str) -> FencingSupport {
    let kind = s.system.kind();
    let family = crate::families::all().iter().find(|f| f.kind() == kind);
    FencingSupport {
        family_name: s.system.family_name().to_string(),
        tokens: match s.system.tokens() {
            Tokens::None => TokenKind::None,
            Tokens::Ordered { .. } => TokenKind::Ordered,
            Tokens::Random => TokenKind::Random,
        },
        storage_mode: StorageMode::ALL
            .iter()
            .any(|(name, _)| *name == storage)
            .then(|| storage.to_string()),
        offers: family
            .map(|f| {
                f.fencing()
                    .iter()
                    .map(|v| FencingValue {
                        name: v.name.to_string(),
                        what: v.what.to_string(),
                        ordered: v.ordered,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        guard_keys: family
            .filter(|f| f.resource_mode().is_some())
            .map(|f| f.resource_keys().iter().map(|k| k.to_string()).collect())
            .unwrap_or_default(),
    }
}

/// The timeline of each example of `review` (parallel to its `examples`), as SVG, for the
/// HTML page: each run again, with its events.
pub fn timelines(plan: &Plan, review: &Review) -> Vec<Option<String>> {
    review
        .examples
        .iter()
        .map(|e| {
            let scenario = &plan.designs.get(e.design)?.cells.get(e.class)?.1;
            let (_, t) = crate::timeline::of_seed(scenario, e.seed);
            Some(lockstep_reports::timeline::svg(&t))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_turns_every_other_kind_off() {
        let text = "[chaos]\nprofile = \"default\"\n\n[chaos.weights]\npause = 9\n";
        let out = FaultClass::named("clock-steps")
            .unwrap()
            .apply(text)
            .unwrap();
        assert!(
            out.contains(
                "weights = { partition = 0, pause = 0, crash = 0, clock = 1, network = 0 }"
            ),
            "{out}"
        );
        assert!(
            out.contains("clock_kinds = { step = 2, slew = 0, strobe = 1, drift = 0 }"),
            "{out}"
        );
        let out = FaultClass::named("partitions-hold")
            .unwrap()
            .apply(text)
            .unwrap();
        assert!(out.contains("hold = 1.0"), "{out}");
    }

    #[test]
    fn set_value_adds_missing_tables_and_keys() {
        let t = set_value("[model]\nttl_ms = 1\n", "model.ttl_ms", &Value::Integer(5)).unwrap();
        assert!(t.contains("ttl_ms = 5"), "{t}");
        let t = set_value(
            "[model]\nttl_ms = 1\n",
            "workload.clients",
            &Value::Integer(3),
        )
        .unwrap();
        assert!(t.contains("[workload]\nclients = 3"), "{t}");
        assert_eq!(
            set_value("[model]\nttl_ms = 1\n", "model", &Value::Integer(3)).unwrap_err(),
            "`model` is a table, not a value"
        );
        assert_eq!(
            set_value(
                "[model]\nttl_ms = 1\n",
                "model.ttl_ms.x",
                &Value::Integer(3)
            )
            .unwrap_err(),
            "`model.ttl_ms` is not a table"
        );
    }

    #[test]
    fn tidy_folds_parent_steps() {
        assert_eq!(
            tidy(Path::new("reviews/../scenarios/./chaos/x.toml")),
            Path::new("scenarios/chaos/x.toml")
        );
        assert_eq!(tidy(Path::new("../x.toml")), Path::new("../x.toml"));
    }
}
