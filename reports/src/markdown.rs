//! The comparison as Markdown (GitHub-flavoured) for a pull-request comment: a heading, the
//! comparison table (one row per [`Row`]), the column legend, and per row with failing seeds
//! the first one explained (its first [`KEPT_EXPLANATIONS`] sentences, its first faults, its
//! reproduce command) and the others' reproduce commands. The HTML page and the JSON have
//! every sentence; the Markdown stays short enough for a comment (GitHub takes 65,536
//! characters). User text is escaped with [`escape::markdown`].

use std::fmt::Write as _;

use crate::compare::{Comparison, FailingSeed, KEPT_FAULTS, Row};
use crate::escape;
use crate::format::true_time;

impl Comparison {
    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# lockstep report\n");
        let _ = writeln!(out, "{}.\n", self.summary_line());
        let columns = self.columns();
        let header: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for (i, row) in self.rows.iter().enumerate() {
            let mut cells: Vec<String> = self
                .cells(row)
                .iter()
                .map(|c| escape::markdown(c))
                .collect();
            if self.failing_of(i).next().is_some() {
                cells[0] = format!("{} (failing seeds below)", cells[0]);
            }
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "<details><summary>Columns</summary>\n");
        for (name, meaning) in columns {
            let _ = writeln!(out, "- **{name}**: {}", escape::markdown(meaning));
        }
        let _ = writeln!(out, "\n</details>");
        if !self.failing.is_empty() {
            let _ = writeln!(out, "\n## Failing seeds\n");
            for (i, row) in self.rows.iter().enumerate() {
                let seeds: Vec<&FailingSeed> = self.failing_of(i).collect();
                if let Some((first, others)) = seeds.split_first() {
                    let _ = writeln!(out, "### {}\n", escape::markdown(&row.scenario));
                    failing_seed(&mut out, row, first);
                    for f in others {
                        let _ = writeln!(
                            out,
                            "Also seed {}: {}\n",
                            f.seed,
                            escape::markdown_code(&f.reproduce)
                        );
                    }
                }
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    }
}

/// How many sentences of a failing seed's explanation the Markdown shows.
pub const KEPT_EXPLANATIONS: usize = 5;

fn failing_seed(out: &mut String, row: &Row, f: &FailingSeed) {
    let _ = writeln!(
        out,
        "Seed {}: {} {} (trace {}), {}.\n",
        f.seed,
        f.verdict.to_string().to_uppercase(),
        row.property,
        f.trace_hash,
        if f.expected {
            "as the scenario expects"
        } else {
            "which the scenario does not expect"
        }
    );
    for e in f.explanations.iter().take(KEPT_EXPLANATIONS) {
        let _ = writeln!(out, "- {}", escape::markdown(e));
    }
    if f.explanations.len() > KEPT_EXPLANATIONS {
        let _ = writeln!(
            out,
            "- and {} more (the HTML and JSON reports have them all)",
            f.explanations.len() - KEPT_EXPLANATIONS
        );
    }
    if !f.faults.is_empty() {
        let mut faults: Vec<String> = f
            .faults
            .iter()
            .take(KEPT_FAULTS)
            .map(|x| format!("{} {}", true_time(x.time_ns), escape::markdown(&x.detail)))
            .collect();
        if f.faults.len() > KEPT_FAULTS {
            faults.push(format!("and {} more", f.faults.len() - KEPT_FAULTS));
        }
        let _ = writeln!(out, "- faults: {}", faults.join("; "));
    }
    let _ = writeln!(
        out,
        "\nReproduce: {}\n",
        escape::markdown_code(&f.reproduce)
    );
}
