//! Faults on groups and faults aimed at a role (`node = "leader"`), from the file to the run.

use std::path::Path;

use lockstep::run::run_kept;
use lockstep::{Scenario, parse};
use lockstep_sim::{Fault, NodeId, When};

fn scenario(text: &str) -> Scenario {
    parse(text, Path::new("t.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn errors(text: &str) -> String {
    parse(text, Path::new("t.toml"))
        .expect_err("refused")
        .to_string()
}

/// Three etcd members (nodes 0-2), storage 3, clients 4 and 5.
const ETCD: &str = r#"
[scenario]
name = "t"
duration_ms = 30_000
seed = 3

[model]
kind = "etcd"
members = 3
ttl_ms = 2_000
"#;

#[test]
fn a_fault_on_a_group_is_the_same_fault_on_each_node() {
    let s = scenario(&format!(
        "{ETCD}\n[[fault]]\nat_ms = 1_000\nclock_step = {{ node = \"servers\", delta_ms = 5_000 }}\n\
         [[fault]]\nat_ms = 2_000\npause = {{ node = [\"client-1\", \"etcd-2\"], for_ms = 100 }}\n\
         [[clock]]\nnode = \"clients\"\ndrift_ppm = 40\n"
    ));
    let nodes: Vec<(u32, u32)> = s
        .faults
        .iter()
        .map(|f| match f.fault {
            Fault::ClockStep { node, delta_ns } => {
                assert_eq!(delta_ns, 5_000_000_000);
                (0, node.0)
            }
            Fault::Pause { node, .. } => (1, node.0),
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(nodes, [(0, 0), (0, 1), (0, 2), (1, 1), (1, 4)]);
    assert_eq!(s.origin, [0, 0, 0, 1, 1]);
    assert!(s.faults.iter().all(|f| f.role.is_none()));
    let drifts: Vec<i64> = s.clocks.iter().map(|c| c.drift_ppm).collect();
    assert_eq!(drifts, [0, 0, 0, 0, 40, 40]);
}

#[test]
fn a_crash_aimed_at_the_leader_hits_the_member_leading_then() {
    let s = scenario(&format!(
        "{ETCD}\n[[fault]]\nat_ms = 5_000\ncrash = {{ node = \"leader\", restart_after_ms = 4_000 }}\n\
         [[fault]]\nat_ms = 15_000\ncrash = {{ node = \"leader\", restart_after_ms = 4_000 }}\n"
    ));
    assert_eq!(s.faults[0].role.as_deref(), Some("leader"));
    assert!(matches!(s.faults[0].when, When::At(_)));
    for seed in 1..=6 {
        let kept = run_kept(&s, seed, &s.schedule(seed), false);
        let crashes: Vec<&lockstep_sim::AppliedFault> = kept
            .fault_log
            .iter()
            .filter(|f| matches!(f.fault, Fault::Crash { .. }))
            .collect();
        assert_eq!(crashes.len(), 2, "seed {seed}");
        for c in crashes {
            assert!(c.detail.ends_with("(the leader)"), "{}", c.detail);
            // The leader it hit is the one every member's log says leads: its id is named.
            let Fault::Crash { node, .. } = c.fault else {
                unreachable!()
            };
            assert!(node.0 < 3, "a member, not {node:?}");
            assert_eq!(c.nodes, vec![node]);
        }
        assert!(kept.result.unfired.is_empty());
        assert!(
            kept.result.miss.is_none(),
            "seed {seed}: {:?}",
            kept.result.unmet
        );
    }
}

#[test]
fn a_fault_whose_role_nobody_plays_did_not_fire_and_names_its_entry() {
    // Every member is down from 1 s: nobody leads when the second entry comes due.
    let s = scenario(&format!(
        "{ETCD}\n[[fault]]\nat_ms = 1_000\ncrash = {{ node = \"servers\" }}\n\
         [[fault]]\nat_ms = 2_000\npause = {{ node = \"leader\", for_ms = 1_000 }}\n\
         [expect]\nproperty = \"mutual-exclusion\"\nverdict = \"any\"\n"
    ));
    assert_eq!(s.origin, [0, 0, 0, 1]);
    let kept = run_kept(&s, 1, &s.schedule(1), false);
    let unfired = &kept.result.unfired;
    assert_eq!(unfired.len(), 1, "{unfired:?}");
    assert_eq!(
        unfired[0].sentence(),
        "fault[1] never fired: no node was the leader from 2000 ms, when it came due, to the end"
    );
    assert_eq!(kept.result.unmet, vec![unfired[0].sentence()]);
}

#[test]
fn the_holder_and_the_primary_are_roles_of_the_clients_and_of_redis() {
    let text = r#"
[scenario]
name = "t"
duration_ms = 20_000

[model]
kind = "redis"
ttl_ms = 30_000

[workload]
clients = 3
work_ms = 2_000

[[fault]]
at_ms = 3_000
pause = { node = "holder", for_ms = 12_000 }

[[fault]]
at_ms = 10_000
clock_step = { node = "primary", delta_ms = 20_000 }
"#;
    let s = scenario(text);
    let kept = run_kept(&s, 1, &s.schedule(1), false);
    let log: Vec<(&Fault, &str)> = kept
        .fault_log
        .iter()
        .map(|f| (&f.fault, f.detail.as_str()))
        .collect();
    let Fault::Pause { node, .. } = log[0].0 else {
        panic!("{log:?}")
    };
    assert!(node.0 >= 2, "a client: {log:?}");
    assert!(log[0].1.ends_with("(the holder)"));
    // The pause's resume comes at 15 s, after the step at 10 s of the only server.
    assert_eq!(
        log[1].0,
        &Fault::ClockStep {
            node: NodeId(0),
            delta_ns: 20_000_000_000
        }
    );
}

#[test]
fn roles_are_refused_where_they_cannot_be_resolved() {
    let base = "[scenario]\nname = \"t\"\nduration_ms = 10_000\n[model]\nkind = \"redlock\"\nttl_ms = 1_000\n";
    let e = errors(&format!(
        "{base}[[fault]]\nat_ms = 1\ncrash = {{ node = \"leader\" }}\n"
    ));
    assert!(
        e.contains(
            "fault[0].crash.node: no node of Redlock is ever the leader: its nodes play holder"
        ),
        "{e}"
    );
    let e = errors(&format!(
        "{ETCD}[[fault]]\nat_ms = 1\npause = {{ node = [\"etcd-1\", \"leader\"] }}\n"
    ));
    assert!(
        e.contains("fault[0].pause.node[1]: `leader` is a role"),
        "{e}"
    );
    let e = errors(&format!(
        "{ETCD}[[fault]]\nat_ms = 1\nrestart = {{ node = \"leader\" }}\n"
    ));
    assert!(
        e.contains("fault[0].restart.node: `leader` is a role"),
        "{e}"
    );
    let e = errors(&format!(
        "{ETCD}[[fault]]\nat_ms = 1\npartition = {{ isolate = \"clients\" }}\n"
    ));
    assert!(
        e.contains("fault[0].partition.isolate: `clients` is a group"),
        "{e}"
    );
    // Isolating the leader is a partition aimed at it.
    let s = scenario(&format!(
        "{ETCD}[[fault]]\nat_ms = 1\npartition = {{ isolate = \"leader\", for_ms = 5_000 }}\n"
    ));
    assert_eq!(s.faults[0].role.as_deref(), Some("leader"));
}
