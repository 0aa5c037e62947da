//! The PostgreSQL server: backends, the advisory lock table, the counter row, and how a
//! backend ends (docs/families/postgres.md, "The server").
//!
//! The lock table follows `src/backend/utils/adt/lockfuncs.c` and the lock manager: an
//! advisory lock is held by a backend; the same backend may take it again (a count per
//! level, session or transaction); `pg_advisory_unlock` decrements the session count and
//! returns false, with a warning, when the backend holds no session lock on the key; the
//! transaction-level ones go at `COMMIT` or `ROLLBACK`, the session-level ones at session end
//! (or `DISCARD ALL`) and never at `ROLLBACK`. A blocking request waits in line; `lock_timeout`
//! (off by default) cancels it with an error that aborts the transaction.
//!
//! A backend ends when its client's FIN or RST arrives (the world's reset, or a `Close`), when
//! TCP keepalive gives up (the first probe after `idle` with nothing heard, one every
//! `interval`, dead after `count` unanswered: `idle + count × interval`, Linux's defaults
//! 7200 s, 75 s, 9, which `tcp_keepalives_idle`, `_interval` and `_count` override), or when
//! `idle_session_timeout` / `idle_in_transaction_session_timeout` (PostgreSQL 14; off by
//! default) finds it idle that long (`postgres.c`, `ProcessInterrupts`). Its transaction rolls
//! back, and every lock it held is free for the next in line.
//!
//! The protected counter is a row. A read sees the committed value (read committed). An
//! `UPDATE` outside a transaction block commits at once; inside one, it takes effect at
//! `COMMIT`, when the history records it as storage would, and is recorded rejected when the
//! transaction rolls back instead: the database is the fence of work done in the lock's own
//! transaction. Rows are durable; the lock table is in shared memory and a crash loses it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use lockstep_check::{Event, NodeId as HistNode, OpKind, OpOutcome, StorageOp};
use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId, TcpConfig, TimerId};

use super::{Answer, Conn, LOCK_KEY, LockRow, Msg, Stmt, Timer, WalStatus};
use crate::env::Host;
use crate::observe::{HolderView, Observation};
use crate::storage::{RequestKind, Storage, StorageMode, StorageReply, StorageRequest, StorageResult};

/// The name of the family's counter of standbys promoted.
pub const PROMOTIONS: &str = "promotions";

/// The name of the family's counter of lock table rows the cleanup job deleted.
pub const CLEANED: &str = "rows deleted by cleanup";

/// The job queue's producer: `INSERT INTO jobs DEFAULT VALUES` every `every`, `jobs` times,
/// on the primary (an application's producer; pg_cron in the model, so that it needs no node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Producer {
    /// Between two enqueues.
    pub every: Dur,
    /// How many jobs it enqueues in all.
    pub jobs: u64,
}

/// The lock table's cleanup job: pg_cron running `DELETE FROM locks WHERE acquired_at <
/// now() - ttl` every `every` on the primary (pg_cron does not run jobs on a standby).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cleanup {
    /// A row older than this, by the server's wall clock against its `acquired_at`, is deleted.
    pub ttl: Dur,
    /// Between runs of the job.
    pub every: Dur,
}

/// TCP keepalive of one end of its connections (Linux: `tcp_keepalive_time`, `_intvl`,
/// `_probes`; PostgreSQL's `tcp_keepalives_*` and pgbouncer's `tcp_keep*` set them per socket).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalive {
    /// Nothing heard for this long: the first probe.
    pub idle: Dur,
    /// Between probes.
    pub interval: Dur,
    /// Unanswered probes before the connection is dead.
    pub count: u32,
}

impl Keepalive {
    /// Linux's defaults: 7200 s, 75 s, 9.
    pub const LINUX: Keepalive = Keepalive {
        idle: Dur::from_secs(7_200),
        interval: Dur::from_secs(75),
        count: 9,
    };

    /// How long after the last thing heard a silent peer's connection is given up.
    pub fn gives_up_after(self) -> Dur {
        self.idle + self.interval * u64::from(self.count)
    }
}

/// The keepalive state of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Probing {
    /// When the peer was last heard from (monotonic).
    heard: LocalTime,
    /// Probes sent since.
    sent: u32,
    /// The armed timer.
    timer: Option<TimerId>,
}

/// What a keepalive timer asks of its connection's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Nothing yet.
    Wait,
    /// Send a probe.
    Send,
    /// The peer is gone.
    Dead,
}

impl Probing {
    pub(crate) fn new(now: LocalTime) -> Probing {
        Probing {
            heard: now,
            sent: 0,
            timer: None,
        }
    }

