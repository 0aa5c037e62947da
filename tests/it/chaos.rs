//! Chaos profiles: schedules drawn from the seed alone, every fault over before the quiet
//! tail, faults at marks the family really reaches, and clear errors for bad `[chaos]` keys.

use std::collections::BTreeSet;

use lockstep::chaos::Chaos;
use lockstep::{Scenario, load, run};
use lockstep_check::Event;
use lockstep_sim::{Dur, Fault, TraceKind, When};

use crate::support::{
    judged_by_grant_order, lockstep, root, scenario_files, stderr, temp_scenario,
};

fn chaos_scenarios() -> Vec<Scenario> {
    let files = scenario_files("scenarios/chaos");
    assert!(files.len() >= 7, "{files:?}");
    files
        .iter()
        .map(|f| load(f).unwrap_or_else(|e| panic!("{e}")).scenario)
        .collect()
}

fn chaos_of(s: &Scenario) -> &Chaos {
    s.chaos.as_ref().expect("a [chaos] section")
}

/// How long a fault stays in force once applied, as the nemesis promises it.
fn in_force(f: &Fault) -> Dur {
    match f {
        Fault::Pause { duration, .. }
        | Fault::Partition { duration, .. }
        | Fault::Delay { duration, .. }
        | Fault::Degrade { duration, .. } => duration.expect("chaos faults are timed"),
        Fault::ClockStrobe { duration, .. } => *duration,
        Fault::Crash { restart_after, .. } => restart_after.expect("chaos crashes restart"),
        Fault::ClockSlew {
            delta_ns, rate_ppm, ..
        } => Dur::from_nanos(delta_ns.unsigned_abs() * 1_000_000 / u64::from(*rate_ppm)),
        _ => Dur::ZERO,
    }
}

#[test]
fn a_schedule_is_a_function_of_the_seed_alone() {
    for s in chaos_scenarios() {
        let c = chaos_of(&s);
        let a = s.schedule(7);
        assert_eq!(a, s.schedule(7), "{}", s.name);
        assert_ne!(a.faults, s.schedule(8).faults, "{}", s.name);
        assert!(!a.faults.is_empty(), "{}", s.name);
        // The profile's stream is its own: a generated schedule does not depend on the
        // scenario's hand-placed faults, and equals the profile's draw.
        assert_eq!(a.faults, c.generate(7), "{}", s.name);
    }
}

#[test]
fn every_drawn_fault_is_over_before_the_quiet_tail() {
    for s in chaos_scenarios() {
        let c = chaos_of(&s);
        let quiet = c.quiet_from;
        for seed in 1..=200 {
            for f in s.schedule(seed).faults {
                let end_at = match f.when {
                    When::At(t) => {
                        assert!(t >= c.start && t < quiet, "{}: {f:?}", s.name);
                        t
                    }
                    When::OnMark { before, .. } => before.expect("a chaos trigger lapses"),
                };
                assert!(
                    end_at + in_force(&f.fault) <= quiet,
                    "{} seed {seed}: {f:?} runs into the quiet tail at {quiet}",
                    s.name
                );
            }
        }
    }
}

#[test]
fn runs_apply_no_fault_in_the_quiet_tail_and_measure_recovery_from_it() {
    for s in chaos_scenarios() {
        let quiet_ns = chaos_of(&s).quiet_from.as_nanos();
        let mut faults = 0;
        for seed in 1..=5 {
            let r = run(&s, seed, false);
            for e in &r.history.entries {
                if let Event::Fault(f) = &e.event {
                    faults += 1;
                    // Resumes, heals and restarts included: nothing after the tail starts.
                    assert!(
                        e.time_ns <= quiet_ns,
                        "{} seed {seed}: {f:?} at {} ns, tail from {quiet_ns}",
                        s.name,
                        e.time_ns
                    );
                }
            }
            let rec = r
                .verdict
                .liveness
                .recovery
                .expect("a chaos run measures recovery");
            assert_eq!(rec.quiet_from_ns, quiet_ns);
        }
        assert!(faults > 5, "{}: {faults} faults in 5 runs", s.name);
    }
}

#[test]
fn the_marks_a_profile_aims_at_are_marks_the_family_reaches() {
    // Every mark of the family's list is reached in some run of its chaos scenarios (in the
    // quiet-free runs of the catalogue `suspended` needs a partition, which chaos brings).
    let mut reached: Vec<(String, BTreeSet<String>)> = Vec::new();
    for s in chaos_scenarios() {
        let family = s.system.kind().to_string();
        let mut marks = BTreeSet::new();
        for seed in 1..=8 {
            let r = run(&s, seed, true);
            for t in r.trace.expect("trace") {
                if t.kind == TraceKind::Mark {
                    marks.insert(t.text.trim_start_matches("mark ").to_string());
                }
            }
        }
        for (mark, _) in s.system.marks() {
            assert!(
                marks.contains(mark)
                    || reached
                        .iter()
                        .any(|(f, m)| *f == family && m.contains(mark)),
                "{}: mark {mark} never reached (reached: {marks:?})",
                s.name
            );
        }
        reached.push((family, marks));
    }
}

