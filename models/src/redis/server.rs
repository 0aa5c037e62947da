//! The Redis server model: a keyspace with absolute expiry deadlines judged on the server's
//! WALL clock, as real Redis does (`t_string.c`, `db.c`, `expire.c`; `commands/expire.md`),
//! with persistence across crashes ([`super::persistence`]) and a replication role
//! ([`super::replication`]).
//!
//! Every command reads the clock once at its start (`commandTimeSnapshot`), so nothing can
//! expire in the middle of a command or script. Expiry is lazy: a key past its deadline is
//! deleted when a command touches it, with the strict predicate `now > when` of `keyIsExpired`.
//! A replica reports such a key absent but never deletes it: it waits for its primary's `DEL`
//! (`db.c:2141-2190`). Active expiry (`activeExpireCycle`) deletes the same keys earlier but
//! changes no reply, so it is not modelled; keyspace notifications are not modelled either.
//!
//! With every option off (no persistence, no replicas, no restart delay) the server sets no
//! timer and draws nothing from its stream, so single-instance runs are as they always were.

use lockstep_check::{Event, NodeId as HistNode};
use lockstep_sim::{ClockKind, Distribution, Dur, LocalTime, NodeId, TimerId};

use super::persistence::{
    AOF_FSYNC_PERIOD, CrashLoses, Db, Disk, Persistence, SERVER_CRON_PERIOD, save_due,
};
use super::replication::Repl;
use super::rwlock::{Outcome, RwLocks};
use super::sentinel::SentinelMsg;
use super::{Command, Key, LOCK_KEY, ReplOp, Reply, Role};
use super::{Msg, Timer};
use crate::env::Host;
use crate::observe::{HolderView, Observation};

/// How a Redis server is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisServerConfig {
    /// The clock expiry deadlines are set and judged on. Real Redis uses WALL; `Mono` is the
    /// fix antirez proposed, for comparison (K4 in docs/catalogue.md).
    pub expiry_clock: ClockKind,
    /// What survives a crash.
    pub persistence: Persistence,
    /// What kind of crash the server suffers: the process, or the whole machine.
    pub crash_loses: CrashLoses,
    /// After a restart, the server accepts no connection until this much time has passed on
    /// its monotonic clock (the "delayed restarts" of the Redis distlock page).
    pub restart_delay: Dur,
    /// The primary this server replicates at start (`replicaof` in its configuration file).
    pub replica_of: Option<NodeId>,
    /// How long a write waits in a primary before it goes out to a replica (output buffers,
    /// a slow replica). Each replica's stream stays in order.
    pub replication_lag: Distribution,
}

impl Default for RedisServerConfig {
    fn default() -> RedisServerConfig {
        RedisServerConfig {
            expiry_clock: ClockKind::Wall,
            persistence: Persistence::None,
            crash_loses: CrashLoses::Process,
            restart_delay: Dur::ZERO,
            replica_of: None,
            replication_lag: Distribution::ZERO,
        }
    }
}

/// Timers of a Redis server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerTimer {
    /// `serverCron`: check the RDB save points.
    Cron,
    /// `appendfsync everysec`: a second has passed since the last fsync and written data
    /// waits for one (the check `beforeSleep` makes on every turn of the event loop).
    Fsync,
    /// The restart delay is over: accept connections.
    Open,
    /// `replicationCron` on a replica: acknowledge the offset, reconnect a stalled link.
    ReplCron,
    /// Send what is due on the stream to `replica`.
    Ship {
        /// The replica.
        replica: NodeId,
        /// The link's sync id; a timer of an earlier link is ignored.
        sync: u64,
    },
    /// A blocked `WAIT` of `client`'s request `id` times out.
    WaitTimeout {
        /// The client.
        client: NodeId,
        /// Its request id.
        id: u64,
    },
}

/// One stored key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    pub(crate) value: u64,
    /// Absolute deadline in ms of the expiry clock (Unix ms for WALL), `None` without a TTL.
    pub(crate) expires_at_ms: Option<i64>,
}

