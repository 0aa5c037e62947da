//! Distributions of durations: message latency, pause lengths, work times.
//!
//! Sampling uses only the caller's [`Rng`] stream and the platform-independent
//! [`det_ln`]/[`det_exp`], so a sample is a pure function of the stream position.

use serde::{Deserialize, Serialize};

use crate::rng::{Rng, det_exp, det_ln};
use crate::time::Dur;

/// A distribution of durations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Always the same duration.
    Constant(Dur),
    /// Uniform over `lo..=hi`.
    Uniform {
        /// Shortest value.
        lo: Dur,
        /// Longest value.
        hi: Dur,
    },
    /// `min` plus an exponential with mean `mean`: memoryless queueing delay.
    Exponential {
        /// The floor (propagation delay).
        min: Dur,
        /// Mean of the exponential part.
        mean: Dur,
    },
    /// A Pareto long tail: `min * U^(-1/alpha)`, capped at `max`. Most samples stay near
    /// `min`; a few are very long (a switch buffer, a retransmission storm, a GC).
    Pareto {
        /// Scale, and the shortest value.
        min: Dur,
        /// Tail index in thousandths (`1500` = 1.5); smaller is heavier.
        alpha_milli: u32,
        /// Cap on a sample.
        max: Dur,
    },
}

impl Distribution {
    /// A constant zero.
    pub const ZERO: Distribution = Distribution::Constant(Dur::ZERO);

    /// Draws one duration.
    pub fn sample(&self, rng: &mut Rng) -> Dur {
        match *self {
            Distribution::Constant(d) => d,
            Distribution::Uniform { lo, hi } => {
                Dur::from_nanos(rng.between(lo.as_nanos(), hi.as_nanos()))
            }
            Distribution::Exponential { min, mean } => {
                let x = -det_ln(rng.unit_open0()) * mean.as_nanos() as f64;
                min.saturating_add(Dur::from_nanos(x as u64))
            }
            Distribution::Pareto {
                min,
                alpha_milli,
                max,
            } => {
                let alpha = f64::from(alpha_milli) / 1000.0;
                let factor = det_exp(-det_ln(rng.unit_open0()) / alpha);
                let x = min.as_nanos() as f64 * factor;
                Dur::from_nanos(x as u64).min(max).max(min)
            }
        }
    }

    /// Checks the parameters; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Distribution::Constant(_) => Ok(()),
            Distribution::Uniform { lo, hi } if lo > hi => {
                Err(format!("uniform range is empty: {lo} > {hi}"))
            }
            Distribution::Uniform { .. } | Distribution::Exponential { .. } => Ok(()),
            Distribution::Pareto { alpha_milli: 0, .. } => {
                Err("pareto alpha must be positive".to_string())
            }
            Distribution::Pareto { min, max, .. } if min > max => {
                Err(format!("pareto cap {max} is below its minimum {min}"))
            }
            Distribution::Pareto { .. } => Ok(()),
        }
    }

    /// A typical sample, the median where it is simple to say (the midpoint of a uniform,
    /// `min · 2^(1/alpha)` of a Pareto, `min + mean · ln 2` of an exponential): what a TCP
    /// sender's smoothed round trip settles near ([`crate::net::TcpConfig::rto`]).
    pub fn typical(&self) -> Dur {
        match *self {
            Distribution::Constant(d) => d,
            Distribution::Uniform { lo, hi } => {
                Dur::from_nanos(lo.as_nanos() + (hi.as_nanos() - lo.as_nanos()) / 2)
            }
            Distribution::Exponential { min, mean } => {
                min.saturating_add(Dur::from_nanos(mean.as_nanos() / 1000 * 693))
            }
            Distribution::Pareto {
                min,
                alpha_milli,
                max,
            } => {
                let factor = det_exp(det_ln(2.0) * 1000.0 / f64::from(alpha_milli.max(1)));
                Dur::from_nanos((min.as_nanos() as f64 * factor) as u64)
                    .min(max)
                    .max(min)
            }
        }
    }

    /// The largest value a sample can take, if bounded.
    pub fn max(&self) -> Option<Dur> {
        match *self {
            Distribution::Constant(d) => Some(d),
            Distribution::Uniform { hi, .. } => Some(hi),
            Distribution::Exponential { .. } => None,
            Distribution::Pareto { max, .. } => Some(max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(d: &Distribution, n: u64) -> u64 {
        let mut rng = Rng::fork(11, "dist");
        (0..n).map(|_| d.sample(&mut rng).as_nanos()).sum::<u64>() / n
    }

    #[test]
    fn uniform_stays_in_range_and_centres() {
        let d = Distribution::Uniform {
            lo: Dur::from_millis(1),
            hi: Dur::from_millis(5),
        };
        let mut rng = Rng::fork(1, "u");
        for _ in 0..1000 {
            let s = d.sample(&mut rng);
            assert!(s >= Dur::from_millis(1) && s <= Dur::from_millis(5));
        }
        let m = mean_of(&d, 20_000);
        assert!((2_900_000..3_100_000).contains(&m), "mean {m}");
    }

    #[test]
    fn exponential_mean_is_min_plus_mean() {
        let d = Distribution::Exponential {
            min: Dur::from_millis(1),
            mean: Dur::from_millis(10),
        };
        let m = mean_of(&d, 50_000);
        assert!((10_700_000..11_300_000).contains(&m), "mean {m}");
    }

    #[test]
    fn pareto_is_capped_and_long_tailed() {
        let d = Distribution::Pareto {
            min: Dur::from_millis(1),
            alpha_milli: 1500,
            max: Dur::from_secs(10),
        };
        let mut rng = Rng::fork(2, "p");
        let samples: Vec<Dur> = (0..20_000).map(|_| d.sample(&mut rng)).collect();
        assert!(
            samples
                .iter()
                .all(|s| *s >= Dur::from_millis(1) && *s <= Dur::from_secs(10))
        );
        // P(X > 100 min) = 100^-1.5 = 0.1%: about 20 of 20,000.
        let long = samples
            .iter()
            .filter(|s| **s > Dur::from_millis(100))
            .count();
        assert!((5..60).contains(&long), "{long} samples over 100ms");
    }
}
