//! Service order (docs/checker.md): services record when they issue an acquisition, grants
//! name it, and the checker orders grants by it rather than by when each client learned.

use lockstep::{load, run};
use lockstep_check::{Event, History};

use crate::support::{judged_by_grant_order, root, scenario_files};

/// Each grant's (grant entry, issued entry), for the grants that name a ticket; panics when a
/// ticket was not issued to its client before the grant.
fn issued_before_grants(history: &History) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for (i, entry) in history.entries.iter().enumerate() {
        let Event::Grant {
            grant,
            ticket: Some(ticket),
            ..
        } = entry.event
        else {
            continue;
        };
        let issued = history.entries[..i].iter().position(|e| {
            matches!(e.event, Event::Issued { client, ticket: t }
                if client == grant.client && t == ticket)
        });
        let issued = issued.unwrap_or_else(|| panic!("grant {grant:?} names an unissued ticket"));
        pairs.push((i, issued));
    }
    pairs
}

fn family_of(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).expect("readable");
    let model: toml::Table = toml::from_str(&text).expect("toml");
    model["model"]["kind"].as_str().expect("kind").to_string()
}

#[test]
fn every_grant_names_an_issue_of_its_service_but_redlocks() {
    // Redis: the SET that took the key; ZooKeeper: the apply that put the node first in
    // line; etcd: likewise, for every hold a member's answer confirmed (a hold after waiting
    // without the re-check may never have been issued, and names nothing); Redlock: nothing.
    let mut named_by_family = std::collections::BTreeMap::<String, (usize, usize)>::new();
    for path in scenario_files("scenarios/catalogue") {
        let kind = family_of(&path);
        let s = load(&path).expect("loads").scenario;
        let r = run(&s, s.seed, false);
        let grants = r
            .history
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::Grant { .. }))
            .count();
        let named = issued_before_grants(&r.history).len();
        // etcd: only a share, checked over the family below.
        match kind.as_str() {
            "redis" | "zookeeper" => assert_eq!(named, grants, "{}", path.display()),
            "redlock" => assert_eq!(named, 0, "{}", path.display()),
            _ => {}
        }
        let counts = named_by_family.entry(kind).or_default();
        counts.0 += named;
        counts.1 += grants;
    }
    for family in ["redis", "etcd", "zookeeper"] {
        let (named, grants) = named_by_family[family];
        assert!(
            grants > 100 && named * 10 >= grants * 9,
            "{family}: {named} of {grants} grants named"
        );
    }
}

#[test]
fn crossed_replies_are_judged_in_the_order_the_server_issued_them() {
    // Seed 31 of the atomic-token fix: the server issues token 104 then 105 as a clock strobe
    // cuts the first lease short, the replies cross, and storage takes 104's ops then 105's.
    let path = root().join("scenarios/found/redis-incr-atomic-token-fixed.toml");
    let s = load(&path).expect("loads").scenario;
    let r = run(&s, 31, false);
    let pairs = issued_before_grants(&r.history);
    let crossed = pairs
        .iter()
        .zip(pairs.iter().skip(1))
        .filter(|((_, a), (_, b))| b < a)
        .count();
    assert!(
        crossed > 0,
        "some grant was learned after a grant issued later"
    );
    assert!(r.verdict.double_holders.pairs > 0);
    assert_eq!(r.verdict.stale_accepted.count, 0);

    // Judged by when the clients learned, the same history has stale ops: the old reading.
    let old = judged_by_grant_order(&r.history, &s.check_options);
    assert!(old.stale_accepted.count > 0);
}

#[test]
fn a_holder_stalled_between_set_and_incr_is_stale_in_service_order_only() {
    // client-1's SET was issued first; it learned of it (and took its INCR token) last, after
    // its key had expired and client-2 had taken the lock.
    let path = root().join("scenarios/found/redis-incr-two-step-paused-between.toml");
    let s = load(&path).expect("loads").scenario;
    let r = run(&s, s.seed, false);
    assert!(r.verdict.stale_accepted.count > 0);
    let example = &r.verdict.stale_accepted.examples[0];
    assert_eq!(r.history.name(example.grant.client), "client-1");

    // Judged by when the clients learned, client-1 looks like the newer holder: no stale op.
    let old = judged_by_grant_order(&r.history, &s.check_options);
    assert_eq!(old.stale_accepted.count, 0);
}
