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
    /// One line per problem: `file:line: key.path: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}", self.file.display())?;
            if let Some(line) = p.line {
                write!(f, ":{line}")?;
            }
            if !p.path.is_empty() {
                write!(f, ": {}", p.path)?;
            }
            write!(f, ": {}", p.message)?;
        }
        Ok(())
    }
}