    /// The peer was heard from: arms the timer if it is not.
    pub(crate) fn heard<M>(&mut self, env: &mut impl Host<M, Timer>, ka: Keepalive, conn: Conn) {
        self.heard = env.mono();
        self.sent = 0;
        if self.timer.is_none() {
            let after = TcpConfig::kernel_delay(self.heard.as_nanos(), ka.idle);
            self.timer = Some(env.set_timer(ClockKind::Mono, after, Timer::KeepAlive(conn)));
        }
    }

    /// The timer fired: what to do, with the timer re-armed when the connection lives on.
    pub(crate) fn fired<M>(
        &mut self,
        env: &mut impl Host<M, Timer>,
        ka: Keepalive,
        conn: Conn,
    ) -> Probe {
        self.timer = None;
        let now = env.mono();
        let due = self.heard + ka.idle + ka.interval * u64::from(self.sent);
        if now < due {
            self.timer = Some(env.set_timer_at(ClockKind::Mono, due, Timer::KeepAlive(conn)));
            return Probe::Wait;
        }
        if self.sent >= ka.count {
            return Probe::Dead;
        }
        self.sent += 1;
        // `tcp_keepalive_timer` is a kernel timer: the wheel rounds it up, as it does the
        // idle one.
        let after = TcpConfig::kernel_delay(now.as_nanos(), ka.interval);
        self.timer = Some(env.set_timer(ClockKind::Mono, after, Timer::KeepAlive(conn)));
        Probe::Send
    }

    pub(crate) fn cancel<M>(&mut self, env: &mut impl Host<M, Timer>) {
        if let Some(t) = self.timer.take() {
            env.cancel_timer(t);
        }
    }
}

/// Streaming replication to one standby, with automatic failover: each server sends the
/// other its status every `heartbeat`; a standby that has heard no primary for
/// `failover_after` promotes itself (Patroni's leader key running out: `ttl`, 30 s by default),
/// unless the other server, heard within that time, is ahead of it (Patroni's lag check). A
/// primary that hears a primary on a later timeline (or on the same one with a lower node id)
/// demotes itself: every backend ends, and it follows the new primary, its own unreplicated
/// commits discarded (`pg_rewind`). A restarted server comes back as a standby (Patroni starts
/// PostgreSQL in recovery and promotes only the member that wins the race). There is no
/// witness: two servers cut off from each other for `failover_after` are two primaries until
/// they hear each other again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    /// The other server.
    pub peer: NodeId,
    /// A standby that has heard no primary for this long promotes itself.
    pub failover_after: Dur,
    /// Between status messages.
    pub heartbeat: Dur,
}

/// The server's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgServerConfig {
    /// `lock_timeout`; `None` (0, the default) waits forever.
    pub lock_timeout: Option<Dur>,
    /// TCP keepalive of its client connections.
    pub keepalive: Keepalive,
    /// `idle_session_timeout`; `None` (0, the default) is off.
    pub idle_session_timeout: Option<Dur>,
    /// `idle_in_transaction_session_timeout`; `None` (0, the default) is off.
    pub idle_in_transaction_timeout: Option<Dur>,
    /// Streaming replication and failover, if there is a standby.
    pub replication: Option<Replication>,
    /// The lock table's cleanup job, if it is scheduled.
    pub cleanup: Option<Cleanup>,
    /// The job queue's producer, if there is a queue.
    pub producer: Option<Producer>,
}

impl Default for PgServerConfig {
    fn default() -> PgServerConfig {
        PgServerConfig {
            lock_timeout: None,
            keepalive: Keepalive::LINUX,
            idle_session_timeout: None,
            idle_in_transaction_timeout: None,
            replication: None,
            cleanup: None,
            producer: None,
        }
    }
}

/// A backend's transaction state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Txn {
    /// Autocommit: each statement is its own transaction.
    None,
    /// In a transaction block.
    Open,
    /// In a failed transaction block: only `ROLLBACK` (or `COMMIT`) ends it.
    Aborted,
}

/// A dequeue waiting for a job's row lock (`FOR UPDATE` without `SKIP LOCKED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RowWait {
    job: u64,
    id: u64,
    timer: Option<TimerId>,
    /// The worker the dequeue is for.
    worker: NodeId,
}

/// A blocking lock request in line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiting {
    key: i64,
    xact: bool,
    id: u64,
    /// Outside a transaction block: a transaction lock taken and at once released.
    implicit: bool,
    timer: Option<TimerId>,
}

