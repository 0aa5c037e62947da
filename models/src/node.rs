//! The process type of lockstep's worlds: every node is a server, a sentinel, a client or
//! storage, and they share one message and one timer type.

use lockstep_check::Event;
use lockstep_sim::{Ctx, NodeId, Process, TimerId};

use crate::etcd::proto::{Reply as EtcdReply, Request as EtcdRequest};
use crate::etcd::server::{EtcdServer, Proposal};
use crate::raft::RaftMsg;
use crate::redis::{
    Command, RedisServer, ReplMsg, Reply, Sentinel, SentinelMsg, SentinelTimer, ServerTimer,
};
use crate::storage::{Storage, StorageReply, StorageRequest};
use crate::workload::Client;
use crate::zookeeper::proto::{Peer as ZkPeer, Reply as ZkReply, Request as ZkRequest};
use crate::zookeeper::server::ZkServer;

/// Every message between nodes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A command to a Redis server, with the client's request id.
    Redis {
        /// The request id, echoed in the reply.
        id: u64,
        /// The command.
        cmd: Command,
    },
    /// A Redis server's reply.
    RedisReply {
        /// The request id.
        id: u64,
        /// The reply.
        reply: Reply,
    },
    /// A storage operation.
    Storage(StorageRequest),
    /// Storage's answer.
    StorageReply(StorageReply),
    /// A request to an etcd member, with the client's request id.
    Etcd {
        /// The request id, echoed in the reply (and in every event of a watch).
        id: u64,
        /// The request, boxed: a transaction is the largest of all messages, and every
        /// message is moved through the world's queue several times. (`Box` hashes and
        /// prints as what it holds.)
        req: Box<EtcdRequest>,
    },
    /// An etcd member's reply.
    EtcdReply {
        /// The request id.
        id: u64,
        /// The reply.
        reply: EtcdReply,
    },
    /// A raft message between etcd members.
    Raft(RaftMsg<Proposal>),
    /// A message of a Redis replication link.
    Repl(ReplMsg),
    /// A message to, from or between Redis sentinels.
    Sentinel(SentinelMsg),
    /// A ZooKeeper client's request on its connection `conn`.
    Zk {
        /// The client's connection number, echoed in every message back on it.
        conn: u64,
        /// Its position in the connection's stream from the client (the connect is 0).
        seq: u64,
        /// The request.
        req: ZkRequest,
    },
    /// A ZooKeeper server's message on a client's connection `conn`.
    ZkReply {
        /// The client's connection number.
        conn: u64,
        /// Its position in the connection's stream from the server.
        seq: u64,
        /// The reply, watch event or close.
        reply: ZkReply,
    },
    /// A message between ZooKeeper ensemble members.
    ZkPeer(ZkPeer),
}

/// Timers of a lock client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockTimer {
    /// The reply to request `req` is overdue.
    Timeout {
        /// The request.
        req: u64,
    },
    /// Try acquiring again.
    Retry,
    /// Renew the lease held under `value`; a renewal timer of an earlier lease is ignored.
    Renew {
        /// The lock value of the lease it renews.
        value: u64,
    },
    /// A timer of the etcd client.
    Etcd(EtcdTimer),
    /// A timer of the ZooKeeper client.
    Zk(ZkTimer),
}

/// Timers of the ZooKeeper lock client. Those of a connection carry its number, so a timer of
/// a connection that is over is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZkTimer {
    /// Connect again (after the random wait before a reconnect); `seq` is the number of the
    /// last connection when it was set.
    Reconnect {
        /// The last connection's number.
        seq: u64,
    },
    /// Connection `conn`'s connect attempt has taken `T / #servers`.
    ConnectTimeout {
        /// The connection.
        conn: u64,
    },
    /// Check whether connection `conn` has been silent for 2T/3.
    ReadCheck {
        /// The connection.
        conn: u64,
    },
    /// Check whether connection `conn` has been idle long enough to ping.
    PingCheck {
        /// The connection.
        conn: u64,
    },
    /// Curator's simulated expiration of SUSPENDED number `suspension` (WALL clock).
    Lost {
        /// The suspension.
        suspension: u64,
    },
}

/// Timers of the etcd lock client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EtcdTimer {
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

/// Timers of a workload client. Those of one critical section carry its grant's sequence
/// number, so a timer left over from an earlier grant is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkTimer {
    /// Thinking is over: request the lock.
    Think,
    /// Claim the resource for `grant` (compare-and-set storage).
    Claim {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Work under `grant` is done.
    WorkDone {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Check the lease of `grant` before writing.
    Check {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Send the write of `grant`.
    Write {
        /// The grant's sequence number.
        grant: u32,
    },
    /// Storage has not answered operation `op`.
    StorageTimeout {
        /// The operation's sequence number.
        op: u32,
    },
}

/// Every timer of every node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// A lock client's timer.
    Lock(LockTimer),
    /// A workload client's timer.
    Work(WorkTimer),
    /// A Redis server's timer.
    Redis(ServerTimer),
    /// A Redis sentinel's timer.
    Sentinel(SentinelTimer),
    /// An etcd member's timer.
    EtcdServer(EtcdServerTimer),
    /// A ZooKeeper server's timer.
    ZkServer(ZkServerTimer),
}

/// Timers of a ZooKeeper server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZkServerTimer {
    /// The broadcast's tick (every tickTime/2), which is also the leader's ping to learners.
    RaftTick,
    /// The leader's session tracker runs at a tick boundary of its MONO clock.
    Expiry {
        /// The epoch of the tracker that set it.
        epoch: u64,
    },
}

