//! `[expect] invalid_rate`: a bound on the share of a scenario's seeds whose property is
//! judged invalid. No run is held to it: `check`, `sweep` and `merge` judge the seeds together
//! by the rate's 95% Wilson interval, and a miss fails the scenario with every seed met. A
//! bound no rate can meet, or a per-run verdict beside it, is refused naming its key.

use std::path::Path;

use lockstep::expect::{RateBound, rate_unmet};
use lockstep::parse;

use crate::support::{CLEAN, TempDir, errors_of, lockstep, root, stderr, stdout, temp_scenario};

/// CLEAN, valid on every seed, with `[expect]` lines.
fn with_expect(lines: &str) -> String {
    format!("{CLEAN}\n[expect]\n{lines}\n")
}

/// K1, invalid on every seed, with its `verdict = "invalid"` line replaced by `line`.
fn k1_with(line: &str) -> String {
    let text =
        std::fs::read_to_string(root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml"))
            .expect("K1");
    assert!(
        text.contains("\nverdict = \"invalid\"\n"),
        "K1's verdict line"
    );
    text.replace("\nverdict = \"invalid\"\n", &format!("\n{line}\n"))
}

fn json(out: &std::process::Output) -> serde_json::Value {
    let raw = stdout(out);
    serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{e}: {raw}{}", stderr(out)))
}

fn at_least(share: f64) -> RateBound {
    RateBound {
        at_least: Some(share),
        at_most: None,
    }
}

fn at_most(share: f64) -> RateBound {
    RateBound {
        at_least: None,
        at_most: Some(share),
    }
}

#[test]
fn a_rate_is_missed_only_when_its_95_percent_interval_lies_outside_the_bound() {
    // 0 of 1000 seeds: the interval is 0%-0.383%, which contradicts 1% and not 0.3%.
    assert_eq!(
        rate_unmet(&at_least(0.01), 0, 1000).as_deref(),
        Some("expected invalid_rate >= 1.0%, got 0 of 1000 seeds (0.0%, 95% interval 0.0%–0.383%)")
    );
    assert_eq!(rate_unmet(&at_least(0.003), 0, 1000), None);
    // 0 of 20 (0%-16.1%) does not contradict 10%, but does 20%.
    assert_eq!(rate_unmet(&at_least(0.1), 0, 20), None);
    assert!(rate_unmet(&at_least(0.2), 0, 20).is_some());
    // 20 of 20 (83.9%-100%) contradicts at most 50%, not at most 90%.
    assert_eq!(
        rate_unmet(&at_most(0.5), 20, 20).as_deref(),
        Some(
            "expected invalid_rate <= 50.0%, got 20 of 20 seeds (100.0%, 95% interval 83.9%–100.0%)"
        )
    );
    assert_eq!(rate_unmet(&at_most(0.9), 20, 20), None);
    // A range is missed on the side the interval leaves it by.
    let range = RateBound {
        at_least: Some(0.2),
        at_most: Some(0.3),
    };
    assert_eq!(rate_unmet(&range, 25, 100), None);
    let below = rate_unmet(&range, 5, 100).expect("5 of 100 is below 20%");
    assert!(
        below.starts_with("expected invalid_rate >= 20.0%, got 5 of 100 seeds"),
        "{below}"
    );
    let above = rate_unmet(&range, 60, 100).expect("60 of 100 is above 30%");
    assert!(
        above.starts_with("expected invalid_rate <= 30.0%, got 60 of 100 seeds"),
        "{above}"
    );
    // One seed proves little, and no seed nothing.
    assert_eq!(
        rate_unmet(&at_least(0.9), 0, 1).as_deref(),
        Some("expected invalid_rate >= 90.0%, got 0 of 1 seed (0.0%, 95% interval 0.0%–79.3%)")
    );
    assert_eq!(rate_unmet(&at_least(1.0), 0, 0), None);
}

#[test]
fn a_rate_asks_no_verdict_of_a_run() {
    let path = Path::new("rate.toml");
    for lines in [
        "invalid_rate = { at_most = 1 }",
        "verdict = \"any\"\ninvalid_rate = { at_most = 1 }",
    ] {
        let s = parse(&with_expect(lines), path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.expect.verdict, None, "{lines}");
        assert_eq!(s.expect.invalid_rate, Some(at_most(1.0)), "{lines}");
    }
    let s = parse(
        &with_expect("invalid_rate = { at_least = 0.0123456789012 }"),
        path,
    )
    .expect("loads");
    let rounded = at_least(0.012_345_679);
    assert_eq!(s.expect.invalid_rate, Some(rounded), "9 decimal places");
    let s = parse(&with_expect(""), path).expect("loads");
    assert_eq!(s.expect.invalid_rate, None);
    assert_eq!(s.expect.verdict, Some(lockstep_check::Validity::Valid));
}

#[test]
fn invalid_rates_no_rate_can_meet_are_errors_naming_the_key() {
    let cases = [
        (
            "invalid_rate = { at_least = -0.1 }",
            "expect.invalid_rate.at_least: -0.1 is out of range: expected 0 to 1",
        ),
        (
            "invalid_rate = { at_most = 1.5 }",
            "expect.invalid_rate.at_most: 1.5 is out of range: expected 0 to 1",
        ),
        (
            "invalid_rate = { at_least = nan }",
            "expect.invalid_rate.at_least: NaN is out of range: expected 0 to 1",
        ),
        (
            "invalid_rate = { at_least = 0.5, at_most = 0.1 }",
            "expect.invalid_rate: at_least 0.5 is above at_most 0.1: no rate can meet it",
        ),
        (
            "invalid_rate = {}",
            "expect.invalid_rate: give at_least, at_most or both",
        ),
        (
            "verdict = \"valid\"\ninvalid_rate = { at_least = 0.1 }",
            "expect.invalid_rate: a rate of invalid seeds cannot go with verdict = \"valid\"",
        ),
        (
            "verdict = \"invalid\"\ninvalid_rate = { at_least = 0.1 }",
            "expect.invalid_rate: a rate of invalid seeds cannot go with verdict = \"invalid\"",
        ),
        (
            "invalid_rate = { at_least = \"often\" }",
            "expect.invalid_rate.at_least",
        ),
        ("invalid_rate = { least = 0.1 }", "expect.invalid_rate"),
        ("invalid_rate = 0.1", "expect.invalid_rate"),
    ];
    for (i, (lines, expected)) in cases.iter().enumerate() {
        let lines_of = errors_of(&format!("rate-err-{i}"), &with_expect(lines));
        assert!(
            lines_of.iter().any(|l| l.contains(expected)),
            "`{lines}`: no `{expected}` in {lines_of:#?}"
        );
    }
}

#[test]
fn check_fails_a_scenario_whose_seeds_together_miss_its_rate_with_every_seed_met() {
    let check = |test: &str, rate: &str, extra: &[&str]| {
        let path = temp_scenario(test, &with_expect(rate));
        let file = path.to_str().expect("utf-8").to_string();
        let mut args = vec!["check", file.as_str(), "--seeds", "20"];
        args.extend(extra);
        let out = lockstep(&args);
        (out, path)
    };
    // 0 invalid of 20 seeds does not contradict 10%.
    let (out, _path) = check(
        "rate-met",
        "invalid_rate = { at_least = 0.1 }",
        &["--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json(&out);
    let s = &v["scenarios"][0];
    assert_eq!(
        (&v["passed"], &s["ok"]),
        (&true.into(), &true.into()),
        "{v}"
    );
    assert_eq!(
        s["expected_invalid_rate"],
        serde_json::json!({ "at_least": 0.1 })
    );
    assert!(s.get("unmet").is_none(), "{s}");

    // It contradicts 20%: the scenario fails, though every seed met [expect].
    let missed =
        "expected invalid_rate >= 20.0%, got 0 of 20 seeds (0.0%, 95% interval 0.0%–16.1%)";
    let (out, _path) = check(
        "rate-missed",
        "invalid_rate = { at_least = 0.2 }",
        &["--format", "json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = json(&out);
    let s = &v["scenarios"][0];
    assert_eq!(
        (&v["passed"], &v["failed_scenarios"]),
        (&false.into(), &1.into())
    );
    assert_eq!(
        (&s["ok"], &s["passed"], &s["failed"]),
        (&false.into(), &20.into(), &0.into())
    );
    assert_eq!(s["unmet"], serde_json::json!([missed]));
    assert_eq!(s["failures"], serde_json::json!([]));

    // The table says what the seeds together missed, and the JUnit failure is of type `rate`.
    let dir = TempDir::new("rate-junit");
    let junit = dir.join("junit.xml");
    let junit_arg = junit.to_str().expect("utf-8").to_string();
    let (out, _path) = check(
        "rate-missed-table",
        "invalid_rate = { at_least = 0.2 }",
        &["--junit", &junit_arg],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let table = stdout(&out);
    let said = format!("every seed met [expect] on its own, but not the seeds together: {missed}");
    assert!(table.contains(&said), "{table}");
    assert!(
        table.contains("resource any, invalid_rate >= 20.0%"),
        "{table}"
    );
    let xml = std::fs::read_to_string(&junit).expect("the JUnit file");
    let doc = roxmltree::Document::parse(&xml).expect("XML");
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    assert_eq!(failure.attribute("type"), Some("rate"));
    assert_eq!(failure.attribute("message"), Some(said.as_str()));
}

#[test]
fn check_and_sweep_fail_a_design_invalid_more_often_than_its_rate_allows() {
    let path = temp_scenario("rate-at-most", &k1_with("invalid_rate = { at_most = 0.5 }"));
    let file = path.to_str().expect("utf-8");
    let missed =
        "expected invalid_rate <= 50.0%, got 10 of 10 seeds (100.0%, 95% interval 72.2%–100.0%)";
    let out = lockstep(&["check", file, "--seeds", "10", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let s = &json(&out)["scenarios"][0];
    assert_eq!(
        (&s["failed"], &s["unmet"]),
        (&0.into(), &serde_json::json!([missed]))
    );

    let out = lockstep(&["sweep", file, "--seeds", "10", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!((&v["ok"], &v["failed"]), (&false.into(), &0.into()), "{v}");
    assert_eq!(v["unmet"], serde_json::json!([missed]));
    assert_eq!(
        v["expected_invalid_rate"],
        serde_json::json!({ "at_most": 0.5 })
    );
    let out = lockstep(&["sweep", file, "--seeds", "10"]);
    let text = stdout(&out);
    assert!(
        text.contains("expect     resource any, invalid_rate <= 50.0%"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "10 seeds: every run met [expect]; not met by the runs together: {missed}"
        )),
        "{text}"
    );
    // 10 of 10 (72.2%-100%) does not contradict at most 80%.
    let path = temp_scenario(
        "rate-at-most-met",
        &k1_with("invalid_rate = { at_most = 0.8 }"),
    );
    let out = lockstep(&["check", path.to_str().expect("utf-8"), "--seeds", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// Two shards that do not contradict a rate alone can contradict it together: `merge` judges
/// the merged counts, as the whole sweep does.
#[test]
fn merge_judges_the_rate_on_the_merged_counts() {
    let shipped = std::fs::read_to_string(root().join("scenarios/chaos/redis-unfenced.toml"))
        .expect("the chaos scenario");
    assert!(
        shipped.contains("invalid_rate = { at_least = 0.02 }"),
        "its claim"
    );
    let path = temp_scenario(
        "rate-merge",
        &shipped.replace("at_least = 0.02", "at_least = 0.11"),
    );
    let file = path.to_str().expect("utf-8");
    let dir = path.parent().expect("a temp dir");
    let mut shards = Vec::new();
    for i in 1..=2 {
        let shard = format!("{i}/2");
        let out = lockstep(&[
            "sweep", file, "--seeds", "400", "--shard", &shard, "--format", "json",
        ]);
        let v = json(&out);
        // Each shard's 200 seeds: about 7-8% invalid, an interval reaching above 11%.
        let high = v["rates"]["invalid"]["ci95"][1]
            .as_f64()
            .expect("an interval");
        assert!(high >= 0.11, "shard {shard}: {v}");
        assert_eq!(
            (out.status.code(), &v["ok"]),
            (Some(0), &true.into()),
            "shard {shard}"
        );
        let shard_file = dir.join(format!("shard{i}.json"));
        std::fs::write(&shard_file, stdout(&out)).expect("write a shard");
        shards.push(shard_file.display().to_string());
    }
    let out = lockstep(&["merge", "--format", "json", &shards[0], &shards[1]]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let merged = json(&out);
    assert_eq!(merged["ok"], false);
    assert_eq!(
        merged["unmet"],
        serde_json::json!([
            "expected invalid_rate >= 11.0%, got 30 of 400 seeds (7.5%, 95% interval 5.3%–10.5%)"
        ])
    );
    // The whole sweep says the same, byte for byte.
    let whole = lockstep(&["sweep", file, "--seeds", "400", "--format", "json"]);
    assert_eq!(whole.status.code(), Some(1));
    assert_eq!(stdout(&whole), stdout(&out));

    // A summary whose bound no rate can meet is refused, naming the key.
    let edited = std::fs::read_to_string(&shards[1])
        .expect("a shard")
        .replace("\"at_least\":0.11", "\"at_least\":1.5");
    std::fs::write(&shards[1], edited).expect("write");
    let out = lockstep(&["merge", &shards[0], &shards[1]]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("`expected_invalid_rate.at_least`: 1.5 is out of range: expected 0 to 1"),
        "{err}"
    );
}
