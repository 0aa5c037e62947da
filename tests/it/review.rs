//! Design reviews: the review file and its errors, the cells it builds (the class's faults
//! alone, keys set and added, the default profile for a file without one), a cell's scenario
//! printed for replay, the same review for any number of threads, and `lockstep review`'s
//! outputs.

use std::path::Path;
use std::sync::OnceLock;

use lockstep::review::{self, CLASSES};
use lockstep_models::Role;
use lockstep_reports::review::CostOrder;
use lockstep_sim::{Distribution, Dur, Fault};

use crate::support::{GOOD, TempDir, lockstep, stderr, stdout};

/// A scenario of the repository, as a review file outside it names it.
fn shipped(path: &str) -> String {
    crate::support::root().join(path).display().to_string()
}

/// Runs `command` in `sh` from `dir`, with the `lockstep` binary first on the PATH: a
/// command as the review prints it for people to paste.
fn shell(dir: &Path, command: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_lockstep"))
        .parent()
        .expect("the binary's directory");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .expect("sh runs")
}

/// A directory of its own for a test, with `files` written in it.
fn dir_with(test: &str, files: &[(&str, &str)]) -> TempDir {
    let dir = TempDir::new(&format!("review-{test}"));
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    dir
}

const CHAOS: &str = r#"
[scenario]
name = "short chaos"
duration_ms = 40_000

[model]
kind = "redis"
ttl_ms = 2_000

[storage]
mode = "unfenced"

[chaos]
profile = "default"
faults_per_minute = 30

[expect]
verdict = "any"
"#;

fn review_of(designs: &str) -> String {
    format!("[review]\nname = \"t\"\nseeds = 4\n\n{designs}")
}

#[test]
fn each_cell_runs_its_class_alone() {
    let dir = dir_with(
        "classes",
        &[
            ("chaos.toml", CHAOS),
            (
                "review.toml",
                &review_of(
                    "[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\nset = { \"model.ttl_ms\" = 3000, \"workload.clients\" = 3 }\n",
                ),
            ),
        ],
    );
    let plan = review::load(&dir.join("review.toml"), None).expect("loads");
    assert_eq!(plan.classes.len(), CLASSES.len());
    let design = &plan.designs[0];
    for (class, (text, scenario)) in plan.classes.iter().zip(&design.cells) {
        assert!(text.contains("ttl_ms = 3000"), "{text}");
        assert!(text.contains("clients = 3"), "{text}");
        assert_eq!(scenario.system.ttl().as_millis(), 3000);
        let chaos = scenario.chaos.as_ref().expect("chaos");
        // Every fault the class draws over many seeds is of its kind.
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 1..40 {
            for f in chaos.generate(seed) {
                kinds.insert(match f.fault {
                    Fault::Pause { .. } | Fault::Freeze { .. } | Fault::Resume { .. } => "pauses",
                    Fault::Partition { mode, .. } => match mode {
                        lockstep_sim::PartitionMode::Drop => "partitions-drop",
                        lockstep_sim::PartitionMode::Hold => "partitions-hold",
                    },
                    Fault::Crash { .. } | Fault::Restart { .. } => "crashes",
                    Fault::ClockStep { .. } | Fault::ClockStrobe { .. } => "clock-steps",
                    Fault::ClockSlew { .. } | Fault::ClockDrift { .. } => "drift-slew",
                    Fault::Delay { .. } | Fault::Degrade { .. } => "slow-links",
                    other => panic!("{other:?}"),
                });
            }
        }
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            [class.name],
            "{}",
            class.name
        );
    }
}

#[test]
fn a_file_without_chaos_gets_the_default_profile() {
    let dir = dir_with(
        "no-chaos",
        &[
            ("good.toml", GOOD),
            (
                "review.toml",
                &review_of("[[design]]\nname = \"plain\"\nscenario = \"good.toml\"\n"),
            ),
        ],
    );
    let plan = review::load(&dir.join("review.toml"), Some(2)).expect("loads");
    let (_, s) = &plan.designs[0].cells[0];
    assert_eq!(s.chaos.as_ref().expect("a profile").profile, "default");
    assert_eq!(plan.seeds, 2);
}

