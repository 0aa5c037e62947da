//! The PostgreSQL lock client: two recipes (PostgreSQL's manual, "Advisory Locks").
//!
//! - [`Recipe::Session`]: `SELECT pg_advisory_lock(1)` (or `pg_try_advisory_lock(1)`) on a
//!   connection kept for the lock, the protected work on another connection (the
//!   application's pool), `SELECT pg_advisory_unlock(1)` on the lock's connection to release.
//!   The client learns that its lock's connection broke only when it next uses it (libpq has
//!   no callback): a holder whose backend the server ended keeps working, and its writes go
//!   through the pool's connection all the same.
//! - [`Recipe::Queue`]: a job queue's worker. Its acquire is `BEGIN; SELECT id FROM jobs
//!   WHERE NOT done ORDER BY id LIMIT 1 FOR UPDATE [SKIP LOCKED]` (a job: [`LockSignal::Job`];
//!   none: `ROLLBACK`, a failed acquisition), its release `UPDATE jobs SET done = true WHERE
//!   id = $job; COMMIT`. The row lock is the transaction's: if the connection broke, the job
//!   is back in the queue, whatever the worker did.
//! - [`Recipe::Xact`]: `BEGIN; SELECT pg_advisory_xact_lock(1)` (or the `try` form), the work
//!   in that transaction, `COMMIT` to release. If the connection broke, the transaction is
//!   gone, and so is every write in it.
//! - [`Recipe::Table`]: the lock table (the seed's §2.9): `INSERT INTO locks ... ON CONFLICT
//!   DO NOTHING RETURNING owner` to acquire (a row back: the lock is ours; none: someone
//!   holds it, try again later), the work on the pool's connection, `DELETE ... WHERE owner =
//!   $me` to release. The row outlives its connection and its owner's process: only the
//!   release or the server's cleanup job deletes it, the latter after a TTL whether or not its
//!   owner still works under it.
//!
//! A try that fails, a `lock_timeout` and a broken connection while acquiring are failed
//! acquisitions (in the `xact` recipe after a `ROLLBACK`); the workload thinks and tries
//! again. The client's kernel answers the server's keepalive probes for its open connections
//! (`kernel_answer`), whether the process runs or is paused; a frozen host answers nothing. A
//! connection once broken is never used again: the next statement opens a new one.

use std::collections::BTreeMap;

use lockstep_sim::{ClockKind, Dur, NodeId};

use super::{Answer, LOCK_KEY, Msg, Stmt};
use crate::env::Host;
use crate::lock::{LockClient, LockSignal};
use crate::observe::{ACQUIRE_REQUESTS, Observation};
use crate::storage::StorageRequest;

/// How the client locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recipe {
    /// A session-level lock on a connection of its own; the work on the pool's.
    Session,
    /// A transaction-level lock with the work in the same transaction.
    Xact,
    /// A job queue's worker: a job's row locked in a transaction, committed done.
    Queue {
        /// `SKIP LOCKED`.
        skip_locked: bool,
    },
    /// A row in a lock table, the work on the pool's connection.
    Table {
        /// `acquired_at` is the client's wall clock (a parameter) rather than the server's
        /// `now()`.
        client_clock: bool,
    },
}

/// The client's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgLockConfig {
    /// Where it connects: the server, or pgbouncer.
    pub endpoint: NodeId,
    /// The standby, the second host of a multi-host connection string
    /// (`host=postgres,postgres-replica target_session_attrs=read-write`): each new connection
    /// tries `endpoint` first, then the standby when `endpoint` refuses it or is a standby.
    pub standby: Option<NodeId>,
    /// The recipe.
    pub recipe: Recipe,
    /// Blocking lock functions (`pg_advisory_lock`) rather than `pg_try_advisory_lock`.
    pub wait: bool,
    /// Count each lock call as an acquire request (the herd figure).
    pub count_requests: bool,
    /// The driver's socket timeout (pgJDBC's `socketTimeout`): a statement on the lock's
    /// connection unanswered this long breaks the connection (the driver closes it). `None`,
    /// libpq's way, waits forever.
    pub socket_timeout: Option<Dur>,
}

/// The client's timer: the socket timeout of statement `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SocketTimeout {
    /// The statement.
    pub id: u64,
}

