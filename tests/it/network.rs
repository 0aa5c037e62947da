//! The network as TCP from the scenario file to the run: a cut delays a connection's bytes,
//! never loses them.

use std::path::Path;

use lockstep::run::run;
use lockstep::{Scenario, parse};
use lockstep_check::Event;

fn scenario(text: &str) -> Scenario {
    parse(text, Path::new("t.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// The times (s) at which `client` was granted the lock in seed 1 of `text`.
fn grants(text: &str, client: &str) -> Vec<f64> {
    let s = scenario(text);
    let r = run(&s, 1, false);
    let id = r
        .history
        .names
        .iter()
        .position(|n| n == client)
        .expect("the client");
    r.history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Grant { grant, .. } if grant.client.0 as usize == id => {
                Some(e.time_ns as f64 / 1e9)
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_drop_partition_at_time_zero_delays_a_postgresql_client_and_never_stalls_it() {
    // A new user's way to make a client start late: cut it off at time 0. Its first
    // statements go into the cut; TCP retransmits them, and they arrive at the first
    // retransmission after the heal (before, a drop-mode cut lost its lock call and the
    // client waited on its connection for ever).
    for recipe in ["session", "xact"] {
        let text = format!(
            r#"
[scenario]
name = "t"
duration_ms = 60_000

[model]
kind = "postgres"
recipe = "{recipe}"

[workload]
clients = 2

[[fault]]
at_ms = 0
partition = {{ isolate = "client-1", for_ms = 5_000 }}
"#
        );
        let got = grants(&text, "client-1");
        assert!(!got.is_empty(), "{recipe}: client-1 never holds the lock");
        assert!(
            got[0] > 5.0,
            "{recipe}: granted at {} s, inside the cut",
            got[0]
        );
        assert!(got.len() > 5, "{recipe}: client-1 works on: {got:?}");
    }
}