/// One client connection's backend process.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Backend {
    txn: Txn,
    /// Session-level locks held, with their counts.
    session: BTreeMap<i64, u32>,
    /// Transaction-level locks held, with their counts.
    xact: BTreeMap<i64, u32>,
    /// `UPDATE`s of the open transaction, applied at `COMMIT`.
    pending: Vec<StorageRequest>,
    waiting: Option<Waiting>,
    /// Jobs whose rows its transaction locked.
    rows: Vec<u64>,
    row_wait: Option<RowWait>,
    probing: Probing,
    /// The next statement's place on the connection.
    next_seq: u32,
    /// Statements that arrived ahead of their turn.
    early: BTreeMap<u32, (u64, Stmt)>,
    /// The idle timeout's timer, armed while no statement runs.
    idle_timer: Option<TimerId>,
}

impl Backend {
    fn holds(&self, key: i64) -> bool {
        self.session.contains_key(&key) || self.xact.contains_key(&key)
    }
}

/// Why a backend ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// The client closed it, or its host's FIN or RST arrived.
    Client,
    /// The server ends it (keepalive, an idle timeout): it tells the client with a FIN.
    Server,
}

/// The PostgreSQL server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgServer {
    config: PgServerConfig,
    backends: BTreeMap<Conn, Backend>,
    /// Each lock's holder and line.
    locks: BTreeMap<i64, (Conn, VecDeque<Conn>)>,
    /// The highest connection number each peer has opened: a statement on a lower one that
    /// has no backend is on a connection the server ended, answered with an RST.
    opened: BTreeMap<NodeId, u32>,
    /// The counter row (durable).
    row: Storage,
    /// The lock table's row (durable).
    lock_row: Option<LockRow>,
    /// The jobs table (durable): the jobs not yet done, and the last job enqueued.
    pending: BTreeSet<u64>,
    last_job: u64,
    /// Each locked job row's transaction, and the dequeues waiting for it in line.
    row_locks: BTreeMap<u64, (Conn, VecDeque<Conn>)>,
    /// A primary, or a standby (in recovery: it turns new connections down).
    primary: bool,
    /// The timeline (durable): one more at each promotion.
    timeline: u32,
    /// Commits applied to the row (durable).
    lsn: u64,
    /// A standby: when it last heard a primary (monotonic).
    heard_primary: LocalTime,
    /// A standby: the other server's status as a standby, when last heard, with its
    /// timeline and WAL position.
    peer_standby: Option<(LocalTime, u32, u64)>,
}

impl PgServer {
    /// A primary with no backends.
    pub fn new(config: PgServerConfig) -> PgServer {
        PgServer {
            config,
            backends: BTreeMap::new(),
            locks: BTreeMap::new(),
            opened: BTreeMap::new(),
            row: Storage::new(StorageMode::Unfenced),
            lock_row: None,
            pending: BTreeSet::new(),
            last_job: 0,
            row_locks: BTreeMap::new(),
            primary: true,
            timeline: 1,
            lsn: 0,
            heard_primary: LocalTime::from_nanos(0),
            peer_standby: None,
        }
    }

    /// A standby of `config.replication`'s peer.
    pub fn standby(config: PgServerConfig) -> PgServer {
        PgServer {
            primary: false,
            ..PgServer::new(config)
        }
    }

    /// Whether the server is a primary, and its timeline, for tests.
    pub fn role(&self) -> (bool, u32) {
        (self.primary, self.timeline)
    }

    pub(crate) fn on_start(&mut self, env: &mut impl Host<Msg, Timer>) {
        if let Some(r) = self.config.replication {
            self.heard_primary = env.mono();
            env.set_timer(ClockKind::Mono, r.heartbeat, Timer::Heartbeat);
        }
        if let Some(c) = self.config.cleanup {
            env.set_timer(ClockKind::Mono, c.every, Timer::Cleanup);
        }
        if let Some(p) = self.config.producer.filter(|p| self.last_job < p.jobs) {
            env.set_timer(ClockKind::Mono, p.every, Timer::Enqueue);
        }
    }

    /// The producer enqueues the next job (on a primary).
    fn enqueue(&mut self, env: &mut impl Host<Msg, Timer>) {
        let Some(p) = self.config.producer else {
            return;
        };
        if self.primary {
            self.last_job += 1;
            self.pending.insert(self.last_job);
            env.record(Event::Enqueued { job: self.last_job });
            self.committed(env);
        }
        if self.last_job < p.jobs {
            env.set_timer(ClockKind::Mono, p.every, Timer::Enqueue);
        }
    }

