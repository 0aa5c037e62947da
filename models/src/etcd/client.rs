//! The etcd lock client: a `concurrency.Session` kept alive by clientv3's keepalive loops and
//! the `concurrency.Mutex` (or `Election.Campaign`) recipe on top (`client/v3/lease.go`,
//! `client/v3/concurrency/session.go`, `mutex.go`, `election.go`).
//!
//! - **Session.** `LeaseGrant`, then the keepalive stream (`client/v3/lease.go`, lines of
//!   etcd commit c34dc7e). The client's loops start with its first `KeepAlive`, once the
//!   grant is answered, and run for the client's life (`firstKeepAliveOnce`): the send loop
//!   makes a pass at once and then every 500 ms (`retryConnWait`), sending a keepalive for a
//!   lease whose `nextKeepAlive` is before now — whether or not an earlier one was answered,
//!   since only a response moves it (`sendKeepAliveLoop`, `:593-625`); each response sets
//!   `nextKeepAlive = now + TTL/3` and `deadline = now + TTL`, on the client's MONO clock, from
//!   the response's *receipt* (`recvKeepAlive`, `:526-565`); the deadline loop checks every
//!   1 s from its start and closes the session when the deadline is before now
//!   (`deadlineLoop`, `:569-590`); a response with TTL 0 closes it at once. The first
//!   deadline is `firstKeepAliveTimeout` (5 s without a dial timeout). A later session of the
//!   same client joins the running loops: its first keepalive goes at their next pass. So
//!   the keepalives follow each response, on the grid of a send loop that started when the
//!   first grant was answered. The client believes it holds the lock while its session is
//!   open, which is later than the leader's view (the leader renewed before it replied).
//!   Not clientv3's: a keepalive unanswered for the request timeout moves the client to the
//!   next endpoint, standing in for gRPC reconnecting the stream elsewhere.
//! - **Mutex.** One key per session, `prefix + hex(lease)`. `tryAcquire` is one transaction:
//!   if the key does not exist, put it with the lease, else get it; in both, get the first
//!   creator under the prefix. The holder is the key with the smallest create revision. A
//!   waiter finds its immediate predecessor (last creator at or below `myRev - 1`), watches it
//!   until it is deleted and looks again. After waiting, `Lock` gets its own key once more and
//!   fails with `ErrSessionExpired` if it is gone — the fix for etcd #11456 (PR #11408).
//!   `recheck_after_wait = false` reproduces the defect, and is what `Election.Campaign`
//!   does. The fencing token is the key's create revision. A grant names that revision as
//!   its ticket (fenced or not) when a member's answer showed the own key first in line:
//!   `tryAcquire`'s, or the check after waiting; the members' owner audit recorded it as
//!   `Issued` by then. A hold after waiting without the check names none: its key may have
//!   been revoked before it was ever first, so no member issued it.
//!
//! Requests go to one endpoint; a `NotLeader` answer moves the client to the leader it names,
//! a timeout to the next endpoint. A watch is re-checked every 5 s with a fresh predecessor
//! lookup, standing in for clientv3's watch stream, which reconnects to another endpoint and
//! resumes from its revision when its member fails.
//!
//! With `try_once` the client runs `Mutex.TryLock` (etcd 3.5+): `tryAcquire` as above, and
//! when the answer shows another key first, it deletes its own key and fails (`ErrLocked`);
//! a read-write lock's side gives up the same way when its first look finds a key it would
//! wait for (the recipe has no try form of its own).
//!
//! When the protected resource lives in etcd ([`super::resource`]), the workload's storage
//! operations go out through this client to its current endpoint: a read as a linearizable
//! `Get`, a write as a transaction guarded on the Mutex's key and revision as they are when
//! it is sent. Each is sent once, under no request timeout (the workload gives up after its
//! storage timeout); a `NotLeader` answer sends it once more, to the leader it names. So no
//! write can be applied twice.

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId, TimerId};

use super::mvcc::{
    Cmp, Compare, CreateOrder, EventKind, LeaseId, Op, OpResult, Range, Rev, Target, Txn,
};
use super::proto::{Reply, Request};
use super::resource::{self, ResourceGuard};
use super::{ClientTimer, Msg};
use crate::env::Host;
use crate::lock::{Access, LockClient, LockSignal};
use crate::observe::{ACQUIRE_REQUESTS, Observation};
use crate::storage::StorageRequest;

/// The keepalive send loop's period (`retryConnWait`).
pub const KEEPALIVE_POLL: Dur = Dur::from_millis(500);
/// The deadline loop's period.
pub const DEADLINE_POLL: Dur = Dur::from_secs(1);
/// `defaultTTL` of `concurrency.Session`.
pub const DEFAULT_SESSION_TTL: Dur = Dur::from_secs(60);
/// `firstKeepAliveTimeout` without a dial timeout.
pub const FIRST_KEEPALIVE_TIMEOUT: Dur = Dur::from_secs(5);
/// How often a waiter looks at its predecessor again while watching it.
pub const WATCH_RECHECK: Dur = Dur::from_secs(5);
/// clientv3's pause before retrying a request that failed for want of a leader
/// (`defaultBackoffWaitBetween`, with ±10 % jitter).
pub const RETRY_BACKOFF: Dur = Dur::from_millis(25);

