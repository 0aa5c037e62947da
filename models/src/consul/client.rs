//! The Consul lock client: `api.Lock` (`api/lock.go`, `api/session.go`).
//!
//! - `Lock()`: creates a session (TTL 15 s, lock-delay 15 s, behavior `release` by default)
//!   and renews it every TTL/2 (`RenewPeriodic`: after a failed renew, again every second
//!   until more than TTL has passed since the last success, then it gives up; a 404 ends it
//!   at once). It waits for the key with blocking queries (`LockWaitTime` 15 s) until no
//!   session holds it, then `?acquire`s it. A refused acquire reads the key once more: held
//!   by another session, it waits again; free (the lock-delay refused it), it waits
//!   `DefaultLockRetryTime` (5 s) first.
//! - Held, `monitorLock` runs blocking queries on the key and closes the leader channel
//!   (here: [`LockSignal::Lost`]) when the key's session is no longer this one, or on the
//!   first error (`MonitorRetries` is 0 by default).
//! - `Unlock()`: `?release`, then the renewer stops and destroys the session.
//! - The sequencer's `LockIndex` is the fencing token when `fencing = "lock-index"`; the
//!   acquisition's raft index (the key's `ModifyIndex` then) is the grant's ticket.
//! - With the resource in the KV store ([`super::resource`]), an operation goes to the leader
//!   like any request: a write carries the check its guard asks for, with this client's
//!   session or its acquisition's `ModifyIndex`.
//!
//! Requests go to one server; a `NotLeader` naming the leader sends the request there (the
//! agent forwards it). A `NotLeader` naming none, or a connection reset by a crashed server,
//! is retried on the next server every 250 ms for up to 7 s from the first try (the agent's
//! `RPCHoldTimeout`, which rides out an election), then is an error, as a timeout is: the lock
//! attempt fails (`Lock()` returns it), a monitor loses the lock, a renew is retried.

use std::collections::BTreeMap;

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId, TimerId};

use super::resource::ResourceGuard;
use super::{Behavior, ClientTimer, Msg, Reply, Request, SessionId};
use crate::env::Host;
use crate::lock::{LockClient, LockSignal};
use crate::storage::StorageRequest;

/// `DefaultLockRetryTime`.
pub const LOCK_RETRY: Dur = Dur::from_secs(5);
/// `DefaultLockWaitTime`.
pub const LOCK_WAIT: Dur = Dur::from_secs(15);
/// The server's default wait for a blocking query without one (`monitorLock` sets none).
pub const DEFAULT_WAIT: Dur = Dur::from_secs(300);
/// The agent's `RPCHoldTimeout`: how long a request is retried while no leader is known.
pub const RPC_HOLD: Dur = Dur::from_secs(7);
/// Between those retries.
pub const RPC_RETRY: Dur = Dur::from_millis(250);

/// The client's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsulLockConfig {
    /// The servers, in id order.
    pub servers: Vec<NodeId>,
    /// The session's TTL (`DefaultLockSessionTTL` 15 s).
    pub ttl: Dur,
    /// The session's lock-delay (15 s).
    pub lock_delay: Dur,
    /// The session's behavior.
    pub behavior: Behavior,
    /// How long a request may go unanswered (beyond a blocking query's wait).
    pub request_timeout: Dur,
    /// Hand the lock index to storage as the fencing token.
    pub fencing: bool,
    /// Chubby's conservative local lease (OSDI 2006 §2.8): the holder believes it holds only
    /// while its own monotonic clock is within the TTL, shortened by this many ppm of
    /// assumed clock drift, of the *sending* of its last renew that the leader answered (or of
    /// the session's creation). Past it the session is in jeopardy and the holder stops
    /// (the workload's validity check fails). `None`: `api.Lock`, which keeps no such lease.
    pub local_lease_drift_ppm: Option<u32>,
}

impl ConsulLockConfig {
    /// `api.Lock`'s defaults against `servers`.
    pub fn new(servers: Vec<NodeId>) -> ConsulLockConfig {
        ConsulLockConfig {
            servers,
            ttl: Dur::from_secs(15),
            lock_delay: Dur::from_secs(15),
            behavior: Behavior::Release,
            request_timeout: Dur::from_secs(10),
            fencing: false,
            local_lease_drift_ppm: None,
        }
    }
}