#[test]
fn problems_name_the_review_file_and_key() {
    let dir = dir_with("errors", &[("chaos.toml", CHAOS)]);
    let cases = [
        (
            "[review]\nname = \"t\"\nseeds = 4\nclasses = [\"pauses\", \"gc\", \"pauses\"]\n\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n",
            vec![
                "review.classes[1]: no fault class named `gc` (classes: pauses, partitions-drop",
                "review.classes[2]: `pauses` is named twice",
            ],
        ),
        (
            "[review]\nname = \"t\"\n\n[[design]]\nname = \"a\"\nscenario = \"missing.toml\"\n\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\nset = { \"model.ttl\" = 5, \"model\" = 1, \"x\" = [1] }\n",
            vec![
                "design[0].scenario: cannot read",
                "design[1].name: `a` is the name of design[0] too",
                "design[1].set.x: must be a number, a boolean or a string",
                "design[1].set.model: `model` is a table, not a value",
            ],
        ),
        (
            "[review]\nname = \"t\"\nseeds = 0\n",
            vec![
                "review.seeds: must be from 1 to 100000, not 0",
                "design: the review has no design",
            ],
        ),
        (
            "[review]\nname = \"t\"\nsedes = 3\n",
            vec!["unknown field `sedes`"],
        ),
        (
            "[review]\nname = \"t\"\ncost = \"speed\"\n",
            vec![
                "review.cost",
                "unknown value `speed`, expected one of `latency`, `availability`, `throughput`",
            ],
        ),
        (
            "[review]\nname = \"t\"\n\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\nset = { \"model.ttl\" = 5 }\n",
            vec!["design[0].set.\"model.ttl\": unknown field `ttl`"],
        ),
    ];
    for (i, (text, wanted)) in cases.iter().enumerate() {
        let path = dir.join(format!("review-{i}.toml"));
        std::fs::write(&path, text).expect("write");
        let e = review::load(&path, None).expect_err(text).to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        for w in wanted {
            assert!(e.contains(w), "`{w}` not in:\n{e}");
        }
        // The command says the same, exits 2 and writes nothing.
        let out = dir.join(format!("review-{i}.html"));
        let o = lockstep(&[
            "review",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(wanted[0]), "{}", stderr(&o));
        assert!(!out.exists());
    }
}

#[test]
fn the_cost_order_is_read_and_carried_to_the_review() {
    let dir = dir_with(
        "cost",
        &[
            ("chaos.toml", CHAOS),
            (
                "latency.toml",
                &review_of(
                    "classes = [\"pauses\"]\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n",
                ),
            ),
            (
                "availability.toml",
                &review_of(
                    "classes = [\"pauses\"]\ncost = \"availability\"\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n",
                ),
            ),
        ],
    );
    let plan = review::load(&dir.join("latency.toml"), Some(1)).expect("loads");
    assert_eq!(plan.cost, CostOrder::Latency, "the default");
    let plan = review::load(&dir.join("availability.toml"), Some(1)).expect("loads");
    assert_eq!(plan.cost, CostOrder::Availability);
    let r = review::run(&plan, 1, |_, _| {});
    assert_eq!(r.cost, CostOrder::Availability);
    let json: serde_json::Value = serde_json::from_str(&r.json()).expect("json");
    assert_eq!(json["cost"], "availability");
}

#[test]
fn the_review_is_the_same_for_any_number_of_threads() {
    let dir = dir_with(
        "threads",
        &[
            ("chaos.toml", CHAOS),
            (
                "review.toml",
                &review_of(
                    "classes = [\"pauses\", \"partitions-hold\"]\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n",
                )
                .replace("seeds = 4\n\n", "seeds = 12\n"),
            ),
        ],
    );
    let plan = review::load(&dir.join("review.toml"), None).expect("loads");
    let one = review::run(&plan, 1, |_, _| {});
    let three = review::run(&plan, 3, |_, _| {});
    assert_eq!(one, three);
    assert_eq!(one.cells.len(), 2);
    assert!(one.cells.iter().all(|c| c.runs == 12));
}

#[test]
fn the_command_prints_a_cell_that_replays_its_seeds() {
    let file = "reviews/designs.toml";
    let o = lockstep(&["review", file, "--scenario", "1/pauses"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("weights = { partition = 0, pause = 1, crash = 0, clock = 0, network = 0 }"),
        "{text}"
    );
    let by_name = lockstep(&["review", file, "--scenario", "Redis, unfenced/pauses"]);
    assert_eq!(stdout(&by_name), text);
    for (cell, why) in [
        ("99/pauses", "the review has designs 1 to 14, not 99"),
        ("1/gc", "the review has no fault class `gc`"),
        ("nobody/pauses", "the review has no design named `nobody`"),
        ("1", "give a design and a fault class"),
    ] {
        let o = lockstep(&["review", file, "--scenario", cell]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
    }
    // Every example of the sample replays its violation: the printed cell, run at its seed.
    let sample: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::support::root().join("reports/sample/review.json"))
            .expect("the sample review"),
    )
    .expect("JSON");
    let examples = sample["examples"].as_array().expect("examples");
    assert!(!examples.is_empty());
    let dir = TempDir::new("review-cells");
    for e in examples {
        let (d, c) = (e["design"].as_u64().unwrap(), e["class"].as_u64().unwrap());
        let class = sample["classes"][c as usize]["name"].as_str().unwrap();
        let seed = e["seed"].as_u64().unwrap().to_string();
        let cell_ref = format!("{}/{class}", d + 1);
        let replay = format!(
            "--scenario {cell_ref} > review-{}-{class}.toml && lockstep run review-{}-{class}.toml --seed {seed}",
            d + 1,
            d + 1
        );
        assert!(e["reproduce"].as_str().unwrap().contains(&replay), "{e}");
        let o = lockstep(&["review", file, "--scenario", &cell_ref]);
        let cell = dir.join(format!("cell-{d}.toml"));
        std::fs::write(&cell, stdout(&o)).expect("write");
        let o = lockstep(&["run", cell.to_str().unwrap(), "--seed", &seed]);
        assert!(
            stdout(&o).contains("INVALID"),
            "{cell_ref} seed {seed}: {}",
            stdout(&o)
        );
    }
}

#[test]
fn outputs_are_refused_before_anything_runs() {
    let o = lockstep(&["review", "reviews/designs.toml", "--out", "review.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("must end in .html, .md or .json"),
        "{}",
        stderr(&o)
    );
    let o = lockstep(&[
        "review",
        "reviews/missing.toml",
        "--out",
        "/nonexistent-dir/r.html",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("reviews/missing.toml: cannot read the file"),
        "{e}"
    );
    assert!(e.contains("/nonexistent-dir/r.html"), "{e}");
}

#[test]
fn clock_kinds_must_leave_a_kind_on_while_clock_faults_are() {
    let text = CHAOS.replace(
        "faults_per_minute = 30",
        "faults_per_minute = 30\nclock_kinds = { step = 0, slew = 0, strobe = 0, drift = 0 }",
    );
    let errors = crate::support::errors_of("clock-kinds", &text);
    assert!(
        errors.iter().any(|e| e.contains(
            "chaos.clock_kinds: every kind of clock fault has weight 0 while chaos.weights.clock is not 0"
        )),
        "{errors:?}"
    );
    // With clock faults off, the kinds do not matter.
    let off = text.replace("clock_kinds", "weights = { clock = 0 }\nclock_kinds");
    let path = crate::support::temp_scenario("clock-kinds-off", &off);
    assert!(lockstep::load(&path).is_ok());
}

#[test]
fn a_design_whose_runs_all_end_unknown_is_not_recommended() {
    // Every run of "starved" stops at its event bound: no run is judged, so nothing says it
    // is safe, however cheap it looks.
    let dir = dir_with(
        "unknown",
        &[
            ("chaos.toml", CHAOS),
            (
                "review.toml",
                &format!(
                    "[review]\nname = \"t\"\nseeds = 2\nclasses = [\"pauses\"]\n\n\
                     [[design]]\nname = \"starved\"\nscenario = \"chaos.toml\"\n\
                     set = {{ \"scenario.max_events\" = 50 }}\n\n\
                     [[design]]\nname = \"healthy\"\nscenario = \"{}\"\n",
                    shipped("scenarios/chaos/redis-incr-atomic-fenced.toml")
                ),
            ),
        ],
    );
    let plan = review::load(&dir.join("review.toml"), None).expect("loads");
    let r = review::run(&plan, 1, |_, _| {});
    let json: serde_json::Value = serde_json::from_str(&r.json()).expect("json");
    assert_eq!(json["cells"][0]["unknown"], 2, "{json}");
    assert_eq!(json["cells"][1]["unknown"], 0, "{json}");
    assert_eq!(json["standing"], serde_json::json!(["unknown", "safe"]));
    let rec: Vec<&str> = json["recommendation"]
        .as_array()
        .expect("sentences")
        .iter()
        .map(|s| s.as_str().expect("a sentence"))
        .collect();
    assert!(rec[0].starts_with("Use “healthy”"), "{rec:?}");
    assert!(
        rec.iter().any(|s| s
            .starts_with("“starved” is unknown, not safe: 2 of its 2 runs ended unknown")),
        "{rec:?}"
    );
    assert!(!rec.iter().any(|s| s.contains("Also safe")), "{rec:?}");
    let table = r.table();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("1. starved") && l.ends_with("unknown")),
        "{table}"
    );
    assert!(table.contains("1. starved: pause 2 of 2"), "{table}");
    assert!(
        r.markdown()
            .contains("| 1. starved | ❔ unknown, 2 of 2 runs unknown |"),
        "{}",
        r.markdown()
    );
    assert!(
        r.html(&[])
            .contains("<div class=\"unknown\">2 of 2 runs unknown</div>")
    );
}

#[test]
fn errors_name_each_key_path_once_and_paths_whole() {
    let long = "a-directory-with-a-rather-long-name/and-another-one-inside-it";
    let dir = dir_with("key-paths", &[]);
    std::fs::create_dir_all(dir.join(long)).expect("dirs");
    std::fs::write(dir.join(long).join("chaos.toml"), CHAOS).expect("write");
    std::fs::write(
        dir.join(long).join("zero-ttl.toml"),
        CHAOS.replace("ttl_ms = 2_000", "ttl_ms = 0"),
    )
    .expect("write");
    let design = |name: &str, file: &str, set: &str| {
        format!("[[design]]\nname = \"{name}\"\nscenario = \"{long}/{file}\"\n{set}\n")
    };
    let cases = [
        // A key the review sets for every design: once, at its key.
        (
            format!(
                "[review]\nname = \"t\"\nset = {{ \"model.bogus\" = 1 }}\n\n{}{}",
                design("a", "chaos.toml", ""),
                design("b", "chaos.toml", "")
            ),
            "review.set.\"model.bogus\": unknown field `bogus`".to_string(),
        ),
        // A design's key: at its key path, once for all the classes that met it.
        (
            format!(
                "[review]\nname = \"t\"\n\n{}",
                design("a", "chaos.toml", "set = { \"model.nonsense\" = 1 }")
            ),
            "design[0].set.\"model.nonsense\": unknown field `nonsense`".to_string(),
        ),
        // A file that cannot be read, and one with a bad value of its own: the path whole.
        (
            format!(
                "[review]\nname = \"t\"\n\n{}",
                design("a", "missing.toml", "")
            ),
            format!(
                "design[0].scenario: cannot read {}",
                dir.join(long).join("missing.toml").display()
            ),
        ),
        (
            format!(
                "[review]\nname = \"t\"\n\n{}",
                design("a", "zero-ttl.toml", "")
            ),
            format!(
                "design[0].scenario: {}: model.ttl_ms: ",
                dir.join(long).join("zero-ttl.toml").display()
            ),
        ),
    ];
    for (i, (text, wanted)) in cases.iter().enumerate() {
        let path = dir.join(format!("review-{i}.toml"));
        std::fs::write(&path, text).expect("write");
        let e = review::load(&path, None).expect_err(text).to_string();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 1, "one problem, once:\n{e}");
        assert!(
            lines[0].starts_with(&format!("{}: {wanted}", path.display())),
            "`{wanted}` is not the problem of:\n{e}"
        );
        assert!(!e.contains('…'), "nothing cut:\n{e}");
        let o = lockstep(&["review", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert_eq!(stderr(&o).trim_end(), e);
    }
}

#[test]
fn empty_names_are_refused() {
    let dir = dir_with("names", &[("chaos.toml", CHAOS)]);
    let cases = [
        (
            "[review]\nname = \"\"\n\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n",
            vec!["review.name: must not be empty"],
        ),
        (
            "[review]\nname = \" \\t\"\n\n[[design]]\nname = \"\"\nscenario = \"chaos.toml\"\n\n\
             [[design]]\nname = \"  \"\nscenario = \"chaos.toml\"\n",
            vec![
                "review.name: must not be only whitespace",
                "design[0].name: must not be empty",
                "design[1].name: must not be only whitespace",
            ],
        ),
        (
            "[review]\nname = \"t\"\n\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n\n\
             [[design]]\nname = \"a \"\nscenario = \"chaos.toml\"\n",
            vec!["design[1].name: `a ` is the name of design[0] too"],
        ),
    ];
    for (i, (text, wanted)) in cases.iter().enumerate() {
        let path = dir.join(format!("review-{i}.toml"));
        std::fs::write(&path, text).expect("write");
        let e = review::load(&path, None).expect_err(text).to_string();
        assert_eq!(e.lines().count(), wanted.len(), "{e}");
        for w in wanted {
            assert!(
                e.contains(&format!("{}: {w}", path.display())),
                "`{w}` not in:\n{e}"
            );
        }
    }
}

#[test]
fn advice_comes_from_what_each_family_offers() {
    // Over seeds 441 to 444: PostgreSQL's session lock breaks under pauses (a frozen host's
    // lock freed by keepalive), unfenced Redis and Redlock under pauses and partitions that
    // hold; the transaction lock does not.
    let designs = [
        ("Redis", "redis-unfenced"),
        ("Redlock", "redlock-unfenced"),
        ("PostgreSQL session", "postgres-session"),
        ("PostgreSQL transaction", "postgres-xact"),
    ];
    let mut text = "[review]\nname = \"t\"\nfrom = 441\nseeds = 4\nclasses = [\"pauses\", \"partitions-hold\"]\n".to_string();
    for (name, file) in designs {
        text.push_str(&format!(
            "\n[[design]]\nname = \"{name}\"\nscenario = \"{}\"\n",
            shipped(&format!("scenarios/chaos/{file}.toml"))
        ));
    }
    let dir = dir_with("advice", &[("review.toml", &text)]);
    let plan = review::load(&dir.join("review.toml"), None).expect("loads");
    let r = review::run(&plan, 1, |_, _| {});
    let rec = r.recommendation();
    let sentence = |name: &str| {
        rec.iter()
            .find(|s| s.starts_with(&format!("“{name}” breaks")))
            .unwrap_or_else(|| panic!("no sentence for {name}: {rec:?}"))
    };
    for (name, kind) in [
        ("Redis", "redis"),
        ("Redlock", "redlock"),
        ("PostgreSQL session", "postgres"),
    ] {
        let s = sentence(name);
        let family = lockstep::families::all()
            .iter()
            .find(|f| f.kind() == kind)
            .expect("a family");
        // Every token the family offers is named with the storage that checks it, and no
        // other.
        for v in family.fencing() {
            assert!(
                s.contains(&format!("model.fencing = \"{}\"", v.name)),
                "{s}"
            );
            let mode = if v.ordered { "fenced-all" } else { "cas-token" };
            assert!(s.contains(&format!("mode = \"{mode}\"")), "{s}");
        }
        if family.fencing().is_empty() {
            assert!(!s.contains("model.fencing"), "{s}");
            assert!(!s.contains("needs fencing tokens"), "{s}");
            assert!(s.contains("PostgreSQL gives no fencing token"), "{s}");
            assert!(
                s.contains("Of its family, “PostgreSQL transaction” stays safe"),
                "{s}"
            );
        }
    }
}

#[test]
fn every_command_the_review_prints_runs() {
    // Unfenced Redis breaks under partitions that hold at seed 12.
    let dir = dir_with(
        "commands",
        &[(
            "review.toml",
            &format!(
                "[review]\nname = \"t\"\nfrom = 12\nseeds = 4\nclasses = [\"partitions-hold\"]\n\n\
                 [[design]]\nname = \"Redis\"\nscenario = \"{}\"\n",
                shipped("scenarios/chaos/redis-unfenced.toml")
            ),
        )],
    );
    let file = dir.join("review.toml");
    let o = lockstep(&["review", file.to_str().unwrap(), "--seeds", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = stdout(&o);
    // The page command: the same file and seeds.
    let page = table
        .lines()
        .skip_while(|l| !l.starts_with("the page"))
        .nth(1)
        .expect("the page command")
        .trim();
    assert!(page.contains(" --seeds 1 "), "{page}");
    let o = shell(&dir, page);
    assert_eq!(o.status.code(), Some(0), "{page}: {}", stderr(&o));
    let html = std::fs::read_to_string(dir.join("review.html")).expect("the page");
    assert!(html.contains("1 seed per cell (from seed 12)"), "{html}");
    // The replay, as the terminal prints it (two lines), then the run's own reproduce line.
    let replay: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.ends_with("under partitions-hold, seed 12:"))
        .skip(1)
        .take_while(|l| l.starts_with("   "))
        .collect();
    assert_eq!(replay.len(), 2, "{table}");
    let o = shell(&dir, &replay.join("\n"));
    assert_eq!(o.status.code(), Some(0), "{replay:?}: {}", stderr(&o));
    let run = stdout(&o);
    assert!(run.contains("INVALID"), "{run}");
    let again = run
        .lines()
        .find_map(|l| l.strip_prefix("reproduce  "))
        .expect("a reproduce line");
    assert_eq!(
        again,
        "lockstep run review-1-partitions-hold.toml --seed 12"
    );
    let o = shell(&dir, again);
    let trace = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("seed "))
            .map(str::to_string)
    };
    assert_eq!(trace(&stdout(&o)), trace(&run), "{}", stdout(&o));
}

#[test]
fn every_design_of_the_shipped_review_runs_the_same_length_fault_window_and_tail() {
    let plan = review::load(
        &crate::support::root().join("reviews/designs.toml"),
        Some(1),
    )
    .expect("the shipped review loads");
    // From the cells the review runs, not from what it says of them.
    let window = |s: &lockstep::Scenario| {
        let c = s.chaos.as_ref().expect("a chaos cell");
        (s.duration, c.start, c.quiet_from)
    };
    let first = window(&plan.designs[0].cells[0].1);
    for d in &plan.designs {
        for (c, (_, s)) in d.cells.iter().enumerate() {
            assert_eq!(
                window(s),
                first,
                "{} under {}",
                d.name,
                plan.classes[c].name
            );
        }
    }
    // The designs' own files differ: Consul's tail counts its lock-delay, Redis's is 2 x TTL.
    let own_tails: std::collections::BTreeSet<u64> = plan
        .designs
        .iter()
        .map(|d| {
            let s = lockstep::load(&d.file).expect("its file").scenario;
            let text = std::fs::read_to_string(&d.file).expect("its file");
            let s = if s.chaos.is_some() {
                s
            } else {
                let with = lockstep::scenario::with_chaos(&text, &d.file, "default")
                    .expect("with the default profile");
                lockstep::parse(&with, &d.file).expect("loads")
            };
            let c = s.chaos.as_ref().expect("chaos");
            s.duration.as_nanos() - c.quiet_from.as_nanos()
        })
        .collect();
    assert!(
        own_tails.len() > 1,
        "the files' own tails are alike: {own_tails:?}"
    );
    // The JSON says so, design by design.
    let json = shipped_json();
    let windows: Vec<&serde_json::Value> = json["designs"]
        .as_array()
        .expect("designs")
        .iter()
        .map(|d| &d["window"])
        .collect();
    assert!(windows.iter().all(|w| *w == windows[0]), "{windows:?}");
    let (duration, start, quiet_from) = first;
    assert_eq!(
        (
            windows[0]["duration_ms"].as_u64(),
            windows[0]["fault_start_ms"].as_u64(),
            windows[0]["quiet_tail_ms"].as_u64()
        ),
        (
            Some(duration.as_millis()),
            Some(start.as_nanos() / 1_000_000),
            Some((duration.as_nanos() - quiet_from.as_nanos()) / 1_000_000)
        )
    );
}

/// `lockstep review reviews/designs.toml --seeds 1 --format json`, run once for the tests that
/// read it.
fn shipped_json() -> &'static serde_json::Value {
    static JSON: OnceLock<serde_json::Value> = OnceLock::new();
    JSON.get_or_init(|| {
        let o = lockstep(&[
            "review",
            "reviews/designs.toml",
            "--seeds",
            "1",
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).expect("JSON")
    })
}

/// The workload a cell runs, read from its scenario: the loop, the clients, the think and the
/// work.
fn workload_of(s: &lockstep::Scenario) -> (&'static str, usize, Distribution, Distribution) {
    let w = s.system.workload();
    (
        w.kind.kind(),
        s.system.layout().with(|r| r == Role::Client).len(),
        w.think.clone(),
        w.work.clone(),
    )
}

fn uniform_ms(lo: u64, hi: u64) -> Distribution {
    Distribution::Uniform {
        lo: Dur::from_millis(lo),
        hi: Dur::from_millis(hi),
    }
}

#[test]
fn every_design_of_the_shipped_review_runs_the_reviews_workload() {
    let plan = review::load(
        &crate::support::root().join("reviews/designs.toml"),
        Some(1),
    )
    .expect("the shipped review loads");
    // From the cells the review runs: its own `workload` table, every design alike.
    let want = ("counter", 2, uniform_ms(0, 100), uniform_ms(50, 200));
    for d in &plan.designs {
        assert!(!d.keep_workload, "{}", d.name);
        for (c, (_, s)) in d.cells.iter().enumerate() {
            assert_eq!(
                workload_of(s),
                want,
                "{} under {}",
                d.name,
                plan.classes[c].name
            );
        }
    }
    // The Kubernetes files' own workload is another: the review changed it.
    let own =
        lockstep::load(&crate::support::root().join("scenarios/chaos/kubernetes-unfenced.toml"))
            .expect("its file")
            .scenario;
    assert_eq!(workload_of(&own).2, uniform_ms(1_000, 3_000));
    assert!(
        plan.designs
            .iter()
            .any(|d| d.file.ends_with("kubernetes-unfenced.toml")),
        "the review has a Kubernetes design"
    );
    // The JSON says so: the review's workload, each design's the same, no difference told.
    let json = shipped_json();
    assert_eq!(
        json["workload"],
        serde_json::json!({
            "kind": "counter",
            "clients": 2,
            "think_ms": { "uniform": [0.0, 100.0] },
            "work_ms": { "uniform": [50.0, 200.0] },
        })
    );
    let designs = json["designs"].as_array().expect("designs");
    assert_eq!(designs.len(), plan.designs.len());
    for d in designs {
        assert_eq!(d["workload"], json["workload"], "{}", d["name"]);
    }
    for differs in json["workload_differs"]
        .as_array()
        .expect("workload_differs")
    {
        assert_eq!(differs, &serde_json::json!([]));
    }
}

#[test]
fn a_design_that_keeps_its_own_workload_shows_the_difference() {
    let design = |name: &str, file: &str, extra: &str| {
        format!(
            "\n[[design]]\nname = \"{name}\"\nscenario = \"{}\"\n{extra}\n",
            shipped(&format!("scenarios/chaos/{file}.toml"))
        )
    };
    let text = format!(
        "[review]\nname = \"t\"\nseeds = 1\nclasses = [\"pauses\"]\n{}{}{}{}",
        design("Redis", "redis-unfenced", ""),
        design(
            "Kubernetes, its own",
            "kubernetes-unfenced",
            "keep_workload = true"
        ),
        design("Kubernetes", "kubernetes-unfenced", ""),
        design(
            "Redis, three clients",
            "redis-unfenced",
            "set = { \"workload.clients\" = 3 }"
        ),
    );
    let dir = dir_with("own-workload", &[("review.toml", &text)]);
    let plan = review::load(&dir.join("review.toml"), None).expect("loads");
    // Without a `workload` table the review's is the first design's: Redis's file gives no
    // think or work, so the loader's defaults.
    let review_workload = ("counter", 2, uniform_ms(0, 100), uniform_ms(50, 200));
    let cell = |d: usize| workload_of(&plan.designs[d].cells[0].1);
    assert_eq!(cell(0), review_workload);
    assert_eq!(
        cell(1),
        (
            "counter",
            2,
            uniform_ms(1_000, 3_000),
            uniform_ms(50, 2_000)
        ),
        "its own file's"
    );
    assert_eq!(cell(2), review_workload, "the review's, not its file's");
    assert_eq!(
        cell(3).1,
        3,
        "its own `set` comes after the review's workload"
    );
    // The replayed cell is what ran: the file's think time is gone from it.
    let text = review::cell_text(&plan, "3", "pauses").expect("a cell");
    assert!(!text.contains("1_000, 3_000"), "{text}");
    assert!(
        text.contains("think_ms = { uniform = [0, 100] }") || !text.contains("think_ms"),
        "{text}"
    );
    let r = review::run(&plan, 1, |_, _| {});
    let json: serde_json::Value = serde_json::from_str(&r.json()).expect("json");
    assert_eq!(
        json["workload_differs"],
        serde_json::json!([[], ["think_ms", "work_ms"], [], ["clients"]])
    );
    assert_eq!(json["designs"][1]["keep_workload"], true);
    assert_eq!(
        json["designs"][1]["workload"]["think_ms"],
        serde_json::json!({ "uniform": [1000.0, 3000.0] })
    );
    let md = r.markdown();
    for want in [
        "| 2. Kubernetes, its own (own workload: think 1 s to 3 s, work 50 ms to 2 s) |",
        "| 4. Redis, three clients (own workload: 3 clients) |",
        "| 3. Kubernetes |",
        "the review's workload: 2 clients of the counter loop, think 0 ms to 100 ms, work 50 ms \
         to 200 ms (2 designs ran their own: said beside their names)",
    ] {
        assert!(md.contains(want), "`{want}` not in:\n{md}");
    }
    let table = r.table();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("2. Kubernetes, its own*")),
        "{table}"
    );
    assert!(
        table.contains(
            "* ran its own workload, not the review's:\n  2. Kubernetes, its own: think 1 s to 3 \
             s, work 50 ms to 2 s\n  4. Redis, three clients: 3 clients\n"
        ),
        "{table}"
    );
    assert!(
        r.recommendation().iter().any(|s| s.starts_with(
            "Every design ran the review's workload (2 clients of the counter loop, think 0 ms \
             to 100 ms, work 50 ms to 200 ms) but “Kubernetes, its own” (think 1 s to 3 s, work \
             50 ms to 2 s) and “Redis, three clients” (3 clients): their costs are not measured"
        )),
        "{:?}",
        r.recommendation()
    );
    let html = r.html(&[]);
    assert!(
        html.contains(
            "2. Kubernetes, its own<div class=\"workload\">own workload: think 1 s to 3 s, work \
             50 ms to 2 s</div>"
        ),
        "{html}"
    );
}

