//! Leader election as a workload (`WorkloadKind::Leader`), over every family whose lock client
//! can hold for long: Redis renewing until refused, etcd's `Election.Campaign`, ZooKeeper with
//! Curator. A term lasts while nothing happens, with one task per period and items 1, 2, 3, ...
//! in storage; a crashed leader is followed by another client's term whose first write comes
//! after the old leader's last; a leader paused past its lease goes on writing under its old
//! grant for as long as its `on_stopped_leading` lets it; fenced storage rejects that.

use lockstep_check::{Event, ExitReason, GrantId, History, OpKind, OpOutcome, Validity};
use lockstep_models::etcd::Etcd;
use lockstep_models::etcd::client::{EtcdLockConfig, Recipe};
use lockstep_models::etcd::server::EtcdServerConfig;
use lockstep_models::redis::{Redis, Renew};
use lockstep_models::system::{Resource, SystemSpec, history};
use lockstep_models::zookeeper::ZooKeeper;
use lockstep_models::zookeeper::client::{StopWorkOn, ZooKeeperLockConfig};
use lockstep_models::zookeeper::server::ZooKeeperServerConfig;
use lockstep_models::{Family, LeaderConfig, OnStoppedLeading, StorageMode, WorkloadKind};
use lockstep_sim::{Distribution, Dur, Fault, NodeId};

use crate::support::*;

const SECS: u64 = 60;
const TASK_EVERY_MS: u64 = 1_000;
/// The shortest and longest task: a read and a write of 1-5 ms each way, and 50-200 ms of
/// work between them.
const TASK_MIN_MS: u64 = 50 + 2 * 2;
const TASK_MAX_MS: u64 = 200 + 2 * 10;

/// `spec` with its clients leading: a task every second, `on` when leadership is lost.
fn leading<F: Family>(mut spec: SystemSpec<F>, on: OnStoppedLeading) -> SystemSpec<F> {
    spec.workload.kind = WorkloadKind::Leader(LeaderConfig {
        task_every: Distribution::Constant(ms(TASK_EVERY_MS)),
        on_stopped_leading: on,
    });
    spec
}

/// A single Redis instance, a 10 s lock renewed every TTL/3 until a renewal is refused.
fn redis() -> SystemSpec<Redis> {
    let mut spec = redis_spec();
    spec.family.client.renew = Renew::UntilRefused;
    spec
}

/// Three etcd members, `Election.Campaign` on 10 s sessions.
fn etcd() -> SystemSpec<Etcd> {
    let mut client = EtcdLockConfig::new(Vec::new());
    client.ttl = Dur::from_secs(10);
    client.recipe = Recipe::Election;
    spec(Etcd {
        server: EtcdServerConfig::new(Vec::new()),
        members: 3,
        client,
    })
}

/// Three ZooKeeper servers, Curator on 10 s sessions, the work stopped on LOST.
fn zk() -> SystemSpec<ZooKeeper> {
    let mut client = ZooKeeperLockConfig::new(Vec::new());
    client.session_timeout = Dur::from_secs(10);
    client.stop_work_on = StopWorkOn::Lost;
    spec(ZooKeeper {
        server: ZooKeeperServerConfig::new(Vec::new()),
        members: 3,
        client,
    })
}

/// One storage write as the history shows it.
#[derive(Clone, Copy, Debug)]
struct Write {
    ms: f64,
    grant: GrantId,
    value: u64,
    accepted: bool,
}

