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
    assert!(text.contains("mark     validity-checked"));
    assert!(text.contains("client-1 -> storage"));
    // Nodes by the names the scenario and the history use, durations readable (docs/trace.md).
    assert!(!text.contains("NodeId("), "a node id in the trace");
    assert!(
        text.contains("history  Request { client: client-1 }"),
        "{text}"
    );
    assert!(text.contains("ttl: Dur(10s)"));
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

/// `lockstep ARGS` with extra environment and `stdin` as its standard input.
fn lockstep_with(args: &[&str], env: &[(&str, &str)], stdin: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .env_remove("LOCKSTEP_SEED")
        .envs(env.iter().copied())
        .current_dir(crate::support::root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the lockstep binary runs");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("the lockstep binary ends")
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

#[test]
fn lockstep_seed_chooses_the_seed_when_seed_is_not_given() {
    let env = [("LOCKSTEP_SEED", "42")];
    let o = lockstep_with(&["run", K1, "--format", "json"], &env, "");
    assert_eq!(json(&o)["seed"], 42);
    let o = lockstep_with(&["run", K1, "--format", "json", "--seed", "5"], &env, "");
    assert_eq!(json(&o)["seed"], 5, "--seed wins");
    for bad in ["x1", "-3", "18446744073709551616", ""] {
        let o = lockstep_with(&["run", K1], &[("LOCKSTEP_SEED", bad)], "");
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert!(
            stderr(&o).contains("LOCKSTEP_SEED"),
            "{bad:?}: {}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty());
    }
}

#[test]
fn run_dash_reads_the_scenario_from_stdin() {
    let text = std::fs::read_to_string(crate::support::root().join(K1)).expect("K1");
    let from_file = json(&lockstep_with(&["run", K1, "--format", "json"], &[], ""));
    let o = lockstep_with(&["run", "-", "--format", "json"], &[], &text);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let from_stdin = json(&o);
    assert_eq!(from_stdin["trace_hash"], from_file["trace_hash"]);
    assert_eq!(from_stdin["file"], "<stdin>");
    // Its reproduce line is a command that runs: the same scenario on standard input.
    let again = format!("lockstep run - --seed {}", from_file["seed"]);
    assert_eq!(from_stdin["reproduce"], again.as_str());
    let args: Vec<&str> = again
        .split(' ')
        .skip(1)
        .chain(["--format", "json"])
        .collect();
    let o = lockstep_with(&args, &[], &text);
    assert_eq!(json(&o)["trace_hash"], from_file["trace_hash"]);
    let o = lockstep_with(&["run", "-"], &[], "[scenario]\nname = 3\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("<stdin>"), "{}", stderr(&o));
}

#[test]
fn version_prints_the_version_and_the_commit() {
    let o = lockstep(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(
        text.starts_with(&format!("lockstep {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let git = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(crate::support::root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = git.unwrap_or_else(|| "unknown".to_string());
    assert!(text.contains(&format!("commit {commit}")), "{text}");
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_lockstep()"),
        ("zsh", "#compdef lockstep"),
        ("fish", "complete -c lockstep"),
    ] {
        let o = lockstep(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains(marker), "{shell}: {text}");
        assert!(text.contains("sweep") && text.contains("junit"), "{shell}");
    }
    assert_eq!(lockstep(&["completions", "cmd.exe"]).status.code(), Some(2));
}

#[test]
fn a_miss_is_classed_safety_liveness_or_unknown_in_run_json() {
    let (_, met) = json_of(&["run", K1, "--format", "json"]);
    assert_eq!(met["miss"], serde_json::Value::Null);
    let k1 = std::fs::read_to_string(crate::support::root().join(K1)).expect("K1");
    let cases = [
        (
            "safety",
            k1.replace("verdict = \"invalid\"", "verdict = \"valid\""),
        ),
        (
            "liveness",
            k1.replace("[expect]", "[expect]\ngrants = { min = 1_000_000 }"),
        ),
        (
            "unknown",
            k1.replace("seed = 1", "seed = 1\nmax_events = 500"),
        ),
    ];
    for (class, text) in cases {
        let path = temp_scenario(&format!("miss-{class}"), &text);
        let (code, v) = json_of(&["run", path.to_str().expect("utf-8"), "--format", "json"]);
        assert_eq!(code, Some(1), "{class}: {v}");
        assert_eq!(v["miss"], class, "{v}");
        let (_, sweep) = json_of(&[
            "sweep",
            path.to_str().expect("utf-8"),
            "--seeds",
            "2",
            "--format",
            "json",
        ]);
        assert_eq!(sweep["failures"][0]["class"], class, "{sweep}");
    }
}
