//! etcd: the lease lock over Raft (docs/families/etcd.md). The key space and the lessor are
//! the replicated state machine; the server applies raft entries to them; the client keeps a
//! session alive and runs the Mutex and Election recipes. The protected resource may live in
//! the key space too, written by guarded transactions ([`resource`]). Each member keeps an
//! owner audit ([`crate::audit`]): the key first in line in its applied state, recorded as
//! `Issued` with the key's create revision, which the client's grant names as its ticket.

pub mod client;
pub mod family;
pub mod lease;
pub mod mvcc;
pub mod proto;
pub mod resource;
pub mod server;

pub use family::Etcd;

use crate::raft::RaftMsg;
use crate::storage::StorageReply;
use proto::{Reply, Request};
use server::Proposal;

/// Every message of the etcd family.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A request to a member, with the client's request id.
    Request {
        /// The request id, echoed in the reply (and in every event of a watch).
        id: u64,
        /// The request, boxed: a transaction is the largest of all messages, and every
        /// message is moved through the world's queue several times. (`Box` hashes and
        /// prints as what it holds.)
        req: Box<Request>,
    },
    /// A member's reply.
    Reply {
        /// The request id.
        id: u64,
        /// The reply.
        reply: Reply,
    },
    /// A member's answer to an operation on the resource kept in the key space, as storage
    /// would give it ([`resource`]).
    Resource(StorageReply),
    /// A raft message between members.
    Raft(RaftMsg<Proposal>),
}

/// Timers of an etcd member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerTimer {
    /// The raft tick (every `TickMs`).
    RaftTick,
    /// The lessor's run loop (every 500 ms).
    LessorTick,
    /// The lease checkpoint loop.
    Checkpoint,
}

/// Timers of the etcd lock client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientTimer {
    /// The keepalive send loop (every 500 ms).
    KeepAlivePoll,
    /// The keepalive sent as request `req` got no answer.
    KeepAliveTimeout {
        /// The request.
        req: u64,
    },
    /// The session deadline loop (every 1 s).
    DeadlinePoll,
    /// Unary request `req` got no answer.
    Timeout {
        /// The request.
        req: u64,
    },
    /// Retry request `req`, which found no leader.
    Backoff {
        /// The request.
        req: u64,
    },
    /// Look at the predecessor watched by request `req` again.
    WatchCheck {
        /// The watch's request id.
        req: u64,
    },
}
