//! Kubernetes Lease leader election (docs/families/kubernetes.md): client-go's timings after
//! the leader's crash, exclusivity without faults, a leader cut off from the API servers, the
//! J9 wall-clock step under both expiry rules, and fabric8 #7160's own lease duration.

use lockstep_check::{Event, ExitReason, Validity};
use lockstep_models::Observation;
use lockstep_models::kubernetes::Kubernetes;
use lockstep_models::kubernetes::elector::{
    ElectorConfig, Expiry, LeaseDurationFrom, Timing, TokenFrom,
};
use lockstep_models::system::SystemSpec;
use lockstep_models::{Node, StorageMode};
use lockstep_sim::{Distribution, Dur, Fault, NodeId, PartitionMode, Shape, Time, World};

use crate::support::*;

fn secs(v: u64) -> Dur {
    Dur::from_secs(v)
}

fn timing(ld: u64, rd: u64, rp: u64) -> Timing {
    Timing {
        lease_duration: secs(ld),
        renew_deadline: secs(rd),
        retry_period: secs(rp),
        ..Timing::defaults()
    }
}

/// Three etcd members, one API server, `clients` electors with `timing`, working 100-200 s
/// per grant (a leader holds for a long time), unfenced storage.
fn kube_spec(timing: Timing, clients: u32) -> SystemSpec<Kubernetes> {
    let mut s = spec(Kubernetes {
        members: 3,
        apiservers: 1,
        elector: ElectorConfig {
            apiservers: Vec::new(),
            timing,
            participants: Vec::new(),
            release_on_cancel: false,
            fencing: TokenFrom::None,
        },
    });
    s.clients = clients;
    s.workload.work = Distribution::Uniform {
        lo: secs(100),
        hi: secs(200),
    };
    s
}

/// The client holding a grant at the end of `w`'s history, if any.
fn holder(w: &World<Node<Kubernetes>>) -> Option<NodeId> {
    let mut open = None;
    for r in w.history() {
        match r.event {
            Event::Grant { .. } => open = Some(r.node),
            Event::Exit { grant, .. } if open.is_some_and(|n| n.0 == grant.client.0) => {
                open = None;
            }
            _ => {}
        }
    }
    open
}

/// The grants of `w`: (time, client, ticket).
fn grants(w: &World<Node<Kubernetes>>) -> Vec<(Time, NodeId, Option<u64>)> {
    w.history()
        .iter()
        .filter_map(|r| match r.event {
            Event::Grant { ticket, .. } => Some((r.time, r.node, ticket)),
            _ => None,
        })
        .collect()
}

/// When `node` observed `count`, in order.
fn counts(w: &World<Node<Kubernetes>>, node: NodeId, count: &'static str) -> Vec<Time> {
    w.observations()
        .iter()
        .filter(|o| o.node == node && o.event == Observation::Count(count))
        .map(|o| o.time)
        .collect()
}

fn since(later: Time, earlier: Time) -> Dur {
    later.saturating_since(earlier)
}

/// The leader found at `at` in a run without faults (a fault at `at` leaves the run before it
/// unchanged).
fn leader_at(spec: &SystemSpec<Kubernetes>, seed: u64, at: u64) -> NodeId {
    let mut w = world(spec, seed, at / 1000, |_| {});
    w.run();
    holder(&w).unwrap_or_else(|| panic!("seed {seed}: nobody leads at {at} ms"))
}

