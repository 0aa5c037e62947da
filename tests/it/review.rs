//! Design reviews: the review file and its errors, the cells it builds (the class's faults
//! alone, keys set and added, the default profile for a file without one), a cell's scenario
//! printed for replay, the same review for any number of threads, and `lockstep review`'s
//! outputs.

use lockstep::review::{self, CLASSES};
use lockstep_reports::review::CostOrder;
use lockstep_sim::Fault;

use crate::support::{GOOD, TempDir, lockstep, stderr, stdout};

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
                    Fault::Pause { .. } | Fault::Resume { .. } => "pauses",
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
                "design[1].set.\"x\": must be a number, a boolean or a string",
                "design[1].set.\"model\": in ",
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
                "unknown value `speed`, expected `latency` or `availability`",
            ],
        ),
        (
            "[review]\nname = \"t\"\n\n[[design]]\nname = \"a\"\nscenario = \"chaos.toml\"\nset = { \"model.ttl\" = 5 }\n",
            vec!["design[0]: ", "under pauses: model.ttl"],
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
        let replay = format!("--scenario {cell_ref} | lockstep run - --seed {seed}");
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
