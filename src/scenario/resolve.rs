//! From the file as written to a runnable [`Scenario`]: every value checked, every node name
//! resolved, every problem collected with its key path.

use std::ops::{Deref, DerefMut};

use lockstep_check::{Options, Property, Validity};
use lockstep_models::etcd::client::{EtcdLockConfig, Recipe};
use lockstep_models::etcd::resource::ResourceGuard;
use lockstep_models::etcd::server::EtcdServerConfig;
use lockstep_models::keys::{Check, DistSpec, MAX_MS, Problems};
use lockstep_models::raft::ReadOnlyOption;
use lockstep_models::redis::persistence::DEFAULT_SAVE_POINTS;
use lockstep_models::redis::sentinel::{DEFAULT_DOWN_AFTER, DEFAULT_FAILOVER_TIMEOUT};
use lockstep_models::redis::{
    CrashLoses, Persistence, RedisLockConfig, RedisServerConfig, Release, Renew, SavePoint,
    SentinelConfig, WaitConfig,
};
use lockstep_models::redlock::RedlockConfig;
use lockstep_models::system::{self, Family, SystemSpec};
use lockstep_models::zookeeper::client::{
    Protection, Recipe as ZkRecipe, StopWorkOn, ZkLockConfig,
};
use lockstep_models::zookeeper::server::ZkServerConfig;
use lockstep_models::{StorageMode, WorkloadConfig};
use lockstep_sim::clock::{MAX_DRIFT_PPM, MAX_SLEW_PPM};
use lockstep_sim::{
    ClockKind, Distribution, Dur, Fault, LinkConfig, NodeConfig, NodeId, PartitionMode,
    ScheduledFault, Shape, Time, When,
};

use super::Scenario;
use super::schema::*;
use crate::chaos::{Chaos, Targets, Weights};
use crate::expect::{Count, Expect};

/// The most steps one clock strobe may take: each is an event of the world, so a strobe of a
/// nanosecond period over a long run would spend the event bound on nothing else. Jepsen's
/// strobes (period 1 ms to 1 s, up to 32 s) take at most 32,000.
const MAX_STROBE_STEPS: u64 = 1_000_000;

/// The checks of values (through `Deref` to [`Check`]) and the resolution of node names.
struct Resolver {
    check: Check,
    names: Vec<String>,
    clients: Vec<NodeId>,
    servers: Vec<NodeId>,
    sentinels: Vec<NodeId>,
}

impl Resolver {
    fn node(&mut self, path: &str, name: &str) -> Option<NodeId> {
        match self.names.iter().position(|n| n == name) {
            Some(i) => Some(NodeId(i as u32)),
            None => {
                let known = self.names.join(", ");
                self.problems
                    .push(path, format!("no node named `{name}` (nodes: {known})"));
                None
            }
        }
    }

