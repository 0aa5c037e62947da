//! `[chaos]`: the named profiles' settings, overridden by the file's keys and resolved
//! against the system.

use lockstep_models::keys::DistSpec;
use lockstep_models::system::{Layout, System};
use lockstep_sim::clock::{MAX_DRIFT_PPM, MAX_SLEW_PPM};
use lockstep_sim::{Dur, Time};

use super::Resolver;
use crate::chaos::{Chaos, ClockKinds, Targets, Weights};
use crate::scenario::schema::ChaosSection;

/// The settings of the named chaos profiles; `[chaos]` keys override them.
struct ProfileDefaults {
    start_ms: f64,
    faults_per_minute: f64,
    on_mark: f64,
    max_occurrence: u32,
    weights: [u32; 5],
    clock_kinds: [u32; 4],
    pause_ms: DistSpec,
    freeze: f64,
    partition_ms: DistSpec,
    hold: f64,
    restart_ms: DistSpec,
    max_step_ms: f64,
    max_drift_ppm: i64,
    slew_rate_ppm: u32,
    delay_ms: DistSpec,
    slow_for_ms: DistSpec,
    max_loss: f64,
    max_duplicate: f64,
}

/// The named profiles. `default`: about ten faults a minute of every kind, half of them at
/// a mark; GC-shaped pauses (Pareto from 20 ms, alpha 0.5, up to 60 s: half under 80 ms,
/// one in seven over a second, one in twenty over 10 s), a quarter of them freezing the whole
/// host; partitions from 200 ms with a tail to 30 s, dropping packets (TCP retransmits);
/// Jepsen clock bumps capped at 60 s and
/// strobes, drift up to ±500 ppm, ntpd's 500 ppm slews; VOPR-like clogged and lossy links.
fn profile_defaults(name: &str) -> Option<ProfileDefaults> {
    match name {
        "default" => Some(ProfileDefaults {
            start_ms: 1_000.0,
            faults_per_minute: 10.0,
            on_mark: 0.5,
            max_occurrence: 10,
            weights: [3, 3, 1, 2, 1],
            clock_kinds: [2, 1, 1, 1],
            pause_ms: DistSpec::Pareto {
                min: 20.0,
                alpha: 0.5,
                max: 60_000.0,
            },
            freeze: 0.25,
            partition_ms: DistSpec::Pareto {
                min: 200.0,
                alpha: 0.7,
                max: 30_000.0,
            },
            // Drop-mode partitions are what iptables does, and TCP retransmits across them:
            // the idealised hold mode is off unless asked for.
            hold: 0.0,
            restart_ms: DistSpec::Uniform(0.0, 10_000.0),
            max_step_ms: 60_000.0,
            max_drift_ppm: 500,
            slew_rate_ppm: 500,
            delay_ms: DistSpec::Pareto {
                min: 10.0,
                alpha: 0.8,
                max: 20_000.0,
            },
            slow_for_ms: DistSpec::Uniform(100.0, 10_000.0),
            max_loss: 0.3,
            // Every modelled service speaks TCP, where a message is never delivered twice; a
            // duplicate would be a fault of the simulation, not of the system (a storage
            // write applied twice reads as a lost update).
            max_duplicate: 0.0,
        }),
        _ => None,
    }
}

/// The range of `chaos.faults_per_minute`.
const MIN_FAULTS_PER_MINUTE: f64 = 0.001;
const MAX_FAULTS_PER_MINUTE: f64 = 10_000.0;
/// Most occurrences of a mark a drawn fault may wait for (`chaos.max_occurrence`).
const MAX_OCCURRENCE: u32 = 1_000_000;
/// Largest weight of a fault kind (`chaos.weights.*`).
const MAX_WEIGHT: u32 = 1_000_000;

/// The names `[chaos] profile` takes.
pub(crate) const PROFILES: &[&str] = &["default"];

