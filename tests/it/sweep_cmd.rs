//! `lockstep sweep` and `lockstep merge`: results independent of threads and shards, merged
//! shards equal to one sweep byte for byte, counts and first failing seeds checked against
//! single runs, bad input, and `--check-determinism` on every command that runs.

use std::path::Path;

use lockstep::sweep::{self, SweepConfig, SweepSummary};
use lockstep_check::Validity;

use crate::support::{TempDir, lockstep, root, stderr, stdout, temp_scenario};

const K1: &str = "scenarios/catalogue/k1-gc-pause-unfenced.toml";
/// Invalid on most seeds, valid on seeds 7, 15 and 22 of 1-24 (its file says why): it
/// expects invalid, so those three fail.
const J1_WAIT: &str = "scenarios/catalogue/j1-sentinel-partition-wait.toml";

fn config(from: u64, count: u64, jobs: usize) -> SweepConfig {
    SweepConfig {
        from,
        count,
        shard: None,
        jobs,
        check_determinism: false,
    }
}

/// Each seed's result as the observer saw it, sorted by seed: everything but the failure
/// details, which a worker may skip for a seed that cannot be among the first kept.
type PerSeed = Vec<(u64, u64, Validity, bool, u64, u64, Vec<u64>)>;

fn sweep_observed(file: &str, config: &SweepConfig) -> (SweepSummary, PerSeed) {
    let target = sweep::load(Path::new(file), None).expect("the scenario loads");
    let mut seen = Vec::new();
    let summary = sweep::sweep(&target, config, |o| {
        seen.push((
            o.seed,
            o.trace_hash,
            o.judged,
            o.expected,
            o.events,
            o.grants,
            o.acquire_latencies_ns.clone(),
        ));
    });
    seen.sort_by_key(|s| s.0);
    (summary, seen)
}

fn in_root(file: &str) -> String {
    root().join(file).display().to_string()
}

#[test]
fn per_seed_results_do_not_depend_on_the_number_of_threads() {
    let k1 = in_root(K1);
    let (one, seen_one) = sweep_observed(&k1, &config(5, 24, 1));
    let (two, seen_two) = sweep_observed(&k1, &config(5, 24, 2));
    let seeds: Vec<u64> = seen_one.iter().map(|s| s.0).collect();
    assert_eq!(seeds, (5..29).collect::<Vec<_>>(), "every seed once");
    assert_eq!(seen_one, seen_two);
    assert_eq!(one, two);
    assert_eq!(one.json(), two.json());
    // And each equals a single run of that seed.
    let scenario = lockstep::load(Path::new(&k1)).expect("K1").scenario;
    for &(seed, hash, judged, ..) in seen_one.iter().step_by(8) {
        let r = lockstep::run(&scenario, seed, false);
        assert_eq!((r.trace_hash, r.judged), (hash, judged), "seed {seed}");
    }
}

#[test]
fn a_sweep_counts_the_failing_seeds_and_names_the_first_with_reproduce_commands() {
    let (summary, seen) = sweep_observed(&in_root(J1_WAIT), &config(1, 24, 2));
    // Judge each seed with single runs, as a user would.
    let scenario = lockstep::load(&root().join(J1_WAIT)).expect("J1").scenario;
    let failing: Vec<u64> = (1..=24)
        .filter(|&seed| !lockstep::run(&scenario, seed, false).expected())
        .collect();
    assert_eq!(failing, [9, 10, 11], "the file's comment names these seeds");
    assert_eq!((summary.runs, summary.passed, summary.failed), (24, 21, 3));
    assert_eq!(summary.verdict_counts.valid, 3);
    assert_eq!(summary.verdict_counts.invalid, 21);
    assert_eq!(summary.metrics.runs_with("double_holders"), 21);
    assert_eq!(summary.grants_per_run.count(), 24);
    let latencies: usize = seen.iter().map(|s| s.6.len()).sum();
    assert_eq!(summary.acquire_latency_ns.count(), latencies as u64);
    let kept: Vec<u64> = summary.failures.iter().map(|f| f.seed).collect();
    assert_eq!(kept, failing);
    // Each reproduce command reproduces the failure.
    for f in &summary.failures {
        let cmd = f.reproduce.clone();
        assert!(cmd.ends_with(&format!(" --seed {}", f.seed)), "{cmd}");
        let mut args: Vec<&str> = cmd.split(' ').skip(1).collect();
        args.extend(["--format", "json"]);
        let out = lockstep(&args);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("run JSON");
        assert_eq!(v["trace_hash"], f.trace_hash.as_str());
        assert_eq!(v["verdict"], "valid");
    }
}

