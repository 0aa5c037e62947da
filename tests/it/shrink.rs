//! The two library halves of `lockstep hunt`: shrinking a failing fault schedule
//! (`lockstep::shrink`) and writing a schedule back as a standalone scenario file
//! (`lockstep::scenario::write`).

use std::path::Path;

use lockstep::scenario::write::write_scenario;
use lockstep::shrink::{ShrinkError, ShrinkLimits, shrink};
use lockstep::{Schedule, load, parse, run, run_schedule};
use lockstep_check::Validity;
use lockstep_sim::{Dur, Fault, NodeId, PartitionMode, ScheduledFault, Shape, Time, When};

use crate::support::{root, scenario_files};

fn n(i: u32) -> NodeId {
    NodeId(i)
}

fn ns(v: &[u32]) -> Vec<NodeId> {
    v.iter().map(|&i| NodeId(i)).collect()
}

fn at(ms: u64, fault: Fault) -> ScheduledFault {
    at_ns(ms * 1_000_000, fault)
}

fn at_ns(ns: u64, fault: Fault) -> ScheduledFault {
    ScheduledFault::new(When::At(Time::from_nanos(ns)), fault)
}

fn on(node: u32, mark: &str, occurrence: u32, fault: Fault) -> ScheduledFault {
    ScheduledFault::new(
        When::OnMark {
            node: n(node),
            mark: mark.to_string(),
            occurrence,
            before: None,
        },
        fault,
    )
}

fn ms(v: u64) -> Dur {
    Dur::from_millis(v)
}

fn pause(node: u32, d: Option<Dur>) -> Fault {
    Fault::Pause {
        node: n(node),
        duration: d,
    }
}

fn step(node: u32, delta_ns: i64) -> Fault {
    Fault::ClockStep {
        node: n(node),
        delta_ns,
    }
}

fn partition(shape: Shape, mode: PartitionMode, duration: Option<Dur>) -> Fault {
    Fault::Partition {
        shape,
        mode,
        duration,
    }
}

/// Thirty faults over six nodes, two of which matter to [`pause_and_step`]: an open-ended
/// pause of node 1 on its third `validity-checked`, and a +5432.1 ms step of node 2 at 4 s.
fn thirty_faults() -> Schedule {
    use PartitionMode::{Drop, Hold};
    let faults = vec![
        at(
            0,
            Fault::ClockDrift {
                node: n(3),
                drift_ppm: 40,
            },
        ),
        at(100, pause(0, Some(ms(2_000)))),
        at(
            200,
            partition(Shape::Isolate { node: n(4) }, Drop, Some(ms(3_000))),
        ),
        at(500, step(2, 1_000_000_000)),
        at(
            700,
            Fault::Crash {
                node: n(5),
                restart_after: Some(ms(4_000)),
            },
        ),
        at(
            900,
            Fault::Delay {
                from: ns(&[0, 1]),
                to: ns(&[2]),
                extra: ms(30),
                duration: Some(ms(5_000)),
            },
        ),
        at(1_000, pause(1, Some(ms(5_000)))),
        at(
            1_500,
            Fault::ClockSlew {
                node: n(1),
                delta_ns: -300_000_000,
                rate_ppm: 500,
            },
        ),
        at(
            2_000,
            partition(
                Shape::Split {
                    groups: vec![ns(&[0, 1]), ns(&[2, 3])],
                },
                Hold,
                None,
            ),
        ),
        at(2_500, Fault::Heal),
        on(3, "granted", 2, pause(3, None)),
        at(3_000, Fault::Resume { node: n(3) }),
        on(1, "validity-checked", 3, pause(1, None)),
        at(
            3_500,
            Fault::Crash {
                node: n(4),
                restart_after: None,
            },
        ),
        at(4_000, step(2, 5_432_100_000)),
        at(4_500, Fault::Restart { node: n(4) }),
        at(5_000, step(2, -4_000_000_000)),
        at(
            6_000,
            partition(
                Shape::OneWay {
                    from: ns(&[0]),
                    to: ns(&[1, 2]),
                },
                Drop,
                Some(ms(700)),
            ),
        ),
        at(
            7_000,
            partition(
                Shape::MajorityMinority {
                    nodes: ns(&[0, 1, 2, 3, 4]),
                },
                Drop,
                Some(ms(1_000)),
            ),
        ),
        at(
            8_000,
            Fault::ClockDrift {
                node: n(2),
                drift_ppm: -120,
            },
        ),
        at(
            9_000,
            Fault::Delay {
                from: ns(&[3]),
                to: ns(&[0, 1, 2]),
                extra: ms(1_000),
                duration: None,
            },
        ),
        at(11_000, step(2, 3_000_000_000)),
        at(
            12_000,
            partition(
                Shape::Bridge {
                    nodes: ns(&[0, 1, 2, 3, 4]),
                },
                Hold,
                Some(ms(2_000)),
            ),
        ),
        at(13_000, pause(5, Some(ms(9_000)))),
        at(
            15_000,
            partition(
                Shape::MajoritiesRing {
                    nodes: ns(&[0, 1, 2, 3, 4]),
                },
                Drop,
                None,
            ),
        ),
        at(16_000, Fault::Heal),
        at(
            20_000,
            Fault::ClockSlew {
                node: n(0),
                delta_ns: 2_000_000_000,
                rate_ppm: 1_000,
            },
        ),
        at(
            30_000,
            Fault::Crash {
                node: n(0),
                restart_after: Some(ms(100)),
            },
        ),
        at(45_000, pause(2, Some(ms(500)))),
        at(59_000, step(1, 3_000_000_000)),
    ];
    assert_eq!(faults.len(), 30);
    Schedule {
        faults,
        duration: ms(60_000),
    }
}

