//! Design reviews (`lockstep review`): candidate lock designs for one job, each swept under
//! each class of fault of the chaos profile alone, so the page can say "breaks under pauses,
//! not under partitions", and which design to use.
//!
//! A review file names the job, the designs (each a scenario file, with key overrides) and
//! the fault classes; [`load`] builds and checks every cell's scenario before anything runs,
//! and [`run`] sweeps each over the same seeds. A cell is the design's text with the job's and
//! the design's keys set (`set`, as `[sweep]` axes set theirs, but a key the file lacks is
//! added), given the default chaos profile when it has none (its own `[[fault]]` list is then
//! dropped, as `sweep --chaos` does), and then the class's weights: every fault kind but the
//! class's off (`chaos.weights`), partitions that drop or hold (`chaos.hold`), clock steps apart
//! from drift and slews (`chaos.clock_kinds`). The figures are
//! [`lockstep_reports::review::Review`], which renders the page and derives the
//! recommendation.
//!
//! ```toml
//! [review]
//! name = "ledger compaction"
//! job = "one compaction at a time over the ledger table"
//! seeds = 500                          # per cell (default 200)
//! classes = ["pauses", "crashes"]      # default: every class
//! set = { "model.ttl_ms" = 10_000 }    # applied to every design
//!
//! [[design]]
//! name = "Redis, unfenced"
//! scenario = "../scenarios/chaos/redis-unfenced.toml"   # relative to the review file
//!
//! [[design]]
//! name = "Redis + INCR fencing"
//! scenario = "../scenarios/chaos/redis-incr-atomic-fenced.toml"
//! set = { "workload.clients" = 3 }
//! ```

use std::path::{Component, Path, PathBuf};

use lockstep_check::Validity;
use lockstep_reports::review::{
    ClassInfo, CostOrder, DesignInfo, Example, FORMAT, Review, ReviewCell, ReviewSeeds, shell_word,
};
use serde::Deserialize;
use toml_edit::{DocumentMut, InlineTable, Item, Table};

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
        title: "process pauses",
        weights: [0, 1, 0, 0, 0],
        hold: None,
        clock_kinds: None,
    },
    FaultClass {
        name: "partitions-drop",
        short: "part-drop",
        title: "partitions that drop",
        weights: [1, 0, 0, 0, 0],
        hold: Some(0.0),
        clock_kinds: None,
    },
    FaultClass {
        name: "partitions-hold",
        short: "part-hold",
        title: "partitions that hold (TCP)",
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
    #[serde(default)]
    set: toml::Table,
}

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
    /// Per class (in column order): the cell's text and scenario.
    pub cells: Vec<(String, Scenario)>,
}

/// Reads and checks a review file and builds every cell; `seeds` overrides its seeds per
/// cell.
///
/// # Errors
/// A [`ScenarioError`] naming the review file and the key path of every problem: the file,
/// a design's scenario file or a key it sets, or a cell that does not load.
pub fn load(path: &Path, seeds: Option<u64>) -> Result<Plan, ScenarioError> {
    let text = crate::files::read_text(path, crate::files::Input::REVIEW)
        .map_err(|e| ScenarioError::one(path, "", None, format!("cannot read the file: {e}")))?;
    let file: ReviewFile =
        crate::scenario::deserialize(toml::Deserializer::parse(&text), &text, path)?;
    let mut problems = Vec::new();
    let mut problem = |at: String, message: String| {
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
            "review.seeds".into(),
            format!("must be from 1 to {MAX_MAP_SEEDS}, not {seeds}"),
        );
    }
    let classes: Vec<&'static FaultClass> = match &r.classes {
        None => CLASSES.iter().collect(),
        Some(names) => {
            let mut found = Vec::new();
            for (i, n) in names.iter().enumerate() {
                match FaultClass::named(n) {
                    Some(c) if found.contains(&c) => {
                        problem(
                            format!("review.classes[{i}]"),
                            format!("`{n}` is named twice"),
                        );
                    }
                    Some(c) => found.push(c),
                    None => problem(
                        format!("review.classes[{i}]"),
                        format!(
                            "no fault class named `{n}` (classes: {})",
                            CLASSES.map(|c| c.name).join(", ")
                        ),
                    ),
                }
            }
            if names.is_empty() {
                problem("review.classes".into(), "names no class".into());
            }
            found
        }
    };
    if file.design.is_empty() {
        problem(
            "design".into(),
            "the review has no design: add [[design]] entries with a name and a scenario file"
                .into(),
        );
    }
    if file.design.len() > MAX_DESIGNS {
        problem(
            "design".into(),
            format!("at most {MAX_DESIGNS} designs, not {}", file.design.len()),
        );
    }
    let job_set = settings(&r.set, "review.set", &mut problem);
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut designs = Vec::new();
    for (i, d) in file.design.iter().enumerate() {
        if let Some(j) = file.design[..i].iter().position(|e| e.name == d.name) {
            problem(
                format!("design[{i}].name"),
                format!("`{}` is the name of design[{j}] too", d.name),
            );
        }
        let set = settings(&d.set, &format!("design[{i}].set"), &mut problem);
        let scenario_path = tidy(&dir.join(&d.scenario));
        let base = match crate::files::read_text(&scenario_path, crate::files::Input::SCENARIO) {
            Ok(t) => t,
            Err(e) => {
                problem(
                    format!("design[{i}].scenario"),
                    format!("cannot read {}: {e}", scenario_path.display()),
                );
                continue;
            }
        };
        let mut text = base;
        let mut ok = true;
        for (key_at, key, value) in job_set.iter().chain(&set) {
            match set_value(&text, key, value) {
                Ok(t) => text = t,
                Err(why) => {
                    problem(
                        key_at.clone(),
                        format!("in {}: {why}", scenario_path.display()),
                    );
                    ok = false;
                }
            }
        }
        if !ok {
            continue;
        }
        let has_chaos = text
            .parse::<DocumentMut>()
            .is_ok_and(|doc| doc.contains_key("chaos"));
        if !has_chaos {
            match with_chaos(&text, &scenario_path, "default") {
                Ok(t) => text = t,
                Err(e) => {
                    problem(format!("design[{i}].scenario"), e.to_string());
                    continue;
                }
            }
        }
        let mut cells = Vec::new();
        for class in &classes {
            let cell = class
                .apply(&text)
                .and_then(|t| match parse(&t, &scenario_path) {
                    Ok(s) => Ok((t, s)),
                    Err(e) => Err(e.problems_in_one_line()),
                });
            match cell {
                Ok(c) => cells.push(c),
                Err(why) => {
                    problem(
                        format!("design[{i}]"),
                        format!("{} under {}: {why}", scenario_path.display(), class.name),
                    );
                    break;
                }
            }
        }
        if cells.len() == classes.len() {
            designs.push(PlannedDesign {
                name: d.name.clone(),
                file: scenario_path,
                cells,
            });
        }
    }
    if !problems.is_empty() {
        return Err(ScenarioError {
            file: path.to_path_buf(),
            problems,
        });
    }
    Ok(Plan {
        path: path.to_path_buf(),
        name: r.name.clone(),
        job: r.job.clone(),
        from: r.from,
        seeds,
        classes,
        cost: r.cost,
        designs,
    })
}

