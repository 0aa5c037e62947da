//! `lockstep report`: the comparison of the catalogue in HTML, Markdown and JSON, escaping of
//! hostile names, sweep summaries as inputs, refused outputs, and the sample report kept in
//! `reports/sample/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use lockstep::report::{self, ReportFormat, ReportOptions};
use lockstep_reports::Comparison;

use crate::support::{TempDir, lockstep, root, scenario_files, stderr, stdout};

const CATALOGUE: &str = "scenarios/catalogue";
const CHAOS: &str = "scenarios/chaos/redis-unfenced.toml";
const K1: &str = "scenarios/catalogue/k1-gc-pause-unfenced.toml";
const HOSTILE: &str = r#"<script>alert(1)</script> & "q""#;

/// A fresh, empty directory for one test.
fn temp_dir(test: &str) -> TempDir {
    TempDir::new(&format!("report-{test}"))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `lockstep report ARGS --out OUT` and returns OUT's text, asserting exit 0.
fn report_to(out: &Path, args: &[&str]) -> String {
    let mut all = vec!["report"];
    all.extend(args);
    all.extend(["--out", s(out)]);
    let o = lockstep(&all);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("wrote "), "{}", stdout(&o));
    std::fs::read_to_string(out).expect("the report was written")
}

/// Parses the page as XML (the page is XHTML-compatible) and fails on malformed markup.
fn parse_html(html: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(html, options)
        .unwrap_or_else(|e| panic!("the HTML is not well-formed: {e}"))
}

fn has_class(n: &roxmltree::Node<'_, '_>, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|x| x == class))
}

fn elements<'a>(
    doc: &'a roxmltree::Document<'a>,
    tag: &str,
    class: &str,
) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && has_class(n, class))
        .collect()
}

#[test]
fn the_catalogue_report_has_a_row_per_scenario_and_a_section_per_failing_seed() {
    let dir = temp_dir("catalogue");
    let args = [CATALOGUE, CHAOS, "--seeds", "2"];
    let html = report_to(&dir.join("c.html"), &args);
    let json = report_to(&dir.join("c.json"), &args);
    let scenarios = scenario_files(CATALOGUE).len() + 1;
    let c = Comparison::from_json(&json).expect("the report's JSON");
    assert_eq!(c.rows.len(), scenarios);
    assert!(c.rows.iter().all(|r| r.seeds == 2), "--seeds 2");

    // Each row keeps its first runs judged invalid, at most 3.
    for (i, row) in c.rows.iter().enumerate() {
        let kept = c.failing.iter().filter(|f| f.row == i).count() as u64;
        assert_eq!(kept, row.verdicts.invalid.min(3), "{}", row.scenario);
    }
    assert!(c.failing.len() >= 20, "the catalogue's unsafe designs fail");
    assert!(c.failing.iter().all(|f| !f.explanations.is_empty()));
    let chaos = c.rows.last().expect("the chaos row");
    assert!(chaos.recovery.is_some_and(|r| r.runs == 2), "{chaos:?}");

    let doc = parse_html(&html);
    let rows = elements(&doc, "tr", "row");
    assert_eq!(rows.len(), scenarios);
    let sections = elements(&doc, "section", "failing-seed");
    assert_eq!(sections.len(), c.failing.len());
    for (section, f) in sections.iter().zip(&c.failing) {
        assert_eq!(section.attribute("id"), Some(f.anchor().as_str()));
        let timelines: Vec<_> = section
            .descendants()
            .filter(|n| n.has_tag_name("div") && has_class(n, "timeline"))
            .collect();
        assert_eq!(timelines.len(), 1, "one timeline per failing seed");
        // Drawn: an inline SVG with the client lanes' held bars.
        let svg = timelines[0]
            .descendants()
            .find(|n| n.has_tag_name("svg"))
            .expect("the timeline is drawn");
        assert!(svg.descendants().any(|n| has_class(&n, "held")));
        let text: String = section.descendants().filter_map(|n| n.text()).collect();
        assert!(text.contains(&f.reproduce), "{text}");
        let why: Vec<_> = section
            .descendants()
            .filter(|n| n.has_tag_name("li"))
            .collect();
        assert!(why.len() >= f.explanations.len());
    }
    // Each row links to its failing seeds' sections.
    for f in &c.failing {
        assert!(html.contains(&format!("href=\"#{}\"", f.anchor())));
    }
    // Self-contained: no script, nothing fetched. The only address is the SVG namespace,
    // which names and fetches nothing.
    let html_wo_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for banned in [
        "<script", "src=", "http://", "https://", "<link", "@import", "url(h", "url(/",
    ] {
        assert!(!html_wo_ns.contains(banned), "the page contains {banned}");
    }
    assert!(html.contains("<section id=\"sweep-maps\">"));
}