/// The protected counter kept as a row in the database (`[storage] mode = "postgres"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Row;

/// The name of the family's counter of unlocks that returned false.
pub const UNLOCK_FALSE: &str = "unlocks returning false";

/// The name of the family's counter of lock table releases that deleted no row (the cleanup
/// job had deleted it).
pub const ROW_GONE: &str = "releases finding no row";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// The lock statement `id` is out.
    Locking { id: u64 },
    /// A failed acquisition's `ROLLBACK` (`id`) is out.
    GivingUp { id: u64 },
    Holding,
    /// The release statement `id` is out.
    Releasing { id: u64 },
}

/// One of the client's open connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Connection {
    /// Its host: 0 for the endpoint, 1 for the standby.
    host: u8,
    /// Statements sent on it (the next one's `seq` is one more).
    sent: u32,
    /// Until its first answer, its first statement: libpq connects, and this statement goes
    /// again on a new connection to the next host if this one is turned down.
    connecting: Option<Stmt>,
}

/// The PostgreSQL lock client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgLock {
    config: PgLockConfig,
    /// The last connection number used (never reused, kept across a crash: a new process's
    /// connections have new ports).
    last_conn: u32,
    /// The lock's connection while it is open as far as the client knows.
    lock_conn: Option<u32>,
    /// The pool's connection for the work (session recipe).
    data_conn: Option<u32>,
    /// The open connections.
    conns: BTreeMap<u32, Connection>,
    next_id: u64,
    state: State,
    /// The job held (the queue recipe).
    job: Option<u64>,
    /// The advisory lock's key: [`LOCK_KEY`] for lock 0, and `LOCK_KEY + n` for lock `n` of
    /// the `keys` workload.
    key: i64,
    /// A nested lock call (`[workload] reenter`) is out or held: the client holds the lock
    /// again once it fails or its unlock returns.
    nested: bool,
    /// The nested hold's unlock is out.
    leaving: bool,
}

impl PgLock {
    /// A client with no connection yet.
    pub fn new(config: PgLockConfig) -> PgLock {
        PgLock {
            config,
            last_conn: 0,
            lock_conn: None,
            data_conn: None,
            conns: BTreeMap::new(),
            next_id: 0,
            state: State::Idle,
            job: None,
            key: LOCK_KEY,
            nested: false,
            leaving: false,
        }
    }

    /// A signal on its way to the workload, after a nested call: the outer hold is the
    /// client's again when the nested lock failed or the nested unlock returned.
    fn settle(&mut self, signal: Option<LockSignal>) -> Option<LockSignal> {
        if self.nested {
            match signal {
                Some(LockSignal::AcquireFailed) if !self.leaving => {
                    self.nested = false;
                    self.state = State::Holding;
                }
                Some(LockSignal::Released) if self.leaving => {
                    self.nested = false;
                    self.leaving = false;
                    self.state = State::Holding;
                }
                _ => {}
            }
        }
        signal
    }

    /// Opens a connection to host `host` (0: the endpoint, 1: the standby).
    fn open(&mut self, host: u8) -> u32 {
        self.last_conn += 1;
        self.conns.insert(
            self.last_conn,
            Connection {
                host,
                sent: 0,
                connecting: None,
            },
        );
        self.last_conn
    }

    fn host(&self, host: u8) -> NodeId {
        match (host, self.config.standby) {
            (1, Some(standby)) => standby,
            _ => self.config.endpoint,
        }
    }

    fn send(&mut self, ctx: &mut impl Host<Msg, SocketTimeout>, conn: u32, stmt: Stmt) -> u64 {
        let id = self.query(ctx, conn, stmt);
        if let Some(after) = self.config.socket_timeout {
            ctx.set_timer(ClockKind::Mono, after, SocketTimeout { id });
        }
        id
    }

    /// The statement the client waits for on the lock's connection.
    fn waiting_for(&self) -> Option<u64> {
        match self.state {
            State::Locking { id } | State::GivingUp { id } | State::Releasing { id } => Some(id),
            State::Idle | State::Holding => None,
        }
    }

