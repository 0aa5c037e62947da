//! A scheduled job (`kind = "cron"`): the schedule every client keeps on its own wall clock.
//!
//! Every client runs the same job every `period`, at wall-clock instants that are multiples of
//! it (tick `k` is due at wall time `k × period`, from tick 1). The schedule follows the cron
//! libraries the seed's users run (robfig/cron's `Cron.run` in `cron.go`, Spring's
//! `ReschedulingRunnable` under `@Scheduled(cron)`): the next instant is computed on the wall
//! clock, then slept for on the monotonic clock (Go's `time.NewTimer`, Java's
//! `ScheduledExecutorService`), and when the sleep ends, the entry runs if its instant is no
//! longer in the future by the wall clock, and the next instant is the first one after the
//! wall clock's reading then. So a wall clock stepped forward by 30 s makes the node run its
//! next ticks 30 s early in true time (and skip the ticks jumped over); one stepped back makes
//! the sleep end early, find the instant still ahead, and sleep again.
//!
//! At each due tick the client records `Due` and, when it is idle, tries the lock once (the
//! family's client decides how: a try-lock gives up at once, a blocking lock waits); the
//! winner's critical section is the job, and its accepted write is the job's effect. A client
//! still busy with an earlier tick skips the new one (robfig's `SkipIfStillRunning`). After
//! the job, the lock is released at once, or held until `lock_at_least` has passed since the
//! grant (ShedLock's `lockAtLeastFor`, which keeps a node whose clock runs ahead, or a fast
//! job, from letting a slower node run the same tick again).

use lockstep_sim::{Dur, LocalTime};
use serde::Deserialize;

use super::{Shared, Workload};
use crate::keys::Check;

/// How a scheduled job's clients behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CronConfig {
    /// The time between ticks, on each client's wall clock.
    pub period: Dur,
    /// The least time the lock is held from the grant (0: released when the job ends).
    pub lock_at_least: Dur,
}

/// A scheduled job's `[workload]` keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CronKeys {
    /// The time between ticks, on each client's wall clock; required.
    period_ms: Option<f64>,
    /// The least time the lock is held from its grant (ShedLock's `lockAtLeastFor`).
    lock_at_least_ms: Option<f64>,
}

impl Workload for CronConfig {
    const KIND: &'static str = "cron";
    const WHAT: &'static str = "a scheduled job";
    const RECORDS: &'static [&'static str] = &["due"];
    const MEASURES: &'static [&'static str] = &["cron"];
    type Keys = CronKeys;

    /// `period_ms` is required; a client idles between ticks, so `think_ms` is refused.
    fn resolve(keys: &CronKeys, shared: &Shared, check: &mut Check) -> CronConfig {
        if shared.think_given {
            check.problems.push(
                "workload.think_ms",
                "a scheduled job does not think between tries: its clients wait for the next \
                 tick (`period_ms`); leave out think_ms",
            );
        }
        let period = match keys.period_ms {
            Some(ms) => check.positive_ms("workload.period_ms", ms),
            None => {
                check.problems.push(
                    "workload.period_ms",
                    "is required with `kind = \"cron\"`: the time between ticks, in ms",
                );
                Dur::from_secs(60)
            }
        };
        let lock_at_least = keys
            .lock_at_least_ms
            .map_or(Dur::ZERO, |ms| check.ms("workload.lock_at_least_ms", ms));
        CronConfig {
            period,
            lock_at_least,
        }
    }
}

/// What a client's schedule timer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fire {
    /// The instant is still ahead on the wall clock (it was stepped back): sleep this long.
    Early(Dur),
    /// Tick `tick` is due; the next instant is `next`, this long ahead.
    Due {
        /// The tick due.
        tick: u64,
        /// The next instant, in wall-clock nanoseconds.
        next: i64,
        /// The sleep until it.
        after: Dur,
    },
}

impl CronConfig {
    fn period_ns(&self) -> i64 {
        i64::try_from(self.period.as_nanos())
            .unwrap_or(i64::MAX)
            .max(1)
    }

    /// The first instant after wall time `wall` (never before tick 1), and the sleep until it.
    pub(super) fn next_after(&self, wall: LocalTime) -> (i64, Dur) {
        let p = self.period_ns();
        let now = wall.as_nanos();
        let next = now.div_euclid(p).saturating_add(1).saturating_mul(p).max(p);
        (next, Self::until(next, now))
    }

    /// The schedule's timer for instant `next` fired with the wall clock at `wall`.
    pub(super) fn fire(&self, next: i64, wall: LocalTime) -> Fire {
        let now = wall.as_nanos();
        if now < next {
            return Fire::Early(Self::until(next, now));
        }
        let tick = u64::try_from(next / self.period_ns()).unwrap_or(0);
        let (next, after) = self.next_after(wall);
        Fire::Due { tick, next, after }
    }

    fn until(next: i64, now: i64) -> Dur {
        Dur::from_nanos(u64::try_from(next.saturating_sub(now)).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cron(period_s: u64) -> CronConfig {
        CronConfig {
            period: Dur::from_secs(period_s),
            lock_at_least: Dur::ZERO,
        }
    }

    fn at(s: i64) -> LocalTime {
        LocalTime::from_nanos(s * 1_000_000_000)
    }

    #[test]
    fn the_first_instant_is_the_next_multiple_and_never_tick_zero() {
        assert_eq!(
            cron(60).next_after(at(0)),
            (60_000_000_000, Dur::from_secs(60))
        );
        assert_eq!(cron(60).next_after(at(59)).1, Dur::from_secs(1));
        assert_eq!(cron(60).next_after(at(60)).0, 120_000_000_000);
        assert_eq!(cron(60).next_after(at(-5)).0, 60_000_000_000);
    }

    #[test]
    fn a_clock_stepped_forward_runs_the_due_tick_and_skips_to_the_next_after_its_reading() {
        // Armed for tick 1 (wall 60 s); the clock jumped 30 s, so the sleep ends at wall 90 s.
        let fire = cron(60).fire(60_000_000_000, at(90));
        assert_eq!(
            fire,
            Fire::Due {
                tick: 1,
                next: 120_000_000_000,
                after: Dur::from_secs(30)
            }
        );
        // A jump past several ticks runs the armed one once, then the next after the reading.
        let Fire::Due { tick, next, .. } = cron(60).fire(60_000_000_000, at(250)) else {
            panic!("due");
        };
        assert_eq!((tick, next), (1, 300_000_000_000));
    }

    #[test]
    fn a_clock_stepped_back_sleeps_again_until_the_instant() {
        assert_eq!(
            cron(60).fire(60_000_000_000, at(40)),
            Fire::Early(Dur::from_secs(20))
        );
    }
}
