//! The scenario file as written: serde structs that mirror the TOML, with every unknown key
//! rejected. Nothing here is validated beyond types; [`super::resolve`] checks meaning and
//! builds the run. The page docs/scenarios.md documents every key.

use std::fmt;

use lockstep_check::metrics::{METRICS, Metric, metric_bounded_as};
use lockstep_models::keys::DistSpec;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// A whole scenario file whose `[model]` section is `M`: the keys of the family it names.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct File<M> {
    pub(crate) scenario: ScenarioSection,
    pub(crate) model: M,
    #[serde(default)]
    pub(crate) workload: WorkloadSection,
    #[serde(default)]
    pub(crate) storage: StorageSection,
    #[serde(default)]
    pub(crate) network: NetworkSection,
    #[serde(default)]
    pub(crate) clock: Vec<ClockSection>,
    #[serde(default)]
    pub(crate) fault: Vec<FaultSection>,
    pub(crate) chaos: Option<ChaosSection>,
    #[serde(default)]
    pub(crate) expect: ExpectSection,
    pub(crate) sweep: Option<SweepSection>,
}

/// `[sweep]`: the axes of a sweep map (`lockstep map`) and the seeds of each cell. The file
/// as written is an ordinary scenario; each cell is the file with the axes' keys set.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SweepSection {
    pub(crate) x: AxisSection,
    pub(crate) y: Option<AxisSection>,
    pub(crate) seeds: Option<u64>,
    pub(crate) measure: Option<String>,
}

/// One axis: a key path of the scenario and its values, listed or as a range.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AxisSection {
    pub(crate) key: String,
    pub(crate) values: Option<Vec<SweepValueSpec>>,
    pub(crate) from: Option<SweepValueSpec>,
    pub(crate) to: Option<SweepValueSpec>,
    pub(crate) step: Option<SweepValueSpec>,
}

/// A value of a swept key as written: any TOML scalar.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SweepValueSpec {
    Integer(i64),
    Float(f64),
    Bool(bool),
    String(String),
}

