//! `lockstep judge`: a history file (docs/history.md) judged by the checker, and reported as
//! `lockstep run` reports a run, minus what only a simulation has (a scenario, a seed, a trace
//! hash, a reproduce command, the family's counters and marks).

use lockstep_check::jsonl::{self, LineError, Parsed};
use lockstep_check::{Options, Property, Validity, Verdict, check};
use lockstep_reports::suite::Miss;
use lockstep_reports::{RunReport, RunSource};

/// How to judge a history beyond what its header says: each `Some` or `true` wins over the
/// header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// The property (`--property`).
    pub property: Option<Property>,
    /// Check token order (`--tokens-monotonic`).
    pub tokens_monotonic: bool,
    /// Measure leadership (`--leadership`).
    pub leadership: bool,
    /// From when no fault is in force (`--quiet-from-ns`).
    pub quiet_from_ns: Option<u64>,
}

/// A judged history.
#[derive(Debug)]
pub struct Judged {
    /// The history as read.
    pub parsed: Parsed,
    /// The property judged.
    pub property: Property,
    /// The checker's options used.
    pub options: Options,
    /// The verdict.
    pub verdict: Verdict,
    /// The verdict of `property`.
    pub judged: Validity,
}

/// Reads and judges the text of a history file.
///
/// # Errors
/// Every problem of the text, each with its line; or, for a history that reads but breaks the
/// checker's rules (an exit of a grant never granted), that problem with its entry's line.
pub fn judge(text: &[u8], overrides: &Overrides) -> Result<Judged, Vec<LineError>> {
    let parsed = jsonl::parse(text)?;
    let mut options = parsed.judging.options();
    options.tokens_monotonic |= overrides.tokens_monotonic;
    options.leadership |= overrides.leadership;
    if overrides.quiet_from_ns.is_some() {
        options.quiet_from_ns = overrides.quiet_from_ns;
    }
    let property = overrides
        .property
        .or(parsed.judging.property)
        .unwrap_or_default();
    let verdict = check(&parsed.history, &options).map_err(|e| {
        vec![LineError {
            line: e.entry.and_then(|i| parsed.line_of(i)).unwrap_or(0),
            problem: e.message,
        }]
    })?;
    let judged = verdict.get(property);
    Ok(Judged {
        parsed,
        property,
        options,
        verdict,
        judged,
    })
}

/// The report of a judged history read from `file`, with `expect` the verdict expected of its
/// property: `lockstep run`'s report with an empty scenario, seed and trace hash.
pub fn report(file: &str, judged: &Judged, expect: Validity) -> RunReport {
    let history = &judged.parsed.history;
    let source = RunSource {
        scenario: String::new(),
        file: file.to_string(),
        seed: 0,
        trace_hash: 0,
        complete: history.complete,
        events: history.entries.len() as u64,
        end_ns: history.end_ns,
        stopped: None,
    };
    let got = judged.judged;
    let unmet = match got == expect {
        true => Vec::new(),
        false => vec![format!(
            "expected {} to be {expect}, got {got}",
            judged.property
        )],
    };
    let miss = (got != expect).then_some(match got {
        Validity::Unknown => Miss::Unknown,
        _ => Miss::Safety,
    });
    RunReport::new(
        source,
        judged.property,
        judged.verdict.clone(),
        unmet,
        judged.verdict.explain(history),
    )
    .with_miss(miss)
}

/// The keys of `lockstep run --format json` that a judged history has no value for.
pub const SIMULATION_ONLY: &[&str] = &[
    "scenario",
    "seed",
    "trace_hash",
    "events",
    "reproduce",
    "counters",
    "unfired",
];

/// The JSON of `lockstep judge --format json`: the run report's without
/// [`SIMULATION_ONLY`], with `history` (the file) and `entries` (the history's entries), and
/// `outcome` `completed` or `incomplete` (the header's `complete`).
pub fn json(report: &RunReport) -> String {
    let mut value = serde_json::to_value(report).expect("a report always serialises");
    if let serde_json::Value::Object(map) = &mut value {
        for key in SIMULATION_ONLY {
            map.remove(*key);
        }
        map.remove("file");
        map.insert("history".into(), report.file.clone().into());
        map.insert("entries".into(), report.events.into());
        // A history that stopped early is incomplete, not a run out of events.
        if report.outcome == "exhausted" {
            map.insert("outcome".into(), "incomplete".into());
        }
    }
    value.to_string()
}

/// The text of `lockstep judge`: the run report's table under a header naming the history
/// instead of the scenario, seed and reproduce command.
pub fn table(report: &RunReport) -> String {
    let text = report.table();
    // The run table's first block (scenario, seed, reproduce) ends at its first blank line.
    let body = text.split_once("\n\n").map_or(text.as_str(), |(_, b)| b);
    let state = match report.outcome {
        "completed" => "complete",
        _ => "incomplete (the verdict is at best unknown)",
    };
    format!(
        "history    {}\nentries    {}, {state}, until {}\n\n{body}",
        report.file,
        report.events,
        lockstep_reports::format::duration_ms(report.simulated_ms)
    )
}
