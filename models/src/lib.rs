//! lockstep-models: faithful models of lock services, their client libraries, the shared
//! workload client and the protected storage, as sans-IO processes of `lockstep-sim`.
//!
//! A model reads only its own clocks through the context, draws only from its own stream and
//! records history events of `lockstep-check`; it never reads true time, never does IO and
//! never iterates a hash map. Each handler cites the behaviour of the real system it mirrors
//! (`../shared/docs/semantics.md`).
//!
//! Start reading at [`node`] (the process type), then [`workload`] (the client loop every
//! family shares), [`lock`] (the lock-client interface), [`redis`] (the first family) and
//! [`redlock`] (one lock over several Redis instances). [`raft`] is the consensus core the
//! etcd family builds on, with the checker of its safety properties; [`zookeeper`] reuses it as
//! its atomic broadcast.
#![deny(missing_docs)]

pub mod audit;
pub mod etcd;
pub mod keys;
pub mod lock;
pub mod node;
pub mod raft;
pub mod redis;
pub mod redlock;
pub mod storage;
pub mod system;
pub mod workload;
pub mod zookeeper;

pub use lock::{Lock, LockSignal};
pub use node::{
    EtcdServerTimer, EtcdTimer, LockTimer, Msg, Node, Timer, WorkTimer, ZkServerTimer, ZkTimer,
};
pub use storage::{Storage, StorageMode};
pub use workload::{Client, WorkloadConfig};
