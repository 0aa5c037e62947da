//! Redlock over five instances: liveness with instances down, and the two clients of K6.

use lockstep_check::Validity;
use lockstep_models::redlock::{Flavour, Redlock};
use lockstep_models::{Resource, StorageMode};
use lockstep_sim::{Dur, Fault, NodeId};

use crate::support::*;

const CLIENT_1: NodeId = NodeId(6);

fn crash(node: u32) -> Fault {
    Fault::Crash {
        node: NodeId(node),
        restart_after: None,
    }
}

#[test]
fn both_flavours_are_clean_and_live_without_faults() {
    for flavour in [Flavour::Antirez, Flavour::Redsync] {
        let r = run(&redlock_spec(flavour), 1, 60, vec![]);
        assert_eq!(r.verdict.resource, Validity::Valid, "{flavour:?}");
        assert_eq!(r.verdict.mutual_exclusion, Validity::Valid, "{flavour:?}");
        assert!(
            r.verdict.liveness.grants >= 100,
            "{flavour:?}: {:?}",
            r.verdict.liveness
        );
    }
}

#[test]
fn one_instance_down_of_five_still_grants_and_three_down_grant_nothing() {
    for flavour in [Flavour::Antirez, Flavour::Redsync] {
        let one = run(&redlock_spec(flavour), 2, 60, vec![at(0, crash(4))]);
        assert_eq!(one.verdict.resource, Validity::Valid);
        // The dead instance never answers (a host down, not a refused connection): every
        // redsync try and release waits out its 500 ms deadline, so grants come slower.
        assert!(
            one.verdict.liveness.grants >= 30,
            "{flavour:?}: {:?}",
            one.verdict.liveness
        );
        let three = run(
            &redlock_spec(flavour),
            2,
            60,
            vec![at(0, crash(2)), at(0, crash(3)), at(0, crash(4))],
        );
        assert_eq!(three.verdict.liveness.grants, 0, "{flavour:?}");
        assert_eq!(three.verdict.resource, Validity::Valid);
    }
}

/// K6: client-1 is paused for 15 s right after sending its `SET`s; the replies wait in its
/// socket buffers while the keys expire and client-2 takes the lock.
fn k6(elapsed_check: bool) -> Run<Redlock> {
    let mut spec = redlock_spec(Flavour::Redsync);
    spec.family.client.elapsed_check = elapsed_check;
    spec.workload.check_validity_before_write = false;
    let pause = Fault::Pause {
        node: CLIENT_1,
        duration: Some(Dur::from_secs(15)),
    };
    run(&spec, 3, 60, vec![on_mark(CLIENT_1, "acquire-sent", pause)])
}

#[test]
fn k6_the_naive_client_violates_and_the_elapsed_check_does_not() {
    let naive = k6(false);
    assert_eq!(naive.verdict.mutual_exclusion, Validity::Invalid);
    assert!(
        naive.verdict.stale_accepted.count >= 1,
        "{:?}",
        naive.verdict
    );
    let spec = k6(true);
    assert_eq!(
        spec.verdict.mutual_exclusion,
        Validity::Valid,
        "{:?}",
        spec.verdict
    );
    assert_eq!(spec.verdict.resource, Validity::Valid);
}

#[test]
fn the_spec_client_still_violates_k1_when_the_pause_follows_its_validity_check() {
    let spec = redlock_spec(Flavour::Redsync);
    let pause = Fault::Pause {
        node: CLIENT_1,
        duration: Some(Dur::from_secs(15)),
    };
    let r = run(
        &spec,
        4,
        60,
        vec![on_mark(CLIENT_1, "validity-checked", pause)],
    );
    assert_eq!(r.verdict.resource, Validity::Invalid, "{:?}", r.verdict);
    assert!(r.verdict.double_holders.pairs >= 1);
}

/// K7: Redlock's random value as a compare-and-set token on the resource; client-1 is
/// paused for 15 s on `mark`, sections last 8 s and nobody checks validity before writing.
fn k7(mark: &str) -> Run<Redlock> {
    let mut spec = redlock_spec(Flavour::Redsync);
    spec.family.client.value_as_token = true;
    spec.resource = Resource::Storage(StorageMode::CasToken);
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(8));
    spec.workload.check_validity_before_write = false;
    let pause = Fault::Pause {
        node: CLIENT_1,
        duration: Some(Dur::from_secs(15)),
    };
    run(&spec, 5, 40, vec![on_mark(CLIENT_1, mark, pause)])
}

#[test]
fn k7_a_claim_before_the_pause_makes_the_stale_write_fail() {
    // client-1 claimed and read before its pause; client-2 claims after it, so client-1's
    // late write no longer owns the resource.
    let r = k7("read-done");
    assert_eq!(r.verdict.mutual_exclusion, Validity::Invalid);
    assert_eq!(r.verdict.stale_accepted.count, 0, "{:?}", r.verdict);
    assert!(r.verdict.stale_rejected >= 1);
    assert_eq!(r.verdict.resource, Validity::Valid);
}

#[test]
fn k7_a_claim_after_the_pause_inverts_the_order_instead() {
    // client-1 is paused before its claim: it claims after client-2, so client-2's write is
    // the one refused and the stale holder's claim and write are accepted.
    let r = k7("granted");
    assert_eq!(r.verdict.resource, Validity::Invalid, "{:?}", r.verdict);
    assert!(r.verdict.stale_accepted.count >= 2, "{:?}", r.verdict);
    assert!(
        r.verdict.stale_rejected >= 1,
        "the newer holder's write is refused"
    );
}

