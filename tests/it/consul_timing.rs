//! Consul's timing rules, end to end: a session whose renewals stop is destroyed by the leader
//! `TTL × 2` after its last renew, its key stays out of reach for the lock-delay after that,
//! and a lock-delay the servers forgot (they restarted) lets the next holder in at once.
//! Measured as the failover of the catalogue's cut-off holder: from the cut (within TTL/2 of
//! its last renew) to client-2's grant.

use std::path::Path;

use lockstep::{parse, run};

use crate::support::root;

/// The failover (cut to the next grant) of `file` on seeds 1 to 30, in ms.
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