/// The recipe a client runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recipe {
    /// `concurrency.Mutex`.
    Mutex,
    /// `concurrency.Election.Campaign`: the same queue, without the check after waiting.
    Election,
}

/// How an etcd lock client is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdLockConfig {
    /// The members, as endpoints; the client starts with the first.
    pub servers: Vec<NodeId>,
    /// The session's TTL.
    pub ttl: Dur,
    /// Mutex or Election.
    pub recipe: Recipe,
    /// After waiting, check that the own key still exists (Mutex since PR #11408). Off is
    /// etcd #11456.
    pub recheck_after_wait: bool,
    /// How long a unary request may take before the client tries the next endpoint.
    pub request_timeout: Dur,
    /// The first keepalive deadline.
    pub first_keepalive_timeout: Dur,
    /// Hand the lock key's create revision to the workload as its fencing token.
    pub fencing: bool,
    /// The application stops its critical section when `Session.Done()` closes. Off is an
    /// application that never looks at the channel (etcd-io/etcd#10811: "A still writes").
    pub stop_on_done: bool,
    /// `Mutex.TryLock` instead of `Lock`: give up at once when the lock is held.
    pub try_once: bool,
    /// Count each put and each look for the key to wait on as an acquire request.
    pub count_requests: bool,
}

impl EtcdLockConfig {
    /// clientv3 and concurrency defaults for `servers`: a 60 s session, the fixed Mutex.
    pub fn new(servers: Vec<NodeId>) -> EtcdLockConfig {
        EtcdLockConfig {
            servers,
            ttl: DEFAULT_SESSION_TTL,
            recipe: Recipe::Mutex,
            recheck_after_wait: true,
            request_timeout: Dur::from_secs(5),
            first_keepalive_timeout: FIRST_KEEPALIVE_TIMEOUT,
            fencing: false,
            stop_on_done: true,
            try_once: false,
            count_requests: false,
        }
    }

    fn recheck(&self) -> bool {
        self.recipe == Recipe::Mutex && self.recheck_after_wait
    }
}

/// The lock's prefix.
pub const PREFIX: &str = "lock/";
/// The prefix of a read-write lock's readers' keys (`recipes.RWMutex`: `pfx + "read"`).
pub const READ_PREFIX: &str = "lock/read/";
/// The prefix of a read-write lock's writers' keys (`pfx + "write"`).
pub const WRITE_PREFIX: &str = "lock/write/";

#[derive(Clone, Debug, PartialEq, Eq)]
enum SessionState {
    None,
    Granting {
        req: u64,
    },
    Open(Session),
    /// `Done()` has closed.
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Session {
    lease: LeaseId,
    ttl: Dur,
    deadline: LocalTime,
    next_keepalive: LocalTime,
    /// The oldest keepalive that awaits its response, under the request timeout.
    inflight: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Waiting for the session before the first try.
    NeedSession,
    /// `tryAcquire` in flight.
    Trying {
        req: u64,
    },
    /// Looking up the predecessor of `my_rev`.
    Finding {
        req: u64,
        my_rev: Rev,
    },
    /// Watching the predecessor `key`.
    Watching {
        req: u64,
        key: String,
        my_rev: Rev,
    },
    /// Getting the own key after waiting.
    Rechecking {
        req: u64,
        my_rev: Rev,
    },
    /// Holding.
    Held {
        my_rev: Rev,
    },
    /// `Delete(myKey)` in flight.
    Unlocking {
        req: u64,
    },
    /// `TryLock` found the lock held: `Delete(myKey)` in flight before `ErrLocked`.
    GivingUp {
        req: u64,
    },
}

/// A resource operation sent and not yet answered with `NotLeader`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ResourceOp {
    /// Its request id.
    req: u64,
    /// The request, to send once more to the leader.
    request: Request,
    /// Already sent to a named leader after a `NotLeader`.
    redirected: bool,
}

/// The etcd lock client's state machine, embedded in a workload client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdLock {
    config: EtcdLockConfig,
    endpoint: usize,
    session: SessionState,
    phase: Phase,
    next_req: u64,
    /// The timeout of the unary request in flight.
    timeout: Option<(u64, TimerId)>,
    /// The loops (keepalive poll, deadline poll) run.
    loops: bool,
    /// The Mutex's own key (`m.myKey`), set by `tryAcquire`.
    my_key: Option<String>,
    /// The last resource operation sent; the workload has at most one outstanding.
    resource_op: Option<ResourceOp>,
    /// The Mutex, or a side of the read-write lock (`recipes.RWMutex`).
    access: Access,
    /// The read-write lock's keys made so far, for a unique name each.
    unique: u64,
    /// A nested `Lock` (`[workload] reenter`) under way or held: the outer Mutex's revision,
    /// which the client holds again, as far as the outer Mutex knows, once the nested call
    /// fails or its `Unlock` returns.
    nested: Option<Rev>,
    /// The nested Mutex's `Unlock` is in flight.
    leaving: bool,
}

