//! Scenario files: the TOML schema ([`schema`]), the checks that turn a file into a runnable
//! [`Scenario`] ([`resolve`]), and the errors that name the file, the key path and the problem
//! ([`error`]). docs/scenarios.md documents every key.

pub mod error;
pub mod family;
mod resolve;
mod schema;
mod variant;
pub mod write;

use std::path::{Path, PathBuf};

use std::sync::Arc;

use lockstep_check::Options;
use lockstep_models::System;
use lockstep_sim::{Dur, LinkConfig, NodeConfig, NodeId, ScheduledFault};

pub use error::{Problem, ScenarioError};
pub(crate) use resolve::{Others, Pointless, pointless};
pub use variant::with_chaos;

use crate::chaos::Chaos;
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
    /// The seeds `lockstep check` runs (`[scenario] seeds`; just `seed` when the file gives none).
    pub seeds: Seeds,
    /// The most events a run may handle; running out makes the verdict `unknown`.
    pub max_events: u64,
    /// The most bytes a run may hold, as the world estimates them
    /// (`lockstep_sim::World::memory_estimate`); over it, the verdict is `unknown`.
    pub memory_budget: u64,
    /// The most wall-clock time a run may take; over it, the verdict is `unknown` and the
    /// run is not reproducible by its seed.
    pub wall_budget: Dur,
    /// The lock system, of the family its file names.
    pub system: Arc<dyn System>,
    /// Per node: name and clock setup, in node-id order.
    pub clocks: Vec<NodeConfig>,
    /// The default link.
    pub link: LinkConfig,
    /// Per directed link overrides.
    pub links: Vec<(NodeId, NodeId, LinkConfig)>,
    /// The hosts' TCP (`[network] tcp_retries2`, `tcp_user_timeout_ms`).
    pub tcp: lockstep_sim::TcpConfig,
    /// The fault schedule: the file's `[[fault]]` entries, one fault per node of an entry
    /// that names several.
    pub faults: Vec<ScheduledFault>,
    /// For each of `faults`: the `[[fault]]` entry it came from, from 0.
    pub origin: Vec<usize>,
    /// For each of `faults`: true when it is triggered by a mark and may not fire
    /// (`on.optional`); a run where any other trigger does not fire falls short of its
    /// expectation.
    pub optional: Vec<bool>,
    /// The chaos profile, which adds faults drawn from each run's seed.
    pub chaos: Option<Chaos>,
    /// What the run is expected to show.
    pub expect: Expect,
    /// How the checker judges it.
    pub check_options: Options,
    /// The axes of its sweep map (`[sweep]`), if it has one.
    pub sweep: Option<crate::sweepmap::Sweep>,
}

impl Scenario {
    /// Node names in node-id order.
    pub fn node_names(&self) -> Vec<String> {
        self.clocks.iter().map(|c| c.name.clone()).collect()
    }

    /// The whole fault schedule of the run with `seed`: the file's `[[fault]]` list followed
    /// by what its chaos profile draws for that seed, and the run's duration.
    pub fn schedule(&self, seed: u64) -> Schedule {
        // The file's faults first, then the profile's, put in front of the drawn ones rather
        // than the drawn ones copied after them: a profile's can be as large as the memory
        // budget allows.
        let mut faults = self
            .chaos
            .as_ref()
            .map_or_else(Vec::new, |c| c.generate(seed));
        faults.splice(0..0, self.faults.iter().cloned());
        Schedule {
            faults,
            duration: self.duration,
        }
    }
}

/// What one run does to the system, written out: every fault and when, and how long the run
/// lasts. [`Scenario::schedule`] gives it for a seed; `hunt` shrinks it and writes it back as
/// a scenario file with no chaos profile, which replays the same run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Schedule {
    /// The faults, in the order the world is given them (faults due at the same instant apply
    /// in this order).
    pub faults: Vec<ScheduledFault>,
    /// How long the run lasts, in true time.
    pub duration: Dur,
}

/// The most seeds one scenario may ask for, in its file or with `lockstep check --seeds`.
pub const MAX_SEEDS: u64 = 10_000_000;

/// The seeds a scenario is checked with. A range is not expanded into a list, so a million
/// seeds cost no memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seeds {
    /// These seeds, in this order.
    List(Vec<u64>),
    /// `count` consecutive seeds from `from`, never past `u64::MAX` ([`Seeds::range`]).
    Range {
        /// The first seed.
        from: u64,
        /// How many.
        count: u64,
    },
}