    /// Sends `stmt` on `conn` in its turn; its request id.
    fn query(&mut self, ctx: &mut impl Host<Msg, SocketTimeout>, conn: u32, stmt: Stmt) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let c = self.conns.get_mut(&conn).expect("an open connection");
        c.sent += 1;
        if c.sent == 1 {
            c.connecting = Some(stmt);
        }
        let (seq, host) = (c.sent, c.host);
        let to = self.host(host);
        ctx.send(
            to,
            Msg::Query {
                conn,
                seq,
                id,
                stmt,
            },
        );
        id
    }

    fn lock_conn(&mut self) -> u32 {
        match self.lock_conn {
            Some(c) => c,
            None => {
                let c = self.open(0);
                self.lock_conn = Some(c);
                c
            }
        }
    }

    /// Connection `conn` was turned down before its first answer (refused, reset, a standby,
    /// or silent past the socket timeout): its first statement goes on a new connection to
    /// the next host; after the last host, the connection has failed.
    fn turned_down(
        &mut self,
        ctx: &mut impl Host<Msg, SocketTimeout>,
        conn: u32,
    ) -> Option<LockSignal> {
        let Some(stmt) = self.conns.get(&conn).and_then(|c| c.connecting) else {
            return self.broke(conn);
        };
        let c = self.conns.remove(&conn).expect("open");
        let next = c.host + 1;
        let more = next == 1 && self.config.standby.is_some();
        if Some(conn) == self.lock_conn {
            if !more {
                self.conns.insert(conn, c);
                return self.lock_conn_broke();
            }
            let new = self.open(next);
            self.lock_conn = Some(new);
            let id = self.send(ctx, new, stmt);
            if let State::Locking { .. } = self.state {
                self.state = State::Locking { id };
            }
            return None;
        }
        if Some(conn) == self.data_conn {
            self.data_conn = None;
            if more {
                let new = self.open(next);
                self.data_conn = Some(new);
                self.query(ctx, new, stmt);
            }
        }
        None
    }

    /// Connection `conn`, past its first answer, broke.
    fn broke(&mut self, conn: u32) -> Option<LockSignal> {
        if Some(conn) == self.lock_conn {
            return self.lock_conn_broke();
        }
        if Some(conn) == self.data_conn {
            self.data_conn = None;
        }
        self.conns.remove(&conn);
        None
    }

    /// Whether connection `conn` is open to `peer`.
    fn on_host(&self, conn: u32, peer: NodeId) -> bool {
        self.conns
            .get(&conn)
            .is_some_and(|c| self.host(c.host) == peer)
    }

    /// Whether connection `conn` waits for its first answer.
    fn connecting(&self, conn: u32) -> bool {
        self.conns.get(&conn).is_some_and(|c| c.connecting.is_some())
    }

    /// The lock's connection broke: what was in flight on it fails.
    fn lock_conn_broke(&mut self) -> Option<LockSignal> {
        if let Some(c) = self.lock_conn.take() {
            self.conns.remove(&c);
        }
        match self.state {
            State::Locking { .. } | State::GivingUp { .. } => {
                self.state = State::Idle;
                Some(LockSignal::AcquireFailed)
            }
            State::Releasing { .. } => {
                self.state = State::Idle;
                Some(LockSignal::Released)
            }
            State::Idle | State::Holding => None,
        }
    }

    fn on_answer(
        &mut self,
        ctx: &mut impl Host<Msg, SocketTimeout>,
        conn: u32,
        id: u64,
        answer: Answer,
    ) -> Option<LockSignal> {
        if answer == Answer::ReadOnly {
            return self.turned_down(ctx, conn);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.connecting = None;
        }
        if let Answer::Resource(reply) = answer {
            return Some(LockSignal::Resource(reply));
        }
        if Some(conn) != self.lock_conn {
            return None;
        }
        match (self.state, answer) {
            (State::Locking { id: i }, Answer::Job(Some(job))) if i == id => {
                self.state = State::Holding;
                self.job = Some(job);
                Some(LockSignal::Job(job))
            }
            (State::Locking { id: i }, Answer::Locked | Answer::Bool(true)) if i == id => {
                self.state = State::Holding;
                Some(LockSignal::Granted {
                    token: None,
                    ticket: None,
                })
            }
            (State::Locking { id: i }, _) if i == id => {
                if let Recipe::Xact | Recipe::Queue { .. } = self.config.recipe {
                    let id = self.send(ctx, conn, Stmt::Rollback);
                    self.state = State::GivingUp { id };
                    None
                } else {
                    self.state = State::Idle;
                    Some(LockSignal::AcquireFailed)
                }
            }
            (State::GivingUp { id: i }, _) if i == id => {
                self.state = State::Idle;
                Some(LockSignal::AcquireFailed)
            }
            (State::Releasing { id: i }, answer) if i == id => {
                if answer == Answer::Bool(false) {
                    ctx.observe(Observation::Count(match self.config.recipe {
                        Recipe::Table { .. } => ROW_GONE,
                        Recipe::Session | Recipe::Xact | Recipe::Queue { .. } => UNLOCK_FALSE,
                    }));
                }
                self.state = State::Idle;
                Some(LockSignal::Released)
            }
            _ => None,
        }
    }
}

