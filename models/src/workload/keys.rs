//! Many keys (`kind = "keys"`): `rows` resources in storage and `locks` locks over them.
//!
//! Each critical section is a read-modify-write of one row under the lock that covers it. The
//! locks split the rows into contiguous tables of equal size (as near as integers allow): one
//! lock is a global lock, `rows` locks a lock per row, anything between a lock per table. A
//! client picks its next row from a distribution: uniform, or Zipf-skewed (row 0 the hottest,
//! row `k` drawn in proportion to `1 / (k + 1)^s`, the skew of YCSB's hot keys).
//!
//! Before each request the client records `Pick {lock, resource}` and names the lock to its
//! lock client ([`crate::LockClient::select`]); its storage operations carry the row. The
//! checker then judges each lock's critical sections and each row's operations apart.

use std::sync::Arc;

use lockstep_sim::Rng;
use lockstep_sim::rng::{det_exp, det_ln};
use serde::Deserialize;

use super::{Needs, Shared, Workload};
use crate::keys::Check;

/// The most locks (and rows) a scenario may have.
pub const MAX_LOCKS: u32 = 10_000;

/// The scale of a Zipf table's cumulative weights.
const SCALE: u64 = 1 << 53;

/// How a client picks its next row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Every row alike.
    Uniform,
    /// Zipf-skewed: row `k` in proportion to `1 / (k + 1)^s`.
    Zipf {
        /// The exponent, in thousandths (what the scenario wrote, for reports).
        s_milli: u32,
        /// The cumulative weights of rows `0..=k`, scaled to `2^53`: a draw below `cdf[k]`
        /// and not below `cdf[k - 1]` picks row `k`. Computed once, shared by every client.
        cdf: Arc<[u64]>,
    },
}

/// Many rows under many locks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeysConfig {
    /// Rows in storage (1 to [`MAX_LOCKS`]).
    pub rows: u32,
    /// Locks over them (1 to `rows`).
    pub locks: u32,
    /// How a client picks its row.
    pub pick: Pick,
}

/// Many keys' `[workload]` keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeysKeys {
    /// Rows in storage (100 when absent).
    rows: Option<u32>,
    /// Locks over the rows (1 global, `rows` one per row, the default).
    locks: Option<u32>,
    /// The Zipf exponent of the rows' popularity (uniform when absent).
    zipf: Option<f64>,
}

impl Workload for KeysConfig {
    const KIND: &'static str = "keys";
    const WHAT: &'static str = "many keys";
    const RECORDS: &'static [&'static str] = &["pick"];
    const NEEDS: Needs = Needs {
        many_locks: true,
        storage_node: true,
        ..Needs::NONE
    };
    type Keys = KeysKeys;

    /// `rows` rows (100 when absent) under `locks` locks (one per row when absent), picked
    /// uniformly or Zipf-skewed.
    fn resolve(keys: &KeysKeys, _: &Shared, check: &mut Check) -> KeysConfig {
        let rows = check.count("workload.rows", keys.rows.unwrap_or(100), 1, MAX_LOCKS);
        let locks = keys.locks.unwrap_or(rows);
        if !(1..=rows).contains(&locks) {
            check.problems.push(
                "workload.locks",
                format!(
                    "must be between 1 (one lock for every row) and workload.rows ({rows}, a \
                     lock per row), not {locks}"
                ),
            );
        }
        let zipf = keys.zipf.map(|s| {
            let s = check.number("workload.zipf", s, 0.0, 10.0);
            (s * 1000.0).round() as u32
        });
        KeysConfig::new(rows, locks.clamp(1, rows), zipf)
    }
}

impl KeysConfig {
    /// `rows` rows under `locks` locks, picked uniformly, or Zipf-skewed with exponent
    /// `zipf_s_milli` thousandths.
    ///
    /// # Panics
    /// Unless `1 <= locks <= rows <= MAX_LOCKS`; the loader refuses the rest.
    pub fn new(rows: u32, locks: u32, zipf_s_milli: Option<u32>) -> KeysConfig {
        assert!(
            (1..=rows).contains(&locks) && rows <= MAX_LOCKS,
            "1 <= locks <= rows <= MAX_LOCKS"
        );
        let pick = match zipf_s_milli {
            None => Pick::Uniform,
            Some(s_milli) => Pick::Zipf {
                s_milli,
                cdf: zipf_cdf(rows, s_milli),
            },
        };
        KeysConfig { rows, locks, pick }
    }

