//! Sweep maps: a scenario run over a grid of one or two of its parameters, with the violation
//! rate of its property in each cell (`lockstep map`, and the maps of `lockstep report`).
//!
//! The axes come from the file's `[sweep]` section ([`Sweep`], checked by the loader). A cell
//! is the file's own text with each axis's key set to the cell's value (with `toml_edit`, so
//! every other key keeps its value), loaded by the ordinary loader: a cell is checked exactly
//! as a scenario file is, and a key path or a value the file format does not accept is a
//! [`ScenarioError`] naming `sweep.x.key` (or `sweep.x.values`) and the loader's problem.
//! [`grid`] builds and checks every cell before anything runs.
//!
//! [`run_grid`] runs each cell over the same seeds (the scenario's `seed` and the `[sweep]
//! seeds` after it) with [`crate::sweep::sweep`], on worker threads, and keeps per cell what the
//! map shows. Every figure is a count of runs, so the map is the same bytes for any number of
//! jobs. The map itself is plain data of the reports crate
//! ([`lockstep_reports::sweepmap::SweepMap`]), which also draws it as SVG.

use std::fmt;
use std::path::Path;

use lockstep_models::family::Role;
use lockstep_reports::sweepmap::{
    Axis as MapAxis, Cell, FORMAT, Figures, MapSeeds, Measure, SweepMap,
};
use toml_edit::{DocumentMut, Item, TableLike, Value as TomlValue};

use crate::Loaded;
use crate::scenario::{Problem, Scenario, ScenarioError, parse};
use crate::stats::wilson;
use crate::sweep::{SweepConfig, SweepTarget, sweep, text_hash};

/// The most values one axis may take.
pub const MAX_AXIS_VALUES: usize = 50;

/// The most seeds a cell may run.
pub const MAX_MAP_SEEDS: u64 = 100_000;

/// The seeds per cell when `[sweep]` does not say.
pub const DEFAULT_MAP_SEEDS: u64 = 100;

/// A checked `[sweep]` section: one axis (`x`) or two (`x`, `y`), and the seeds of each cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The axes, `x` first.
    pub axes: Vec<Axis>,
    /// Seeds each cell runs, from the scenario's `seed`.
    pub seeds: u64,
    /// What each cell shows (`measure`): the violation rate unless the file says.
    pub measure: Measure,
}

/// One axis of a sweep: a key path of the scenario and the values it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// `x` or `y`.
    pub name: String,
    /// The key path as written, such as `fault[0].pause.for_ms`.
    pub key: String,
    /// The key path, parsed.
    pub path: Vec<KeySegment>,
    /// The values, in order (at most [`MAX_AXIS_VALUES`]).
    pub values: Vec<Value>,
}

/// One step of a key path: a key, and an index into the array it names (`fault[0]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySegment {
    /// The key.
    pub key: String,
    /// The index into the array, if any.
    pub index: Option<usize>,
}

/// A value an axis takes: a TOML scalar.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer.
    Integer(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    String(String),
}

impl fmt::Display for Value {
    /// As TOML writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.toml().to_string().trim())
    }
}

impl Value {
    pub(crate) fn toml(&self) -> TomlValue {
        match self {
            Value::Integer(v) => TomlValue::from(*v),
            Value::Float(v) => TomlValue::from(*v),
            Value::Bool(v) => TomlValue::from(*v),
            Value::String(v) => TomlValue::from(v.as_str()),
        }
    }
}

