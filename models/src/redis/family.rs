//! The Redis family: one instance, or a primary with asynchronous replicas watched by
//! sentinels or not, and clients running the `SET NX PX` lock (docs/scenarios.md, `redis`).
//!
//! Names: a single instance is `redis`; with replicas the servers are `redis-1` (the primary
//! at start), `redis-2`, ...; sentinels are `sentinel-1`, ... (group `sentinels`).

use lockstep_sim::{ClockKind, Distribution, Dur, NodeId};
use serde::Deserialize;

use super::persistence::DEFAULT_SAVE_POINTS;
use super::sentinel::{DEFAULT_DOWN_AFTER, DEFAULT_FAILOVER_TIMEOUT};
use super::{
    CrashLoses, Msg, Persistence, RedisLock, RedisLockConfig, RedisNode, RedisServer,
    RedisServerConfig, Release, Renew, SavePoint, Sentinel, SentinelConfig, Timer, WaitConfig,
};
use crate::family::{numbered, Family, Fencing, Role, Tokens};
use crate::keys::{Check, ClockName, DistSpec, MAX_MS, NoKeys};
use crate::lock::NoResource;

/// The Redis family's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redis {
    /// Every server's settings (`replica_of` is overwritten).
    pub server: RedisServerConfig,
    /// Every client's lock settings (`server` and `sentinels` are overwritten).
    pub client: RedisLockConfig,
    /// Replicas of the primary; 0 is a single instance.
    pub replicas: u32,
    /// The sentinels' settings (`servers` and `sentinels` are overwritten), and how many.
    pub sentinel: Option<(u32, SentinelConfig)>,
}

/// The sentinels' node group.
const SENTINELS: &str = "sentinels";

/// Most replicas a scenario may ask for.
const MAX_REPLICAS: u32 = 16;
/// Most sentinels a scenario may ask for.
const MAX_SENTINELS: u32 = 15;
/// Longest `save` interval, in seconds: the longest duration a file may give.
const MAX_SAVE_SECONDS: f64 = MAX_MS / 1000.0;
/// Most changes a `save` point may wait for.
const MAX_SAVE_CHANGES: f64 = 1e12;
/// Most attempts an acquisition may be given (`acquire_tries`; 0 is without end).
pub(crate) const MAX_TRIES: u32 = 1_000_000;

/// The `[model]` keys of `kind = "redis"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisKeys {
    kind: String,
    ttl_ms: f64,
    #[serde(default)]
    release: ReleaseName,
    #[serde(default)]
    renew: RenewSpec,
    #[serde(default)]
    fencing: RedisFencing,
    #[serde(default)]
    expiry_clock: ClockName,
    request_timeout_ms: Option<f64>,
    retry_delay_ms: Option<DistSpec>,
    acquire_tries: Option<u32>,
    #[serde(default = "default_drift_factor")]
    drift_factor: f64,
    #[serde(default)]
    persistence: PersistenceName,
    save: Option<Vec<[f64; 2]>>,
    #[serde(default)]
    crash_loses: CrashLosesName,
    #[serde(default)]
    restart_delay_ms: f64,
    #[serde(default)]
    replicas: u32,
    replication_lag_ms: Option<DistSpec>,
    sentinels: Option<u32>,
    sentinel_quorum: Option<u32>,
    down_after_ms: Option<f64>,
    failover_timeout_ms: Option<f64>,
    #[serde(default)]
    wait_replicas: u32,
    wait_timeout_ms: Option<f64>,
}

/// The keys of a Redis server's persistence and restarts, which Redlock's instances take too.
#[derive(Debug)]
pub(crate) struct ServerKeys<'a> {
    pub(crate) persistence: PersistenceName,
    pub(crate) save: Option<&'a [[f64; 2]]>,
    pub(crate) crash_loses: CrashLosesName,
    pub(crate) restart_delay_ms: f64,
}

