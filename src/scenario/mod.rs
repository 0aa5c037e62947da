//! Scenario files: the TOML schema ([`schema`]), the checks that turn a file into a runnable
//! [`Scenario`] ([`resolve`]), and the errors that name the file, the key path and the problem
//! ([`error`]). docs/scenarios.md documents every key.

pub mod error;
mod resolve;
mod schema;

use std::path::{Path, PathBuf};

use lockstep_check::Options;
use lockstep_models::system::SystemSpec;
use lockstep_sim::{Dur, LinkConfig, NodeConfig, NodeId, ScheduledFault};

pub use error::{Problem, ScenarioError};

use crate::expect::Expect;

/// A checked scenario, ready to run with any seed.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// How long the run lasts, in true time.
    pub duration: Dur,
    /// The seed used when none is given.
    pub seed: u64,
    /// The most events a run may handle; running out makes the verdict `unknown`.
    pub max_events: u64,
    /// The lock system.
    pub system: SystemSpec,
    /// Per node: name and clock setup, in node-id order.
    pub clocks: Vec<NodeConfig>,
    /// The default link.
    pub link: LinkConfig,
    /// Per directed link overrides.
    pub links: Vec<(NodeId, NodeId, LinkConfig)>,
    /// The fault schedule.
    pub faults: Vec<ScheduledFault>,
    /// What the run is expected to show.
    pub expect: Expect,
    /// How the checker judges it.
    pub check_options: Options,
}

impl Scenario {
    /// Node names in node-id order.
    pub fn node_names(&self) -> Vec<String> {
        self.clocks.iter().map(|c| c.name.clone()).collect()
    }
}

/// A scenario file read from disk, remembering where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The file.
    pub path: PathBuf,
    /// The scenario.
    pub scenario: Scenario,
}

/// Reads and checks a scenario file.
///
/// # Errors
/// A [`ScenarioError`] listing every problem found, each with its key path.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ScenarioError::one(path, "", None, format!("cannot read the file: {e}")))?;
    let scenario = parse(&text, path)?;
    Ok(Loaded {
        path: path.to_path_buf(),
        scenario,
    })
}

/// Parses and checks scenario text; `path` names it in errors.
///
/// # Errors
/// A [`ScenarioError`]: the first syntax or type error, or every problem of meaning.
pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let de = toml::Deserializer::parse(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        ScenarioError::one(path, "", line, e.message().to_string())
    })?;
    let file: schema::File = serde_path_to_error::deserialize(de).map_err(|e| {
        let line = e.inner().span().map(|s| line_of(text, s.start));
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        ScenarioError::one(path, &key, line, e.inner().message().to_string())
    })?;
    resolve::resolve(&file).map_err(|problems| ScenarioError {
        file: path.to_path_buf(),
        problems: problems.0,
    })
}

/// The 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}
