//! The Redis lock under its known unsafe sequences (a pause past the TTL, a server clock step,
//! a plain `DEL` release, a restart without persistence), judged by the checker.

use lockstep_check::Validity;
use lockstep_check::{Event, ExitReason, OpKind};
use lockstep_models::redis::{Release, Renew};
use lockstep_models::{Node, Resource, StorageMode};
use lockstep_sim::{ClockKind, Dur, Fault};

use crate::support::*;

fn gc_pause_after_validity_check(secs: u64) -> Vec<lockstep_sim::ScheduledFault> {
    gc_pause_at("validity-checked", secs)
}

fn gc_pause_at(mark: &str, secs: u64) -> Vec<lockstep_sim::ScheduledFault> {
    let pause = Fault::Pause {
        node: CLIENT_1,
        duration: Some(Dur::from_secs(secs)),
    };
    vec![on_mark(CLIENT_1, mark, pause)]
}

#[test]
fn without_faults_the_lock_is_safe_and_busy() {
    for seed in 0..20 {
        let r = run(&redis_spec(), seed, 30, vec![]);
        let v = &r.verdict;
        assert_eq!(v.mutual_exclusion, Validity::Valid, "seed {seed}: {:?}", v);
        assert!(
            v.liveness.grants > 100,
            "seed {seed}: {} grants",
            v.liveness.grants
        );
        // Every critical section completes, but for one the end of the run may cut short.
        assert!(
            v.liveness.cs_completed + 1 >= v.liveness.grants,
            "seed {seed}: {v:?}"
        );
        // The checker's replay of accepted writes agrees with what storage holds.
        let Node::Storage(storage) = r.world.process(STORAGE) else {
            panic!("storage")
        };
        assert_eq!(storage.value(), v.liveness.final_value);
    }
}

#[test]
fn a_gc_pause_past_the_ttl_gives_two_holders_and_a_stale_write() {
    let r = run(&redis_spec(), 1, 60, gc_pause_after_validity_check(15));
    let v = &r.verdict;
    assert!(v.double_holders.pairs >= 1, "{v:?}");
    assert!(v.stale_accepted.count >= 1);
    assert!(v.lost_updates.count >= 1);
    assert_eq!(v.resource, Validity::Invalid);
}

#[test]
fn incr_fencing_rejects_the_stale_write_but_the_overlap_remains() {
    let mut spec = redis_spec();
    spec.family.client.fencing = true;
    spec.resource = Resource::Storage(StorageMode::FencedWrites);
    let r = run(&spec, 1, 60, gc_pause_after_validity_check(15));
    let v = &r.verdict;
    assert!(v.double_holders.pairs >= 1);
    assert_eq!(v.stale_accepted.count, 0);
    assert!(v.stale_rejected >= 1);
    assert_eq!(v.resource, Validity::Valid);
    assert_eq!(v.mutual_exclusion, Validity::Invalid);
}

#[test]
fn a_pause_shorter_than_the_ttl_is_harmless() {
    let r = run(&redis_spec(), 1, 60, gc_pause_after_validity_check(5));
    assert_eq!(
        r.verdict.mutual_exclusion,
        Validity::Valid,
        "{:?}",
        r.verdict
    );
}

#[test]
fn a_forward_step_of_the_server_wall_clock_expires_the_lock_early() {
    // Client 1 holds a 10 s lock with long work; the server's clock jumps 20 s at 2 s.
    let mut spec = redis_spec();
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(6));
    spec.workload.check_validity_before_write = false;
    let faults = vec![at(
        2_000,
        Fault::ClockStep {
            node: REDIS,
            delta_ns: 20_000_000_000,
        },
    )];
    let r = run(&spec, 3, 30, faults);
    assert!(r.verdict.double_holders.pairs >= 1, "{:?}", r.verdict);
}

#[test]
fn expiry_on_the_monotonic_clock_ignores_a_wall_step() {
    let mut spec = redis_spec();
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(6));
    spec.workload.check_validity_before_write = false;
    spec.family.server.expiry_clock = ClockKind::Mono;
    let faults = vec![at(
        2_000,
        Fault::ClockStep {
            node: REDIS,
            delta_ns: 20_000_000_000,
        },
    )];
    let r = run(&spec, 3, 30, faults);
    assert_eq!(
        r.verdict.mutual_exclusion,
        Validity::Valid,
        "{:?}",
        r.verdict
    );
}

