//! Raft in the world: random fault schedules over 3 and 5 nodes judged by the safety
//! checker, liveness once the faults stop, failover time after a leader crash, determinism.

use lockstep_models::raft::safety::{Property, RaftEvent, Summary};
use lockstep_models::raft::{EntryData, RaftConfig, ReadOnlyOption, Role};
use lockstep_sim::{
    Distribution, Dur, Fault, LinkConfig, NodeConfig, NodeId, PartitionMode, ScheduledFault, Shape,
    Time, When, World, WorldConfig,
};

use crate::raft_host::*;

/// One random-fault run: every safety property over the whole run, then liveness in the
/// quiet tail: the nodes agree on a leader and every node commits commands proposed after
/// the faults stopped. Returns the checker's summary and, if liveness failed, why.
///
/// A quarter of the seeds each run etcd's settings, PreVote off, CheckQuorum off, or both off:
/// safety must not depend on them. Appends carry at most 1, 3 or 64 entries, so that
/// followers also acknowledge parts of a leader's tail.
fn random_run(seed: u64, n: u32) -> (Summary, Option<String>) {
    let (pre_vote, check_quorum) =
        [(true, true), (false, true), (true, false), (false, false)][(seed % 4) as usize];
    let max_append_entries = [1, 3, 64][(seed / 4 % 3) as usize];
    let hosts = hosts(n, Load::BUSY, |c| {
        c.pre_vote = pre_vote;
        c.check_quorum = check_quorum;
        c.max_append_entries = max_append_entries;
    });
    let mut world = random_world(seed, n, hosts);
    run_with_nemesis(&mut world, seed);
    let repro = format!(
        "seed {seed}, {n} nodes, pre_vote {pre_vote}, check_quorum {check_quorum}, \
         max_append_entries {max_append_entries}"
    );
    let summary = match check(&world) {
        Ok(s) => s,
        Err(v) => {
            let lines: Vec<String> = v.iter().map(|v| v.to_string()).collect();
            panic!("{repro}: safety violated:\n{}", lines.join("\n"));
        }
    };
    let dead = liveness(&world, n)
        .err()
        .map(|why| format!("{repro}: {why}"));
    if pre_vote {
        assert_eq!(dead, None);
    }
    (summary, dead)
}

