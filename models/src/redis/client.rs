//! The Redis lock client: `SET NX PX` with retries, validity on the client's monotonic clock,
//! renewal at TTL/3 with the compare-and-pexpire script, release with compare-and-delete or
//! (the gotcha of docs/semantics.md §1.7.2) a plain `DEL`, and an optional `INCR` fencing token.
//!
//! The client cannot see the server's clock. It counts its lease from the moment it *sent* the
//! `SET` (the earliest the server can have started the TTL), minus a drift margin, on its own
//! monotonic clock: `validity_end = sent + ttl - (ttl * drift_factor + 2 ms)`, the formula of
//! redlock-rb (docs/semantics.md §2.2) applied to one instance.

use lockstep_sim::{ClockKind, Ctx, Distribution, Dur, LocalTime, NodeId, TimerId};

use super::{Command, FENCE_KEY, LOCK_KEY, Reply};
use crate::lock::LockSignal;
use crate::node::{LockTimer, Msg, Node, Timer};

/// How the client releases the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Release {
    /// The Lua script `if GET == value then DEL`: only the owner's key is deleted.
    CompareAndDelete,
    /// A plain `DEL`: deletes whoever's key is there (docs/semantics.md §1.7.2).
    Del,
}

/// How a Redis lock client is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisLockConfig {
    /// The Redis server.
    pub server: NodeId,
    /// The lock's time to live (`PX`).
    pub ttl: Dur,
    /// How the client releases.
    pub release: Release,
    /// Renew the lease every `ttl / 3` while held (a watchdog, as Redisson does).
    pub renew: bool,
    /// Take a fencing token from `INCR` on a counter key after each acquisition.
    pub fencing: bool,
    /// How long the client waits for a reply before it treats the command as failed.
    pub request_timeout: Dur,
    /// The delay between failed acquisition attempts.
    pub retry_delay: Distribution,
    /// Attempts per acquisition before giving up; 0 retries forever.
    pub acquire_tries: u32,
    /// The clock-drift allowance, in ppm of the TTL (redlock-rb's factor 0.01 is 10,000).
    pub drift_factor_ppm: u32,
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

/// The lock client's state machine, embedded in a workload client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisLock {
    config: RedisLockConfig,
    state: State,
    next_req: u64,
    /// The timeout of the request in flight, cancelled when its reply arrives.
    timeout: Option<(u64, TimerId)>,
}

impl RedisLock {
    /// An idle client.
    pub fn new(config: RedisLockConfig) -> RedisLock {
        RedisLock {
            config,
            state: State::Idle,
            next_req: 0,
            timeout: None,
        }
    }

    /// Starts acquiring.
    pub(crate) fn acquire(&mut self, ctx: &mut Ctx<'_, Node>) -> Option<LockSignal> {
        assert_eq!(self.state, State::Idle, "acquire while not idle");
        self.try_set(ctx, 1);
        None
    }

    /// True while the client holds the lock and its validity has not run out on its clock.
    pub(crate) fn valid(&self, ctx: &Ctx<'_, Node>) -> bool {
        matches!(self.state, State::Held { validity_end, .. } if ctx.mono() < validity_end)
    }

    /// Releases the lock if held; `Some(Released)` at once when there is nothing to release.
    pub(crate) fn release(&mut self, ctx: &mut Ctx<'_, Node>) -> Option<LockSignal> {
        let State::Held { value, .. } = self.state else {
            self.state = State::Idle;
            return Some(LockSignal::Released);
        };
        let cmd = match self.config.release {
            Release::CompareAndDelete => Command::CompareAndDelete {
                key: LOCK_KEY,
                value,
            },
            Release::Del => Command::Del { key: LOCK_KEY },
        };
        let req = self.send(ctx, cmd);
        self.state = State::Releasing { req };
        None
    }

    /// Forgets everything: the process crashed.
    pub(crate) fn reset(&mut self) {
        self.state = State::Idle;
        self.timeout = None;
    }