/// True times (ms) at which client-1 sent the first `SET` of each try, and the time its
/// acquisition gave up, with every instance out from the start: crashed (`crashed`: each
/// request is refused, a round trip later) or paused (silent: each request times out).
fn tries_against_dead_instances(flavour: Flavour, crashed: bool) -> (Vec<u64>, Option<u64>) {
    let mut spec = redlock_spec(flavour);
    spec.clients = 1;
    // An 8 s TTL: redsync's per-try deadline is 400 ms.
    spec.family.client.ttl = Dur::from_secs(8);
    if flavour == Flavour::Redsync {
        spec.family.client.timeout = Dur::from_millis(400);
    }
    let out = |i: u32| {
        if crashed {
            crash(i)
        } else {
            lockstep_sim::Fault::Pause {
                node: lockstep_sim::NodeId(i),
                duration: None,
            }
        }
    };
    let mut world = world(&spec, 9, 60, |cfg| {
        cfg.trace = true;
        cfg.faults = (0..5).map(|i| at(0, out(i))).collect();
    });
    world.run();
    let trace = world.trace().expect("traced");
    let ms = |e: &lockstep_sim::TraceEntry| e.time.as_nanos() / 1_000_000;
    let sends: Vec<u64> = trace
        .iter()
        .filter(|e| e.node == CLIENT_1 && e.text == "mark acquire-sent")
        .map(ms)
        .collect();
    let failed = world
        .history()
        .iter()
        .find(|r| matches!(r.event, lockstep_check::Event::AcquireFailed { .. }))
        .map(|r| r.time.as_nanos() / 1_000_000);
    (sends, failed)
}

#[test]
fn redsync_tries_32_times_waiting_out_each_deadline_then_50_to_249_ms() {
    let (sends, failed) = tries_against_dead_instances(Flavour::Redsync, false);
    let first_failure = failed.expect("gives up");
    let sends: Vec<u64> = sends.into_iter().filter(|&t| t <= first_failure).collect();
    assert_eq!(sends.len(), 32, "{sends:?}");
    // Each try: 400 ms for the SETs, 400 ms for the release, then rand.Intn(200) + 50 ms.
    for w in sends.windows(2) {
        let gap = w[1] - w[0];
        assert!((850..=1_050).contains(&gap), "gap {gap} ms in {sends:?}");
    }
    // No delay after the last try: it gives up when its release round ends.
    assert_eq!(first_failure - sends[31], 800);
}

#[test]
fn redsync_against_crashed_instances_is_refused_at_once_and_only_sleeps_between_tries() {
    // Every request is refused a round trip (2-10 ms) after it is sent: a try and its
    // release take at most 20 ms, then rand.Intn(200) + 50 ms.
    let (sends, failed) = tries_against_dead_instances(Flavour::Redsync, true);
    let first_failure = failed.expect("gives up");
    let sends: Vec<u64> = sends.into_iter().filter(|&t| t <= first_failure).collect();
    assert_eq!(sends.len(), 32, "{sends:?}");
    for w in sends.windows(2) {
        let gap = w[1] - w[0];
        assert!((50..=270).contains(&gap), "gap {gap} ms in {sends:?}");
    }
    assert!(first_failure - sends[31] <= 20);
}

#[test]
fn antirez_tries_3_times_one_instance_after_another_and_sleeps_after_the_last() {
    let (sends, failed) = tries_against_dead_instances(Flavour::Antirez, false);
    let first_failure = failed.expect("gives up");
    let sends: Vec<u64> = sends.into_iter().filter(|&t| t <= first_failure).collect();
    assert_eq!(sends.len(), 3, "{sends:?}");
    // Each try: five 50 ms timeouts for the SETs, five for the unlocks, then rand(200) ms.
    for w in sends.windows(2) {
        let gap = w[1] - w[0];
        assert!((500..700).contains(&gap), "gap {gap} ms in {sends:?}");
    }
    let after_last = first_failure - sends[2];
    assert!((500..700).contains(&after_last), "{after_last} ms");

    // Crashed instances refuse each request a round trip later: ten sequential requests of
    // at most 10 ms each, then rand(200) ms.
    let (sends, failed) = tries_against_dead_instances(Flavour::Antirez, true);
    let first_failure = failed.expect("gives up");
    let sends: Vec<u64> = sends.into_iter().filter(|&t| t <= first_failure).collect();
    assert_eq!(sends.len(), 3, "{sends:?}");
    for w in sends.windows(2) {
        let gap = w[1] - w[0];
        assert!((20..300).contains(&gap), "gap {gap} ms in {sends:?}");
    }
}

#[test]
fn extension_keeps_a_long_critical_section_exclusive() {
    let mut spec = redlock_spec(Flavour::Redsync);
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(25));
    spec.workload.check_validity_before_write = false;
    let without = run(&spec, 4, 120, vec![]);
    assert!(
        without.verdict.double_holders.pairs >= 1,
        "a 25 s job outlives a 10 s lock"
    );
    spec.family.client.extend = true;
    let with = run(&spec, 4, 120, vec![]);
    assert_eq!(
        with.verdict.mutual_exclusion,
        Validity::Valid,
        "{:?}",
        with.verdict
    );
    assert!(with.verdict.liveness.cs_completed >= 3);
}