#[test]
fn the_reviews_workload_table_is_every_designs() {
    let text = format!(
        "[review]\nname = \"t\"\nseeds = 1\nclasses = [\"pauses\", \"crashes\"]\n\
         workload = {{ clients = 3, work_ms = 20 }}\n\n\
         [[design]]\nname = \"Kubernetes\"\nscenario = \"{}\"\n\n\
         [[design]]\nname = \"Redis\"\nscenario = \"{}\"\n",
        shipped("scenarios/chaos/kubernetes-unfenced.toml"),
        shipped("scenarios/chaos/redis-unfenced.toml"),
    );
    let dir = dir_with("workload-table", &[("review.toml", &text)]);
    let plan = review::load(&dir.join("review.toml"), None).expect("loads");
    // The keys it gives, and the loader's default for one it does not (think_ms), even where
    // a design's file gives its own (Kubernetes thinks 1-3 s).
    let want = (
        "counter",
        3,
        uniform_ms(0, 100),
        Distribution::Constant(Dur::from_millis(20)),
    );
    for d in &plan.designs {
        for (_, s) in &d.cells {
            assert_eq!(workload_of(s), want, "{}", d.name);
        }
    }
    assert_eq!(plan.workload.clients, 3);
    assert_eq!(
        plan.workload.work_ms,
        lockstep_reports::review::Spread::Constant(20.0)
    );
    assert_eq!(
        plan.workload.think_ms,
        Some(lockstep_reports::review::Spread::Uniform([0.0, 100.0]))
    );
}

