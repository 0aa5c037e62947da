//! Scenario files the loader's fuzz target (`fuzz.rs`) found wrong, each kept as a test.

use std::path::Path;

// What the fuzz found, each kept as a test of its own.

/// The base file of the regressions below.
const BASE: &str = r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redis"
ttl_ms = 1_000
"#;

/// The error of `text` as printed, asserting it is one.
fn error_of(text: &str) -> String {
    let path = Path::new("fuzzed.toml");
    match lockstep::parse(text, path) {
        Ok(_) => panic!("loads: {text}"),
        Err(e) => e.to_string(),
    }
}

/// A date where a table is expected was named with the TOML reader's internal key
/// (`workload.work_ms.$__toml_private_datetime`).
#[test]
fn a_date_where_a_table_is_expected_is_named_by_its_key_alone() {
    let e = error_of(&format!(
        "{BASE}\n[workload]\nwork_ms = 1979-05-27T07:32:00Z\n"
    ));
    assert_eq!(
        e,
        "fuzzed.toml:11: workload.work_ms: a date or time is not a value this key takes"
    );
    let e = error_of("scenario = 07:32:00\n[model]\nkind = \"redis\"\nttl_ms = 1_000\n");
    assert_eq!(
        e,
        "fuzzed.toml:1: scenario: a date or time is not a value this key takes"
    );
}

/// A date given as `[storage]` was taken for a table with one key, the TOML reader's own
/// (`storage.$__toml_private_datetime`).
#[test]
fn a_date_as_the_storage_section_is_refused_as_one() {
    let e = error_of(&format!("storage = 1979-05-27T07:32:00Z\n{BASE}"));
    assert_eq!(
        e,
        "fuzzed.toml:1: storage: a date or time is not a value this key takes"
    );
}
