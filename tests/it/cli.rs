//! The command line: output formats, exit codes, reproduce commands.

use crate::support::{lockstep, stderr, stdout, temp_scenario};

const K1: &str = "scenarios/catalogue/k1-gc-pause-unfenced.toml";

fn json_of(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = lockstep(args);
    let v = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    (out.status.code(), v)
}

#[test]
fn run_json_has_the_documented_fields() {
    let (code, v) = json_of(&["run", K1, "--format", "json"]);
    assert_eq!(code, Some(0));
    assert_eq!(v["scenario"], "k1-gc-pause-unfenced");
    assert_eq!(v["seed"], 1);
    assert_eq!(v["verdict"], "invalid");
    assert_eq!(v["resource"], "invalid");
    assert_eq!(v["mutual_exclusion"], "invalid");
    assert_eq!(v["expected"], true);
    assert!(v["trace_hash"].as_str().is_some_and(|h| h.len() == 16));
    for key in [
        "double_holders",
        "stale_accepted",
        "stale_rejected",
        "lost_updates",
        "grants",
        "cs_completed",
        "unavailable_ms",
        "acquire_latency_ms",
        "failover_ms",
        "fairness",
        "reproduce",
        "explanations",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert!(v["stale_accepted"].as_u64() >= Some(1));
    assert_eq!(v["reproduce"], format!("lockstep run {K1} --seed 1"));
}

#[test]
fn the_table_prints_seed_trace_hash_and_reproduce_command_first() {
    let out = lockstep(&["run", K1, "--seed", "3"]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].starts_with("seed       3   trace "), "{text}");
    assert_eq!(lines[2], format!("reproduce  lockstep run {K1} --seed 3"));
    assert!(text.contains("verdict (resource)"));
}

#[test]
fn the_reproduce_command_reproduces_the_trace_hash() {
    let (_, a) = json_of(&["run", K1, "--seed", "42", "--format", "json"]);
    let cmd = a["reproduce"].as_str().expect("reproduce").to_string();
    let mut args: Vec<&str> = cmd.split(' ').skip(1).collect();
    args.extend(["--format", "json"]);
    let (_, b) = json_of(&args);
    assert_eq!(a["trace_hash"], b["trace_hash"]);
    assert_eq!(a["seed"], 42);
}

#[test]
fn an_unmet_expectation_exits_1() {
    let text = std::fs::read_to_string(crate::support::root().join(K1))
        .expect("K1")
        .replace("verdict = \"invalid\"", "verdict = \"valid\"");
    let path = temp_scenario("unmet", &text);
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("EXPECTATION NOT MET"));
    assert!(stdout(&out).contains("expected resource to be valid, got invalid"));
}

#[test]
fn trace_prints_every_event_before_the_verdict() {
    let out = lockstep(&["run", K1, "--trace"]);
    let text = stdout(&out);
    assert!(text.contains("FAULT"), "the pause is in the trace");
    assert!(text.contains("mark     mark validity-checked"));
    assert!(text.contains("client-1 -> storage"));
    let (_, v) = json_of(&["run", K1, "--trace", "--format", "json"]);
    assert!(v["trace"].as_array().is_some_and(|t| t.len() > 1000));
}

#[test]
fn usage_errors_exit_2_and_help_documents_exit_codes() {
    assert_eq!(lockstep(&["run"]).status.code(), Some(2));
    assert_eq!(
        lockstep(&["run", K1, "--format", "xml"]).status.code(),
        Some(2)
    );
    assert_eq!(lockstep(&["frobnicate"]).status.code(), Some(2));
    let help = lockstep(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = stdout(&help);
    for code in [
        "0  every verdict matches",
        "1  a verdict does not match",
        "2  a bad scenario file",
    ] {
        assert!(text.contains(code), "{text}");
    }
}

#[test]
fn running_out_of_events_is_an_unknown_verdict_not_a_hang() {
    let text = std::fs::read_to_string(
        crate::support::root().join("scenarios/catalogue/redis-baseline.toml"),
    )
    .expect("baseline")
    .replace("seed = 1", "seed = 1\nmax_events = 500");
    let path = temp_scenario("exhausted", &text);
    let (code, v) = json_of(&["run", path.to_str().expect("utf-8"), "--format", "json"]);
    assert_eq!(v["outcome"], "exhausted");
    assert_eq!(v["events"], 500);
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(code, Some(1), "the baseline expects valid");
}
