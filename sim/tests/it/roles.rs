//! Faults aimed at a role (`ScheduledFault::role`): resolved to a node when they come due.

use std::cell::Cell;

use lockstep_sim::{
    ClockKind, Dur, EnvOf, Fault, NodeId, Process, ScheduledFault, Shape, Status, Time, TimerId,
    Unreached, When, World,
};

use crate::support::{config, const_ms, latency};

/// A baton passed round a ring: the node holding it is the `leader`. Node 0 takes it at the
/// start; a holder passes it on to the next node every second. With `stale`, a node that
/// passed it on still claims to lead (a deposed leader that has not heard).
#[derive(Debug, Default)]
struct Baton {
    n: u32,
    holds: bool,
    passed: bool,
    stale: bool,
    /// How many times the world asked which roles it plays.
    asked: Cell<u32>,
}

#[derive(Clone, Copy, Debug, Hash)]
struct Pass;

impl Process for Baton {
    type Msg = ();
    type Timer = Pass;
    type Event = ();
    type Observation = ();

    fn on_start(&mut self, ctx: &mut impl EnvOf<Baton>) {
        if ctx.id() == NodeId(0) {
            self.take(ctx);
        }
    }

    fn on_message(&mut self, ctx: &mut impl EnvOf<Baton>, _from: NodeId, _msg: ()) {
        self.take(ctx);
    }

    fn on_timer(&mut self, ctx: &mut impl EnvOf<Baton>, _id: TimerId, _timer: Pass) {
        self.holds = false;
        self.passed = true;
        let next = NodeId((ctx.id().0 + 1) % self.n);
        ctx.send(next, ());
    }

    fn on_crash(&mut self) {
        self.holds = false;
        self.passed = false;
    }

    fn on_restart(&mut self, _ctx: &mut impl EnvOf<Baton>) {}

    fn plays(&self, role: &str) -> bool {
        self.asked.set(self.asked.get() + 1);
        role == "leader" && (self.holds || (self.stale && self.passed))
    }
}

impl Baton {
    fn take(&mut self, ctx: &mut impl EnvOf<Baton>) {
        self.holds = true;
        ctx.mark("took");
        ctx.set_timer(ClockKind::Mono, Dur::from_secs(1), Pass);
    }
}

/// A ring of `n` batons, 100 ms from one node to the next, with `faults`.
fn ring(n: u32, stale: bool, faults: Vec<ScheduledFault>) -> World<Baton> {
    let mut cfg = config(1, 10, n as usize);
    cfg.link = latency(const_ms(100));
    cfg.faults = faults;
    let nodes = (0..n)
        .map(|_| Baton {
            n,
            stale,
            ..Baton::default()
        })
        .collect();
    World::new(cfg, nodes)
}

fn at(ms: u64) -> When {
    When::At(Time::from_millis(ms))
}

fn crash() -> Fault {
    Fault::Crash {
        node: NodeId(0),
        restart_after: None,
    }
}

/// The nodes each crash in the fault log hit, with its time in ms and its description.
fn crashes(w: &World<Baton>) -> Vec<(u64, u32, String)> {
    w.fault_log()
        .iter()
        .filter_map(|f| match f.fault {
            Fault::Crash { node, .. } => {
                Some((f.time.as_nanos() / 1_000_000, node.0, f.detail.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_fault_aimed_at_the_leader_hits_whoever_leads_when_it_comes_due() {
    // The baton reaches n1 at 1.1 s and n2 at 2.2 s: at 2.5 s n2 leads.
    let mut w = ring(
        4,
        false,
        vec![ScheduledFault::aimed(at(2_500), crash(), "leader")],
    );
    w.run();
    assert_eq!(
        crashes(&w),
        vec![(2_500, 2, "crash n2 (the leader)".to_string())]
    );
    assert_eq!(w.status(NodeId(2)), Status::Down);
    assert!(w.unfired().is_empty());
}

#[test]
fn with_nobody_in_the_role_it_waits_for_the_next_to_take_it() {
    // At 2.15 s the baton is on its way from n1 to n2, which takes it at 2.2 s.
    let mut w = ring(
        4,
        false,
        vec![ScheduledFault::aimed(at(2_150), crash(), "leader")],
    );
    w.run();
    assert_eq!(
        crashes(&w),
        vec![(2_200, 2, "crash n2 (the leader)".to_string())]
    );
}

#[test]
fn of_several_claimants_the_newest_is_hit() {
    // Every node that ever held the baton still claims: at 3.5 s n0 to n3 do, n3 the newest.
    let mut w = ring(
        5,
        true,
        vec![ScheduledFault::aimed(at(3_500), crash(), "leader")],
    );
    w.run();
    assert_eq!(
        crashes(&w),
        vec![(3_500, 3, "crash n3 (the leader)".to_string())]
    );
    // A down node claims nothing: the next fault hits n2, the newest left.
    let mut w = ring(
        5,
        true,
        vec![
            ScheduledFault::aimed(at(3_500), crash(), "leader"),
            ScheduledFault::aimed(at(3_600), crash(), "leader"),
        ],
    );
    w.run();
    let hit: Vec<u32> = crashes(&w).iter().map(|c| c.1).collect();
    assert_eq!(hit, vec![3, 2]);
}

#[test]
fn a_partition_isolating_the_leader_and_a_fault_on_a_mark_are_aimed_alike() {
    let isolate = Fault::Partition {
        shape: Shape::Isolate { node: NodeId(0) },
        mode: lockstep_sim::PartitionMode::Drop,
        duration: None,
    };
    // n1 reaches `took` for the first time at 1.1 s: the leader then is n1 itself.
    let on_took = When::OnMark {
        node: NodeId(1),
        mark: "took".into(),
        occurrence: 1,
        before: None,
    };
    let mut w = ring(
        3,
        false,
        vec![
            ScheduledFault::aimed(at(1_500), isolate, "leader"),
            ScheduledFault::aimed(on_took, crash(), "leader"),
        ],
    );
    w.run();
    let log: Vec<(u64, String)> = w
        .fault_log()
        .iter()
        .map(|f| (f.time.as_nanos() / 1_000_000, f.detail.clone()))
        .collect();
    assert_eq!(
        log[0],
        (1_100, "crash n1 (the leader)".to_string()),
        "{log:?}"
    );
    // n1 crashed holding the baton: nobody leads again, so the partition never fires.
    assert_eq!(log.len(), 1, "{log:?}");
    let unfired = w.unfired();
    assert_eq!(unfired.len(), 1);
    assert_eq!(unfired[0].index, 0);
    assert_eq!(
        unfired[0].why,
        Unreached::Role {
            role: "leader".into(),
            since: Time::from_millis(1_500)
        }
    );
}

#[test]
fn a_run_without_aimed_faults_never_asks_and_is_the_same_run() {
    let mut plain = ring(3, false, vec![]);
    plain.run();
    assert!((0..3).all(|n| plain.process(NodeId(n)).asked.get() == 0));
    // Aimed at a role nobody plays, the world asks, and the run is otherwise the same.
    let mut asked = ring(
        3,
        false,
        vec![ScheduledFault::aimed(at(1_000), crash(), "primary")],
    );
    asked.run();
    assert!(asked.process(NodeId(0)).asked.get() > 0);
    assert_eq!(asked.trace_hash(), plain.trace_hash());
    assert_eq!(asked.unfired().len(), 1);
}

#[test]
#[should_panic(expected = "cannot be aimed")]
fn a_fault_on_many_nodes_cannot_be_aimed() {
    let _ = ScheduledFault::aimed(at(1), Fault::Heal, "leader");
}
