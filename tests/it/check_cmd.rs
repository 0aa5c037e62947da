//! `lockstep check`: many scenarios over their seeds, the summary, JSON, JUnit XML and exit
//! codes.

use std::path::{Path, PathBuf};

use crate::support::{CLEAN, TempDir, lockstep, root, stderr, stdout};

const CATALOGUE: &str = "scenarios/catalogue";
const K1: &str = "scenarios/catalogue/k1-gc-pause-unfenced.toml";

/// A fresh, empty directory for one test, removed when dropped.
fn suite_dir(test: &str) -> TempDir {
    TempDir::new(&format!("check-{test}"))
}

/// Writes `text` to `dir/rel`, creating directories.
fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    std::fs::write(&path, text).expect("write scenario");
    path
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// K1 as in the catalogue, but expecting the unsafe design to be `valid`: every seed fails.
fn k1_expecting_valid() -> String {
    std::fs::read_to_string(root().join(K1))
        .expect("K1")
        .replace("verdict = \"invalid\"", "verdict = \"valid\"")
}

fn check_json(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["check", "--format", "json"];
    all.extend(args);
    let out = lockstep(&all);
    let v = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {}\nstderr: {}", stdout(&out), stderr(&out)));
    (out.status.code(), v)
}

/// Parses a JUnit file with a conforming XML parser (so a malformed one fails here) and
/// returns the text.
fn read_junit(path: &Path) -> String {
    let xml = std::fs::read_to_string(path).expect("the JUnit file exists");
    if let Err(e) = roxmltree::Document::parse(&xml) {
        panic!("malformed JUnit XML: {e}\n{xml}");
    }
    xml
}

fn testcases<'a>(doc: &'a roxmltree::Document<'a>) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect()
}

#[test]
fn check_over_the_catalogue_exits_0_and_says_all_expectations_hold() {
    // A terminal wide enough for every cell on one line (see the width test below).
    let out = lockstep_columns(&["check", CATALOGUE], Some("1000"));
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let n = crate::support::scenario_files(CATALOGUE).len();
    // Every scenario runs over its declared seeds: at least 100 each.
    let last = text.trim_end().lines().last().unwrap_or_default();
    let runs: u64 = last
        .strip_prefix(&format!("{n} scenarios, "))
        .and_then(|rest| rest.strip_suffix(" runs: all expectations hold"))
        .and_then(|runs| runs.parse().ok())
        .unwrap_or_else(|| panic!("summary line: {text}"));
    assert!(runs >= 100 * n as u64, "{text}");
    assert!(text.contains("╭"), "a rounded table: {text}");
    for header in [
        "scenario", "file", "seeds", "expected", "met", "result", "events",
    ] {
        assert!(text.contains(header), "{header}: {text}");
    }
    assert!(text.contains("│ k1-gc-pause-unfenced "), "{text}");
    assert!(text.contains(K1), "{text}");
    assert!(text.contains("resource invalid"), "{text}");
    assert!(!text.contains("FAIL"), "{text}");
}

