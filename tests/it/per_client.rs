//! `[workload.per_client.client-N]`: a client that starts late, a client pinned to rows.

use std::path::Path;

use lockstep::run::run_kept;
use lockstep::{Scenario, parse};
use lockstep_check::Event;

fn scenario(text: &str) -> Scenario {
    parse(text, Path::new("t.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// The problems of `text`, one a line, without the file's name.
fn problems(text: &str) -> Vec<String> {
    let e = parse(text, Path::new("t.toml")).expect_err("refused");
    e.to_string()
        .lines()
        .map(|l| l.trim_start_matches("t.toml: ").to_string())
        .collect()
}

const POSTGRES: &str = r#"
[scenario]
name = "t"
duration_ms = 20_000

[model]
kind = "postgres"
recipe = "session"

[storage]
mode = "postgres"
"#;

/// (node name, first true time in ms) of each client's first request.
fn first_requests(s: &Scenario, seed: u64) -> Vec<(String, u64)> {
    let kept = run_kept(s, seed, &s.schedule(seed), false);
    let names = &kept.result.history.names;
    let mut firsts: Vec<(String, u64)> = Vec::new();
    for r in &kept.result.history.entries {
        if let Event::Request { client } = r.event {
            let name = &names[client.0 as usize];
            if !firsts.iter().any(|(n, _)| n == name) {
                firsts.push((name.clone(), r.time_ns / 1_000_000));
            }
        }
    }
    firsts.sort();
    firsts
}

#[test]
fn a_client_that_starts_late_does_nothing_before_its_start() {
    let late = scenario(&format!(
        "{POSTGRES}\n[workload]\nclients = 3\n[workload.per_client.client-2]\nstart_ms = 5_000\n"
    ));
    for seed in 1..=5 {
        let firsts = first_requests(&late, seed);
        assert_eq!(firsts.len(), 3, "{firsts:?}");
        assert!(firsts[0].1 < 200 && firsts[2].1 < 200, "{firsts:?}");
        assert!((5_000..5_200).contains(&firsts[1].1), "{firsts:?}");
    }
    // Without it, every client starts at once: the setting is what delays it.
    let on_time = scenario(&format!("{POSTGRES}\n[workload]\nclients = 3\n"));
    assert!(first_requests(&on_time, 1).iter().all(|(_, t)| *t < 200));
}

#[test]
fn a_client_pinned_to_rows_picks_only_those() {
    let s = scenario(
        r#"
[scenario]
name = "t"
duration_ms = 5_000

[model]
kind = "redis"
ttl_ms = 10_000

[workload]
kind = "keys"
clients = 3
rows = 10
work_ms = 10

[workload.per_client.client-1]
rows = [3]

[workload.per_client.client-2]
rows = [7, 8]
"#,
    );
    let kept = run_kept(&s, 1, &s.schedule(1), false);
    let names = &kept.result.history.names;
    let mut picked: Vec<(String, Vec<u64>)> = Vec::new();
    for r in &kept.result.history.entries {
        if let Event::Pick {
            client, resource, ..
        } = r.event
        {
            let name = names[client.0 as usize].clone();
            match picked.iter_mut().find(|(n, _)| *n == name) {
                Some((_, rows)) => rows.push(resource),
                None => picked.push((name, vec![resource])),
            }
        }
    }
    picked.sort();
    for (name, rows) in &mut picked {
        assert!(rows.len() > 10, "{name} picked {rows:?}");
        rows.sort_unstable();
        rows.dedup();
    }
    assert_eq!(picked[0], ("client-1".to_string(), vec![3]));
    assert_eq!(picked[1], ("client-2".to_string(), vec![7, 8]));
    // The unpinned client picks from all ten rows.
    assert!(picked[2].1.len() > 2, "{:?}", picked[2]);
}

#[test]
fn what_cannot_be_set_apart_is_refused_with_its_key() {
    let p = problems(&format!(
        "{POSTGRES}\n[workload]\nclients = 2\n\
         [workload.per_client.client-9]\nstart_ms = 1\n\
         [workload.per_client.\"a.b\"]\nstart_ms = 1\n\
         [workload.per_client.client-1]\nrows = [1]\nstart_ms = 20_000\n"
    ));
    assert_eq!(
        p,
        [
            "workload.per_client.\"a.b\": no client named `a.b`: the clients are client-1 ... \
             client-2 (workload.clients = 2)",
            "workload.per_client.client-1.rows: applies only to many keys: needs `kind = \"keys\"`",
            "workload.per_client.client-9: no client named `client-9`: the clients are \
             client-1 ... client-2 (workload.clients = 2)",
            "workload.per_client.client-1.start_ms: 20000 ms is not before the end of the run \
             (scenario.duration_ms = 20000)",
        ],
        "{p:#?}"
    );
    let keys = "[scenario]\nname = \"t\"\nduration_ms = 1_000\n[model]\nkind = \"redis\"\n\
                ttl_ms = 1_000\n[workload]\nkind = \"keys\"\nrows = 4\n";
    let p = problems(&format!(
        "{keys}[workload.per_client.client-1]\nrows = [0, 4, 0]\n\
         [workload.per_client.client-2]\nrows = []\n"
    ));
    assert_eq!(
        p,
        [
            "workload.per_client.client-1.rows[1]: row 4 does not exist: rows are 0 to 3 \
             (workload.rows = 4)",
            "workload.per_client.client-1.rows[2]: row 0 is named twice",
            "workload.per_client.client-2.rows: names no row",
        ]
    );
    let p = problems(&format!(
        "{keys}[workload.per_client.client-1]\nstart = 5\n"
    ));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].contains("workload.per_client.client-1") && p[0].contains("unknown field `start`"),
        "{p:?}"
    );
}