    /// Node names or the groups `clients`, `servers`, `sentinels`, `all`, without duplicates.
    fn nodes(&mut self, path: &str, names: &Names) -> Vec<NodeId> {
        let mut out = Vec::new();
        if names.0.is_empty() {
            self.problems.push(path, "names no node");
        }
        for (i, name) in names.0.iter().enumerate() {
            let p = if names.0.len() == 1 {
                path.to_string()
            } else {
                format!("{path}[{i}]")
            };
            match name.as_str() {
                "clients" => out.extend(self.clients.iter().copied()),
                "servers" => out.extend(self.servers.iter().copied()),
                "sentinels" => out.extend(self.sentinels.iter().copied()),
                "all" => out.extend((0..self.names.len() as u32).map(NodeId)),
                _ => out.extend(self.node(&p, name)),
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

impl Deref for Resolver {
    type Target = Check;

    fn deref(&self) -> &Check {
        &self.check
    }
}

impl DerefMut for Resolver {
    fn deref_mut(&mut self) -> &mut Check {
        &mut self.check
    }
}

/// Checks a parsed file and builds the scenario, or returns every problem found.
pub(crate) fn resolve(file: &File) -> Result<Scenario, Problems> {
    let mut r = Resolver {
        check: Check::default(),
        names: Vec::new(),
        clients: Vec::new(),
        servers: Vec::new(),
        sentinels: Vec::new(),
    };
    let s = &file.scenario;
    if s.name.trim().is_empty() {
        r.problems.push("scenario.name", "must not be empty");
    }
    let duration = r.positive_ms("scenario.duration_ms", s.duration_ms);
    if s.max_events == 0 {
        r.problems
            .push("scenario.max_events", "must be greater than 0");
    }
    let seeds = seeds(&mut r, s.seeds.as_ref(), s.seed);
    let system = system_spec(&mut r, file);
    let nodes = system::build(&system);
    r.names = nodes.iter().map(|(name, _)| name.clone()).collect();
    r.clients = (0..r.names.len() as u32)
        .map(NodeId)
        .filter(|n| r.names[n.index()].starts_with("client-"))
        .collect();
    let servers = system::server_count(&system.family) as u32;
    let sentinels = system::sentinel_count(&system.family) as u32;
    r.servers = (0..servers).map(NodeId).collect();
    r.sentinels = (servers..servers + sentinels).map(NodeId).collect();
    let (link, links) = network(&mut r, &file.network);
    let clocks = clocks(&mut r, &file.clock);
    let faults: Vec<ScheduledFault> = file
        .fault
        .iter()
        .enumerate()
        .filter_map(|(i, f)| fault(&mut r, &format!("fault[{i}]"), f, duration))
        .collect();
    let chaos = file
        .chaos
        .as_ref()
        .and_then(|c| chaos(&mut r, c, file.model.ttl_ms, duration, &system));
    let mut expect = expect(&file.expect);
    match (&chaos, file.expect.recovers) {
        (Some(c), None | Some(true)) => expect.recovery = Some(c.liveness),
        (None, Some(true)) => r.problems.push(
            "expect.recovers",
            "needs a [chaos] section: recovery is measured from the start of its quiet tail",
        ),
        _ => {}
    }
    let sweep = file.sweep.as_ref().and_then(|s| sweep(&mut r, s));
    if !r.problems.is_empty() {
        return Err(r.check.problems);
    }
    Ok(Scenario {
        name: s.name.clone(),
        description: s.description.clone(),
        duration,
        seed: s.seed,
        seeds,
        max_events: s.max_events,
        check_options: Options {
            tokens_monotonic: system::tokens_monotonic(&system.family),
            quiet_from_ns: chaos.as_ref().map(|c| c.quiet_from.as_nanos()),
            ..Options::default()
        },
        system,
        clocks,
        link,
        links,
        faults,
        chaos,
        expect,
        sweep,
    })
}

/// `[sweep]`: the axes' key paths and values, and the seeds per cell. Whether a key exists and
/// takes a value is the file format's business: `sweepmap::grid` loads every cell to know.
fn sweep(r: &mut Resolver, s: &SweepSection) -> Option<crate::sweepmap::Sweep> {
    use crate::sweepmap::{DEFAULT_MAP_SEEDS, MAX_MAP_SEEDS, Sweep};
    let seeds = s.seeds.unwrap_or(DEFAULT_MAP_SEEDS);
    if !(1..=MAX_MAP_SEEDS).contains(&seeds) {
        r.problems.push(
            "sweep.seeds",
            format!("must be between 1 and {MAX_MAP_SEEDS}, not {seeds}"),
        );
    }
    let x = sweep_axis(r, "x", &s.x);
    let y = s.y.as_ref().and_then(|y| sweep_axis(r, "y", y));
    if let (Some(x), Some(y)) = (&x, &y) {
        if x.key == y.key {
            r.problems
                .push("sweep.y.key", format!("`{}` is already the x axis", y.key));
        }
    }
    let mut axes: Vec<_> = x.into_iter().collect();
    axes.extend(y);
    (axes.len() == 1 + usize::from(s.y.is_some())).then_some(Sweep { axes, seeds })
}

fn sweep_axis(r: &mut Resolver, name: &str, a: &AxisSection) -> Option<crate::sweepmap::Axis> {
    use crate::sweepmap::{Axis, MAX_AXIS_VALUES, parse_key_path};
    let p = format!("sweep.{name}");
    let path = parse_key_path(&a.key)
        .map_err(|e| r.problems.push(format!("{p}.key"), e))
        .ok();
    let values = match (&a.values, &a.from, &a.to, &a.step) {
        (Some(values), None, None, None) => {
            if values.is_empty() {
                r.problems
                    .push(format!("{p}.values"), "must list at least one value");
            }
            values.iter().map(sweep_value).collect()
        }
        (None, Some(from), Some(to), Some(step)) => sweep_range(r, &p, from, to, step)?,
        (Some(_), ..) => {
            r.problems.push(
                format!("{p}.values"),
                "give either `values` or `from`, `to` and `step`, not both",
            );
            return None;
        }
        (None, ..) => {
            r.problems.push(
                p,
                "needs `values = [..]`, or a range: `from`, `to` and `step`",
            );
            return None;
        }
    };
    if values.len() > MAX_AXIS_VALUES {
        r.problems.push(
            format!("{p}.values"),
            format!("has {} values; at most {MAX_AXIS_VALUES}", values.len()),
        );
    }
    Some(Axis {
        name: name.to_string(),
        key: a.key.clone(),
        path: path?,
        values,
    })
}

fn sweep_value(v: &SweepValueSpec) -> crate::sweepmap::Value {
    use crate::sweepmap::Value;
    match v {
        SweepValueSpec::Integer(v) => Value::Integer(*v),
        SweepValueSpec::Float(v) => Value::Float(*v),
        SweepValueSpec::Bool(v) => Value::Bool(*v),
        SweepValueSpec::String(v) => Value::String(v.clone()),
    }
}

/// The values `from`, `from + step`, ... up to `to` (included when a step lands on it):
/// integers when all three are integers, floats (rounded to 9 decimals, so 0.1 steps give 0.3
/// and not 0.30000000000000004) otherwise.
fn sweep_range(
    r: &mut Resolver,
    p: &str,
    from: &SweepValueSpec,
    to: &SweepValueSpec,
    step: &SweepValueSpec,
) -> Option<Vec<crate::sweepmap::Value>> {
    use crate::sweepmap::{MAX_AXIS_VALUES, Value};
    use SweepValueSpec::{Float, Integer};
    let number = |r: &mut Resolver, key: &str, v: &SweepValueSpec| match v {
        Integer(i) => Some(*i as f64),
        Float(f) if f.is_finite() => Some(*f),
        _ => {
            r.problems
                .push(format!("{p}.{key}"), "must be a finite number");
            None
        }
    };
    let (f, t, s) = (
        number(r, "from", from),
        number(r, "to", to),
        number(r, "step", step),
    );
    let (f, t, s) = (f?, t?, s?);
    if s == 0.0 || (t - f) * s < 0.0 {
        r.problems.push(
            format!("{p}.step"),
            format!("must be non-zero and lead from {f} to {t}, not {s}"),
        );
        return None;
    }
    let steps = ((t - f) / s * (1.0 + 1e-12)).floor();
    if steps >= MAX_AXIS_VALUES as f64 {
        r.problems.push(
            format!("{p}.step"),
            format!(
                "gives {} values from {f} to {t}; at most {MAX_AXIS_VALUES}",
                steps + 1.0
            ),
        );
        return None;
    }
    let n = steps as i64 + 1;
    Some(match (from, to, step) {
        (Integer(f), Integer(_), Integer(s)) => (0..n)
            .map(|i| Value::Integer(f.saturating_add(i.saturating_mul(*s))))
            .collect(),
        _ => (0..n)
            .map(|i| Value::Float(((f + i as f64 * s) * 1e9).round() / 1e9))
            .collect(),
    })
}

/// The settings of the named chaos profiles; `[chaos]` keys override them.
struct ProfileDefaults {
    start_ms: f64,
    faults_per_minute: f64,
    on_mark: f64,
    max_occurrence: u32,
    weights: [u32; 5],
    pause_ms: DistSpec,
    partition_ms: DistSpec,
    hold: f64,
    restart_ms: DistSpec,
    max_step_ms: f64,
    max_drift_ppm: i64,
    slew_rate_ppm: u32,
    delay_ms: DistSpec,
    slow_for_ms: DistSpec,
    max_loss: f64,
    max_duplicate: f64,
}

/// The named profiles. `default`: about ten faults a minute of every kind, half of them at
/// a mark; GC-shaped pauses (Pareto from 20 ms, alpha 0.5, up to 60 s: half under 80 ms,
/// one in seven over a second, one in twenty over 10 s); partitions from 200 ms with a
/// tail to 30 s, a third of them holding messages; Jepsen clock bumps capped at 60 s and
/// strobes, drift up to ±500 ppm, ntpd's 500 ppm slews; VOPR-like clogged and lossy links.
fn profile_defaults(name: &str) -> Option<ProfileDefaults> {
    match name {
        "default" => Some(ProfileDefaults {
            start_ms: 1_000.0,
            faults_per_minute: 10.0,
            on_mark: 0.5,
            max_occurrence: 10,
            weights: [3, 3, 1, 2, 1],
            pause_ms: DistSpec::Pareto {
                min: 20.0,
                alpha: 0.5,
                max: 60_000.0,
            },
            partition_ms: DistSpec::Pareto {
                min: 200.0,
                alpha: 0.7,
                max: 30_000.0,
            },
            hold: 0.3,
            restart_ms: DistSpec::Uniform(0.0, 10_000.0),
            max_step_ms: 60_000.0,
            max_drift_ppm: 500,
            slew_rate_ppm: 500,
            delay_ms: DistSpec::Pareto {
                min: 10.0,
                alpha: 0.8,
                max: 20_000.0,
            },
            slow_for_ms: DistSpec::Uniform(100.0, 10_000.0),
            max_loss: 0.3,
            // Every modelled service speaks TCP, where a message is never delivered twice; a
            // duplicate would be a fault of the simulation, not of the system (a storage
            // write applied twice reads as a lost update).
            max_duplicate: 0.0,
        }),
        _ => None,
    }
}

/// The names `[chaos] profile` takes.
pub(crate) const PROFILES: &[&str] = &["default"];

/// Checks `[chaos]` and resolves it against the system: the nodes it may strike and the
/// marks its family's nodes reach.
fn chaos(
    r: &mut Resolver,
    c: &ChaosSection,
    ttl_ms: f64,
    duration: Dur,
    system: &SystemSpec,
) -> Option<Chaos> {
    let name = c.profile.as_deref().unwrap_or("default");
    let Some(d) = profile_defaults(name) else {
        r.problems.push(
            "chaos.profile",
            format!(
                "no profile named `{name}` (profiles: {})",
                PROFILES.join(", ")
            ),
        );
        return None;
    };
    let start = r.ms("chaos.start_ms", c.start_ms.unwrap_or(d.start_ms));
    let ttl_ms = if ttl_ms.is_finite() && ttl_ms > 0.0 {
        ttl_ms
    } else {
        0.0
    };
    let liveness_ms = c.liveness_ms.unwrap_or(2.0 * ttl_ms + 10_000.0);
    let liveness = r.positive_ms("chaos.liveness_ms", liveness_ms);
    let tail = match c.quiet_tail_ms {
        Some(v) => r.ms("chaos.quiet_tail_ms", v),
        None => liveness.saturating_add(Dur::from_secs(1)),
    };
    if tail < liveness {
        r.problems.push(
            "chaos.quiet_tail_ms",
            format!(
                "must be at least chaos.liveness_ms ({} ms): recovery is judged inside the tail",
                liveness.as_millis()
            ),
        );
    }
    if start.saturating_add(tail) >= duration {
        r.problems.push(
            "chaos",
            format!(
                "leaves no time for faults: start_ms ({}) + quiet_tail_ms ({}) must be less than scenario.duration_ms ({}); make the run longer",
                start.as_millis(),
                tail.as_millis(),
                duration.as_millis()
            ),
        );
    }
    let rate = c.faults_per_minute.unwrap_or(d.faults_per_minute);
    let mean_gap = if rate.is_finite() && rate > 0.0 && rate <= 600_000.0 {
        Dur::from_nanos((60e9 / rate).round() as u64)
    } else {
        r.problems.push(
            "chaos.faults_per_minute",
            format!("must be greater than 0 and at most 600000, not {rate}"),
        );
        Dur::from_secs(1)
    };
    let on_mark_ppm = r.probability("chaos.on_mark", c.on_mark.unwrap_or(d.on_mark));
    let max_occurrence = c.max_occurrence.unwrap_or(d.max_occurrence);
    if max_occurrence == 0 {
        r.problems.push("chaos.max_occurrence", "counts from 1");
    }
    let w = c.weights.as_ref();
    let weights = Weights {
        partition: w.and_then(|w| w.partition).unwrap_or(d.weights[0]),
        pause: w.and_then(|w| w.pause).unwrap_or(d.weights[1]),
        crash: w.and_then(|w| w.crash).unwrap_or(d.weights[2]),
        clock: w.and_then(|w| w.clock).unwrap_or(d.weights[3]),
        network: w.and_then(|w| w.network).unwrap_or(d.weights[4]),
    };
    let pause = r.dist("chaos.pause_ms", c.pause_ms.unwrap_or(d.pause_ms));
    let partition = r.dist(
        "chaos.partition_ms",
        c.partition_ms.unwrap_or(d.partition_ms),
    );
    let hold_ppm = r.probability("chaos.hold", c.hold.unwrap_or(d.hold));
    let restart = r.dist("chaos.restart_ms", c.restart_ms.unwrap_or(d.restart_ms));
    let max_step = r.ms("chaos.max_step_ms", c.max_step_ms.unwrap_or(d.max_step_ms));
    let max_drift_ppm = c.max_drift_ppm.unwrap_or(d.max_drift_ppm);
    if !(0..=MAX_DRIFT_PPM).contains(&max_drift_ppm) {
        r.problems.push(
            "chaos.max_drift_ppm",
            format!("must be between 0 and {MAX_DRIFT_PPM}, not {max_drift_ppm}"),
        );
    }
    let slew_rate_ppm = c.slew_rate_ppm.unwrap_or(d.slew_rate_ppm);
    if slew_rate_ppm == 0 || i64::from(slew_rate_ppm) > MAX_SLEW_PPM {
        r.problems.push(
            "chaos.slew_rate_ppm",
            format!("must be between 1 and {MAX_SLEW_PPM}, not {slew_rate_ppm}"),
        );
    }
    let delay = r.dist("chaos.delay_ms", c.delay_ms.unwrap_or(d.delay_ms));
    let slow_for = r.dist("chaos.slow_for_ms", c.slow_for_ms.unwrap_or(d.slow_for_ms));
    let max_loss_ppm = r.probability("chaos.max_loss", c.max_loss.unwrap_or(d.max_loss));
    let max_duplicate_ppm = r.probability(
        "chaos.max_duplicate",
        c.max_duplicate.unwrap_or(d.max_duplicate),
    );
    let storage = r
        .names
        .iter()
        .position(|n| n == "storage")
        .map(|i| NodeId(i as u32));
    Some(Chaos {
        profile: name.to_string(),
        start: Time::ZERO + start,
        quiet_from: Time::ZERO + duration.saturating_sub(tail),
        liveness,
        mean_gap,
        on_mark_ppm,
        max_occurrence: max_occurrence.max(1),
        weights,
        pause,
        partition,
        hold_ppm,
        restart,
        max_step,
        max_drift_ppm: max_drift_ppm.clamp(0, MAX_DRIFT_PPM),
        slew_rate_ppm: slew_rate_ppm.max(1),
        delay,
        slow_for,
        max_loss_ppm,
        max_duplicate_ppm,
        targets: Targets {
            clients: r.clients.clone(),
            servers: r.servers.clone(),
            sentinels: r.sentinels.clone(),
            storage,
            marks: system::marks(&system.family),
        },
    })
}

/// The seeds `lockstep check` runs: the file's list or range, or just `seed`.
fn seeds(r: &mut Resolver, spec: Option<&SeedsSpec>, seed: u64) -> super::Seeds {
    use super::{MAX_SEEDS, Seeds};
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
                r.problems
                    .push("scenario.seeds.count", "must be greater than 0");
            } else if count > MAX_SEEDS {
                r.problems.push(
                    "scenario.seeds.count",
                    format!("must be at most {MAX_SEEDS}, not {count}"),
                );
            }
            Seeds::Range {
                from: from.unwrap_or(seed),
                count,
            }
        }
    }
}

fn system_spec(r: &mut Resolver, file: &File) -> SystemSpec {
    let m = &file.model;
    let ttl = r.positive_ms("model.ttl_ms", m.ttl_ms);
    if !(0.0..1.0).contains(&m.drift_factor) {
        r.problems.push(
            "model.drift_factor",
            format!("must be at least 0 and below 1, not {}", m.drift_factor),
        );
    }
    let drift_factor_ppm = (m.drift_factor.clamp(0.0, 1.0) * 1e6).round() as u32;
    let server = RedisServerConfig {
        expiry_clock: clock_kind(m.expiry_clock),
        persistence: persistence(r, m),
        crash_loses: match m.crash_loses {
            CrashLosesName::Process => CrashLoses::Process,
            CrashLosesName::Power => CrashLoses::Power,
        },
        restart_delay: r.ms("model.restart_delay_ms", m.restart_delay_ms),
        replica_of: None,
        replication_lag: replication_lag(r, m),
    };
    family_keys(r, m);
    let family = match m.kind {
        ModelKind::Redis => {
            if m.expiry_clock == ClockName::Mono && m.replicas > 0 {
                r.problems.push(
                    "model.expiry_clock",
                    "\"mono\" cannot replicate: a deadline on one server's monotonic clock means nothing on another's (Redis propagates absolute wall-clock deadlines)",
                );
            }
            Family::Redis {
                server,
                replicas: replicas(r, m),
                sentinel: sentinel(r, m),
                client: RedisLockConfig {
                    server: NodeId(0),
                    sentinels: Vec::new(),
                    wait: wait(r, m),
                    ttl,
                    release: match m.release.unwrap_or_default() {
                        ReleaseKind::CompareAndDelete => Release::CompareAndDelete,
                        ReleaseKind::Del => Release::Del,
                    },
                    renew: match m.renew {
                        RenewSpec::Bool(false) => Renew::Off,
                        RenewSpec::Bool(true) | RenewSpec::Mode(RenewModeName::UntilRefused) => {
                            Renew::UntilRefused
                        }
                        RenewSpec::Mode(RenewModeName::Watchdog) => Renew::Watchdog,
                    },
                    fencing: matches!(m.fencing, FencingKind::Incr | FencingKind::IncrAtomic),
                    fence_atomically: m.fencing == FencingKind::IncrAtomic,
                    request_timeout: r.positive_ms(
                        "model.request_timeout_ms",
                        m.request_timeout_ms.unwrap_or(500.0),
                    ),
                    retry_delay: r.dist(
                        "model.retry_delay_ms",
                        m.retry_delay_ms.unwrap_or(DistSpec::Uniform(50.0, 250.0)),
                    ),
                    acquire_tries: m.acquire_tries.unwrap_or(0),
                    drift_factor_ppm,
                },
            }
        }
        ModelKind::Etcd => etcd(r, m, ttl),
        ModelKind::ZooKeeper => zookeeper(r, m, ttl),
        ModelKind::Redlock => {
            let instances = m.instances.unwrap_or(5);
            if !(1..=99).contains(&instances) {
                r.problems.push(
                    "model.instances",
                    format!("must be between 1 and 99, not {instances}"),
                );
            }
            let mut client = match m.flavour.unwrap_or_default() {
                FlavourName::Antirez => RedlockConfig::antirez(Vec::new(), ttl),
                FlavourName::Redsync => RedlockConfig::redsync(Vec::new(), ttl),
            };
            if let Some(c) = m.clock {
                client.clock = clock_kind(c);
            }
            if let Some(t) = m.request_timeout_ms {
                client.timeout = r.positive_ms("model.request_timeout_ms", t);
            }
            if let Some(d) = m.retry_delay_ms {
                client.retry_delay_ms = r.whole_ms_range("model.retry_delay_ms", d);
            }
            if let Some(tries) = m.acquire_tries {
                if tries == 0 {
                    r.problems
                        .push("model.acquire_tries", "Redlock needs at least 1 try");
                }
                client.tries = tries.max(1);
            }
            client.drift_factor_ppm = drift_factor_ppm;
            client.elapsed_check = m.elapsed_check.unwrap_or(true);
            client.extend = match m.renew {
                RenewSpec::Bool(extend) => extend,
                RenewSpec::Mode(_) => {
                    r.problems.push(
                        "model.renew",
                        "the renewal modes are Redis's; Redlock takes true or false",
                    );
                    false
                }
            };
            client.value_as_token = m.fencing == FencingKind::Value;
            Family::Redlock {
                server,
                instances: instances.clamp(1, 99),
                client,
            }
        }
    };
    let w = &file.workload;
    if !(1..=1000).contains(&w.clients) {
        r.problems.push(
            "workload.clients",
            format!("must be between 1 and 1000, not {}", w.clients),
        );
    }
    let workload = WorkloadConfig {
        storage: None,
        think: r.dist("workload.think_ms", w.think_ms),
        work: r.dist("workload.work_ms", w.work_ms),
        check_validity_before_write: w.check_validity_before_write,
        storage_timeout: r.positive_ms("workload.storage_timeout_ms", w.storage_timeout_ms),
    };
    let mut storage = match file.storage.mode {
        StorageModeName::Unfenced => StorageMode::Unfenced,
        StorageModeName::FencedWrites => StorageMode::FencedWrites,
        StorageModeName::FencedAll => StorageMode::FencedAll,
        StorageModeName::CasToken => StorageMode::CasToken,
        StorageModeName::Etcd => StorageMode::Etcd(match file.storage.guard.unwrap_or_default() {
            GuardName::None => ResourceGuard::None,
            GuardName::KeyExists => ResourceGuard::KeyExists,
            GuardName::Owner => ResourceGuard::Owner,
        }),
    };
    if file.storage.guard.is_some() && file.storage.mode != StorageModeName::Etcd {
        r.problems.push(
            "storage.guard",
            "applies only with mode = \"etcd\" (the resource kept in etcd)",
        );
    }
    if file.storage.mode == StorageModeName::Etcd && m.kind != ModelKind::Etcd {
        r.problems.push(
            "storage.mode",
            format!(
                "\"etcd\" keeps the resource in etcd's key space and needs model.kind = \"etcd\", not \"{}\"",
                if m.kind == ModelKind::Redis {
                    "redis"
                } else {
                    "redlock"
                }
            ),
        );
        // A placeholder, so that the nodes can still be named for the other checks.
        storage = StorageMode::Unfenced;
    }
    match (storage, m.fencing) {
        (StorageMode::Etcd(_), _) | (StorageMode::Unfenced, _)
        | (
            StorageMode::FencedWrites | StorageMode::FencedAll,
            FencingKind::Incr | FencingKind::IncrAtomic | FencingKind::Revision | FencingKind::Czxid,
        )
        | (StorageMode::CasToken, FencingKind::Value) => {}
        (StorageMode::FencedWrites | StorageMode::FencedAll, FencingKind::Value) => {
            r.problems.push(
                "storage.mode",
                "fenced storage compares tokens by size, and Redlock's random values have no order (use \"cas-token\")",
            );
        }
        (StorageMode::CasToken, _) => r.problems.push(
            "storage.mode",
            "\"cas-token\" needs the lock's random value as the token (set model.fencing = \"value\", Redlock only)",
        ),
        (_, _) => r.problems.push(
            "storage.mode",
            "fenced storage needs fencing tokens, and this model sends none (set model.fencing = \"incr\", \"revision\" for etcd or \"czxid\" for ZooKeeper)",
        ),
    }
    SystemSpec {
        family,
        clients: w.clients.clamp(1, 1000),
        workload,
        storage,
    }
}

fn persistence(r: &mut Resolver, m: &ModelSection) -> Persistence {
    if m.save.is_some() && m.persistence != PersistenceName::Rdb {
        r.problems
            .push("model.save", "applies only with persistence = \"rdb\"");
    }
    match m.persistence {
        PersistenceName::None => Persistence::None,
        PersistenceName::AofEverysec => Persistence::AofEverysec,
        PersistenceName::AofAlways => Persistence::AofAlways,
        PersistenceName::Rdb => {
            let Some(points) = &m.save else {
                return Persistence::Rdb {
                    save: DEFAULT_SAVE_POINTS.to_vec(),
                };
            };
            if points.is_empty() {
                r.problems.push(
                    "model.save",
                    "needs at least one [seconds, changes] pair (persistence = \"none\" saves nothing)",
                );
            }
            let whole = |v: f64| v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 1e12;
            let save = points
                .iter()
                .enumerate()
                .map(|(i, &[seconds, changes])| {
                    if !whole(seconds) {
                        r.problems.push(
                            format!("model.save[{i}][0]"),
                            format!("seconds must be a whole number ≥ 0, not {seconds}"),
                        );
                    }
                    if !whole(changes) || changes < 1.0 {
                        r.problems.push(
                            format!("model.save[{i}][1]"),
                            format!("changes must be a whole number ≥ 1, not {changes}"),
                        );
                    }
                    SavePoint {
                        seconds: seconds.clamp(0.0, 1e12) as u64,
                        changes: changes.clamp(0.0, 1e12) as u64,
                    }
                })
                .collect();
            Persistence::Rdb { save }
        }
    }
}

/// Most replicas a scenario may ask for.
const MAX_REPLICAS: u32 = 16;
/// Most sentinels a scenario may ask for.
const MAX_SENTINELS: u32 = 15;

fn replicas(r: &mut Resolver, m: &ModelSection) -> u32 {
    if m.replicas > MAX_REPLICAS {
        r.problems.push(
            "model.replicas",
            format!("must be at most {MAX_REPLICAS}, not {}", m.replicas),
        );
        return 0;
    }
    m.replicas
}

fn replication_lag(r: &mut Resolver, m: &ModelSection) -> Distribution {
    match m.replication_lag_ms {
        None => Distribution::ZERO,
        Some(spec) => {
            if m.replicas == 0 {
                r.problems
                    .push("model.replication_lag_ms", "needs model.replicas ≥ 1");
            }
            r.dist("model.replication_lag_ms", spec)
        }
    }
}

/// Sentinels: 3 by default when there are replicas, none without.
fn sentinel(r: &mut Resolver, m: &ModelSection) -> Option<(u32, SentinelConfig)> {
    let count = m.sentinels.unwrap_or(if m.replicas > 0 { 3 } else { 0 });
    if count > MAX_SENTINELS {
        r.problems.push(
            "model.sentinels",
            format!("must be at most {MAX_SENTINELS}, not {count}"),
        );
        return None;
    }
    if count > 0 && m.replicas == 0 {
        r.problems.push(
            "model.sentinels",
            "Sentinel needs a replica to fail over to (set model.replicas ≥ 1)",
        );
    }
    if count == 0 {
        for (key, given) in [
            ("model.sentinel_quorum", m.sentinel_quorum.is_some()),
            ("model.down_after_ms", m.down_after_ms.is_some()),
            ("model.failover_timeout_ms", m.failover_timeout_ms.is_some()),
        ] {
            if given {
                r.problems.push(key, "applies only with sentinels");
            }
        }
        return None;
    }
    let quorum = m.sentinel_quorum.unwrap_or(count / 2 + 1);
    if !(1..=count).contains(&quorum) {
        r.problems.push(
            "model.sentinel_quorum",
            format!("must be between 1 and the number of sentinels ({count}), not {quorum}"),
        );
    }
    let down_after = m.down_after_ms.map_or(DEFAULT_DOWN_AFTER, |v| {
        r.positive_ms("model.down_after_ms", v)
    });
    let failover_timeout = m.failover_timeout_ms.map_or(DEFAULT_FAILOVER_TIMEOUT, |v| {
        r.positive_ms("model.failover_timeout_ms", v)
    });
    let config = SentinelConfig {
        servers: Vec::new(),
        sentinels: Vec::new(),
        quorum,
        down_after,
        failover_timeout,
    };
    Some((count, config))
}

fn wait(r: &mut Resolver, m: &ModelSection) -> Option<WaitConfig> {
    if m.wait_replicas == 0 {
        if m.wait_timeout_ms.is_some() {
            r.problems.push(
                "model.wait_timeout_ms",
                "applies only with model.wait_replicas ≥ 1",
            );
        }
        return None;
    }
    if m.wait_replicas > m.replicas {
        r.problems.push(
            "model.wait_replicas",
            format!(
                "cannot exceed model.replicas ({}), not {}",
                m.replicas, m.wait_replicas
            ),
        );
    }
    let timeout = r.ms(
        "model.wait_timeout_ms",
        m.wait_timeout_ms.unwrap_or(1_000.0),
    );
    Some(WaitConfig {
        replicas: m.wait_replicas,
        timeout,
    })
}

fn network(
    r: &mut Resolver,
    n: &NetworkSection,
) -> (LinkConfig, Vec<(NodeId, NodeId, LinkConfig)>) {
    let default = LinkConfig {
        latency: r.dist("network.latency_ms", n.latency_ms),
        loss_ppm: r.probability("network.loss", n.loss),
        duplicate_ppm: r.probability("network.duplicate", n.duplicate),
    };
    let mut links = Vec::new();
    for (i, l) in n.link.iter().enumerate() {
        let p = format!("network.link[{i}]");
        let from = r.nodes(&format!("{p}.from"), &l.from);
        let to = r.nodes(&format!("{p}.to"), &l.to);
        let config = LinkConfig {
            latency: l.latency_ms.map_or(default.latency.clone(), |d| {
                r.dist(&format!("{p}.latency_ms"), d)
            }),
            loss_ppm: l
                .loss
                .map_or(default.loss_ppm, |v| r.probability(&format!("{p}.loss"), v)),
            duplicate_ppm: l.duplicate.map_or(default.duplicate_ppm, |v| {
                r.probability(&format!("{p}.duplicate"), v)
            }),
        };
        for &a in &from {
            for &b in &to {
                if a != b {
                    links.push((a, b, config.clone()));
                }
            }
        }
    }
    (default, links)
}

fn clocks(r: &mut Resolver, sections: &[ClockSection]) -> Vec<NodeConfig> {
    let mut configs: Vec<NodeConfig> = r
        .names
        .iter()
        .map(|n| NodeConfig::named(n.clone()))
        .collect();
    for (i, c) in sections.iter().enumerate() {
        let p = format!("clock[{i}]");
        let drift = drift(r, &format!("{p}.drift_ppm"), c.drift_ppm);
        let offset = r.signed_ms(&format!("{p}.offset_ms"), c.offset_ms);
        if let Some(node) = r.node(&format!("{p}.node"), &c.node) {
            configs[node.index()].drift_ppm = drift;
            configs[node.index()].wall_offset_ns = offset;
        }
    }
    configs
}

fn drift(r: &mut Resolver, path: &str, ppm: i64) -> i64 {
    if ppm.abs() > MAX_DRIFT_PPM {
        r.problems.push(
            path,
            format!("must be within ±{MAX_DRIFT_PPM} ppm, not {ppm}"),
        );
        return 0;
    }
    ppm
}

fn fault(r: &mut Resolver, p: &str, f: &FaultSection, duration: Dur) -> Option<ScheduledFault> {
    let when = match (f.at_ms, &f.on) {
        (Some(at), None) => {
            let at = r.ms(&format!("{p}.at_ms"), at);
            if at > duration {
                r.problems.push(
                    format!("{p}.at_ms"),
                    format!(
                        "{} ms is after the end of the run (scenario.duration_ms = {})",
                        at.as_millis(),
                        duration.as_millis()
                    ),
                );
            }
            When::At(Time::from_nanos(at.as_nanos()))
        }
        (None, Some(on)) => {
            let node = r.node(&format!("{p}.on.node"), &on.node);
            if on.mark.trim().is_empty() {
                r.problems.push(format!("{p}.on.mark"), "must name a mark");
            }
            if on.occurrence == 0 {
                r.problems
                    .push(format!("{p}.on.occurrence"), "counts from 1");
            }
            // A lapse time at or after the end never applies, and is no error: a shrunk
            // run may end before its triggers would have lapsed.
            let before = on
                .before_ms
                .map(|v| Time::ZERO + r.ms(&format!("{p}.on.before_ms"), v));
            When::OnMark {
                node: node?,
                mark: on.mark.clone(),
                occurrence: on.occurrence,
                before,
            }
        }
        (Some(_), Some(_)) => {
            r.problems.push(p, "give either `at_ms` or `on`, not both");
            return None;
        }
        (None, None) => {
            r.problems
                .push(p, "needs a time (`at_ms`) or a trigger (`on`)");
            return None;
        }
    };
    let fault = fault_action(r, p, f)?;
    Some(ScheduledFault { when, fault })
}

fn fault_action(r: &mut Resolver, p: &str, f: &FaultSection) -> Option<Fault> {
    let given: Vec<&str> = [
        ("pause", f.pause.is_some()),
        ("resume", f.resume.is_some()),
        ("crash", f.crash.is_some()),
        ("restart", f.restart.is_some()),
        ("partition", f.partition.is_some()),
        ("heal", f.heal.is_some()),
        ("clock_step", f.clock_step.is_some()),
        ("clock_slew", f.clock_slew.is_some()),
        ("clock_drift", f.clock_drift.is_some()),
        ("delay", f.delay.is_some()),
        ("degrade", f.degrade.is_some()),
        ("clock_strobe", f.clock_strobe.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, present)| present.then_some(k))
    .collect();
    if given.len() != 1 {
        let msg = if given.is_empty() {
            "needs one action: pause, resume, crash, restart, partition, heal, clock_step, clock_slew, clock_drift, clock_strobe, delay or degrade".to_string()
        } else {
            format!(
                "has {} actions ({}); give one per [[fault]]",
                given.len(),
                given.join(", ")
            )
        };
        r.problems.push(p, msg);
        return None;
    }
    let opt_ms =
        |r: &mut Resolver, path: String, v: Option<f64>| v.map(|v| r.positive_ms(&path, v));
    if let Some(x) = &f.pause {
        let node = r.node(&format!("{p}.pause.node"), &x.node);
        let duration = opt_ms(r, format!("{p}.pause.for_ms"), x.for_ms);
        return Some(Fault::Pause {
            node: node?,
            duration,
        });
    }
    if let Some(x) = &f.resume {
        return Some(Fault::Resume {
            node: r.node(&format!("{p}.resume.node"), &x.node)?,
        });
    }
    if let Some(x) = &f.crash {
        let node = r.node(&format!("{p}.crash.node"), &x.node);
        let restart_after = x
            .restart_after_ms
            .map(|v| r.ms(&format!("{p}.crash.restart_after_ms"), v));
        return Some(Fault::Crash {
            node: node?,
            restart_after,
        });
    }
    if let Some(x) = &f.restart {
        return Some(Fault::Restart {
            node: r.node(&format!("{p}.restart.node"), &x.node)?,
        });
    }
    if let Some(x) = &f.partition {
        return partition(r, &format!("{p}.partition"), x);
    }
    if let Some(heal) = f.heal {
        if !heal {
            r.problems.push(format!("{p}.heal"), "write `heal = true`");
        }
        return Some(Fault::Heal);
    }
    if let Some(x) = &f.clock_step {
        let node = r.node(&format!("{p}.clock_step.node"), &x.node);
        let delta_ns = r.signed_ms(&format!("{p}.clock_step.delta_ms"), x.delta_ms);
        return Some(Fault::ClockStep {
            node: node?,
            delta_ns,
        });
    }
    if let Some(x) = &f.clock_slew {
        let node = r.node(&format!("{p}.clock_slew.node"), &x.node);
        let delta_ns = r.signed_ms(&format!("{p}.clock_slew.delta_ms"), x.delta_ms);
        if x.rate_ppm == 0 || i64::from(x.rate_ppm) > MAX_SLEW_PPM {
            r.problems.push(
                format!("{p}.clock_slew.rate_ppm"),
                format!("must be between 1 and {MAX_SLEW_PPM}"),
            );
            return None;
        }
        return Some(Fault::ClockSlew {
            node: node?,
            delta_ns,
            rate_ppm: x.rate_ppm,
        });
    }
    if let Some(x) = &f.clock_drift {
        let node = r.node(&format!("{p}.clock_drift.node"), &x.node);
        let drift_ppm = drift(r, &format!("{p}.clock_drift.drift_ppm"), x.drift_ppm);
        return Some(Fault::ClockDrift {
            node: node?,
            drift_ppm,
        });
    }
    if let Some(x) = &f.clock_strobe {
        return clock_strobe(r, &format!("{p}.clock_strobe"), x);
    }
    if let Some(x) = &f.degrade {
        let from = r.nodes(&format!("{p}.degrade.from"), &x.from);
        let to = r.nodes(&format!("{p}.degrade.to"), &x.to);
        let loss_ppm = r.probability(&format!("{p}.degrade.loss"), x.loss);
        let duplicate_ppm = r.probability(&format!("{p}.degrade.duplicate"), x.duplicate);
        if x.loss == 0.0 && x.duplicate == 0.0 {
            r.problems.push(
                format!("{p}.degrade"),
                "changes nothing: give `loss` or `duplicate` above 0",
            );
        }
        let duration = opt_ms(r, format!("{p}.degrade.for_ms"), x.for_ms);
        return Some(Fault::Degrade {
            from,
            to,
            loss_ppm,
            duplicate_ppm,
            duration,
        });
    }
    let x = f.delay.as_ref().expect("one action is given");
    let from = r.nodes(&format!("{p}.delay.from"), &x.from);
    let to = r.nodes(&format!("{p}.delay.to"), &x.to);
    let extra = r.positive_ms(&format!("{p}.delay.extra_ms"), x.extra_ms);
    let duration = opt_ms(r, format!("{p}.delay.for_ms"), x.for_ms);
    Some(Fault::Delay {
        from,
        to,
        extra,
        duration,
    })
}

/// A clock strobe at key path `p`: a non-zero step, a positive period and length, and no more
/// than [`MAX_STROBE_STEPS`] steps.
fn clock_strobe(r: &mut Resolver, p: &str, x: &ClockStrobeSection) -> Option<Fault> {
    let node = r.node(&format!("{p}.node"), &x.node);
    let delta_ns = r.signed_ms(&format!("{p}.delta_ms"), x.delta_ms);
    if delta_ns == 0 && x.delta_ms.is_finite() {
        r.problems.push(
            format!("{p}.delta_ms"),
            format!(
                "must not be 0 (at least a nanosecond either way), not {}",
                x.delta_ms
            ),
        );
    }
    // Positive, and still so in whole nanoseconds.
    let mut at_least_1ns = |key: &str, v: f64| {
        let path = format!("{p}.{key}");
        let d = r.positive_ms(&path, v);
        if d == Dur::ZERO && v > 0.0 && v <= MAX_MS {
            r.problems.push(path, "must be at least a nanosecond");
        }
        d
    };
    let period = at_least_1ns("period_ms", x.period_ms);
    let duration = at_least_1ns("for_ms", x.for_ms);
    if period == Dur::ZERO || duration == Dur::ZERO {
        return None; // The problem is noted.
    }
    // Steps at every whole period before the end, plus one back if that count is odd.
    let steps = duration.as_nanos().div_ceil(period.as_nanos());
    let steps = steps + steps % 2;
    if steps > MAX_STROBE_STEPS {
        r.problems.push(
            p,
            format!(
                "takes {steps} steps ({} ms every {} ms); at most {MAX_STROBE_STEPS}: \
                 lengthen period_ms or shorten for_ms",
                x.for_ms, x.period_ms
            ),
        );
        return None;
    }
    Some(Fault::ClockStrobe {
        node: node?,
        delta_ns,
        period,
        duration,
    })
}

fn partition(r: &mut Resolver, p: &str, x: &PartitionSection) -> Option<Fault> {
    let shapes = [
        x.isolate.is_some(),
        x.groups.is_some(),
        x.from.is_some() || x.to.is_some(),
        x.majority_minority.is_some(),
        x.bridge.is_some(),
        x.majorities_ring.is_some(),
    ];
    if shapes.iter().filter(|&&b| b).count() != 1 {
        r.problems.push(
            p,
            "needs exactly one shape: isolate, groups, from + to (one-way), majority_minority, bridge or majorities_ring",
        );
        return None;
    }
    let at_least = |r: &mut Resolver, path: String, nodes: Vec<NodeId>, n: usize| {
        if nodes.len() < n {
            r.problems
                .push(path, format!("needs at least {n} distinct nodes"));
        }
        nodes
    };
    let shape = if let Some(name) = &x.isolate {
        Shape::Isolate {
            node: r.node(&format!("{p}.isolate"), name)?,
        }
    } else if let Some(groups) = &x.groups {
        let groups: Vec<Vec<NodeId>> = groups
            .iter()
            .enumerate()
            .map(|(i, g)| r.nodes(&format!("{p}.groups[{i}]"), g))
            .collect();
        if groups.len() < 2 {
            r.problems
                .push(format!("{p}.groups"), "needs at least two groups");
        }
        Shape::Split { groups }
    } else if let (Some(from), Some(to)) = (&x.from, &x.to) {
        Shape::OneWay {
            from: r.nodes(&format!("{p}.from"), from),
            to: r.nodes(&format!("{p}.to"), to),
        }
    } else if x.from.is_some() || x.to.is_some() {
        r.problems
            .push(p, "a one-way partition needs both `from` and `to`");
        return None;
    } else if let Some(names) = &x.majority_minority {
        let path = format!("{p}.majority_minority");
        let nodes = r.nodes(&path, names);
        Shape::MajorityMinority {
            nodes: at_least(r, path, nodes, 2),
        }
    } else if let Some(names) = &x.bridge {
        let path = format!("{p}.bridge");
        let nodes = r.nodes(&path, names);
        Shape::Bridge {
            nodes: at_least(r, path, nodes, 3),
        }
    } else {
        let path = format!("{p}.majorities_ring");
        let nodes = r.nodes(&path, x.majorities_ring.as_ref().expect("one shape"));
        Shape::MajoritiesRing {
            nodes: at_least(r, path, nodes, 3),
        }
    };
    let mode = match x.mode {
        ModeName::Drop => PartitionMode::Drop,
        ModeName::Hold => PartitionMode::Hold,
    };
    let duration = x.for_ms.map(|v| r.positive_ms(&format!("{p}.for_ms"), v));
    Some(Fault::Partition {
        shape,
        mode,
        duration,
    })
}

fn expect(e: &ExpectSection) -> Expect {
    let property = match e.property {
        PropertyName::Resource => Property::Resource,
        PropertyName::MutualExclusion => Property::MutualExclusion,
    };
    let verdict = match e.verdict {
        None | Some(VerdictName::Valid) => Some(Validity::Valid),
        Some(VerdictName::Invalid) => Some(Validity::Invalid),
        Some(VerdictName::Unknown) => Some(Validity::Unknown),
        Some(VerdictName::Any) => None,
    };
    let bounds = [
        (Count::DoubleHolders, e.double_holders),
        (Count::StaleAccepted, e.stale_accepted),
        (Count::StaleRejected, e.stale_rejected),
        (Count::LostUpdates, e.lost_updates),
        (Count::TokenOrder, e.token_order),
        (Count::Grants, e.grants),
    ]
    .into_iter()
    .filter_map(|(c, b)| b.map(|b| (c, b.min, b.max)))
    .collect();
    Expect {
        property,
        verdict,
        bounds,
        recovery: None,
    }
}

fn clock_kind(c: ClockName) -> ClockKind {
    match c {
        ClockName::Wall => ClockKind::Wall,
        ClockName::Mono => ClockKind::Mono,
    }
}

/// Reports every model key given for a family that does not take it, and a fencing token
/// that is another family's.
fn family_keys(r: &mut Resolver, m: &ModelSection) {
    use ModelKind::{Etcd, Redis, Redlock, ZooKeeper};
    let keys: [(&str, bool, &[ModelKind]); 31] = [
        ("model.release", m.release.is_some(), &[Redis]),
        ("model.replicas", m.replicas != 0, &[Redis]),
        ("model.sentinels", m.sentinels.is_some(), &[Redis]),
        (
            "model.sentinel_quorum",
            m.sentinel_quorum.is_some(),
            &[Redis],
        ),
        ("model.down_after_ms", m.down_after_ms.is_some(), &[Redis]),
        (
            "model.failover_timeout_ms",
            m.failover_timeout_ms.is_some(),
            &[Redis],
        ),
        ("model.wait_replicas", m.wait_replicas != 0, &[Redis]),
        (
            "model.wait_timeout_ms",
            m.wait_timeout_ms.is_some(),
            &[Redis],
        ),
        ("model.instances", m.instances.is_some(), &[Redlock]),
        ("model.flavour", m.flavour.is_some(), &[Redlock]),
        ("model.clock", m.clock.is_some(), &[Redlock]),
        ("model.elapsed_check", m.elapsed_check.is_some(), &[Redlock]),
        (
            "model.retry_delay_ms",
            m.retry_delay_ms.is_some(),
            &[Redis, Redlock],
        ),
        (
            "model.acquire_tries",
            m.acquire_tries.is_some(),
            &[Redis, Redlock],
        ),
        (
            "model.persistence",
            m.persistence != PersistenceName::None,
            &[Redis, Redlock],
        ),
        (
            "model.renew",
            m.renew != RenewSpec::Bool(false),
            &[Redis, Redlock],
        ),
        (
            "model.request_timeout_ms",
            m.request_timeout_ms.is_some(),
            &[Redis, Redlock, Etcd],
        ),
        ("model.members", m.members.is_some(), &[Etcd, ZooKeeper]),
        ("model.tick_ms", m.tick_ms.is_some(), &[Etcd, ZooKeeper]),
        ("model.recipe", m.recipe.is_some(), &[Etcd]),
        (
            "model.recheck_after_wait",
            m.recheck_after_wait.is_some(),
            &[Etcd],
        ),
        ("model.reads", m.reads.is_some(), &[Etcd]),
        ("model.checkpoint_ms", m.checkpoint_ms.is_some(), &[Etcd]),
        ("model.election_ms", m.election_ms.is_some(), &[Etcd]),
        (
            "model.stop_on_session_done",
            m.stop_on_session_done.is_some(),
            &[Etcd],
        ),
        ("model.sync_limit", m.sync_limit.is_some(), &[ZooKeeper]),
        (
            "model.min_session_timeout_ms",
            m.min_session_timeout_ms.is_some(),
            &[ZooKeeper],
        ),
        (
            "model.max_session_timeout_ms",
            m.max_session_timeout_ms.is_some(),
            &[ZooKeeper],
        ),
        ("model.stop_work_on", m.stop_work_on.is_some(), &[ZooKeeper]),
        ("model.watch", m.watch.is_some(), &[ZooKeeper]),
        ("model.protection", m.protection.is_some(), &[ZooKeeper]),
    ];
    let kind = kind_name(m.kind);
    for (key, given, kinds) in keys {
        if given && !kinds.contains(&m.kind) {
            let names: Vec<String> = kinds
                .iter()
                .map(|&k| format!("\"{}\"", kind_name(k)))
                .collect();
            let takers = match names.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => unreachable!("every key names its families"),
            };
            r.problems.push(
                key,
                format!("applies to kind = {takers} only, not to \"{kind}\""),
            );
        }
    }
    let foreign = match (m.kind, m.fencing) {
        (_, FencingKind::None)
        | (Redis, FencingKind::Incr | FencingKind::IncrAtomic)
        | (Redlock, FencingKind::Value)
        | (Etcd, FencingKind::Revision)
        | (ZooKeeper, FencingKind::Czxid) => None,
        (ZooKeeper, _) => {
            Some("ZooKeeper's fencing token is the lock node's creation zxid: \"czxid\"")
        }
        (_, FencingKind::Czxid) => {
            Some("\"czxid\" is ZooKeeper's token (the lock node's creation zxid)")
        }
        (Etcd, _) => Some("etcd's fencing token is the lock key's create revision: \"revision\""),
        (_, FencingKind::Revision) => {
            Some("\"revision\" is etcd's token (the lock key's create revision)")
        }
        (Redis, _) => {
            Some("\"value\" is Redlock's random value; a single Redis instance takes \"incr\"")
        }
        (Redlock, _) => {
            Some("Redlock has no counter to INCR; \"value\" hands its random value to the storage")
        }
    };
    if let Some(problem) = foreign {
        r.problems.push("model.fencing", problem);
    }
}