#[test]
fn check_seeds_3_runs_3_seeds_of_each_scenario_from_its_seed() {
    let dir = suite_dir("seeds-override");
    write(&dir, "a.toml", CLEAN);
    write(
        &dir,
        "b.toml",
        &CLEAN.replace(
            "name = \"clean\"",
            "name = \"b\"\nseed = 40\nseeds = [1, 2]",
        ),
    );
    let (code, v) = check_json(&[s(&dir), "--seeds", "3"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["runs"], 6);
    assert_eq!(v["passed"], true);
    for sc in v["scenarios"].as_array().expect("scenarios") {
        assert_eq!(sc["seeds"], 3, "{sc}");
        assert_eq!(sc["passed"], 3, "{sc}");
    }
    // `--seeds` starts at the scenario's `seed`, ignoring its `seeds`: failing seeds show it.
    let failing = CLEAN.replace(
        "name = \"clean\"",
        "name = \"f\"\nseed = 40\nseeds = [1, 2]",
    ) + "\n[expect]\nverdict = \"invalid\"\n";
    let dir = suite_dir("seeds-override-start");
    let file = write(&dir, "f.toml", &failing);
    let (code, v) = check_json(&[s(&file), "--seeds", "3"]);
    assert_eq!(code, Some(1));
    let seeds: Vec<u64> = v["scenarios"][0]["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| f["seed"].as_u64().expect("seed"))
        .collect();
    assert_eq!(seeds, [40, 41, 42]);
}

#[test]
fn check_json_over_the_catalogue_has_the_documented_fields() {
    let (code, v) = check_json(&[CATALOGUE, "--seeds", "2"]);
    assert_eq!(code, Some(0), "{v}");
    let n = crate::support::scenario_files(CATALOGUE).len();
    assert_eq!(v["passed"], true);
    assert_eq!(v["runs"], 2 * n);
    assert_eq!(v["failed_scenarios"], 0);
    let scenarios = v["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), n);
    let k1 = scenarios
        .iter()
        .find(|sc| sc["name"] == "k1-gc-pause-unfenced")
        .expect("K1 is checked");
    assert_eq!(k1["file"], K1);
    assert_eq!(k1["ok"], true);
    assert_eq!(k1["seeds"], 2);
    assert_eq!(k1["passed"], 2);
    assert_eq!(k1["failed"], 0);
    assert_eq!(k1["property"], "resource");
    assert_eq!(k1["expected_verdict"], "invalid");
    assert_eq!(k1["verdict_counts"]["invalid"], 2);
    assert_eq!(k1["verdict_counts"]["valid"], 0);
    assert_eq!(k1["verdict_counts"]["unknown"], 0);
    assert_eq!(k1["exhausted"], 0);
    assert!(k1["events"].as_u64() > Some(1000));
    assert_eq!(k1["failures"], serde_json::json!([]));
}

#[test]
fn check_json_is_identical_when_repeated() {
    // Three seeds of every scenario: the full suite runs once, in the test above.
    let args = ["check", CATALOGUE, "--seeds", "3", "--format", "json"];
    let a = stdout(&lockstep(&args));
    let b = stdout(&lockstep(&args));
    assert!(!a.is_empty());
    assert_eq!(a, b, "no wall-clock time or other noise in the JSON");
}

#[test]
fn a_wrong_expectation_exits_1_and_the_junit_failure_carries_the_unmet_text_and_reproduce_command()
{
    let dir = suite_dir("wrong");
    let k1 = write(&dir, "k1.toml", &k1_expecting_valid());
    write(&dir, "clean.toml", CLEAN);
    let junit = dir.join("junit.xml");
    let out = lockstep(&["check", s(&dir), "--seeds", "2", "--junit", s(&junit)]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.trim_end()
            .ends_with("2 scenarios, 4 runs: 1 scenario failed"),
        "{text}"
    );
    let reproduce = format!("lockstep run {} --seed 2", k1.display());
    assert!(text.contains(&reproduce), "{text}");
    assert!(text.contains("expected resource to be valid, got invalid"));

    let xml = read_junit(&junit);
    let doc = roxmltree::Document::parse(&xml).expect("parsed above");
    let cases = testcases(&doc);
    assert_eq!(cases.len(), 2, "one testcase per scenario: {xml}");
    let failing = cases
        .iter()
        .find(|c| c.attribute("name") == Some("k1-gc-pause-unfenced"))
        .expect("K1's testcase");
    let failure = failing
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("a <failure>");
    // The kind of miss: a verdict other than the one expected is one of safety.
    assert_eq!(failure.attribute("type"), Some("safety"));
    let message = failure.attribute("message").expect("message");
    assert!(message.contains("2 of 2 seeds"), "{message}");
    assert!(
        message.contains("expected resource to be valid, got invalid"),
        "{message}"
    );
    let body = failure.text().expect("failure text");
    for seed in [1, 2] {
        let cmd = format!("lockstep run {} --seed {seed}", k1.display());
        assert!(body.contains(&cmd), "{cmd} in {body}");
    }
    assert!(body.contains("expected resource to be valid, got invalid"));
    assert!(body.contains("stale op accepted"), "the violation: {body}");
    // The test case carries the checker's metrics by key, as check's JSON counts them.
    let property = |name: &str| {
        failing
            .descendants()
            .find(|n| n.has_tag_name("property") && n.attribute("name") == Some(name))
            .and_then(|n| n.attribute("value"))
            .map(str::to_string)
    };
    let stale = property("stale_accepted").expect("a stale_accepted property");
    assert!(
        stale.starts_with("runs=2 nonzero=2 never=0 total="),
        "{stale}"
    );
    assert!(property("grants").is_some() && property("no_such_metric").is_none());
    let passing = cases
        .iter()
        .find(|c| c.attribute("name") == Some("clean"))
        .expect("the clean testcase");
    assert!(!passing.children().any(|n| n.has_tag_name("failure")));
    assert_eq!(
        passing.attribute("classname"),
        failing.attribute("classname")
    );
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("<testsuite>");
    assert_eq!(suite.attribute("tests"), Some("2"));
    assert_eq!(suite.attribute("failures"), Some("1"));
    assert_eq!(suite.attribute("errors"), Some("0"));
}

#[test]
fn the_reproduce_command_of_a_failing_seed_reproduces_its_trace_hash() {
    let dir = suite_dir("reproduce");
    write(&dir, "k1.toml", &k1_expecting_valid());
    let (code, v) = check_json(&[s(&dir), "--seeds", "3"]);
    assert_eq!(code, Some(1));
    let failure = &v["scenarios"][0]["failures"][2];
    assert_eq!(failure["seed"], 3);
    let cmd = failure["reproduce"].as_str().expect("reproduce");
    let mut args: Vec<&str> = cmd.split(' ').skip(1).collect();
    args.extend(["--format", "json"]);
    let out = lockstep(&args);
    assert_eq!(out.status.code(), Some(1), "the run fails its [expect] too");
    let run: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("run JSON");
    assert_eq!(run["trace_hash"], failure["trace_hash"]);
    assert_eq!(run["unmet"], failure["unmet"]);
}

#[test]
fn junit_over_the_catalogue_is_well_formed_with_one_testcase_per_scenario() {
    let dir = suite_dir("junit-catalogue");
    let junit = dir.join("report.xml");
    let out = lockstep(&["check", CATALOGUE, "--seeds", "2", "--junit", s(&junit)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let xml = read_junit(&junit);
    let doc = roxmltree::Document::parse(&xml).expect("parsed above");
    assert_eq!(doc.root_element().tag_name().name(), "testsuites");
    let files = crate::support::scenario_files(CATALOGUE);
    let cases = testcases(&doc);
    assert_eq!(cases.len(), files.len());
    for c in &cases {
        assert_eq!(c.attribute("classname"), Some("lockstep.catalogue"));
        assert!(
            c.attribute("time")
                .is_some_and(|t| t.parse::<f64>().is_ok())
        );
        assert!(!c.children().any(|n| n.has_tag_name("failure")));
    }
    let mut names: Vec<&str> = cases.iter().filter_map(|c| c.attribute("name")).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), files.len(), "every scenario once");
    assert_eq!(
        doc.root_element().attribute("tests"),
        Some(files.len().to_string().as_str())
    );
    assert_eq!(doc.root_element().attribute("failures"), Some("0"));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        leftovers,
        ["report.xml"],
        "no temporary file is left behind"
    );
}

#[test]
fn junit_escapes_markup_and_drops_characters_xml_cannot_carry() {
    let dir = suite_dir("escape");
    let name = r#"a<b>&\"c' \u0001 \u001b[31m"#;
    let text = CLEAN.replace("name = \"clean\"", &format!("name = \"{name}\""))
        + "\n[expect]\nverdict = \"invalid\"\n";
    write(&dir, "x&y.toml", &text);
    let junit = dir.join("junit.xml");
    let out = lockstep(&["check", s(&dir), "--junit", s(&junit)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let xml = read_junit(&junit);
    let doc = roxmltree::Document::parse(&xml).expect("parsed above");
    let case = testcases(&doc)[0];
    assert_eq!(
        case.attribute("name"),
        Some("a<b>&\"c' \u{FFFD} \u{FFFD}[31m")
    );
    let failure = case
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("a <failure>");
    assert!(
        failure
            .text()
            .is_some_and(|t| t.contains("x&y.toml' --seed 1")),
        "{xml}"
    );
}

#[test]
fn an_existing_junit_file_is_replaced_whole() {
    let dir = suite_dir("replace");
    write(&dir, "s/clean.toml", CLEAN);
    let junit = dir.join("junit.xml");
    std::fs::write(&junit, "old contents").expect("write");
    let out = lockstep(&["check", s(&dir.join("s")), "--junit", s(&junit)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(read_junit(&junit).contains("name=\"clean\""));
}

#[test]
fn a_bad_file_exits_2_with_every_problem_and_writes_no_output_and_no_junit() {
    let dir = suite_dir("bad");
    write(&dir, "a-good.toml", CLEAN);
    let bad = write(
        &dir,
        "b-bad.toml",
        &CLEAN.replace("ttl_ms = 1_000", "ttl_ms = 0\nfencing = \"maybe\""),
    );
    let worse = write(
        &dir,
        "c-worse.toml",
        &CLEAN.replace("duration_ms = 5_000", "duration_ms = 0\nmax_events = 0"),
    );
    let junit = dir.join("junit.xml");
    let out = lockstep(&["check", s(&dir), "--junit", s(&junit)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        stdout(&out).is_empty(),
        "no partial output: {}",
        stdout(&out)
    );
    assert!(!junit.exists(), "no JUnit file");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "one line per problem, every file: {err}");
    assert!(
        lines[0].starts_with(&format!("{}:", bad.display())),
        "{err}"
    );
    assert!(lines[0].contains("model.fencing"), "{err}");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with(&format!("{}:", worse.display()))),
        "{err}"
    );
    assert!(err.contains("scenario.duration_ms: must be greater than 0"));
    assert!(err.contains("scenario.max_events: must be greater than 0"));
}

#[test]
fn a_missing_path_or_a_directory_without_scenarios_exits_2() {
    let dir = suite_dir("missing");
    let out = lockstep(&["check", s(&dir.join("nowhere"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("nowhere: no such file or directory"),
        "{}",
        stderr(&out)
    );
    write(&dir, "notes/readme.md", "not a scenario");
    let out = lockstep(&["check", s(&dir)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no scenario files (*.toml)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        lockstep(&["check"]).status.code(),
        Some(2),
        "a path is required"
    );
    assert_eq!(
        lockstep(&["check", CATALOGUE, "--seeds", "0"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn a_junit_file_that_cannot_be_written_exits_2_naming_it_before_any_run() {
    let dir = suite_dir("unwritable");
    let junit = dir.join("no-such-dir/junit.xml");
    let out = lockstep(&["check", K1, "--junit", s(&junit)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty(), "nothing was run: {}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("{}: cannot write the JUnit file", junit.display())),
        "{err}"
    );
    let out = lockstep(&["check", K1, "--junit", s(&dir)]);
    assert_eq!(out.status.code(), Some(2), "a directory is no JUnit file");
}

#[test]
fn directories_are_walked_recursively_in_path_order() {
    let dir = suite_dir("order");
    for (rel, name) in [
        ("b.toml", "b"),
        ("a/z.toml", "a-z"),
        ("a.toml", "a"),
        ("c/d/e.toml", "c-d-e"),
    ] {
        write(
            &dir,
            rel,
            &CLEAN.replace("name = \"clean\"", &format!("name = \"{name}\"")),
        );
    }
    write(&dir, "c/skip.txt", "not a scenario");
    let (code, v) = check_json(&[s(&dir), s(&dir.join("b.toml"))]);
    assert_eq!(code, Some(0), "{v}");
    let names: Vec<&str> = v["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .map(|sc| sc["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        ["a-z", "a", "b", "c-d-e"],
        "a file named twice runs once"
    );
}

#[test]
fn the_seeds_list_and_table_forms_choose_the_seeds_run() {
    let dir = suite_dir("seeds-forms");
    // Expecting a clean design to be `invalid` fails on every seed, so the failures list the
    // seeds in the order they ran.
    let failing = |name: &str, seeds: &str| {
        CLEAN.replace(
            "name = \"clean\"",
            &format!("name = \"{name}\"\nseed = 100\n{seeds}"),
        ) + "\n[expect]\nverdict = \"invalid\"\n"
    };
    write(&dir, "1-list.toml", &failing("list", "seeds = [7, 2, 1]"));
    write(
        &dir,
        "2-table.toml",
        &failing("table", "seeds = { from = 5, count = 7 }"),
    );
    write(
        &dir,
        "3-count.toml",
        &failing("count", "seeds = { count = 2 }"),
    );
    write(&dir, "4-default.toml", &failing("default", ""));
    let (code, v) = check_json(&[s(&dir)]);
    assert_eq!(code, Some(1));
    assert_eq!(v["runs"], 3 + 7 + 2 + 1);
    assert_eq!(v["failed_scenarios"], 4);
    let seeds_of = |i: usize| -> (u64, u64, Vec<u64>) {
        let sc = &v["scenarios"][i];
        let kept = sc["failures"]
            .as_array()
            .expect("failures")
            .iter()
            .map(|f| f["seed"].as_u64().expect("seed"))
            .collect();
        (
            sc["seeds"].as_u64().expect("seeds"),
            sc["failed"].as_u64().expect("failed"),
            kept,
        )
    };
    assert_eq!(seeds_of(0), (3, 3, vec![7, 2, 1]));
    assert_eq!(
        seeds_of(1),
        (7, 7, vec![5, 6, 7, 8, 9]),
        "the first 5 failures are kept, all are counted"
    );
    assert_eq!(
        seeds_of(2),
        (2, 2, vec![100, 101]),
        "`from` defaults to `seed`"
    );
    assert_eq!(
        seeds_of(3),
        (1, 1, vec![100]),
        "without `seeds`, just `seed`"
    );
    let f = &v["scenarios"][1]["failures"][0];
    assert_eq!(f["verdict"], "valid");
    assert_eq!(f["unmet"][0], "expected resource to be invalid, got valid");
    assert!(f["trace_hash"].as_str().is_some_and(|h| h.len() == 16));
    let text = stdout(&lockstep(&["check", s(&dir)]));
    assert!(text.contains("... and 2 more failing seeds"), "{text}");
}

#[test]
fn bad_seeds_values_are_errors_with_their_key_path() {
    let cases = [
        ("seeds = []", "scenario.seeds: must list at least one seed"),
        (
            "seeds = { from = 3, count = 0 }",
            "scenario.seeds.count: must be greater than 0",
        ),
        (
            "seeds = { count = 10_000_001 }",
            "scenario.seeds.count: must be at most 10000000, not 10000001",
        ),
        (
            "seeds = [4, 5, 4]",
            "scenario.seeds[2]: seed 4 is listed twice (also scenario.seeds[0])",
        ),
        (
            "seeds = [1, -2]",
            "scenario.seeds[1]: invalid value: integer `-2`",
        ),
        ("seeds = \"many\"", "scenario.seeds: invalid type: string"),
        (
            "seeds = { from = 1, to = 9 }",
            "scenario.seeds.to: unknown field `to`",
        ),
    ];
    for (i, (line, error)) in cases.iter().enumerate() {
        let dir = suite_dir(&format!("bad-seeds-{i}"));
        let file = write(
            &dir,
            "s.toml",
            &CLEAN.replace("name = \"clean\"", &format!("name = \"clean\"\n{line}")),
        );
        for cmd in ["check", "run"] {
            let out = lockstep(&[cmd, s(&file)]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{cmd} {line}: {err}");
            assert!(err.starts_with(&file.display().to_string()), "{err}");
            assert!(err.contains(error), "{line}: expected `{error}` in {err}");
        }
    }
}

#[test]
fn every_flag_of_check_is_in_the_readme() {
    crate::tidy::flags_are_in_the_readme("check", &["--seeds", "--junit", "--format"]);
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    assert!(readme.contains("lockstep check PATH..."));
}

/// `lockstep ARGS` with `COLUMNS` set (or unset with `None`).
fn lockstep_columns(args: &[&str], columns: Option<&str>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"));
    cmd.args(args).current_dir(root());
    match columns {
        Some(c) => cmd.env("COLUMNS", c),
        None => cmd.env_remove("COLUMNS"),
    };
    cmd.output().expect("the lockstep binary runs")
}

/// A few scenarios, one failing on every seed (so failures are kept and explained).
fn small_suite(test: &str) -> TempDir {
    let dir = suite_dir(test);
    write(&dir, "a-clean.toml", CLEAN);
    write(&dir, "b-k1-wrong.toml", &k1_expecting_valid());
    let k1 = std::fs::read_to_string(root().join(K1)).expect("K1");
    write(&dir, "c/k1.toml", &k1);
    write(
        &dir,
        "d-listed.toml",
        &CLEAN.replace("name = \"clean\"", "name = \"listed\"\nseeds = [9, 3, 5]"),
    );
    dir
}

#[test]
fn check_json_is_byte_identical_on_1_and_2_jobs() {
    let dir = small_suite("jobs");
    let run = |jobs: &str| {
        let out = lockstep(&[
            "check",
            s(&dir),
            "--seeds",
            "7",
            "--format",
            "json",
            "--jobs",
            jobs,
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        stdout(&out)
    };
    let one = run("1");
    let two = run("2");
    assert!(one.contains("b-k1-wrong"), "{one}");
    assert_eq!(one, two, "--jobs changes nothing in the JSON");
    // Declared seeds too (a list among them), and the determinism check.
    let declared = |jobs: &str| {
        let out = lockstep(&[
            "check",
            s(&dir),
            "--format",
            "json",
            "--check-determinism",
            "--jobs",
            jobs,
        ]);
        stdout(&out)
    };
    let (a, b) = (declared("1"), declared("2"));
    let v: serde_json::Value = serde_json::from_str(&a).expect("json");
    assert_eq!(v["scenarios"].as_array().map(Vec::len), Some(4), "{a}");
    assert_eq!(a, b);
}

#[test]
fn filter_picks_scenarios_by_name_or_path_and_list_runs_nothing() {
    let dir = small_suite("filter");
    let out = lockstep(&["check", s(&dir), "--list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 4, "one line per scenario: {text}");
    assert!(
        text.contains("k1-gc-pause-unfenced") && text.contains("clean"),
        "{text}"
    );
    // A substring of the name, of the path, and a glob.
    for (filter, want) in [
        ("gc-pause", 2),
        ("c/k1", 1),
        ("k1-*-unfenced", 2),
        ("cl?an", 1),
        ("d-*.toml", 1),
    ] {
        let out = lockstep(&["check", s(&dir), "--list", "--filter", filter]);
        assert_eq!(out.status.code(), Some(0), "{filter}: {}", stderr(&out));
        assert_eq!(
            stdout(&out).lines().count(),
            want,
            "{filter}: {}",
            stdout(&out)
        );
    }
    let (code, v) = check_json(&[s(&dir), "--filter", "clean", "--seeds", "2"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["scenarios"].as_array().map(Vec::len), Some(1), "{v}");
    let out = lockstep(&["check", s(&dir), "--filter", "nothing-like-this"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nothing-like-this"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn the_table_fits_the_terminal_width_and_the_json_keeps_everything() {
    let args = ["check", CATALOGUE, "--seeds", "1"];
    let table = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(['╭', '│', '├', '╰']))
            .map(str::to_string)
            .collect()
    };
    for (columns, width) in [(Some("80"), 80), (Some("60"), 60)] {
        let out = lockstep_columns(&args, columns);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{text}");
        let table = table(&text);
        assert!(table.len() > 3, "{text}");
        for l in &table {
            assert!(l.chars().count() <= width, "{columns:?}: {l}");
        }
    }
    // Off a terminal without COLUMNS (stdout is a pipe here) nothing wraps: every scenario's
    // name and file stand whole on its row, as `--list` gives them.
    let out = lockstep_columns(&args, None);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let rows = table(&text);
    let list = lockstep_columns(&["check", CATALOGUE, "--list"], None);
    let listed = stdout(&list);
    assert!(listed.lines().count() > 100, "{listed}");
    for line in listed.lines() {
        let mut words = line.split_whitespace();
        let (name, file) = (words.next().expect("name"), words.next().expect("file"));
        assert!(
            rows.iter()
                .any(|r| r.starts_with(&format!("│ {name} ")) && r.contains(&format!(" {file} "))),
            "{name} ({file}) is not whole on one row:\n{text}"
        );
    }
    let out = lockstep_columns(
        &["check", CATALOGUE, "--seeds", "1", "--format", "json"],
        Some("40"),
    );
    assert!(stdout(&out).contains(&format!("\"file\":\"{K1}\"")));
}

#[test]
fn failures_say_whether_they_are_safety_liveness_or_unknown() {
    let dir = suite_dir("classes");
    write(&dir, "a-safety.toml", &k1_expecting_valid());
    let k1 = std::fs::read_to_string(root().join(K1)).expect("K1");
    write(
        &dir,
        "b-liveness.toml",
        &k1.replace("[expect]", "[expect]\ngrants = { min = 1_000_000 }"),
    );
    let baseline = std::fs::read_to_string(root().join("scenarios/catalogue/redis-baseline.toml"))
        .expect("baseline")
        .replace("seed = 1", "seed = 1\nmax_events = 500");
    write(&dir, "c-unknown.toml", &baseline);
    let junit = dir.join("junit.xml");
    let (code, v) = check_json(&[s(&dir), "--seeds", "2", "--junit", s(&junit)]);
    assert_eq!(code, Some(1));
    let classes: Vec<&str> = v["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .map(|sc| sc["failures"][0]["class"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(classes, ["safety", "liveness", "unknown"], "{v}");
    let xml = read_junit(&junit);
    for class in ["safety", "liveness", "unknown"] {
        assert!(xml.contains(&format!("type=\"{class}\"")), "{xml}");
    }
}

#[test]
fn every_new_flag_of_check_is_in_the_readme() {
    crate::tidy::flags_are_in_the_readme("check", &["--jobs", "--filter", "--list"]);
}
