//! A ZooKeeper ensemble member (`ZooKeeperServer.java`, `SessionTrackerImpl.java`,
//! `ExpiryQueue.java`; docs/families/zookeeper.md).
//!
//! - **Broadcast.** Writes (`createSession`, `closeSession`, `create`, `delete`) are proposals
//!   of the atomic broadcast ([`crate::raft`], see the module page); a learner forwards them
//!   to the leader, which checks the session first (`PrepRequestProcessor`: a create or delete
//!   of a session that is gone or closing fails with `SessionExpired`). Every member applies
//!   committed transactions in order under their zxid; the member the client asked answers
//!   it. Reads are served from the member's own tree (sequential consistency).
//! - **Sessions.** Only the leader's tracker expires sessions, on its MONO clock: each touch
//!   sets `expiry = roundToNextInterval(now + T)`, and at every tick boundary the expired
//!   sessions are marked closing and their `closeSession` proposed
//!   (`SessionTrackerImpl.java:158-175`). Learners keep a touch table of sessions that sent
//!   them anything and hand it over when the leader pings them every tickTime/2
//!   (`LearnerHandler.java:684-693`). A leader, once its first entry of the epoch is applied,
//!   rebuilds its tracker from the replicated session table with every session at `now + T`
//!   (`SessionTrackerImpl.java:268-297`).
//! - **Connections.** A member serves clients only while it follows or leads a leader whose
//!   epoch it has applied an entry of; when it leaves that epoch (it lost its leader, or a new
//!   one was elected) it closes every client connection, as a learner going LOOKING does. A
//!   client that reconnects with its session is revalidated by the leader: a session it no
//!   longer tracks gets a zero timeout, and the client learns `Expired` only then. A member
//!   refuses a client that has seen a later zxid than its own. Watches live on the member the
//!   client is connected to and fire once. The leader's tracker records each session's
//!   owner, the member it was created or last revalidated through; a create or delete from
//!   another member is a stray from a connection the client has left, refused as
//!   `SessionMoved`, and that member closes the connection (`SessionTrackerImpl.checkSession`,
//!   `FinalRequestProcessor`, ZOOKEEPER-710).
//! - **Crash.** Only the broadcast's durable state survives; the tree is rebuilt by replay.
//! - **Owner audit** ([`crate::audit`]). After each applied transaction that changes the lock
//!   node's children (a create or delete under it, a session close that deletes its
//!   ephemerals), the member notes who its tree makes the owner: the client whose node is
//!   first in line by the recipe's order ([`super::lock_order`], the lowest sequence number),
//!   named by the node's ephemeral owner's session (the client that created the session) and
//!   its czxid. A new owner is recorded as `Issued { client, ticket: czxid }`, the service's
//!   instant of that acquisition. Observer's bookkeeping: it changes no message or timer.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId};

use super::proto::{Op, OpResult, Peer, Proposal, Reply, Request};
use super::tree::{DataTree, ErrorCode, EventKind, Path, Stat, Txn, TxnResult};
use super::{LOCK_PATH, SessionId, Zxid, negotiate_timeout, round_to_next_tick};
use super::{Msg, ServerTimer};
use crate::audit::{Owner, OwnerAudit};
use crate::env::Host;
use crate::family::Service;
use crate::raft::{Durable, EntryData, Outbox, Raft, RaftConfig, ReadOnlyOption, Role};

/// How an ensemble is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooKeeperServerConfig {
    /// Every member, in id order.
    pub members: Vec<NodeId>,
    /// `tickTime`.
    pub tick: Dur,
    /// `syncLimit`, in ticks: how long a learner waits for a silent leader.
    pub sync_limit: u32,
    /// `minSessionTimeout` (2 ticks by default).
    pub min_session_timeout: Dur,
    /// `maxSessionTimeout` (20 ticks by default).
    pub max_session_timeout: Dur,
}

impl ZooKeeperServerConfig {
    /// The sample configuration (`zoo_sample.cfg`): tickTime 2 s, syncLimit 5, session
    /// timeouts in [2, 20] ticks.
    pub fn new(members: Vec<NodeId>) -> ZooKeeperServerConfig {
        ZooKeeperServerConfig::with_tick(members, Dur::from_millis(2_000))
    }