impl Seeds {
    /// Just `seed`.
    pub fn one(seed: u64) -> Seeds {
        Seeds::Range {
            from: seed,
            count: 1,
        }
    }

    /// `count` consecutive seeds from `from`, when there is at least one and the last fits in
    /// a `u64` (a range never wraps to 0).
    ///
    /// # Errors
    /// The problem in words, with the most seeds a range from `from` can hold.
    pub fn range(from: u64, count: u64) -> Result<Seeds, String> {
        if count == 0 {
            return Err("a range holds at least 1 seed".to_string());
        }
        match from.checked_add(count - 1) {
            Some(_) => Ok(Seeds::Range { from, count }),
            None => Err(format!(
                "the {count} seeds from {from} run past the largest seed, {}: at most {} seeds \
                 from {from}",
                u64::MAX,
                u64::MAX - from + 1
            )),
        }
    }

    /// How many seeds.
    pub fn len(&self) -> u64 {
        match self {
            Seeds::List(v) => v.len() as u64,
            Seeds::Range { count, .. } => *count,
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The seeds in order.
    pub fn iter(&self) -> SeedIter<'_> {
        SeedIter {
            seeds: self,
            next: 0,
        }
    }
}

/// The seeds of a [`Seeds`], in order.
#[derive(Clone, Debug)]
pub struct SeedIter<'a> {
    seeds: &'a Seeds,
    next: u64,
}

impl Iterator for SeedIter<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let seed = match self.seeds {
            Seeds::List(v) => *v.get(usize::try_from(self.next).ok()?)?,
            Seeds::Range { from, count } => {
                if self.next >= *count {
                    return None;
                }
                from.wrapping_add(self.next)
            }
        };
        self.next += 1;
        Some(seed)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.seeds.len().saturating_sub(self.next);
        let left = usize::try_from(left).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl<'a> IntoIterator for &'a Seeds {
    type Item = u64;
    type IntoIter = SeedIter<'a>;

    fn into_iter(self) -> SeedIter<'a> {
        self.iter()
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
    let text = crate::files::read_text(path, crate::files::Input::SCENARIO)
        .map_err(|e| ScenarioError::one(path, "", None, format!("cannot read the file: {e}")))?;
    let scenario = parse(&text, path)?;
    Ok(Loaded {
        path: path.to_path_buf(),
        scenario,
    })
}

/// Parses and checks scenario text; `path` names it in errors. The file is read in the types
/// of the family its `model.kind` names.
///
/// # Errors
/// A [`ScenarioError`]: the first syntax or type error, or every problem of meaning.
pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let table: toml::Table = deserialize(toml::Deserializer::parse(text), text, path)?;
    family::kind_of(&table, text, path)?.parse(text, &table, path)
}

/// Reads `T` from TOML text: a syntax or type error names its key path and line.
pub(crate) fn deserialize<T: serde::de::DeserializeOwned>(
    de: Result<toml::Deserializer<'_>, toml::de::Error>,
    text: &str,
    path: &Path,
) -> Result<T, ScenarioError> {
    let de = de.map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        let mut message = e.message().to_string();
        // The parser points at the key it saw twice: name it.
        if message == "duplicate key" {
            if let Some(key) = e.span().and_then(|s| text.get(s)) {
                message = format!("duplicate key `{}`", key.trim());
            }
        }
        ScenarioError::one(path, "", line, message)
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let line = e.inner().span().map(|s| line_of(text, s.start));
        let key = error::key_path(e.path());
        ScenarioError::one(path, &key, line, e.inner().message().to_string())
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

#[cfg(test)]
mod tests {
    use super::Seeds;

    #[test]
    fn seeds_iterate_in_order_and_a_range_wraps_at_the_top() {
        let list = Seeds::List(vec![7, 2, 1]);
        assert_eq!(list.iter().collect::<Vec<_>>(), [7, 2, 1]);
        assert_eq!(list.len(), 3);
        let range = Seeds::Range { from: 5, count: 3 };
        assert_eq!(range.iter().collect::<Vec<_>>(), [5, 6, 7]);
        assert_eq!(range.iter().size_hint(), (3, Some(3)));
        let top = Seeds::Range {
            from: u64::MAX,
            count: 2,
        };
        assert_eq!(top.iter().collect::<Vec<_>>(), [u64::MAX, 0]);
        assert_eq!(Seeds::one(9).iter().collect::<Vec<_>>(), [9]);
        assert!(Seeds::List(Vec::new()).is_empty());
    }
}
