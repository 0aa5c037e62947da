//! Redlock: one lock over N independent Redis instances (the Redis distlock page), in the two
//! flavours people run.
//!
//! - **antirez** (`antirez/redlock-rb`, the reference the distlock page links): instances are
//!   tried one after another, each with its own timeout; 3 tries with `rand(200)` ms between
//!   them (also after the last); elapsed time and validity on the client's WALL clock in whole
//!   milliseconds: `drift = floor(ttl * 0.01) + 2 ms`, `validity = ttl - elapsed - drift`,
//!   success iff `n >= quorum && validity > 0`; on failure it unlocks every instance, one by
//!   one, best effort.
//! - **redsync** (`go-redsync/redsync` v4): all instances at once under one deadline of
//!   `ttl * 0.05` per try; 32 tries with `50 + rand(200)` ms before every try but the first;
//!   Go's MONO clock: `until = start + ttl - ttl * 0.01`, success iff `n >= quorum && now <
//!   until`; on failure it releases on every instance under the same deadline.
//!
//! Both keep one random value for all tries of one acquisition. With the elapsed-time check
//! off (the naive client of K6, docs/catalogue.md) a quorum of OKs is success whatever time
//! has passed, and the lease is counted from the moment the last reply was read. Extension
//! sends the compare-and-pexpire script to every instance at once and counts only with a
//! quorum.

pub mod family;

pub use family::Redlock;

use lockstep_sim::{ClockKind, Dur, LocalTime, NodeId, TimerId};

use crate::env::Host;
use crate::lock::{LockClient, LockSignal, NoResource};
use crate::observe::{ACQUIRE_REQUESTS, Observation};
use crate::redis::{Command, Key, LOCK_KEY, LockTimer, Msg, Reply, lock_key};
use crate::storage::StorageRequest;

/// Which client library's algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavour {
    /// `antirez/redlock-rb`: sequential, client WALL clock, whole milliseconds.
    Antirez,
    /// `go-redsync/redsync` v4: parallel, client MONO clock, nanoseconds.
    Redsync,
}

/// How a Redlock client is set up. [`RedlockConfig::antirez`] and [`RedlockConfig::redsync`]
/// give each library's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedlockConfig {
    /// The instances, in the order the client tries them.
    pub servers: Vec<NodeId>,
    /// The lock's time to live.
    pub ttl: Dur,
    /// Sequential (antirez) or parallel (redsync), and the arithmetic of the validity.
    pub flavour: Flavour,
    /// The clock elapsed time and validity are measured on.
    pub clock: ClockKind,
    /// antirez: how long one instance may take to answer; redsync: one whole try.
    pub timeout: Dur,
    /// Tries per acquisition (at least 1).
    pub tries: u32,
    /// The delay between tries: a whole number of milliseconds, uniform in `lo..hi`.
    pub retry_delay_ms: (u64, u64),
    /// The clock-drift allowance, in ppm of the TTL.
    pub drift_factor_ppm: u32,
    /// Check the elapsed time (the validity) after a try; off is the naive client of K6.
    pub elapsed_check: bool,
    /// Extend the lease every `ttl / 3` while held.
    pub extend: bool,
    /// Hand the random value to the workload as its token (compare-and-set on the resource,
    /// K7 in docs/catalogue.md). It is not a fencing token: it does not increase.
    pub value_as_token: bool,
    /// Count each round of an acquisition as an acquire request (the herd figure).
    pub count_requests: bool,
}

impl RedlockConfig {
    /// The reference client's defaults (`redlock.rb`): 3 tries, `rand(200)` ms apart, drift
    /// factor 0.01, client WALL clock. The per-instance timeout is the distlock page's "5-50
    /// milliseconds" for a 10 s TTL, at its upper end.
    pub fn antirez(servers: Vec<NodeId>, ttl: Dur) -> RedlockConfig {
        RedlockConfig {
            servers,
            ttl,
            flavour: Flavour::Antirez,
            clock: ClockKind::Wall,
            timeout: Dur::from_millis(50),
            tries: 3,
            retry_delay_ms: (0, 200),
            drift_factor_ppm: 10_000,
            elapsed_check: true,
            extend: false,
            value_as_token: false,
            count_requests: false,
        }
    }

