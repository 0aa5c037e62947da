//! Clocks inside a world: drift, steps and slews, and timers re-armed on both clocks.

use lockstep_sim::{ClockKind, Dur, Fault, NodeId, Time};

use crate::support::*;

const S: u64 = 1_000_000_000;

#[test]
fn a_drifting_monotonic_timer_fires_early_in_true_time() {
    let mut cfg = config(1, 60, 1);
    cfg.nodes[0].drift_ppm = 100_000; // 10% fast
    let mut w = world_with(
        cfg,
        vec![Probe::with_timers(vec![(
            ClockKind::Mono,
            Dur::from_secs(11),
            1,
        )])],
    );
    w.run();
    // 11 s of local time at 1.1x is 10 s of true time.
    assert_eq!(fired_at_ns(&w, 0, 1), vec![10 * S]);
}

#[test]
fn a_slow_clock_fires_late_and_reads_its_own_deadline() {
    let mut cfg = config(1, 60, 1);
    cfg.nodes[0].drift_ppm = -500; // crystal running 500 ppm slow
    let mut w = world_with(
        cfg,
        vec![Probe::with_timers(vec![(
            ClockKind::Mono,
            Dur::from_secs(10),
            1,
        )])],
    );
    w.run();
    let t = fired_at_ns(&w, 0, 1)[0];
    // 10 s / 0.9995, rounded up to the nanosecond.
    assert_eq!(t, 10_005_002_502);
    let recs = records(&w, 0);
    let lockstep_sim_fired = recs.iter().find_map(|(_, e)| match e {
        Ev::Fired { mono_ns, .. } => Some(*mono_ns),
        _ => None,
    });
    assert_eq!(lockstep_sim_fired, Some(10 * S as i64));
}

#[test]
fn a_forward_wall_step_fires_wall_timers_early_and_leaves_monotonic_ones() {
    let timers = vec![
        (ClockKind::Wall, Dur::from_secs(10), 1),
        (ClockKind::Mono, Dur::from_secs(10), 2),
    ];
    let mut cfg = config(1, 60, 1);
    cfg.faults.push(at_ms(
        2_000,
        Fault::ClockStep {
            node: NodeId(0),
            delta_ns: 5 * S as i64,
        },
    ));
    let mut w = world_with(cfg, vec![Probe::with_timers(timers)]);
    w.run();
    assert_eq!(
        fired_at_ns(&w, 0, 1),
        vec![5 * S],
        "wall timer re-armed by the step"
    );
    assert_eq!(
        fired_at_ns(&w, 0, 2),
        vec![10 * S],
        "monotonic timer unaffected"
    );
}

#[test]
fn a_backward_wall_step_delays_wall_timers() {
    let mut cfg = config(1, 60, 1);
    cfg.faults.push(at_ms(
        2_000,
        Fault::ClockStep {
            node: NodeId(0),
            delta_ns: -3 * S as i64,
        },
    ));
    let mut w = world_with(
        cfg,
        vec![Probe::with_timers(vec![(
            ClockKind::Wall,
            Dur::from_secs(10),
            1,
        )])],
    );
    w.run();
    assert_eq!(fired_at_ns(&w, 0, 1), vec![13 * S]);
}

#[test]
fn a_step_past_the_deadline_fires_the_wall_timer_at_once() {
    let mut cfg = config(1, 60, 1);
    cfg.faults.push(at_ms(
        2_000,
        Fault::ClockStep {
            node: NodeId(0),
            delta_ns: 30 * S as i64,
        },
    ));
    let mut w = world_with(
        cfg,
        vec![Probe::with_timers(vec![(
            ClockKind::Wall,
            Dur::from_secs(10),
            1,
        )])],
    );
    w.run();
    assert_eq!(fired_at_ns(&w, 0, 1), vec![2 * S]);
}

#[test]
fn a_slew_speeds_the_wall_clock_for_its_duration_only() {
    let mut cfg = config(1, 60, 1);
    // +1 s at 500,000 ppm: the wall clock runs 1.5x for 2 s of true time.
    cfg.faults.push(at_ms(
        0,
        Fault::ClockSlew {
            node: NodeId(0),
            delta_ns: S as i64,
            rate_ppm: 500_000,
        },
    ));
    let timers = vec![
        (ClockKind::Wall, Dur::from_secs(10), 1),
        (ClockKind::Mono, Dur::from_secs(10), 2),
    ];
    let mut w = world_with(cfg, vec![Probe::with_timers(timers)]);
    w.run();
    assert_eq!(fired_at_ns(&w, 0, 1), vec![9 * S]);
    assert_eq!(fired_at_ns(&w, 0, 2), vec![10 * S]);
    let offset = w
        .clocks(NodeId(0))
        .wall(Time::from_millis(30_000))
        .as_nanos()
        - w.clocks(NodeId(0))
            .mono(Time::from_millis(30_000))
            .as_nanos();
    assert_eq!(
        offset,
        lockstep_sim::world::DEFAULT_WALL_EPOCH.as_nanos() + S as i64
    );
}

