//! The Redis lock client: `SET NX PX` with retries, validity on the client's monotonic clock,
//! renewal at TTL/3 with the compare-and-pexpire script ([`Renew`]), release with
//! compare-and-delete or (the gotcha the Redis distlock page warns of) a plain `DEL`, and an
//! optional `INCR` fencing token.
//!
//! With Sentinel, the client asks the sentinels where the primary is before its first
//! acquisition and again after a request timed out or a server answered `-READONLY`, and keeps
//! talking to the primary it knows otherwise (what Jedis' and Redisson's sentinel pools do).
//! It asks every sentinel at once and believes the first answer.
//!
//! With `WAIT` (what Redisson does since it deprecated its RedLock), the client sends `WAIT n
//! timeout` after a successful `SET NX`; fewer than `n` acknowledging replicas is a failed
//! acquisition: the client deletes its key (compare-and-delete, best effort) and retries.
//! `WAIT` narrows the failover window of the distlock page (R1, docs/catalogue.md) but does
//! not close it: the write is not rolled back, and a partitioned primary still acknowledges
//! its side's writes.
//!
//! The client cannot see the server's clock. It counts its lease from the moment it *sent* the
//! `SET` (the earliest the server can have started the TTL), minus a drift margin, on its own
//! monotonic clock: `validity_end = sent + ttl - (ttl * drift_factor + 2 ms)`, the formula of
//! redlock-rb (`redlock.rb`) applied to one instance.

use lockstep_sim::{ClockKind, Distribution, Dur, LocalTime, NodeId, TimerId};

use super::Msg;
use super::sentinel::SentinelMsg;
use super::{Command, FENCE_KEY, Key, LOCK_KEY, Reply, lock_key};
use crate::env::Host;
use crate::lock::{Access, LockClient, LockSignal, NoResource};
use crate::observe::{ACQUIRE_REQUESTS, Observation};
use crate::storage::StorageRequest;

/// How the client releases the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Release {
    /// The Lua script `if GET == value then DEL`: only the owner's key is deleted.
    CompareAndDelete,
    /// A plain `DEL`: deletes whoever's key is there (the distlock page: "Using just `DEL` is
    /// not safe as a client may remove another client's lock").
    Del,
}

/// How the client renews its lease while it holds the lock: every `ttl / 3` on its monotonic
/// clock, with the compare-and-pexpire script. A renewal that succeeds extends the client's
/// validity to `ttl` (less the drift margin) from when it was sent. The modes differ in what a
/// renewal that fails does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Renew {
    /// No renewal: the lease ends with its TTL.
    #[default]
    Off,
    /// Keep renewing through failures: a renewal that timed out or met `-READONLY` is tried
    /// again `ttl / 3` later, and one refused (the key expired or is someone else's) ends
    /// the critical section with [`LockSignal::Lost`].
    UntilRefused,
    /// Redisson's watchdog (`RedissonBaseLock.renewExpiration`): the first renewal that does
    /// not succeed, whether an error (a timeout, `-READONLY`) or a refusal, stops the
    /// renewals for good ("Can't update lock expiration" is logged, or the renewal is
    /// cancelled), and the holder is never told: it keeps working on a lease that may have
    /// run out, and its own validity stays that of the last successful renewal.
    Watchdog,
}

/// `WAIT` after each acquisition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WaitConfig {
    /// Replicas that must acknowledge the `SET`.
    pub replicas: u32,
    /// `WAIT`'s timeout.
    pub timeout: Dur,
}

