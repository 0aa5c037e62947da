//! Sweep maps: `[sweep]` and its errors, the grid of cells made from a file, a small K1 map
//! with the pattern the arithmetic predicts, the same map for any number of threads, the SVG
//! (deterministic, escaped, well-formed XML) and `lockstep map`.

use std::path::Path;

use lockstep::sweepmap::{self, Value};
use lockstep_reports::sweepmap::{Measure, SweepMap, svg};
use lockstep_sim::{Dur, Fault};

use crate::support::{lockstep, root, scenario_files, stderr, stdout, temp_scenario};

/// K1's shape (a pause right after the validity check, unfenced storage), short, with a
/// `[sweep]` section appended.
fn k1(name: &str, sweep: &str) -> String {
    format!(
        r#"[scenario]
name = "{name}"
duration_ms = 30_000

[model]
kind = "redis"
ttl_ms = 10_000

[storage]
mode = "unfenced"

[[fault]]
on = {{ node = "client-1", mark = "validity-checked" }}
pause = {{ node = "client-1", for_ms = 15_000 }}

[expect]
verdict = "any"

[sweep]
{sweep}
"#
    )
}

/// The 2 × 2 map of TTL 2 s and 10 s against pauses of 1 s and 5 s, 6 seeds a cell.
const SMALL: &str = r#"x = { key = "model.ttl_ms", values = [2_000, 10_000] }
y = { key = "fault[0].pause.for_ms", values = [1_000, 5_000] }
seeds = 6"#;

fn grid_of(text: &str) -> Result<sweepmap::Grid, String> {
    sweepmap::grid(text, Path::new("t.toml")).map_err(|e| e.to_string())
}

/// The problems of a file whose `[sweep]` section (or grid) is wrong.
fn problems(sweep: &str) -> String {
    grid_of(&k1("bad", sweep)).expect_err("the sweep is refused")
}

#[test]
fn sweep_axes_are_key_paths_with_values_or_a_range() {
    let s = lockstep::parse(
        &k1(
            "axes",
            r#"x = { key = "workload.storage_timeout_ms", from = 0.1, to = 0.5, step = 0.1 }
y = { key = "fault[0].pause.for_ms", from = 1_000, to = 2_000, step = 500 }"#,
        ),
        Path::new("t.toml"),
    )
    .unwrap();
    let sweep = s.sweep.expect("a sweep");
    assert_eq!(sweep.seeds, sweepmap::DEFAULT_MAP_SEEDS);
    assert_eq!(sweep.axes.len(), 2);
    assert_eq!(sweep.axes[0].name, "x");
    let xs: Vec<String> = sweep.axes[0].values.iter().map(Value::to_string).collect();
    assert_eq!(xs, ["0.1", "0.2", "0.3", "0.4", "0.5"]);
    assert_eq!(
        sweep.axes[1].values,
        [1_000, 1_500, 2_000].map(Value::Integer)
    );
    // A file without [sweep] has none, and is no map.
    let plain = k1("plain", "").replace("[sweep]\n", "");
    assert!(
        lockstep::parse(&plain, Path::new("t.toml"))
            .unwrap()
            .sweep
            .is_none()
    );
    let e = grid_of(&plain).unwrap_err();
    assert!(
        e.contains("t.toml: sweep: the file has no [sweep] section"),
        "{e}"
    );
}

#[test]
fn sweep_sections_that_break_the_limits_are_refused_with_their_key() {
    let cases: &[(&str, &str)] = &[
        (
            r#"x = { key = "model.ttl_ms", values = [1] }
z = { key = "model.ttl_ms", values = [1] }"#,
            "unknown field `z`",
        ),
        (
            r#"x = { key = "model.ttl_ms", from = 1, to = 51, step = 1 }"#,
            "sweep.x.step: gives 51 values from 1 to 51; at most 50",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [] }"#,
            "sweep.x.values: must list at least one value",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [1], seeds = 3 }"#,
            "unknown field `seeds`",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [1000] }
measure = "speed""#,
            "sweep.measure: `speed` is not a measure: use one of `violations`, `throughput`, `waiting`, `acquire-p99`",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [1000] }
seeds = 0"#,
            "sweep.seeds: must be between 1 and 100000, not 0",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [1000] }