/// A Redis server: a primary or a replica, with or without persistence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisServer {
    pub(super) config: RedisServerConfig,
    pub(super) db: Db,
    /// The files, and the page cache in front of them (durable as [`CrashLoses`] says).
    pub(super) disk: Disk,
    /// The role in the configuration file, rewritten by `REPLICAOF` (durable).
    pub(super) replica_of: Option<NodeId>,
    /// Writes since the last RDB save (`server.dirty`).
    dirty: u64,
    /// When the last RDB save happened, in seconds of the wall clock (`server.lastsave`).
    lastsave_s: i64,
    /// When the AOF was last fsynced, in ms of the wall clock (`server.aof_last_fsync`).
    last_fsync_ms: i64,
    /// An [`ServerTimer::Fsync`] is pending.
    fsync_armed: bool,
    /// False between a restart and the end of the restart delay: commands are dropped.
    open: bool,
    /// Replication state: role, offset, links, blocked `WAIT`s (volatile).
    pub(super) repl: Repl,
    /// The writes the current command propagates (`server.also_propagate`).
    pub(super) propagate: Vec<ReplOp>,
    /// Redisson's read-write locks (in memory only: a read-write lock runs on a single
    /// instance without persistence).
    rw: RwLocks,
}

impl RedisServer {
    /// An empty server.
    pub fn new(config: RedisServerConfig) -> RedisServer {
        let replica_of = config.replica_of;
        RedisServer {
            config,
            db: Db::new(),
            disk: Disk::default(),
            replica_of,
            dirty: 0,
            lastsave_s: 0,
            last_fsync_ms: 0,
            fsync_armed: false,
            open: true,
            repl: Repl::new(replica_of),
            propagate: Vec::new(),
            rw: RwLocks::default(),
        }
    }

    /// The server's role now.
    pub fn role(&self) -> Role {
        self.repl.role
    }

    /// The value stored under `key` and its deadline, expired or not (for tests).
    pub fn peek(&self, key: Key) -> Option<(u64, Option<i64>)> {
        self.db.get(key).map(|e| (e.value, e.expires_at_ms))
    }

    /// False between a restart and the end of the restart delay.
    pub(super) fn is_open(&self) -> bool {
        self.open
    }

    fn is_master(&self) -> bool {
        self.repl.role == Role::Master
    }

    pub(crate) fn on_start(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        self.lastsave_s = wall_secs(ctx);
        self.last_fsync_ms = wall_secs(ctx) * 1000;
        self.open(ctx);
    }

    /// Starts serving: arms the RDB save check and, on a replica, connects to the primary.
    fn open(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        self.open = true;
        if let Persistence::Rdb { .. } = self.config.persistence {
            set(ctx, SERVER_CRON_PERIOD, ServerTimer::Cron);
        }
        if let Some(primary) = self.replica_of {
            self.connect_to_primary(ctx, primary);
        }
    }

    /// A crash keeps only what is durable (Redis's persistence docs): the files, the page cache
    /// unless the machine lost power, and the configuration file's role.
    pub(crate) fn on_crash(&mut self) {
        self.db.clear();
        self.disk.crash(self.config.crash_loses);
        self.dirty = 0;
        self.fsync_armed = false;
        self.open = false;
        self.repl = Repl::new(self.replica_of);
        self.propagate.clear();
        self.rw.clear();
    }

    /// A restart loads the dataset from disk. Deadlines are absolute and are judged against
    /// the restarted node's clock: RDB load on a primary drops the keys already expired.
    pub(crate) fn on_restart(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        self.db = self.disk.load(&self.config.persistence);
        let rdb = matches!(self.config.persistence, Persistence::Rdb { .. });
        if rdb && self.replica_of.is_none() {
            let now_ms = ctx.clock(self.config.expiry_clock).as_millis();
            self.db
                .retain(|_, e| e.expires_at_ms.is_none_or(|when| now_ms <= when));
        }
        self.lastsave_s = wall_secs(ctx);
        self.last_fsync_ms = wall_secs(ctx) * 1000;
        if self.config.restart_delay > Dur::ZERO {
            set(ctx, self.config.restart_delay, ServerTimer::Open);
        } else {
            self.open(ctx);
        }
    }