/// How a Redis lock client is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisLockConfig {
    /// The Redis server (the primary at start); unused when there are sentinels.
    pub server: NodeId,
    /// The sentinels to ask where the primary is; empty without Sentinel.
    pub sentinels: Vec<NodeId>,
    /// Send `WAIT` after each `SET NX`, and count the acquisition only if enough replicas
    /// acknowledged it.
    pub wait: Option<WaitConfig>,
    /// The lock's time to live (`PX`).
    pub ttl: Dur,
    /// How the client releases.
    pub release: Release,
    /// How the lease is renewed while held.
    pub renew: Renew,
    /// Take a fencing token from `INCR` on a counter key after each acquisition.
    pub fencing: bool,
    /// With `fencing`: take the token in the same atomic script as the `SET NX`
    /// ([`Command::SetNxIncr`]) instead of a separate `INCR` after it, so tokens follow the
    /// order the server granted the lock in.
    pub fence_atomically: bool,
    /// How long the client waits for a reply before it treats the command as failed.
    pub request_timeout: Dur,
    /// The delay between failed acquisition attempts.
    pub retry_delay: Distribution,
    /// Attempts per acquisition before giving up; 0 retries forever.
    pub acquire_tries: u32,
    /// The clock-drift allowance, in ppm of the TTL (redlock-rb's factor 0.01 is 10,000).
    pub drift_factor_ppm: u32,
    /// Count each `SET NX` as an acquire request (the herd figure).
    pub count_requests: bool,
}

impl RedisLockConfig {
    /// The margin subtracted from the TTL for the client's validity: `ttl * factor + 2 ms`.
    pub fn drift_margin(&self) -> Dur {
        self.ttl
            .mul_div(u64::from(self.drift_factor_ppm), 1_000_000)
            + Dur::from_millis(2)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// Asking the sentinels where the primary is, before attempt `attempt`.
    Discovering {
        req: u64,
        attempt: u32,
    },
    /// `SET NX PX` sent.
    Acquiring {
        req: u64,
        attempt: u32,
        sent: LocalTime,
        value: u64,
    },
    /// Waiting for the retry delay after a failed attempt.
    Backoff {
        attempt: u32,
    },
    /// The key is set; `WAIT` sent.
    Waiting {
        req: u64,
        attempt: u32,
        sent: LocalTime,
        value: u64,
    },
    /// The key is set; `INCR` sent for the token.
    Fencing {
        req: u64,
        attempt: u32,
        sent: LocalTime,
        value: u64,
    },
    /// Held until `validity_end` on the client's monotonic clock, unless renewed.
    Held {
        value: u64,
        validity_end: LocalTime,
        renewing: Option<(u64, LocalTime)>,
    },
    /// The release command is in flight.
    Releasing {
        req: u64,
    },
}

/// Timers of a Redis or Redlock lock client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockTimer {
    /// The reply to request `req` is overdue.
    Timeout {
        /// The request.
        req: u64,
    },
    /// Try acquiring again.
    Retry,
    /// Renew the lease held under `value`; a renewal timer of an earlier lease is ignored.
    Renew {
        /// The lock value of the lease it renews.
        value: u64,
    },
}

/// The lock client's state machine, embedded in a workload client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisLock {
    config: RedisLockConfig,
    state: State,
    next_req: u64,
    /// The timeout of the request in flight, cancelled when its reply arrives.
    timeout: Option<(u64, TimerId)>,
    /// The primary the client talks to; `None` until the sentinels said.
    server: Option<NodeId>,
    /// A request timed out or was refused: ask the sentinels again before the next attempt.
    stale: bool,
    /// The token the acquire-and-fence script returned, until the grant takes it.
    atomic_token: Option<u64>,
    /// The lock's key: [`LOCK_KEY`] unless the workload selected another lock.
    key: Key,
    /// The plain lock, or a side of Redisson's `RReadWriteLock` ([`super::rwlock`]).
    access: Access,
    /// A nested acquire (`[workload] reenter`) is under way: the outer hold, which the client
    /// keeps if the nested acquire fails (redis-py stores a new token only once acquired).
    outer: Option<State>,
}

impl RedisLock {
    /// An idle client.
    pub fn new(config: RedisLockConfig) -> RedisLock {
        let server = config.sentinels.is_empty().then_some(config.server);
        RedisLock {
            config,
            state: State::Idle,
            next_req: 0,
            timeout: None,
            server,
            stale: false,
            atomic_token: None,
            key: LOCK_KEY,
            access: Access::Exclusive,
            outer: None,
        }
    }

    /// A signal on its way to the workload, after a nested acquire: granted, the new value
    /// is the one the client holds (the outer's is forgotten); failed, the outer hold is the
    /// client's again.
    fn settle(&mut self, signal: Option<LockSignal>) -> Option<LockSignal> {
        if self.outer.is_some() {
            match signal {
                Some(LockSignal::Granted { .. }) => self.outer = None,
                Some(LockSignal::AcquireFailed) => {
                    self.state = self.outer.take().expect("an outer hold");
                }
                _ => {}
            }
        }
        signal
    }