/// Parses a key path: keys of letters, digits, `_` and `-`, separated by dots, each with an
/// optional index (`clock[1].drift_ppm`).
///
/// # Errors
/// What is wrong with it, as a sentence.
pub fn parse_key_path(text: &str) -> Result<Vec<KeySegment>, String> {
    if text.trim().is_empty() {
        return Err("must name a key, such as \"model.ttl_ms\"".to_string());
    }
    let bad = |why: &str| format!("`{text}` is not a key path ({why})");
    let mut path = Vec::new();
    for part in text.split('.') {
        let (key, index) = match part.split_once('[') {
            None => (part, None),
            Some((key, rest)) => {
                let digits = rest
                    .strip_suffix(']')
                    .ok_or_else(|| bad("an index is written `[N]` at the end of a key"))?;
                let index: usize = digits
                    .parse()
                    .map_err(|_| bad("an index is a whole number, as in `fault[0]`"))?;
                (key, Some(index))
            }
        };
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if key.is_empty() || !key.chars().all(ok) {
            return Err(bad(
                "keys are letters, digits, `_` and `-`, separated by dots",
            ));
        }
        path.push(KeySegment {
            key: key.to_string(),
            index,
        });
    }
    if path[0].key == "sweep" {
        return Err("cannot sweep the [sweep] section itself".to_string());
    }
    Ok(path)
}

/// `text` with the key at `path` set to `value`. A missing last key is added (to sweep a key
/// left at its default); every table and array on the way must exist.
///
/// # Errors
/// Why the key cannot be set, as a sentence.
pub fn set_key(text: &str, path: &[KeySegment], value: &Value) -> Result<String, String> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("the file is not TOML: {}", e.message()))?;
    set_in_table(doc.as_table_mut(), path, &value.toml(), "")?;
    Ok(doc.to_string())
}

fn joined(walked: &str, key: &str) -> String {
    if walked.is_empty() {
        key.to_string()
    } else {
        format!("{walked}.{key}")
    }
}

fn set_in_table(
    table: &mut dyn TableLike,
    path: &[KeySegment],
    value: &TomlValue,
    walked: &str,
) -> Result<(), String> {
    let (seg, rest) = path.split_first().expect("a key path is never empty");
    let here = joined(walked, &seg.key);
    if seg.index.is_none() && rest.is_empty() {
        match table.get_mut(&seg.key) {
            Some(Item::Value(old)) => replace(old, value),
            Some(_) => return Err(format!("`{here}` is a table, not a value")),
            None => {
                table.insert(&seg.key, Item::Value(value.clone()));
            }
        }
        return Ok(());
    }
    let Some(child) = table.get_mut(&seg.key) else {
        return Err(format!("the file has no `{here}`"));
    };
    let Some(index) = seg.index else {
        return match child {
            Item::Value(TomlValue::InlineTable(t)) => set_in_table(t, rest, value, &here),
            Item::Table(t) => set_in_table(t, rest, value, &here),
            _ => Err(format!("`{here}` is not a table")),
        };
    };
    let here_i = format!("{here}[{index}]");
    match child {
        Item::ArrayOfTables(a) => {
            let len = a.len();
            let t = a
                .get_mut(index)
                .ok_or_else(|| too_short(&here, index, len))?;
            if rest.is_empty() {
                return Err(format!("`{here_i}` is a table, not a value"));
            }
            set_in_table(t, rest, value, &here_i)
        }
        Item::Value(TomlValue::Array(a)) => {
            let len = a.len();
            let v = a
                .get_mut(index)
                .ok_or_else(|| too_short(&here, index, len))?;
            match (v, rest.is_empty()) {
                (v, true) => {
                    replace(v, value);
                    Ok(())
                }
                (TomlValue::InlineTable(t), false) => set_in_table(t, rest, value, &here_i),
                (_, false) => Err(format!("`{here_i}` is not a table")),
            }
        }
        _ => Err(format!("`{here}` is not an array")),
    }
}

fn too_short(here: &str, index: usize, len: usize) -> String {
    let entries = if len == 1 { "entry" } else { "entries" };
    format!("`{here}` has {len} {entries}, so no index {index}")
}

/// Replaces a value, keeping the whitespace and comments around it.
fn replace(old: &mut TomlValue, new: &TomlValue) {
    let decor = old.decor().clone();
    *old = new.clone();
    *old.decor_mut() = decor;
}