/// Fails iff node 1 is paused for at least 7.3 s (an open-ended pause counts) and node 2's
/// clock steps forward by at least 2 s before 10 s.
fn pause_and_step(s: &Schedule) -> bool {
    let long_pause = s.faults.iter().any(|f| {
        matches!(f.fault, Fault::Pause { node: NodeId(1), duration }
            if duration.is_none_or(|d| d >= ms(7_300)))
    });
    let early_step = s.faults.iter().any(|f| {
        matches!((&f.when, &f.fault), (When::At(t), Fault::ClockStep { node: NodeId(2), delta_ns })
            if *t < Time::from_millis(10_000) && *delta_ns >= 2_000_000_000)
    });
    long_pause && early_step
}

#[test]
fn a_pause_and_a_step_among_thirty_faults_shrink_to_their_boundaries() {
    let original = thirty_faults();
    let shrunk = shrink(&original, ShrinkLimits::default(), pause_and_step).expect("it fails");
    // The open-ended pause becomes bounded at the boundary, its trigger's occurrence goes to
    // 1, the step keeps its time and shrinks to +2 s, and the run ends at the step.
    let expected = Schedule {
        faults: vec![
            on(1, "validity-checked", 1, pause(1, Some(ms(7_300)))),
            at(4_000, step(2, 2_000_000_000)),
        ],
        duration: ms(4_000),
    };
    assert_eq!(shrunk.schedule, expected);
    assert!(shrunk.complete);
    assert!(shrunk.accepted >= 28 + 2, "{shrunk:?}");
    assert!(
        shrunk.tries <= ShrinkLimits::default().max_tries,
        "{shrunk:?}"
    );
    // The figure, so that a change to the search shows in review: 30 drops, then binary
    // searches over 60,000 ms, 3 occurrences, 5,433 ms and 60,000 ms.
    assert_eq!(shrunk.tries, 78, "{shrunk:?}");
}