    /// redsync v4's defaults: 32 tries, `rand.Intn(200) + 50` ms apart, drift factor 0.01,
    /// timeout factor 0.05 of the TTL per try, Go's MONO clock.
    pub fn redsync(servers: Vec<NodeId>, ttl: Dur) -> RedlockConfig {
        RedlockConfig {
            servers,
            ttl,
            flavour: Flavour::Redsync,
            clock: ClockKind::Mono,
            timeout: ttl.mul_div(50_000, 1_000_000),
            tries: 32,
            retry_delay_ms: (50, 250),
            drift_factor_ppm: 10_000,
            elapsed_check: true,
            extend: false,
            value_as_token: false,
            count_requests: false,
        }
    }

    /// `N / 2 + 1`.
    pub fn quorum(&self) -> usize {
        self.servers.len() / 2 + 1
    }

    /// The drift allowance: antirez `floor(ttl_ms * factor) + 2` ms ("1 ms Redis expire
    /// precision + 1 ms min drift"); redsync `ttl * factor`, truncated to nanoseconds.
    pub fn drift(&self) -> Dur {
        match self.flavour {
            Flavour::Antirez => {
                let ms = self.ttl.as_millis() * u64::from(self.drift_factor_ppm) / 1_000_000;
                Dur::from_millis(ms + 2)
            }
            Flavour::Redsync => self
                .ttl
                .mul_div(u64::from(self.drift_factor_ppm), 1_000_000),
        }
    }

    /// The end of the lease of a try that started at `start` and ended at `now` (both on the
    /// client's clock), or `None` when the try does not count: the validity rule of the
    /// flavour, or with the elapsed check off, `now + ttl - drift` always.
    pub fn lease_end(&self, start: LocalTime, now: LocalTime) -> Option<LocalTime> {
        let lease = self.ttl.saturating_sub(self.drift());
        if !self.elapsed_check {
            return Some(now + lease);
        }
        match self.flavour {
            Flavour::Antirez => {
                // validity_time = ttl - (now_ms - start_ms) - drift, in whole milliseconds.
                let elapsed_ms = now.as_millis() - start.as_millis();
                let validity_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX) - elapsed_ms;
                (validity_ms > 0).then(|| now + Dur::from_millis(validity_ms as u64))
            }
            Flavour::Redsync => {
                // until = now + (ttl - (now - start) - drift) = start + ttl - drift.
                let until = start + lease;
                (now < until).then_some(until)
            }
        }
    }
}

/// What a round of requests is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    /// `SET NX PX` on every instance: one try of an acquisition.
    Acquire,
    /// Undo a failed try, then back off or give up.
    Unlock,
    /// Extend a held lease.
    Extend,
    /// Release a held lease.
    Release,
}

/// One command sent to every instance: sequentially (antirez) or all at once (redsync).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Round {
    purpose: Purpose,
    /// When it started, on the client's lease clock.
    start: LocalTime,
    /// Per instance: the request awaiting its reply.
    pending: Vec<Option<u64>>,
    /// Sequential rounds: the next instance to ask.
    next: usize,
    /// Instances that said yes.
    ok: usize,
    /// The round's deadline (parallel) or the current instance's (sequential).
    timer: Option<TimerId>,
    /// The deadline timer's id (parallel) or the current request's (sequential).
    deadline: u64,
}

