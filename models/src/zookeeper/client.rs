//! The ZooKeeper lock client: `ClientCnxn`'s connection state machine, a Curator-like layer
//! of connection states, and the lock recipe (ZooKeeper's `ClientCnxn.java` and its recipes
//! page, "Locks"; Curator's `InterProcessMutex`).
//!
//! - **Connection** (`ClientCnxn.java`). The client connects to one server at a time, picked
//!   at random first (`StaticHostProvider` shuffles), then the next in turn, waiting up to
//!   1 s at random before each reconnect. A connect attempt times out after
//!   `T / #servers`. When connected it pings once it has sent nothing for T/3
//!   ([`super::ping_interval`]), and when it has heard nothing for `2T/3` it closes the
//!   socket; the socket's cleanup sleeps 100 ms ([`super::CLEANUP_SLEEP`]) before the client
//!   raises **Disconnected** and goes on to the next server (so for any way a connection
//!   ends). It learns that its session **Expired** only on reconnecting,
//!   from the zero timeout of the server's answer. All times are on its MONO clock.
//! - **Curator** (`ConnectionStateManager`). Disconnected is SUSPENDED; a reconnect to the
//!   same session is RECONNECTED; Expired, or the negotiated timeout passing while SUSPENDED
//!   (Curator 3+'s simulated expiration, timed on the client's **WALL** clock), is LOST, after
//!   which Curator resets the handle and the next connection makes a new session. The
//!   application's policy ([`StopWorkOn`]): keep working (InterProcessMutex does not react to
//!   connection states), stop on LOST, or stop on SUSPENDED. An application that stops
//!   releases the lock: the node is deleted in the background, as `guaranteed()` does.
//! - **Recipe** (`LockInternals`, `StandardLockInternalsDriver`). Create a protected
//!   ephemeral-sequential node `/lock/_c_<guid>-lock-NNNNNNNNNN`; list the children (no
//!   watch); the lowest sequence holds; otherwise `getData` the predecessor with a watch and
//!   wait for its deletion, then list again. The parent watch instead lists with a watch on
//!   the parent and wakes on every change. Our own node missing from the list (its session
//!   is gone) starts the acquisition over. A create whose answer was lost to a disconnect is
//!   found again after the reconnect by listing the children and looking for the guid
//!   (protection); with [`Protection::GuidAndSession`] (the CURATOR-498 fix) the name also
//!   carries the session id, and a node of another session is disregarded. The fencing token
//!   is the node's czxid, and so is the grant's ticket, fenced or not (the members record it
//!   as `Issued` when the node comes first in line). After a reconnect the recipe lists again
//!   (standing in for the watches ZooKeeper re-registers with `SetWatches`).

use std::collections::BTreeMap;

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId};

use super::proto::{Op, OpResult, Reply, Request};
use super::tree::{ErrorCode, EventKind, Path};
use super::{ClientTimer, Msg};
use super::{
    CLEANUP_SLEEP, LOCK_PATH, READ_LOCK_NAME, SessionId, WRITE_LOCK_NAME, Zxid, is_reader,
    lock_order, ping_interval, read_timeout,
};
use crate::env::Host;
use crate::lock::{Access, LockClient, LockSignal, NoResource};
use crate::observe::{ACQUIRE_REQUESTS, Observation};
use crate::storage::StorageRequest;

/// The counter of lock nodes a client deleted on release.
pub const LOCK_RELEASES: &str = "lock releases";
/// The counter of watch notifications clients received (per release: the herd effect).
pub const WATCH_NOTIFICATIONS: &str = "watch notifications";

/// Curator's default session timeout (`CuratorFrameworkFactory.java:60`).
pub const CURATOR_SESSION_TIMEOUT: Dur = Dur::from_secs(60);

/// When the application stops its critical section because of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopWorkOn {
    /// Never: InterProcessMutex's default, with no `ConnectionStateListener`.
    Never,
    /// On LOST ("it is certain that you no longer hold the lock").
    Lost,
    /// On SUSPENDED ("you cannot be certain that you still hold the lock").
    Suspended,
}

/// What a waiter watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Watch {
    /// The predecessor only: one notification per release.
    Predecessor,
    /// The parent's children: every waiter wakes on every change (the herd effect).
    Parent,
}

/// How a create lost to a disconnect is found again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protection {
    /// By the guid in the name alone: a node of an earlier session is taken for ours
    /// (CURATOR-498, CURATOR-604).
    Guid,
    /// By guid and session id, as Curator does since the CURATOR-498 fix.
    GuidAndSession,
}

