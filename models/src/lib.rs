//! lockstep-models: faithful models of lock services, their client libraries, the shared
//! workload client and the protected storage, as sans-IO processes of `lockstep-sim`.
//!
//! A model reads only its own clocks through the context, draws only from its own stream and
//! records history events of `lockstep-check`; it never reads true time, never does IO and
//! never iterates a hash map. Each handler cites the behaviour of the real system it mirrors:
//! its source file, its documentation or the published report.
//!
//! Start reading at [`family`] (what a lock family is), then [`node`] (the process type of a
//! family's world), [`workload`] (the client loop every family shares), [`lock`] (the
//! lock-client interface) and [`env`] (what a model sees of its host). Each family is a folder
//! of its own, listed once in the registry below ([`for_each_family`] visits it). [`raft`] is the consensus
//! core replicated families build on, with the checker of its safety properties.
#![deny(missing_docs)]

pub mod audit;
pub mod env;
pub mod family;
pub mod keys;
pub mod lock;
pub mod node;
pub mod observe;
pub mod raft;
pub mod storage;
pub mod system;
pub mod workload;

/// Declares each family's folder as a module and [`for_each_family`], which visits their
/// types in the registry's order.
macro_rules! families {
    ($($folder:ident => $family:ident),* $(,)?) => {
        $(pub mod $folder;)*

        /// Calls `visitor` with every family of the registry, in its order.
        pub fn for_each_family(visitor: &mut impl family::Visit) {
            $(visitor.visit::<$folder::$family>();)*
        }
    };
}

// The registry: every lock family, one line each (its folder and its `Family` type).
families! {
    redis => Redis,
    redlock => Redlock,
    etcd => Etcd,
    zookeeper => ZooKeeper,
    kubernetes => Kubernetes,
    postgres => Postgres,
    consul => Consul,
}

pub use family::{Family, Role};
pub use lock::{Access, LockClient, LockSignal};
pub use node::{Msg, Node, Timer, WorkTimer};
pub use observe::Observation;
pub use storage::{Storage, StorageMode};
pub use system::{Resource, System, SystemSpec};
pub use workload::{
    Acquire, Client, Counter, CronConfig, KeysConfig, LeaderConfig, Needs, OnStoppedLeading, Place,
    Queue, ReadWriteConfig, Shared, VisitWorkload, Workload, WorkloadConfig, WorkloadKind,
    for_each_workload,
};
