//! Time values: true time, durations and local clock readings, all in integer nanoseconds.
//!
//! Three types keep three ideas apart. [`Time`] is true time, known only to the world and the
//! checker. [`LocalTime`] is what one node's clock reads; it can run fast or slow and the wall
//! clock can step backwards, so it is signed. [`Dur`] is a length of time. Models never see
//! [`Time`]: the context hands them [`LocalTime`] only.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

use serde::{Deserialize, Serialize};

const NANOS_PER_MICRO: u64 = 1_000;
const NANOS_PER_MILLI: u64 = 1_000_000;
const NANOS_PER_SEC: u64 = 1_000_000_000;

/// True time: nanoseconds since the start of the run.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Time(u64);

impl Time {
    /// The start of every run.
    pub const ZERO: Time = Time(0);
    /// The latest representable time.
    pub const MAX: Time = Time(u64::MAX);

    /// True time from nanoseconds since the start.
    pub const fn from_nanos(nanos: u64) -> Time {
        Time(nanos)
    }

    /// True time from milliseconds since the start.
    pub const fn from_millis(millis: u64) -> Time {
        Time(millis * NANOS_PER_MILLI)
    }

    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The duration from `earlier` to `self`, or zero when `earlier` is later.
    pub fn saturating_since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Time::MAX`].
    pub fn saturating_add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.checked_add(d.0).expect("true time overflow"))
    }
}

impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        *self = *self + d;
    }
}

impl Sub<Time> for Time {
    type Output = Dur;
    fn sub(self, earlier: Time) -> Dur {
        Dur(self
            .0
            .checked_sub(earlier.0)
            .expect("true time went backwards"))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:06}s",
            self.0 / NANOS_PER_SEC,
            (self.0 % NANOS_PER_SEC) / NANOS_PER_MICRO
        )
    }
}

/// A non-negative length of time in nanoseconds.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Dur(u64);

impl fmt::Debug for Dur {
    /// Exact, in the largest unit it reaches: `Dur(10s)`, `Dur(1.000000001s)`, `Dur(250ms)`,
    /// `Dur(800ns)` (a trace line reads `ttl: Dur(10s)`, not `Dur(10000000000)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        let (unit, digits, suffix) = if n >= NANOS_PER_SEC {
            (NANOS_PER_SEC, 9, "s")
        } else if n >= NANOS_PER_MILLI {
            (NANOS_PER_MILLI, 6, "ms")
        } else if n >= NANOS_PER_MICRO {
            (NANOS_PER_MICRO, 3, "µs")
        } else {
            return write!(f, "Dur({n}ns)");
        };
        let frac = n % unit;
        if frac == 0 {
            write!(f, "Dur({}{suffix})", n / unit)
        } else {
            let s = format!("{frac:0digits$}");
            write!(f, "Dur({}.{}{suffix})", n / unit, s.trim_end_matches('0'))
        }
    }
}

impl Dur {
    /// No time at all.
    pub const ZERO: Dur = Dur(0);
    /// The longest representable duration.
    pub const MAX: Dur = Dur(u64::MAX);

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: u64) -> Dur {
        Dur(nanos)
    }
    /// A duration of `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Dur {
        Dur(micros * NANOS_PER_MICRO)
    }
    /// A duration of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Dur {
        Dur(millis * NANOS_PER_MILLI)
    }
    /// A duration of `secs` seconds.
    pub const fn from_secs(secs: u64) -> Dur {
        Dur(secs * NANOS_PER_SEC)
    }
    /// The duration in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// The duration in whole milliseconds, rounded down.
    pub const fn as_millis(self) -> u64 {
        self.0 / NANOS_PER_MILLI
    }
    /// `self * num / den` without intermediate overflow, rounded down.
    pub fn mul_div(self, num: u64, den: u64) -> Dur {
        assert!(den > 0, "division by zero");
        let v = u128::from(self.0) * u128::from(num) / u128::from(den);
        Dur(u64::try_from(v).unwrap_or(u64::MAX))
    }
    /// `self - other`, or zero when `other` is longer.
    pub fn saturating_sub(self, other: Dur) -> Dur {
        Dur(self.0.saturating_sub(other.0))
    }
    /// `self + other`, saturating at [`Dur::MAX`].
    pub fn saturating_add(self, other: Dur) -> Dur {
        Dur(self.0.saturating_add(other.0))
    }
}

impl Add for Dur {
    type Output = Dur;
    fn add(self, other: Dur) -> Dur {
        Dur(self.0.checked_add(other.0).expect("duration overflow"))
    }
}

impl Sub for Dur {
    type Output = Dur;
    fn sub(self, other: Dur) -> Dur {
        Dur(self.0.checked_sub(other.0).expect("negative duration"))
    }
}

impl Mul<u64> for Dur {
    type Output = Dur;
    fn mul(self, k: u64) -> Dur {
        Dur(self.0.checked_mul(k).expect("duration overflow"))
    }
}

