//! A lock family: everything about one lock system that the rest of lockstep needs, behind
//! one trait. A family lives in its own folder (`models/src/<family>/`), implements
//! [`Family`] on its settings, and is listed once in the registry (`families!` in this crate's
//! `lib.rs`); its scenario keys are documented on its page (`docs/families/<family>.md`).
//!
//! The trait gives: its scenario keys (a typed `[model]` section and the checks of their
//! meaning), its layout (its service nodes, named, with their roles), how it builds its nodes
//! and lock client, the marks its nodes reach, the fencing tokens it hands out and what they
//! promise, its counters, and how a report names it. Everything shared (the workload client,
//! the storage, the world, the checker, chaos, reports) works from these answers and never
//! names a family.

use std::fmt::Debug;
use std::hash::Hash;

use lockstep_sim::{Dur, NodeId};
use serde::de::DeserializeOwned;

use crate::env::Host;
use crate::keys::Check;
use crate::lock::LockClient;

/// What a node is in a system, for the scenario's node groups, chaos and the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A lock server (a Redis instance, an etcd or ZooKeeper member): group `servers`.
    Server,
    /// A coordinator beside the servers (a Redis sentinel), in the family's own group.
    Coordinator {
        /// The group's name in scenario files (`sentinels`).
        group: &'static str,
    },
    /// The protected storage, the checker's arbiter: partitioned and slowed by chaos, never
    /// crashed, paused or clock-faulted.
    Storage,
    /// A workload client with its lock client: group `clients`.
    Client,
}

/// Nodes `<prefix>-1`, `<prefix>-2`, ... `<prefix>-<count>`, all in `role`: how most
/// families name their servers.
pub fn numbered(prefix: &str, count: u32, role: Role) -> Vec<(String, Role)> {
    (1..=count)
        .map(|i| (format!("{prefix}-{i}"), role))
        .collect()
}

/// Which nodes reach a mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkSite {
    /// Workload clients.
    Client,
    /// Lock servers.
    Server,
}

/// What a family's fencing tokens are, as handed to storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tokens {
    /// The clients send no token.
    None,
    /// Numbers storage may compare by size (fenced storage).
    Ordered {
        /// The family promises they increase with every grant, so the checker's token-order
        /// check applies.
        monotonic: bool,
    },
    /// Random values with no order, good only for compare-and-set storage.
    Random,
}

/// A value of a family's `fencing` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fencing {
    /// The value, as written in scenario files.
    pub name: &'static str,
    /// What the token is, for error messages: "the lock key's create revision".
    pub what: &'static str,
    /// Storage can order its tokens by size (fenced storage); otherwise they are random
    /// values, good for compare-and-set storage only.
    pub ordered: bool,
}

/// A named count a family reports about a run, beside the verdict (ZooKeeper's watch
/// notifications show the herd effect). Its nodes emit one [`crate::observe::Observation`]
/// `Count(name)` per unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// What is counted.
    pub name: &'static str,
    /// Another counter of the family to show this one per, when it is meant as a rate.
    pub per: Option<&'static str>,
}

/// A node of the family's service: its handlers, in the family's own types.
pub trait Service: Clone + Debug + Eq {
    /// The family's messages.
    type Msg;
    /// The service nodes' timers.
    type Timer;

    /// Called once at the start of the run.
    fn on_start(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>);
    /// A message arrived from `from`.
    fn on_message(
        &mut self,
        env: &mut impl Host<Self::Msg, Self::Timer>,
        from: NodeId,
        msg: Self::Msg,
    );
    /// A timer this node set fired.
    fn on_timer(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>, timer: Self::Timer);
    /// The process crashed: keep only what the real system keeps on disk.
    fn on_crash(&mut self);
    /// The process starts again after a crash, from what [`Service::on_crash`] kept.
    fn on_restart(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>);
    /// What this host's kernel answers to `msg` from `from` on the node's behalf (a TCP
    /// keepalive probe), from what the kernel knows alone (`lockstep_sim::Process::kernel_answer`):
    /// the node never sees `msg`, even when paused. By default, nothing.
    fn kernel_answer(&self, from: NodeId, msg: &Self::Msg) -> Option<Self::Msg> {
        let _ = (from, msg);
        None
    }
    /// The connection to `peer` was reset (`lockstep_sim::Process::on_reset`): it crashed,
    /// or refused a message. By default nothing happens.
    fn on_reset(&mut self, env: &mut impl Host<Self::Msg, Self::Timer>, peer: NodeId) {
        let _ = (env, peer);
    }
    /// Whether this node plays `role` ([`played`]) now, by its own state: a fault aimed at
    /// the role hits it (`lockstep_sim::Process::plays`). By default, none.
    fn plays(&self, role: &str) -> bool {
        let _ = role;
        false
    }
    /// What the node holds that grows as the run goes on (its log, its key history), in
    /// bytes at fixed sizes per item, for the memory budget
    /// (`lockstep_sim::Process::held_bytes`). By default nothing grows.
    fn held_bytes(&self) -> u64 {
        0
    }
}

