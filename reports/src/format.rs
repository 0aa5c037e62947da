//! How every report writes numbers: one function per kind of figure, used by the terminal
//! tables, the Markdown, the HTML, the SVG and the `lockstep` package's own lines, so that a
//! quantity reads the same wherever it is shown.
//!
//! - A share of runs ([`percent`], [`interval`], [`rate`]): one decimal, three under 1%, so
//!   that a sweep of a million seeds keeps the digits it resolves. A sweep map's cells are
//!   labels at a glance instead ([`percent_at_a_glance`]); their tooltips use [`interval`].
//! - A measured duration ([`duration`], [`duration_ms`]): about three significant digits, as
//!   many as a latency histogram's buckets resolve.
//! - A moment of true time ([`true_time`]): seconds to the microsecond, as the checker's
//!   explanations write it.
//! - An exact amount of time, such as a clock offset or an axis tick ([`offset`],
//!   [`trimmed`]): up to three decimals of its unit, trailing zeros dropped.
//! - Wall-clock time ([`seconds`], [`seeds_per_second`]) and counts ([`plural`]).

use std::time::Duration;

use lockstep_check::{Property, Validity};

use crate::Rate;

/// The `s` of a plural: empty for 1, `s` for any other count.
pub fn plural<N: TryInto<u64>>(n: N) -> &'static str {
    if n.try_into().is_ok_and(|n| n == 1) {
        ""
    } else {
        "s"
    }
}

/// A share (0 to 1) as a percentage: `12.3%`, with three decimals under 1% (`0.380%`), `0.0%`
/// only when it is 0.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p == 0.0 || p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.3}%")
    }
}

/// An interval of shares, such as a rate's 95% interval: `11.8%–76.9%`.
pub fn interval((low, high): (f64, f64)) -> String {
    format!("{}–{}", percent(low), percent(high))
}

/// A rate with its 95% interval: `40.0% [11.8%–76.9%]`; `-` without runs.
pub fn rate(rate: Option<Rate>) -> String {
    match rate {
        Some(r) => format!("{} [{}]", percent(r.rate), interval(r.ci95)),
        None => "-".to_string(),
    }
}

/// `k` of `n` as a label at a glance (a sweep map's cell): whole percents, `0%` and `100%`
/// only when exact, `<1%` and `>99%` near them; `–` without runs.
pub fn percent_at_a_glance(k: u64, n: u64) -> String {
    if n == 0 {
        return "–".to_string();
    }
    let p = k as f64 * 100.0 / n as f64;
    match k {
        0 => "0%".to_string(),
        k if k == n => "100%".to_string(),
        _ if p < 1.0 => "<1%".to_string(),
        _ if p > 99.0 => ">99%".to_string(),
        _ => format!("{}%", p.round()),
    }
}

/// Nanoseconds as the milliseconds every report's figures are in.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// A measured duration in milliseconds: `850ms`, `12.3s`, `0ms`, `1.23ms`.
pub fn duration_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else if ms >= 10.0 || ms == 0.0 {
        format!("{ms:.0}ms")
    } else {
        format!("{ms:.2}ms")
    }
}

/// A measured duration in nanoseconds, as [`duration_ms`] writes it.
pub fn duration(ns: u64) -> String {
    duration_ms(ms(ns))
}

/// A moment of true time, in seconds to the microsecond (truncated): `15.504968s`.
pub fn true_time(ns: u64) -> String {
    format!(
        "{}.{:06}s",
        ns / 1_000_000_000,
        (ns % 1_000_000_000) / 1_000
    )
}

/// A signed amount of time, such as a clock's offset, exact to three decimals of the largest
/// unit that fits: `+1.5ms`, `-2s`, `+250µs`, `0`.
pub fn offset(ns: i64) -> String {
    if ns == 0 {
        return "0".to_string();
    }
    let sign = if ns < 0 { '-' } else { '+' };
    let a = ns.unsigned_abs();
    if a >= 1_000_000_000 && a % 1_000_000 == 0 {
        format!("{sign}{}", trimmed(a, 1_000_000_000, "s"))
    } else if a >= 1_000_000 {
        format!("{sign}{}", trimmed(a, 1_000_000, "ms"))
    } else {
        format!("{sign}{}", trimmed(a, 1_000, "µs"))
    }
}

