//! Fault triggers: a mark the node cannot reach is an error at load, naming the marks it does
//! reach; a trigger that did not fire in a run is reported, and fails the run unless the file
//! calls it optional; each family's page lists exactly the marks its nodes reach.

use std::collections::BTreeSet;

use lockstep::load;
use lockstep_models::system::WORKLOAD_MARKS;

use crate::support::{errors_of, lockstep, stderr, stdout, temp_scenario};

const REDIS: &str = r#"
[scenario]
name = "t"
duration_ms = 3_000

[model]
kind = "redis"
ttl_ms = 1_000
"#;

const ETCD: &str = r#"
[scenario]
name = "t"
duration_ms = 3_000

[model]
kind = "etcd"
ttl_ms = 1_000
"#;

fn with_fault(base: &str, on: &str) -> String {
    format!("{base}\n[[fault]]\non = {{ {on} }}\npause = {{ node = \"client-1\", for_ms = 10 }}\n")
}

#[test]
fn a_misspelt_mark_is_an_error_naming_the_valid_marks_and_the_closest() {
    let text = with_fault(REDIS, r#"node = "client-1", mark = "validity-chekced""#);
    let lines = errors_of("misspelt-mark", &text);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[0].on.mark: `validity-chekced` is not a mark client-1 reaches (did you mean \
             `validity-checked`?); Redis clients reach: granted, validity-checked, read-done, \
             work-done"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn a_mark_of_no_family_gets_no_suggestion_when_nothing_is_close() {
    let text = with_fault(REDIS, r#"node = "client-1", mark = "lease-lost""#);
    let lines = errors_of("unknown-mark", &text);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[0].on.mark: `lease-lost` is not a mark client-1 reaches; Redis clients \
             reach: granted, validity-checked, read-done, work-done"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn a_mark_on_a_node_that_never_reaches_it_is_an_error() {
    // Redis servers reach no marks at all; the storage node neither.
    for (node, test) in [("redis", "server-mark"), ("storage", "storage-mark")] {
        let text = with_fault(REDIS, &format!(r#"node = "{node}", mark = "granted""#));
        let lines = errors_of(test, &text);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].ends_with(&format!(
                "fault[0].on.mark: `granted` is not a mark {node} reaches: {node} reaches no \
                 marks (Redis clients reach granted, validity-checked, read-done, work-done)"
            )),
            "{}",
            lines[0]
        );
    }
    // An etcd member reaches its own mark, not the clients'; a client not the members'.
    let text = with_fault(ETCD, r#"node = "etcd-1", mark = "lock-waiting""#);
    let lines = errors_of("etcd-server-mark", &text);
    assert!(
        lines[0].ends_with(
            "fault[0].on.mark: `lock-waiting` is not a mark etcd-1 reaches: only clients reach \
             it; etcd servers reach: leader-ready"
        ),
        "{}",
        lines[0]
    );
    let text = with_fault(ETCD, r#"node = "client-2", mark = "leader-ready""#);
    let lines = errors_of("etcd-client-mark", &text);
    assert!(
        lines[0].ends_with(
            "fault[0].on.mark: `leader-ready` is not a mark client-2 reaches: only servers \
             reach it; etcd clients reach: granted, validity-checked, read-done, work-done, \
             lock-waiting"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn validity_checked_is_no_mark_when_the_check_is_off() {
    let base = format!("{REDIS}\n[workload]\ncheck_validity_before_write = false\n");
    let text = with_fault(&base, r#"node = "client-1", mark = "validity-checked""#);
    let lines = errors_of("check-off", &text);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[0].on.mark: `validity-checked` is not a mark client-1 reaches: clients skip \
             the validity check (workload.check_validity_before_write = false); Redis clients \
             reach: granted, read-done, work-done"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn a_trigger_that_cannot_fire_within_the_bounds_is_an_error() {
    let base = REDIS.replace(
        "duration_ms = 3_000",
        "duration_ms = 3_000\nmax_events = 50",
    );
    let text = with_fault(
        &base,
        r#"node = "client-1", mark = "granted", occurrence = 51"#,
    );
    let lines = errors_of("occurrence", &text);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[0].on.occurrence: occurrence 51 can never come: a run handles at most 50 \
             events (scenario.max_events), and each reaches a mark at most once"
        ),
        "{}",
        lines[0]
    );
    let text = with_fault(
        REDIS,
        r#"node = "client-1", mark = "granted", before_ms = 0"#,
    );
    let lines = errors_of("before-zero", &text);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[0].on.before_ms: a trigger that lapses at 0 ms never fires; give a later \
             time or leave before_ms out"
        ),
        "{}",
        lines[0]
    );
}

/// `lockstep run --format json` on `text`: the exit code and the JSON.
fn run_json(test: &str, text: &str) -> (Option<i32>, serde_json::Value) {
    let path = temp_scenario(test, text);
    let out = lockstep(&["run", path.to_str().expect("utf-8"), "--format", "json"]);
    let json = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    (out.status.code(), json)
}

#[test]
fn a_trigger_that_did_not_fire_is_reported_in_the_run_json_and_fails_the_run() {
    // Occurrence 10,000 of a grant cannot come in 3 s; occurrence 1 does.
    let text = format!(
        "{}\n[[fault]]\non = {{ node = \"client-2\", mark = \"granted\" }}\npause = {{ node = \"client-2\", for_ms = 10 }}\n",
        with_fault(
            REDIS,
            r#"node = "client-1", mark = "granted", occurrence = 10_000"#
        )
    );
    let (code, json) = run_json("unfired", &text);
    assert_eq!(code, Some(1), "{json}");
    assert_eq!(json["expected"], false);
    // It did not test what the file placed: the miss is `unknown`, not a pass.
    assert_eq!(json["miss"], "unknown", "{json}");
    let unfired = json["unfired"].as_array().expect("unfired is an array");
    assert_eq!(unfired.len(), 1, "{json}");
    let u = &unfired[0];
    assert_eq!(u["fault"], "fault[0]");
    assert_eq!(u["node"], "client-1");
    assert_eq!(u["mark"], "granted");
    assert_eq!(u["occurrence"], 10_000);
    assert_eq!(u["optional"], false);
    let reached = u["reached"].as_u64().expect("reached");
    assert!(reached > 0 && reached < 10_000, "{u}");
    assert_eq!(u["lapsed_ms"], serde_json::Value::Null);
    let unmet = json["unmet"].as_array().expect("unmet");
    assert_eq!(
        unmet,
        &[serde_json::Value::from(format!(
            "fault[0] never fired: client-1 reached `granted` {reached} times, not 10000"
        ))]
    );
}

#[test]
fn an_optional_trigger_that_did_not_fire_is_reported_but_does_not_fail() {
    let text = with_fault(
        REDIS,
        r#"node = "client-1", mark = "granted", occurrence = 10_000, optional = true"#,
    );
    let (code, json) = run_json("unfired-optional", &text);
    assert_eq!(code, Some(0), "{json}");
    assert_eq!(json["expected"], true);
    assert_eq!(json["miss"], serde_json::Value::Null, "{json}");
    assert_eq!(json["unfired"][0]["optional"], true);
    // The text says so too.
    let path = temp_scenario("unfired-optional-text", &text);
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert!(
        stdout(&out).contains("did not fire:\n  - fault[0] (optional): client-1 reached `granted`"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_lapsed_trigger_is_reported_with_its_lapse_time() {
    let text = with_fault(
        REDIS,
        r#"node = "client-1", mark = "granted", occurrence = 3, before_ms = 1"#,
    );
    let (code, json) = run_json("lapsed", &text);
    assert_eq!(code, Some(1), "{json}");
    let u = &json["unfired"][0];
    assert_eq!(u["lapsed_ms"], 1.0, "{json}");
    assert!(
        json["unmet"][0]
            .as_str()
            .expect("a sentence")
            .starts_with("fault[0] never fired: it lapsed at 1 ms"),
        "{json}"
    );
}

#[test]
fn every_catalogue_trigger_can_be_loaded() {
    // The load-time checks accept every shipped scenario (the runs are `check`'s business).
    for dir in [
        "scenarios/catalogue",
        "scenarios/found",
        "scenarios/sweeps",
        "scenarios/chaos",
    ] {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for entry in std::fs::read_dir(&dir).expect("the folder") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "toml") {
                if let Err(e) = load(&path) {
                    panic!("{e}");
                }
            }
        }
    }
}

/// The marks in backquotes in the `## Marks` section of a family's page (words in lower case
/// and hyphens: a command such as `SET` is no mark).
fn marks_on_page(kind: &str) -> BTreeSet<String> {
    let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/families")
        .join(format!("{kind}.md"));
    let text = std::fs::read_to_string(&page).expect("the family's page");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Marks"))
        .unwrap_or_else(|| panic!("{}: no ## Marks section", page.display()));
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .map(str::to_string)
        .collect()
}

#[test]
fn each_familys_page_lists_exactly_the_marks_its_nodes_reach() {
    let workload: BTreeSet<String> = WORKLOAD_MARKS.iter().map(|(m, _)| m.to_string()).collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/chaos");
    let mut kinds = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("scenarios/chaos") {
        let path = entry.expect("an entry").path();
        if !path.to_string_lossy().ends_with("-unfenced.toml") {
            continue;
        }
        let s = load(&path).expect("a chaos scenario loads").scenario;
        let kind = s.system.kind();
        kinds.insert(kind);
        let own: BTreeSet<String> = s
            .system
            .marks()
            .iter()
            .map(|(m, _)| m.to_string())
            .filter(|m| !workload.contains(m))
            .collect();
        let listed: BTreeSet<String> = marks_on_page(kind)
            .into_iter()
            .filter(|m| !workload.contains(m))
            .collect();
        assert_eq!(listed, own, "docs/families/{kind}.md, ## Marks");
    }
    assert!(kinds.len() >= 4, "{kinds:?}");
    // The workload's marks are the shared page's.
    let shared = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scenarios.md"),
    )
    .expect("docs/scenarios.md");
    for m in &workload {
        assert!(
            shared.contains(&format!("`{m}`")),
            "docs/scenarios.md lacks `{m}`"
        );
    }
}

#[test]
fn check_fails_a_scenario_whose_trigger_did_not_fire_and_says_why() {
    let text = format!(
        "{}\n[expect]\nverdict = \"any\"\n",
        with_fault(
            REDIS,
            r#"node = "client-1", mark = "granted", occurrence = 10_000"#
        )
    );
    let path = temp_scenario("check-unfired", &text);
    let out = lockstep(&["check", path.to_str().expect("utf-8"), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(json["passed"], false);
    let unmet = &json["scenarios"][0]["failures"][0]["unmet"][0];
    assert!(
        unmet
            .as_str()
            .is_some_and(|u| u.starts_with("fault[0] never fired: client-1 reached `granted`")),
        "{json}"
    );
    // Optional, the same scenario passes.
    let optional = text.replace(
        "occurrence = 10_000",
        "occurrence = 10_000, optional = true",
    );
    let path = temp_scenario("check-unfired-optional", &optional);
    let out = lockstep(&["check", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn hunt_writes_no_trigger_that_did_not_fire() {
    // K1 with a second trigger that never fires; a shrink cut short at one run keeps it, and
    // the written file must still replay without a trigger that does not fire.
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/catalogue/k1-gc-pause-unfenced.toml");
    let text = std::fs::read_to_string(&file).expect("K1").replace(
        "[expect]",
        "[[fault]]\non = { node = \"client-2\", mark = \"granted\", occurrence = 100_000, \
         optional = true }\npause = { node = \"client-2\", for_ms = 10 }\n\n[expect]",
    );
    let scenario = lockstep::parse(&text, &file).expect("parses");
    assert_eq!(scenario.faults.len(), 2);
    let options = lockstep::hunt::HuntOptions {
        from: 1,
        seeds: 10,
        jobs: 1,
        max_tries: 1,
        candidates: 1,
    };
    let found = match lockstep::hunt::hunt(&text, &file, &scenario, options) {
        Ok(lockstep::hunt::Hunted::Found(found)) => found,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        found.shrunk.faults,
        scenario.faults[..1],
        "{:#?}",
        found.shrunk
    );
    assert!(
        found.replay.unfired.is_empty(),
        "{:?}",
        found.replay.unfired
    );
    assert!(found.replay.expected(), "{:?}", found.replay.unmet);
}
