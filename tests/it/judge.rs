//! `lockstep judge` and the history format (docs/history.md): a run's history written, read
//! back and judged gives the run's verdict on every catalogue scenario; malformed histories
//! are refused line by line; histories from elsewhere (names no scenario has) are judged; the
//! JSON Schema of docs/history.schema.json holds every line the writer gives.

use lockstep::judge::{self, Overrides};
use lockstep::{load, run};
use lockstep_check::Validity;
use lockstep_check::jsonl::{self, Judging};
use serde_json::Value;

use crate::support::{TempDir, lockstep, root, scenario_files, stderr, stdout};

fn temp_dir(test: &str) -> TempDir {
    TempDir::new(&format!("judge-{test}"))
}

#[test]
fn every_catalogue_history_judged_gives_its_runs_verdict() {
    let mut checked = 0;
    for path in scenario_files("scenarios/catalogue") {
        let s = load(&path).unwrap_or_else(|e| panic!("{e}")).scenario;
        let r = run(&s, 1, false);
        let text = jsonl::write(&r.history, &Judging::of(&s.check_options, r.property));
        let judged = judge::judge(text.as_bytes(), &Overrides::default())
            .unwrap_or_else(|e| panic!("{}: {:?}", path.display(), e));
        let name = path.display();
        assert_eq!(
            judged.parsed.history, r.history,
            "{name}: the history read back"
        );
        assert_eq!(
            judged.options, s.check_options,
            "{name}: the checker's options"
        );
        assert_eq!(judged.property, r.property, "{name}");
        assert_eq!(
            judged.verdict, r.verdict,
            "{name}: the verdict and every count"
        );
        assert_eq!(judged.judged, r.judged, "{name}");
        checked += 1;
    }
    assert!(checked >= 60, "the whole catalogue: {checked}");
}