/// One cell of a grid: where it lies and its scenario.
#[derive(Clone, Debug)]
pub struct GridCell {
    /// Index of its value on the `x` axis.
    pub x: usize,
    /// Index of its value on the `y` axis, with two axes.
    pub y: Option<usize>,
    /// The file with the cell's values set.
    pub text: String,
    /// Its scenario, loaded from that text.
    pub scenario: Scenario,
}

/// Every cell of a file's sweep, checked and ready to run.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The file, as given.
    pub path: std::path::PathBuf,
    /// The file's own scenario.
    pub base: Scenario,
    /// Its `[sweep]` section.
    pub sweep: Sweep,
    /// The cells, `x` varying fastest (row by row of `y`).
    pub cells: Vec<GridCell>,
}

/// Loads every cell of the sweep of the scenario file `text` (at `path`).
///
/// # Errors
/// A [`ScenarioError`] naming `path`: the file does not load, has no `[sweep]`, or a cell does
/// not load. A problem of one axis's values is reported once per axis, with the values that
/// have it (`sweep.x.key` when every value does, `sweep.x.values` otherwise); a problem only
/// a combination of both axes' values has is reported on `sweep`.
pub fn grid(text: &str, path: &Path) -> Result<Grid, ScenarioError> {
    let base = parse(text, path)?;
    let Some(sweep) = base.sweep.clone() else {
        return Err(ScenarioError {
            file: path.to_path_buf(),
            problems: vec![Problem {
                path: "sweep".to_string(),
                line: None,
                message: "the file has no [sweep] section: add one to draw a map".to_string(),
            }],
        });
    };
    let mut problems = Vec::new();
    // Each axis alone first, so a bad key path is one problem, not one per cell.
    let mut axes_ok = true;
    for axis in &sweep.axes {
        let mut failures: Vec<(String, Vec<String>)> = Vec::new();
        for value in &axis.values {
            if let Err(why) = load_cell(text, path, &[(axis, value)]) {
                match failures.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, values)) => values.push(value.to_string()),
                    None => failures.push((why, vec![value.to_string()])),
                }
            }
        }
        axes_ok &= failures.is_empty();
        for (why, values) in failures {
            let every = values.len() == axis.values.len();
            problems.push(Problem {
                path: format!(
                    "sweep.{}.{}",
                    axis.name,
                    if every { "key" } else { "values" }
                ),
                line: None,
                message: format!("`{}` = {}: {why}", axis.key, values.join(", ")),
            });
        }
    }
    if !axes_ok {
        return Err(ScenarioError {
            file: path.to_path_buf(),
            problems,
        });
    }
    let mut cells = Vec::new();
    let x = &sweep.axes[0];
    let ys: Vec<Option<usize>> = match sweep.axes.get(1) {
        Some(y) => (0..y.values.len()).map(Some).collect(),
        None => vec![None],
    };
    for yi in ys {
        for (xi, xv) in x.values.iter().enumerate() {
            let mut set = vec![(x, xv)];
            if let Some(yi) = yi {
                let y = &sweep.axes[1];
                set.push((y, &y.values[yi]));
            }
            match load_cell(text, path, &set) {
                Ok((text, scenario)) => cells.push(GridCell {
                    x: xi,
                    y: yi,
                    text,
                    scenario,
                }),
                Err(why) => {
                    let at: Vec<String> = set
                        .iter()
                        .map(|(a, v)| format!("`{}` = {v}", a.key))
                        .collect();
                    problems.push(Problem {
                        path: "sweep".to_string(),
                        line: None,
                        message: format!("{}: {why}", at.join(", ")),
                    });
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(ScenarioError {
            file: path.to_path_buf(),
            problems,
        });
    }
    Ok(Grid {
        path: path.to_path_buf(),
        base,
        sweep,
        cells,
    })
}

/// The text and scenario of the file with each axis's key set to its value, or why not.
fn load_cell(
    text: &str,
    path: &Path,
    set: &[(&Axis, &Value)],
) -> Result<(String, Scenario), String> {
    let mut text = text.to_string();
    for (axis, value) in set {
        text = set_key(&text, &axis.path, value)?;
    }
    match parse(&text, path) {
        Ok(scenario) => Ok((text, scenario)),
        // The cell's text is not the file's: its lines are left out.
        Err(e) => Err(e.problems_in_one_line()),
    }
}

/// Runs every cell of `grid` over its seeds on `jobs` threads. The map is the same for any
/// number of jobs.
///
/// # Panics
/// If a run panics (a harness bug, see [`run`](crate::run())).
pub fn run_grid(grid: &Grid, jobs: usize) -> SweepMap {
    run_grid_observed(grid, jobs, |_, _| {})
}

/// As [`run_grid`]; `observe` is called after each cell with the cells done and the cells in
/// all (the binary drives its progress bar with it).
pub fn run_grid_observed(
    grid: &Grid,
    jobs: usize,
    mut observe: impl FnMut(usize, usize),
) -> SweepMap {
    let file = grid.path.display().to_string();
    let from = grid.base.seed;
    let count = grid.sweep.seeds;
    let config = SweepConfig {
        from,
        count,
        shard: None,
        jobs: jobs.max(1),
        check_determinism: false,
    };
    let mut cells = Vec::with_capacity(grid.cells.len());
    for (done, cell) in grid.cells.iter().enumerate() {
        let target = SweepTarget {
            path: grid.path.clone(),
            scenario: cell.scenario.clone(),
            text_hash: text_hash(&cell.text),
        };
        // The sums behind a measured figure, over the cell's runs.
        let (mut waiting_ns, mut completed, mut run_ns) = (0u128, 0u64, 0u128);
        let s = sweep(&target, &config, |o| {
            waiting_ns += u128::from(o.waiting_ns);
            completed += o.cs_completed;
            run_ns += u128::from(o.end_ns);
        });
        let clients = cell
            .scenario
            .system
            .layout()
            .with(|r| r == Role::Client)
            .len();
        let figures = (!grid.sweep.measure.is_violations() && run_ns > 0).then(|| Figures {
            throughput_per_s: completed as f64 / (run_ns as f64 / 1e9),
            waiting: waiting_ns as f64 / (run_ns as f64 * clients.max(1) as f64),
            acquire_p99_ms: s.acquire_latency_ns.quantile(990).map(|ns| ns as f64 / 1e6),
        });
        let invalid = s.verdict_counts.invalid;
        let ci95 = wilson(invalid, s.runs).unwrap_or((0.0, 1.0));
        cells.push(Cell {
            x: cell.x,
            y: cell.y,
            runs: s.runs,
            invalid,
            unknown: s.verdict_counts.unknown,
            rate: invalid as f64 / s.runs.max(1) as f64,
            ci95,
            double_holders: s.metrics.runs_with("double_holders"),
            stale_accepted: s.metrics.runs_with("stale_accepted"),
            lost_updates: s.metrics.runs_with("lost_updates"),
            digest: format!("{:016x}", s.digest),
            figures,
        });
        observe(done + 1, grid.cells.len());
    }
    SweepMap {
        format: FORMAT.to_string(),
        scenario: grid.base.name.clone(),
        file,
        property: grid.base.expect.property,
        measure: grid.sweep.measure,
        seeds: MapSeeds { from, count },
        axes: grid
            .sweep
            .axes
            .iter()
            .map(|a| MapAxis {
                name: a.name.clone(),
                key: a.key.clone(),
                values: a.values.iter().map(Value::to_string).collect(),
            })
            .collect(),
        cells,
    }
}

/// The sweep map of a loaded scenario file: its text is read again (each cell is made from
/// it), its grid checked, and every cell run on `jobs` threads.
///
/// # Errors
/// A [`ScenarioError`]: the file cannot be read, or as [`grid`].
///
/// # Panics
/// As [`run_grid`].
pub fn run(loaded: &Loaded, jobs: usize) -> Result<SweepMap, ScenarioError> {
    let path = &loaded.path;
    let text = crate::files::read_text(path, crate::files::Input::SCENARIO).map_err(|e| {
        ScenarioError {
            file: path.clone(),
            problems: vec![Problem {
                path: String::new(),
                line: None,
                message: format!("cannot read the file: {e}"),
            }],
        }
    })?;
    Ok(run_grid(&grid(&text, path)?, jobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Vec<KeySegment> {
        parse_key_path(text).unwrap()
    }

    #[test]
    fn key_paths_parse_keys_and_indices() {
        assert_eq!(
            path("fault[0].pause.for_ms"),
            [
                KeySegment {
                    key: "fault".into(),
                    index: Some(0)
                },
                KeySegment {
                    key: "pause".into(),
                    index: None
                },
                KeySegment {
                    key: "for_ms".into(),
                    index: None
                },
            ]
        );
        for bad in [
            "",
            "model..ttl_ms",
            "fault[x].at_ms",
            "fault[0",
            "a b",
            "sweep.seeds",
        ] {
            assert!(parse_key_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_key_replaces_values_in_tables_arrays_and_inline_tables() {
        let text = "[model]\nttl_ms = 10 # the TTL\n\n[[clock]]\nnode = \"a\"\n\n[[clock]]\nnode = \"b\"\ndrift_ppm = 5\n\n[[fault]]\npause = { node = \"c\", for_ms = 100 }\n[workload]\nwork_ms = { uniform = [1, 2] }\n";
        let set = |key: &str, v: Value| set_key(text, &path(key), &v);
        let t = set("model.ttl_ms", Value::Integer(20)).unwrap();
        assert!(t.contains("ttl_ms = 20 # the TTL"), "{t}");
        let t = set("clock[1].drift_ppm", Value::Integer(-7)).unwrap();
        assert!(t.contains("drift_ppm = -7"), "{t}");
        let t = set("clock[0].drift_ppm", Value::Integer(9)).unwrap();
        assert!(t.contains("node = \"a\"\ndrift_ppm = 9"), "{t}");
        let t = set("fault[0].pause.for_ms", Value::Float(2.5)).unwrap();
        assert!(t.contains("for_ms = 2.5 }"), "{t}");
        let t = set("workload.work_ms.uniform[1]", Value::Integer(30)).unwrap();
        assert!(t.contains("uniform = [1, 30]"), "{t}");
        let t = set("model.kind", Value::String("a\"b".into())).unwrap();
        assert!(t.contains(r#"kind = 'a"b'"#), "{t}");
        assert_eq!(
            set("fault[3].pause.for_ms", Value::Integer(1)).unwrap_err(),
            "`fault` has 1 entry, so no index 3"
        );
        assert_eq!(
            set("network.loss", Value::Integer(1)).unwrap_err(),
            "the file has no `network`"
        );
        assert_eq!(
            set("model.ttl_ms.x", Value::Integer(1)).unwrap_err(),
            "`model.ttl_ms` is not a table"
        );
        assert_eq!(
            set("clock[1]", Value::Integer(1)).unwrap_err(),
            "`clock[1]` is a table, not a value"
        );
        assert_eq!(
            set("model", Value::Integer(1)).unwrap_err(),
            "`model` is a table, not a value"
        );
        assert_eq!(
            set("model[0].x", Value::Integer(1)).unwrap_err(),
            "`model` is not an array"
        );
    }

    #[test]
    fn values_display_as_toml() {
        assert_eq!(Value::Integer(-3).to_string(), "-3");
        assert_eq!(Value::Float(2000.0).to_string(), "2000.0");
        assert_eq!(Value::Float(0.25).to_string(), "0.25");
        assert_eq!(Value::Bool(true).to_string(), "true");
        assert_eq!(Value::String("x".into()).to_string(), "\"x\"");
    }
}
