//! Per-node clocks: a monotonic clock with drift and a wall clock that steps and slews.
//!
//! Both clocks are piecewise-linear functions of true time. The monotonic clock advances at
//! `1 + drift` (drift in parts per million), never steps, and keeps running while the process
//! is paused or down. The wall clock is the monotonic clock plus an offset: an NTP step moves
//! the offset at once (forward or back), a slew moves it at a bounded rate until it has moved
//! by the requested amount. All arithmetic is integer; readings round down and the inverse
//! (when will the clock read `x`?) rounds up, so a timer never fires before its deadline.
//!
//! The world re-arms a node's pending timers whenever one of these changes, because the true
//! time at which a local deadline falls has moved.

use serde::{Deserialize, Serialize};

use crate::time::{Dur, LocalTime, Time};

/// Rates are in parts per million of true time.
const PPM: i128 = 1_000_000;

/// The most a clock may drift, in ppm: ±25%, far beyond any real oscillator (tens of ppm) but
/// useful to exaggerate an effect.
pub const MAX_DRIFT_PPM: i64 = 250_000;

/// The fastest a slew may move the wall clock, in ppm: far beyond `ntpd`'s 500 ppm or
/// chrony's default 83,333 ppm.
pub const MAX_SLEW_PPM: i64 = 250_000;

/// The most a clock's rate may differ from true time, in ppm: the largest drift plus the
/// fastest slew, so every combination the loader accepts keeps every rate positive.
pub const MAX_RATE_OFFSET_PPM: i64 = MAX_DRIFT_PPM + MAX_SLEW_PPM;

/// Which of a node's two clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// `CLOCK_MONOTONIC`, `System.nanoTime`, Go's monotonic reading: drifts, never steps.
    Mono,
    /// `gettimeofday`, `System.currentTimeMillis`: the settable system clock.
    Wall,
}

/// One linear segment: the clock reads `base` at true time `t0` and advances `rate` local
/// nanoseconds per million true nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Line {
    t0: u64,
    base: i64,
    rate: i64,
}

/// [`PPM`] as an `i64`: a rate of exactly this is a clock without drift or slew.
const UNIT: i64 = PPM as i64;

impl Line {
    /// The reading at true time `t`: `base + floor((t - t0) * rate / PPM)`. Computed in `i64`
    /// when that is exact (a clock at the unit rate, the common case, needs no product; a
    /// drifting one, while the product fits), else in `i128`; the result is the same either
    /// way (`at_wide`, and the test that holds the two together).
    fn at(&self, t: Time) -> i64 {
        let (t, t0) = (t.as_nanos(), self.t0);
        if t <= i64::MAX as u64 && t0 <= i64::MAX as u64 {
            let dt = t as i64 - t0 as i64;
            if self.rate == UNIT {
                return self.base.wrapping_add(dt);
            }
            if let Some(product) = dt.checked_mul(self.rate) {
                return self.base.wrapping_add(product.div_euclid(UNIT));
            }
        }
        self.at_wide(t)
    }

    /// [`Line::at`] in `i128` throughout.
    fn at_wide(&self, t: u64) -> i64 {
        let dt = i128::from(t) - i128::from(self.t0);
        self.base + (dt * i128::from(self.rate)).div_euclid(PPM) as i64
    }

    /// Starts a new segment at `t` that continues from the current reading.
    fn rebase(&mut self, t: Time) {
        self.base = self.at(t);
        self.t0 = t.as_nanos();
    }

    /// The earliest true time, not before `now`, at which the clock reads at least `local`.
    fn when(&self, local: i64, now: Time) -> Time {
        if self.at(now) >= local {
            return now;
        }
        let dt = self.after(local - self.base);
        let t = Time::from_nanos(u64::try_from(i128::from(self.t0) + dt).unwrap_or(u64::MAX));
        debug_assert!(self.at(t) >= local);
        t.max(now)
    }
}

impl Line {
    /// The true nanoseconds after `t0` at which the clock has advanced by `need`, rounded up:
    /// `ceil(need * PPM / rate)` for `need >= 0`, in `i64` when exact.
    fn after(&self, need: i64) -> i128 {
        if need >= 0 {
            if self.rate == UNIT {
                return i128::from(need);
            }
            if let Some(scaled) = need.checked_mul(UNIT) {
                if let Some(sum) = scaled.checked_add(self.rate - 1) {
                    return i128::from(sum / self.rate);
                }
            }
        }
        self.after_wide(need)
    }

    /// [`Line::after`] in `i128` throughout.
    fn after_wide(&self, need: i64) -> i128 {
        let rate = i128::from(self.rate);
        (i128::from(need) * PPM + rate - 1) / rate
    }
}

/// A slew in progress: the wall clock's offset from the monotonic clock moves at `ppm` until
/// true time `end`, where it is set to exactly `target_offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slew {
    ppm: i64,
    target_offset: i64,
    end: Time,
}

/// The two clocks of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clocks {
    mono: Line,
    wall: Line,
    drift_ppm: i64,
    slew: Option<Slew>,
}