    /// The primary this client talks to now, if it knows one.
    pub fn server(&self) -> Option<NodeId> {
        self.server
    }

    /// A sentinel's answer: the primary.
    pub(crate) fn on_primary(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        id: u64,
        primary: NodeId,
    ) -> Option<LockSignal> {
        match self.state {
            State::Discovering { req, attempt } if req == id => {
                self.cancel_timeout(ctx, id);
                self.server = Some(primary);
                self.stale = false;
                self.set_nx(ctx, attempt);
            }
            _ => {} // A later sentinel's answer, or one the client gave up on.
        }
        None
    }

    fn cancel_timeout(&mut self, ctx: &mut impl Host<Msg, LockTimer>, id: u64) {
        if let Some((req, timer)) = self.timeout {
            if req == id {
                ctx.cancel_timer(timer);
                self.timeout = None;
            }
        }
    }

    /// A reply from the server.
    pub(crate) fn on_reply(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        id: u64,
        reply: Reply,
    ) -> Option<LockSignal> {
        self.cancel_timeout(ctx, id);
        if reply == Reply::Readonly {
            // Not the primary (any more): ask the sentinels before the next attempt.
            self.stale = true;
        }
        match self.state.clone() {
            State::Acquiring {
                req,
                attempt,
                sent,
                value,
            } if req == id => match reply {
                Reply::Ok => self.acquired(ctx, attempt, sent, value),
                // A read-write lock's refusal is the hash's remaining TTL.
                Reply::Int(_) if self.access != Access::Exclusive => {
                    self.fail_attempt(ctx, attempt)
                }
                Reply::Int(token) => {
                    self.atomic_token = Some(token as u64);
                    self.acquired(ctx, attempt, sent, value)
                }
                _ => self.fail_attempt(ctx, attempt),
            },
            State::Waiting {
                req,
                attempt,
                sent,
                value,
            } if req == id => {
                let wanted = self.config.wait.map_or(0, |w| i64::from(w.replicas));
                match reply {
                    Reply::Int(n) if n >= wanted => self.replicated(ctx, attempt, sent, value),
                    _ => self.give_back(ctx, attempt, value),
                }
            }
            State::Fencing {
                req,
                attempt,
                sent,
                value,
            } if req == id => match reply {
                Reply::Int(token) => Some(self.grant(ctx, sent, value, Some(token as u64))),
                Reply::Readonly => self.give_back(ctx, attempt, value),
                _ => panic!("INCR replied {reply:?}"),
            },
            State::Held {
                value,
                validity_end,
                renewing: Some((req, _)),
            } if req == id && reply == Reply::Readonly => {
                // No answer from a primary: an error, as a timeout is.
                self.renewal_failed(ctx, value, validity_end);
                None
            }
            State::Held {
                value,
                validity_end,
                renewing: Some((req, sent)),
            } if req == id => {
                if reply == Reply::Int(1) {
                    let validity_end =
                        sent + self.config.ttl.saturating_sub(self.config.drift_margin());
                    self.state = State::Held {
                        value,
                        validity_end,
                        renewing: None,
                    };
                    ctx.set_timer(
                        ClockKind::Mono,
                        self.config.ttl / 3,
                        LockTimer::Renew { value },
                    );
                    None
                } else if self.config.renew == Renew::Watchdog {
                    // Redisson cancels the renewal and tells no one.
                    self.state = State::Held {
                        value,
                        validity_end,
                        renewing: None,
                    };
                    None
                } else {
                    // The key expired or is someone else's: the lease is gone.
                    self.state = State::Idle;
                    Some(LockSignal::Lost)
                }
            }
            State::Releasing { req } if req == id => {
                self.state = State::Idle;
                Some(LockSignal::Released)
            }
            _ => None, // A reply to a request the client has given up on.
        }
    }