impl EtcdLock {
    /// An idle client.
    ///
    /// # Panics
    /// Without endpoints; the scenario loader rejects that.
    pub fn new(config: EtcdLockConfig) -> EtcdLock {
        assert!(!config.servers.is_empty(), "an etcd client needs endpoints");
        EtcdLock {
            config,
            endpoint: 0,
            session: SessionState::None,
            phase: Phase::Idle,
            next_req: 0,
            timeout: None,
            loops: false,
            my_key: None,
            resource_op: None,
            access: Access::Exclusive,
            unique: 0,
            nested: None,
            leaving: false,
        }
    }

    /// A signal on its way to the workload, after a nested call: the outer Mutex holds again
    /// when the nested `Lock` failed or the nested `Unlock` returned.
    fn settle(&mut self, signal: Option<LockSignal>) -> Option<LockSignal> {
        if let Some(outer) = self.nested {
            match signal {
                Some(LockSignal::Lost) => {
                    self.nested = None;
                    self.leaving = false;
                }
                Some(LockSignal::AcquireFailed) if !self.leaving => {
                    self.nested = None;
                    self.phase = Phase::Held { my_rev: outer };
                }
                Some(LockSignal::Released) if self.leaving => {
                    self.nested = None;
                    self.leaving = false;
                    self.phase = Phase::Held { my_rev: outer };
                }
                _ => {}
            }
        }
        signal
    }

    /// The settings.
    pub fn config(&self) -> &EtcdLockConfig {
        &self.config
    }

    /// `PREFIX` and the lease in lower-case hex, as `format!("{PREFIX}{lease:x}")` writes it,
    /// without the formatting machinery: the key is made for every try, look and unlock.
    fn my_key(lease: LeaseId) -> String {
        let digits = (u64::BITS - lease.leading_zeros()).div_ceil(4).max(1);
        let mut key = String::with_capacity(PREFIX.len() + digits as usize);
        key.push_str(PREFIX);
        for d in (0..digits).rev() {
            let nibble = (lease >> (4 * d)) & 0xf;
            key.push(char::from_digit(nibble as u32, 16).expect("a hex digit"));
        }
        key
    }

    /// A `NotLeader` answer to the resource operation sent as `id`: send it once more, to the
    /// leader named. True when `id` was that operation.
    fn redirect_resource_op(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        id: u64,
        leader: Option<NodeId>,
    ) -> bool {
        let Some(op) = self.resource_op.take_if(|op| op.req == id) else {
            return false;
        };
        let to = leader.and_then(|l| self.config.servers.iter().position(|&s| s == l));
        if let (Some(i), false) = (to, op.redirected) {
            self.endpoint = i;
            let req = self.send(ctx, op.request.clone());
            self.resource_op = Some(ResourceOp {
                req,
                redirected: true,
                ..op
            });
        }
        true
    }

    pub(crate) fn on_reply(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        id: u64,
        reply: Reply,
    ) -> Option<LockSignal> {
        if let Some((req, timer)) = self.timeout {
            if req == id {
                ctx.cancel_timer(timer);
                self.timeout = None;
            }
        }
        if let Reply::NotLeader { leader } = reply {
            if self.redirect_resource_op(ctx, id, leader) {
                return None;
            }
            return self.redirect(ctx, id, leader);
        }
        // Session replies.
        match (&mut self.session, &reply) {
            (SessionState::Granting { req }, Reply::LeaseGranted { lease, ttl }) if *req == id => {
                let now = ctx.mono();
                self.session = SessionState::Open(Session {
                    lease: *lease,
                    ttl: *ttl,
                    deadline: now + self.config.first_keepalive_timeout,
                    next_keepalive: now,
                    inflight: None,
                });
                // `Session` calls `KeepAlive` once granted; the client's first `KeepAlive`
                // starts its loops, whose first pass sends at once (`lease.go:593-625`).
                self.start_loops(ctx);
                return match self.phase {
                    Phase::NeedSession => {
                        self.try_acquire(ctx);
                        None
                    }
                    _ => None,
                };
            }
            // Any response for the session's lease counts, answering whichever keepalive
            // (`recvKeepAlive` looks the lease up by id, `lease.go:526-565`).
            (SessionState::Open(s), Reply::KeepAlive { lease, ttl }) if *lease == s.lease => {
                s.inflight = None;
                if *ttl == Dur::ZERO {
                    return self.close_session();
                }
                let now = ctx.mono();
                s.next_keepalive = now + *ttl / 3;
                s.deadline = now + *ttl;
                return None;
            }
            _ => {}
        }
        self.on_lock_reply(ctx, id, reply)
    }

