//! Assembly: the nodes of one lock system (servers, sentinels, storage, workload clients)
//! with their names, in [`lockstep_sim::NodeId`] order. The scenario loader and the tests
//! build every world through here.
//!
//! etcd names: members are `etcd-1`, `etcd-2`, ...; with the resource in etcd
//! ([`StorageMode::Etcd`]) there is no `storage` node.
//!
//! Redis names: a single instance is `redis`; with replicas the servers are `redis-1` (the
//! primary at start), `redis-2`, ...; sentinels are `sentinel-1`, .... etcd members are
//! `etcd-1`, ...; ZooKeeper servers `zk-1`, ....

use std::collections::BTreeSet;

use lockstep_check::{Event, Fault as HistFault, FaultKind, History, NodeId as HistNode};
use lockstep_sim::{AppliedFault, Fault, NodeId, Outcome, World};

use crate::etcd::client::{EtcdLock, EtcdLockConfig};
use crate::etcd::server::{EtcdServer, EtcdServerConfig};
use crate::lock::Lock;
use crate::node::Node;
use crate::redis::{
    RedisLock, RedisLockConfig, RedisServer, RedisServerConfig, Sentinel, SentinelConfig,
};
use crate::redlock::{RedlockClient, RedlockConfig};
use crate::storage::{Storage, StorageMode};
use crate::workload::{Client, WorkloadConfig};
use crate::zookeeper::client::{ZkLock, ZkLockConfig};
use crate::zookeeper::server::{ZkServer, ZkServerConfig};

/// A lock family and its settings. Node ids inside the client settings are filled in by
/// [`build`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Family {
    /// Redis: one instance, or a primary with asynchronous replicas, watched by sentinels or
    /// not.
    Redis {
        /// Every server's settings (`replica_of` is overwritten).
        server: RedisServerConfig,
        /// Every client's lock settings (`server` and `sentinels` are overwritten).
        client: RedisLockConfig,
        /// Replicas of the primary; 0 is a single instance.
        replicas: u32,
        /// The sentinels' settings (`servers` and `sentinels` are overwritten), and how many.
        sentinel: Option<(u32, SentinelConfig)>,
    },
    /// Redlock over independent Redis instances, named `redis-1`, `redis-2`, ...
    Redlock {
        /// Every instance's settings.
        server: RedisServerConfig,
        /// How many instances.
        instances: u32,
        /// Every client's settings (`servers` is overwritten with the instances).
        client: RedlockConfig,
    },
    /// etcd: a raft cluster of members named `etcd-1`, `etcd-2`, ... and clients running the
    /// concurrency package's session and Mutex (or Election).
    Etcd {
        /// The cluster's settings (`members` is overwritten with the member ids).
        server: EtcdServerConfig,
        /// How many members.
        members: u32,
        /// Every client's settings (`servers` is overwritten with the members, `resource`
        /// with the guard of [`StorageMode::Etcd`]).
        client: EtcdLockConfig,
    },
    /// ZooKeeper: an ensemble of servers named `zk-1`, `zk-2`, ... and clients running
    /// Curator's lock recipe.
    ZooKeeper {
        /// The ensemble's settings (`members` is overwritten with the server ids).
        server: ZkServerConfig,
        /// How many servers.
        members: u32,
        /// Every client's settings (`servers` is overwritten with the ensemble).
        client: ZkLockConfig,
    },
}

/// A whole system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemSpec {
    /// The lock family.
    pub family: Family,
    /// Number of workload clients.
    pub clients: u32,
    /// Their workload (`storage` is overwritten).
    pub workload: WorkloadConfig,
    /// The storage's fencing mode, or the guard of the resource kept in etcd.
    pub storage: StorageMode,
}

/// The name of the `i`-th client (from 1).
pub fn client_name(i: u32) -> String {
    format!("client-{i}")
}

