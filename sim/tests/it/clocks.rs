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