    fn on_lock_reply(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        id: u64,
        reply: Reply,
    ) -> Option<LockSignal> {
        match (self.phase.clone(), reply) {
            (Phase::Trying { req }, Reply::Txn(r)) if req == id => {
                // success: [Put, Get(first)]; failure: [Get(myKey), Get(first)].
                let my_rev = if r.succeeded {
                    r.revision
                } else {
                    match r.results.first() {
                        Some(OpResult::Get(kvs)) if !kvs.is_empty() => kvs[0].create_revision,
                        _ => r.revision,
                    }
                };
                let first = match r.results.get(1) {
                    Some(OpResult::Get(kvs)) => kvs.first().map(|kv| kv.create_revision),
                    _ => None,
                };
                if first == Some(my_rev) {
                    // The answer shows the own key first in line.
                    return Some(self.hold(my_rev, true));
                }
                if self.config.try_once && self.access == Access::Exclusive {
                    return self.give_up(ctx);
                }
                self.find_predecessor(ctx, my_rev);
                None
            }
            (Phase::Trying { req }, Reply::LeaseNotFound) if req == id => {
                // The session's lease is gone: the session is over.
                self.session = SessionState::Done;
                self.lost_while_waiting()
            }
            (Phase::Finding { req, my_rev }, Reply::Txn(r)) if req == id => {
                let pred = match r.results.first() {
                    Some(OpResult::Get(kvs)) => kvs.first().cloned(),
                    _ => None,
                };
                match pred {
                    // A try gives up rather than wait.
                    Some(_) if self.config.try_once => self.give_up(ctx),
                    Some(kv) => {
                        // Watch it from the header revision until it is deleted.
                        let watch = self.send(
                            ctx,
                            Request::Watch {
                                key: kv.key.clone(),
                                from: r.revision,
                            },
                        );
                        ctx.set_timer(
                            ClockKind::Mono,
                            WATCH_RECHECK,
                            ClientTimer::WatchCheck { req: watch },
                        );
                        self.phase = Phase::Watching {
                            req: watch,
                            key: kv.key,
                            my_rev,
                        };
                        ctx.mark("lock-waiting");
                        None
                    }
                    None => self.done_waiting(ctx, my_rev),
                }
            }
            (
                Phase::Watching { req, key, my_rev },
                Reply::WatchEvent {
                    key: k,
                    kind: EventKind::Delete,
                    ..
                },
            ) if req == id && k == key => {
                self.send(ctx, Request::CancelWatch { watch: req });
                // The predecessor is gone: look again (waitDeletes loops).
                self.find_predecessor(ctx, my_rev);
                None
            }
            (Phase::Rechecking { req, my_rev }, Reply::Txn(r)) if req == id => {
                let own = match r.results.first() {
                    Some(OpResult::Get(kvs)) => kvs.first().map(|kv| kv.create_revision),
                    _ => None,
                };
                if let Some(created) = own {
                    // No earlier key was left and the own key still exists: it is first in
                    // line (unless it was deleted and put again since `my_rev`, which only a
                    // duplicated put can do; the Mutex holds all the same, unconfirmed).
                    Some(self.hold(my_rev, created == my_rev))
                } else {
                    // ErrSessionExpired.
                    self.phase = Phase::Idle;
                    Some(LockSignal::AcquireFailed)
                }
            }
            (Phase::GivingUp { req }, Reply::Txn(_)) if req == id => {
                self.phase = Phase::Idle;
                Some(LockSignal::AcquireFailed)
            }
            (Phase::Unlocking { req }, Reply::Txn(_)) if req == id => {
                self.phase = Phase::Idle;
                Some(LockSignal::Released)
            }
            _ => None, // A reply the client no longer waits for.
        }
    }

    /// Starts the keepalive loops if they do not run yet: the send loop's first pass now,
    /// the next after 500 ms; the deadline loop's first check after 1 s.
    fn start_loops(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) {
        if self.loops {
            return;
        }
        self.loops = true;
        self.keepalive_pass(ctx, true);
        ctx.set_timer(ClockKind::Mono, DEADLINE_POLL, ClientTimer::DeadlinePoll);
    }

    /// One pass of `sendKeepAliveLoop` (`lease.go:593-625`): a keepalive if `nextKeepAlive`
    /// is before now, then the next pass `retryConnWait` later. The loop's first pass runs
    /// just after `KeepAlive` set `nextKeepAlive` to its own `time.Now()`, which is then
    /// before the pass's; in the model both are the same instant, so `first` says so.
    fn keepalive_pass(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, first: bool) {
        ctx.set_timer(ClockKind::Mono, KEEPALIVE_POLL, ClientTimer::KeepAlivePoll);
        let now = ctx.mono();
        let (lease, first_unanswered) = match &self.session {
            SessionState::Open(s) if s.next_keepalive < now || (first && s.next_keepalive == now) => {
                (s.lease, s.inflight.is_none())
            }
            _ => return,
        };
        let req = self.send(ctx, Request::KeepAlive { lease });
        if first_unanswered {
            if let SessionState::Open(s) = &mut self.session {
                s.inflight = Some(req);
            }
            // Not clientv3's: a keepalive unanswered this long moves the client to the next
            // endpoint (standing in for the stream reconnecting elsewhere).
            ctx.set_timer(
                ClockKind::Mono,
                self.config.request_timeout,
                ClientTimer::KeepAliveTimeout { req },
            );
        }
    }