    pub(crate) fn on_timer(&mut self, ctx: &mut impl Host<Msg, Timer>, timer: ServerTimer) {
        match timer {
            ServerTimer::Cron => {
                if let Persistence::Rdb { save } = &self.config.persistence {
                    let now_s = wall_secs(ctx);
                    if save_due(save, self.dirty, now_s - self.lastsave_s) {
                        // BGSAVE forks and writes the snapshot of the fork instant; the
                        // snapshot is taken as complete at once.
                        self.disk.rdb = Some(self.db.clone());
                        self.dirty = 0;
                        self.lastsave_s = now_s;
                    }
                }
                set(ctx, SERVER_CRON_PERIOD, ServerTimer::Cron);
            }
            ServerTimer::Fsync => {
                self.fsync_armed = false;
                self.fsync_if_due(ctx);
            }
            ServerTimer::Open => self.open(ctx),
            ServerTimer::ReplCron => self.replication_cron(ctx),
            ServerTimer::Ship { replica, sync } => self.ship_due(ctx, replica, sync),
            ServerTimer::WaitTimeout { client, id } => self.wait_timed_out(ctx, client, id),
        }
    }

    /// Handles one command from `from` and replies; nothing while the server is not open.
    pub(crate) fn on_command(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        from: NodeId,
        id: u64,
        cmd: Command,
    ) {
        if !self.open {
            return;
        }
        if let Command::Wait { replicas, timeout } = cmd {
            self.wait(ctx, from, id, replicas, timeout);
            return;
        }
        let now_ms = ctx.clock(self.config.expiry_clock).as_millis();
        if let Command::RwLock { key, .. }
        | Command::RwUnlock { key, .. }
        | Command::RwRenew { key, .. } = cmd
        {
            let reply = self.rw_command(ctx, from, now_ms, key, cmd);
            ctx.send(from, Msg::Reply { id, reply });
            return;
        }
        let key = cmd.lock_key().unwrap_or(LOCK_KEY);
        let before = self.db.get(key).copied();
        let reply = self.execute(now_ms, cmd);
        self.audit(ctx, from, key, before, now_ms);
        if !self.propagate.is_empty() {
            self.propagate_writes(ctx);
            self.repl.woff.insert(from, self.repl.offset);
        }
        ctx.send(from, Msg::Reply { id, reply });
    }

    /// Notes a change of the lock key's owner or deadline for observers, judged from the key
    /// before and after a command (so every command that sets, renews or deletes it counts,
    /// whatever its name). A key deleted because it had expired ends at its deadline anyway.
    ///
    /// A command that makes `from` the key's owner is also the service issuing that
    /// acquisition: it is recorded in the history as `Issued`, named by the lock value the
    /// client chose for this attempt (docs/checker.md, service order). With many locks
    /// (`key` another lock's), only the `Issued` is kept: the observers' holder view is of
    /// lock 0's key.
    fn audit(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        from: NodeId,
        key: Key,
        before: Option<Entry>,
        now_ms: i64,
    ) {
        let after = self.db.get(key).copied();
        let clock = self.config.expiry_clock;
        let live = |e: &Entry| e.expires_at_ms.is_none_or(|when| now_ms <= when);
        // A key is expired once the clock reads past its deadline's millisecond.
        let lapse = |e: &Entry| {
            e.expires_at_ms.map(|at| {
                (
                    clock,
                    LocalTime::from_nanos(at.saturating_add(1).saturating_mul(1_000_000)),
                )
            })
        };
        let view = match (before, after) {
            (b, Some(a)) if b.is_none_or(|b| b.value != a.value || !live(&b)) => {
                HolderView::Granted {
                    client: from,
                    expires: lapse(&a),
                }
            }
            (Some(b), Some(a)) if b.expires_at_ms != a.expires_at_ms => match lapse(&a) {
                Some(expires) => HolderView::Extended { expires },
                None => return,
            },
            (Some(_), None) => HolderView::Free,
            _ => return,
        };
        if key == LOCK_KEY {
            ctx.observe(Observation::Holder(view));
        }
        if let (HolderView::Granted { .. }, Some(a)) = (view, after) {
            ctx.record(Event::Issued {
                client: HistNode(from.0),
                ticket: a.value,
            });
        }
    }