/// How a ZooKeeper lock client is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooKeeperLockConfig {
    /// The ensemble's servers.
    pub servers: Vec<NodeId>,
    /// The session timeout asked for (the server clamps it).
    pub session_timeout: Dur,
    /// The application's policy on connection states.
    pub stop_work_on: StopWorkOn,
    /// What a waiter watches.
    pub watch: Watch,
    /// How a lost create is found again.
    pub protection: Protection,
    /// Hand the node's czxid to the workload as its fencing token.
    pub fencing: bool,
    /// `acquire(0, unit)`: give up at once when the lock is held.
    pub try_once: bool,
    /// Count each create and each listing of the children as an acquire request.
    pub count_requests: bool,
}

impl ZooKeeperLockConfig {
    /// Curator's defaults for `servers`: a 60 s session, InterProcessMutex with no
    /// connection listener, the predecessor watch, the fixed protection, no fencing.
    pub fn new(servers: Vec<NodeId>) -> ZooKeeperLockConfig {
        ZooKeeperLockConfig {
            servers,
            session_timeout: CURATOR_SESSION_TIMEOUT,
            stop_work_on: StopWorkOn::Never,
            watch: Watch::Predecessor,
            protection: Protection::GuidAndSession,
            fencing: false,
            try_once: false,
            count_requests: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cnxn {
    /// Not connected; a connect is scheduled.
    Idle,
    Connecting {
        conn: u64,
    },
    Connected {
        conn: u64,
        last_heard: LocalTime,
        last_send: LocalTime,
    },
}

/// Curator's connection state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Curator {
    Latent,
    Connected,
    Suspended,
    Lost,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// The create of our node; `lookup` when an earlier create may have succeeded.
    Creating {
        guid: u64,
        lookup: bool,
        xid: Option<u64>,
    },
    /// Looking for our protected node among the children.
    Finding {
        guid: u64,
        xid: Option<u64>,
    },
    /// Getting the stat (czxid) of the node found again.
    Stating {
        path: Path,
        xid: Option<u64>,
    },
    /// Listing the children.
    Listing {
        path: Path,
        czxid: Zxid,
        xid: Option<u64>,
    },
    /// Waiting for a watch on `watched` (armed once the watch is in place).
    Watching {
        path: Path,
        czxid: Zxid,
        watched: Path,
        xid: Option<u64>,
    },
    Held {
        path: Path,
        czxid: Zxid,
    },
    Releasing {
        path: Path,
        xid: u64,
    },
    /// A try found the lock held: deleting our node before failing.
    GivingUp {
        path: Path,
        xid: u64,
    },
}

/// The ZooKeeper lock client, embedded in a workload client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooKeeperLock {
    config: ZooKeeperLockConfig,
    started: bool,
    cnxn: Cnxn,
    conns: u64,
    server: usize,
    /// A fresh handle connects at once; reconnects wait up to a second.
    fresh: bool,
    /// The positions of the next message to send and to receive on the connection.
    tx: u64,
    rx: u64,
    /// Messages that overtook an earlier one on the connection, by position.
    early: BTreeMap<u64, Reply>,
    session: Option<(SessionId, Dur)>,
    last_zxid: Zxid,
    curator: Curator,
    /// Bumped whenever SUSPENDED starts or ends, so that an old LOST timer is ignored.
    suspensions: u64,
    phase: Phase,
    next_xid: u64,
    /// A delete to retry once connected (`guaranteed()`), and its xid in flight.
    background_delete: Option<(Path, Option<u64>)>,
    /// The plain `InterProcessMutex`, or a side of `InterProcessReadWriteLock`.
    access: Access,
    /// [`LOCK_PATH`], made once and shared by every request that names it.
    lock_path: Path,
}

impl ZooKeeperLock {
    /// An idle client, not yet connected.
    ///
    /// # Panics
    /// Without servers; the scenario loader rejects that.
    pub fn new(config: ZooKeeperLockConfig) -> ZooKeeperLock {
        assert!(
            !config.servers.is_empty(),
            "a ZooKeeper client needs servers"
        );
        ZooKeeperLock {
            config,
            started: false,
            cnxn: Cnxn::Idle,
            conns: 0,
            server: 0,
            fresh: true,
            tx: 0,
            rx: 0,
            early: BTreeMap::new(),
            session: None,
            last_zxid: Zxid::default(),
            curator: Curator::Latent,
            suspensions: 0,
            phase: Phase::Idle,
            next_xid: 0,
            background_delete: None,
            access: Access::Exclusive,
            lock_path: LOCK_PATH.into(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ZooKeeperLockConfig {
        &self.config
    }

    /// The current session, if any.
    pub fn session(&self) -> Option<SessionId> {
        self.session.map(|(s, _)| s)
    }

    pub(crate) fn on_reply(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        conn: u64,
        seq: u64,
        reply: Reply,
    ) -> Option<LockSignal> {
        let current = match self.cnxn {
            Cnxn::Connecting { conn: c } | Cnxn::Connected { conn: c, .. } => c == conn,
            Cnxn::Idle => false,
        };
        if !current {
            return None; // Bytes on a socket the client has closed.
        }
        if reply == Reply::Closed {
            // A reset ends the connection at once.
            return self.on_message(ctx, conn, reply);
        }
        if seq < self.rx {
            return None; // A duplicate.
        }
        if seq == self.rx && self.early.is_empty() {
            // The next in order with nothing held, the common case: handled without the
            // detour through `early`, which nothing else fills while it is handled.
            self.rx += 1;
            return self.on_message(ctx, conn, reply);
        }
        // Hold what overtook an earlier message; hand over whatever is now in order.
        self.early.insert(seq, reply);
        let mut signal = None;
        while let Some(reply) = self.early.remove(&self.rx) {
            self.rx += 1;
            let s = self.on_message(ctx, conn, reply);
            signal = signal.or(s);
            let still = match self.cnxn {
                Cnxn::Connecting { conn: c } | Cnxn::Connected { conn: c, .. } => c == conn,
                Cnxn::Idle => false,
            };
            if !still {
                break;
            }
        }
        signal
    }

    /// One message of the current connection, in stream order.
    fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        _conn: u64,
        reply: Reply,
    ) -> Option<LockSignal> {
        let now = ctx.mono();
        if let Cnxn::Connected { last_heard, .. } = &mut self.cnxn {
            *last_heard = now;
        }
        match reply {
            Reply::Connected { session, timeout } => self.on_connected(ctx, session, timeout),
            Reply::Closed => self.disconnect(ctx),
            Reply::Pong => None,
            Reply::Result { xid, zxid, result } => {
                self.last_zxid = self.last_zxid.max(zxid);
                self.on_result(ctx, xid, result)
            }
            Reply::Watch { path, kind } => {
                ctx.observe(Observation::Count(WATCH_NOTIFICATIONS));
                self.on_watch(ctx, &path, kind)
            }
        }
    }

    /// The negotiated timeout, or the requested one before the first connection.
    fn timeout(&self) -> Dur {
        self.session.map_or(self.config.session_timeout, |(_, t)| t)
    }

    fn connect(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) {
        self.conns += 1;
        let conn = self.conns;
        self.cnxn = Cnxn::Connecting { conn };
        self.fresh = false;
        let req = Request::Connect {
            session: self.session(),
            timeout: self.config.session_timeout,
            last_zxid: self.last_zxid,
        };
        (self.tx, self.rx) = (1, 0);
        self.early.clear();
        let to = self.config.servers[self.server];
        ctx.send(to, Msg::Request { conn, seq: 0, req });
        let attempt = self.timeout() / self.config.servers.len() as u64;
        let t = ClientTimer::ConnectTimeout { conn };
        ctx.set_timer(ClockKind::Mono, attempt, t);
    }

    /// The connection is gone (read timeout, a closed socket, a connect that timed out): the
    /// socket is closed now (what it still brings is dropped, requests in flight on it are
    /// lost); Disconnected and the move to the next server come after the cleanup's sleep
    /// ([`Self::after_cleanup`]). `SendThread.run` catches the failure and calls
    /// `cleanAndNotifyState`, whose `ClientCnxnSocketNIO.cleanup` closes the socket and then
    /// sleeps 100 ms before the Disconnected event is queued (`ClientCnxn.java:1222-1247`).
    fn disconnect(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        let was_connected = matches!(self.cnxn, Cnxn::Connected { .. });
        self.cnxn = Cnxn::Idle;
        let t = ClientTimer::Cleanup {
            seq: self.conns,
            was_connected,
        };
        ctx.set_timer(ClockKind::Mono, CLEANUP_SLEEP, t);
        if !was_connected {
            return None;
        }
        if let Some((_, xid)) = &mut self.background_delete {
            *xid = None;
        }
        let mut signal = None;
        self.phase = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Creating { guid, lookup, xid } => Phase::Creating {
                guid,
                lookup: lookup || xid.is_some(),
                xid: None,
            },
            Phase::Finding { guid, .. } => Phase::Finding { guid, xid: None },
            Phase::Stating { path, .. } => Phase::Stating { path, xid: None },
            Phase::Listing { path, czxid, .. } | Phase::Watching { path, czxid, .. } => {
                Phase::Listing {
                    path,
                    czxid,
                    xid: None,
                }
            }
            Phase::Releasing { path, .. } => {
                self.background_delete = Some((path, None));
                signal = Some(LockSignal::Released);
                Phase::Idle
            }
            Phase::GivingUp { path, .. } => {
                // `guaranteed()`: the delete goes on in the background.
                self.background_delete = Some((path, None));
                signal = Some(LockSignal::AcquireFailed);
                Phase::Idle
            }
            other => other,
        };
        signal
    }

    /// The closed socket's cleanup is over: the next server, after up to a second unless the
    /// handle is fresh; Disconnected (Curator: SUSPENDED) if the connection had been made.
    fn after_cleanup(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        was_connected: bool,
    ) -> Option<LockSignal> {
        self.server = (self.server + 1) % self.config.servers.len();
        if self.fresh {
            self.connect(ctx);
        } else {
            let wait = Dur::from_nanos(ctx.rng().below(Dur::from_secs(1).as_nanos()));
            let t = ClientTimer::Reconnect { seq: self.conns };
            ctx.set_timer(ClockKind::Mono, wait, t);
        }
        let mut signal = None;
        if was_connected && self.curator == Curator::Connected {
            self.curator = Curator::Suspended;
            self.suspensions += 1;
            ctx.mark("suspended");
            let t = ClientTimer::Lost {
                suspension: self.suspensions,
            };
            ctx.set_timer(ClockKind::Wall, self.timeout(), t);
            if self.config.stop_work_on == StopWorkOn::Suspended {
                signal = signal.or(self.stop_work());
            }
        }
        signal
    }

    fn on_connected(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        session: SessionId,
        timeout: Dur,
    ) -> Option<LockSignal> {
        if !matches!(self.cnxn, Cnxn::Connecting { .. }) {
            return None;
        }
        if timeout == Dur::ZERO {
            // Expired, learned only now: the handle is closed for good; Curator makes a new
            // one, whose first connection makes a new session.
            self.session = None;
            self.fresh = true;
            self.cnxn = Cnxn::Idle;
            let signal = self.lost();
            self.connect(ctx);
            return signal;
        }
        let Cnxn::Connecting { conn } = self.cnxn else {
            unreachable!()
        };
        let now = ctx.mono();
        self.session = Some((session, timeout));
        self.cnxn = Cnxn::Connected {
            conn,
            last_heard: now,
            last_send: now,
        };
        let read = read_timeout(timeout);
        let t = ClientTimer::ReadCheck { conn };
        ctx.set_timer(ClockKind::Mono, read, t);
        let t = ClientTimer::PingCheck { conn };
        ctx.set_timer(ClockKind::Mono, ping_interval(read), t);
        if self.curator != Curator::Connected {
            self.curator = Curator::Connected;
            self.suspensions += 1;
        }
        if let Some((path, None)) = self.background_delete.clone() {
            let xid = self.send_op(ctx, Op::Delete { path: path.clone() });
            self.background_delete = Some((path, xid));
        }
        self.step(ctx);
        None
    }

    /// LOST: the session is certainly gone (or Curator says so).
    fn lost(&mut self) -> Option<LockSignal> {
        self.curator = Curator::Lost;
        self.suspensions += 1;
        match self.config.stop_work_on {
            StopWorkOn::Lost | StopWorkOn::Suspended => self.stop_work(),
            StopWorkOn::Never => None,
        }
    }

    /// The application stops its critical section and releases the lock in the background.
    fn stop_work(&mut self) -> Option<LockSignal> {
        if let Phase::Held { path, .. } = &self.phase {
            self.background_delete = Some((path.clone(), None));
            self.phase = Phase::Idle;
            return Some(LockSignal::Lost);
        }
        None
    }

    /// The start of our node's name (`_c_<guid>-[<session>-]<lock name>`), appended to
    /// `out`; written without the formatting machinery, which a hot path notices.
    fn push_node_prefix(&self, out: &mut String, guid: u64) {
        // The lock name: `InterProcessMutex`'s, or the read-write lock's two.
        let name = match self.access {
            Access::Exclusive => "lock-",
            Access::Read => READ_LOCK_NAME,
            Access::Write => WRITE_LOCK_NAME,
        };
        out.push_str("_c_");
        push_hex16(out, guid);
        out.push('-');
        if let (Protection::GuidAndSession, Some(s)) = (self.config.protection, self.session()) {
            push_hex16(out, s);
            out.push('-');
        }
        out.push_str(name);
    }

    fn node_prefix(&self, guid: u64) -> String {
        let mut prefix = String::with_capacity(64);
        self.push_node_prefix(&mut prefix, guid);
        prefix
    }

    /// Sends the request the current phase waits for, if it is not in flight and the
    /// client is connected.
    fn step(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) {
        if !matches!(self.cnxn, Cnxn::Connected { .. }) {
            return;
        }
        let parent = self.config.watch == Watch::Parent;
        match self.phase.clone() {
            Phase::Creating {
                guid,
                lookup: true,
                xid: None,
            } => {
                self.phase = Phase::Finding { guid, xid: None };
                self.step(ctx);
            }
            Phase::Creating {
                guid,
                lookup: false,
                xid: None,
            } => {
                let mut path = String::with_capacity(LOCK_PATH.len() + 64);
                path.push_str(LOCK_PATH);
                path.push('/');
                self.push_node_prefix(&mut path, guid);
                let op = Op::Create {
                    path: path.into(),
                    ephemeral: true,
                    sequential: true,
                };
                let xid = self.send_op(ctx, op);
                if self.config.count_requests {
                    ctx.observe(Observation::Count(ACQUIRE_REQUESTS));
                }
                self.phase = Phase::Creating {
                    guid,
                    lookup: false,
                    xid,
                };
                ctx.mark("lock-create-sent");
            }
            Phase::Finding { guid, xid: None } => {
                let op = Op::GetChildren {
                    path: self.lock_path.clone(),
                    watch: false,
                };
                let xid = self.send_op(ctx, op);
                self.phase = Phase::Finding { guid, xid };
            }
            Phase::Stating { path, xid: None } => {
                let op = Op::GetData {
                    path: path.clone(),
                    watch: false,
                };
                let xid = self.send_op(ctx, op);
                self.phase = Phase::Stating { path, xid };
            }
            Phase::Listing {
                path,
                czxid,
                xid: None,
            } => {
                let op = Op::GetChildren {
                    path: self.lock_path.clone(),
                    watch: parent,
                };
                let xid = self.send_op(ctx, op);
                if self.config.count_requests {
                    ctx.observe(Observation::Count(ACQUIRE_REQUESTS));
                }
                self.phase = Phase::Listing { path, czxid, xid };
            }
            _ => {}
        }
    }

    fn on_result(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        xid: u64,
        result: OpResult,
    ) -> Option<LockSignal> {
        if let Some((_, Some(x))) = &self.background_delete {
            if *x == xid {
                self.background_delete = None;
                return None;
            }
        }
        if result == OpResult::Error(ErrorCode::SessionExpired) {
            // The leader no longer knows the session: reconnecting tells the client so.
            return self.disconnect(ctx);
        }
        let waited = match &self.phase {
            Phase::Creating { xid: x, .. }
            | Phase::Finding { xid: x, .. }
            | Phase::Stating { xid: x, .. }
            | Phase::Listing { xid: x, .. }
            | Phase::Watching { xid: x, .. } => *x == Some(xid),
            Phase::Releasing { xid: x, .. } | Phase::GivingUp { xid: x, .. } => *x == xid,
            Phase::Idle | Phase::Held { .. } => false,
        };
        if !waited {
            return None;
        }
        match (self.phase.clone(), result) {
            (Phase::Creating { .. }, OpResult::Created { path, czxid }) => {
                self.list(ctx, path, czxid);
                None
            }
            (Phase::Finding { guid, .. }, OpResult::Children(names)) => {
                let prefix = self.node_prefix(guid);
                match names.iter().find(|n| n.starts_with(&prefix)) {
                    Some(name) => {
                        self.phase = Phase::Stating {
                            path: lock_node(name),
                            xid: None,
                        };
                    }
                    None => {
                        self.phase = Phase::Creating {
                            guid,
                            lookup: false,
                            xid: None,
                        };
                    }
                }
                self.step(ctx);
                None
            }
            (Phase::Stating { path, .. }, OpResult::Stat(stat)) => {
                self.list(ctx, path, stat.czxid);
                None
            }
            (Phase::Listing { path, czxid, .. }, OpResult::Children(names)) => {
                self.on_children(ctx, path, czxid, names)
            }
            (Phase::Watching { path, .. }, OpResult::Stat(_)) if self.config.try_once => {
                // The watch is set, and a try has no time to wait for it.
                self.give_up(ctx, path)
            }
            (
                Phase::Watching {
                    path,
                    czxid,
                    watched,
                    ..
                },
                OpResult::Stat(_),
            ) => {
                // The watch is set: wait for the predecessor's deletion.
                self.phase = Phase::Watching {
                    path,
                    czxid,
                    watched,
                    xid: None,
                };
                None
            }
            (Phase::Watching { path, czxid, .. }, OpResult::Error(ErrorCode::NoNode)) => {
                // The predecessor is already gone: list again.
                self.list(ctx, path, czxid);
                None
            }
            (Phase::GivingUp { .. }, _) => {
                self.phase = Phase::Idle;
                Some(LockSignal::AcquireFailed)
            }
            (Phase::Releasing { .. }, _) => {
                self.phase = Phase::Idle;
                ctx.observe(Observation::Count(LOCK_RELEASES));
                Some(LockSignal::Released)
            }
            (_, _) => {
                // Our node is gone (NoNode on our own node) or the create failed: start the
                // acquisition over, as Curator's retry loop does.
                self.restart(ctx);
                None
            }
        }
    }

    fn restart(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) {
        self.phase = Phase::Creating {
            guid: ctx.rng().next_u64(),
            lookup: false,
            xid: None,
        };
        self.step(ctx);
    }

    fn list(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, path: Path, czxid: Zxid) {
        self.phase = Phase::Listing {
            path,
            czxid,
            xid: None,
        };
        self.step(ctx);
    }

    fn on_children(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        path: Path,
        czxid: Zxid,
        mut names: Vec<Path>,
    ) -> Option<LockSignal> {
        // Curator sorts by the sequence number after "lock-".
        names.sort_by(|a, b| lock_order(a, b));
        let ours = path.rsplit('/').next().unwrap_or_default();
        let Some(index) = names.iter().position(|n| **n == *ours) else {
            // Our node is gone with its session: acquire again.
            self.restart(ctx);
            return None;
        };
        // Who blocks us: a reader waits for the first writer before it, if any
        // (`readLockPredicate`); a writer, or the plain mutex, for its predecessor.
        let blocker = match self.access {
            Access::Read => names[..index].iter().position(|n| !is_reader(n)),
            Access::Exclusive | Access::Write => index.checked_sub(1),
        };
        let Some(blocker) = blocker else {
            self.phase = Phase::Held { path, czxid };
            // The ticket is the node's czxid, fenced or not: the members' owner audits record
            // it as `Issued` when the node comes first in line.
            let token = self.config.fencing.then_some(czxid.as_u64());
            return Some(LockSignal::Granted {
                token,
                ticket: Some(czxid.as_u64()),
            });
        };
        if self.config.try_once && self.config.watch == Watch::Parent {
            // The listing left the watch: no time left to wait for it.
            return self.give_up(ctx, path);
        }
        let watched = match self.config.watch {
            Watch::Predecessor => lock_node(&names[blocker]),
            Watch::Parent => self.lock_path.clone(),
        };
        let xid = match self.config.watch {
            Watch::Predecessor => self.send_op(
                ctx,
                Op::GetData {
                    path: watched.clone(),
                    watch: true,
                },
            ),
            // The listing already left a watch on the children.
            Watch::Parent => None,
        };
        self.phase = Phase::Watching {
            path,
            czxid,
            watched,
            xid,
        };
        ctx.mark("lock-waiting");
        None
    }

    /// `acquire(0, unit)` found the lock held once its watch was in place
    /// (`LockInternals.internalLockLoop`: `millisToWait <= 0`): the node is deleted
    /// (`deleteOurPath`), and the acquisition fails once the delete is answered.
    fn give_up(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, path: Path) -> Option<LockSignal> {
        match self.send_op(ctx, Op::Delete { path: path.clone() }) {
            Some(xid) => {
                self.phase = Phase::GivingUp { path, xid };
                None
            }
            None => {
                self.background_delete = Some((path, None));
                self.phase = Phase::Idle;
                Some(LockSignal::AcquireFailed)
            }
        }
    }

    fn on_watch(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        path: &str,
        kind: EventKind,
    ) -> Option<LockSignal> {
        if let Phase::Watching {
            path: ours,
            czxid,
            watched,
            ..
        } = self.phase.clone()
        {
            let wakes = *watched == *path
                && matches!(
                    kind,
                    EventKind::NodeDeleted | EventKind::NodeChildrenChanged
                );
            if wakes {
                self.list(ctx, ours, czxid);
            }
        }
        None
    }

    fn send_op(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, op: Op) -> Option<u64> {
        if !matches!(self.cnxn, Cnxn::Connected { .. }) {
            return None;
        }
        self.next_xid += 1;
        let xid = self.next_xid;
        self.send(ctx, Request::Op { xid, op });
        Some(xid)
    }

    fn send(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, req: Request) {
        let now = ctx.mono();
        if let Cnxn::Connected {
            conn, last_send, ..
        } = &mut self.cnxn
        {
            *last_send = now;
            let conn = *conn;
            let seq = self.tx;
            self.tx += 1;
            ctx.send(
                self.config.servers[self.server],
                Msg::Request { conn, seq, req },
            );
        }
    }
}

/// The path of the lock node named `name`: `LOCK_PATH/name`.
fn lock_node(name: &str) -> Path {
    let mut path = String::with_capacity(LOCK_PATH.len() + 1 + name.len());
    path.push_str(LOCK_PATH);
    path.push('/');
    path.push_str(name);
    path.into()
}

/// Appends `v` as sixteen lower-case hex digits (`{v:016x}`).
fn push_hex16(out: &mut String, v: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((v >> ((15 - i) * 4)) & 0xf) as usize];
    }
    out.push_str(std::str::from_utf8(&digits).expect("hex digits"));
}