    fn grant(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) {
        let req = self.unary(
            ctx,
            Request::LeaseGrant {
                ttl: self.config.ttl,
            },
        );
        self.session = SessionState::Granting { req };
    }

    /// The session's `Done()` closed: a holder has lost the lock, if it listens.
    fn close_session(&mut self) -> Option<LockSignal> {
        self.session = SessionState::Done;
        // A nested `Lock` under way holds the outer lock all the same.
        let held = matches!(self.phase, Phase::Held { .. }) || self.nested.is_some();
        if held && self.config.stop_on_done {
            self.phase = Phase::Idle;
            self.nested = None;
            self.leaving = false;
            return Some(LockSignal::Lost);
        }
        None
    }

    fn try_acquire(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) {
        // (A nested `Lock` is no acquisition of the herd's.)
        if self.config.count_requests && self.nested.is_none() {
            ctx.observe(Observation::Count(ACQUIRE_REQUESTS));
        }
        let SessionState::Open(s) = &self.session else {
            unreachable!("try_acquire without a session")
        };
        if self.access != Access::Exclusive {
            let lease = s.lease;
            return self.rw_create(ctx, lease);
        }
        let key = Self::my_key(s.lease);
        self.my_key = Some(key.clone());
        let first = Op::Get(Range {
            key: PREFIX.into(),
            prefix: true,
            first: Some(CreateOrder::First),
            max_create_rev: None,
        });
        let txn = put_if_absent(key, s.lease, Some(first));
        let req = self.unary(ctx, Request::Txn(txn));
        self.phase = Phase::Trying { req };
    }

    /// `recipes.RWMutex`'s `newUniqueEphemeralKey`: the side's own key, `lock/read/...` or
    /// `lock/write/...`, put with the session's lease if it does not exist (`newUniqueKV`).
    /// The real key is named by the time; here by the lease and a count, unique as well. A
    /// retry after a timeout puts the same key: if the first put was applied, the failure
    /// branch's `Get` gives its revision (the recipe would return the timeout to its caller
    /// and leave the key in line until the lease ends).
    fn rw_create(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, lease: LeaseId) {
        let key = match &self.my_key {
            Some(key) if key.contains(&format!("/{lease:x}-")) => key.clone(),
            _ => {
                self.unique += 1;
                let side = match self.access {
                    Access::Read => READ_PREFIX,
                    Access::Write | Access::Exclusive => WRITE_PREFIX,
                };
                format!("{side}{lease:x}-{:x}", self.unique)
            }
        };
        self.my_key = Some(key.clone());
        let txn = put_if_absent(key, lease, None);
        let req = self.unary(ctx, Request::Txn(txn));
        self.phase = Phase::Trying { req };
    }