#[test]
fn every_magnitude_shrinks_toward_zero_on_its_grid_and_keeps_its_sign() {
    use PartitionMode::Drop;
    let original = Schedule {
        faults: vec![
            at(1_000, partition(Shape::Isolate { node: n(0) }, Drop, None)),
            at(
                2_000,
                Fault::Crash {
                    node: n(1),
                    restart_after: Some(ms(3_000)),
                },
            ),
            at(
                3_000,
                Fault::Delay {
                    from: ns(&[0]),
                    to: ns(&[1]),
                    extra: ms(900),
                    duration: Some(ms(10_000)),
                },
            ),
            at(
                4_000,
                Fault::ClockSlew {
                    node: n(0),
                    delta_ns: -7_000_000_000,
                    rate_ppm: 500,
                },
            ),
            at(
                5_000,
                Fault::ClockDrift {
                    node: n(3),
                    drift_ppm: -400,
                },
            ),
            at(6_000, step(2, 900_000)),
            on(2, "granted", 5, pause(2, Some(ms(20_000)))),
            at(7_000, step(1, -3)),
        ],
        duration: ms(30_000),
    };
    let needs = |s: &Schedule| {
        let f = |i: usize| s.faults.get(i).map(|f| (&f.when, &f.fault));
        s.faults.len() == 8
            && matches!(f(0), Some((_, Fault::Partition { duration, .. })) if duration.is_none_or(|d| d >= ms(1_200)))
            && matches!(f(1), Some((_, Fault::Crash { restart_after: Some(d), .. })) if d.as_nanos() >= 500_000)
            && matches!(f(2), Some((_, Fault::Delay { extra, duration: Some(d), .. }))
                if extra.as_nanos() >= 250_500_000 && *d >= ms(2_000))
            && matches!(f(3), Some((_, Fault::ClockSlew { delta_ns, .. })) if *delta_ns <= -1_500_000_000)
            && matches!(f(4), Some((_, Fault::ClockDrift { drift_ppm, .. })) if *drift_ppm <= -150)
            && matches!(f(5), Some((_, Fault::ClockStep { delta_ns, .. })) if *delta_ns >= 123_400)
            && matches!(f(6), Some((When::OnMark { occurrence, .. }, _)) if *occurrence >= 2)
            && matches!(f(7), Some((_, Fault::ClockStep { delta_ns, .. })) if *delta_ns < 0)
    };
    let shrunk = shrink(&original, ShrinkLimits::default(), needs).expect("it fails");
    let expected = Schedule {
        faults: vec![
            at(
                1_000,
                partition(Shape::Isolate { node: n(0) }, Drop, Some(ms(1_200))),
            ),
            // The boundary is 0.5 ms; the grid of a 3 s value is whole ms.
            at(
                2_000,
                Fault::Crash {
                    node: n(1),
                    restart_after: Some(ms(1)),
                },
            ),
            at(
                3_000,
                Fault::Delay {
                    from: ns(&[0]),
                    to: ns(&[1]),
                    extra: ms(251),
                    duration: Some(ms(2_000)),
                },
            ),
            at(
                4_000,
                Fault::ClockSlew {
                    node: n(0),
                    delta_ns: -1_500_000_000,
                    rate_ppm: 500,
                },
            ),
            at(
                5_000,
                Fault::ClockDrift {
                    node: n(3),
                    drift_ppm: -150,
                },
            ),
            // 0.9 ms is searched in whole µs.
            at(6_000, step(2, 124_000)),
            // Any pause will do, but a file's `for_ms` is positive: one grid step.
            on(2, "granted", 2, pause(2, Some(ms(1)))),
            at(7_000, step(1, -1)),
        ],
        duration: ms(7_000),
    };
    assert_eq!(shrunk.schedule, expected);
    assert!(shrunk.complete);
}

#[test]
fn the_same_schedule_and_predicate_shrink_the_same_way_twice() {
    let original = thirty_faults();
    let a = shrink(&original, ShrinkLimits::default(), pause_and_step).expect("it fails");
    let b = shrink(&original, ShrinkLimits::default(), pause_and_step).expect("it fails");
    assert_eq!(a, b);
    let limits = ShrinkLimits { max_tries: 40 };
    let a = shrink(&original, limits, pause_and_step).expect("it fails");
    let b = shrink(&original, limits, pause_and_step).expect("it fails");
    assert_eq!(a, b);
}

#[test]
fn a_predicate_that_always_fails_shrinks_to_no_fault_and_one_millisecond() {
    let shrunk = shrink(&thirty_faults(), ShrinkLimits::default(), |_| true).expect("it fails");
    assert_eq!(
        shrunk.schedule,
        Schedule {
            faults: Vec::new(),
            duration: ms(1),
        }
    );
    assert!(shrunk.complete);
}

#[test]
fn max_tries_bounds_the_calls_of_the_predicate() {
    let original = thirty_faults();
    for max_tries in [1, 2, 10, 50] {
        let mut calls = 0;
        let shrunk = shrink(&original, ShrinkLimits { max_tries }, |s| {
            calls += 1;
            pause_and_step(s)
        })
        .expect("it fails");
        assert_eq!(shrunk.tries, calls);
        assert!(calls <= max_tries, "{calls} calls for at most {max_tries}");
        assert!(!shrunk.complete);
        // Stopped early, it still gives a failing schedule no larger than the original.
        assert!(pause_and_step(&shrunk.schedule));
        assert!(shrunk.schedule.faults.len() <= original.faults.len());
        if max_tries == 1 {
            assert_eq!(shrunk.schedule, original);
        }
    }
}