/// The must-show of client-go's timing: the leader's process crashes for good; the new
/// leader's grant comes between LD and LD + 2.2·RP (plus a request's latency) after it first
/// observed the old leader's last renewal, and never sooner than LD after that renewal.
fn takeover_after_crash(t: Timing, seeds: u64) -> (Dur, Dur, Dur, Dur) {
    let spec = kube_spec(t, 3);
    let crash_at = 30_000;
    let (mut lo, mut hi) = (Dur::MAX, Dur::ZERO);
    let (mut lo_r, mut hi_r) = (Dur::MAX, Dur::ZERO);
    let end =
        crash_at / 1000 + (t.lease_duration + t.retry_period * 4).as_nanos() / 1_000_000_000 + 5;
    for seed in 1..=seeds {
        let old = leader_at(&spec, seed, crash_at);
        let faults = vec![at(
            crash_at,
            Fault::Crash {
                node: old,
                restart_after: None,
            },
        )];
        let r = run(&spec, seed, end, faults);
        assert_eq!(r.verdict.mutual_exclusion, Validity::Valid, "seed {seed}");
        let crash = Time::from_millis(crash_at);
        let &(g, new, _) = grants(&r.world)
            .iter()
            .find(|(t, _, _)| *t > crash)
            .unwrap_or_else(|| panic!("seed {seed}: no leader after the crash"));
        assert_ne!(new, old, "seed {seed}");
        let observed = *counts(&r.world, new, "record-observed")
            .iter()
            .rfind(|&&o| o < g)
            .expect("the new leader observed the old record");
        let renewed = *counts(&r.world, old, "renewed")
            .iter()
            .rfind(|&&o| o <= crash)
            .expect("the old leader renewed");
        let wait = since(g, observed);
        let after_renew = since(g, renewed);
        let ld = t.lease_duration;
        let slack = ms(50);
        assert!(
            wait >= ld && wait <= ld + t.retry_period.mul_div(22, 10) + slack,
            "seed {seed}: grant {wait} after the observation, LD {ld}"
        );
        // The renewal applied before its answer reached the old leader (≤ 10 ms of links).
        assert!(
            after_renew + ms(10) >= ld,
            "seed {seed}: {after_renew} after the renewal"
        );
        lo = lo.min(wait);
        hi = hi.max(wait);
        lo_r = lo_r.min(after_renew);
        hi_r = hi_r.max(after_renew);
    }
    (lo, hi, lo_r, hi_r)
}

#[test]
fn after_the_leader_crashes_a_candidate_takes_over_a_full_lease_after_it_observed_it() {
    for (t, name) in [
        (timing(15, 10, 2), "15/10/2 s"),
        (timing(60, 30, 2), "60/30/2 s"),
    ] {
        let (lo, hi, lo_r, hi_r) = takeover_after_crash(t, 50);
        println!(
            "{name}: grant {lo} to {hi} after the new leader observed the last renewal, \
             {lo_r} to {hi_r} after that renewal's answer (50 seeds)"
        );
        // The spread is the candidate loop's: uniform in [RP, 2.2 RP).
        assert!(hi - lo >= t.retry_period, "{name}: {lo}..{hi}");
    }
}

#[test]
fn without_faults_one_leader_at_a_time_and_transitions_rise() {
    for release_on_cancel in [false, true] {
        for seed in 1..=5 {
            let mut spec = kube_spec(timing(15, 10, 2), 3);
            spec.family.elector.release_on_cancel = release_on_cancel;
            spec.workload.work = Distribution::Uniform {
                lo: secs(5),
                hi: secs(10),
            };
            // Thinking longer than a retry period lets the others see the released record.
            spec.workload.think = Distribution::Uniform {
                lo: secs(3),
                hi: secs(6),
            };
            let r = run(&spec, seed, 120, Vec::new());
            assert_eq!(r.verdict.mutual_exclusion, Validity::Valid, "seed {seed}");
            let g = grants(&r.world);
            assert!(g.len() >= 5, "seed {seed}: {g:?}");
            for w in g.windows(2) {
                let (a, b) = (w[0], w[1]);
                let (ta, tb) = (a.2.expect("a ticket"), b.2.expect("a ticket"));
                if a.1 == b.1 && !release_on_cancel {
                    assert_eq!(ta, tb, "seed {seed}: the holder re-enters its own term");
                } else if a.1 == b.1 {
                    // A release whose precondition a renewal cancelled in flight had already
                    // changed is refused (409): the holder then re-enters its own term.
                    assert!(tb >= ta, "seed {seed}: {a:?} then {b:?}");
                } else {
                    assert!(tb > ta, "seed {seed}: {a:?} then {b:?}");
                }
            }
            let holders: std::collections::BTreeSet<NodeId> = g.iter().map(|x| x.1).collect();
            if release_on_cancel {
                assert!(
                    holders.len() >= 2,
                    "seed {seed}: ReleaseOnCancel hands over"
                );
            } else {
                assert_eq!(holders.len(), 1, "seed {seed}: the leader keeps its lease");
            }
        }
    }
}