    /// Attempt `attempt`: ask the sentinels first if the primary is unknown or stale.
    fn try_set(&mut self, ctx: &mut impl Host<Msg, LockTimer>, attempt: u32) {
        if !self.config.sentinels.is_empty() && (self.stale || self.server.is_none()) {
            self.next_req += 1;
            let req = self.next_req;
            for &s in &self.config.sentinels {
                ctx.send(s, Msg::Sentinel(SentinelMsg::GetPrimary { id: req }));
            }
            self.arm_timeout(ctx, req, self.config.request_timeout);
            self.state = State::Discovering { req, attempt };
            return;
        }
        self.set_nx(ctx, attempt);
    }

    fn set_nx(&mut self, ctx: &mut impl Host<Msg, LockTimer>, attempt: u32) {
        // (A nested acquire is no acquisition of the herd's.)
        if self.config.count_requests && self.outer.is_none() {
            ctx.observe(Observation::Count(ACQUIRE_REQUESTS));
        }
        let value = ctx.rng().next_u64();
        let sent = ctx.mono();
        let cmd = if self.access != Access::Exclusive {
            Command::RwLock {
                key: self.key,
                write: self.access == Access::Write,
                value,
                ttl: self.config.ttl,
            }
        } else if self.config.fencing && self.config.fence_atomically {
            Command::SetNxIncr {
                key: self.key,
                value,
                ttl: self.config.ttl,
                counter: FENCE_KEY,
            }
        } else {
            Command::SetNxPx {
                key: self.key,
                value,
                ttl: self.config.ttl,
            }
        };
        self.atomic_token = None;
        let req = self.send(ctx, cmd);
        self.state = State::Acquiring {
            req,
            attempt,
            sent,
            value,
        };
    }

    /// `SET NX` succeeded: `WAIT` for the replicas, take a token, or hold the lock.
    fn acquired(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        attempt: u32,
        sent: LocalTime,
        value: u64,
    ) -> Option<LockSignal> {
        if let Some(w) = self.config.wait {
            let cmd = Command::Wait {
                replicas: w.replicas,
                timeout: w.timeout,
            };
            let req = self.send(ctx, cmd);
            self.state = State::Waiting {
                req,
                attempt,
                sent,
                value,
            };
            return None;
        }
        self.replicated(ctx, attempt, sent, value)
    }

    /// The `SET` is replicated as asked: take a token, or hold the lock.
    fn replicated(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        attempt: u32,
        sent: LocalTime,
        value: u64,
    ) -> Option<LockSignal> {
        if let Some(token) = self.atomic_token.take() {
            return Some(self.grant(ctx, sent, value, Some(token)));
        }
        if self.config.fencing {
            let req = self.send(ctx, Command::Incr { key: FENCE_KEY });
            self.state = State::Fencing {
                req,
                attempt,
                sent,
                value,
            };
            return None;
        }
        Some(self.grant(ctx, sent, value, None))
    }

    /// The acquisition failed after the key was set (no token, too few replicas): give the
    /// key back (best effort) and try again.
    fn give_back(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        attempt: u32,
        value: u64,
    ) -> Option<LockSignal> {
        let cmd = self.unlock(value);
        self.send(ctx, cmd);
        self.fail_attempt(ctx, attempt)
    }

    /// The owner's unlock: compare-and-delete, or a read-write lock's unlock script.
    fn unlock(&self, value: u64) -> Command {
        match self.access {
            Access::Exclusive => Command::CompareAndDelete {
                key: self.key,
                value,
            },
            Access::Read | Access::Write => Command::RwUnlock {
                key: self.key,
                write: self.access == Access::Write,
                value,
            },
        }
    }

    fn fail_attempt(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        attempt: u32,
    ) -> Option<LockSignal> {
        if self.config.acquire_tries != 0 && attempt >= self.config.acquire_tries {
            self.state = State::Idle;
            return Some(LockSignal::AcquireFailed);
        }
        let delay = self.config.retry_delay.sample(ctx.rng());
        ctx.set_timer(ClockKind::Mono, delay, LockTimer::Retry);
        self.state = State::Backoff { attempt };
        None
    }

    fn grant(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        sent: LocalTime,
        value: u64,
        token: Option<u64>,
    ) -> LockSignal {
        let validity_end = sent + self.config.ttl.saturating_sub(self.config.drift_margin());
        self.state = State::Held {
            value,
            validity_end,
            renewing: None,
        };
        if self.config.renew != Renew::Off {
            ctx.set_timer(
                ClockKind::Mono,
                self.config.ttl / 3,
                LockTimer::Renew { value },
            );
        }
        // The server recorded this attempt's value as issued when its SET took the key.
        LockSignal::Granted {
            token,
            ticket: Some(value),
        }
    }