impl Div<u64> for Dur {
    type Output = Dur;
    fn div(self, k: u64) -> Dur {
        Dur(self.0 / k)
    }
}

impl fmt::Display for Dur {
    /// Compact human form: `15s`, `1.5s`, `250ms`, `1.25ms`, `800ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n >= NANOS_PER_SEC {
            write_decimal(f, n, NANOS_PER_SEC, "s")
        } else if n >= NANOS_PER_MILLI {
            write_decimal(f, n, NANOS_PER_MILLI, "ms")
        } else if n >= NANOS_PER_MICRO {
            write_decimal(f, n, NANOS_PER_MICRO, "µs")
        } else {
            write!(f, "{n}ns")
        }
    }
}

/// Writes `n / unit` with up to three decimals and no trailing zeros.
fn write_decimal(f: &mut fmt::Formatter<'_>, n: u64, unit: u64, suffix: &str) -> fmt::Result {
    let whole = n / unit;
    let frac = (n % unit) * 1000 / unit;
    if frac == 0 {
        write!(f, "{whole}{suffix}")
    } else {
        let s = format!("{frac:03}");
        write!(f, "{whole}.{}{suffix}", s.trim_end_matches('0'))
    }
}

/// A reading of one node's clock, in nanoseconds of that clock.
///
/// Monotonic readings start at a per-node boot value; wall readings are Unix time. Only
/// readings of the same clock of the same node may be compared.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct LocalTime(i64);

impl LocalTime {
    /// A reading of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> LocalTime {
        LocalTime(nanos)
    }
    /// The reading in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }
    /// The reading in whole milliseconds, rounded towards minus infinity (as Unix time in ms
    /// is taken from a nanosecond clock).
    pub const fn as_millis(self) -> i64 {
        self.0.div_euclid(NANOS_PER_MILLI as i64)
    }
    /// A reading from milliseconds.
    pub const fn from_millis(millis: i64) -> LocalTime {
        LocalTime(millis * NANOS_PER_MILLI as i64)
    }
    /// Signed nanoseconds from `earlier` to `self` (negative when `earlier` is later).
    pub fn nanos_since(self, earlier: LocalTime) -> i64 {
        self.0 - earlier.0
    }
    /// The duration from `earlier` to `self`, or zero when `earlier` is later.
    pub fn saturating_since(self, earlier: LocalTime) -> Dur {
        Dur(u64::try_from(self.0 - earlier.0).unwrap_or(0))
    }
}

impl Add<Dur> for LocalTime {
    type Output = LocalTime;
    /// The reading `d` later.
    fn add(self, d: Dur) -> LocalTime {
        let d = i64::try_from(d.0).expect("duration too long for a clock reading");
        LocalTime(self.0.checked_add(d).expect("clock reading overflow"))
    }
}

impl fmt::Display for LocalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let n = self.0.unsigned_abs();
        write!(
            f,
            "{sign}{}.{:06}s",
            n / NANOS_PER_SEC,
            (n % NANOS_PER_SEC) / NANOS_PER_MICRO
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_display_compactly() {
        assert_eq!(Dur::from_secs(15).to_string(), "15s");
        assert_eq!(Dur::from_millis(1500).to_string(), "1.5s");
        assert_eq!(Dur::from_millis(250).to_string(), "250ms");
        assert_eq!(Dur::from_micros(1250).to_string(), "1.25ms");
        assert_eq!(Dur::from_nanos(800).to_string(), "800ns");
    }

    #[test]
    fn durations_debug_exactly_in_their_largest_unit() {
        assert_eq!(format!("{:?}", Dur::from_secs(10)), "Dur(10s)");
        assert_eq!(
            format!("{:?}", Dur::from_nanos(1_000_000_001)),
            "Dur(1.000000001s)"
        );
        assert_eq!(format!("{:?}", Dur::from_micros(1250)), "Dur(1.25ms)");
        assert_eq!(format!("{:?}", Dur::from_nanos(1_001)), "Dur(1.001µs)");
        assert_eq!(format!("{:?}", Dur::from_nanos(800)), "Dur(800ns)");
        assert_eq!(format!("{:?}", Dur::ZERO), "Dur(0ns)");
        assert_eq!(format!("{:?}", Dur::MAX), "Dur(18446744073.709551615s)");
    }

    #[test]
    fn true_time_displays_seconds_with_micros() {
        assert_eq!(Time::from_nanos(12_345_678_901).to_string(), "12.345678s");
    }

    #[test]
    fn local_millis_round_down_for_negative_readings() {
        assert_eq!(LocalTime::from_nanos(-1).as_millis(), -1);
        assert_eq!(LocalTime::from_nanos(1_999_999).as_millis(), 1);
    }

    #[test]
    fn mul_div_does_not_overflow() {
        let d = Dur::from_secs(3600 * 24 * 365);
        assert_eq!(
            d.mul_div(1_000_050, 1_000_000).as_nanos(),
            d.as_nanos() / 20_000 + d.as_nanos()
        );
    }
}