#[test]
fn a_workload_the_designs_cannot_share_is_refused_at_its_key() {
    let leader = shipped("scenarios/failover/failover-redis-3.toml");
    let redis = shipped("scenarios/chaos/redis-unfenced.toml");
    let dir = dir_with("workload-errors", &[]);
    let two = |workload: &str, second: &str, extra: &str| {
        format!(
            "[review]\nname = \"t\"\nseeds = 1\nclasses = [\"pauses\"]\n{workload}\n\n\
             [[design]]\nname = \"a\"\nscenario = \"{redis}\"\n\n\
             [[design]]\nname = \"b\"\nscenario = \"{second}\"\n{extra}\n"
        )
    };
    let cases = [
        (
            two("workload = { clients = 0 }", &redis, ""),
            "review.workload.clients: must be between 1 and 1000, not 0 (in every design)"
                .to_string(),
        ),
        (
            two("workload = { acquire = \"try\" }", &redis, ""),
            "review.workload.acquire: not a key of a review's workload (clients, think_ms, \
             work_ms)"
                .to_string(),
        ),
        (
            two("workload = { work_ms = { uniform = [5] } }", &redis, ""),
            "review.workload.work_ms".to_string(),
        ),
        (
            two("workload = 1979-05-27", &redis, ""),
            "review.workload: a date or time is not a value this key takes".to_string(),
        ),
        // A design whose loop is another: refused, named at its file and key.
        (
            two("", &leader, ""),
            format!(
                "design[1].scenario: {leader}: workload.kind: runs the `leader` loop, not the \
                 review's `counter` (the first design's): every design runs the review's \
                 workload; give this design `keep_workload = true` to run its own"
            ),
        ),
    ];
    for (i, (text, wanted)) in cases.iter().enumerate() {
        let path = dir.join(format!("review-{i}.toml"));
        std::fs::write(&path, text).expect("write");
        let e = review::load(&path, None).expect_err(text).to_string();
        assert_eq!(e.lines().count(), 1, "one problem, once:\n{e}");
        assert!(
            e.starts_with(&format!("{}: {wanted}", path.display())),
            "`{wanted}` is not the problem of:\n{e}"
        );
    }
    // Kept, the leader design runs its own loop, clients and think, told beside its name.
    let path = dir.join("kept.toml");
    std::fs::write(&path, two("", &leader, "keep_workload = true")).expect("write");
    let plan = review::load(&path, None).expect("loads");
    let (kind, clients, think, _) = workload_of(&plan.designs[1].cells[0].1);
    assert_eq!((kind, clients, think), ("leader", 3, uniform_ms(0, 5_000)));
    assert_eq!(plan.workload.kind, "counter");
}

