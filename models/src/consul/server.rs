//! A Consul server: a Raft node whose state machine holds the sessions and the lock key
//! (`agent/consul/state/session.go`, `state/kvs.go`, `agent/consul/session_ttl.go`,
//! `state/delay.go`).
//!
//! - Session creation and destruction, `?acquire` and `?release` are raft entries; the server
//!   that proposed one answers once it applied it. A server that is not the leader answers
//!   `NotLeader` with the leader it knows (the agent forwards; the extra hop is the same).
//! - **TTL timers are the leader's alone**, on its monotonic clock, and run `TTL × 2`
//!   (`SessionTTLMultiplier`): armed when a session's creation is applied, reset by a renew
//!   (which the leader answers without a raft write), reset for **every** session when a
//!   server becomes leader (`initializeSessionTimers`, once the first entry of its term is
//!   applied), cleared when it steps down. When one runs out the leader proposes the session's
//!   destruction, again every 10 s while the session lives (Consul retries with backoff).
//! - Destroying a session that holds the key releases the key (`Behavior = release`: the key
//!   loses its `Session`) or deletes it (`delete`), and sets the key's **lock-delay** on every
//!   server as it applies the entry: `now + LockDelay` on that server's wall clock, in memory.
//!   Only the leader enforces it, before proposing an `?acquire`, which it then refuses at
//!   once. A restarted server restores its state as from a snapshot, which carries no
//!   lock-delay: the entries already in its log when it starts set none.
//! - An `?acquire` applies when the session exists (else: "invalid session", an error) and the
//!   key is free or already the session's; a session new to the key increments its
//!   `LockIndex`. The apply records `Issued` with the entry's raft index as the ticket (the
//!   first record of a ticket counts): `LockIndex` names no acquisition once a deleted key is
//!   created anew and counts from 1 again.
//! - A blocking query on the key is served by the leader from its applied state (Consul's
//!   default consistency mode, without the `consistent` check): at once when the key changed
//!   past the caller's index, else when it does, or after `wait` plus up to `wait / 16`.
//! - The protected resource may live in the KV store too ([`super::resource`]): the leader
//!   serves its reads from its applied state, and its writes are raft entries whose check on
//!   the lock key runs at apply.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_check::{Event, NodeId as HistNode, OpId, StorageOp};
use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId, TimerId};

use super::resource::{self, TxnCheck};
use super::{Behavior, KvView, Msg, Reply, Request, ServerTimer, SessionId};
use crate::env::Host;
use crate::family::{Service, held};
use crate::raft::{Durable, EntryData, Outbox, Raft, RaftConfig, Role};
use crate::storage::{RequestKind, StorageReply, StorageRequest};

/// `structs.SessionTTLMultiplier`.
pub const TTL_MULTIPLIER: u64 = 2;
/// Between the leader's attempts to destroy an expired session.
pub const DESTROY_RETRY: Dur = Dur::from_secs(10);
/// memberlist's `ProbeInterval` (LAN).
pub const PROBE_INTERVAL: Dur = Dur::from_secs(1);
/// memberlist's `ProbeTimeout` (LAN): then indirect probes through other members.
pub const PROBE_TIMEOUT: Dur = Dur::from_millis(500);
/// memberlist's `IndirectChecks`.
pub const INDIRECT_CHECKS: usize = 3;

/// How a Consul cluster is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsulServerConfig {
    /// Every server, in id order.
    pub members: Vec<NodeId>,
    /// The raft tick.
    pub tick: Dur,
    /// The election timeout in ticks.
    pub election_ticks: u32,
    /// Sessions carry the `serfHealth` check: a node the gossip failure detector declares
    /// failed after this long without an ack loses its sessions. `None`: sessions without
    /// checks.
    pub health_check: Option<Dur>,
}

impl ConsulServerConfig {
    /// Consul's defaults for `members`: the raft timing of `raft_multiplier = 5` (election
    /// and heartbeat timeouts 5 s), in ticks of 100 ms.
    pub fn new(members: Vec<NodeId>) -> ConsulServerConfig {
        ConsulServerConfig {
            members,
            tick: Dur::from_millis(100),
            election_ticks: 50,
            health_check: Some(Dur::from_secs(4)),
        }
    }
}

/// A raft entry's command, with where to answer once it is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Proposal {
    /// The server that proposed it; only it answers.
    pub member: NodeId,
    /// The client to answer (the member itself for its own destroys).
    pub client: NodeId,
    /// The client's request id.
    pub req: u64,
    /// What to apply.
    pub cmd: Command,
}

