//! client-go's `LeaderElector` (`tools/leaderelection/leaderelection.go`, `tryAcquireOrRenew`)
//! over a `LeaseLock` (`resourcelock/leaselock.go`), as the family's lock client.
//!
//! - `tryAcquireOrRenew`: the leader's fast path (it leads by its observed record and
//!   `observedTime + leaseDurationSeconds > now`: `Update` with the cached object), then the
//!   slow path: `Get`; 404 → `Create`; a record whose JSON differs from the last one read
//!   (`observedRawRecord`, [`raw`]) becomes the observed record, with `observedTime` = now on
//!   the elector's MONO clock; held by another and
//!   not expired by that rule → fail; else `Update` (a new holder adds one to
//!   `leaseTransitions`). `now` is read once at the start, as client-go does.
//! - `acquire` runs the candidate loop, `wait.JitterUntil(RetryPeriod, 1.2, sliding)`: the next
//!   attempt RetryPeriod + U[0, 1.2·RetryPeriod) after the previous one returned, until one
//!   succeeds: `Granted`, with `leaseTransitions` as ticket.
//! - Then the renew loop, `wait.UntilWithContext(RetryPeriod)` around
//!   `wait.PollUntilContextTimeout(RetryPeriod, RenewDeadline, immediate)`: a poll starts at
//!   once and RetryPeriod after each success; within a poll, attempts follow a ticker of
//!   RetryPeriod from the poll's start (not sliding: `loopConditionUntilContext(..., false,
//!   ...)` in apimachinery `pkg/util/wait/poll.go`), so a failed attempt that outlasted a tick
//!   is retried at once; when RenewDeadline passes since the poll started, the request in flight
//!   is cancelled and the elector stops leading (`Lost`; `OnStoppedLeading`); under
//!   `ReleaseOnCancel` only after `release()` returned (`renew` releases before it returns).
//! - Every HTTP call has a timeout: the client's `Timeout`, max(1 s, RenewDeadline / 2) as
//!   `resourcelock.NewFromKubeconfig` sets it ([`http_timeout`]), and no later than the
//!   poll's (or the release's) deadline. After a timeout or a 5xx the elector moves to the next API server
//!   (a load balancer in front of them).
//! - `release` cancels the leading context; under `ReleaseOnCancel` (off by default, as in
//!   client-go) `release()`/`tryRelease()` run under a deadline of RenewDeadline: `Get` (the
//!   cached object only), and if the observed record names the elector, `Update` to holder ""
//!   with `leaseDurationSeconds` 1 and the `leaseTransitions` read; on a 409, `tryRelease`
//!   again. The release is done when that returns.
//! - A crash forgets everything; the restarted process has a new identity (kube-controller-
//!   manager adds a fresh UUID to its host name), so it waits a full lease like any candidate.
//! - It reaches the mark `renewed` after each successful write of its own record (the
//!   acquisition and every renewal), where a fault can land right after a renewal.
//! - Variants: `expiry = renew-time` judges a held record expired when `renewTime +
//!   leaseDuration` is before its own WALL now (clients that trust the recorded timestamps);
//!   `lease_duration = own` judges by its own configured duration instead of the record's
//!   (fabric8 kubernetes-client #7160).

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId};

use super::{identity, ApiReply, ApiRequest, LeaseObject, LeaseRecord, Msg};
use crate::env::Host;
use crate::lock::{LockClient, LockSignal, NoResource};
use crate::observe::Observation;
use crate::storage::StorageRequest;

/// client-go's `JitterFactor`.
pub const JITTER_PERCENT: u64 = 120;

/// When a held record counts as expired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Expiry {
    /// client-go: `observedTime + leaseDuration` on the elector's MONO clock.
    #[default]
    ObservedTime,
    /// `renewTime + leaseDuration` against the elector's WALL clock.
    RenewTime,
}

/// Whose lease duration judges expiry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LeaseDurationFrom {
    /// The record's `leaseDurationSeconds` (client-go).
    #[default]
    Record,
    /// The elector's own configured duration (fabric8 #7160).
    Own,
}

/// What the elector hands storage as its fencing token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TokenFrom {
    /// No token.
    #[default]
    None,
    /// The term's `leaseTransitions`.
    Transitions,
    /// The resourceVersion of the write that made it leader: a new one at every acquisition,
    /// a re-entry into its own term included, so each critical section has its own token.
    ResourceVersion,
}