#[test]
fn a_leader_cut_off_from_the_apiservers_gives_up_after_its_renew_deadline() {
    let t = timing(15, 10, 2);
    let spec = kube_spec(t, 3);
    let api = node_id(&spec, "apiserver-1");
    for seed in 1..=20 {
        let old = leader_at(&spec, seed, 30_000);
        let cut = at(
            30_000,
            Fault::Partition {
                shape: Shape::Split {
                    groups: vec![vec![old], vec![api]],
                },
                mode: PartitionMode::Drop,
                duration: Some(secs(40)),
            },
        );
        let r = run(&spec, seed, 80, vec![cut]);
        assert_eq!(r.verdict.mutual_exclusion, Validity::Valid, "seed {seed}");
        let lost = r
            .world
            .history()
            .iter()
            .find(|e| {
                e.node == old
                    && matches!(
                        e.event,
                        Event::Exit {
                            why: ExitReason::Lost,
                            ..
                        }
                    )
            })
            .map(|e| e.time)
            .unwrap_or_else(|| panic!("seed {seed}: the cut-off leader never gave up"));
        let renewed = *counts(&r.world, old, "renewed")
            .iter()
            .rfind(|&&o| o < lost)
            .expect("renewed");
        let gave_up = since(lost, renewed);
        assert_eq!(gave_up, t.retry_period + t.renew_deadline, "seed {seed}");
        let &(g, new, _) = grants(&r.world)
            .iter()
            .find(|(t, _, _)| *t > lost)
            .expect("a new leader");
        let observed = *counts(&r.world, new, "record-observed")
            .iter()
            .rfind(|&&o| o < g)
            .expect("observed");
        assert!(since(g, observed) >= t.lease_duration, "seed {seed}");
        assert!(
            since(g, renewed) + ms(10) >= t.lease_duration,
            "seed {seed}"
        );
    }
}

/// Two holders or not when the wall clocks of a candidate (at 30 s) and of the leader (at
/// 45 s) step forward by an hour, over `seeds`.
fn wall_step(expiry: Expiry, seeds: u64) -> u64 {
    let mut t = timing(15, 10, 2);
    t.expiry = expiry;
    let spec = kube_spec(t, 3);
    let clients: Vec<NodeId> = ["client-1", "client-2", "client-3"]
        .iter()
        .map(|n| node_id(&spec, n))
        .collect();
    let hour = 3_600_000_000_000_i64;
    let mut invalid = 0;
    for seed in 1..=seeds {
        let old = leader_at(&spec, seed, 30_000);
        let candidate = *clients.iter().find(|&&c| c != old).expect("a candidate");
        let faults = vec![
            at(
                30_000,
                Fault::ClockStep {
                    node: candidate,
                    delta_ns: hour,
                },
            ),
            at(
                45_000,
                Fault::ClockStep {
                    node: old,
                    delta_ns: hour,
                },
            ),
        ];
        let r = run(&spec, seed, 90, faults);
        invalid += u64::from(r.verdict.mutual_exclusion == Validity::Invalid);
    }
    invalid
}

#[test]
fn j9_a_wall_step_is_harmless_to_observed_time_and_splits_renew_time() {
    assert_eq!(wall_step(Expiry::ObservedTime, 10), 0);
    assert_eq!(wall_step(Expiry::RenewTime, 10), 10);
}