#[test]
fn chaos_runs_are_deterministic() {
    for s in chaos_scenarios() {
        let a = run(&s, 11, false);
        let b = run(&s, 11, false);
        assert_eq!(a.trace_hash, b.trace_hash, "{}", s.name);
        assert_eq!(a.history, b.history, "{}", s.name);
    }
}

/// In grant order, each of these seeds of the known-safe ZooKeeper configuration showed one
/// token inversion (the first ten such seeds, found again when the client's ping and
/// Disconnected timing and then connection resets moved every trace, issue 17, and when the
/// network became TCP, issue 42): a grant whose reply reached its paused
/// client after a newer node's grant. In service order (the members' `Issued`, named by the
/// node's czxid) that grant is the older one, and there is no inversion.
#[test]
fn czxid_fenced_zookeeper_has_no_token_inversions_in_service_order() {
    let path = root().join("scenarios/chaos/zookeeper-czxid-fenced.toml");
    let s = load(&path).unwrap_or_else(|e| panic!("{e}")).scenario;
    for seed in [
        514, 5419, 7382, 8677, 8892, 9461, 11331, 12847, 17268, 18353,
    ] {
        let r = run(&s, seed, false);
        let old = judged_by_grant_order(&r.history, &s.check_options);
        assert!(
            old.token_order.count > 0,
            "seed {seed}: grant order finds an inversion"
        );
        assert_eq!(
            r.verdict.token_order.count, 0,
            "seed {seed}: {:?}",
            r.verdict
        );
        assert!(
            r.unmet.iter().all(|u| !u.contains("token_order")),
            "seed {seed}"
        );
        let issued = r
            .history
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::Issued { .. }))
            .count();
        assert!(issued > 100, "seed {seed}: {issued} Issued records");
    }
}

#[test]
fn bad_chaos_keys_are_named_with_their_paths() {
    let path = temp_scenario(
        "chaos-short",
        r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redis"
ttl_ms = 1_000

[chaos.weights]
pause = 2
crashes = 1
"#,
    );
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("chaos.weights.crashes: unknown field `crashes`"),
        "{err}"
    );

    let path = temp_scenario(
        "chaos-bad",
        r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redis"
ttl_ms = 1_000

[chaos]
profile = "gentle"
"#,
    );
    let err = stderr(&lockstep(&["run", path.to_str().expect("utf-8")]));
    assert!(
        err.contains("chaos.profile: no profile named `gentle` (profiles: default)"),
        "{err}"
    );

    let path = temp_scenario(
        "chaos-values",
        r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redis"
ttl_ms = 1_000

[chaos]
on_mark = 1.5
faults_per_minute = 0
max_drift_ppm = -1
liveness_ms = 5_000
quiet_tail_ms = 4_000

[expect]
recovers = true
"#,
    );
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for want in [
        "chaos.on_mark: must be a probability between 0 and 1, not 1.5",
        "chaos.faults_per_minute: 0 is out of range: expected 0.001 to 10000",
        "chaos.max_drift_ppm: must be between 0 and",
        "chaos.quiet_tail_ms: must be at least chaos.liveness_ms (5000 ms)",
    ] {
        assert!(err.contains(want), "missing `{want}` in:\n{err}");
    }

    // A 10 s run cannot hold the default tail (2 x TTL + 10 s + 1 s).
    let path = temp_scenario(
        "chaos-room",
        r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redis"
ttl_ms = 1_000

[chaos]
"#,
    );
    let err = stderr(&lockstep(&["run", path.to_str().expect("utf-8")]));
    assert!(err.contains("chaos: leaves no time for faults"), "{err}");
}

#[test]
fn recovers_needs_a_chaos_section() {
    let path = temp_scenario(
        "recovers",
        r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redis"
ttl_ms = 1_000

[expect]
recovers = true
"#,
    );
    let err = stderr(&lockstep(&["run", path.to_str().expect("utf-8")]));
    assert!(
        err.contains("expect.recovers: needs a [chaos] section"),
        "{err}"
    );
}