    /// The keys that must be gone before the own key, created at `my_rev`, holds: the Mutex's
    /// and a writer's, every key under the prefix (`Lock` waits on `pfx`); a reader's, the
    /// writers' only (`RLock` waits on `pfx + "write"`).
    fn blockers(&self) -> &'static str {
        match self.access {
            Access::Read => WRITE_PREFIX,
            Access::Write | Access::Exclusive => PREFIX,
        }
    }

    fn find_predecessor(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, my_rev: Rev) {
        if self.config.count_requests && self.nested.is_none() {
            ctx.observe(Observation::Count(ACQUIRE_REQUESTS));
        }
        // `waitOnLastRev` asks for the last by *mod* revision at most `myRev - 1`; the
        // recipe's keys are put once and never changed, so that is their create revision.
        let req = self.unary(
            ctx,
            Request::Get(Range {
                key: self.blockers().into(),
                prefix: true,
                first: Some(CreateOrder::Last),
                max_create_rev: Some(my_rev - 1),
            }),
        );
        self.phase = Phase::Finding { req, my_rev };
    }

    fn done_waiting(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        my_rev: Rev,
    ) -> Option<LockSignal> {
        if !self.config.recheck() || self.access != Access::Exclusive {
            // `RWMutex.RLock` and `Lock` return once nothing blocks, without looking at
            // their own key again.
            // Election, or the Mutex before PR #11408: no answer says the own key is still
            // there, so none confirms the ownership.
            return Some(self.hold(my_rev, false));
        }
        let lease = match &self.session {
            SessionState::Open(s) => s.lease,
            // The session closed while waiting: its key is the one to look for.
            _ => return self.lost_while_waiting(),
        };
        let req = self.unary(ctx, Request::Get(Range::key(Self::my_key(lease))));
        self.phase = Phase::Rechecking { req, my_rev };
        None
    }

    /// `TryLock` found the lock held: delete the own key, and fail (`ErrLocked`) once the
    /// delete is answered. (Not waiting would let the next try find the key still there and
    /// take it as its own, first in line, just before the delete lands: two holders.)
    fn give_up(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        let Some(key) = self.my_key.clone() else {
            self.phase = Phase::Idle;
            return Some(LockSignal::AcquireFailed);
        };
        let req = self.delete_key(ctx, key);
        self.phase = Phase::GivingUp { req };
        None
    }

    /// Sends `Delete(key)` as a unary request: the unlock, or a try's give-up.
    fn delete_key(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, key: String) -> u64 {
        self.unary(
            ctx,
            Request::Txn(Txn {
                compares: vec![],
                success: vec![Op::Delete { key }],
                failure: vec![],
            }),
        )
    }

    fn lost_while_waiting(&mut self) -> Option<LockSignal> {
        self.phase = Phase::Idle;
        Some(LockSignal::AcquireFailed)
    }

    /// Holds the lock with the own key, created at `my_rev`. The fencing token is that create
    /// revision when fencing is on. The ticket is the same revision, fenced or not, when a
    /// member's answer showed the own key first in line (`confirmed`): that member's owner
    /// audit recorded the key's ownership as `Issued` by then. A hold no answer confirmed
    /// (the wait without the check after it) names none, and takes its own place in service
    /// order: the key may have been revoked before it was ever first.
    fn hold(&mut self, my_rev: Rev, confirmed: bool) -> LockSignal {
        self.phase = Phase::Held { my_rev };
        LockSignal::Granted {
            token: self.config.fencing.then_some(my_rev),
            ticket: confirmed.then_some(my_rev),
        }
    }

    /// Re-sends the request of the current phase (after a timeout or a redirect).
    fn retry(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        match (&self.session, self.phase.clone()) {
            (SessionState::Granting { .. }, _) => {
                self.grant(ctx);
                None
            }
            (_, Phase::Trying { .. }) => {
                if matches!(self.session, SessionState::Open(_)) {
                    self.try_acquire(ctx);
                    None
                } else {
                    self.lost_while_waiting()
                }
            }
            (_, Phase::Finding { my_rev, .. } | Phase::Watching { my_rev, .. }) => {
                self.find_predecessor(ctx, my_rev);
                None
            }
            (_, Phase::Rechecking { my_rev, .. }) => self.done_waiting(ctx, my_rev),
            // The delete is sent again, as gRPC retries it, until answered.
            (_, Phase::GivingUp { .. }) => self.give_up(ctx),
            (_, Phase::Unlocking { .. }) => {
                // Give up the delete: the lease will take the key with it.
                self.phase = Phase::Idle;
                Some(LockSignal::Released)
            }
            _ => None,
        }
    }

    fn redirect(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        id: u64,
        leader: Option<NodeId>,
    ) -> Option<LockSignal> {
        match leader.and_then(|l| self.config.servers.iter().position(|&s| s == l)) {
            Some(i) if i != self.endpoint => self.endpoint = i,
            _ => self.next_endpoint(),
        }
        // Only a request the client still waits for is sent again.
        let waiting = match (&self.session, &self.phase) {
            (SessionState::Granting { req }, _) if *req == id => true,
            (SessionState::Open(s), _) if s.inflight == Some(id) => {
                if let SessionState::Open(s) = &mut self.session {
                    s.inflight = None;
                }
                return None;
            }
            (
                _,
                Phase::Trying { req }
                | Phase::Finding { req, .. }
                | Phase::Watching { req, .. }
                | Phase::Rechecking { req, .. }
                | Phase::Unlocking { req }
                | Phase::GivingUp { req },
            ) => *req == id,
            _ => false,
        };
        if !waiting {
            return None;
        }
        if leader.is_none() {
            // No leader anywhere yet: back off before the next endpoint.
            let jitter = ctx.rng().below(RETRY_BACKOFF.as_nanos() / 5);
            let wait = RETRY_BACKOFF - RETRY_BACKOFF / 10 + Dur::from_nanos(jitter);
            ctx.set_timer(ClockKind::Mono, wait, ClientTimer::Backoff { req: id });
            return None;
        }
        self.retry(ctx)
    }

    /// True while request `id` is the one the client waits for.
    fn awaits(&self, id: u64) -> bool {
        match (&self.session, &self.phase) {
            (SessionState::Granting { req }, _) if *req == id => true,
            (
                _,
                Phase::Trying { req }
                | Phase::Finding { req, .. }
                | Phase::Rechecking { req, .. }
                | Phase::Unlocking { req }
                | Phase::GivingUp { req },
            ) => *req == id,
            _ => false,
        }
    }

    fn next_endpoint(&mut self) {
        self.endpoint = (self.endpoint + 1) % self.config.servers.len();
    }

    /// Sends a unary request under a timeout.
    fn unary(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, req: Request) -> u64 {
        let id = self.send(ctx, req);
        if let Some((_, t)) = self.timeout.take() {
            ctx.cancel_timer(t);
        }
        let t = ctx.set_timer(
            ClockKind::Mono,
            self.config.request_timeout,
            ClientTimer::Timeout { req: id },
        );
        self.timeout = Some((id, t));
        id
    }

    fn send(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, req: Request) -> u64 {
        self.next_req += 1;
        let id = self.next_req;
        let to = self.config.servers[self.endpoint];
        ctx.send(
            to,
            Msg::Request {
                id,
                req: Box::new(req),
            },
        );
        id
    }
}