#[test]
fn a_plain_del_release_frees_the_next_holders_lock() {
    // Three clients. Client 1 pauses past its TTL, client 2 takes the lock, client 1 resumes
    // and its DEL deletes client 2's key, so client 3 gets it while client 2 works.
    let mut spec = redis_spec();
    spec.clients = 3;
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(4));
    spec.workload.check_validity_before_write = false;
    spec.family.client.release = Release::Del;
    let r = run(&spec, 2, 60, gc_pause_at("work-done", 12));
    let v = &r.verdict;
    assert!(v.double_holders.max_concurrent >= 2, "{v:?}");
    // Every overlap that does not involve the paused client 1 came from the DEL.
    let others = v
        .double_holders
        .examples
        .iter()
        .filter(|o| o.first.client.0 != 2 && o.second.client.0 != 2)
        .count();
    assert!(others >= 1, "{:?}", v.double_holders);
}

#[test]
fn the_compare_and_delete_release_never_frees_another_holders_lock() {
    let mut spec = redis_spec();
    spec.clients = 3;
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(4));
    spec.workload.check_validity_before_write = false;
    let r = run(&spec, 2, 60, gc_pause_at("work-done", 12));
    let v = &r.verdict;
    let others = v
        .double_holders
        .examples
        .iter()
        .filter(|o| o.first.client.0 != 2 && o.second.client.0 != 2)
        .count();
    assert_eq!(others, 0, "{:?}", v.double_holders);
}

#[test]
fn renewal_keeps_a_long_critical_section_exclusive() {
    let mut spec = redis_spec();
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(25));
    spec.workload.check_validity_before_write = false;
    let without = run(&spec, 4, 120, vec![]);
    assert!(
        without.verdict.double_holders.pairs >= 1,
        "a 25 s job outlives a 10 s lock"
    );
    spec.family.client.renew = Renew::UntilRefused;
    let with = run(&spec, 4, 120, vec![]);
    assert_eq!(
        with.verdict.mutual_exclusion,
        Validity::Valid,
        "{:?}",
        with.verdict
    );
    assert!(with.verdict.liveness.cs_completed >= 3);
}

/// The renewals (`CompareAndPexpire`) the server received in 60 s of one client working
/// `work` per critical section with renewal on.
fn renewals(work: Dur) -> usize {
    let mut spec = redis_spec();
    spec.clients = 1;
    spec.workload.work = lockstep_sim::Distribution::Constant(work);
    spec.workload.think = lockstep_sim::Distribution::Constant(ms(10));
    spec.family.client.renew = Renew::UntilRefused;
    let mut world = world(&spec, 7, 60, |cfg| cfg.trace = true);
    world.run();
    world
        .trace()
        .expect("traced")
        .iter()
        .filter(|e| e.node == REDIS && e.text.contains("CompareAndPexpire"))
        .count()
}

#[test]
fn a_renewal_timer_of_an_earlier_lease_does_not_renew_a_later_one() {
    // Sections of 1 s end long before the first renewal at TTL/3 = 3.3 s: no renewal is due,
    // though each grant armed one.
    assert_eq!(renewals(Dur::from_secs(1)), 0);
    // Sections of 5 s each need one.
    assert!(renewals(Dur::from_secs(5)) >= 10);
}

#[test]
fn a_server_crash_without_persistence_loses_the_lock() {
    let mut spec = redis_spec();
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(5));
    spec.workload.check_validity_before_write = false;
    let crash = Fault::Crash {
        node: REDIS,
        restart_after: Some(Dur::from_millis(100)),
    };
    let faults = vec![on_mark(CLIENT_1, "granted", crash)];
    let r = run(&spec, 5, 30, faults);
    assert!(r.verdict.double_holders.pairs >= 1, "{:?}", r.verdict);
}

/// How client-1's first critical section ends and how many writes it sends, when both
/// clients renew in `mode`, work 70 s with no validity check, and client-2 starts late (J10).
fn cut_off_holder(
    mode: Renew,
    mut faults: Vec<lockstep_sim::ScheduledFault>,
) -> (Vec<ExitReason>, usize) {
    let mut spec = redis_spec();
    spec.workload.work = lockstep_sim::Distribution::Constant(Dur::from_secs(70));
    spec.workload.check_validity_before_write = false;
    spec.family.client.renew = mode;
    // client-2 starts late, so that client-1 is the first holder.
    let late = Fault::Partition {
        shape: lockstep_sim::Shape::Isolate {
            node: lockstep_sim::NodeId(3),
        },
        mode: lockstep_sim::PartitionMode::Drop,
        duration: Some(ms(500)),
    };
    faults.push(at(0, late));
    let r = run(&spec, 1, 100, faults);
    let mut exits = Vec::new();
    let mut writes = 0;
    for rec in r.world.history() {
        match &rec.event {
            Event::Exit { grant, why } if grant.client.0 == CLIENT_1.0 && grant.seq == 1 => {
                exits.push(*why);
            }
            Event::Storage(op)
                if op.grant.client.0 == CLIENT_1.0
                    && op.grant.seq == 1
                    && matches!(op.kind, OpKind::Write { .. }) =>
            {
                writes += 1;
            }
            _ => {}
        }
    }
    (exits, writes)
}