#[test]
fn a_drift_change_rearms_timers_on_both_clocks() {
    let mut cfg = config(1, 60, 1);
    cfg.faults.push(at_ms(
        5_000,
        Fault::ClockDrift {
            node: NodeId(0),
            drift_ppm: 100_000,
        },
    ));
    let timers = vec![
        (ClockKind::Mono, Dur::from_secs(16), 1),
        (ClockKind::Wall, Dur::from_secs(16), 2),
    ];
    let mut w = world_with(cfg, vec![Probe::with_timers(timers)]);
    w.run();
    // 5 s at 1.0, then 11 s of local time at 1.1 = 10 s: both fire at 15 s.
    assert_eq!(fired_at_ns(&w, 0, 1), vec![15 * S]);
    assert_eq!(fired_at_ns(&w, 0, 2), vec![15 * S]);
}

#[test]
fn the_monotonic_clock_never_steps_and_runs_through_a_pause() {
    let mut cfg = config(1, 60, 1);
    cfg.faults.push(at_ms(
        1_000,
        Fault::ClockStep {
            node: NodeId(0),
            delta_ns: -(20 * S as i64),
        },
    ));
    cfg.faults.push(at_ms(
        2_000,
        Fault::Pause {
            node: NodeId(0),
            duration: Some(Dur::from_secs(5)),
        },
    ));
    let mut w = world_with(
        cfg,
        vec![Probe::with_timers(vec![(
            ClockKind::Mono,
            Dur::from_secs(3),
            1,
        )])],
    );
    w.run();
    // Due at 3 s during the pause: handled at the resume (7 s), reading the true elapsed time.
    let recs = records(&w, 0);
    assert_eq!(recs.len(), 1);
    let (
        t,
        Ev::Fired {
            mono_ns, wall_ns, ..
        },
    ) = &recs[0]
    else {
        panic!("{recs:?}")
    };
    assert_eq!(*t, 7_000);
    assert_eq!(*mono_ns, 7 * S as i64);
    assert_eq!(
        *wall_ns,
        lockstep_sim::world::DEFAULT_WALL_EPOCH.as_nanos() + 7 * S as i64 - 20 * S as i64
    );
}

const MS: u64 = 1_000_000;

fn strobe(delta_ms: i64, period_ms: u64, duration_ms: u64) -> Fault {
    Fault::ClockStrobe {
        node: NodeId(0),
        delta_ns: delta_ms * MS as i64,
        period: Dur::from_millis(period_ms),
        duration: Dur::from_millis(duration_ms),
    }
}

/// How far node 0's wall clock is from where it would be with no fault, in ms, at true time
/// `ms` (perfect clocks, both at zero offset from the start).
fn wall_offset_ms(w: &lockstep_sim::World<Probe>, ms: u64) -> i64 {
    let t = Time::from_millis(ms);
    let c = w.clocks(NodeId(0));
    let wall = c.wall(t).as_nanos() - lockstep_sim::world::DEFAULT_WALL_EPOCH.as_nanos();
    (wall - c.mono(t).as_nanos()) / MS as i64
}

/// The offset at each of `times` (ms, increasing), running the world up to each.
fn offsets_at(w: &mut lockstep_sim::World<Probe>, times: &[u64]) -> Vec<i64> {
    times
        .iter()
        .map(|&ms| {
            w.run_until(Time::from_millis(ms));
            wall_offset_ms(w, ms)
        })
        .collect()
}