    /// A read-write lock's lock, unlock or renewal script, with its audit: an acquisition is the
    /// service issuing it (`Issued`, named by the caller's value), and the observers' holder
    /// view of lock 0 starts when the hash is created (naming its first holder, until the
    /// hash's deadline), moves with the deadline, and ends when the hash is deleted.
    fn rw_command(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        from: NodeId,
        now_ms: i64,
        key: Key,
        cmd: Command,
    ) -> Reply {
        let before = self.rw.deadline(key, now_ms);
        let acquire = match cmd {
            Command::RwLock { value, .. } => Some(value),
            _ => None,
        };
        let reply = self.execute(now_ms, cmd);
        let after = self.rw.deadline(key, now_ms);
        let clock = self.config.expiry_clock;
        // The hash is gone once the clock reads past its deadline's millisecond.
        let lapse = |at: i64| {
            (
                clock,
                LocalTime::from_nanos(at.saturating_add(1).saturating_mul(1_000_000)),
            )
        };
        let view = match (before, after) {
            (None, Some(at)) => Some(HolderView::Granted {
                client: from,
                expires: Some(lapse(at)),
            }),
            (Some(b), Some(a)) if a != b => Some(HolderView::Extended { expires: lapse(a) }),
            (Some(_), None) => Some(HolderView::Free),
            _ => None,
        };
        if let (Some(view), true) = (view, key == LOCK_KEY) {
            ctx.observe(Observation::Holder(view));
        }
        if let (Some(value), Reply::Ok) = (acquire, reply) {
            ctx.record(Event::Issued {
                client: HistNode(from.0),
                ticket: value,
            });
        }
        reply
    }

    /// A message from a sentinel: `PING` (answered with the role and offset, as `INFO
    /// replication` would) or `REPLICAOF`.
    pub(crate) fn on_sentinel(
        &mut self,
        ctx: &mut impl Host<Msg, Timer>,
        from: NodeId,
        msg: SentinelMsg,
    ) {
        if !self.open {
            return;
        }
        match msg {
            SentinelMsg::Ping => {
                let pong = SentinelMsg::Pong {
                    role: self.repl.role,
                    offset: self.repl.offset,
                };
                ctx.send(from, Msg::Sentinel(pong));
            }
            SentinelMsg::ReplicaOf { primary } => match primary {
                None => self.become_master(),
                Some(p) => self.become_replica(ctx, p),
            },
            other => panic!("{} cannot handle {other:?}", ctx.name()),
        }
    }