/// What a request in flight is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    Create,
    Wait,
    Acquire,
    /// The read after a refused acquire.
    Check,
    Monitor,
    Renew,
    Release,
    Destroy,
    /// An operation on the resource in the KV store.
    Resource,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InFlight {
    purpose: Purpose,
    req: Request,
    timer: TimerId,
    /// The server it went to.
    to: NodeId,
    /// When it was first sent (the RPC hold counts from there).
    first: LocalTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// `Lock()` is running: creating the session, waiting, acquiring or retrying.
    Locking,
    Holding,
    Releasing,
}

/// The Consul lock client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsulLock {
    config: ConsulLockConfig,
    endpoint: usize,
    next_req: u64,
    phase: Phase,
    session: Option<SessionId>,
    /// The renewer runs (it stops after a 404, after TTL without a success, and at unlock).
    renewing: bool,
    last_renew_ok: LocalTime,
    /// When the last renew the leader answered (or the session's creation) was sent.
    lease_from: LocalTime,
    renew_timer: Option<TimerId>,
    /// The monitor saw the key leave this session, or failed.
    lost: bool,
    /// The key's `ModifyIndex` as this client's acquisition left it (`check-index`).
    held_index: u64,
    inflight: BTreeMap<u64, InFlight>,
    /// Requests waiting for their next try during the RPC hold, by the try's number.
    holding: BTreeMap<u64, (Purpose, Request, LocalTime)>,
}

impl ConsulLock {
    /// A client with no session.
    pub fn new(config: ConsulLockConfig) -> ConsulLock {
        ConsulLock {
            config,
            endpoint: 0,
            next_req: 0,
            phase: Phase::Idle,
            session: None,
            renewing: false,
            last_renew_ok: LocalTime::from_nanos(0),
            lease_from: LocalTime::from_nanos(0),
            renew_timer: None,
            lost: false,
            held_index: 0,
            inflight: BTreeMap::new(),
            holding: BTreeMap::new(),
        }
    }