#[test]
fn only_the_first_ten_failing_seeds_by_position_are_kept_whatever_the_threads() {
    // K1 expecting valid fails on every seed: 12 failures, the first 10 kept.
    let text = std::fs::read_to_string(root().join(K1))
        .expect("K1")
        .replace("verdict = \"invalid\"", "verdict = \"valid\"");
    let path = temp_scenario("sweep-first-ten", &text);
    let path = path.to_str().expect("utf-8");
    for jobs in [1, 2] {
        let (summary, _) = sweep_observed(path, &config(u64::MAX - 5, 12, jobs));
        assert_eq!(summary.failed, 12);
        let kept: Vec<u64> = summary.failures.iter().map(|f| f.seed).collect();
        // The range wraps from u64::MAX to 0: positions, not seed values, order it.
        let first: Vec<u64> = (0..10).map(|i| (u64::MAX - 5).wrapping_add(i)).collect();
        assert_eq!(kept, first, "jobs {jobs}");
    }
}

/// A fresh, empty directory for one test's files.
fn out_dir(test: &str) -> TempDir {
    TempDir::new(&format!("sweep-{test}"))
}

/// Runs the binary, expects `code`, and returns stdout.
fn run_ok(args: &[&str], code: i32) -> String {
    let out = lockstep(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// Writes the JSON of `lockstep sweep J1_WAIT --seeds 24` with `extra` arguments to `dir/name`.
fn sweep_json(dir: &Path, name: &str, extra: &[&str]) -> String {
    let mut args = vec!["sweep", J1_WAIT, "--seeds", "24", "--format", "json"];
    args.extend(extra);
    let out = lockstep(&args);
    // 1 when the shard holds one of the failing seeds 7, 15, 22; else 0.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        stderr(&out)
    );
    let json = stdout(&out);
    let path = dir.join(name);
    std::fs::write(&path, &json).expect("write");
    path.display().to_string()
}

#[test]
fn four_shards_merged_print_the_json_of_the_unsharded_sweep() {
    let dir = out_dir("merge");
    let whole = run_ok(
        &[
            "sweep", J1_WAIT, "--seeds", "24", "--format", "json", "--jobs", "2",
        ],
        1,
    );
    let shards: Vec<String> = (1..=4)
        .map(|i| {
            let shard = format!("{i}/4");
            sweep_json(
                &dir,
                &format!("s{i}.json"),
                &["--shard", &shard, "--jobs", "1"],
            )
        })
        .collect();
    // Each shard ran its own seeds: 6 each.
    for s in &shards {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(s).expect("shard")).expect("JSON");
        assert_eq!(v["runs"], 6, "{s}");
    }
    // In any order.
    let order = [&shards[2], &shards[0], &shards[3], &shards[1]];
    let mut args = vec!["merge", "--format", "json"];
    args.extend(order.iter().map(|s| s.as_str()));
    let merged = run_ok(&args, 1);
    assert_eq!(merged, whole);
    let v: serde_json::Value = serde_json::from_str(&merged).expect("JSON");
    assert_eq!(v["shard"], serde_json::Value::Null);
    assert_eq!(v["failed"], 3);
    assert_eq!(v["missing_shards"], serde_json::json!([]));
    // The same work prints the same bytes: no wall-clock time in the JSON.
    let again = run_ok(
        &[
            "sweep", J1_WAIT, "--seeds", "24", "--format", "json", "--jobs", "1",
        ],
        1,
    );
    assert_eq!(again, whole);
}

