//! What ZooKeeper clients and servers say to each other, reduced to the meaning the lock
//! recipe needs. A client numbers its connections; every message of a connection carries
//! the number, so that what a server sends on an older connection is recognised and ignored,
//! as bytes on a closed socket would be. A connection is a TCP stream: each message also
//! carries its position in its direction of the stream; the receiver drops duplicates and
//! holds messages that overtook an earlier one until it arrives. A message lost for good
//! stalls the stream, and the client's read timeout ends the connection, as with TCP.

use lockstep_sim::{Dur, NodeId};

use super::tree::{ErrorCode, EventKind, Path, Stat, Txn};
use super::{SessionId, Zxid};
use crate::raft::RaftMsg;

/// A client's request to the server it is connected (or connecting) to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// `ConnectRequest`: a new session (`None`) or reconnecting an existing one.
    Connect {
        /// The session to resume.
        session: Option<SessionId>,
        /// The requested timeout.
        timeout: Dur,
        /// The last zxid the client has seen; a server that is behind refuses it.
        last_zxid: Zxid,
    },
    /// A ping (xid −2 in ZooKeeper): keeps the session alive, answered at once.
    Ping,
    /// An operation, with the client's xid.
    Op {
        /// The request's xid, echoed in the result.
        xid: u64,
        /// The operation.
        op: Op,
    },
}

/// The operations the recipe uses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `create`.
    Create {
        /// The path (a prefix for a sequential node).
        path: Path,
        /// `EPHEMERAL`.
        ephemeral: bool,
        /// `SEQUENTIAL`.
        sequential: bool,
    },
    /// `delete` (any version).
    Delete {
        /// The path.
        path: Path,
    },
    /// `getChildren`, leaving a child watch when asked.
    GetChildren {
        /// The parent.
        path: Path,
        /// Leave a watch on the children.
        watch: bool,
    },
    /// `getData`: the stat, leaving a data watch when asked and the node exists.
    GetData {
        /// The node.
        path: Path,
        /// Leave a watch on the node.
        watch: bool,
    },
}

/// The answer to an operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpResult {
    /// `create` succeeded.
    Created {
        /// The node's full path.
        path: Path,
        /// Its czxid (`create2` returns the stat).
        czxid: Zxid,
    },
    /// `delete` succeeded.
    Deleted,
    /// The children's names.
    Children(Vec<Path>),
    /// The node's stat.
    Stat(Stat),
    /// The operation failed.
    Error(ErrorCode),
}

/// A server's message to a client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// `ConnectResponse`: the session and its negotiated timeout; a timeout of zero means
    /// the session has expired.
    Connected {
        /// The session.
        session: SessionId,
        /// The negotiated timeout, or zero.
        timeout: Dur,
    },
    /// The answer to a ping.
    Pong,
    /// An operation's result, at the server's last applied zxid.
    Result {
        /// The request's xid.
        xid: u64,
        /// The server's last applied zxid.
        zxid: Zxid,
        /// The result.
        result: OpResult,
    },
    /// A watch fired.
    Watch {
        /// The watched path.
        path: Path,
        /// What happened.
        kind: EventKind,
    },
    /// The server closed the connection (it refused it, or it left its epoch).
    Closed,
}

/// A transaction as a server hands it to the atomic broadcast, with where to answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proposal {
    /// The server the client asked; only it answers.
    pub origin: NodeId,
    /// The client to answer (the origin itself for the leader's own closeSession).
    pub client: NodeId,
    /// The client's connection.
    pub conn: u64,
    /// The client's xid (0 for a connect).
    pub xid: u64,
    /// What to apply.
    pub txn: Txn,
}

/// Messages between ensemble members.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// The atomic broadcast.
    Raft(RaftMsg<Proposal>),
    /// A learner hands a write to the leader (`Request` to the leader's processors).
    Forward(Proposal),
    /// The leader refused a forwarded write: the session is gone, or it is not ready.
    Refused {
        /// The proposal refused.
        proposal: Proposal,
        /// Why.
        error: ErrorCode,
    },
    /// A learner asks the leader whether a reconnecting session is still valid
    /// (`REVALIDATE`).
    Revalidate {
        /// The client.
        client: NodeId,
        /// Its connection.
        conn: u64,
        /// The session.
        session: SessionId,
    },
    /// The leader's answer: the session's timeout, or `None` when it has expired.
    Revalidated {
        /// The client.
        client: NodeId,
        /// Its connection.
        conn: u64,
        /// The session.
        session: SessionId,
        /// Its timeout if valid.
        timeout: Option<Dur>,
    },
    /// The leader's ping to a learner, every tickTime/2.
    Ping,
    /// A learner's answer: the sessions it saw traffic from since its last answer.
    Touches(Vec<SessionId>),
}