/// The `set` table's keys and values, each with the key path that names it in errors.
fn settings(
    set: &toml::Table,
    at: &str,
    problem: &mut impl FnMut(String, String),
) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (key, value) in set {
        let key_at = format!("{at}.\"{key}\"");
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
            problem(key_at, why);
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
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.message().to_string())?;
    let (last, tables) = path.split_last().ok_or("an empty key")?;
    let mut table = doc.as_table_mut() as &mut dyn toml_edit::TableLike;
    let mut walked = String::new();
    for seg in tables {
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
    if table.get(&last.key).is_some_and(|i| i.is_table_like()) {
        return Err(format!("`{key}` is a table, not a value"));
    }
    table.insert(&last.key, toml_edit::value(value.toml()));
    Ok(doc.to_string())
}

/// `path` without `.` and with `dir/..` pairs folded, so a review's files read as the
/// repository's (`reviews/../scenarios/x.toml` is `scenarios/x.toml`).
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
            let (mut unavailable_ns, mut run_ns) = (0u128, 0u128);
            let mut first: Option<(u64, u64)> = None;
            let s = sweep(&target, &config, |o| {
                unavailable_ns += u128::from(o.unavailable_ns);
                run_ns += u128::from(o.end_ns);
                if o.judged == Validity::Invalid && first.is_none_or(|(p, _)| o.position < p) {
                    first = Some((o.position, o.seed));
                }
            });
            let invalid = s.verdict_counts.invalid;
            cells.push(ReviewCell {
                design: d,
                class: c,
                runs: s.runs,
                invalid,
                unknown: s.verdict_counts.unknown,
                ci95: wilson(invalid, s.runs).unwrap_or((0.0, 1.0)),
                double_holders: s.violations.double_holders,
                stale_accepted: s.violations.stale_accepted,
                lost_updates: s.violations.lost_updates,
                token_order: s.violations.token_order,
                no_recovery: s.violations.no_recovery,
                acquire_p99_ms: s.acquire_latency_ns.quantile(990).map(|ns| ns as f64 / 1e6),
                availability: (run_ns > 0)
                    .then(|| 1.0 - unavailable_ns.min(run_ns) as f64 / run_ns as f64),
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
            reproduce: format!(
                "lockstep review {} --scenario {}/{} | lockstep run - --seed {seed}",
                shell_word(&file),
                d + 1,
                plan.classes[c].name
            ),
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
        classes: plan.classes.iter().map(|c| c.info()).collect(),
        designs: plan
            .designs
            .iter()
            .map(|d| {
                let s = &d.cells[0].1;
                let label = s.system.describe();
                DesignInfo {
                    name: d.name.clone(),
                    family: label.family.to_string(),
                    system: label.system,
                    storage: label.storage,
                    property: s.expect.property.to_string(),
                    file: d.file.display().to_string(),
                }
            })
            .collect(),
        cells,
        examples,
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