#[test]
fn merge_rejects_inputs_of_other_scenarios_ranges_and_overlapping_shards() {
    let dir = out_dir("reject");
    let s1 = sweep_json(&dir, "s1.json", &["--shard", "1/4"]);
    let s2 = sweep_json(&dir, "s2.json", &["--shard", "2/4"]);
    let s3 = sweep_json(&dir, "s3.json", &["--shard", "3/4"]);
    let whole = sweep_json(&dir, "whole.json", &[]);
    let thirds = sweep_json(&dir, "t2.json", &["--shard", "2/3"]);
    let later = sweep_json(&dir, "later.json", &["--shard", "2/4", "--from", "2"]);
    let twice = sweep_json(
        &dir,
        "twice.json",
        &["--shard", "2/4", "--check-determinism"],
    );
    // The same scenario under another file text (a comment added) is another scenario.
    let text = std::fs::read_to_string(root().join(J1_WAIT)).expect("J1") + "\n# edited\n";
    let edited = temp_scenario("sweep-edited", &text);
    let edited_json = run_ok(
        &[
            "sweep",
            edited.to_str().expect("utf-8"),
            "--seeds",
            "24",
            "--shard",
            "2/4",
            "--format",
            "json",
        ],
        1,
    );
    let other = dir.join("other.json");
    std::fs::write(&other, edited_json).expect("write");
    let other = other.display().to_string();
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{\"format\": \"something else\"}").expect("write");
    let garbage = garbage.display().to_string();
    let cases: [(&[&str], &str); 8] = [
        (&[&s1, &other], "different scenarios"),
        (
            &[&s1, &later],
            "different seeds: 1 to 24 (24 seeds) and 2 to 25",
        ),
        (&[&s1, &s2, &s1], "overlap: both cover shard 1/4"),
        (&[&s1, &thirds], "different numbers of shards: 4 and 3"),
        (&[&s1, &whole], "covers every seed of the range"),
        (&[&s1, &twice], "--check-determinism"),
        (
            &[&s1, &garbage],
            "not the JSON of `lockstep sweep --format json`",
        ),
        (&[&s1, "no-such.json"], "no-such.json: cannot read"),
    ];
    for (files, message) in cases {
        let mut args = vec!["merge"];
        args.extend(files);
        let out = lockstep(&args);
        assert_eq!(out.status.code(), Some(2), "{files:?}");
        assert!(stdout(&out).is_empty(), "{files:?}: no partial output");
        assert!(
            stderr(&out).contains(message),
            "{files:?}: {}",
            stderr(&out)
        );
    }
    // A subset merges, and says which shards are missing.
    let text = run_ok(&["merge", &s3, &s1], 1);
    assert!(
        text.contains("shards 1, 3 of 4: 12 run (missing: 2, 4)"),
        "{text}"
    );
    assert!(text.contains("(shards 2, 4 missing)"), "{text}");
    let json = run_ok(&["merge", &s1, &s3, "--format", "json"], 1);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(
        v["shard"],
        serde_json::json!({"count": 4, "included": [1, 3]})
    );
    assert_eq!(v["missing_shards"], serde_json::json!([2, 4]));
    assert_eq!(v["runs"], 12);
}

