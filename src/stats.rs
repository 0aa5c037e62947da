//! Statistics a sweep keeps over many runs without keeping the runs: a fixed-size,
//! mergeable log-bucket [`Histogram`] and the [`wilson`] score interval of a rate, and the
//! reports' figures made of them ([`rate`], [`Histogram::quantiles_ms`]).
//!
//! Both are exact where it matters for merging: a histogram holds integer counts per bucket,
//! so adding values in any order, or adding them to several histograms and merging those,
//! gives the same buckets bit for bit. Floating point appears only in what is derived for
//! people to read (rates and their intervals), always from those integers.

use lockstep_check::metrics::{METRICS, MetricTally, Metrics, metric};
use lockstep_reports::format::ms;
use lockstep_reports::{MetricRow, QuantilesMs, Rate};
use serde::{Deserialize, Serialize};

/// Bits of a value kept exactly below its leading one: each power-of-two range of values
/// above `2^SUB_BITS` is split into `2^SUB_BITS` equal buckets.
const SUB_BITS: u32 = 6;
/// Sub-buckets per power of two, and the number of values counted exactly (0 to 63).
const SUB: u64 = 1 << SUB_BITS;
/// Buckets: `SUB` exact ones, then `SUB` for each leading-one position from `SUB_BITS` to 63.
const BUCKETS: usize = ((64 - SUB_BITS + 1) as usize) * SUB as usize;

/// A histogram of `u64` values in logarithmic buckets, after HdrHistogram: values below 128
/// have a bucket each; above, each range `[2^k, 2^(k+1))` is split into 64 equal buckets.
///
/// Every count is exact and the buckets are fixed, so histograms merge by adding counts, in
/// any order, to the histogram of all their values. A quantile is reported as the lower
/// bound of the bucket holding it (raised to the exact minimum when that is higher), so it
/// is never above the true quantile and less than 1/64 (1.6%) below it; the minimum and the
/// maximum are kept exactly. The memory is fixed: 3,776 counters, whatever the number of
/// values.
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min())
            .field("max", &self.max())
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

/// The bucket of `value`.
fn bucket_of(value: u64) -> usize {
    if value < SUB {
        return value as usize;
    }
    let msb = 63 - value.leading_zeros(); // at least SUB_BITS
    let top = value >> (msb - SUB_BITS); // in [SUB, 2 * SUB)
    ((msb - SUB_BITS + 1) as usize) * SUB as usize + (top - SUB) as usize
}