#[test]
fn a_run_that_never_recovers_fails_its_expectation_and_can_opt_out() {
    // Five Redlock instances, three of them dead for the whole run: no quorum, no grant,
    // before or after the faults stop.
    let text = |recovers: &str| {
        format!(
            r#"
[scenario]
name = "t"
duration_ms = 40_000

[model]
kind = "redlock"
ttl_ms = 2_000

[chaos]
faults_per_minute = 1
weights = {{ partition = 0, pause = 1, crash = 0, clock = 0, network = 0 }}

[[fault]]
at_ms = 0
crash = {{ node = "redis-1" }}
[[fault]]
at_ms = 0
crash = {{ node = "redis-2" }}
[[fault]]
at_ms = 0
crash = {{ node = "redis-3" }}

[expect]
verdict = "any"
{recovers}
"#
        )
    };
    let s = lockstep::parse(&text(""), std::path::Path::new("t.toml")).expect("parses");
    let r = run(&s, 1, false);
    assert_eq!(r.verdict.liveness.grants, 0);
    assert!(
        r.unmet
            .iter()
            .any(|u| u.starts_with("expected a grant within 14s of the faults stopping, got none")),
        "{:?}",
        r.unmet
    );
    let s =
        lockstep::parse(&text("recovers = false"), std::path::Path::new("t.toml")).expect("parses");
    assert!(run(&s, 1, false).expected());
}

#[test]
fn a_catalogue_file_under_a_chaos_profile_keeps_its_system_and_drops_its_faults() {
    let path = crate::support::root().join("scenarios/catalogue/k1-gc-pause-unfenced.toml");
    let text = std::fs::read_to_string(&path).expect("read");
    let original = lockstep::parse(&text, &path).expect("parses");
    let variant = lockstep::scenario::with_chaos(&text, &path, "default").expect("toml");
    let s = lockstep::parse(&variant, &path).expect("the variant parses");
    assert!(s.faults.is_empty());
    assert_eq!(chaos_of(&s).profile, "default");
    assert_eq!(format!("{:?}", s.system), format!("{:?}", original.system));
    let e = (&s.expect, &original.expect);
    assert_eq!((&e.0.bounds, e.0.verdict), (&e.1.bounds, e.1.verdict));
    assert_eq!(s.expect.recovery, Some(Dur::from_secs(30)));
    // 60 s was too short for a minute of faults and the 31 s tail a 10 s TTL asks for.
    assert_eq!(s.duration, Dur::from_millis(92_000));
    assert_eq!(
        chaos_of(&s).quiet_from.as_nanos(),
        Dur::from_millis(61_000).as_nanos()
    );

    let err = lockstep::scenario::with_chaos("[scenario\n", &path, "default").unwrap_err();
    assert!(
        err.to_string().contains("k1-gc-pause-unfenced.toml"),
        "{err}"
    );
}

/// Revision-fenced etcd under chaos, on the seeds where judging by grant order found token
/// inversions (the first five, found again when the lessor's phase and the keepalive timing
/// moved every trace, again when crashes reset connections, issue 17, and again when the
/// network became TCP, issue 42): each was a grant whose reply reached its client (paused, or
/// cut off) after the service had already passed the lock on to a later key. In the order
/// the members issued the keys' ownership (their `Issued` records, service order) the
/// revisions rise; the resource was never harmed, and the checker now finds nothing.
#[test]
fn revision_fenced_etcd_grants_learned_late_are_in_order_as_the_service_issued_them() {
    let s = load(&crate::support::root().join("scenarios/chaos/etcd-revision-fenced.toml"))
        .unwrap_or_else(|e| panic!("{e}"))
        .scenario;
    for seed in [472, 2103, 2396, 2747, 3872] {
        let r = run(&s, seed, false);
        for e in &r.history.entries {
            if let Event::Grant {
                token: Some(t),
                ticket,
                ..
            } = e.event
            {
                assert_eq!(ticket, Some(t), "seed {seed}: the ticket is the token");
            }
        }
        // By grant order the tokens go backwards: the seed still shows the crossing.
        let old = judged_by_grant_order(&r.history, &s.check_options);
        assert!(
            old.token_order.count > 0,
            "seed {seed}: no grant learned out of order"
        );
        // By service order they do not.
        assert_eq!(
            r.verdict.token_order.count, 0,
            "seed {seed}: {:?}",
            r.verdict.token_order
        );
        assert_eq!(r.verdict.stale_accepted.count, 0, "seed {seed}");
    }
}