/// fabric8 #7160: the holder writes 30 s; client-2 is configured with 10 s (renew deadline
/// 5 s, retry 1 s). The holder (client-1, which client-2 cannot reach for the first 5 s) is
/// cut off from the API server from 30 s to 45 s and keeps working: its renew deadline is 20 s.
fn fabric8(from: LeaseDurationFrom, seed: u64) -> Validity {
    let mut spec = kube_spec(timing(30, 20, 2), 2);
    let mut own = timing(10, 5, 1);
    own.lease_duration_from = from;
    spec.family.elector.participants = vec![(2, own)];
    let api = node_id(&spec, "apiserver-1");
    let (c1, c2) = (node_id(&spec, "client-1"), node_id(&spec, "client-2"));
    let split = |a, secs_: u64| Fault::Partition {
        shape: Shape::Split {
            groups: vec![vec![a], vec![api]],
        },
        mode: PartitionMode::Drop,
        duration: Some(secs(secs_)),
    };
    let r = run(
        &spec,
        seed,
        90,
        vec![at(0, split(c2, 5)), at(30_000, split(c1, 15))],
    );
    assert_eq!(
        grants(&r.world)[0].1,
        c1,
        "seed {seed}: client-1 leads first"
    );
    r.verdict.mutual_exclusion
}

#[test]
fn fabric8_7160_a_participant_judging_by_its_own_shorter_lease_takes_over_early() {
    for seed in 1..=10 {
        assert_eq!(
            fabric8(LeaseDurationFrom::Own, seed),
            Validity::Invalid,
            "seed {seed}"
        );
        assert_eq!(
            fabric8(LeaseDurationFrom::Record, seed),
            Validity::Valid,
            "seed {seed}"
        );
    }
}

#[test]
fn transitions_fence_storage_with_rising_tokens() {
    let mut spec = kube_spec(timing(15, 10, 2), 3);
    spec.family.elector.fencing = TokenFrom::Transitions;
    spec.family.elector.release_on_cancel = true;
    spec.resource = lockstep_models::Resource::Storage(StorageMode::FencedWrites);
    spec.workload.work = Distribution::Uniform {
        lo: secs(1),
        hi: secs(3),
    };
    for seed in 1..=5 {
        let r = run(&spec, seed, 60, Vec::new());
        assert_eq!(r.verdict.mutual_exclusion, Validity::Valid, "seed {seed}");
        let tokens: Vec<(NodeId, u64)> = r
            .world
            .history()
            .iter()
            .filter_map(|e| match e.event {
                Event::Grant { token, ticket, .. } => {
                    assert_eq!(token, ticket, "seed {seed}: the token is leaseTransitions");
                    token.map(|t| (e.node, t))
                }
                _ => None,
            })
            .collect();
        assert!(tokens.len() >= 5, "seed {seed}: {tokens:?}");
        for w in tokens.windows(2) {
            let rises = if w[0].0 == w[1].0 {
                w[0].1 <= w[1].1
            } else {
                w[0].1 < w[1].1
            };
            assert!(rises, "seed {seed}: {tokens:?}");
        }
        assert!(
            r.verdict.token_order.count == 0,
            "seed {seed}: {:?}",
            r.verdict.token_order
        );
    }
}

#[test]
fn a_restarted_leader_has_a_new_identity_and_waits_a_full_lease_like_any_candidate() {
    let t = timing(15, 10, 2);
    let spec = kube_spec(t, 3);
    let mut restarted_won = 0;
    for seed in 1..=20 {
        let old = leader_at(&spec, seed, 30_000);
        let crash = at(
            30_000,
            Fault::Crash {
                node: old,
                restart_after: Some(ms(500)),
            },
        );
        let r = run(&spec, seed, 70, vec![crash]);
        assert_eq!(r.verdict.mutual_exclusion, Validity::Valid, "seed {seed}");
        let all = grants(&r.world);
        let before = all
            .iter()
            .rfind(|g| g.0 < Time::from_millis(30_000))
            .expect("a grant before the crash");
        let &(g, new, ticket) = all
            .iter()
            .find(|g| g.0 > Time::from_millis(30_000))
            .expect("a grant after the crash");
        let renewed = *counts(&r.world, old, "renewed")
            .iter()
            .rfind(|&&o| o <= Time::from_millis(30_000))
            .expect("renewed");
        // Nobody, the restarted process included, re-enters the old term.
        assert!(
            since(g, renewed) + ms(10) >= t.lease_duration,
            "seed {seed}"
        );
        assert!(ticket > before.2, "seed {seed}: a new term after the crash");
        if new == old {
            restarted_won += 1;
            assert!(
                since(g, Time::from_millis(30_500)) >= t.lease_duration,
                "seed {seed}: the restarted process waited a full lease"
            );
        }
    }
    println!("the restarted process won {restarted_won} of 20 seeds");
}