    /// Runs a command at the command-time snapshot `now_ms`; the writes it makes are left in
    /// `self.propagate`.
    pub(super) fn execute(&mut self, now_ms: i64, cmd: Command) -> Reply {
        let master = self.is_master();
        match cmd {
            Command::SetNxPx { .. }
            | Command::Del { .. }
            | Command::Incr { .. }
            | Command::SetNxIncr { .. }
                if !master =>
            {
                Reply::Readonly
            }
            Command::SetNxPx { key, value, ttl } => {
                if self.lookup(now_ms, key).is_some() {
                    return Reply::Nil;
                }
                let at_ms = Some(now_ms + ttl.as_millis() as i64);
                self.write(ReplOp::Set { key, value, at_ms });
                Reply::Ok
            }
            Command::Get { key } => match self.lookup(now_ms, key) {
                Some(e) => Reply::Value(e.value),
                None => Reply::Nil,
            },
            Command::Del { key } => {
                let existed = self.lookup(now_ms, key).is_some();
                if existed {
                    self.write(ReplOp::Del { key });
                }
                Reply::Int(i64::from(existed))
            }
            // A script runs on a replica until it tries to write (`-READONLY` then).
            Command::CompareAndDelete { key, value } => match self.lookup(now_ms, key) {
                Some(e) if e.value == value && !master => Reply::Readonly,
                Some(e) if e.value == value => {
                    self.write(ReplOp::Del { key });
                    Reply::Int(1)
                }
                _ => Reply::Int(0),
            },
            Command::CompareAndPexpire { key, value, ttl } => match self.lookup(now_ms, key) {
                Some(e) if e.value == value && !master => Reply::Readonly,
                Some(e) if e.value == value => {
                    let at_ms = now_ms + ttl.as_millis() as i64;
                    self.write(ReplOp::PexpireAt { key, at_ms });
                    Reply::Int(1)
                }
                _ => Reply::Int(0),
            },
            Command::Incr { key } => {
                let next = self.lookup(now_ms, key).map_or(0, |e| e.value) + 1;
                let at_ms = self.db.get(key).and_then(|e| e.expires_at_ms);
                self.write(ReplOp::Set {
                    key,
                    value: next,
                    at_ms,
                });
                Reply::Int(next as i64)
            }
            Command::SetNxIncr {
                key,
                value,
                ttl,
                counter,
            } => {
                if self.lookup(now_ms, key).is_some() {
                    return Reply::Nil;
                }
                let at_ms = Some(now_ms + ttl.as_millis() as i64);
                self.write(ReplOp::Set { key, value, at_ms });
                self.execute(now_ms, Command::Incr { key: counter })
            }
            Command::Wait { .. } => panic!("WAIT is handled before execution"),
            Command::RwLock { .. } | Command::RwUnlock { .. } | Command::RwRenew { .. }
                if !master =>
            {
                Reply::Readonly
            }
            Command::RwLock {
                key,
                write,
                value,
                ttl,
            } => rw_reply(self.rw.lock(key, write, value, ms(ttl), now_ms)),
            Command::RwUnlock { key, write, value } => {
                rw_reply(self.rw.unlock(key, write, value, now_ms))
            }
            Command::RwRenew { key, value, ttl } => {
                rw_reply(self.rw.renew(key, value, ms(ttl), now_ms))
            }
        }
    }

    /// Applies a write to the dataset and queues it for propagation.
    fn write(&mut self, op: ReplOp) {
        self.apply(op);
        self.propagate.push(op);
    }

    /// Applies a write to the dataset, as a primary does and as a replica does with its
    /// primary's stream (never judged expired on the way in).
    pub(super) fn apply(&mut self, op: ReplOp) {
        match op {
            ReplOp::Set { key, value, at_ms } => {
                self.db.insert(
                    key,
                    Entry {
                        value,
                        expires_at_ms: at_ms,
                    },
                );
            }
            ReplOp::PexpireAt { key, at_ms } => {
                if let Some(e) = self.db.get_mut(key) {
                    e.expires_at_ms = Some(at_ms);
                }
            }
            ReplOp::Del { key } => {
                self.db.remove(key);
            }
        }
        self.dirty += 1;
    }

    /// `lookupKey` with `expireIfNeeded`: a key past its deadline is absent. A primary
    /// deletes it and propagates the `DEL`; a replica leaves it for its primary's `DEL`.
    fn lookup(&mut self, now_ms: i64, key: Key) -> Option<Entry> {
        let entry = *self.db.get(key)?;
        if entry.expires_at_ms.is_some_and(|when| now_ms > when) {
            if self.is_master() {
                self.write(ReplOp::Del { key });
            }
            return None;
        }
        Some(entry)
    }

    /// After a command: the AOF gets the writes, then every replica's stream.
    fn propagate_writes(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        self.persist(ctx);
        // Indexed, so that the buffer keeps its allocation for the next command.
        for i in 0..self.propagate.len() {
            let op = self.propagate[i];
            self.feed_replicas(ctx, op);
        }
        self.propagate.clear();
    }