/// `len` items of `each` bytes, for [`Service::held_bytes`].
pub(crate) fn held(len: usize, each: u64) -> u64 {
    (len as u64).saturating_mul(each)
}

/// The roles a node plays at run time, by its own state, at which a scenario's fault may be
/// aimed (`crash = { node = "leader" }`): the world resolves one to a node when the fault
/// comes due (the newest claimant when several claim it). A family declares those its
/// service nodes play ([`Family::played`]); every family's clients play [`played::HOLDER`].
pub mod played {
    /// The leader of a consensus group (a Raft leader: etcd, a ZooKeeper ensemble on the
    /// shared Raft core, Consul's servers, the etcd behind Kubernetes' API servers).
    pub const LEADER: &str = "leader";
    /// A primary server: a Redis master (also a single instance), a PostgreSQL server not in
    /// recovery.
    pub const PRIMARY: &str = "primary";
    /// A workload client in its critical section (from its grant to its exit, a leader's
    /// whole term) or on a job.
    pub const HOLDER: &str = "holder";
    /// Every role any family's nodes play.
    pub const ALL: &[&str] = &[LEADER, PRIMARY, HOLDER];
}

/// The resource kept by the lock service itself, for family `F`'s lock client.
pub type ResourceOf<F> = <<F as Family>::Lock as LockClient>::Resource;