/// What the state machine applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Create session `id` for `node`.
    SessionCreate {
        /// The id, drawn by the proposer.
        id: SessionId,
        /// The node (the client) the session belongs to.
        node: NodeId,
        /// Its TTL.
        ttl: Dur,
        /// Its lock-delay.
        lock_delay: Dur,
        /// Its behavior.
        behavior: Behavior,
    },
    /// Destroy a session (explicitly, or by its TTL).
    SessionDestroy {
        /// The session.
        id: SessionId,
    },
    /// `?acquire`.
    Acquire {
        /// The session.
        session: SessionId,
    },
    /// `?release`.
    Release {
        /// The session.
        session: SessionId,
    },
    /// A write to the resource kept in the KV store: the transaction's check and the
    /// workload's operation, recorded as it applies.
    Resource {
        /// The operation.
        op: StorageRequest,
        /// Its check on the lock key.
        check: TxnCheck,
    },
}

/// A session in the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    /// Its node.
    pub node: NodeId,
    /// Its TTL.
    pub ttl: Dur,
    /// Its lock-delay.
    pub lock_delay: Dur,
    /// Its behavior.
    pub behavior: Behavior,
}

/// The lock key in the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kv {
    /// The session holding it.
    pub session: Option<SessionId>,
    /// `LockIndex`.
    pub lock_index: u64,
    /// `CreateIndex`.
    pub create_index: u64,
    /// `ModifyIndex`.
    pub modify_index: u64,
}

/// A blocking query held by the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parked {
    client: NodeId,
    req: u64,
    index: u64,
    timer: TimerId,
}

/// One Consul server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsulServer {
    config: ConsulServerConfig,
    me: NodeId,
    /// Only its durable part survives a crash.
    raft: Raft<Proposal>,
    applied: u64,
    /// Entries at or below this index were in the log when the process started: applying
    /// them is restoring state, which sets no lock-delay.
    restored_to: u64,
    sessions: BTreeMap<SessionId, Session>,
    kv: Option<Kv>,
    /// The raft index of the key's last change, its deletion included (the table's index,
    /// which a blocking query waits on).
    kv_index: u64,
    /// The key's lock-delay on this server's wall clock (in memory).
    lock_delay_until: Option<LocalTime>,
    /// The resource kept in the KV store, as applied.
    resource: u64,
    /// Resource operations received as leader, so that one sent twice is taken once.
    resource_ops: BTreeSet<OpId>,
    /// The leader's TTL timers.
    ttl_timers: BTreeMap<SessionId, TimerId>,
    /// The first entry of this server's own term was applied as leader.
    promoted_term: Option<u64>,
    parked: BTreeMap<u64, Parked>,
    next_parked: u64,
    /// Lock indexes recorded as issued.
    issued: BTreeSet<u64>,
    /// Proposals of this life still waiting for their apply.
    awaiting: BTreeSet<(NodeId, u64)>,
    outbox: Outbox<Proposal>,
    /// The leader's failure detector: each session node's last ack, and whether it was
    /// declared failed (its sessions destroyed) and has not answered since.
    heard: BTreeMap<NodeId, (LocalTime, bool)>,
    /// The probe in flight per node: its number and target.
    probes: BTreeMap<u64, NodeId>,
    next_probe: u64,
}

impl ConsulServer {
    /// A fresh server; its raft node is built when the run starts.
    pub fn new(config: ConsulServerConfig, me: NodeId) -> ConsulServer {
        let raft = Raft::dormant(Self::raft_config(&config, me), Durable::default());
        ConsulServer::with_raft(config, me, raft)
    }

    fn with_raft(config: ConsulServerConfig, me: NodeId, raft: Raft<Proposal>) -> ConsulServer {
        ConsulServer {
            config,
            me,
            raft,
            applied: 0,
            restored_to: 0,
            sessions: BTreeMap::new(),
            kv: None,
            kv_index: 0,
            lock_delay_until: None,
            resource: 0,
            resource_ops: BTreeSet::new(),
            ttl_timers: BTreeMap::new(),
            promoted_term: None,
            parked: BTreeMap::new(),
            next_parked: 0,
            issued: BTreeSet::new(),
            awaiting: BTreeSet::new(),
            outbox: Outbox::default(),
            heard: BTreeMap::new(),
            probes: BTreeMap::new(),
            next_probe: 0,
        }
    }