    /// The session, for tests.
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }

    fn send(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, purpose: Purpose, req: Request) {
        let now = ctx.mono();
        self.send_from(ctx, purpose, req, now);
    }

    fn send_from(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        purpose: Purpose,
        req: Request,
        first: LocalTime,
    ) {
        self.next_req += 1;
        let id = self.next_req;
        let mut timeout = self.config.request_timeout;
        if let Request::Get { wait, .. } = req {
            timeout = timeout.saturating_add(wait).saturating_add(wait / 16);
        }
        let timer = ctx.set_timer(ClockKind::Mono, timeout, ClientTimer::Timeout { req: id });
        let to = self.config.servers[self.endpoint];
        ctx.send(to, Msg::Request { id, req });
        self.inflight.insert(
            id,
            InFlight {
                purpose,
                req,
                timer,
                to,
                first,
            },
        );
    }

    /// No leader answered (or the server's connection was reset): the agent tries the next
    /// server a little later, until the RPC hold runs out.
    fn hold(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, f: InFlight) -> Option<LockSignal> {
        self.endpoint = (self.endpoint + 1) % self.config.servers.len();
        if ctx.mono().saturating_since(f.first) >= RPC_HOLD {
            return self.failed(ctx, f.purpose);
        }
        self.next_req += 1;
        let n = self.next_req;
        self.holding.insert(n, (f.purpose, f.req, f.first));
        ctx.set_timer(ClockKind::Mono, RPC_RETRY, ClientTimer::Hold { n });
        None
    }

    /// The one request of `purpose` in flight, dropped (a newer one replaces it).
    fn forget(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, purpose: Purpose) {
        let ids: Vec<u64> = self
            .inflight
            .iter()
            .filter(|(_, f)| f.purpose == purpose)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let f = self.inflight.remove(&id).expect("in flight");
            ctx.cancel_timer(f.timer);
        }
        self.holding.retain(|_, (p, _, _)| *p != purpose);
    }

    fn wait_for_key(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, index: u64) {
        self.send(
            ctx,
            Purpose::Wait,
            Request::Get {
                index,
                wait: LOCK_WAIT,
            },
        );
    }

    fn monitor(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, index: u64) {
        self.send(
            ctx,
            Purpose::Monitor,
            Request::Get {
                index,
                wait: DEFAULT_WAIT,
            },
        );
    }

    fn renew_in(&mut self, ctx: &mut impl Host<Msg, ClientTimer>, after: Dur) {
        if let Some(t) = self.renew_timer.take() {
            ctx.cancel_timer(t);
        }
        self.renew_timer = Some(ctx.set_timer(ClockKind::Mono, after, ClientTimer::Renew));
    }

    fn stop_renewing(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) {
        self.renewing = false;
        if let Some(t) = self.renew_timer.take() {
            ctx.cancel_timer(t);
        }
        self.forget(ctx, Purpose::Renew);
    }

    /// `Lock()` failed with an error: the attempt ends.
    fn lock_failed(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        for p in [Purpose::Create, Purpose::Wait, Purpose::Acquire, Purpose::Check] {
            self.forget(ctx, p);
        }
        self.phase = Phase::Idle;
        Some(LockSignal::AcquireFailed)
    }

    /// A request failed (timed out, or no leader known): what it was for decides.
    fn failed(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        purpose: Purpose,
    ) -> Option<LockSignal> {
        self.endpoint = (self.endpoint + 1) % self.config.servers.len();
        match purpose {
            Purpose::Create | Purpose::Wait | Purpose::Acquire | Purpose::Check => {
                if self.phase == Phase::Locking {
                    return self.lock_failed(ctx);
                }
                None
            }
            Purpose::Monitor => {
                if self.phase == Phase::Holding && !self.lost {
                    self.lost = true;
                    return Some(LockSignal::Lost);
                }
                None
            }
            Purpose::Renew => {
                if self.renewing {
                    if ctx.mono().saturating_since(self.last_renew_ok) > self.config.ttl {
                        self.stop_renewing(ctx);
                    } else {
                        self.renew_in(ctx, Dur::from_secs(1));
                    }
                }
                None
            }
            Purpose::Release => self.released(ctx),
            // The workload times its operations out itself.
            Purpose::Destroy | Purpose::Resource => None,
        }
    }

    /// The release is over (answered or not): the renewer stops and destroys the session.
    fn released(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        if self.phase != Phase::Releasing {
            return None;
        }
        self.stop_renewing(ctx);
        if let Some(session) = self.session.take() {
            self.send(ctx, Purpose::Destroy, Request::SessionDestroy { session });
        }
        self.phase = Phase::Idle;
        self.lost = false;
        Some(LockSignal::Released)
    }

    fn on_reply(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        f: InFlight,
        reply: Reply,
    ) -> Option<LockSignal> {
        if let Reply::NotLeader { leader } = reply {
            let Some(i) = leader.and_then(|l| self.config.servers.iter().position(|s| *s == l))
            else {
                return self.hold(ctx, f);
            };
            self.endpoint = i;
            self.send_from(ctx, f.purpose, f.req, f.first);
            return None;
        }
        match (f.purpose, reply) {
            (Purpose::Create, Reply::Session(id)) if self.phase == Phase::Locking => {
                self.session = Some(id);
                self.renewing = true;
                self.last_renew_ok = ctx.mono();
                self.lease_from = f.first;
                self.renew_in(ctx, self.config.ttl / 2);
                self.wait_for_key(ctx, 0);
                None
            }
            (Purpose::Wait, Reply::Kv { entry, index }) if self.phase == Phase::Locking => {
                let Some(session) = self.session else {
                    return self.lock_failed(ctx);
                };
                match entry.and_then(|e| e.session) {
                    Some(s) if s == session => {
                        let lock_index = entry.map_or(0, |e| e.lock_index);
                        let ticket = entry.map_or(0, |e| e.modify_index);
                        self.held(ctx, lock_index, ticket, index)
                    }
                    Some(_) => {
                        self.wait_for_key(ctx, index);
                        None
                    }
                    None => {
                        self.send(ctx, Purpose::Acquire, Request::Acquire { session });
                        None
                    }
                }
            }
            (
                Purpose::Acquire,
                Reply::Acquire {
                    locked,
                    lock_index,
                    modify_index,
                },
            ) if self.phase == Phase::Locking => {
                if locked {
                    return self.held(ctx, lock_index, modify_index, 0);
                }
                self.send(
                    ctx,
                    Purpose::Check,
                    Request::Get {
                        index: 0,
                        wait: LOCK_WAIT,
                    },
                );
                None
            }
            (Purpose::Check, Reply::Kv { entry, index }) if self.phase == Phase::Locking => {
                if entry.and_then(|e| e.session).is_some() {
                    self.wait_for_key(ctx, index);
                } else {
                    // Free, yet refused: the lock-delay. `DefaultLockRetryTime`, then again.
                    ctx.set_timer(ClockKind::Mono, LOCK_RETRY, ClientTimer::Retry);
                }
                None
            }
            (Purpose::Monitor, Reply::Kv { entry, index }) if self.phase == Phase::Holding => {
                if self.lost {
                    return None;
                }
                if entry.and_then(|e| e.session).is_some() && entry.and_then(|e| e.session) == self.session {
                    self.monitor(ctx, index);
                    return None;
                }
                self.lost = true;
                Some(LockSignal::Lost)
            }
            (Purpose::Renew, Reply::Renewed) if self.renewing => {
                self.last_renew_ok = ctx.mono();
                self.lease_from = f.first;
                self.watch_lease(ctx);
                self.renew_in(ctx, self.config.ttl / 2);
                None
            }
            (Purpose::Renew, Reply::SessionGone) => {
                // `ErrSessionExpired`: the renewer ends.
                self.stop_renewing(ctx);
                None
            }
            (Purpose::Acquire, Reply::SessionGone) if self.phase == Phase::Locking => {
                // "invalid session": `Lock()` returns the error; the next one creates a new
                // session.
                self.stop_renewing(ctx);
                self.session = None;
                self.lock_failed(ctx)
            }
            (Purpose::Release, _) => self.released(ctx),
            (Purpose::Resource, Reply::Resource(reply)) => Some(LockSignal::Resource(reply)),
            _ => None,
        }
    }

    /// The end of Chubby's local lease, if the client keeps one.
    fn lease_end(&self) -> Option<LocalTime> {
        let ppm = self.config.local_lease_drift_ppm?;
        let ttl = self.config.ttl;
        Some(self.lease_from + ttl.saturating_sub(ttl.mul_div(u64::from(ppm), 1_000_000)))
    }

    /// A holder keeping a local lease looks again when it ends.
    fn watch_lease(&self, ctx: &mut impl Host<Msg, ClientTimer>) {
        if let Some(end) = self.lease_end().filter(|_| self.phase == Phase::Holding) {
            ctx.set_timer_at(ClockKind::Mono, end, ClientTimer::LocalLease);
        }
    }

    /// The key is this session's: the lock is held, and the monitor starts.
    fn held(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        lock_index: u64,
        ticket: u64,
        index: u64,
    ) -> Option<LockSignal> {
        self.phase = Phase::Holding;
        self.lost = false;
        self.held_index = ticket;
        self.monitor(ctx, index);
        self.watch_lease(ctx);
        Some(LockSignal::Granted {
            token: self.config.fencing.then_some(lock_index),
            ticket: Some(ticket),
        })
    }
}