impl Round {
    /// Moves the round out, leaving a husk with no requests (and no allocation) in its place.
    fn take(&mut self) -> Round {
        let husk = Round {
            pending: Vec::new(),
            timer: None,
            ..*self
        };
        std::mem::replace(self, husk)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// A try is in flight (`try_` from 1).
    Acquiring {
        try_: u32,
        round: Round,
    },
    /// Undoing try `try_`.
    Unlocking {
        try_: u32,
        round: Round,
    },
    /// Waiting before try `try_ + 1`, or before giving up after the last.
    Backoff {
        try_: u32,
    },
    /// Held until `until` on the lease clock.
    Held {
        until: LocalTime,
        extending: Option<Round>,
    },
    /// Releasing on every instance.
    Releasing {
        round: Round,
    },
}

/// The round `state` is in, if any.
fn round_of(state: &mut State) -> Option<&mut Round> {
    match state {
        State::Acquiring { round, .. }
        | State::Unlocking { round, .. }
        | State::Releasing { round }
        | State::Held {
            extending: Some(round),
            ..
        } => Some(round),
        _ => None,
    }
}

/// The Redlock client's state machine, embedded in a workload client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedlockClient {
    config: RedlockConfig,
    state: State,
    /// The random value of the current acquisition, kept for all its tries.
    value: u64,
    next_req: u64,
    /// The lock's key on every instance: [`LOCK_KEY`] unless the workload selected another.
    key: Key,
    /// The allocation of the last finished round's requests, empty, for the next round: a
    /// client starts a round per try, renewal and release, and allocating each one's vector
    /// afresh was a visible share of a Redlock sweep.
    spare: Vec<Option<u64>>,
}

