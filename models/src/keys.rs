//! Checks of a scenario file's values, each problem collected with its key path: the root's
//! resolver and every family's keys use the same [`Check`].

use std::fmt;

use lockstep_sim::{Distribution, Dur};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// Longest duration a file may give: 10^10 ms, about 115 days, far beyond any run. In
/// nanoseconds it is 10^16, so a sum of a thousand such durations still fits in a `u64`
/// (1.8 * 10^19): no accepted value brings true time near overflow.
pub const MAX_MS: f64 = 1e10;

/// The most events a run may be given (`scenario.max_events`): a thousand times more than
/// the default. The memory budget (`scenario.memory_budget_mb`) bounds what they hold.
pub const MAX_EVENTS: u64 = 1_000_000_000;

/// The words of every range error: `2 is out of range: expected 0 to 1`.
pub fn out_of_range(v: impl fmt::Display, lo: impl fmt::Display, hi: impl fmt::Display) -> String {
    format!("{v} is out of range: expected {lo} to {hi}")
}

/// The problems found while a file is checked, in the order found, so that all of them are
/// reported at once: each a key path (such as `fault[2].pause.node`) and a message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems(Vec<(String, String)>);

impl Problems {
    /// Notes a problem at key path `path`.
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push((path.into(), message.into()));
    }

    /// True when nothing is wrong.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl IntoIterator for Problems {
    type Item = (String, String);
    type IntoIter = std::vec::IntoIter<(String, String)>;

    /// The key paths and messages, in the order found.
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Checks values at their key paths, noting each problem in `problems` and returning a
/// placeholder in its place, so that checking goes on.
#[derive(Debug, Default)]
pub struct Check {
    /// What is wrong so far.
    pub problems: Problems,
}

impl Check {
    /// A non-negative duration in ms.
    pub fn ms(&mut self, path: &str, v: f64) -> Dur {
        if !v.is_finite() || v < 0.0 {
            self.problems.push(
                path,
                format!("must be a non-negative number of milliseconds, not {v}"),
            );
            return Dur::ZERO;
        }
        if v > MAX_MS {
            self.problems
                .push(path, format!("{} ms", out_of_range(v, 0, MAX_MS)));
            return Dur::ZERO;
        }
        Dur::from_nanos((v * 1e6).round() as u64)
    }

    /// A whole number in `lo..=hi`; out of it, the problem is noted (with the range) and the
    /// value clamped into it.
    pub fn count<T>(&mut self, path: &str, v: T, lo: T, hi: T) -> T
    where
        T: Copy + Ord + fmt::Display,
    {
        if v < lo || v > hi {
            self.problems.push(path, out_of_range(v, lo, hi));
        }
        v.clamp(lo, hi)
    }

    /// A number in `lo..=hi`; out of it (or not a number), the problem is noted (with the
    /// range) and `lo` returned.
    pub fn number(&mut self, path: &str, v: f64, lo: f64, hi: f64) -> f64 {
        if (lo..=hi).contains(&v) {
            v
        } else {
            self.problems.push(path, out_of_range(v, lo, hi));
            lo
        }
    }

    /// A positive duration in ms: at least the simulator's nanosecond, so that it never
    /// rounds to zero.
    pub fn positive_ms(&mut self, path: &str, v: f64) -> Dur {
        let d = self.ms(path, v);
        if v == 0.0 {
            self.problems.push(path, "must be greater than 0");
        } else if v > 0.0 && v <= MAX_MS && d == Dur::ZERO {
            self.problems.push(
                path,
                format!("must be at least a nanosecond (0.000001), not {v}"),
            );
        }
        d
    }

    /// A signed duration in ms, as nanoseconds.
    pub fn signed_ms(&mut self, path: &str, v: f64) -> i64 {
        if !v.is_finite() || v.abs() > MAX_MS {
            self.problems.push(
                path,
                format!("must be a number of milliseconds within ±{MAX_MS}, not {v}"),
            );
            return 0;
        }
        (v * 1e6).round() as i64
    }

    /// A probability in [0, 1], as parts per million.
    pub fn probability(&mut self, path: &str, v: f64) -> u32 {
        if !(0.0..=1.0).contains(&v) {
            self.problems.push(
                path,
                format!("must be a probability between 0 and 1, not {v}"),
            );
            return 0;
        }
        (v * 1e6).round() as u32
    }