impl LockClient for PgLock {
    type Msg = Msg;
    type Timer = SocketTimeout;
    type Resource = Row;

    fn select(&mut self, lock: u32) {
        self.key = LOCK_KEY + i64::from(lock);
    }

    fn acquire(&mut self, ctx: &mut impl Host<Msg, SocketTimeout>) -> Option<LockSignal> {
        if self.config.count_requests {
            ctx.observe(Observation::Count(ACQUIRE_REQUESTS));
        }
        let conn = self.lock_conn();
        let stmt = match self.config.recipe {
            Recipe::Table { client_clock } => Stmt::InsertLock {
                owner: ctx.id(),
                at: client_clock.then(|| ctx.wall()),
            },
            Recipe::Queue { skip_locked } => Stmt::Dequeue {
                skip_locked,
                worker: ctx.id(),
            },
            recipe => {
                let xact = recipe == Recipe::Xact;
                Stmt::Lock {
                    key: self.key,
                    xact,
                    wait: self.config.wait,
                    begin: xact,
                }
            }
        };
        let id = self.send(ctx, conn, stmt);
        self.state = State::Locking { id };
        None
    }

    /// The lock function again on the lock's connection, in the session (or transaction)
    /// that holds it: PostgreSQL counts advisory locks per backend and grants it at once. The
    /// lock table's `INSERT ... ON CONFLICT DO NOTHING` finds the client's own row and returns
    /// none: refused, as any holder's.
    fn reenter(&mut self, ctx: &mut impl Host<Msg, SocketTimeout>) -> Option<LockSignal> {
        if self.state != State::Holding {
            return Some(LockSignal::AcquireFailed);
        }
        self.nested = true;
        let conn = self.lock_conn();
        let stmt = match self.config.recipe {
            Recipe::Table { client_clock } => Stmt::InsertLock {
                owner: ctx.id(),
                at: client_clock.then(|| ctx.wall()),
            },
            recipe => Stmt::Lock {
                key: self.key,
                xact: recipe == Recipe::Xact,
                wait: self.config.wait,
                begin: false,
            },
        };
        let id = self.send(ctx, conn, stmt);
        self.state = State::Locking { id };
        None
    }

    /// The nested unlock: `pg_advisory_unlock` takes the count down by one and the session
    /// still holds the lock; a transaction-level lock cannot be released before `COMMIT`, so
    /// the nested call has nothing to do.
    fn leave(&mut self, ctx: &mut impl Host<Msg, SocketTimeout>) -> Option<LockSignal> {
        match (self.config.recipe, self.lock_conn) {
            (Recipe::Session, Some(c)) => {
                self.leaving = true;
                let id = self.send(ctx, c, Stmt::Unlock { key: self.key });
                self.state = State::Releasing { id };
                None
            }
            _ => {
                self.nested = false;
                Some(LockSignal::Released)
            }
        }
    }

    fn release(&mut self, ctx: &mut impl Host<Msg, SocketTimeout>) -> Option<LockSignal> {
        self.nested = false;
        self.leaving = false;
        let released = |this: &mut PgLock| {
            this.state = State::Idle;
            Some(LockSignal::Released)
        };
        if self.state != State::Holding {
            return released(self);
        }
        let (conn, stmt) = match (self.config.recipe, self.lock_conn) {
            // The row does not depend on a connection: any one deletes it.
            (Recipe::Table { .. }, _) => (self.lock_conn(), Stmt::DeleteLock { owner: ctx.id() }),
            (Recipe::Session, Some(c)) => (c, Stmt::Unlock { key: self.key }),
            (Recipe::Xact, Some(c)) => (c, Stmt::Commit),
            (Recipe::Queue { .. }, Some(c)) => match self.job.take() {
                Some(job) => (c, Stmt::Complete { job }),
                None => (c, Stmt::Commit),
            },
            // The lock's connection broke: the lock went with it.
            (Recipe::Session | Recipe::Xact | Recipe::Queue { .. }, None) => {
                return released(self);
            }
        };
        let id = self.send(ctx, conn, stmt);
        self.state = State::Releasing { id };
        None
    }