    /// A renewal got no answer from a primary (a timeout, `-READONLY`): try again later, or,
    /// as Redisson's watchdog, stop renewing.
    fn renewal_failed(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        value: u64,
        validity_end: LocalTime,
    ) {
        self.state = State::Held {
            value,
            validity_end,
            renewing: None,
        };
        if self.config.renew == Renew::UntilRefused {
            ctx.set_timer(
                ClockKind::Mono,
                self.config.ttl / 3,
                LockTimer::Renew { value },
            );
        }
    }

    /// Sends a command to the primary with a fresh request id and arms its timeout (a
    /// `WAIT` gets its own timeout on top).
    fn send(&mut self, ctx: &mut impl Host<Msg, LockTimer>, cmd: Command) -> u64 {
        self.next_req += 1;
        let req = self.next_req;
        let timeout = match cmd {
            Command::Wait { timeout, .. } => self.config.request_timeout + timeout,
            _ => self.config.request_timeout,
        };
        let server = self.server.expect("a command goes to a known primary");
        ctx.send(server, Msg::Command { id: req, cmd });
        self.arm_timeout(ctx, req, timeout);
        req
    }

    fn arm_timeout(&mut self, ctx: &mut impl Host<Msg, LockTimer>, req: u64, after: Dur) {
        // Only the newest request is awaited; an older one's timeout has nothing to do.
        if let Some((_, timer)) = self.timeout.take() {
            ctx.cancel_timer(timer);
        }
        let timer = ctx.set_timer(ClockKind::Mono, after, LockTimer::Timeout { req });
        self.timeout = Some((req, timer));
    }
}

impl LockClient for RedisLock {
    type Msg = Msg;
    type Timer = LockTimer;
    type Resource = NoResource;

    fn select(&mut self, lock: u32) {
        self.key = lock_key(lock);
    }

    /// A side of Redisson's `RReadWriteLock` on the lock's key.
    fn access(&mut self, access: Access) {
        self.access = access;
    }

    fn on_message(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        _from: NodeId,
        msg: Msg,
    ) -> Option<LockSignal> {
        let signal = match msg {
            Msg::Reply { id, reply } => self.on_reply(ctx, id, reply),
            Msg::Sentinel(SentinelMsg::PrimaryIs { id, primary }) => {
                self.on_primary(ctx, id, primary)
            }
            // Clients are sent replies and sentinels' answers only.
            msg => unreachable!("a Redis lock client was sent {msg:?}"),
        };
        self.settle(signal)
    }

    /// redis-py's `Lock.acquire` again on the lock it holds: not re-entrant. It draws a new
    /// token and `SET NX` fails on its own key, so it retries (or, a try, fails at once) until
    /// the held key expires, then takes the lock anew, if no other client took it first.
    fn reenter(&mut self, ctx: &mut impl Host<Msg, LockTimer>) -> Option<LockSignal> {
        if !matches!(self.state, State::Held { .. }) {
            return Some(LockSignal::AcquireFailed);
        }
        self.outer = Some(std::mem::replace(&mut self.state, State::Idle));
        self.try_set(ctx, 1);
        None
    }

    /// The nested `release()`: deletes the key under the nested token, the one the client
    /// holds now; the outer lock object holds nothing after it (`local.token` is gone).
    fn leave(&mut self, ctx: &mut impl Host<Msg, LockTimer>) -> Option<LockSignal> {
        self.outer = None;
        self.release(ctx)
    }

    fn resource_op(
        &mut self,
        _: &mut impl Host<Msg, LockTimer>,
        resource: &NoResource,
        _: StorageRequest,
    ) {
        match *resource {}
    }

    /// Starts acquiring.
    fn acquire(&mut self, ctx: &mut impl Host<Msg, LockTimer>) -> Option<LockSignal> {
        assert_eq!(self.state, State::Idle, "acquire while not idle");
        self.try_set(ctx, 1);
        None
    }