/// The nodes of `spec`, named, in node-id order: the lock servers, then `storage` (unless the
/// resource lives in etcd), then `client-1`, `client-2`, ...
pub fn build(spec: &SystemSpec) -> Vec<(String, Node)> {
    let mut nodes = Vec::new();
    let lock_for_clients = match &spec.family {
        Family::Redis {
            server,
            client,
            replicas,
            sentinel,
        } => {
            let primary = NodeId(0);
            for i in 0..=*replicas {
                let config = RedisServerConfig {
                    replica_of: (i > 0).then_some(primary),
                    ..server.clone()
                };
                let name = if *replicas == 0 {
                    "redis".to_string()
                } else {
                    format!("redis-{}", i + 1)
                };
                nodes.push((name, Node::Redis(RedisServer::new(config))));
            }
            let servers: Vec<NodeId> = (0..=*replicas).map(NodeId).collect();
            let (count, config) = sentinel.clone().unwrap_or((0, sentinel_defaults()));
            let first = nodes.len() as u32;
            let sentinels: Vec<NodeId> = (first..first + count).map(NodeId).collect();
            for i in 1..=count {
                let config = SentinelConfig {
                    servers: servers.clone(),
                    sentinels: sentinels.clone(),
                    ..config.clone()
                };
                nodes.push((
                    format!("sentinel-{i}"),
                    Node::Sentinel(Sentinel::new(config)),
                ));
            }
            let client = RedisLockConfig {
                server: primary,
                sentinels,
                ..client.clone()
            };
            Lock::Redis(RedisLock::new(client))
        }
        Family::Redlock {
            server,
            instances,
            client,
        } => {
            for i in 1..=*instances {
                nodes.push((
                    format!("redis-{i}"),
                    Node::Redis(RedisServer::new(server.clone())),
                ));
            }
            let client = RedlockConfig {
                servers: (0..*instances).map(NodeId).collect(),
                ..client.clone()
            };
            Lock::Redlock(RedlockClient::new(client))
        }
        Family::Etcd {
            server,
            members,
            client,
        } => {
            let ids: Vec<NodeId> = (0..*members).map(NodeId).collect();
            let config = EtcdServerConfig {
                members: ids.clone(),
                ..server.clone()
            };
            for (i, &id) in ids.iter().enumerate() {
                nodes.push((
                    format!("etcd-{}", i + 1),
                    Node::Etcd(EtcdServer::new(config.clone(), id)),
                ));
            }
            let client = EtcdLockConfig {
                servers: ids,
                resource: match spec.storage {
                    StorageMode::Etcd(guard) => Some(guard),
                    _ => None,
                },
                ..client.clone()
            };
            Lock::Etcd(EtcdLock::new(client))
        }
        Family::ZooKeeper {
            server,
            members,
            client,
        } => {
            let ids: Vec<NodeId> = (0..*members).map(NodeId).collect();
            let config = ZkServerConfig {
                members: ids.clone(),
                ..server.clone()
            };
            for (i, &id) in ids.iter().enumerate() {
                nodes.push((
                    format!("zk-{}", i + 1),
                    Node::ZooKeeper(ZkServer::new(config.clone(), id)),
                ));
            }
            let client = ZkLockConfig {
                servers: ids,
                ..client.clone()
            };
            Lock::ZooKeeper(ZkLock::new(client))
        }
    };
    let storage = match spec.storage {
        StorageMode::Etcd(_) => {
            // The resource lives in the key space: no storage node, and the lock client
            // carries the operations.
            assert!(
                matches!(spec.family, Family::Etcd { .. }),
                "an etcd-resident resource needs the etcd family"
            );
            None
        }
        mode => {
            let id = NodeId(nodes.len() as u32);
            nodes.push(("storage".to_string(), Node::Storage(Storage::new(mode))));
            Some(id)
        }
    };
    let workload = WorkloadConfig {
        storage,
        ..spec.workload.clone()
    };
    for i in 1..=spec.clients {
        let client = Client::new(workload.clone(), lock_for_clients.clone())
            .claiming(spec.storage == StorageMode::CasToken);
        nodes.push((client_name(i), Node::Client(client)));
    }
    nodes
}

fn sentinel_defaults() -> SentinelConfig {
    SentinelConfig {
        servers: Vec::new(),
        sentinels: Vec::new(),
        quorum: 2,
        down_after: crate::redis::sentinel::DEFAULT_DOWN_AFTER,
        failover_timeout: crate::redis::sentinel::DEFAULT_FAILOVER_TIMEOUT,
    }
}

/// The number of lock servers of the family; they come first in node-id order.
pub fn server_count(family: &Family) -> usize {
    match family {
        Family::Redis { replicas, .. } => *replicas as usize + 1,
        Family::Redlock { instances, .. } => *instances as usize,
        Family::Etcd { members, .. } | Family::ZooKeeper { members, .. } => *members as usize,
    }
}

/// The number of sentinels (or other coordinators) of the family; they follow the servers.
pub fn sentinel_count(family: &Family) -> usize {
    match family {
        Family::Redis { sentinel, .. } => sentinel.as_ref().map_or(0, |(n, _)| *n as usize),
        Family::Redlock { .. } | Family::Etcd { .. } | Family::ZooKeeper { .. } => 0,
    }
}

/// Which nodes reach a mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkSite {
    /// Workload clients.
    Client,
    /// Lock servers (Redis instances, etcd or ZooKeeper members).
    Server,
}

/// The marks the family's nodes reach: the points where real code could be interrupted,
/// where a chaos profile places faults at the worst moment. Every workload client reaches
/// `granted`, `validity-checked` (before its write; the K1 window), `read-done` and
/// `work-done`; the families add their own.
pub fn marks(family: &Family) -> Vec<(&'static str, MarkSite)> {
    let mut v = vec![
        ("granted", MarkSite::Client),
        ("validity-checked", MarkSite::Client),
        ("read-done", MarkSite::Client),
        ("work-done", MarkSite::Client),
    ];
    match family {
        Family::Redis { .. } => {}
        Family::Redlock { .. } => v.push(("acquire-sent", MarkSite::Client)),
        Family::Etcd { .. } => {
            v.push(("lock-waiting", MarkSite::Client));
            v.push(("leader-ready", MarkSite::Server));
        }
        Family::ZooKeeper { .. } => {
            v.push(("lock-create-sent", MarkSite::Client));
            v.push(("lock-waiting", MarkSite::Client));
            v.push(("suspended", MarkSite::Client));
            v.push(("zk-leader-ready", MarkSite::Server));
        }
    }
    v
}

