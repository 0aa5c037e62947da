//! The lock-client interface a workload client drives, and the families behind it.
//!
//! Each family's client is a state machine that takes commands from the workload (acquire,
//! release, is my lease still valid?) and answers with [`LockSignal`]s as replies and timers
//! arrive.

use lockstep_sim::Ctx;

use crate::etcd::client::EtcdLock;
use crate::node::{LockTimer, Msg, Node};
use crate::redis::{RedisLock, SentinelMsg};
use crate::redlock::RedlockClient;
use crate::storage::StorageRequest;
use crate::zookeeper::client::ZkLock;

/// What a lock client tells its workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockSignal {
    /// The client now holds the lock, with this fencing token if the family gives one.
    Granted {
        /// The fencing token.
        token: Option<u64>,
        /// The service's name for the acquisition, as its `Issued` record gave it (see
        /// `lockstep_check::Event::Issued`); `None` where the service records none.
        ticket: Option<u64>,
    },
    /// The client gave up acquiring.
    AcquireFailed,
    /// The client learned it no longer holds the lock (a renewal was refused).
    Lost,
    /// The release finished (or there was nothing to release).
    Released,
}

/// A lock client of some family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lock {
    /// Redis: a single instance, or a primary with replicas and Sentinel.
    Redis(RedisLock),
    /// Redlock over several instances.
    Redlock(RedlockClient),
    /// An etcd session and Mutex (or Election).
    Etcd(EtcdLock),
    /// A ZooKeeper session with Curator's connection states and the lock recipe.
    ZooKeeper(ZkLock),
}

impl Lock {
    pub(crate) fn acquire(&mut self, ctx: &mut Ctx<'_, Node>) -> Option<LockSignal> {
        match self {
            Lock::Redis(l) => l.acquire(ctx),
            Lock::Redlock(l) => l.acquire(ctx),
            Lock::Etcd(l) => l.acquire(ctx),
            Lock::ZooKeeper(l) => l.acquire(ctx),
        }
    }

    pub(crate) fn release(&mut self, ctx: &mut Ctx<'_, Node>) -> Option<LockSignal> {
        match self {
            Lock::Redis(l) => l.release(ctx),
            Lock::Redlock(l) => l.release(ctx),
            Lock::Etcd(l) => l.release(ctx),
            Lock::ZooKeeper(l) => l.release(ctx),
        }
    }

    pub(crate) fn valid(&self, ctx: &Ctx<'_, Node>) -> bool {
        match self {
            Lock::Redis(l) => l.valid(ctx),
            Lock::Redlock(l) => l.valid(ctx),
            Lock::Etcd(l) => l.valid(ctx),
            Lock::ZooKeeper(l) => l.valid(ctx),
        }
    }

    /// Sends a storage operation to a resource that lives in the lock service itself.
    ///
    /// # Panics
    /// For a family whose service holds no resource (only etcd's does).
    pub(crate) fn resource_op(&mut self, ctx: &mut Ctx<'_, Node>, op: StorageRequest) {
        match self {
            Lock::Etcd(l) => l.resource_op(ctx, op),
            lock => panic!("the resource lives in a storage node, not in {lock:?}"),
        }
    }

    pub(crate) fn reset(&mut self) {
        match self {
            Lock::Redis(l) => l.reset(),
            Lock::Redlock(l) => l.reset(),
            Lock::Etcd(l) => l.reset(),
            Lock::ZooKeeper(l) => l.reset(),
        }
    }

    /// A message from the lock service; `None` if it was not for the lock client.
    pub(crate) fn on_message(&mut self, ctx: &mut Ctx<'_, Node>, msg: &Msg) -> Option<LockSignal> {
        match (self, msg) {
            (Lock::Redis(l), Msg::RedisReply { id, reply }) => l.on_reply(ctx, *id, *reply),
            (Lock::Redlock(l), Msg::RedisReply { id, reply }) => l.on_reply(ctx, *id, *reply),
            (Lock::Etcd(l), Msg::EtcdReply { id, reply }) => l.on_reply(ctx, *id, reply.clone()),
            (Lock::ZooKeeper(l), Msg::ZkReply { conn, seq, reply }) => {
                l.on_reply(ctx, *conn, *seq, reply.clone())
            }
            (Lock::Redis(l), Msg::Sentinel(SentinelMsg::PrimaryIs { id, primary })) => {
                l.on_primary(ctx, *id, *primary)
            }
            (lock, msg) => panic!("lock client {lock:?} got {msg:?}"),
        }
    }

    pub(crate) fn on_timer(
        &mut self,
        ctx: &mut Ctx<'_, Node>,
        timer: LockTimer,
    ) -> Option<LockSignal> {
        match self {
            Lock::Redis(l) => l.on_timer(ctx, timer),
            Lock::Redlock(l) => l.on_timer(ctx, timer),
            Lock::Etcd(l) => l.on_timer(ctx, timer),
            Lock::ZooKeeper(l) => l.on_timer(ctx, timer),
        }
    }
}