    /// Releases the lock if held; `Some(Released)` at once when there is nothing to release.
    fn release(&mut self, ctx: &mut impl Host<Msg, LockTimer>) -> Option<LockSignal> {
        let State::Held { value, .. } = self.state else {
            self.state = State::Idle;
            return Some(LockSignal::Released);
        };
        let cmd = match self.config.release {
            Release::CompareAndDelete => self.unlock(value),
            Release::Del => Command::Del { key: self.key },
        };
        let req = self.send(ctx, cmd);
        self.state = State::Releasing { req };
        None
    }

    /// True while the client holds the lock and its validity has not run out on its clock.
    fn valid(&self, ctx: &impl Host<Msg, LockTimer>) -> bool {
        matches!(self.state, State::Held { validity_end, .. } if ctx.mono() < validity_end)
    }

    /// Forgets everything: the process crashed.
    fn reset(&mut self) {
        self.state = State::Idle;
        self.outer = None;
        self.timeout = None;
        self.server = self
            .config
            .sentinels
            .is_empty()
            .then_some(self.config.server);
        self.stale = false;
    }

    /// The connection to the primary was reset (it crashed, or refused the request): the
    /// request in flight fails now, as it would at its timeout, without the wait (a client's
    /// command on a dead connection sees EOF at once). A sentinel's reset is ignored: the
    /// client asked every sentinel and takes the first answer.
    fn on_reset(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        peer: NodeId,
    ) -> Option<LockSignal> {
        if self.server != Some(peer) || matches!(self.state, State::Discovering { .. }) {
            return None;
        }
        let (req, timer) = self.timeout.take()?;
        ctx.cancel_timer(timer);
        self.on_timer(ctx, LockTimer::Timeout { req })
    }

    /// A timer of the lock client fired.
    fn on_timer(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        timer: LockTimer,
    ) -> Option<LockSignal> {
        let signal = self.timer_fired(ctx, timer);
        self.settle(signal)
    }
}

impl RedisLock {
    /// [`LockClient::on_timer`] before [`RedisLock::settle`].
    fn timer_fired(
        &mut self,
        ctx: &mut impl Host<Msg, LockTimer>,
        timer: LockTimer,
    ) -> Option<LockSignal> {
        if matches!(timer, LockTimer::Timeout { .. }) {
            // No answer: the primary may have changed; ask the sentinels before the next
            // attempt.
            self.stale = true;
        }
        match (self.state.clone(), timer) {
            (
                State::Acquiring { req, attempt, .. } | State::Discovering { req, attempt },
                LockTimer::Timeout { req: r },
            ) if req == r => self.fail_attempt(ctx, attempt),
            (
                State::Waiting {
                    req,
                    attempt,
                    value,
                    ..
                }
                | State::Fencing {
                    req,
                    attempt,
                    value,
                    ..
                },
                LockTimer::Timeout { req: r },
            ) if req == r => self.give_back(ctx, attempt, value),
            (
                State::Held {
                    value,
                    validity_end,
                    renewing: Some((req, _)),
                },
                LockTimer::Timeout { req: r },
            ) if req == r => {
                self.renewal_failed(ctx, value, validity_end);
                None
            }
            (State::Releasing { req }, LockTimer::Timeout { req: r }) if req == r => {
                self.state = State::Idle;
                Some(LockSignal::Released)
            }
            (State::Backoff { attempt }, LockTimer::Retry) => {
                self.try_set(ctx, attempt + 1);
                None
            }
            (
                State::Held {
                    value,
                    validity_end,
                    renewing: None,
                },
                LockTimer::Renew { value: v },
            ) if v == value => {
                let ttl = self.config.ttl;
                let sent = ctx.mono();
                let cmd = match self.access {
                    Access::Exclusive => Command::CompareAndPexpire {
                        key: self.key,
                        value,
                        ttl,
                    },
                    Access::Read | Access::Write => Command::RwRenew {
                        key: self.key,
                        value,
                        ttl,
                    },
                };
                let req = self.send(ctx, cmd);
                self.state = State::Held {
                    value,
                    validity_end,
                    renewing: Some((req, sent)),
                };
                None
            }
            _ => None, // A timer of a state the client has left.
        }
    }
}