impl<'de> Deserialize<'de> for SweepValueSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SweepValueSpec, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SweepValueSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, a string or a boolean")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SweepValueSpec, E> {
                Ok(SweepValueSpec::Integer(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SweepValueSpec, E> {
                i64::try_from(v)
                    .map(SweepValueSpec::Integer)
                    .map_err(|_| E::custom(format!("{v} does not fit a TOML integer")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SweepValueSpec, E> {
                Ok(SweepValueSpec::Float(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<SweepValueSpec, E> {
                Ok(SweepValueSpec::Bool(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SweepValueSpec, E> {
                Ok(SweepValueSpec::String(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// `[chaos]`: a named profile and overrides of its settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChaosSection {
    pub(crate) profile: Option<String>,
    pub(crate) start_ms: Option<f64>,
    pub(crate) quiet_tail_ms: Option<f64>,
    pub(crate) liveness_ms: Option<f64>,
    pub(crate) faults_per_minute: Option<f64>,
    pub(crate) on_mark: Option<f64>,
    pub(crate) max_occurrence: Option<u32>,
    pub(crate) weights: Option<WeightsSection>,
    pub(crate) clock_kinds: Option<ClockKindsSection>,
    pub(crate) pause_ms: Option<DistSpec>,
    pub(crate) freeze: Option<f64>,
    pub(crate) partition_ms: Option<DistSpec>,
    pub(crate) hold: Option<f64>,
    pub(crate) restart_ms: Option<DistSpec>,
    pub(crate) max_step_ms: Option<f64>,
    pub(crate) max_drift_ppm: Option<i64>,
    pub(crate) slew_rate_ppm: Option<u32>,
    pub(crate) delay_ms: Option<DistSpec>,
    pub(crate) slow_for_ms: Option<DistSpec>,
    pub(crate) max_loss: Option<f64>,
    pub(crate) max_duplicate: Option<f64>,
}

/// `[chaos.weights]`: relative weights of the fault kinds; a kind not given keeps the
/// profile's weight.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WeightsSection {
    pub(crate) partition: Option<u32>,
    pub(crate) pause: Option<u32>,
    pub(crate) crash: Option<u32>,
    pub(crate) clock: Option<u32>,
    pub(crate) network: Option<u32>,
}

/// `[chaos.clock_kinds]`: relative weights of the kinds of clock fault; a kind not given
/// keeps the profile's weight.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClockKindsSection {
    pub(crate) step: Option<u32>,
    pub(crate) slew: Option<u32>,
    pub(crate) strobe: Option<u32>,
    pub(crate) drift: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioSection {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    pub(crate) duration_ms: f64,
    #[serde(default = "default_seed")]
    pub(crate) seed: u64,
    #[serde(default = "default_max_events")]
    pub(crate) max_events: u64,
    pub(crate) seeds: Option<SeedsSpec>,
    #[serde(default = "default_memory_budget_mb")]
    pub(crate) memory_budget_mb: u64,
    #[serde(default = "default_wall_budget_ms")]
    pub(crate) wall_budget_ms: f64,
}

pub(crate) fn default_memory_budget_mb() -> u64 {
    1_024
}

fn default_wall_budget_ms() -> f64 {
    600_000.0
}

fn default_seed() -> u64 {
    1
}

fn default_max_events() -> u64 {
    10_000_000
}

/// `[workload]`: the keys every kind shares, typed here, and the kind's own keys (and any
/// unknown ones) kept as written, for the kind's registry entry to read
/// (`super::resolve::workload`).
#[derive(Debug, Deserialize)]
pub(crate) struct WorkloadSection {
    #[serde(default = "default_clients")]
    pub(crate) clients: u32,
    /// `default_think()` when absent; a scheduled job takes none.
    pub(crate) think_ms: Option<DistSpec>,
    #[serde(default = "default_work")]
    pub(crate) work_ms: DistSpec,
    #[serde(default = "default_true")]
    pub(crate) check_validity_before_write: bool,
    #[serde(default = "default_storage_timeout")]
    pub(crate) storage_timeout_ms: f64,
    /// The loop: `counter` when absent; one of the registry's kinds.
    pub(crate) kind: Option<String>,
    /// A supervisor that kills a client unresponsive for `after_ms`.
    pub(crate) watchdog: Option<WatchdogSection>,
    /// Each acquisition one try (`"try"`), or as the family's client waits (`"block"`).
    pub(crate) acquire: Option<AcquireName>,
    /// Take the lock again inside each critical section (a nested call), and leave it.
    #[serde(default)]
    pub(crate) reenter: bool,
    /// What sets clients apart, by client name.
    pub(crate) per_client: Option<std::collections::BTreeMap<String, PerClientSection>>,
    /// The other keys: the kind's own, another kind's, or unknown.
    #[serde(flatten)]
    pub(crate) own: toml::Table,
}

/// The keys every kind shares (the typed fields of [`WorkloadSection`]).
pub(crate) const SHARED_WORKLOAD_KEYS: &[&str] = &[
    "clients",
    "think_ms",
    "work_ms",
    "check_validity_before_write",
    "storage_timeout_ms",
    "kind",
    "watchdog",
    "acquire",
    "reenter",
    "per_client",
];

/// `[workload.per_client.client-N]`: one client's own settings.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PerClientSection {
    /// It starts this long after the run does.
    pub(crate) start_ms: Option<f64>,
    /// The rows it picks from (`kind = "keys"`).
    pub(crate) rows: Option<Vec<u32>>,
}

/// `workload.acquire`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AcquireName {
    Block,
    Try,
}

/// `workload.watchdog`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WatchdogSection {
    pub(crate) after_ms: f64,
    pub(crate) restart_after_ms: Option<f64>,
}

impl Default for WorkloadSection {
    fn default() -> WorkloadSection {
        WorkloadSection {
            clients: default_clients(),
            think_ms: None,
            work_ms: default_work(),
            check_validity_before_write: true,
            storage_timeout_ms: default_storage_timeout(),
            kind: None,
            watchdog: None,
            acquire: None,
            reenter: false,
            per_client: None,
            own: toml::Table::new(),
        }
    }
}

fn default_clients() -> u32 {
    2
}

pub(crate) fn default_think() -> DistSpec {
    DistSpec::Uniform(0.0, 100.0)
}

fn default_work() -> DistSpec {
    DistSpec::Uniform(50.0, 200.0)
}

fn default_true() -> bool {
    true
}

fn default_storage_timeout() -> f64 {
    1_000.0
}

/// `[storage]`: the mode, and the keys of a mode under which a family's service keeps the
/// resource itself (read with that family's types; any other key is an error).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StorageSection {
    pub(crate) mode: Option<String>,
    #[serde(flatten, deserialize_with = "not_a_date")]
    pub(crate) keys: toml::Table,
}

/// The keys of `[storage]` besides `mode`. A date given as the whole section reaches the
/// flattened keys as the TOML reader's own one-key table: refused as a date.
fn not_a_date<'de, D: Deserializer<'de>>(d: D) -> Result<toml::Table, D::Error> {
    let keys = toml::Table::deserialize(d)?;
    if keys.contains_key("$__toml_private_datetime") {
        return Err(de::Error::custom(
            "a date or time is not a value this key takes",
        ));
    }
    Ok(keys)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NetworkSection {
    #[serde(default = "default_latency")]
    pub(crate) latency_ms: DistSpec,
    #[serde(default)]
    pub(crate) loss: f64,
    #[serde(default)]
    pub(crate) duplicate: f64,
    /// `net.ipv4.tcp_retries2` of every host.
    pub(crate) tcp_retries2: Option<u32>,
    /// `TCP_USER_TIMEOUT` of every connection, in ms.
    pub(crate) tcp_user_timeout_ms: Option<f64>,
    #[serde(default)]
    pub(crate) link: Vec<LinkSection>,
}

impl Default for NetworkSection {
    fn default() -> NetworkSection {
        NetworkSection {
            latency_ms: default_latency(),
            loss: 0.0,
            duplicate: 0.0,
            tcp_retries2: None,
            tcp_user_timeout_ms: None,
            link: Vec::new(),
        }
    }
}

fn default_latency() -> DistSpec {
    DistSpec::Uniform(1.0, 5.0)
}

/// Overrides for the directed links from every node in `from` to every node in `to`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkSection {
    pub(crate) from: Names,
    pub(crate) to: Names,
    pub(crate) latency_ms: Option<DistSpec>,
    pub(crate) loss: Option<f64>,
    pub(crate) duplicate: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClockSection {
    pub(crate) node: Names,
    #[serde(default)]
    pub(crate) drift_ppm: i64,
    #[serde(default)]
    pub(crate) offset_ms: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FaultSection {
    pub(crate) at_ms: Option<f64>,
    pub(crate) on: Option<TriggerSection>,
    pub(crate) pause: Option<PauseSection>,
    pub(crate) freeze: Option<PauseSection>,
    pub(crate) resume: Option<NodeSection>,
    pub(crate) crash: Option<CrashSection>,
    pub(crate) terminate: Option<TerminateSection>,
    pub(crate) restart: Option<NodeSection>,
    pub(crate) partition: Option<PartitionSection>,
    pub(crate) heal: Option<bool>,
    pub(crate) clock_step: Option<ClockStepSection>,
    pub(crate) clock_slew: Option<ClockSlewSection>,
    pub(crate) clock_drift: Option<ClockDriftSection>,
    pub(crate) delay: Option<DelaySection>,
    pub(crate) degrade: Option<DegradeSection>,
    pub(crate) clock_strobe: Option<ClockStrobeSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TriggerSection {
    pub(crate) node: String,
    pub(crate) mark: String,
    #[serde(default = "default_occurrence")]
    pub(crate) occurrence: u32,
    pub(crate) before_ms: Option<f64>,
    /// The fault may not fire in a run: a run where it does not still meets its expectation.
    #[serde(default)]
    pub(crate) optional: bool,
}

fn default_occurrence() -> u32 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeSection {
    pub(crate) node: Names,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PauseSection {
    pub(crate) node: Names,
    pub(crate) for_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CrashSection {
    pub(crate) node: Names,
    pub(crate) restart_after_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TerminateSection {
    pub(crate) node: Names,
    pub(crate) grace_ms: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PartitionSection {
    pub(crate) isolate: Option<String>,
    pub(crate) groups: Option<Vec<Names>>,
    pub(crate) from: Option<Names>,
    pub(crate) to: Option<Names>,
    pub(crate) majority_minority: Option<Names>,
    pub(crate) bridge: Option<Names>,
    pub(crate) majorities_ring: Option<Names>,
    #[serde(default)]
    pub(crate) mode: ModeName,
    pub(crate) for_ms: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ModeName {
    #[default]
    Drop,
    Hold,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClockStepSection {
    pub(crate) node: Names,
    pub(crate) delta_ms: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClockSlewSection {
    pub(crate) node: Names,
    pub(crate) delta_ms: f64,
    #[serde(default = "default_slew_rate")]
    pub(crate) rate_ppm: u32,
}

fn default_slew_rate() -> u32 {
    500
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClockDriftSection {
    pub(crate) node: Names,
    pub(crate) drift_ppm: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DelaySection {
    pub(crate) from: Names,
    pub(crate) to: Names,
    pub(crate) extra_ms: f64,
    pub(crate) for_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DegradeSection {
    pub(crate) from: Names,
    pub(crate) to: Names,
    #[serde(default)]
    pub(crate) loss: f64,
    #[serde(default)]
    pub(crate) duplicate: f64,
    pub(crate) for_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClockStrobeSection {
    pub(crate) node: Names,
    pub(crate) delta_ms: f64,
    pub(crate) period_ms: f64,
    pub(crate) for_ms: f64,
}

/// `[expect]`: the property and verdict, whether the lock recovers, and bounds on metrics by
/// their bound keys (`double_holders = 0`, `two_leaders_ms = { max = 0 }`): any metric of the
/// checker's list (`lockstep_check::METRICS`), so adding a metric adds its key here.
#[derive(Debug, Default)]
pub(crate) struct ExpectSection {
    pub(crate) property: PropertyName,
    pub(crate) verdict: Option<VerdictName>,
    pub(crate) recovers: Option<bool>,
    pub(crate) invalid_rate: Option<RateSection>,
    /// The bounds, in the file's order.
    pub(crate) bounds: Vec<(&'static Metric, Bound)>,
}

/// The keys of `[expect]` besides the metrics' bound keys.
const EXPECT_KEYS: [&str; 4] = ["property", "verdict", "recovers", "invalid_rate"];

impl<'de> Deserialize<'de> for ExpectSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ExpectSection, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ExpectSection;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExpectSection, A::Error> {
                let mut e = ExpectSection::default();
                // TOML refuses a key written twice before this reads it.
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "property" => e.property = map.next_value()?,
                        "verdict" => e.verdict = Some(map.next_value()?),
                        "recovers" => e.recovers = Some(map.next_value()?),
                        "invalid_rate" => e.invalid_rate = Some(map.next_value()?),
                        _ => match metric_bounded_as(&key) {
                            Some(metric) => e.bounds.push((metric, map.next_value()?)),
                            // Refused as its value is read, so the error names
                            // `expect.KEY` and its line.
                            None => map.next_value_seed(Refuse(unknown_expect_key(&key)))?,
                        },
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

/// Reading a value fails with its message: an error at the value's key path and line.
struct Refuse(String);

impl<'de> de::DeserializeSeed<'de> for Refuse {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
        Err(de::Error::custom(self.0))
    }
}

/// The error for a key of `[expect]` that is neither one of [`EXPECT_KEYS`] nor a metric's
/// bound key: the nearest key when it looks like a typo, and where the metrics are listed.
fn unknown_expect_key(key: &str) -> String {
    let bound_keys: Vec<String> = METRICS.iter().map(|m| m.bound_key()).collect();
    let known: Vec<&str> = EXPECT_KEYS
        .iter()
        .copied()
        .chain(bound_keys.iter().map(String::as_str))
        .collect();
    let hint = match crate::scenario::resolve::closest(key, &known) {
        Some(k) => format!(" (did you mean `{k}`?)"),
        None => String::new(),
    };
    format!(
        "unknown field `{key}`{hint}, expected {} or a bound on a metric of the checker \
         (docs/checker.md, Metrics: `lockstep metrics` lists them)",
        EXPECT_KEYS.map(|k| format!("`{k}`")).join(", ")
    )
}

/// `invalid_rate = { at_least = .., at_most = .. }`: shares of the seeds, either key optional.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateSection {
    pub(crate) at_least: Option<f64>,
    pub(crate) at_most: Option<f64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PropertyName {
    #[default]
    Resource,
    MutualExclusion,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum VerdictName {
    Valid,
    Invalid,
    Unknown,
    Any,
}

/// A bound on a count: an exact number, or `{ min = .., max = .. }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bound {
    pub(crate) min: u64,
    pub(crate) max: Option<u64>,
}

impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bound, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bound;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a count, or a table { min = .., max = .. }")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bound, E> {
                let v = u64::try_from(v).map_err(|_| E::custom("a count cannot be negative"))?;
                Ok(Bound {
                    min: v,
                    max: Some(v),
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bound, E> {
                Ok(Bound {
                    min: v,
                    max: Some(v),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Bound, A::Error> {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Range {
                    #[serde(default)]
                    min: u64,
                    max: Option<u64>,
                }
                let r = Range::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Bound {
                    min: r.min,
                    max: r.max,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// The seeds `lockstep check` runs: a list (`[1, 2, 7]`) or a table
/// `{ from = .., count = .. }` (`from` defaults to the scenario's `seed`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SeedsSpec {
    List(Vec<u64>),
    Range { from: Option<u64>, count: u64 },
}

impl<'de> Deserialize<'de> for SeedsSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SeedsSpec, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SeedsSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of seeds, or a table { from = .., count = .. }")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SeedsSpec, A::Error> {
                let mut v = Vec::new();
                while let Some(seed) = seq.next_element::<u64>()? {
                    v.push(seed);
                }
                Ok(SeedsSpec::List(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SeedsSpec, A::Error> {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Range {
                    from: Option<u64>,
                    count: u64,
                }
                let r = Range::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(SeedsSpec::Range {
                    from: r.from,
                    count: r.count,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// One node name or a list of them. The names `clients`, `servers` and `all` stand for
/// groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Names(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Names, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Names;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a node name or a list of node names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Names, E> {
                Ok(Names(vec![v.to_string()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Names, A::Error> {
                let mut v = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    v.push(name);
                }
                Ok(Names(v))
            }
        }
        d.deserialize_any(V)
    }
}