    /// The jobs not yet done, for tests.
    pub fn pending_jobs(&self) -> Vec<u64> {
        self.pending.iter().copied().collect()
    }

    /// Backend `c` dequeues: the first job not done whose row it can lock. A row another
    /// transaction locked is passed over with `skip_locked`, and waited for without (its
    /// locker's commit marks it done, so the wait then goes on to the next row, as
    /// PostgreSQL's recheck of the updated row does). The job whose row it locks is recorded
    /// as claimed for `worker` at once: the answer may still be on its way when the run ends.
    fn dequeue(
        &mut self,
        env: &mut impl Host<Msg, Timer>,
        c: Conn,
        id: u64,
        skip_locked: bool,
        worker: NodeId,
    ) {
        let mut wait_for = None;
        let mut got = None;
        for &job in &self.pending {
            match self.row_locks.get(&job) {
                None => {
                    got = Some(job);
                    break;
                }
                Some((holder, _)) if *holder == c => {
                    got = Some(job);
                    break;
                }
                Some(_) if skip_locked => {}
                Some(_) => {
                    wait_for = Some(job);
                    break;
                }
            }
        }
        if let Some(job) = wait_for {
            let timer = self
                .config
                .lock_timeout
                .map(|t| env.set_timer(ClockKind::Mono, t, Timer::LockTimeout(c)));
            let b = self.backends.get_mut(&c).expect("a backend");
            b.row_wait = Some(RowWait {
                job,
                id,
                timer,
                worker,
            });
            self.row_locks.get_mut(&job).expect("locked").1.push_back(c);
            return;
        }
        if let Some(job) = got {
            if let std::collections::btree_map::Entry::Vacant(e) = self.row_locks.entry(job) {
                e.insert((c, VecDeque::new()));
                self.backends.get_mut(&c).expect("a backend").rows.push(job);
            }
            env.record(Event::Claimed {
                job,
                client: HistNode(worker.0),
            });
        }
        self.answer(env, c, id, Answer::Job(got));
    }

    /// The row locks of `c`'s transaction go; each row's waiters look again.
    fn free_rows(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn) {
        let Some(b) = self.backends.get_mut(&c) else {
            return;
        };
        let rows = std::mem::take(&mut b.rows);
        for job in rows {
            let Some((_, line)) = self.row_locks.remove(&job) else {
                continue;
            };
            for next in line {
                let Some(w) = self
                    .backends
                    .get_mut(&next)
                    .and_then(|b| b.row_wait.take_if(|w| w.job == job))
                else {
                    continue;
                };
                if let Some(t) = w.timer {
                    env.cancel_timer(t);
                }
                self.dequeue(env, next, w.id, false, w.worker);
            }
        }
    }

    /// The lock table's row, for tests.
    pub fn lock_row(&self) -> Option<LockRow> {
        self.lock_row
    }

    /// The cleanup job runs: on a primary, the row older than the TTL by the server's wall
    /// clock is deleted.
    fn cleanup(&mut self, env: &mut impl Host<Msg, Timer>) {
        let Some(c) = self.config.cleanup else {
            return;
        };
        env.set_timer(ClockKind::Mono, c.every, Timer::Cleanup);
        let Some(row) = self.lock_row.filter(|_| self.primary) else {
            return;
        };
        if env.wall().nanos_since(row.acquired_at) > c.ttl.as_nanos() as i64 {
            self.lock_row = None;
            env.observe(Observation::Count(CLEANED));
            env.observe(Observation::Holder(HolderView::Free));
            self.committed(env);
        }
    }

    pub(crate) fn on_restart(&mut self, env: &mut impl Host<Msg, Timer>) {
        if self.config.replication.is_some() {
            self.primary = false;
            self.peer_standby = None;
        }
        self.on_start(env);
    }

    /// Sends the other server this server's status.
    fn status(&self, env: &mut impl Host<Msg, Timer>) {
        if let Some(r) = self.config.replication {
            env.send(
                r.peer,
                Msg::Wal(WalStatus {
                    timeline: self.timeline,
                    lsn: self.lsn,
                    value: self.row.value(),
                    primary: self.primary,
                    lock_row: self.lock_row,
                }),
            );
        }
    }

    /// A write was committed to the row: the WAL moves on and streams to the standby.
    fn committed(&mut self, env: &mut impl Host<Msg, Timer>) {
        self.lsn += 1;
        self.status(env);
    }