/// Leaders of a fault-free run whose electors retry every 400 ms (LD 1 s, RD 600 ms) and whose
/// leader works on for good: (holders, two holders at once).
fn sub_second(seed: u64) -> (usize, bool) {
    let t = Timing {
        renew_deadline: ms(600),
        retry_period: ms(400),
        ..timing(1, 1, 1)
    };
    let spec = kube_spec(t, 3);
    let r = run(&spec, seed, 60, Vec::new());
    let holders: std::collections::BTreeSet<NodeId> =
        grants(&r.world).iter().map(|g| g.1).collect();
    (
        holders.len(),
        r.verdict.mutual_exclusion == Validity::Invalid,
    )
}

/// client-go compares the raw record (`bytes.Equal(le.observedRawRecord, ...)`,
/// `leaderelection.go:487`) as JSON, whose `renewTime` has whole seconds: a leader renewing
/// more than once a second writes records a candidate cannot tell apart, and a candidate that
/// sees none change for a lease takes over a live leader.
#[test]
fn a_sub_second_retry_period_hides_renewals_in_the_records_whole_seconds() {
    let (mut taken, mut two) = (0, 0);
    for seed in 1..=10 {
        let (holders, overlap) = sub_second(seed);
        taken += u64::from(holders > 1);
        two += u64::from(overlap);
    }
    println!(
        "RP 400 ms: a live leader was taken over in {taken} of 10 seeds, {two} with two holders"
    );
    assert!(taken >= 5, "{taken} of 10");
}

/// client-go's `renew` calls `release()` under `ReleaseOnCancel` after its poll gave up and
/// before it returns (`leaderelection.go:308-311`), with a context of RenewDeadline
/// (`:319-324`); `Run` cancels the leading context and calls `OnStoppedLeading` only then
/// (`:211-221`, deferred). A leader cut off from the API server so keeps its leading context
/// for RetryPeriod + 1.5 × RenewDeadline after its last renewal (its release's `Get` times
/// out), past the lease others wait out.
#[test]
fn under_release_on_cancel_a_cut_off_leader_stops_only_when_its_release_gives_up() {
    let t = timing(15, 10, 2);
    let mut spec = kube_spec(t, 3);
    spec.family.elector.release_on_cancel = true;
    let api = node_id(&spec, "apiserver-1");
    let mut two = 0;
    for seed in 1..=10 {
        let old = leader_at(&spec, seed, 30_000);
        let cut = at(
            30_000,
            Fault::Partition {
                shape: Shape::Split {
                    groups: vec![vec![old], vec![api]],
                },
                mode: PartitionMode::Drop,
                duration: Some(secs(40)),
            },
        );
        let r = run(&spec, seed, 80, vec![cut]);
        let lost = r
            .world
            .history()
            .iter()
            .find(|e| {
                e.node == old
                    && matches!(
                        e.event,
                        Event::Exit {
                            why: ExitReason::Lost,
                            ..
                        }
                    )
            })
            .map(|e| e.time)
            .unwrap_or_else(|| panic!("seed {seed}: the cut-off leader never gave up"));
        let renewed = *counts(&r.world, old, "renewed")
            .iter()
            .rfind(|&&o| o < lost)
            .expect("renewed");
        // The poll's deadline, then the release's `Get` times out (max(1 s, RD / 2)).
        assert_eq!(
            since(lost, renewed),
            t.retry_period + t.renew_deadline + t.renew_deadline / 2,
            "seed {seed}"
        );
        two += u64::from(r.verdict.mutual_exclusion == Validity::Invalid);
    }
    // Candidates take over 15 s to 19.4 s after they saw the last renewal: some before 17 s.
    println!("ReleaseOnCancel, leader cut off: two holders in {two} of 10 seeds");
    assert!(two >= 1, "{two} of 10");
}

