//! The comparison as Markdown (GitHub-flavoured) for a pull-request comment: a heading, the
//! comparison table (one row per [`Row`](crate::Row)), the column legend, and the failing
//! seeds kept, each with its explanations and reproduce command. User text is escaped with
//! [`escape::markdown`].

use std::fmt::Write as _;

use crate::compare::{COLUMNS, Comparison, KEPT_FAULTS, cells, fmt_time_ns};
use crate::escape;

impl Comparison {
    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# lockstep report\n");
        let _ = writeln!(out, "{}.\n", self.summary_line());
        let header: Vec<&str> = COLUMNS.iter().map(|(name, _)| *name).collect();
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for (i, row) in self.rows.iter().enumerate() {
            let mut cells: Vec<String> = cells(row).iter().map(|c| escape::markdown(c)).collect();
            if self.failing_of(i).next().is_some() {
                cells[0] = format!("{} (failing seeds below)", cells[0]);
            }
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "<details><summary>Columns</summary>\n");
        for (name, meaning) in COLUMNS {
            let _ = writeln!(out, "- **{name}**: {}", escape::markdown(meaning));
        }
        let _ = writeln!(out, "\n</details>");
        if !self.failing.is_empty() {
            let _ = writeln!(out, "\n## Failing seeds\n");
            for f in &self.failing {
                let _ = writeln!(
                    out,
                    "### {} seed {}\n",
                    escape::markdown(&f.scenario),
                    f.seed
                );
                let _ = writeln!(
                    out,
                    "{} {} (trace {}); {}.\n",
                    f.verdict.to_string().to_uppercase(),
                    escape::markdown(&self.rows[f.row].property.to_string()),
                    f.trace_hash,
                    if f.expected {
                        "as the scenario expects"
                    } else {
                        "the scenario does not expect it"
                    }
                );
                for e in &f.explanations {
                    let _ = writeln!(out, "- {}", escape::markdown(e));
                }
                if !f.faults.is_empty() {
                    let mut faults: Vec<String> = f
                        .faults
                        .iter()
                        .take(KEPT_FAULTS)
                        .map(|x| {
                            format!("{} {}", fmt_time_ns(x.time_ns), escape::markdown(&x.detail))
                        })
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
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    }
}
