//! `[model]`, `[workload]` and `[storage]`: the lock system, with every family's keys.

use lockstep_models::etcd::client::{EtcdLockConfig, Recipe};
use lockstep_models::etcd::resource::ResourceGuard;
use lockstep_models::etcd::server::EtcdServerConfig;
use lockstep_models::keys::DistSpec;
use lockstep_models::raft::ReadOnlyOption;
use lockstep_models::redis::persistence::DEFAULT_SAVE_POINTS;
use lockstep_models::redis::sentinel::{DEFAULT_DOWN_AFTER, DEFAULT_FAILOVER_TIMEOUT};
use lockstep_models::redis::{
    CrashLoses, Persistence, RedisLockConfig, RedisServerConfig, Release, Renew, SavePoint,
    SentinelConfig, WaitConfig,
};
use lockstep_models::redlock::RedlockConfig;
use lockstep_models::system::{Family, SystemSpec};
use lockstep_models::zookeeper::client::{
    Protection, Recipe as ZkRecipe, StopWorkOn, ZkLockConfig,
};
use lockstep_models::zookeeper::server::ZkServerConfig;
use lockstep_models::{StorageMode, WorkloadConfig};
use lockstep_sim::{ClockKind, Distribution, Dur, NodeId};

use super::Resolver;
use crate::scenario::schema::*;

pub(super) fn system_spec(r: &mut Resolver, file: &File) -> SystemSpec {
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