pub(crate) fn default_drift_factor() -> f64 {
    0.01
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ReleaseName {
    #[default]
    CompareAndDelete,
    Del,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RedisFencing {
    #[default]
    None,
    Incr,
    IncrAtomic,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PersistenceName {
    #[default]
    None,
    Rdb,
    AofEverysec,
    AofAlways,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum CrashLosesName {
    #[default]
    Process,
    Power,
}

/// `renew`: `true` or `false`, or a Redis renewal mode by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenewSpec {
    Bool(bool),
    Mode(RenewModeName),
}

impl Default for RenewSpec {
    fn default() -> RenewSpec {
        RenewSpec::Bool(false)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RenewModeName {
    UntilRefused,
    Watchdog,
}

impl<'de> Deserialize<'de> for RenewSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RenewSpec, D::Error> {
        use serde::de::{self, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RenewSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("true, false, \"until-refused\" or \"watchdog\"")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RenewSpec, E> {
                Ok(RenewSpec::Bool(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RenewSpec, E> {
                use de::IntoDeserializer;
                RenewModeName::deserialize(v.into_deserializer()).map(RenewSpec::Mode)
            }
        }
        d.deserialize_any(V)
    }
}

/// The drift allowance in ppm of the TTL, checked.
pub(crate) fn drift_factor_ppm(check: &mut Check, factor: f64) -> u32 {
    if !(0.0..1.0).contains(&factor) {
        check.problems.push(
            "model.drift_factor",
            format!("must be at least 0 and below 1, not {factor}"),
        );
    }
    (factor.clamp(0.0, 1.0) * 1e6).round() as u32
}

impl ServerKeys<'_> {
    /// A server's settings from its keys; `replication_lag` comes from the caller.
    pub(crate) fn resolve(
        &self,
        check: &mut Check,
        expiry_clock: ClockName,
        replication_lag: Distribution,
    ) -> RedisServerConfig {
        RedisServerConfig {
            expiry_clock: expiry_clock.kind(),
            persistence: self.persistence(check),
            crash_loses: match self.crash_loses {
                CrashLosesName::Process => CrashLoses::Process,
                CrashLosesName::Power => CrashLoses::Power,
            },
            restart_delay: check.ms("model.restart_delay_ms", self.restart_delay_ms),
            replica_of: None,
            replication_lag,
        }
    }

    fn persistence(&self, check: &mut Check) -> Persistence {
        if self.save.is_some() && self.persistence != PersistenceName::Rdb {
            check
                .problems
                .push("model.save", "applies only with persistence = \"rdb\"");
        }
        match self.persistence {
            PersistenceName::None => Persistence::None,
            PersistenceName::AofEverysec => Persistence::AofEverysec,
            PersistenceName::AofAlways => Persistence::AofAlways,
            PersistenceName::Rdb => {
                let Some(points) = self.save else {
                    return Persistence::Rdb {
                        save: DEFAULT_SAVE_POINTS.to_vec(),
                    };
                };
                if points.is_empty() {
                    check.problems.push(
                        "model.save",
                        "needs at least one [seconds, changes] pair (persistence = \"none\" saves nothing)",
                    );
                }
                let whole = |v: f64| v.is_finite() && v.fract() == 0.0;
                let save = points
                    .iter()
                    .enumerate()
                    .map(|(i, &[seconds, changes])| {
                        if !whole(seconds) || !(0.0..=MAX_SAVE_SECONDS).contains(&seconds) {
                            check.problems.push(
                                format!("model.save[{i}][0]"),
                                format!(
                                    "seconds must be a whole number from 0 to {MAX_SAVE_SECONDS}, not {seconds}"
                                ),
                            );
                        }
                        if !whole(changes) || !(1.0..=MAX_SAVE_CHANGES).contains(&changes) {
                            check.problems.push(
                                format!("model.save[{i}][1]"),
                                format!(
                                    "changes must be a whole number from 1 to {MAX_SAVE_CHANGES}, not {changes}"
                                ),
                            );
                        }
                        SavePoint {
                            seconds: seconds.clamp(0.0, MAX_SAVE_SECONDS) as u64,
                            changes: changes.clamp(1.0, MAX_SAVE_CHANGES) as u64,
                        }
                    })
                    .collect();
                Persistence::Rdb { save }
            }
        }
    }
}

/// A Redis server's settings that differ from a plain in-memory instance, for reports.
pub(crate) fn describe_server(server: &RedisServerConfig) -> Vec<String> {
    let mut p = Vec::new();
    match &server.persistence {
        Persistence::None => {}
        Persistence::Rdb { .. } => p.push("RDB".to_string()),
        Persistence::AofEverysec => p.push("AOF everysec".to_string()),
        Persistence::AofAlways => p.push("AOF always".to_string()),
    }
    if server.expiry_clock == ClockKind::Mono {
        p.push("monotonic expiry".to_string());
    }
    if server.restart_delay > Dur::ZERO {
        p.push(format!("restart after {}", server.restart_delay));
    }
    p
}

impl RedisKeys {
    fn replicas(&self, check: &mut Check) -> u32 {
        if self.replicas > MAX_REPLICAS {
            check.problems.push(
                "model.replicas",
                format!("must be between 0 and {MAX_REPLICAS}, not {}", self.replicas),
            );
            return 0;
        }
        self.replicas
    }

    fn replication_lag(&self, check: &mut Check) -> Distribution {
        match self.replication_lag_ms {
            None => Distribution::ZERO,
            Some(spec) => {
                if self.replicas == 0 {
                    check
                        .problems
                        .push("model.replication_lag_ms", "needs model.replicas ≥ 1");
                }
                check.dist("model.replication_lag_ms", spec)
            }
        }
    }

    /// Sentinels: 3 by default when there are replicas, none without.
    fn sentinel(&self, check: &mut Check) -> Option<(u32, SentinelConfig)> {
        let count = self
            .sentinels
            .unwrap_or(if self.replicas > 0 { 3 } else { 0 });
        if count > MAX_SENTINELS {
            check.problems.push(
                "model.sentinels",
                format!("must be between 0 and {MAX_SENTINELS}, not {count}"),
            );
            return None;
        }
        if count > 0 && self.replicas == 0 {
            check.problems.push(
                "model.sentinels",
                "Sentinel needs a replica to fail over to (set model.replicas ≥ 1)",
            );
        }
        if count == 0 {
            for (key, given) in [
                ("model.sentinel_quorum", self.sentinel_quorum.is_some()),
                ("model.down_after_ms", self.down_after_ms.is_some()),
                (
                    "model.failover_timeout_ms",
                    self.failover_timeout_ms.is_some(),
                ),
            ] {
                if given {
                    check.problems.push(key, "applies only with sentinels");
                }
            }
            return None;
        }
        let quorum = self.sentinel_quorum.unwrap_or(count / 2 + 1);
        if !(1..=count).contains(&quorum) {
            check.problems.push(
                "model.sentinel_quorum",
                format!("must be between 1 and the number of sentinels ({count}), not {quorum}"),
            );
        }
        let down_after = self.down_after_ms.map_or(DEFAULT_DOWN_AFTER, |v| {
            check.positive_ms("model.down_after_ms", v)
        });
        let failover_timeout = self
            .failover_timeout_ms
            .map_or(DEFAULT_FAILOVER_TIMEOUT, |v| {
                check.positive_ms("model.failover_timeout_ms", v)
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

    fn wait(&self, check: &mut Check) -> Option<WaitConfig> {
        if self.wait_replicas == 0 {
            if self.wait_timeout_ms.is_some() {
                check.problems.push(
                    "model.wait_timeout_ms",
                    "applies only with model.wait_replicas ≥ 1",
                );
            }
            return None;
        }
        if self.wait_replicas > self.replicas {
            check.problems.push(
                "model.wait_replicas",
                format!(
                    "cannot exceed model.replicas ({}), not {}",
                    self.replicas, self.wait_replicas
                ),
            );
        }
        let timeout = check.ms(
            "model.wait_timeout_ms",
            self.wait_timeout_ms.unwrap_or(1_000.0),
        );
        Some(WaitConfig {
            replicas: self.wait_replicas,
            timeout,
        })
    }
}

impl Family for Redis {
    const KIND: &'static str = "redis";
    const NAME: &'static str = "Redis";
    const FENCING: &'static [Fencing] = &[
        Fencing {
            name: "incr",
            what: "a counter `INCR`ed after the `SET NX`",
            ordered: true,
        },
        Fencing {
            name: "incr-atomic",
            what: "a counter `INCR`ed in the `SET NX`'s own script",
            ordered: true,
        },
    ];

    type Msg = Msg;
    type Timer = Timer;
    type Node = RedisNode;
    type Lock = RedisLock;
    type Keys = RedisKeys;
    type ResourceKeys = NoKeys;

    fn resolve(k: &RedisKeys, check: &mut Check) -> Redis {
        debug_assert_eq!(k.kind, Self::KIND);
        let ttl = check.positive_ms("model.ttl_ms", k.ttl_ms);
        let drift_factor_ppm = drift_factor_ppm(check, k.drift_factor);
        let lag = k.replication_lag(check);
        let server = ServerKeys {
            persistence: k.persistence,
            save: k.save.as_deref(),
            crash_loses: k.crash_loses,
            restart_delay_ms: k.restart_delay_ms,
        }
        .resolve(check, k.expiry_clock, lag);
        if k.expiry_clock == ClockName::Mono && k.replicas > 0 {
            check.problems.push(
                "model.expiry_clock",
                "\"mono\" cannot replicate: a deadline on one server's monotonic clock means nothing on another's (Redis propagates absolute wall-clock deadlines)",
            );
        }
        let replicas = k.replicas(check);
        let sentinel = k.sentinel(check);
        let client = RedisLockConfig {
            server: NodeId(0),
            sentinels: Vec::new(),
            wait: k.wait(check),
            ttl,
            release: match k.release {
                ReleaseName::CompareAndDelete => Release::CompareAndDelete,
                ReleaseName::Del => Release::Del,
            },
            renew: match k.renew {
                RenewSpec::Bool(false) => Renew::Off,
                RenewSpec::Bool(true) | RenewSpec::Mode(RenewModeName::UntilRefused) => {
                    Renew::UntilRefused
                }
                RenewSpec::Mode(RenewModeName::Watchdog) => Renew::Watchdog,
            },
            fencing: k.fencing != RedisFencing::None,
            fence_atomically: k.fencing == RedisFencing::IncrAtomic,
            request_timeout: check.positive_ms(
                "model.request_timeout_ms",
                k.request_timeout_ms.unwrap_or(500.0),
            ),
            retry_delay: check.dist(
                "model.retry_delay_ms",
                k.retry_delay_ms.unwrap_or(DistSpec::Uniform(50.0, 250.0)),
            ),
            acquire_tries: check.count("model.acquire_tries", k.acquire_tries.unwrap_or(0), 0, MAX_TRIES),
            drift_factor_ppm,
            count_requests: false,
        };
        Redis {
            server,
            client,
            replicas,
            sentinel,
        }
    }

    fn resource(_: &NoKeys, _: &mut Check) -> Option<NoResource> {
        None
    }

    fn layout(&self) -> Vec<(String, Role)> {
        let mut nodes: Vec<(String, Role)> = (1..=self.replicas + 1)
            .map(|i| {
                let name = if self.replicas == 0 {
                    "redis".to_string()
                } else {
                    format!("redis-{i}")
                };
                (name, Role::Server)
            })
            .collect();
        let sentinels = self.sentinel.as_ref().map_or(0, |(n, _)| *n);
        let role = Role::Coordinator { group: SENTINELS };
        nodes.extend(numbered("sentinel", sentinels, role));
        nodes
    }

    fn played(&self) -> &'static [&'static str] {
        &[crate::family::played::PRIMARY]
    }

    fn groups(&self) -> &'static [&'static str] {
        &[SENTINELS]
    }

    fn build(&self, _: Option<&NoResource>) -> (Vec<RedisNode>, RedisLock) {
        let primary = NodeId(0);
        let mut nodes: Vec<RedisNode> = (0..=self.replicas)
            .map(|i| {
                RedisNode::Server(RedisServer::new(RedisServerConfig {
                    replica_of: (i > 0).then_some(primary),
                    ..self.server.clone()
                }))
            })
            .collect();
        let servers: Vec<NodeId> = (0..=self.replicas).map(NodeId).collect();
        let mut sentinels = Vec::new();
        if let Some((count, config)) = &self.sentinel {
            let first = nodes.len() as u32;
            sentinels = (first..first + count).map(NodeId).collect();
            for _ in 0..*count {
                nodes.push(RedisNode::Sentinel(Sentinel::new(SentinelConfig {
                    servers: servers.clone(),
                    sentinels: sentinels.clone(),
                    ..config.clone()
                })));
            }
        }
        let lock = RedisLock::new(RedisLockConfig {
            server: primary,
            sentinels,
            ..self.client.clone()
        });
        (nodes, lock)
    }

    fn tokens(&self) -> Tokens {
        // `INCR` tokens increase on one instance with no failover, but the promise is not the
        // lock's: the counter sits outside the lock primitive.
        if self.client.fencing {
            Tokens::Ordered { monotonic: false }
        } else {
            Tokens::None
        }
    }

    fn ttl(&self) -> Dur {
        self.client.ttl
    }

    /// One `SET NX` attempt (`acquire_tries = 1`).
    fn count_requests(&mut self) -> bool {
        self.client.count_requests = true;
        true
    }

    fn try_once(&mut self) -> bool {
        self.client.acquire_tries = 1;
        true
    }

    fn lapses(&self) -> Option<&'static str> {
        (self.client.renew == Renew::Off).then_some(
            "its key expires ttl_ms after the grant, as nothing renews it: set model.renew = \
             true (renewed until refused) or \"watchdog\" (Redisson's)",
        )
    }

    /// redis-py's `Lock` taken again: not re-entrant. A renewing client is Redisson's, whose
    /// `RLock` counts re-entries in its hash: not modelled.
    fn reentry(&self) -> Option<&'static str> {
        (self.client.renew == Renew::Off).then_some(
            "not re-entrant (redis-py's Lock): a nested acquire draws a new token and waits for \
             the held key to expire",
        )
    }

    /// Redisson's `RReadWriteLock` ([`super::rwlock`]), modelled on a single instance without
    /// persistence, `WAIT` or a plain `DEL` release.
    fn read_write(&self) -> bool {
        self.replicas == 0
            && self.sentinel.is_none()
            && self.server.persistence == Persistence::None
            && self.client.wait.is_none()
            && self.client.release == Release::CompareAndDelete
    }

    /// Any key is a lock: lock `n` is the key `lock:n` (`redis::lock_key`).
    fn many_locks(&self) -> bool {
        true
    }

    fn expiry_wall_clocks(&self) -> &'static [Role] {
        // A key's deadline is on its server's `expiry_clock` (`mstime()` by default).
        match self.server.expiry_clock {
            ClockKind::Wall => &[Role::Server],
            ClockKind::Mono => &[],
        }
    }

    fn describe(&self) -> Vec<String> {
        let client = &self.client;
        let mut p = vec![if self.replicas == 0 {
            "redis".to_string()
        } else {
            let s = if self.replicas == 1 { "" } else { "s" };
            format!("redis primary + {} replica{s}", self.replicas)
        }];
        if let Some((n, _)) = self.sentinel {
            p.push(format!("{n} sentinels"));
        }
        p.push(format!("ttl {}", client.ttl));
        match client.acquire_tries {
            0 => {}
            1 => p.push("try".to_string()),
            n => p.push(format!("{n} tries")),
        }
        if let Some(w) = &client.wait {
            p.push(format!("WAIT {}", w.replicas));
        }
        if client.fencing {
            p.push("INCR-fenced".to_string());
        }
        if client.release == Release::Del {
            p.push("DEL release".to_string());
        }
        match client.renew {
            Renew::Off => {}
            Renew::UntilRefused => p.push("renewed".to_string()),
            Renew::Watchdog => p.push("watchdog".to_string()),
        }
        p.extend(describe_server(&self.server));
        p
    }

    fn describe_resource(resource: &NoResource) -> String {
        match *resource {}
    }
}