#[test]
fn the_markdown_table_has_a_row_per_scenario() {
    let dir = temp_dir("markdown");
    let md = report_to(&dir.join("c.md"), &[CATALOGUE, "--seeds", "1"]);
    let n = scenario_files(CATALOGUE).len();
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| scenario |"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    // The header, the separator, one line per scenario.
    assert_eq!(table.len(), n + 2, "{md}");
    let columns = table[0].matches(" | ").count();
    for line in &table {
        // Escaped pipes do not split a cell.
        assert_eq!(
            line.replace("\\|", "").matches('|').count(),
            columns + 2,
            "{line}"
        );
    }
    assert!(md.contains("## Failing seeds"));
    assert!(md.contains(
        "Reproduce: `lockstep run scenarios/catalogue/k1-gc-pause-unfenced.toml --seed 1`"
    ));
}

#[test]
fn user_text_appears_only_escaped() {
    let dir = temp_dir("hostile");
    // A hostile name, in a directory whose name needs escaping too.
    let sub = dir.join("a&b <c>");
    std::fs::create_dir_all(&sub).expect("dir");
    let k1 = std::fs::read_to_string(root().join(K1)).expect("K1");
    let text = k1
        .replace(
            "name = \"k1-gc-pause-unfenced\"",
            &format!("name = {}", toml_string(HOSTILE)),
        )
        .replace(
            "description = \"",
            &format!("description = \"{} ", HOSTILE.replace('"', "\\\"")),
        );
    assert!(text.contains("<script>"));
    let file = sub.join("hostile.toml");
    std::fs::write(&file, text).expect("write");
    let html = report_to(&dir.join("h.html"), &[s(&file), "--seeds", "1"]);
    let md = report_to(&dir.join("h.md"), &[s(&file), "--seeds", "1"]);

    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("a&b"), "the path is escaped");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;"));
    let doc = parse_html(&html);
    // The parser reads the name back as the text it is, in the row and in the section.
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(
        texts.iter().filter(|t| t.contains(HOSTILE)).count() >= 3,
        "{texts:?}"
    );
    assert!(doc.descendants().all(|n| !n.has_tag_name("script")));
    let title = elements(&doc, "td", "scenario")[0]
        .attribute("title")
        .expect("title");
    assert!(title.starts_with(HOSTILE), "{title}");

    // In Markdown the characters stay, each behind a backslash.
    assert!(!md.replace("\\<", "").contains("<script"), "{md}");
    assert!(
        md.contains(r#"\<script\>alert(1)\</script\> \& "q""#),
        "{md}"
    );
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn the_json_round_trips_and_every_field_is_documented() {
    let dir = temp_dir("json");
    // A scenario with leadership metrics, one with ticks, one with many keys, one with readers
    // and one that counts its herd, so their objects are documented too.
    let leader = leadership_scenario(&dir);
    let cron = "scenarios/cron/redis-try.toml";
    let keys = "scenarios/keys/redis-rows-1.toml";
    let read_write = "scenarios/read-write/rw-zk.toml";
    let herd = "scenarios/herd/pg-try.toml";
    let json = report_to(
        &dir.join("r.json"),
        &[
            CATALOGUE,
            CHAOS,
            cron,
            keys,
            read_write,
            herd,
            s(&leader),
            "--seeds",
            "1",
        ],
    );
    let c = Comparison::from_json(&json).expect("parses");
    assert!(c.rows.last().is_some_and(|r| r.leadership.is_some()));
    // serde_json parses a float to within an ulp, not always exactly: compare numbers closely
    // and everything else exactly.
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let again: serde_json::Value = serde_json::from_str(&c.json()).expect("JSON");
    assert_close(&value, &again, "");
    assert_eq!(Comparison::from_json(&c.json()).expect("parses"), c);

    let docs = std::fs::read_to_string(root().join("docs/report-format.md")).expect("docs");
    let section = docs
        .split("\n## `lockstep report")
        .nth(1)
        .expect("docs/report-format.md documents lockstep report");
    let mut keys = BTreeSet::new();
    collect_keys(&value, &mut keys);
    for key in &keys {
        assert!(
            section.contains(&format!("`{key}`"))
                || section.contains(&format!("{{{key},"))
                || section.contains(&format!(" {key},"))
                || section.contains(&format!(" {key}}}")),
            "docs/report-format.md does not document `{key}`"
        );
    }
    // Every field of the section's tables is in the JSON.
    let documented: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    assert!(documented.len() >= 30, "{documented:?}");
    for field in documented {
        assert!(
            keys.contains(field),
            "documented but not in the JSON: {field}"
        );
    }
}

/// A clean Redis scenario whose `[expect]` bounds leadership metrics, in `dir`.
fn leadership_scenario(dir: &Path) -> PathBuf {
    let text = format!(
        "{}\n[expect]\nterms = {{ min = 1 }}\ntwo_leaders_ms = 0\n",
        crate::support::CLEAN
    );
    let path = dir.join("leader.toml");
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn leadership_columns_appear_only_when_a_row_has_leadership() {
    let dir = temp_dir("leadership");
    let leader = leadership_scenario(&dir);
    let args = [K1, s(&leader), "--seeds", "3"];
    let json = report_to(&dir.join("l.json"), &args);
    let md = report_to(&dir.join("l.md"), &args);
    let html = report_to(&dir.join("l.html"), &args);
    let c = Comparison::from_json(&json).expect("parses");
    assert!(c.rows[0].leadership.is_none(), "K1 measures no leadership");
    let l = c.rows[1].leadership.expect("the bounded scenario's");
    // Three runs of a counter: every change pooled, none with two leaders.
    assert!(l.terms >= 3, "{l:?}");
    assert_eq!(
        (l.two_leaders_runs, l.duplicate_items, l.skipped_items),
        (0, 0, 0)
    );
    let f = l.failover_ms.expect("changes");
    assert!(0.0 < f.p50 && f.p50 <= f.p99 && f.p99 <= f.max, "{f:?}");

    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert!(
        table[0].ends_with(
            "| terms | two leaders | leader failover p50/p99/max | duplicates | skipped |"
        ),
        "{}",
        table[0]
    );
    assert!(
        table[2].ends_with("| - | - | - | - | - |"),
        "K1's row: {}",
        table[2]
    );
    assert!(
        table[3].ends_with(&format!(
            "| {} | 0 | {} / {} / {} | 0 | 0 |",
            l.terms,
            lockstep_reports::format::duration_ms(f.p50),
            lockstep_reports::format::duration_ms(f.p99),
            lockstep_reports::format::duration_ms(f.max)
        )),
        "{}",
        table[3]
    );
    let doc = parse_html(&html);
    let header: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("th")).collect();
    assert!(
        header
            .iter()
            .any(|n| n.text() == Some("leader failover p50/p99/max"))
    );

    // Without leadership, neither the columns nor the JSON object.
    let json = report_to(&dir.join("k1.json"), &[K1, "--seeds", "1"]);
    let md = report_to(&dir.join("k1.md"), &[K1, "--seeds", "1"]);
    assert!(!json.contains("leadership"));
    assert!(!md.contains("leader failover"));
}

/// `a` and `b` are the same JSON, numbers within a relative 1e-12.
fn assert_close(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value as V;
    match (a, b) {
        (V::Object(x), V::Object(y)) => {
            let kx: Vec<_> = x.keys().collect();
            let ky: Vec<_> = y.keys().collect();
            assert_eq!(kx, ky, "at {at}");
            for (k, v) in x {
                assert_close(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (V::Array(x), V::Array(y)) => {
            assert_eq!(x.len(), y.len(), "at {at}");
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                assert_close(v, w, &format!("{at}[{i}]"));
            }
        }
        (V::Number(x), V::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().expect("f64"), y.as_f64().expect("f64"));
            assert!(
                (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                "at {at}: {x} {y}"
            );
        }
        _ => assert_eq!(a, b, "at {at}"),
    }
}

fn collect_keys(v: &serde_json::Value, keys: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                keys.insert(k.clone());
                collect_keys(v, keys);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                collect_keys(v, keys);
            }
        }
        _ => {}
    }
}