impl Clocks {
    /// Clocks that read `mono_start` and `wall_start` at true time `t`, the monotonic one
    /// running `drift_ppm` fast (negative: slow).
    pub fn new(t: Time, mono_start: LocalTime, wall_start: LocalTime, drift_ppm: i64) -> Clocks {
        check_rate(drift_ppm);
        let rate = (PPM as i64) + drift_ppm;
        let t0 = t.as_nanos();
        Clocks {
            mono: Line {
                t0,
                base: mono_start.as_nanos(),
                rate,
            },
            wall: Line {
                t0,
                base: wall_start.as_nanos(),
                rate,
            },
            drift_ppm,
            slew: None,
        }
    }

    /// The monotonic clock's reading at true time `t`.
    pub fn mono(&self, t: Time) -> LocalTime {
        LocalTime::from_nanos(self.mono.at(t))
    }

    /// The wall clock's reading at true time `t`.
    pub fn wall(&self, t: Time) -> LocalTime {
        LocalTime::from_nanos(self.wall.at(t))
    }

    /// The reading of `kind` at true time `t`.
    pub fn read(&self, kind: ClockKind, t: Time) -> LocalTime {
        match kind {
            ClockKind::Mono => self.mono(t),
            ClockKind::Wall => self.wall(t),
        }
    }

    /// The current drift of the monotonic clock, in ppm.
    pub fn drift_ppm(&self) -> i64 {
        self.drift_ppm
    }

    /// The earliest true time, not before `now`, at which clock `kind` reads `deadline`.
    pub fn when(&self, kind: ClockKind, deadline: LocalTime, now: Time) -> Time {
        match kind {
            ClockKind::Mono => self.mono.when(deadline.as_nanos(), now),
            ClockKind::Wall => self.wall.when(deadline.as_nanos(), now),
        }
    }

    /// Changes the drift from true time `t` on. Both clocks change rate.
    pub fn set_drift(&mut self, t: Time, drift_ppm: i64) {
        check_rate(drift_ppm + self.slew.map_or(0, |s| s.ppm));
        self.mono.rebase(t);
        self.wall.rebase(t);
        self.drift_ppm = drift_ppm;
        self.mono.rate = (PPM as i64) + drift_ppm;
        self.wall.rate = self.mono.rate + self.slew.map_or(0, |s| s.ppm);
    }

    /// Steps the wall clock by `delta_ns` at true time `t` (an NTP step, `date -s`). A step
    /// cancels a slew in progress, as `ntpd` does.
    pub fn step(&mut self, t: Time, delta_ns: i64) {
        self.slew = None;
        self.wall.rebase(t);
        self.wall.base += delta_ns;
        self.wall.rate = self.mono.rate;
    }

    /// Starts slewing the wall clock by `delta_ns` at `rate_ppm` (positive) from true time `t`,
    /// replacing any slew in progress. Returns the true time at which the slew ends; the world
    /// must then call [`Clocks::end_slew`].
    pub fn start_slew(&mut self, t: Time, delta_ns: i64, rate_ppm: u32) -> Time {
        assert!(rate_ppm > 0, "a slew needs a positive rate");
        let ppm = i64::from(rate_ppm) * delta_ns.signum();
        check_rate(self.drift_ppm + ppm);
        // Only the wall clock starts a new segment: rebasing the monotonic one would round its
        // reading down and could fire a pending monotonic timer a nanosecond early.
        self.wall.rebase(t);
        let offset = self.wall.base - self.mono.at(t);
        let len =
            (u128::from(delta_ns.unsigned_abs()) * PPM as u128).div_ceil(u128::from(rate_ppm));
        let end = t.saturating_add(Dur::from_nanos(u64::try_from(len).unwrap_or(u64::MAX)));
        self.slew = Some(Slew {
            ppm,
            target_offset: offset.saturating_add(delta_ns),
            end,
        });
        self.wall.rate = self.mono.rate + ppm;
        end
    }

    /// Ends the slew in progress at true time `t` if it is due then: the offset becomes exactly
    /// its target. Returns false (and changes nothing) when no slew ends at `t`.
    pub fn end_slew(&mut self, t: Time) -> bool {
        match self.slew {
            Some(s) if s.end == t => {
                self.slew = None;
                self.wall = Line {
                    t0: t.as_nanos(),
                    base: self.mono.at(t) + s.target_offset,
                    rate: self.mono.rate,
                };
                true
            }
            _ => false,
        }
    }

    /// True while a slew is in progress.
    pub fn slewing(&self) -> bool {
        self.slew.is_some()
    }
}