/// Checks `[chaos]` and resolves it against the system: the nodes it may strike and the
/// marks its family's nodes reach.
pub(super) fn chaos(
    r: &mut Resolver,
    c: &ChaosSection,
    duration: Dur,
    system: &dyn System,
    layout: &Layout,
    max_faults: u64,
) -> Option<Chaos> {
    let ttl_ms = system.ttl().as_nanos() as f64 / 1e6;
    let name = c.profile.as_deref().unwrap_or("default");
    let Some(d) = profile_defaults(name) else {
        r.problems.push(
            "chaos.profile",
            format!(
                "no profile named `{name}` (profiles: {})",
                PROFILES.join(", ")
            ),
        );
        return None;
    };
    let start = r.ms("chaos.start_ms", c.start_ms.unwrap_or(d.start_ms));
    let ttl_ms = if ttl_ms.is_finite() && ttl_ms > 0.0 {
        ttl_ms
    } else {
        0.0
    };
    let liveness_ms = c.liveness_ms.unwrap_or(2.0 * ttl_ms + 10_000.0);
    let liveness = r.positive_ms("chaos.liveness_ms", liveness_ms);
    let tail = match c.quiet_tail_ms {
        Some(v) => r.ms("chaos.quiet_tail_ms", v),
        None => liveness.saturating_add(Dur::from_secs(1)),
    };
    if tail < liveness {
        r.problems.push(
            "chaos.quiet_tail_ms",
            format!(
                "must be at least chaos.liveness_ms ({} ms): recovery is judged inside the tail",
                liveness.as_millis()
            ),
        );
    }
    // Without a valid TTL (a problem already noted under `model`) the default tail means
    // nothing, and a problem about it would only mislead.
    let tail_derived = c.liveness_ms.is_none() && c.quiet_tail_ms.is_none();
    if start.saturating_add(tail) >= duration && !(tail_derived && ttl_ms == 0.0) {
        r.problems.push(
            "chaos",
            format!(
                "leaves no time for faults: start_ms ({}) + quiet_tail_ms ({}) must be less than scenario.duration_ms ({}); make the run longer",
                start.as_millis(),
                tail.as_millis(),
                duration.as_millis()
            ),
        );
    }
    // A mean gap from 6 ms to 16.7 hours: never zero, and far from overflowing true time.
    let rate = r.number(
        "chaos.faults_per_minute",
        c.faults_per_minute.unwrap_or(d.faults_per_minute),
        MIN_FAULTS_PER_MINUTE,
        MAX_FAULTS_PER_MINUTE,
    );
    let mean_gap = Dur::from_nanos((60e9 / rate).round() as u64);
    let on_mark_ppm = r.probability("chaos.on_mark", c.on_mark.unwrap_or(d.on_mark));
    let max_occurrence = r.count(
        "chaos.max_occurrence",
        c.max_occurrence.unwrap_or(d.max_occurrence),
        1,
        MAX_OCCURRENCE,
    );
    let w = c.weights.as_ref();
    let mut weight = |key: &str, v: Option<u32>, default: u32| {
        r.count(
            &format!("chaos.weights.{key}"),
            v.unwrap_or(default),
            0,
            MAX_WEIGHT,
        )
    };
    let weights = Weights {
        partition: weight("partition", w.and_then(|w| w.partition), d.weights[0]),
        pause: weight("pause", w.and_then(|w| w.pause), d.weights[1]),
        crash: weight("crash", w.and_then(|w| w.crash), d.weights[2]),
        clock: weight("clock", w.and_then(|w| w.clock), d.weights[3]),
        network: weight("network", w.and_then(|w| w.network), d.weights[4]),
    };
    let k = c.clock_kinds.as_ref();
    let mut kind = |key: &str, v: Option<u32>, default: u32| {
        r.count(
            &format!("chaos.clock_kinds.{key}"),
            v.unwrap_or(default),
            0,
            MAX_WEIGHT,
        )
    };
    let clock_kinds = ClockKinds {
        step: kind("step", k.and_then(|k| k.step), d.clock_kinds[0]),
        slew: kind("slew", k.and_then(|k| k.slew), d.clock_kinds[1]),
        strobe: kind("strobe", k.and_then(|k| k.strobe), d.clock_kinds[2]),
        drift: kind("drift", k.and_then(|k| k.drift), d.clock_kinds[3]),
    };
    if weights.clock > 0 && clock_kinds.total() == 0 {
        r.problems.push(
            "chaos.clock_kinds",
            "every kind of clock fault has weight 0 while chaos.weights.clock is not 0: give one \
             a weight, or set chaos.weights.clock = 0"
                .to_string(),
        );
    }
    let pause = r.dist("chaos.pause_ms", c.pause_ms.unwrap_or(d.pause_ms));
    let partition = r.dist(
        "chaos.partition_ms",
        c.partition_ms.unwrap_or(d.partition_ms),
    );
    let hold_ppm = r.probability("chaos.hold", c.hold.unwrap_or(d.hold));
    let freeze_ppm = r.probability("chaos.freeze", c.freeze.unwrap_or(d.freeze));
    let restart = r.dist("chaos.restart_ms", c.restart_ms.unwrap_or(d.restart_ms));
    let max_step = r.ms("chaos.max_step_ms", c.max_step_ms.unwrap_or(d.max_step_ms));
    let max_drift_ppm = c.max_drift_ppm.unwrap_or(d.max_drift_ppm);
    if !(0..=MAX_DRIFT_PPM).contains(&max_drift_ppm) {
        r.problems.push(
            "chaos.max_drift_ppm",
            format!("must be between 0 and {MAX_DRIFT_PPM}, not {max_drift_ppm}"),
        );
    }
    let slew_rate_ppm = c.slew_rate_ppm.unwrap_or(d.slew_rate_ppm);
    if slew_rate_ppm == 0 || i64::from(slew_rate_ppm) > MAX_SLEW_PPM {
        r.problems.push(
            "chaos.slew_rate_ppm",
            format!("must be between 1 and {MAX_SLEW_PPM}, not {slew_rate_ppm}"),
        );
    }
    let delay = r.dist("chaos.delay_ms", c.delay_ms.unwrap_or(d.delay_ms));
    let slow_for = r.dist("chaos.slow_for_ms", c.slow_for_ms.unwrap_or(d.slow_for_ms));
    let max_loss_ppm = r.probability("chaos.max_loss", c.max_loss.unwrap_or(d.max_loss));
    let max_duplicate_ppm = r.probability(
        "chaos.max_duplicate",
        c.max_duplicate.unwrap_or(d.max_duplicate),
    );
    Some(Chaos {
        profile: name.to_string(),
        start: Time::ZERO + start,
        quiet_from: Time::ZERO + duration.saturating_sub(tail),
        liveness,
        mean_gap,
        on_mark_ppm,
        max_occurrence,
        weights,
        clock_kinds,
        pause,
        partition,
        hold_ppm,
        freeze_ppm,
        restart,
        max_step,
        max_drift_ppm: max_drift_ppm.clamp(0, MAX_DRIFT_PPM),
        slew_rate_ppm: slew_rate_ppm.max(1),
        delay,
        slow_for,
        max_loss_ppm,
        max_duplicate_ppm,
        targets: Targets::of(layout, system.marks()),
        max_faults,
    })
}