seeds = 100_001"#,
            "sweep.seeds: must be between 1 and 100000, not 100001",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [1], from = 1, to = 2, step = 1 }"#,
            "sweep.x.values: give either `values` or `from`, `to` and `step`, not both",
        ),
        (
            r#"x = { key = "model.ttl_ms", from = 1, to = 2 }"#,
            "sweep.x: needs `values = [..]`, or a range",
        ),
        (
            r#"x = { key = "model.ttl_ms", from = 1, to = 5, step = -1 }"#,
            "sweep.x.step: must be non-zero and lead from 1 to 5, not -1",
        ),
        (
            r#"x = { key = "model.ttl_ms", from = "a", to = 5, step = 1 }"#,
            "sweep.x.from: must be a finite number",
        ),
        (
            r#"x = { key = "model..ttl_ms", values = [1] }"#,
            "sweep.x.key: `model..ttl_ms` is not a key path",
        ),
        (
            r#"x = { key = "sweep.seeds", values = [1] }"#,
            "sweep.x.key: cannot sweep the [sweep] section itself",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [1000] }
y = { key = "model.ttl_ms", values = [2000] }"#,
            "sweep.y.key: `model.ttl_ms` is already the x axis",
        ),
        (
            r#"x = { key = "model.ttl_ms", values = [[1]] }"#,
            "expected a number, a string or a boolean",
        ),
    ];
    for (sweep, expected) in cases {
        let e = problems(sweep);
        assert!(e.contains(expected), "{sweep}\n{e}");
        assert!(e.starts_with("t.toml"), "{e}");
    }
    let many: Vec<String> = (1..=51).map(|v| (v * 1000).to_string()).collect();
    let e = problems(&format!(
        r#"x = {{ key = "model.ttl_ms", values = [{}] }}"#,
        many.join(", ")
    ));
    assert!(
        e.contains("sweep.x.values: has 51 values; at most 50"),
        "{e}"
    );
}