fn ms_of(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn writes(h: &History) -> Vec<Write> {
    h.entries
        .iter()
        .filter_map(|e| match e.event {
            Event::Storage(op) => match op.kind {
                OpKind::Write { value, .. } => Some(Write {
                    ms: ms_of(e.time_ns),
                    grant: op.grant,
                    value,
                    accepted: op.outcome == OpOutcome::Accepted,
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn grants(h: &History) -> Vec<(f64, GrantId)> {
    h.entries
        .iter()
        .filter_map(|e| match e.event {
            Event::Grant { grant, .. } => Some((ms_of(e.time_ns), grant)),
            _ => None,
        })
        .collect()
}

fn exits(h: &History) -> Vec<(f64, GrantId, ExitReason)> {
    h.entries
        .iter()
        .filter_map(|e| match e.event {
            Event::Exit { grant, why } => Some((ms_of(e.time_ns), grant, why)),
            _ => None,
        })
        .collect()
}

fn run_history<F: Family>(
    spec: &SystemSpec<F>,
    seed: u64,
    faults: Vec<lockstep_sim::ScheduledFault>,
) -> History {
    let mut w = world(spec, seed, SECS, |cfg| cfg.faults = faults);
    let outcome = w.run();
    history(&w, outcome)
}

/// The accepted items, in the order storage took them, are 1, 2, 3, ...: no duplicate, no gap.
fn assert_items_in_order(label: &str, seed: u64, ws: &[Write]) {
    let values: Vec<u64> = ws.iter().filter(|w| w.accepted).map(|w| w.value).collect();
    let expected: Vec<u64> = (1..=values.len() as u64).collect();
    assert_eq!(values, expected, "{label} seed {seed}: items out of order");
}

fn one_term_lasts_the_run<F: Family>(label: &str, spec: SystemSpec<F>) {
    let spec = leading(spec, OnStoppedLeading::Exit);
    for seed in 1..=5 {
        let h = run_history(&spec, seed, Vec::new());
        let gs = grants(&h);
        assert_eq!(gs.len(), 1, "{label} seed {seed}: one term, not {gs:?}");
        assert!(
            exits(&h).is_empty(),
            "{label} seed {seed}: the term never ends"
        );
        let (start, leader) = gs[0];
        let ws = writes(&h);
        assert!(ws.iter().all(|w| w.grant == leader && w.accepted));
        assert_items_in_order(label, seed, &ws);
        // Task k's write lands after k tasks and k - 1 periods from the grant.
        let span = SECS as f64 * 1000.0 - start + TASK_EVERY_MS as f64;
        let lo = (span / (TASK_EVERY_MS + TASK_MAX_MS) as f64).floor() as usize - 1;
        let hi = (span / (TASK_EVERY_MS + TASK_MIN_MS) as f64).ceil() as usize;
        println!(
            "{label} seed {seed}: term from {start:.0} ms, {} items (bounds {lo}..={hi})",
            ws.len()
        );
        assert!(
            (lo..=hi).contains(&ws.len()),
            "{label} seed {seed}: {} items, not in {lo}..={hi}",
            ws.len()
        );
    }
}

#[test]
fn without_faults_one_term_lasts_the_run_with_one_item_per_period() {
    one_term_lasts_the_run("redis", redis());
    one_term_lasts_the_run("etcd", etcd());
    one_term_lasts_the_run("zookeeper", zk());
}

/// The client that leads first in seed `seed` without faults.
fn first_leader<F: Family>(spec: &SystemSpec<F>, seed: u64) -> NodeId {
    let h = run_history(spec, seed, Vec::new());
    NodeId(grants(&h)[0].1.client.0)
}

const CRASH_MS: u64 = 20_000;

/// Crashes the first leader for good at 20 s; returns the failovers (the old leader's last
/// accepted item to the new leader's first), in ms.
fn failover_after_a_crash<F: Family>(label: &str, spec: SystemSpec<F>) -> Vec<f64> {
    let spec = leading(spec, OnStoppedLeading::Exit);
    let mut failovers = Vec::new();
    for seed in 1..=20 {
        let old = first_leader(&spec, seed);
        let crash = Fault::Crash {
            node: old,
            restart_after: None,
        };
        let h = run_history(&spec, seed, vec![at(CRASH_MS, crash)]);
        let gs = grants(&h);
        assert_eq!(
            gs.len(),
            2,
            "{label} seed {seed}: a second term, not {gs:?}"
        );
        let (new_start, new) = gs[1];
        assert_eq!(gs[0].1.client.0, old.0, "{label} seed {seed}");
        assert_ne!(
            new.client.0, old.0,
            "{label} seed {seed}: another client leads"
        );
        assert!(new_start > CRASH_MS as f64, "{label} seed {seed}");
        let ws = writes(&h);
        assert_items_in_order(label, seed, &ws);
        let last_old = ws
            .iter()
            .filter(|w| w.grant == gs[0].1 && w.accepted)
            .map(|w| w.ms)
            .fold(f64::NAN, f64::max);
        let first_new = ws
            .iter()
            .find(|w| w.grant == new && w.accepted)
            .map(|w| w.ms)
            .unwrap_or_else(|| panic!("{label} seed {seed}: the new leader writes"));
        assert!(
            first_new > last_old,
            "{label} seed {seed}: new {first_new} ms after old {last_old} ms"
        );
        failovers.push(first_new - last_old);
    }
    let mean = failovers.iter().sum::<f64>() / failovers.len() as f64;
    let min = failovers.iter().copied().fold(f64::INFINITY, f64::min);
    let max = failovers.iter().copied().fold(0.0, f64::max);
    println!(
        "{label}: failover after a leader crash over 20 seeds: min {min:.0} ms, mean {mean:.0} ms, max {max:.0} ms"
    );
    failovers
}

#[test]
fn a_crashed_leader_is_followed_by_another_clients_term_after_its_last_item() {
    // Each lease is 10 s: the new leader's first item comes after the lease ran out, and
    // within the lease plus the period and task the old leader may have just written.
    let bound = 10_000.0 + (TASK_EVERY_MS + TASK_MAX_MS) as f64 + 2_000.0;
    for (label, f) in [
        ("redis", failover_after_a_crash("redis", redis())),
        ("etcd", failover_after_a_crash("etcd", etcd())),
        ("zookeeper", failover_after_a_crash("zookeeper", zk())),
    ] {
        assert!(
            f.iter().all(|&x| x < bound),
            "{label}: {f:?} over {bound} ms"
        );
    }
}

const PAUSE_AT_MS: u64 = 20_000;
const PAUSE_MS: u64 = 15_000;
const RESUME_MS: f64 = (PAUSE_AT_MS + PAUSE_MS) as f64;

/// What a leader paused 15 s (its lease is 10 s) did after the resume.
struct AfterPause {
    /// Writes under the old grant that storage handled after the resume.
    old_writes: Vec<Write>,
    /// Whether storage accepted each operation (read or write) of the old grant it handled
    /// after the resume.
    old_ops: Vec<bool>,
    /// When the old term's `Exit` was recorded, if it was.
    exit: Option<f64>,
    /// Whether the old leader campaigned again after its exit.
    campaigned_again: bool,
    mutual_exclusion: Validity,
    resource: Validity,
}

/// `spec` with its clients leading under `on`, not checking the lease before writing (as
/// client-go's users do not).
fn unchecked<F: Family>(spec: SystemSpec<F>, on: OnStoppedLeading) -> SystemSpec<F> {
    let mut spec = leading(spec, on);
    spec.workload.check_validity_before_write = false;
    spec
}

/// Pauses the first leader of `spec` at 20 s for 15 s.
fn paused_leader<F: Family>(spec: &SystemSpec<F>, seed: u64) -> AfterPause {
    let old = first_leader(spec, seed);
    let pause = Fault::Pause {
        node: old,
        duration: Some(ms(PAUSE_MS)),
    };
    let h = run_history(spec, seed, vec![at(PAUSE_AT_MS, pause)]);
    let gs = grants(&h);
    let old_grant = gs[0].1;
    assert_eq!(old_grant.client.0, old.0);
    assert!(
        gs.iter()
            .any(|&(t, g)| g.client.0 != old.0 && t < RESUME_MS),
        "seed {seed}: another client leads during the pause: {gs:?}"
    );
    let old_writes = writes(&h)
        .into_iter()
        .filter(|w| w.grant == old_grant && w.ms > RESUME_MS)
        .collect();
    let old_ops = h
        .entries
        .iter()
        .filter(|e| ms_of(e.time_ns) > RESUME_MS)
        .filter_map(|e| match e.event {
            Event::Storage(op) if op.grant == old_grant => Some(op.outcome == OpOutcome::Accepted),
            _ => None,
        })
        .collect();
    let exit = exits(&h)
        .into_iter()
        .find(|&(_, g, _)| g == old_grant)
        .map(|(t, _, why)| {
            assert_eq!(why, ExitReason::Lost);
            t
        });
    let campaigned_again = exit.is_some_and(|exit| {
        h.entries.iter().any(|e| {
            ms_of(e.time_ns) >= exit
                && matches!(e.event, Event::Request { client } if client.0 == old.0)
        })
    });
    let v = judge(&h);
    AfterPause {
        old_writes,
        old_ops,
        exit,
        campaigned_again,
        mutual_exclusion: v.mutual_exclusion,
        resource: v.resource,
    }
}

/// `exit`: the term ends when the lock client says it is lost, nothing is sent under the old
/// grant after that, and the process campaigns again. Returns the exits, in ms after the
/// resume, per seed.
fn exits_when_lost<F: Family>(label: &str, spec: SystemSpec<F>) -> Vec<f64> {
    let spec = unchecked(spec, OnStoppedLeading::Exit);
    let (mut after, mut total) = (Vec::new(), 0);
    for seed in 1..=20 {
        let a = paused_leader(&spec, seed);
        let exit = a.exit.expect("the old term ends");
        assert!(exit >= RESUME_MS, "{label} seed {seed}: exit at {exit}");
        // A write sent just before the exit may land just after it; none is sent after.
        assert!(
            a.old_writes.iter().all(|w| w.ms <= exit + 10.0),
            "{label} seed {seed}: {:?} after the exit at {exit}",
            a.old_writes
        );
        assert!(a.campaigned_again, "{label} seed {seed}");
        after.push(exit - RESUME_MS);
        total += a.old_writes.len();
    }
    let max = after.iter().copied().fold(0.0, f64::max);
    println!(
        "{label} exit: the term ends at most {max:.0} ms after the resume; {total} writes under the old grant after the resume over 20 seeds"
    );
    after
}

#[test]
fn a_paused_leader_that_exits_stops_when_it_learns_it_lost() {
    let redis = exits_when_lost("redis", redis());
    // Redis: the overdue renewal is refused within a round trip of the resume.
    assert!(redis.iter().all(|&x| x <= 20.0), "{redis:?}");
    exits_when_lost("etcd", etcd());
    exits_when_lost("zookeeper", zk());
}

#[test]
fn a_paused_redis_leader_that_exits_sends_at_most_one_op_of_its_task_in_flight() {
    let spec = unchecked(redis(), OnStoppedLeading::Exit);
    let mut stale = 0;
    for seed in 1..=20 {
        let a = paused_leader(&spec, seed);
        // A task whose period or work ended during the pause goes on at the resume, before
        // the refusal is back: its read, or its write, and nothing more.
        assert!(a.old_ops.len() <= 1, "seed {seed}: {:?}", a.old_ops);
        if a.resource == Validity::Invalid {
            assert_eq!(a.old_ops.len(), 1, "seed {seed}: only that op can be stale");
            stale += 1;
        }
    }
    println!("redis exit: {stale} of 20 seeds with a stale op at the resume");
}

const STOP_MIN_MS: u64 = 1_000;
const STOP_MAX_MS: u64 = 5_000;

fn stop_delay() -> Distribution {
    Distribution::Uniform {
        lo: ms(STOP_MIN_MS),
        hi: ms(STOP_MAX_MS),
    }
}

/// `cancel`: the term ends the stop delay after the lock client said it was lost (when the
/// same seed under `exit` ends it), and the leader goes on writing until then.
fn cancels_late<F: Family>(label: &str, spec: SystemSpec<F>) {
    let exiting = unchecked(spec.clone(), OnStoppedLeading::Exit);
    let cancelling = unchecked(
        spec,
        OnStoppedLeading::Cancel {
            stop_delay: stop_delay(),
        },
    );
    let (mut total, mut invalid) = (0, 0);
    for seed in 1..=20 {
        // Both runs are the same until the lock client says `Lost`.
        let lost = paused_leader(&exiting, seed).exit.expect("lost");
        let a = paused_leader(&cancelling, seed);
        let exit = a.exit.expect("the old term ends after the stop delay");
        assert!(
            (lost + STOP_MIN_MS as f64..=lost + STOP_MAX_MS as f64).contains(&exit),
            "{label} seed {seed}: lost at {lost}, exit at {exit}"
        );
        assert!(
            a.old_writes.iter().all(|w| w.ms <= exit + 10.0),
            "{label} seed {seed}: {:?} after the exit at {exit}",
            a.old_writes
        );
        assert!(a.campaigned_again, "{label} seed {seed}");
        total += a.old_writes.len();
        if a.old_writes.iter().any(|w| w.ms > lost) {
            assert_eq!(a.resource, Validity::Invalid, "{label} seed {seed}");
            invalid += 1;
        }
    }
    println!(
        "{label} cancel: {total} writes under the old grant after the resume over 20 seeds, {invalid} seeds writing after losing"
    );
    assert!(invalid > 0, "{label}: two leaders acting in some seed");
}

#[test]
fn a_paused_leader_that_cancels_writes_under_the_old_grant_until_the_stop_delay() {
    cancels_late("redis", redis());
    cancels_late("etcd", etcd());
    cancels_late("zookeeper", zk());
}

/// At least one task every period plus its longest duration, over the 25 s after the resume.
fn least_tasks_after_the_resume() -> usize {
    ((SECS as f64 * 1000.0 - RESUME_MS) / (TASK_EVERY_MS + TASK_MAX_MS) as f64).floor() as usize - 1
}

fn ignores<F: Family>(label: &str, spec: SystemSpec<F>) {
    let spec = unchecked(spec, OnStoppedLeading::Ignore);
    for seed in 1..=20 {
        let a = paused_leader(&spec, seed);
        assert_eq!(a.exit, None, "{label} seed {seed}: the old term never ends");
        assert!(
            a.old_writes.len() >= least_tasks_after_the_resume(),
            "{label} seed {seed}: {}",
            a.old_writes.len()
        );
        assert!(a.old_writes.iter().all(|w| w.accepted));
        assert_eq!(a.resource, Validity::Invalid, "{label} seed {seed}");
    }
}

#[test]
fn a_paused_leader_that_ignores_writes_under_the_old_grant_to_the_end() {
    ignores("redis", redis());
    ignores("etcd", etcd());
    ignores("zookeeper", zk());
}

#[test]
fn a_failed_validity_check_stops_a_cancelling_leader_at_once() {
    let mut spec = leading(
        redis(),
        OnStoppedLeading::Cancel {
            stop_delay: stop_delay(),
        },
    );
    spec.workload.check_validity_before_write = true;
    for seed in 1..=20 {
        let a = paused_leader(&spec, seed);
        let exit = a.exit.expect("the check ends the term");
        // The next task's check at the latest, well before the shortest stop delay.
        let latest = RESUME_MS + (TASK_EVERY_MS + TASK_MAX_MS) as f64;
        assert!(exit <= latest, "seed {seed}: exit at {exit}");
        // At most the read of a task begun at the resume; never a write.
        assert!(a.old_ops.len() <= 1, "seed {seed}: {:?}", a.old_ops);
        assert!(a.old_writes.is_empty(), "seed {seed}: {:?}", a.old_writes);
        assert!(a.campaigned_again, "seed {seed}");
    }
}

#[test]
fn fenced_storage_rejects_every_operation_of_a_paused_leader_that_ignores() {
    let mut spec = unchecked(redis(), OnStoppedLeading::Ignore);
    spec.family.client.fencing = true;
    // Fenced reads too: a leader that ignores goes on reading, and a read of the old grant
    // accepted after the new leader's ops is a stale op (with `fenced-writes` every such run
    // is invalid on its reads alone).
    spec.resource = Resource::Storage(StorageMode::FencedAll);
    for seed in 1..=20 {
        let a = paused_leader(&spec, seed);
        assert_eq!(a.exit, None, "seed {seed}");
        // Each task fails at its read, and the next comes a period later.
        assert!(
            a.old_ops.len() >= least_tasks_after_the_resume(),
            "seed {seed}: {}",
            a.old_ops.len()
        );
        assert!(a.old_ops.iter().all(|&accepted| !accepted), "seed {seed}");
        assert!(a.old_writes.is_empty(), "seed {seed}: {:?}", a.old_writes);
        assert_eq!(a.resource, Validity::Valid, "seed {seed}");
        assert_eq!(
            a.mutual_exclusion,
            Validity::Invalid,
            "seed {seed}: two leaders believed"
        );
    }
}

#[test]
fn a_campaign_that_gives_up_is_followed_by_another() {
    // Redis trying once per acquisition: the follower's try fails while the leader leads.
    let mut spec = leading(redis(), OnStoppedLeading::Exit);
    spec.family.client.acquire_tries = 1;
    for seed in 1..=5 {
        let h = run_history(&spec, seed, Vec::new());
        let gs = grants(&h);
        assert_eq!(gs.len(), 1, "seed {seed}: one term");
        let follower = h
            .entries
            .iter()
            .filter_map(|e| match e.event {
                Event::AcquireFailed { client } => Some(client),
                _ => None,
            })
            .collect::<Vec<_>>();
        assert!(follower.iter().all(|&c| c != gs[0].1.client));
        let requests = h
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::Request { client } if client != gs[0].1.client))
            .count();
        // Each failed campaign is followed by thinking (0-100 ms) and a new one.
        assert!(
            follower.len() >= 100,
            "seed {seed}: {} failed",
            follower.len()
        );
        assert!(
            requests == follower.len() || requests == follower.len() + 1,
            "seed {seed}: {requests} campaigns, {} failed",
            follower.len()
        );
    }
}
