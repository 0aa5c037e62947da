//! An etcd member: a Raft node whose state machine is the key space and the lessor
//! (`server/lease/lessor.go`, `server/etcdserver/server.go`; docs/families/etcd.md).
//!
//! - Writes (`LeaseGrant`, `LeaseRevoke`, `Txn`) are raft proposals; the member that proposed
//!   one answers its client once the entry is applied. A member that is not the leader answers
//!   `NotLeader` with the leader it knows (etcd forwards internally; the extra hop is the same).
//! - Keepalives are not raft entries: the leader's primary lessor moves the lease's expiry on
//!   its own MONO clock. A keepalive for an expired, not yet revoked lease waits; the model
//!   does not answer it, and the client's next keepalive after the revoke learns TTL 0.
//! - The lessor's run loop ticks every 500 ms on the leader, collects up to 500 expired leases
//!   and proposes their revokes, retrying one not revoked after 7 s
//!   (`ExpiredLeasesRetryInterval`). Its phase is the member's own: `runLoop` starts when the
//!   process does and sleeps 500 ms between passes (`lessor.go:620-635`), so where its ticks
//!   fall against a client's keepalives depends on when the process started. The first tick
//!   comes at a point of the period drawn from the member's stream, drawn again at a restart,
//!   as a new process starts its loop afresh.
//! - When a member's first entry of its own term is applied as leader, its lessor is promoted
//!   with the election timeout as extension: every lease lives its checkpointed remaining TTL,
//!   or its full TTL, plus one election timeout. Stepping down demotes it.
//! - Linearizable reads use ReadIndex, or the leader's lease (`ReadOnlyLeaseBased`) when so
//!   configured. Watches stream the member's own applied events.
//! - A crash keeps raft's durable state (term, vote, log); the key space and the lessor are
//!   rebuilt by applying the log again as it commits.
//! - The protected resource may live in the key space ([`super::resource`]): its reads are
//!   linearizable reads and its writes guarded transactions, answered with the workload's
//!   `StorageReply` by the member that serves the read or proposed the write. The operation
//!   is recorded in the history as storage records it, by the member that serves a read and
//!   by every member that applies a write; [`crate::system::history`] keeps the first of
//!   those, the moment the write took effect. (Recording only on the proposer would date a
//!   write proposed by a leader that was then cut off to when that member learns the commit,
//!   long after the new leader applied it and others read it.) A member takes each operation
//!   once, as gRPC over one connection delivers a request once.
//! - The owner audit ([`crate::audit::OwnerAudit`]), an observer's record: after an apply that
//!   creates or deletes a key under the lock prefix (a transaction, or a revoke), the member
//!   notes the owner its applied state gives, as the recipes define it: the live lock key
//!   with the lowest create revision, named by the client whose proposal created it and that
//!   revision; a new owner is recorded as `Issued`. The creators are remembered per live key
//!   and rebuilt by the replay after a crash; nothing the member sends or times depends on
//!   them.

use std::collections::{BTreeMap, BTreeSet};

use lockstep_check::{Event, OpId, StorageOp};
use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId};

use super::client::{PREFIX, READ_PREFIX};
use super::lease::{Lessor, RenewError};
use super::mvcc::{KeyValue, LeaseId, Op, OpResult, Range, Rev, Store, Txn, TxnResult};
use super::proto::{Reply, Request};
use super::resource;
use super::{Msg, ServerTimer};
use crate::audit::{Owner, OwnerAudit};
use crate::env::Host;
use crate::family::Service;
use crate::raft::{Durable, EntryData, Outbox, Raft, RaftConfig, ReadOnlyOption, Role};
use crate::storage::{StorageReply, StorageRequest};

/// The lessor run loop's period (`lessor.go`).
pub const LESSOR_TICK: Dur = Dur::from_millis(500);
/// Leases revoked per lessor tick at most (`leaseRevokeRate / 2`).
pub const REVOKES_PER_TICK: usize = 500;
/// How long a proposed revoke may take before it is proposed again.
pub const REVOKE_RETRY: Dur = Dur::from_secs(7);