    /// A distribution of durations, each bound checked at its own key path under `path`.
    pub fn dist(&mut self, path: &str, spec: DistSpec) -> Distribution {
        let d = match spec {
            DistSpec::Constant(v) => Distribution::Constant(self.ms(path, v)),
            DistSpec::Uniform(lo, hi) => {
                let (lo, hi) = (
                    self.ms(&format!("{path}.uniform[0]"), lo),
                    self.ms(&format!("{path}.uniform[1]"), hi),
                );
                Distribution::Uniform { lo, hi }
            }
            DistSpec::Exponential { min, mean } => Distribution::Exponential {
                min: self.ms(&format!("{path}.exponential.min"), min),
                mean: self.ms(&format!("{path}.exponential.mean"), mean),
            },
            DistSpec::Pareto { min, alpha, max } => {
                if !(0.01..=100.0).contains(&alpha) {
                    self.problems.push(
                        format!("{path}.pareto.alpha"),
                        format!("must be between 0.01 and 100, not {alpha}"),
                    );
                }
                Distribution::Pareto {
                    min: self.positive_ms(&format!("{path}.pareto.min"), min),
                    alpha_milli: (alpha.clamp(0.01, 100.0) * 1000.0).round() as u32,
                    max: self.ms(&format!("{path}.pareto.max"), max),
                }
            }
        };
        if let Err(e) = d.validate() {
            self.problems.push(path, e);
        }
        d
    }
}

/// A distribution of durations in milliseconds: a number (constant), or one of
/// `{ constant = 5 }`, `{ uniform = [1, 5] }`, `{ exponential = { min = 1, mean = 10 } }`,
/// `{ pareto = { min = 1, alpha = 1.5, max = 10000 } }`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DistSpec {
    /// Always this many ms.
    Constant(f64),
    /// Uniform between the two, in ms.
    Uniform(f64, f64),
    /// `min` plus an exponential with mean `mean`, in ms.
    Exponential {
        /// The floor.
        min: f64,
        /// Mean of the exponential part.
        mean: f64,
    },
    /// A Pareto tail from `min`, capped at `max`, in ms.
    Pareto {
        /// Scale, and the shortest value.
        min: f64,
        /// Tail index; smaller is heavier.
        alpha: f64,
        /// Cap on a sample.
        max: f64,
    },
}

impl<'de> Deserialize<'de> for DistSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DistSpec, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DistSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("milliseconds, or a table such as { uniform = [1, 5] }")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DistSpec, E> {
                Ok(DistSpec::Constant(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DistSpec, E> {
                Ok(DistSpec::Constant(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DistSpec, E> {
                Ok(DistSpec::Constant(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DistSpec, A::Error> {
                let tagged = Tagged::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(match tagged {
                    Tagged::Constant(v) => DistSpec::Constant(v),
                    Tagged::Uniform([lo, hi]) => DistSpec::Uniform(lo, hi),
                    Tagged::Exponential { min, mean } => DistSpec::Exponential { min, mean },
                    Tagged::Pareto { min, alpha, max } => DistSpec::Pareto { min, alpha, max },
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
enum Tagged {
    Constant(f64),
    Uniform([f64; 2]),
    Exponential {
        #[serde(default)]
        min: f64,
        mean: f64,
    },
    Pareto {
        min: f64,
        alpha: f64,
        max: f64,
    },
}

/// A clock by name, as scenario files write it: `wall` or `mono`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockName {
    /// The wall clock.
    #[default]
    Wall,
    /// The monotonic clock.
    Mono,
}

impl ClockName {
    /// The clock.
    pub fn kind(self) -> lockstep_sim::ClockKind {
        match self {
            ClockName::Wall => lockstep_sim::ClockKind::Wall,
            ClockName::Mono => lockstep_sim::ClockKind::Mono,
        }
    }
}

/// A section with no keys: any key given is unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoKeys {}

/// The keys a serde struct takes, as its derived `Deserialize` declares them: asked of a
/// deserializer that only listens (so an error about a key can say which kinds take it).
pub fn fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    struct Listen(Option<&'static [&'static str]>);
    #[derive(Debug)]
    struct Stop;
    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("only listening")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_: M) -> Stop {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for &mut Listen {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = Some(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut listen = Listen(None);
    let _ = T::deserialize(&mut listen);
    listen.0.unwrap_or(&[])
}