#[test]
fn run_writes_a_history_that_judge_judges_the_same_on_the_command_line() {
    let dir = temp_dir("cli");
    let history = dir.join("k1.jsonl");
    let h = history.to_str().expect("utf-8");
    let scenario = "scenarios/catalogue/k1-gc-pause-unfenced.toml";
    let ran = lockstep(&[
        "run",
        scenario,
        "--seed",
        "1",
        "--history",
        h,
        "--format",
        "json",
    ]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let ran: Value = serde_json::from_str(&stdout(&ran)).expect("run JSON");

    let judged = lockstep(&["judge", h, "--format", "json"]);
    assert_eq!(
        judged.status.code(),
        Some(1),
        "K1 is invalid: {}",
        stderr(&judged)
    );
    let judged: Value = serde_json::from_str(&stdout(&judged)).expect("judge JSON");
    for key in [
        "property",
        "verdict",
        "resource",
        "mutual_exclusion",
        "double_holders",
        "overlap_ms",
        "stale_accepted",
        "stale_rejected",
        "lost_updates",
        "token_order",
        "grants",
        "cs_completed",
        "accepted_writes",
        "final_value",
        "acquire_latency_ms",
        "failover_ms",
        "fairness",
        "explanations",
        "details",
        "outcome",
        "simulated_ms",
    ] {
        assert_eq!(judged[key], ran[key], "{key}");
    }
    assert_eq!(judged["verdict"], "invalid");
    assert_eq!(judged["history"], h);
    for key in judge::SIMULATION_ONLY {
        assert!(judged.get(*key).is_none(), "{key} is a simulation's");
    }
    let text = std::fs::read_to_string(&history).expect("history written");
    assert_eq!(judged["entries"], text.lines().count() as u64 - 1);

    // Expected invalid, invalid is a pass; the table names the history, not a seed.
    let table = lockstep(&["judge", h, "--expect", "invalid"]);
    assert_eq!(table.status.code(), Some(0), "{}", stderr(&table));
    let table = stdout(&table);
    assert!(table.starts_with(&format!("history    {h}\n")), "{table}");
    assert!(
        table.contains("expectation met: resource is invalid"),
        "{table}"
    );
    assert!(
        !table.contains("reproduce") && !table.contains("seed"),
        "{table}"
    );

    // Standard input, and a clean run's history judged valid (exit 0).
    let clean = dir.join("clean.jsonl");
    let c = clean.to_str().expect("utf-8");
    let out = lockstep(&[
        "run",
        "scenarios/catalogue/k2-gc-pause-fenced.toml",
        "--history",
        c,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["judge", "-", "--format", "json"])
        .stdin(std::fs::File::open(&clean).expect("history"))
        .output()
        .expect("runs");
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    let piped: Value = serde_json::from_str(&stdout(&piped)).expect("JSON");
    assert_eq!(piped["verdict"], "valid");
    assert_eq!(piped["history"], "<stdin>");
}

#[test]
fn run_checks_the_history_output_before_running_and_writes_it_whole() {
    let dir = temp_dir("outputs");
    let scenario = root().join("scenarios/catalogue/k2-gc-pause-fenced.toml");
    let s = scenario.to_str().expect("utf-8");
    let missing = dir.join("no-such-dir/h.jsonl");
    let out = lockstep(&["run", s, "--history", missing.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
    assert!(
        stderr(&out).contains("cannot write the history: no directory"),
        "{}",
        stderr(&out)
    );
    // The scenario itself is refused as the output, and left as it was.
    let before = std::fs::read(&scenario).expect("scenario");
    let out = lockstep(&["run", s, "--history", s]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("it is the input file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&scenario).expect("scenario"), before);
    // No temporary file left beside a written history.
    let good = dir.join("h.jsonl");
    let out = lockstep(&["run", s, "--history", good.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("h.jsonl")]);
}

const HEADER: &str = r#"{"lockstep_history": 1, "nodes": ["storage", "client-1", "client-2"]}"#;

/// Writes `lines` as a history and judges it on the command line, expecting exit 2: the
/// error lines, each checked to name the file.
fn refused(test: &str, lines: &[&str]) -> Vec<String> {
    let dir = temp_dir(test);
    let path = dir.join("bad.jsonl");
    std::fs::write(&path, lines.join("\n")).expect("write");
    let file = path.to_str().expect("utf-8");
    let out = lockstep(&["judge", file]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(stdout(&out).is_empty(), "no verdict: {}", stdout(&out));
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<String> = err.lines().map(str::to_string).collect();
    for l in &lines {
        assert!(l.starts_with(&format!("{file}:")), "names the file: {l}");
    }
    lines.iter().map(|l| l[file.len()..].to_string()).collect()
}

#[test]
fn every_problem_of_a_malformed_history_is_named_with_its_line() {
    let errors = refused(
        "malformed",
        &[
            HEADER,
            r#"{"time_ns": 10, "event": "request", "client": "client-1"}"#,
            r#"{"time_ns": 20, "event": "request", "client": "client-1""#,
            r#"{"time_ns": 30, "event": "grant"}"#,
            r#"{"time_ns": 40, "event": "request", "client": "client-2", "colour": "red"}"#,
            r#"{"time_ns": 5, "event": "request", "client": "client-2"}"#,
            r#"{"time_ns": -1, "event": "vote", "client": "client-2"}"#,
            r#"{"time_ns": 50, "event": "grant", "grant": {"client": "client-1", "seq": 0}}"#,
            r#"{"time_ns": 60, "event": "exit", "grant": {"client": "client-1", "seq": 1}, "why": "bored"}"#,
            r#"[1, 2]"#,
            r#"{"event": "request", "client": 7}"#,
            r#"{"time_ns": 70, "time_ns": 80, "event": "request", "client": "client-1"}"#,
            r#"{"time_ns": 90, "event": "exit", "grant": {"client": "client-1", "seq": 1, "seq": 2}, "why": "lost"}"#,
        ],
    );
    let expect = [
        ":3: not valid JSON at column",
        ":4: missing `grant`",
        ":5: unknown key `colour` in a `request` event",
        ":6: time goes backwards: `time_ns` 5 is before 40, the time of line 5",
        ":7: `time_ns` must be a whole number from 0 to 18446744073709551615, got -1",
        ":7: unknown `event` the text \"vote\"",
        ":8: `grant.seq` must be a whole number from 1 to 4294967295, got 0",
        ":9: `why` must be one of `released`, `lost`, `abandoned`, `crashed` or `terminated`, got the text \"bored\"",
        ":10: expected a JSON object {...}, got a list",
        ":11: `client` must be a node name (a string), got 7",
        ":11: missing `time_ns`",
        ":12: a key given twice in one object: `time_ns`",
        ":13: a key given twice in one object: `seq`",
    ];
    for e in expect {
        assert!(
            errors.iter().any(|l| l.starts_with(e)),
            "missing {e:?} in:\n{}",
            errors.join("\n")
        );
    }
    assert_eq!(errors.len(), expect.len(), "{}", errors.join("\n"));
}

#[test]
fn a_bad_header_is_named_and_a_missing_one_too() {
    let errors = refused(
        "header",
        &[
            r#"{"lockstep_history": 2, "nodes": ["a", "a"], "end_ns": 5, "colour": 1}"#,
            r#"{"time_ns": 10, "event": "request", "client": "a"}"#,
        ],
    );
    for e in [
        ":1: `lockstep_history` must be 1",
        ":1: `nodes` names the text \"a\" twice",
        ":1: unknown key `colour` in the header",
        ":2: `time_ns` 10 is after the header's `end_ns` 5 (line 1)",
    ] {
        assert!(
            errors.iter().any(|l| l.starts_with(e)),
            "{e:?} in {errors:?}"
        );
    }
    let errors = refused(
        "no-header",
        &[r#"{"time_ns": 10, "event": "request", "client": "a"}"#],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with(":1: the first line must be the header"),
        "{errors:?}"
    );
    let dir = temp_dir("empty");
    let path = dir.join("empty.jsonl");
    std::fs::write(&path, "\n\n").expect("write");
    let out = lockstep(&["judge", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(": the history is empty"),
        "{}",
        stderr(&out)
    );
    // Bytes that are not UTF-8.
    let dir = temp_dir("binary");
    let path = dir.join("h.jsonl");
    std::fs::write(
        &path,
        [HEADER.as_bytes(), b"\n{\"time_ns\": \xff}"].concat(),
    )
    .expect("write");
    let out = lockstep(&["judge", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(":2: not UTF-8 text"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_history_the_checker_rejects_is_named_by_the_line_of_its_entry() {
    let errors = refused(
        "checker",
        &[
            HEADER,
            "",
            r#"{"time_ns": 10, "event": "request", "client": "client-1"}"#,
            r#"{"time_ns": 20, "event": "exit", "grant": {"client": "client-1", "seq": 4}, "why": "released"}"#,
        ],
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with(":4: "), "{errors:?}");
    assert!(errors[0].contains("client-1#4"), "{errors:?}");
}

/// Two clients of a real system, named as that system names them, neither in the header:
/// `billing-7` holds a lease, pauses, and writes after `billing-9` was granted and wrote.
const FOREIGN: &str = r#"{"lockstep_history": 1, "nodes": ["postgres"], "end_ns": 100000}
{"time_ns": 0, "event": "request", "client": "billing-7"}
{"time_ns": 1000, "event": "grant", "grant": {"client": "billing-7", "seq": 1}, "token": 33}
{"time_ns": 2000, "event": "storage", "op": {"client": "billing-7", "seq": 1}, "grant": {"client": "billing-7", "seq": 1}, "kind": "read", "value": 0, "token": 33, "outcome": "accepted"}
{"time_ns": 3000, "event": "fault", "kind": "pause", "nodes": ["billing-7"], "detail": "GC pause"}
{"time_ns": 4000, "event": "request", "client": "billing-9"}
{"time_ns": 5000, "event": "grant", "grant": {"client": "billing-9", "seq": 1}, "token": 34}
{"time_ns": 6000, "event": "storage", "op": {"client": "billing-9", "seq": 1}, "grant": {"client": "billing-9", "seq": 1}, "kind": "read", "value": 0, "token": 34, "outcome": "accepted"}
{"time_ns": 7000, "event": "storage", "op": {"client": "billing-9", "seq": 2}, "grant": {"client": "billing-9", "seq": 1}, "kind": "write", "value": 1, "base": 0, "token": 34, "outcome": "accepted"}
{"time_ns": 8000, "event": "exit", "grant": {"client": "billing-9", "seq": 1}, "why": "released"}
{"time_ns": 9000, "event": "fault", "kind": "resume", "nodes": ["billing-7"]}
{"time_ns": 10000, "event": "storage", "op": {"client": "billing-7", "seq": 2}, "grant": {"client": "billing-7", "seq": 1}, "kind": "write", "value": 1, "base": 0, "token": 33, "outcome": "accepted"}
{"time_ns": 11000, "event": "exit", "grant": {"client": "billing-7", "seq": 1}, "why": "released"}
"#;

#[test]
fn a_history_of_a_real_system_with_its_own_names_is_judged() {
    let judged = judge::judge(FOREIGN.as_bytes(), &Overrides::default()).expect("reads");
    assert_eq!(
        judged.parsed.history.names,
        ["postgres", "billing-7", "billing-9"]
    );
    assert_eq!(judged.parsed.history.end_ns, 100_000);
    assert_eq!(judged.judged, Validity::Invalid);
    assert_eq!(judged.verdict.stale_accepted.count, 1);
    assert_eq!(judged.verdict.lost_updates.count, 1);
    assert_eq!(judged.verdict.token_order.count, 0, "not asked for");
    let why = judged.verdict.explain(&judged.parsed.history).join("\n");
    assert!(why.contains("billing-7's write"), "{why}");

    // The same history with billing-7's late write rejected by fencing: the resource is
    // safe, mutual exclusion is not, and the property asked for on the command line wins
    // over the header's (none, so resource).
    let fenced = FOREIGN.replace(
        r#""value": 1, "base": 0, "token": 33, "outcome": "accepted""#,
        r#""value": 1, "base": 0, "token": 33, "outcome": "rejected""#,
    );
    assert_ne!(fenced, FOREIGN);
    let dir = temp_dir("foreign");
    let path = dir.join("fenced.jsonl");
    std::fs::write(&path, &fenced).expect("write");
    let p = path.to_str().expect("utf-8");
    let out = lockstep(&["judge", p, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(j["resource"], "valid", "{j}");
    assert_eq!(j["stale_rejected"], 1, "{j}");
    assert_eq!(j["mutual_exclusion"], "invalid", "{j}");
    let out = lockstep(&["judge", p, "--property", "mutual-exclusion"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("verdict (mutual-exclusion)"),
        "{}",
        stdout(&out)
    );
}

/// The subset of JSON Schema that docs/history.schema.json uses: `type`, `const`, `enum`,
/// `required`, `properties`, `additionalProperties: false`, `items`, `minimum`, `maximum`,
/// `oneOf` and `$ref` to `#/$defs/...`. Returns the problems of `value` against `schema`.
fn violations(root: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        return violations(root, &root["$defs"][name], value, at);
    }
    if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
        let ok = branches
            .iter()
            .filter(|b| violations(root, b, value, at).is_empty())
            .count();
        if ok != 1 {
            out.push(format!("{at}: matches {ok} of oneOf, not exactly 1"));
        }
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => panic!("bad type in schema"),
        };
        let fits = |t: &str| match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "integer" => value.is_u64() || value.is_i64(),
            other => panic!("type {other} not in the subset"),
        };
        if !types.iter().any(|t| fits(t)) {
            out.push(format!("{at}: not of type {t}"));
            return out;
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            out.push(format!("{at}: not {c}"));
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(value) {
            out.push(format!("{at}: not one of {e:?}"));
        }
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_u64),
        value.as_u64(),
    ) {
        if n < min {
            out.push(format!("{at}: below {min}"));
        }
    }
    if let (Some(max), Some(n)) = (
        schema.get("maximum").and_then(Value::as_u64),
        value.as_u64(),
    ) {
        if n > max {
            out.push(format!("{at}: above {max}"));
        }
    }
    if let (Some(items), Some(a)) = (schema.get("items"), value.as_array()) {
        for (i, v) in a.iter().enumerate() {
            out.extend(violations(root, items, v, &format!("{at}[{i}]")));
        }
    }
    if let Some(o) = value.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !o.contains_key(key.as_str().expect("key")) {
                out.push(format!("{at}: missing {key}"));
            }
        }
        for (k, v) in o {
            match props.and_then(|p| p.get(k)) {
                Some(s) => out.extend(violations(root, s, v, &format!("{at}.{k}"))),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    out.push(format!("{at}: key {k} not allowed"));
                }
                None => {}
            }
        }
    }
    out
}

fn schema() -> Value {
    let text = std::fs::read_to_string(root().join("docs/history.schema.json")).expect("schema");
    serde_json::from_str(&text).expect("the schema is JSON")
}

fn schema_problems(schema: &Value, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let value: Value = serde_json::from_str(line).expect("a written line is JSON");
        for p in violations(schema, schema, &value, "") {
            problems.push(format!("line {}: {p}: {line}", i + 1));
        }
    }
    problems
}

#[test]
fn the_json_schema_holds_every_line_written_and_refuses_broken_ones() {
    let schema = schema();
    let mut kinds = std::collections::BTreeSet::new();
    for path in scenario_files("scenarios/catalogue") {
        let s = load(&path).unwrap_or_else(|e| panic!("{e}")).scenario;
        let r = run(&s, 1, false);
        let text = jsonl::write(&r.history, &Judging::of(&s.check_options, r.property));
        let problems = schema_problems(&schema, &text);
        assert!(
            problems.is_empty(),
            "{}:\n{}",
            path.display(),
            problems[..problems.len().min(5)].join("\n")
        );
        for line in text.lines().skip(1) {
            let v: Value = serde_json::from_str(line).expect("JSON");
            let kind = v["event"].as_str().expect("event").to_string();
            let sub = v.get("kind").and_then(Value::as_str).unwrap_or("");
            kinds.insert(if kind == "storage" {
                format!("storage/{sub}")
            } else {
                kind
            });
        }
    }
    assert!(
        schema_problems(&schema, FOREIGN).is_empty(),
        "{:?}",
        schema_problems(&schema, FOREIGN)
    );
    for kind in [
        "request",
        "grant",
        "acquire-failed",
        "exit",
        "storage/read",
        "storage/write",
        "fault",
        "issued",
    ] {
        assert!(
            kinds.contains(kind),
            "no catalogue history has a {kind}: {kinds:?}"
        );
    }
    // The schema refuses what the parser refuses.
    for bad in [
        r#"{"time_ns": 1, "event": "request"}"#,
        r#"{"time_ns": 1, "event": "request", "client": "a", "colour": 1}"#,
        r#"{"time_ns": 1, "event": "storage", "op": {"client": "a", "seq": 1}, "grant": {"client": "a", "seq": 1}, "kind": "write", "value": 1, "outcome": "accepted"}"#,
        r#"{"time_ns": 1, "event": "grant", "grant": {"client": "a", "seq": 0}}"#,
        r#"{"time_ns": 1, "event": "exit", "grant": {"client": "a", "seq": 1}, "why": "bored"}"#,
        r#"{"lockstep_history": 2, "nodes": []}"#,
    ] {
        let v: Value = serde_json::from_str(bad).expect("JSON");
        assert!(
            !violations(&schema, &schema, &v, "").is_empty(),
            "the schema takes {bad}"
        );
        let text = format!("{}\n{bad}\n", r#"{"lockstep_history": 1, "nodes": []}"#);
        let text = if bad.contains("lockstep_history") {
            bad.to_string()
        } else {
            text
        };
        assert!(
            jsonl::parse(text.as_bytes()).is_err(),
            "the parser takes {bad}"
        );
    }
}

#[test]
fn the_largest_numbers_are_judged_without_overflow() {
    let m = u64::MAX;
    let text = format!(
        r#"{{"lockstep_history": 1, "nodes": [], "end_ns": {m}, "quiet_from_ns": {m}, "initial_value": {m}, "tokens_monotonic": true, "leadership": true}}
{{"time_ns": 0, "event": "request", "client": "a"}}
{{"time_ns": 1, "event": "fault", "kind": "crash", "nodes": ["a"]}}
{{"time_ns": 2, "event": "grant", "grant": {{"client": "a", "seq": 4294967295}}, "token": {m}}}
{{"time_ns": 3, "event": "request", "client": "b"}}
{{"time_ns": {}, "event": "grant", "grant": {{"client": "b", "seq": 1}}, "token": 0}}
{{"time_ns": {}, "event": "storage", "op": {{"client": "b", "seq": 1}}, "grant": {{"client": "b", "seq": 1}}, "kind": "read", "value": {m}, "token": 0, "outcome": "accepted"}}
{{"time_ns": {}, "event": "storage", "op": {{"client": "b", "seq": 2}}, "grant": {{"client": "b", "seq": 1}}, "kind": "write", "value": {m}, "base": {m}, "token": 0, "outcome": "accepted"}}
{{"time_ns": {}, "event": "storage", "op": {{"client": "a", "seq": 2}}, "grant": {{"client": "a", "seq": 4294967295}}, "kind": "write", "value": 0, "base": {m}, "token": {m}, "outcome": "accepted"}}
{{"time_ns": {m}, "event": "exit", "grant": {{"client": "b", "seq": 1}}, "why": "released"}}
"#,
        m - 5,
        m - 4,
        m - 3,
        m - 2
    );
    let judged = judge::judge(text.as_bytes(), &Overrides::default()).expect("reads");
    assert_eq!(judged.judged, Validity::Invalid);
    assert_eq!(judged.verdict.token_order.count, 1, "{:?}", judged.verdict);
    assert_eq!(judged.verdict.stale_accepted.count, 1);
    let report = judge::report("x.jsonl", &judged, Validity::Valid);
    assert!(judge::table(&report).contains("token order"));
    assert!(!judge::json(&report).is_empty());
}

#[test]
fn an_incomplete_history_is_unknown_at_best() {
    let text = FOREIGN
        .replacen(
            r#""end_ns": 100000}"#,
            r#""end_ns": 100000, "complete": false}"#,
            1,
        )
        .replace(r#""outcome": "accepted"}"#, r#""outcome": "rejected"}"#);
    let judged = judge::judge(text.as_bytes(), &Overrides::default()).expect("reads");
    assert!(!judged.parsed.history.complete);
    assert_eq!(judged.judged, Validity::Unknown, "{:?}", judged.verdict);
    let dir = temp_dir("incomplete");
    let path = dir.join("h.jsonl");
    std::fs::write(&path, &text).expect("write");
    let p = path.to_str().expect("utf-8");
    let out = lockstep(&["judge", p, "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "unknown is a miss: {}",
        stderr(&out)
    );
    let j: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(
        (j["verdict"].as_str(), j["outcome"].as_str()),
        (Some("unknown"), Some("incomplete"))
    );
    assert_eq!(j["miss"], "unknown");
    let out = lockstep(&["judge", p, "--expect", "unknown"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("incomplete"), "{}", stdout(&out));
}
