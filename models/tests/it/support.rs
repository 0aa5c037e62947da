//! Building and running small Redis worlds for the model tests.

use lockstep_check::{Options, Verdict, check};
use lockstep_models::redis::{RedisLockConfig, RedisServerConfig, Release, Renew};
use lockstep_models::redlock::{Flavour, RedlockConfig};
use lockstep_models::system::{Family, SystemSpec, build, history};
use lockstep_models::{Node, StorageMode, WorkloadConfig};
use lockstep_sim::{
    ClockKind, Distribution, Dur, Fault, LinkConfig, NodeConfig, NodeId, ScheduledFault, Time,
    When, World, WorldConfig,
};

pub(crate) const REDIS: NodeId = NodeId(0);
pub(crate) const STORAGE: NodeId = NodeId(1);
pub(crate) const CLIENT_1: NodeId = NodeId(2);

pub(crate) fn ms(v: u64) -> Dur {
    Dur::from_millis(v)
}

/// Two clients, a 10 s lock, work of 50-200 ms, unfenced storage.
pub(crate) fn redis_spec() -> SystemSpec {
    SystemSpec {
        family: Family::Redis {
            server: RedisServerConfig {
                expiry_clock: ClockKind::Wall,
                ..RedisServerConfig::default()
            },
            replicas: 0,
            sentinel: None,
            client: RedisLockConfig {
                server: REDIS,
                sentinels: Vec::new(),
                wait: None,
                ttl: Dur::from_secs(10),
                release: Release::CompareAndDelete,
                renew: Renew::Off,
                fencing: false,
                fence_atomically: false,
                request_timeout: ms(500),
                retry_delay: Distribution::Uniform {
                    lo: ms(50),
                    hi: ms(250),
                },
                acquire_tries: 0,
                drift_factor_ppm: 10_000,
            },
        },
        clients: 2,
        workload: WorkloadConfig {
            storage: Some(STORAGE),
            think: Distribution::Uniform {
                lo: ms(0),
                hi: ms(100),
            },
            work: Distribution::Uniform {
                lo: ms(50),
                hi: ms(200),
            },
            check_validity_before_write: true,
            storage_timeout: ms(1_000),
        },
        storage: StorageMode::Unfenced,
    }
}

/// Five Redlock instances (`redis-1`..`redis-5`, node ids 0-4), storage (5), two clients
/// (6, 7), with a 10 s TTL and the flavour's defaults.
pub(crate) fn redlock_spec(flavour: Flavour) -> SystemSpec {
    let ttl = Dur::from_secs(10);
    let client = match flavour {
        Flavour::Antirez => RedlockConfig::antirez(Vec::new(), ttl),
        Flavour::Redsync => RedlockConfig::redsync(Vec::new(), ttl),
    };
    let mut spec = redis_spec();
    spec.workload.storage = Some(NodeId(5));
    spec.family = Family::Redlock {
        server: RedisServerConfig::default(),
        instances: 5,
        client,
    };
    spec
}

pub(crate) fn redlock_config(spec: &mut SystemSpec) -> &mut RedlockConfig {
    match &mut spec.family {
        Family::Redlock { client, .. } => client,
        other => panic!("not Redlock: {other:?}"),
    }
}

pub(crate) fn lock_config(spec: &mut SystemSpec) -> &mut RedisLockConfig {
    match &mut spec.family {
        Family::Redis { client, .. } => client,
        other => panic!("not a Redis family: {other:?}"),
    }
}

pub(crate) fn server_config(spec: &mut SystemSpec) -> &mut RedisServerConfig {
    match &mut spec.family {
        Family::Redis { server, .. } | Family::Redlock { server, .. } => server,
        other => panic!("not a Redis family: {other:?}"),
    }
}

pub(crate) struct Run {
    pub(crate) world: World<Node>,
    pub(crate) verdict: Verdict,
}

/// A world of `spec`'s nodes with perfect clocks and 1-5 ms links, ending at `secs`;
/// `configure` adjusts the rest (faults, trace, ...).
pub(crate) fn world(
    spec: &SystemSpec,
    seed: u64,
    secs: u64,
    configure: impl FnOnce(&mut WorldConfig),
) -> World<Node> {
    let nodes = build(spec);
    let configs = nodes
        .iter()
        .map(|(name, _)| NodeConfig::named(name.clone()))
        .collect();
    let mut cfg = WorldConfig::new(seed, Time::from_millis(secs * 1000), configs);
    cfg.link = LinkConfig {
        latency: Distribution::Uniform {
            lo: ms(1),
            hi: ms(5),
        },
        ..LinkConfig::default()
    };
    configure(&mut cfg);
    World::new(cfg, nodes.into_iter().map(|(_, n)| n).collect())
}

/// Runs `spec` for `secs` seconds with 1-5 ms links and the given faults.
pub(crate) fn run(spec: &SystemSpec, seed: u64, secs: u64, faults: Vec<ScheduledFault>) -> Run {
    let mut world = world(spec, seed, secs, |cfg| cfg.faults = faults);
    let outcome = world.run();
    let h = history(&world, outcome);
    let verdict = check(&h, &Options::default()).expect("a well-formed history");
    Run { world, verdict }
}

pub(crate) fn at(ms_: u64, fault: Fault) -> ScheduledFault {
    ScheduledFault {
        when: When::At(Time::from_millis(ms_)),
        fault,
    }
}

pub(crate) fn on_mark(node: NodeId, mark: &str, fault: Fault) -> ScheduledFault {
    ScheduledFault {
        when: When::OnMark {
            node,
            mark: mark.into(),
            occurrence: 1,
            before: None,
        },
        fault,
    }
}