#[test]
fn a_cell_the_loader_refuses_names_the_axis_the_values_and_the_problem() {
    // A key the format does not have: every value fails, so the key is at fault.
    let e = problems(r#"x = { key = "model.ttl_mss", values = [1000, 2000] }"#);
    assert!(
        e.contains("t.toml: sweep.x.key: `model.ttl_mss` = 1000, 2000: model.ttl_mss: unknown field `ttl_mss`"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    // A value of the wrong type.
    let e = problems(
        r#"x = { key = "model.ttl_ms", values = [1000] }
y = { key = "fault[0].pause.node", values = [3] }"#,
    );
    assert!(
        e.contains("sweep.y.key: `fault[0].pause.node` = 3: fault[0].pause.node: invalid type"),
        "{e}"
    );
    // Some values the resolver refuses: only those are named.
    let e = problems(r#"x = { key = "model.ttl_ms", values = [1000, -5, 0] }"#);
    assert!(e.contains("sweep.x.values: `model.ttl_ms` = -5: model.ttl_ms: must be a non-negative number of milliseconds"), "{e}");
    assert!(
        e.contains("sweep.x.values: `model.ttl_ms` = 0: model.ttl_ms: must be greater than 0"),
        "{e}"
    );
    assert!(!e.contains("= 1000"), "{e}");
    // Paths that lead nowhere in the file.
    let e = problems(r#"x = { key = "fault[2].pause.for_ms", values = [1] }"#);
    assert!(
        e.contains("sweep.x.key: `fault[2].pause.for_ms` = 1: `fault` has 1 entry, so no index 2"),
        "{e}"
    );
    let e = problems(r#"x = { key = "network.loss", values = [0.1] }"#);
    assert!(
        e.contains("sweep.x.key: `network.loss` = 0.1: the file has no `network`"),
        "{e}"
    );
    let e = problems(r#"x = { key = "model", values = [1] }"#);
    assert!(e.contains("`model` is a table, not a value"), "{e}");
    // A combination of values neither axis has alone: fenced storage without a token.
    let fenced = k1(
        "bad",
        r#"x = { key = "storage.mode", values = ["unfenced", "fenced-writes"] }
y = { key = "model.fencing", values = ["incr", "none"] }"#,
    )
    .replace("ttl_ms = 10_000", "ttl_ms = 10_000\nfencing = \"incr\"");
    let e = grid_of(&fenced).unwrap_err();
    assert!(
        e.contains(
            r#"t.toml: sweep: `storage.mode` = "fenced-writes", `model.fencing` = "none": "#
        ),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn each_cell_is_the_file_with_its_values_set() {
    let grid = grid_of(&k1("cells", SMALL)).unwrap();
    assert_eq!(grid.cells.len(), 4);
    let pause_of = |s: &lockstep::Scenario| match s.faults[0].fault {
        Fault::Pause { duration, .. } => duration,
        ref f => panic!("{f:?}"),
    };
    let cells: Vec<(usize, Option<usize>, bool, Option<Dur>)> = grid
        .cells
        .iter()
        .map(|c| {
            (
                c.x,
                c.y,
                c.text
                    .contains(&format!("ttl_ms = {}", [2_000, 10_000][c.x])),
                pause_of(&c.scenario),
            )
        })
        .collect();
    let ms = |v| Some(Dur::from_millis(v));
    assert_eq!(
        cells,
        [
            (0, Some(0), true, ms(1_000)),
            (1, Some(0), true, ms(1_000)),
            (0, Some(1), true, ms(5_000)),
            (1, Some(1), true, ms(5_000)),
        ]
    );
    // Everything else is the file's: its comments, its other keys, its own scenario.
    assert!(grid.cells[0].text.contains("[sweep]\nx = "));
    assert_eq!(pause_of(&grid.base), ms(15_000));
    assert_eq!(grid.cells[3].scenario.duration, grid.base.duration);
}

fn small_map(jobs: usize) -> SweepMap {
    let grid = grid_of(&k1(r#"k1 <small> & \"map\""#, SMALL)).unwrap();
    sweepmap::run_grid(&grid, jobs)
}

#[test]
fn a_k1_map_fails_where_the_pause_outlasts_the_ttl_and_not_elsewhere() {
    let map = small_map(2);
    assert_eq!(map.axes[0].key, "model.ttl_ms");
    assert_eq!(map.axes[0].values, ["2000", "10000"]);
    assert_eq!(map.axes[1].values, ["1000", "5000"]);
    assert_eq!((map.seeds.from, map.seeds.count), (1, 6));
    let rate = |x, y| map.cell(x, Some(y)).unwrap().rate;
    // Only the 5 s pause against the 2 s TTL outlasts the lease: always caught there.
    assert_eq!(rate(0, 1), 1.0);
    assert_eq!((rate(0, 0), rate(1, 0), rate(1, 1)), (0.0, 0.0, 0.0));
    let caught = map.cell(0, Some(1)).unwrap();
    assert_eq!((caught.runs, caught.invalid), (6, 6));
    assert!(caught.stale_accepted == 6 && caught.double_holders == 6);
    assert_eq!(caught.ci95.1, 1.0);
    assert!(
        caught.ci95.0 > 0.5 && caught.ci95.0 < 0.7,
        "{:?}",
        caught.ci95
    );
    // The rate grows with the pause and falls with the TTL.
    for c in &map.cells {
        let y = c.y.unwrap();
        if y > 0 {
            assert!(c.rate >= rate(c.x, y - 1));
        }
        if c.x > 0 {
            assert!(c.rate <= rate(c.x - 1, y));
        }
    }
}

#[test]
fn a_map_is_the_same_for_any_number_of_threads() {
    let one = small_map(1);
    let two = small_map(2);
    assert_eq!(one, two);
    assert_eq!(one.json(), two.json());
    assert_eq!(svg(&one), svg(&two));
}

#[test]
fn the_svg_is_deterministic_well_formed_and_escapes_the_scenario_name() {
    let map = small_map(2);
    let drawn = svg(&map);
    assert_eq!(drawn, svg(&SweepMap::from_json(&map.json()).unwrap()));
    let doc = roxmltree::Document::parse(&drawn).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&"k1 <small> & \"map\""), "{texts:?}");
    assert!(drawn.contains("k1 &lt;small&gt; &amp; &quot;map&quot;"));
    for label in [
        "model.ttl_ms",
        "fault[0].pause.for_ms",
        "2000",
        "5000",
        "100%",
        "0%",
    ] {
        assert!(texts.contains(&label), "{label} in {texts:?}");
    }
    // A cell per group, with its tooltip.
    let tips = doc
        .descendants()
        .filter(|n| n.has_tag_name("g"))
        .filter_map(|g| g.first_element_child())
        .filter(|t| t.has_tag_name("title"))
        .count();
    assert_eq!(tips, 4);
    // One axis: a bar chart, also well-formed.
    let line = grid_of(&k1(
        "line",
        r#"x = { key = "fault[0].pause.for_ms", values = [1_000, 12_000] }
seeds = 2"#,
    ))
    .unwrap();
    let map = sweepmap::run_grid(&line, 2);
    assert_eq!(
        map.cells.iter().map(|c| c.rate).collect::<Vec<_>>(),
        [0.0, 1.0]
    );
    roxmltree::Document::parse(&svg(&map)).expect("well-formed XML");
}

#[test]
fn every_sweep_scenario_builds_its_grid() {
    for path in scenario_files("scenarios/sweeps") {
        let text = std::fs::read_to_string(&path).unwrap();
        let grid = sweepmap::grid(&text, &path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!grid.cells.is_empty());
    }
    // A map elsewhere, beside the scenarios it maps: the granularity map of scenarios/keys.
    let mut elsewhere = 0;
    for path in scenario_files("scenarios") {
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("\n[sweep]") && !path.starts_with(root().join("scenarios/sweeps")) {
            let grid = sweepmap::grid(&text, &path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!grid.cells.is_empty());
            elsewhere += 1;
        }
    }
    assert!(elsewhere >= 1, "the granularity map");
}

#[test]
fn lockstep_map_draws_the_svg_and_prints_the_map() {
    let file = temp_scenario("map-cli", &k1("cli", SMALL));
    let out = file.with_file_name("map.svg");
    let (f, o) = (file.to_str().unwrap(), out.to_str().unwrap());
    let run = lockstep(&["map", f, "--out", o, "--jobs", "2", "--format", "json"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let map = SweepMap::from_json(&stdout(&run)).unwrap();
    assert_eq!(map.cell(0, Some(1)).unwrap().invalid, 6);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), svg(&map));
    let table = lockstep(&["map", f, "--jobs", "1"]);
    assert!(table.status.success(), "{}", stderr(&table));
    assert!(stdout(&table).contains("fault[0].pause.for_ms \\ model.ttl_ms"));
    // A bad [sweep], and an output in no directory: exit 2 before anything runs.
    let bad = temp_scenario(
        "map-cli-bad",
        &k1("bad", r#"x = { key = "model.nope", values = [1] }"#),
    );
    let run = lockstep(&["map", bad.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("sweep.x.key: `model.nope` = 1"),
        "{}",
        stderr(&run)
    );
    let nowhere = root().join("no/such/dir/map.svg");
    let run = lockstep(&["map", f, "--out", nowhere.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("cannot write the map"),
        "{}",
        stderr(&run)
    );
}

/// Lock granularity as a map: 1 and 8 clients on a 16-row table under 1 lock and a lock per
/// row, 4 seeds a cell, measuring throughput.
fn granularity_map() -> SweepMap {
    let text = r#"[scenario]
name = "granularity"
duration_ms = 20_000

[model]
kind = "redis"
ttl_ms = 10_000

[workload]
kind = "keys"
clients = 1
rows = 16
locks = 1
work_ms = { uniform = [50, 200] }

[expect]
property = "mutual-exclusion"

[sweep]
x = { key = "workload.clients", values = [1, 8] }
y = { key = "workload.locks", values = [1, 16] }
measure = "throughput"
seeds = 4
"#;
    sweepmap::run_grid(&grid_of(text).unwrap(), 2)
}

#[test]
fn a_granularity_map_measures_throughput_waiting_and_latency_from_the_runs() {
    let map = granularity_map();
    assert_eq!(map.measure, Measure::Throughput);
    let figures = |x, y| map.cell(x, Some(y)).unwrap().figures.unwrap();
    // One client works alone: the same throughput under any number of locks, and a work
    // time of 125 ms on average plus the lock's round trips and its think time bound it.
    let alone = figures(0, 0).throughput_per_s;
    assert!((alone - figures(0, 1).throughput_per_s).abs() < 1e-9);
    assert!(alone > 2.0 && alone < 8.0, "{alone}");
    // Eight clients under one lock get little more done and wait most of the time; under a
    // lock per row, several times as much and little waiting.
    let (one, rows) = (figures(1, 0), figures(1, 1));
    assert!(
        one.throughput_per_s < 1.5 * alone,
        "{one:?} against {alone}"
    );
    assert!(
        rows.throughput_per_s > 3.0 * one.throughput_per_s,
        "{rows:?} {one:?}"
    );
    assert!(
        one.waiting > 0.5 && rows.waiting < one.waiting / 2.0,
        "{one:?} {rows:?}"
    );
    assert!(one.acquire_p99_ms.unwrap() > rows.acquire_p99_ms.unwrap());
    // Every cell is valid: many keys do not make the lock unsafe.
    assert!(map.cells.iter().all(|c| c.invalid == 0 && c.runs == 4));
    // The table and the drawing show the figures, not the violation rate.
    let t = map.table();
    assert!(
        t.contains("throughput (critical sections per simulated second)"),
        "{t}"
    );
    assert!(
        t.contains(&Measure::Throughput.label(rows.throughput_per_s)),
        "{t}"
    );
    let drawing = svg(&map);
    assert!(drawing.contains("throughput"), "{drawing}");
    assert_eq!(SweepMap::from_json(&map.json()).unwrap(), map);
}