/// A lock family, implemented on its settings (what its `[model]` section resolves to).
pub trait Family: Clone + Debug + Eq + Send + Sync + 'static {
    /// Its name as `model.kind` in scenario files: `redis`.
    const KIND: &'static str;
    /// Its name in sentences: `Redis`.
    const NAME: &'static str;
    /// Its `fencing` values besides `none`, each with what the token is.
    const FENCING: &'static [Fencing];
    /// The `[storage] mode` under which its service keeps the protected resource itself,
    /// if it can.
    const RESOURCE_MODE: Option<&'static str> = None;

    /// The messages between its service nodes and its lock clients.
    type Msg: Clone + Debug + Hash + Eq;
    /// Its service nodes' timers.
    type Timer: Copy + Debug + Hash + Eq;
    /// A service node.
    type Node: Service<Msg = Self::Msg, Timer = Self::Timer>;
    /// Its lock client.
    type Lock: LockClient<Msg = Self::Msg>;
    /// Its `[model]` section as written: serde, unknown keys rejected. It has a `kind` field,
    /// which the registry has already matched.
    type Keys: DeserializeOwned;
    /// The `[storage]` keys besides `mode` under [`Family::RESOURCE_MODE`].
    type ResourceKeys: DeserializeOwned;

    /// Its settings from its keys; every problem goes into `check` under `model.<key>`.
    fn resolve(keys: &Self::Keys, check: &mut Check) -> Self;
    /// The resource its service keeps under [`Family::RESOURCE_MODE`], from the `[storage]`
    /// keys; problems under `storage.<key>`. `None` for a family whose service keeps none.
    fn resource(keys: &Self::ResourceKeys, check: &mut Check) -> Option<ResourceOf<Self>>;
    /// Its service nodes, named, with their roles, in node-id order: they come first in a
    /// world, before the storage and the clients.
    fn layout(&self) -> Vec<(String, Role)>;
    /// The roles its service nodes play at run time ([`played`], [`Service::plays`]).
    fn played(&self) -> &'static [&'static str] {
        &[]
    }
    /// The names of its own node groups (its coordinators' `Role::Coordinator { group }`),
    /// which scenario files may name even when the group has no node.
    fn groups(&self) -> &'static [&'static str] {
        &[]
    }
    /// The nodes its settings name, each as `(key path, node name, role)`: a key keyed by a
    /// node (a Kubernetes participant's own timing, `model.participants.client-2`) and the
    /// role that node must have. The loader refuses a name that is no node of the system, or
    /// a node of another role, at the key path. Empty, the default, when its keys name none.
    fn named_nodes(&self) -> Vec<(String, String, Role)> {
        Vec::new()
    }
    /// Its service nodes (in [`Family::layout`]'s order, with ids from 0) and the lock client
    /// every workload client gets; `resource` when the service keeps the protected resource.
    fn build(&self, resource: Option<&ResourceOf<Self>>) -> (Vec<Self::Node>, Self::Lock);
    /// The marks its nodes reach besides the workload's, where a chaos profile may strike.
    fn marks(&self) -> &'static [(&'static str, MarkSite)] {
        &[]
    }
    /// The tokens its clients send to storage.
    fn tokens(&self) -> Tokens;
    /// How long a grant lasts without renewal: the lock's TTL, the session's lease or timeout
    /// (`ttl_ms`). Chaos judges recovery against it.
    fn ttl(&self) -> Dur;
    /// The roles of its nodes whose wall clocks time its grants out (a Redis key expires on
    /// its server's wall clock): a backward step of such a clock keeps a crashed holder's
    /// grant that much longer, so a chaos run allows that much more for recovery. Empty, the
    /// default, when grants time out on monotonic clocks only (an etcd lease, a ZooKeeper
    /// session on its leader's ticks).
    fn expiry_wall_clocks(&self) -> &'static [Role] {
        &[]
    }
    /// Why its grant lapses on its own under a holder that keeps it for as long as it runs (a
    /// leader's term), with the keys that would keep it: `its key expires ttl_ms after the
    /// grant, as nothing renews it: set model.renew = true`. `None`, the default, when the
    /// holder keeps its grant while it lives (a renewed key, a session kept alive). A workload
    /// that needs a held grant (`Needs::held`) is then refused with this reason.
    fn lapses(&self) -> Option<&'static str> {
        None
    }
    /// Whether its clients' acquire is a job queue's dequeue ([`crate::LockSignal::Job`]): the
    /// workload must then be `kind = "queue"`, and only then.
    fn dequeues(&self) -> bool {
        false
    }
    /// Whether its lock client takes locks other than lock 0 ([`crate::LockClient::select`]):
    /// the `keys` workload's many locks are then allowed, and only then.
    fn many_locks(&self) -> bool {
        false
    }
    /// Makes every acquisition of its clients a single try that gives up at once when the lock
    /// is held (`[workload] acquire = "try"`: a try-lock, the HTTP handler's case), and says
    /// whether it could: `false`, the default, for a family with no try form.
    fn try_once(&mut self) -> bool {
        false
    }
    /// Makes its lock clients count the requests they send to take the lock
    /// ([`crate::observe::ACQUIRE_REQUESTS`]: the herd figure, when a scenario sets
    /// `[workload] acquire`), and says whether they do: `false`, the default, for a family
    /// whose clients count none.
    fn count_requests(&mut self) -> bool {
        false
    }
    /// What a nested acquisition does with its lock client ([`crate::LockClient::reenter`],
    /// `[workload] reenter`), in a phrase for reports and errors (`counted by the server:
    /// pg_advisory_lock again on the same session`); `None`, the default, for a family whose
    /// client cannot take its lock again with these settings (the loader then refuses
    /// `reenter` and says this).
    fn reentry(&self) -> Option<&'static str> {
        None
    }
    /// Whether its lock client takes read-write locks ([`crate::LockClient::access`]): the
    /// `read-write` workload is then allowed, and only then.
    fn read_write(&self) -> bool {
        false
    }
    /// Its counters, in the order a report lists them.
    fn counters(&self) -> &'static [Counter] {
        &[]
    }
    /// Its name with its key settings, for reports: the first part names the system
    /// (`redis primary + 2 replicas`), the rest are settings that differ from its defaults.
    fn describe(&self) -> Vec<String>;
    /// The resource its service keeps, named for reports (`etcd (guard owner)`).
    fn describe_resource(resource: &ResourceOf<Self>) -> String;
}

/// Something done for every family of the registry ([`crate::for_each_family`]).
pub trait Visit {
    /// Does it for family `F`.
    fn visit<F: Family>(&mut self);
}
