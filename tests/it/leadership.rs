//! Leadership bounds in `[expect]`: each turns the checker's leadership metrics on, and only
//! they do; `lockstep run` reports the metrics, holds the run to the bounds (`*_ms` against
//! the measured nanoseconds) and refuses bounds no run can meet; `lockstep report` adds its
//! leadership columns only when a row has them. Today's counter workload stands in for a
//! leader: each critical section that wrote is a term.

use std::path::Path;

use lockstep::parse;

use crate::support::{CLEAN, errors_of, lockstep, stderr, stdout, temp_scenario};

/// CLEAN with `[expect]` lines.
fn with_expect(lines: &str) -> String {
    format!("{CLEAN}\n[expect]\n{lines}\n")
}

fn run_json(test: &str, text: &str) -> (Option<i32>, serde_json::Value, String) {
    let path = temp_scenario(test, text);
    let out = lockstep(&["run", path.to_str().expect("utf-8"), "--format", "json"]);
    let raw = stdout(&out);
    let v = serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{e}: {raw}{}", stderr(&out)));
    (out.status.code(), v, raw)
}

#[test]
fn a_bound_on_any_leadership_metric_and_only_those_turns_the_metrics_on() {
    let path = Path::new("leadership.toml");
    for key in [
        "terms",
        "two_leaders_ms",
        "failover_max_ms",
        "duplicate_items",
        "skipped_items",
    ] {
        let s = parse(&with_expect(&format!("{key} = {{ max = 100 }}")), path).expect("loads");
        assert!(s.check_options.leadership, "{key}");
    }
    for other in ["grants = { min = 1 }", "double_holders = 0", ""] {
        let s = parse(&with_expect(other), path).expect("loads");
        assert!(!s.check_options.leadership, "{other}");
    }
}

#[test]
fn run_reports_leadership_only_when_bounded_and_the_trace_does_not_move() {
    let (code, plain, raw) = run_json("lead-plain", CLEAN);
    assert_eq!(code, Some(0));
    assert!(!raw.contains("leadership"), "{raw}");
    let bounded = with_expect("terms = { min = 1 }\ntwo_leaders_ms = 0\nduplicate_items = 0");
    let (code, v, _) = run_json("lead-bounded", &bounded);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["trace_hash"], plain["trace_hash"]);
    let l = &v["leadership"];
    let terms = l["terms"].as_u64().expect("terms");
    // Each critical section of the counter workload writes once, and each that wrote is a term.
    assert_eq!(Some(terms), v["accepted_writes"].as_u64());
    assert!(terms >= 2 && Some(terms) <= v["grants"].as_u64(), "{v}");
    assert_eq!(l["two_leaders_ms"], 0.0);
    assert_eq!(
        (l["duplicate_items"].as_u64(), l["skipped_items"].as_u64()),
        (Some(0), Some(0))
    );
    let details = &v["details"]["leadership"];
    assert_eq!(details["terms"], l["terms"]);
    let changes = details["failover"]["count"].as_u64().expect("changes");
    assert_eq!(changes, terms - 1);
    let max_ns = details["failover"]["max_ns"].as_u64().expect("max_ns");
    assert_eq!(l["failover_ms"]["max"].as_f64(), Some(max_ns as f64 / 1e6));
    assert!(max_ns > 0, "clients think between critical sections");

    let path = temp_scenario("lead-table", &bounded);
    let text = stdout(&lockstep(&["run", path.to_str().expect("utf-8")]));
    for row in [
        "leadership terms",
        "two leaders",
        "leader failover",
        "items done twice",
    ] {
        assert!(text.contains(row), "no `{row}` in {text}");
    }
    let plain_path = temp_scenario("lead-table-plain", CLEAN);
    let text = stdout(&lockstep(&["run", plain_path.to_str().expect("utf-8")]));
    assert!(!text.contains("leadership terms"), "{text}");
}