impl LockClient for ConsulLock {
    type Msg = Msg;
    type Timer = ClientTimer;
    type Resource = ResourceGuard;

    /// One lock only: the loader refuses the `keys` workload's many locks for Consul.
    fn select(&mut self, lock: u32) {
        assert_eq!(lock, 0, "Consul takes one lock");
    }

    /// `Lock()` again on the `api.Lock` that holds it: `ErrLockHeld` ("Lock already held"),
    /// from the client, with no request (`api/lock.go`: `if l.isHeld`).
    fn reenter(&mut self, _: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        Some(LockSignal::AcquireFailed)
    }

    fn acquire(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        self.phase = Phase::Locking;
        self.lost = false;
        match self.session.filter(|_| self.renewing) {
            Some(_) => self.wait_for_key(ctx, 0),
            None => {
                // A session per `Lock()` (`opts.Session` unset), created afresh.
                self.stop_renewing(ctx);
                self.session = None;
                let req = Request::SessionCreate {
                    ttl: self.config.ttl,
                    lock_delay: self.config.lock_delay,
                    behavior: self.config.behavior,
                };
                self.send(ctx, Purpose::Create, req);
            }
        }
        None
    }

    fn release(&mut self, ctx: &mut impl Host<Msg, ClientTimer>) -> Option<LockSignal> {
        self.forget(ctx, Purpose::Monitor);
        let Some(session) = self.session.filter(|_| self.phase == Phase::Holding) else {
            self.phase = Phase::Idle;
            return Some(LockSignal::Released);
        };
        self.phase = Phase::Releasing;
        self.send(ctx, Purpose::Release, Request::Release { session });
        None
    }