#[test]
fn a_clock_strobe_alternates_the_wall_offset_and_leaves_it_where_it_was() {
    // +200 ms every 10 ms for 105 ms from 1 s: steps at 1000 (+), 1010 (-), ..., 1100 (+), an
    // odd number, so the end at 1105 steps back. Timers on the monotonic clock read both
    // clocks at times between the steps.
    let probe_at = [990, 1_005, 1_015, 1_025, 1_095, 1_101, 1_106, 2_000];
    let timers = probe_at
        .iter()
        .map(|&ms| (ClockKind::Mono, Dur::from_millis(ms), ms as u32))
        .collect();
    let mut cfg = config(1, 5, 1);
    cfg.faults.push(at_ms(1_000, strobe(200, 10, 105)));
    let mut w = world_with(cfg, vec![Probe::with_timers(timers)]);
    w.run();
    let epoch = lockstep_sim::world::DEFAULT_WALL_EPOCH.as_nanos();
    let seen: Vec<(u64, i64)> = records(&w, 0)
        .iter()
        .map(|(t, e)| match e {
            Ev::Fired {
                mono_ns, wall_ns, ..
            } => {
                assert_eq!(
                    *mono_ns,
                    (*t * MS) as i64,
                    "the monotonic clock never moved"
                );
                (*t, (wall_ns - epoch - mono_ns) / MS as i64)
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let expect: Vec<(u64, i64)> = probe_at
        .iter()
        .zip([0, 200, 0, 200, 0, 200, 0, 0])
        .map(|(&t, o)| (t, o))
        .collect();
    assert_eq!(seen, expect);
    let log: Vec<(u64, bool, &str)> = w
        .fault_log()
        .iter()
        .map(|f| (f.time.as_nanos() / MS, f.ended, f.detail.as_str()))
        .collect();
    assert_eq!(
        log,
        vec![
            (
                1_000,
                false,
                "n0 wall clock strobes +200ms every 10ms for 105ms"
            ),
            (1_105, true, "n0 wall clock strobe ends, stepped back"),
        ]
    );
}

#[test]
fn a_strobe_of_whole_periods_ends_with_its_own_last_step_back() {
    // -30 ms every 25 ms for 100 ms: steps at 0, 25, 50, 75 ms after the start, an even
    // number; the end steps nothing.
    let mut cfg = config(1, 5, 1);
    cfg.faults.push(at_ms(1_000, strobe(-30, 25, 100)));
    let mut w = world_with(cfg, vec![Probe::default()]);
    let offsets = offsets_at(
        &mut w,
        &[999, 1_000, 1_024, 1_025, 1_060, 1_075, 1_099, 1_100],
    );
    assert_eq!(offsets, vec![0, -30, -30, 0, -30, 0, 0, 0]);
    w.run();
    let ends: Vec<&str> = w.fault_log().iter().map(|f| f.detail.as_str()).collect();
    assert_eq!(ends[1], "n0 wall clock strobe ends, back already");
    assert_eq!(w.fault_log()[1].time, Time::from_millis(1_100));
}

#[test]
fn a_strobe_fires_wall_timers_early_and_late_and_leaves_monotonic_ones() {
    // Wall timers at 1.1 s and 1.25 s, a monotonic one at 1.1 s. A strobe of +200 ms every
    // 100 ms from 1 s puts the wall clock at 1.2 s at once: the first wall timer fires at
    // 1 s. The second is due at wall 1.25 s: reached at 1.05 s on the stepped clock.
    let timers = vec![
        (ClockKind::Wall, Dur::from_millis(1_100), 1),
        (ClockKind::Wall, Dur::from_millis(1_250), 2),
        (ClockKind::Mono, Dur::from_millis(1_100), 3),
    ];
    let mut cfg = config(1, 5, 1);
    cfg.faults.push(at_ms(1_000, strobe(200, 100, 1_000)));
    let mut w = world_with(cfg, vec![Probe::with_timers(timers)]);
    w.run();
    assert_eq!(
        fired_at_ns(&w, 0, 1),
        vec![1_000 * MS],
        "early, at the step"
    );
    assert_eq!(
        fired_at_ns(&w, 0, 2),
        vec![1_050 * MS],
        "early by the delta"
    );
    assert_eq!(
        fired_at_ns(&w, 0, 3),
        vec![1_100 * MS],
        "monotonic untouched"
    );

    // Backwards: -200 ms every 100 ms. A wall timer due at 1.05 s reads 850 ms then; it
    // waits for the step back at 1.1 s and fires late, at it.
    let mut cfg = config(1, 5, 1);
    cfg.faults.push(at_ms(1_000, strobe(-200, 100, 1_000)));
    let timers = vec![(ClockKind::Wall, Dur::from_millis(1_050), 1)];
    let mut w = world_with(cfg, vec![Probe::with_timers(timers)]);
    w.run();
    assert_eq!(
        fired_at_ns(&w, 0, 1),
        vec![1_100 * MS],
        "late, at the step back"
    );
}

#[test]
fn a_crash_does_not_stop_a_clock_strobe() {
    // The node crashes 12 ms into a strobe of +50 ms every 10 ms for 60 ms; the clock keeps
    // strobing and is back at the end.
    let mut cfg = config(1, 5, 1);
    cfg.faults.push(at_ms(1_000, strobe(50, 10, 60)));
    cfg.faults.push(at_ms(
        1_012,
        Fault::Crash {
            node: NodeId(0),
            restart_after: None,
        },
    ));
    let mut w = world_with(cfg, vec![Probe::default()]);
    let offsets = offsets_at(&mut w, &[1_005, 1_015, 1_025, 1_035, 1_045, 1_055, 1_065]);
    assert_eq!(offsets, vec![50, 0, 50, 0, 50, 0, 0]);
    assert_eq!(w.status(NodeId(0)), lockstep_sim::Status::Down);
}

#[test]
fn two_strobes_on_one_node_stack_and_each_takes_back_its_own_steps() {
    // A: +200 ms every 10 ms for 100 ms from 1 s (on in [1000, 1010), [1020, 1030), ...).
    // B: -50 ms every 30 ms for 100 ms from 1.005 s (on in [1005, 1035), [1065, 1095)).
    let mut cfg = config(1, 5, 1);
    cfg.faults.push(at_ms(1_000, strobe(200, 10, 100)));
    cfg.faults.push(at_ms(1_005, strobe(-50, 30, 100)));
    let mut w = world_with(cfg, vec![Probe::default()]);
    let offsets = offsets_at(
        &mut w,
        &[1_002, 1_007, 1_012, 1_036, 1_066, 1_072, 1_096, 1_200],
    );
    assert_eq!(offsets, vec![200, 150, -50, 0, 150, -50, 0, 0]);
}