/// One elector's timing and judgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Timing {
    /// `LeaseDuration`.
    pub lease_duration: Dur,
    /// `RenewDeadline`.
    pub renew_deadline: Dur,
    /// `RetryPeriod`.
    pub retry_period: Dur,
    /// How expiry is judged.
    pub expiry: Expiry,
    /// Whose duration judges it.
    pub lease_duration_from: LeaseDurationFrom,
}

impl Timing {
    /// client-go's core defaults: 15 s, 10 s, 2 s.
    pub fn defaults() -> Timing {
        Timing {
            lease_duration: Dur::from_secs(15),
            renew_deadline: Dur::from_secs(10),
            retry_period: Dur::from_secs(2),
            expiry: Expiry::ObservedTime,
            lease_duration_from: LeaseDurationFrom::Record,
        }
    }
}

/// Every elector's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectorConfig {
    /// The API servers, in the order the elector tries them.
    pub apiservers: Vec<NodeId>,
    /// The timing of every elector without an override.
    pub timing: Timing,
    /// Overrides by workload client number (`client-N`).
    pub participants: Vec<(u32, Timing)>,
    /// `ReleaseOnCancel`.
    pub release_on_cancel: bool,
    /// The fencing token.
    pub fencing: TokenFrom,
}

/// The elector's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElectorTimer {
    /// Call `id` timed out.
    Call {
        /// The call.
        id: u64,
    },
    /// The next `tryAcquireOrRenew` of this loop.
    Next {
        /// The loop's generation.
        generation: u64,
    },
    /// The renew poll's deadline.
    RenewDeadline {
        /// The loop's generation.
        generation: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Idle,
    Candidate,
    Leader,
    /// In `release()`: `notify` when the workload asked for it (`Released` at the end),
    /// `lost` when the renew loop gave up (`Lost` at the end: `Run` cancels the leading
    /// context and calls `OnStoppedLeading` only after `renew` returns, release included).
    Releasing { notify: bool, lost: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallKind {
    FastUpdate(LeaseRecord),
    Get(LeaseRecord),
    Create(LeaseRecord),
    SlowUpdate(LeaseRecord),
    /// `tryRelease`'s `Get`.
    ReleaseGet,
    Release(LeaseRecord),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InFlight {
    id: u64,
    kind: CallKind,
}

/// One elector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Elector {
    config: ElectorConfig,
    /// Process lives so far: the identity's suffix.
    incarnation: u32,
    /// Its identity and timing, from its node once it runs.
    me: Option<(u64, Timing)>,
    /// The API server it talks to (index).
    api: usize,
    observed: Option<LeaseRecord>,
    /// `observedRawRecord`: the record of the last `Get` as its JSON compares ([`raw`]); only
    /// `Get` sets it, as in client-go (its own writes set `observedRecord` alone).
    observed_raw: Option<LeaseRecord>,
    observed_time: LocalTime,
    /// `ll.lease`: the object of the last successful call.
    cached: Option<LeaseObject>,
    stage: Stage,
    call: Option<InFlight>,
    next_id: u64,
    /// `now` of the current `tryAcquireOrRenew` (MONO).
    try_now: LocalTime,
    /// Bumped when a loop starts or stops: stale loop timers are ignored.
    generation: u64,
    /// The renew poll's deadline (MONO).
    poll_deadline: LocalTime,
    /// When the renew poll started (MONO): its ticker's origin.
    poll_start: LocalTime,
    /// The poll's ticks (RetryPeriod apart from `poll_start`) consumed or dropped so far.
    poll_ticks: u64,
    /// `release()`'s deadline: RenewDeadline after it started (MONO).
    release_deadline: LocalTime,
    /// The workload holds a grant.
    holding: bool,
}

impl Elector {
    /// An elector with `config`.
    pub fn new(config: ElectorConfig) -> Elector {
        Elector {
            config,
            incarnation: 0,
            me: None,
            api: 0,
            observed: None,
            observed_raw: None,
            observed_time: LocalTime::default(),
            cached: None,
            stage: Stage::Idle,
            call: None,
            next_id: 0,
            try_now: LocalTime::default(),
            generation: 0,
            poll_deadline: LocalTime::default(),
            poll_start: LocalTime::default(),
            poll_ticks: 0,
            release_deadline: LocalTime::default(),
            holding: false,
        }
    }

    /// Its settings.
    pub fn config(&self) -> &ElectorConfig {
        &self.config
    }

    /// Whether it leads now: the renew loop has not given up, or it has and `release()` has
    /// not returned yet (the leading context is still live).
    pub fn leading(&self) -> bool {
        matches!(
            self.stage,
            Stage::Leader | Stage::Releasing { lost: true, .. }
        )
    }

    /// Its observed record and `observedTime`.
    pub fn observed(&self) -> Option<(LeaseRecord, LocalTime)> {
        self.observed.map(|r| (r, self.observed_time))
    }

    fn me(&mut self, env: &impl Host<Msg, ElectorTimer>) -> (u64, Timing) {
        if let Some(me) = self.me {
            return me;
        }
        let n = client_number(env.name());
        let timing = self
            .config
            .participants
            .iter()
            .find(|(p, _)| Some(*p) == n)
            .map_or(self.config.timing, |&(_, t)| t);
        let me = (identity(env.id(), self.incarnation), timing);
        self.me = Some(me);
        me
    }

    fn timing(&self) -> Timing {
        self.me.expect("running").1
    }

    fn is_leader(&self) -> bool {
        let id = self.me.expect("running").0;
        self.observed.is_some_and(|r| r.holder == id)
    }

    /// `isLeaseValid(now)`, by the elector's variant.
    fn lease_valid(&self, env: &impl Host<Msg, ElectorTimer>, now: LocalTime) -> bool {
        let Some(record) = self.observed else {
            return false;
        };
        let t = self.timing();
        let ld = match t.lease_duration_from {
            LeaseDurationFrom::Record => Dur::from_secs(record.lease_duration_s),
            LeaseDurationFrom::Own => t.lease_duration,
        };
        match t.expiry {
            Expiry::ObservedTime => self.observed_time + ld > now,
            Expiry::RenewTime => {
                let ld_us = ld.as_nanos() / 1_000;
                record.renew_us.saturating_add(ld_us) > wall_us(env)
            }
        }
    }

    fn send(&mut self, env: &mut impl Host<Msg, ElectorTimer>, kind: CallKind) {
        let req = match kind {
            CallKind::Get(_) | CallKind::ReleaseGet => ApiRequest::Get,
            CallKind::Create(record) => ApiRequest::Create(record),
            CallKind::FastUpdate(record)
            | CallKind::SlowUpdate(record)
            | CallKind::Release(record) => ApiRequest::Update {
                rv: self.cached.map_or(0, |c| c.rv),
                record,
            },
        };
        self.next_id += 1;
        let id = self.next_id;
        self.call = Some(InFlight { id, kind });
        let t = self.timing();
        let mut timeout = http_timeout(t.renew_deadline);
        match self.stage {
            Stage::Leader => {
                timeout = timeout.min(self.poll_deadline.saturating_since(env.mono()));
            }
            Stage::Releasing { .. } => {
                timeout = timeout.min(self.release_deadline.saturating_since(env.mono()));
            }
            Stage::Idle | Stage::Candidate => {}
        }
        let to = self.config.apiservers[self.api];
        env.send(to, Msg::Api { id, req });
        env.set_timer(ClockKind::Mono, timeout, ElectorTimer::Call { id });
    }

    /// Starts a `tryAcquireOrRenew`.
    fn start_try(&mut self, env: &mut impl Host<Msg, ElectorTimer>) {
        let now = env.mono();
        self.try_now = now;
        let (id, t) = self.me(env);
        let wall = wall_us(env);
        let mut record = LeaseRecord {
            holder: id,
            lease_duration_s: t.lease_duration.as_nanos() / 1_000_000_000,
            acquire_us: wall,
            renew_us: wall,
            transitions: 0,
        };
        if self.is_leader() && self.lease_valid(env, now) && self.cached.is_some() {
            let o = self.observed.expect("leader by its observed record");
            record.acquire_us = o.acquire_us;
            record.transitions = o.transitions;
            self.send(env, CallKind::FastUpdate(record));
        } else {
            self.send(env, CallKind::Get(record));
        }
    }

    fn set_observed(&mut self, env: &impl Host<Msg, ElectorTimer>, record: LeaseRecord) {
        self.observed = Some(record);
        self.observed_time = env.mono();
    }

    /// The answer to the call in flight (`None`: it failed at the transport, a timeout).
    fn on_answer(
        &mut self,
        env: &mut impl Host<Msg, ElectorTimer>,
        kind: CallKind,
        reply: Option<ApiReply>,
    ) -> Option<LockSignal> {
        self.call = None;
        if matches!(reply, None | Some(ApiReply::Unavailable)) {
            self.api = (self.api + 1) % self.config.apiservers.len();
        }
        if let Some(ApiReply::Lease(obj)) = reply {
            self.cached = Some(obj);
        }
        match (kind, reply) {
            (CallKind::FastUpdate(record), Some(ApiReply::Lease(obj))) => {
                self.set_observed(env, record);
                self.try_done(env, true, obj)
            }
            // The optimistic update failed: the slow path, in the same attempt.
            // (client-go goes on with the record as the fast path changed it.)
            (CallKind::FastUpdate(record), _) => {
                self.send(env, CallKind::Get(record));
                None
            }
            (CallKind::Get(record), Some(ApiReply::NotFound)) => {
                self.send(env, CallKind::Create(record));
                None
            }
            (CallKind::Get(mut record), Some(ApiReply::Lease(obj))) => {
                // `bytes.Equal(le.observedRawRecord, oldLeaderElectionRawRecord)`.
                if self.observed_raw != Some(raw(obj.record)) {
                    self.set_observed(env, obj.record);
                    self.observed_raw = Some(raw(obj.record));
                    env.observe(Observation::Count("record-observed"));
                }
                let now = self.try_now;
                if obj.record.holder != 0 && self.lease_valid(env, now) && !self.is_leader() {
                    return self.try_done(env, false, obj);
                }
                if self.is_leader() {
                    record.acquire_us = obj.record.acquire_us;
                    record.transitions = obj.record.transitions;
                } else {
                    record.transitions = obj.record.transitions + 1;
                }
                self.send(env, CallKind::SlowUpdate(record));
                None
            }
            (CallKind::Create(record) | CallKind::SlowUpdate(record), Some(ApiReply::Lease(obj))) => {
                self.set_observed(env, record);
                self.try_done(env, true, obj)
            }
            (CallKind::Get(_) | CallKind::Create(_) | CallKind::SlowUpdate(_), _) => {
                self.try_done(env, false, LeaseObject::default())
            }
            // `tryRelease`: the record read (it does not become the observed one); not the
            // leader by the observed record → done; else holder "", one second, the
            // transitions read.
            (CallKind::ReleaseGet, Some(ApiReply::Lease(obj))) if self.is_leader() => {
                let wall = wall_us(env);
                let record = LeaseRecord {
                    holder: 0,
                    lease_duration_s: 1,
                    acquire_us: wall,
                    renew_us: wall,
                    transitions: obj.record.transitions,
                };
                self.send(env, CallKind::Release(record));
                None
            }
            (CallKind::ReleaseGet, _) => self.release_done(),
            (CallKind::Release(record), Some(ApiReply::Lease(_))) => {
                self.set_observed(env, record);
                self.release_done()
            }
            // A conflict (a renewal cancelled in flight had applied): `tryRelease` again,
            // within the same deadline.
            (CallKind::Release(_), Some(ApiReply::Conflict))
                if self.release_deadline > env.mono() =>
            {
                self.send(env, CallKind::ReleaseGet);
                None
            }
            (CallKind::Release(_), _) => self.release_done(),
        }
    }

    /// `release()`: `tryRelease` under a context of RenewDeadline
    /// (`leaderelection.go`, `release`/`tryRelease`).
    fn start_release(&mut self, env: &mut impl Host<Msg, ElectorTimer>, notify: bool, lost: bool) {
        self.stage = Stage::Releasing { notify, lost };
        self.release_deadline = env.mono() + self.timing().renew_deadline;
        self.send(env, CallKind::ReleaseGet);
    }

    /// `release()` returned.
    fn release_done(&mut self) -> Option<LockSignal> {
        let Stage::Releasing { notify, lost } = self.stage else {
            return None;
        };
        self.stage = Stage::Idle;
        if lost {
            let holding = std::mem::take(&mut self.holding);
            return holding.then_some(LockSignal::Lost);
        }
        notify.then_some(LockSignal::Released)
    }

    /// `tryAcquireOrRenew` returned `ok` (with the object written when it did).
    fn try_done(
        &mut self,
        env: &mut impl Host<Msg, ElectorTimer>,
        ok: bool,
        obj: LeaseObject,
    ) -> Option<LockSignal> {
        let t = self.timing();
        match self.stage {
            Stage::Candidate if ok => {
                env.observe(Observation::Count("renewed"));
                env.mark("renewed");
                let record = obj.record;
                let token = match self.config.fencing {
                    TokenFrom::None => None,
                    TokenFrom::Transitions => Some(record.transitions),
                    TokenFrom::ResourceVersion => Some(obj.rv),
                };
                self.stage = Stage::Leader;
                self.holding = true;
                self.start_poll(env);
                Some(LockSignal::Granted {
                    token,
                    ticket: Some(record.transitions),
                })
            }
            Stage::Candidate => {
                let jitter = env
                    .rng()
                    .below(t.retry_period.as_nanos() * JITTER_PERCENT / 100);
                let generation = self.generation;
                env.set_timer(
                    ClockKind::Mono,
                    t.retry_period + Dur::from_nanos(jitter),
                    ElectorTimer::Next { generation },
                );
                None
            }
            Stage::Leader if ok => {
                env.observe(Observation::Count("renewed"));
                env.mark("renewed");
                // The poll succeeded: the next one RetryPeriod after this returned.
                self.generation += 1;
                let generation = self.generation;
                env.set_timer(
                    ClockKind::Mono,
                    t.retry_period,
                    ElectorTimer::Next { generation },
                );
                self.poll_deadline = LocalTime::from_nanos(i64::MAX);
                None
            }
            // The poll's next attempt is its ticker's: a tick that passed during the attempt
            // is pending (Go's ticker keeps one and drops the rest), so at once; else at the
            // next tick.
            Stage::Leader => {
                let now = env.mono();
                let rp = t.retry_period;
                let passed = now.saturating_since(self.poll_start).as_nanos() / rp.as_nanos();
                let delay = if passed > self.poll_ticks {
                    self.poll_ticks = passed;
                    Dur::ZERO
                } else {
                    self.poll_ticks += 1;
                    (self.poll_start + rp * self.poll_ticks).saturating_since(now)
                };
                let generation = self.generation;
                env.set_timer(ClockKind::Mono, delay, ElectorTimer::Next { generation });
                None
            }
            Stage::Idle | Stage::Releasing { .. } => None,
        }
    }

    /// A renew poll starts: its deadline, and its first attempt at once.
    fn start_poll(&mut self, env: &mut impl Host<Msg, ElectorTimer>) {
        self.generation += 1;
        let generation = self.generation;
        let rd = self.timing().renew_deadline;
        self.poll_start = env.mono();
        self.poll_ticks = 0;
        self.poll_deadline = env.mono() + rd;
        env.set_timer(
            ClockKind::Mono,
            rd,
            ElectorTimer::RenewDeadline { generation },
        );
        self.start_try(env);
    }

    /// The renew poll ran out: stop leading. Under `ReleaseOnCancel`, `renew` releases
    /// before it returns, and the workload learns it lost the lease only then.
    fn give_up(&mut self, env: &mut impl Host<Msg, ElectorTimer>) -> Option<LockSignal> {
        self.generation += 1;
        self.call = None;
        self.stage = Stage::Idle;
        if self.config.release_on_cancel {
            self.start_release(env, false, true);
            return None;
        }
        let holding = std::mem::take(&mut self.holding);
        holding.then_some(LockSignal::Lost)
    }
}

/// A record as `observedRawRecord` compares it: `LeaseLock.Get` marshals
/// `LeaseSpecToLeaderElectionRecord(&lease.Spec)` (`resourcelock/leaselock.go`), whose
/// `acquireTime` and `renewTime` are `metav1.Time`, written as RFC 3339 without fractions
/// (apimachinery `pkg/apis/meta/v1/time.go`, `MarshalJSON`): whole seconds.
pub fn raw(record: LeaseRecord) -> LeaseRecord {
    LeaseRecord {
        acquire_us: record.acquire_us / 1_000_000 * 1_000_000,
        renew_us: record.renew_us / 1_000_000 * 1_000_000,
        ..record
    }
}

/// The leader-election client's HTTP `Timeout`: `resourcelock.NewFromKubeconfig` sets
/// `max(1 s, RenewDeadline / 2)` (`resourcelock/interface.go`, "Timeout set for a client used
/// to contact to Kubernetes should be lower than RenewDeadline to keep a single hung request
/// from forcing a leader loss"), which kube-controller-manager and kube-scheduler use
/// (`cmd/kube-controller-manager/app/controllermanager.go`, `leaderElectAndRun`).
pub fn http_timeout(renew_deadline: Dur) -> Dur {
    (renew_deadline / 2).max(Dur::from_secs(1))
}

/// `N` of a node named `client-N`.
pub fn client_number(name: &str) -> Option<u32> {
    name.strip_prefix("client-")?.parse().ok()
}

fn wall_us(env: &impl Host<Msg, ElectorTimer>) -> u64 {
    u64::try_from(env.wall().as_nanos() / 1_000).unwrap_or(0)
}

impl LockClient for Elector {
    type Msg = Msg;
    type Timer = ElectorTimer;
    type Resource = NoResource;

    /// One lock only: the loader refuses the `keys` workload's many locks for Kubernetes.
    fn select(&mut self, lock: u32) {
        assert_eq!(lock, 0, "Kubernetes takes one lock");
    }

    fn acquire(&mut self, env: &mut impl Host<Msg, ElectorTimer>) -> Option<LockSignal> {
        self.me(env);
        // `Run` again: a new leading context; a release still in flight is abandoned.
        self.generation += 1;
        self.call = None;
        self.stage = Stage::Candidate;
        self.start_try(env);
        None
    }

    fn release(&mut self, env: &mut impl Host<Msg, ElectorTimer>) -> Option<LockSignal> {
        self.holding = false;
        if self.stage != Stage::Leader {
            return Some(LockSignal::Released);
        }
        self.generation += 1;
        self.call = None;
        self.stage = Stage::Idle;
        if self.config.release_on_cancel {
            self.start_release(env, true, false);
            return None;
        }
        Some(LockSignal::Released)
    }

    fn valid(&self, _: &impl Host<Msg, ElectorTimer>) -> bool {
        self.leading()
    }

    fn reset(&mut self) {
        let incarnation = self.incarnation + 1;
        *self = Elector::new(self.config.clone());
        self.incarnation = incarnation;
    }

    fn on_message(
        &mut self,
        env: &mut impl Host<Msg, ElectorTimer>,
        _from: NodeId,
        msg: Msg,
    ) -> Option<LockSignal> {
        let Msg::ApiReply { id, reply } = msg else {
            unreachable!("an elector was sent {msg:?}");
        };
        let call = self.call.filter(|c| c.id == id)?;
        self.on_answer(env, call.kind, Some(reply))
    }

    /// The connection to the API server of the call in flight was reset (it crashed, or
    /// refused the call): the call fails at once at the transport, as at its timeout, and
    /// the elector moves to the next API server (an HTTP request on a dead connection, or a
    /// refused connect, errors without waiting for the client's `Timeout`).
    fn on_reset(
        &mut self,
        env: &mut impl Host<Msg, ElectorTimer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        let call = self.call?;
        if self.config.apiservers[self.api] != peer {
            return None;
        }
        self.on_answer(env, call.kind, None)
    }

    fn on_timer(
        &mut self,
        env: &mut impl Host<Msg, ElectorTimer>,
        timer: ElectorTimer,
    ) -> Option<LockSignal> {
        match timer {
            ElectorTimer::Call { id } => {
                let call = self.call.filter(|c| c.id == id)?;
                self.on_answer(env, call.kind, None)
            }
            ElectorTimer::Next { generation } if generation == self.generation => {
                match self.stage {
                    Stage::Candidate => self.start_try(env),
                    Stage::Leader if self.call.is_none() => {
                        if self.poll_deadline == LocalTime::from_nanos(i64::MAX) {
                            self.start_poll(env);
                        } else {
                            self.start_try(env);
                        }
                    }
                    _ => {}
                }
                None
            }
            ElectorTimer::RenewDeadline { generation }
                if generation == self.generation && self.stage == Stage::Leader =>
            {
                self.give_up(env)
            }
            ElectorTimer::Next { .. } | ElectorTimer::RenewDeadline { .. } => None,
        }
    }

    fn resource_op(
        &mut self,
        _: &mut impl Host<Msg, ElectorTimer>,
        resource: &NoResource,
        _: StorageRequest,
    ) {
        match *resource {}
    }
}