/// The transaction that creates `key` with `lease` unless it exists (`tryAcquire`,
/// `newUniqueKV`), answering with the key in either case; `also`, another get in both
/// branches (the Mutex's first creator under the prefix).
fn put_if_absent(key: String, lease: LeaseId, also: Option<Op>) -> Txn {
    let put = Op::Put {
        key: key.clone(),
        value: 0,
        lease: Some(lease),
    };
    let get = Op::Get(Range::key(key.clone()));
    Txn {
        compares: vec![Compare {
            key,
            target: Target::Create,
            cmp: Cmp::Equal,
            value: 0,
        }],
        success: [Some(put), also.clone()].into_iter().flatten().collect(),
        failure: [Some(get), also].into_iter().flatten().collect(),
    }
}

impl EtcdLock {
    /// `Unlock` (or `RUnlock`): deletes the own key.
    fn unlock(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        let lease = match (&self.phase, &self.session) {
            (Phase::Held { .. }, SessionState::Open(s)) => s.lease,
            _ => {
                self.phase = Phase::Idle;
                return Some(LockSignal::Released);
            }
        };
        // `Unlock` and `RUnlock` delete the own key.
        let key = match (&self.my_key, self.access) {
            (Some(key), Access::Read | Access::Write) => key.clone(),
            _ => Self::my_key(lease),
        };
        let req = self.delete_key(ctx, key);
        self.phase = Phase::Unlocking { req };
        None
    }


    /// [`LockClient::on_reset`] before [`EtcdLock::settle`].
    fn connection_reset(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        if self.config.servers[self.endpoint] != peer {
            return None;
        }
        self.next_endpoint();
        if let SessionState::Open(s) = &mut self.session {
            s.inflight = None;
        }
        if let Some((_, timer)) = self.timeout.take() {
            ctx.cancel_timer(timer);
            return self.retry(ctx);
        }
        if let Phase::Watching { my_rev, .. } = self.phase.clone() {
            self.find_predecessor(ctx, my_rev);
        }
        None
    }

    /// [`LockClient::on_timer`] before [`EtcdLock::settle`].
    fn timer_fired(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        timer: ClientTimer,
    ) -> Option<LockSignal> {
        match timer {
            ClientTimer::KeepAlivePoll => {
                self.keepalive_pass(ctx, false);
                None
            }
            ClientTimer::KeepAliveTimeout { req } => {
                if let SessionState::Open(s) = &mut self.session {
                    if s.inflight == Some(req) {
                        s.inflight = None;
                        self.next_endpoint();
                    }
                }
                None
            }
            ClientTimer::DeadlinePoll => {
                ctx.set_timer(ClockKind::Mono, DEADLINE_POLL, ClientTimer::DeadlinePoll);
                let now = ctx.mono();
                // `ka.deadline.Before(now)` (`lease.go:569-590`).
                let expired = matches!(&self.session, SessionState::Open(s) if s.deadline < now);
                if expired {
                    return self.close_session();
                }
                None
            }
            ClientTimer::Timeout { req } => {
                if self.timeout.is_some_and(|(r, _)| r == req) {
                    self.timeout = None;
                    self.next_endpoint();
                    return self.retry(ctx);
                }
                None
            }
            ClientTimer::Backoff { req } => {
                if self.awaits(req) {
                    return self.retry(ctx);
                }
                None
            }
            ClientTimer::WatchCheck { req } => {
                if let Phase::Watching { req: w, my_rev, .. } = self.phase.clone() {
                    if w == req {
                        self.send(ctx, Request::CancelWatch { watch: req });
                        self.find_predecessor(ctx, my_rev);
                    }
                }
                None
            }
        }
    }
}

impl LockClient for EtcdLock {
    type Msg = Msg;
    type Timer = ClientTimer;
    type Resource = ResourceGuard;

    /// One lock only: the loader refuses the `keys` workload's many locks for etcd.
    fn select(&mut self, lock: u32) {
        assert_eq!(lock, 0, "etcd takes one lock");
    }