    /// The dataset changed (a command, or on a replica its stream or a full resync): the
    /// AOF follows, before any reply goes out (`flushAppendOnlyFile` in `beforeSleep`).
    pub(super) fn persist(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        self.disk.append(&self.config.persistence, &self.db);
        if matches!(self.config.persistence, Persistence::AofEverysec) {
            self.fsync_if_due(ctx);
        }
    }

    /// `appendfsync everysec` after `write()`: fsync at once when the last fsync is at least
    /// a second old on the wall clock (`mstime - aof_last_fsync >= 1000`); otherwise the
    /// written data waits in the page cache until that second is up, and is fsynced then
    /// even if nothing more is written (the empty-buffer case of `flushAppendOnlyFile`; real
    /// Redis notices on its next event-loop turn, within `serverCron`'s 100 ms, the model at
    /// once). The fsync runs in a background thread; it is taken as complete the moment it
    /// starts.
    fn fsync_if_due(&mut self, ctx: &mut impl Host<Msg, Timer>) {
        let now_ms = ctx.wall().as_millis();
        let due_ms = self.last_fsync_ms + AOF_FSYNC_PERIOD.as_millis() as i64;
        if now_ms >= due_ms {
            self.disk.fsync();
            self.last_fsync_ms = now_ms;
        } else if !self.fsync_armed && !self.disk.synced() {
            self.fsync_armed = true;
            let timer = Timer::Server(ServerTimer::Fsync);
            ctx.set_timer_at(ClockKind::Wall, LocalTime::from_millis(due_ms), timer);
        }
    }
}

/// The wall clock in whole seconds (`server.unixtime`).
fn wall_secs(ctx: &impl Host<Msg, Timer>) -> i64 {
    ctx.wall().as_millis().div_euclid(1000)
}

/// Sets a server timer on the monotonic clock (the event loop's timers are monotonic).
pub(super) fn set(ctx: &mut impl Host<Msg, Timer>, after: Dur, timer: ServerTimer) -> TimerId {
    ctx.set_timer(ClockKind::Mono, after, Timer::Server(timer))
}

/// A duration in whole ms, as a script's `ARGV` carries it.
fn ms(d: Dur) -> i64 {
    d.as_millis() as i64
}