/// client-go's renew poll is `wait.PollUntilContextTimeout`, whose interval is a ticker from
/// the poll's start, not a wait after each attempt (apimachinery `pkg/util/wait/poll.go`,
/// `loopConditionUntilContext(..., Backoff{Duration: interval}.Timer(), immediate, false,
/// ...)`: not sliding): an attempt that took longer than RetryPeriod is followed at once.
/// Here (15/12/2 s) the API server loses etcd for 11.5 s from a second after the leader's last
/// renewal: the poll's first attempt gets two 503s (5 s each), returns 10 s into the poll and
/// is followed at once; etcd is back 10.5 s into the poll and that attempt renews before the
/// 12 s deadline. Retrying RetryPeriod after the failed attempt would come past the deadline.
///
/// The cut is in hold mode, so that etcd is back at the heal. In drop mode the API server's
/// TCP connections to the members stall at the cut and come back only at their first
/// retransmission after the heal: the link to the member it asked first retransmits 0.2, 0.6,
/// 1.4, 3.1, 6.4 and 13 s after the poll's first request (RTO 200 ms + RTT, doubling), so
/// etcd would be back 13 s into the poll, past the deadline, and no heal time between 6.4 s
/// and 13 s changes that. Either way the renewal the API server answered 503 for is still in
/// the connection and lands at the heal (TCP loses nothing): the leader's optimistic update
/// then conflicts, and its attempt gets the lease and updates it again, well within the time.
#[test]
fn the_renew_poll_ticks_from_its_start_so_a_slow_failed_attempt_is_retried_at_once() {
    let t = timing(15, 12, 2);
    let spec = kube_spec(t, 3);
    let api = node_id(&spec, "apiserver-1");
    let etcd: Vec<NodeId> = ["etcd-1", "etcd-2", "etcd-3"]
        .iter()
        .map(|n| node_id(&spec, n))
        .collect();
    for seed in 1..=10 {
        let mut w = world(&spec, seed, 30, |_| {});
        w.run();
        let old = holder(&w).unwrap_or_else(|| panic!("seed {seed}: nobody leads at 30 s"));
        let last = *counts(&w, old, "renewed").last().expect("renewed");
        let from = last.as_nanos() / 1_000_000 + 1_000;
        let cut = at(
            from,
            Fault::Partition {
                shape: Shape::Split {
                    groups: vec![vec![api], etcd.clone()],
                },
                mode: PartitionMode::Hold,
                duration: Some(ms(11_500)),
            },
        );
        let r = run(&spec, seed, from / 1000 + 30, vec![cut]);
        let lost = r.world.history().iter().any(|e| {
            e.node == old
                && matches!(
                    e.event,
                    Event::Exit {
                        why: ExitReason::Lost,
                        ..
                    }
                )
        });
        assert!(!lost, "seed {seed}: the leader gave up");
        assert_eq!(holder(&r.world), Some(old), "seed {seed}");
        let renewed = counts(&r.world, old, "renewed");
        let gap = renewed
            .windows(2)
            .map(|p| since(p[1], p[0]))
            .max()
            .expect("renewals");
        assert!(gap > secs(12), "seed {seed}: the longest gap {gap}");
    }
}