#[test]
fn a_schedule_that_passes_cannot_be_shrunk() {
    let mut calls = 0;
    let result = shrink(&thirty_faults(), ShrinkLimits::default(), |_| {
        calls += 1;
        false
    });
    assert_eq!(result, Err(ShrinkError::OriginalPasses));
    assert_eq!(calls, 1);
}

#[test]
fn a_panic_in_the_predicate_is_raised_again_not_taken_for_a_failure() {
    let mut calls = 0;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        shrink(&thirty_faults(), ShrinkLimits::default(), |_| {
            calls += 1;
            assert!(calls < 3, "harness bug on the third run");
            true
        })
    }));
    let payload = caught.expect_err("the panic comes through");
    let message = payload
        .downcast_ref::<&str>()
        .expect("the assertion's message");
    assert_eq!(*message, "harness bug on the third run");
    assert_eq!(calls, 3, "no run after the panic");
}

/// K1 with five faults that have nothing to do with it: drift on storage, a step and a short
/// partition of client-2, a delay to the clients, a short pause of the server, all but the
/// first two well after the stale write.
#[test]
fn k1_with_irrelevant_faults_shrinks_back_to_its_single_pause_and_reproduces() {
    let path = root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml");
    let text = std::fs::read_to_string(&path).expect("K1");
    let scenario = parse(&text, &path).expect("K1 loads");
    let names = scenario.node_names();
    let id = |name: &str| NodeId(names.iter().position(|n| n == name).expect("a node") as u32);
    let (redis, storage, client_2) = (id("redis"), id("storage"), id("client-2"));
    let seed = scenario.seed;
    let mut original = scenario.schedule(seed);
    let pause = original.faults[0].clone();
    original.faults.splice(
        0..0,
        [
            at(
                0,
                Fault::ClockDrift {
                    node: storage,
                    drift_ppm: 300,
                },
            ),
            at(
                1,
                Fault::ClockStep {
                    node: client_2,
                    delta_ns: 50_000_000,
                },
            ),
        ],
    );
    original.faults.extend([
        at(
            20_000,
            partition(
                Shape::Isolate { node: client_2 },
                PartitionMode::Drop,
                Some(ms(300)),
            ),
        ),
        at(
            25_000,
            Fault::ClockStep {
                node: client_2,
                delta_ns: -200_000_000,
            },
        ),
        at(
            30_000,
            Fault::Delay {
                from: vec![storage],
                to: vec![id("client-1"), client_2],
                extra: ms(5),
                duration: Some(ms(1_000)),
            },
        ),
        at(
            40_000,
            Fault::Pause {
                node: redis,
                duration: Some(ms(100)),
            },
        ),
    ]);
    let fails = |s: &Schedule| run_schedule(&scenario, seed, s, false).judged == Validity::Invalid;
    let shrunk = shrink(&original, ShrinkLimits::default(), fails).expect("K1 fails");

    let [only] = shrunk.schedule.faults.as_slice() else {
        panic!("one fault should remain: {shrunk:?}");
    };
    let Fault::Pause {
        duration: Some(d), ..
    } = only.fault
    else {
        panic!("the pause should remain, bounded: {shrunk:?}");
    };
    assert_eq!(only.when, pause.when);
    // Shorter than the 15 s of the file, but longer than what the lease has left after the
    // validity check (TTL 10 s less the drift allowance of 1 % + 2 ms, less the time since
    // SET): the key must expire and client-2 must get in while client-1 sleeps.
    // (On seed 1: 9,888 ms, and the run cut from 60 s to 10,393 ms, in 38 runs.)
    assert!(d < ms(15_000) && d > ms(9_500), "{shrunk:?}");
    assert!(shrunk.schedule.duration < ms(15_000), "{shrunk:?}");
    assert!(shrunk.complete);
    assert!(shrunk.tries <= 60, "{shrunk:?}");

    // It reproduces: as a schedule, and as the file `hunt` would write.
    let again = run_schedule(&scenario, seed, &shrunk.schedule, false);
    assert_eq!(again.judged, Validity::Invalid);
    let note = format!(
        "written by lockstep hunt from {} seed {seed}; 1 fault",
        path.display()
    );
    let written =
        write_scenario(&text, &path, &names, &shrunk.schedule, seed, &note).expect("it writes");
    let replayed = parse(&written, Path::new("min.toml")).expect("it loads");
    let r = run(&replayed, replayed.seed, false);
    assert_eq!(r.judged, Validity::Invalid);
    assert_eq!(r.trace_hash, again.trace_hash);
}