    /// What the application knows without a query: it holds the lock once it was granted
    /// and until it releases. A broken connection is not noticed before its next statement.
    fn valid(&self, _: &impl Host<Msg, SocketTimeout>) -> bool {
        self.state == State::Holding
    }

    fn reset(&mut self) {
        let last_conn = self.last_conn;
        *self = PgLock::new(self.config);
        self.last_conn = last_conn;
    }

    fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, SocketTimeout>,
        _from: NodeId,
        msg: Msg,
    ) -> Option<LockSignal> {
        match msg {
            Msg::Answer { conn, id, answer } => {
                let signal = self.on_answer(ctx, conn, id, answer);
                self.settle(signal)
            }
            // Its kernel answers (`kernel_answer`): the process never sees a probe.
            Msg::Probe { .. } => None,
            Msg::Close { conn } => {
                let signal = if self.connecting(conn) {
                    self.turned_down(ctx, conn)
                } else {
                    self.broke(conn)
                };
                self.settle(signal)
            }
            Msg::Query { .. } | Msg::ProbeAck { .. } | Msg::Wal(_) => None,
        }
    }

    /// The client's kernel answers the server's keepalive probes for the connections the
    /// process has open, running or paused; an RST for one it no longer has.
    fn kernel_answer(&self, _from: NodeId, msg: &Msg) -> Option<Msg> {
        match *msg {
            Msg::Probe { conn } => Some(Msg::ProbeAck {
                conn,
                alive: self.conns.contains_key(&conn),
            }),
            _ => None,
        }
    }

    fn on_reset(
        &mut self,
        ctx: &mut impl Host<Msg, SocketTimeout>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        if let Some(c) = self.data_conn.filter(|c| self.on_host(*c, peer)) {
            self.turned_down(ctx, c);
        }
        let c = self.lock_conn.filter(|c| self.on_host(*c, peer))?;
        let signal = self.turned_down(ctx, c);
        self.settle(signal)
    }

    fn on_timer(
        &mut self,
        ctx: &mut impl Host<Msg, SocketTimeout>,
        timer: SocketTimeout,
    ) -> Option<LockSignal> {
        if self.waiting_for() != Some(timer.id) {
            return None;
        }
        // The driver gives up on the connection and closes it.
        let conn = self.lock_conn?;
        self.query(ctx, conn, Stmt::Terminate);
        let signal = if self.connecting(conn) {
            // (libpq's `connect_timeout`: the next host.)
            self.turned_down(ctx, conn)
        } else {
            self.lock_conn_broke()
        };
        self.settle(signal)
    }

    fn resource_op(&mut self, ctx: &mut impl Host<Msg, SocketTimeout>, _: &Row, op: StorageRequest) {
        let conn = match self.config.recipe {
            // The pool's connection, opened again if it broke.
            Recipe::Session | Recipe::Table { .. } => match self.data_conn {
                Some(c) => c,
                None => {
                    let c = self.open(0);
                    self.data_conn = Some(c);
                    c
                }
            },
            // In the lock's transaction, or nowhere: its connection is gone.
            Recipe::Xact | Recipe::Queue { .. } => match self.lock_conn {
                Some(c) if self.state == State::Holding => c,
                _ => return,
            },
        };
        // (The workload times the operation out itself.)
        self.query(ctx, conn, Stmt::Resource(op));
    }
}

/// How long a silent holder keeps the lock: until the server's keepalive gives up on it, or
/// its idle timeout ends it if that comes first.
pub fn silent_holder_keeps(config: &super::server::PgServerConfig) -> Dur {
    let ka = config.keepalive.gives_up_after();
    match config.idle_session_timeout {
        Some(t) if t < ka => t,
        _ => ka,
    }
}
