//! PostgreSQL advisory locks (docs/families/postgres.md).
//!
//! - The server ([`server`]) keeps one backend per client connection and the shared lock table:
//!   session-level advisory locks (re-entrant with a count, not released by `ROLLBACK`,
//!   released at session end) and transaction-level ones (released at `COMMIT`/`ROLLBACK`),
//!   blocking waits with `lock_timeout`, the counter row of the protected resource, and the
//!   ways a backend ends: the client's FIN or RST, TCP keepalive (`tcp_keepalives_*`, Linux's
//!   7200 s + 9 × 75 s by default), `idle_session_timeout` and
//!   `idle_in_transaction_session_timeout`. A crash frees every lock; committed rows survive.
//! - pgbouncer ([`bouncer`]) may sit between the clients and the server, in `session` or
//!   `transaction` pool mode.
//! - The lock client ([`client`]) runs one of two recipes: a session lock on a connection of
//!   its own with the protected work on another (a pool's), or a transaction lock with the
//!   work in the same transaction.
//!
//! Connections are explicit: every statement names its sender's connection, a number the
//! sender never reuses (the ephemeral port of a new TCP connection). The world's reset of a
//! node pair (a crash, a restart) ends all of them at once; the server also ends one alone.

pub mod bouncer;
pub mod client;
pub mod family;
pub mod server;

pub use family::Postgres;

use lockstep_sim::{LocalTime, NodeId};

use crate::env::Host;
use crate::family::Service;
use crate::storage::{StorageReply, StorageRequest};

/// The advisory lock key every client of a run locks (`pg_advisory_lock(1)`).
pub const LOCK_KEY: i64 = 1;

/// A connection: the node that opened it and its number there.
pub type Conn = (NodeId, u32);

/// A statement, as a client sends it in one simple-query message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// `BEGIN`.
    Begin,
    /// `COMMIT` (a `ROLLBACK` when the transaction is aborted).
    Commit,
    /// `ROLLBACK`.
    Rollback,
    /// `SELECT pg_[try_]advisory[_xact]_lock(key)`, preceded by `BEGIN;` in the same message
    /// when `begin` is set.
    Lock {
        /// The key.
        key: i64,
        /// Transaction-level (`_xact`).
        xact: bool,
        /// Blocking (`pg_advisory_lock`) rather than `pg_try_advisory_lock`.
        wait: bool,
        /// `BEGIN;` first.
        begin: bool,
    },
    /// `SELECT pg_advisory_unlock(key)`.
    Unlock {
        /// The key.
        key: i64,
    },
    /// A read or an `UPDATE` of the counter row, the protected resource.
    Resource(StorageRequest),
    /// `DISCARD ALL`: pgbouncer's `server_reset_query` in session mode, which ends the
    /// session's advisory locks (`pg_advisory_unlock_all`) and any transaction.
    DiscardAll,
    /// The protocol's Terminate message, then the FIN: the sender closes the connection.
    Terminate,
    /// `INSERT INTO locks (resource_key, owner, acquired_at) VALUES (1, $owner, now() | $at)
    /// ON CONFLICT DO NOTHING RETURNING owner`: the lock table's acquire, one autocommit
    /// statement, answered `Bool(true)` when the row was inserted (the seed's §2.9).
    InsertLock {
        /// The owner: the client's node.
        owner: NodeId,
        /// `acquired_at` on the client's wall clock; `None`: the server's `now()`.
        at: Option<LocalTime>,
    },
    /// `DELETE FROM locks WHERE resource_key = 1 AND owner = $owner`: the lock table's
    /// release, answered `Bool(true)` when it deleted the row.
    DeleteLock {
        /// The owner.
        owner: NodeId,
    },
    /// `BEGIN; SELECT id FROM jobs WHERE NOT done ORDER BY id LIMIT 1 FOR UPDATE [SKIP
    /// LOCKED]`: a job queue's dequeue, answered [`Answer::Job`] with the job whose row it
    /// locked, or none.
    Dequeue {
        /// `SKIP LOCKED`: pass over rows other transactions locked rather than wait for them.
        skip_locked: bool,
        /// The worker: the client's node (the connection's peer may be pgbouncer), named by
        /// the history's `Claimed` when its transaction locks a job's row.
        worker: NodeId,
    },
    /// `UPDATE jobs SET done = true WHERE id = $job; COMMIT`: the job is done.
    Complete {
        /// The job.
        job: u64,
    },
}

/// The lock table's row of the run's lock key: its owner and `acquired_at`, on the wall clock
/// of whoever stamped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockRow {
    /// The `owner` column.
    pub owner: NodeId,
    /// The `acquired_at` column.
    pub acquired_at: LocalTime,
}

/// The server's answer to a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// The command completed (`BEGIN`, `COMMIT`, `ROLLBACK`, `DISCARD ALL`).
    Done,
    /// `COMMIT` of an aborted transaction: `ROLLBACK`.
    RolledBack,
    /// A blocking lock function returned: the lock is held.
    Locked,
    /// A function's boolean: `pg_try_advisory_lock`, `pg_advisory_unlock`.
    Bool(bool),
    /// The counter row's answer, as storage gives it.
    Resource(StorageReply),
    /// `ERROR: canceling statement due to lock timeout` (the transaction, if any, is aborted).
    LockTimeout,
    /// `ERROR: current transaction is aborted, commands ignored until end of transaction
    /// block`, or a statement pgbouncer could not run (its server connection was lost).
    Error,
    /// The server is a standby (in recovery): libpq's `target_session_attrs = read-write`
    /// turns the new connection down and tries the next host.
    ReadOnly,
    /// A dequeue's row: the job it locked, or `None` when no row qualified.
    Job(Option<u64>),
}

