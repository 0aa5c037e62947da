//! Kubernetes Lease leader election (docs/families/kubernetes.md): client-go's `LeaderElector`
//! (`tools/leaderelection/leaderelection.go`) over a `coordination.k8s.io/v1` Lease
//! (`tools/leaderelection/resourcelock/leaselock.go`), served by API servers that keep it in
//! an etcd cluster.
//!
//! - The etcd members are [`crate::etcd::server::EtcdServer`]s, unchanged; an API server
//!   talks to them as a clientv3 client ([`apiserver`]).
//! - The API server serves `Get`, `Create` and `Update` of one Lease to the electors, with
//!   kube-apiserver's optimistic concurrency (409 on a stale `resourceVersion`).
//! - The elector ([`elector`]) is the family's lock client: one per workload client, client-go's
//!   `tryAcquireOrRenew`, candidate loop and renew loop.
//! - Each API server keeps an owner audit ([`crate::audit`]) of the Lease records it sees:
//!   a new (holder, `leaseTransitions`) is recorded as `Issued` with `leaseTransitions` as the
//!   ticket, which the elector's grant names.

pub mod apiserver;
pub mod elector;
pub mod family;

pub use family::Kubernetes;

use lockstep_sim::NodeId;

use crate::env::{Host, Scoped, Side};
use crate::etcd;
use crate::etcd::server::EtcdServer;
use crate::family::Service;
use apiserver::ApiServer;

/// The Lease's fields as our mvcc keeps them (values are `u64`), `LeaderElectionRecord`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LeaseRecord {
    /// `holderIdentity`: the holder's identity ([`identity`]), 0 for "".
    pub holder: u64,
    /// `leaseDurationSeconds`, whole seconds.
    pub lease_duration_s: u64,
    /// `acquireTime`, wall microseconds of the elector that wrote it.
    pub acquire_us: u64,
    /// `renewTime`, wall microseconds of the elector that wrote it.
    pub renew_us: u64,
    /// `leaseTransitions`.
    pub transitions: u64,
}

/// A Lease as the API returns it: its spec and its `resourceVersion` (the mod revision of
/// its holder key in etcd; every write puts every key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LeaseObject {
    /// The spec.
    pub record: LeaseRecord,
    /// `metadata.resourceVersion`.
    pub rv: u64,
}

/// The identity of workload client `node` in its `incarnation`-th process life: like
/// kube-controller-manager's `hostname + "_" + uuid`, a restarted process has a new one.
pub fn identity(node: NodeId, incarnation: u32) -> u64 {
    (u64::from(incarnation) << 32) | (u64::from(node.0) + 1)
}

/// The node an identity names (for the owner audit), `None` for "".
pub fn holder_node(holder: u64) -> Option<NodeId> {
    let low = holder & 0xffff_ffff;
    (low != 0).then(|| NodeId((low - 1) as u32))
}

/// A request of an elector to an API server (the REST calls of `leaselock.go`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiRequest {
    /// `GET` the Lease (a quorum read: client-go asks with an empty resourceVersion).
    Get,
    /// `POST` a new Lease.
    Create(LeaseRecord),
    /// `PUT` the Lease with the cached object's resourceVersion as precondition.
    Update {
        /// The resourceVersion the elector last saw.
        rv: u64,
        /// The new spec.
        record: LeaseRecord,
    },
}

/// An API server's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiReply {
    /// 200/201 with the Lease.
    Lease(LeaseObject),
    /// 404.
    NotFound,
    /// 409: Conflict on a stale resourceVersion, AlreadyExists on a create.
    Conflict,
    /// 5xx: etcd did not answer in time.
    Unavailable,
}

/// Every message of the family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// Between the API servers and the etcd members (and among members).
    Etcd(etcd::Msg),
    /// An elector's call.
    Api {
        /// The elector's call id.
        id: u64,
        /// The call.
        req: ApiRequest,
    },
    /// An API server's answer.
    ApiReply {
        /// The call id.
        id: u64,
        /// The answer.
        reply: ApiReply,
    },
}

/// Timers of the service nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// An etcd member's.
    Etcd(etcd::ServerTimer),
    /// An API server's.
    Api(apiserver::ApiTimer),
}

/// An etcd member's part of a node of this family: its messages and timers wrapped.
#[derive(Debug)]
pub struct EtcdSide;

impl Side for EtcdSide {
    type OuterMsg = Msg;
    type OuterTimer = Timer;
    type Msg = etcd::Msg;
    type Timer = etcd::ServerTimer;
    fn msg(msg: etcd::Msg) -> Msg {
        Msg::Etcd(msg)
    }
    fn timer(timer: etcd::ServerTimer) -> Timer {
        Timer::Etcd(timer)
    }
}

/// A service node: an etcd member or an API server.
// A world holds a handful of nodes: variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeNode {
    /// `etcd-N`.
    Etcd(EtcdServer),
    /// `apiserver-N`.
    ApiServer(ApiServer),
}

impl Service for KubeNode {
    type Msg = Msg;
    type Timer = Timer;

    fn plays(&self, role: &str) -> bool {
        match self {
            KubeNode::Etcd(s) => s.plays(role),
            KubeNode::ApiServer(_) => false,
        }
    }

    fn on_start(&mut self, env: &mut impl Host<Msg, Timer>) {
        match self {
            KubeNode::Etcd(s) => s.on_start(&mut Scoped::<_, EtcdSide>::new(env)),
            KubeNode::ApiServer(_) => {}
        }
    }

    fn on_message(&mut self, env: &mut impl Host<Msg, Timer>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (KubeNode::Etcd(s), Msg::Etcd(m)) => {
                s.on_message(&mut Scoped::<_, EtcdSide>::new(env), from, m);
            }
            (KubeNode::ApiServer(a), Msg::Etcd(m)) => a.on_etcd(env, m),
            (KubeNode::ApiServer(a), Msg::Api { id, req }) => a.on_api(env, from, id, req),
            (_, msg) => unreachable!("{} was sent {msg:?}", env.name()),
        }
    }

    fn on_timer(&mut self, env: &mut impl Host<Msg, Timer>, timer: Timer) {
        match (self, timer) {
            (KubeNode::Etcd(s), Timer::Etcd(t)) => {
                s.on_timer(&mut Scoped::<_, EtcdSide>::new(env), t);
            }
            (KubeNode::ApiServer(a), Timer::Api(t)) => a.on_timer(env, t),
            (_, timer) => unreachable!("{} got a timer it never set: {timer:?}", env.name()),
        }
    }

    fn on_crash(&mut self) {
        match self {
            KubeNode::Etcd(s) => s.on_crash(),
            KubeNode::ApiServer(a) => a.on_crash(),
        }
    }

    fn on_restart(&mut self, env: &mut impl Host<Msg, Timer>) {
        match self {
            KubeNode::Etcd(s) => s.on_restart(&mut Scoped::<_, EtcdSide>::new(env)),
            KubeNode::ApiServer(_) => {}
        }
    }

    /// An API server's connection to an etcd member was reset; an etcd member does nothing
    /// (its Raft peers are found again by its own heartbeats and timeouts).
    fn on_reset(&mut self, env: &mut impl Host<Msg, Timer>, peer: NodeId) {
        if let KubeNode::ApiServer(a) = self {
            a.on_reset(env, peer);
        }
    }
}