/// The leader-election client times a request out after max(1 s, RenewDeadline / 2)
/// (`resourcelock.NewFromKubeconfig`, `resourcelock/interface.go:141-153`, which
/// kube-controller-manager's `leaderElectAndRun` uses), "to keep a single hung request from
/// forcing a leader loss": a leader cut off from one of two API servers times out there after
/// 5 s, renews through the other within its 10 s deadline, and keeps leading.
#[test]
fn a_hung_request_times_out_at_half_the_renew_deadline_and_the_other_apiserver_renews() {
    let t = timing(15, 10, 2);
    let mut spec = kube_spec(t, 3);
    spec.family.apiservers = 2;
    let api = node_id(&spec, "apiserver-1");
    for seed in 1..=10 {
        let old = leader_at(&spec, seed, 30_000);
        let cut = at(
            30_000,
            Fault::Partition {
                shape: Shape::Split {
                    groups: vec![vec![old], vec![api]],
                },
                mode: PartitionMode::Drop,
                duration: Some(secs(40)),
            },
        );
        let r = run(&spec, seed, 80, vec![cut]);
        assert_eq!(r.verdict.mutual_exclusion, Validity::Valid, "seed {seed}");
        assert_eq!(
            holder(&r.world),
            Some(old),
            "seed {seed}: the leader kept leading"
        );
        let renewed = counts(&r.world, old, "renewed");
        let gap = renewed
            .windows(2)
            .map(|p| since(p[1], p[0]))
            .max()
            .expect("renewals");
        // RetryPeriod, then the 5 s timeout, then a request to apiserver-2.
        assert!(
            gap >= t.retry_period + secs(5) && gap < t.retry_period + secs(6),
            "seed {seed}: the longest gap {gap}"
        );
    }
}

/// `tryRelease` reads the Lease before it writes (`leaderelection.go:326-359`): a renewal
/// whose answer never came (held here until the renew poll gave up) changed the
/// resourceVersion, and a release written with the cached one would be refused (409), leaving
/// the record held (its holder re-enters the same term, others wait a full lease). With the
/// `Get` the release applies, and the next grant starts a new term.
#[test]
fn the_release_reads_the_lease_first_so_a_renewal_whose_answer_was_lost_does_not_block_it() {
    let t = timing(15, 10, 2);
    let mut spec = kube_spec(t, 3);
    spec.family.elector.release_on_cancel = true;
    let api = node_id(&spec, "apiserver-1");
    for seed in 1..=10 {
        let mut w = world(&spec, seed, 30, |_| {});
        w.run();
        let old = holder(&w).unwrap_or_else(|| panic!("seed {seed}: nobody leads at 30 s"));
        let last = *counts(&w, old, "renewed").last().expect("renewed");
        let from = last.as_nanos() / 1_000_000 + 1;
        // The next renewal applies; its answer, and the poll's `Get`'s, wait past the deadline.
        let hold = at(
            from,
            Fault::Partition {
                shape: Shape::OneWay {
                    from: vec![api],
                    to: vec![old],
                },
                mode: PartitionMode::Hold,
                duration: Some(ms(12_500)),
            },
        );
        let r = run(&spec, seed, from / 1000 + 40, vec![hold]);
        let lost = r
            .world
            .history()
            .iter()
            .find(|e| {
                e.node == old
                    && matches!(
                        e.event,
                        Event::Exit {
                            why: ExitReason::Lost,
                            ..
                        }
                    )
            })
            .map(|e| e.time)
            .unwrap_or_else(|| panic!("seed {seed}: the leader never gave up"));
        let all = grants(&r.world);
        let before = all.iter().rfind(|g| g.0 < lost).expect("the old grant").2;
        let &(g, _, ticket) = all
            .iter()
            .find(|(t, _, _)| *t > lost)
            .expect("a new leader");
        // The record was released: whoever acquires next (the old leader's workload asks
        // again at once) starts a new term; a refused release would let it re-enter its own.
        assert!(ticket > before, "seed {seed}: {before:?} then {ticket:?}");
        assert!(
            since(g, lost) < t.retry_period.mul_div(22, 10) + ms(100),
            "seed {seed}: the next grant {} after the loss",
            since(g, lost)
        );
    }
}
