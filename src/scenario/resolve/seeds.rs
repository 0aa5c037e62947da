//! `[scenario] seeds`: the seeds `lockstep check` runs.

use super::Resolver;
use crate::scenario::schema::SeedsSpec;
use crate::scenario::{MAX_SEEDS, Seeds};

/// The seeds `lockstep check` runs: the file's list or range, or just `seed`.
pub(super) fn seeds(r: &mut Resolver, spec: Option<&SeedsSpec>, seed: u64) -> Seeds {
    match spec {
        None => Seeds::one(seed),
        Some(SeedsSpec::List(list)) => {
            if list.is_empty() {
                r.problems
                    .push("scenario.seeds", "must list at least one seed");
            } else if list.len() as u64 > MAX_SEEDS {
                r.problems.push(
                    "scenario.seeds",
                    format!("lists {} seeds; at most {MAX_SEEDS}", list.len()),
                );
            } else {
                let mut sorted: Vec<(u64, usize)> =
                    list.iter().enumerate().map(|(i, &s)| (s, i)).collect();
                sorted.sort_unstable();
                if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
                    r.problems.push(
                        format!("scenario.seeds[{}]", w[1].1),
                        format!(
                            "seed {} is listed twice (also scenario.seeds[{}])",
                            w[1].0, w[0].1
                        ),
                    );
                }
            }
            Seeds::List(list.clone())
        }
        Some(&SeedsSpec::Range { from, count }) => {
            if count == 0 {
                r.problems.push(
                    "scenario.seeds.count",
                    format!("must be greater than 0 (at most {MAX_SEEDS})"),
                );
            } else if count > MAX_SEEDS {
                r.problems.push(
                    "scenario.seeds.count",
                    format!("must be at most {MAX_SEEDS}, not {count}"),
                );
            } else if let Err(e) = Seeds::range(from.unwrap_or(seed), count) {
                r.problems.push("scenario.seeds", e);
            }
            Seeds::Range {
                from: from.unwrap_or(seed),
                count,
            }
        }
    }
}