    fn raft_config(config: &ConsulServerConfig, me: NodeId) -> RaftConfig {
        RaftConfig {
            election_ticks: config.election_ticks,
            ..RaftConfig::with_defaults(config.members.clone(), me)
        }
    }

    /// The raft node.
    pub fn raft(&self) -> &Raft<Proposal> {
        &self.raft
    }

    /// The lock key as this server applied it.
    pub fn kv(&self) -> Option<Kv> {
        self.kv
    }

    /// The sessions as this server applied them.
    pub fn sessions(&self) -> &BTreeMap<SessionId, Session> {
        &self.sessions
    }

    /// The key's lock-delay on this server, if one was set.
    pub fn lock_delay_until(&self) -> Option<LocalTime> {
        self.lock_delay_until
    }

    /// The resource kept in the KV store, as this server applied it.
    pub fn resource(&self) -> u64 {
        self.resource
    }

    /// Records a resource operation as handled, exactly as a storage node does, and returns
    /// the reply; a write's check `held` or not (`None` for a read).
    fn record_op(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        op: StorageRequest,
        held: Option<bool>,
    ) -> Reply {
        let (kind, outcome, result, value) = resource::apply(op.kind, self.resource, held);
        self.resource = value;
        ctx.record(Event::Storage(StorageOp {
            op: op.op,
            grant: op.grant,
            kind,
            token: op.token,
            outcome,
        }));
        Reply::Resource(StorageReply { op: op.op, result })
    }

    fn reply(ctx: &mut impl Host<Msg, ServerTimer>, to: NodeId, id: u64, reply: Reply) {
        ctx.send(to, Msg::Reply { id, reply });
    }

    fn is_leader(&self) -> bool {
        self.raft.role() == Role::Leader && self.promoted_term == Some(self.raft.term())
    }

    fn on_request(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        id: u64,
        req: Request,
    ) {
        if !self.is_leader() {
            let leader = self.raft.leader().filter(|l| *l != self.me);
            Self::reply(ctx, client, id, Reply::NotLeader { leader });
            return;
        }
        match req {
            Request::SessionCreate {
                ttl,
                lock_delay,
                behavior,
            } => {
                let session = ctx.rng().next_u64() >> 1;
                let cmd = Command::SessionCreate {
                    id: session,
                    node: client,
                    ttl,
                    lock_delay,
                    behavior,
                };
                self.propose(ctx, client, id, cmd);
            }
            Request::SessionRenew { session } => {
                let reply = match self.sessions.get(&session) {
                    Some(s) => {
                        let ttl = s.ttl;
                        self.arm_ttl(ctx, session, ttl);
                        Reply::Renewed
                    }
                    None => Reply::SessionGone,
                };
                Self::reply(ctx, client, id, reply);
            }
            Request::SessionDestroy { session } => {
                self.propose(ctx, client, id, Command::SessionDestroy { id: session });
            }
            Request::Acquire { session } => {
                // The lock-delay, on the leader's wall clock, before the raft apply
                // (`kvs_endpoint.go`: "only the wall-time of the leader node is used").
                if self.lock_delay_until.is_some_and(|t| t > ctx.wall()) {
                    let reply = Reply::Acquire {
                        locked: false,
                        lock_index: self.kv.map_or(0, |k| k.lock_index),
                        modify_index: self.kv.map_or(0, |k| k.modify_index),
                    };
                    Self::reply(ctx, client, id, reply);
                    return;
                }
                self.propose(ctx, client, id, Command::Acquire { session });
            }
            Request::Release { session } => {
                self.propose(ctx, client, id, Command::Release { session });
            }
            Request::Resource { op, check } => {
                if !self.resource_ops.insert(op.op) {
                    return;
                }
                if op.kind == RequestKind::Read {
                    // The default consistency mode: the leader's applied state, at once.
                    let reply = self.record_op(ctx, op, None);
                    Self::reply(ctx, client, id, reply);
                    return;
                }
                self.propose(ctx, client, id, Command::Resource { op, check });
            }
            Request::Get { index, wait } => {
                if self.modify_index() > index || index == 0 {
                    self.answer_get(ctx, client, id);
                    return;
                }
                // `wait` plus a jitter of up to `wait / 16` (`blockingQuery`).
                let jitter = ctx.rng().below(wait.as_nanos() / 16 + 1);
                let after = wait.saturating_add(Dur::from_nanos(jitter));
                self.next_parked += 1;
                let n = self.next_parked;
                let timer = ctx.set_timer(ClockKind::Mono, after, ServerTimer::Blocking(n));
                self.parked.insert(
                    n,
                    Parked {
                        client,
                        req: id,
                        index,
                        timer,
                    },
                );
            }
        }
    }