/// How an etcd cluster is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdServerConfig {
    /// Every member, in id order.
    pub members: Vec<NodeId>,
    /// The raft tick (`TickMs`, 100 ms).
    pub tick: Dur,
    /// Election timeout in ticks (`ElectionMs / TickMs`, 10).
    pub election_ticks: u32,
    /// Heartbeat interval in ticks (1).
    pub heartbeat_ticks: u32,
    /// ReadIndex (`Safe`, the default) or the leader's lease.
    pub read_only: ReadOnlyOption,
    /// Checkpoint remaining TTLs (`LeaseCheckpoint`, off by default), every this often.
    pub checkpoint: Option<Dur>,
}

impl EtcdServerConfig {
    /// etcd's defaults for `members`.
    pub fn new(members: Vec<NodeId>) -> EtcdServerConfig {
        EtcdServerConfig {
            members,
            tick: Dur::from_millis(100),
            election_ticks: 10,
            heartbeat_ticks: 1,
            read_only: ReadOnlyOption::Safe,
            checkpoint: None,
        }
    }

    /// The election timeout as a duration.
    pub fn election_timeout(&self) -> Dur {
        self.tick * u64::from(self.election_ticks)
    }
}

/// A raft entry's command, with where to answer once it is applied.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proposal {
    /// The member that proposed it; only it answers.
    pub member: NodeId,
    /// The client to answer.
    pub client: NodeId,
    /// The client's request id.
    pub req: u64,
    /// What to apply.
    pub cmd: Command,
}