#[test]
fn a_sweep_summary_is_a_row_and_its_failing_seeds_are_replayed() {
    let dir = temp_dir("sweep");
    let o = lockstep(&[
        "sweep", K1, "--seeds", "6", "--format", "json", "--jobs", "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary = dir.join("k1.json");
    std::fs::write(&summary, stdout(&o)).expect("write");
    let json = report_to(&dir.join("r.json"), &[s(&summary), K1, "--seeds", "6"]);
    let c = Comparison::from_json(&json).expect("parses");
    let (sweep, run) = (&c.rows[0], &c.rows[1]);
    assert_eq!(sweep.file, s(&summary));
    assert_eq!(sweep.system, run.system);
    assert_eq!((sweep.seeds, sweep.verdicts), (run.seeds, run.verdicts));
    assert_eq!(sweep.rates.invalid, run.rates.invalid);
    assert_eq!(sweep.acquire_latency_ms, run.acquire_latency_ms);
    // Every metric of the checker, read by key, is the same from the summary and the runs.
    assert!(!run.metrics.is_empty());
    assert_eq!(sweep.metrics, run.metrics);
    // The sweep's first failing seeds, run again, are the scenario's.
    let of = |row| -> Vec<(u64, String)> {
        c.failing
            .iter()
            .filter(|f| f.row == row)
            .map(|f| (f.seed, f.trace_hash.clone()))
            .collect()
    };
    assert_eq!(of(0).len(), 3);
    assert_eq!(of(0), of(1));

    // A JSON file that is not a sweep summary is refused.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{}").expect("write");
    let out = dir.join("never.html");
    let o = lockstep(&["report", s(&bad), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.json"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn a_bad_extension_or_an_unwritable_output_exits_2_and_writes_nothing() {
    let dir = temp_dir("refused");
    for (out, says) in [
        (dir.join("report.txt"), ".html, .md or .json"),
        (dir.join("report"), ".html, .md or .json"),
        (dir.join("missing/report.html"), "no directory"),
    ] {
        let o = lockstep(&["report", K1, "--seeds", "1", "--out", s(&out)]);
        assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
        assert!(!out.exists());
    }
    // A directory in the way: refused before any run, and nothing is left beside it.
    let taken = dir.join("taken.html");
    std::fs::create_dir(&taken).expect("dir");
    let o = lockstep(&["report", K1, "--seeds", "1", "--out", s(&taken)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, ["taken.html"], "no partial or temporary file");
    assert_eq!(
        ReportFormat::of(Path::new("a.md")),
        Ok(ReportFormat::Markdown)
    );
}

/// Fails unless `reports/sample/{file}` holds `now` (`what` it should be), and unless it
/// names no absolute path; with `UPDATE_EXPECT` set, writes it instead.
fn sample_is_current(file: &str, now: &str, what: &str) {
    let path = root().join("reports/sample").join(file);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, now).expect("write the sample");
        return;
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == now,
        "reports/sample/{file} is not {what}: run reports/sample/regenerate.sh (or \
         UPDATE_EXPECT=1 cargo test sample)"
    );
    assert!(!now.contains(s(&root())), "no absolute path in {file}");
}

/// The sample reports in `reports/sample/`, as `reports/sample/regenerate.sh` writes them: the
/// catalogue over 5 seeds, the failover comparison of leader election across families
/// (`scenarios/failover/`) over the seeds its files declare, and every family's design and
/// Chubby's under one pause and one partition (`scenarios/compare/`) over 50 seeds, and the
/// scheduled jobs of `scenarios/cron/`, the lock granularity of `scenarios/keys/` and the
/// read-write locks of `scenarios/read-write/` over the seeds their files declare.
/// `UPDATE_EXPECT=1 cargo test sample` rewrites the files.
#[test]
fn the_sample_reports_are_current_with_their_scenarios() {
    let script = std::fs::read_to_string(root().join("reports/sample/regenerate.sh"))
        .expect("reports/sample/regenerate.sh");
    for (dir, name, seeds) in [
        (CATALOGUE, "catalogue", Some(5)),
        ("scenarios/failover", "failover", None),
        ("scenarios/compare", "compare", Some(50)),
        ("scenarios/cron", "cron", None),
        ("scenarios/keys", "keys", None),
        ("scenarios/read-write", "read-write", None),
    ] {
        let inputs = report::load_inputs(&[PathBuf::from(dir)]).expect("the scenarios load");
        let built = report::build(
            &inputs,
            ReportOptions {
                seeds,
                ..ReportOptions::default()
            },
            |_| {},
        );
        let command = match seeds {
            Some(n) => format!("report {dir} --seeds {n} --out \"reports/sample/{name}."),
            None => format!("report {dir} --out \"reports/sample/{name}."),
        };
        assert!(script.contains(&command), "{command} not in {script}");
        let visuals = report::visuals(&inputs, &built, 2).expect("the pictures draw");
        assert_eq!(visuals.timelines.len(), built.comparison.failing.len());
        for (ext, format) in [
            ("md", ReportFormat::Markdown),
            ("json", ReportFormat::Json),
            ("html", ReportFormat::Html),
        ] {
            let now = built.render(format, &visuals);
            sample_is_current(
                &format!("{name}.{ext}"),
                &now,
                &format!("the report of {dir}"),
            );
        }
    }
}

#[test]
fn a_scenario_with_a_sweep_block_puts_its_map_in_the_page() {
    let path = crate::support::temp_scenario(
        "report-map",
        r#"
[scenario]
name = "map <&>"
duration_ms = 30_000

[model]
kind = "redis"
ttl_ms = 2_000

[[fault]]
on = { node = "client-1", mark = "validity-checked" }
pause = { node = "client-1", for_ms = 1_000 }

[expect]
verdict = "any"

[sweep]
x = { key = "fault[0].pause.for_ms", values = [1_000, 5_000] }
seeds = 2
"#,
    );
    let dir = temp_dir("map-page");
    let out = dir.join("map.html");
    let o = lockstep(&[
        "report",
        path.to_str().expect("utf-8"),
        "--seeds",
        "1",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).expect("the page");
    let doc = parse_html(&html);
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("sweep-maps"))
        .expect("a sweep-maps section");
    let svgs = section
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .count();
    assert_eq!(svgs, 1, "one map");
    let text: String = section.descendants().filter_map(|n| n.text()).collect();
    // The name only escaped in the markup, read back whole; a 1 s pause never outlives a 2 s
    // lease and a 5 s one always does.
    assert!(text.contains("map <&>"), "{text}");
    assert!(!html.contains("map <&>"));
    assert!(text.contains("0%") && text.contains("100%"), "{text}");
}

#[test]
fn report_runs_on_jobs_threads_with_the_same_output_and_takes_filter_and_list() {
    let dir = temp_dir("jobs");
    let json = |jobs: &str| {
        let out = dir.join(format!("r{jobs}.json"));
        report_to(
            &out,
            &[CATALOGUE, "--seeds", "3", "--filter", "k1", "--jobs", jobs],
        )
    };
    let one = json("1");
    assert_eq!(one, json("2"), "--jobs changes nothing in the report");
    let v: serde_json::Value = serde_json::from_str(&one).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|r| r["scenario"].as_str().is_some_and(|n| n.contains("k1"))),
        "{v}"
    );
    // --list names what would run and needs no --out.
    let o = lockstep(&[
        "report",
        CATALOGUE,
        "--list",
        "--filter",
        "k1-gc-*-unfenced",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains(K1), "{}", stdout(&o));
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));
    assert!(
        lockstep(&["report", CATALOGUE]).status.code() == Some(2),
        "--out is needed to run"
    );
}