    /// The read-write lock's side (`recipes.RWMutex`, under the same prefix as the Mutex).
    fn access(&mut self, access: Access) {
        self.access = access;
    }

    fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        _from: NodeId,
        msg: Msg,
    ) -> Option<LockSignal> {
        match msg {
            Msg::Reply { id, reply } => {
                let signal = self.on_reply(ctx, id, reply);
                self.settle(signal)
            }
            // The answer to a resource operation is the workload's; the lock keeps its
            // state (the operation stays known for a redirect until the next one).
            Msg::Resource(reply) => Some(LockSignal::Resource(reply)),
            // Members send clients their replies only.
            msg => unreachable!("an etcd lock client was sent {msg:?}"),
        }
    }

    /// A nested `concurrency.NewMutex(session, pfx).Lock()` on the session that holds the
    /// lock: `tryAcquire` finds the own key (`pfx/<lease>`) already there, takes its create
    /// revision as its own, sees it first in line and returns at once, one round trip, with
    /// no count. Its `Unlock` deletes that key: the lock is free while the outer Mutex still
    /// believes it holds it.
    fn reenter(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        // On a session that is over, `tryAcquire`'s put fails: "requested lease not found".
        let (Phase::Held { my_rev }, SessionState::Open(_)) = (&self.phase, &self.session) else {
            return Some(LockSignal::AcquireFailed);
        };
        let my_rev = *my_rev;
        self.nested = Some(my_rev);
        self.phase = Phase::Idle;
        let signal = self.acquire(ctx);
        self.settle(signal)
    }

    /// The nested Mutex's `Unlock`: `Delete(pfx/<lease>)`, the outer's key too.
    fn leave(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        self.leaving = true;
        let signal = self.unlock(ctx);
        self.settle(signal)
    }

    fn acquire(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        assert_eq!(self.phase, Phase::Idle, "acquire while not idle");
        if self.access != Access::Exclusive {
            self.my_key = None; // A new unique key for each acquisition.
        }
        match &self.session {
            SessionState::Open(_) => self.try_acquire(ctx),
            SessionState::Granting { .. } => self.phase = Phase::NeedSession,
            SessionState::None | SessionState::Done => {
                self.phase = Phase::NeedSession;
                self.grant(ctx);
            }
        }
        None
    }

    fn release(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        self.nested = None;
        self.leaving = false;
        self.unlock(ctx)
    }

    fn valid(&self, ctx: &impl Host<Msg, ClientTimer>) -> bool {
        matches!(self.phase, Phase::Held { .. })
            && matches!(&self.session, SessionState::Open(s) if ctx.mono() < s.deadline)
    }

    /// The client crashed: its session, recipe and connections are gone. Request ids go on
    /// from where they were: a restarted client talks over new connections, on which no
    /// answer to a request of its previous life arrives, so none may be taken for one of this
    /// life (replies in flight at the crash still land, and old watches still stream).
    fn reset(&mut self) {
        let next_req = self.next_req;
        *self = EtcdLock::new(self.config.clone());
        self.next_req = next_req;
    }

    /// The connection to member `peer` was reset (it crashed, or refused a request). If it is
    /// the client's endpoint, gRPC sees the broken connection at once: the unary request in
    /// flight fails and is tried on the next endpoint, as after its timeout; the keepalive
    /// stream breaks and its next poll sends to the next endpoint (`retryConnWait`); a watch
    /// is set up again there at once. A workload operation in flight is left to the
    /// workload's own timeout.
    fn on_reset(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        let signal = self.connection_reset(ctx, peer);
        self.settle(signal)
    }

    fn on_timer(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        timer: ClientTimer,
    ) -> Option<LockSignal> {
        let signal = self.timer_fired(ctx, timer);
        self.settle(signal)
    }

    /// Sends a workload operation on the etcd-resident resource to the current endpoint: a
    /// read as a linearizable `Get`, a write as a transaction guarded on the key and revision
    /// the client holds the lock with. The member's answer comes back as `Msg::Resource`.
    ///
    /// # Panics
    /// Outside a critical section: the workload sends operations only under a grant.
    fn resource_op(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        guard: &ResourceGuard,
        op: StorageRequest,
    ) {
        let compares = match (&self.phase, &self.my_key) {
            (Phase::Held { my_rev }, Some(key)) => (*guard).compares(key, *my_rev),
            (phase, _) => panic!("a resource operation outside the critical section ({phase:?})"),
        };
        let request = Request::Resource {
            op,
            txn: resource::txn(op.kind, compares),
        };
        let req = self.send(ctx, request.clone());
        self.resource_op = Some(ResourceOp {
            req,
            request,
            redirected: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn my_key_is_the_prefix_and_the_lease_in_hex() {
        for lease in [0, 1, 0xf, 0x10, 0xabc, 0x7fff_ffff_ffff_ffff, u64::MAX] {
            assert_eq!(EtcdLock::my_key(lease), format!("{PREFIX}{lease:x}"));
        }
    }
}