/// Timers of an etcd member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EtcdServerTimer {
    /// The raft tick (every `TickMs`).
    RaftTick,
    /// The lessor's run loop (every 500 ms).
    LessorTick,
    /// The lease checkpoint loop.
    Checkpoint,
}

/// A node of a lockstep world.
// A world holds a handful of nodes, each once: variant sizes do not matter, and boxing
// would add a pointer chase to every handler call.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A Redis server.
    Redis(RedisServer),
    /// A workload client with its lock client.
    Client(Client),
    /// The protected storage.
    Storage(Storage),
    /// A Redis sentinel.
    Sentinel(Sentinel),
    /// An etcd member.
    Etcd(EtcdServer),
    /// A ZooKeeper ensemble member.
    ZooKeeper(ZkServer),
}

impl Process for Node {
    type Msg = Msg;
    type Timer = Timer;
    type Event = Event;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Node>) {
        match self {
            Node::Client(c) => c.on_start(ctx),
            Node::Redis(s) => s.on_start(ctx),
            Node::Sentinel(s) => s.on_start(ctx),
            Node::Etcd(s) => s.on_start(ctx),
            Node::ZooKeeper(s) => s.on_start(ctx),
            Node::Storage(_) => {}
        }
    }

    fn on_message(&mut self, ctx: &mut Ctx<'_, Node>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (Node::Redis(s), Msg::Redis { id, cmd }) => s.on_command(ctx, from, id, cmd),
            (Node::Redis(s), Msg::Repl(m)) => s.on_repl(ctx, from, m),
            (Node::Redis(s), Msg::Sentinel(m)) => s.on_sentinel(ctx, from, m),
            (Node::Sentinel(s), Msg::Sentinel(m)) => s.on_message(ctx, from, m),
            (Node::Etcd(s), msg @ (Msg::Raft(_) | Msg::Etcd { .. })) => {
                s.on_message(ctx, from, msg);
            }
            (Node::ZooKeeper(s), msg @ (Msg::ZkPeer(_) | Msg::Zk { .. })) => {
                s.on_message(ctx, from, msg);
            }
            (Node::Storage(s), Msg::Storage(req)) => s.on_request(ctx, from, req),
            (
                Node::Client(c),
                msg @ (Msg::RedisReply { .. }
                | Msg::StorageReply(_)
                | Msg::Sentinel(_)
                | Msg::EtcdReply { .. }
                | Msg::ZkReply { .. }),
            ) => {
                c.on_message(ctx, msg);
            }
            (node, msg) => panic!("{} cannot handle {msg:?} (node {node:?})", ctx.name()),
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_, Node>, _id: TimerId, timer: Timer) {
        match (self, timer) {
            (Node::Client(c), timer @ (Timer::Lock(_) | Timer::Work(_))) => c.on_timer(ctx, timer),
            (Node::Redis(s), Timer::Redis(t)) => s.on_timer(ctx, t),
            (Node::Sentinel(s), Timer::Sentinel(t)) => s.on_timer(ctx, t),
            (Node::Etcd(s), Timer::EtcdServer(t)) => s.on_timer(ctx, t),
            (Node::ZooKeeper(s), Timer::ZkServer(t)) => s.on_timer(ctx, t),
            (node, timer) => panic!(
                "{} cannot handle timer {timer:?} (node {node:?})",
                ctx.name()
            ),
        }
    }

    fn on_crash(&mut self) {
        match self {
            Node::Redis(s) => s.on_crash(),
            Node::Client(c) => c.on_crash(),
            Node::Sentinel(s) => s.on_crash(),
            Node::Etcd(s) => s.on_crash(),
            Node::ZooKeeper(s) => s.on_crash(),
            // Storage is a database whose state is durable.
            Node::Storage(_) => {}
        }
    }

    fn on_restart(&mut self, ctx: &mut Ctx<'_, Node>) {
        match self {
            Node::Client(c) => c.on_start(ctx),
            Node::Redis(s) => s.on_restart(ctx),
            Node::Sentinel(s) => s.on_start(ctx),
            Node::Etcd(s) => s.on_restart(ctx),
            Node::ZooKeeper(s) => s.on_start(ctx),
            Node::Storage(_) => {}
        }
    }
}
