//! Consul: sessions and a KV lock over Raft (docs/families/consul.md).
//!
//! - The servers ([`server`]) are a Raft cluster (the etcd family's [`crate::raft`]) whose
//!   state machine holds the sessions and the lock key (`Session`, `LockIndex`, `CreateIndex`,
//!   `ModifyIndex`). Session TTL timers live only on the leader, on its monotonic clock; the
//!   lock-delay lives in each server's memory, set when it applies a session's destruction.
//! - The client ([`client`]) is `api.Lock` (`api/lock.go`): a session renewed every TTL/2, a
//!   blocking wait for the key, `?acquire`, `monitorLock`, `?release` and the session's
//!   destruction on unlock.

pub mod client;
pub mod family;
pub mod resource;
pub mod server;

pub use family::Consul;

use lockstep_sim::{Dur, NodeId};

use crate::raft::RaftMsg;
use crate::storage::{StorageReply, StorageRequest};
use resource::TxnCheck;
use server::Proposal;

/// A session's id (Consul's UUID), drawn by the server that creates it.
pub type SessionId = u64;

/// What happens to the keys a session holds when it is invalidated (`Behavior`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Behavior {
    /// The keys lose their `Session`; their values stay (the default).
    #[default]
    Release,
    /// The keys are deleted.
    Delete,
}

/// A request to a server, as the agent's HTTP API forwards it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// `PUT /v1/session/create`.
    SessionCreate {
        /// `TTL`.
        ttl: Dur,
        /// `LockDelay`.
        lock_delay: Dur,
        /// `Behavior`.
        behavior: Behavior,
    },
    /// `PUT /v1/session/renew/:id` (the leader resets its timer; no raft write).
    SessionRenew {
        /// The session.
        session: SessionId,
    },
    /// `PUT /v1/session/destroy/:id`.
    SessionDestroy {
        /// The session.
        session: SessionId,
    },
    /// `PUT /v1/kv/lock?acquire=:session`.
    Acquire {
        /// The session.
        session: SessionId,
    },
    /// `PUT /v1/kv/lock?release=:session`.
    Release {
        /// The session.
        session: SessionId,
    },
    /// `GET /v1/kv/lock?index=:index&wait=:wait`: a blocking query, answered once the key's
    /// `ModifyIndex` passes `index`, or when `wait` runs out.
    Get {
        /// The index the caller has seen.
        index: u64,
        /// How long the server may hold the query.
        wait: Dur,
    },
    /// An operation on the resource kept in the KV store ([`resource`]): a read
    /// (`GET /v1/kv/resource`) or a write (`PUT /v1/txn`, guarded by `check`).
    Resource {
        /// The workload's operation.
        op: StorageRequest,
        /// A write's check on the lock key.
        check: TxnCheck,
    },
}

/// The lock key as a read returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KvView {
    /// The session holding it, if any.
    pub session: Option<SessionId>,
    /// Times it was acquired by a new session.
    pub lock_index: u64,
    /// The raft index of its last change.
    pub modify_index: u64,
}

/// A server's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// The session was created.
    Session(SessionId),
    /// The renew reached the leader, which knows the session.
    Renewed,
    /// The session does not exist: a renew's 404, an acquire's "invalid session".
    SessionGone,
    /// `?acquire`: whether the session now holds the key, and the key's `LockIndex` (the
    /// client reads it back for its sequencer).
    Acquire {
        /// Held.
        locked: bool,
        /// The key's `LockIndex`.
        lock_index: u64,
        /// The key's `ModifyIndex`: while the session holds it, the raft index of the
        /// acquisition, which names it (the grant's ticket).
        modify_index: u64,
    },
    /// `?release` or a destroy was applied.
    Done,
    /// A read of the key, with the index to wait on next (`X-Consul-Index`).
    Kv {
        /// The key, if it exists.
        entry: Option<KvView>,
        /// The index to pass to the next blocking query.
        index: u64,
    },
    /// This server is not the leader; the leader it knows, if any (the agent's RPC would be
    /// forwarded there).
    NotLeader {
        /// The leader.
        leader: Option<NodeId>,
    },
    /// A resource operation was served or applied.
    Resource(StorageReply),
}

/// Every message of the Consul family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A request, with the client's request id.
    Request {
        /// The request id, echoed in the reply.
        id: u64,
        /// The request.
        req: Request,
    },
    /// A server's reply.
    Reply {
        /// The request id.
        id: u64,
        /// The reply.
        reply: Reply,
    },
    /// A raft message between servers.
    Raft(RaftMsg<Proposal>),
    /// A gossip probe (memberlist's ping). `via`: sent for `via`, which asked the sender to
    /// probe indirectly; the ack goes back to the sender, which relays it.
    Ping {
        /// The probe.
        seq: u64,
        /// The member the probe is for, when the sender relays it.
        via: Option<NodeId>,
    },
    /// memberlist's ping-req: probe `target` on the sender's behalf.
    PingReq {
        /// The probe.
        seq: u64,
        /// The member to probe.
        target: NodeId,
    },
    /// The answer to a probe; `to`: relay it there.
    Ack {
        /// The probe.
        seq: u64,
        /// The member to relay it to.
        to: Option<NodeId>,
    },
}

/// What any gossip member (server or client agent) does with a gossip message: answer a
/// probe, probe for another, relay an ack. Nothing when it is not gossip. Gossip is UDP
/// (memberlist's `probeNode` in `state.go`, `net.go`): datagrams, which a partition or a lossy
/// link loses. memberlist's TCP fallback ping after a failed UDP probe is not modelled.
pub(crate) fn gossip<T>(ctx: &mut impl crate::env::Host<Msg, T>, from: NodeId, msg: &Msg) {
    match *msg {
        Msg::Ping { seq, via } => ctx.send_datagram(from, Msg::Ack { seq, to: via }),
        Msg::PingReq { seq, target } => ctx.send_datagram(
            target,
            Msg::Ping {
                seq,
                via: Some(from),
            },
        ),
        Msg::Ack { seq, to: Some(to) } => ctx.send_datagram(to, Msg::Ack { seq, to: None }),
        _ => {}
    }
}

/// Timers of a Consul server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerTimer {
    /// The raft tick.
    RaftTick,
    /// A session's TTL timer on the leader (TTL × 2) ran out.
    SessionTtl(SessionId),
    /// A blocking query's wait ran out.
    Blocking(u64),
    /// The leader's gossip probe round (every second).
    Probe,
    /// Probe `seq` got no direct ack within the probe timeout: ask others.
    ProbeTimeout(u64),
}

/// Timers of the Consul lock client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientTimer {
    /// Time to renew the session (every TTL/2; every second after a failed renew).
    Renew,
    /// Request `req` got no answer.
    Timeout {
        /// The request.
        req: u64,
    },
    /// `DefaultLockRetryTime` after a failed acquire: wait for the key again.
    Retry,
    /// Chubby's local lease may have run out: the session is in jeopardy.
    LocalLease,
    /// The next try of a request held while no leader is known.
    Hold {
        /// The try.
        n: u64,
    },
}