    /// Draws the next row.
    pub fn draw(&self, rng: &mut Rng) -> u32 {
        match &self.pick {
            Pick::Uniform => rng.below(u64::from(self.rows)) as u32,
            Pick::Zipf { cdf, .. } => {
                let u = rng.below(SCALE);
                cdf.partition_point(|&c| c <= u).min(cdf.len() - 1) as u32
            }
        }
    }

    /// How reports name it: `100 rows, a lock per row`, `100 rows in 10 tables`, `100 rows,
    /// one lock`, with `zipf 0.99` when skewed.
    pub fn describe(&self) -> String {
        let locks = match self.locks {
            1 => ", one lock".to_string(),
            n if n == self.rows => ", a lock per row".to_string(),
            n => format!(" in {n} tables"),
        };
        let skew = match &self.pick {
            Pick::Uniform => String::new(),
            Pick::Zipf { s_milli, .. } => format!(", zipf {}", f64::from(*s_milli) / 1000.0),
        };
        format!("{} rows{locks}{skew}", self.rows)
    }

    /// The lock that covers `row`: the table it is in.
    pub fn lock_of(&self, row: u32) -> u32 {
        (u64::from(row) * u64::from(self.locks) / u64::from(self.rows)) as u32
    }
}

/// The cumulative Zipf weights of `rows` rows with exponent `s_milli / 1000`, from the
/// simulator's platform-independent `ln` and `exp`, so every machine draws the same rows.
fn zipf_cdf(rows: u32, s_milli: u32) -> Arc<[u64]> {
    let s = f64::from(s_milli) / 1000.0;
    let weights: Vec<f64> = (1..=rows)
        .map(|k| det_exp(-s * det_ln(f64::from(k))))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut sum = 0.0;
    let mut cdf: Vec<u64> = weights
        .iter()
        .map(|w| {
            sum += w;
            ((sum / total) * SCALE as f64) as u64
        })
        .collect();
    // The last row takes what rounding left.
    if let Some(last) = cdf.last_mut() {
        *last = SCALE;
    }
    cdf.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_split_the_rows_evenly_from_global_to_per_row() {
        let global = KeysConfig::new(100, 1, None);
        assert!((0..100).all(|r| global.lock_of(r) == 0));
        let tables = KeysConfig::new(100, 10, None);
        assert_eq!(
            [0, 9, 10, 55, 99].map(|r| tables.lock_of(r)),
            [0, 0, 1, 5, 9]
        );
        let rows = KeysConfig::new(100, 100, None);
        assert!((0..100).all(|r| rows.lock_of(r) == r));
        // Tables of unequal size when the rows do not divide: 3 rows, 2 locks.
        let odd = KeysConfig::new(3, 2, None);
        assert_eq!([0, 1, 2].map(|r| odd.lock_of(r)), [0, 0, 1]);
    }

    #[test]
    fn zipf_makes_the_first_rows_hot_and_uniform_does_not() {
        let count = |config: &KeysConfig| {
            let mut rng = Rng::fork(7, "keys");
            let mut hits = vec![0u32; config.rows as usize];
            for _ in 0..10_000 {
                hits[config.draw(&mut rng) as usize] += 1;
            }
            hits
        };
        let zipf = count(&KeysConfig::new(100, 100, Some(1_000)));
        // With s = 1 over 100 rows, row 0 has 1 / H(100) = 19.3 % of the draws.
        assert!((1_800..2_100).contains(&zipf[0]), "{}", zipf[0]);
        assert!(zipf[0] > 5 * zipf[9], "{} against {}", zipf[0], zipf[9]);
        let uniform = count(&KeysConfig::new(100, 100, None));
        assert!(
            uniform.iter().all(|&h| (50..160).contains(&h)),
            "{uniform:?}"
        );
    }
}