fn kind_name(kind: ModelKind) -> &'static str {
    match kind {
        ModelKind::Redis => "redis",
        ModelKind::Redlock => "redlock",
        ModelKind::Etcd => "etcd",
        ModelKind::ZooKeeper => "zookeeper",
    }
}

/// The ZooKeeper family: an ensemble and Curator clients running the lock recipe
/// (docs/scenarios.md).
fn zookeeper(r: &mut Resolver, m: &ModelSection, ttl: Dur) -> Family {
    let members = m.members.unwrap_or(3);
    if !(1..=9).contains(&members) {
        r.problems.push(
            "model.members",
            format!("must be between 1 and 9, not {members}"),
        );
    }
    let tick = r.positive_ms("model.tick_ms", m.tick_ms.unwrap_or(2_000.0));
    let mut server = ZkServerConfig::with_tick(Vec::new(), tick);
    let sync_limit = m.sync_limit.unwrap_or(5);
    if !(1..=100).contains(&sync_limit) {
        r.problems.push(
            "model.sync_limit",
            format!("must be between 1 and 100 ticks, not {sync_limit}"),
        );
    }
    server.sync_limit = sync_limit.clamp(1, 100);
    if let Some(v) = m.min_session_timeout_ms {
        server.min_session_timeout = r.positive_ms("model.min_session_timeout_ms", v);
    }
    if let Some(v) = m.max_session_timeout_ms {
        server.max_session_timeout = r.positive_ms("model.max_session_timeout_ms", v);
    }
    if server.min_session_timeout > server.max_session_timeout {
        r.problems.push(
            "model.max_session_timeout_ms",
            format!(
                "must not be below the minimum session timeout ({})",
                server.min_session_timeout
            ),
        );
    }
    let mut client = ZkLockConfig::new(Vec::new());
    client.session_timeout = ttl;
    client.stop_work_on = match m.stop_work_on.unwrap_or_default() {
        StopWorkOnName::Never => StopWorkOn::Never,
        StopWorkOnName::Lost => StopWorkOn::Lost,
        StopWorkOnName::Suspended => StopWorkOn::Suspended,
    };
    client.recipe = match m.watch.unwrap_or_default() {
        WatchName::Predecessor => ZkRecipe::Predecessor,
        WatchName::Parent => ZkRecipe::Herd,
    };
    client.protection = match m.protection.unwrap_or_default() {
        ProtectionName::Guid => Protection::Guid,
        ProtectionName::GuidAndSession => Protection::GuidAndSession,
    };
    client.fencing = m.fencing == FencingKind::Czxid;
    Family::ZooKeeper {
        server,
        members: members.clamp(1, 9),
        client,
    }
}

