//! What etcd clients and servers say to each other: the gRPC calls the lock recipes use,
//! reduced to their meaning.

use lockstep_sim::{Dur, NodeId};

use super::mvcc::{EventKind, LeaseId, Range, Rev, Txn, TxnResult};
use crate::storage::StorageRequest;

/// A client request to a member.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// `LeaseGrant`: through raft.
    LeaseGrant {
        /// The TTL asked for (the server raises it to its minimum).
        ttl: Dur,
    },
    /// One message of the `LeaseKeepAlive` stream: renewed by the leader only.
    KeepAlive {
        /// The lease.
        lease: LeaseId,
    },
    /// `LeaseRevoke`: through raft.
    LeaseRevoke {
        /// The lease.
        lease: LeaseId,
    },
    /// `Txn`: through raft (a transaction that only reads is served as a read).
    Txn(Txn),
    /// A linearizable `Range` (ReadIndex, or the leader's lease when so configured).
    Get(Range),
    /// `Watch` one key from a revision; the member streams its events until cancelled.
    Watch {
        /// The key.
        key: String,
        /// The first revision of interest.
        from: Rev,
    },
    /// Cancel the watch started by request `watch`.
    CancelWatch {
        /// The request id of the watch.
        watch: u64,
    },
    /// An operation on the protected resource kept in the key space
    /// ([`super::resource`]): `txn` is its read or its guarded write. The member answers
    /// with the workload's own `StorageReply`, and records the operation in the history.
    Resource {
        /// The workload's operation, as it would go to a storage node.
        op: StorageRequest,
        /// Its transaction.
        txn: Txn,
    },
}

/// A member's answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// The lease granted.
    LeaseGranted {
        /// Its id.
        lease: LeaseId,
        /// Its TTL.
        ttl: Dur,
    },
    /// A keepalive response: the lease's TTL, or zero when it is gone.
    KeepAlive {
        /// The lease.
        lease: LeaseId,
        /// Its TTL; zero means not found.
        ttl: Dur,
    },
    /// The lease was revoked.
    Revoked,
    /// A transaction's or a read's result.
    Txn(TxnResult),
    /// One event of a watch.
    WatchEvent {
        /// The key.
        key: String,
        /// The revision of the event.
        revision: Rev,
        /// Put or delete.
        kind: EventKind,
    },
    /// A put named a lease that does not exist (any more): the transaction did nothing.
    LeaseNotFound,
    /// This member is not the leader (and does not forward): try `leader`.
    NotLeader {
        /// The leader this member knows of.
        leader: Option<NodeId>,
    },
}