// ---------------------------------------------------------------------------------------
// Writing a schedule back as a scenario file.

/// The fields of a scenario other than its faults, seeds and duration, which a written file
/// must keep.
fn kept(s: &lockstep::Scenario) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        s.name,
        s.description,
        s.max_events,
        s.system,
        s.clocks,
        s.link,
        s.links,
        s.expect,
        s.check_options
    )
}

#[test]
fn every_catalogue_file_written_back_replays_its_schedule() {
    for path in scenario_files("scenarios/catalogue") {
        let text = std::fs::read_to_string(&path).expect("readable");
        let original = parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
        let seed = 1_000_003;
        let schedule = original.schedule(seed);
        let written = write_scenario(
            &text,
            &path,
            &original.node_names(),
            &schedule,
            seed,
            "round trip",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let back = parse(&written, &path).unwrap_or_else(|e| panic!("{e}\n{written}"));
        assert_eq!(back.schedule(seed), schedule, "{}", path.display());
        assert_eq!(kept(&back), kept(&original), "{}", path.display());
        assert_eq!(back.seed, seed);
        assert_eq!(back.seeds, lockstep::Seeds::List(vec![seed]));
        assert!(written.starts_with("# round trip\n"), "{written}");
    }
}

#[test]
fn a_written_file_runs_as_its_original_does() {
    for file in [
        "k1-gc-pause-unfenced.toml",
        "k4-redlock-clock-jump.toml",
        "j8-zk-client-partition.toml",
    ] {
        let path = root().join("scenarios/catalogue").join(file);
        let text = std::fs::read_to_string(&path).expect("readable");
        let original = load(&path).expect("loads").scenario;
        let seed = 7;
        let schedule = original.schedule(seed);
        let written = write_scenario(
            &text,
            &path,
            &original.node_names(),
            &schedule,
            seed,
            "same run",
        )
        .expect("writes");
        let back = parse(&written, &path).expect("loads");
        assert_eq!(
            run(&back, back.seed, false).trace_hash,
            run(&original, seed, false).trace_hash,
            "{file}"
        );
    }
}

/// A Redlock system with five instances: nodes `redis-1` .. `redis-5` (0-4), `storage` (5),
/// `client-1` .. `client-3` (6-8).
const REDLOCK: &str = r#"
# A header comment that must survive.
[scenario]
name = "every-fault"
duration_ms = 123_456.789_123  # awkward on purpose
seed = 3
seeds = { from = 1, count = 10 }

[model]
kind = "redlock"
ttl_ms = 10_000

[workload]
clients = 3

[[fault]]
at_ms = 1
pause = { node = "client-1", for_ms = 100 }

[chaos]
profile = "anything the lead adds"

[expect]
verdict = "valid"
"#;

#[test]
fn every_fault_kind_and_shape_is_written_and_read_back() {
    use PartitionMode::{Drop, Hold};
    let path = Path::new("every-fault.toml");
    let without_chaos = REDLOCK.replace("[chaos]\nprofile = \"anything the lead adds\"\n", "");
    let scenario = parse(&without_chaos, path).unwrap_or_else(|e| panic!("{e}"));
    let names = scenario.node_names();
    assert_eq!(names[5], "storage");
    let schedule = Schedule {
        faults: vec![
            at(0, pause(6, None)),
            at_ns(1, pause(7, Some(Dur::from_nanos(1)))),
            on(6, "validity-checked", 3, Fault::Resume { node: n(6) }),
            on(
                7,
                "acquire-sent",
                1,
                Fault::Crash {
                    node: n(0),
                    restart_after: None,
                },
            ),
            at(
                10,
                Fault::Crash {
                    node: n(1),
                    restart_after: Some(Dur::ZERO),
                },
            ),
            at(
                11,
                Fault::Crash {
                    node: n(2),
                    restart_after: Some(Dur::from_nanos(123_456_789_123)),
                },
            ),
            at(12, Fault::Restart { node: n(0) }),
            at(20, partition(Shape::Isolate { node: n(3) }, Drop, None)),
            at(
                21,
                partition(
                    Shape::Split {
                        groups: vec![ns(&[0, 1]), ns(&[2]), ns(&[3, 4, 5])],
                    },
                    Hold,
                    Some(ms(5)),
                ),
            ),
            at(
                22,
                partition(
                    Shape::OneWay {
                        from: ns(&[6]),
                        to: ns(&[0, 1, 2]),
                    },
                    Drop,
                    Some(ms(7)),
                ),
            ),
            at(
                23,
                partition(
                    Shape::OneWay {
                        from: ns(&[0, 1]),
                        to: ns(&[8]),
                    },
                    Hold,
                    None,
                ),
            ),
            at(
                24,
                partition(
                    Shape::MajorityMinority {
                        nodes: ns(&[0, 1, 2, 3, 4]),
                    },
                    Drop,
                    Some(ms(1)),
                ),
            ),
            at(
                25,
                partition(
                    Shape::Bridge {
                        nodes: ns(&[0, 1, 2, 3, 4]),
                    },
                    Hold,
                    Some(ms(2)),
                ),
            ),
            at(
                26,
                partition(
                    Shape::MajoritiesRing {
                        nodes: ns(&[0, 1, 2, 3, 4]),
                    },
                    Drop,
                    Some(ms(3)),
                ),
            ),
            at(27, Fault::Heal),
            at(30, step(0, 1)),
            at(31, step(1, -1)),
            at(32, step(2, 123_456_789_123)),
            at(33, step(3, -123_456_789_123)),
            at(34, step(4, 0)),
            at(
                35,
                Fault::ClockSlew {
                    node: n(6),
                    delta_ns: -999_999,
                    rate_ppm: 1,
                },
            ),
            at(
                36,
                Fault::ClockSlew {
                    node: n(7),
                    delta_ns: 1_000_001,
                    rate_ppm: 500,
                },
            ),
            at(
                40,
                Fault::ClockDrift {
                    node: n(5),
                    drift_ppm: -250_000,
                },
            ),
            at(
                41,
                Fault::ClockDrift {
                    node: n(8),
                    drift_ppm: 37,
                },
            ),
            at(
                50,
                Fault::Delay {
                    from: ns(&[6, 7, 8]),
                    to: ns(&[5]),
                    extra: Dur::from_nanos(3),
                    duration: None,
                },
            ),
            at(
                51,
                Fault::Delay {
                    from: ns(&[5]),
                    to: ns(&[6]),
                    extra: ms(90_000),
                    duration: Some(Dur::from_nanos(999_999_999)),
                },
            ),
            at(
                52,
                Fault::Degrade {
                    from: ns(&[5]),
                    to: ns(&[6, 7]),
                    loss_ppm: 0,
                    duplicate_ppm: 123_457,
                    duration: Some(ms(4)),
                },
            ),
            at(
                53,
                Fault::Degrade {
                    from: ns(&[0, 1]),
                    to: ns(&[5]),
                    loss_ppm: 1,
                    duplicate_ppm: 0,
                    duration: None,
                },
            ),
            at(
                54,
                Fault::ClockStrobe {
                    node: n(2),
                    delta_ns: -1_500_001,
                    period: Dur::from_nanos(7),
                    duration: ms(2),
                },
            ),
            at(
                55,
                Fault::Terminate {
                    node: n(6),
                    grace: Dur::from_nanos(2_500_000_001),
                },
            ),
            ScheduledFault {
                when: When::OnMark {
                    node: n(6),
                    mark: "granted".into(),
                    occurrence: 2,
                    before: Some(Time::from_nanos(98_765_432_101)),
                },
                fault: Fault::Heal,
                role: None,
            },
            // Aimed at a role: written with the role where the node goes (the fault's own
            // node is the loader's placeholder, node 0).
            ScheduledFault::aimed(
                When::At(Time::from_millis(30)),
                pause(0, Some(ms(5))),
                "holder",
            ),
            ScheduledFault::aimed(
                When::At(Time::from_millis(31)),
                partition(Shape::Isolate { node: n(0) }, Hold, None),
                "holder",
            ),
        ],
        duration: Dur::from_nanos(123_456_789_123),
    };
    let written = write_scenario(
        REDLOCK,
        path,
        &names,
        &schedule,
        42,
        "every fault\n\nand shape",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let back = parse(&written, path).unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(back.schedule(42), schedule, "{written}");
    assert_eq!(kept(&back), kept(&scenario));
    assert!(!written.contains("chaos"), "{written}");
    assert!(
        written.starts_with("# every fault\n#\n# and shape\n\n")
            && written.contains("\n# A header comment that must survive.\n[scenario]\n"),
        "{written}"
    );
    assert!(written.contains("seed = 42\nseeds = [42]\n"), "{written}");
    // Whole milliseconds are integers; the rest the shortest decimal that reads back.
    for line in [
        "duration_ms = 123456.789123",
        "pause = { node = \"client-2\", for_ms = 0.000001 }",
        "pause = { node = \"holder\", for_ms = 5 }",
        "partition = { isolate = \"holder\", mode = \"hold\" }",
        "crash = { node = \"redis-3\", restart_after_ms = 123456.789123 }",
        "clock_step = { node = \"redis-4\", delta_ms = -123456.789123 }",
        "clock_slew = { node = \"client-1\", delta_ms = -0.999999, rate_ppm = 1 }",
        "partition = { groups = [[\"redis-1\", \"redis-2\"], [\"redis-3\"], [\"redis-4\", \"redis-5\", \"storage\"]], mode = \"hold\", for_ms = 5 }",
        "delay = { from = [\"client-1\", \"client-2\", \"client-3\"], to = \"storage\", extra_ms = 0.000003 }",
        "on = { node = \"client-1\", mark = \"validity-checked\", occurrence = 3 }",
        "heal = true",
        "degrade = { from = \"storage\", to = [\"client-1\", \"client-2\"], duplicate = 0.123457, for_ms = 4 }",
        "degrade = { from = [\"redis-1\", \"redis-2\"], to = \"storage\", loss = 0.000001 }",
        "clock_strobe = { node = \"redis-3\", delta_ms = -1.500001, period_ms = 0.000007, for_ms = 2 }",
        "terminate = { node = \"client-1\", grace_ms = 2500.000001 }",
        "on = { node = \"client-1\", mark = \"granted\", occurrence = 2, before_ms = 98765.432101 }",
    ] {
        assert!(written.contains(line), "no `{line}` in\n{written}");
    }
    // The faults come before [expect], as in the catalogue.
    assert!(
        written.find("[[fault]]") < written.find("[expect]"),
        "{written}"
    );
}

#[test]
fn times_that_no_file_can_say_exactly_are_refused() {
    let path = Path::new("every-fault.toml");
    let without_chaos = REDLOCK.replace("[chaos]\nprofile = \"anything the lead adds\"\n", "");
    let names = parse(&without_chaos, path).expect("loads").node_names();
    let write = |faults: Vec<ScheduledFault>| {
        let schedule = Schedule {
            faults,
            duration: ms(60_000),
        };
        write_scenario(REDLOCK, path, &names, &schedule, 1, "").map_err(|e| e.to_string())
    };
    let unsorted = write(vec![at(
        1,
        partition(
            Shape::Bridge {
                nodes: ns(&[2, 0, 1]),
            },
            PartitionMode::Drop,
            None,
        ),
    )]);
    assert!(
        unsorted
            .as_ref()
            .is_err_and(|e| e.contains("fault[0].partition.bridge") && e.contains("node order")),
        "{unsorted:?}"
    );
    let unknown = write(vec![at(1, pause(99, None))]);
    assert!(
        unknown
            .as_ref()
            .is_err_and(|e| e.contains("fault[0].pause.node") && e.contains("node id 99")),
        "{unknown:?}"
    );
    // A pause of 0 is no pause to the loader (`for_ms` must be positive): the file would not
    // replay the schedule, so none is written.
    let zero = write(vec![at(1, pause(6, Some(Dur::ZERO)))]);
    assert!(
        zero.as_ref()
            .is_err_and(|e| e.contains("fault[0].pause.for_ms")),
        "{zero:?}"
    );
    let late = write(vec![at(70_000, Fault::Heal)]);
    assert!(
        late.as_ref()
            .is_err_and(|e| e.contains("after the end of the run")),
        "{late:?}"
    );
}