#[test]
fn leadership_bounds_hold_runs_to_them_with_ms_against_ns() {
    let bounded = with_expect("terms = { min = 1 }");
    let (_, v, _) = run_json("lead-measure", &bounded);
    let terms = v["leadership"]["terms"].as_u64().expect("terms");
    let max_ns = v["details"]["leadership"]["failover"]["max_ns"]
        .as_u64()
        .expect("a failover");
    let max_ms = max_ns / 1_000_000;

    // The longest change is above max_ms ms (unless exactly whole) and at most max_ms + 1.
    let (code, v, _) = run_json(
        "lead-fo-ok",
        &with_expect(&format!("failover_max_ms = {{ max = {} }}", max_ms + 1)),
    );
    assert_eq!(
        (code, v["expected"].as_bool()),
        (Some(0), Some(true)),
        "{v}"
    );
    let (code, v, _) = run_json(
        "lead-fo-miss",
        &with_expect(&format!("failover_max_ms = {{ max = {} }}", max_ms - 1)),
    );
    assert_eq!(code, Some(1));
    assert_eq!(v["miss"], "liveness");
    let unmet = v["unmet"][0].as_str().expect("a sentence");
    let prefix = format!("expected failover_max_ms <= {}, got ", max_ms - 1);
    assert!(
        unmet.starts_with(&prefix) && unmet.ends_with("ms"),
        "{unmet}"
    );

    let (code, v, _) = run_json(
        "lead-terms",
        &with_expect(&format!("terms = {}", terms + 1)),
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        v["unmet"][0],
        format!("expected terms = {}, got {terms}", terms + 1)
    );
    assert_eq!(v["miss"], "liveness");

    let (code, v, _) = run_json("lead-two", &with_expect("two_leaders_ms = { min = 1 }"));
    assert_eq!(code, Some(1));
    assert_eq!(v["unmet"][0], "expected two_leaders_ms >= 1, got 0ns");
    assert_eq!(v["miss"], "safety");
    let (_, v, _) = run_json("lead-dup", &with_expect("duplicate_items = { min = 1 }"));
    assert_eq!(v["unmet"][0], "expected duplicate_items >= 1, got 0");
    assert_eq!(v["miss"], "safety");
}

#[test]
fn leadership_bounds_no_run_can_meet_are_errors_naming_the_key() {
    let cases = [
        (
            "terms = { min = 5, max = 2 }",
            "expect.terms: min 5 is above max 2",
        ),
        (
            "two_leaders_ms = 20_000_000_000",
            "expect.two_leaders_ms: 20000000000 is out of range: expected 0 to 10000000000 ms",
        ),
        ("skipped_items = -1", "expect.skipped_items"),
        ("failover_max_ms = 1.5", "expect.failover_max_ms"),
        ("duplicate_items = { least = 1 }", "expect.duplicate_items"),
    ];
    for (i, (line, expected)) in cases.iter().enumerate() {
        let lines = errors_of(&format!("lead-err-{i}"), &with_expect(line));
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "`{line}`: no `{expected}` in {lines:#?}"
        );
    }
}

#[test]
fn sweep_pools_every_leadership_change_and_counts_runs_with_two_leaders() {
    let bounded = with_expect("terms = { min = 1 }");
    let path = temp_scenario("lead-sweep", &bounded);
    let file = path.to_str().expect("utf-8");
    let out = lockstep(&["sweep", file, "--seeds", "4", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let l = &v["leadership"];
    assert_eq!(l["two_leaders_runs"], 0);
    // Every change of every seed: terms - 1 per run.
    let mut changes = 0;
    for seed in 1..=4u64 {
        let run = lockstep(&["run", file, "--seed", &seed.to_string(), "--format", "json"]);
        let r: serde_json::Value = serde_json::from_str(&stdout(&run)).expect("JSON");
        changes += r["details"]["leadership"]["failover"]["count"]
            .as_u64()
            .expect("changes");
    }
    assert_eq!(l["failover_ns"]["count"].as_u64(), Some(changes), "{l}");
    // Two shards merged give the same bytes as the whole sweep.
    let dir = path.parent().expect("a temp dir");
    let shards: Vec<String> = (1..=2)
        .map(|i| {
            let shard = format!("{i}/2");
            let out = lockstep(&[
                "sweep", file, "--seeds", "4", "--format", "json", "--shard", &shard,
            ]);
            let shard_file = dir.join(format!("shard{i}.json"));
            std::fs::write(&shard_file, stdout(&out)).expect("write a shard");
            shard_file.display().to_string()
        })
        .collect();
    let merged = lockstep(&["merge", "--format", "json", &shards[1], &shards[0]]);
    let merged: serde_json::Value = serde_json::from_str(&stdout(&merged)).expect("JSON");
    assert_eq!(merged, v);
    let plain = temp_scenario("lead-sweep-plain", CLEAN);
    let out = lockstep(&[
        "sweep",
        plain.to_str().expect("utf-8"),
        "--seeds",
        "2",
        "--format",
        "json",
    ]);
    assert!(!stdout(&out).contains("leadership"), "{}", stdout(&out));
}