    fn valid(&self, ctx: &impl Host<Msg, ClientTimer>) -> bool {
        let leased = self.lease_end().is_none_or(|end| ctx.mono() < end);
        self.phase == Phase::Holding && !self.lost && leased
    }

    fn reset(&mut self) {
        let next_req = self.next_req;
        *self = ConsulLock::new(self.config.clone());
        self.next_req = next_req;
    }

    fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        from: NodeId,
        msg: Msg,
    ) -> Option<LockSignal> {
        // The client's agent is a gossip member: it answers probes and relays them.
        super::gossip(ctx, from, &msg);
        let Msg::Reply { id, reply } = msg else {
            return None;
        };
        let f = self.inflight.remove(&id)?;
        ctx.cancel_timer(f.timer);
        self.on_reply(ctx, f, reply)
    }

    fn on_timer(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        timer: ClientTimer,
    ) -> Option<LockSignal> {
        match timer {
            ClientTimer::Timeout { req } => {
                let f = self.inflight.remove(&req)?;
                self.failed(ctx, f.purpose)
            }
            ClientTimer::Renew => {
                self.renew_timer = None;
                let session = self.session.filter(|_| self.renewing)?;
                self.send(ctx, Purpose::Renew, Request::SessionRenew { session });
                None
            }
            ClientTimer::Retry => {
                if self.phase == Phase::Locking {
                    self.wait_for_key(ctx, 0);
                }
                None
            }
            ClientTimer::LocalLease => {
                // Jeopardy: the holder cannot know it still holds the lock, and stops.
                let end = self.lease_end()?;
                if self.phase == Phase::Holding && !self.lost && ctx.mono() >= end {
                    self.lost = true;
                    return Some(LockSignal::Lost);
                }
                None
            }
            ClientTimer::Hold { n } => {
                let (purpose, req, first) = self.holding.remove(&n)?;
                self.send_from(ctx, purpose, req, first);
                None
            }
        }
    }

    fn on_reset(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        let ids: Vec<u64> = self
            .inflight
            .iter()
            .filter(|(_, f)| f.to == peer)
            .map(|(id, _)| *id)
            .collect();
        let mut signal = None;
        for id in ids {
            let Some(f) = self.inflight.remove(&id) else {
                continue;
            };
            ctx.cancel_timer(f.timer);
            signal = signal.or(self.hold(ctx, f));
        }
        signal
    }

    /// Sends a workload operation on the resource in the KV store to the current server; a
    /// write carries `guard`'s check with this client's session and acquisition.
    ///
    /// # Panics
    /// Outside a critical section: the workload sends operations only under a grant.
    fn resource_op(
        &mut self,
        ctx: &mut impl Host<Msg, ClientTimer>,
        guard: &ResourceGuard,
        op: StorageRequest,
    ) {
        let session = match (self.phase, self.session) {
            (Phase::Holding, Some(s)) => s,
            (phase, _) => panic!("a resource operation outside the critical section ({phase:?})"),
        };
        let check = guard.check(session, self.held_index);
        self.send(ctx, Purpose::Resource, Request::Resource { op, check });
    }
}