/// J4 (the resource in etcd) under the default chaos profile, seed 150 before the network
/// became TCP (issue 42; seed 14 has the same crashes now): client-1 crashes and
/// restarts; later etcd-2 crashes, restarts and, re-applying its log, answered again the
/// proposals of its previous life (it no longer does: a member answers only the proposals of
/// its own life), one of them a request of client-1's previous life with the id of the
/// predecessor lookup client-1 was waiting on. Taken for that answer (before its request ids
/// went on across a restart), it showed no predecessor, and client-1 held the lock confirmed
/// by its check after waiting, with a ticket no member ever issued: a history the checker
/// refuses. Every grant now names a ticket some member issued.
#[test]
fn etcd_chaos_with_restarts_grants_only_what_a_member_issued() {
    let path = crate::support::root().join("scenarios/catalogue/j4-etcd-set-owner.toml");
    let text = std::fs::read_to_string(&path).expect("read");
    let variant = lockstep::scenario::with_chaos(&text, &path, "default").expect("toml");
    let s = lockstep::parse(&variant, &path).expect("the variant parses");
    // `run` panics on a history the checker refuses.
    let r = run(&s, 14, false);
    let crashed = |name: &str| {
        r.history.entries.iter().any(|e| match &e.event {
            Event::Fault(f) => {
                f.kind == lockstep_check::FaultKind::Crash
                    && f.nodes.iter().any(|&n| r.history.name(n) == name)
            }
            _ => false,
        })
    };
    assert!(
        crashed("client-1") && crashed("etcd-2"),
        "the schedule moved"
    );
    let grants = r
        .history
        .entries
        .iter()
        .filter(|e| {
            matches!(
                e.event,
                Event::Grant {
                    ticket: Some(_),
                    ..
                }
            )
        })
        .count();
    assert!(grants > 10, "{grants} grants with a ticket");
}

/// Seeds of `scenarios/chaos/redis-unfenced.toml` on which a backward step of the server's
/// wall clock, late in the faults, kept a crashed holder's key past the plain liveness bound:
/// Redis expires keys on its wall clock, so the key really lives that much longer. The bound
/// follows from the faults of the run and these seeds meet it.
#[test]
fn redis_recovery_allows_for_its_servers_wall_clock_falling_before_the_tail() {
    let path = root().join("scenarios/chaos/redis-unfenced.toml");
    let s = load(&path).unwrap_or_else(|e| panic!("{e}")).scenario;
    for seed in [896, 1161, 2525, 3240] {
        let r = run(&s, seed, false);
        assert!(r.expected(), "seed {seed}: {:?}", r.unmet);
    }
}