#[test]
fn off_a_terminal_the_table_breaks_no_word() {
    // Fifteen columns fitted into 100 were cut into fragments (`scen|ario`) when stdout was
    // a file or a pipe. Without COLUMNS, off a terminal, nothing wraps.
    let dir = temp_dir("no-wrap");
    let out = dir.join("r.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["report", K1, CHAOS, "--seeds", "1", "--out", s(&out)])
        .current_dir(root())
        .env_remove("COLUMNS")
        .output()
        .expect("the lockstep binary runs");
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('│')).collect();
    // The header, then a row per scenario, each on one line: no cell wrapped.
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("│ scenario "), "{text}");
    assert!(lines[1].starts_with("│ k1-gc-pause-unfenced "), "{text}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn every_new_flag_of_report_is_in_the_readme() {
    crate::tidy::flags_are_in_the_readme("report", &["--jobs", "--filter", "--list"]);
}

/// `grants_per_s` is every grant of every run over their summed simulated time, the same
/// figures `lockstep run` prints per seed.
#[test]
fn throughput_is_grants_over_simulated_time_summed_over_the_runs() {
    let dir = temp_dir("throughput");
    let json = report_to(&dir.join("r.json"), &[K1, "--seeds", "3"]);
    let c = Comparison::from_json(&json).expect("parses");
    let got = c.rows[0]
        .grants_per_s()
        .expect("a scenario row has a throughput");
    let (mut grants, mut ms) = (0u64, 0f64);
    for seed in 1..=3 {
        let o = lockstep(&["run", K1, "--seed", &seed.to_string(), "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
        grants += v["grants"].as_u64().expect("grants");
        ms += v["simulated_ms"].as_f64().expect("simulated_ms");
    }
    assert!(grants > 0);
    let want = grants as f64 / (ms / 1000.0);
    assert!((got - want).abs() <= want * 1e-6, "{got} vs {want}");
    let md = report_to(&dir.join("r.md"), &[K1, "--seeds", "3"]);
    assert!(md.contains("| grants/s |"), "{md}");
}

/// The sample review in `reports/sample/`, as `reports/sample/regenerate.sh` writes it: the
/// designs of `reviews/designs.toml` over 40 seeds per cell. `UPDATE_EXPECT=1 cargo test
/// sample` rewrites the files.
#[test]
fn the_sample_review_is_current() {
    use lockstep::review;
    let script = std::fs::read_to_string(root().join("reports/sample/regenerate.sh"))
        .expect("reports/sample/regenerate.sh");
    let command = "review reviews/designs.toml --seeds 40 --out \"reports/sample/review.";
    assert!(script.contains(command), "{command} not in {script}");
    let plan = review::load(Path::new("reviews/designs.toml"), Some(40)).expect("the review loads");
    let built = review::run(&plan, 2, |_, _| {});
    // The page leads with the answer, then the matrix and the chart.
    let timelines = review::timelines(&plan, &built);
    assert_eq!(timelines.len(), built.examples.len());
    let html = built.html(&timelines);
    let (rec, matrix, chart) = (
        html.find("id=\"recommendation\"")
            .expect("a recommendation"),
        html.find("id=\"matrix\"").expect("a matrix"),
        html.find("<svg class=\"chart\"").expect("a chart"),
    );
    assert!(rec < matrix && matrix < chart);
    assert_eq!(
        html.matches("<td class=\"rate\"").count(),
        built.cells.len()
    );
    parse_html(&html);
    for (ext, now) in [
        ("md", built.markdown()),
        ("json", built.json()),
        ("html", html),
    ] {
        sample_is_current(
            &format!("review.{ext}"),
            &now,
            "the review of reviews/designs.toml",
        );
    }
}

/// Every metric of the checker is one figure however its runs are gathered: a sweep summary
/// and a report of the same runs agree on each, for every shipped scenario (`scenarios/`, one
/// seed each: the runs are the same, so more seeds would only add the same sums).
#[test]
fn sweep_and_report_agree_on_every_metric_over_the_scenarios() {
    let files = scenario_files("scenarios");
    assert!(files.len() > 150, "{} files", files.len());
    let mut inputs = Vec::new();
    for path in &files {
        let target = lockstep::sweep::load(path, None).expect("a catalogue scenario loads");
        let seed = target.scenario.seed;
        let config = lockstep::sweep::SweepConfig {
            from: seed,
            count: 1,
            shard: None,
            jobs: 1,
            check_determinism: false,
        };
        let summary = lockstep::sweep::sweep(&target, &config, |_| {});
        inputs.push(report::Input::Scenario(
            lockstep::scenario::load(path).expect("loads"),
        ));
        inputs.push(report::Input::Sweep(report::SweepInput {
            path: path.with_extension("json"),
            summary,
            scenario: Some(target.scenario),
            replayable: false,
        }));
    }
    let options = ReportOptions {
        seeds: Some(1),
        jobs: 2,
    };
    let built = report::build(&inputs, options, |_| {});
    let mut compared = BTreeSet::new();
    for pair in built.comparison.rows.chunks(2) {
        let (run, sweep) = (&pair[0], &pair[1]);
        assert_eq!(run.scenario, sweep.scenario);
        assert!(!run.metrics.is_empty(), "{}: no metric", run.scenario);
        assert_eq!(run.metrics, sweep.metrics, "{}", run.scenario);
        compared.extend(run.metrics.iter().map(|m| m.key.clone()));
    }
    // The scenarios measure every section: queues, schedules, readers, re-entry, leaders,
    // fault windows.
    let sections = [
        "jobs_lost",
        "ticks_missed",
        "reader_grants",
        "nested",
        "terms",
        "fault_unavailable_ns",
    ];
    for key in sections {
        assert!(
            compared.contains(key),
            "no catalogue scenario measured {key}"
        );
    }
}