/// What the state machine applies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Grant lease `id`.
    LeaseGrant {
        /// The id, drawn by the proposing member.
        id: LeaseId,
        /// The TTL asked for.
        ttl: Dur,
    },
    /// Revoke a lease and delete its keys in one revision.
    LeaseRevoke {
        /// The lease.
        id: LeaseId,
    },
    /// Record a lease's remaining TTL.
    LeaseCheckpoint {
        /// The lease.
        id: LeaseId,
        /// Its remaining TTL on the leader.
        remaining: Dur,
    },
    /// A transaction.
    Txn(Txn),
    /// A write to the protected resource: its guarded transaction, and the operation the
    /// proposer records once it applies it.
    Resource {
        /// The workload's operation.
        op: StorageRequest,
        /// Its transaction.
        txn: Txn,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Watcher {
    client: NodeId,
    req: u64,
    key: String,
    /// The next revision to deliver.
    next: Rev,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct PendingRead {
    client: NodeId,
    req: u64,
    range: Range,
    /// Known once raft has confirmed it.
    index: Option<u64>,
    /// A read of the protected resource: recorded and answered as a storage operation.
    op: Option<StorageRequest>,
}

/// One etcd member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdServer {
    config: EtcdServerConfig,
    me: NodeId,
    /// Only its durable part survives a crash; the restart builds a new node from it.
    raft: Raft<Proposal>,
    store: Store,
    lessor: Lessor,
    applied: u64,
    watchers: Vec<Watcher>,
    reads: BTreeMap<u64, PendingRead>,
    next_read: u64,
    /// Revokes proposed, and when to propose them again.
    revoking: BTreeMap<LeaseId, LocalTime>,
    /// The entry index of this member's own term start, once applied as leader.
    promoted_term: Option<u64>,
    /// Resource operations received, so that a duplicated message is not taken twice.
    resource_ops: BTreeSet<OpId>,
    /// Raft's outbox, empty between calls: kept so that its vectors are allocated once
    /// rather than for every message and tick. Raft writes into it in place and
    /// [`EtcdServer::process`] drains it.
    outbox: Outbox<Proposal>,
    /// Who this member's applied state makes the lock's owner, over time (kept across
    /// crashes: it is an observer's record, not the member's state).
    owners: OwnerAudit,
    /// The client that created each live lock key, from the proposal that created it: the
    /// owner audit's bookkeeping, never read by the member's behaviour. Lost in a crash with
    /// the key space, and rebuilt with it by the replay.
    creators: BTreeMap<String, NodeId>,
    /// The proposals of this life still waiting for their apply, by (client, request id):
    /// etcd's wait registry, lost in a crash.
    awaiting: BTreeSet<(NodeId, u64)>,
}

impl EtcdServer {
    /// A fresh member. Its raft node is built when the run starts, from the member's own
    /// random stream; until then it holds a dormant one.
    pub fn new(config: EtcdServerConfig, me: NodeId) -> EtcdServer {
        let raft = Raft::dormant(Self::raft_config(&config, me), Durable::default());
        EtcdServer::with_raft(config, me, raft)
    }

    fn with_raft(config: EtcdServerConfig, me: NodeId, raft: Raft<Proposal>) -> EtcdServer {
        let min_ttl = Lessor::min_ttl_for(config.election_ticks, config.tick);
        EtcdServer {
            config,
            me,
            raft,
            store: Store::new(),
            lessor: Lessor::new(min_ttl),
            applied: 0,
            watchers: Vec::new(),
            reads: BTreeMap::new(),
            next_read: 0,
            revoking: BTreeMap::new(),
            promoted_term: None,
            resource_ops: BTreeSet::new(),
            outbox: Outbox::default(),
            owners: OwnerAudit::default(),
            creators: BTreeMap::new(),
            awaiting: BTreeSet::new(),
        }
    }

    fn raft_config(config: &EtcdServerConfig, me: NodeId) -> RaftConfig {
        RaftConfig {
            election_ticks: config.election_ticks,
            heartbeat_ticks: config.heartbeat_ticks,
            read_only: config.read_only,
            ..RaftConfig::with_defaults(config.members.clone(), me)
        }
    }

    /// The raft node.
    pub fn raft(&self) -> &Raft<Proposal> {
        &self.raft
    }

    /// The key space as this member has applied it.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The lessor.
    pub fn lessor(&self) -> &Lessor {
        &self.lessor
    }

    /// Who this member's applied state made the lock's owner, across restarts.
    pub fn owner_audit(&self) -> &OwnerAudit {
        &self.owners
    }

    fn on_request(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        req: u64,
        r: Request,
    ) {
        match r {
            Request::LeaseGrant { ttl } => {
                let id = ctx.rng().next_u64() >> 1;
                self.propose(ctx, client, req, Command::LeaseGrant { id, ttl });
            }
            Request::LeaseRevoke { lease } => {
                self.propose(ctx, client, req, Command::LeaseRevoke { id: lease });
            }
            Request::Txn(txn) => {
                let read_only = txn
                    .success
                    .iter()
                    .chain(&txn.failure)
                    .all(|op| matches!(op, Op::Get(_)));
                if read_only && txn.compares.is_empty() {
                    if let [Op::Get(range)] = txn.success.as_slice() {
                        return self.read(ctx, client, req, range.clone(), None);
                    }
                }
                self.propose(ctx, client, req, Command::Txn(txn));
            }
            Request::Get(range) => self.read(ctx, client, req, range, None),
            Request::Resource { op, txn } => {
                if !self.resource_ops.insert(op.op) {
                    return;
                }
                if txn.compares.is_empty() {
                    if let [Op::Get(range)] = txn.success.as_slice() {
                        return self.read(ctx, client, req, range.clone(), Some(op));
                    }
                }
                self.propose(ctx, client, req, Command::Resource { op, txn });
            }
            Request::KeepAlive { lease } => {
                if self.raft.role() != Role::Leader {
                    let leader = self.raft.leader();
                    ctx.send(
                        client,
                        Msg::Reply {
                            id: req,
                            reply: Reply::NotLeader { leader },
                        },
                    );
                    return;
                }
                let ttl = match self.lessor.renew(lease, ctx.mono()) {
                    Ok(ttl) => ttl,
                    Err(RenewError::NotFound) => Dur::ZERO,
                    // Not primary yet (the term's first entry is not applied): no answer, as
                    // etcd's renew waits; expired: it waits for the revoke.
                    Err(RenewError::NotPrimary | RenewError::Expired) => return,
                };
                ctx.send(
                    client,
                    Msg::Reply {
                        id: req,
                        reply: Reply::KeepAlive { lease, ttl },
                    },
                );
            }
            Request::Watch { key, from } => {
                self.watchers.push(Watcher {
                    client,
                    req,
                    key,
                    next: from,
                });
                self.notify(ctx);
            }
            Request::CancelWatch { watch } => {
                self.watchers
                    .retain(|w| !(w.client == client && w.req == watch));
            }
        }
    }

    fn propose(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        req: u64,
        cmd: Command,
    ) {
        let p = Proposal {
            member: self.me,
            client,
            req,
            cmd,
        };
        self.awaiting.insert((client, req));
        match self.raft.propose(p, &mut self.outbox) {
            Ok(_) => self.process(ctx),
            Err(not) => {
                // Raft touched nothing: the outbox is still empty.
                self.awaiting.remove(&(client, req));
                ctx.send(
                    client,
                    Msg::Reply {
                        id: req,
                        reply: Reply::NotLeader { leader: not.leader },
                    },
                );
            }
        }
    }

    fn read(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        req: u64,
        range: Range,
        op: Option<StorageRequest>,
    ) {
        self.next_read += 1;
        let id = self.next_read;
        match self.raft.read_index(id, &mut self.outbox) {
            Ok(()) => {
                self.reads.insert(
                    id,
                    PendingRead {
                        client,
                        req,
                        range,
                        index: None,
                        op,
                    },
                );
                self.process(ctx);
            }
            Err(not) => {
                // Raft touched nothing: the outbox is still empty.
                ctx.send(
                    client,
                    Msg::Reply {
                        id: req,
                        reply: Reply::NotLeader { leader: not.leader },
                    },
                );
            }
        }
    }

    /// Sends the messages of raft's last call (in `outbox`), applies what
    /// committed, serves confirmed reads, and promotes or demotes the lessor on role changes;
    /// leaves the outbox empty.
    fn process(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        for (to, m) in self.outbox.msgs.drain(..) {
            ctx.send(to, Msg::Raft(m));
        }
        for &(role, _term) in &self.outbox.role_changes {
            if role != Role::Leader {
                self.lessor.demote();
                self.promoted_term = None;
                // Reads waiting on a leadership confirmation will not get one here.
                self.reads.clear();
            }
        }
        // Applying needs the whole member: the committed entries leave the outbox meanwhile
        // (their vector, and its allocation, come back).
        let mut committed = std::mem::take(&mut self.outbox.committed);
        for entry in committed.drain(..) {
            self.applied = entry.index;
            match entry.data {
                EntryData::Empty => {
                    // The first entry of a leader's term: etcd promotes the lessor once it is
                    // applied (`server.go`, `applyEntryNormal`).
                    if self.raft.role() == Role::Leader
                        && entry.term == self.raft.term()
                        && self.promoted_term != Some(entry.term)
                    {
                        self.promoted_term = Some(entry.term);
                        self.lessor
                            .promote(ctx.mono(), self.config.election_timeout());
                        self.revoking.clear();
                        ctx.mark("leader-ready");
                    }
                }
                EntryData::Command(p) => self.apply(ctx, &p),
            }
        }
        self.outbox.committed = committed;
        for &(id, index) in &self.outbox.reads {
            if let Some(r) = self.reads.get_mut(&id) {
                r.index = Some(index);
            }
        }
        self.outbox.clear();
        self.serve_reads(ctx);
        self.notify(ctx);
    }

    fn apply(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, p: &Proposal) {
        let now = ctx.mono();
        // Revokes by the lessor and checkpoints are the member's own: nobody waits for them.
        // Only a proposal of this life is answered: etcd registers a waiter per proposal
        // (`s.w.Register(id)`, triggered by the apply), and a restarted member has none, so
        // the entries it replays from its log answer nobody.
        let answer =
            p.member == self.me && p.client != self.me && self.awaiting.remove(&(p.client, p.req));
        let reply = match p.cmd {
            Command::Resource { op, ref txn } => {
                let result = self
                    .apply_txn(ctx, p.client, txn, true)
                    .expect("resource writes name no lease")
                    .expect("a transaction applied to be read has a result");
                let reply = Self::record_op(ctx, op, &result);
                if answer {
                    ctx.send(p.client, Msg::Resource(reply));
                }
                return;
            }
            Command::LeaseGrant { id, ttl } => {
                let ttl = self.lessor.grant(id, ttl, now);
                Reply::LeaseGranted { lease: id, ttl }
            }
            Command::LeaseRevoke { id } => {
                let keys = self.lessor.revoke(id);
                self.store.delete_all(&keys);
                self.revoking.remove(&id);
                let mut lock_keys_gone = false;
                for key in keys.iter().filter(|k| is_lock_key(k)) {
                    lock_keys_gone |= self.creators.remove(key).is_some();
                }
                if lock_keys_gone {
                    self.observe_owner(ctx);
                }
                Reply::Revoked
            }
            Command::LeaseCheckpoint { id, remaining } => {
                self.lessor.checkpoint(id, remaining);
                Reply::Revoked
            }
            Command::Txn(ref txn) => match self.apply_txn(ctx, p.client, txn, answer) {
                Some(Some(r)) => Reply::Txn(r),
                // Applied without its result, which nobody is waiting for.
                Some(None) => return,
                None => Reply::LeaseNotFound,
            },
        };
        if answer {
            ctx.send(p.client, Msg::Reply { id: p.req, reply });
        }
    }

    /// Applies a transaction proposed for `client`, keeping leases' key sets in step; `None`
    /// when a put names a lease that does not exist (etcd fails the whole transaction with
    /// "lease not found"). A transaction that creates or deletes a lock key updates the owner
    /// audit. Its result is `Some` when `read` asks for it; otherwise only its writes run
    /// ([`Store::txn_writes`]), as nobody will see what its gets would find.
    fn apply_txn(
        &mut self,
        ctx: &mut impl Host<Msg, ServerTimer>,
        client: NodeId,
        txn: &Txn,
        read: bool,
    ) -> Option<Option<TxnResult>> {
        // Which branch runs is decided by the store; check its puts' leases first by a dry
        // evaluation of the guards, which the store then takes as its own.
        let succeeded = self.store.holds_all(&txn.compares);
        let ops = txn.branch(succeeded);
        for op in ops {
            if let Op::Put {
                lease: Some(id), ..
            } = op
            {
                self.lessor.get(*id)?;
            }
        }
        for op in ops {
            match op {
                Op::Put { key, lease, .. } => {
                    if let Some(old) = self.store.get(key).and_then(|kv| kv.lease) {
                        self.lessor.detach(old, key);
                    }
                    if let Some(id) = lease {
                        self.lessor.attach(*id, key);
                    }
                }
                Op::Delete { key } => {
                    if let Some(old) = self.store.get(key).and_then(|kv| kv.lease) {
                        self.lessor.detach(old, key);
                    }
                }
                Op::Get(_) => {}
            }
        }
        let (revision, result) = if read {
            let result = self.store.txn_branch(txn, succeeded);
            (result.revision, Some(result))
        } else {
            (self.store.txn_writes(txn, succeeded), None)
        };
        // The owner audit: which lock keys this transaction created (a put whose key now has
        // the transaction's revision as its create revision; a put over a live key changes
        // nothing) or deleted (a known key that is gone now).
        let mut lock_keys_moved = false;
        for op in ops {
            match op {
                Op::Put { key, .. } if is_lock_key(key) => {
                    let created = self
                        .store
                        .get(key)
                        .is_some_and(|kv| kv.create_revision == revision);
                    if created {
                        self.creators.insert(key.clone(), client);
                        lock_keys_moved = true;
                    }
                }
                Op::Delete { key } if is_lock_key(key) => {
                    if self.store.get(key).is_none() && self.creators.remove(key).is_some() {
                        lock_keys_moved = true;
                    }
                }
                Op::Put { .. } | Op::Delete { .. } | Op::Get(_) => {}
            }
        }
        if lock_keys_moved {
            self.observe_owner(ctx);
        }
        Some(result)
    }

    /// Notes the lock's owners in this member's applied state, as the recipes define them:
    /// the live key under the lock prefix with the lowest create revision (Mutex, Election,
    /// a read-write lock's writer), or, when that key is a reader's (`recipes.RWMutex`), every
    /// reader's key created before the first writer's; each named by the client that created
    /// it and that revision. Called after an apply that created or deleted a lock key; the
    /// resource key is not under the prefix.
    fn observe_owner(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let owner = |kv: &KeyValue| Owner {
            client: *self
                .creators
                .get(&kv.key)
                .expect("every live lock key was created by an applied put"),
            ticket: kv.create_revision,
        };
        match self.store.first_created(PREFIX) {
            Some(first) if first.key.starts_with(READ_PREFIX) => {
                let owners: Vec<Owner> = self
                    .store
                    .line(PREFIX)
                    .into_iter()
                    .take_while(|kv| kv.key.starts_with(READ_PREFIX))
                    .map(owner)
                    .collect();
                self.owners.observe_all(ctx, &owners);
            }
            first => {
                let first = first.map(owner);
                self.owners.observe(ctx, first);
            }
        }
    }

    fn serve_reads(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        if self.reads.is_empty() {
            return;
        }
        let ready: Vec<u64> = self
            .reads
            .iter()
            .filter(|(_, r)| r.index.is_some_and(|i| i <= self.applied))
            .map(|(&id, _)| id)
            .collect();
        for id in ready {
            let r = self.reads.remove(&id).expect("ready read");
            let result = self.store.read(&r.range);
            if let Some(op) = r.op {
                let reply = Self::record_op(ctx, op, &result);
                ctx.send(r.client, Msg::Resource(reply));
                continue;
            }
            ctx.send(
                r.client,
                Msg::Reply {
                    id: r.req,
                    reply: Reply::Txn(result),
                },
            );
        }
    }

    /// Records a resource operation as handled, exactly as a storage node does, and returns
    /// the workload's reply.
    fn record_op(
        ctx: &mut impl Host<Msg, ServerTimer>,
        op: StorageRequest,
        result: &TxnResult,
    ) -> StorageReply {
        let (kind, outcome, reply) = resource::outcome(op.kind, result);
        ctx.record(Event::Storage(StorageOp {
            op: op.op,
            grant: op.grant,
            kind,
            token: op.token,
            outcome,
        }));
        StorageReply {
            op: op.op,
            result: reply,
        }
    }

    /// Streams every applied event a watcher has not seen yet.
    fn notify(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let revision = self.store.revision();
        for w in &mut self.watchers {
            // No event is newer than the store's revision: nothing to look for.
            if w.next > revision {
                continue;
            }
            for e in self.store.events_since(&w.key, w.next) {
                ctx.send(
                    w.client,
                    Msg::Reply {
                        id: w.req,
                        reply: Reply::WatchEvent {
                            key: w.key.clone(),
                            revision: e.revision,
                            kind: e.kind,
                        },
                    },
                );
                w.next = e.revision + 1;
            }
        }
    }

    fn revoke_expired(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        if self.raft.role() != Role::Leader {
            return;
        }
        let now = ctx.mono();
        for id in self.lessor.expired(now, REVOKES_PER_TICK) {
            if self.revoking.get(&id).is_some_and(|&retry| now < retry) {
                continue;
            }
            self.revoking.insert(id, now + REVOKE_RETRY);
            let me = ctx.id();
            self.propose(ctx, me, 0, Command::LeaseRevoke { id });
        }
    }

    fn checkpoint(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, every: Dur) {
        if self.raft.role() != Role::Leader || !self.lessor.is_primary() {
            return;
        }
        let now = ctx.mono();
        let due: Vec<(LeaseId, Dur)> = self
            .lessor
            .ids()
            .filter_map(|id| self.lessor.remaining(id, now).map(|r| (id, r)))
            .filter(|&(_, r)| r > every)
            .collect();
        let me = ctx.id();
        for (id, remaining) in due {
            self.propose(ctx, me, 0, Command::LeaseCheckpoint { id, remaining });
        }
    }

    /// The current revision of the member's key space (for reports).
    pub fn revision(&self) -> Rev {
        self.store.revision()
    }

    /// The results of a local, serializable read (for tests).
    pub fn local_get(&self, range: &Range) -> Vec<OpResult> {
        self.store.read(range).results
    }
}

impl Service for EtcdServer {
    type Msg = Msg;
    type Timer = ServerTimer;

    fn plays(&self, role: &str) -> bool {
        role == crate::family::played::LEADER && self.raft.role() == Role::Leader
    }

    /// Starts (or restarts) the member from raft's durable state: a fresh raft node, and the
    /// loops.
    fn on_start(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        let durable = self.raft.durable().clone();
        self.raft = Raft::new(Self::raft_config(&self.config, self.me), durable, ctx.rng());
        // Members do not tick in phase: the first tick comes at a random point of the period.
        let first = Dur::from_nanos(ctx.rng().below(self.config.tick.as_nanos()) + 1);
        ctx.set_timer(ClockKind::Mono, first, ServerTimer::RaftTick);
        // Nor does the lessor's run loop tick in phase with anything else: it starts with the
        // process (`lessor.go:620-635`), so its first pass is at a point of its 500 ms period
        // of the member's own. Without this, every lease's expiry would be checked at the same
        // point of the client's keepalive grid on every seed (2.41-2.50 s after the last
        // keepalive of a 2 s lease; the real server spreads it over 2.05-2.44 s).
        let phase = Dur::from_nanos(ctx.rng().below(LESSOR_TICK.as_nanos()) + 1);
        ctx.set_timer(ClockKind::Mono, phase, ServerTimer::LessorTick);
        if let Some(every) = self.config.checkpoint {
            ctx.set_timer(ClockKind::Mono, every, ServerTimer::Checkpoint);
        }
    }

    /// Everything but raft's durable state is lost: the key space, the lessor, watches and
    /// pending requests. The raft node itself is rebuilt from its durable state at restart.
    fn on_crash(&mut self) {
        let raft = self.raft.clone();
        let mut owners = std::mem::take(&mut self.owners);
        owners.crashed();
        *self = EtcdServer::with_raft(self.config.clone(), self.me, raft);
        self.owners = owners;
    }

    fn on_restart(&mut self, ctx: &mut impl Host<Msg, ServerTimer>) {
        self.on_start(ctx);
    }

    fn on_timer(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, timer: ServerTimer) {
        match timer {
            ServerTimer::RaftTick => {
                ctx.set_timer(ClockKind::Mono, self.config.tick, ServerTimer::RaftTick);
                self.raft.tick(ctx.rng(), &mut self.outbox);
                self.process(ctx);
            }
            ServerTimer::LessorTick => {
                ctx.set_timer(ClockKind::Mono, LESSOR_TICK, ServerTimer::LessorTick);
                self.revoke_expired(ctx);
            }
            ServerTimer::Checkpoint => {
                let every = self.config.checkpoint.expect("checkpointing on");
                ctx.set_timer(ClockKind::Mono, every, ServerTimer::Checkpoint);
                self.checkpoint(ctx, every);
            }
        }
    }

    fn on_message(&mut self, ctx: &mut impl Host<Msg, ServerTimer>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Raft(m) => {
                self.raft.step(from, m, ctx.rng(), &mut self.outbox);
                self.process(ctx);
            }
            Msg::Request { id, req } => self.on_request(ctx, from, id, *req),
            // Members send replies to clients only.
            msg @ (Msg::Reply { .. } | Msg::Resource(_)) => {
                unreachable!("etcd member {} was sent {msg:?}", ctx.name())
            }
        }
    }
}

/// A key of the lock's queue (the Mutex's and the Election's `prefix + lease`).
fn is_lock_key(key: &str) -> bool {
    key.starts_with(PREFIX)
}