fn check_rate(offset_ppm: i64) {
    assert!(
        offset_ppm.abs() <= MAX_RATE_OFFSET_PPM,
        "clock rate offset {offset_ppm} ppm is beyond ±{MAX_RATE_OFFSET_PPM} ppm"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn at(secs: u64) -> Time {
        Time::from_nanos(secs * S)
    }

    #[test]
    fn the_narrow_arithmetic_gives_the_wide_arithmetics_readings() {
        // splitmix64: many segments, times and needs, edge values among them.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let rates = [
            UNIT,
            UNIT - 1,
            UNIT + 1,
            UNIT + MAX_RATE_OFFSET_PPM,
            UNIT - MAX_RATE_OFFSET_PPM,
        ];
        for i in 0..200_000u64 {
            let r = next();
            let rate = if i % 3 == 0 {
                rates[(r % rates.len() as u64) as usize]
            } else {
                UNIT - MAX_RATE_OFFSET_PPM + (r % (2 * MAX_RATE_OFFSET_PPM as u64 + 1)) as i64
            };
            // Times up to about a year, some far beyond (the slow path), t0 before or after.
            let span = match i % 4 {
                0 => 1 << 20,
                1 => 1 << 45,
                2 => 1 << 55,
                _ => u64::MAX,
            };
            let t0 = next() % span;
            let t = next() % span;
            let base = (next() % (1 << 50)) as i64 - (1 << 49);
            let line = Line { t0, base, rate };
            assert_eq!(
                line.at(Time::from_nanos(t)),
                line.at_wide(t),
                "{line:?} at {t}"
            );
            let need = (next() % (1 << 46)) as i64 - if i % 7 == 0 { 1 << 40 } else { 0 };
            assert_eq!(
                line.after(need),
                line.after_wide(need),
                "{line:?} after {need}"
            );
        }
    }

    #[test]
    fn drift_makes_the_monotonic_clock_run_fast() {
        let c = Clocks::new(
            Time::ZERO,
            LocalTime::from_nanos(0),
            LocalTime::from_nanos(0),
            100,
        );
        // 100 ppm over 1000 s is 100 ms.
        assert_eq!(c.mono(at(1000)).as_nanos(), 1000 * S as i64 + 100_000_000);
        assert_eq!(c.wall(at(1000)), c.mono(at(1000)));
    }

    #[test]
    fn when_inverts_a_reading_rounding_up() {
        let c = Clocks::new(
            Time::ZERO,
            LocalTime::from_nanos(5),
            LocalTime::from_nanos(0),
            -333,
        );
        for deadline in [6_i64, 1_000_000_007, 999_999_999_999] {
            let t = c.when(ClockKind::Mono, LocalTime::from_nanos(deadline), Time::ZERO);
            assert!(c.mono(t).as_nanos() >= deadline);
            assert!(c.mono(Time::from_nanos(t.as_nanos() - 1)).as_nanos() < deadline);
        }
    }

    #[test]
    fn a_step_moves_only_the_wall_clock() {
        let mut c = Clocks::new(
            Time::ZERO,
            LocalTime::from_nanos(0),
            LocalTime::from_nanos(0),
            0,
        );
        c.step(at(10), -3 * S as i64);
        assert_eq!(c.mono(at(11)).as_nanos(), 11 * S as i64);
        assert_eq!(c.wall(at(11)).as_nanos(), 8 * S as i64);
    }

    #[test]
    fn a_slew_moves_the_offset_by_exactly_its_delta() {
        let mut c = Clocks::new(
            Time::ZERO,
            LocalTime::from_nanos(0),
            LocalTime::from_nanos(0),
            37,
        );
        // 200 ms at 500 ppm takes 400 s.
        let end = c.start_slew(at(1), 200_000_000, 500);
        assert_eq!(end, at(401));
        let mid = c.wall(at(201)).as_nanos() - c.mono(at(201)).as_nanos();
        assert_eq!(mid, 100_000_000);
        assert!(c.end_slew(end));
        let after = c.wall(at(500)).as_nanos() - c.mono(at(500)).as_nanos();
        assert_eq!(after, 200_000_000);
        assert!(!c.slewing());
    }

    #[test]
    fn a_slew_leaves_the_monotonic_clock_untouched() {
        let mut c = Clocks::new(
            Time::ZERO,
            LocalTime::from_nanos(7),
            LocalTime::from_nanos(0),
            -333,
        );
        let probes: Vec<Time> = (0..50)
            .map(|i| Time::from_nanos(S + i * 333_333_337))
            .collect();
        let before: Vec<LocalTime> = probes.iter().map(|&t| c.mono(t)).collect();
        let end = c.start_slew(Time::from_nanos(S + 3), 1_000_003, 777);
        let during: Vec<LocalTime> = probes.iter().map(|&t| c.mono(t)).collect();
        assert_eq!(before, during);
        assert!(c.end_slew(end));
        let after: Vec<LocalTime> = probes.iter().map(|&t| c.mono(t)).collect();
        assert_eq!(before, after);
        // A reading before a segment starts extrapolates instead of panicking.
        assert!(c.wall(Time::ZERO).as_nanos() <= c.wall(Time::from_nanos(S)).as_nanos());
    }

    #[test]
    fn a_step_cancels_a_slew() {
        let mut c = Clocks::new(
            Time::ZERO,
            LocalTime::from_nanos(0),
            LocalTime::from_nanos(0),
            0,
        );
        let end = c.start_slew(Time::ZERO, -1_000_000, 1000);
        c.step(at(0) + Dur::from_millis(1), 5);
        assert!(!c.end_slew(end));
        assert_eq!(
            c.wall(at(2)).as_nanos() - c.mono(at(2)).as_nanos(),
            -1000 + 5
        );
    }
}
