//! The `[[fault]]` keys resolve to the simulator's faults, and a run applies them.

use std::path::Path;

use lockstep::{Scenario, parse, run};
use lockstep_check::{Event, FaultKind};
use lockstep_sim::{Dur, Fault, NodeId};

/// Redlock over three instances: redis-1..3 are nodes 0-2, storage 3, client-1 and client-2
/// are 4 and 5.
const BASE: &str = r#"
[scenario]
name = "t"
duration_ms = 10_000

[model]
kind = "redlock"
instances = 3
ttl_ms = 1_000
"#;

fn scenario(faults: &str) -> Scenario {
    let text = format!("{BASE}\n{faults}");
    parse(&text, Path::new("t.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn ids(v: &[u32]) -> Vec<NodeId> {
    v.iter().map(|&i| NodeId(i)).collect()
}

#[test]
fn degrade_takes_groups_and_probabilities_as_fractions() {
    let s = scenario(
        r#"
[[fault]]
at_ms = 1_000
degrade = { from = "clients", to = "servers", loss = 0.2, duplicate = 0.1, for_ms = 5_000 }

[[fault]]
at_ms = 2_000
degrade = { from = ["redis-1", "redis-3"], to = "all", duplicate = 0.000_001 }
"#,
    );
    let faults: Vec<&Fault> = s.faults.iter().map(|f| &f.fault).collect();
    assert_eq!(
        faults,
        [
            &Fault::Degrade {
                from: ids(&[4, 5]),
                to: ids(&[0, 1, 2]),
                loss_ppm: 200_000,
                duplicate_ppm: 100_000,
                duration: Some(Dur::from_secs(5)),
            },
            &Fault::Degrade {
                from: ids(&[0, 2]),
                to: ids(&[0, 1, 2, 3, 4, 5]),
                loss_ppm: 0,
                duplicate_ppm: 1,
                duration: None,
            },
        ]
    );
}

#[test]
fn clock_strobe_takes_a_signed_delta_a_period_and_a_length() {
    let s = scenario(
        r#"
[[fault]]
at_ms = 1_000
clock_strobe = { node = "redis-1", delta_ms = 200, period_ms = 10, for_ms = 2_000 }

[[fault]]
at_ms = 1_000
clock_strobe = { node = "client-2", delta_ms = -0.5, period_ms = 0.002, for_ms = 2_000 }
"#,
    );
    let faults: Vec<&Fault> = s.faults.iter().map(|f| &f.fault).collect();
    assert_eq!(
        faults,
        [
            &Fault::ClockStrobe {
                node: NodeId(0),
                delta_ns: 200_000_000,
                period: Dur::from_millis(10),
                duration: Dur::from_secs(2),
            },
            // Exactly the most steps a strobe may take: 1,000,000.
            &Fault::ClockStrobe {
                node: NodeId(5),
                delta_ns: -500_000,
                period: Dur::from_nanos(2_000),
                duration: Dur::from_secs(2),
            },
        ]
    );
}

#[test]
fn a_run_applies_a_degrade_and_a_strobe_and_logs_their_ends() {
    let s = scenario(
        r#"
[[fault]]
at_ms = 1_000
degrade = { from = "clients", to = "servers", loss = 0.25, for_ms = 3_000 }

[[fault]]
at_ms = 2_000
clock_strobe = { node = "redis-2", delta_ms = 300, period_ms = 40, for_ms = 1_000 }
"#,
    );
    let r = run(&s, 1, false);
    let faults: Vec<(u64, FaultKind, &str)> = r
        .history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Fault(f) => Some((e.time_ns / 1_000_000, f.kind, f.detail.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        faults,
        [
            (
                1_000,
                FaultKind::Network,
                "degrade {client-1, client-2} -> {redis-1, redis-2, redis-3}: loss +25%, \
                 duplicate +0% for 3s"
            ),
            (
                2_000,
                FaultKind::ClockStep,
                "redis-2 wall clock strobes +300ms every 40ms for 1s"
            ),
            (
                3_000,
                FaultKind::ClockStep,
                "redis-2 wall clock strobe ends, stepped back"
            ),
            (
                4_000,
                FaultKind::Network,
                "degrade {client-1, client-2} -> {redis-1, redis-2, redis-3} ends"
            ),
        ]
    );
    let again = run(&s, 1, false);
    assert_eq!(r.trace_hash, again.trace_hash, "deterministic");
}