/// The etcd family: a raft cluster and session/Mutex clients (docs/scenarios.md).
fn etcd(r: &mut Resolver, m: &ModelSection, ttl: Dur) -> Family {
    let members = m.members.unwrap_or(3);
    if !(1..=9).contains(&members) {
        r.problems.push(
            "model.members",
            format!("must be between 1 and 9, not {members}"),
        );
    }
    let tick = r.positive_ms("model.tick_ms", m.tick_ms.unwrap_or(100.0));
    let election = r.positive_ms("model.election_ms", m.election_ms.unwrap_or(1_000.0));
    let mut election_ticks = 10;
    if tick != Dur::ZERO && election != Dur::ZERO {
        let ticks = election.as_nanos() / tick.as_nanos();
        if ticks < 2 || election.as_nanos() % tick.as_nanos() != 0 {
            r.problems.push(
                "model.election_ms",
                format!("must be a whole number of ticks ({tick}), at least two, not {election}"),
            );
        } else {
            election_ticks = u32::try_from(ticks).unwrap_or(u32::MAX);
        }
    }
    let mut server = EtcdServerConfig::new(Vec::new());
    server.tick = tick;
    server.election_ticks = election_ticks;
    server.read_only = match m.reads.unwrap_or_default() {
        ReadsName::ReadIndex => ReadOnlyOption::Safe,
        ReadsName::Lease => ReadOnlyOption::LeaseBased,
    };
    server.checkpoint = m
        .checkpoint_ms
        .map(|v| r.positive_ms("model.checkpoint_ms", v));
    let mut client = EtcdLockConfig::new(Vec::new());
    client.ttl = ttl;
    client.recipe = match m.recipe.unwrap_or_default() {
        RecipeName::Mutex => Recipe::Mutex,
        RecipeName::Election => Recipe::Election,
    };
    client.recheck_after_wait = m.recheck_after_wait.unwrap_or(true);
    if let Some(t) = m.request_timeout_ms {
        client.request_timeout = r.positive_ms("model.request_timeout_ms", t);
    }
    client.fencing = m.fencing == FencingKind::Revision;
    client.stop_on_done = m.stop_on_session_done.unwrap_or(true);
    Family::Etcd {
        server,
        members: members.clamp(1, 9),
        client,
    }
}