    /// The index a blocking query waits on: the key's last change (its table's index).
    fn modify_index(&self) -> u64 {
        self.kv_index
    }

    fn answer_get(&self, ctx: &mut impl Host<Msg, ServerTimer>, client: NodeId, id: u64) {
        let entry = self.kv.map(|k| KvView {
            session: k.session,
            lock_index: k.lock_index,
            modify_index: k.modify_index,
        });
        let index = self.modify_index().max(1);
        Self::reply(ctx, client, id, Reply::Kv { entry, index });
    }

    fn propose(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        req: u64,
        cmd: Command,
    ) {
        let mut out = std::mem::take(&mut self.outbox);
        let p = Proposal {
            member: self.me,
            client,
            req,
            cmd,
        };
        self.awaiting.insert((client, req));
        match self.raft.propose(p, &mut out) {
            Ok(_) => self.process(ctx, out),
            Err(not) => {
                self.awaiting.remove(&(client, req));
                self.outbox = out;
                if client != self.me {
                    Self::reply(ctx, client, req, Reply::NotLeader { leader: not.leader });
                }
            }
        }
    }

    fn arm_ttl(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, session: SessionId, ttl: Dur) {
        if let Some(t) = self.ttl_timers.remove(&session) {
            ctx.cancel_timer(t);
        }
        let after = ttl * TTL_MULTIPLIER;
        let t = ctx.set_timer(ClockKind::Mono, after, ServerTimer::SessionTtl(session));
        self.ttl_timers.insert(session, t);
    }

    fn clear_ttl_timers(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        for (_, t) in std::mem::take(&mut self.ttl_timers) {
            ctx.cancel_timer(t);
        }
    }

    /// Sends raft's messages, applies what committed, and starts or stops the leader's
    /// session timers on role changes.
    fn process(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, mut out: Outbox<Proposal>) {
        for (to, m) in out.msgs.drain(..) {
            ctx.send(to, Msg::Raft(m));
        }
        for &(role, _) in &out.role_changes {
            if role != Role::Leader {
                self.promoted_term = None;
                self.clear_ttl_timers(ctx);
                for (_, p) in std::mem::take(&mut self.parked) {
                    ctx.cancel_timer(p.timer);
                    let leader = self.raft.leader();
                    Self::reply(ctx, p.client, p.req, Reply::NotLeader { leader });
                }
            }
        }
        for entry in out.committed.drain(..) {
            self.applied = entry.index;
            match entry.data {
                EntryData::Empty => {
                    if self.raft.role() == Role::Leader
                        && entry.term == self.raft.term()
                        && self.promoted_term != Some(entry.term)
                    {
                        // `initializeSessionTimers`: every session gets a full TTL × 2.
                        self.promoted_term = Some(entry.term);
                        let sessions: Vec<(SessionId, Dur)> =
                            self.sessions.iter().map(|(id, s)| (*id, s.ttl)).collect();
                        for (id, ttl) in sessions {
                            self.arm_ttl(ctx, id, ttl);
                        }
                        if self.config.health_check.is_some() {
                            let now = ctx.mono();
                            self.heard = self
                                .sessions
                                .values()
                                .map(|s| (s.node, (now, false)))
                                .collect();
                            ctx.set_timer(ClockKind::Mono, PROBE_INTERVAL, ServerTimer::Probe);
                        }
                        ctx.mark("leader-ready");
                    }
                }
                EntryData::Command(p) => self.apply(ctx, entry.index, *p),
            }
        }
        out.clear();
        self.outbox = out;
    }