/// True when the family's fencing tokens are promised to increase with every grant (the
/// checker's token-order check applies). Redis `INCR` tokens increase on one instance with
/// no failover, but the promise is not the lock's: the counter sits outside the lock
/// primitive (docs/semantics.md §1.6), so it is not claimed. Redlock's random values are
/// not ordered at all (failure catalogue K7). etcd's token, the lock key's create revision,
/// is the lock's own and increases with every grant (docs/semantics.md §3.5). So does
/// ZooKeeper's, the lock node's czxid (§4.4).
pub fn tokens_monotonic(family: &Family) -> bool {
    match family {
        Family::Redis { .. } | Family::Redlock { .. } => false,
        Family::Etcd { .. } | Family::ZooKeeper { .. } => true,
    }
}

/// True when the family's clients send a fencing token with their storage operations.
pub fn has_tokens(family: &Family) -> bool {
    match family {
        Family::Redis { client, .. } => client.fencing,
        Family::Redlock { client, .. } => client.value_as_token,
        Family::Etcd { client, .. } => client.fencing,
        Family::ZooKeeper { client, .. } => client.fencing,
    }
}

/// A named count a family reports about a run, beside the checker's verdict (for example
/// ZooKeeper's watch notifications, which show the herd effect). `per` names another counter
/// of the same run to divide by, when the figure is meant as a rate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counter {
    /// What is counted.
    pub name: &'static str,
    /// The count.
    pub value: u64,
    /// The counter this one is shown per, if any.
    pub per: Option<&'static str>,
}

/// The family's counters of a finished run, summed over its nodes, in a fixed order. Families
/// without counters give none.
pub fn counters(world: &World<Node>) -> Vec<Counter> {
    let n = world.names().len() as u32;
    let zk: Vec<_> = (0..n)
        .filter_map(|i| match world.process(NodeId(i)) {
            Node::Client(c) => match c.lock() {
                Lock::ZooKeeper(l) => Some(l.stats()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    if zk.is_empty() {
        return Vec::new();
    }
    vec![
        Counter {
            name: "lock releases",
            value: zk.iter().map(|s| s.releases).sum(),
            per: None,
        },
        Counter {
            name: "watch notifications",
            value: zk.iter().map(|s| s.watch_events).sum(),
            per: Some("lock releases"),
        },
    ]
}

/// The checker's history of a finished run: the nodes' records with the applied faults placed
/// exactly where they happened among them.
///
/// Every etcd member records a resource write as it applies it; the first of those records is
/// the moment the write took effect, and only it is kept (a member takes each operation once,
/// so one operation is one raft entry). Likewise every member of a replicated service records
/// `Issued` as it applies the change that made a client the owner: only the first of each
/// (client, ticket) is kept, the instant the service issued it.
pub fn history(world: &World<Node>, outcome: Outcome) -> History {
    let mut h = History {
        entries: Vec::with_capacity(world.history().len() + world.fault_log().len()),
        names: world.names().to_vec(),
        end_ns: world.now().as_nanos(),
        complete: outcome == Outcome::Completed,
    };
    let mut faults = world.fault_log().iter().peekable();
    let mut applied = BTreeSet::new();
    let mut issued = BTreeSet::new();
    for (i, record) in world.history().iter().enumerate() {
        while let Some(f) = faults.next_if(|f| f.records_before <= i) {
            h.push(f.time.as_nanos(), fault_event(f));
        }
        match (&record.event, world.process(record.node)) {
            (Event::Storage(op), Node::Etcd(_)) if !applied.insert(op.op) => continue,
            (Event::Issued { client, ticket }, _) if !issued.insert((*client, *ticket)) => {
                continue;
            }
            _ => {}
        }
        h.push(record.time.as_nanos(), record.event.clone());
    }
    for f in faults {
        h.push(f.time.as_nanos(), fault_event(f));
    }
    h
}

fn fault_event(f: &AppliedFault) -> Event {
    let kind = match f.fault {
        Fault::Pause { .. } => FaultKind::Pause,
        Fault::Resume { .. } => FaultKind::Resume,
        Fault::Crash { .. } => FaultKind::Crash,
        Fault::Restart { .. } => FaultKind::Restart,
        Fault::Partition { .. } => FaultKind::Partition,
        Fault::Heal => FaultKind::Heal,
        // A strobe is a run of wall clock steps; its start and end are logged, its steps are
        // in the trace.
        Fault::ClockStep { .. } | Fault::ClockStrobe { .. } => FaultKind::ClockStep,
        Fault::ClockSlew { .. } => FaultKind::ClockSlew,
        Fault::ClockDrift { .. } => FaultKind::ClockDrift,
        Fault::Delay { .. } | Fault::Degrade { .. } => FaultKind::Network,
    };
    let nodes = f.nodes.iter().map(|n| HistNode(n.0)).collect();
    Event::Fault(HistFault {
        kind,
        nodes,
        detail: f.detail.clone(),
    })
}
