//! JUnit XML of a check, the report format every CI server shows: one `<testcase>` per
//! scenario, with a `<failure>` carrying the failing seeds, what they did not meet and the
//! commands that reproduce them.
//!
//! The layout is the common denominator of Jenkins, GitLab, GitHub test reporters and Azure:
//! `<testsuites>` around one `<testsuite name="lockstep">`. Text is escaped for XML 1.0, and
//! characters XML 1.0 cannot carry at all (most control characters) become U+FFFD.

use std::fmt::Write as _;
use std::path::Path;

use lockstep_reports::format::plural;
use lockstep_reports::suite::expected_with_rate;

use crate::suite::{ScenarioResult, SuiteResult, WallTimes};

/// The JUnit XML document of `suite`; `times` gives the `time` attributes (seconds).
pub fn render(suite: &SuiteResult, times: &WallTimes) -> String {
    let tests = suite.scenarios.len();
    let failures = suite.failed_scenarios;
    let total = times.total.as_secs_f64();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"lockstep\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{total:.3}\">"
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"lockstep\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{total:.3}\">"
    );
    for (i, s) in suite.scenarios.iter().enumerate() {
        let _ = write!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" time=\"{:.3}\">",
            attr(&classname(&s.file)),
            attr(&s.name),
            attr(&s.file),
            times.scenario(i).as_secs_f64()
        );
        properties(&mut x, s);
        if !s.ok {
            let _ = write!(
                x,
                "\n      <failure message=\"{}\" type=\"{}\">{}</failure>",
                attr(&s.failure_message()),
                failure_type(s),
                text(&s.failure_text())
            );
        }
        let v = &s.verdict_counts;
        let out = format!(
            "{} seed{} run, {} met [expect] ({}); {} verdicts: {} valid, {} invalid, {} unknown; {} events",
            s.seeds,
            plural(s.seeds),
            s.passed,
            expected_with_rate(s.property, s.expected_verdict, s.expected_invalid_rate),
            s.property,
            v.valid,
            v.invalid,
            v.unknown,
            s.events
        );
        let _ = writeln!(
            x,
            "\n      <system-out>{}</system-out>\n    </testcase>",
            text(&out)
        );
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// A test case's `<properties>`: each metric of the checker its runs measured, in the
/// checker's order, by key (`<property name="double_holders" value="runs=20 nonzero=3
/// never=0 total=51 max=27"/>`: docs/checker.md, Metrics).
fn properties(x: &mut String, s: &lockstep_reports::suite::ScenarioResult) {
    let measured: Vec<_> = lockstep_check::METRICS
        .iter()
        .filter_map(|m| s.metrics.0.get(m.key).map(|t| (m.key, t)))
        .collect();
    if measured.is_empty() {
        return;
    }
    x.push_str("\n      <properties>");
    for (key, t) in measured {
        let _ = write!(
            x,
            "\n        <property name=\"{}\" value=\"runs={} nonzero={} never={} total={} max={}\"/>",
            attr(key),
            t.runs,
            t.nonzero,
            t.never,
            t.total,
            t.max
        );
    }
    x.push_str("\n      </properties>");
}

/// The `type` of a scenario's `<failure>`: the gravest kind of miss among its failing seeds
/// kept (`safety`, then `liveness`, then `unknown`); else `rate` when the seeds together
/// missed `[expect] invalid_rate` (which fails no seed) and all ran alike twice; else
/// `expectation` (a scenario that ran no seed, or ran differently the second time).
fn failure_type(s: &ScenarioResult) -> &'static str {
    use lockstep_reports::suite::Miss;
    let has = |m: Miss| s.failures.iter().any(|f| f.class == Some(m));
    let alike = s.determinism.as_ref().is_none_or(|d| d.mismatched == 0);
    let fallback = if !s.unmet.is_empty() && alike {
        "rate"
    } else {
        "expectation"
    };
    [
        (Miss::Safety, "safety"),
        (Miss::Liveness, "liveness"),
        (Miss::Unknown, "unknown"),
    ]
    .into_iter()
    .find(|&(m, _)| has(m))
    .map_or(fallback, |(_, name)| name)
}

/// `lockstep.<directory>`: CI servers group test cases by class, and a directory of scenarios
/// is the natural group (`lockstep.catalogue`). Dots would split the group, so they become `_`.
fn classname(file: &str) -> String {
    let dir = Path::new(file)
        .parent()
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().replace('.', "_"));
    match dir {
        Some(d) if !d.is_empty() => format!("lockstep.{d}"),
        _ => "lockstep".to_string(),
    }
}

/// True for the characters XML 1.0 allows in a document.
fn allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `s` escaped for an attribute value in double quotes: quotes, tabs and line breaks are
/// character references too, which parsers keep (a literal one would be normalised to a space).
fn attr(s: &str) -> String {
    escape(s, true)
}

/// `s` escaped for element content.
fn text(s: &str) -> String {
    escape(s, false)
}

/// Markup characters and a carriage return as references (a literal one would be normalised
/// to a line feed); characters XML 1.0 forbids become U+FFFD.
fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' if attribute => out.push_str("&#10;"),
            c if allowed(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{attr, classname, text};

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(
            attr(r#"a<b>&"c"'d'"#),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;"
        );
        assert_eq!(text("x < y && z > w"), "x &lt; y &amp;&amp; z &gt; w");
        assert_eq!(text("]]>"), "]]&gt;");
    }

    #[test]
    fn line_breaks_survive_in_attributes_and_text() {
        assert_eq!(attr("a\nb\tc\r"), "a&#10;b&#9;c&#13;");
        assert_eq!(text("a\nb\tc\r"), "a\nb\tc&#13;");
    }

    #[test]
    fn characters_xml_forbids_are_replaced() {
        assert_eq!(attr("a\u{0}b\u{1b}c"), "a\u{FFFD}b\u{FFFD}c");
        assert_eq!(text("\u{b}\u{c}\u{FFFE}\u{FFFF}"), "\u{FFFD}".repeat(4));
        assert_eq!(text("é \u{1F512}"), "é \u{1F512}");
    }

    #[test]
    fn the_class_is_the_scenario_directory() {
        assert_eq!(
            classname("scenarios/catalogue/k1.toml"),
            "lockstep.catalogue"
        );
        assert_eq!(classname("k1.toml"), "lockstep");
        assert_eq!(classname("/tmp/v1.2/k1.toml"), "lockstep.v1_2");
    }
}