    fn apply(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, index: u64, p: Proposal) {
        let answer =
            p.member == self.me && p.client != self.me && self.awaiting.remove(&(p.client, p.req));
        let reply = match p.cmd {
            Command::SessionCreate {
                id,
                node,
                ttl,
                lock_delay,
                behavior,
            } => {
                self.sessions.insert(
                    id,
                    Session {
                        node,
                        ttl,
                        lock_delay,
                        behavior,
                    },
                );
                if self.is_leader() {
                    self.arm_ttl(ctx, id, ttl);
                    if self.config.health_check.is_some() {
                        // Its agent just spoke: the node is alive (Consul creates a session
                        // only while the node's `serfHealth` passes).
                        self.heard.insert(node, (ctx.mono(), false));
                    }
                }
                Reply::Session(id)
            }
            Command::SessionDestroy { id } => {
                if let Some(s) = self.sessions.remove(&id) {
                    if let Some(t) = self.ttl_timers.remove(&id) {
                        ctx.cancel_timer(t);
                    }
                    if let Some(kv) = self.kv.filter(|k| k.session == Some(id)) {
                        self.kv = match s.behavior {
                            Behavior::Release => Some(Kv {
                                session: None,
                                modify_index: index,
                                ..kv
                            }),
                            Behavior::Delete => None,
                        };
                        // `delay.SetExpiration(key, now, session.LockDelay)` at apply time.
                        if index > self.restored_to && s.lock_delay > Dur::ZERO {
                            self.lock_delay_until = Some(ctx.wall() + s.lock_delay);
                        }
                        self.wake(ctx, index);
                        ctx.mark("session-invalidated");
                    }
                }
                Reply::Done
            }
            Command::Acquire { session } if !self.sessions.contains_key(&session) => {
                // `kvs.Apply`: "invalid session".
                Reply::SessionGone
            }
            Command::Acquire { session } => {
                let (locked, kv) = match self.kv {
                    None => (
                        true,
                        Some(Kv {
                            session: Some(session),
                            lock_index: 1,
                            create_index: index,
                            modify_index: index,
                        }),
                    ),
                    Some(k) if k.session == Some(session) => (true, Some(k)),
                    Some(k) if k.session.is_none() => (
                        true,
                        Some(Kv {
                            session: Some(session),
                            lock_index: k.lock_index + 1,
                            modify_index: index,
                            ..k
                        }),
                    ),
                    Some(k) => (false, Some(k)),
                };
                let changed = kv != self.kv;
                self.kv = kv;
                let lock_index = kv.map_or(0, |k| k.lock_index);
                let modify_index = kv.map_or(0, |k| k.modify_index);
                // The acquisition is named by its raft index: `LockIndex` alone starts again
                // at 1 when a deleted key is created anew (`behavior = "delete"`).
                if locked && changed && self.issued.insert(index) {
                    let node = self.sessions[&session].node;
                    ctx.record(Event::Issued {
                        client: HistNode(node.0),
                        ticket: index,
                    });
                }
                if changed {
                    self.wake(ctx, index);
                }
                Reply::Acquire {
                    locked,
                    lock_index,
                    modify_index,
                }
            }
            Command::Release { session } => {
                if let Some(k) = self.kv.filter(|k| k.session == Some(session)) {
                    self.kv = Some(Kv {
                        session: None,
                        modify_index: index,
                        ..k
                    });
                    self.wake(ctx, index);
                }
                Reply::Done
            }
            Command::Resource { op, check } => {
                let held = check.holds(self.kv);
                self.record_op(ctx, op, Some(held))
            }
        };
        if answer {
            Self::reply(ctx, p.client, p.req, reply);
        }
    }

    /// The leader's probe round: a probe to each session node; a node silent for the
    /// suspicion time is declared failed and its sessions are destroyed (`reconcileMember`
    /// marks its `serfHealth` critical, which invalidates every session carrying it).
    fn probe_round(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let Some(suspicion) = self.config.health_check.filter(|_| self.is_leader()) else {
            return;
        };
        ctx.set_timer(ClockKind::Mono, PROBE_INTERVAL, ServerTimer::Probe);
        let now = ctx.mono();
        // Nodes that hold no session are not watched.
        let nodes: BTreeSet<NodeId> = self.sessions.values().map(|s| s.node).collect();
        self.heard.retain(|n, _| nodes.contains(n));
        self.probes.retain(|_, n| nodes.contains(n));
        for node in nodes {
            let (last, failed) = *self.heard.entry(node).or_insert((now, false));
            if !failed && now.saturating_since(last) > PROBE_INTERVAL.saturating_add(suspicion) {
                self.heard.insert(node, (last, true));
                ctx.mark("node-failed");
                let ids: Vec<SessionId> = self
                    .sessions
                    .iter()
                    .filter(|(_, s)| s.node == node)
                    .map(|(id, _)| *id)
                    .collect();
                for id in ids {
                    self.propose(ctx, self.me, 0, Command::SessionDestroy { id });
                }
            }
            self.next_probe += 1;
            let seq = self.next_probe;
            self.probes.retain(|_, n| *n != node);
            self.probes.insert(seq, node);
            ctx.send_datagram(node, Msg::Ping { seq, via: None });
            ctx.set_timer(ClockKind::Mono, PROBE_TIMEOUT, ServerTimer::ProbeTimeout(seq));
        }
    }