    fn heartbeat(&mut self, env: &mut impl Host<Msg, Timer>) {
        let Some(r) = self.config.replication else {
            return;
        };
        env.set_timer(ClockKind::Mono, r.heartbeat, Timer::Heartbeat);
        if !self.primary {
            let now = env.mono();
            let ahead = self.peer_standby.is_some_and(|(heard, timeline, lsn)| {
                now.saturating_since(heard) < r.failover_after
                    && (timeline, lsn) > (self.timeline, self.lsn)
            });
            if now.saturating_since(self.heard_primary) >= r.failover_after && !ahead {
                // `pg_ctl promote`: a new timeline; connections are taken from now on.
                self.primary = true;
                self.timeline += 1;
                env.observe(Observation::Count(PROMOTIONS));
            }
        }
        self.status(env);
    }

    fn on_wal(&mut self, env: &mut impl Host<Msg, Timer>, from: NodeId, w: WalStatus) {
        let WalStatus {
            timeline,
            lsn,
            value,
            primary,
            lock_row,
        } = w;
        if !primary {
            if !self.primary {
                self.peer_standby = Some((env.mono(), timeline, lsn));
            }
            return;
        }
        if self.primary {
            if (timeline, std::cmp::Reverse(from)) <= (self.timeline, std::cmp::Reverse(env.id())) {
                return; // The other one will demote.
            }
            // Demoted: PostgreSQL restarts in recovery; every connection ends.
            let conns: Vec<Conn> = self.backends.keys().copied().collect();
            for c in conns {
                self.end(env, c, End::Server);
            }
            self.primary = false;
        } else if (timeline, lsn) < (self.timeline, self.lsn) {
            // An older status overtaken by a newer one (the links reorder; replication's TCP
            // stream does not): the primary is heard, its WAL is not news.
            if timeline == self.timeline {
                self.heard_primary = env.mono();
            }
            return;
        }
        self.timeline = timeline;
        self.lsn = lsn;
        self.row = Storage::with_value(StorageMode::Unfenced, value);
        self.lock_row = lock_row;
        self.heard_primary = env.mono();
    }

    /// The holder of advisory lock `key` and its session and transaction counts, for tests.
    pub fn holder(&self, key: i64) -> Option<(Conn, u32, u32)> {
        let (conn, _) = self.locks.get(&key)?;
        let b = &self.backends[conn];
        Some((
            *conn,
            b.session.get(&key).copied().unwrap_or(0),
            b.xact.get(&key).copied().unwrap_or(0),
        ))
    }

    /// The open backends' connections, for tests.
    pub fn backends(&self) -> Vec<Conn> {
        self.backends.keys().copied().collect()
    }

    /// The counter row's committed value.
    pub fn value(&self) -> u64 {
        self.row.value()
    }