/// Every message of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A statement on the sender's connection `conn`, with the sender's request id. `seq`
    /// numbers the connection's statements from 1: the receiver takes them in that order, once
    /// each, as TCP delivers a connection's bytes (the world's links may reorder, lose or
    /// duplicate messages; a lost one stalls its connection, as TCP's retransmissions would
    /// until the connection is given up).
    Query {
        /// The sender's connection.
        conn: u32,
        /// The statement's place on its connection, from 1.
        seq: u32,
        /// The request id, echoed in the answer.
        id: u64,
        /// The statement.
        stmt: Stmt,
    },
    /// The answer, on the receiver's connection `conn`.
    Answer {
        /// The connection.
        conn: u32,
        /// The request id.
        id: u64,
        /// The answer.
        answer: Answer,
    },
    /// A TCP keepalive probe on the receiver's connection `conn`.
    Probe {
        /// The connection.
        conn: u32,
    },
    /// The prober's peer's kernel answers a probe: an ACK when the connection is open there
    /// (`alive`), an RST when it does not know it.
    ProbeAck {
        /// The connection, as the prober numbers it.
        conn: u32,
        /// An ACK rather than an RST.
        alive: bool,
    },
    /// The sender closed connection `conn` (a FIN): a client ending its session, the server
    /// terminating a backend, or an RST for a connection the sender no longer knows. `conn`
    /// is numbered as its opener numbers it.
    Close {
        /// The connection.
        conn: u32,
    },
    /// A server's replication status to the other server.
    Wal(WalStatus),
}

/// A server's replication status, sent to the other server every heartbeat and, from a
/// primary, on every commit: its timeline, its WAL position (commits since the tables were
/// created), and its committed rows, which a standby following a primary takes (streaming
/// replication; `pg_rewind` when it had diverged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WalStatus {
    /// The sender's timeline (a promotion starts a new one).
    pub timeline: u32,
    /// The sender's WAL position.
    pub lsn: u64,
    /// The sender's counter row value.
    pub value: u64,
    /// The sender is a primary.
    pub primary: bool,
    /// The sender's lock table row, if any.
    pub lock_row: Option<LockRow>,
}

/// Timers of the server and pgbouncer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timer {
    /// TCP keepalive of a connection: time to look whether it has been idle long enough to
    /// probe, to probe again, or to give up.
    KeepAlive(Conn),
    /// A blocking lock's `lock_timeout` ran out.
    LockTimeout(Conn),
    /// `idle_session_timeout` or `idle_in_transaction_session_timeout`: time to look whether
    /// the backend is still idle.
    Idle(Conn),
    /// Time to send the server's replication status and, on a standby, to look whether the
    /// primary has been silent long enough to promote.
    Heartbeat,
    /// The lock table's cleanup job (pg_cron) runs: `DELETE FROM locks WHERE acquired_at <
    /// now() - ttl`.
    Cleanup,
    /// The job queue's producer enqueues its next job.
    Enqueue,
}

/// A service node: the server or pgbouncer.
// A world holds one or two of them: variant sizes do not matter, and boxing the server would
// add a pointer chase to every handler call.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgNode {
    /// `postgres`.
    Server(server::PgServer),
    /// `pgbouncer`.
    Bouncer(bouncer::Bouncer),
}

impl Service for PgNode {
    type Msg = Msg;
    type Timer = Timer;

    fn plays(&self, role: &str) -> bool {
        match self {
            PgNode::Server(s) => role == crate::family::played::PRIMARY && s.role().0,
            PgNode::Bouncer(_) => false,
        }
    }

    fn on_start(&mut self, env: &mut impl Host<Msg, Timer>) {
        if let PgNode::Server(s) = self {
            s.on_start(env);
        }
    }

    fn on_message(&mut self, env: &mut impl Host<Msg, Timer>, from: NodeId, msg: Msg) {
        match self {
            PgNode::Server(s) => s.on_message(env, from, msg),
            PgNode::Bouncer(b) => b.on_message(env, from, msg),
        }
    }

    fn on_timer(&mut self, env: &mut impl Host<Msg, Timer>, timer: Timer) {
        match self {
            PgNode::Server(s) => s.on_timer(env, timer),
            PgNode::Bouncer(b) => b.on_timer(env, timer),
        }
    }

    fn on_crash(&mut self) {
        match self {
            PgNode::Server(s) => s.on_crash(),
            PgNode::Bouncer(b) => b.on_crash(),
        }
    }

    fn on_restart(&mut self, env: &mut impl Host<Msg, Timer>) {
        if let PgNode::Server(s) = self {
            s.on_restart(env);
        }
    }

    /// The host's kernel answers keepalive probes: the server's opens no connections, so a
    /// probe names one it does not know (an RST); pgbouncer's knows its server connections.
    fn kernel_answer(&self, from: NodeId, msg: &Msg) -> Option<Msg> {
        let Msg::Probe { conn } = *msg else {
            return None;
        };
        let alive = match self {
            PgNode::Server(_) => false,
            PgNode::Bouncer(b) => b.knows_server_conn(from, conn),
        };
        Some(Msg::ProbeAck { conn, alive })
    }

    fn on_reset(&mut self, env: &mut impl Host<Msg, Timer>, peer: NodeId) {
        match self {
            PgNode::Server(s) => s.on_reset(env, peer),
            PgNode::Bouncer(b) => b.on_reset(env, peer),
        }
    }
}