/// A read-write lock script's reply.
fn rw_reply(outcome: Outcome) -> Reply {
    match outcome {
        Outcome::Acquired => Reply::Ok,
        Outcome::Refused(pttl) => Reply::Int(pttl),
        Outcome::Int(Some(n)) => Reply::Int(n),
        Outcome::Int(None) => Reply::Nil,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_sim::Dur;

    fn server() -> RedisServer {
        RedisServer::new(RedisServerConfig::default())
    }

    fn set(ttl_ms: u64, value: u64) -> Command {
        Command::SetNxPx {
            key: "lock",
            value,
            ttl: Dur::from_millis(ttl_ms),
        }
    }

    #[test]
    fn set_nx_fails_while_the_key_lives_and_succeeds_after_expiry() {
        let mut s = server();
        assert_eq!(s.execute(1_000, set(100, 1)), Reply::Ok);
        assert_eq!(
            s.execute(1_100, set(100, 2)),
            Reply::Nil,
            "now == when is not expired"
        );
        assert_eq!(
            s.execute(1_101, set(100, 2)),
            Reply::Ok,
            "now > when is expired"
        );
    }

    #[test]
    fn compare_and_delete_only_deletes_the_callers_value() {
        let mut s = server();
        s.execute(0, set(100, 7));
        assert_eq!(
            s.execute(
                1,
                Command::CompareAndDelete {
                    key: "lock",
                    value: 8
                }
            ),
            Reply::Int(0)
        );
        assert_eq!(
            s.execute(
                1,
                Command::CompareAndDelete {
                    key: "lock",
                    value: 7
                }
            ),
            Reply::Int(1)
        );
        assert_eq!(s.execute(1, Command::Get { key: "lock" }), Reply::Nil);
    }

    #[test]
    fn plain_del_deletes_anyones_lock() {
        let mut s = server();
        s.execute(0, set(100, 7));
        assert_eq!(s.execute(1, Command::Del { key: "lock" }), Reply::Int(1));
        assert_eq!(s.execute(1, set(100, 8)), Reply::Ok);
    }

    #[test]
    fn renew_extends_from_the_command_time_and_fails_on_an_expired_key() {
        let mut s = server();
        s.execute(0, set(100, 7));
        let renew = |v| Command::CompareAndPexpire {
            key: "lock",
            value: v,
            ttl: Dur::from_millis(100),
        };
        assert_eq!(s.execute(90, renew(7)), Reply::Int(1));
        assert_eq!(s.execute(185, set(100, 9)), Reply::Nil, "renewed until 190");
        assert_eq!(s.execute(191, renew(7)), Reply::Int(0), "expired at 190");
    }

    #[test]
    fn a_write_is_propagated_with_its_absolute_deadline() {
        let mut s = server();
        s.execute(1_000, set(100, 7));
        let renew = Command::CompareAndPexpire {
            key: "lock",
            value: 7,
            ttl: Dur::from_millis(100),
        };
        s.execute(1_050, renew);
        s.execute(
            1_060,
            Command::CompareAndDelete {
                key: "lock",
                value: 7,
            },
        );
        assert_eq!(
            s.propagate,
            vec![
                ReplOp::Set {
                    key: "lock",
                    value: 7,
                    at_ms: Some(1_100)
                },
                ReplOp::PexpireAt {
                    key: "lock",
                    at_ms: 1_150
                },
                ReplOp::Del { key: "lock" },
            ]
        );
    }

    #[test]
    fn a_primary_deletes_an_expired_key_and_propagates_the_del() {
        let mut s = server();
        s.execute(0, set(100, 7));
        s.propagate.clear();
        assert_eq!(s.execute(101, Command::Get { key: "lock" }), Reply::Nil);
        assert_eq!(s.propagate, vec![ReplOp::Del { key: "lock" }]);
        assert_eq!(s.peek("lock"), None);
    }

    #[test]
    fn a_replica_hides_an_expired_key_but_keeps_it_and_refuses_writes() {
        let mut s = RedisServer::new(RedisServerConfig {
            replica_of: Some(NodeId(0)),
            ..RedisServerConfig::default()
        });
        s.apply(ReplOp::Set {
            key: "lock",
            value: 7,
            at_ms: Some(100),
        });
        assert_eq!(
            s.execute(100, Command::Get { key: "lock" }),
            Reply::Value(7)
        );
        assert_eq!(s.execute(101, Command::Get { key: "lock" }), Reply::Nil);
        assert_eq!(
            s.peek("lock"),
            Some((7, Some(100))),
            "waits for the primary's DEL"
        );
        assert_eq!(s.execute(101, set(100, 8)), Reply::Readonly);
        assert!(s.propagate.is_empty());
    }

    #[test]
    fn incr_counts_from_one_and_never_expires() {
        let mut s = server();
        let incr = Command::Incr { key: "fence" };
        assert_eq!(s.execute(0, incr.clone()), Reply::Int(1));
        assert_eq!(s.execute(i64::MAX / 2, incr), Reply::Int(2));
    }

    #[test]
    fn the_acquire_and_fence_script_sets_and_counts_in_one_step_or_not_at_all() {
        let mut s = server();
        let acquire = |value| Command::SetNxIncr {
            key: "lock",
            value,
            ttl: Dur::from_millis(100),
            counter: "fence",
        };
        assert_eq!(s.execute(0, acquire(7)), Reply::Int(1));
        assert_eq!(s.peek("lock"), Some((7, Some(100))));
        // Held: nothing set, nothing counted.
        assert_eq!(s.execute(50, acquire(8)), Reply::Nil);
        assert_eq!(s.peek("fence"), Some((1, None)));
        // Expired (past its deadline): the next holder's token is the next count.
        assert_eq!(s.execute(101, acquire(9)), Reply::Int(2));
        assert_eq!(s.peek("lock"), Some((9, Some(201))));
        // Both writes of each grant reach the replicas, and the expired key's DEL between.
        assert_eq!(s.propagate.len(), 5);
    }
}