    /// The defaults for another tickTime.
    pub fn with_tick(members: Vec<NodeId>, tick: Dur) -> ZooKeeperServerConfig {
        ZooKeeperServerConfig {
            members,
            tick,
            sync_limit: 5,
            min_session_timeout: tick * 2,
            max_session_timeout: tick * 20,
        }
    }

    /// The broadcast's tick: the leader pings its learners every tickTime/2.
    pub fn raft_tick(&self) -> Dur {
        self.tick / 2
    }
}

/// What a member did, for tests that check the ensemble's invariants. Bookkeeping: kept
/// across crashes, never read by the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Audit {
    /// The member started (or restarted): its tree is rebuilt by replay from here.
    Boot,
    /// A committed transaction was applied.
    Applied {
        /// Its zxid.
        zxid: Zxid,
        /// The transaction.
        txn: Txn,
        /// What it gave.
        result: TxnResult,
    },
    /// The member became the ready leader of this epoch.
    Leading {
        /// The epoch.
        epoch: u64,
    },
    /// The leader's tracker expired this session and proposed its close.
    Expired {
        /// The session.
        session: SessionId,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Tracker {
    epoch: u64,
    expiry: BTreeMap<SessionId, LocalTime>,
    closing: BTreeSet<SessionId>,
    /// The member whose client connection holds each session: set when the session is
    /// created or revalidated, and by the first request of a session the tracker has no owner
    /// for (after a leader change). A write from another member is refused as
    /// `SessionMoved`: it is a stray from a connection the client has left
    /// (`SessionTrackerImpl.checkSession`, `Leader.revalidateSession`, ZOOKEEPER-710).
    owner: BTreeMap<SessionId, NodeId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Conn {
    conn: u64,
    /// `None` while the connect is in progress.
    session: Option<SessionId>,
    /// The position of the next message expected from the client.
    recv: u64,
    /// The position of the next message to the client.
    sent: u64,
    /// Requests that overtook an earlier one, by position.
    early: BTreeMap<u64, Request>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Forwarded {
    client: NodeId,
    conn: u64,
    xid: u64,
    at: LocalTime,
}

/// One ensemble member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooKeeperServer {
    config: ZooKeeperServerConfig,
    me: NodeId,
    raft: Raft<Proposal>,
    tree: DataTree,
    last_zxid: Zxid,
    /// The epoch of the last applied entry.
    applied_epoch: u64,
    tracker: Option<Tracker>,
    /// The epoch whose leader this member serves clients under.
    serving: Option<u64>,
    conns: BTreeMap<NodeId, Conn>,
    touches: BTreeSet<SessionId>,
    data_watches: BTreeMap<Path, BTreeSet<NodeId>>,
    child_watches: BTreeMap<Path, BTreeSet<NodeId>>,
    forwarded: Vec<Forwarded>,
    /// The xids of the client requests proposed, per session (a `createSession` is xid 0 of
    /// the session it creates): the learner's link to the leader is a TCP stream, so a
    /// request the network carried twice is proposed once. A request is known by its
    /// `(sessionId, cxid)`, as in ZooKeeper: a client's connection numbers and xids start
    /// over when its process restarts, but then it has a new session, and within a session
    /// the xids only grow. Cleared (but for the session's creation) when the session closes.
    proposed: BTreeMap<SessionId, BTreeSet<u64>>,
    boots: u32,
    audit: Vec<Audit>,
    /// Who this member's applied tree makes the lock's owner, over time (kept across crashes:
    /// it is an observer's record, not the member's state).
    owners: OwnerAudit,
    /// The client that made each session of the applied tree (from its `createSession`
    /// proposal), so that the owner audit can name a lock node's client by its ephemeral
    /// owner. An observer's record, never read by the model; rebuilt by replay like the tree.
    session_clients: BTreeMap<SessionId, NodeId>,
}

impl ZooKeeperServer {
    /// A fresh member; its broadcast node is built when the run starts, from the member's own
    /// random stream.
    pub fn new(config: ZooKeeperServerConfig, me: NodeId) -> ZooKeeperServer {
        let raft = Raft::dormant(Self::raft_config(&config, me), Durable::new());
        ZooKeeperServer::with_raft(config, me, raft, 0, Vec::new())
    }

    fn with_raft(
        config: ZooKeeperServerConfig,
        me: NodeId,
        raft: Raft<Proposal>,
        boots: u32,
        audit: Vec<Audit>,
    ) -> ZooKeeperServer {
        ZooKeeperServer {
            config,
            me,
            raft,
            tree: DataTree::with_parents(&[LOCK_PATH]),
            last_zxid: Zxid::default(),
            applied_epoch: 0,
            tracker: None,
            serving: None,
            conns: BTreeMap::new(),
            touches: BTreeSet::new(),
            data_watches: BTreeMap::new(),
            child_watches: BTreeMap::new(),
            forwarded: Vec::new(),
            proposed: BTreeMap::new(),
            boots,
            audit,
            owners: OwnerAudit::default(),
            session_clients: BTreeMap::new(),
        }
    }

    fn raft_config(config: &ZooKeeperServerConfig, me: NodeId) -> RaftConfig {
        RaftConfig {
            election_ticks: 2 * config.sync_limit.max(1),
            heartbeat_ticks: 1,
            read_only: ReadOnlyOption::Safe,
            ..RaftConfig::with_defaults(config.members.clone(), me)
        }
    }

    /// The broadcast node.
    pub fn raft(&self) -> &Raft<Proposal> {
        &self.raft
    }

    /// The tree as this member has applied it.
    pub fn tree(&self) -> &DataTree {
        &self.tree
    }

    /// The last applied zxid.
    pub fn last_zxid(&self) -> Zxid {
        self.last_zxid
    }

    /// True while this member is the leader with a running session tracker.
    pub fn is_ready_leader(&self) -> bool {
        self.tracker.is_some()
    }

    /// The sessions the leader's tracker knows, with their expiry on its MONO clock.
    pub fn tracked(&self) -> Option<&BTreeMap<SessionId, LocalTime>> {
        self.tracker.as_ref().map(|t| &t.expiry)
    }

    /// What this member did, across restarts.
    pub fn audit(&self) -> &[Audit] {
        &self.audit
    }

    /// Who this member's applied tree made the lock's owner, across restarts.
    pub fn owner_audit(&self) -> &OwnerAudit {
        &self.owners
    }

    fn on_peer(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, from: NodeId, p: Peer) {
        match p {
            Peer::Raft(m) => {
                let mut out = Outbox::default();
                self.raft.step(from, m, ctx.rng(), &mut out);
                self.process(ctx, out);
            }
            Peer::Forward(p) => self.leader_submit(ctx, p),
            Peer::Refused { proposal, error } => self.refused(ctx, proposal, error),
            Peer::Revalidate {
                client,
                conn,
                session,
            } => {
                if self.tracker.is_some() {
                    let timeout = self.revalidate(ctx, session, from);
                    ctx.send(
                        from,
                        Msg::Peer(Peer::Revalidated {
                            client,
                            conn,
                            session,
                            timeout,
                        }),
                    );
                }
            }
            Peer::Revalidated {
                client,
                conn,
                session,
                timeout,
            } => self.finish_connect(ctx, client, conn, session, timeout),
            Peer::Ping => {
                let touched = std::mem::take(&mut self.touches).into_iter().collect();
                ctx.send(from, Msg::Peer(Peer::Touches(touched)));
            }
            // A learner's touch table is for the leader's tracker only: `LearnerHandler`
            // hands a PING reply's sessions to `learnerMaster.touch`, and a learner handler
            // exists only on a leader, closed with its epoch (`Leader.shutdown`). A reply
            // that reaches a member that no longer leads (a paused learner answering the
            // pings queued up while its leader lost the quorum) is dropped, not kept in this
            // member's own table: reported to the next leader, it would renew a session
            // nobody had touched since before the fault, an abandoned lock node's among them.
            Peer::Touches(sessions) => {
                if self.tracker.is_some() {
                    for s in sessions {
                        self.touch(ctx, s);
                    }
                }
            }
        }
    }

    /// The stream: a duplicate is dropped, a request that overtook an earlier one waits for
    /// it; hands the requests to handle now to [`Self::on_client`], in order.
    fn on_request(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        conn: u64,
        seq: u64,
        req: Request,
    ) {
        let Some(c) = self.conns.get_mut(&client).filter(|c| c.conn == conn) else {
            // A connect opens a stream; anything else on an unknown one is answered by a
            // reset (in on_client).
            return self.on_client(ctx, client, conn, req);
        };
        if matches!(req, Request::Connect { .. }) || seq < c.recv {
            return; // A duplicate.
        }
        if seq == c.recv && c.early.is_empty() {
            // The next in order, with nothing held: the common case, without the detour
            // through the holding map.
            c.recv += 1;
            return self.on_client(ctx, client, conn, req);
        }
        // Hold it; handle whatever is now in order (collected first: handling a request can
        // end the connection).
        c.early.insert(seq, req);
        let mut ready = Vec::new();
        while let Some(req) = c.early.remove(&c.recv) {
            c.recv += 1;
            ready.push(req);
        }
        for req in ready {
            self.on_client(ctx, client, conn, req);
        }
    }

    fn on_client(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        conn: u64,
        req: Request,
    ) {
        if self.serving.is_none() {
            self.reply(ctx, client, conn, Reply::Closed);
            return;
        }
        if let Request::Connect {
            session,
            timeout,
            last_zxid,
        } = req
        {
            return self.connect(ctx, client, conn, session, timeout, last_zxid);
        }
        // Anything else needs an established connection: without one (this member restarted
        // or closed it) the client's socket is reset.
        let Some(session) = self
            .conns
            .get(&client)
            .filter(|c| c.conn == conn)
            .and_then(|c| c.session)
        else {
            self.reply(ctx, client, conn, Reply::Closed);
            return;
        };
        self.touch(ctx, session);
        match req {
            Request::Connect { .. } => unreachable!("handled above"),
            Request::Ping => self.reply(ctx, client, conn, Reply::Pong),
            Request::Op { xid, op } => self.op(ctx, client, conn, session, xid, op),
        }
    }

    fn connect(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        conn: u64,
        session: Option<SessionId>,
        timeout: Dur,
        last_zxid: Zxid,
    ) {
        if last_zxid > self.last_zxid {
            // "Refusing session request for client as it has seen zxid ... our last zxid is
            // ...: client must try another server."
            self.reply(ctx, client, conn, Reply::Closed);
            return;
        }
        self.drop_client(client);
        self.conns.insert(
            client,
            Conn {
                conn,
                session: None,
                recv: 1,
                sent: 0,
                early: BTreeMap::new(),
            },
        );
        match session {
            None => {
                let session = (ctx.rng().next_u64() >> 1) | 1;
                let c = &self.config;
                let timeout =
                    negotiate_timeout(timeout, c.min_session_timeout, c.max_session_timeout);
                let p = Proposal {
                    origin: self.me,
                    client,
                    conn,
                    xid: 0,
                    txn: Txn::CreateSession { session, timeout },
                };
                self.submit(ctx, p);
            }
            Some(session) if self.tracker.is_some() => {
                let timeout = self.revalidate(ctx, session, self.me);
                self.finish_connect(ctx, client, conn, session, timeout);
            }
            Some(session) => {
                if let Some(leader) = self.raft.leader() {
                    ctx.send(
                        leader,
                        Msg::Peer(Peer::Revalidate {
                            client,
                            conn,
                            session,
                        }),
                    );
                }
            }
        }
    }

    /// The leader's check of a reconnecting session: valid (and touched) unless it is gone
    /// or closing; the member the client reconnected to becomes its owner.
    fn revalidate(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        session: SessionId,
        owner: NodeId,
    ) -> Option<Dur> {
        let t = self.tracker.as_mut()?;
        if !t.expiry.contains_key(&session) || t.closing.contains(&session) {
            return None;
        }
        t.owner.insert(session, owner);
        self.touch(ctx, session);
        self.tree.sessions().get(&session).copied()
    }

    fn finish_connect(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        conn: u64,
        session: SessionId,
        timeout: Option<Dur>,
    ) {
        let Some(c) = self.conns.get_mut(&client).filter(|c| c.conn == conn) else {
            return; // The client has moved on.
        };
        c.session = timeout.map(|_| session);
        let timeout = timeout.unwrap_or(Dur::ZERO);
        self.reply(ctx, client, conn, Reply::Connected { session, timeout });
        if timeout == Dur::ZERO {
            self.conns.remove(&client);
        }
    }

    fn op(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        conn: u64,
        session: SessionId,
        xid: u64,
        op: Op,
    ) {
        let zxid = self.last_zxid;
        let read = move |result| Reply::Result { xid, zxid, result };
        match op {
            Op::GetChildren { path, watch } => {
                let result = match self.tree.children(&path) {
                    Some(children) => {
                        if watch {
                            self.child_watches.entry(path).or_default().insert(client);
                        }
                        OpResult::Children(children)
                    }
                    None => OpResult::Error(ErrorCode::NoNode),
                };
                self.reply(ctx, client, conn, read(result));
            }
            Op::GetData { path, watch } => {
                let result = match self.tree.stat(&path) {
                    Some(stat) => {
                        let stat = *stat;
                        if watch {
                            self.data_watches.entry(path).or_default().insert(client);
                        }
                        OpResult::Stat(stat)
                    }
                    None => OpResult::Error(ErrorCode::NoNode),
                };
                self.reply(ctx, client, conn, read(result));
            }
            Op::Create {
                path,
                ephemeral,
                sequential,
            } => {
                let txn = Txn::Create {
                    session,
                    path,
                    ephemeral,
                    sequential,
                };
                self.submit_op(ctx, client, conn, xid, txn);
            }
            Op::Delete { path } => {
                self.submit_op(ctx, client, conn, xid, Txn::Delete { session, path });
            }
        }
    }

    fn submit_op(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        conn: u64,
        xid: u64,
        txn: Txn,
    ) {
        let p = Proposal {
            origin: self.me,
            client,
            conn,
            xid,
            txn,
        };
        self.submit(ctx, p);
    }

    /// Hands a proposal to the leader: itself, or by forwarding.
    fn submit(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, p: Proposal) {
        if self.raft.role() == Role::Leader {
            return self.leader_submit(ctx, p);
        }
        match self.raft.leader() {
            Some(leader) => {
                self.forwarded.push(Forwarded {
                    client: p.client,
                    conn: p.conn,
                    xid: p.xid,
                    at: ctx.mono(),
                });
                ctx.send(leader, Msg::Peer(Peer::Forward(p)));
            }
            None => self.refused(ctx, p, ErrorCode::ConnectionLoss),
        }
    }

    /// The leader's request processor: check the session and its owner, then propose.
    fn leader_submit(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, p: Proposal) {
        let Some(tracker) = &mut self.tracker else {
            return self.refuse(ctx, p, ErrorCode::ConnectionLoss);
        };
        match &p.txn {
            Txn::Create { session, .. } | Txn::Delete { session, .. } => {
                if !tracker.expiry.contains_key(session) || tracker.closing.contains(session) {
                    return self.refuse(ctx, p, ErrorCode::SessionExpired);
                }
                if *tracker.owner.entry(*session).or_insert(p.origin) != p.origin {
                    return self.refuse(ctx, p, ErrorCode::SessionMoved);
                }
            }
            Txn::CreateSession { .. } | Txn::CloseSession { .. } => {}
        }
        if p.client != self.me {
            let session = match &p.txn {
                Txn::CreateSession { session, .. }
                | Txn::CloseSession { session }
                | Txn::Create { session, .. }
                | Txn::Delete { session, .. } => *session,
            };
            if !self.proposed.entry(session).or_default().insert(p.xid) {
                return; // A duplicate of a request already proposed.
            }
        }
        let mut out = Outbox::default();
        match self.raft.propose(p.clone(), &mut out) {
            Ok(_) => self.process(ctx, out),
            Err(_) => self.refuse(ctx, p, ErrorCode::ConnectionLoss),
        }
    }

    fn refuse(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, p: Proposal, error: ErrorCode) {
        if p.origin == self.me {
            self.refused(ctx, p, error);
        } else {
            ctx.send(p.origin, Msg::Peer(Peer::Refused { proposal: p, error }));
        }
    }

    /// A proposal of this member's client was refused: a create or delete of an expired
    /// session fails with `SessionExpired`; otherwise the client's connection is closed.
    fn refused(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, p: Proposal, error: ErrorCode) {
        self.forwarded
            .retain(|f| !(f.client == p.client && f.conn == p.conn && f.xid == p.xid));
        if p.client == self.me {
            return;
        }
        let current = self.conns.get(&p.client).is_some_and(|c| c.conn == p.conn);
        if !current {
            return;
        }
        match (&p.txn, error) {
            (Txn::Create { .. } | Txn::Delete { .. }, ErrorCode::SessionExpired) => {
                let reply = Reply::Result {
                    xid: p.xid,
                    zxid: self.last_zxid,
                    result: OpResult::Error(error),
                };
                self.reply(ctx, p.client, p.conn, reply);
            }
            _ => self.close_client(ctx, p.client),
        }
    }

    /// A forwarded request not committed within `syncLimit` ticks means the learner's link
    /// to the leader broke: the learner drops the client, which reconnects.
    fn expire_forwarded(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let limit = self.config.tick * u64::from(self.config.sync_limit);
        let now = ctx.mono();
        let (late, kept): (Vec<Forwarded>, Vec<Forwarded>) = std::mem::take(&mut self.forwarded)
            .into_iter()
            .partition(|f| now.saturating_since(f.at) >= limit);
        self.forwarded = kept;
        for f in late {
            if self.conns.get(&f.client).is_some_and(|c| c.conn == f.conn) {
                self.close_client(ctx, f.client);
            }
        }
    }

    fn touch(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, session: SessionId) {
        let tick = self.config.tick;
        let now = ctx.mono();
        let Some(t) = &mut self.tracker else {
            self.touches.insert(session);
            return;
        };
        if t.closing.contains(&session) {
            return;
        }
        if let Some(timeout) = self.tree.sessions().get(&session) {
            t.expiry
                .insert(session, round_to_next_tick(now + *timeout, tick));
        }
    }

    /// The tracker's run at a tick boundary: every session past its expiry is marked closing
    /// and its `closeSession` proposed.
    fn expire_sessions(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, epoch: u64) {
        let now = ctx.mono();
        let Some(t) = self.tracker.as_mut().filter(|t| t.epoch == epoch) else {
            return;
        };
        let due: Vec<SessionId> = t
            .expiry
            .iter()
            .filter(|&(s, &e)| e <= now && !t.closing.contains(s))
            .map(|(&s, _)| s)
            .collect();
        for &s in &due {
            t.closing.insert(s);
        }
        let next = round_to_next_tick(now, self.config.tick);
        ctx.set_timer_at(ClockKind::Mono, next, ServerTimer::Expiry { epoch });
        for session in due {
            self.audit.push(Audit::Expired { session });
            let p = Proposal {
                origin: self.me,
                client: self.me,
                conn: 0,
                xid: 0,
                txn: Txn::CloseSession { session },
            };
            self.leader_submit(ctx, p);
        }
    }

    /// Sends the broadcast's messages, applies what committed, and opens or closes the
    /// member's service to clients as its epoch changes.
    fn process(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, out: Outbox<Proposal>) {
        let Outbox {
            msgs,
            committed,
            role_changes,
            ..
        } = out;
        for (to, m) in msgs {
            ctx.send(to, Msg::Peer(Peer::Raft(m)));
        }
        let (role, term) = (self.raft.role(), self.raft.term());
        if !role_changes.is_empty()
            && self
                .tracker
                .as_ref()
                .is_some_and(|t| role != Role::Leader || t.epoch != term)
        {
            self.tracker = None;
        }
        for entry in committed {
            self.last_zxid = self.last_zxid.next(entry.term);
            self.applied_epoch = entry.term;
            match entry.data {
                EntryData::Empty => {
                    let leads = self.raft.role() == Role::Leader && entry.term == self.raft.term();
                    if leads && self.tracker.is_none() {
                        self.become_ready(ctx, entry.term);
                    }
                }
                EntryData::Command(p) => self.apply(ctx, &p),
            }
        }
        let serving = (self.raft.leader().is_some() && self.applied_epoch == self.raft.term())
            .then_some(self.raft.term());
        if self.serving.is_some() && self.serving != serving {
            self.close_all(ctx);
        }
        self.serving = serving;
    }

    /// The leader's first entry of its epoch is applied: it is ready, and rebuilds its
    /// tracker with every session at `now + T`.
    fn become_ready(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, epoch: u64) {
        let now = ctx.mono();
        let tick = self.config.tick;
        let expiry = self
            .tree
            .sessions()
            .iter()
            .map(|(&s, &t)| (s, round_to_next_tick(now + t, tick)))
            .collect();
        self.tracker = Some(Tracker {
            epoch,
            expiry,
            closing: BTreeSet::new(),
            owner: BTreeMap::new(),
        });
        self.audit.push(Audit::Leading { epoch });
        ctx.set_timer_at(
            ClockKind::Mono,
            round_to_next_tick(now, tick),
            ServerTimer::Expiry { epoch },
        );
        ctx.mark("zk-leader-ready");
    }

    fn apply(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, p: &Proposal) {
        let zxid = self.last_zxid;
        let (result, events) = self.tree.apply(&p.txn, zxid);
        self.audit.push(Audit::Applied {
            zxid,
            txn: p.txn.clone(),
            result: result.clone(),
        });
        match (&p.txn, &result) {
            (Txn::CreateSession { session, .. }, TxnResult::Ok) => {
                self.session_clients.insert(*session, p.client);
            }
            (Txn::CloseSession { session }, _) => {
                self.session_clients.remove(session);
            }
            _ => {}
        }
        if events
            .iter()
            .any(|(path, kind)| *kind == EventKind::NodeChildrenChanged && &**path == LOCK_PATH)
        {
            self.observe_owner(ctx);
        }
        let now = ctx.mono();
        let tick = self.config.tick;
        if let Some(t) = &mut self.tracker {
            match &p.txn {
                Txn::CreateSession { session, timeout } => {
                    t.expiry
                        .insert(*session, round_to_next_tick(now + *timeout, tick));
                    t.owner.insert(*session, p.origin);
                }
                Txn::CloseSession { session } => {
                    t.expiry.remove(session);
                    t.closing.remove(session);
                    t.owner.remove(session);
                }
                Txn::Create { .. } | Txn::Delete { .. } => {}
            }
        }
        if let Txn::CloseSession { session } = &p.txn {
            // Its later requests are refused as expired; only a late copy of its creation
            // still needs to be known as one.
            if let Some(xids) = self.proposed.get_mut(session) {
                xids.retain(|&xid| xid == 0);
            }
        }
        self.fire(ctx, events);
        if p.origin == self.me && p.client != self.me {
            self.answer(ctx, p, result);
        }
    }

    /// The lock's children changed: notes who the applied tree now makes the owners, as the
    /// recipe orders them ([`super::lock_order`]) and decides who holds ([`super::holders`]:
    /// the client whose node is first in line, or every reader before the first writer of a
    /// read-write lock), each named by its node's czxid (its fencing token).
    fn observe_owner(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let owner_of = |name: &str, stat: &Stat| {
            let client = stat
                .ephemeral_owner
                .and_then(|session| self.session_clients.get(&session));
            let Some(&client) = client else {
                panic!("lock node {name} of no known client's session: {stat:?}")
            };
            Owner {
                client,
                ticket: stat.czxid.as_u64(),
            }
        };
        match self.tree.first_in_line(LOCK_PATH) {
            // A reader first in line shares the lock with the readers after it.
            Some((name, _)) if super::is_reader(name) => {
                let line = self.tree.line(LOCK_PATH);
                let names: Vec<&str> = line.iter().map(|(n, _)| *n).collect();
                let owners: Vec<Owner> = line[super::holders(&names)]
                    .iter()
                    .map(|(name, stat)| owner_of(name, stat))
                    .collect();
                self.owners.observe_all(ctx, &owners);
            }
            first => {
                let owner = first.map(|(name, stat)| owner_of(name, stat));
                self.owners.observe(ctx, owner);
            }
        }
    }

    fn answer(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, p: &Proposal, result: TxnResult) {
        self.forwarded
            .retain(|f| !(f.client == p.client && f.conn == p.conn && f.xid == p.xid));
        if self.conns.get(&p.client).is_none_or(|c| c.conn != p.conn) {
            return; // The connection is gone: the reply would go nowhere.
        }
        if let Txn::CreateSession { session, timeout } = p.txn {
            return self.finish_connect(ctx, p.client, p.conn, session, Some(timeout));
        }
        let result = match (&p.txn, result) {
            (_, TxnResult::Created { path, czxid }) => OpResult::Created { path, czxid },
            (_, TxnResult::Error(e)) => OpResult::Error(e),
            (_, TxnResult::Ok) => OpResult::Deleted,
        };
        let reply = Reply::Result {
            xid: p.xid,
            zxid: self.last_zxid,
            result,
        };
        self.reply(ctx, p.client, p.conn, reply);
    }

    /// Fires (and removes) the watches the applied events trigger.
    fn fire(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, events: Vec<(Path, EventKind)>) {
        for (path, kind) in events {
            let watchers = match kind {
                EventKind::NodeCreated | EventKind::NodeDeleted => self.data_watches.remove(&*path),
                EventKind::NodeChildrenChanged => self.child_watches.remove(&*path),
            };
            for client in watchers.into_iter().flatten() {
                if let Some(conn) = self.conns.get(&client).map(|c| c.conn) {
                    let reply = Reply::Watch {
                        path: path.clone(),
                        kind,
                    };
                    self.reply(ctx, client, conn, reply);
                }
            }
        }
    }

    /// Sends `reply` on the client's connection `conn`, if it is the current one, at the
    /// next position of its stream; a close goes out even without a connection.
    fn reply(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        conn: u64,
        reply: Reply,
    ) {
        let seq = match self.conns.get_mut(&client).filter(|c| c.conn == conn) {
            Some(c) => {
                c.sent += 1;
                c.sent - 1
            }
            None if reply == Reply::Closed => 0,
            None => return,
        };
        ctx.send(client, Msg::Reply { conn, seq, reply });
    }

    fn drop_client(&mut self, client: NodeId) {
        self.conns.remove(&client);
        for w in self
            .data_watches
            .values_mut()
            .chain(self.child_watches.values_mut())
        {
            w.remove(&client);
        }
    }

    fn close_client(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, client: NodeId) {
        if let Some(conn) = self.conns.get(&client).map(|c| c.conn) {
            self.reply(ctx, client, conn, Reply::Closed);
            self.drop_client(client);
        }
    }

    /// The member left the epoch it served in: every client connection is closed.
    fn close_all(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        for (client, c) in std::mem::take(&mut self.conns) {
            let (conn, seq) = (c.conn, c.sent);
            ctx.send(
                client,
                Msg::Reply {
                    conn,
                    seq,
                    reply: Reply::Closed,
                },
            );
        }
        self.data_watches.clear();
        self.child_watches.clear();
        self.touches.clear();
        self.forwarded.clear();
    }
}

impl Service for ZooKeeperServer {
    type Msg = Msg;
    type Timer = ServerTimer;

    fn plays(&self, role: &str) -> bool {
        role == crate::family::played::LEADER && self.raft.role() == Role::Leader
    }

    fn on_start(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let durable = self.raft.durable().clone();
        self.raft = Raft::new(Self::raft_config(&self.config, self.me), durable, ctx.rng());
        if self.boots == 0 {
            // Every server starts LOOKING and elects at once (FastLeaderElection): bring the
            // fresh node to the edge of its election timeout, so its first tick campaigns.
            let mut out = Outbox::default();
            for _ in 1..self.raft.randomized_election_timeout() {
                self.raft.tick(ctx.rng(), &mut out);
            }
            debug_assert!(
                out.is_empty(),
                "a follower's ticks before its timeout do nothing"
            );
        }
        self.boots += 1;
        self.audit.push(Audit::Boot);
        let tick = self.config.raft_tick();
        let first = Dur::from_nanos(ctx.rng().below(tick.as_nanos()) + 1);
        ctx.set_timer(ClockKind::Mono, first, ServerTimer::RaftTick);
    }

    fn on_restart(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        self.on_start(ctx);
    }

    fn on_crash(&mut self) {
        let raft = self.raft.clone();
        let audit = std::mem::take(&mut self.audit);
        let mut owners = std::mem::take(&mut self.owners);
        owners.crashed();
        *self = ZooKeeperServer::with_raft(self.config.clone(), self.me, raft, self.boots, audit);
        self.owners = owners;
    }

    fn on_timer(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, timer: ServerTimer) {
        match timer {
            ServerTimer::RaftTick => {
                let tick = self.config.raft_tick();
                ctx.set_timer(ClockKind::Mono, tick, ServerTimer::RaftTick);
                let mut out = Outbox::default();
                self.raft.tick(ctx.rng(), &mut out);
                self.process(ctx, out);
                if self.tracker.is_some() {
                    for &m in &self.config.members {
                        if m != self.me {
                            ctx.send(m, Msg::Peer(Peer::Ping));
                        }
                    }
                }
                self.expire_forwarded(ctx);
            }
            ServerTimer::Expiry { epoch } => self.expire_sessions(ctx, epoch),
        }
    }

    fn on_message(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Peer(p) => self.on_peer(ctx, from, p),
            Msg::Request { conn, seq, req } => self.on_request(ctx, from, conn, seq, req),
            // Servers send replies to clients only.
            msg @ Msg::Reply { .. } => {
                unreachable!("ZooKeeper server {} was sent {msg:?}", ctx.name())
            }
        }
    }
}