impl RedlockClient {
    /// An idle client.
    ///
    /// # Panics
    /// Without instances or tries; the scenario loader rejects both.
    pub fn new(config: RedlockConfig) -> RedlockClient {
        assert!(!config.servers.is_empty(), "Redlock needs instances");
        assert!(config.tries > 0, "Redlock needs at least one try");
        RedlockClient {
            config,
            state: State::Idle,
            value: 0,
            next_req: 0,
            key: LOCK_KEY,
            spare: Vec::new(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &RedlockConfig {
        &self.config
    }

    pub(crate) fn on_reply(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        id: u64,
        reply: Reply,
    ) -> Option<LockSignal> {
        let round = self.round_mut()?;
        // Request ids are unique, so the id alone names the instance; a reply the client
        // stopped waiting for matches nothing.
        let i = round.pending.iter().position(|p| *p == Some(id))?;
        round.pending[i] = None;
        let yes = match round.purpose {
            Purpose::Acquire => reply == Reply::Ok,
            Purpose::Unlock | Purpose::Release | Purpose::Extend => reply == Reply::Int(1),
        };
        if yes {
            round.ok += 1;
        }
        self.step(ctx)
    }

    fn round_mut(&mut self) -> Option<&mut Round> {
        round_of(&mut self.state)
    }

    fn start_try(&mut self, ctx: &mut impl Host<Msg, LockTimer>, try_: u32) {
        if self.config.count_requests {
            ctx.observe(Observation::Count(ACQUIRE_REQUESTS));
        }
        let round = self.start_round(ctx, Purpose::Acquire);
        self.state = State::Acquiring { try_, round };
        ctx.mark("acquire-sent");
    }

    /// Sends a round's first request (antirez) or all of them (redsync), in the allocation
    /// of the last finished round's requests if there is one.
    fn start_round(&mut self, ctx: &mut impl Host<Msg, LockTimer>, purpose: Purpose) -> Round {
        let n = self.config.servers.len();
        let mut pending = std::mem::take(&mut self.spare);
        pending.resize(n, None);
        let mut round = Round {
            purpose,
            start: ctx.clock(self.config.clock),
            pending,
            next: 0,
            ok: 0,
            timer: None,
            deadline: 0,
        };
        match self.config.flavour {
            Flavour::Antirez => self.send_next(ctx, &mut round),
            Flavour::Redsync => {
                for i in 0..n {
                    round.pending[i] = Some(self.send(ctx, i, purpose));
                }
                self.arm(ctx, &mut round);
            }
        }
        round
    }

    /// Sequential rounds: asks the next instance, under its own timeout.
    fn send_next(&mut self, ctx: &mut impl Host<Msg, LockTimer>, round: &mut Round) {
        let i = round.next;
        round.next += 1;
        round.pending[i] = Some(self.send(ctx, i, round.purpose));
        self.arm(ctx, round);
    }

    fn arm(&mut self, ctx: &mut impl Host<Msg, LockTimer>, round: &mut Round) {
        if let Some(t) = round.timer.take() {
            ctx.cancel_timer(t);
        }
        self.next_req += 1;
        round.deadline = self.next_req;
        let timer = LockTimer::Timeout {
            req: round.deadline,
        };
        round.timer = Some(ctx.set_timer(ClockKind::Mono, self.config.timeout, timer));
    }

    fn send(&mut self, ctx: &mut impl Host<Msg, LockTimer>, i: usize, purpose: Purpose) -> u64 {
        let value = self.value;
        let cmd = match purpose {
            Purpose::Acquire => Command::SetNxPx {
                key: self.key,
                value,
                ttl: self.config.ttl,
            },
            Purpose::Unlock | Purpose::Release => Command::CompareAndDelete {
                key: self.key,
                value,
            },
            Purpose::Extend => Command::CompareAndPexpire {
                key: self.key,
                value,
                ttl: self.config.ttl,
            },
        };
        self.next_req += 1;
        let id = self.next_req;
        ctx.send(self.config.servers[i], Msg::Command { id, cmd });
        id
    }

    /// Moves the current round on after a reply or a timeout: the next instance, or the end.
    fn step(&mut self, ctx: &mut impl Host<Msg, LockTimer>) -> Option<LockSignal> {
        let flavour = self.config.flavour;
        let n = self.config.servers.len();
        let round = self.round_mut()?;
        if round.pending.iter().any(Option::is_some) {
            return None; // Still waiting (parallel).
        }
        // The round leaves the state while the client sends (an empty husk stays, without
        // allocation), and goes back, or is judged.
        let mut round = round.take();
        if flavour == Flavour::Antirez && round.next < n {
            self.send_next(ctx, &mut round);
            *self.round_mut().expect("in a round") = round;
            return None;
        }
        if let Some(t) = round.timer.take() {
            ctx.cancel_timer(t);
        }
        self.finish(ctx, round)
    }

    /// Every instance answered or timed out: judge the round.
    fn finish(&mut self, ctx: &mut impl Host<Msg, LockTimer>, round: Round) -> Option<LockSignal> {
        let mut pending = round.pending;
        pending.clear();
        self.spare = pending;
        let now = ctx.clock(self.config.clock);
        let quorum = round.ok >= self.config.quorum();
        match (&self.state, round.purpose) {
            (State::Acquiring { try_, .. }, Purpose::Acquire) => {
                let try_ = *try_;
                match self.config.lease_end(round.start, now).filter(|_| quorum) {
                    Some(until) => {
                        self.hold(ctx, until);
                        let token = self.config.value_as_token.then_some(self.value);
                        Some(LockSignal::Granted {
                            token,
                            ticket: None,
                        })
                    }
                    None => {
                        let round = self.start_round(ctx, Purpose::Unlock);
                        self.state = State::Unlocking { try_, round };
                        None
                    }
                }
            }
            (State::Unlocking { try_, .. }, Purpose::Unlock) => {
                let try_ = *try_;
                self.backoff(ctx, try_)
            }
            (State::Held { .. }, Purpose::Extend) => {
                match self.config.lease_end(round.start, now).filter(|_| quorum) {
                    Some(until) => {
                        self.hold(ctx, until);
                        None
                    }
                    None => {
                        self.state = State::Idle;
                        Some(LockSignal::Lost)
                    }
                }
            }
            (State::Releasing { .. }, Purpose::Release) => {
                self.state = State::Idle;
                Some(LockSignal::Released)
            }
            (state, purpose) => unreachable!("a {purpose:?} round in {state:?}"),
        }
    }

    fn hold(&mut self, ctx: &mut impl Host<Msg, LockTimer>, until: LocalTime) {
        self.state = State::Held {
            until,
            extending: None,
        };
        if self.config.extend {
            let value = self.value;
            ctx.set_timer(
                ClockKind::Mono,
                self.config.ttl / 3,
                LockTimer::Renew { value },
            );
        }
    }

    /// After a failed try: antirez sleeps `rand(200)` ms even after its last try; redsync
    /// gives up at once after its last.
    fn backoff(&mut self, ctx: &mut impl Host<Msg, LockTimer>, try_: u32) -> Option<LockSignal> {
        if try_ >= self.config.tries && self.config.flavour == Flavour::Redsync {
            self.state = State::Idle;
            return Some(LockSignal::AcquireFailed);
        }
        let (lo, hi) = self.config.retry_delay_ms;
        let ms = if hi > lo {
            lo + ctx.rng().below(hi - lo)
        } else {
            lo
        };
        ctx.set_timer(ClockKind::Mono, Dur::from_millis(ms), LockTimer::Retry);
        self.state = State::Backoff { try_ };
        None
    }
}

impl LockClient for RedlockClient {
    type Msg = Msg;
    type Timer = LockTimer;
    type Resource = NoResource;

    fn select(&mut self, lock: u32) {
        self.key = lock_key(lock);
    }

    fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        _from: NodeId,
        msg: Msg,
    ) -> Option<LockSignal> {
        match msg {
            Msg::Reply { id, reply } => self.on_reply(ctx, id, reply),
            // Redlock's instances have no sentinels and send only replies.
            msg => unreachable!("a Redlock client was sent {msg:?}"),
        }
    }

    fn resource_op(
        &mut self,
        _: &mut impl Host<Msg, LockTimer>,
        resource: &NoResource,
        _: StorageRequest,
    ) {
        match *resource {}
    }

    fn acquire(&mut self, ctx: &mut impl Host<Msg, LockTimer>) -> Option<LockSignal> {
        assert_eq!(self.state, State::Idle, "acquire while not idle");
        self.value = ctx.rng().next_u64();
        self.start_try(ctx, 1);
        None
    }

    fn release(&mut self, ctx: &mut impl Host<Msg, LockTimer>) -> Option<LockSignal> {
        if !matches!(self.state, State::Held { .. }) {
            self.state = State::Idle;
            return Some(LockSignal::Released);
        }
        let round = self.start_round(ctx, Purpose::Release);
        self.state = State::Releasing { round };
        None
    }

    fn valid(&self, ctx: &impl Host<Msg, LockTimer>) -> bool {
        matches!(self.state, State::Held { until, .. } if ctx.clock(self.config.clock) < until)
    }

    fn reset(&mut self) {
        self.state = State::Idle;
    }

    /// The connection to instance `peer` was reset (it crashed, or refused the request): its
    /// request in flight counts as failed now, as at its timeout, and the round moves on (the
    /// client's command on a dead connection errors at once: redlock-rb rescues the error
    /// and counts the instance as not locked, redsync's goroutine returns it).
    fn on_reset(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        let servers = &self.config.servers;
        let round = round_of(&mut self.state)?;
        let i = servers
            .iter()
            .zip(&round.pending)
            .position(|(&s, p)| s == peer && p.is_some())?;
        round.pending[i] = None;
        self.step(ctx)
    }

    fn on_timer(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        timer: LockTimer,
    ) -> Option<LockSignal> {
        match (&self.state, timer) {
            (State::Backoff { try_ }, LockTimer::Retry) => {
                let try_ = *try_;
                if try_ >= self.config.tries {
                    self.state = State::Idle;
                    return Some(LockSignal::AcquireFailed);
                }
                self.start_try(ctx, try_ + 1);
                None
            }
            (
                State::Held {
                    extending: None, ..
                },
                LockTimer::Renew { value },
            ) if value == self.value => {
                let round = self.start_round(ctx, Purpose::Extend);
                if let State::Held { extending, .. } = &mut self.state {
                    *extending = Some(round);
                }
                None
            }
            (_, LockTimer::Timeout { req }) => {
                let flavour = self.config.flavour;
                let round = self.round_mut()?;
                if round.deadline != req {
                    return None;
                }
                round.timer = None;
                // Whatever has not answered by the deadline counts as a failure.
                match flavour {
                    Flavour::Antirez => {
                        let i = round.next - 1;
                        round.pending[i] = None;
                    }
                    Flavour::Redsync => round.pending.iter_mut().for_each(|p| *p = None),
                }
                self.step(ctx)
            }
            _ => None, // A timer of a state the client has left.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn five() -> Vec<NodeId> {
        (0..5).map(NodeId).collect()
    }

    fn ms(v: i64) -> LocalTime {
        LocalTime::from_millis(v)
    }

    #[test]
    fn antirez_defaults_follow_redlock_rb() {
        let c = RedlockConfig::antirez(five(), Dur::from_secs(10));
        assert_eq!(c.quorum(), 3);
        assert_eq!(c.tries, 3);
        assert_eq!(c.retry_delay_ms, (0, 200));
        assert_eq!(c.clock, ClockKind::Wall);
        assert_eq!(c.flavour, Flavour::Antirez);
        // drift = (10000 * 0.01).to_i + 2 = 102 ms.
        assert_eq!(c.drift(), Dur::from_millis(102));
        // A 1234 ms TTL: floor(12.34) + 2 = 14 ms.
        let c = RedlockConfig::antirez(five(), Dur::from_millis(1234));
        assert_eq!(c.drift(), Dur::from_millis(14));
    }

    #[test]
    fn antirez_validity_is_ttl_minus_elapsed_minus_drift_in_whole_ms() {
        let c = RedlockConfig::antirez(five(), Dur::from_secs(10));
        // 10000 - 250 - 102 = 9648 ms of validity left at `now`.
        let start = ms(1_000);
        let now = ms(1_250);
        assert_eq!(c.lease_end(start, now), Some(now + Dur::from_millis(9_648)));
        // Readings are truncated to ms first: 0.9 ms elapsed counts as 0 or 1 by the ms edge.
        let start = LocalTime::from_nanos(1_000_999_999);
        let now = LocalTime::from_nanos(1_001_000_000);
        assert_eq!(c.lease_end(start, now), Some(now + Dur::from_millis(9_897)));
        // validity_time > 0 is required: exactly zero fails.
        assert_eq!(c.lease_end(ms(0), ms(9_898)), None);
        assert_eq!(
            c.lease_end(ms(0), ms(9_897)),
            Some(ms(9_897) + Dur::from_millis(1))
        );
        // A backward WALL step makes elapsed negative and inflates the validity (redlock-rb
        // times its tries on `Time.now`, the client's wall clock).
        assert_eq!(
            c.lease_end(ms(5_000), ms(3_000)),
            Some(ms(3_000) + Dur::from_millis(11_898))
        );
    }

    #[test]
    fn redsync_defaults_follow_redsync_v4() {
        let c = RedlockConfig::redsync(five(), Dur::from_secs(8));
        assert_eq!(c.quorum(), 3);
        assert_eq!(c.tries, 32);
        // rand.Intn(200) + 50: 50..=249 ms.
        assert_eq!(c.retry_delay_ms, (50, 250));
        assert_eq!(c.clock, ClockKind::Mono);
        // expiry * timeoutFactor = 400 ms; expiry * driftFactor = 80 ms.
        assert_eq!(c.timeout, Dur::from_millis(400));
        assert_eq!(c.drift(), Dur::from_millis(80));
    }

    #[test]
    fn redsync_until_is_start_plus_ttl_minus_drift() {
        let c = RedlockConfig::redsync(five(), Dur::from_secs(8));
        let start = LocalTime::from_nanos(5_000_000_123);
        let until = start + Dur::from_millis(7_920);
        assert_eq!(
            c.lease_end(start, start + Dur::from_millis(30)),
            Some(until)
        );
        // now.Before(until) is strict.
        assert_eq!(c.lease_end(start, until), None);
    }

    #[test]
    fn without_the_elapsed_check_a_late_quorum_still_counts() {
        let mut c = RedlockConfig::redsync(five(), Dur::from_secs(8));
        c.elapsed_check = false;
        let start = ms(0);
        let now = ms(20_000);
        assert_eq!(c.lease_end(start, now), Some(now + Dur::from_millis(7_920)));
        assert_eq!(c.quorum(), 3);
        let three = RedlockConfig::redsync((0..3).map(NodeId).collect(), Dur::from_secs(8));
        assert_eq!(three.quorum(), 2);
        let four = RedlockConfig::redsync((0..4).map(NodeId).collect(), Dur::from_secs(8));
        assert_eq!(four.quorum(), 3);
    }
}