impl LockClient for ZooKeeperLock {
    type Msg = Msg;
    type Timer = ClientTimer;
    type Resource = NoResource;

    /// One lock only: the loader refuses the `keys` workload's many locks for ZooKeeper.
    fn select(&mut self, lock: u32) {
        assert_eq!(lock, 0, "ZooKeeper takes one lock");
    }

    /// The read-write lock's side: its nodes are named `__READ__` or `__WRIT__`, and a reader
    /// waits only for a writer before it.
    fn access(&mut self, access: Access) {
        self.access = access;
    }

    fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        from: NodeId,
        msg: Msg,
    ) -> Option<LockSignal> {
        match msg {
            // A connection is to one server: what another sends (to this process's earlier
            // incarnation, whose connections had the same numbers) is not on it.
            Msg::Reply { .. } if from != self.config.servers[self.server] => None,
            Msg::Reply { conn, seq, reply } => self.on_reply(ctx, conn, seq, reply),
            // Servers send clients messages on their connections only.
            msg => unreachable!("a ZooKeeper lock client was sent {msg:?}"),
        }
    }

    /// The connection to server `peer` was reset (it crashed, or refused the connect): if it
    /// is the server the client is connected or connecting to, the socket read sees EOF and
    /// the client disconnects and tries the next server (`ClientCnxn`'s `SendThread`:
    /// `EndOfStreamException`, cleanup, Disconnected).
    fn on_reset(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        if self.cnxn == Cnxn::Idle || self.config.servers[self.server] != peer {
            return None;
        }
        self.disconnect(ctx)
    }

    fn resource_op(
        &mut self,
        _: &mut impl Host<Msg, ClientTimer>,
        resource: &NoResource,
        _: StorageRequest,
    ) {
        match *resource {}
    }

    fn acquire(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        assert_eq!(self.phase, Phase::Idle, "acquire while not idle");
        if !self.started {
            self.started = true;
            self.server = ctx.rng().below(self.config.servers.len() as u64) as usize;
            self.connect(ctx);
        }
        self.phase = Phase::Creating {
            guid: ctx.rng().next_u64(),
            lookup: false,
            xid: None,
        };
        self.step(ctx);
        None
    }

    /// Curator's re-entry (`InterProcessMutex.internalLock`): the thread's `lockCount` goes
    /// up, with no round trip to ZooKeeper, whatever the session's state.
    fn reenter(&mut self, _: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        let token = match &self.phase {
            Phase::Held { czxid, .. } if self.config.fencing => Some(czxid.as_u64()),
            _ => None,
        };
        Some(LockSignal::Granted {
            token,
            ticket: None,
        })
    }

    /// `release()` with `lockCount` above 1: the count goes down, the node stays.
    fn leave(&mut self, _: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        Some(LockSignal::Released)
    }

    fn release(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        let Phase::Held { path, .. } = std::mem::replace(&mut self.phase, Phase::Idle) else {
            return Some(LockSignal::Released);
        };
        match self.send_op(ctx, Op::Delete { path: path.clone() }) {
            Some(xid) => {
                self.phase = Phase::Releasing { path, xid };
                None
            }
            None => {
                // Not connected: `guaranteed()` deletes in the background once it can.
                self.background_delete = Some((path, None));
                Some(LockSignal::Released)
            }
        }
    }

    fn valid(&self, _ctx: &impl Host<Msg, ClientTimer>) -> bool {
        matches!(self.phase, Phase::Held { .. })
            && match self.config.stop_work_on {
                StopWorkOn::Never => true,
                StopWorkOn::Lost => self.curator != Curator::Lost,
                StopWorkOn::Suspended => self.curator == Curator::Connected,
            }
    }

    fn reset(&mut self) {
        *self = ZooKeeperLock::new(self.config.clone());
    }

    fn on_timer(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        timer: ClientTimer,
    ) -> Option<LockSignal> {
        let now = ctx.mono();
        match (timer, self.cnxn) {
            (ClientTimer::Reconnect { seq }, Cnxn::Idle) if seq == self.conns => {
                self.connect(ctx);
                None
            }
            (ClientTimer::ConnectTimeout { conn }, Cnxn::Connecting { conn: c }) if c == conn => {
                self.disconnect(ctx)
            }
            (
                ClientTimer::Cleanup {
                    seq,
                    was_connected,
                },
                Cnxn::Idle,
            ) if seq == self.conns => self.after_cleanup(ctx, was_connected),
            (
                ClientTimer::ReadCheck { conn },
                Cnxn::Connected {
                    conn: c,
                    last_heard,
                    ..
                },
            ) if c == conn => {
                let limit = read_timeout(self.timeout());
                if now.saturating_since(last_heard) >= limit {
                    return self.disconnect(ctx);
                }
                let t = ClientTimer::ReadCheck { conn };
                ctx.set_timer_at(ClockKind::Mono, last_heard + limit, t);
                None
            }
            (
                ClientTimer::PingCheck { conn },
                Cnxn::Connected {
                    conn: c, last_send, ..
                },
            ) if c == conn => {
                let every = ping_interval(read_timeout(self.timeout()));
                let mut next = last_send + every;
                if now.saturating_since(last_send) >= every {
                    self.send(ctx, Request::Ping);
                    next = now + every;
                }
                let t = ClientTimer::PingCheck { conn };
                ctx.set_timer_at(ClockKind::Mono, next, t);
                None
            }
            (ClientTimer::Lost { suspension }, _)
                if suspension == self.suspensions && self.curator == Curator::Suspended =>
            {
                // Simulated expiration: Curator injects Expired into the handle, which then
                // closes; the next connection makes a new session.
                self.session = None;
                self.fresh = true;
                let signal = self.lost();
                if matches!(self.cnxn, Cnxn::Connecting { .. }) {
                    self.cnxn = Cnxn::Idle;
                    self.connect(ctx);
                }
                signal
            }
            _ => None, // A timer of a connection or suspension that is over.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_built_as_format_would_build_them() {
        for v in [0, 1, 0xab, 0x0123_4567_89ab_cdef, u64::MAX] {
            let mut s = String::new();
            push_hex16(&mut s, v);
            assert_eq!(s, format!("{v:016x}"));
        }
        let mut lock = ZooKeeperLock::new(ZooKeeperLockConfig::new(vec![NodeId(0)]));
        assert_eq!(lock.node_prefix(0xfe), format!("_c_{:016x}-lock-", 0xfe));
        lock.session = Some((0x5eed, Dur::from_secs(4)));
        lock.access = Access::Read;
        assert_eq!(
            lock.node_prefix(7),
            format!("_c_{:016x}-{:016x}-{READ_LOCK_NAME}", 7, 0x5eed)
        );
        assert_eq!(&*lock_node("x-1"), "/lock/x-1");
    }
}