    /// The key changed at raft index `index`: every blocking query waiting below it is
    /// answered.
    fn wake(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, index: u64) {
        self.kv_index = index;
        let now = index;
        let ready: Vec<u64> = self
            .parked
            .iter()
            .filter(|(_, p)| p.index < now)
            .map(|(n, _)| *n)
            .collect();
        for n in ready {
            let p = self.parked.remove(&n).expect("parked");
            ctx.cancel_timer(p.timer);
            self.answer_get(ctx, p.client, p.req);
        }
    }
}

impl Service for ConsulServer {
    type Msg = Msg;
    type Timer = ServerTimer;

    /// Its log, the lock indexes it has issued and the resource operations it has taken.
    fn held_bytes(&self) -> u64 {
        /// A log entry, and its share of the proposal the members' logs share.
        const ENTRY: u64 = 96;
        /// An id in a set.
        const ID: u64 = 48;
        held(self.raft.log_len(), ENTRY)
            .saturating_add(held(self.issued.len() + self.resource_ops.len(), ID))
    }

    fn plays(&self, role: &str) -> bool {
        role == crate::family::played::LEADER && self.is_leader()
    }

    fn on_start(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let durable = self.raft.durable().clone();
        self.restored_to = durable.last_index();
        self.raft = Raft::new(Self::raft_config(&self.config, self.me), durable, ctx.rng());
        let first = Dur::from_nanos(ctx.rng().below(self.config.tick.as_nanos()) + 1);
        ctx.set_timer(ClockKind::Mono, first, ServerTimer::RaftTick);
    }

    fn on_crash(&mut self) {
        let raft = self.raft.clone();
        let issued = std::mem::take(&mut self.issued);
        *self = ConsulServer::with_raft(self.config.clone(), self.me, raft);
        self.issued = issued;
    }

    fn on_restart(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        self.on_start(ctx);
    }

    fn on_timer(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, timer: ServerTimer) {
        match timer {
            ServerTimer::RaftTick => {
                ctx.set_timer(ClockKind::Mono, self.config.tick, ServerTimer::RaftTick);
                let mut out = std::mem::take(&mut self.outbox);
                self.raft.tick(ctx.rng(), &mut out);
                self.process(ctx, out);
            }
            ServerTimer::SessionTtl(id) => {
                self.ttl_timers.remove(&id);
                if !self.is_leader() || !self.sessions.contains_key(&id) {
                    return;
                }
                // Destroy it; look again after a while in case the apply does not come.
                let t = ctx.set_timer(ClockKind::Mono, DESTROY_RETRY, ServerTimer::SessionTtl(id));
                self.ttl_timers.insert(id, t);
                self.propose(ctx, self.me, 0, Command::SessionDestroy { id });
            }
            ServerTimer::Blocking(n) => {
                if let Some(p) = self.parked.remove(&n) {
                    self.answer_get(ctx, p.client, p.req);
                }
            }
            ServerTimer::Probe => self.probe_round(ctx),
            ServerTimer::ProbeTimeout(seq) => {
                let Some(&target) = self.probes.get(&seq) else {
                    return;
                };
                // Indirect probes through `IndirectChecks` other members drawn at random: the
                // other servers and the session nodes.
                let mut others: Vec<NodeId> = self
                    .config
                    .members
                    .iter()
                    .copied()
                    .chain(self.heard.keys().copied())
                    .filter(|n| *n != target && *n != self.me)
                    .collect();
                for i in 0..others.len().min(INDIRECT_CHECKS) {
                    let j = i + ctx.rng().below((others.len() - i) as u64) as usize;
                    others.swap(i, j);
                    ctx.send_datagram(others[i], Msg::PingReq { seq, target });
                }
            }
        }
    }

    fn on_message(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Raft(m) => {
                let mut out = std::mem::take(&mut self.outbox);
                self.raft.step(from, m, ctx.rng(), &mut out);
                self.process(ctx, out);
            }
            Msg::Request { id, req } => self.on_request(ctx, from, id, req),
            Msg::Reply { .. } => {}
            Msg::Ack { seq, to: None } => {
                if let Some(node) = self.probes.remove(&seq) {
                    if let Some(h) = self.heard.get_mut(&node) {
                        *h = (ctx.mono(), false);
                    }
                }
            }
            msg @ (Msg::Ping { .. } | Msg::PingReq { .. } | Msg::Ack { .. }) => {
                super::gossip(ctx, from, &msg);
            }
        }
    }
}