#[test]
fn bad_sweep_input_exits_2_with_an_error_and_no_output() {
    let cases: [(&[&str], &str); 6] = [
        (&["sweep", "no-such.toml", "--seeds", "3"], "no-such.toml"),
        (
            &["sweep", K1, "--seeds", "3", "--shard", "1/100001"],
            "at most 100000 shards",
        ),
        (&["sweep", K1, "--seeds", "0"], "at least 1 seed"),
        (
            &["sweep", K1, "--seeds", "3", "--shard", "0/4"],
            "numbered from 1 to 4",
        ),
        (
            &["sweep", K1, "--seeds", "3", "--shard", "5/4"],
            "numbered from 1 to 4",
        ),
        (
            &["sweep", K1, "--seeds", "3", "--shard", "2"],
            "expected I/N",
        ),
    ];
    for (args, message) in cases {
        let out = lockstep(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stdout(&out).is_empty(), "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_sweep_table_shows_rates_and_keeps_stderr_quiet_off_a_terminal() {
    let out = lockstep(&["sweep", K1, "--seeds", "8", "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for expected in [
        "seeds      1 to 8 (8 seeds)",
        "on 2 threads",
        "seeds/s",
        "95% interval (Wilson)",
        "acquire latency",
        "grants per run",
        "8 seeds: every run met [expect]",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    // The progress bar hides itself when stderr is not a terminal.
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn check_determinism_passes_on_a_catalogue_scenario_in_every_command() {
    let text = run_ok(&["run", K1, "--seed", "3", "--check-determinism"], 0);
    assert!(text.contains("determinism: ran twice"), "{text}");
    let (code, v) = {
        let out = lockstep(&[
            "check",
            K1,
            "--seeds",
            "3",
            "--check-determinism",
            "--format",
            "json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        (out.status.code(), v)
    };
    assert_eq!(code, Some(0));
    assert_eq!(v["scenarios"][0]["determinism"]["mismatched"], 0);
    let json = run_ok(
        &[
            "sweep",
            K1,
            "--seeds",
            "4",
            "--check-determinism",
            "--format",
            "json",
        ],
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["determinism_checked"], true);
    assert_eq!(v["nondeterministic"], 0);
}

#[test]
fn a_second_run_with_another_trace_hash_is_reported_with_scenario_seed_and_both_hashes() {
    let scenario = lockstep::load(&root().join(K1)).expect("K1").scenario;
    let mut first = lockstep::run(&scenario, 3, false);
    assert_eq!(
        lockstep::run::rerun_matches(&scenario, &first, false),
        Ok(())
    );
    let real = first.trace_hash;
    first.trace_hash ^= 1;
    let mismatch = lockstep::run::rerun_matches(&scenario, &first, false).expect_err("differs");
    let text = mismatch.to_string();
    for part in [
        "k1-gc-pause-unfenced".to_string(),
        "seed 3".to_string(),
        format!("{:016x}", real ^ 1),
        format!("{real:016x}"),
    ] {
        assert!(text.contains(&part), "{part}: {text}");
    }
}

#[test]
fn every_flag_of_sweep_and_merge_is_in_the_readme() {
    crate::tidy::flags_are_in_the_readme(
        "sweep",
        &[
            "--seeds",
            "--from",
            "--jobs",
            "--shard",
            "--format",
            "--check-determinism",
        ],
    );
    crate::tidy::flags_are_in_the_readme("merge", &["--format"]);
    crate::tidy::flags_are_in_the_readme("run", &["--check-determinism"]);
    crate::tidy::flags_are_in_the_readme("check", &["--check-determinism"]);
}

#[test]
fn a_chaos_sweep_is_the_same_on_one_thread_two_threads_and_four_merged_shards() {
    let chaos = in_root("scenarios/chaos/redis-unfenced.toml");
    let (one, seen_one) = sweep_observed(&chaos, &config(1, 16, 1));
    let (two, seen_two) = sweep_observed(&chaos, &config(1, 16, 2));
    assert_eq!(seen_one, seen_two);
    assert_eq!(one.json(), two.json());
    assert_eq!(one.recovery_ns.count() + one.violations.no_recovery, 16);

    // `--chaos default` on a catalogue file, in four shards, merged.
    let dir = out_dir("chaos-merge");
    let sweep = |extra: &[&str]| {
        let mut args = vec![
            "sweep", K1, "--chaos", "default", "--seeds", "12", "--format", "json",
        ];
        args.extend(extra);
        let out = lockstep(&args);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        stdout(&out)
    };
    let whole = sweep(&["--jobs", "2"]);
    let v: serde_json::Value = serde_json::from_str(&whole).expect("JSON");
    assert_eq!(v["runs"], 12);
    assert!(v["recovery_ms"]["p50"].is_number(), "{whole}");
    let mut files = Vec::new();
    for i in 1..=4 {
        let path = dir.join(format!("c{i}.json"));
        std::fs::write(&path, sweep(&["--shard", &format!("{i}/4"), "--jobs", "1"]))
            .expect("write");
        files.push(path.display().to_string());
    }
    let mut args = vec!["merge", "--format", "json"];
    args.extend(files.iter().map(String::as_str));
    let out = lockstep(&args);
    assert_eq!(stdout(&out), whole);
}

/// The JSON of shard `index` of 2 of a sweep of K1 over seeds 1 to 4, as `serde_json` values.
fn k1_half(index: u64) -> serde_json::Value {
    let target = sweep::load(&root().join(K1), None).expect("the scenario loads");
    let mut config = config(1, 4, 1);
    config.shard = Some(sweep::Shard { index, count: 2 });
    let summary = sweep::sweep(&target, &config, |_| {});
    serde_json::from_str(&summary.json()).expect("JSON")
}

#[test]
fn every_count_of_a_summary_is_bounded_by_what_it_holds_with_its_key_named() {
    let half = k1_half(1);
    assert!(SweepSummary::from_json(&half.to_string()).is_ok());
    let failure = serde_json::json!({
        "seed": 2, "trace_hash": "0000000000000000", "verdict": "valid",
        "unmet": [], "explanations": [], "reproduce": "",
    });
    let big = u64::MAX / 2 + 1;
    // Each edit a hand-made file could make, and the key its error names.
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "/shard/count",
            4_294_967_295u64.into(),
            "`shard.count`: 4294967295 is out of range",
        ),
        ("/shard/count", 100_001.into(), "`shard.count`"),
        (
            "/shard/included",
            serde_json::json!([2, 1]),
            "`shard.included`",
        ),
        ("/seeds/count", u64::MAX.into(), "`seeds`"),
        (
            "/runs",
            3.into(),
            "`runs`: 3 runs, but its shards of `seeds` hold 2 seeds",
        ),
        ("/passed", u64::MAX.into(), "`passed`: with `failed`"),
        ("/verdict_counts/valid", u64::MAX.into(), "`verdict_counts`"),
        (
            "/violations/exhausted",
            3.into(),
            "`violations.exhausted`: 3 is more than `runs` (2)",
        ),
        (
            "/metrics/grants/runs",
            3.into(),
            "`metrics.grants.runs`: 3 is more than `runs` (2)",
        ),
        (
            "/metrics/token_order/nonzero",
            1.into(),
            "`metrics.token_order`: its counts cannot be one metric's",
        ),
        (
            "/metrics/grants/total",
            0.into(),
            "`metrics.grants`: its counts cannot be one metric's",
        ),
        (
            "/metrics/grant",
            serde_json::json!({"runs": 1, "nonzero": 0, "never": 0, "total": 0, "max": 0}),
            "`metrics.grant`: not a metric of the checker",
        ),
        ("/nondeterministic", 1.into(), "`nondeterministic`"),
        (
            "/failures",
            serde_json::json!([failure]),
            "`failures`: 1 is more than `failed` (0)",
        ),
        (
            "/mismatches",
            serde_json::json!([{"scenario": "k1", "seed": 1,
                "first_trace_hash": "0000000000000000", "second_trace_hash": "0000000000000001"}]),
            "`mismatches`: 1 is more than `nondeterministic` (0)",
        ),
        (
            "/acquire_latency_ns",
            serde_json::json!({"count": 0, "min": 1, "max": 1, "buckets": [[1, big], [1, big]]}),
            "`acquire_latency_ns`: the counts pass 2^64 - 1",
        ),
    ];
    for (pointer, value, message) in cases {
        let mut edited = half.clone();
        match edited.pointer_mut(pointer) {
            Some(old) => *old = value,
            // A key the summary does not have: added to its table.
            None => {
                let (table, key) = pointer.rsplit_once('/').expect(pointer);
                let table = edited.pointer_mut(table).expect(pointer);
                table
                    .as_object_mut()
                    .expect(pointer)
                    .insert(key.into(), value);
            }
        }
        let error = SweepSummary::from_json(&edited.to_string()).expect_err(pointer);
        assert!(error.contains(message), "{pointer}: {error}");
    }
    // A failing seed the summary does not cover: seed 2 is in shard 2 of 2.
    let mut edited = half.clone();
    edited["failed"] = 1.into();
    edited["passed"] = half["runs"].as_u64().map(|r| r - 1).into();
    edited["failures"] = serde_json::json!([failure]);
    let error = SweepSummary::from_json(&edited.to_string()).expect_err("uncovered seed");
    assert!(error.contains("`failures`: seed 2 is not among"), "{error}");
}

#[test]
fn a_merge_whose_sample_counts_would_overflow_names_the_input_and_key() {
    let big = u64::MAX / 2 + 1;
    let inputs: Vec<(String, SweepSummary)> = [1, 2]
        .into_iter()
        .map(|index| {
            let mut v = k1_half(index);
            v["acquire_latency_ns"] =
                serde_json::json!({"count": big, "min": 1, "max": 1, "buckets": [[1, big]]});
            let s = SweepSummary::from_json(&v.to_string()).expect("each alone is consistent");
            (format!("s{index}.json"), s)
        })
        .collect();
    let error = sweep::merge(&inputs).expect_err("the sum overflows");
    assert_eq!(
        error.to_string(),
        "s2.json: `acquire_latency_ns.count`: the merged count would pass 2^64 - 1"
    );
}

#[test]
fn merge_of_a_summary_claiming_four_billion_shards_stops_at_once_naming_the_key() {
    let dir = out_dir("huge-shards");
    let mut v = k1_half(1);
    v["shard"]["count"] = 4_294_967_295u64.into();
    let file = dir.join("huge.json");
    std::fs::write(&file, v.to_string()).expect("write");
    let name = file.display().to_string();
    // Before its bound, this merge grew to 17.8 GB in 60 s.
    let out = crate::support::lockstep_within(
        &["merge", &name, "--format", "json"],
        std::time::Duration::from_secs(10),
    )
    .expect("the merge stops at once");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "no partial output");
    assert_eq!(
        stderr(&out).trim(),
        format!("{name}: `shard.count`: 4294967295 is out of range: expected 2 to 100000 shards")
    );
}

#[test]
fn with_verdict_any_the_first_invalid_seeds_are_named_with_reproduce_commands() {
    // J1 (invalid on seeds 1-24 but 9, 10 and 11) expecting any verdict: no run fails, and
    // the sweep still says which seeds were invalid, as it does for failures.
    let text = std::fs::read_to_string(root().join(J1_WAIT))
        .expect("J1")
        .replace("verdict = \"invalid\"", "verdict = \"any\"")
        .replace("double_holders = { min = 1 }", "");
    let path = temp_scenario("sweep-any", &text);
    let file = path.to_str().expect("utf-8");
    let table = run_ok(&["sweep", file, "--seeds", "24", "--jobs", "2"], 0);
    assert!(
        table.contains("24 seeds: every run met [expect]"),
        "{table}"
    );
    let first: Vec<u64> = (1..=24).filter(|s| ![9, 10, 11].contains(s)).collect();
    assert!(
        table.contains("first invalid seeds:\n  seed 1  trace "),
        "{table}"
    );
    for seed in &first[..10] {
        assert!(
            table.contains(&format!(
                "    reproduce: lockstep run {file} --seed {seed}\n"
            )),
            "seed {seed}: {table}"
        );
    }
    assert!(table.contains("  ... and 11 more invalid seeds"), "{table}");
    // The JSON keeps them; shards merge to the whole.
    let json = |extra: &[&str]| {
        let mut args = vec!["sweep", file, "--seeds", "24", "--format", "json"];
        args.extend(extra);
        run_ok(&args, 0)
    };
    let whole = json(&["--jobs", "2"]);
    let v: serde_json::Value = serde_json::from_str(&whole).expect("JSON");
    let kept: Vec<u64> = v["invalid"]
        .as_array()
        .expect("invalid")
        .iter()
        .map(|f| f["seed"].as_u64().expect("seed"))
        .collect();
    assert_eq!(kept, first[..10]);
    assert_eq!(v["failures"], serde_json::json!([]));
    let dir = out_dir("any-shards");
    let shards: Vec<String> = (1..=2)
        .map(|i| {
            let s = dir.join(format!("s{i}.json"));
            std::fs::write(&s, json(&["--shard", &format!("{i}/2")])).expect("write");
            s.display().to_string()
        })
        .collect();
    let merged = run_ok(&["merge", "--format", "json", &shards[1], &shards[0]], 0);
    assert_eq!(merged, whole);
    // The first one's command replays an invalid run that meets [expect].
    let replay = lockstep(&["run", file, "--seed", "1", "--format", "json"]);
    assert_eq!(replay.status.code(), Some(0));
    let r: serde_json::Value = serde_json::from_str(&stdout(&replay)).expect("run JSON");
    assert_eq!(r["verdict"], "invalid");
    assert_eq!(r["trace_hash"], v["invalid"][0]["trace_hash"]);
    std::fs::remove_dir_all(&dir).expect("clean up");
    std::fs::remove_dir_all(path.parent().expect("its directory")).expect("clean up");
    // A sweep that expects a verdict keeps none apart: its JSON has no `invalid`.
    let expecting = run_ok(&["sweep", J1_WAIT, "--seeds", "3", "--format", "json"], 0);
    assert!(!expecting.contains("\"invalid\":["), "{expecting}");
}
