//! Redlock over five instances: liveness with instances down, and the two clients of K6.

use lockstep_check::Validity;
use lockstep_models::redlock::Flavour;
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
fn k6(elapsed_check: bool) -> Run {
    let mut spec = redlock_spec(Flavour::Redsync);
    redlock_config(&mut spec).elapsed_check = elapsed_check;
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
fn k7(mark: &str) -> Run {
    let mut spec = redlock_spec(Flavour::Redsync);
    redlock_config(&mut spec).value_as_token = true;
    spec.storage = lockstep_models::StorageMode::CasToken;
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
