//! Building and running small worlds of any lock family for the model tests.

use lockstep_check::{Event, History, Options, Verdict, check};
use lockstep_models::audit::Owner;
use lockstep_models::observe::HolderView;
use lockstep_models::redis::{Redis, RedisLockConfig, RedisServerConfig, Release, Renew};
use lockstep_models::redlock::{Flavour, Redlock, RedlockConfig};
use lockstep_models::system::{Resource, SystemSpec, history};
use lockstep_models::{Family, Node, Observation, StorageMode, WorkloadConfig, WorkloadKind};
use lockstep_sim::{
    ClockKind, Distribution, Dur, Fault, LinkConfig, NodeConfig, NodeId, Outcome, ScheduledFault,
    Time, When, World, WorldConfig,
};

pub(crate) const REDIS: NodeId = NodeId(0);
pub(crate) const STORAGE: NodeId = NodeId(1);
pub(crate) const CLIENT_1: NodeId = NodeId(2);

pub(crate) fn ms(v: u64) -> Dur {
    Dur::from_millis(v)
}

/// `family` with two clients thinking 0-100 ms and working 50-200 ms, checking validity
/// before writing, to unfenced storage.
pub(crate) fn spec<F: Family>(family: F) -> SystemSpec<F> {
    SystemSpec {
        family,
        clients: 2,
        workload: WorkloadConfig {
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
            kind: WorkloadKind::Counter(lockstep_models::Counter),
            acquire: None,
            count_herd: false,
            reenter: false,
            per_client: std::sync::Arc::from([]),
        },
        resource: Resource::Storage(StorageMode::Unfenced),
    }
}

/// A single Redis instance, two clients, a 10 s lock, work of 50-200 ms, unfenced storage.
pub(crate) fn redis_spec() -> SystemSpec<Redis> {
    spec(Redis {
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
            count_requests: false,
        },
    })
}

/// Five Redlock instances (`redis-1`..`redis-5`, node ids 0-4), storage (5), two clients
/// (6, 7), with a 10 s TTL and the flavour's defaults.
pub(crate) fn redlock_spec(flavour: Flavour) -> SystemSpec<Redlock> {
    let ttl = Dur::from_secs(10);
    let client = match flavour {
        Flavour::Antirez => RedlockConfig::antirez(Vec::new(), ttl),
        Flavour::Redsync => RedlockConfig::redsync(Vec::new(), ttl),
    };
    spec(Redlock {
        server: RedisServerConfig::default(),
        instances: 5,
        client,
    })
}

/// The node of `spec` named `name`.
pub(crate) fn node_id<F: Family>(spec: &SystemSpec<F>, name: &str) -> NodeId {
    let names = spec.layout().names();
    let i = names.iter().position(|n| n == name);
    NodeId(i.unwrap_or_else(|| panic!("no {name} in {names:?}")) as u32)
}

pub(crate) struct Run<F: Family> {
    pub(crate) world: World<Node<F>>,
    pub(crate) verdict: Verdict,
}

/// A world of `spec`'s nodes with perfect clocks and 1-5 ms links, ending at `secs`;
/// `configure` adjusts the rest (faults, trace, clocks, ...).
pub(crate) fn world<F: Family>(
    spec: &SystemSpec<F>,
    seed: u64,
    secs: u64,
    configure: impl FnOnce(&mut WorldConfig),
) -> World<Node<F>> {
    let configs = spec
        .layout()
        .names()
        .into_iter()
        .map(NodeConfig::named)
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
    World::new(cfg, spec.build())
}

/// The checker's verdict on a finished world, under the default options.
pub(crate) fn verdict<F: Family>(world: &World<Node<F>>, outcome: Outcome) -> Verdict {
    judge(&history(world, outcome))
}

/// The checker's verdict on a history, under the default options.
pub(crate) fn judge(h: &History) -> Verdict {
    check(h, &Options::default()).expect("a well-formed history")
}

/// Runs `spec` for `secs` seconds with 1-5 ms links and the given faults.
pub(crate) fn run<F: Family>(
    spec: &SystemSpec<F>,
    seed: u64,
    secs: u64,
    faults: Vec<ScheduledFault>,
) -> Run<F> {
    let mut world = world(spec, seed, secs, |cfg| cfg.faults = faults);
    let outcome = world.run();
    let verdict = verdict(&world, outcome);
    Run { world, verdict }
}

pub(crate) fn at(ms_: u64, fault: Fault) -> ScheduledFault {
    ScheduledFault::new(When::At(Time::from_millis(ms_)), fault)
}

pub(crate) fn on_mark(node: NodeId, mark: &str, fault: Fault) -> ScheduledFault {
    ScheduledFault::new(
        When::OnMark {
            node,
            mark: mark.into(),
            occurrence: 1,
            before: None,
        },
        fault,
    )
}

/// The owners a member of a replicated service (etcd, ZooKeeper) went through, as it observed
/// them applying its log: `None` for "no key in line". A member observes a new owner in the
/// same step as it records `Issued` for it, so the `n`-th owner it observed is named by its
/// `n`-th `Issued` record (same true time, same client), which gives the owner's ticket.
pub(crate) fn owners<F: Family>(world: &World<Node<F>>, member: NodeId) -> Vec<Option<Owner>> {
    let name = &world.names()[member.index()];
    let mut issued = world
        .history()
        .iter()
        .filter(|r| r.node == member)
        .filter_map(|r| match r.event {
            Event::Issued { client, ticket } => Some((r.time, client, ticket)),
            _ => None,
        });
    let seen = world
        .observations()
        .iter()
        .filter(|o| o.node == member)
        .filter_map(|o| match o.event {
            Observation::Holder(HolderView::Granted {
                client,
                expires: None,
            }) => {
                let (time, named, ticket) = issued
                    .next()
                    .unwrap_or_else(|| panic!("{name}: {o:?} without an Issued record"));
                assert_eq!(
                    (time, named.0),
                    (o.time, client.0),
                    "{name}: {o:?} is not the Issued record beside it"
                );
                Some(Some(Owner { client, ticket }))
            }
            Observation::Holder(HolderView::Free) => Some(None),
            Observation::Holder(view) => panic!("{name}: a member observed {view:?}"),
            Observation::Count(_) => None,
        })
        .collect();
    let rest: Vec<_> = issued.collect();
    assert!(
        rest.is_empty(),
        "{name}: Issued with no owner observed: {rest:?}"
    );
    seen
}