fn cut_off_from_the_server_for(secs: u64) -> Vec<lockstep_sim::ScheduledFault> {
    let cut = Fault::Partition {
        shape: lockstep_sim::Shape::Split {
            groups: vec![vec![CLIENT_1], vec![REDIS]],
        },
        mode: lockstep_sim::PartitionMode::Drop,
        duration: Some(Dur::from_secs(secs)),
    };
    vec![on_mark(CLIENT_1, "granted", cut)]
}

#[test]
fn until_refused_renews_through_timeouts_and_ends_the_section_when_refused() {
    // The renewals time out while the client is cut off; the first one after the heal is
    // refused (the key expired long ago): the section ends, and client-1 never writes.
    // The client keeps its connection through a timeout, so its renewals queue behind the
    // first one, which stalled 3.35 s after the grant (TCP); they reach the server at the
    // first retransmission after the heal, 0.2 s * (2^k - 1) after the stall: ..., 26.2,
    // 52.5, 105 s. A 60 s cut would keep them queued until 108 s, past the 70 s of work and
    // the end of the run; after a 40 s cut they get through at 56 s and the section ends.
    let (exits, writes) = cut_off_holder(Renew::UntilRefused, cut_off_from_the_server_for(40));
    assert_eq!(exits, vec![ExitReason::Lost]);
    assert_eq!(writes, 0);
}

#[test]
fn the_watchdog_stops_at_its_first_failed_renewal_and_never_tells_the_holder() {
    // Redisson: the first renewal times out, the watchdog stops; the holder keeps working,
    // writes at 70 s over client-2's lock, and releases.
    let (exits, writes) = cut_off_holder(Renew::Watchdog, cut_off_from_the_server_for(60));
    assert_eq!(exits, vec![ExitReason::Released]);
    assert_eq!(writes, 1);
    // A refused renewal stops it as silently: client-1 pauses 15 s right after its grant,
    // past the 10 s TTL, and its first renewal finds client-2's key.
    let pause = Fault::Pause {
        node: CLIENT_1,
        duration: Some(Dur::from_secs(15)),
    };
    let (exits, writes) = cut_off_holder(
        Renew::Watchdog,
        vec![on_mark(CLIENT_1, "granted", pause.clone())],
    );
    assert_eq!(exits, vec![ExitReason::Released]);
    assert_eq!(writes, 1);
    let (exits, writes) = cut_off_holder(
        Renew::UntilRefused,
        vec![on_mark(CLIENT_1, "granted", pause)],
    );
    assert_eq!(exits, vec![ExitReason::Lost]);
    assert_eq!(writes, 0);
}

#[test]
fn a_holder_told_to_stop_leaves_its_section_releases_and_asks_for_nothing_more() {
    for seed in 1..=10 {
        let stop = on_mark(
            CLIENT_1,
            "read-done",
            Fault::Terminate {
                node: CLIENT_1,
                grace: Dur::from_secs(30),
            },
        );
        let r = run(&redis_spec(), seed, 60, vec![stop]);
        assert_eq!(r.verdict.resource, Validity::Valid, "seed {seed}");
        let h = r.world.history();
        let at = r.world.fault_log()[0].time;
        let me = lockstep_check::NodeId(CLIENT_1.0);
        // Its one grant ended `terminated` as it was told, and it asked for nothing after.
        let exits: Vec<_> = h
            .iter()
            .filter_map(|e| match e.event {
                Event::Exit { grant, why } if grant.client == me => Some((e.time, why)),
                _ => None,
            })
            .collect();
        assert_eq!(
            exits.last(),
            Some(&(at, ExitReason::Terminated)),
            "seed {seed}"
        );
        assert!(
            !h.iter().any(
                |e| e.time > at && matches!(e.event, Event::Request { client } if client == me)
            ),
            "seed {seed}"
        );
        // Its release freed the key: client-2 holds within one retry, not the 10 s TTL.
        let next = h
            .iter()
            .find(|e| {
                e.time > at && matches!(e.event, Event::Grant { grant, .. } if grant.client != me)
            })
            .expect("client-2 is granted");
        assert!(
            next.time.as_nanos() - at.as_nanos() < 500_000_000,
            "seed {seed}: {:?}",
            next.time
        );
        // And the world killed it when its grace ended.
        assert!(
            r.world.fault_log().iter().any(
                |f| matches!(f.fault, Fault::Crash { node, .. } if node == CLIENT_1)
                    && f.time.as_nanos() == at.as_nanos() + 30_000_000_000
            ),
            "seed {seed}"
        );
    }
}