    pub(crate) fn on_message(&mut self, env: &mut impl Host<Msg, Timer>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Query {
                conn,
                seq,
                id,
                stmt,
            } => {
                let c = (from, conn);
                if !self.backends.contains_key(&c) && !self.primary {
                    env.send(
                        from,
                        Msg::Answer {
                            conn,
                            id,
                            answer: Answer::ReadOnly,
                        },
                    );
                    return;
                }
                if !self.backends.contains_key(&c) {
                    let opened = self.opened.entry(from).or_insert(0);
                    if conn <= *opened {
                        // A connection this server ended: its kernel answers with an RST.
                        env.send(from, Msg::Close { conn });
                        return;
                    }
                    *opened = conn;
                    let now = env.mono();
                    self.backends.insert(
                        c,
                        Backend {
                            txn: Txn::None,
                            session: BTreeMap::new(),
                            xact: BTreeMap::new(),
                            pending: Vec::new(),
                            waiting: None,
                            rows: Vec::new(),
                            row_wait: None,
                            probing: Probing::new(now),
                            next_seq: 1,
                            early: BTreeMap::new(),
                            idle_timer: None,
                        },
                    );
                }
                self.heard(env, c);
                self.in_order(env, c, seq, id, stmt);
            }
            Msg::ProbeAck { conn, alive } => {
                let c = (from, conn);
                if !self.backends.contains_key(&c) {
                    return;
                }
                if alive {
                    self.heard(env, c);
                } else {
                    self.end(env, c, End::Client);
                }
            }
            Msg::Close { conn } => {
                if self.backends.contains_key(&(from, conn)) {
                    self.end(env, (from, conn), End::Client);
                }
            }
            // Its kernel answers (`PgNode::kernel_answer`).
            Msg::Probe { .. } => {}
            Msg::Wal(w) => self.on_wal(env, from, w),
            Msg::Answer { .. } => {}
        }
    }

    /// Runs statement `seq` of `c` when its turn comes, and those that waited for it.
    fn in_order(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn, seq: u32, id: u64, stmt: Stmt) {
        let b = self.backends.get_mut(&c).expect("a backend");
        if seq < b.next_seq {
            return; // a duplicate
        }
        b.early.insert(seq, (id, stmt));
        loop {
            let Some(b) = self.backends.get_mut(&c) else {
                return;
            };
            let Some((id, stmt)) = b.early.remove(&b.next_seq) else {
                return;
            };
            b.next_seq += 1;
            self.statement(env, c, id, stmt);
        }
    }

    fn heard(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn) {
        let ka = self.config.keepalive;
        if let Some(b) = self.backends.get_mut(&c) {
            b.probing.heard(env, ka, c);
        }
    }

    fn answer(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn, id: u64, answer: Answer) {
        env.send(c.0, Msg::Answer { conn: c.1, id, answer });
        self.idle(env, c);
    }

    /// The backend finished a statement and waits for the next: the idle timeouts start.
    fn idle(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn) {
        let Some(b) = self.backends.get_mut(&c) else {
            return;
        };
        if b.waiting.is_some() || b.row_wait.is_some() {
            return;
        }
        let limit = match b.txn {
            Txn::None => self.config.idle_session_timeout,
            Txn::Open | Txn::Aborted => self.config.idle_in_transaction_timeout,
        };
        if let Some(t) = b.idle_timer.take() {
            env.cancel_timer(t);
        }
        if let Some(limit) = limit {
            b.idle_timer = Some(env.set_timer(ClockKind::Mono, limit, Timer::Idle(c)));
        }
    }

    fn statement(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn, id: u64, stmt: Stmt) {
        let b = self.backends.get_mut(&c).expect("a backend");
        if let Some(t) = b.idle_timer.take() {
            env.cancel_timer(t);
        }
        let aborted = b.txn == Txn::Aborted;
        match stmt {
            Stmt::Terminate => self.end(env, c, End::Client),
            Stmt::Begin => {
                if b.txn == Txn::None {
                    b.txn = Txn::Open;
                }
                // (In a block already: a WARNING, and nothing changes.)
                self.answer(env, c, id, Answer::Done);
            }
            Stmt::Commit => {
                let answer = if aborted {
                    Answer::RolledBack
                } else {
                    Answer::Done
                };
                self.end_txn(env, c, !aborted);
                self.answer(env, c, id, answer);
            }
            Stmt::Rollback => {
                self.end_txn(env, c, false);
                self.answer(env, c, id, Answer::Done);
            }
            Stmt::DiscardAll => {
                self.end_txn(env, c, false);
                let b = self.backends.get_mut(&c).expect("a backend");
                let keys: Vec<i64> = b.session.keys().copied().collect();
                b.session.clear();
                for key in keys {
                    self.maybe_free(env, key);
                }
                self.answer(env, c, id, Answer::Done);
            }
            _ if aborted => self.answer(env, c, id, Answer::Error),
            Stmt::Lock {
                key,
                xact,
                wait,
                begin,
            } => {
                if begin && b.txn == Txn::None {
                    b.txn = Txn::Open;
                }
                let implicit = xact && b.txn == Txn::None;
                self.lock(env, c, id, key, xact, wait, implicit);
            }
            Stmt::Unlock { key } => {
                let b = self.backends.get_mut(&c).expect("a backend");
                let held = match b.session.get_mut(&key) {
                    Some(n) => {
                        *n -= 1;
                        if *n == 0 {
                            b.session.remove(&key);
                        }
                        true
                    }
                    // `WARNING: you don't own a lock of type ExclusiveLock`.
                    None => false,
                };
                self.maybe_free(env, key);
                self.answer(env, c, id, Answer::Bool(held));
            }
            Stmt::Resource(req) => {
                let result = match (req.kind, b.txn) {
                    (RequestKind::Write { .. }, Txn::Open) => {
                        // Takes effect at COMMIT.
                        b.pending.push(req);
                        StorageResult::Written
                    }
                    (kind, _) => {
                        let (op, result) = self.row.apply(req);
                        record(env, &req, op, OpOutcome::Accepted);
                        if matches!(kind, RequestKind::Write { .. }) {
                            self.committed(env);
                        }
                        result
                    }
                };
                let reply = StorageReply { op: req.op, result };
                self.answer(env, c, id, Answer::Resource(reply));
            }
            Stmt::InsertLock { owner, at } => {
                // (Our recipe sends it in autocommit: committed at once.)
                let inserted = self.lock_row.is_none();
                if inserted {
                    self.lock_row = Some(LockRow {
                        owner,
                        acquired_at: at.unwrap_or_else(|| env.wall()),
                    });
                    env.observe(Observation::Holder(HolderView::Granted {
                        client: owner,
                        expires: None,
                    }));
                    self.committed(env);
                }
                self.answer(env, c, id, Answer::Bool(inserted));
            }
            Stmt::Dequeue {
                skip_locked,
                worker,
            } => {
                if b.txn == Txn::None {
                    b.txn = Txn::Open;
                }
                self.dequeue(env, c, id, skip_locked, worker);
            }
            Stmt::Complete { job } => {
                if b.rows.contains(&job) && self.pending.remove(&job) {
                    self.committed(env);
                }
                self.end_txn(env, c, true);
                self.answer(env, c, id, Answer::Done);
            }
            Stmt::DeleteLock { owner } => {
                let deleted = self.lock_row.is_some_and(|r| r.owner == owner);
                if deleted {
                    self.lock_row = None;
                    env.observe(Observation::Holder(HolderView::Free));
                    self.committed(env);
                }
                self.answer(env, c, id, Answer::Bool(deleted));
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn lock(
        &mut self,
        env: &mut impl Host<Msg, Timer>,
        c: Conn,
        id: u64,
        key: i64,
        xact: bool,
        wait: bool,
        implicit: bool,
    ) {
        let free = match self.locks.get(&key) {
            None => true,
            Some((holder, _)) => *holder == c,
        };
        if free {
            if !implicit {
                self.take(env, c, key, xact);
            }
            let answer = if wait {
                Answer::Locked
            } else {
                Answer::Bool(true)
            };
            self.answer(env, c, id, answer);
            return;
        }
        if !wait {
            self.answer(env, c, id, Answer::Bool(false));
            return;
        }
        let timer = self
            .config
            .lock_timeout
            .map(|t| env.set_timer(ClockKind::Mono, t, Timer::LockTimeout(c)));
        let b = self.backends.get_mut(&c).expect("a backend");
        b.waiting = Some(Waiting {
            key,
            xact,
            id,
            implicit,
            timer,
        });
        self.locks.get_mut(&key).expect("held").1.push_back(c);
    }

    /// `c` takes (or takes again) lock `key`.
    fn take(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn, key: i64, xact: bool) {
        let b = self.backends.get_mut(&c).expect("a backend");
        let counts = if xact { &mut b.xact } else { &mut b.session };
        *counts.entry(key).or_insert(0) += 1;
        if let std::collections::btree_map::Entry::Vacant(e) = self.locks.entry(key) {
            e.insert((c, VecDeque::new()));
            // Observers see lock 0's holder (the `keys` workload's other locks go unseen).
            if key == LOCK_KEY {
                env.observe(Observation::Holder(HolderView::Granted {
                    client: c.0,
                    expires: None,
                }));
            }
        }
    }

    /// Frees lock `key` if its holder holds it no more, and grants it to the next in line.
    fn maybe_free(&mut self, env: &mut impl Host<Msg, Timer>, key: i64) {
        let Some((holder, _)) = self.locks.get(&key) else {
            return;
        };
        if self.backends.get(holder).is_some_and(|b| b.holds(key)) {
            return;
        }
        let (_, mut line) = self.locks.remove(&key).expect("held");
        if key == LOCK_KEY {
            env.observe(Observation::Holder(HolderView::Free));
        }
        while let Some(next) = line.pop_front() {
            let Some(b) = self.backends.get_mut(&next) else {
                continue;
            };
            let Some(w) = b.waiting.take().filter(|w| w.key == key) else {
                continue;
            };
            if let Some(t) = w.timer {
                env.cancel_timer(t);
            }
            self.take(env, next, key, w.xact);
            if let Some((_, rest)) = self.locks.get_mut(&key) {
                rest.extend(line);
            }
            if w.implicit {
                // Taken and, with its statement's transaction, released at once.
                let b = self.backends.get_mut(&next).expect("a backend");
                b.xact.remove(&key);
                self.answer(env, next, w.id, Answer::Locked);
                self.maybe_free(env, key);
            } else {
                self.answer(env, next, w.id, Answer::Locked);
            }
            return;
        }
    }

    /// Ends `c`'s transaction block: its writes take effect (`commit`) or are rejected, and
    /// its transaction-level locks go.
    fn end_txn(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn, commit: bool) {
        let b = self.backends.get_mut(&c).expect("a backend");
        b.txn = Txn::None;
        let pending = std::mem::take(&mut b.pending);
        let keys: Vec<i64> = b.xact.keys().copied().collect();
        b.xact.clear();
        let wrote = commit && !pending.is_empty();
        for req in pending {
            if commit {
                let (kind, _) = self.row.apply(req);
                record(env, &req, kind, OpOutcome::Accepted);
            } else if let RequestKind::Write { value, base } = req.kind {
                record(env, &req, OpKind::Write { value, base }, OpOutcome::Rejected);
            }
        }
        if wrote {
            self.committed(env);
        }
        for key in keys {
            self.maybe_free(env, key);
        }
        self.free_rows(env, c);
    }

    /// Backend `c` ends: its transaction rolls back, its locks go, its place in line too.
    fn end(&mut self, env: &mut impl Host<Msg, Timer>, c: Conn, why: End) {
        self.end_txn(env, c, false);
        let mut b = self.backends.remove(&c).expect("a backend");
        b.probing.cancel(env);
        if let Some(t) = b.idle_timer {
            env.cancel_timer(t);
        }
        if let Some(w) = b.waiting {
            if let Some(t) = w.timer {
                env.cancel_timer(t);
            }
            if let Some((_, line)) = self.locks.get_mut(&w.key) {
                line.retain(|x| *x != c);
            }
        }
        if let Some(w) = b.row_wait {
            if let Some(t) = w.timer {
                env.cancel_timer(t);
            }
            if let Some((_, line)) = self.row_locks.get_mut(&w.job) {
                line.retain(|x| *x != c);
            }
        }
        for key in b.session.keys() {
            self.maybe_free(env, *key);
        }
        if why == End::Server {
            env.send(c.0, Msg::Close { conn: c.1 });
        }
    }

    pub(crate) fn on_timer(&mut self, env: &mut impl Host<Msg, Timer>, timer: Timer) {
        match timer {
            Timer::KeepAlive(c) => {
                let ka = self.config.keepalive;
                let Some(b) = self.backends.get_mut(&c) else {
                    return;
                };
                match b.probing.fired(env, ka, c) {
                    Probe::Wait => {}
                    // A keepalive probe is a bare segment, never retransmitted.
                    Probe::Send => env.send_datagram(c.0, Msg::Probe { conn: c.1 }),
                    Probe::Dead => self.end(env, c, End::Server),
                }
            }
            Timer::LockTimeout(c) => {
                let Some(b) = self.backends.get_mut(&c) else {
                    return;
                };
                if let Some(w) = b.row_wait.take() {
                    b.txn = Txn::Aborted;
                    if let Some((_, line)) = self.row_locks.get_mut(&w.job) {
                        line.retain(|x| *x != c);
                    }
                    self.answer(env, c, w.id, Answer::LockTimeout);
                    return;
                }
                let Some(w) = b.waiting.take() else {
                    return;
                };
                if b.txn == Txn::Open {
                    b.txn = Txn::Aborted;
                }
                if let Some((_, line)) = self.locks.get_mut(&w.key) {
                    line.retain(|x| *x != c);
                }
                self.answer(env, c, w.id, Answer::LockTimeout);
            }
            Timer::Heartbeat => self.heartbeat(env),
            Timer::Cleanup => self.cleanup(env),
            Timer::Enqueue => self.enqueue(env),
            Timer::Idle(c) => {
                let Some(b) = self.backends.get_mut(&c) else {
                    return;
                };
                b.idle_timer = None;
                if b.waiting.is_none() && b.row_wait.is_none() {
                    self.end(env, c, End::Server);
                }
            }
        }
    }

    pub(crate) fn on_crash(&mut self) {
        // Shared memory is gone: backends, the lock table. Committed rows stay.
        self.backends.clear();
        self.locks.clear();
        self.row_locks.clear();
        self.opened.clear();
    }

    /// The connections to `peer` were reset: its backends end (their FIN or RST arrived).
    pub(crate) fn on_reset(&mut self, env: &mut impl Host<Msg, Timer>, peer: NodeId) {
        let gone: Vec<Conn> = self
            .backends
            .keys()
            .filter(|c| c.0 == peer)
            .copied()
            .collect();
        for c in gone {
            self.end(env, c, End::Client);
        }
    }
}

/// Records an operation on the counter row as storage would.
fn record<M>(env: &mut impl Host<M, Timer>, req: &StorageRequest, kind: OpKind, outcome: OpOutcome) {
    env.record(Event::Storage(StorageOp {
        op: req.op,
        grant: req.grant,
        kind,
        token: req.token,
        outcome,
    }));
}
