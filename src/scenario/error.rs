//! Errors of a scenario file: every problem with its key path, one line each.

use std::fmt;
use std::path::{Path, PathBuf};

use lockstep_models::keys::Problems;

/// One problem in a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The key path, such as `fault[2].pause.node`; empty for the file as a whole.
    pub path: String,
    /// The line, when the parser knows it.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// Everything wrong with one scenario file (or why it could not be read).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file.
    pub file: PathBuf,
    /// The problems found, in file order where known; never empty.
    pub problems: Vec<Problem>,
}

impl ScenarioError {
    /// The problems on one line, each as `key.path: message`, without the file or lines: for
    /// text made from a file (a sweep map's cell, a review's), whose lines are not the file's.
    pub(crate) fn problems_in_one_line(&self) -> String {
        let problems: Vec<String> = self
            .problems
            .iter()
            .map(|p| {
                if p.path.is_empty() {
                    p.message.clone()
                } else {
                    format!("{}: {}", p.path, p.message)
                }
            })
            .collect();
        problems.join("; ")
    }

    pub(crate) fn one(
        file: &Path,
        path: &str,
        line: Option<usize>,
        message: String,
    ) -> ScenarioError {
        let problem = Problem {
            path: path.to_string(),
            line,
            message,
        };
        ScenarioError {
            file: file.to_path_buf(),
            problems: vec![problem],
        }
    }

    /// The problems a file's checks found, in the order found; none knows its line.
    pub(crate) fn from_problems(file: &Path, problems: Problems) -> ScenarioError {
        let problems = problems
            .into_iter()
            .map(|(path, message)| Problem {
                path,
                line: None,
                message,
            })
            .collect();
        ScenarioError {
            file: file.to_path_buf(),
            problems,
        }
    }
}

impl fmt::Display for ScenarioError {
    /// One line per problem: `file:line: key.path: message`, in the file's words (no Rust type
    /// names), every value cut short and every control character escaped, so that one problem
    /// is one line a terminal shows as it is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = escaped(&self.file.display().to_string());
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{file}")?;
            if let Some(line) = p.line {
                write!(f, ":{line}")?;
            }
            if !p.path.is_empty() {
                write!(f, ": {}", shown(&p.path))?;
            }
            write!(f, ": {}", shown(&plain(&p.message)))?;
        }
        Ok(())
    }
}

/// The key path of a serde error in the file's terms: empty for the file as a whole, and
/// without the TOML reader's own key for a date (`$__toml_private_datetime`), which names a
/// date given where a table is expected.
pub(crate) fn key_path(path: &serde_path_to_error::Path) -> String {
    let key = path.to_string();
    let key = key
        .replace(".$__toml_private_datetime", "")
        .replace("$__toml_private_datetime", "");
    if key == "." { String::new() } else { key }
}

/// A key as a TOML key path writes it: bare when it can be (`client-2`), else quoted
/// (`"model.nonsense"`), so that a key with a dot in it reads as one key.
pub(crate) fn toml_key(key: &str) -> String {
    toml_edit::Key::new(key).display_repr().into_owned()
}

/// The longest stretch of a value shown in an error: a longer one is cut, with its length.
const SHOWN: usize = 40;

/// `text` with every control character escaped (`\n`, `\u{1b}`), so it stays on one line and
/// cannot drive a terminal.
pub(crate) fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let e: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            e
        })
        .collect()
}

/// `text` escaped, with every stretch of more than [`SHOWN`] characters without a space (a
/// long name, a 300-digit number) cut to its start and its length.
pub(crate) fn shown(text: &str) -> String {
    let text = escaped(text);
    let mut out = String::with_capacity(text.len().min(512));
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let n = word.chars().count();
        if n > SHOWN {
            let start: String = word.chars().take(SHOWN / 2).collect();
            let quote = if word.ends_with('`') { "`" } else { "" };
            out.push_str(&format!("{start}…{quote} ({n} characters)"));
        } else {
            out.push_str(word);
        }
    }
    out
}

/// A message of the TOML reader or of serde in the file's terms: what a key takes, not the
/// Rust types that read it.
pub(crate) fn plain(message: &str) -> String {
    if message.contains("$__toml_private_datetime") {
        return "a date or time is not a value this key takes".to_string();
    }
    if message.starts_with("invalid type: integer")
        && message.ends_with("expected any valid TOML value")
    {
        return "the number is too large".to_string();
    }
    if message.contains("unit variant, expected string only") {
        return "expected a name in quotes".to_string();
    }
    let mut m = message
        .replace("wanted string or table", "expected a name in quotes")
        .replace("unknown variant", "unknown value")
        .replace(" as i128", "")
        .replace("integer number overflowed", "the number is too large")
        // A whole number past the largest TOML integer (`9223372036854775808`).
        .replace("u64 value was too large", "the number is too large")
        .replace("expected u64", "expected a whole number ≥ 0")
        .replace("expected u32", "expected a whole number ≥ 0")
        .replace("expected i64", "expected a whole number")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false");
    // `expected struct Name`, `expected struct Name with 3 elements`, `expected struct variant
    // Tagged::Name`: a table.
    while let Some(at) = m.find("expected struct ") {
        let rest = &m[at + "expected struct ".len()..];
        let rest = rest.strip_prefix("variant ").unwrap_or(rest);
        let name_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let mut tail = &rest[name_end..];
        if let Some(t) = tail.strip_prefix(" with ") {
            if let Some(e) = t.find(" element") {
                let after = &t[e + " element".len()..];
                tail = after.strip_prefix('s').unwrap_or(after);
            }
        }
        m = format!("{}expected a table{tail}", &m[..at]);
    }
    if m.ends_with("expected enum") {
        m = m.replace("expected enum", "expected a name in quotes or a table");
    }
    m
}