/// The smallest value in bucket `index`.
fn lower_bound(index: usize) -> u64 {
    let (group, offset) = (index as u64 / SUB, index as u64 % SUB);
    if group == 0 {
        offset
    } else {
        (SUB + offset) << (group - 1)
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// Counts `value` once.
    pub fn add(&mut self, value: u64) {
        self.add_n(value, 1);
    }

    fn add_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[bucket_of(value)] += n;
        self.count += n;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Adds every count of `other`: the histogram of both sets of values. `None`, and
    /// nothing changed, when the number of values would pass 2^64 - 1 (a bucket cannot
    /// overflow before the total does).
    #[must_use]
    pub fn merge(&mut self, other: &Histogram) -> Option<()> {
        self.count = self.count.checked_add(other.count)?;
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        Some(())
    }

    /// How many values were counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value, exactly; `None` when empty.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value, exactly; `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The nearest-rank quantile at `per_mille`/1000 (500 is the median, 990 the 99th
    /// percentile), as the lower bound of its bucket: at most the true quantile and less than
    /// 1/64 below it. `None` when empty.
    pub fn quantile(&self, per_mille: u64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        // The rank as lockstep-check's nearest rank: the smallest value with at least
        // `per_mille`/1000 of the values at or below it. u128: count * 1000 may not fit.
        let rank = (u128::from(self.count) * u128::from(per_mille.min(1000)))
            .div_ceil(1000)
            .max(1);
        let mut seen = 0u128;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += u128::from(n);
            if seen >= rank {
                return Some(lower_bound(index).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// The median, the 99th percentile and the maximum in milliseconds, as reports show them;
    /// `None` when empty.
    pub fn quantiles_ms(&self) -> Option<QuantilesMs> {
        Some(QuantilesMs {
            p50: ms(self.quantile(500)?),
            p99: ms(self.quantile(990)?),
            max: ms(self.max()?),
        })
    }
}

/// A histogram as JSON: the count, the exact minimum and maximum, and each non-empty bucket
/// as `[lower bound, count]` in increasing order.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct HistogramJson {
    count: u64,
    min: Option<u64>,
    max: Option<u64>,
    buckets: Vec<(u64, u64)>,
}

impl Serialize for Histogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let buckets = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (lower_bound(i), *n))
            .collect();
        HistogramJson {
            count: self.count,
            min: self.min(),
            max: self.max(),
            buckets,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Histogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let json = HistogramJson::deserialize(d)?;
        let mut h = Histogram::new();
        for (low, n) in json.buckets {
            if lower_bound(bucket_of(low)) != low {
                return Err(D::Error::custom(format!(
                    "{low} is not a bucket's lower bound"
                )));
            }
            // Checked: a hand-made file may hold counts whose sum passes 2^64 - 1.
            let total = h.count.checked_add(n);
            let total = total.ok_or_else(|| D::Error::custom("the counts pass 2^64 - 1"))?;
            h.counts[bucket_of(low)] += n;
            h.count = total;
        }
        match (json.min, json.max) {
            (Some(min), Some(max)) if h.count > 0 && min <= max => {
                h.min = min;
                h.max = max;
            }
            (None, None) if h.count == 0 => {}
            _ => return Err(D::Error::custom("min and max do not fit the buckets")),
        }
        if h.count != json.count {
            return Err(D::Error::custom("count is not the sum of the buckets"));
        }
        Ok(h)
    }
}

/// The two-sided normal quantile of a 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The 95% Wilson score interval of a rate of `k` in `n`: `(low, high)`, within `[0, 1]`;
/// `None` when `n` is 0. Unlike the normal approximation it stays sensible at 0 and at `n`
/// (0 of 1,000 gives about `(0, 0.0038)`).
pub fn wilson(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (k, n) = (k.min(n) as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At 0 and at n the bounds are exactly 0 and 1; rounding could leave them a hair off.
    let low = if k == 0.0 {
        0.0
    } else {
        (center - half).max(0.0)
    };
    let high = if k == n {
        1.0
    } else {
        (center + half).min(1.0)
    };
    Some((low, high))
}

/// `k` of `n` runs as a [`Rate`] with its 95% Wilson score interval; `None` when `n` is 0.
pub fn rate(k: u64, n: u64) -> Option<Rate> {
    Some(Rate {
        seeds: k,
        rate: k as f64 / n as f64,
        ci95: wilson(k, n)?,
    })
}

/// The row of a report: `key`'s figures over runs, with the rate of the runs above 0.
pub fn metric_row(key: &str, t: &MetricTally) -> MetricRow {
    let additive = metric(key).is_some_and(|m| m.additive);
    MetricRow {
        key: key.to_string(),
        runs: t.runs,
        nonzero: rate(t.nonzero, t.runs),
        never: t.never,
        total: additive.then_some(t.total),
        max: (t.nonzero > t.never).then_some(t.max),
    }
}

/// A report's rows of `metrics`, in the checker's order of metrics.
pub fn metric_rows(metrics: &Metrics) -> Vec<MetricRow> {
    METRICS
        .iter()
        .filter_map(|m| metrics.0.get(m.key).map(|t| metric_row(m.key, t)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_published_values() {
        // The worked examples of Newcombe (1998), "Two-sided confidence intervals for the
        // single proportion", Statistics in Medicine 17, method 3 (the score interval without
        // continuity correction), published to four decimals.
        let cases: [(u64, u64, f64, f64); 4] = [
            (81, 263, 0.2553, 0.3662),
            (15, 148, 0.0624, 0.1605),
            (0, 20, 0.0, 0.1611),
            (1, 29, 0.0061, 0.1718),
        ];
        for (k, n, low, high) in cases {
            let (l, h) = wilson(k, n).expect("n > 0");
            assert!((l - low).abs() < 5e-5, "{k}/{n}: low {l}, published {low}");
            assert!(
                (h - high).abs() < 5e-5,
                "{k}/{n}: high {h}, published {high}"
            );
        }
        // All successes mirror none, and the interval stays within [0, 1].
        let (l, h) = wilson(20, 20).expect("n > 0");
        assert!((l - (1.0 - 0.1611)).abs() < 5e-5 && h == 1.0, "{l} {h}");
        assert_eq!(wilson(0, 7).map(|ci| ci.0), Some(0.0));
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn buckets_cover_every_value_with_bounded_relative_error() {
        let mut last = 0;
        for index in 0..BUCKETS {
            let low = lower_bound(index);
            assert_eq!(bucket_of(low), index, "bucket {index}");
            if index > 0 {
                assert!(low > last, "bucket {index} starts after the one before");
            }
            last = low;
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        for value in [
            0,
            1,
            63,
            64,
            65,
            127,
            128,
            1_000,
            12_345_678,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let low = lower_bound(bucket_of(value));
            assert!(low <= value);
            // value - low < low / 64, except that values below 128 are exact.
            assert!((value - low) * SUB <= low, "{value} in a bucket from {low}");
            if value < 2 * SUB {
                assert_eq!(low, value);
            }
        }
    }

    #[test]
    fn quantiles_are_nearest_rank_lower_bounds() {
        let mut h = Histogram::new();
        assert_eq!(h.quantile(500), None);
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.quantile(500), Some(50));
        assert_eq!(h.quantile(990), Some(99));
        assert_eq!(h.quantile(1000), Some(100));
        assert_eq!((h.min(), h.max(), h.count()), (Some(1), Some(100), 100));
        let mut big = Histogram::new();
        big.add(1_000_000);
        let q = big.quantile(500).expect("one value");
        // Clamped to the exact minimum: a single value is reported exactly.
        assert_eq!(q, 1_000_000);
        big.add(1_000_100);
        let q = big.quantile(990).expect("two values");
        assert!(q <= 1_000_100 && (1_000_100 - q) * 64 < q, "{q}");
    }

    #[test]
    fn merged_histograms_equal_the_histogram_of_all_values_in_any_order() {
        let values: Vec<u64> = (0..5_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 50))
            .collect();
        let mut whole = Histogram::new();
        for &v in &values {
            whole.add(v);
        }
        let mut parts = [Histogram::new(), Histogram::new(), Histogram::new()];
        for (i, &v) in values.iter().enumerate().rev() {
            parts[i % 3].add(v);
        }
        let mut merged = Histogram::new();
        for p in parts.iter().rev() {
            merged.merge(p).expect("the counts fit");
        }
        assert_eq!(merged, whole);
        assert_eq!(merged.quantile(990), whole.quantile(990));
        // Merging an empty histogram changes nothing, and JSON round-trips.
        merged.merge(&Histogram::new()).expect("the counts fit");
        assert_eq!(merged, whole);
        let json = serde_json::to_string(&whole).expect("serialises");
        let back: Histogram = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, whole);
        assert!(
            serde_json::from_str::<Histogram>(&json.replace("\"count\":5000", "\"count\":1"))
                .is_err()
        );
    }
}