/// `value / unit` with up to three decimals, trailing zeros dropped, then `suffix`:
/// `trimmed(1_500_000, 1_000_000, "ms")` is `1.5ms`.
pub fn trimmed(value: u64, unit: u64, suffix: &str) -> String {
    let whole = value / unit;
    let frac = (value % unit) * 1000 / unit;
    if frac == 0 {
        format!("{whole}{suffix}")
    } else {
        let f = format!("{frac:03}");
        format!("{whole}.{}{suffix}", f.trim_end_matches('0'))
    }
}

/// Wall-clock time: `0.42s`.
pub fn seconds(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

/// `runs` over `elapsed` wall-clock time: `399 seeds/s` (`0 seeds/s` when none elapsed).
pub fn seeds_per_second(runs: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { runs as f64 / secs } else { 0.0 };
    format!("{rate:.0} seeds/s")
}

/// The property and the verdict `[expect]` asks for: `resource invalid`, `resource any`.
pub fn expected(property: Property, verdict: Option<Validity>) -> String {
    match verdict {
        Some(v) => format!("{property} {v}"),
        None => format!("{property} any"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_take_any_count() {
        assert_eq!(plural(1u32), "");
        assert_eq!(plural(1usize), "");
        assert_eq!(plural(0u64), "s");
        assert_eq!(plural(2u64), "s");
    }

    #[test]
    fn percentages_keep_the_digits_a_large_sweep_resolves() {
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(percent(0.4), "40.0%");
        assert_eq!(percent(0.0567), "5.7%");
        assert_eq!(percent(0.0038), "0.380%");
        assert_eq!(percent(0.123_45), "12.3%");
        let r = Rate {
            seeds: 2,
            rate: 0.4,
            ci95: (0.1176, 0.7693),
        };
        assert_eq!(rate(Some(r)), "40.0% [11.8%–76.9%]");
        assert_eq!(rate(None), "-");
    }

    #[test]
    fn glance_percentages_are_exact_only_at_the_ends() {
        assert_eq!(percent_at_a_glance(0, 100), "0%");
        assert_eq!(percent_at_a_glance(100, 100), "100%");
        assert_eq!(percent_at_a_glance(1, 1000), "<1%");
        assert_eq!(percent_at_a_glance(999, 1000), ">99%");
        assert_eq!(percent_at_a_glance(37, 100), "37%");
        assert_eq!(percent_at_a_glance(0, 0), "–");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_ms(0.0), "0ms");
        assert_eq!(duration_ms(1.234), "1.23ms");
        assert_eq!(duration_ms(850.2), "850ms");
        assert_eq!(duration_ms(12_345.0), "12.3s");
        assert_eq!(duration(6_947_000), "6.95ms");
        assert_eq!(duration(29_796_000_000), "29.8s");
    }

    #[test]
    fn true_times_are_printed_to_the_microsecond() {
        assert_eq!(true_time(15_504_968_123), "15.504968s");
        assert_eq!(true_time(0), "0.000000s");
    }

    #[test]
    fn offsets_are_exact() {
        assert_eq!(offset(0), "0");
        assert_eq!(offset(-2_000_000_000), "-2s");
        assert_eq!(offset(1_500_000), "+1.5ms");
        assert_eq!(offset(250_000), "+250µs");
        assert_eq!(trimmed(1_500_000_000, 1_000_000_000, "s"), "1.5s");
    }

    #[test]
    fn wall_times_and_expectations() {
        assert_eq!(seconds(Duration::from_millis(420)), "0.42s");
        assert_eq!(
            seeds_per_second(300, Duration::from_millis(750)),
            "400 seeds/s"
        );
        assert_eq!(seeds_per_second(3, Duration::ZERO), "0 seeds/s");
        assert_eq!(
            expected(Property::Resource, Some(Validity::Invalid)),
            "resource invalid"
        );
        assert_eq!(expected(Property::Resource, None), "resource any");
    }
}