    /// A reply from the server.
    pub(crate) fn on_reply(
        &mut self,
        ctx: &mut Ctx<'_, Node>,
        id: u64,
        reply: Reply,
    ) -> Option<LockSignal> {
        if let Some((req, timer)) = self.timeout {
            if req == id {
                ctx.cancel_timer(timer);
                self.timeout = None;
            }
        }
        match self.state.clone() {
            State::Acquiring {
                req,
                attempt,
                sent,
                value,
            } if req == id => match reply {
                Reply::Ok if self.config.fencing => {
                    let req = self.send(ctx, Command::Incr { key: FENCE_KEY });
                    self.state = State::Fencing {
                        req,
                        attempt,
                        sent,
                        value,
                    };
                    None
                }
                Reply::Ok => Some(self.grant(ctx, sent, value, None)),
                _ => self.fail_attempt(ctx, attempt),
            },
            State::Fencing {
                req, sent, value, ..
            } if req == id => {
                let Reply::Int(token) = reply else {
                    panic!("INCR replied {reply:?}")
                };
                Some(self.grant(ctx, sent, value, Some(token as u64)))
            }
            State::Held {
                value,
                renewing: Some((req, sent)),
                ..
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
                        Timer::Lock(LockTimer::Renew { value }),
                    );
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

    /// A timer of the lock client fired.
    pub(crate) fn on_timer(
        &mut self,
        ctx: &mut Ctx<'_, Node>,
        timer: LockTimer,
    ) -> Option<LockSignal> {
        match (self.state.clone(), timer) {
            (State::Acquiring { req, attempt, .. }, LockTimer::Timeout { req: r }) if req == r => {
                self.fail_attempt(ctx, attempt)
            }
            (
                State::Fencing {
                    req,
                    attempt,
                    value,
                    ..
                },
                LockTimer::Timeout { req: r },
            ) if req == r => {
                // No token: give the key back (best effort) and try again.
                self.send(
                    ctx,
                    Command::CompareAndDelete {
                        key: LOCK_KEY,
                        value,
                    },
                );
                self.fail_attempt(ctx, attempt)
            }
            (
                State::Held {
                    value,
                    validity_end,
                    renewing: Some((req, _)),
                },
                LockTimer::Timeout { req: r },
            ) if req == r => {
                self.state = State::Held {
                    value,
                    validity_end,
                    renewing: None,
                };
                ctx.set_timer(
                    ClockKind::Mono,
                    self.config.ttl / 3,
                    Timer::Lock(LockTimer::Renew { value }),
                );
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
                let req = self.send(
                    ctx,
                    Command::CompareAndPexpire {
                        key: LOCK_KEY,
                        value,
                        ttl,
                    },
                );
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

    fn try_set(&mut self, ctx: &mut Ctx<'_, Node>, attempt: u32) {
        let value = ctx.rng().next_u64();
        let sent = ctx.mono();
        let req = self.send(
            ctx,
            Command::SetNxPx {
                key: LOCK_KEY,
                value,
                ttl: self.config.ttl,
            },
        );
        self.state = State::Acquiring {
            req,
            attempt,
            sent,
            value,
        };
    }

    fn fail_attempt(&mut self, ctx: &mut Ctx<'_, Node>, attempt: u32) -> Option<LockSignal> {
        if self.config.acquire_tries != 0 && attempt >= self.config.acquire_tries {
            self.state = State::Idle;
            return Some(LockSignal::AcquireFailed);
        }
        let delay = self.config.retry_delay.sample(ctx.rng());
        ctx.set_timer(ClockKind::Mono, delay, Timer::Lock(LockTimer::Retry));
        self.state = State::Backoff { attempt };
        None
    }

    fn grant(
        &mut self,
        ctx: &mut Ctx<'_, Node>,
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
        if self.config.renew {
            ctx.set_timer(
                ClockKind::Mono,
                self.config.ttl / 3,
                Timer::Lock(LockTimer::Renew { value }),
            );
        }
        LockSignal::Granted { token }
    }

    /// Sends a command with a fresh request id and arms its timeout.
    fn send(&mut self, ctx: &mut Ctx<'_, Node>, cmd: Command) -> u64 {
        self.next_req += 1;
        let req = self.next_req;
        ctx.send(self.config.server, Msg::Redis { id: req, cmd });
        // Only the newest request is awaited; an older one's timeout has nothing to do.
        if let Some((_, timer)) = self.timeout.take() {
            ctx.cancel_timer(timer);
        }
        let timer = ctx.set_timer(
            ClockKind::Mono,
            self.config.request_timeout,
            Timer::Lock(LockTimer::Timeout { req }),
        );
        self.timeout = Some((req, timer));
        req
    }
}
