//! Consul's timing rules, end to end: a session whose renewals stop is destroyed by the leader
//! `TTL × 2` after its last renew, its key stays out of reach for the lock-delay after that,
//! and a lock-delay the servers forgot (they restarted) lets the next holder in at once.
//! Measured as the failover of the catalogue's cut-off holder: from the cut (within TTL/2 of
//! its last renew) to client-2's grant. And a dead holder's session, which a leader election
//! gives a full `TTL × 2` again (the failover of the killed holder with and without the
//! servers restarting before its session would have died), bounded in a file by
//! `holder_failover_max_ms`.

use std::path::Path;

use lockstep::{parse, run};

use crate::support::root;

/// The failover (from the fault to the next grant) of `file` on seeds 1 to 30, in ms.
fn failovers_ms(file: &str) -> Vec<f64> {
    let path = root().join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    let scenario = parse(&text, Path::new(file)).expect("parses");
    (1..=30)
        .map(|seed| {
            let r = run(&scenario, seed, false);
            let f = r.verdict.liveness.failover;
            assert_eq!((f.count, f.recovered), (1, 1), "{file} seed {seed}");
            f.max_ns.expect("recovered") as f64 / 1e6
        })
        .collect()
}

#[test]
fn a_silent_session_dies_at_twice_its_ttl_its_key_waits_out_the_lock_delay_unless_forgotten() {
    // The three files run the same seeds identically until the session is destroyed: they
    // differ in the lock-delay (15 s, 0) and in the servers restarting at the invalidation.
    let kept = failovers_ms("scenarios/catalogue/consul-lock-delay-kept.toml");
    let zero = failovers_ms("scenarios/catalogue/consul-lock-delay-zero.toml");
    let restart = failovers_ms("scenarios/catalogue/consul-lock-delay-lost-on-restart.toml");
    for (seed, ((k, z), r)) in kept.iter().zip(&zero).zip(&restart).enumerate() {
        let seed = seed + 1;
        // TTL 15 s: the leader's timer runs 30 s from the last renew it saw, which came
        // within TTL/2 before the cut; without a lock-delay client-2 gets the key then. (The
        // holder is cut off from the servers only: the gossip probes reach it through
        // client-2, so the health check does not end its session first.)
        assert!((22_500.0..31_000.0).contains(z), "seed {seed}: {z} ms");
        // The lock-delay adds its 15 s, and up to client-2's 5 s retry after a refusal.
        assert!(
            (15_000.0..20_500.0).contains(&(k - z)),
            "seed {seed}: {k} - {z} ms"
        );
        // Forgotten by restarted servers: only the election (timeouts of 1-2 s) delays it.
        assert!(
            (0.0..8_000.0).contains(&(r - z)),
            "seed {seed}: {r} - {z} ms"
        );
    }
}

#[test]
fn a_dead_holders_session_lives_a_full_twice_ttl_again_after_a_leader_election() {
    let plain = failovers_ms("scenarios/catalogue/consul-dead-holder.toml");
    let changed = failovers_ms("scenarios/catalogue/consul-dead-holder-leader-change.toml");
    for (seed, (p, c)) in plain.iter().zip(&changed).enumerate() {
        let seed = seed + 1;
        // 2 x TTL from the session's creation, just before the kill, and the lock-delay.
        assert!((44_500.0..45_500.0).contains(p), "seed {seed}: {p} ms");
        // The servers restart at 25 s, the kill came at 5-11 s: the new leader, elected 5-10 s
        // after the restart, starts the dead session's 30 s again from its election, 19.5 to
        // 30.5 s later than the first leader's timer would have fired (plus up to client-2's
        // 5 s retry after the lock-delay's refusal).
        assert!(
            (19_500.0..35_500.0).contains(&(c - p)),
            "seed {seed}: {c} - {p} ms"
        );
    }
}

#[test]
fn holder_failover_max_ms_bounds_the_kill_to_the_next_grant_as_a_liveness_miss() {
    let text = std::fs::read_to_string(root().join("scenarios/catalogue/consul-dead-holder.toml"))
        .expect("read");
    let text = text.replace("count = 1_000", "count = 1");
    for (bound, code, miss) in [
        ("{ min = 44_000, max = 46_000 }", 0, None),
        ("{ max = 40_000 }", 1, Some("liveness")),
        ("{ min = 50_000 }", 1, Some("liveness")),
    ] {
        let text = text.replace(
            "holder_failover_max_ms = { min = 44_000, max = 51_000 }",
            &format!("holder_failover_max_ms = {bound}"),
        );
        assert!(text.contains(bound));
        let path = crate::support::temp_scenario("holder-failover", &text);
        let out =
            crate::support::lockstep(&["run", path.to_str().expect("utf-8"), "--format", "json"]);
        let raw = crate::support::stdout(&out);
        let v: serde_json::Value = serde_json::from_str(&raw).expect("json");
        assert_eq!(out.status.code(), Some(code), "{bound}: {raw}");
        assert_eq!(v["miss"].as_str(), miss, "{bound}: {raw}");
        if code == 1 {
            let unmet = v["unmet"][0].as_str().expect("a sentence");
            assert!(
                unmet.starts_with("expected holder_failover_max_ms"),
                "{unmet}"
            );
        }
    }
}
