//! The comparison as one self-contained HTML page: inline CSS, no script, nothing fetched, so
//! it opens offline and in a mail attachment. The markup is also well-formed XML (every
//! element closed, only XML's five references), which lets tests parse it with an XML parser.
//!
//! Every piece of user-provided text goes through [`escape::html`]. The SVG of timelines and
//! sweep maps ([`Visuals`]) is placed as it is: its producers escape their own text.

use std::fmt::Write as _;

use lockstep_check::Validity;

use crate::compare::{Comparison, FailingSeed, KEPT_FAULTS, Visuals};
use crate::escape::html as esc;
use crate::format::{plural, true_time};

const STYLE: &str = "
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em; color: #1d2329; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
h3 { margin-bottom: 0.3em; }
code, pre, .file { font-family: ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace; font-size: 0.92em; }
.summary { color: #57606a; }
table.comparison { border-collapse: collapse; font-size: 0.9em; }
table.comparison th, table.comparison td { border: 1px solid #d0d7de; padding: 0.3em 0.5em; vertical-align: top; text-align: left; }
table.comparison th { background: #f6f8fa; position: sticky; top: 0; }
table.comparison td.num { text-align: right; }
table.comparison td.short { white-space: nowrap; }
table.comparison td.system { min-width: 12em; }
table.comparison td.scenario { min-width: 14em; }
tr.fail td:first-child { border-left: 4px solid #cf222e; }
tr.ok td:first-child { border-left: 4px solid #2da44e; }
.file { color: #57606a; font-size: 0.8em; }
.seeds a { margin-right: 0.4em; }
.badge { display: inline-block; padding: 0 0.5em; border-radius: 1em; font-size: 0.8em; font-weight: 600; }
.badge.invalid { background: #ffebe9; color: #cf222e; }
.badge.valid { background: #dafbe1; color: #116329; }
.badge.unknown { background: #fff8c5; color: #7d4e00; }
section.failing-seed { border: 1px solid #d0d7de; border-radius: 6px; padding: 0.5em 1em 1em; margin: 1em 0; }
.meta { color: #57606a; }
.timeline { overflow-x: auto; margin-top: 0.5em; }
.placeholder { color: #57606a; font-style: italic; }
figure.sweep-map { margin: 1em 0; }
dl.scenarios dt { font-weight: 600; margin-top: 0.6em; }
";

impl Comparison {
    /// The report as a self-contained HTML page, with the timelines and sweep maps of
    /// `visuals` placed in it.
    pub fn html(&self, visuals: &Visuals) -> String {
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
        out.push_str("<title>lockstep report</title>\n");
        let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
        out.push_str("<h1>lockstep report</h1>\n");
        let _ = writeln!(
            out,
            "<p class=\"summary\">{}.</p>",
            esc(&self.summary_line())
        );
        self.html_table(&mut out);
        self.html_failing(&mut out, visuals);
        html_sweep_maps(&mut out, visuals);
        self.html_scenarios(&mut out);
        out.push_str("</body>\n</html>\n");
        out
    }

    fn html_table(&self, out: &mut String) {
        out.push_str("<section id=\"comparison\">\n<h2>Comparison</h2>\n");
        out.push_str("<table class=\"comparison\">\n<thead>\n<tr>");
        for (name, meaning) in self.columns() {
            let _ = write!(out, "<th title=\"{}\">{}</th>", esc(meaning), esc(name));
        }
        out.push_str("</tr>\n</thead>\n<tbody>\n");
        for (i, row) in self.rows.iter().enumerate() {
            let ok = row.met == row.seeds && row.seeds > 0;
            let _ = write!(
                out,
                "<tr class=\"row {}\" id=\"row-{i}\">",
                if ok { "ok" } else { "fail" }
            );
            for (c, cell) in self.cells(row).into_iter().enumerate() {
                if c == 0 {
                    let _ = write!(
                        out,
                        "<td class=\"scenario\" title=\"{}\">{}<div class=\"file\">{}</div>",
                        esc(&row.description),
                        esc(&cell),
                        esc(&row.file)
                    );
                    let seeds: Vec<&FailingSeed> = self.failing_of(i).collect();
                    if !seeds.is_empty() {
                        out.push_str("<div class=\"seeds\">failing: ");
                        for f in seeds {
                            let _ = write!(
                                out,
                                "<a href=\"#{}\">seed {}</a>",
                                esc(&f.anchor()),
                                f.seed
                            );
                        }
                        out.push_str("</div>");
                    }
                    out.push_str("</td>");
                } else if c == 1 {
                    let _ = write!(out, "<td class=\"system\">{}</td>", esc(&cell));
                } else if c >= 4 {
                    // Short figures stay on one line; the sentences of the last columns wrap.
                    let class = if c == 7 || c >= 12 {
                        "num"
                    } else {
                        "num short"
                    };
                    let _ = write!(out, "<td class=\"{class}\">{}</td>", esc(&cell));
                } else {
                    let _ = write!(out, "<td>{}</td>", esc(&cell));
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n</section>\n");
    }

    fn html_failing(&self, out: &mut String, visuals: &Visuals) {
        out.push_str("<section id=\"failing-seeds\">\n<h2>Failing seeds</h2>\n");
        if self.failing.is_empty() {
            out.push_str("<p class=\"placeholder\">No run was judged invalid.</p>\n");
        }
        for (i, f) in self.failing.iter().enumerate() {
            let row = &self.rows[f.row];
            let _ = writeln!(
                out,
                "<section class=\"failing-seed\" id=\"{}\">",
                esc(&f.anchor())
            );
            let _ = writeln!(out, "<h3>{} · seed {}</h3>", esc(&f.scenario), f.seed);
            let _ = writeln!(
                out,
                "<p class=\"meta\">{} {} · trace <code>{}</code> · {} · storage {} · {}</p>",
                badge(f.verdict),
                esc(&row.property.to_string()),
                esc(&f.trace_hash),
                esc(&row.system),
                esc(&row.storage),
                if f.expected {
                    "as the scenario expects"
                } else {
                    "<strong>the scenario does not expect it</strong>"
                }
            );
            if !f.explanations.is_empty() {
                out.push_str("<ul class=\"why\">\n");
                for e in &f.explanations {
                    let _ = writeln!(out, "<li>{}</li>", esc(e));
                }
                out.push_str("</ul>\n");
            }
            if !f.faults.is_empty() {
                let _ = writeln!(
                    out,
                    "<details class=\"faults\"><summary>{} fault{} applied</summary>\n<ul>",
                    f.faults.len(),
                    plural(f.faults.len())
                );
                for x in f.faults.iter().take(KEPT_FAULTS) {
                    let _ = writeln!(
                        out,
                        "<li><code>{}</code> {}</li>",
                        true_time(x.time_ns),
                        esc(&x.detail)
                    );
                }
                if f.faults.len() > KEPT_FAULTS {
                    let _ = writeln!(
                        out,
                        "<li>and {} more (the JSON lists them all)</li>",
                        f.faults.len() - KEPT_FAULTS
                    );
                }
                out.push_str("</ul>\n</details>\n");
            }
            let _ = writeln!(
                out,
                "<p class=\"reproduce\">Reproduce: <code>{}</code></p>",
                esc(&f.reproduce)
            );
            out.push_str("<div class=\"timeline\">");
            match visuals.timelines.get(i).and_then(Option::as_deref) {
                Some(svg) => out.push_str(svg),
                None => out.push_str("<p class=\"placeholder\">timeline not rendered</p>"),
            }
            out.push_str("</div>\n</section>\n");
        }
        out.push_str("</section>\n");
    }

    fn html_scenarios(&self, out: &mut String) {
        out.push_str("<section id=\"scenarios\">\n<h2>Scenarios</h2>\n<dl class=\"scenarios\">\n");
        for row in &self.rows {
            let _ = writeln!(
                out,
                "<dt>{}</dt>\n<dd><span class=\"file\">{}</span><br/>{}</dd>",
                esc(&row.scenario),
                esc(&row.file),
                esc(&row.description)
            );
        }
        out.push_str("</dl>\n</section>\n");
    }
}

fn html_sweep_maps(out: &mut String, visuals: &Visuals) {
    out.push_str("<section id=\"sweep-maps\">\n<h2>Sweep maps</h2>\n");
    if visuals.sweep_maps.is_empty() {
        out.push_str("<p class=\"placeholder\">No sweep maps.</p>\n");
    }
    for (title, svg) in &visuals.sweep_maps {
        let _ = writeln!(
            out,
            "<figure class=\"sweep-map\"><figcaption>{}</figcaption>{svg}</figure>",
            esc(title)
        );
    }
    out.push_str("</section>\n");
}

fn badge(v: Validity) -> String {
    format!(
        "<span class=\"badge {v}\">{}</span>",
        v.to_string().to_uppercase()
    )
}