/// A holder crashes on its first grant, the other client crashes before it gets one, and
/// the Redis server's wall clock then steps back: no grant follows. The recovery bound is the
/// liveness plus how far that clock fell from its highest reading to the start of the quiet
/// tail (a later forward step counts against the backward one), and the unmet expectation
/// says so; a bound that reaches past the end of the run cannot be missed by it.
#[test]
fn the_recovery_bound_is_the_liveness_plus_the_fall_of_the_expiry_clock() {
    let text = |tail_ms: u64, steps: &str, expiry_clock: &str| {
        format!(
            r#"
[scenario]
name = "t"
duration_ms = 140_000

[model]
kind = "redis"
ttl_ms = 5_000
expiry_clock = "{expiry_clock}"

[chaos]
weights = {{ partition = 0, pause = 0, crash = 0, clock = 0, network = 0 }}
quiet_tail_ms = {tail_ms}

[[fault]]
on = {{ node = "client-1", mark = "granted", occurrence = 1 }}
crash = {{ node = "client-1" }}
[[fault]]
at_ms = 2_000
crash = {{ node = "client-2" }}
{steps}

[expect]
verdict = "any"
"#
        )
    };
    let step = |at_ms: u64, delta_ms: i64| {
        format!(
            "[[fault]]\nat_ms = {at_ms}\nclock_step = {{ node = \"redis\", delta_ms = {delta_ms} }}\n"
        )
    };
    let unmet = |tail_ms: u64, steps: &str, clock: &str| {
        let s = lockstep::parse(&text(tail_ms, steps, clock), std::path::Path::new("t.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let r = run(&s, 1, false);
        let rec = r.verdict.liveness.recovery.expect("recovery measured");
        assert_eq!(rec.after_ns(), None, "{tail_ms} {steps}");
        r.unmet
    };
    // Liveness 2 × 5 s + 10 s = 20 s; the clock falls 100 s.
    let back = step(3_000, -100_000);
    assert_eq!(
        unmet(130_000, &back, "wall"),
        [
            "expected a grant within 120s of the faults stopping (liveness 20s + 100s: the wall \
          clock of redis, on which Redis times grants out, fell that far from its highest \
          reading before the faults stopped), got none"
        ],
    );
    // Back 100 s, then forward 60 s: it fell 40 s.
    let net = unmet(130_000, &format!("{back}{}", step(3_500, 60_000)), "wall");
    assert_eq!(net.len(), 1, "{net:?}");
    assert!(
        net[0].starts_with(
            "expected a grant within 60s of the faults stopping (liveness 20s + 40s: the wall"
        ),
        "{net:?}"
    );
    // With the default tail (21 s) the 120 s bound reaches past the end of the run.
    assert_eq!(unmet(21_000, &back, "wall"), Vec::<String>::new());
    // On the monotonic clock the key's deadline does not move: the liveness alone.
    assert_eq!(
        unmet(130_000, &back, "mono"),
        ["expected a grant within 20s of the faults stopping, got none"]
    );
}

/// Seed 9711 of `scenarios/chaos/zookeeper-unfenced.toml`: client-1 restarts and connects to
/// zk-1 with connection number 1 again; zk-2 still sends a watch event for the old process's
/// session on its old connection 1. The client took it as message 19 of its new connection,
/// and dropped zk-1's real message 19 (its create's reply) as a duplicate: it waited for that
/// reply forever and the lock was never granted again. Bytes from another server are not on
/// the client's connection.
#[test]
fn a_restarted_zookeeper_client_takes_no_reply_from_its_old_processs_server() {
    let path = root().join("scenarios/chaos/zookeeper-unfenced.toml");
    let s = load(&path).unwrap_or_else(|e| panic!("{e}")).scenario;
    let r = run(&s, 9711, false);
    let rec = r.verdict.liveness.recovery.expect("recovery measured");
    assert!(rec.after_ns().is_some(), "{:?}", r.unmet);
}

/// Seed 1464 of `scenarios/chaos/zookeeper-unfenced.toml` (seed 1102 before the network
/// became TCP, issue 42): the lock is not granted again after the faults stop. On seed 1102,
/// zk-3, the leader, was paused with client-2's create queued; client-2 moved to zk-1, whose
/// read missed the node when the create was applied at the resume, created a second one and
/// waited behind its own orphan for as long as its session lived. That is ZooKeeper's and
/// Curator's behaviour, so the ZooKeeper chaos scenarios do not promise recovery, and the
/// seed meets its expectation.
#[test]
fn zookeeper_chaos_promises_no_recovery_behind_an_orphaned_lock_node() {
    let path = root().join("scenarios/chaos/zookeeper-unfenced.toml");
    let s = load(&path).unwrap_or_else(|e| panic!("{e}")).scenario;
    let r = run(&s, 1464, false);
    let rec = r.verdict.liveness.recovery.expect("recovery measured");
    assert_eq!(
        rec.after_ns(),
        None,
        "the orphan blocks the lock to the end"
    );
    assert!(r.expected(), "{:?}", r.unmet);
}

/// leaseTransitions fences terms, not critical sections: an elector that asks again while the
/// record still names it (its release was not written: `release_on_cancel` off, or a release
/// that failed) re-enters its own term with the term's token, while the resourceVersion of the
/// re-entry's own write is a new, higher token. (Under the default chaos the harm, a delayed
/// write of the earlier section landing inside the next one, showed on 2 of 100,000 seeds while
/// the network lost and reordered messages; on one TCP connection the delayed write stays ahead
/// of the next section's operations, and none of 100,000 seeds shows it: it needs the holder's
/// next section on a new connection, which the model's clients do not open.)
#[test]
fn a_reentered_kubernetes_term_needs_its_own_token() {
    let text = |fencing: &str| {
        format!(
            "[scenario]\nname = \"t\"\nduration_ms = 10_000\nseed = 1\n\n[model]\n\
             kind = \"kubernetes\"\nttl_ms = 15_000\nfencing = \"{fencing}\"\n\n\
             [workload]\nclients = 1\n\n[storage]\nmode = \"fenced-all\"\n"
        )
    };
    let tokens = |fencing: &str| -> Vec<u64> {
        let s = lockstep::parse(&text(fencing), std::path::Path::new("t.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let r = run(&s, 1, false);
        r.history
            .entries
            .iter()
            .filter_map(|e| match e.event {
                Event::Grant { token, .. } => token,
                _ => None,
            })
            .collect()
    };
    let shared = tokens("transitions");
    assert!(shared.len() > 5, "{shared:?}");
    assert!(
        shared.iter().all(|&t| t == shared[0]),
        "every re-entry keeps the term's token: {shared:?}"
    );
    let own = tokens("resource-version");
    assert_eq!(own.len(), shared.len());
    assert!(
        own.windows(2).all(|w| w[0] < w[1]),
        "each re-entry's write is a newer token: {own:?}"
    );
}