#[test]
fn each_cost_names_a_class_whose_cell_has_that_figure() {
    let json = shipped_json();
    let classes: Vec<&str> = json["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .map(|c| c["name"].as_str().expect("a name"))
        .collect();
    let costs = json["costs"].as_array().expect("costs");
    assert_eq!(
        costs.len(),
        json["designs"].as_array().expect("designs").len()
    );
    let mut ranked = Vec::new();
    for (d, cost) in costs.iter().enumerate() {
        let row = &json["cells"].as_array().expect("cells")[d * classes.len()..][..classes.len()];
        // Each figure: the class named exists, its cell has that figure, and no class is worse.
        for (figure, class, worse) in [
            ("acquire_p99_ms", "acquire_p99_class", 1.0),
            ("availability", "availability_class", -1.0),
            ("sections_per_s", "sections_per_s_class", -1.0),
        ] {
            let name = cost[class]
                .as_str()
                .unwrap_or_else(|| panic!("{d}: no {class}: {cost}"));
            let c = classes
                .iter()
                .position(|n| *n == name)
                .unwrap_or_else(|| panic!("{d}: {class} `{name}` is not a class"));
            let value = cost[figure].as_f64().expect("a figure");
            assert_eq!(row[c][figure].as_f64(), Some(value), "{d} {figure}");
            for other in row {
                let v = other[figure].as_f64().expect("every cell has it");
                assert!(
                    v * worse <= value * worse,
                    "{d} {figure}: {v} is worse than {value}"
                );
            }
            if figure == "sections_per_s" {
                assert!(value > 0.0, "{d}: no critical section completed");
            }
        }
        if let Some(rank) = cost["rank"].as_u64() {
            assert_eq!(json["standing"][d], "safe", "{d}");
            ranked.push((rank, d));
        } else {
            assert_ne!(json["standing"][d], "safe", "{d}");
        }
    }
    // The safe designs are ranked 1, 2, ... by their worst acquire p99 (the default cost).
    ranked.sort();
    for (i, (rank, _)) in ranked.iter().enumerate() {
        assert_eq!(*rank, i as u64 + 1);
    }
    for pair in ranked.windows(2) {
        let p99 = |d: usize| costs[d]["acquire_p99_ms"].as_f64().expect("p99");
        assert!(p99(pair[0].1) <= p99(pair[1].1), "{pair:?}");
    }
    let first = &json["designs"][ranked[0].1]["name"];
    assert!(
        json["recommendation"][0]
            .as_str()
            .expect("a sentence")
            .starts_with(&format!("Use “{}”", first.as_str().expect("a name"))),
        "{}",
        json["recommendation"][0]
    );
    assert!(
        json["ranking"]
            .as_str()
            .expect("the ranking in words")
            .contains("ranked by acquire p99 (lowest first), then availability (highest first)")
    );
}

#[test]
fn sections_per_second_are_the_sections_completed_over_the_fault_window() {
    let dir = dir_with(
        "sections",
        &[
            ("chaos.toml", CHAOS),
            (
                "review.toml",
                &review_of("classes = [\"crashes\"]\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\n")
                    .replace("seeds = 4\n\n", "seeds = 3\n"),
            ),
        ],
    );
    let plan = review::load(&dir.join("review.toml"), None).expect("loads");
    let r = review::run(&plan, 1, |_, _| {});
    let got = r.cells[0].sections_per_s.expect("a figure");
    // Each seed's run, judged: the checker's fault window, summed over the seeds.
    let scenario = &plan.designs[0].cells[0].1;
    let (mut sections, mut ns) = (0u64, 0u64);
    for seed in 1..=3 {
        let w = lockstep::run(scenario, seed, false)
            .verdict
            .liveness
            .fault_window
            .expect("a chaos run's fault window");
        sections += w.cs_completed;
        ns += w.to_ns - w.from_ns;
    }
    assert!(sections > 0);
    let want = sections as f64 / (ns as f64 / 1e9);
    assert!((got - want).abs() <= want * 1e-9, "{got} vs {want}");
    // The page shows it, with its class.
    assert!(r.markdown().contains(" (crash) |"), "{}", r.markdown());
}