/// The nodes agree on a leader at the end, and a command of its term, which can only have
/// been proposed after the faults stopped, is committed on every node.
fn liveness(world: &World<Host>, n: u32) -> Result<(), String> {
    let (leader, term) =
        agreed_leader(world).ok_or("no agreed leader at the end of the quiet tail")?;
    let quiet = QUIET.as_nanos();
    let before: u64 = world
        .history()
        .iter()
        .filter(|r| r.time.as_nanos() < quiet)
        .filter_map(|r| match &r.event {
            RaftEvent::Applied { entry, .. } => Some(entry.index),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let leader_raft = world.process(leader).raft().expect("up");
    let min_commit = (0..n)
        .map(|i| world.process(NodeId(i)).raft().expect("up").commit())
        .min()
        .expect("nodes");
    if min_commit < before {
        return Err(format!(
            "a node's commit {min_commit} is below index {before}, applied before the quiet tail"
        ));
    }
    let fresh_command = leader_raft.durable().log[before as usize..min_commit as usize]
        .iter()
        .any(|e| matches!(e.data, EntryData::Command(_)) && e.term == term);
    if !fresh_command {
        return Err(format!(
            "no command of term {term} committed everywhere after the faults (applied \
             before: {before}, commit everywhere: {min_commit})"
        ));
    }
    Ok(())
}

/// Runs `seeds`: safety always, liveness always with PreVote. Without PreVote liveness is
/// only likely: etcd resets a follower's election timer whenever it learns a higher term, so
/// a node with a stale log, which cannot win, can keep timing out first and restarting
/// everyone else's timers (thesis §9.6); a few runs may end still electing.
fn random_runs(n: u32, seeds: std::ops::Range<u64>) {
    let runs = seeds.end - seeds.start;
    let (mut elections, mut reelected, mut applied, mut reads, mut max_term) = (0, 0, 0, 0, 0);
    let mut dead = Vec::new();
    for seed in seeds {
        let (s, why) = random_run(seed, n);
        elections += s.elections;
        reelected += u64::from(s.elections > 1);
        applied += s.max_applied;
        reads += s.reads;
        max_term = max_term.max(s.max_term);
        dead.extend(why);
    }
    eprintln!(
        "{runs} runs of {n} nodes: {elections} elections, {reelected} runs with a re-election, \
         highest term {max_term}, {applied} entries and {reads} reads checked; not live \
         without PreVote: {dead:?}"
    );
    // The schedules must be disruptive: most runs change leaders at least once.
    assert!(
        reelected * 10 > runs * 9,
        "{reelected} of {runs} runs re-elected"
    );
    assert!(dead.len() as u64 * 100 <= runs, "{dead:?}");
}

#[test]
fn raft_is_safe_under_random_faults_with_3_nodes_seeds_0_to_999() {
    random_runs(3, 0..1_000);
}

#[test]
fn raft_is_safe_under_random_faults_with_3_nodes_seeds_1000_to_1999() {
    random_runs(3, 1_000..2_000);
}

#[test]
fn raft_is_safe_under_random_faults_with_5_nodes_seeds_0_to_999() {
    random_runs(5, 0..1_000);
}

#[test]
fn raft_is_safe_under_random_faults_with_5_nodes_seeds_1000_to_1999() {
    random_runs(5, 1_000..2_000);
}

#[test]
fn a_random_fault_run_is_deterministic() {
    for seed in [3, 1_234] {
        let hashes: Vec<u64> = (0..2)
            .map(|_| {
                let mut w = random_world(seed, 5, hosts(5, Load::BUSY, |_| {}));
                run_with_nemesis(&mut w, seed);
                w.trace_hash()
            })
            .collect();
        assert_eq!(hashes[0], hashes[1], "seed {seed}");
    }
}

/// A fault-free world of `n` nodes with 1-5 ms links.
fn quiet_world(seed: u64, n: u32, end_secs: u64) -> World<Host> {
    let nodes = (0..n).map(|i| NodeConfig::named(format!("n{i}"))).collect();
    let mut cfg = WorldConfig::new(seed, Time::from_millis(end_secs * 1_000), nodes);
    cfg.link = LinkConfig {
        latency: Distribution::Uniform {
            lo: ms(1),
            hi: ms(5),
        },
        ..LinkConfig::default()
    };
    World::new(cfg, hosts(n, Load::BUSY, |_| {}))
}

/// Crashes the leader at 5 s (for good) and returns how long until another node became
/// leader, in ms of true time.
fn failover_ms(seed: u64, n: u32) -> u64 {
    let mut world = quiet_world(seed, n, 15);
    let crash_at = Time::from_millis(5_000);
    world.run_until(crash_at);
    let (leader, _) = agreed_leader(&world).expect("a stable leader before the crash");
    world.schedule(ScheduledFault {
        when: When::At(crash_at),
        fault: Fault::Crash {
            node: leader,
            restart_after: None,
        },
        role: None,
    });
    run(&mut world);
    check(&world).unwrap_or_else(|v| panic!("seed {seed}: {v:?}"));
    let elected = world
        .history()
        .iter()
        .find(|r| {
            r.time >= crash_at
                && matches!(
                    r.event,
                    RaftEvent::Role {
                        role: Role::Leader,
                        ..
                    }
                )
        })
        .unwrap_or_else(|| panic!("seed {seed}: no new leader"));
    assert_ne!(elected.node, leader);
    elected.time.saturating_since(crash_at).as_millis()
}

/// The failover times of `seeds`, sorted, with their percentiles checked against the
/// randomized election timeout. A follower last heard from the leader at most a tick before
/// the crash (heartbeats go out every tick) and campaigns on its `[10, 20)`-th tick after
/// that, the first of which may come at once: nothing can come before 8 ticks. An election
/// without a refused pre-vote or a split vote ends within 20 ticks of the crash plus two
/// round trips; one where an in-lease follower refuses the first pre-vote (etcd's
/// CheckQuorum lease) waits for the next timeout, hence the tail.
fn failover_distribution(n: u32, seeds: std::ops::Range<u64>) -> Vec<u64> {
    let mut times: Vec<u64> = seeds.map(|s| failover_ms(s, n)).collect();

    times.sort_unstable();
    let pct = |p: usize| times[(times.len() - 1) * p / 100];
    let tick = TICK.as_millis();
    let within = times.iter().filter(|&&t| t <= 20 * tick + 20).count();
    eprintln!(
        "failover, {n} nodes, {} seeds: min {} p10 {} p50 {} p90 {} p99 {} max {} ms; \
         {within} within 20 ticks + 20 ms",
        times.len(),
        pct(0),
        pct(10),
        pct(50),
        pct(90),
        pct(99),
        pct(100)
    );
    assert!(pct(0) >= 8 * tick, "too fast: {}", pct(0));
    assert!(pct(90) <= 20 * tick + 20, "p90 {}", pct(90));
    // Two split votes in a row (two followers campaigning within a round trip of each other,
    // twice) need a third timeout: at most 6 election timeouts over a thousand seeds.
    assert!(pct(100) <= 6 * 10 * tick, "max {}", pct(100));
    times
}

#[test]
fn a_crashed_leader_is_replaced_within_the_randomized_election_timeout_3_nodes() {
    failover_distribution(3, 0..1_000);
}

#[test]
fn a_crashed_leader_is_replaced_within_the_randomized_election_timeout_5_nodes() {
    failover_distribution(5, 0..1_000);
}

#[test]
fn without_faults_one_leader_serves_the_whole_run() {
    for seed in 0..20 {
        let mut world = quiet_world(seed, 5, 20);
        run(&mut world);
        let summary = check(&world).unwrap_or_else(|v| panic!("seed {seed}: {v:?}"));
        assert_eq!(summary.elections, 1, "seed {seed}");
        assert!(summary.max_applied > 100, "seed {seed}: {summary:?}");
        assert!(summary.reads > 50, "seed {seed}: {summary:?}");
        let applied = &world.process(NodeId(0)).applied;
        for i in 1..5 {
            let other = &world.process(NodeId(i)).applied;
            let k = applied.len().min(other.len());
            assert_eq!(applied[..k], other[..k], "seed {seed}");
        }
    }
}

/// Runs of 3 nodes with leader-lease reads in which, at 5 s, the leader's clocks take
/// `drift_ppm` and it is cut off for 5 s; how many of 20 seeds the checker finds a stale
/// read in (and nothing else).
fn stale_lease_reads(drift_ppm: i64) -> usize {
    let lease = |cfg: &mut RaftConfig| cfg.read_only = ReadOnlyOption::LeaseBased;
    let mut stale = 0;
    for seed in 0..20 {
        let nodes = (0..3).map(|i| NodeConfig::named(format!("n{i}"))).collect();
        let mut cfg = WorldConfig::new(seed, Time::from_millis(15_000), nodes);
        cfg.link = LinkConfig {
            latency: Distribution::Constant(ms(2)),
            ..LinkConfig::default()
        };
        let mut world = World::new(cfg, hosts(3, Load::BUSY, lease));
        world.run_until(Time::from_millis(5_000));
        let (leader, _) = agreed_leader(&world).expect("a leader");
        let now = When::At(Time::from_millis(5_000));
        for fault in [
            Fault::ClockDrift {
                node: leader,
                drift_ppm,
            },
            Fault::Partition {
                shape: Shape::Isolate { node: leader },
                mode: PartitionMode::Drop,
                duration: Some(Dur::from_secs(5)),
            },
        ] {
            world.schedule(ScheduledFault {
                when: now.clone(),
                fault,
                role: None,
            });
        }
        run(&mut world);
        if let Err(v) = check(&world) {
            assert!(
                v.iter()
                    .all(|v| v.property == Property::ReadLinearizability),
                "seed {seed}: {v:?}"
            );
            stale += 1;
        }
    }
    stale
}

#[test]
fn lease_reads_of_a_cut_off_leader_are_stale_even_with_perfect_clocks() {
    // LeaseBased reads trust CheckQuorum to have stepped a leader down before anyone else
    // can be elected. It does not: the leader checks every election timeout whether a quorum
    // answered since the previous check, so a leader cut off just after a check that answers
    // reached leads on for up to two election timeouts, while its followers leave their
    // lease one election timeout after its last heartbeat and elect a new leader within
    // [1, 2) election timeouts. In the overlap the old leader answers reads at once from its
    // old commit index. ReadIndex would have waited for a quorum that no longer answers.
    let stale = stale_lease_reads(0);
    assert!(stale >= 5, "stale lease reads in {stale} of 20 runs");
}

#[test]
fn lease_reads_of_a_cut_off_leader_with_a_slow_clock_are_stale_more_often() {
    // A leader whose clock runs 25 % slow counts its election timeouts late, widening the
    // overlap (the clock-drift bound lease reads rely on, thesis §6.4.1).
    let (perfect, slow) = (stale_lease_reads(0), stale_lease_reads(-250_000));
    assert!(
        slow > perfect && slow >= 15,
        "{slow} slow vs {perfect} perfect of 20"
    );
}
